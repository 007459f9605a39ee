/*
 * test_json.c — util/json.h's reader (json_parse, json_parse_file, json_get,
 * json_text): every kind of value, numbers as written, string escapes
 * decoded by json_unquote (and the ones it refuses), the exact
 * "line L col C: reason" of malformed text, the depth bound (deep text is
 * refused quickly, without deep recursion), files, and a round trip of
 * every byte through json_quote.  The escaper itself is tested in
 * test_config.c (json_quote_and_unquote).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/json.h"

/* Parse text that must be valid. */
static Json *ok(const char *text) {
    char e[300] = "unset";
    Json *j = json_parse(text, e, sizeof e);
    cr_assert_not_null(j, "refused %s: %s", text, e);
    cr_assert_eq(e[0], '\0', "error text left for valid %s: %s", text, e);
    return j;
}

/* Parse text that must be refused with exactly the message want. */
static void bad(const char *text, const char *want) {
    char e[300];
    Json *j = json_parse(text, e, sizeof e);
    cr_expect_null(j, "accepted %s", text);
    json_free(j);
    cr_expect_str_eq(e, want, "for %s", text);
}

Test(json, every_kind_of_value) {
    Json *j = ok(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\n\", [], {}],\n\t\"b\" : {\"c\": \"d\"}, "
                 "\"a\": 7}\r\n");
    cr_assert_eq(j->type, JSON_OBJ);
    cr_assert_eq(j->n, 3);
    cr_expect_str_eq(j->keys[0], "a");
    cr_expect_str_eq(j->keys[2], "a");
    const Json *a = json_get(j, "a"); /* the first of two */
    cr_assert(a && a->type == JSON_ARR && a->n == 8);
    cr_expect_eq(a->v[0]->type, JSON_NUM);
    cr_expect_eq(a->v[0]->num, 1);
    cr_expect_eq(a->v[1]->num, -2500);
    cr_expect(a->v[2]->type == JSON_BOOL && a->v[2]->num == 1);
    cr_expect(a->v[3]->type == JSON_BOOL && a->v[3]->num == 0);
    cr_expect_eq(a->v[4]->type, JSON_NULL);
    cr_expect(a->v[5]->type == JSON_STR && strcmp(a->v[5]->str, "x\xc3\xa9\n") == 0);
    cr_expect(a->v[6]->type == JSON_ARR && a->v[6]->n == 0);
    cr_expect(a->v[7]->type == JSON_OBJ && a->v[7]->n == 0);
    cr_expect_str_eq(json_text(json_get(json_get(j, "b"), "c")), "d");
    cr_expect_null(json_get(j, "zz"));
    cr_expect_null(json_get(a, "a"), "an array has no members");
    cr_expect_null(json_get(NULL, "a"));
    /* json_text: scalars as text, containers NULL */
    cr_expect_str_eq(json_text(a->v[0]), "1");
    cr_expect_str_eq(json_text(a->v[1]), "-2.5e3");
    cr_expect_str_eq(json_text(a->v[2]), "true");
    cr_expect_str_eq(json_text(a->v[3]), "false");
    cr_expect_str_eq(json_text(a->v[4]), "null");
    cr_expect_null(json_text(a));
    cr_expect_null(json_text(NULL));
    json_free(j);
    json_free(NULL);
    /* a bare scalar is a whole text */
    j = ok("\"s\"");
    cr_expect(j->type == JSON_STR && strcmp(j->str, "s") == 0);
    json_free(j);
    j = ok("  null  ");
    cr_expect_eq(j->type, JSON_NULL);
    json_free(j);
}

Test(json, numbers_as_written) {
    static const struct {
        const char *text;
        double want;
    } good[] = {{"0", 0},        {"-0", 0},         {"12", 12},           {"-7", -7},           {"0.5", 0.5},
                {"1e3", 1000},   {"1E+3", 1000},    {"25e-1", 2.5},       {"-0.125e1", -1.25},  {"1e400", INFINITY},
                {"123456789012", 123456789012.0}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        Json *j = ok(good[i].text);
        cr_expect_eq(j->type, JSON_NUM, "%s", good[i].text);
        cr_expect_eq(j->num, good[i].want, "%s: %.17g", good[i].text, j->num);
        cr_expect_str_eq(json_text(j), good[i].text);
        json_free(j);
    }
    /* Google Benchmark's (and bench_write_json's) non-finite numbers */
    Json *j = ok("[NaN, Infinity, -Infinity]");
    cr_expect(isnan(j->v[0]->num));
    cr_expect(isinf(j->v[1]->num) && j->v[1]->num > 0);
    cr_expect(isinf(j->v[2]->num) && j->v[2]->num < 0);
    cr_expect_str_eq(json_text(j->v[2]), "-Infinity");
    json_free(j);
    bad("01", "line 1 col 2: trailing characters after the value");
    bad("[.5]", "line 1 col 2: unexpected character '.'");
    bad("1.", "line 1 col 1: bad number");
    bad("1.e3", "line 1 col 1: bad number");
    bad("1e", "line 1 col 1: bad number");
    bad("1e+", "line 1 col 1: bad number");
    bad("-", "line 1 col 1: bad number");
    bad("-Inf", "line 1 col 1: bad number");
    bad("+1", "line 1 col 1: unexpected character '+'");
    bad("0x10", "line 1 col 2: trailing characters after the value");
    bad("Inf", "line 1 col 1: unexpected character 'I'");
    bad("nan", "line 1 col 1: unexpected character 'n'");
}

Test(json, string_escapes) {
    Json *j = ok("[\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\", \"\\u00e9\\u20ac\\ud83d\\ude00\\u0041\", \"\", "
                 "\"raw \xc3\xa9 \x7f\"]");
    cr_expect_str_eq(j->v[0]->str, "\" \\ / \b \f \n \r \t");
    cr_expect_str_eq(j->v[1]->str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "A");
    cr_expect_str_eq(j->v[2]->str, "");
    cr_expect_str_eq(j->v[3]->str, "raw \xc3\xa9 \x7f");
    json_free(j);
    /* member names are decoded too */
    j = ok("{\"k\\u0065y\\n\": 1}");
    cr_expect_str_eq(j->keys[0], "key\n");
    cr_expect_not_null(json_get(j, "key\n"));
    json_free(j);
    /* what json_unquote refuses, with the offending byte's position */
    bad("\"a\\qb\"", "line 1 col 4: bad escape \\q");
    bad("\"\\u12\"", "line 1 col 3: bad \\u escape");
    bad("\"\\u00zz\"", "line 1 col 3: bad \\u escape");
    bad("\"x\\u0000\"", "line 1 col 4: \\u0000 in a string");
    bad("\"\\ud800\"", "line 1 col 3: lone surrogate in a string");
    bad("\"\\ud800\\u0041\"", "line 1 col 3: lone surrogate in a string");
    bad("\"\\ude00\"", "line 1 col 3: lone surrogate in a string");
    bad("\"tab\there\"", "line 1 col 5: control character in string");
    bad("[\"abc", "line 1 col 3: unterminated string");
    bad("\"abc\\\"", "line 1 col 2: unterminated string");
    bad("{\"a\\q\": 1}", "line 1 col 5: bad escape \\q");
}

Test(json, malformed_text_names_line_and_column) {
    bad("", "line 1 col 1: unexpected end of input");
    bad("   ", "line 1 col 4: unexpected end of input");
    bad("{", "line 1 col 2: expected a member name");
    bad("[", "line 1 col 2: unexpected end of input");
    bad("[1,]", "line 1 col 4: unexpected character ']'");
    bad("[1 2]", "line 1 col 4: expected ',' or ']'");
    bad("{\"a\" 1}", "line 1 col 6: expected ':'");
    bad("{\"a\": 1,}", "line 1 col 9: expected a member name");
    bad("{\"a\": 1 \"b\": 2}", "line 1 col 9: expected ',' or '}'");
    bad("{1: 2}", "line 1 col 2: expected a member name");
    bad("[1] x", "line 1 col 5: trailing characters after the value");
    bad("tru", "line 1 col 1: unexpected character 't'");
    bad("\xef\xbb\xbf{}", "line 1 col 1: unexpected byte 0xef");
    bad("{\n  \"a\": [1,\n        2,\n        ]\n}", "line 4 col 9: unexpected character ']'");
    bad("{\"benchmarks\": [1, 2\n", "line 2 col 1: expected ',' or ']'");
    /* no message wanted, or a short buffer: still refused, never overrun */
    cr_expect_null(json_parse("[1,]", NULL, 0));
    char small[12];
    memset(small, 'x', sizeof small);
    cr_expect_null(json_parse("[1,]", small, sizeof small));
    cr_expect_str_eq(small, "line 1 col ");
    cr_expect_null(json_parse(NULL, small, sizeof small));
}

/* Text of n arrays around inner. */
static char *nested(int n, const char *inner) {
    size_t m = strlen(inner);
    char *t = malloc(2 * (size_t)n + m + 1);
    cr_assert_not_null(t);
    memset(t, '[', (size_t)n);
    memcpy(t + n, inner, m);
    memset(t + n + m, ']', (size_t)n);
    t[2 * (size_t)n + m] = '\0';
    return t;
}

Test(json, depth_is_bounded, .timeout = 20) {
    char *t = nested(JSON_MAX_DEPTH, "1");
    Json *j = ok(t);
    const Json *v = j;
    for (int i = 0; i < JSON_MAX_DEPTH; i++) {
        cr_assert(v->type == JSON_ARR && v->n == 1, "level %d", i);
        v = v->v[0];
    }
    cr_expect_eq(v->num, 1);
    json_free(j);
    free(t);
    t = nested(JSON_MAX_DEPTH + 1, "");
    bad(t, "line 1 col 65: nested too deeply");
    free(t);
    /* objects count alike: the 65th '{' is refused */
    char obj[1024] = "";
    for (int i = 0; i < 70; i++) strcat(obj, "{\"a\":");
    bad(obj, "line 1 col 321: nested too deeply");
    /* a million brackets: refused at once, no deep recursion */
    t = nested(1000000, "");
    bad(t, "line 1 col 65: nested too deeply");
    free(t);
}

Test(json, long_arrays_and_objects_grow) {
    enum { N = 10000 };
    char *t = malloc(N * 16 + 16);
    cr_assert_not_null(t);
    size_t n = 0;
    t[n++] = '{';
    for (int i = 0; i < N; i++) n += (size_t)sprintf(t + n, "%s\"k%d\": %d", i ? "," : "", i, i);
    t[n++] = '}';
    t[n] = '\0';
    Json *j = ok(t);
    cr_assert_eq(j->n, N);
    cr_expect_eq(json_get(j, "k9999")->num, 9999);
    cr_expect_str_eq(j->keys[1234], "k1234");
    json_free(j);
    free(t);
}

/* Every byte 0x01..0xff through json_quote and back through the reader. */
Test(json, quote_then_parse_round_trips) {
    char s[256];
    for (int i = 1; i < 256; i++) s[i - 1] = (char)i;
    s[255] = '\0';
    char q[2048];
    cr_assert_lt(json_quote(s, q, sizeof q), sizeof q);
    Json *j = ok(q);
    cr_assert_eq(j->type, JSON_STR);
    cr_expect_eq(memcmp(j->str, s, 256), 0);
    json_free(j);
}

Test(json, files) {
    char path[] = "/tmp/test_json_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    /* more than the reader's first 64 KiB buffer */
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs("{\"pad\": \"", f);
    for (int i = 0; i < 100000; i++) fputc('a' + i % 26, f);
    fputs("\", \"x\": [1, 2]}\n", f);
    cr_assert_eq(fclose(f), 0);
    char e[600];
    Json *j = json_parse_file(path, e, sizeof e);
    cr_assert_not_null(j, "%s", e);
    cr_expect_eq(strlen(json_text(json_get(j, "pad"))), 100000);
    cr_expect_eq(json_get(j, "x")->n, 2);
    json_free(j);

    f = fopen(path, "w");
    fputs("{\"a\":\n  [1,]}", f);
    fclose(f);
    char want[700];
    cr_expect_null(json_parse_file(path, e, sizeof e));
    snprintf(want, sizeof want, "%s: not valid JSON: line 2 col 6: unexpected character ']'", path);
    cr_expect_str_eq(e, want);

    f = fopen(path, "w");
    fwrite("{}\0", 1, 3, f);
    fclose(f);
    cr_expect_null(json_parse_file(path, e, sizeof e));
    snprintf(want, sizeof want, "%s: not JSON (NUL byte)", path);
    cr_expect_str_eq(e, want);

    unlink(path);
    cr_expect_null(json_parse_file(path, e, sizeof e));
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    cr_expect_str_eq(e, want);
    cr_expect_null(json_parse_file(path, NULL, 0));
}
