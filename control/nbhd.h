/* The neighborhood language: the spaPS paper's notation for multi-stage
 * neighborhoods (Bauer et al., "spaPS", §IV, Table II) written in ASCII.
 *
 *   file    := { line }                 '#' starts a comment; blank lines ignored
 *   line    := NAME ':' stage { ('.' | '•') stage } [ 'visible' SET ]
 *   stage   := [ COUNT ] '(' refs ',' '{' CATFILTER { ',' CATFILTER } '}' ',' cond ')'
 *   refs    := '{' PEID { ',' PEID } '}'      stage 1: reference entities
 *            | 'Prev' | 'Anc' | SET            stage i >= 2: earlier stages
 *   SET     := '{' INT { ',' INT } '}'
 *   cond    := 'E' | 'I' | 'D' | 'T' | 'C' | 'DW' NUMBER     DW distance in metres
 *
 * Lexical details (what the grammar leaves open):
 *   NAME      [A-Za-z0-9_][A-Za-z0-9_.-]*, at most WM_NBHD_MAX_NAME bytes,
 *             unique within a file.
 *   PEID      a bare token [A-Za-z0-9._:/-]+ or a double-quoted string
 *             ("..." with \" and \\ escapes, no control bytes, valid UTF-8).
 *   CATFILTER a bare token (any bytes but whitespace, ',', '{', '}', '(' ,')',
 *             '"') or a double-quoted string, validated as an MQTT topic
 *             filter (codec/mqtt5_topic.h; shared "$share/" filters refused):
 *             "road/#" matches road and everything below it, "+" one level.
 *   COUNT     1..WM_NBHD_MAX_STAGES; "k(...)" stands for k copies of the
 *             stage, so "(...) . 3(Prev, ...)" has four stages whose Prev
 *             are {1}, {1,2}, {1,2,3}. Stage 1 takes peids, so it can only
 *             be repeated once (a COUNT > 1 on it is an error).
 *   NUMBER    digits with an optional fraction ("30", "12.5"), metres,
 *             at most WM_NBHD_MAX_DISTANCE_M.
 *   '#'       starts a comment only outside parentheses (inside braces it is
 *             the multi-level wildcard of a CATFILTER); '.' separates stages
 *             only outside parentheses (peids such as r4097656.0 contain dots).
 *   Whitespace: spaces and tabs anywhere between tokens; a line ends at LF
 *             (a CR before it is ignored). A neighborhood takes one line.
 *
 * Semantics (evaluated by control/resolver.h): N[0] = the stage-1 refs,
 * Ref[i] = union of N[j] for j in RefStages_i (Prev = {1..i-1}, Anc = {i-1}),
 * N[i] = Select(Ref[i], Cats_i, Cond_i); the result is the union of the
 * visible stages (default all of 1..k).
 *
 * Errors carry a 1-based line and a 1-based column (in bytes) of the offending
 * token. The parser is bounded by the WM_NBHD_MAX_* limits below, allocates
 * only through malloc, keeps no global state and is thread safe (each call
 * uses only its arguments).
 */
#ifndef WM_CONTROL_NBHD_H
#define WM_CONTROL_NBHD_H

#include <stddef.h>
#include <stdint.h>

#define WM_NBHD_MAX_INPUT      (64u << 20) /* bytes of one neighborhood file */
#define WM_NBHD_MAX_LINE       (1u << 20)  /* bytes of one line */
#define WM_NBHD_MAX_NAME       255u        /* bytes of a neighborhood name */
#define WM_NBHD_MAX_STAGES     64u         /* stages per neighborhood, after COUNT */
#define WM_NBHD_MAX_REFS       65536u      /* peids in one stage-1 reference set */
#define WM_NBHD_MAX_CATS       256u        /* category filters in one stage */
#define WM_NBHD_MAX_TOKEN      4096u       /* bytes of one peid or category filter */
#define WM_NBHD_MAX_NBHDS      1000000u    /* neighborhoods per file */
#define WM_NBHD_MAX_DISTANCE_M 1.0e8       /* DW distance bound, metres */
/* The resolver's work on one neighborhood (control/resolver.c): a
 * spatial-index visit is 1 unit, a prepared GEOS relation 64, a full relate
 * 1024. The limits above bound the text, not the work: 64 stages whose
 * references and candidates each cover a large world are O(stages x
 * references x candidates). The bound is 2-5 s of CPU here (the heaviest
 * 64-stage lines over Monaco take 0.37e9 units); a neighborhood over it is
 * refused with WM_NBHD_ERR_LIMIT at the stage that crossed it. */
#define WM_NBHD_MAX_WORK       (1ull << 29)

/* The spatial relations of the paper's Table I (OGC Simple Features 06-104r4,
 * as PostGIS names them). Related(r, e, cond) with r the reference, e the
 * candidate entity. */
typedef enum wm_nbhd_rel {
    WM_REL_EQUALS = 0,  /* E:  ST_Equals(r, e)        topological equality */
    WM_REL_INTERSECTS,  /* I:  ST_Intersects(r, e) */
    WM_REL_DISJOINT,    /* D:  ST_Disjoint(r, e)      = NOT ST_Intersects */
    WM_REL_TOUCHES,     /* T:  ST_Touches(r, e)       boundaries meet, interiors do not */
    WM_REL_CONTAINS,    /* C:  ST_Contains(r, e)      the reference contains the entity */
    WM_REL_DWITHIN,     /* DWd: ST_DWithin(r, e, d)   distance <= d metres */
} wm_nbhd_rel;

/* How a stage's references are given (as written, kept for printing). */
typedef enum wm_nbhd_refkind {
    WM_REFS_PEIDS = 0,  /* stage 1: explicit peids */
    WM_REFS_PREV,       /* Prev = {1..i-1} */
    WM_REFS_ANC,        /* Anc = {i-1} */
    WM_REFS_SET,        /* an explicit set of earlier stage numbers */
} wm_nbhd_refkind;

/* A source position: 1-based line and 1-based byte column. */
typedef struct wm_nbhd_pos {
    uint32_t line;
    uint32_t col;
} wm_nbhd_pos;

/* One reference peid of stage 1, NUL-terminated (quotes and escapes removed). */
typedef struct wm_nbhd_peid {
    char *peid;
    size_t len;
    wm_nbhd_pos pos;
} wm_nbhd_peid;

/* One stage after COUNT expansion. */
typedef struct wm_nbhd_stage {
    wm_nbhd_pos pos;            /* of the '(' (or of the COUNT) */
    wm_nbhd_refkind refkind;
    /* WM_REFS_PEIDS only: the peids, in source order (duplicates kept). */
    wm_nbhd_peid *peids;
    size_t n_peids;
    /* Stages >= 2: bit j-1 set <=> stage j contributes to Ref[i] (1 <= j < i). */
    uint64_t ref_stages;
    /* Category filters, NUL-terminated, valid non-shared MQTT topic filters. */
    char **cats;
    wm_nbhd_pos *cat_pos;       /* cat_pos[k] = where cats[k] starts */
    size_t n_cats;
    wm_nbhd_rel rel;
    double distance_m;          /* WM_REL_DWITHIN only, metres, >= 0 */
} wm_nbhd_stage;

/* One neighborhood (one line). */
typedef struct wm_nbhd {
    char *name;                 /* NUL-terminated */
    wm_nbhd_pos pos;            /* of the name */
    wm_nbhd_stage *stages;      /* stages[0] is stage 1 */
    size_t n_stages;
    /* bit i-1 set <=> stage i is visible; default all stages. Never empty. */
    uint64_t visible;
} wm_nbhd;

/* A parsed neighborhood file: neighborhoods in source order. */
typedef struct wm_nbhd_file {
    wm_nbhd *nbhds;
    size_t n_nbhds;
} wm_nbhd_file;

typedef enum wm_nbhd_status {
    WM_NBHD_OK = 0,
    WM_NBHD_ERR_SYNTAX,         /* unexpected character or token; message says what was expected */
    WM_NBHD_ERR_EMPTY_SET,      /* "{}" as a peid set, stage set, category list or visible set */
    WM_NBHD_ERR_BAD_STRING,     /* unterminated quote, bad escape, control byte or bad UTF-8 */
    WM_NBHD_ERR_BAD_NUMBER,     /* COUNT, stage number or DW distance malformed or out of range */
    WM_NBHD_ERR_BAD_CATFILTER,  /* not a valid topic filter (reason from codec/mqtt5_topic.h) */
    WM_NBHD_ERR_STAGE_REF,      /* a stage refers to itself or a later stage, Prev/Anc/SET on
                                 * stage 1, peids on stage >= 2, COUNT > 1 on stage 1 */
    WM_NBHD_ERR_VISIBLE,        /* a visible stage number outside 1..k */
    WM_NBHD_ERR_DUP_NAME,       /* a neighborhood name used twice in the file */
    WM_NBHD_ERR_LIMIT,          /* a WM_NBHD_MAX_* bound crossed */
    WM_NBHD_ERR_UNKNOWN_PEID,   /* a reference peid not in the world (reported by the resolver) */
    WM_NBHD_ERR_UNKNOWN_CATEGORY, /* a category filter matching no category of the world (resolver) */
    WM_NBHD_ERR_GEOMETRY,       /* GEOS failed evaluating a relation (resolver; message has GEOS's text) */
    WM_NBHD_ERR_NOMEM,          /* allocation failed */
} wm_nbhd_status;

/* The first error of a parse (or of resolving, for UNKNOWN_PEID/_CATEGORY). */
typedef struct wm_nbhd_error {
    wm_nbhd_status status;
    wm_nbhd_pos pos;            /* 1-based line and byte column; 0/0 if not positional */
    char message[256];          /* NUL-terminated, one line, without the position */
} wm_nbhd_error;

/* Parses a whole neighborhood file held in [text, text+len) (need not be
 * NUL-terminated; NUL bytes are syntax errors). On success fills *out (caller
 * frees with wm_nbhd_file_free) and returns WM_NBHD_OK. On failure returns the
 * status, fills *err (if not NULL) with the first error and leaves *out empty.
 * An empty file (or only comments) is valid and yields zero neighborhoods. */
wm_nbhd_status wm_nbhd_parse(const char *text, size_t len, wm_nbhd_file *out, wm_nbhd_error *err);

/* Parses exactly one neighborhood line (for a neighborhood named at subscribe
 * time); `line` may not contain LF. Positions report line 1. On success *out
 * is filled (free with wm_nbhd_free). */
wm_nbhd_status wm_nbhd_parse_one(const char *line, size_t len, wm_nbhd *out, wm_nbhd_error *err);

/* Frees what a parse allocated; the structs themselves are the caller's. Safe
 * on zeroed structs and twice in a row. */
void wm_nbhd_free(wm_nbhd *n);
void wm_nbhd_file_free(wm_nbhd_file *f);

/* Writes "LINE:COL: message" (or the message alone if unpositioned) into buf
 * (always NUL-terminated when cap > 0). Returns buf. */
const char *wm_nbhd_error_format(const wm_nbhd_error *err, char *buf, size_t cap);

/* A short, stable, lower-case name for a status ("syntax", "empty_set", ...). */
const char *wm_nbhd_status_name(wm_nbhd_status st);

/* The relation's letter as written ("E", "I", "D", "T", "C", "DW"). */
const char *wm_nbhd_rel_name(wm_nbhd_rel rel);

#endif
