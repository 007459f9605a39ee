/*
 * test_sweep_code.c — which stored results `gated sweep` keeps: a sweep run
 * twice runs everything once; results stay valid for the same
 * result-computing code and flags (codever_same_results, with a made-up
 * git answer and with a scratch git repository); --verify-code keeps a
 * result that re-executes bitwise equal (and its checkpoint when the whole
 * run was re-executed), reruns one an ulp off or missing a row, and does
 * not re-execute a run of another OpenBLAS build, nor one that another
 * process has claimed.  Helpers: sweep_fx.c.
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

Test(sweep, smoke_twice_runs_everything_once) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], db[160];
    smoke_path(smoke);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    snprintf(args, sizeof args, "sweep '%s' --db r.db --jobs 2", smoke);

    int rc = gated(bin, &t, args, out, sizeof out);
    cr_assert_eq(rc, 0, "first sweep: exit %d\n%s", rc, out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 6 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 6);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM sweep_runs WHERE sweep = 'smoke'"), 6);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM sweep_runs s JOIN runs r USING (run_id)"), 6);
    char txt[2048];
    db_text(db, "SELECT label || ':' || seed || ':' || idx || ':' || is_baseline FROM sweep_runs ORDER BY idx", txt,
           sizeof txt);
    cr_assert_str_eq(txt, "baseline:1:0:1;baseline:2:1:1;G1-elementwise:1:2:0;G1-elementwise:2:3:0;"
                          "G1-headwise:1:4:0;G1-headwise:2:5:0");
    db_text(db, "SELECT r.name FROM sweep_runs s JOIN runs r USING (run_id) ORDER BY s.idx", txt, sizeof txt);
    cr_assert_str_eq(txt, "smoke-baseline-s1;smoke-baseline-s2;smoke-G1-elementwise-s1;smoke-G1-elementwise-s2;"
                          "smoke-G1-headwise-s1;smoke-G1-headwise-s2");
    long long metrics = db_int(db, "SELECT count(*) FROM metrics");
    cr_assert_gt(metrics, 0);

    rc = gated(bin, &t, args, out, sizeof out);
    cr_assert_eq(rc, 0, "second sweep: exit %d\n%s", rc, out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 0 finished, 0 diverged, 0 failed, 6 skipped", "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM metrics"), metrics);

    /* --dry-run shows the stored status; --index runs exactly one run (here with --force) */
    snprintf(args, sizeof args, "sweep '%s' --db r.db --dry-run", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "    3  finished  skip"), "%s", out);
    cr_assert_not_null(strstr(out, "smoke-G1-elementwise-s2"), "%s", out);
    cr_assert_not_null(strstr(out, "model.gate.granularity=elementwise train.seed=2"), "%s", out);
    snprintf(args, sizeof args, "sweep '%s' --db r.db --index 3 --force", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);

    /* a result recorded by another code version is run again */
    db_exec(db, "UPDATE runs SET code_version = 'deadbeef' WHERE name = 'smoke-G1-headwise-s1'");
    snprintf(args, sizeof args, "sweep '%s' --db r.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 1 finished, 0 diverged, 0 failed, 5 skipped", "%s", out);
    char want[128];
    snprintf(want, sizeof want, "finished by code deadbeef, now %.12s: rerun", codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    /* ... and so is one of this code version built with other flags */
    db_exec(db, "UPDATE runs SET cflags = '-O0 -g' WHERE name = 'smoke-G1-headwise-s2'");
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 1 finished, 0 diverged, 0 failed, 5 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "finished with other compiler flags: rerun"), "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE cflags = '-O0 -g'"), 0);
    tmp_rm(&t);
}

/* A made-up git: 1 (unchanged) or 0, and what it was asked. */
typedef struct {
    int answer, calls;
    char paths[256];
} FakeGit;

static int fake_unchanged(void *ctx, const char *a, const char *b, const char *const *paths) {
    FakeGit *g = ctx;
    (void)a, (void)b;
    g->calls++;
    size_t n = 0;
    g->paths[0] = '\0';
    for (int i = 0; paths[i]; i++) n += (size_t)snprintf(g->paths + n, sizeof g->paths - n, "%s%s", i ? " " : "", paths[i]);
    return g->answer;
}

/* A result stands for another build when the flags are equal and the code
 * is the same, or when git finds nothing changed under core/util, core/nn
 * and core/run between the two commits. */
Test(sweep, results_stay_valid_for_the_same_result_code_and_flags) {
    const char *A = "1111111111111111111111111111111111111111", *B = "2222222222222222222222222222222222222222";
    FakeGit g = {1, 0, ""};
    cr_assert_eq(codever_same_results(A, "-O2", A, "-O2", fake_unchanged, &g), 1);
    cr_assert_eq(g.calls, 0, "the same commit needs no diff");
    cr_assert_eq(codever_same_results("unknown", "-O2", "unknown", "-O2", fake_unchanged, &g), 1);
    cr_assert_eq(codever_same_results(A, "-O2", B, "-O2", fake_unchanged, &g), 1, "unchanged result code");
    cr_assert_eq(g.calls, 1);
    cr_assert_str_eq(g.paths, "core/util core/nn core/run");
    g.answer = 0;
    cr_assert_eq(codever_same_results(A, "-O2", B, "-O2", fake_unchanged, &g), 0, "changed result code");
    /* other flags: rerun, whatever git says, even at the same commit */
    g.answer = 1;
    g.calls = 0;
    cr_assert_eq(codever_same_results(A, "-O0", A, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(A, "-O0", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(A, NULL, A, "-O2", fake_unchanged, &g), 0);
    /* only commits reach git (never an option, never "unknown") */
    cr_assert_eq(codever_same_results("unknown", "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results("--output=x", "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(NULL, "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(g.calls, 0);
}

/* codever_git_unchanged on a scratch repository: commits that differ only
 * in docs or the CLI leave results valid, one in core/nn does not. */
Test(sweep, git_diff_looks_at_the_result_code_only) {
    Tmp t;
    tmp_dir(&t);
    char cmd[PATH_MAX + 1024], out[4096];
    const char *git = "git -c user.email=t@example.com -c user.name=t -c commit.gpgsign=false";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && git init -q && mkdir -p core/run core/nn cli && echo 1 > core/run/a.c && echo 1 > core/nn/b.c"
             " && echo a > README.md && echo 1 > cli/main.c && git add -A && %s commit -qm A && git rev-parse HEAD"
             " && echo b > README.md && %s commit -qam B && git rev-parse HEAD"
             " && echo 2 > cli/main.c && %s commit -qam C && git rev-parse HEAD"
             " && echo 2 > core/nn/b.c && %s commit -qam D && git rev-parse HEAD",
             t.dir, git, git, git, git);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    char c[4][41];
    cr_assert_eq(sscanf(out, "%40s %40s %40s %40s", c[0], c[1], c[2], c[3]), 4, "%s", out);
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[1], codever_result_paths), 1, "a README change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[2], codever_result_paths), 1, "a CLI change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[2], c[3], codever_result_paths), 0, "a core/nn change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[3], codever_result_paths), 0);
    static const char *const no_such = "3333333333333333333333333333333333333333";
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], no_such, codever_result_paths), 0, "an unknown commit");
    cr_assert_eq(codever_same_results(c[0], "-O2", c[2], "-O2", codever_git_unchanged, t.dir), 1);
    cr_assert_eq(codever_same_results(c[0], "-O2", c[3], "-O2", codever_git_unchanged, t.dir), 0);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* --verify-code                                                       */
/* ------------------------------------------------------------------ */

/* Two runs of BASE_YAML (4 steps, the first evaluation after step 2, so
 * --verify-code re-executes 2 steps). */
static const char VERIFY_SWEEP[] = "name: vc\nbase: base.yaml\nvariants:\n  - label: a\nseeds: [1, 2]\n";
static const char OTHER_CODE[] = "1111111111111111111111111111111111111111";

/* A metric of run `name` (exactly one row), read or written with bound values. */
static double metric_get(const char *db, const char *name, const char *key, long long step) {
    sqlite3 *h = db_open(db);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT m.value FROM metrics m JOIN runs r USING (run_id)"
                                    " WHERE r.name = ?1 AND m.key = ?2 AND m.step = ?3",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s %s %lld", name, key, step);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void metric_set(const char *db, const char *name, const char *key, long long step, double v) {
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "UPDATE metrics SET value = ?4 WHERE key = ?2 AND step = ?3"
                                    " AND run_id = (SELECT run_id FROM runs WHERE name = ?1)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    sqlite3_bind_double(st, 4, v);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_changes(h), 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Results recorded by other code (here a made-up commit) whose first steps
 * this build re-executes bitwise equal are attested and kept, by this sweep
 * and the next ones; a database of schema 1 is compared after the store's
 * migration, so its 0-based per-update steps line up. */
Test(sweep, verify_code_keeps_results_that_re_execute_bitwise_equal, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], want[512], txt[2048], cmd[512];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    long long metrics = db_int(db, "SELECT count(*) FROM metrics");
    char ended[256];
    db_text(db, "SELECT ended_at FROM runs ORDER BY run_id", ended, sizeof ended);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    /* past the 2 steps verified, nothing is looked at */
    metric_set(db, "vc-a-s2", "train_loss", 4, metric_get(db, "vc-a-s2", "train_loss", 4) + 1);

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --dry-run", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "    0  finished  verify  "), "%s", out);
    snprintf(want, sizeof want,
             "verify vc-a-s1 (index 0): finished by code 111111111111, now %.12s: verify its first 2 steps, rerun if "
             "they differ",
             codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM code_attest"), 0, "--dry-run wrote");

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 2 steps, "), "%s", out);
    snprintf(want, sizeof want, "skip vc-a-s2 (index 1): finished by code 111111111111, now %.12s, verified equal under "
                                "%.12s (2 steps, ", codever_commit(), codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM code_attest WHERE steps_checked = 2 AND rows_checked > 10"), 2);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM metrics"), metrics);
    snprintf(cmd, sizeof cmd, "SELECT count(*) FROM runs WHERE code_version = '%s'", OTHER_CODE);
    cr_assert_eq(db_int(db, cmd), 2, "a run was rerun");
    db_text(db, "SELECT ended_at FROM runs ORDER BY run_id", txt, sizeof txt);
    cr_assert_str_eq(txt, ended);
    /* the scratch database is gone, the log stays */
    snprintf(cmd, sizeof cmd, "cd '%s' && ls && ls logs", t.dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "verify-"), "%s", out);
    cr_assert_not_null(strstr(out, "vc-a-s1.verify.log"), "%s", out);
    /* a plain sweep honours the attestations */
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified equal under"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);

    /* the same runs in a database of schema 1, recorded by yet other code */
    char v1[160];
    snprintf(v1, sizeof v1, "%s/v1.db", t.dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", db, v1);
    cr_assert_eq(system(cmd), 0);
    db_exec(v1, "PRAGMA journal_mode=DELETE");
    /* schema 1 had neither code_attest, metrics.t nor the views (which read metrics.t) */
    db_exec(v1, "DROP VIEW final_metrics; DROP VIEW sweep_metrics; DROP VIEW run_metrics;"
                "DROP TABLE code_attest; ALTER TABLE metrics DROP COLUMN t;"
                "UPDATE metrics SET step = -step WHERE key IN ('train_loss', 'lr', 'grad_norm', 'spike');"
                "UPDATE metrics SET step = -step - 1 WHERE step < 0;"
                "UPDATE runs SET code_version = '2222222222222222222222222222222222222222';"
                "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    db_text(v1, "SELECT group_concat(step) FROM (SELECT step FROM metrics JOIN runs USING (run_id)"
               " WHERE name = 'vc-a-s1' AND key = 'train_loss' ORDER BY step)", txt, sizeof txt);
    cr_assert_str_eq(txt, "0,1,2,3");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db v1.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    cr_assert_eq(db_int(v1, "SELECT count(*) FROM code_attest WHERE steps_checked = 2"), 2, "%s", out);
    db_text(v1, "SELECT group_concat(step) FROM (SELECT step FROM metrics JOIN runs USING (run_id)"
               " WHERE name = 'vc-a-s1' AND key = 'train_loss' ORDER BY step)", txt, sizeof txt);
    cr_assert_str_eq(txt, "1,2,3,4");
    tmp_rm(&t);
}

/* A stored value one ulp away from what this build computes, or a row the
 * re-execution has and the stored run lacks: nothing attested, the first
 * difference printed, the run rerun as without --verify-code. */
Test(sweep, verify_code_reruns_a_result_one_ulp_off_or_missing_a_row, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], cmd[256];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    double v = metric_get(db, "vc-a-s1", "val_loss", 2);
    metric_set(db, "vc-a-s1", "val_loss", 2, nextafter(v, INFINITY));
    db_exec(db, "DELETE FROM metrics WHERE key = 'lr' AND step = 1"
                " AND run_id = (SELECT run_id FROM runs WHERE name = 'vc-a-s2')");

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1 (index 0): differs: metric val_loss step 2: stored "), "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s2 (index 1): differs: metric lr step 1: re-executed only (1 row "
                                   "differs, "),
                       "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 2 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM code_attest"), 0);
    double now = metric_get(db, "vc-a-s1", "val_loss", 2);
    cr_assert_eq(memcmp(&now, &v, sizeof v), 0, "the rerun gives %.17g, first %.17g", now, v);
    snprintf(cmd, sizeof cmd, "SELECT count(*) FROM runs WHERE code_version = '%s'", codever_commit());
    cr_assert_eq(db_int(db, cmd), 2);
    tmp_rm(&t);
}

/* A whole-run verification (--verify-steps = train.steps) leaves its final
 * checkpoint where the run's own would be (so a database brought from
 * elsewhere gets checkpoints for `gated eval`), replacing a file there (here
 * one of an earlier step, as a stopped rerun leaves). */
Test(sweep, verify_code_of_the_whole_run_keeps_its_checkpoint, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], id1[64], id2[64], c1[300], c2[300], cmd[4096];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    db_text(db, "SELECT run_id FROM runs WHERE name = 'vc-a-s1'", id1, sizeof id1);
    db_text(db, "SELECT run_id FROM runs WHERE name = 'vc-a-s2'", id2, sizeof id2);
    char ckdir[200];
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", t.dir);
    test_ckpt_path(db, ckdir, id1, c1, sizeof c1);
    test_ckpt_path(db, ckdir, id2, c2, sizeof c2);
    cr_assert_eq(access(c1, F_OK), 0, "%s", c1);
    /* s1 has no checkpoint, s2 a wrong one (s1's) */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.orig' && rm '%s' && cp '%s' '%s.orig' && cp '%s.orig' '%s'", c1, c1, c1,
             c2, c2, c1, c2);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    /* a verification of part of the run keeps nothing */
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --index 0", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 2 steps, "), "%s", out);
    cr_assert_neq(access(c1, F_OK), 0, "a 2-step re-execution left a checkpoint");
    db_exec(db, "DELETE FROM code_attest");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --verify-steps 4", out, sizeof out), 0, "%s",
                 out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 4 steps, "), "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1: the whole run was re-executed: its final checkpoint is now "), "%s",
                       out);
    cr_assert_not_null(strstr(out, " (replacing the file there)"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    /* each kept checkpoint is the run's own but for the training wall time
     * (one 8-byte double) and the checksum after it (the last 8 bytes):
     * the offsets of the other differing bytes span at most 8 */
    for (int k = 0; k < 2; k++) {
        const char *c = k ? c2 : c1;
        snprintf(cmd, sizeof cmd,
                 "n=$(stat -c %%s '%s'); test \"$n\" = \"$(stat -c %%s '%s.orig')\" || echo size;"
                 " cmp -l '%s' '%s.orig' | awk -v n=\"$n\" '$1 <= n - 8 {if (!lo) lo = $1; hi = $1}"
                 " END {print hi - lo}'",
                 c, c, c, c);
        cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
        cr_assert(atoi(out) >= 0 && atoi(out) < 8 && !strstr(out, "size"), "%s: differing bytes span %s", c, out);
    }
    tmp_rm(&t);
}

/* A run stored as made with another OpenBLAS build (here a hostile text, as
 * a merged database may hold) is not re-executed: its bits cannot be
 * reproduced here, so the reason is printed, escaped, and the run is rerun. */
Test(sweep, verify_code_does_not_re_execute_a_run_of_another_openblas_build, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], cmd[512];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    db_exec(db, "UPDATE runs SET openblas_version = 'OpenBLAS 9.9 DYNAMIC_ARCH Haswell' || char(10) || '!id'"
                " WHERE name = 'vc-a-s1'");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1 (index 0): made with another OpenBLAS build (\"OpenBLAS 9.9 "
                                   "DYNAMIC_ARCH Haswell\\x0a!id\"; this one: "),
                       "%s", out);
    cr_assert_null(strstr(out, "\n!id"), "an unescaped newline reached the terminal: %s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s2 (index 1): 2 steps, "), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 1 finished, 0 diverged, 0 failed, 1 skipped", "%s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && ls logs", t.dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "vc-a-s1.verify.log"), "it was re-executed: %s", out);
    tmp_rm(&t);
}

/* A run that another process has claimed (here this test, alive, as a
 * second sweep verifying the same database would) is neither verified nor
 * rerun: two sweeps given one run to verify re-execute it once.  Once the
 * claim is gone the next --verify-code verifies it. */
Test(sweep, verify_code_leaves_a_run_claimed_by_another_process, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], cmd[512], tok[300];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    store_owner_token(tok, sizeof tok);
    cr_assert_eq(db_exec1(db,
                          "INSERT INTO run_claims SELECT run_id, ?1, (julianday('now') - 2440587.5) * 86400"
                          " FROM runs WHERE name = 'vc-a-s1'",
                          tok),
                 1);

    int rc = gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1 (index 0): not now, claimed by another process"), "%s", out);
    cr_assert_not_null(strstr(out, "skip vc-a-s1 (index 0): running elsewhere"), "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s2 (index 1): 2 steps, "), "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM code_attest"), 1, "%s", out);
    snprintf(cmd, sizeof cmd, "SELECT count(*) FROM runs WHERE code_version = '%s'", OTHER_CODE);
    cr_assert_eq(db_int(db, cmd), 2, "a run was rerun: %s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM run_claims"), 1, "the other process's claim was touched: %s", out);
    cr_assert_neq(rc, 0, "a run left to another process: not everything done here: %s", out);

    db_exec(db, "DELETE FROM run_claims");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 2 steps, "), "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM code_attest"), 2, "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM run_claims"), 0, "a claim was left behind: %s", out);
    tmp_rm(&t);
}
