/*
 * store_fx.c — what the store suites (test_store*.c) share: scratch
 * databases, raw SQLite access beside the store's API (to read what it
 * wrote and to plant what it never would), `gated ls` / `gated show` run
 * through $GATED_BIN, and checks that a database was left as it was.
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

const char RID[] = "0123456789abcdef";

/* A fresh directory holding the path of a (not yet existing) results.db. */
void tmp_db(TmpDb *t) {
    strcpy(t->dir, "/tmp/test_store_XXXXXX");
    cr_assert(mkdtemp(t->dir), "mkdtemp: %s", strerror(errno));
    snprintf(t->db, sizeof t->db, "%s/results.db", t->dir);
}

void tmp_db_remove(TmpDb *t) {
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s%s", t->db, sfx[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

Store *open_or_die(const char *path) {
    Store *s = NULL;
    char err[512];
    int rc = store_open(&s, path, err, sizeof err);
    cr_assert_eq(rc, 0, "store_open(%s): %s", path, err);
    cr_assert_not_null(s);
    return s;
}

/* A fixed provenance, so environments dedup deterministically. */
Provenance test_prov(const char *host) {
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

sqlite3 *raw_open(const char *path) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK, "raw open %s",
                 path);
    return db;
}

void raw_close(sqlite3 *db) { cr_assert_eq(sqlite3_close(db), SQLITE_OK); }

/* Prepare sql and bind text parameters ?1..?n (NULL-terminated list). */
sqlite3_stmt *raw_query(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "prepare %s: %s", sql,
                 sqlite3_errmsg(db));
    for (int i = 0; args && args[i]; i++)
        cr_assert_eq(sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT), SQLITE_OK);
    return st;
}

/* The single integer a query returns. */
long long q_int(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = raw_query(db, sql, args);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    long long v = sqlite3_column_int64(st, 0);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

/* The single text a query returns (malloc'd; NULL for SQL NULL). */
char *q_text(sqlite3 *db, const char *sql, const char *const *args) {
    sqlite3_stmt *st = raw_query(db, sql, args);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *v = t ? strdup((const char *)t) : NULL;
    cr_assert(!t || v);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

void raw_exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
}

unsigned char *read_all(const char *path, size_t *n) {
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

int path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* `$GATED_BIN CMD [ARG] --db DB` (the test is skipped without GATED_BIN),
 * run directly, not through a shell, so ARG may hold any byte: its stdout
 * into *out (malloc'd), its stderr into err; the exit status. */
int gated_run(const char *cmd, const char *arg, const char *db, char **out, char *err, size_t cap) {
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
char *capture_ls(const char *db) {
    char *out, err[1024];
    int rc = gated_run("ls", NULL, db, &out, err, sizeof err);
    cr_assert_eq(rc, 0, "ls: exit %d: %s", rc, err);
    cr_assert_str_eq(err, "", "ls wrote to stderr");
    return out;
}

/* `gated show ARG --db DB`: its output, or NULL (having asserted that it
 * exited 2 and printed nothing on stdout) with its message in err. */
char *capture_show(const char *db, const char *arg, char *err, size_t cap) {
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
const StoreRunRow *list_find(const StoreRunList *l, const char *id) {
    for (int i = 0; i < l->n; i++)
        if (l->rows[i].run_id && strcmp(l->rows[i].run_id, id) == 0) return &l->rows[i];
    cr_assert_fail("run %s is not listed", id);
    return NULL;
}

/* `gated CMD...` with output into out; the exit status (-1: no exit). */
int run_gated(const char *cmd_fmt, const char *a1, const char *a2, char *out, size_t cap) {
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

int same_bytes(const unsigned char *a, size_t na, const char *path) {
    size_t nb;
    unsigned char *b = read_all(path, &nb);
    int same = na == nb && memcmp(a, b, na) == 0;
    free(b);
    return same;
}

void assert_no_side_files(const char *db) {
    static const char *const sfx[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", db, sfx[i]);
        cr_assert(!path_exists(p), "%s was created", p);
    }
}

/* ------------------------------------------------------------------ */
/* read-only access                                                    */
/* ------------------------------------------------------------------ */

/* A database with one finished run and a sweep, switched to a rollback
 * journal (as one written by an older tool, or copied); RID is the run. */
void rollback_db(const char *path, int with_sweeps) {
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

/* Everything ls and show read, through a read-only store (RID, "ro-run"). */
void ro_read_all(Store *s) {
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

/* True if text holds a byte below 0x20 other than a newline, or 0x7f. */
int has_raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return 1;
    return 0;
}

int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}
