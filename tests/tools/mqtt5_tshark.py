#!/usr/bin/env python3
"""Cross-check of `wmctl mqtt decode` against tshark's MQTT dissector on a capture.

For every TCP stream of a pcap (each must start with its SYN, so client and
server are known):
  1. tshark reassembles each direction (`-z follow,tcp,raw,N`); those bytes go
     to `wmctl mqtt decode --from client|server -`, which must decode all of them;
  2. tshark dissects the same packets (`-d tcp.port==PORT,mqtt -T pdml`); every
     MQTT message is turned into the JSON shape wmctl prints (README, "wmctl mqtt
     decode"), field by field from the dissector's fields in wire order:
     type, flags, length, QoS/retain/dup, packet id, topic, client id, keep
     alive, CONNECT flags and Will, reason codes, SUBSCRIBE filters and options,
     every property by its identifier (User Properties in order, Subscription
     Identifiers, Topic Alias, ...; strings compared as the exact wire bytes),
     payload length;
  3. the two lists are compared message by message; any difference is printed
     as stream/direction/index/frame, field path, ours and tshark's.
Topic aliases: for a PUBLISH with an empty topic tshark also shows the topic it
resolved from the alias; it must equal the topic this stream bound to that alias
earlier (derived from our decoder's output), which checks the alias bookkeeping
a data plane does on top of the codec.

usage: mqtt5_tshark.py --wmctl build/wmctl [--require-types T,T,...]
                       [--require-props P,P,...] [--min-messages N] PCAP
prints a one-line summary last; exit 0 when there is no difference and every
requirement is met, 1 otherwise, 2 on usage or tool errors.
"""
import argparse
import collections
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

TYPES = {1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC",
         6: "PUBREL", 7: "PUBCOMP", 8: "SUBSCRIBE", 9: "SUBACK", 10: "UNSUBSCRIBE",
         11: "UNSUBACK", 12: "PINGREQ", 13: "PINGRESP", 14: "DISCONNECT", 15: "AUTH"}

# MQTT 5.0 §2.2.2.2: identifier -> (name as wmctl prints it, data type).
PROPS = {
    0x01: ("payload_format_indicator", "int"), 0x02: ("message_expiry_interval", "int"),
    0x03: ("content_type", "str"), 0x08: ("response_topic", "str"),
    0x09: ("correlation_data", "bin"), 0x0B: ("subscription_identifier", "int"),
    0x11: ("session_expiry_interval", "int"), 0x12: ("assigned_client_identifier", "str"),
    0x13: ("server_keep_alive", "int"), 0x15: ("authentication_method", "str"),
    0x16: ("authentication_data", "bin"), 0x17: ("request_problem_information", "int"),
    0x18: ("will_delay_interval", "int"), 0x19: ("request_response_information", "int"),
    0x1A: ("response_information", "str"), 0x1C: ("server_reference", "str"),
    0x1F: ("reason_string", "str"), 0x21: ("receive_maximum", "int"),
    0x22: ("topic_alias_maximum", "int"), 0x23: ("topic_alias", "int"),
    0x24: ("maximum_qos", "int"), 0x25: ("retain_available", "int"),
    0x26: ("user_property", "pair"), 0x27: ("maximum_packet_size", "int"),
    0x28: ("wildcard_subscription_available", "int"),
    0x29: ("subscription_identifier_available", "int"),
    0x2A: ("shared_subscription_available", "int"),
}


class ToolError(Exception):
    pass


def run(cmd, data=None, check=True):
    p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise ToolError("%s failed (rc %d): %s" % (" ".join(cmd[:4]), p.returncode,
                                                    p.stderr.decode(errors="replace")[-2000:]))
    return p


def tshark(args):
    return run(["tshark", "-n"] + args).stdout.decode()


# ------------------------------------------------------------------ streams
def streams_and_ports(pcap):
    """{stream: server_port} from each stream's SYN; every stream must have one."""
    out = tshark(["-r", pcap, "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport",
                  "-e", "tcp.dstport", "-e", "tcp.flags.syn", "-e", "tcp.flags.ack"])
    server, seen = {}, set()
    for line in out.splitlines():
        st, sp, dp, syn, ack = line.split("\t")
        seen.add(int(st))
        if syn in ("1", "True") and ack in ("0", "False"):
            server.setdefault(int(st), int(dp))
    missing = sorted(seen - set(server))
    if missing:
        raise ToolError("streams without their SYN (capture started mid-connection): %s" % missing)
    return server


def follow_streams(pcap, streams):
    """{(stream, 'client'|'server'): bytes} reassembled by tshark."""
    args = ["-r", pcap, "-q"]
    for s in streams:
        args += ["-z", "follow,tcp,raw,%d" % s]
    out = tshark(args)
    data = {}
    cur = None
    for line in out.splitlines():
        m = re.match(r"Filter: tcp\.stream eq (\d+)$", line)
        if m:
            cur = int(m.group(1))
            data[(cur, 0)] = bytearray()
            data[(cur, 1)] = bytearray()
            continue
        m = re.match(r"Node ([01]): (.*):(\d+)$", line)
        if m and cur is not None:
            data[(cur, "port%s" % m.group(1))] = int(m.group(3))
            continue
        if cur is None or not line.strip() or line.startswith("="):
            continue
        node = 1 if line.startswith("\t") else 0
        hexs = line.strip()
        if not re.fullmatch(r"[0-9a-fA-F]*", hexs):
            continue
        data[(cur, node)] += bytes.fromhex(hexs)
    return data


# ------------------------------------------------------------------ tshark -> wmctl shape
def raw(field):
    v = field.get("value")
    return bytes.fromhex(v) if v else b""


def text(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "<invalid UTF-8 %s>" % b.hex()


def strip_len(b):
    """A field that carries its own two-byte length prefix (e.g. mqtt.property.content_type)."""
    if len(b) >= 2 and int.from_bytes(b[:2], "big") == len(b) - 2:
        return b[2:]
    return b


def properties(elem):
    """The property fields of a mqtt.properties / mqtt.will_properties element, in wire order."""
    props = collections.OrderedDict()
    if elem is None:
        return props
    cur = None
    pending = []

    def flush():
        if cur is None:
            return
        name, kind = PROPS.get(cur, ("unknown_0x%02x" % cur, "int"))
        if kind == "pair":
            vals = [f for f in pending if f.get("name") in ("mqtt.prop_key", "mqtt.prop_value")]
            val = [text(raw(vals[0])) if vals else None, text(raw(vals[1])) if len(vals) > 1 else None]
        else:
            vals = [f for f in pending if not f.get("name", "").endswith("_len")]
            if not vals:
                val = None
            else:
                f = vals[0]
                if kind == "int":
                    val = int(f.get("show"), 0)
                else:
                    b = raw(f)
                    # With a separate *_len field the value field holds only the data.
                    if not any(p.get("name", "").endswith("_len") for p in pending):
                        b = strip_len(b)
                    val = text(b) if kind == "str" else b.hex()
        if name in ("user_property", "subscription_identifier"):
            props.setdefault(name, []).append(val)
        elif name in props:
            props[name] = ["DUPLICATE"] + [props[name], val]
        else:
            props[name] = val

    for f in elem:
        n = f.get("name")
        if n == "mqtt.property_len":
            continue
        if n == "mqtt.property_id":
            flush()
            cur = int(f.get("show"), 0)
            pending = []
        else:
            pending.append(f)
    flush()
    return props


def from_tshark(proto):
    """One <proto name="mqtt"> element -> the dict wmctl would print (minus offset, reason)."""
    fields = list(proto)
    by = collections.defaultdict(list)
    for f in fields:
        by[f.get("name")].append(f)

    def one(name):
        return by[name][0] if by[name] else None

    def sub(parent, name):
        if parent is None:
            return None
        for f in parent.iter("field"):
            if f.get("name") == name:
                return f
        return None

    def ival(f, default=None):
        return int(f.get("show"), 0) if f is not None else default

    hdr = one("mqtt.hdrflags")
    hb = int(hdr.get("show"), 0)
    ln = one("mqtt.len")
    t = TYPES.get(hb >> 4, "reserved_%d" % (hb >> 4))
    d = {"type": t, "flags": hb & 0x0F,
         "length": 1 + int(ln.get("size")) + int(ln.get("show"))}
    props = properties(one("mqtt.properties"))
    if t == "CONNECT":
        cf = one("mqtt.conflags")
        flag = lambda n: sub(cf, "mqtt.conflag." + n).get("show") in ("1", "True")
        d.update(protocol_name=text(raw(one("mqtt.protoname"))),
                 protocol_version=ival(one("mqtt.ver")),
                 clean_start=flag("cleansess"), keep_alive=ival(one("mqtt.kalive")),
                 client_id=text(raw(one("mqtt.clientid"))) if one("mqtt.clientid") is not None else "",
                 properties=props)
        if flag("willflag"):
            wm = one("mqtt.willmsg_len")
            d["will"] = {"qos": ival(sub(cf, "mqtt.conflag.qos")), "retain": flag("retain"),
                         "topic": text(raw(one("mqtt.willtopic"))),
                         "properties": properties(one("mqtt.will_properties")),
                         "payload_length": ival(wm) if wm is not None else 0}
        if flag("uname"):
            d["username"] = text(raw(one("mqtt.username")))
        if flag("passwd"):
            pl = one("mqtt.passwd_len")
            d["password_length"] = ival(pl) if pl is not None else 0
    elif t == "CONNACK":
        d.update(session_present=sub(one("mqtt.conack.flags"), "mqtt.conack.flags.sp").get("show") in ("1", "True"),
                 reason_code=ival(one("mqtt.connack.reason_code"), 0), properties=props)
    elif t == "PUBLISH":
        qos = (hb >> 1) & 3
        topics = [f for f in by["mqtt.topic"] if f.get("size") != "0" or f.get("value") is not None]
        d.update(qos=qos, retain=bool(hb & 1), dup=bool(hb & 8),
                 topic=text(raw(topics[0])) if topics and ival(one("mqtt.topic_len")) else "")
        if qos:
            d["packet_id"] = ival(one("mqtt.msgid"))
        d["properties"] = props
        msg = one("mqtt.msg")
        d["payload_length"] = int(msg.get("size")) if msg is not None else 0
        resolved = [f for f in by["mqtt.topic"] if f.get("size") == "0" and f.get("value") is None]
        if resolved:
            d["_alias_topic"] = resolved[0].get("show")
    elif t in ("PUBACK", "PUBREC", "PUBREL", "PUBCOMP"):
        d.update(packet_id=ival(one("mqtt.msgid")),
                 reason_code=ival(one("mqtt.%s.reason_code" % t.lower()), 0), properties=props)
    elif t == "SUBSCRIBE":
        opts = by["mqtt.subscription_options"]
        filt = []
        for tf, of in zip(by["mqtt.topic"], opts):
            o = int(of.get("show"), 0)
            filt.append({"filter": text(raw(tf)), "qos": o & 3, "no_local": bool(o & 4),
                         "retain_as_published": bool(o & 8), "retain_handling": (o >> 4) & 3})
        if len(by["mqtt.topic"]) != len(opts):
            filt.append("tshark: %d filters, %d option bytes" % (len(by["mqtt.topic"]), len(opts)))
        d.update(packet_id=ival(one("mqtt.msgid")), properties=props, filters=filt)
    elif t in ("SUBACK", "UNSUBACK"):
        d.update(packet_id=ival(one("mqtt.msgid")), properties=props,
                 reason_codes=[ival(f) for f in by["mqtt.%s.reason_code" % t.lower()]])
    elif t == "UNSUBSCRIBE":
        d.update(packet_id=ival(one("mqtt.msgid")), properties=props,
                 filters=[text(raw(f)) for f in by["mqtt.topic"]])
    elif t in ("DISCONNECT", "AUTH"):
        d.update(reason_code=ival(one("mqtt.%s.reason_code" % t.lower()), 0), properties=props)
    return d


def tshark_messages(pcap, server_ports):
    """{(stream, 'client'|'server'): [(frame, dict), ...]} in wire order."""
    args = ["-r", pcap, "-T", "pdml", "-Y", "mqtt"]
    for p in sorted(set(server_ports.values())):
        args += ["-d", "tcp.port==%d,mqtt" % p]
    proc = subprocess.Popen(["tshark", "-n"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    msgs = collections.defaultdict(list)
    frame = stream = srcport = None
    for ev, el in ET.iterparse(proc.stdout, events=("start", "end")):
        if ev == "start" and el.tag == "packet":
            frame = stream = srcport = None
        if ev != "end" or el.tag != "proto":
            continue
        name = el.get("name")
        if name == "frame":
            for f in el.iter("field"):
                if f.get("name") == "frame.number":
                    frame = int(f.get("show"))
        elif name == "tcp":
            for f in el:
                if f.get("name") == "tcp.stream":
                    stream = int(f.get("show"))
                elif f.get("name") == "tcp.srcport":
                    srcport = int(f.get("show"))
        elif name == "mqtt":
            direction = "server" if srcport == server_ports[stream] else "client"
            msgs[(stream, direction)].append((frame, from_tshark(el)))
            el.clear()
        elif name == "_ws.malformed" or name == "_ws.expert":
            msgs[("malformed", 0)].append((frame, name))
    proc.wait()
    if proc.returncode != 0:
        raise ToolError("tshark -T pdml failed: %s" % proc.stderr.read().decode(errors="replace")[-2000:])
    return msgs


# ------------------------------------------------------------------ compare
def diff(path, a, b, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                out.append((path + "." + k, a[k], "<absent>"))
            elif k not in a:
                out.append((path + "." + k, "<absent>", b[k]))
            else:
                diff(path + "." + k, a[k], b[k], out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff("%s[%d]" % (path, i), x, y, out)
    elif a != b or type(a) != type(b):
        out.append((path, a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pcap")
    ap.add_argument("--wmctl", required=True)
    ap.add_argument("--require-types", default="")
    ap.add_argument("--require-props", default="")
    ap.add_argument("--min-messages", type=int, default=1)
    ap.add_argument("--limit", type=int, default=40, help="differences printed at most")
    a = ap.parse_args()
    try:
        server = streams_and_ports(a.pcap)
        data = follow_streams(a.pcap, sorted(server))
        theirs = tshark_messages(a.pcap, server)
    except ToolError as e:
        print("mqtt5_tshark: %s" % e)
        return 2

    diffs = []          # (where, path, ours, tshark)
    types = collections.Counter()
    props_seen = set()
    n = 0
    for (frame, what) in theirs.pop(("malformed", 0), []):
        diffs.append(("frame %d" % frame, "tshark", "", what))
    for st in sorted(server):
        port0 = data.get((st, "port0"))
        for direction in ("client", "server"):
            node = 1 if (port0 == server[st]) == (direction == "client") else 0
            payload = bytes(data.get((st, node), b""))
            ours = []
            if payload:
                p = run([a.wmctl, "mqtt", "decode", "--from", direction, "-"], data=payload, check=False)
                if p.returncode not in (0, 1):
                    print("mqtt5_tshark: wmctl failed (rc %d): %s" % (p.returncode, p.stderr.decode()[-500:]))
                    return 2
                ours = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
            tl = theirs.pop((st, direction), [])
            aliases = {}
            for i in range(max(len(ours), len(tl))):
                where = "stream %d %s #%d" % (st, direction, i)
                o = ours[i] if i < len(ours) else None
                frame, t = tl[i] if i < len(tl) else (None, None)
                if frame is not None:
                    where += " (frame %d)" % frame
                if o is None or t is None or "error" in o:
                    diffs.append((where, "message", o if o is not None else "<none>",
                                  t if t is not None else "<none>"))
                    continue
                n += 1
                types[o["type"]] += 1
                o = dict(o)
                o.pop("offset", None)
                o.pop("reason", None)
                for k in ("properties",):
                    props_seen.update(o.get(k, {}).keys())
                props_seen.update(o.get("will", {}).get("properties", {}).keys())
                alias_topic = t.pop("_alias_topic", None)
                diff("", o, t, out := [])
                diffs += [(where, p, x, y) for (p, x, y) in out]
                # Topic alias bookkeeping (§3.3.2.3.4) over our decoder's output.
                if o["type"] == "PUBLISH":
                    al = o.get("properties", {}).get("topic_alias")
                    if al is not None and o["topic"]:
                        aliases[al] = o["topic"]
                    elif al is not None:
                        want = aliases.get(al, "<unbound alias %d>" % al)
                        if alias_topic != want:
                            diffs.append((where, ".topic (via alias %d)" % al, want, alias_topic))
    for key, tl in theirs.items():
        for frame, t in tl:
            diffs.append(("stream %s %s (frame %d)" % (key[0], key[1], frame), "message", "<none>", t))

    missing = []
    for t in filter(None, a.require_types.split(",")):
        if types[t] == 0:
            missing.append("type " + t)
    for p in filter(None, a.require_props.split(",")):
        if p not in props_seen:
            missing.append("property " + p)
    if n < a.min_messages:
        missing.append("at least %d messages (got %d)" % (a.min_messages, n))

    for where, path, x, y in diffs[:a.limit]:
        print("DIFF %s %s: ours %s, tshark %s" % (where, path or "/", json.dumps(x), json.dumps(y)))
    if len(diffs) > a.limit:
        print("... %d more differences" % (len(diffs) - a.limit))
    for m in missing:
        print("MISSING from the capture: %s" % m)
    summary = ", ".join("%s %d" % (k, v) for k, v in sorted(types.items()))
    print("%s: %d streams, %d messages compared (%s), %d differences"
          % (a.pcap.split("/")[-1], len(server), n, summary, len(diffs)))
    return 1 if diffs or missing else 0


if __name__ == "__main__":
    sys.exit(main())
