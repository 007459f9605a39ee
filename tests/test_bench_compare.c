/*
 * test_bench_compare.c — `gated compare` (core/lab/bench/bench.h): its verdicts
 * (a time is a regression -> 3 only when over the threshold and
 * significant in a Mann-Whitney U test over the repetitions; too few
 * repetitions -> "not tested", 0; counters by the threshold alone; missing
 * cases reported, units), and the JSON's strings escaped by json_fput.
 * Helpers: bench_fx.c.
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/bench/bench.h"
#include "nn/variant.h"
#include "nn/model.h"
#include "run/store.h"
#include "testutil.h"
#include "util/json.h"
#include "bench_fx.h"

/* ------------------------------------------------------------------ */
/* compare                                                              */
/* ------------------------------------------------------------------ */

/* A benchmark JSON with, per case, iteration rows (values in unit) and,
 * if med >= 0, a median aggregate. */
static void gb_file(const char *name, const char *body, char *path) {
    char text[8192];
    snprintf(text, sizeof text, "{\"context\": {\"date\": \"x\"}, \"benchmarks\": [%s]}", body);
    put(name, text, path);
}

#define IT(n, t, u) "{\"name\": \"" n "\", \"run_name\": \"" n "\", \"run_type\": \"iteration\", \"real_time\": " t ", \"cpu_time\": " t ", \"time_unit\": \"" u "\"}"
#define MED(n, t, u) "{\"name\": \"" n "_median\", \"run_name\": \"" n "\", \"run_type\": \"aggregate\", \"aggregate_name\": \"median\", \"real_time\": " t ", \"cpu_time\": " t ", \"time_unit\": \"" u "\"}"
#define AGG(n, a, t) "{\"name\": \"" n "_" a "\", \"run_name\": \"" n "\", \"run_type\": \"aggregate\", \"aggregate_name\": \"" a "\", \"real_time\": " t ", \"cpu_time\": " t ", \"time_unit\": \"ms\"}"

/* bench_compare_files with options o: its exit status, all it printed in out. */
static int compare_with(const char *a, const char *b, const BenchCompareOpts *o, char *out, size_t cap) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    int rc = bench_compare_files(a, b, o, f, f);
    fclose(f);
    snprintf(out, cap, "%s", buf ? buf : "");
    free(buf);
    return rc;
}

static int compare(const char *a, const char *b, double thr, int fail_missing, char *out, size_t cap) {
    BenchCompareOpts o = {thr, "real_time", fail_missing, 0.05};
    return compare_with(a, b, &o, out, cap);
}

Test(bench_compare, regressions_missing_and_units, .init = mk_tmp, .fini = rm_tmp) {
    char base[256], head[256], out[8192];
    /* case a: median aggregate 100 ms (iteration rows disagree on purpose:
     * the aggregate wins); b: median of iterations 10, 11, 30 us = 11 us;
     * c: 1 s; d: only in base; the mean/stddev/cv aggregates are ignored */
    gb_file("base.json",
            IT("a", "90", "ms") "," IT("a", "150", "ms") "," MED("a", "100", "ms") "," AGG("a", "mean", "120") ","
            AGG("a", "cv", "0.5") "," IT("b", "10", "us") "," IT("b", "30", "us") "," IT("b", "11", "us") ","
            IT("c", "1", "s") "," IT("d", "5", "ms"),
            base);
    /* a +4% (in seconds), b +1.8% (in ns), c -50%, e new; too few repetitions for a U test
     * (2 vs 0, 3 vs 1, 1 vs 1): not tested, so no regression however large the change */
    gb_file("head.json",
            MED("a", "0.104", "s") "," IT("b", "11200", "ns") "," IT("c", "500", "ms") "," IT("e", "1", "ms"), head);
    cr_expect_eq(compare(base, head, 3, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "100 ms         104 ms     +4.0%"), "%s", out);
    cr_expect(strstr(out, "11 us        11.2 us     +1.8%"), "%s", out);
    cr_expect(strstr(out, "1 s         500 ms    -50.0%"), "%s", out);
    cr_expect(strstr(out, "not tested (2 vs 0 repetitions)"), "%s", out);
    cr_expect(strstr(out, "a (+4.0%, 2 vs 0), b (+1.8%, 3 vs 1), c (-50.0%, 1 vs 1)\n"), "%s", out);
    cr_expect(!strstr(out, "REGRESSION") && !strstr(out, "regressions over"), "%s", out);
    cr_expect(strstr(out, "missing in "), "%s", out);
    cr_expect(strstr(out, "MISSING in head"), "%s", out);
    cr_expect(strstr(out, ": d\n"), "%s", out);
    cr_expect(strstr(out, "new in head"), "%s", out);
    /* --fail-missing turns a missing case into a failure */
    cr_expect_eq(compare(base, head, 5, 1, out, sizeof out), 3, "%s", out);
    /* a file against itself */
    cr_expect_eq(compare(base, base, 0, 1, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "no regression over 0% (real_time, Mann-Whitney U p < 0.05) in 4 cases"), "%s", out);

    /* a counter metric (the perf gate's instructions) */
    char cb[256], ch[256];
    gb_file("cb.json", "{\"name\": \"k\", \"run_type\": \"iteration\", \"real_time\": 0, \"time_unit\": \"ns\", \"instructions\": 1000000}", cb);
    gb_file("ch.json", "{\"name\": \"k\", \"run_type\": \"iteration\", \"real_time\": 0, \"time_unit\": \"ns\", \"instructions\": 1031000}", ch);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    BenchCompareOpts o = {3, "instructions", 1, 0.05};
    cr_expect_eq(bench_compare_files(cb, ch, &o, f, f), 3);
    o.threshold = 3.2;
    cr_expect_eq(bench_compare_files(cb, ch, &o, f, f), 0);
    fclose(f);
    free(buf);

    /* not JSON, no benchmarks array: 2 */
    char bad[256], nob[256];
    put("bad.json", "{\"benchmarks\": [", bad);
    put("nob.json", "{\"context\": {}}", nob);
    cr_expect_eq(compare(bad, head, 3, 0, out, sizeof out), 2);
    cr_expect(strstr(out, "not valid JSON"), "%s", out);
    cr_expect_eq(compare(base, nob, 3, 0, out, sizeof out), 2);
    cr_expect(strstr(out, "no \"benchmarks\" array"), "%s", out);
}

/* compare with an explicit alpha */
static int compare_alpha(const char *a, const char *b, double thr, double alpha, char *out, size_t cap) {
    BenchCompareOpts o = {thr, "real_time", 0, alpha};
    return compare_with(a, b, &o, out, cap);
}

/* Times: a regression only when over the threshold AND the Mann-Whitney U
 * test over the repetitions gives p < alpha.  Five repetitions a side; the
 * p-values by hand: samples wholly apart give 2 / C(10, 5) = 2/252 =
 * 0.0079; interleaved ones (u = 10 of 25) far more. */
Test(bench_compare, regression_needs_significance, .init = mk_tmp, .fini = rm_tmp) {
    char base[256], head[256], out[8192];
    gb_file("base.json",
            IT("s", "10", "ms") "," IT("s", "11", "ms") "," IT("s", "12", "ms") "," IT("s", "13", "ms") ","
            IT("s", "14", "ms") "," IT("n", "10", "ms") "," IT("n", "12", "ms") "," IT("n", "14", "ms") ","
            IT("n", "16", "ms") "," IT("n", "18", "ms") "," IT("q", "100", "ms") "," IT("q", "101", "ms") ","
            IT("q", "102", "ms") "," IT("q", "103", "ms") "," IT("q", "104", "ms"),
            base);
    /* s +50% and apart; n +7.1% (median 14 -> 15) but interleaved; q apart but +4.9% */
    gb_file("head.json",
            IT("s", "16", "ms") "," IT("s", "17", "ms") "," IT("s", "18", "ms") "," IT("s", "19", "ms") ","
            IT("s", "20", "ms") "," IT("n", "11", "ms") "," IT("n", "13", "ms") "," IT("n", "15", "ms") ","
            IT("n", "17", "ms") "," IT("n", "30", "ms") "," IT("q", "105", "ms") "," IT("q", "106", "ms") ","
            IT("q", "107", "ms") "," IT("q", "108", "ms") "," IT("q", "109", "ms"),
            head);
    cr_expect_eq(compare_alpha(base, head, 5, 0.05, out, sizeof out), 3, "%s", out);
    cr_expect(strstr(out, "regressions over 5% (real_time, Mann-Whitney U p < 0.05): s (+50.0%, p 0.0079)\n"), "%s",
              out);
    cr_expect(strstr(out, "+7.1%") && strstr(out, "slower, not significant"), "%s", out);
    cr_expect(strstr(out, "over 5% but not significant (p >= 0.05; not regressions): n (+7.1%, p "), "%s", out);
    cr_expect(!strstr(out, "q (+"), "q is significant but within the threshold: %s", out);
    /* alpha 0.005: 5 against 5 can reach 0.0079 at best, so nothing is tested (6 against 6 could) */
    cr_expect_eq(compare_alpha(base, head, 5, 0.005, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "6 against 6 is the fewest"), "%s", out);
    cr_expect(strstr(out, "s (+50.0%, 5 vs 5)"), "%s", out);
    cr_expect(!strstr(out, "REGRESSION"), "%s", out);
}

/* The case: the same code run twice, 3 repetitions each, medians
 * -41% and +64% apart.  3 against 3 gives p >= 0.1: never a regression,
 * and the output says why. */
Test(bench_compare, three_repetitions_are_too_few, .init = mk_tmp, .fini = rm_tmp) {
    char base[256], head[256], out[8192];
    gb_file("base.json", IT("x", "10", "ms") "," IT("x", "11", "ms") "," IT("x", "12", "ms"), base);
    gb_file("head.json", IT("x", "17", "ms") "," IT("x", "18", "ms") "," IT("x", "19", "ms"), head);
    cr_expect_eq(compare_alpha(base, head, 5, 0.05, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "not tested (3 vs 3 repetitions)"), "%s", out);
    cr_expect(strstr(out, "(0.1 for 3 against 3); 4 against 4 is the fewest that can reach it"), "%s", out);
    cr_expect(strstr(out, "x (+63.6%, 3 vs 3)"), "%s", out);
    cr_expect(!strstr(out, "REGRESSION"), "%s", out);
    cr_expect_eq(compare_alpha(head, base, 5, 0.05, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "x (-38.9%, 3 vs 3)"), "%s", out);
}

/* A rate (items_per_second: the perf gate's wall-clock table) is tested
 * like a time with the sign turned: a fall is the regression, a rise is
 * faster.  The noise column: half the inter-quartile range over the
 * median, the larger side's (100..104: quartiles 101 and 103, median 102:
 * 0.98%; 90..98 by 2: 92 and 96 of 94: 2.1%). */
Test(bench_compare, rates_fall_is_the_regression, .init = mk_tmp, .fini = rm_tmp) {
#define RATE(n, r) "{\"name\": \"" n "\", \"run_name\": \"" n "\", \"run_type\": \"iteration\", \"real_time\": 1, \"time_unit\": \"s\", \"items_per_second\": " r "}"
    char base[256], head[256], out[8192];
    gb_file("b.json", RATE("k", "100") "," RATE("k", "101") "," RATE("k", "102") "," RATE("k", "103") "," RATE("k", "104"),
            base);
    gb_file("h.json", RATE("k", "90") "," RATE("k", "92") "," RATE("k", "94") "," RATE("k", "96") "," RATE("k", "98"),
            head);
    BenchCompareOpts o = {5, "items_per_second", 0, 0.05};
    cr_expect_eq(compare_with(base, head, &o, out, sizeof out), 3, "%s", out);
    cr_expect(strstr(out, "102/s           94/s     -7.8%   0.0079    2.1%  REGRESSION"), "%s", out);
    cr_expect(strstr(out, "regressions over 5% (items_per_second, Mann-Whitney U p < 0.05): k (-7.8%, p 0.0079)"),
              "%s", out);
    /* the other way round: faster, exit 0 */
    cr_expect_eq(compare_with(head, base, &o, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "+8.5%   0.0079    2.1%  faster"), "%s", out);
    /* within the threshold: ok, whatever p says */
    o.threshold = 10;
    cr_expect_eq(compare_with(base, head, &o, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "2.1%  ok\n"), "%s", out);
#undef RATE
}

/* Counters (the perf gate's instructions): printed exactly, compared by
 * percentage, a case missing in head reported (and 3 with fail_missing). */
Test(bench_compare, integer_counters_exact_and_missing, .init = mk_tmp, .fini = rm_tmp) {
#define CNT(n, c) "{\"name\": \"" n "\", \"run_name\": \"" n "\", \"run_type\": \"iteration\", \"real_time\": 0, \"cpu_time\": 0, \"time_unit\": \"ns\", \"instructions\": " c "}"
    char base[256], head[256], out[8192];
    gb_file("b.json", CNT("step/tiny/baseline", "97560913") "," CNT("op/rmsnorm", "1011170") "," CNT("gone", "5"), base);
    gb_file("h.json", CNT("step/tiny/baseline", "100487741") "," CNT("op/rmsnorm", "1011169") "," CNT("new", "7"), head);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    BenchCompareOpts o = {3, "instructions", 0, 0.05};
    int rc = bench_compare_files(base, head, &o, f, f);
    fclose(f);
    snprintf(out, sizeof out, "%s", buf);
    free(buf);
    /* 100487741 / 97560913 = +3.0000004%: over 3 */
    cr_expect_eq(rc, 3, "%s", out);
    cr_expect(strstr(out, "97560913") && strstr(out, "100487741"), "exact counts: %s", out);
    cr_expect(strstr(out, "1011170") && strstr(out, "1011169"), "%s", out);
    cr_expect(!strstr(out, "e+0"), "no exponent notation: %s", out);
    cr_expect(strstr(out, "regressions over 3% (instructions): step/tiny/baseline (+3.0%)"), "%s", out);
    cr_expect(strstr(out, "MISSING in head") && strstr(out, ": gone\n"), "%s", out);
    cr_expect(strstr(out, "new in head"), "%s", out);
    /* exactly at the threshold is not over it */
    gb_file("h2.json", CNT("step/tiny/baseline", "100487740") "," CNT("op/rmsnorm", "1011170") "," CNT("gone", "5"), head);
    f = open_memstream(&buf, &len);
    cr_expect_eq(bench_compare_files(base, head, &o, f, f), 0);
    fclose(f);
    free(buf);
    /* fail_missing: a case gone from head fails the check */
    gb_file("h3.json", CNT("step/tiny/baseline", "97560913"), head);
    o.fail_missing = 1;
    f = open_memstream(&buf, &len);
    cr_expect_eq(bench_compare_files(base, head, &o, f, f), 3);
    fclose(f);
    free(buf);
#undef CNT
}

/* Every string bench_write_json writes goes through json_fput: what it
 * wrote reads back equal, and in json_quote's form. */
Test(bench_json, strings_are_escaped_by_json_fput) {
    BenchSuite s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "n\"ame");
    const char *path = "dir \"q\"\\x\r\n\t\x01\x7f\xc3\xa9.yaml";
    BenchContext ctx = {"gated bench", path, "v\\1", "-O2 \"x\"", "ob\n", 3, 0, 0};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_eq(bench_write_json(f, &s, NULL, &ctx), 0);
    cr_assert_eq(fclose(f), 0);
    char e[300], q[256];
    json_quote(path, q, sizeof q);
    cr_expect_not_null(strstr(text, q), "%s not in %s", q, text);
    Json *j = json_parse(text, e, sizeof e);
    cr_assert_not_null(j, "%s\n%s", e, text);
    const Json *cx = json_get(j, "context");
    cr_expect_str_eq(json_text(json_get(cx, "gated_suite_path")), path);
    cr_expect_str_eq(json_text(json_get(cx, "gated_suite")), "n\"ame");
    cr_expect_str_eq(json_text(json_get(cx, "gated_code_version")), "v\\1");
    cr_expect_str_eq(json_text(json_get(cx, "gated_cflags")), "-O2 \"x\"");
    cr_expect_str_eq(json_text(json_get(cx, "gated_openblas")), "ob\n");
    const Json *b = json_get(j, "benchmarks");
    cr_expect(b && b->type == JSON_ARR && b->n == 0);
    json_free(j);
    free(text);
}

/* Issue 39, item 13: what compare cannot read honestly is refused (exit 2,
 * the file, the row and the case named), never dropped or pooled: a time
 * given as a string, a negative time, and a name used by two benchmarks (a
 * repetition_index seen twice, two family_index values, two median
 * aggregates).  Rows without indices under one name are repetitions, as
 * Google Benchmark writes them, and are pooled as before. */
Test(bench_compare, strings_negatives_and_duplicate_names_are_refused, .init = mk_tmp, .fini = rm_tmp) {
    char base[256], head[256], out[8192];
    gb_file("head.json", IT("a", "10", "ms") "," IT("a", "11", "ms"), head);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{\"name\": \"a\", \"run_name\": \"a\", \"run_type\": \"iteration\", \"real_time\": \"12.5\", \"time_unit\": "
         "\"ms\"}",
         "base.json: benchmarks[0] (a): real_time is a string, not a number"},
        {"{\"name\": \"a\", \"run_name\": \"a\", \"run_type\": \"iteration\", \"real_time\": null}",
         "benchmarks[0] (a): real_time is null, not a number"},
        {IT("a", "10", "ms") "," IT("a", "-3", "ms"), "benchmarks[1] (a): real_time is -3: a time must be finite and >= 0"},
        {"{\"name\": \"a\", \"run_name\": \"a\", \"repetition_index\": 0, \"real_time\": 1},"
         "{\"name\": \"a\", \"run_name\": \"a\", \"repetition_index\": 1, \"real_time\": 2},"
         "{\"name\": \"a\", \"run_name\": \"a\", \"repetition_index\": 0, \"real_time\": 3}",
         "benchmarks[2]: case a is named twice (repetition_index 0 twice; its first row is benchmarks[0])"},
        {"{\"name\": \"a\", \"run_name\": \"a\", \"family_index\": 0, \"real_time\": 1},"
         "{\"name\": \"a\", \"run_name\": \"a\", \"family_index\": 4, \"real_time\": 2}",
         "case a is named twice (family_index 0 and 4;"},
        {MED("a", "10", "ms") "," MED("a", "20", "ms"), "case a is named twice (a second \"median\" aggregate;"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gb_file("base.json", bad[i].body, base);
        cr_expect_eq(compare(base, head, 5, 0, out, sizeof out), 2, "%zu: %s", i, out);
        cr_expect(strstr(out, bad[i].want), "%zu: %s", i, out);
        /* the same as head */
        cr_expect_eq(compare(head, base, 5, 0, out, sizeof out), 2, "%zu (head): %s", i, out);
    }
    /* repetitions without indices, and with distinct ones, are one case */
    gb_file("base.json",
            IT("a", "10", "ms") "," IT("a", "11", "ms") ","
            "{\"name\": \"b\", \"run_name\": \"b\", \"family_index\": 1, \"repetition_index\": 0, \"real_time\": 1},"
            "{\"name\": \"b\", \"run_name\": \"b\", \"family_index\": 1, \"repetition_index\": 1, \"real_time\": 3}",
            base);
    cr_expect_eq(compare(base, base, 5, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "not tested (2 vs 2 repetitions)"), "%s", out);
}
