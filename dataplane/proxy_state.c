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

#define MAGIC "wirematch-proxy-state 1"
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
    int64_t exp_rt;          /* expiry: Unix s; -1 never, -2 live */
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
static int flush(cursor *c, pending *p, wm_proxy_registry *g, bool clean, int64_t now_rt_s, uint64_t now_mono_ns,
                 wm_proxy_state_info *info)
{
    if (!p->at) return 0;
    char why[256];
    p->s.incomplete |= !clean;
    if (p->exp_rt == -2) {
        p->s.attached = true;
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
    if (len < ml + 1 || memcmp(buf, MAGIC, ml) != 0 || buf[ml] != '\n') {
        fail_at(&c, buf, "not a wirematch-proxy state file (first line must be \"" MAGIC "\")");
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
            if (flush(&c, &p, g, info->clean, now_rt_s, now_mono_ns, info)) goto out;
            char *cid;
            uint32_t cid_len;
            if (string(&c, "client identifier", false, false, &cid, &cid_len)) goto out;
            if (number(&c, "next identifier", false, WM_PROXY_SID_BASE, WM_PROXY_SID_PLAIN, &v)) goto out;
            p.s = (wm_proxy_saved_session){ (const uint8_t *)cid, cid_len, (uint32_t)v, false, false, 0 };
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
            } else {
                int64_t x = 0;
                for (size_t i = 0; i < n; i++) {
                    if (f[i] < '0' || f[i] > '9' || i == 18 || (n > 1 && f[0] == '0')) {
                        fail_at(&c, f + i, "expiry: \"never\", \"live\" or Unix seconds expected");
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
            if (p.at) {   /* (restored with their session at the next "session" or "end") */
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
            if (flush(&c, &p, g, info->clean, now_rt_s, now_mono_ns, info)) goto out;
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

/* ------------------------------------------------------------ writing */

/* The text goes to an open_memstream (libc's growable buffer). */
typedef struct out {
    FILE *f;
    int64_t now_rt_s;
    uint64_t now_mono_ns;
} out;

static void put(out *o, const void *s, size_t n) { fwrite(s, 1, n, o->f); }

static void putf(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->f, fmt, ap);
    va_end(ap);
}

/* A string field (see the format), preceded by a space. */
static void put_str(out *o, const char *s, size_t n)
{
    put(o, " ", 1);
    if (!s) { put(o, "-", 1); return; }
    if (n == 0) { put(o, "~", 1); return; }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool alone = n == 1 && (ch == '-' || ch == '~');
        if (ch < 0x21 || ch > 0x7E || ch == '%' || alone) putf(o, "%%%02X", ch);
        else put(o, &s[i], 1);
    }
}

static void save_sess(void *ctx, const wm_proxy_saved_session *s)
{
    out *o = ctx;
    put(o, "session", 7);
    put_str(o, (const char *)s->cid, s->cid_len);
    /* (an entry that never had a proxy identifier holds 0: none used) */
    putf(o, " %" PRIu32 " %d ", s->sid_next < WM_PROXY_SID_BASE ? WM_PROXY_SID_BASE : s->sid_next, s->incomplete ? 1 : 0);
    if (s->attached) putf(o, "live\n");
    else if (s->expire_ns == UINT64_MAX) putf(o, "never\n");
    else if (s->expire_ns <= o->now_mono_ns) putf(o, "%" PRId64 "\n", o->now_rt_s);
    else putf(o, "%" PRId64 "\n", o->now_rt_s + (int64_t)((s->expire_ns - o->now_mono_ns + 999999999ull) / 1000000000ull));
}

static void save_rec(void *ctx, const wm_proxy_saved_sub *r)
{
    out *o = ctx;
    put(o, "sub", 3);
    put_str(o, r->filter, r->filter_len);
    putf(o, " %" PRIu32, r->sid);
    put_str(o, r->nbhd, r->nbhd ? strlen(r->nbhd) : 0);
    put_str(o, r->xpath, r->xpath ? strlen(r->xpath) : 0);
    put(o, "\n", 1);
}

typedef struct counter {
    out *o;
    uint64_t sessions, records;
} counter;

static void count_sess(void *ctx, const wm_proxy_saved_session *s)
{
    counter *k = ctx;
    k->sessions++;
    save_sess(k->o, s);
}

static void count_rec(void *ctx, const wm_proxy_saved_sub *r)
{
    counter *k = ctx;
    k->records++;
    save_rec(k->o, r);
}

int wm_proxy_state_format(wm_proxy_registry *g, uint32_t epoch, bool clean, int64_t now_rt_s, uint64_t now_mono_ns,
                          char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    out o = { open_memstream(text, len), now_rt_s, now_mono_ns };
    if (!o.f) return -1;
    putf(&o, MAGIC "\nepoch %" PRIu32 "\nclean %d\n", epoch, clean ? 1 : 0);
    counter k = { &o, 0, 0 };
    wm_proxy_registry_sessions_each(g, count_sess, count_rec, &k);
    putf(&o, "end %" PRIu64 " %" PRIu64 "\n", k.sessions, k.records);
    bool bad = ferror(o.f) != 0;
    if (fclose(o.f) != 0 || bad) {
        free(*text);
        *text = NULL;
        return -1;
    }
    return 0;
}

int wm_proxy_state_save(const char *path, wm_proxy_registry *g, uint32_t epoch, bool clean, char *err, size_t errcap)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    char *text;
    size_t n;
    if (wm_proxy_state_format(g, epoch, clean, rt.tv_sec, (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec,
                              &text, &n)) {
        snprintf(err, errcap, "%s: out of memory", path);
        return -1;
    }
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        free(text);
        snprintf(err, errcap, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    const char *step = "open";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < n;) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { ok = false; step = "write"; break; }
        done += (size_t)w;
    }
    if (ok && fsync(fd) < 0) { ok = false; step = "fsync"; }
    int e = errno;
    if (fd >= 0 && close(fd) < 0 && ok) { ok = false; step = "close"; e = errno; }
    if (ok && rename(tmp, path) < 0) { ok = false; step = "rename"; e = errno; }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errcap, "%s: %s: %s", tmp, step, strerror(e));
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
    free(text);
    return ok ? 0 : -1;
}

int wm_proxy_state_tick(wm_proxy_state_saver *sv, wm_proxy_registry *g, bool final)
{
    uint64_t ch = wm_proxy_registry_changes(g);
    if (!final && sv->saved_once && ch == sv->saved_changes) return 0;
    char err[512];
    if (wm_proxy_state_save(sv->path, g, sv->epoch, final, err, sizeof err)) {
        sv->save_errors++;
        if (!sv->failing) fprintf(stderr, "wirematch-proxy: --state %s (kept trying)\n", err);
        sv->failing = true;
        return -1;
    }
    if (sv->failing) fprintf(stderr, "wirematch-proxy: --state %s: saved again\n", sv->path);
    sv->failing = false;
    sv->saves++;
    sv->saved_once = true;
    sv->saved_changes = ch;
    return 0;
}
