/*
 * test_merge.c — what `gated merge` (lab/merge.h) lets in from a database
 * made elsewhere: each kind of malformed row (a wrong type, a value out of
 * range, a broken invariant, a control byte in a key, a row of a run the
 * input does not hold) refuses the whole input, with exit 2 and a message
 * naming the input, the table, the row and the rule, and leaves the
 * output as it was; a damaged input is named, never the output; what
 * gated's own writer stores (NULL and infinite values, a schema-1 file)
 * still merges, idempotently.
 *
 * Inputs are made with the store's API, then damaged with plain SQL (as a
 * hostile or careless user would), foreign keys off.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab/merge/merge.h"
#include "run/store.h"
#include "testutil.h"

static const char RID[] = "0123456789abcdef";

typedef struct {
    char dir[64], in[96], out[96];
} Dbs;

/* A finished run RID as gated train leaves one: metrics (one NaN, one
 * infinite), a histogram, the final summary, sweep membership. */
static void good_input(Dbs *d) {
    test_tmpdir(d->dir, sizeof d->dir);
    snprintf(d->in, sizeof d->in, "%s/in.db", d->dir);
    snprintf(d->out, sizeof d->out, "%s/out.db", d->dir);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, d->in, err, sizeof err), 0, "%s", err);
    Provenance p = {.host = "h", .cpu_model = "c", .compiler = "gcc", .cflags = "-O2", .openblas_version = "ob",
                    .sqlite_version = "sq", .libyaml_version = "y", .code_version = "unknown", .git_dirty = -1};
    cr_assert_eq(store_run_begin(s, RID, "run-a", "{\"train.seed\":1}", 1, 1, &p, "gated train x.yaml"), 0, "%s",
                 store_errmsg(s));
    for (int k = 1; k <= 3; k++) cr_assert_eq(store_metric(s, RID, "train_loss", NULL, k, 3.0 / k), 0);
    cr_assert_eq(store_metric(s, RID, "val_loss", NULL, 2, 2.5), 0);
    cr_assert_eq(store_metric(s, RID, "f_attn", "layer=0", 2, NAN), 0);      /* stored NULL */
    cr_assert_eq(store_metric(s, RID, "eval_ppl", "len=64", 3, INFINITY), 0); /* exp of a huge loss */
    const long long counts[3] = {4, 0, 2};
    cr_assert_eq(store_histogram(s, RID, "gate", "layer=0", 2, 0, 1, counts, 3), 0);
    cr_assert_eq(store_summary(s, RID, "val_loss", NULL, 2.5, NULL), 0);
    cr_assert_eq(store_summary(s, RID, "test_loss", NULL, 2.6, NULL), 0);
    StoreSweepRun r = {RID, "baseline", 1, 0, 1};
    cr_assert_eq(store_sweep_record(s, "sw", 1, &r, 1), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_run_end(s, RID, "finished", NULL, -1), 0);
    store_close(s);
}

static void rm_dbs(const Dbs *d) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    cr_assert_eq(system(cmd), 0);
}

/* SQL on the input, as another tool would run it (foreign keys off). */
static void damage(const char *path, const char *sql) {
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

/* merge_from(in) into a new output: its return, message into err; the
 * output's runs and metrics counts into *runs, *metrics. */
static int merge(const Dbs *d, char *err, size_t cap, long long *runs, long long *metrics) {
    Store *o;
    char e[512];
    cr_assert_eq(store_open(&o, d->out, e, sizeof e), 0, "%s", e);
    int rc = merge_from(o, d->in, err, cap);
    *runs = store_count_rows(o, "runs");
    *metrics = store_count_rows(o, "metrics");
    store_close(o);
    return rc;
}

Test(merge, every_malformed_row_refuses_the_whole_input) {
    static const struct {
        const char *sql, *want;
    } bad[] = {
        /* the cases */
        {"UPDATE histograms SET counts = 'not json'", "histograms row 1 (run 0123456789abcdef): counts is not histogram counts"},
        {"UPDATE histograms SET counts = '[-5, 10, 1]'", "counts is not histogram counts (a JSON array of integers >= 0)"},
        {"UPDATE histograms SET lo = 9e999", "histograms row 1 (run 0123456789abcdef): lo is not a finite number (the real inf)"},
        {"UPDATE histograms SET hi = -9e999", "hi is not a finite number (the real -inf)"},
        {"UPDATE metrics SET value = 'nan' WHERE key = 'val_loss'",
         "metrics row 4 (run 0123456789abcdef): value is not a number or NULL (the text \"nan\")"},
        {"DELETE FROM metrics", "runs row 1 (run 0123456789abcdef): a finished run without metric rows"},
        {"UPDATE runs SET ended_at = NULL", "runs row 1 (run 0123456789abcdef): a finished run has no ended_at"},
        {"UPDATE runs SET config_json = '{not json'", "config_json is not a config (a JSON object) (the text \"{not json\")"},
        {"UPDATE runs SET seed = 'abc'", "runs row 1 (run 0123456789abcdef): seed is not an integer (the text \"abc\")"},
        {"UPDATE runs SET started_at = 'yesterday'", "started_at is not a time (the text \"yesterday\")"},
        {"UPDATE runs SET run_id = '../../x'; UPDATE metrics SET run_id = '../../x'; UPDATE summary SET run_id = '../../x';"
         " UPDATE histograms SET run_id = '../../x'",
         "runs row 1 (run ../../x): run_id is not a run id (16 lowercase hex digits) (the text \"../../x\")"},
        {"UPDATE runs SET run_id = 'ZZZZZZZZZZZZZZZZ'; UPDATE metrics SET run_id = 'ZZZZZZZZZZZZZZZZ';"
         " UPDATE summary SET run_id = 'ZZZZZZZZZZZZZZZZ'; UPDATE histograms SET run_id = 'ZZZZZZZZZZZZZZZZ'",
         "run_id is not a run id (16 lowercase hex digits) (the text \"ZZZZZZZZZZZZZZZZ\")"},
        /* control bytes in keys and contexts (item 5) */
        {"UPDATE metrics SET key = 'k' || char(27) || '[5m' WHERE key = 'val_loss'",
         "metrics row 4 (run 0123456789abcdef): key \"k\\x1b[5m\" contains a control character"},
        {"UPDATE summary SET context = 'layer=0' || char(10) WHERE key = 'val_loss'",
         "context \"layer=0\\x0a\" contains a control character"},
        {"UPDATE histograms SET key = 'g' || char(155)", "key \"g\\xc2\\x9b\" contains a control character"},
        /* orphans and missing references (item 8) */
        {"INSERT INTO metrics(run_id, key, context, step, value) VALUES ('ffffffffffffffff', 'x', '', 1, 1.0)",
         "metrics row 7 (run ffffffffffffffff): a metric row of a run that its runs table does not hold"},
        {"INSERT INTO histograms VALUES ('ffffffffffffffff', 'gate', '', 1, 0, 1, '[1]')",
         "a histogram row of a run that its runs table does not hold"},
        {"UPDATE runs SET env_id = 99", "its env_id names no row of the environments table"},
        /* more types and invariants */
        {"DELETE FROM summary WHERE key = 'val_loss'", "a finished run without its final val_loss (summary)"},
        {"DELETE FROM summary WHERE key = 'test_loss'", "a finished run without its test_loss (summary)"},
        {"UPDATE runs SET status = 'diverged'", "a diverged run has no diverged_step"},
        {"UPDATE runs SET diverged_step = 3", "a finished run has a diverged_step"},
        {"UPDATE runs SET status = 'running'", "a running run has an ended_at"},
        {"UPDATE metrics SET step = -1 WHERE key = 'val_loss'", "step is not a count (the integer -1)"},
        {"UPDATE metrics SET t = 'now'", "t is not a time or NULL (the text \"now\")"},
        {"UPDATE summary SET value = x'00' WHERE key = 'test_loss'", "value is not a number or NULL (a blob of 1 byte)"},
        {"UPDATE histograms SET lo = 2", "histograms row 1 (run 0123456789abcdef): lo is not below hi (2, 1)"},
        {"UPDATE runs SET threads = 0", "threads is not a positive count (the integer 0)"},
        {"UPDATE runs SET git_dirty = 7", "git_dirty is not 0, 1 or NULL (the integer 7)"},
        {"UPDATE runs SET host = x'68'", "host is not text (a blob of 1 byte)"},
        {"UPDATE sweep_runs SET idx = -2", "sweep_runs row 1 (run 0123456789abcdef): idx is not a count"},
        {"UPDATE sweep_runs SET is_baseline = 'yes'", "is_baseline is not 0 or 1"},
        {"UPDATE environments SET cflags = x'00'", "environments row 1: cflags is not text (a blob of 1 byte)"},
        {"DROP VIEW final_metrics; DROP VIEW run_metrics; DROP VIEW sweep_metrics; ALTER TABLE metrics DROP COLUMN t",
         "refused, nothing merged: table metrics: no such column: t"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Dbs d;
        good_input(&d);
        damage(d.in, bad[i].sql);
        char err[1024];
        long long runs, metrics;
        int rc = merge(&d, err, sizeof err, &runs, &metrics);
        cr_expect_eq(rc, -2, "%s: merged (%d): %s", bad[i].sql, rc, err);
        char want[256];
        snprintf(want, sizeof want, "%s: refused, nothing merged: ", d.in);
        cr_expect(strncmp(err, want, strlen(want)) == 0, "%s: %s", bad[i].sql, err);
        cr_expect(strstr(err, bad[i].want), "%s:\n want %s\n got  %s", bad[i].sql, bad[i].want, err);
        cr_expect(runs == 0 && metrics == 0, "%s: %lld runs, %lld metric rows merged", bad[i].sql, runs, metrics);
        for (const char *p = err; *p; p++) cr_expect((unsigned char)*p >= 0x20, "%s: a raw control byte", bad[i].sql);
        rm_dbs(&d);
    }
}

/* The output keeps what it had when a later input is refused. */
Test(merge, a_refused_input_leaves_the_output_as_it_was) {
    Dbs a, b;
    good_input(&a);
    good_input(&b);
    damage(b.in, "UPDATE runs SET run_id = 'fedcba9876543210', seed = 2.5;"
                 " UPDATE metrics SET run_id = 'fedcba9876543210'; UPDATE summary SET run_id = 'fedcba9876543210';"
                 " UPDATE histograms SET run_id = 'fedcba9876543210'");
    Store *o;
    char err[1024];
    cr_assert_eq(store_open(&o, a.out, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(o, a.in, err, sizeof err), 0, "%s", err);
    long long m = store_count_rows(o, "metrics"), h = store_count_rows(o, "histograms");
    cr_assert_eq(merge_from(o, b.in, err, sizeof err), -2);
    cr_assert(strstr(err, "runs row 1 (run fedcba9876543210): seed is not an integer (the real 2.5)"), "%s", err);
    cr_assert_eq(store_count_rows(o, "runs"), 1);
    cr_assert_eq(store_count_rows(o, "metrics"), m);
    cr_assert_eq(store_count_rows(o, "histograms"), h);
    store_close(o);
    rm_dbs(&a);
    rm_dbs(&b);
}

/* What the writer stores goes through, twice without a change: NULL and
 * infinite values, the histogram, the sweep, every row. */
Test(merge, what_the_writer_stores_merges_idempotently) {
    Dbs d;
    good_input(&d);
    char err[1024];
    long long runs, metrics;
    cr_assert_eq(merge(&d, err, sizeof err, &runs, &metrics), 0, "%s", err);
    cr_assert_eq(runs, 1);
    cr_assert_eq(metrics, 6);
    cr_assert_eq(merge(&d, err, sizeof err, &runs, &metrics), 0, "%s", err);
    cr_assert_eq(metrics, 6);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(d.out, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT (SELECT count(*) FROM metrics WHERE value IS NULL),"
                                    " (SELECT count(*) FROM metrics WHERE value = 9e999),"
                                    " (SELECT counts FROM histograms), (SELECT count(*) FROM sweep_runs)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 1);
    cr_assert_eq(sqlite3_column_int(st, 1), 1);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 2), "[4,0,2]");
    cr_assert_eq(sqlite3_column_int(st, 3), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    rm_dbs(&d);
}

/* A truncated input and one that is not a regular file are refused with
 * the input's name (not the output's), exit 2 through the CLI. */
Test(merge, a_damaged_input_is_named_not_the_output) {
    Dbs d;
    good_input(&d);
    char cut[128], fifo[128], cmd[512];
    snprintf(cut, sizeof cut, "%s/cut.db", d.dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.db", d.dir);
    snprintf(cmd, sizeof cmd, "head -c 12288 '%s' > '%s'", d.in, cut);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    const char *inputs[] = {cut, fifo};
    for (int i = 0; i < 2; i++) {
        char *out;
        const char *args[] = {"merge", d.out, inputs[i], NULL};
        int rc = test_gated(NULL, args, NULL, 30, &out);
        cr_expect_eq(rc, 2, "%s: exit %d: %s", inputs[i], rc, out);
        char want[160];
        snprintf(want, sizeof want, "gated merge: %s: ", inputs[i]);
        cr_expect(strncmp(out, want, strlen(want)) == 0, "%s", out);
        cr_expect_null(strstr(out, "out.db"), "the output is blamed: %s", out);
        cr_expect_null(strstr(out, "ATTACH"), "raw SQL in the message: %s", out);
        free(out);
    }
    /* and an orphan row through the CLI: exit 2, the rule, no SQL */
    damage(d.in, "INSERT INTO summary(run_id, key, context, value) VALUES ('ffffffffffffffff', 'x', '', 1.0)");
    char *out;
    const char *args[] = {"merge", d.out, d.in, NULL};
    cr_assert_eq(test_gated(NULL, args, NULL, 30, &out), 2, "%s", out);
    cr_assert(strstr(out, ": refused, nothing merged: summary row 3 (run ffffffffffffffff): a summary row of a run"),
              "%s", out);
    cr_assert_null(strstr(out, "FOREIGN KEY"), "%s", out);
    free(out);
    rm_dbs(&d);
}
