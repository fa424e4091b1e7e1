/* Content Type parsing against the RFC 9110 media-type grammar
 * (control/exi_content_type.h): empty parameters (review 6 finding 10:
 * "application/exi; schema=senml;" was refused), quoted-strings with
 * quoted-pairs, whitespace, case, repeated parameters, and the position
 * every refusal names. Expected values are read off the grammar, not the
 * code: positions are 1-based byte offsets counted in the literal. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "control/exi_content_type.h"

typedef struct {
    const char *ct;
    const char *schema;
    uint32_t set; /* WM_EXI_OOB_* the parameters set */
} ok_case;

Test(exi_content_type, valid_media_types)
{
    static const ok_case ok[] = {
        { "application/exi; schema=senml", "senml", 0 },
        /* parameters = *( OWS ";" OWS [ parameter ] ): empty parameters anywhere */
        { "application/exi; schema=senml;", "senml", 0 },
        { "application/exi;;schema=senml", "senml", 0 },
        { "application/exi; schema=senml ;", "senml", 0 },
        { "application/exi ; ; ;schema=a;;\t; ", "a", 0 },
        { "application/exi;schema=a;strict=true;", "a", WM_EXI_OOB_STRICT },
        /* whitespace around the whole value is no part of it (RFC 9110 §5.5) */
        { " \tapplication/exi;schema=a \t", "a", 0 },
        { "application/exi;\tschema=a", "a", 0 },
        /* type, subtype and parameter names are case-insensitive; values are the option's business */
        { "APPLICATION/Exi; SCHEMA=a.b-c; Strict=TRUE", "a.b-c", WM_EXI_OOB_STRICT },
        /* quoted-string: equivalent to the token; quoted-pairs undone (§5.6.4) */
        { "application/exi; schema=\"senml\"", "senml", 0 },
        { "application/exi; schema=\"sen\\ml\"", "senml", 0 },
        { "application/exi; schema=\"a\\\\b\"", "a\\b", 0 },
        { "application/exi; schema=\"a\\\"b\"", "a\"b", 0 },
        { "application/exi; schema=\"a;b c\"", "a;b c", 0 },
        { "application/exi; schema=\"\xc3\xa9\"", "\xc3\xa9", 0 }, /* obs-text */
        { "application/exi; schema=a; strict=\"tr\\ue\"; value-max-length=\"8\"", "a",
          WM_EXI_OOB_STRICT | WM_EXI_OOB_VALUE_MAX_LENGTH },
        /* token characters other than the registry's: a name no registry holds, not a syntax error */
        { "application/exi; schema=a!#$%&'*+^_`|~", "a!#$%&'*+^_`|~", 0 },
        { "application/exi; schema=0123456789012345678901234567890123456789012345678901234567890123",
          "0123456789012345678901234567890123456789012345678901234567890123", 0 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        wm_exi_ct c;
        char why[200] = "";
        cr_assert_eq(wm_exi_content_type_parse(ok[i].ct, strlen(ok[i].ct), &c, why, sizeof why), WM_EXI_CT_OK, "%s: %s",
                     ok[i].ct, why);
        cr_assert_str_eq(c.schema, ok[i].schema, "%s", ok[i].ct);
        cr_assert_eq(c.schema_len, strlen(ok[i].schema), "%s", ok[i].ct);
        cr_assert_eq(c.ov.set, ok[i].set, "%s: options %#x", ok[i].ct, c.ov.set);
        if (ok[i].set & WM_EXI_OOB_STRICT) cr_assert(c.ov.strict);
        if (ok[i].set & WM_EXI_OOB_VALUE_MAX_LENGTH) cr_assert_eq(c.ov.value_max_length, 8);
        const char *n;
        size_t nl;
        cr_assert(wm_exi_content_type_schema(ok[i].ct, strlen(ok[i].ct), &n, &nl), "%s", ok[i].ct);
        cr_assert(nl == c.schema_len && !memcmp(n, c.schema, nl), "%s", ok[i].ct);
    }
}

typedef struct {
    const char *ct;
    wm_exi_ct_status st;
    const char *why; /* a substring of the reason */
} bad_case;

Test(exi_content_type, refusals_name_the_position)
{
    static const bad_case bad[] = {
        /* not EXI: the parameters of another media type are not looked at */
        { "text/plain; schema=s", WM_EXI_CT_NOT_EXI, "not application/exi" },
        { "text/plain;;; ===", WM_EXI_CT_NOT_EXI, "not application/exi" },
        { "application/exist; schema=a", WM_EXI_CT_NOT_EXI, "not application/exi" },
        { "application/exi+xml; schema=a", WM_EXI_CT_NOT_EXI, "not application/exi" },
        { "application/exi", WM_EXI_CT_NOT_EXI, "without a schema parameter" },
        { "application/exi; ;", WM_EXI_CT_NOT_EXI, "without a schema parameter" },
        { "application/exi; strict=true", WM_EXI_CT_NOT_EXI, "without a schema parameter" },
        { "", WM_EXI_CT_NOT_EXI, "position 1: not a media type: type expected" },
        { "application /exi; schema=a", WM_EXI_CT_NOT_EXI, "position 12: not a media type: '/' expected" },
        { "application/", WM_EXI_CT_NOT_EXI, "position 13: not a media type: subtype expected" },
        { ";schema=a", WM_EXI_CT_NOT_EXI, "position 1: not a media type" },
        /* application/exi with bad syntax */
        { "application/exi/x; schema=a", WM_EXI_CT_BAD, "position 16: ';' expected" },
        { "application/exi; schema=a b", WM_EXI_CT_BAD, "position 27: ';' expected" },
        { "application/exi; schema=a@", WM_EXI_CT_BAD, "position 26: ';' expected" },
        { "application/exi; =a", WM_EXI_CT_BAD, "position 18: parameter name expected" },
        { "application/exi; schema", WM_EXI_CT_BAD, "position 24: '=' expected after parameter 'schema'" },
        { "application/exi; schema =a", WM_EXI_CT_BAD, "position 24: '=' expected after parameter 'schema' (no whitespace" },
        { "application/exi; schema= a", WM_EXI_CT_BAD, "position 25: value expected for parameter 'schema' (no whitespace" },
        { "application/exi; schema=", WM_EXI_CT_BAD, "position 25: value expected for parameter 'schema'" },
        { "application/exi; schema=;", WM_EXI_CT_BAD, "position 25: value expected" },
        { "application/exi; schema=\"\"", WM_EXI_CT_BAD, "position 25: empty schema name" },
        { "application/exi; schema=\"a", WM_EXI_CT_BAD, "position 25: unterminated quoted value" },
        { "application/exi; schema=\"a\\\"", WM_EXI_CT_BAD, "position 25: unterminated quoted value" },
        { "application/exi; schema=\"a\\", WM_EXI_CT_BAD, "position 25: unterminated quoted value" },
        { "application/exi; schema=\"a\x01\"", WM_EXI_CT_BAD, "position 27: byte 0x01 is not allowed in a quoted value" },
        { "application/exi; schema=\"a\x7f\"", WM_EXI_CT_BAD, "position 27: byte 0x7f is not allowed" },
        { "application/exi; schema=\"a\\\x01\"", WM_EXI_CT_BAD, "position 28: byte 0x01 cannot be escaped" },
        { "application/exi; schema=\"a\"b", WM_EXI_CT_BAD, "position 28: ';' expected" },
        { "application/exi; schema=01234567890123456789012345678901234567890123456789012345678901234", WM_EXI_CT_BAD,
          "position 25: schema name of 65 bytes (registry names have 1..64)" },
        /* a parameter twice is an error (RFC 6838 §4.3), names compared case-insensitively */
        { "application/exi; schema=a; schema=a", WM_EXI_CT_BAD, "position 28: schema given twice" },
        { "application/exi; schema=a; SCHEMA=b", WM_EXI_CT_BAD, "position 28: schema given twice" },
        { "application/exi; strict=true; schema=a; Strict=true", WM_EXI_CT_BAD, "position 41: strict given twice" },
        /* unknown parameters and bad option values */
        { "application/exi; schema=s; charset=utf-8", WM_EXI_CT_BAD, "position 28: parameter 'charset' is not an EXI option" },
        { "application/exi; schema=s; strict=1", WM_EXI_CT_BAD, "position 28: strict wants true or false, got '1'" },
        { "application/exi; schema=s; strict=\"t\\rue \"", WM_EXI_CT_BAD, "position 28: strict wants true or false, got 'true '" },
        { "application/exi; schema=s; value-max-length=4294967295", WM_EXI_CT_BAD, "position 28: value-max-length wants a number" },
        { "application/exi; schema=s; value-max-length=8; value-max-length=9", WM_EXI_CT_BAD,
          "position 48: value-max-length given twice" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wm_exi_ct c;
        char why[200] = "";
        cr_assert_eq(wm_exi_content_type_parse(bad[i].ct, strlen(bad[i].ct), &c, why, sizeof why), bad[i].st, "%s: %s",
                     bad[i].ct, why);
        cr_assert(strstr(why, bad[i].why), "%s: '%s' lacks '%s'", bad[i].ct, why, bad[i].why);
        const char *n;
        size_t nl;
        cr_assert_not(wm_exi_content_type_schema(bad[i].ct, strlen(bad[i].ct), &n, &nl), "%s", bad[i].ct);
    }
}

/* The text is ct[0..len): nothing after it is read, no NUL needed. */
Test(exi_content_type, bounded_by_the_length)
{
    static const char text[] = "application/exi; schema=ab\"";
    wm_exi_ct c;
    char why[200];
    cr_assert_eq(wm_exi_content_type_parse(text, strlen("application/exi; schema=a"), &c, why, sizeof why), WM_EXI_CT_OK, "%s", why);
    cr_assert_str_eq(c.schema, "a");
    cr_assert_eq(wm_exi_content_type_parse(text, strlen("application/ex"), &c, why, sizeof why), WM_EXI_CT_NOT_EXI);
    /* a quoted value cut by the length is unterminated */
    static const char q[] = "application/exi; schema=\"ab\"";
    cr_assert_eq(wm_exi_content_type_parse(q, sizeof q - 2, &c, why, sizeof why), WM_EXI_CT_BAD);
    cr_assert(strstr(why, "position 25: unterminated"), "%s", why);
    /* no room for the reason: nothing written */
    char none[1] = { 'x' };
    cr_assert_eq(wm_exi_content_type_parse("text/plain", 10, &c, none, 0), WM_EXI_CT_NOT_EXI);
    cr_assert_eq(none[0], 'x');
}

/* wm_exi_content_type_schema's name lives in a per-thread buffer. */
static void *other_thread(void *arg)
{
    const char *n;
    size_t nl;
    const char *ct = "application/exi; schema=\"th\\read\"";
    bool ok = wm_exi_content_type_schema(ct, strlen(ct), &n, &nl);
    return (void *)(uintptr_t)(ok && nl == 6 && !memcmp(n, "thread", 6));
}

Test(exi_content_type, schema_names_per_thread)
{
    const char *n;
    size_t nl;
    const char *ct = "application/exi; schema=\"ma\\in\"";
    cr_assert(wm_exi_content_type_schema(ct, strlen(ct), &n, &nl));
    pthread_t t;
    void *r;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
    cr_assert_eq(pthread_join(t, &r), 0);
    cr_assert(r, "the other thread's name");
    cr_assert(nl == 4 && !memcmp(n, "main", 4), "this thread's name is still its own");
}
