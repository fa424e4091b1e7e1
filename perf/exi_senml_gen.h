/* Random RFC 8428 SenML packs as XML text (namespace
 * urn:ietf:params:xml:ns:senml, schema senml.gen.xsd), the workload of the
 * EXI benchmarks and round-trip tests. Header-only so tests and benchmarks
 * share one generator. Deterministic for a given seed; values are decimal
 * texts with at most 15 significant digits, so they survive EXI's decimal
 * float representation (§7.1.4) exactly. Not thread safe per state. */
#ifndef WM_PERF_EXI_SENML_GEN_H
#define WM_PERF_EXI_SENML_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t wm_senml_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Writes a pack of `records` records into out[0..cap) (NUL-terminated);
 * returns its length, or 0 if cap is too small. */
static const char *const wm_senml_names[] = { "temperature", "humidity", "voltage", "current", "lon", "lat", "pressure" };
static const char *const wm_senml_units[] = { "Cel", "%RH", "V", "A", "lon", "lat", "Pa" };

static inline size_t wm_senml_gen_pack(uint64_t *seed, unsigned records, char *out, size_t cap)
{
    const char *const *names = wm_senml_names, *const *units = wm_senml_units;
    size_t n = 0;
#define WM_SENML_PUT(...)                                                            \
    do {                                                                             \
        int k_ = snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__);              \
        if (k_ < 0 || (size_t)k_ >= (n < cap ? cap - n : 0)) return 0;              \
        n += (size_t)k_;                                                             \
    } while (0)
    WM_SENML_PUT("<sensml xmlns=\"urn:ietf:params:xml:ns:senml\">");
    for (unsigned r = 0; r < records; r++) {
        uint64_t x = wm_senml_rand(seed);
        unsigned k = (unsigned)(x % 7);
        WM_SENML_PUT("<senml");
        if (r == 0) {
            WM_SENML_PUT(" bn=\"urn:dev:ow:%08llx:\"", (unsigned long long)(wm_senml_rand(seed) & 0xffffffffu));
            WM_SENML_PUT(" bt=\"%llu\"", 1600000000ull + wm_senml_rand(seed) % 100000000ull);
            if (x & 8) WM_SENML_PUT(" bver=\"%u\"", (unsigned)(wm_senml_rand(seed) % 20));
        }
        WM_SENML_PUT(" n=\"%s\"", names[k]);
        if (x & 16) WM_SENML_PUT(" t=\"%d\"", -(int)(wm_senml_rand(seed) % 600));
        WM_SENML_PUT(" u=\"%s\"", units[k]);
        switch ((x >> 5) % 8) {
        case 0: WM_SENML_PUT(" vb=\"%s\"", (x >> 9) & 1 ? "true" : "false"); break;
        case 1: WM_SENML_PUT(" vs=\"state-%u\"", (unsigned)((x >> 9) % 50)); break;
        default: {
            long long m = (long long)(wm_senml_rand(seed) % 2000000) - 1000000;
            unsigned frac = (unsigned)((x >> 12) % 5);
            long long p = 1;
            for (unsigned i = 0; i < frac; i++) p *= 10;
            long long a = m < 0 ? -m : m;
            if (frac) WM_SENML_PUT(" v=\"%s%lld.%0*lld\"", m < 0 ? "-" : "", a / p, (int)frac, a % p);
            else WM_SENML_PUT(" v=\"%lld\"", m);
        }
        }
        WM_SENML_PUT("/>");
    }
    WM_SENML_PUT("</sensml>");
#undef WM_SENML_PUT
    return n;
}

/* One query of the content-filter benchmark's mix (perf/bench_exi_filter.c)
 * into q[0..cap), namespace prefix s: subscribers of a sensor feed: name +
 * threshold, device (bn) equality, unit + range, bn prefix, vs substring,
 * boolean + name, time window, a negation, and a regex, each with its own
 * literals. */
static inline void wm_senml_gen_query(uint64_t *s, char *q, size_t cap)
{
    unsigned k = (unsigned)(wm_senml_rand(s) % 100);
    const char *nm = wm_senml_names[wm_senml_rand(s) % 7], *un = wm_senml_units[wm_senml_rand(s) % 7];
    long x = (long)(wm_senml_rand(s) % 2000000) - 1000000, y = x + (long)(wm_senml_rand(s) % 500000);
    unsigned h = (unsigned)(wm_senml_rand(s) & 0xffffffffu);
    if (k < 30) snprintf(q, cap, "/s:sensml/s:senml[@n = '%s' and @v > %ld.%ld]", nm, x / 10, labs(x % 10));
    else if (k < 50) snprintf(q, cap, "//s:senml[@bn = 'urn:dev:ow:%08x:']", h);
    else if (k < 62) snprintf(q, cap, "//s:senml[@u = '%s' and (@v < %ld or @v > %ld)]", un, x, y);
    else if (k < 72) snprintf(q, cap, "//s:senml[starts-with(@bn, 'urn:dev:ow:%02x')]", h & 0xff);
    else if (k < 80) snprintf(q, cap, "//s:senml[contains(@vs, 'state-%u')]", h % 50);
    else if (k < 86) snprintf(q, cap, "//s:senml[@vb = '%s' and @n = '%s']", h & 1 ? "true" : "false", nm);
    else if (k < 92) snprintf(q, cap, "/s:sensml/s:senml[@n = '%s' and @t >= -%u]", nm, h % 600);
    else if (k < 97) snprintf(q, cap, "//s:senml[not(@u = '%s') and @v > %ld]", un, x);
    else snprintf(q, cap, "//s:senml[matches(@n, '^%c.*e$')]", nm[0]);
}

#endif
