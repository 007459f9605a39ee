/*
 * test_ckpt_owner.c — a checkpoint belongs to its database (issue 39,
 * item 2): checkpoints are kept by database (DBDIR/checkpoints/DB_ID/
 * RUN_ID.ckpt), and every reader — train --resume, gated eval (and its
 * --quant / --drop), train.init_from by run name — refuses one that
 * another database's run wrote (run/checkpoint.h, checkpoint_check).
 * Runs `gated` ($GATED_BIN) on the synthetic corpus: 12 steps of
 * experiments/tiny.yaml, one thread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

/* `gated ARGS...` in dir: experiments/tiny.yaml's 12 steps when the first
 * argument is "train" (extra arguments after), else as given; output into
 * *out; the exit status. */
static int gated_in(const char *dir, const char *const *extra, char **out) {
    char cfg[4096];
    cr_assert_not_null(realpath("experiments/tiny.yaml", cfg), "run from the repository root");
    const char *args[40];
    int k = 0;
    if (strcmp(extra[0], "train") == 0) {
        const char *t[] = {"train", cfg, "--set", "model.vocab_size=257", "--set", "data.corpus=synthetic", "--set",
                           "train.steps=12", "--set", "train.eval_every=4", "--set", "threads=1"};
        for (size_t i = 0; i < sizeof t / sizeof *t; i++) args[k++] = t[i];
        extra++;
    }
    for (int i = 0; extra[i] && k < 39; i++) args[k++] = extra[i];
    args[k] = NULL;
    return test_gated(dir, args, NULL, 90, out);
}

/* One integer of a query on db (-1 when no row). */
static long long q_int(const char *db, const char *sql) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* The run id of db's run named name into id. */
static void run_named(const char *db, const char *name, char id[17]) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT run_id FROM runs WHERE name = ?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no run %s in %s", name, db);
    snprintf(id, 17, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

static void ok(const char *dir, const char *const *args) {
    char *out;
    int rc = gated_in(dir, args, &out);
    cr_assert_eq(rc, 0, "%s: exit %d: %s", args[0], rc, out);
    free(out);
}

/* gated eval of run r into db (val split, length 16, 2 windows): the exit
 * status, output into *out. */
static int eval_into(const char *dir, const char *db, const char *r, char **out) {
    const char *args[] = {"eval", r, "--db", db, "--lengths", "16", "--windows", "2", NULL};
    return gated_in(dir, args, out);
}

/* The issue's reproducer: run R trained into a.db; the same R trained into
 * b.db in the same directory and stopped after 5 steps.  b's checkpoint no
 * longer replaces a's: eval R --db a.db evaluates a's step-12 weights.  And
 * a checkpoint b wrote, found where a's would be (the path used before,
 * checkpoints/RUN.ckpt), is refused with exit 2 and nothing stored; the
 * same for eval --quant. */
Test(ckpt_owner, eval_refuses_a_checkpoint_of_another_databases_run, .timeout = 240) {
    char dir[64], a[128], ck[256], ckb[256], ckdir[128], cmd[1024], id[17], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", dir);
    const char *ta[] = {"train", "--db", "a.db", "--name", "R", NULL};
    const char *tb[] = {"train", "--db", "b.db", "--name", "R", "--stop-after", "5", NULL};
    ok(dir, ta);
    ok(dir, tb);
    run_named(a, "R", id);
    test_ckpt_path(a, ckdir, id, ck, sizeof ck);
    char bdb[128];
    snprintf(bdb, sizeof bdb, "%s/b.db", dir);
    test_ckpt_path(bdb, ckdir, id, ckb, sizeof ckb);
    cr_assert_str_neq(ck, ckb, "two databases share a checkpoint path");
    cr_assert_eq(access(ck, F_OK), 0, "a.db's checkpoint is gone: %s", ck);
    cr_assert_eq(access(ckb, F_OK), 0, "%s", ckb);

    int rc = eval_into(dir, "a.db", "R", &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    cr_assert_eq(q_int(a, "SELECT max(step) FROM metrics WHERE key = 'eval_loss'"), 12,
                 "not evaluated at a.db's final step");

    /* b's step-5 checkpoint where a.db's was kept before */
    snprintf(cmd, sizeof cmd, "mv '%s' '%s.away' && cp '%s' '%s/%s.ckpt'", ck, ck, ckb, ckdir, id);
    cr_assert_eq(system(cmd), 0);
    const char *sql = "SELECT count(*) FROM metrics WHERE key LIKE 'eval_%' OR key LIKE 'infer_%'";
    long long before = q_int(a, sql);
    rc = eval_into(dir, "a.db", "R", &out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "written by another database (id "), "%s", out);
    free(out);
    const char *quant[] = {"eval", "R", "--db", "a.db", "--quant", "w8", "--windows", "2", NULL};
    rc = gated_in(dir, quant, &out);
    cr_assert_eq(rc, 2, "--quant: exit %d: %s", rc, out);
    cr_assert(strstr(out, "written by another database (id "), "%s", out);
    free(out);
    /* the file named itself: the same check */
    char file[300];
    snprintf(file, sizeof file, "%s/%s.ckpt", ckdir, id);
    rc = eval_into(dir, "a.db", file, &out);
    cr_assert_eq(rc, 2, "a file: exit %d: %s", rc, out);
    cr_assert(strstr(out, "written by another database (id "), "%s", out);
    free(out);
    cr_assert_eq(q_int(a, sql), before, "something was stored");

    /* a child that starts from R by name (train.init_from) in a.db */
    const char *child[] = {"train", "--db", "a.db", "--name", "child", "--set", "train.init_from=R", NULL};
    rc = gated_in(dir, child, &out);
    cr_assert_eq(rc, 2, "init_from: exit %d: %s", rc, out);
    cr_assert(strstr(out, "written by another database (id "), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Two databases in one directory each keep their own resume point: b.db's
 * run of the same config (finished) leaves a.db's checkpoint of its
 * stopped run as it was, and a.db's resume goes on from step 6. */
Test(ckpt_owner, two_databases_in_one_directory_keep_their_resume_points, .timeout = 240) {
    char dir[64], a[128], cmd[256], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.db", dir);
    const char *ta[] = {"train", "--db", "a.db", "--stop-after", "6", NULL};
    const char *tb[] = {"train", "--db", "b.db", NULL};
    const char *ra[] = {"train", "--db", "a.db", "--resume", NULL};
    ok(dir, ta);
    ok(dir, tb);
    int rc = gated_in(dir, ra, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "resuming ") && strstr(out, " after step 6"), "%s", out);
    free(out);
    cr_assert_eq(q_int(a, "SELECT count(*) FROM metrics WHERE key = 'train_loss'"), 12);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* After `gated merge a.db c.db`, a.db holds c's run Q: its checkpoint,
 * kept by c.db, is found and evaluated (a merged database's runs keep their
 * checkpoints); but a stale checkpoint of a merged database (b.db's run R
 * stopped at step 5, where a.db's R is finished at 12) is refused. */
Test(ckpt_owner, a_merged_databases_checkpoints_are_read_when_they_are_the_runs, .timeout = 300) {
    char dir[64], a[128], ck[256], ckdir[128], cmd[1024], id[17], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", dir);
    const char *ta[] = {"train", "--db", "a.db", "--name", "R", NULL};
    const char *tb[] = {"train", "--db", "b.db", "--name", "R", "--stop-after", "5", NULL};
    const char *tc[] = {"train", "--db", "c.db", "--name", "Q", "--set", "train.seed=8", NULL};
    const char *merge[] = {"merge", "a.db", "b.db", "c.db", NULL};
    ok(dir, ta);
    ok(dir, tb);
    ok(dir, tc);
    ok(dir, merge);
    int rc = eval_into(dir, "a.db", "Q", &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    run_named(a, "Q", id);
    cr_assert_eq(q_int(a, "SELECT max(step) FROM metrics WHERE key = 'eval_loss'"), 12);
    /* a.db's own checkpoint of R gone: b.db's (merged, stale) is found */
    run_named(a, "R", id);
    test_ckpt_path(a, ckdir, id, ck, sizeof ck);
    cr_assert_eq(unlink(ck), 0, "%s: %s", ck, strerror(errno));
    rc = eval_into(dir, "a.db", "R", &out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "at step 5 written by database ") && strstr(out, "where the run ends at step 12"), "%s",
              out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* One text of a query on db ("" when no row or NULL) into out. */
static char *q_text(const char *db, const char *sql, char *out, size_t cap) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    const unsigned char *t = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    snprintf(out, cap, "%s", t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/* Issue 39, item 6: a final checkpoint that cannot be written (here the
 * checkpoint directory, ck, is a regular file: every write there fails) is
 * a failure: exit 1, the run `failed` with the reason in error_text, never
 * `finished` without a checkpoint; its results are stored.  Once the
 * directory can be written, --resume makes the run again and it ends
 * finished with its checkpoint, which eval reads. */
Test(ckpt_final, a_final_checkpoint_that_cannot_be_written_fails_the_run, .timeout = 240) {
    char dir[64], a[128], ckdir[128], ck[256], cmd[512], buf[512], id[17], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(ckdir, sizeof ckdir, "%s/ck", dir);
    FILE *f = fopen(ckdir, "w");
    cr_assert_not_null(f);
    fclose(f);
    const char *tr[] = {"train", "--db", "a.db", "--ckpt", "ck", "--name", "R", NULL};
    int rc = gated_in(dir, tr, &out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "the final checkpoint could not be written: "), "%s", out);
    cr_assert(strstr(out, "the run is failed"), "%s", out);
    free(out);
    cr_assert_str_eq(q_text(a, "SELECT status FROM runs WHERE name = 'R'", buf, sizeof buf), "failed");
    cr_assert(strstr(q_text(a, "SELECT error_text FROM runs WHERE name = 'R'", buf, sizeof buf),
                     "the final checkpoint could not be written"),
              "%s", buf);
    cr_assert_eq(q_int(a, "SELECT count(*) FROM summary s JOIN runs r USING (run_id) WHERE r.name = 'R' AND"
                          " s.key = 'val_loss'"),
                 1, "the results are not stored");
    /* writable again: --resume makes it again */
    cr_assert_eq(unlink(ckdir), 0);
    const char *re[] = {"train", "--db", "a.db", "--ckpt", "ck", "--name", "R", "--resume", NULL};
    rc = gated_in(dir, re, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    cr_assert_str_eq(q_text(a, "SELECT status FROM runs WHERE name = 'R'", buf, sizeof buf), "finished");
    cr_assert_str_eq(q_text(a, "SELECT coalesce(error_text, '') FROM runs WHERE name = 'R'", buf, sizeof buf), "");
    run_named(a, "R", id);
    test_ckpt_path(a, ckdir, id, ck, sizeof ck);
    cr_assert_eq(access(ck, F_OK), 0, "%s", ck);
    const char *ev[] = {"eval", "R", "--db", "a.db", "--ckpt", "ck", "--lengths", "16", "--windows", "2", NULL};
    rc = gated_in(dir, ev, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
