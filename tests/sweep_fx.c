/*
 * sweep_fx.c — what the sweep suites (test_sweep*.c) share: scratch
 * directories with the base run config, loading sweep files, running
 * `gated` (GATED_BIN) and reading the database it wrote.
 *
 * The end-to-end tests run tiny models on the synthetic corpus from a
 * temporary directory; every run records the code version of the build
 * (run/codever.h), so a commit made meanwhile cannot turn a skip into a
 * rerun.  Which other code versions and compiler flags keep a result valid
 * is tested on codever_same_results itself, with a made-up git answer and
 * with a scratch git repository.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/codever.h"
#include "run/config.h"
#include "run/store.h"
#include "lab/merge/merge.h"
#include "testutil.h"
#include "lab/sweep/sweep.h"
#include "util/util.h"
#include "sweep_fx.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* The base run config of the tests: a tiny model on the synthetic corpus. */
const char BASE_YAML[] = "model:\n"
                                "  vocab_size: 257\n"
                                "  d_model: 32\n"
                                "  n_layer: 1\n"
                                "  n_head: 4\n"
                                "  d_ff: 48\n"
                                "  seq_len: 16\n"
                                "train:\n"
                                "  batch: 2\n"
                                "  steps: 4\n"
                                "  warmup: 1\n"
                                "  eval_every: 2\n"
                                "  eval_windows: 2\n"
                                "  seed: 7\n"
                                "data:\n"
                                "  corpus: synthetic\n";

/* A fresh directory holding base.yaml. */
void tmp_dir(Tmp *t) {
    strcpy(t->dir, "/tmp/test_sweep_XXXXXX");
    cr_assert(mkdtemp(t->dir), "mkdtemp: %s", strerror(errno));
    char p[128];
    snprintf(p, sizeof p, "%s/base.yaml", t->dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(BASE_YAML, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

void tmp_rm(Tmp *t) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    cr_assert_eq(system(cmd), 0);
}

/* Write text to DIR/name; the path goes to path (>= 128 bytes). */
void write_file(const Tmp *t, const char *name, const char *text, char *path) {
    snprintf(path, 128, "%s/%s", t->dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert(fputs(text, f) >= 0);
    cr_assert_eq(fclose(f), 0);
}

/* sweep_load of text (as DIR/s.yaml); rc, and the path in path. */
int load_text(const Tmp *t, const char *text, Sweep *s, ConfigError *e, char *path) {
    write_file(t, "s.yaml", text, path);
    return sweep_load(s, path, e);
}

Sweep load_ok(const Tmp *t, const char *text) {
    Sweep s;
    ConfigError e;
    char path[128];
    int rc = load_text(t, text, &s, &e, path);
    cr_assert_eq(rc, 0, "sweep_load: %s\n--- file:\n%s", e.msg, text);
    return s;
}

/* The overrides of run r joined with ' '. */
void joined(const SweepRun *r, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->noverrides && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? " " : "", r->overrides[i]);
}

const char *sweep_gated_bin(void) {
    const char *bin = getenv("GATED_BIN");
    struct stat st;
    if (!bin || !*bin)
        cr_skip_test("GATED_BIN is not set");
    if (stat(bin, &st) != 0)
        cr_skip_test("GATED_BIN=%s does not exist", bin);
    cr_assert(strchr(bin, '\'') == NULL, "GATED_BIN contains a quote: %s", bin);
    return bin;
}

/* Run a shell command; its stdout + stderr into out (cap bytes); the exit
 * status is returned (-1 if it did not exit normally). */
int sh(const char *cmd, char *out, size_t cap) {
    size_t fl = strlen(cmd) + 16;
    char *full = malloc(fl);
    cr_assert_not_null(full);
    snprintf(full, fl, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    cr_assert_not_null(p, "popen %s", cmd);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) {
    }
    int st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last non-empty line of text. */
const char *last_line(char *text) {
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        text[--n] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

/* Absolute path of experiments/smoke.yaml (tests run from the repository root). */
void smoke_path(char *out) {
    cr_assert_not_null(realpath("experiments/smoke.yaml", out),
                       "experiments/smoke.yaml: %s (run the tests from the repository root)", strerror(errno));
}

sqlite3 *db_open(const char *path) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "open %s", path);
    return db;
}

long long db_int(const char *path, const char *sql) {
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* group_concat of one text query's rows (ordered by the query). */
void db_text(const char *path, const char *sql, char *out, size_t cap) {
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    size_t o = 0;
    out[0] = '\0';
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW && o < cap) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? ";" : "", t ? (const char *)t : "NULL");
    }
    cr_assert_eq(r, SQLITE_DONE, "%s", sql);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Change a database with one statement (as another tool would). */
void db_exec(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

int db_exec1(const char *path, const char *sql, const char *arg) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    int n = sqlite3_changes(db);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* ------------------------------------------------------------------ */
/* end to end                                                          */
/* ------------------------------------------------------------------ */

/* Run `gated ARGS` in dir; output into out; exit status returned. */
int gated(const char *bin, const Tmp *t, const char *args, char *out, size_t cap) {
    size_t cap2 = strlen(t->dir) + strlen(bin) + strlen(args) + 16;
    char *cmd = malloc(cap2);
    cr_assert_not_null(cmd);
    snprintf(cmd, cap2, "cd '%s' && '%s' %s", t->dir, bin, args);
    int rc = sh(cmd, out, cap);
    free(cmd);
    return rc;
}
