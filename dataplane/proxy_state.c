/* See proxy_state.h. */
#include "dataplane/proxy_state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec/mqtt5_topic.h"
#include "control/out_path.h"
#include "matcher/xpath_parse.h"

/* Version 2: a "clean 0" file's next identifiers are reservation ceilings
 * (loaded as they are); version 1's were the sessions' next ones (loaded
 * WM_PROXY_STATE_SID_MARGIN further). Written: 2; read: both. */
#define MAGIC "wirematch-proxy-state 2"
#define MAGIC_V1 "wirematch-proxy-state 1"
#define STR_MAX 65535u
#define FILE_MAX (1ull << 30)

/* ------------------------------------------------------------ parsing */

typedef struct cursor {
    char *p, *end;
    char *line;          /* start of the current line */
    uint64_t lineno;
    char *err;
    size_t errcap;
} cursor;

static int fail_at(cursor *c, const char *at, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errcap, "line %" PRIu64 ", column %zu: ", c->lineno, (size_t)(at - c->line) + 1);
    if (n < 0 || (size_t)n >= c->errcap) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errcap - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The next field of the current line: [*f, *f + *n), NUL-terminated in place
 * (its separator, a space or the line's '\n', is overwritten and passed).
 * last: the field must end the line. Returns 0 or -1 (error set). */
static int field(cursor *c, const char *what, bool last, char **f, size_t *n)
{
    char *s = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\n') c->p++;
    if (c->p == s) return fail_at(c, s, "%s expected", what);
    *f = s;
    *n = (size_t)(c->p - s);
    if (last) {
        if (c->p == c->end) return fail_at(c, c->p, "line not ended (truncated file?)");
        if (*c->p == ' ') return fail_at(c, c->p, "unexpected field after %s", what);
    } else if (c->p == c->end || *c->p == '\n') {
        return fail_at(c, c->p, "line ends before %s's next field", what);
    }
    *c->p++ = 0;
    return 0;
}

/* Starts the next line (after field(..., last) ended the previous one). */
static void next_line(cursor *c)
{
    c->line = c->p;
    c->lineno++;
}

static int number(cursor *c, const char *what, bool last, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *f;
    size_t n;
    if (field(c, what, last, &f, &n)) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] < '0' || f[i] > '9' || i == 18 || (n > 1 && f[0] == '0'))
            return fail_at(c, f + i, "%s: not a decimal integer", what);
        x = x * 10 + (uint64_t)(f[i] - '0');
    }
    if (x < lo || x > hi) return fail_at(c, f, "%s: %" PRIu64 " not in %" PRIu64 "..%" PRIu64, what, x, lo, hi);
    *v = x;
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* A string field, decoded in place (NUL-terminated). *s NULL for "-" when
 * optional. */
static int string(cursor *c, const char *what, bool last, bool optional, char **s, uint32_t *len)
{
    char *f;
    size_t n;
    if (field(c, what, last, &f, &n)) return -1;
    if (n == 1 && f[0] == '-') {
        if (!optional) return fail_at(c, f, "%s: \"-\" (none) not allowed here", what);
        *s = NULL;
        *len = 0;
        return 0;
    }
    if (n == 1 && f[0] == '~') {
        *s = f;
        f[0] = 0;
        *len = 0;
        return 0;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)f[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hexval(f[i + 1]) : -1, lo = i + 2 < n ? hexval(f[i + 2]) : -1;
            if (hi < 0 || lo < 0) return fail_at(c, f + i, "%s: '%%' not followed by two hex digits", what);
            if (hi == 0 && lo == 0) return fail_at(c, f + i, "%s: NUL byte (%%00) not allowed", what);
            f[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (ch < 0x21 || ch > 0x7E) {
            return fail_at(c, f + i, "%s: byte 0x%02x must be written %%%02X", what, ch, ch);
        } else {
            f[o++] = (char)ch;
        }
        if (o > STR_MAX) return fail_at(c, f + i, "%s: longer than %u bytes", what, STR_MAX);
    }
    f[o] = 0;
    *s = f;
    *len = (uint32_t)o;
    return 0;
}

/* A line "KEY ..." starting with keyword kw: consumes it. */
static bool keyword(cursor *c, const char *kw)
{
    size_t n = strlen(kw);
    if ((size_t)(c->end - c->p) > n && memcmp(c->p, kw, n) == 0 && c->p[n] == ' ') {
        c->p += n + 1;
        return true;
    }
    return false;
}

typedef struct pending {
    wm_proxy_saved_session s;
    int64_t exp_rt;          /* expiry: Unix s; -1 never, -2 live (interval not known) */
    char *at;                /* the session line, for errors */
    char *exp_at;            /* its expiry field, for errors */
    uint64_t lineno;
    char *line;
    wm_proxy_saved_sub *recs;
    uint32_t n, cap;
} pending;

/* Reports why at `at` in the pending session's line (flush runs at a later
 * line). */
static int fail_at_session(cursor *c, const pending *p, const char *at, const char *why)
{
    char *l = c->line;
    uint64_t ln = c->lineno;
    c->line = p->line;
    c->lineno = p->lineno;
    fail_at(c, at, "session: %s", why);
    c->line = l;
    c->lineno = ln;
    return -1;
}

/* Restores the pending session (if any) into g. */
static int flush(cursor *c, pending *p, wm_proxy_registry *g, bool clean, bool v1, int64_t now_rt_s,
                 uint64_t now_mono_ns, wm_proxy_state_info *info)
{
    if (!p->at) return 0;
    char why[256];
    p->s.incomplete |= !clean;
    /* A version 1 file written while running may lack the last changes,
     * the identifiers handed out since among them: numbering on from the
     * file's would give a new subscription one the broker holds for another
     * (REVIEW7 #12). Past what any gap between two saves can use up. (A
     * version 2 file holds a ceiling nothing handed out reached.) */
    if (!clean && v1)
        p->s.sid_next = WM_PROXY_SID_PLAIN - p->s.sid_next > WM_PROXY_STATE_SID_MARGIN
                            ? p->s.sid_next + WM_PROXY_STATE_SID_MARGIN : WM_PROXY_SID_PLAIN;
    if (p->exp_rt == -2) {
        p->s.attached = true;
    } else if (p->exp_rt <= -3) {
        /* live:N: connected when written, so detached at the latest now;
         * the broker's session ends N s after that at the latest. */
        p->s.expire_ns = now_mono_ns + (uint64_t)(-3 - p->exp_rt) * 1000000000ull;
    } else if (p->exp_rt == -1) {
        p->s.expire_ns = UINT64_MAX;
    } else if (p->exp_rt <= now_rt_s) {
        info->expired++;
        p->at = NULL;
        p->n = 0;
        return 0;
    } else if (p->exp_rt - now_rt_s > (int64_t)WM_PROXY_STATE_MAX_EXPIRY_S + WM_PROXY_STATE_CLOCK_SLACK_S) {
        /* No proxy writes a session further ahead; taking it would also
         * overflow the monotonic deadline into an arbitrary nearer time. */
        snprintf(why, sizeof why,
                 "expiry %" PRId64 " is more than %" PRIu64 " s after now (%" PRId64
                 "): the largest finite Session Expiry Interval (MQTT 5.0 §3.1.2.11.2) and a day of clock step",
                 p->exp_rt, (uint64_t)WM_PROXY_STATE_MAX_EXPIRY_S + WM_PROXY_STATE_CLOCK_SLACK_S, now_rt_s);
        return fail_at_session(c, p, p->exp_at, why);
    } else {
        int64_t left = p->exp_rt - now_rt_s;
        if (left > (int64_t)WM_PROXY_STATE_MAX_EXPIRY_S) left = WM_PROXY_STATE_MAX_EXPIRY_S;
        p->s.expire_ns = now_mono_ns + (uint64_t)left * 1000000000ull;
    }
    if (wm_proxy_registry_session_restore(g, &p->s, p->recs, p->n, why, sizeof why)) return fail_at_session(c, p, p->at, why);
    info->sessions++;
    info->records += p->n;
    p->at = NULL;
    p->n = 0;
    return 0;
}

int wm_proxy_state_parse(char *buf, size_t len, wm_proxy_registry *g, int64_t now_rt_s, uint64_t now_mono_ns,
                         wm_proxy_state_info *info, char *err, size_t errcap)
{
    cursor c = { buf, buf + len, buf, 1, err, errcap };
    pending p;
    memset(&p, 0, sizeof p);
    memset(info, 0, sizeof *info);
    info->found = true;
    uint64_t v, sessions = 0, records = 0;
    int rc = -1;
    size_t ml = strlen(MAGIC);
    bool v1 = len >= ml + 1 && memcmp(buf, MAGIC_V1, ml) == 0;
    if (len < ml + 1 || (memcmp(buf, MAGIC, ml) != 0 && !v1) || buf[ml] != '\n') {
        fail_at(&c, buf, "not a wirematch-proxy state file (first line must be \"" MAGIC "\" or \"" MAGIC_V1 "\")");
        goto out;
    }
    c.p += ml + 1;
    next_line(&c);
    if (!keyword(&c, "epoch")) { fail_at(&c, c.p, "\"epoch E\" expected"); goto out; }
    if (number(&c, "epoch", true, 0, WM_PROXY_SID_SPAN - 1, &v)) goto out;
    info->epoch = (uint32_t)v;
    next_line(&c);
    if (!keyword(&c, "clean")) { fail_at(&c, c.p, "\"clean 0|1\" expected"); goto out; }
    if (number(&c, "clean", true, 0, 1, &v)) goto out;
    info->clean = v == 1;
    next_line(&c);
    for (;;) {
        if (c.p == c.end) { fail_at(&c, c.p, "no \"end\" line (truncated file?)"); goto out; }
        char *at = c.p;
        if (keyword(&c, "session")) {
            if (flush(&c, &p, g, info->clean, v1, now_rt_s, now_mono_ns, info)) goto out;
            char *cid;
            uint32_t cid_len;
            if (string(&c, "client identifier", false, false, &cid, &cid_len)) goto out;
            if (number(&c, "next identifier", false, WM_PROXY_SID_BASE, WM_PROXY_SID_PLAIN, &v)) goto out;
            p.s = (wm_proxy_saved_session){ (const uint8_t *)cid, cid_len, (uint32_t)v, false, false, 0, 0, 0, false };
            uint64_t inc;
            if (number(&c, "incomplete", false, 0, 1, &inc)) goto out;
            p.s.incomplete = inc == 1;
            char *f;
            size_t n;
            if (field(&c, "expiry", true, &f, &n)) goto out;
            p.exp_at = f;
            if (n == 5 && memcmp(f, "never", 5) == 0) {
                p.exp_rt = -1;
            } else if (n == 4 && memcmp(f, "live", 4) == 0) {
                p.exp_rt = -2;
            } else if (n >= 5 && memcmp(f, "live:", 5) == 0) {
                uint64_t iv = 0;
                for (size_t i = 5; i < n || i == 5; i++) {   /* "live:" alone: refused at its end */
                    if (i == n || f[i] < '0' || f[i] > '9' || i == 15 || f[5] == '0') {
                        fail_at(&c, f + i, "expiry: live:INTERVAL: 1..4294967295 seconds expected");
                        goto out;
                    }
                    iv = iv * 10 + (uint64_t)(f[i] - '0');
                }
                if (iv > 0xFFFFFFFFull) {
                    fail_at(&c, f + 5, "expiry: live:INTERVAL: %" PRIu64 " not in 1..4294967295", iv);
                    goto out;
                }
                p.exp_rt = iv == 0xFFFFFFFFull ? -1 : -3 - (int64_t)iv;
            } else {
                int64_t x = 0;
                for (size_t i = 0; i < n; i++) {
                    if (f[i] < '0' || f[i] > '9' || i == 18 || (n > 1 && f[0] == '0')) {
                        fail_at(&c, f + i, "expiry: \"never\", \"live:N\", \"live\" or Unix seconds expected");
                        goto out;
                    }
                    x = x * 10 + (f[i] - '0');
                }
                p.exp_rt = x;
            }
            p.at = at;
            p.line = c.line;
            p.lineno = c.lineno;
            sessions++;
        } else if (keyword(&c, "sub")) {
            if (sessions == 0) { fail_at(&c, at, "\"sub\" before any \"session\""); goto out; }
            wm_proxy_saved_sub r = { 0 };
            char *s;
            uint32_t sl;
            if (string(&c, "topic filter", false, false, &s, &sl)) goto out;
            if (sl == 0) { fail_at(&c, s, "topic filter: empty"); goto out; }
            char *filter_at = s;
            r.filter = s;
            r.filter_len = sl;
            if (number(&c, "subscription identifier", false, 1, WM_PROXY_SID_MAX, &v)) goto out;
            r.sid = (uint32_t)v;
            if (string(&c, "neighborhood", false, true, &s, &sl)) goto out;
            if (s && sl == 0) { fail_at(&c, s, "neighborhood: empty"); goto out; }
            r.nbhd = s;
            if (string(&c, "xpath", true, true, &s, &sl)) goto out;
            if (s && sl == 0) { fail_at(&c, s, "xpath: empty"); goto out; }
            r.xpath = s;
            r.reg_sub = WM_SUB_NONE;
            records++;
            size_t off;
            wm_topic_status ts = wm_topic_filter_validate(r.filter, r.filter_len, &off);
            /* Only the syntax: the registry in force when the session resumes
             * binds the prefixes (and reports a query no schema takes then). */
            wm_xp_error xe;
            bool xp_bad = ts == WM_TOPIC_OK && r.xpath && !wm_xp_syntax_check(r.xpath, sl, &xe);
            if (ts != WM_TOPIC_OK || xp_bad) {
                char why[600];
                if (xp_bad && xe.pos)
                    fail_at(&c, r.xpath, "xpath: %s (byte %" PRIu32 " of the query)", xe.msg, xe.pos);
                else if (xp_bad)
                    fail_at(&c, r.xpath, "xpath: %s", xe.msg);
                else
                    fail_at(&c, filter_at, "topic filter: %s", wm_topic_status_message(ts));
                snprintf(why, sizeof why, "%s", err);
                fprintf(stderr, "wirematch-proxy: --state: %s; record skipped\n", why);
                err[0] = 0;
                info->skipped++;
                p.s.incomplete = true;
            } else if (p.at) {   /* (restored with their session at the next "session" or "end") */
                if (p.n == p.cap) {
                    uint32_t cap = p.cap ? p.cap * 2 : 16;
                    wm_proxy_saved_sub *nr = realloc(p.recs, (size_t)cap * sizeof *nr);
                    if (!nr) { fail_at(&c, at, "out of memory"); goto out; }
                    p.recs = nr;
                    p.cap = cap;
                }
                p.recs[p.n++] = r;
            }
        } else if (keyword(&c, "end")) {
            uint64_t ns, nr;
            if (number(&c, "session count", false, 0, UINT32_MAX, &ns)) goto out;
            if (number(&c, "record count", true, 0, UINT64_MAX / 2, &nr)) goto out;
            if (ns != sessions || nr != records) {
                fail_at(&c, at, "end: %" PRIu64 " sessions and %" PRIu64 " records announced, %" PRIu64 " and %" PRIu64
                        " above", ns, nr, sessions, records);
                goto out;
            }
            if (c.p != c.end) { next_line(&c); fail_at(&c, c.p, "data after the \"end\" line"); goto out; }
            if (flush(&c, &p, g, info->clean, v1, now_rt_s, now_mono_ns, info)) goto out;
            rc = 0;
            goto out;
        } else {
            fail_at(&c, at, "\"session\", \"sub\" or \"end\" expected");
            goto out;
        }
        next_line(&c);
    }
out:
    free(p.recs);
    return rc;
}

int wm_proxy_state_load(const char *path, wm_proxy_registry *g, wm_proxy_state_info *info, char *err, size_t errcap)
{
    memset(info, 0, sizeof *info);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    char *buf = NULL;
    const char *why = NULL;
    if (fstat(fd, &st) < 0) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if ((uint64_t)st.st_size > FILE_MAX) why = "larger than 1 GiB";
    else if (!(buf = malloc((size_t)st.st_size + 1))) why = "out of memory";
    size_t got = 0;
    while (!why && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) why = strerror(errno);
        else if (r == 0) why = "file shrank while read";
        else got += (size_t)r;
    }
    close(fd);
    if (why) {
        free(buf);
        snprintf(err, errcap, "%s: %s", path, why);
        return -1;
    }
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    char e[512];
    int rc = wm_proxy_state_parse(buf, got, g, rt.tv_sec, (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec,
                                  info, e, sizeof e);
    free(buf);
    if (rc) snprintf(err, errcap, "%s: %s", path, e);
    return rc;
}

/* ------------------------------------------------------------ the mirror */

/* The saver's copy of one entry: its file text, formatted once when it was
 * taken. text[0, head_len) is "session CID" (the next identifier, which
 * depends on whether the write is the clean stop's, the incomplete flag and
 * the expiry, which depends on the time of the write, follow it), then "\n"
 * and the records' lines, text[head_len, len). */
typedef struct mentry {
    struct mentry *prev, *next;  /* file order: the order entries were first taken */
    struct mentry *hnext;        /* chain of its hash bucket */
    uint64_t gen;
    bool attached;
    uint64_t expire_ns;
    uint32_t interval;           /* attached: its Session Expiry Interval (s), if interval_set */
    bool interval_set;
    uint32_t sid_next, ceiling;  /* written at a clean stop / while running */
    bool incomplete;
    uint32_t n_recs;
    size_t head_len, len;
    char text[];
} mentry;

struct wm_proxy_state_mirror {
    wm_proxy_registry *g;
    mentry **bucket;             /* [n_bucket], a power of 2; by generation */
    uint32_t n_bucket;
    mentry *head, *tail;
    uint64_t sessions, records;
    uint64_t text_bytes;         /* sum of the entries' len */
};

/* Count-then-fill writer: with p NULL only n grows (the length pass). */
typedef struct wbuf {
    char *p;
    size_t n;
} wbuf;

static void w_put(wbuf *w, const void *s, size_t n)
{
    if (w->p) memcpy(w->p + w->n, s, n);
    w->n += n;
}

static void w_u32(wbuf *w, uint32_t v)
{
    char d[10];
    int k = 0;
    do { d[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) w_put(w, &d[--k], 1);
}

/* A string field (see the format), preceded by a space. */
static void w_str(wbuf *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    w_put(w, " ", 1);
    if (!s) { w_put(w, "-", 1); return; }
    if (n == 0) { w_put(w, "~", 1); return; }
    size_t run = 0;   /* bytes s[i - run, i) go out as they are */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool alone = n == 1 && (ch == '-' || ch == '~');
        if (ch < 0x21 || ch > 0x7E || ch == '%' || alone) {
            w_put(w, s + i - run, run);
            run = 0;
            char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };
            w_put(w, e, 3);
        } else {
            run++;
        }
    }
    w_put(w, s + n - run, run);
}

/* c's text (mentry's layout); *head_len: the session line's part. */
static void entry_text(wbuf *w, const wm_proxy_session_copy *c, size_t *head_len)
{
    const wm_proxy_saved_session *s = &c->s;
    w_put(w, "session", 7);
    w_str(w, (const char *)s->cid, s->cid_len);
    *head_len = w->n;
    w_put(w, "\n", 1);
    for (uint32_t i = 0; i < c->n; i++) {
        const wm_proxy_saved_sub *r = &c->recs[i];
        w_put(w, "sub", 3);
        w_str(w, r->filter, r->filter_len);
        w_put(w, " ", 1);
        w_u32(w, r->sid);
        w_str(w, r->nbhd, r->nbhd ? strlen(r->nbhd) : 0);
        w_str(w, r->xpath, r->xpath ? strlen(r->xpath) : 0);
        w_put(w, "\n", 1);
    }
}

static uint32_t gen_slot(const wm_proxy_state_mirror *m, uint64_t gen)
{
    return (uint32_t)((gen * 0x9E3779B97F4A7C15ull) >> 32) & (m->n_bucket - 1);
}

/* The link pointing at gen's entry (*link NULL if none). */
static mentry **mirror_link(wm_proxy_state_mirror *m, uint64_t gen)
{
    mentry **l = &m->bucket[gen_slot(m, gen)];
    while (*l && (*l)->gen != gen) l = &(*l)->hnext;
    return l;
}

static void mirror_unlink(wm_proxy_state_mirror *m, mentry **l)
{
    mentry *e = *l;
    *l = e->hnext;
    if (e->prev) e->prev->next = e->next;
    else m->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else m->tail = e->prev;
    m->sessions--;
    m->records -= e->n_recs;
    m->text_bytes -= e->len;
    free(e);
}

static void mirror_clear(wm_proxy_state_mirror *m)
{
    for (mentry *e = m->head, *nx; e; e = nx) { nx = e->next; free(e); }
    memset(m->bucket, 0, (size_t)m->n_bucket * sizeof *m->bucket);
    m->head = m->tail = NULL;
    m->sessions = m->records = m->text_bytes = 0;
}

/* Takes c in: replaces gen's entry where it stands, or appends one. Returns
 * 0, or -1 if memory ran out (m unchanged). */
static int mirror_put(wm_proxy_state_mirror *m, const wm_proxy_session_copy *c)
{
    if (m->sessions >= m->n_bucket) {
        /* about one entry per bucket: double and rechain */
        uint32_t nb = m->n_bucket * 2;
        mentry **b = nb > m->n_bucket ? calloc(nb, sizeof *b) : NULL;
        if (b) {
            free(m->bucket);
            m->bucket = b;
            m->n_bucket = nb;
            for (mentry *e = m->head; e; e = e->next) {
                mentry **l = &m->bucket[gen_slot(m, e->gen)];
                e->hnext = *l;
                *l = e;
            }
        }
    }
    wbuf w = { NULL, 0 };
    size_t head_len;
    entry_text(&w, c, &head_len);
    mentry *e = malloc(sizeof *e + w.n);
    if (!e) return -1;
    size_t len = w.n;
    w = (wbuf){ e->text, 0 };
    entry_text(&w, c, &head_len);
    e->gen = c->gen;
    e->attached = c->s.attached;
    e->expire_ns = c->s.expire_ns;
    e->interval = c->s.interval;
    e->interval_set = c->s.interval_set;
    /* (an entry that never had a proxy identifier holds 0: none used) */
    e->sid_next = c->s.sid_next < WM_PROXY_SID_BASE ? WM_PROXY_SID_BASE : c->s.sid_next;
    e->ceiling = c->s.ceiling > e->sid_next ? c->s.ceiling : e->sid_next;
    e->incomplete = c->s.incomplete;
    e->n_recs = c->n;
    e->head_len = head_len;
    e->len = len;
    mentry **l = mirror_link(m, c->gen), *old = *l;
    if (old) {
        e->prev = old->prev;
        e->next = old->next;
        e->hnext = old->hnext;
        if (e->prev) e->prev->next = e;
        else m->head = e;
        if (e->next) e->next->prev = e;
        else m->tail = e;
        *l = e;
        m->records -= old->n_recs;
        m->text_bytes -= old->len;
        free(old);
    } else {
        e->prev = m->tail;
        e->next = NULL;
        e->hnext = NULL;
        if (m->tail) m->tail->next = e;
        else m->head = e;
        m->tail = e;
        *l = e;
        m->sessions++;
    }
    m->records += e->n_recs;
    m->text_bytes += e->len;
    return 0;
}

wm_proxy_state_mirror *wm_proxy_state_mirror_new(wm_proxy_registry *g)
{
    wm_proxy_state_mirror *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->g = g;
    m->n_bucket = 64;
    if (!(m->bucket = calloc(m->n_bucket, sizeof *m->bucket))) {
        free(m);
        return NULL;
    }
    wm_proxy_registry_track(g);
    return m;
}

void wm_proxy_state_mirror_free(wm_proxy_state_mirror *m)
{
    if (!m) return;
    mirror_clear(m);
    free(m->bucket);
    free(m);
}

int wm_proxy_state_sync(wm_proxy_state_mirror *m)
{
    uint64_t taken = 0, budget = UINT64_MAX;
    for (;;) {
        wm_proxy_session_batch b;
        int rc = wm_proxy_registry_sessions_take(m->g, WM_PROXY_STATE_HOLD_ENTRIES, WM_PROXY_STATE_HOLD_BYTES, &b);
        /* What was queued when the sync began, and no more: a table that
         * keeps changing does not keep the saver here (the rest is the next
         * sync's). */
        if (budget == UINT64_MAX) budget = b.queued;
        if (b.reset) mirror_clear(m);
        for (size_t i = 0; i < b.n_gone; i++) {
            mentry **l = mirror_link(m, b.gone[i]);
            if (*l) mirror_unlink(m, l);
        }
        bool lost = false;
        for (const wm_proxy_session_copy *c = b.copies; c && !lost; c = c->next) lost = mirror_put(m, c) != 0;
        taken += b.n_copies;
        bool more = b.more;
        wm_proxy_registry_batch_free(&b);
        if (lost) {
            /* an entry taken but not kept: start over at the next sync */
            wm_proxy_registry_sessions_resync(m->g);
            return -1;
        }
        if (rc) return -1;
        if (!more || taken >= budget) return 0;
    }
}

uint64_t wm_proxy_state_mirror_bytes(const wm_proxy_state_mirror *m) { return m->text_bytes; }

/* ------------------------------------------------------------ writing */

/* The file's text from m to f (stdio: errors show in ferror(f)). */
static void emit(FILE *f, const wm_proxy_state_mirror *m, uint32_t epoch, bool clean, int64_t now_rt_s,
                 uint64_t now_mono_ns)
{
    fprintf(f, MAGIC "\nepoch %" PRIu32 "\nclean %d\n", epoch, clean ? 1 : 0);
    for (const mentry *e = m->head; e; e = e->next) {
        fwrite(e->text, 1, e->head_len, f);
        /* At a clean stop nothing is handed out any more: the exact next
         * one; while running, the ceiling no identifier handed out reaches
         * before the next save (proxy_registry.h, _session_sid). */
        fprintf(f, " %" PRIu32 " %d ", clean ? e->sid_next : e->ceiling, e->incomplete ? 1 : 0);
        /* A connected session with interval 0 ends with its connection: if
         * the proxy is killed now, the broker ends it too, so the file says
         * it expired (not loaded again). */
        if (e->attached && e->interval_set && e->interval) fprintf(f, "live:%" PRIu32, e->interval);
        else if (e->attached && !e->interval_set) fputs("live", f);
        else if (e->attached) fprintf(f, "%" PRId64, now_rt_s);
        else if (e->expire_ns == UINT64_MAX) fputs("never", f);
        else if (e->expire_ns <= now_mono_ns) fprintf(f, "%" PRId64, now_rt_s);
        else fprintf(f, "%" PRId64, now_rt_s + (int64_t)((e->expire_ns - now_mono_ns + 999999999ull) / 1000000000ull));
        fwrite(e->text + e->head_len, 1, e->len - e->head_len, f);
    }
    fprintf(f, "end %" PRIu64 " %" PRIu64 "\n", m->sessions, m->records);
}

int wm_proxy_state_format(const wm_proxy_state_mirror *m, uint32_t epoch, bool clean, int64_t now_rt_s,
                          uint64_t now_mono_ns, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f) return -1;
    emit(f, m, epoch, clean, now_rt_s, now_mono_ns);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        free(*text);
        *text = NULL;
        return -1;
    }
    return 0;
}

int wm_proxy_state_write(const char *path, const wm_proxy_state_mirror *m, uint32_t epoch, bool clean, char *err,
                         size_t errcap)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    /* rename(2) would replace a symlink with a regular file: the file it
     * names is replaced instead, beside it (as wmctl resolve --out does),
     * looked up again at every save. A device, FIFO or socket cannot be
     * read back as the next start's state: refused. */
    char *target;
    bool in_place;
    int re = wm_out_path_resolve(path, &target, &in_place);
    if (re) {
        snprintf(err, errcap, "%s: %s", path, strerror(re));
        return -1;
    }
    if (in_place) {
        snprintf(err, errcap, "%s: not a regular file (a device, FIFO or socket): the next start could not read the "
                 "sessions back from it", path);
        free(target);
        return -1;
    }
    size_t pl = strlen(target);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        free(target);
        snprintf(err, errcap, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, target, pl);
    memcpy(tmp + pl, ".tmp", 5);
    const char *step = "open";
    int e = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    if (!ok) e = errno;
    FILE *f = ok ? fdopen(fd, "w") : NULL;
    if (ok && !f) { ok = false; e = errno; close(fd); }
    if (ok) {
        /* large writes go past the buffer: the entries' texts as they are */
        setvbuf(f, NULL, _IOFBF, 1 << 16);
        emit(f, m, epoch, clean, rt.tv_sec, (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec);
        if (fflush(f) != 0 || ferror(f)) { ok = false; step = "write"; e = errno; }
        if (ok && fsync(fd) < 0) { ok = false; step = "fsync"; e = errno; }
        if (fclose(f) != 0 && ok) { ok = false; step = "close"; e = errno; }
    }
    if (ok && rename(tmp, target) < 0) { ok = false; step = "rename"; e = errno; }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errcap, "%s: %s: %s", tmp, step, strerror(e ? e : EIO));
    } else {
        /* the rename itself is durable once the directory is */
        char *slash = strrchr(tmp, '/');
        int dfd;
        if (slash == tmp) dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        else if (slash) { *slash = 0; dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }
        else dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { fsync(dfd); close(dfd); }
    }
    free(tmp);
    free(target);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------ the saver */

static uint64_t mono_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Saves have failed since sv->fail_since_ns: once for
 * WM_PROXY_STATE_UNWRITABLE_NS (at now), the registry is told, once. */
static void unwritable_by(wm_proxy_state_saver *sv, uint64_t now)
{
    if (!sv->failing || sv->quiet || sv->unwritable || now - sv->fail_since_ns < WM_PROXY_STATE_UNWRITABLE_NS) return;
    sv->unwritable = true;
    wm_proxy_registry_ceilings_unwritable(sv->g);
    fprintf(stderr, "wirematch-proxy: --state %s: saves failed for %.1f s: a filtered SUBSCRIBE that needs "
            "a subscription identifier reservation is refused (SUBACK 0x80) until a save succeeds\n",
            sv->path, (double)(now - sv->fail_since_ns) / 1e9);
}

/* Syncs and writes (clean as final); counts and reports a failure. */
static int save(wm_proxy_state_saver *sv, bool final)
{
    uint64_t ch = wm_proxy_registry_changes(sv->g);
    char err[512];
    /* (a hand-out told to wait before this is in the sync below) */
    wm_proxy_registry_sid_urgent_clear(sv->g);
    int rc = wm_proxy_state_sync(sv->mirror);
    uint64_t t0 = mono_now_ns();
    if (rc) snprintf(err, sizeof err, "%s: out of memory", sv->path);
    else rc = wm_proxy_state_write(sv->path, sv->mirror, sv->epoch, final, err, sizeof err);
    uint64_t t1 = mono_now_ns();
    if (rc) {
        snprintf(sv->last_error, sizeof sv->last_error, "%s", err);
        sv->save_errors++;
        if (!sv->failing && !sv->quiet) fprintf(stderr, "wirematch-proxy: --state %s (kept trying)\n", err);
        if (!sv->failing) {
            sv->fail_since_ns = t0;
            sv->retry_ns = WM_PROXY_STATE_MIN_INTERVAL_NS;
        } else {
            sv->retry_ns = sv->retry_ns * 2 < WM_PROXY_STATE_RETRY_MAX_NS ? sv->retry_ns * 2
                                                                          : WM_PROXY_STATE_RETRY_MAX_NS;
        }
        sv->failing = true;
        sv->try_end_ns = t1;
        if (!final) unwritable_by(sv, t1);
        return -1;
    }
    /* The reservations in this file may be handed out now (the clean
     * stop's writes exact next identifiers: nothing is handed out after). */
    if (!final) wm_proxy_registry_ceilings_saved(sv->g);
    if (sv->failing) fprintf(stderr, "wirematch-proxy: --state %s: saved again\n", sv->path);
    sv->failing = false;
    sv->unwritable = false;
    sv->saves++;
    sv->saved_once = true;
    sv->saved_changes = ch;
    sv->bytes = wm_proxy_state_mirror_bytes(sv->mirror);
    /* The file is rewritten whole: writing it takes at most about a tenth
     * of the time (and of the disk), however large it grows. (The sync is
     * not counted: its cost follows the changes, not the file.) */
    uint64_t d = (t1 - t0) * WM_PROXY_STATE_SPACING;
    sv->interval_ns = d < WM_PROXY_STATE_MIN_INTERVAL_NS   ? WM_PROXY_STATE_MIN_INTERVAL_NS
                      : d > WM_PROXY_STATE_MAX_INTERVAL_NS ? WM_PROXY_STATE_MAX_INTERVAL_NS
                                                           : d;
    sv->next_save_ns = t1 + sv->interval_ns;
    sv->last_end_ns = t1;
    return 0;
}

int wm_proxy_state_start(wm_proxy_state_saver *sv, const char *path, uint32_t epoch, wm_proxy_registry *g, char *err,
                         size_t errcap)
{
    memset(sv, 0, sizeof *sv);
    sv->path = path;
    sv->epoch = epoch;
    sv->g = g;
    /* Tracked before the load: the file's order is kept in the next one. */
    if (!(sv->mirror = wm_proxy_state_mirror_new(g))) {
        snprintf(err, errcap, "%s: out of memory", path);
        return -1;
    }
    if (wm_proxy_state_load(path, g, &sv->loaded, err, errcap)) return -1;
    if (sv->loaded.found) sv->epoch = sv->loaded.epoch;
    /* (the first save is not counted in saves: the summary counts those
     * of the run) */
    sv->quiet = true;
    int rc = save(sv, false);
    sv->quiet = false;
    sv->saves = 0;
    if (rc) snprintf(err, errcap, "%s", sv->last_error);
    return rc;
}

void wm_proxy_state_stop(wm_proxy_state_saver *sv)
{
    wm_proxy_state_mirror_free(sv->mirror);
    sv->mirror = NULL;
}

int wm_proxy_state_tick(wm_proxy_state_saver *sv, bool final)
{
    if (final) return save(sv, true);
    if (wm_proxy_registry_changes(sv->g) == sv->saved_changes) return 0;
    uint64_t now = mono_now_ns();
    /* A SUBSCRIBE waits for a reservation to reach the file: write it after
     * the shortest interval, not the spacing (the reservations of every
     * session waiting then go in one write). Failing saves are retried
     * after their backoff, however many SUBSCRIBEs ask; between tries the
     * time alone may make the file unwritable for the registry. */
    unwritable_by(sv, now);
    if (sv->failing ? now >= sv->try_end_ns + sv->retry_ns
                    : now >= sv->next_save_ns || (wm_proxy_registry_sid_urgent(sv->g) &&
                                                  now >= sv->last_end_ns + WM_PROXY_STATE_MIN_INTERVAL_NS))
        return save(sv, false);
    /* Not time to write yet: the mirror follows the table all the same, so
     * that each take stays small. */
    if (wm_proxy_state_sync(sv->mirror) == 0) return 0;
    sv->save_errors++;
    return -1;
}
