/*
 * test_store_open.c — the SQLite results store as written: the run id,
 * the schema (WAL, foreign keys), refusal of corrupt / foreign / newer
 * databases with the path in the message, round trips of every table,
 * bound parameters, metric idempotence and flushing, environment dedup,
 * crash safety under SIGKILL.  Helpers: store_fx.c.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/merge/merge.h"
#include "run/store.h"
#include "util/sysinfo.h"
#include "testutil.h"
#include "store_fx.h"

/* ------------------------------------------------------------------ */
/* ids, open, schema                                                   */
/* ------------------------------------------------------------------ */

Test(store, run_id_is_fnv1a_64) {
    char id[17];
    store_run_id("", id);
    cr_assert_str_eq(id, "cbf29ce484222325");
    store_run_id("a", id);
    cr_assert_str_eq(id, "af63dc4c8601ec8c");
    store_run_id("foobar", id);
    cr_assert_str_eq(id, "85944171f73967e8");
    char a[17], b[17];
    store_run_id("{\"seed\":1}", a);
    store_run_id("{\"seed\":2}", b);
    cr_assert_str_neq(a, b);
    cr_assert_eq(strlen(a), 16);
}

Test(store, open_creates_wal_schema_with_foreign_keys) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    cr_assert_str_eq(store_errmsg(s), "");
    store_close(s);
    s = open_or_die(t.db); /* reopening an existing store works */
    store_close(s);

    sqlite3 *db = raw_open(t.db);
    char *v = q_text(db, "SELECT value FROM meta WHERE key = ?1", ARGS("schema_version"));
    char want[16];
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    cr_assert_str_eq(v, want);
    free(v);
    char *mode = q_text(db, "PRAGMA journal_mode", NULL);
    cr_assert_str_eq(mode, "wal");
    free(mode);
    static const char *const tables[] = {"meta", "environments", "runs", "metrics", "summary",
                                         "histograms"};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
                           ARGS(tables[i])),
                     1, "table %s", tables[i]);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type='index' AND name=?1",
                       ARGS("metrics_run_key_step")),
                 1);
    raw_close(db);

    /* foreign keys are enforced: a metric for an unknown run is refused at flush */
    s = open_or_die(t.db);
    OK(store_metric(s, "nosuchrun", "loss", NULL, 0, 1.0));
    cr_assert_neq(store_flush(s), 0);
    cr_assert(strstr(store_errmsg(s), "FOREIGN KEY"), "%s", store_errmsg(s));
    cr_assert(strstr(store_errmsg(s), "1 buffered metric rows dropped"), "%s", store_errmsg(s));
    cr_assert_eq(store_summary(s, "nosuchrun", "k", NULL, 1, NULL), -1);
    cr_assert_eq(store_heartbeat(s, "nosuchrun"), -1);
    cr_assert(strstr(store_errmsg(s), "no run nosuchrun"), "%s", store_errmsg(s));
    store_close(s);
    tmp_db_remove(&t);
}

Test(store, corrupt_file_is_refused_and_left_unchanged) {
    TmpDb t;
    tmp_db(&t);
    FILE *f = fopen(t.db, "wb");
    cr_assert_not_null(f);
    unsigned x = 12345;
    for (int i = 0; i < 8192; i++) {
        x = x * 1103515245u + 12345u;
        fputc((int)(x >> 16) & 0xff, f);
    }
    cr_assert_eq(fclose(f), 0);
    size_t n0, n1;
    unsigned char *before = read_all(t.db, &n0);

    Store *s = (Store *)0x1;
    char err[512];
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -2);
    cr_assert_null(s);
    char want[256];
    snprintf(want, sizeof want, "%s: not a gated database (file is not a database)", t.db);
    cr_assert_str_eq(err, want);

    unsigned char *after = read_all(t.db, &n1);
    cr_assert_eq(n0, n1);
    cr_assert_eq(memcmp(before, after, n0), 0, "corrupt file was modified");
    char wal[128];
    snprintf(wal, sizeof wal, "%s-wal", t.db);
    cr_assert(!path_exists(wal), "a WAL file was created next to a corrupt database");
    free(before);
    free(after);
    tmp_db_remove(&t);
}

Test(store, foreign_sqlite_database_is_refused) {
    TmpDb t;
    tmp_db(&t);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(t.db, &db), SQLITE_OK);
    raw_exec(db, "CREATE TABLE stuff (x INTEGER)");
    raw_close(db);
    size_t n0, n1;
    unsigned char *before = read_all(t.db, &n0);
    Store *s = NULL;
    char err[512];
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -2);
    char want[256];
    snprintf(want, sizeof want, "%s: not a gated database (no meta table)", t.db);
    cr_assert_str_eq(err, want);
    unsigned char *after = read_all(t.db, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
    tmp_db_remove(&t);
}

Test(store, newer_schema_version_is_refused) {
    TmpDb t;
    tmp_db(&t);
    store_close(open_or_die(t.db));
    sqlite3 *db = raw_open(t.db);
    char newer[16], want[96];
    snprintf(newer, sizeof newer, "%d", STORE_SCHEMA_VERSION + 1);
    sqlite3_stmt *st = raw_query(db, "UPDATE meta SET value = ?1 WHERE key = ?2",
                                 ARGS(newer, "schema_version"));
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    raw_close(db);

    size_t n0, n1;
    unsigned char *before = read_all(t.db, &n0);
    Store *s = NULL;
    char err[512];
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -2);
    cr_assert_null(s);
    cr_assert(strstr(err, t.db) == err, "message names the path: %s", err);
    snprintf(want, sizeof want, "schema version %d is newer than this build supports (%d)", STORE_SCHEMA_VERSION + 1,
             STORE_SCHEMA_VERSION);
    cr_assert(strstr(err, want), "%s", err);
    unsigned char *after = read_all(t.db, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "refused database was modified");
    free(before);
    free(after);

    db = raw_open(t.db);
    char *v = q_text(db, "SELECT value FROM meta WHERE key = ?1", ARGS("schema_version"));
    cr_assert_str_eq(v, newer);
    free(v);
    raw_close(db);
    tmp_db_remove(&t);
}

Test(store, open_errors_name_the_path) {
    Store *s = NULL;
    char err[512];
    cr_assert_eq(store_open(&s, "/nonexistent-dir-xyz/results.db", err, sizeof err), -2);
    cr_assert(strncmp(err, "/nonexistent-dir-xyz/results.db: ", 33) == 0, "%s", err);
    cr_assert_null(s);
}

/* ------------------------------------------------------------------ */
/* round trips                                                         */
/* ------------------------------------------------------------------ */

#define COL(i) ((const char *)sqlite3_column_text(st, i))

/* round_trip_every_table: the run's row as written with provenance p; its env_id. */
static long long check_runs_row(sqlite3 *db, const Provenance *pp) {
    const Provenance p = *pp;
    sqlite3_stmt *st = raw_query(
        db,
        "SELECT name, status, config_json, seed, threads, code_version, git_dirty, host,"
        " cpu_model, compiler, cflags, openblas_version, sqlite_version, libyaml_version, argv,"
        " started_at, ended_at, heartbeat_at, error_text, diverged_step, env_id FROM runs"
        " WHERE run_id = ?1",
        ARGS(RID));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq(COL(0), "tiny-sdpa");
    cr_assert_str_eq(COL(1), "diverged");
    cr_assert_str_eq(COL(2), "{\"seed\":7}");
    cr_assert_eq(sqlite3_column_int64(st, 3), 7);
    cr_assert_eq(sqlite3_column_int(st, 4), 4);
    cr_assert_str_eq(COL(5), p.code_version);
    cr_assert_eq(sqlite3_column_int(st, 6), 1);
    cr_assert_str_eq(COL(7), "hostA");
    cr_assert_str_eq(COL(8), p.cpu_model);
    cr_assert_str_eq(COL(9), p.compiler);
    cr_assert_str_eq(COL(10), p.cflags);
    cr_assert_str_eq(COL(11), p.openblas_version);
    cr_assert_str_eq(COL(12), p.sqlite_version);
    cr_assert_str_eq(COL(13), p.libyaml_version);
    cr_assert_str_eq(COL(14), "gated train x.yaml");
    double started = sqlite3_column_double(st, 15), ended = sqlite3_column_double(st, 16);
    double now = (double)time(NULL);
    cr_assert(fabs(started - now) < 60 && ended >= started, "%f %f", started, ended);
    cr_assert_eq(sqlite3_column_double(st, 17), ended);
    cr_assert_str_eq(COL(18), "loss is nan");
    cr_assert_eq(sqlite3_column_int64(st, 19), 2);
    long long env_id = sqlite3_column_int64(st, 20);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    return env_id;
}

/* round_trip_every_table: the summary and histogram rows as written. */
static void check_summary_and_histograms(sqlite3 *db) {
    sqlite3_stmt *st;
    st = raw_query(db, "SELECT key, context, value, text FROM summary WHERE run_id = ?1 ORDER BY key",
                   ARGS(RID));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq(COL(0), "note");
    cr_assert_str_eq(COL(1), "layer=0");
    cr_assert_eq(sqlite3_column_type(st, 2), SQLITE_NULL);
    cr_assert_str_eq(COL(3), "text value");
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq(COL(0), "val_loss");
    cr_assert_str_eq(COL(1), "");
    cr_assert_eq(sqlite3_column_double(st, 2), 3.5);
    cr_assert_eq(sqlite3_column_type(st, 3), SQLITE_NULL);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);

    st = raw_query(db,
                   "SELECT key, context, step, lo, hi, counts FROM histograms WHERE run_id = ?1"
                   " ORDER BY key",
                   ARGS(RID));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq(COL(0), "empty");
    cr_assert_str_eq(COL(5), "[]");
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq(COL(0), "gate");
    cr_assert_str_eq(COL(1), "layer=0");
    cr_assert_eq(sqlite3_column_int64(st, 2), 2);
    cr_assert_eq(sqlite3_column_double(st, 3), 0.0);
    cr_assert_eq(sqlite3_column_double(st, 4), 1.0);
    cr_assert_str_eq(COL(5), "[1,0,7,123456789012,3]");
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
}
#undef COL

Test(store, round_trip_every_table) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "tiny-sdpa", "{\"seed\":7}", 7, 4, &p, "gated train x.yaml"));
    char buf[16];
    cr_assert_str_eq(store_run_status(s, RID, buf, sizeof buf), "running");
    cr_assert_null(store_run_status(s, "absent", buf, sizeof buf));
    cr_assert(strstr(store_errmsg(s), "no run absent"), "%s", store_errmsg(s));

    OK(store_metric(s, RID, "train_loss", NULL, 1, 5.5));
    OK(store_metric(s, RID, "train_loss", "", 2, 4.25));
    OK(store_metric(s, RID, "f_attn", "layer=1,head=3", 2, 0.125));
    OK(store_metric(s, RID, "grad_norm", NULL, 2, NAN));
    OK(store_heartbeat(s, RID)); /* flushes */
    OK(store_summary(s, RID, "val_loss", NULL, 3.5, NULL));
    OK(store_summary(s, RID, "note", "layer=0", NAN, "text value"));
    long long counts[5] = {1, 0, 7, 123456789012LL, 3};
    OK(store_histogram(s, RID, "gate", "layer=0", 2, 0.0, 1.0, counts, 5));
    OK(store_histogram(s, RID, "empty", NULL, 2, 0.0, 1.0, NULL, 0));
    OK(store_run_end(s, RID, "diverged", "loss is nan", 2));
    cr_assert_str_eq(store_run_status(s, RID, buf, sizeof buf), "diverged");
    cr_assert_null(store_run_status(s, RID, buf, 3)); /* too small */
    cr_assert_eq(store_run_end(s, RID, "done", NULL, -1), -1);
    cr_assert(strstr(store_errmsg(s), "got 'done'"), "%s", store_errmsg(s));
    store_close(s);

    sqlite3 *db = raw_open(t.db);
#define COL(i) ((const char *)sqlite3_column_text(st, i))
    long long env_id = check_runs_row(db, &p);
    sqlite3_stmt *st;

    char envs[32];
    snprintf(envs, sizeof envs, "%lld", env_id);
    char *h = q_text(db, "SELECT host || '|' || cpu_model || '|' || libyaml_version FROM environments"
                         " WHERE env_id = ?1",
                     ARGS(envs));
    cr_assert_str_eq(h, "hostA|Test CPU @ 1.00GHz|0.2.5");
    free(h);

    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE run_id = ?1", ARGS(RID)), 4);
    st = raw_query(db,
                   "SELECT key, context, step, value FROM metrics WHERE run_id = ?1"
                   " ORDER BY step, key, context",
                   ARGS(RID));
    static const struct {
        const char *key, *ctx;
        long long step;
        double v; /* NAN: stored as NULL */
    } want[] = {{"train_loss", "", 1, 5.5},
                {"f_attn", "layer=1,head=3", 2, 0.125},
                {"grad_norm", "", 2, NAN},
                {"train_loss", "", 2, 4.25}};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        cr_assert_str_eq(COL(0), want[i].key);
        cr_assert_str_eq(COL(1), want[i].ctx);
        cr_assert_eq(sqlite3_column_int64(st, 2), want[i].step);
        if (isnan(want[i].v))
            cr_assert_eq(sqlite3_column_type(st, 3), SQLITE_NULL);
        else
            cr_assert_eq(sqlite3_column_double(st, 3), want[i].v);
    }
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);

    check_summary_and_histograms(db);
#undef COL
    raw_close(db);

    /* A resume: same id back to running, old metrics kept, end fields cleared. */
    s = open_or_die(t.db);
    OK(store_run_begin(s, RID, "tiny-sdpa", "{\"seed\":7}", 7, 8, &p, "gated train --resume"));
    cr_assert_str_eq(store_run_status(s, RID, buf, sizeof buf), "running");
    OK(store_metric(s, RID, "train_loss", NULL, 3, 4.0));
    store_close(s); /* close flushes */
    db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE run_id = ?1", ARGS(RID)), 5);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs", NULL), 1);
    cr_assert_eq(q_int(db,
                       "SELECT ended_at IS NULL AND error_text IS NULL AND diverged_step IS NULL"
                       " AND threads = 8 AND started_at <= heartbeat_at FROM runs WHERE run_id = ?1",
                       ARGS(RID)),
                 1);
    char *argv = q_text(db, "SELECT argv FROM runs WHERE run_id = ?1", ARGS(RID));
    cr_assert_str_eq(argv, "gated train --resume");
    free(argv);
    raw_close(db);
    tmp_db_remove(&t);
}

Test(store, values_are_bound_never_spliced) {
    static const char evil[] = "O'Brien \"quoted\" '; DROP TABLE runs; --";
    static const char evil_id[] = "x'); DELETE FROM runs; --";
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov(evil);
    OK(store_run_begin(s, evil_id, evil, "{\"name\":\"'; --\"}", 1, 1, &p, evil));
    OK(store_metric(s, evil_id, evil, evil, 0, 1.5));
    OK(store_summary(s, evil_id, evil, evil, 2.5, evil));
    long long c[2] = {1, 2};
    OK(store_histogram(s, evil_id, evil, evil, 0, 0, 1, c, 2));
    OK(store_run_end(s, evil_id, "failed", evil, -1));
    char *id = store_resolve_run(s, evil); /* by name */
    cr_assert_str_eq(id, evil_id, "%s", store_errmsg(s));
    StoreRunInfo r;
    OK(store_run_info(s, id, &r));
    cr_assert_str_eq(r.name, evil);
    cr_assert_str_eq(r.argv, evil);
    cr_assert_str_eq(r.error_text, evil);
    store_run_info_free(&r);
    free(id);
    store_close(s);

    sqlite3 *db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs", NULL), 1);
    static const char *const cols[] = {
        "SELECT name FROM runs WHERE run_id = ?1",
        "SELECT argv FROM runs WHERE run_id = ?1",
        "SELECT error_text FROM runs WHERE run_id = ?1",
        "SELECT host FROM runs WHERE run_id = ?1",
        "SELECT host FROM environments",
        "SELECT key FROM metrics WHERE run_id = ?1",
        "SELECT context FROM metrics WHERE run_id = ?1",
        "SELECT text FROM summary WHERE run_id = ?1",
        "SELECT context FROM histograms WHERE run_id = ?1",
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        char *v = q_text(db, cols[i], strstr(cols[i], "?1") ? ARGS(evil_id) : NULL);
        cr_assert_str_eq(v, evil, "%s", cols[i]);
        free(v);
    }
    raw_close(db);
    tmp_db_remove(&t);
}

Test(store, rewriting_a_metric_step_replaces_it) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    OK(store_run_begin(s, RID, "r", "{}", 1, 1, &p, NULL));
    OK(store_metric(s, RID, "loss", NULL, 5, 1.0));
    OK(store_flush(s));
    OK(store_metric(s, RID, "loss", NULL, 5, 2.0)); /* a resumed run rewrites step 5 */
    OK(store_metric(s, RID, "loss", "layer=0", 5, 9.0));
    OK(store_flush(s));
    OK(store_metric(s, RID, "loss", NULL, 5, 3.0)); /* twice in one batch: last wins */
    OK(store_metric(s, RID, "loss", NULL, 5, 4.0));
    OK(store_flush(s));
    OK(store_flush(s)); /* empty flush is a no-op */
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE key = ?1 AND context = ''",
                       ARGS("loss")),
                 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), 2);
    char *v = q_text(db, "SELECT value FROM metrics WHERE key = ?1 AND context = ''", ARGS("loss"));
    cr_assert_str_eq(v, "4.0");
    free(v);
    raw_close(db);
    tmp_db_remove(&t);
}

Test(store, metrics_flush_every_512_rows_and_at_close) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    OK(store_run_begin(s, RID, "r", "{}", 1, 1, &p, NULL));
    sqlite3 *db = raw_open(t.db); /* a second reader, as `gated ls` would be */
    for (int i = 0; i < 1100; i++) OK(store_metric(s, RID, i % 2 ? "a" : "bb", NULL, i / 2, i));
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), 2 * STORE_FLUSH_ROWS);
    store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), 1100);
    cr_assert_eq(q_int(db, "SELECT sum(value) FROM metrics", NULL), 1099 * 1100 / 2);
    raw_close(db);
    tmp_db_remove(&t);
}

Test(store, environments_are_deduplicated) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, "run1", "one", "{\"seed\":1}", 1, 1, &p, NULL));
    p.code_version = "another commit"; /* not part of the environment */
    p.git_dirty = 0;
    OK(store_run_begin(s, "run2", "two", "{\"seed\":2}", 2, 1, &p, NULL));
    Provenance q = test_prov("hostB");
    OK(store_run_begin(s, "run3", "three", "{\"seed\":3}", 3, 1, &q, NULL));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM environments", NULL), 2);
    cr_assert_eq(q_int(db,
                       "SELECT (SELECT env_id FROM runs WHERE run_id = ?1) ="
                       " (SELECT env_id FROM runs WHERE run_id = ?2)",
                       ARGS("run1", "run2")),
                 1);
    cr_assert_eq(q_int(db,
                       "SELECT (SELECT env_id FROM runs WHERE run_id = ?1) ="
                       " (SELECT env_id FROM runs WHERE run_id = ?2)",
                       ARGS("run1", "run3")),
                 0);
    char *cv = q_text(db, "SELECT code_version FROM runs WHERE run_id = ?1", ARGS("run2"));
    cr_assert_str_eq(cv, "another commit");
    free(cv);
    raw_close(db);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* crash safety                                                        */
/* ------------------------------------------------------------------ */

#define KILL_BATCH 50 /* steps per flush; 2 rows per step */

/* The child: a training loop that logs, flushes and heartbeats until killed;
 * after each flush it tells the parent how many steps are committed. */
static void sigkill_child(const char *path, int wfd) {
    Store *s = NULL;
    char err[512];
    if (store_open(&s, path, err, sizeof err)) _exit(2);
    Provenance p = test_prov("h");
    if (store_run_begin(s, RID, "killme", "{}", 1, 1, &p, "gated train")) _exit(3);
    for (long long step = 0; step < 100000000; step++) {
        if (store_metric(s, RID, "train_loss", NULL, step, 1.0 / (double)(step + 1)) ||
            store_metric(s, RID, "f_attn", "layer=0", step, 0.5))
            _exit(4);
        if ((step + 1) % KILL_BATCH == 0) {
            if (store_flush(s) || store_heartbeat(s, RID)) _exit(5);
            long long done = step + 1;
            if (write(wfd, &done, sizeof done) != (ssize_t)sizeof done) _exit(6);
        }
    }
    _exit(7);
}

Test(store, sigkill_mid_run_leaves_a_readable_database, .timeout = 120) {
    TmpDb t;
    tmp_db(&t);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(pfd[0]);
        sigkill_child(t.db, pfd[1]);
    }
    close(pfd[1]);
    long long acked = 0;
    for (int n = 0; n < 20; n++) {
        ssize_t r = read(pfd[0], &acked, sizeof acked);
        if (r != (ssize_t)sizeof acked) {
            kill(pid, SIGKILL);
            int st;
            waitpid(pid, &st, 0);
            cr_assert_fail("child stopped early (status %d)", st);
        }
    }
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int wst;
    cr_assert_eq(waitpid(pid, &wst, 0), pid);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "child status %d", wst);
    close(pfd[0]);

    sqlite3 *db = raw_open(t.db);
    char *ic = q_text(db, "PRAGMA integrity_check", NULL);
    cr_assert_str_eq(ic, "ok");
    free(ic);
    long long n = q_int(db, "SELECT count(*) FROM metrics WHERE key = ?1", ARGS("train_loss"));
    long long nf = q_int(db, "SELECT count(*) FROM metrics WHERE key = ?1", ARGS("f_attn"));
    long long mx = q_int(db, "SELECT max(step) FROM metrics WHERE key = ?1", ARGS("train_loss"));
    cr_assert_geq(n, acked, "committed %lld rows, child had acked %lld", n, acked);
    cr_assert_eq(n % KILL_BATCH, 0, "a partial batch is visible: %lld rows", n);
    cr_assert_eq(nf, n);
    cr_assert_eq(mx, n - 1);
    raw_close(db);

    Store *s = open_or_die(t.db);
    char buf[16];
    cr_assert_str_eq(store_run_status(s, RID, buf, sizeof buf), "running"); /* fresh heartbeat */
    OK(store_debug_set_heartbeat(s, RID, (double)time(NULL) - 2 * STORE_STALE_SECONDS));
    cr_assert_str_eq(store_run_status(s, RID, buf, sizeof buf), "killed");
    StoreRunList l;
    OK(store_list_runs(s, &l));
    const StoreRunRow *row = list_find(&l, RID);
    cr_assert_str_eq(row->name, "killme");
    cr_assert_str_eq(row->status, "killed");
    store_run_list_free(&l);
    store_close(s);
    tmp_db_remove(&t);
}
