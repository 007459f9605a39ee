/*
 * test_store_guard.c — what a database must be (core/run/store_guard.c,
 * issue 39): ":memory:", "file:" URIs and paths that are not regular
 * files refused as --db (exit 2, nothing made beside them); a database
 * with a trigger, or a view, table or index the store does not define,
 * refused by every writer before anything is written (the trigger never
 * fires); a WAL database in a folder the reader cannot write (another
 * user's: run as nobody when root, else a 0555 folder) read by ls, show,
 * export and report.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/store.h"
#include "store_fx.h"
#include "testutil.h"

static const char TINY[] = "model: {vocab_size: 257, d_model: 32, n_layer: 1, n_head: 4, d_ff: 48, seq_len: 16}\n"
                           "train: {batch: 2, steps: 2, warmup: 1, eval_every: 2, eval_windows: 2, seed: 7}\n"
                           "data: {corpus: synthetic}\n";

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* gated train TINY (DIR/t.yaml) --db db in dir; exit status, output in *out. */
static int train_into(const char *dir, const char *db, char **out) {
    char y[160];
    snprintf(y, sizeof y, "%s/t.yaml", dir);
    put(y, TINY);
    const char *args[] = {"train", "t.yaml", "--db", db, NULL};
    return test_gated(dir, args, NULL, 100, out);
}

Test(store_guard, memory_uris_and_non_regular_paths_are_refused, .timeout = 120) {
    TmpDb t;
    tmp_db(&t);
    char fifo[128], err[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo", t.dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int nulljournal = path_exists("/dev/null-journal");
    const char *bad[] = {":memory:", "file:x.db?mode=memory", "file::memory:?cache=shared", "/dev/null", fifo, t.dir};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Store *s = (Store *)0x1;
        cr_expect_eq(store_open(&s, bad[i], err, sizeof err), -2, "%s: %s", bad[i], err);
        cr_expect_null(s);
        cr_expect(strncmp(err, bad[i], strlen(bad[i])) == 0, "the message does not name %s: %s", bad[i], err);
        cr_expect_eq(store_open_ro(&s, bad[i], err, sizeof err), -2, "read-only %s: %s", bad[i], err);
        char *out = NULL;
        cr_expect_eq(train_into(t.dir, bad[i], &out), 2, "train --db %s: %s", bad[i], out);
        cr_expect(!strstr(out, "step 2/2"), "train --db %s trained: %s", bad[i], out);
        free(out);
    }
    if (!nulljournal) cr_expect(!path_exists("/dev/null-journal"), "/dev/null-journal was made");
    cr_expect(!path_exists("x.db") && !path_exists("file:x.db?mode=memory"), "a file was made from the URI");
    /* "./:memory:" is a file name: it works */
    Store *s = NULL;
    char p[160];
    snprintf(p, sizeof p, "%s/:memory:", t.dir);
    cr_expect_eq(store_open(&s, p, err, sizeof err), 0, "%s", err);
    store_close(s);
    tmp_db_remove(&t);
}

/* Each statement plants one object; every writer then refuses the file
 * (-2, the object named), and the file's rows stay as they were. */
Test(store_guard, objects_the_schema_does_not_define_are_refused, .timeout = 120) {
    static const char *const plant[][2] = {
        {"CREATE TRIGGER t AFTER INSERT ON summary BEGIN UPDATE summary SET value = 0.001; END", "trigger 't'"},
        {"CREATE TRIGGER u BEFORE INSERT ON metrics BEGIN SELECT 1; END", "trigger 'u'"},
        {"CREATE VIEW mine AS SELECT 1", "view 'mine'"},
        {"CREATE UNIQUE INDEX one_per_key ON metrics(run_id, key, context, step, t)", "index 'one_per_key'"},
        {"CREATE TABLE extra (x)", "table 'extra'"},
    };
    for (size_t i = 0; i < sizeof plant / sizeof plant[0]; i++) {
        TmpDb t;
        tmp_db(&t);
        char *out = NULL;
        cr_assert_eq(train_into(t.dir, "s.db", &out), 0, "%s", out);
        free(out);
        snprintf(t.db, sizeof t.db, "%s/s.db", t.dir);
        sqlite3 *db = raw_open(t.db);
        raw_exec(db, plant[i][0]);
        long long rows = q_int(db, "SELECT count(*) FROM metrics", NULL);
        double vl = (double)q_int(db, "SELECT CAST(value * 1e6 AS INTEGER) FROM summary WHERE key = 'val_loss'", NULL);
        raw_close(db);
        Store *s = NULL;
        char err[1024];
        cr_expect_eq(store_open(&s, t.db, err, sizeof err), -2, "%s: opened", plant[i][0]);
        cr_expect(strstr(err, plant[i][1]) && strstr(err, "refused"), "%s", err);
        /* another seed: a new run whose summary insert would fire the trigger */
        char y[160];
        snprintf(y, sizeof y, "%s/t.yaml", t.dir);
        const char *args[] = {"train", "t.yaml", "--db", "s.db", "--set", "train.seed=8", NULL};
        cr_expect_eq(test_gated(t.dir, args, NULL, 100, &out), 2, "%s", out);
        free(out);
        db = raw_open(t.db);
        cr_expect_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), rows, "rows were written");
        cr_expect_eq((double)q_int(db, "SELECT CAST(value * 1e6 AS INTEGER) FROM summary WHERE key = 'val_loss'",
                                   NULL), vl, "the trigger fired");
        raw_close(db);
        /* reading is still fine */
        cr_expect_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
        store_close(s);
        tmp_db_remove(&t);
    }
}

/* `gated CMD --db DB ...` as the user nobody when root (else as this
 * user, the folder made 0555); the exit status. */
static int as_reader(const char *dir, const char *const *args) {
    const char *bin = gated_bin();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                               setresuid(65534, 65534, 65534) != 0))
            _exit(125);
        if (chdir(dir) != 0) _exit(126);
        char *argv[16];
        int n = 0;
        argv[n++] = (char *)bin;
        for (; args[n - 1] && n < 15; n++) argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1);
        alarm(60);
        execv(bin, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(store_guard, a_wal_database_reads_in_a_folder_the_reader_cannot_write, .timeout = 120) {
    TmpDb t;
    tmp_db(&t);
    char *out = NULL, ro[128], rep[128];
    snprintf(ro, sizeof ro, "%s/ro", t.dir);
    snprintf(rep, sizeof rep, "%s/rep", t.dir);
    cr_assert_eq(mkdir(ro, 0755), 0);
    cr_assert_eq(mkdir(rep, 0777), 0);
    cr_assert_eq(chmod(rep, 0777), 0);
    cr_assert_eq(train_into(t.dir, "ro/s.db", &out), 0, "%s", out);
    free(out);
    char p[160];
    snprintf(p, sizeof p, "%s/s.db", ro);
    sqlite3 *db = raw_open(p);
    char *mode = q_text(db, "PRAGMA journal_mode", NULL);
    cr_assert_str_eq(mode, "wal", "the store no longer writes WAL: this test needs a WAL file");
    free(mode);
    char *id = q_text(db, "SELECT run_id FROM runs", NULL);
    raw_close(db);
    assert_no_side_files(p);
    cr_assert_eq(chmod(t.dir, 0755), 0);
    cr_assert_eq(chmod(p, 0644), 0);
    cr_assert_eq(chmod(ro, 0555), 0);
    const char *ls[] = {"ls", "--db", "ro/s.db", NULL};
    const char *show[] = {"show", id, "--db", "ro/s.db", NULL};
    const char *exp[] = {"export", "--db", "ro/s.db", NULL};
    const char *report[] = {"report", "--db", "ro/s.db", "--out", "rep", "--no-plots", NULL};
    const char *const *cmds[] = {ls, show, exp, report};
    for (int i = 0; i < 4; i++) cr_expect_eq(as_reader(t.dir, cmds[i]), 0, "gated %s in a read-only folder", cmds[i][0]);
    assert_no_side_files(p);
    free(id);
    cr_assert_eq(chmod(ro, 0755), 0);
    tmp_db_remove(&t);
}

/* A value that is not a number where one is read (issue 39, item 5): in
 * runs, summary, histograms and sweep_runs the database is refused at
 * open, naming the table, run, key and value (exit 2 for ls, show,
 * export, report); a metric value that is not a number reads as missing
 * (null in show --json), never 0. */
Test(store_guard, values_that_are_not_numbers_are_never_read_as_0, .timeout = 120) {
    static const char *const damage[][2] = {
        {"UPDATE summary SET value = 'abc' WHERE key = 'val_loss'", "(key val_loss): value is text 'abc'"},
        {"UPDATE summary SET value = X'0102' WHERE key = 'val_loss'", "(key val_loss): value is blob"},
        {"UPDATE runs SET seed = 'seven'", "runs row of run"},
        {"UPDATE runs SET started_at = 'yesterday'", "started_at is text 'yesterday', not a number"},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        TmpDb t;
        tmp_db(&t);
        char *out = NULL;
        cr_assert_eq(train_into(t.dir, "s.db", &out), 0, "%s", out);
        free(out);
        snprintf(t.db, sizeof t.db, "%s/s.db", t.dir);
        sqlite3 *db = raw_open(t.db);
        raw_exec(db, damage[i][0]);
        raw_close(db);
        Store *s = NULL;
        char err[1024];
        cr_expect_eq(store_open_ro(&s, t.db, err, sizeof err), -2, "%s: read", damage[i][0]);
        cr_expect(strstr(err, damage[i][1]) && strstr(err, "damaged"), "%s: %s", damage[i][0], err);
        const char *ls[] = {"ls", "--db", "s.db", NULL};
        const char *exp[] = {"export", "--db", "s.db", NULL};
        const char *rep[] = {"report", "--db", "s.db", "--out", "rep", "--no-plots", NULL};
        const char *const *cmds[] = {ls, exp, rep};
        for (int c = 0; c < 3; c++) {
            cr_expect_eq(test_gated(t.dir, cmds[c], NULL, 60, &out), 2, "%s: gated %s: %s", damage[i][0],
                         cmds[c][0], out);
            cr_expect(strstr(out, damage[i][1]), "gated %s: %s", cmds[c][0], out);
            cr_expect(!strstr(out, "0.0000"), "gated %s printed a 0: %s", cmds[c][0], out);
            free(out);
        }
        tmp_db_remove(&t);
    }
    /* a metric: missing, not 0 */
    TmpDb t;
    tmp_db(&t);
    char *out = NULL;
    cr_assert_eq(train_into(t.dir, "s.db", &out), 0, "%s", out);
    free(out);
    snprintf(t.db, sizeof t.db, "%s/s.db", t.dir);
    sqlite3 *db = raw_open(t.db);
    raw_exec(db, "UPDATE metrics SET value = 'abc' WHERE key = 'val_loss'");
    char *id = q_text(db, "SELECT run_id FROM runs", NULL);
    raw_close(db);
    const char *show[] = {"show", id, "--db", "s.db", "--json", NULL};
    cr_expect_eq(test_gated(t.dir, show, NULL, 60, &out), 0, "%s", out);
    const char *v = strstr(out, "\"series\"");
    cr_assert_not_null(v, "%s", out);
    v = strstr(v, "\"val_loss\"");
    cr_assert_not_null(v, "%s", out);
    const char *lv = strstr(v, "\"last_value\"");
    cr_assert_not_null(lv, "%s", out);
    cr_expect(strncmp(lv, "\"last_value\": null", 18) == 0 || strncmp(lv, "\"last_value\":null", 17) == 0,
              "a metric of 'abc' read as %.30s", lv);
    free(out);
    free(id);
    tmp_db_remove(&t);
}

/* Errors about the output database in words and the exit status of the
 * table in docs/cli.md (issue 39, item 10): train on a full disk (a tmpfs,
 * root only) exits 1 saying the disk is full; train while another process
 * holds the database's write lock exits 1 saying so; merge into OUT of an
 * IN that is OUT by another name (a hard link) is refused, exit 2, before
 * any wait; none of them quotes SQL. */
Test(store_guard, output_database_errors_in_words_with_the_documented_status, .timeout = 120) {
    TmpDb t;
    tmp_db(&t);
    char *out = NULL, mnt[128], p[160];
    /* locked */
    cr_assert_eq(train_into(t.dir, "s.db", &out), 0, "%s", out);
    free(out);
    snprintf(p, sizeof p, "%s/s.db", t.dir);
    sqlite3 *db = raw_open(p);
    raw_exec(db, "BEGIN EXCLUSIVE");
    const char *again[] = {"train", "t.yaml", "--db", "s.db", "--set", "train.seed=9", NULL};
    cr_expect_eq(test_gated(t.dir, again, NULL, 60, &out), 1, "%s", out);
    cr_expect(strstr(out, "locked by another process") && !strstr(out, "BEGIN"), "%s", out);
    free(out);
    raw_exec(db, "ROLLBACK");
    raw_close(db);
    /* OUT hard-linked as IN */
    char ln[160];
    snprintf(ln, sizeof ln, "%s/same.db", t.dir);
    cr_assert_eq(link(p, ln), 0);
    const char *merge[] = {"merge", "s.db", "same.db", NULL};
    cr_expect_eq(test_gated(t.dir, merge, NULL, 60, &out), 2, "%s", out);
    cr_expect(strstr(out, "is the output database") && !strstr(out, "BEGIN"), "%s", out);
    free(out);
    /* a full disk */
    snprintf(mnt, sizeof mnt, "%s/small", t.dir);
    cr_assert_eq(mkdir(mnt, 0777), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=96k") != 0) {
        cr_log_warn("mount tmpfs: %s (needs root): the full-disk case is not run", strerror(errno));
    } else {
        const char *full[] = {"train", "t.yaml", "--db", "small/s.db", NULL};
        cr_expect_eq(test_gated(t.dir, full, NULL, 60, &out), 1, "%s", out);
        cr_expect(strstr(out, "the disk is full") && !strstr(out, "COMMIT\""), "%s", out);
        free(out);
        cr_assert_eq(umount(mnt), 0);
    }
    tmp_db_remove(&t);
}
