/*
 * test_store.c — the SQLite results store: schema, round trips of every
 * table, bound parameters, metric idempotence, environment dedup, crash
 * safety under SIGKILL, refusal of corrupt / foreign / newer databases,
 * reading runs back (the query functions ls / show use), and the `gated
 * ls` / `gated show` reports themselves (cli/store_show.c, run through
 * $GATED_BIN), system info (util/sysinfo.h) and lab/merge.h's merge_from.
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

#include "lab/merge.h"
#include "run/store.h"
#include "util/sysinfo.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    char dir[64];
    char db[96];
} TmpDb;

/* A fresh directory holding the path of a (not yet existing) results.db. */
static void tmp_db(TmpDb *t) {
    strcpy(t->dir, "/tmp/test_store_XXXXXX");
    cr_assert(mkdtemp(t->dir), "mkdtemp: %s", strerror(errno));
    snprintf(t->db, sizeof t->db, "%s/results.db", t->dir);
}

static void tmp_db_remove(TmpDb *t) {
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s%s", t->db, sfx[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

static Store *open_or_die(const char *path) {
    Store *s = NULL;
    char err[512];
    int rc = store_open(&s, path, err, sizeof err);
    cr_assert_eq(rc, 0, "store_open(%s): %s", path, err);
    cr_assert_not_null(s);
    return s;
}

/* A fixed provenance, so environments dedup deterministically. */
static Provenance test_prov(const char *host) {
    return (Provenance){.host = host,
                        .cpu_model = "Test CPU @ 1.00GHz",
                        .compiler = "gcc 12.2.0",
                        .cflags = "-O2 -march=native",
                        .openblas_version = "OpenBLAS 0.3.21",
                        .sqlite_version = "3.40.1",
                        .libyaml_version = "0.2.5",
                        .code_version = "0123456789abcdef0123456789abcdef01234567",
                        .git_dirty = 1};
}

#define OK(call) cr_assert_eq((call), 0, "%s: %s", #call, store_errmsg(s))

static sqlite3 *raw_open(const char *path) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK, "raw open %s",
                 path);
    return db;
}

static void raw_close(sqlite3 *db) { cr_assert_eq(sqlite3_close(db), SQLITE_OK); }

/* Prepare sql and bind text parameters ?1..?n (NULL-terminated list). */
static sqlite3_stmt *raw_query(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "prepare %s: %s", sql,
                 sqlite3_errmsg(db));
    for (int i = 0; args && args[i]; i++)
        cr_assert_eq(sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT), SQLITE_OK);
    return st;
}

/* The single integer a query returns. */
static long long q_int(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = raw_query(db, sql, args);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    long long v = sqlite3_column_int64(st, 0);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

/* The single text a query returns (malloc'd; NULL for SQL NULL). */
static char *q_text(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = raw_query(db, sql, args);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *v = t ? strdup((const char *)t) : NULL;
    cr_assert(!t || v);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

static void raw_exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    cr_assert(len >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* `$GATED_BIN CMD [ARG] --db DB` (the test is skipped without GATED_BIN),
 * run directly, not through a shell, so ARG may hold any byte: its stdout
 * into *out (malloc'd), its stderr into err; the exit status. */
static int gated_run(const char *cmd, const char *arg, const char *db, char **out, char *err, size_t cap) {
    const char *bin = gated_bin();
    char *argv[6];
    int k = 0;
    argv[k++] = (char *)bin;
    argv[k++] = (char *)cmd;
    if (arg) argv[k++] = (char *)arg;
    argv[k++] = "--db";
    argv[k++] = (char *)db;
    argv[k] = NULL;
    FILE *o = tmpfile(), *e = tmpfile();
    cr_assert(o && e);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fileno(o), 1);
        dup2(fileno(e), 2);
        execv(bin, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    *out = test_read_stream(o, NULL);
    char *es = test_read_stream(e, NULL);
    snprintf(err, cap, "%s", es);
    free(es);
    fclose(o);
    fclose(e);
    cr_assert(WIFEXITED(st), "gated %s did not exit", cmd);
    return WEXITSTATUS(st);
}

/* `gated ls --db DB`: its output (malloc'd). */
static char *capture_ls(const char *db) {
    char *out, err[1024];
    int rc = gated_run("ls", NULL, db, &out, err, sizeof err);
    cr_assert_eq(rc, 0, "ls: exit %d: %s", rc, err);
    cr_assert_str_eq(err, "", "ls wrote to stderr");
    return out;
}

/* `gated show ARG --db DB`: its output, or NULL (having asserted that it
 * exited 2 and printed nothing on stdout) with its message in err. */
static char *capture_show(const char *db, const char *arg, char *err, size_t cap) {
    char *out;
    int rc = gated_run("show", arg, db, &out, err, cap);
    if (rc == 0) {
        cr_assert_str_eq(err, "", "show wrote to stderr");
        return out;
    }
    cr_assert_eq(rc, 2, "show %s: exit %d: %s", arg, rc, err);
    cr_assert_str_eq(out, "", "failed show printed: %s", out);
    free(out);
    return NULL;
}

/* The listed row of run id (asserts there is one). */
static const StoreRunRow *list_find(const StoreRunList *l, const char *id) {
    for (int i = 0; i < l->n; i++)
        if (l->rows[i].run_id && strcmp(l->rows[i].run_id, id) == 0) return &l->rows[i];
    cr_assert_fail("run %s is not listed", id);
    return NULL;
}

static const char RID[] = "0123456789abcdef";

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
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -1);
    cr_assert_null(s);
    char want[256];
    snprintf(want, sizeof want, "%s: not a gated database (file is not a database)", t.db);
    cr_assert_str_eq(err, want);

    unsigned char *after = read_all(t.db, &n1);
    cr_assert_eq(n0, n1);
    cr_assert_eq(memcmp(before, after, n0), 0, "corrupt file was modified");
    char wal[128];
    snprintf(wal, sizeof wal, "%s-wal", t.db);
    cr_assert(!exists(wal), "a WAL file was created next to a corrupt database");
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
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -1);
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
    cr_assert_eq(store_open(&s, t.db, err, sizeof err), -1);
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
    cr_assert_eq(store_open(&s, "/nonexistent-dir-xyz/results.db", err, sizeof err), -1);
    cr_assert(strncmp(err, "/nonexistent-dir-xyz/results.db: ", 33) == 0, "%s", err);
    cr_assert_null(s);
}

/* ------------------------------------------------------------------ */
/* round trips                                                         */
/* ------------------------------------------------------------------ */

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
    sqlite3_stmt *st = raw_query(
        db,
        "SELECT name, status, config_json, seed, threads, code_version, git_dirty, host,"
        " cpu_model, compiler, cflags, openblas_version, sqlite_version, libyaml_version, argv,"
        " started_at, ended_at, heartbeat_at, error_text, diverged_step, env_id FROM runs"
        " WHERE run_id = ?1",
        ARGS(RID));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
#define COL(i) ((const char *)sqlite3_column_text(st, i))
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

/* ------------------------------------------------------------------ */
/* reports                                                             */
/* ------------------------------------------------------------------ */

static const char RUN_A[] = "aaaa111122223333", RUN_B[] = "aaaa999988887777";

/* Two runs: A (finished, with every kind of row ls / show read) and B
 * (running, one metric), both flushed; the store is left open. */
static Store *two_runs(const char *db) {
    Store *s = open_or_die(db);
    Provenance p = test_prov("hostA");
    const char *A = RUN_A, *B = RUN_B;
    OK(store_run_begin(s, A, "sdpa-elementwise", "{\"model\":{\"gate\":\"sdpa\"}}", 42, 2, &p,
                       "gated train sdpa.yaml"));
    OK(store_run_begin(s, B, "baseline", "{\"model\":{\"gate\":\"none\"}}", 43, 2, &p, NULL));
    for (int step = 1; step <= 30; step++) OK(store_metric(s, A, "train_loss", NULL, step, 6.0 - step * 0.1));
    OK(store_metric(s, A, "val_loss", NULL, 30, 3.25));
    OK(store_metric(s, A, "f_attn", "layer=1", 10, 0.9));
    OK(store_metric(s, A, "f_attn", "layer=1", 30, 0.625)); /* the last step is shown */
    OK(store_metric(s, A, "m_act", "layer=1", 30, 77.5));
    OK(store_summary(s, A, "f_attn", "layer=0", 0.375, NULL));
    OK(store_summary(s, A, "m_act", "layer=0", 12.5, NULL));
    OK(store_summary(s, A, "val_loss", NULL, 3.1234, NULL));
    OK(store_summary(s, A, "val_ppl", NULL, 22.75, NULL));
    OK(store_summary(s, A, "val_bpb", NULL, 1.0625, NULL));
    OK(store_summary(s, A, "test_loss", NULL, 3.2109, NULL));
    OK(store_summary(s, A, "tokens_per_s", NULL, 1234.5, "fast"));
    long long old[4] = {9, 9, 9, 9}, cnt[4] = {10, 40, 20, 0};
    OK(store_histogram(s, A, "gate", "", 10, 0, 1, old, 4));
    OK(store_histogram(s, A, "gate", "", 30, 0, 1, cnt, 4));
    OK(store_run_end(s, A, "finished", NULL, -1));
    OK(store_metric(s, B, "train_loss", NULL, 7, 5.0));
    OK(store_flush(s));
    return s;
}

/* The query functions behind ls and show, in process. */
Test(store, runs_read_back) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    StoreRunList l;
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 0);
    cr_assert_eq(l.name_width, 0);
    store_run_list_free(&l);
    store_close(s);
    s = two_runs(t.db);
    const char *A = RUN_A, *B = RUN_B;

    /* the list: oldest first, effective status, highest step, final val loss */
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 2);
    cr_assert_str_eq(l.rows[0].run_id, A);
    cr_assert_str_eq(l.rows[1].run_id, B);
    cr_assert_eq(l.name_width, (int)strlen("sdpa-elementwise"));
    cr_assert_str_eq(l.rows[0].status, "finished");
    cr_assert(l.rows[0].has_steps && l.rows[0].steps == 30);
    cr_assert_float_eq(l.rows[0].val_loss, 3.1234, 1e-12); /* the summary's, not the metric's 3.25 */
    cr_assert_str_eq(l.rows[1].status, "running");
    cr_assert(l.rows[1].has_steps && l.rows[1].steps == 7);
    cr_assert(isnan(l.rows[1].val_loss));
    store_run_list_free(&l);

    /* by name, by exact id and by unique prefix */
    static const char *const args[] = {"sdpa-elementwise", RUN_A, "aaaa1"};
    for (int i = 0; i < 3; i++) {
        char *id = store_resolve_run(s, args[i]);
        cr_assert_str_eq(id, A, "%s: %s", args[i], store_errmsg(s));
        free(id);
    }
    StoreRunInfo r;
    OK(store_run_info(s, A, &r));
    cr_assert_str_eq(r.name, "sdpa-elementwise");
    cr_assert_str_eq(r.effective_status, "finished");
    cr_assert_str_eq(r.argv, "gated train sdpa.yaml");
    cr_assert_str_eq(r.cpu_model, "Test CPU @ 1.00GHz");
    cr_assert(r.seed == 42 && r.threads == 2 && r.git_dirty == 1 && !r.has_diverged && !r.error_text);
    cr_assert(!isnan(r.ended_at) && r.ended_at >= r.started_at);
    store_run_info_free(&r);

    StoreSummaryRow *u;
    int n;
    OK(store_read_summary(s, A, &u, &n));
    cr_assert_eq(n, 7);
    cr_assert_str_eq(u[0].key, "f_attn"); /* by key */
    cr_assert_str_eq(u[2].key, "test_loss");
    cr_assert_str_eq(u[3].key, "tokens_per_s");
    cr_assert_str_eq(u[3].text, "fast");
    cr_assert_null(u[2].text);
    store_summary_free(u, n);

    StoreSeries *m;
    long long other;
    OK(store_read_series(s, A, &m, &n, &other));
    cr_assert_eq(n, 2);
    cr_assert_str_eq(m[0].key, "train_loss");
    cr_assert(m[0].points == 30 && m[0].last_step == 30);
    cr_assert_float_eq(m[0].last_value, 3.0, 1e-9);
    cr_assert_eq(other, 2); /* f_attn and m_act at layer=1 */
    store_series_free(m, n);

    /* probes: layer 0 from summary, layer 1 from the last metric step */
    StoreProbe *pr;
    OK(store_read_probes(s, A, &pr, &n));
    cr_assert_eq(n, 2);
    cr_assert(pr[0].layer == 0 && pr[0].has_f && pr[0].has_m && pr[0].f_attn == 0.375 && pr[0].m_act == 12.5);
    cr_assert(pr[1].layer == 1 && pr[1].f_attn == 0.625 && pr[1].m_act == 77.5);
    free(pr);

    StoreHist *h;
    OK(store_read_histograms(s, A, "gate", &h, &n));
    cr_assert_eq(n, 1);
    cr_assert(h[0].step == 30 && h[0].nbins == 4 && h[0].counts[1] == 40 && h[0].hi == 1);
    store_histograms_free(h, n);

    /* errors: unknown, ambiguous prefix, empty */
    cr_assert_null(store_resolve_run(s, "nosuch"));
    cr_assert(strstr(store_errmsg(s), "no run matches 'nosuch'"), "%s", store_errmsg(s));
    cr_assert_null(store_resolve_run(s, "aaaa"));
    cr_assert(strstr(store_errmsg(s), "'aaaa' is ambiguous") && strstr(store_errmsg(s), A) &&
                  strstr(store_errmsg(s), B),
              "%s", store_errmsg(s));
    cr_assert_null(store_resolve_run(s, ""));
    cr_assert_null(store_resolve_run(s, "no\x1b[2Jsuch"));
    cr_assert(strstr(store_errmsg(s), "no run matches 'no\\x1b[2Jsuch'"), "%s", store_errmsg(s));
    cr_assert_eq(store_run_info(s, "nosuch", &r), -1);

    /* a stale running run reads as killed */
    OK(store_debug_set_heartbeat(s, B, 1000.0));
    OK(store_list_runs(s, &l));
    cr_assert_str_eq(list_find(&l, B)->status, "killed");
    store_run_list_free(&l);
    OK(store_run_info(s, B, &r));
    cr_assert_str_eq(r.effective_status, "killed");
    cr_assert_str_eq(r.status, "running");
    cr_assert(isnan(r.ended_at));
    store_run_info_free(&r);
    store_close(s);
    tmp_db_remove(&t);
}

/* `gated ls` and `gated show` on the same runs. */
Test(store, ls_and_show_report_runs) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    store_close(s);
    char *empty = capture_ls(t.db);
    cr_assert(strstr(empty, "(no runs"), "%s", empty);
    free(empty);
    s = two_runs(t.db);
    const char *A = RUN_A, *B = RUN_B;
    Provenance p = test_prov("hostA");

    char *ls = capture_ls(t.db);
    cr_assert(strstr(ls, "run id") && strstr(ls, "status") && strstr(ls, "val loss"), "%s", ls);
    const char *la = strstr(ls, A), *lb = strstr(ls, B);
    cr_assert(la && lb && la < lb, "%s", ls);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(la, "\n"), la);
    cr_assert(strstr(line, "sdpa-elementwise") && strstr(line, "finished") && strstr(line, " 30 ") &&
                  strstr(line, "3.1234"),
              "%s", line);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(lb, "\n"), lb);
    cr_assert(strstr(line, "baseline") && strstr(line, "running") && strstr(line, " 7 ") &&
                  strstr(line, " - "),
              "%s", line);
    free(ls);

    /* by name, by exact id and by unique prefix: the same report */
    char err[1024];
    char *show = capture_show(t.db, "sdpa-elementwise", err, sizeof err);
    cr_assert_not_null(show, "%s", err);
    char *by_id = capture_show(t.db, A, err, sizeof err), *by_prefix = capture_show(t.db, "aaaa1", err, sizeof err);
    cr_assert_not_null(by_id);
    cr_assert_not_null(by_prefix);
    cr_assert_str_eq(show, by_id);
    cr_assert_str_eq(show, by_prefix);
    free(by_id);
    free(by_prefix);
    const char *const want[] = {
        A, "sdpa-elementwise", "finished", "seed        42", "threads     2",
        "gated train sdpa.yaml", "{\"model\":{\"gate\":\"sdpa\"}}", p.code_version, "(dirty)",
        "hostA", "Test CPU @ 1.00GHz", "gcc 12.2.0", "-O2 -march=native", "OpenBLAS 0.3.21",
        "val_loss    3.1234", "val_ppl     22.7500", "val_bpb     1.0625", "test_loss   3.2109",
        "tokens_per_s", "1234.5", "fast", "train_loss", "at step 30 (30 points)",
        "per-layer probes", "gate histogram (step 30, 4 bins over [0, 1], 70 values)",
        "########################################", /* the largest bin, full width */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(show, want[i]), "show lacks '%s':\n%s", want[i], show);
    /* probes: layer 0 from summary, layer 1 from the last metric step */
    cr_assert(strstr(show, "  0            0.375        12.5\n"), "%s", show);
    cr_assert(strstr(show, "  1            0.625        77.5\n"), "%s", show);
    cr_assert(!strstr(show, "0.9 "), "an old probe step leaked:\n%s", show);
    cr_assert(!strstr(show, "step 10,"), "an old histogram leaked:\n%s", show);
    /* the val results appear once, in results, not again in summary */
    const char *first = strstr(show, "val_ppl");
    cr_assert(first && !strstr(first + 1, "val_ppl"), "%s", show);
    free(show);

    /* errors: unknown, ambiguous prefix, empty; nothing printed (capture_show asserts it) */
    cr_assert_null(capture_show(t.db, "nosuch", err, sizeof err));
    cr_assert(strstr(err, "no run matches 'nosuch'"), "%s", err);
    cr_assert_null(capture_show(t.db, "aaaa", err, sizeof err));
    cr_assert(strstr(err, "'aaaa' is ambiguous") && strstr(err, A) && strstr(err, B), "%s", err);
    cr_assert_null(capture_show(t.db, "", err, sizeof err));

    /* a name shared by two runs is ambiguous too */
    OK(store_run_begin(s, "cccc000000000000", "baseline", "{\"seed\":44}", 44, 1, &p, NULL));
    cr_assert_null(capture_show(t.db, "baseline", err, sizeof err));
    cr_assert(strstr(err, "name matches 2 runs"), "%s", err);
    char *b = capture_show(t.db, "aaaa9", err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert(strstr(b, "status      running"), "%s", b);
    free(b);

    /* a stale running run reads as killed in both reports */
    OK(store_debug_set_heartbeat(s, B, 1000.0));
    b = capture_show(t.db, B, err, sizeof err);
    cr_assert(b && strstr(b, "status      killed (recorded 'running'"), "%s", b ? b : err);
    free(b);
    ls = capture_ls(t.db);
    lb = strstr(ls, B);
    cr_assert(lb && strstr(lb, "killed"), "%s", ls);
    free(ls);
    store_close(s);
    tmp_db_remove(&t);
}

Test(store, provenance_fill_sets_every_field) {
    Provenance p;
    memset(&p, 0, sizeof p);
    p.git_dirty = 42;
    store_provenance_fill(&p);
    const char *f[] = {p.host,           p.cpu_model,      p.compiler,        p.cflags,
                       p.openblas_version, p.sqlite_version, p.libyaml_version, p.code_version};
    for (int i = 0; i < 8; i++) cr_assert(f[i] && f[i][0], "field %d empty", i);
    cr_assert_str_eq(p.sqlite_version, sqlite3_libversion());
    cr_assert(p.git_dirty >= -1 && p.git_dirty <= 1);
    cr_assert(strcmp(p.code_version, "unknown") == 0 || strlen(p.code_version) == 40, "%s",
              p.code_version);
    cr_assert_eq(strcmp(p.code_version, "unknown") == 0, p.git_dirty == -1);

    /* p == NULL in run_begin means this provenance */
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    OK(store_run_begin(s, RID, "auto", "{}", 1, 1, NULL, NULL));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    char *v = q_text(db, "SELECT sqlite_version FROM runs WHERE run_id = ?1", ARGS(RID));
    cr_assert_str_eq(v, sqlite3_libversion());
    free(v);
    raw_close(db);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* untrusted text: names, labels, anything read back from a file       */
/* ------------------------------------------------------------------ */

/* util/sysinfo.h. */
Test(store, sysinfo_reads_the_machine) {
    char t[] = "value \t\r\n", out[256];
    sysinfo_trim(t);
    cr_assert_str_eq(t, "value");
    cr_assert(sysinfo_compiler()[0]);
#if defined(__GNUC__) && !defined(__clang__)
    cr_assert_eq(strncmp(sysinfo_compiler(), "gcc ", 4), 0, "%s", sysinfo_compiler());
#endif
    sysinfo_cpu_model(out, sizeof out);
    cr_assert(out[0]);
    sysinfo_cpuinfo("no such key", out, sizeof out);
    cr_assert_str_eq(out, "");
    sysinfo_host(out, sizeof out);
    cr_assert(out[0]);
    int any = -1;
    cr_assert_eq(sysinfo_command("printf 'one  \\ntwo\\n'", out, sizeof out, &any), 0);
    cr_assert_str_eq(out, "one");
    cr_assert_eq(any, 1);
    cr_assert_eq(sysinfo_command("true", out, sizeof out, &any), 0);
    cr_assert(out[0] == '\0' && any == 0);
    cr_assert_eq(sysinfo_command("exit 3", out, sizeof out, NULL), -1);
}

/* lab/merge.h: an input with a name that is not printable text is refused
 * whole; dst itself is refused; a clean input merges once. */
Test(store, merge_from_checks_its_input) {
    TmpDb a, b;
    tmp_db(&a);
    tmp_db(&b);
    Store *s = open_or_die(a.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "ok-name", "{\"seed\":1}", 1, 1, &p, NULL));
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_summary(s, RID, "val_loss", NULL, 2.6, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, 2.7, NULL));
    OK(store_run_end(s, RID, "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(a.db);
    raw_exec(db, "UPDATE runs SET name = 'bad' || char(27) || 'name'");
    raw_close(db);

    Store *d = open_or_die(b.db);
    char err[1024];
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), -2);
    cr_assert(strstr(err, "refused, nothing merged: runs row 1 (run 0123456789abcdef): name \"bad\\x1bname\""), "%s",
              err);
    cr_assert_eq(store_count_rows(d, "runs"), 0);
    cr_assert_eq(store_count_rows(d, "metrics"), 0);
    cr_assert_eq(merge_from(d, b.db, err, sizeof err), -2);
    cr_assert(strstr(err, "is the output database"), "%s", err);

    db = raw_open(a.db);
    raw_exec(db, "UPDATE runs SET name = 'fixed'");
    raw_close(db);
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(err, "");
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), 0, "%s", err); /* idempotent */
    cr_assert_eq(store_count_rows(d, "runs"), 1);
    cr_assert_eq(store_count_rows(d, "metrics"), 1);
    store_close(d);
    tmp_db_remove(&a);
    tmp_db_remove(&b);
}

Test(store, names_must_be_printable_text) {
    static const struct {
        const char *s;
        const char *why; /* NULL: accepted */
        const char *shown;
    } cases[] = {
        {"G1-elementwise", NULL, "G1-elementwise"},
        {"lr=0.001,position=none s1", NULL, "lr=0.001,position=none s1"},
        {"caf\xc3\xa9-\xce\xb2-\xe2\x82\xac-\xf0\x9f\x98\x80", NULL, "caf\xc3\xa9-\xce\xb2-\xe2\x82\xac-\xf0\x9f\x98\x80"},
        {"x\n!touch PWNED\n", "contains a control character (\\x0a at byte 2)", "x\\x0a!touch PWNED\\x0a"},
        {"a\tb", "contains a control character (\\x09 at byte 2)", "a\\x09b"},
        {"\x1b[2Jred", "contains a control character (\\x1b at byte 1)", "\\x1b[2Jred"},
        {"cr\r", "contains a control character (\\x0d at byte 3)", "cr\\x0d"},
        {"del\x7f", "contains a control character (\\x7f at byte 4)", "del\\x7f"},
        {"c1\xc2\x9b" "2J", "contains a control character (\\xc2\\x9b at byte 3)", "c1\\xc2\\x9b2J"},
        {"bad\xff", "is not valid UTF-8 (\\xff at byte 4)", "bad\\xff"},
        {"\xc0\xaf-overlong", "is not valid UTF-8 (\\xc0 at byte 1)", "\\xc0\\xaf-overlong"},
        {"cut\xe2\x82", "is not valid UTF-8 (\\xe2 at byte 4)", "cut\\xe2\\x82"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[256], shown[256];
        int rc = store_name_check(cases[i].s, why, sizeof why);
        if (!cases[i].why) {
            cr_assert_eq(rc, 0, "case %zu refused: %s", i, why);
            cr_assert_str_eq(why, "");
        } else {
            cr_assert_eq(rc, -1, "case %zu accepted", i);
            char want[256];
            snprintf(want, sizeof want, "%s; names and labels must be printable text", cases[i].why);
            cr_assert_str_eq(why, want, "case %zu", i);
        }
        cr_assert_str_eq(store_escape(cases[i].s, shown, sizeof shown), cases[i].shown, "case %zu", i);
        char *d = store_escape_dup(cases[i].s);
        cr_assert_not_null(d);
        cr_assert_str_eq(d, cases[i].shown, "case %zu", i);
        free(d);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cr_assert_not_null(f);
        store_fput_escaped(f, cases[i].s);
        cr_assert_eq(fclose(f), 0);
        cr_assert_str_eq(buf, cases[i].shown, "case %zu", i);
        free(buf);
    }
    /* cut at a character boundary, always terminated */
    char small[6];
    cr_assert_str_eq(store_escape("abc\ndef", small, sizeof small), "abc");
    cr_assert_str_eq(store_escape("ab\xc3\xa9\xc3\xa9", small, sizeof small), "ab\xc3\xa9");
    cr_assert_str_eq(store_escape("x", small, 1), "");
    char *d = store_escape_dup(NULL);
    cr_assert_str_eq(d, "");
    free(d);

    /* the store refuses such names and labels: nothing is written */
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    cr_assert_eq(store_run_begin(s, RID, "x\n!touch PWNED\n", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "run name \"x\\x0a!touch PWNED\\x0a\" contains a control character"), "%s",
              store_errmsg(s));
    cr_assert_eq(store_run_begin(s, "ab\x1b" "cd", "n", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "run id \"ab\\x1bcd\""), "%s", store_errmsg(s));
    StoreSweepRun r[2] = {{"aaaa", "ok", 1, 0, 1}, {"bbbb", "bad\nlabel", 1, 1, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 2, r, 2), -1);
    cr_assert(strstr(store_errmsg(s), "run 1: label \"bad\\x0alabel\" contains a control character"), "%s",
              store_errmsg(s));
    r[1].label = "fine";
    cr_assert_eq(store_sweep_record(s, "sw\x1b[2J", 2, r, 2), -1);
    cr_assert(strstr(store_errmsg(s), "sweep name \"sw\\x1b[2J\""), "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "runs"), 0);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    OK(store_sweep_record(s, "sw", 2, r, 2));
    store_close(s);
    tmp_db_remove(&t);
}

/* True if text holds a byte below 0x20 other than a newline, or 0x7f. */
static int has_raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return 1;
    return 0;
}

static int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

/* A database written by another tool (or merged from one) may hold any
 * text: ls and show print it escaped, never raw escape codes or line breaks. */
Test(store, ls_and_show_escape_text_from_the_file) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "plain", "{\"seed\":1}", 1, 1, &p, "gated train x.yaml"));
    OK(store_summary(s, RID, "note", NULL, 1, "ok"));
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_run_end(s, RID, "failed", "boom", -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET name = 'evil' || char(27) || '[2J' || char(10) || 'line2',"
                 " host = 'h' || char(27) || ']0;title' || char(7), argv = 'a' || char(13) || 'b',"
                 " error_text = 'e' || char(10) || 'f', cpu_model = 'c' || char(155) || 'd'");
    raw_exec(db, "UPDATE summary SET text = 't' || char(10) || 'u', context = 'c' || char(27)");
    raw_exec(db, "UPDATE metrics SET key = 'k' || char(27) || '[31m'");
    raw_close(db);

    char *ls = capture_ls(t.db);
    cr_assert(!has_raw_control(ls), "raw control byte in ls:\n%s", ls);
    cr_assert_eq(count_lines(ls), 2, "a name broke the table's lines:\n%s", ls);
    cr_assert(strstr(ls, "evil\\x1b[2J\\x0aline2"), "%s", ls);
    free(ls);
    char err[1024];
    char *show = capture_show(t.db, RID, err, sizeof err);
    cr_assert_not_null(show, "%s", err);
    cr_assert(!has_raw_control(show), "raw control byte in show:\n%s", show);
    static const char *const want[] = {
        "name        evil\\x1b[2J\\x0aline2\n", "host        h\\x1b]0;title\\x07\n", "argv        a\\x0db\n",
        "error       e\\x0af\n", "cpu         c\\xc2\\x9bd\n", "note[c\\x1b]", "t\\x0au\n", "k\\x1b[31m",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(show, want[i]), "show lacks '%s':\n%s", want[i], show);
    free(show);
    /* an argument echoed in a message is escaped too */
    cr_assert_null(capture_show(t.db, "no\x1b[2Jsuch", err, sizeof err));
    cr_assert(strstr(err, "no run matches 'no\\x1b[2Jsuch'"), "%s", err);
    cr_assert(!has_raw_control(err), "raw control byte in the message: %s", err);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* read-only access                                                    */
/* ------------------------------------------------------------------ */

/* A database with one finished run and a sweep, switched to a rollback
 * journal (as one written by an older tool, or copied); RID is the run. */
static void rollback_db(const char *path, int with_sweeps) {
    Store *s = open_or_die(path);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "ro-run", "{\"train.lr\":0.003,\"train.seed\":1}", 1, 1, &p, NULL));
    OK(store_metric(s, RID, "val_loss", NULL, 10, 2.5));
    OK(store_summary(s, RID, "val_loss", NULL, 2.5, NULL));
    OK(store_run_end(s, RID, "finished", NULL, -1));
    StoreSweepRun r = {RID, "baseline", 1, 0, 1};
    OK(store_sweep_record(s, "ro", 1, &r, 1));
    store_close(s);
    sqlite3 *db = raw_open(path);
    if (!with_sweeps) raw_exec(db, "DROP TABLE sweep_runs");
    char *mode = q_text(db, "PRAGMA journal_mode=DELETE", NULL);
    cr_assert_str_eq(mode, "delete");
    free(mode);
    raw_close(db);
}

static int same_bytes(const unsigned char *a, size_t na, const char *path) {
    size_t nb;
    unsigned char *b = read_all(path, &nb);
    int same = na == nb && memcmp(a, b, na) == 0;
    free(b);
    return same;
}

static void assert_no_side_files(const char *db) {
    static const char *const sfx[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", db, sfx[i]);
        cr_assert(!exists(p), "%s was created", p);
    }
}

/* Everything ls and show read, through a read-only store (RID, "ro-run"). */
static void ro_read_all(Store *s) {
    StoreRunList l;
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 1);
    cr_assert_str_eq(l.rows[0].name, "ro-run");
    cr_assert_str_eq(l.rows[0].status, "finished");
    store_run_list_free(&l);
    char *id = store_resolve_run(s, "ro-run");
    cr_assert_str_eq(id, RID, "%s", store_errmsg(s));
    free(id);
    StoreRunInfo r;
    OK(store_run_info(s, RID, &r));
    store_run_info_free(&r);
    StoreSummaryRow *u;
    StoreSeries *m;
    StoreProbe *p;
    StoreHist *h;
    int n;
    long long other;
    OK(store_read_summary(s, RID, &u, &n));
    cr_assert_eq(n, 1);
    store_summary_free(u, n);
    OK(store_read_series(s, RID, &m, &n, &other));
    cr_assert_eq(n, 1);
    store_series_free(m, n);
    OK(store_read_probes(s, RID, &p, &n));
    free(p);
    OK(store_read_histograms(s, RID, "gate", &h, &n));
    store_histograms_free(h, n);
}

Test(store, read_only_open_writes_nothing) {
    TmpDb t;
    tmp_db(&t);
    rollback_db(t.db, 1);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);

    Store *s = NULL;
    char err[512];
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    ro_read_all(s);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 1);
    /* writing through it fails cleanly */
    Provenance p = test_prov("hostA");
    cr_assert_eq(store_run_begin(s, "ffff000000000000", "w", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "readonly"), "%s", store_errmsg(s));
    OK(store_metric(s, RID, "x", NULL, 1, 1.0));
    cr_assert_eq(store_flush(s), -1);
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open changed the file");
    assert_no_side_files(t.db);
    sqlite3 *db = raw_open(t.db);
    char *mode = q_text(db, "PRAGMA journal_mode", NULL);
    cr_assert_str_eq(mode, "delete", "the journal mode was switched");
    free(mode);
    raw_close(db);
    free(before);
    tmp_db_remove(&t);

    /* a database from before sweep_runs: readable (an empty table), not migrated */
    tmp_db(&t);
    rollback_db(t.db, 0);
    before = read_all(t.db, &n0);
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    char (*ids)[17] = NULL;
    int n = -1;
    OK(store_sweep_finished(s, "ro", &ids, &n));
    cr_assert_eq(n, 0);
    free(ids);
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open migrated the file");
    assert_no_side_files(t.db);
    db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE name = ?1", ARGS("sweep_runs")), 0);
    raw_close(db);
    free(before);

    /* where the process cannot write (not testable as root, who may write anyway) */
    if (geteuid() != 0) {
        cr_assert_eq(chmod(t.db, 0444), 0);
        cr_assert_eq(chmod(t.dir, 0555), 0);
        cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
        ro_read_all(s);
        store_close(s);
        cr_assert_eq(chmod(t.dir, 0755), 0);
        cr_assert_eq(chmod(t.db, 0644), 0);
    }
    tmp_db_remove(&t);

    /* missing: an error, nothing created; an empty file: not a gated database, left empty */
    tmp_db(&t);
    s = (Store *)0x1;
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), -1);
    cr_assert_null(s);
    char want[256];
    snprintf(want, sizeof want, "%s: no such database", t.db);
    cr_assert_str_eq(err, want);
    cr_assert(!exists(t.db), "a read-only open created the database");
    FILE *f = fopen(t.db, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: not a gated database (empty)", t.db);
    cr_assert_str_eq(err, want);
    struct stat sb;
    cr_assert_eq(stat(t.db, &sb), 0);
    cr_assert_eq(sb.st_size, 0, "the empty file was written");
    assert_no_side_files(t.db);
    tmp_db_remove(&t);
}

/* `gated CMD...` with output into out; the exit status (-1: no exit). */
static int run_gated(const char *cmd_fmt, const char *a1, const char *a2, char *out, size_t cap) {
    const char *bin = getenv("GATED_BIN");
    char cmd[1024], body[768];
    snprintf(body, sizeof body, cmd_fmt, a1, a2);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, body);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) {
    }
    int st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The reading commands open the database read-only: a rollback-journal
 * database keeps its bytes (no switch to WAL), and a missing one is an
 * error (exit 2) that creates nothing, for eval too. */
Test(store, reading_commands_change_and_create_nothing) {
    const char *bin = getenv("GATED_BIN");
    if (!bin || access(bin, X_OK) != 0) cr_skip_test("GATED_BIN is not set");
    TmpDb t;
    tmp_db(&t);
    rollback_db(t.db, 1);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);
    char out[8192], rep[128];
    snprintf(rep, sizeof rep, "%s/rep", t.dir);
    int rc = run_gated("ls --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 0, "ls: %d: %s", rc, out);
    cr_assert(strstr(out, "ro-run"), "%s", out);
    rc = run_gated("show ro-run --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 0, "show: %d: %s", rc, out);
    rc = run_gated("report --db '%s' --out '%s' --no-plots", t.db, rep, out, sizeof out);
    cr_assert_eq(rc, 0, "report: %d: %s", rc, out);
    rc = run_gated("report --db '%s' --out '%s' --format csv --no-plots", t.db, rep, out, sizeof out);
    cr_assert_eq(rc, 0, "report: %d: %s", rc, out);
    /* eval's look-up by name reads the database (and then finds no checkpoint) */
    rc = run_gated("eval ro-run --lengths 16 --db '%s' --ckpt '%s'", t.db, t.dir, out, sizeof out);
    cr_assert_eq(rc, 2, "eval: %d: %s", rc, out);
    cr_assert(strstr(out, "no checkpoint"), "%s", out);
    cr_assert(same_bytes(before, n0, t.db), "a reading command changed the database");
    assert_no_side_files(t.db);
    free(before);

    /* a missing database: exit 2, nothing created */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.db", t.dir);
    static const char *const cmds[] = {
        "ls --db '%s'%s", "show x --db '%s'%s", "report --db '%s' --out '%s'",
        "eval abc --lengths 128 --db '%s'%s", "eval --sweep s --lengths 128 --db '%s'%s",
        "sweep experiments/smoke.yaml --dry-run --db '%s'%s",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        rc = run_gated(cmds[i], missing, strstr(cmds[i], "--out") ? rep : "", out, sizeof out);
        if (i == 5) /* a dry run of a new sweep is fine without a database */
            cr_assert_eq(rc, 0, "%s: %d: %s", cmds[i], rc, out);
        else {
            cr_assert_eq(rc, 2, "%s: %d: %s", cmds[i], rc, out);
            cr_assert(strstr(out, "no such database"), "%s: %s", cmds[i], out);
        }
        cr_assert(!exists(missing), "%s created the database", cmds[i]);
        assert_no_side_files(missing);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t.dir);
    cr_assert_eq(system(cmd), 0);
}

/* ------------------------------------------------------------------ */
/* claims                                                              */
/* ------------------------------------------------------------------ */

/* The sweep's rule for a run it planned as new: claim unless finished or
 * diverged.  Counts its calls and keeps the status it was shown. */
typedef struct {
    int calls;
    char seen[16];
} Decide;

static int decide_new(void *ctx, const StoreRunState *rs) {
    Decide *d = ctx;
    d->calls++;
    snprintf(d->seen, sizeof d->seen, "%s", rs->status ? rs->status : "-");
    return !(rs->status && (strcmp(rs->status, "finished") == 0 || strcmp(rs->status, "diverged") == 0));
}

Test(store, claims_are_atomic_and_never_restart_finished_or_live_runs) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db), *w = open_or_die(t.db); /* a sweep, and another worker */
    Provenance p = test_prov("h");
    char st[16], buf[16];
    Decide d = {0, ""};
    sqlite3 *db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", ARGS("run_claims")),
                 1);

    /* planned as new, then finished by the other worker before the claim:
     * not claimed, and the result is untouched */
    cr_assert_null(store_run_status(s, "r1", buf, sizeof buf));
    cr_assert_eq(store_run_begin(w, "r1", "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(w));
    cr_assert_eq(store_metric(w, "r1", "train_loss", NULL, 1, 2.5), 0);
    cr_assert_eq(store_run_end(w, "r1", "finished", NULL, -1), 0, "%s", store_errmsg(w));
    cr_assert_eq(store_run_claim(s, "r1", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIM_DECLINED, "%s",
                 store_errmsg(s));
    cr_assert_str_eq(st, "finished");
    cr_assert_eq(d.calls, 1);
    cr_assert_str_eq(d.seen, "finished");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE run_id = 'r1'", NULL), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    /* the default rule (no decide) declines it too */
    cr_assert_eq(store_run_claim(s, "r1", "A:1", NULL, NULL, st, sizeof st), STORE_CLAIM_DECLINED);

    /* an absent run is claimed once: another owner finds it live (and is
     * not asked to decide); the owner itself (its child) is accepted */
    cr_assert_eq(store_run_claim(s, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED, "%s",
                 store_errmsg(s));
    cr_assert_str_eq(st, "-");
    cr_assert_eq(d.calls, 2);
    char *o = q_text(db, "SELECT owner FROM run_claims WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(o, "A:1");
    free(o);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_str_eq(st, "running");
    cr_assert_eq(store_run_claim(w, "r2", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_eq(store_run_claim(w, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(d.calls, 2);

    /* 'running' with a fresh heartbeat is live without any claim; with a
     * stale one it reads killed and may be claimed */
    cr_assert_eq(store_run_begin(w, "r2", "two", "{}", 1, 1, &p, NULL), 0);
    raw_exec(db, "DELETE FROM run_claims");
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_eq(store_debug_set_heartbeat(w, "r2", (double)time(NULL) - 2 * STORE_STALE_SECONDS), 0);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    cr_assert_str_eq(st, "killed");
    cr_assert_str_eq(d.seen, "killed");

    /* a claim not refreshed for STORE_STALE_SECONDS is void; a refreshed one holds */
    raw_exec(db, "UPDATE run_claims SET claimed_at = claimed_at - 1000");
    cr_assert_eq(store_run_claim(s, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    raw_exec(db, "UPDATE run_claims SET claimed_at = claimed_at - 50");
    cr_assert_eq(store_claim_refresh(s, "A:1"), 0, "%s", store_errmsg(s));
    cr_assert_eq(q_int(db, "SELECT claimed_at > strftime('%s', 'now') - 5 FROM run_claims", NULL), 1);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);

    /* release: another owner's claim is left alone; the owner's ends the
     * run its dead child left 'running', and the claim */
    cr_assert_eq(store_run_release(w, "r2", "B:2", "killed", "not mine"), 0);
    char *stt = q_text(db, "SELECT status FROM runs WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(stt, "running");
    free(stt);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 1);
    cr_assert_eq(store_run_release(s, "r2", "A:1", "killed", "gone"), 1, "%s", store_errmsg(s));
    stt = q_text(db, "SELECT status || ':' || error_text FROM runs WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(stt, "killed:gone");
    free(stt);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    cr_assert_eq(store_run_release(s, "r2", "A:1", "finished", NULL), -1); /* only failed or killed */

    /* a claim ends with its run */
    cr_assert_eq(store_run_claim(s, "r3", "A:1", NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_begin(w, "r3", "three", "{}", 1, 1, &p, NULL), 0);
    cr_assert_eq(store_run_end(w, "r3", "finished", NULL, -1), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    cr_assert_eq(store_run_release(s, "r3", "A:1", "failed", "x"), 0); /* nothing left to release */
    stt = q_text(db, "SELECT status FROM runs WHERE run_id = 'r3'", NULL);
    cr_assert_str_eq(stt, "finished");
    free(stt);

    /* HOST:PID:START, and the older HOST:PID */
    char tok[300], host[256], me[256];
    long pid;
    long long start;
    store_owner_token(tok, sizeof tok);
    cr_assert_eq(store_owner_parse(tok, host, sizeof host, &pid, &start), 0, "%s", tok);
    sysinfo_host(me, sizeof me);
    cr_assert_str_eq(host, me, "%s", tok);
    cr_assert_eq(pid, (long)getpid(), "%s", tok);
    cr_assert_gt(start, 0, "%s: no start time", tok);
    cr_assert_eq(store_owner_parse("h.example:12", host, sizeof host, &pid, &start), 0);
    cr_assert(strcmp(host, "h.example") == 0 && pid == 12 && start == -1, "%s %ld %lld", host, pid, start);
    cr_assert_eq(store_owner_parse("nocolon", host, sizeof host, &pid, &start), -1);
    cr_assert_eq(store_owner_parse("h:x", host, sizeof host, &pid, &start), -1);

    raw_close(db);
    store_close(w);
    store_close(s);
    tmp_db_remove(&t);
}

/* A claim whose owner is a process of this host that has exited is dead at
 * once (a SIGKILLed `gated train` can be resumed right away), and so is the
 * 'running' row it left, in both token forms; so is one whose pid now
 * belongs to a process started at another time (the pid was reused); an
 * owner on another host keeps its claim until it goes stale. */
Test(store, a_claim_of_an_exited_process_is_not_live) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    char st[16], tok[300], host[256], dead[3][320], buf[16];
    long me;
    long long start;
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    store_owner_token(tok, sizeof tok);
    cr_assert_eq(store_owner_parse(tok, host, sizeof host, &me, &start), 0);
    snprintf(dead[0], sizeof dead[0], "%s:%ld", host, (long)child);               /* gone (older form) */
    snprintf(dead[1], sizeof dead[1], "%s:%ld:%lld", host, (long)child, start);   /* gone */
    snprintf(dead[2], sizeof dead[2], "%s:%ld:1", host, me);                       /* this pid, another start */
    for (int k = 0; k < 3; k++) {
        char id[8];
        snprintf(id, sizeof id, "d%d", k);
        cr_assert_eq(store_run_claim(s, id, dead[k], NULL, NULL, st, sizeof st), STORE_CLAIMED);
        cr_assert_eq(store_run_begin(s, id, "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(s));
        /* the row says running with a fresh heartbeat, but its owner is gone: read as killed at once */
        cr_assert_str_eq(store_run_status(s, id, buf, sizeof buf), "killed", "%s", dead[k]);
        cr_assert_eq(store_run_claim(s, id, "B:2", NULL, NULL, st, sizeof st), STORE_CLAIMED, "%s: %s", dead[k],
                     store_errmsg(s));
        cr_assert_str_eq(st, "killed", "%s", dead[k]);
    }
    /* this process itself, with its own start time: live */
    cr_assert_eq(store_run_claim(s, "r1", tok, NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_begin(s, "r1", "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(s));
    cr_assert_str_eq(store_run_status(s, "r1", buf, sizeof buf), "running");
    cr_assert_eq(store_run_claim(s, "r1", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    /* a live owner elsewhere (another host) is respected */
    cr_assert_eq(store_run_claim(s, "r2", "some-other-host:1", NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_claim(s, "r2", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    store_close(s);
    tmp_db_remove(&t);
}

/* Contents of a file that came from elsewhere (gated merge copies rows as
 * they are): negative histogram counts do not take `gated show` out of its
 * bar buffer, and a run id that is not 16 hex digits never becomes the
 * name of a checkpoint file `gated eval` opens. */
Test(store, untrusted_rows_stay_in_bounds) {
    const char *bin = getenv("GATED_BIN");
    if (!bin || access(bin, X_OK) != 0) cr_skip_test("GATED_BIN is not set");
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    long long counts[2] = {5, 10};
    OK(store_run_begin(s, "hist-run", "hist-run", "{}", 1, 1, &p, NULL));
    OK(store_histogram(s, "hist-run", "gate", "layer=0", 2, 0.0, 1.0, counts, 2));
    OK(store_run_end(s, "hist-run", "finished", NULL, -1));
    OK(store_run_begin(s, "../../../tmp/x", "escape", "{}", 1, 1, &p, NULL));
    OK(store_run_end(s, "../../../tmp/x", "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    raw_exec(db, "UPDATE histograms SET counts = '[-5, 10]'");
    raw_close(db);
    char out[8192];
    int rc = run_gated("show hist-run --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert(rc == 0 || rc == 2, "show: exit %d: %s", rc, out);
    cr_assert_eq(store_run_id_valid("0123456789abcdef"), 1);
    cr_assert_eq(store_run_id_valid("../../../tmp/x"), 0);
    cr_assert_eq(store_run_id_valid("0123456789ABCDEF"), 0);
    cr_assert_eq(store_run_id_valid("0123456789abcdef0"), 0);
    rc = run_gated("eval escape --db '%s' --lengths 64%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 2, "eval: exit %d: %s", rc, out);
    cr_assert(strstr(out, "is not 16 hex digits"), "%s", out);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* metric timestamps and schema 1                                      */
/* ------------------------------------------------------------------ */

/* Each metric row holds when store_metric was called (t, unix seconds);
 * merge carries it. */
Test(store, metric_rows_are_timestamped) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "timed", "{}", 1, 1, &p, NULL));
    struct timespec ts;
    cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    double before = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_metric(s, RID, "val_loss", NULL, 1, 2.4));
    OK(store_summary(s, RID, "val_loss", NULL, 2.4, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, 2.5, NULL));
    OK(store_flush(s));
    cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    double after = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    OK(store_run_end(s, RID, "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    sqlite3_stmt *st = raw_query(db, "SELECT key, t FROM metrics ORDER BY key", NULL);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        n++;
        cr_assert_eq(sqlite3_column_type(st, 1), SQLITE_FLOAT, "%s: no timestamp", sqlite3_column_text(st, 0));
        double v = sqlite3_column_double(st, 1);
        /* 1 ms of slack: sto_now and this clock_gettime round differently */
        cr_assert(v >= before - 1e-3 && v <= after + 1e-3, "%s: t %.6f outside [%.6f, %.6f]",
                  sqlite3_column_text(st, 0), v, before, after);
    }
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    cr_assert_eq(n, 2);
    raw_close(db);

    Store *d = open_or_die(u.db);
    char err[1024];
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    store_close(d);
    db = raw_open(u.db);
    char attach[256];
    snprintf(attach, sizeof attach, "ATTACH DATABASE '%s' AS a", t.db);
    raw_exec(db, attach);
    cr_assert_eq(q_int(db,
                       "SELECT count(*) FROM metrics m JOIN a.metrics o USING (run_id, key, context, step)"
                       " WHERE m.t IS o.t AND m.t IS NOT NULL",
                       NULL),
                 2, "merge lost or changed the timestamps");
    raw_close(db);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* The schema of version 1, as shipped: metrics without t, and the
 * per-update keys counted from 0. */
static const char V1_SQL[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE environments (env_id INTEGER PRIMARY KEY, env_hash TEXT NOT NULL UNIQUE, host TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL, compiler TEXT NOT NULL, cflags TEXT NOT NULL, openblas_version TEXT NOT NULL,"
    " sqlite_version TEXT NOT NULL, libyaml_version TEXT NOT NULL);"
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL"
    " CHECK (status IN ('running','finished','failed','diverged','killed')), config_json TEXT NOT NULL,"
    " seed INTEGER NOT NULL, threads INTEGER NOT NULL, code_version TEXT NOT NULL, git_dirty INTEGER,"
    " host TEXT NOT NULL, cpu_model TEXT NOT NULL, compiler TEXT NOT NULL, cflags TEXT NOT NULL,"
    " openblas_version TEXT NOT NULL, sqlite_version TEXT NOT NULL, libyaml_version TEXT NOT NULL, argv TEXT,"
    " started_at REAL NOT NULL, ended_at REAL, heartbeat_at REAL NOT NULL, error_text TEXT, diverged_step INTEGER,"
    " env_id INTEGER NOT NULL REFERENCES environments(env_id));"
    "CREATE INDEX runs_name ON runs(name);"
    "CREATE TABLE metrics (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', step INTEGER NOT NULL, value REAL, UNIQUE (run_id, key, context, step));"
    "CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);"
    "CREATE TABLE summary (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', value REAL, text TEXT, PRIMARY KEY (run_id, key, context));"
    "CREATE TABLE histograms (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', step INTEGER NOT NULL, lo REAL NOT NULL, hi REAL NOT NULL,"
    " counts TEXT NOT NULL, PRIMARY KEY (run_id, key, context, step));"
    "INSERT INTO meta VALUES ('schema_version', '1');"
    /* a run of 3 updates that diverged at its 4th (0-based step 3) */
    "INSERT INTO environments VALUES (1, 'e1', 'h', 'c', 'gcc', '-O2', 'ob', 'sq', 'y');"
    "INSERT INTO runs VALUES ('0123456789abcdef', 'old', 'diverged', '{}', 1, 1, 'unknown', NULL, 'h', 'c', 'gcc',"
    " '-O2', 'ob', 'sq', 'y', NULL, 1.0, 2.0, 2.0, NULL, 3, 1);"
    "INSERT INTO metrics VALUES ('0123456789abcdef', 'train_loss', '', 0, 3.0), ('0123456789abcdef', 'train_loss',"
    " '', 1, 2.5), ('0123456789abcdef', 'train_loss', '', 2, 2.0), ('0123456789abcdef', 'train_loss', '', 3, 30.0),"
    " ('0123456789abcdef', 'lr', '', 0, 0.1), ('0123456789abcdef', 'lr', '', 1, 0.2), ('0123456789abcdef', 'lr', '',"
    " 2, 0.3), ('0123456789abcdef', 'grad_norm', '', 2, 1.5), ('0123456789abcdef', 'spike', '', 2, 0.7),"
    " ('0123456789abcdef', 'val_loss', '', 3, 2.2), ('0123456789abcdef', 'f_attn', 'layer=0', 3, 0.4);"
    "INSERT INTO histograms VALUES ('0123456789abcdef', 'gate', 'layer=0', 3, 0, 1, '[1,2]');";

/* What a schema-1 run reads as in schema 2, through db (a connection whose
 * unqualified metrics / runs are the ones to check; what: for messages). */
static void assert_renumbered(sqlite3 *db, const char *what) {
    static const struct {
        const char *key, *want;
    } k[] = {{"train_loss", "1:3.0,2:2.5,3:2.0,4:30.0"},
             {"lr", "1:0.1,2:0.2,3:0.3"},
             {"grad_norm", "3:1.5"},
             {"spike", "3:0.7"},
             {"val_loss", "3:2.2"},
             {"f_attn", "3:0.4"}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        char *got = q_text(db,
                           "SELECT group_concat(step || ':' || value, ',') FROM"
                           " (SELECT step, value FROM metrics WHERE key = ?1 ORDER BY step)",
                           ARGS(k[i].key));
        cr_assert_str_eq(got, k[i].want, "%s: %s", what, k[i].key);
        free(got);
    }
    cr_assert_eq(q_int(db, "SELECT diverged_step FROM runs", NULL), 4, "%s: diverged_step", what);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE t IS NOT NULL", NULL), 0, "%s: old rows' t", what);
    cr_assert_eq(q_int(db, "SELECT step FROM histograms", NULL), 3, "%s: histogram step", what);
}

/* A database of schema 1 opens: read-only it is read as schema 2 and left
 * as it is; merged, it arrives renumbered; opened for writing, it is
 * migrated once (ALTER TABLE, old rows' t NULL). */
Test(store, schema_1_databases_open_merge_and_migrate) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(t.db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    raw_exec(db, V1_SQL);
    raw_close(db);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);

    /* read-only */
    Store *s = NULL;
    char err[1024];
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    assert_renumbered(store_db(s), "read-only");
    StoreRunList l;
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 1);
    cr_assert_eq(l.rows[0].steps, 4, "ls: %lld steps", l.rows[0].steps);
    store_run_list_free(&l);
    StoreRunInfo ri;
    OK(store_run_info(s, RID, &ri));
    cr_assert(ri.has_diverged && ri.diverged_step == 4, "show: diverged at %lld", ri.diverged_step);
    store_run_info_free(&ri);
    OK(store_metric(s, RID, "x", NULL, 1, 1.0));
    cr_assert_eq(store_flush(s), -1);
    cr_assert(strstr(store_errmsg(s), "readonly"), "%s", store_errmsg(s));
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open changed a schema-1 file");

    /* merged into a new database, twice */
    Store *d = open_or_die(u.db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "metrics"), 11);
    store_close(d);
    db = raw_open(u.db);
    assert_renumbered(db, "merged");
    raw_close(db);
    cr_assert(same_bytes(before, n0, t.db), "merge changed its input");

    /* opened for writing: migrated, then a new row gets its timestamp and a
     * second open changes nothing more */
    s = open_or_die(t.db);
    OK(store_metric(s, RID, "eval_loss", "len=64", 4, 2.1));
    store_close(s);
    store_close(open_or_die(t.db));
    db = raw_open(t.db);
    char *v = q_text(db, "SELECT value FROM meta WHERE key = ?1", ARGS("schema_version"));
    char want[16];
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    cr_assert_str_eq(v, want);
    free(v);
    raw_exec(db, "DELETE FROM metrics WHERE key = 'eval_loss' AND t IS NOT NULL");
    cr_assert_eq(sqlite3_changes(db), 1, "the new row has no timestamp");
    assert_renumbered(db, "migrated");
    raw_close(db);
    free(before);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* ------------------------------------------------------------------ */
/* code attestations (store_attest.c)                                  */
/* ------------------------------------------------------------------ */

static const char CODE_A[] = "1111111111111111111111111111111111111111", CODE_B[] = "2222222222222222222222222222222222222222";

/* A finished run RID recorded by code: train_loss at steps 1..3, at step 2
 * val_loss, a NaN f_attn (stored NULL) and a gate histogram. */
static void attest_fixture(Store *s, const char *code, double val_loss) {
    Provenance p = test_prov("h");
    p.code_version = code;
    OK(store_run_begin(s, RID, "r", "{\"seed\":1}", 1, 1, &p, NULL));
    for (int k = 1; k <= 3; k++)
        OK(store_metric(s, RID, "train_loss", NULL, k, 3.0 / k));
    OK(store_metric(s, RID, "val_loss", NULL, 2, val_loss));
    OK(store_metric(s, RID, "f_attn", "layer=0", 2, NAN));
    const long long counts[2] = {1, 2};
    OK(store_histogram(s, RID, "gate", "layer=0", 2, 0, 1, counts, 2));
    OK(store_summary(s, RID, "val_loss", NULL, val_loss, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, val_loss, NULL));
    OK(store_run_end(s, RID, "finished", NULL, -1));
}

/* Set metric (key, step) of RID in the database at path to value, bound. */
static void set_metric(const char *path, const char *key, long long step, double value) {
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = raw_query(db, "UPDATE metrics SET value = ?3 WHERE key = ?1 AND step = ?2", NULL);
    cr_assert_eq(sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC), SQLITE_OK);
    cr_assert_eq(sqlite3_bind_int64(st, 2, step), SQLITE_OK);
    cr_assert_eq(sqlite3_bind_double(st, 3, value), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_changes(db), 1, "%s step %lld", key, step);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    raw_close(db);
}

/* Compare RID in s with RID in the re-execution at path (steps <= 3). */
static StoreAttestCmp compare3(Store *s, const char *path) {
    StoreAttestCmp c;
    OK(store_attest_compare(s, RID, path, RID, 3, &c));
    return c;
}

/* The comparison is bit for bit over every metric and histogram row of the
 * window (not gated eval's, not later steps), NULL equal only to NULL; an
 * attestation names the build and holds only for the copy it compared. */
Test(store, attest_compares_bit_for_bit_and_holds_for_one_copy) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    Store *s = open_or_die(t.db), *v = open_or_die(u.db);
    attest_fixture(s, CODE_A, 2.5);
    attest_fixture(v, CODE_B, 2.5);
    /* only in the stored run: `gated eval` rows and a step past the window */
    OK(store_metric(s, RID, store_eval_keys[0], "split=val,len=64", 3, 1.25));
    OK(store_metric(s, RID, "infer_ppl", "split=val,len=64,quant=float", 3, 3.5)); /* gated eval --quant's */
    OK(store_metric(s, RID, "train_loss", NULL, 4, 9.0));
    OK(store_flush(s));
    store_close(v);

    StoreAttestCmp c = compare3(s, u.db);
    cr_assert(c.equal, "%s", c.first);
    cr_assert_eq(c.rows, 6, "3 train_loss, val_loss, f_attn, the histogram: %lld", c.rows);
    cr_assert_eq(c.steps, 3);
    cr_assert_str_eq(c.run_code, CODE_A);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 0);
    cr_assert_eq(store_attest_record(s, RID, "unknown", 0, "-O2", &c), -1, "only a commit attests");
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 1, "%s", store_errmsg(s));
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 1, "a second record replaces the first");
    cr_assert_eq(store_count_rows(s, "code_attest"), 1);
    StoreAttest at = {0, 0, 0};
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", &at), 1);
    cr_assert(at.steps == 3 && at.rows == 6 && at.verified_at > 0, "%lld %lld", at.steps, at.rows);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O0", NULL), 0, "other flags");
    cr_assert_eq(store_attest_get(s, RID, CODE_A, "-O2", NULL), 0, "other code");
    cr_assert_eq(store_attest_get(s, "ffffffffffffffff", CODE_B, "-O2", NULL), 0);

    /* one ulp apart */
    set_metric(u.db, "val_loss", 2, nextafter(2.5, 3.0));
    StoreAttestCmp d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_eq(d.ndiff, 1);
    cr_assert_str_eq(d.first, "metric val_loss step 2: stored 2.5 (0x4004000000000000), re-executed "
                              "2.5000000000000004 (0x4004000000000001)");
    cr_assert_eq(store_attest_record(s, RID, CODE_A, 0, "-O2", &d), -1, "a difference attests nothing");
    set_metric(u.db, "val_loss", 2, 2.5);
    cr_assert(compare3(s, u.db).equal);
    /* NULL (NaN) against a number, a row on one side only, histogram counts */
    set_metric(u.db, "f_attn", 2, 0.5);
    d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_str_eq(d.first, "metric f_attn [layer=0] step 2: stored NULL, re-executed 0.5 (0x3fe0000000000000)");
    set_metric(u.db, "f_attn", 2, NAN);
    sqlite3 *db = raw_open(u.db);
    raw_exec(db, "DELETE FROM metrics WHERE key = 'train_loss' AND step = 1;"
                 "UPDATE histograms SET counts = '[1,3]'");
    raw_close(db);
    d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_eq(d.ndiff, 2);
    cr_assert_str_eq(d.first, "metric train_loss step 1: stored only");
    db = raw_open(u.db);
    raw_exec(db, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, key, context, 1, 3.0"
                 " FROM metrics WHERE key = 'train_loss' AND step = 2");
    raw_close(db);
    d = compare3(s, u.db);
    cr_assert_eq(d.ndiff, 1);
    cr_assert_str_eq(d.first, "histogram gate [layer=0] step 2 counts: stored \"[1,2]\", re-executed \"[1,3]\"");
    db = raw_open(u.db);
    raw_exec(db, "UPDATE histograms SET counts = '[1,2]'");
    raw_close(db);
    cr_assert(compare3(s, u.db).equal);
    /* no such run in the re-execution's database */
    OK(store_attest_compare(s, RID, u.db, "ffffffffffffffff", 3, &d));
    cr_assert(!d.equal && strstr(d.first, "recorded no run ffffffffffffffff"), "%s", d.first);

    /* the run ends again (another copy): the attestation no longer holds,
     * and one compared before cannot be recorded */
    db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET ended_at = ended_at + 1");
    raw_close(db);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 0);
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 0);
    /* a run begun again drops its attestations */
    db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET ended_at = ended_at - 1");
    raw_close(db);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 1);
    Provenance p = test_prov("h");
    OK(store_run_begin(s, RID, "r", "{\"seed\":1}", 1, 1, &p, NULL));
    cr_assert_eq(store_count_rows(s, "code_attest"), 0);
    cr_assert_eq(store_attest_compare(s, RID, u.db, RID, 3, &d), -1, "a running run is no result");
    store_close(s);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* A database holding RID finished by CODE_A and attested under CODE_B
 * (compared with a copy of itself). */
static void attested_db(const TmpDb *t, const TmpDb *u) {
    Store *s = open_or_die(t->db), *v = open_or_die(u->db);
    attest_fixture(s, CODE_A, 2.5);
    attest_fixture(v, CODE_B, 2.5);
    store_close(v);
    StoreAttestCmp c = compare3(s, u->db);
    cr_assert(c.equal, "%s", c.first);
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 0, "-O2", &c), 1, "%s", store_errmsg(s));
    store_close(s);
}

/* gated merge carries an attestation with the copy of the run it holds
 * for, idempotently; not one for another copy. */
Test(store, merge_carries_attestations) {
    TmpDb t, u, m;
    tmp_db(&t);
    tmp_db(&u);
    tmp_db(&m);
    attested_db(&t, &u);
    Store *d = open_or_die(m.db);
    char err[1024];
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_attest_get(d, RID, CODE_B, "-O2", NULL), 1);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "code_attest"), 1);
    store_close(d);

    /* the output's own copy wins (finished later): the input's attestation
     * is of another copy and stays out */
    tmp_db_remove(&m);
    tmp_db(&m);
    d = open_or_die(m.db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    sqlite3 *db = raw_open(m.db);
    raw_exec(db, "DELETE FROM code_attest; UPDATE runs SET ended_at = ended_at + 10");
    raw_close(db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "code_attest"), 0);
    store_close(d);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
    tmp_db_remove(&m);
}

/* An attestation from an untrusted database is data: one row that is not
 * well formed refuses the whole input, nothing merged. */
Test(store, merge_refuses_malformed_attestations) {
    static const struct {
        const char *sql, *want;
    } bad[] = {
        {"UPDATE code_attest SET code_version = '--output=x'",
         "code_version is not a commit (40 lowercase hex digits) (the text \"--output=x\")"},
        {"UPDATE code_attest SET code_version = 'unknown'", "code_version is not a commit"},
        {"UPDATE code_attest SET run_id = 'x' || char(27) || '[2J'",
         "run_id is not a run id (16 lowercase hex digits) (the text \"x\\x1b[2J\")"},
        {"UPDATE code_attest SET cflags = char(10)", "cflags \"\\x0a\" contains a control"},
        {"UPDATE code_attest SET run_code_version = x'41'", "run_code_version is not printable text (a blob of 1 byte)"},
        {"UPDATE code_attest SET rows_checked = 'many'", "rows_checked is not a positive count (the text \"many\")"},
        {"UPDATE code_attest SET rows_checked = 0", "rows_checked is not a positive count (the integer 0)"},
        {"UPDATE code_attest SET steps_checked = -1", "steps_checked is not a count (the integer -1)"},
        {"UPDATE code_attest SET git_dirty = 2", "git_dirty is not 0 or 1"},
        {"UPDATE code_attest SET run_ended_at = 'yesterday'", "run_ended_at is not a time (the text \"yesterday\")"},
        {"UPDATE code_attest SET verified_at = 1e999", "verified_at is not a time (the real inf)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        TmpDb t, u, m;
        tmp_db(&t);
        tmp_db(&u);
        tmp_db(&m);
        attested_db(&t, &u);
        sqlite3 *db = raw_open(t.db);
        raw_exec(db, bad[i].sql);
        raw_close(db);
        Store *d = open_or_die(m.db);
        char err[1024];
        cr_assert_eq(merge_from(d, t.db, err, sizeof err), -2, "%s", bad[i].sql);
        cr_assert(strstr(err, "refused, nothing merged: code_attest row 1 (run "), "%s: %s", bad[i].sql, err);
        cr_assert(strstr(err, bad[i].want), "%s: %s", bad[i].sql, err);
        cr_assert_eq(store_count_rows(d, "runs"), 0);
        cr_assert_eq(store_count_rows(d, "code_attest"), 0);
        store_close(d);
        tmp_db_remove(&t);
        tmp_db_remove(&u);
        tmp_db_remove(&m);
    }
}
