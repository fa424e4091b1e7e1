#!/usr/bin/env python3
"""PostGIS oracle for the spaPS neighborhood language (issue 4, spaPS paper §IV).

An independent second implementation used to check `wmctl resolve`: it parses a
neighborhood file itself, translates every neighborhood into one SQL query over
the table written by scripts/pg-cluster.sh's wm_pg_load_world (peid text, cats
text[], geom), runs it with psql and prints the same JSON as `wmctl resolve --json`:

    {"NAME": {"result": [sorted peids], "stages": {"1": [...], ..., "k": [...]}}}

Semantics, exactly as the issue states them:
    N[0] = stage-1 refs;  Ref[i] = U N[j], j in RefStages_i;  Prev = {1..i-1};  Anc = {i-1}
    N[i] = Select(Ref[i], Cats_i, Cond_i)
         = { e in Entities(Cats_i) - Ref[i] : exists r in Ref[i], Related(r, e, Cond_i) }
    Related: E ST_Equals, I ST_Intersects, D ST_Disjoint, T ST_Touches,
             C ST_Contains(r, e), DWd ST_DWithin(r, e, d)   (d in metres, distance <= d)
    result = U N[j] over the visible stages (default all of 1..k; stage 0 never).
Category filters have MQTT topic-filter semantics (MQTT 5.0 §4.7): '#' matches
the parent level and everything below, '+' exactly one level (possibly empty).
Lists are sorted by code point (Python's str order), like the expected file.

usage:
    nbhd_sql.py eval NBHD_FILE [--table world]     # needs PGHOST/PGPORT/... set
    nbhd_sql.py sql  NBHD_FILE [--table world]     # print the SQL only
    nbhd_sql.py diff EXPECTED.json ACTUAL.json [--nbhd NBHD_FILE] [--limit N]
exit: 0 ok / no differences, 1 differences or bad data, 2 usage or syntax error.
"""
import argparse
import json
import os
import re
import subprocess
import sys

CONDS = ("E", "I", "D", "T", "C")
PEID_RE = re.compile(r"[A-Za-z0-9._:/-]+")


class NbhdSyntaxError(Exception):
    pass


class Stage:
    def __init__(self, refs_kind, refs, cats, cond, dist):
        self.refs_kind = refs_kind  # 'peids' (stage 1) | 'prev' | 'anc' | 'set'
        self.refs = refs            # list of peids, or of stage numbers for 'set'
        self.cats = cats            # list of topic filters
        self.cond = cond            # one of CONDS or 'DW'
        self.dist = dist            # the DW distance as written (str), else None


class Nbhd:
    def __init__(self, name, stages, visible, line):
        self.name, self.stages, self.visible, self.line = name, stages, visible, line


def _strip_comment(line):
    """'#' starts a comment only outside braces/parentheses/quotes: inside them it is
    the multi-level wildcard of a category filter."""
    depth, quoted = 0, False
    for i, ch in enumerate(line):
        if quoted:
            if ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "#" and depth == 0:
            return line[:i]
    return line


class _Lexer:
    def __init__(self, text, lineno):
        self.s, self.i, self.lineno = text, 0, lineno

    def err(self, msg):
        raise NbhdSyntaxError("line %d column %d: %s" % (self.lineno, self.i + 1, msg))

    def ws(self):
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self, lit):
        self.ws()
        return self.s.startswith(lit, self.i)

    def expect(self, lit):
        if not self.peek(lit):
            self.err("expected '%s'" % lit)
        self.i += len(lit)

    def match(self, regex, what):
        self.ws()
        m = re.compile(regex).match(self.s, self.i)
        if not m:
            self.err("expected %s" % what)
        self.i = m.end()
        return m.group(0)

    def eof(self):
        self.ws()
        return self.i >= len(self.s)


def _parse_list(lx, item):
    lx.expect("{")
    out = [item()]
    while lx.peek(","):
        lx.expect(",")
        out.append(item())
    lx.expect("}")
    return out


def _peid(lx):
    return _quoted(lx) if lx.peek('"') else lx.match(PEID_RE.pattern, "a peid")


def _quoted(lx):
    """A double-quoted string with \\" and \\\\ escapes (peids, category filters)."""
    lx.expect('"')
    v = []
    while True:
        if lx.i >= len(lx.s):
            lx.err("unterminated quoted string")
        ch = lx.s[lx.i]
        lx.i += 1
        if ch == '"':
            return "".join(v)
        if ch == "\\":
            if lx.i >= len(lx.s) or lx.s[lx.i] not in '"\\':
                lx.err("bad escape in quoted string")
            ch = lx.s[lx.i]
            lx.i += 1
        v.append(ch)


def _int(lx):
    return int(lx.match(r"[0-9]+", "an integer"))


def parse_line(text, lineno):
    lx = _Lexer(text, lineno)
    name = lx.match(r"[A-Za-z0-9_.:/-]+?(?=\s*:)", "a neighborhood name")
    lx.expect(":")
    stages = []
    while True:
        count = 1
        lx.ws()
        if lx.i < len(lx.s) and lx.s[lx.i].isdigit():
            count = _int(lx)
            if count < 1:
                lx.err("COUNT must be >= 1")
        lx.expect("(")
        first = not stages
        if first:
            kind, refs = "peids", _parse_list(lx, lambda: _peid(lx))
        elif lx.peek("Prev"):
            lx.expect("Prev")
            kind, refs = "prev", None
        elif lx.peek("Anc"):
            lx.expect("Anc")
            kind, refs = "anc", None
        else:
            kind, refs = "set", _parse_list(lx, lambda: _int(lx))
        lx.expect(",")
        cats = _parse_list(lx, lambda: _quoted(lx) if lx.peek('"') else
                           lx.match(r'[^,{}()"\s]+', "a category filter"))
        lx.expect(",")
        cond = lx.match(r"DW|[EIDTC]", "a condition (E I D T C DW<d>)")
        dist = None
        if cond == "DW":
            dist = lx.match(r"[0-9]+(\.[0-9]+)?", "a distance in metres")
        lx.expect(")")
        for _ in range(count):
            if kind == "peids" and stages:
                lx.err("a repeated stage 1 would give stage 2 peid references")
            stages.append(Stage(kind, refs, cats, cond, dist))
        if kind == "set":
            for j in refs:
                if not 1 <= j < len(stages) - count + 1:
                    lx.err("stage %d refers to stage %d" % (len(stages), j))
        if lx.peek(".") or lx.peek("\u2022"):
            lx.i += 1
            continue
        break
    visible = None
    if lx.peek("visible"):
        lx.expect("visible")
        visible = _parse_list(lx, lambda: _int(lx))
        for v in visible:
            if not 1 <= v <= len(stages):
                lx.err("visible stage %d out of 1..%d" % (v, len(stages)))
    if not lx.eof():
        lx.err("unexpected text")
    return Nbhd(name, stages, visible, lineno)


def parse_file(text):
    out = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if line.strip():
            out.append(parse_line(line, lineno))
    return out


def topic_filter_regex(f):
    """MQTT 5.0 §4.7 topic filter -> anchored POSIX ARE for PostgreSQL's '~'."""
    levels = f.split("/")
    parts = []
    for i, lv in enumerate(levels):
        if lv == "#":
            if i != len(levels) - 1:
                raise NbhdSyntaxError("'#' must be the last level in %r" % f)
            # '#' also matches the parent level itself: 'road/#' matches 'road'.
            if i == 0:
                return "^.*$"
            return "^" + "/".join(parts) + "(/.*)?$"
        if lv == "+":
            parts.append("[^/]*")
        elif "+" in lv or "#" in lv:
            raise NbhdSyntaxError("wildcard must occupy a whole level in %r" % f)
        else:
            parts.append(re.sub(r"([^A-Za-z0-9_])", r"\\\1", lv))
    return "^" + "/".join(parts) + "$"


def _q(s):
    return "'" + s.replace("'", "''") + "'"


PRED = {"E": "ST_Equals(r.geom, e.geom)", "I": "ST_Intersects(r.geom, e.geom)",
        "D": "ST_Disjoint(r.geom, e.geom)", "T": "ST_Touches(r.geom, e.geom)",
        "C": "ST_Contains(r.geom, e.geom)"}


def stage_ref_stages(nb, i):
    """1-based stage i -> list of stage numbers its references come from."""
    st = nb.stages[i - 1]
    if st.refs_kind == "peids":
        return [0]
    if st.refs_kind == "prev":
        return list(range(1, i))
    if st.refs_kind == "anc":
        return [i - 1]
    return sorted(set(st.refs))


def nbhd_sql(nb, table="world"):
    """One query returning (name, json {"1": [...], ...}) for neighborhood nb."""
    ctes = ["n0(peid) AS (VALUES %s)" % ", ".join("(%s)" % _q(p) for p in nb.stages[0].refs)]
    # Stage-1 refs must all exist: a missing peid is an error, not an empty set.
    for i, st in enumerate(nb.stages, 1):
        refs = " UNION ".join("SELECT peid FROM n%d" % j for j in stage_ref_stages(nb, i))
        rx = "|".join("(%s)" % topic_filter_regex(c) for c in st.cats)
        cand = ("EXISTS (SELECT 1 FROM unnest(e.cats) AS c WHERE c ~ %s) "
                "AND e.peid NOT IN (SELECT peid FROM ref%d)" % (_q(rx), i))
        ctes.append("ref%d AS MATERIALIZED (SELECT w.peid, w.geom FROM %s w WHERE w.peid IN (%s))"
                    % (i, table, refs))
        if st.cond == "D":
            # Disjointness cannot use the index; EXISTS stops at the first witness.
            ctes.append("n%d AS MATERIALIZED (SELECT e.peid FROM %s e WHERE %s AND EXISTS "
                        "(SELECT 1 FROM ref%d r WHERE %s))" % (i, table, cand, i, PRED["D"]))
        else:
            pred = ("ST_DWithin(r.geom, e.geom, %s::float8)" % _q(st.dist)
                    if st.cond == "DW" else PRED[st.cond])
            ctes.append("n%d AS MATERIALIZED (SELECT DISTINCT e.peid FROM ref%d r JOIN %s e ON %s "
                        "WHERE %s)" % (i, i, table, pred, cand))
    stages = ", ".join("'%d', (SELECT coalesce(json_agg(peid), '[]') FROM n%d)" % (i, i)
                       for i in range(1, len(nb.stages) + 1))
    return ("WITH %s SELECT json_build_object(%s, json_build_object(%s))::text "
            "FROM (SELECT count(*) AS k FROM %s WHERE peid IN (SELECT peid FROM n0)) chk "
            "WHERE chk.k = %d;"
            % (",\n  ".join(ctes), _q(nb.name), stages, table, len(set(nb.stages[0].refs))))


def result_of(nb, stage_sets):
    vis = nb.visible if nb.visible is not None else range(1, len(nb.stages) + 1)
    out = set()
    for v in vis:
        out |= set(stage_sets[str(v)])
    return sorted(out)


def evaluate(nbhds, table="world", psql_timeout=600):
    """Run all queries in one psql session; returns the wmctl-shaped dict."""
    script = "\\set ON_ERROR_STOP 1\n" + "\n".join(nbhd_sql(nb, table) for nb in nbhds) + "\n"
    p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"], input=script,
                       capture_output=True, text=True, timeout=psql_timeout)
    if p.returncode != 0:
        raise RuntimeError("psql failed: " + p.stderr.strip())
    rows = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if len(rows) != len(nbhds):
        raise RuntimeError("psql returned %d rows for %d neighborhoods (an unknown stage-1 peid "
                           "gives no row)" % (len(rows), len(nbhds)))
    out = {}
    for nb, row in zip(nbhds, rows):
        (name, stages), = json.loads(row).items()
        stages = {k: sorted(v) for k, v in stages.items()}
        out[name] = {"result": result_of(nb, stages), "stages": stages}
    return out


def _fmt(ids, limit):
    ids = sorted(ids)
    s = ", ".join(ids[:limit])
    return s + (" ... (+%d more)" % (len(ids) - limit) if len(ids) > limit else "")


def diff(expected, actual, lines=None, limit=12):
    """Readable differences between two wmctl-shaped dicts; [] when identical."""
    out = []
    for name in sorted(set(expected) | set(actual)):
        where = name + (" (line %d: %s)" % lines[name] if lines and name in lines else "")
        if name not in actual:
            out.append("%s: missing from actual" % where)
            continue
        if name not in expected:
            out.append("%s: not expected" % where)
            continue
        e, a = expected[name], actual[name]
        parts = [("result", e.get("result", []), a.get("result", []))]
        es, as_ = e.get("stages", {}), a.get("stages", {})
        if set(es) != set(as_):
            out.append("%s: stage keys differ: expected %s, actual %s" % (where, sorted(es), sorted(as_)))
        for k in sorted(set(es) & set(as_), key=int):
            parts.append(("stage " + k, es[k], as_[k]))
        for what, ev, av in parts:
            if ev == av:
                continue
            miss, extra = set(ev) - set(av), set(av) - set(ev)
            msg = "%s: %s differs (expected %d, actual %d)" % (where, what, len(ev), len(av))
            if miss:
                msg += "\n    only expected: " + _fmt(miss, limit)
            if extra:
                msg += "\n    only actual:   " + _fmt(extra, limit)
            if not miss and not extra:
                msg += "\n    same members, different order or duplicates"
            out.append(msg)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for c in ("eval", "sql"):
        p = sub.add_parser(c)
        p.add_argument("nbhd")
        p.add_argument("--table", default="world")
    p = sub.add_parser("diff")
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--nbhd", help="neighborhood file, to quote the definition of differing ones")
    p.add_argument("--limit", type=int, default=12)
    a = ap.parse_args()
    try:
        if a.cmd in ("eval", "sql"):
            with open(a.nbhd, encoding="utf-8") as f:
                nbhds = parse_file(f.read())
            if a.cmd == "sql":
                print("\n".join(nbhd_sql(nb, a.table) for nb in nbhds))
            else:
                json.dump(evaluate(nbhds, a.table), sys.stdout, sort_keys=True)
                print()
            return 0
        with open(a.expected, encoding="utf-8") as f:
            exp = json.load(f)
        with open(a.actual, encoding="utf-8") as f:
            act = json.load(f)
        lines = None
        if a.nbhd:
            with open(a.nbhd, encoding="utf-8") as f:
                text = f.read().splitlines()
            lines = {nb.name: (nb.line, text[nb.line - 1].strip()) for nb in parse_file("\n".join(text))}
        d = diff(exp, act, lines, a.limit)
        for m in d:
            print(m)
        print("%d neighborhoods compared, %d differences" % (len(set(exp) | set(act)), len(d)))
        return 1 if d else 0
    except NbhdSyntaxError as e:
        print("nbhd_sql: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError, subprocess.TimeoutExpired) as e:
        print("nbhd_sql: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
