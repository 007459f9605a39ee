/*
 * test_sweep.c — the sweep and merge commands end to end with GATED_BIN:
 * failures / divergence / --fail-fast / --rerun-failed, concurrent sweeps
 * of one database, a run finished elsewhere, a killed run resumed,
 * sharding (--shard, GNU parallel, a Slurm array script) plus `gated merge`
 * against one unsharded sweep, SIGINT, merge idempotence and its choice
 * between two copies of a run, the store's sweep records, and hostile
 * labels and names.  The other sweep suites: test_sweep_file.c (sweep
 * files), test_sweep_code.c (which results are kept, --verify-code); their
 * helpers are sweep_fx.c's.
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

Test(sweep, failures_divergence_fail_fast_and_rerun_failed) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    /* b cannot train (train refuses a vocabulary below 257), c diverges at once */
    write_file(&t, "f.yaml",
               "name: f\nbase: base.yaml\nvariants:\n"
               "  - {label: a}\n"
               "  - {label: b, set: {model.vocab_size: 64}}\n"
               "  - {label: c, set: {train.diverge_loss: 1}}\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep f.yaml --db r.db --jobs 2", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep f: 3 runs: 1 finished, 1 diverged, 1 failed, 0 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "FAILED f-b-s7"), "%s", out);
    cr_assert_not_null(strstr(out, "model.vocab_size: must be at least 257"), "the log tail: %s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs"), 2); /* b never started */

    /* again: a and c are results; b runs (and fails) again */
    cr_assert_eq(gated(bin, &t, "sweep f.yaml --db r.db", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep f: 3 runs: 0 finished, 0 diverged, 1 failed, 2 skipped", "%s", out);

    /* --fail-fast: nothing starts after the first failure */
    write_file(&t, "ff.yaml",
               "name: ff\nbase: base.yaml\nvariants:\n"
               "  - {label: b, set: {model.vocab_size: 64}}\n"
               "  - {label: a, set: {train.lr: 0.001}}\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep ff.yaml --db r.db --fail-fast", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep ff: 2 runs: 0 finished, 0 diverged, 1 failed, 1 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "--fail-fast: 1 run not started"), "%s", out);

    /* a run recorded as failed is skipped (exit 1) unless --rerun-failed */
    db_exec(db, "UPDATE runs SET status = 'failed' WHERE name = 'f-a-s7'");
    write_file(&t, "a.yaml", "name: a\nbase: base.yaml\nvariants: [{label: a}]\nrun_name: f-a-s7\n", path);
    cr_assert_eq(gated(bin, &t, "sweep a.yaml --db r.db", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep a: 1 runs: 0 finished, 0 diverged, 0 failed, 1 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "1 failed run skipped (pass --rerun-failed to rerun)"), "%s", out);
    cr_assert_eq(gated(bin, &t, "sweep a.yaml --db r.db --rerun-failed", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep a: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE name = 'f-a-s7' AND status = 'finished'"), 1);
    /* the run is a member of both sweeps */
    cr_assert_eq(db_int(db, "SELECT count(DISTINCT sweep) FROM sweep_runs WHERE run_id ="
                           " (SELECT run_id FROM runs WHERE name = 'f-a-s7')"),
                 2);
    tmp_rm(&t);
}

/* The sum of the numbers just before each occurrence of word in text
 * (" finished," in "...: 3 finished, ..." adds 3), and the number of lines
 * beginning with start. */
static int sum_before(const char *text, const char *word) {
    int sum = 0;
    for (const char *p = text; (p = strstr(p, word)) != NULL; p++) {
        const char *q = p;
        while (q > text && q[-1] == ' ')
            q--;
        const char *e = q;
        while (q > text && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q < e)
            sum += atoi(q);
    }
    return sum;
}

static int count_lines_starting(const char *text, const char *start) {
    int n = 0;
    size_t l = strlen(start);
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, start, l) == 0)
            n++;
    }
    return n;
}

/* Two sweeps of one file started together on one database: every run is
 * trained exactly once (one "start", one set of steps), every run is
 * finished, no run fails; a sweep that left a run to the other while it was
 * running there says so and exits 1 (its results were not all there when
 * it ended), else 0. */
Test(sweep, concurrent_identical_sweeps_train_each_run_once, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], cmd[2 * PATH_MAX + 512], out[32768], db[160], a[160], b[160];
    smoke_path(smoke);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    snprintf(a, sizeof a, "%s/a.out", t.dir);
    snprintf(b, sizeof b, "%s/b.out", t.dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { '%s' sweep '%s' --db r.db > a.out 2>&1; echo \"rc $?\" >> a.out; } & "
             "{ cd '%s' && '%s' sweep '%s' --db r.db > b.out 2>&1; echo \"rc $?\" >> b.out; } & wait",
             t.dir, bin, smoke, t.dir, bin, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    char *ta = test_read_file(a, NULL), *tb = test_read_file(b, NULL);
    cr_assert(ta && tb);
    snprintf(out, sizeof out, "--- sweep 1:\n%s--- sweep 2:\n%s", ta, tb);
    for (int k = 0; k < 2; k++) {
        const char *o = k ? tb : ta;
        int live = strstr(o, " running in another process, not waited for\n") != NULL;
        cr_assert(strstr(o, live ? "\nrc 1\n" : "\nrc 0\n"), "%s", out);
        cr_assert_null(strstr(o, "FAILED"), "%s", out);
    }
    int starts = count_lines_starting(ta, "start ") + count_lines_starting(tb, "start ");
    cr_assert_eq(starts, 6, "%d runs started for 6 runs:\n%s", starts, out);
    cr_assert_eq(sum_before(ta, " finished,") + sum_before(tb, " finished,"), 6, "%s", out);
    cr_assert_eq(sum_before(ta, " skipped\n") + sum_before(tb, " skipped\n"), 6, "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 6, "%s", out);
    /* each run's 12 steps, once each, from one attempt */
    cr_assert_eq(db_int(db, "SELECT count(*) FROM (SELECT run_id FROM metrics WHERE key = 'train_loss'"
                           " GROUP BY run_id HAVING count(*) = 12 AND count(DISTINCT step) = 12"
                           " AND min(step) = 1 AND max(step) = 12)"),
                 6, "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM run_claims"), 0, "claims left behind");
    free(ta);
    free(tb);
    tmp_rm(&t);
}

/* A sweep that planned a run as new does not start it when another worker
 * finished it meanwhile.  The sweep is stopped (SIGSTOP) as soon as it has
 * printed its plan, before its first run can end (a FIFO as that run's log
 * held it before, but a sweep now replaces whatever lies at logs/NAME.log:
 * util/outfile.h); the second run is finished meanwhile by another sweep. */
/* The first sweep of the test below: killed by the test's fini should an
 * assertion end the test while it is stopped. */
static pid_t held_sweep = -1;
static void kill_held_sweep(void) {
    if (held_sweep > 0 && kill(held_sweep, SIGKILL) == 0) waitpid(held_sweep, NULL, 0);
    held_sweep = -1;
}

Test(sweep, run_finished_elsewhere_after_planning_is_not_restarted, .timeout = 120, .fini = kill_held_sweep) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    write_file(&t, "p.yaml", "name: p\nbase: base.yaml\nvariants: [{label: a}, {label: b, set: {train.lr: 0.002}}]\n",
               path);
    /* the first sweep, its output through a pipe */
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (chdir(t.dir) != 0 || dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0) _exit(126);
        close(pfd[0]);
        execl(bin, bin, "sweep", "p.yaml", "--db", "r.db", (char *)NULL);
        _exit(127);
    }
    held_sweep = pid;
    close(pfd[1]);
    FILE *x = fdopen(pfd[0], "r");
    cr_assert_not_null(x);
    char line[1024], all[8192] = "";
    int planned = 0;
    while (!planned && fgets(line, sizeof line, x)) {
        strncat(all, line, sizeof all - strlen(all) - 1);
        planned = strncmp(line, "sweep p: 2 of 2 runs selected, 2 to run", 39) == 0;
    }
    /* held right after its plan, at a moment it holds no write lock on the
     * database (else continued and stopped again): run a (a child process,
     * at least 0.1 s of training) may go on, the sweep cannot reach b */
    cr_assert(planned, "the sweep did not plan both runs:\n%s", all);
    for (int tries = 0;; tries++) {
        int st;
        cr_assert_eq(kill(pid, SIGSTOP), 0);
        cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
        cr_assert(WIFSTOPPED(st), "the sweep ended early:\n%s", all);
        sqlite3 *h;
        cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
        int rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(h);
        if (rc == SQLITE_OK) break;
        cr_assert_lt(tries, 2000, "the database stayed locked");
        cr_assert_eq(kill(pid, SIGCONT), 0);
        usleep(1000);
    }

    /* the other worker: run b (index 1) to the end */
    cr_assert_eq(gated(bin, &t, "sweep p.yaml --db r.db --index 1", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep p: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    char before[256], after[256];
    db_text(db, "SELECT started_at || ':' || ended_at || ':' || (SELECT count(*) FROM metrics m"
               " WHERE m.run_id = r.run_id) FROM runs r WHERE name = 'p-b-s7'",
           before, sizeof before);

    /* let the first sweep go on: it must leave b alone */
    cr_assert_eq(kill(pid, SIGCONT), 0);
    while (fgets(line, sizeof line, x))
        strncat(all, line, sizeof all - strlen(all) - 1);
    fclose(x);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    held_sweep = -1;
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "exit %d\n%s", ws, all);
    cr_assert_str_eq(last_line(all), "sweep p: 2 runs: 1 finished, 0 diverged, 0 failed, 1 skipped", "%s", all);
    cr_assert_not_null(strstr(all, "skip p-b-s7 (index 1): finished by another worker since this sweep started"),
                       "%s", all);
    db_text(db, "SELECT started_at || ':' || ended_at || ':' || (SELECT count(*) FROM metrics m"
               " WHERE m.run_id = r.run_id) FROM runs r WHERE name = 'p-b-s7'",
           after, sizeof after);
    cr_assert_str_eq(after, before, "b was run again");
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 2);
    tmp_rm(&t);
}

/* A killed run (here: stopped by `gated train --stop-after`, which keeps a
 * checkpoint) is resumed by a plain rerun of its sweep, without flags, and
 * ends with each step recorded once. */
Test(sweep, killed_run_resumes_on_a_plain_rerun, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    write_file(&t, "k.yaml", "name: k\nbase: base.yaml\nvariants: [{label: a}]\n", path);
    gated(bin, &t, "train base.yaml --name k-a-s7 --db r.db --ckpt checkpoints --data data --stop-after 2", out,
          sizeof out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE name = 'k-a-s7' AND status = 'killed'"), 1, "%s", out);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM metrics WHERE key = 'train_loss'"), 2);

    cr_assert_eq(gated(bin, &t, "sweep k.yaml --db r.db", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep k: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "killed, resuming from its checkpoint"), "%s", out);
    char log[256];
    snprintf(log, sizeof log, "%s/logs/k-a-s7.log", t.dir);
    char *l = test_read_file(log, NULL);
    cr_assert(l && strstr(l, "resuming"), "not resumed: %s", l ? l : "(no log)");
    free(l);
    cr_assert_eq(db_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
    cr_assert_eq(db_int(db, "SELECT count(*) || '/' || count(DISTINCT step) = '4/4' FROM metrics"
                           " WHERE key = 'train_loss'"),
                 1);
    tmp_rm(&t);
}

/* "run_id:status;..." and the metrics row count of a database. */
static void db_state(const char *db, char *runs, size_t cap, long long *metrics) {
    db_text(db, "SELECT run_id || ':' || status FROM runs ORDER BY run_id", runs, cap);
    *metrics = db_int(db, "SELECT count(*) FROM metrics");
}

Test(sweep, shards_merged_equal_one_unsharded_sweep) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384];
    smoke_path(smoke);
    static const char *const runs[] = {"--db all.db --jobs 2", "--db s1.db --shard 0/2", "--db s2.db --shard 1/2"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "sweep '%s' %s", smoke, runs[i]);
        cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s: %s", runs[i], out);
    }
    cr_assert_str_eq(last_line(out), "sweep smoke: 3 runs: 3 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db s1.db s2.db", out, sizeof out), 0, "%s", out);

    char a[4096], m[4096], p[160];
    long long ma, mm;
    snprintf(p, sizeof p, "%s/all.db", t.dir);
    db_state(p, a, sizeof a, &ma);
    long long sa = db_int(p, "SELECT count(*) FROM summary"), ha = db_int(p, "SELECT count(*) FROM histograms");
    snprintf(p, sizeof p, "%s/s1.db", t.dir);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM runs"), 3);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM sweep_runs WHERE idx % 2 = 0"), 3);
    snprintf(p, sizeof p, "%s/m.db", t.dir);
    db_state(p, m, sizeof m, &mm);
    cr_assert_str_eq(m, a);
    cr_assert_eq(mm, ma);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM summary"), sa);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM histograms"), ha);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM sweep_runs WHERE sweep = 'smoke'"), 6);
    cr_assert_eq(db_int(p, "SELECT count(*) FROM environments"), 1);
    /* every run points at an environment of its own file */
    cr_assert_eq(db_int(p, "SELECT count(*) FROM runs r JOIN environments e USING (env_id)"), 6);
    /* the merged database is complete: the sweep skips everything */
    snprintf(args, sizeof args, "sweep '%s' --db m.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 0 finished, 0 diverged, 0 failed, 6 skipped", "%s", out);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* scale-out recipes (docs/slurm.md)                                   */
/* ------------------------------------------------------------------ */

/* How many rows one query gives in db with the database other ATTACHed
 * as o (each query compares one table both ways). */
static long long q_two(const char *db, const char *other, const char *sql) {
    sqlite3 *h = db_open(db);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "ATTACH ?1 AS o", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, other, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "attach %s: %s", other, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* merged holds what one process wrote into one: the same runs with the same
 * statuses, sweep membership, and metric and histogram rows bitwise (SQL's
 * EXCEPT compares REAL values exactly; t, when recorded, is a wall-clock
 * time and left out), and the final results that do not measure time or the machine's load. */
static void same_results(const char *one, const char *merged) {
    static const char *const tables[][2] = {
        {"runs", "run_id, name, status, seed, config_json"},
        {"sweep_runs", "sweep, run_id, label, seed, idx, is_baseline"},
        {"metrics", "run_id, key, context, step, value"},
        {"histograms", "run_id, key, context, step, lo, hi, counts"},
        {"summary", "run_id, key, context, value FROM %s WHERE key NOT IN ('tokens_per_s', 'peak_rss_mib', 'wall_s', 'load_start', 'load_end', 'cpus_online')"},
    };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char from[256], cols[512], sql[2048];
        const char *t = tables[i][0], *c = tables[i][1];
        /* "COLS" or "COLS FROM %s WHERE ...": the FROM part for main and o */
        const char *fp = strstr(c, " FROM ");
        snprintf(cols, sizeof cols, "%.*s", fp ? (int)(fp - c) : (int)strlen(c), c);
        for (int side = 0; side < 2; side++) {
            char a[128], b[128], fa[300], fb[300];
            snprintf(a, sizeof a, "%s%s", side ? "o." : "main.", t);
            snprintf(b, sizeof b, "%s%s", side ? "main." : "o.", t);
            if (fp) {
                snprintf(fa, sizeof fa, fp + 6, a);
                snprintf(fb, sizeof fb, fp + 6, b);
            } else {
                snprintf(fa, sizeof fa, "%s", a);
                snprintf(fb, sizeof fb, "%s", b);
            }
            snprintf(sql, sizeof sql, "SELECT count(*) FROM (SELECT %s FROM %s EXCEPT SELECT %s FROM %s)", cols, fa,
                     cols, fb);
            cr_assert_eq(q_two(one, merged, sql), 0, "%s: rows of %s not in %s:\n%s", t, side ? merged : one,
                         side ? one : merged, sql);
        }
        snprintf(from, sizeof from, "SELECT (SELECT count(*) FROM main.%s) - (SELECT count(*) FROM o.%s)", t, t);
        cr_assert_eq(q_two(one, merged, from), 0, "%s: row counts differ", t);
    }
    cr_assert_gt(db_int(one, "SELECT count(*) FROM metrics"), 0);
}

/* The path of GNU parallel, or the test is skipped, saying how to get it. */
static void need_parallel(void) {
    char out[256];
    if (sh("command -v parallel && parallel --version", out, sizeof out) == 0 && strstr(out, "GNU parallel")) return;
    fprintf(stderr, "SKIPPED: GNU parallel is not installed (make deps installs it; as root: "
                    "apt-get install -y --no-install-recommends parallel)\n");
    cr_skip_test("GNU parallel is not installed: apt-get install -y --no-install-recommends parallel");
}

/* docs/slurm.md's GNU parallel recipe on the smoke sweep: one database per
 * run index, run by `parallel`, merged, equals one process's sweep. */
Test(sweep, gnu_parallel_shards_merge_into_the_one_process_result, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    need_parallel();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], cmd[3 * PATH_MAX + 512];
    smoke_path(smoke);
    cr_assert(strchr(smoke, '\'') == NULL);
    snprintf(args, sizeof args, "sweep '%s' --db one.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    /* as in the README: N from --count, run indices 0..N-1 through parallel, then merge */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && N=$('%s' sweep '%s' --count) && [ \"$N\" = 6 ] &&"
             " seq 0 $((N-1)) | parallel --will-cite -j 2 '%s' sweep '%s' --index {} --db shards/shard-{}.db &&"
             " '%s' merge merged.db shards/shard-*.db",
             t.dir, bin, smoke, bin, smoke, bin);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    cr_assert_not_null(strstr(out, "merged.db: 6 runs"), "%s", out);
    char one[160], merged[160], shard[160];
    snprintf(one, sizeof one, "%s/one.db", t.dir);
    snprintf(merged, sizeof merged, "%s/merged.db", t.dir);
    for (int i = 0; i < 6; i++) { /* each index ran in its own database */
        snprintf(shard, sizeof shard, "%s/shards/shard-%d.db", t.dir, i);
        cr_assert_eq(db_int(shard, "SELECT count(*) FROM runs"), 1, "%s", shard);
    }
    same_results(one, merged);
    tmp_rm(&t);
}

/* tools/slurm_sweep.sbatch under a stand-in for sbatch that runs each job
 * at once (the array's tasks one after another, with SLURM_ARRAY_TASK_ID
 * set) and records its arguments: the submission (with THROTTLE), the
 * merge and its check, a shard missing, a run not finished, and --shared.
 * The same script under a real Slurm: tests/slurm/test_slurm.py. */
static void fake_sbatch(const Tmp *t) {
    char path[128];
    cr_assert_eq(mkdir(strcat(strcpy(path, t->dir), "/bin"), 0755), 0);
    write_file(t, "bin/sbatch",
               "#!/bin/bash\n"
               "# a stand-in for sbatch: runs the job now, in this directory\n"
               "echo \"sbatch $*\" >> \"$FAKE_DIR/sbatch.calls\"\n"
               "array=\n"
               "while [ $# -gt 0 ]; do case \"$1\" in --array=*) array=${1#--array=} ;; --*) ;; *) break ;; esac;"
               " shift; done\n"
               "script=$1; shift\n"
               "if [ -n \"$array\" ]; then\n"
               "  array=${array%\\%*}\n"
               "  for ((i = ${array%-*}; i <= ${array#*-}; i++)); do\n"
               "    SLURM_ARRAY_TASK_ID=$i bash \"$script\" \"$@\" >> \"$FAKE_DIR/jobs.log\" 2>&1 || exit 1\n"
               "  done\n"
               "else\n"
               "  bash \"$script\" \"$@\" >> \"$FAKE_DIR/jobs.log\" 2>&1 || exit 1\n"
               "fi\n"
               "echo $((++n + 40))\n",
               path);
    cr_assert_eq(chmod(path, 0755), 0);
}

Test(sweep, slurm_array_script_merges_into_the_one_process_result, .timeout = 240) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char script[PATH_MAX], smoke[PATH_MAX], path[128], args[PATH_MAX + 256], out[16384], cmd[3 * PATH_MAX + 512];
    smoke_path(smoke);
    cr_assert_not_null(realpath("tools/slurm_sweep.sbatch", script), "tools/slurm_sweep.sbatch: %s", strerror(errno));
    cr_assert(strchr(script, '\'') == NULL && strchr(smoke, '\'') == NULL);
    fake_sbatch(&t);
    snprintf(args, sizeof args, "sweep '%s' --db one.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && FAKE_DIR='%s' PATH='%s/bin':\"$PATH\" GATED='%s' THROTTLE=2 '%s' --submit '%s' out --time=10"
             " || { cat '%s/jobs.log'; exit 1; }",
             t.dir, t.dir, t.dir, bin, script, smoke, t.dir);
    int rc = sh(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s\n%s", cmd, out);
    cr_assert_not_null(strstr(out, "6 runs: array job 41 (tasks 0-5), merge job 41 -> out/merged.db"), "%s", out);
    char calls[4 * PATH_MAX + 256], *c = test_read_file(strcat(strcpy(path, t.dir), "/sbatch.calls"), NULL);
    snprintf(calls, sizeof calls,
             "sbatch --parsable --array=0-5%%2 --time=10 %s %s out\n"
             "sbatch --parsable --dependency=afterok:41 --kill-on-invalid-dep=yes --time=10 %s --merge %s out\n",
             script, smoke, script, smoke);
    cr_assert_str_eq(c, calls);
    free(c);
    c = test_read_file(strcat(strcpy(path, t.dir), "/jobs.log"), NULL);
    cr_assert_not_null(strstr(c, "slurm_sweep.sbatch: all 6 runs of "), "%s", c);
    free(c);
    char one[160], merged[160];
    snprintf(one, sizeof one, "%s/one.db", t.dir);
    snprintf(merged, sizeof merged, "%s/out/merged.db", t.dir);
    same_results(one, merged);
    /* a merge with a shard missing, or with a run not finished, is refused */
    snprintf(cmd, sizeof cmd, "cd '%s' && mv out/shard-3.db s3.db && GATED='%s' bash '%s' --merge '%s' out", t.dir, bin,
             script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    cr_assert_not_null(strstr(out, "out/shard-3.db is missing: run array task 3 again"), "%s", out);
    snprintf(path, sizeof path, "%s/s3.db", t.dir);
    db_exec(path, "UPDATE runs SET status = 'killed'");
    snprintf(cmd, sizeof cmd, "cd '%s' && mv s3.db out/shard-3.db && rm out/merged.db && GATED='%s' bash '%s' --merge '%s' out",
             t.dir, bin, script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    cr_assert_not_null(strstr(out, "not finished in out/merged.db: smoke-G1-elementwise-s2 (index 3: killed); "
                                   "submit those array indices again, then --merge"),
                       "%s", out);
    /* a task run by hand without the array's id, or a bad THROTTLE, is refused */
    snprintf(cmd, sizeof cmd, "cd '%s' && GATED='%s' bash '%s' '%s' out", t.dir, bin, script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && GATED='%s' THROTTLE=0 bash '%s' --submit '%s' out", t.dir, bin, script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "THROTTLE is '0', not a task count"), "%s", out);
    /* --shared: every task into out2/sweep.db, then the check alone */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm sbatch.calls && FAKE_DIR='%s' PATH='%s/bin':\"$PATH\" GATED='%s' '%s' --submit --shared '%s' out2"
             " || { cat '%s/jobs.log'; exit 1; }",
             t.dir, t.dir, t.dir, bin, script, smoke, t.dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    cr_assert_not_null(strstr(out, "6 runs: array job 41 (tasks 0-5), check job 41 -> out2/sweep.db"), "%s", out);
    c = test_read_file(strcat(strcpy(path, t.dir), "/sbatch.calls"), NULL);
    snprintf(calls, sizeof calls,
             "sbatch --parsable --array=0-5 %s --shared %s out2\n"
             "sbatch --parsable --dependency=afterok:41 --kill-on-invalid-dep=yes %s --merge --shared %s out2\n",
             script, smoke, script, smoke);
    cr_assert_str_eq(c, calls);
    free(c);
    snprintf(merged, sizeof merged, "%s/out2/sweep.db", t.dir);
    same_results(one, merged);
    snprintf(path, sizeof path, "%s/out2/shard-0.db", t.dir);
    cr_assert_neq(access(path, F_OK), 0, "--shared wrote %s", path);
    tmp_rm(&t);
}

/* Start `gated sweep ARGS...` (NULL-terminated) in dir, in a process group
 * of its own, stdout to out (NULL: /dev/null).  Its pid. */
static pid_t start_sweep(const char *bin, const char *dir, const char *out, const char *const *args) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY), fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : null;
        if (setpgid(0, 0) != 0 || chdir(dir) != 0 || null < 0 || fd < 0)
            _exit(126);
        dup2(fd, 1), dup2(null, 2);
        const char *argv[16] = {bin, "sweep"};
        for (int i = 0; args[i] && i < 13; i++)
            argv[i + 2] = args[i];
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Wait (up to 60 s) until db holds a metric row and, when file is not
 * NULL, file exists.  The metric rows seen (0: never). */
static long long wait_for_rows(const char *db, const char *file) {
    long long rows = 0; /* polled without asserting: the schema may not be there yet */
    for (int i = 0; i < 600 && (rows == 0 || (file && access(file, F_OK) != 0)); i++) {
        usleep(100000);
        sqlite3 *h;
        sqlite3_stmt *q;
        if (access(db, F_OK) != 0)
            continue;
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            sqlite3_close(h);
            continue;
        }
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM metrics", -1, &q, NULL) == SQLITE_OK) {
            if (sqlite3_step(q) == SQLITE_ROW)
                rows = sqlite3_column_int64(q, 0);
            sqlite3_finalize(q);
        }
        sqlite3_close(h);
    }
    return file && access(file, F_OK) != 0 ? 0 : rows;
}

/* SIGINT stops a sweep after its cleanup: the child gets SIGTERM and
 * leaves its run killed (resumable), and the sweep exits 130. */
Test(sweep, sigint_exits_130_with_the_run_killed, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], db[160];
    write_file(&t, "long.yaml", "name: long\nbase: base.yaml\nset: {train.steps: 100000}\nvariants: [{label: a}]\n",
               path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    pid_t pid = start_sweep(bin, t.dir, NULL, (const char *const[]){"long.yaml", "--db", "r.db", NULL});
    long long rows = wait_for_rows(db, NULL);
    kill(pid, SIGINT);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    held_sweep = -1;
    cr_assert_gt(rows, 0, "the run never wrote a metric");
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "wait status %d", ws);
    char st[256];
    db_text(db, "SELECT status || ':' || error_text FROM runs", st, sizeof st);
    cr_assert(strncmp(st, "killed:stopped by signal 15", 27) == 0, "%s", st);
    tmp_rm(&t);
}

/* A sweep SIGKILLed together with its child (a node failing under a batch
 * scheduler) leaves its run 'running' with a fresh heartbeat; the owner of
 * its claim is a process of this host that is gone, so a sweep started at
 * once resumes the run from its checkpoint rather than skipping it as live
 * elsewhere (and exiting 0 without it). */
Test(sweep, a_run_left_by_a_sigkilled_sweep_resumes_at_once, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], db[160], ckpt[256], out[160], id[64];
    write_file(&t, "long.yaml",
               "name: long\nbase: base.yaml\nset: {train.steps: 100000, train.checkpoint_every: 5}\n"
               "variants: [{label: a}]\n",
               path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    snprintf(out, sizeof out, "%s/again.out", t.dir);
    const char *const args[] = {"long.yaml", "--db", "r.db", NULL};
    pid_t pid = start_sweep(bin, t.dir, NULL, args);
    long long rows = wait_for_rows(db, NULL);
    if (rows > 0) { /* then a checkpoint */
        db_text(db, "SELECT run_id FROM runs", id, sizeof id);
        char ckdir[200];
        snprintf(ckdir, sizeof ckdir, "%s/checkpoints", t.dir);
        test_ckpt_path(db, ckdir, id, ckpt, sizeof ckpt);
        rows = wait_for_rows(db, ckpt);
    }
    cr_assert_eq(kill(-pid, SIGKILL), 0, "%s", strerror(errno)); /* the sweep and its child at once */
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    held_sweep = -1;
    cr_assert_gt(rows, 0, "the run wrote no metric, or no checkpoint");
    char st[256];
    db_text(db, "SELECT status FROM runs", st, sizeof st);
    cr_assert_str_eq(st, "running");
    /* again: it resumes (it would run for long: stopped once its train
     * says it resumed) */
    pid = start_sweep(bin, t.dir, out, args);
    snprintf(path, sizeof path, "%s/logs/long-a-s7.log", t.dir);
    char *o = NULL, *log = NULL;
    for (int i = 0; i < 600 && !(log && strstr(log, "resuming ")); i++) {
        usleep(100000);
        free(o);
        o = test_read_file(out, NULL);
        if (strstr(o, "sweep long: 1 runs"))
            break; /* it ended: skipped */
        free(log);
        log = strstr(o, "start ") && access(path, F_OK) == 0 ? test_read_file(path, NULL) : NULL;
    }
    kill(pid, SIGINT);
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    int resumed = log && strstr(log, "resuming ");
    free(log);
    cr_assert_not_null(strstr(o, "start long-a-s7 (index 0, run "), "%s", o);
    cr_assert_not_null(strstr(o, "): killed, resuming from its checkpoint\n"), "%s", o);
    free(o);
    cr_assert(resumed, "%s does not say resuming", path);
    tmp_rm(&t);
}

static void counts(const char *db, long long c[7]) {
    static const char *const q[7] = {"SELECT count(*) FROM runs",
                                     "SELECT count(*) FROM metrics",
                                     "SELECT count(*) FROM summary",
                                     "SELECT count(*) FROM histograms",
                                     "SELECT count(*) FROM sweep_runs",
                                     "SELECT count(*) FROM environments",
                                     "SELECT total(value) FROM metrics WHERE value IS NOT NULL"};
    for (int i = 0; i < 7; i++)
        c[i] = db_int(db, q[i]);
}

Test(sweep, merge_is_idempotent_and_keeps_the_better_copy) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], a[160], b[160], m[160];
    smoke_path(smoke);
    snprintf(a, sizeof a, "%s/a.db", t.dir);
    snprintf(b, sizeof b, "%s/b.db", t.dir);
    snprintf(m, sizeof m, "%s/m.db", t.dir);
    snprintf(args, sizeof args, "sweep '%s' --db a.db --jobs 2", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);

    /* the same input twice, and again in a second command: nothing changes */
    cr_assert_eq(gated(bin, &t, "merge m.db a.db a.db", out, sizeof out), 0, "%s", out);
    long long c1[7], c2[7], ca[7];
    counts(m, c1);
    counts(a, ca);
    cr_assert_eq(gated(bin, &t, "merge m.db a.db", out, sizeof out), 0, "%s", out);
    counts(m, c2);
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(c1[i], c2[i], "count %d", i);
        cr_assert_eq(c1[i], ca[i], "count %d", i);
    }
    cr_assert_not_null(strstr(out, "runs +0, metrics +0, summary +0, histograms +0, sweep_runs +0"), "%s", out);

    /* b: a copy with one run failed (ended later, one metric changed); the
     * finished copy wins in either merge order, and b's extra row is kept */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a, b);
    cr_assert_eq(system(cmd), 0);
    db_exec(b, "PRAGMA journal_mode=DELETE");
    db_exec(b, "UPDATE runs SET status = 'failed', ended_at = ended_at + 100 WHERE name = 'smoke-baseline-s1'");
    db_exec(b, "UPDATE metrics SET value = 99 WHERE step = 1 AND key = 'train_loss' AND run_id ="
               " (SELECT run_id FROM runs WHERE name = 'smoke-baseline-s1')");
    db_exec(b, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, 'extra', '', 0, 1"
               " FROM runs WHERE name = 'smoke-baseline-s1'");
    /* and one run finished later in b (a --force rerun): b's copy and values win */
    db_exec(b, "UPDATE runs SET ended_at = ended_at + 50 WHERE name = 'smoke-baseline-s2'");
    db_exec(b, "UPDATE metrics SET value = 42 WHERE step = 1 AND key = 'train_loss' AND run_id ="
               " (SELECT run_id FROM runs WHERE name = 'smoke-baseline-s2')");
    static const char *const orders[] = {"merge ab.db a.db b.db", "merge ba.db b.db a.db"};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(gated(bin, &t, orders[k], out, sizeof out), 0, "%s", out);
        char p[160], txt[256];
        snprintf(p, sizeof p, "%s/%s.db", t.dir, k ? "ba" : "ab");
        db_text(p, "SELECT status FROM runs WHERE name = 'smoke-baseline-s1'", txt, sizeof txt);
        cr_assert_str_eq(txt, "finished", "%s", orders[k]);
        db_text(p,
               "SELECT value FROM metrics m JOIN runs r USING (run_id) WHERE r.name = 'smoke-baseline-s1'"
               " AND m.key = 'train_loss' AND m.step = 1",
               txt, sizeof txt);
        cr_assert_str_neq(txt, "99.0", "%s: the failed copy's metric replaced the finished one", orders[k]);
        cr_assert_eq(db_int(p, "SELECT count(*) FROM metrics WHERE key = 'extra'"), 1, "%s", orders[k]);
        db_text(p,
               "SELECT value FROM metrics m JOIN runs r USING (run_id) WHERE r.name = 'smoke-baseline-s2'"
               " AND m.key = 'train_loss' AND m.step = 1",
               txt, sizeof txt);
        cr_assert_str_eq(txt, "42.0", "%s", orders[k]);
        cr_assert_eq(db_int(p, "SELECT count(*) FROM runs"), 6);
        cr_assert_eq(db_int(p, "SELECT count(*) FROM metrics"), ca[1] + 1);
    }

    /* bad inputs: exit 2, output untouched */
    long long before[7], after[7];
    counts(m, before);
    char junk[128];
    write_file(&t, "junk.db", "this is not a database, just some text long enough to look like a header....\n", junk);
    cr_assert_eq(gated(bin, &t, "merge m.db junk.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "junk.db: not a gated database"), "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db missing.db", out, sizeof out), 2, "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db m.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "m.db: is the output database"), "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db", out, sizeof out), 2, "%s", out);
    counts(m, after);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(before[i], after[i]);
    tmp_rm(&t);
}

/* merge_from and store_sweep_record directly, on hand-made rows. */
Test(sweep, store_sweep_record_and_merge_api) {
    Tmp t;
    tmp_dir(&t);
    char p1[160], p2[160], err[512];
    snprintf(p1, sizeof p1, "%s/1.db", t.dir);
    snprintf(p2, sizeof p2, "%s/2.db", t.dir);
    Store *s;
    cr_assert_eq(store_open(&s, p1, err, sizeof err), 0, "%s", err);
    static const char A[] = "aaaaaaaaaaaaaaaa", B[] = "bbbbbbbbbbbbbbbb", C[] = "cccccccccccccccc",
                      D[] = "dddddddddddddddd";
    StoreSweepRun r[3] = {{A, "x", 1, 0, 1}, {B, "y", 1, 1, 0}, {C, "z", 1, 2, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 3, r, 3), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 3);
    /* the sweep changed: index 1 is another run now, and it has 2 runs */
    StoreSweepRun r2[1] = {{D, "y2", 1, 1, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 2, r2, 1), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    cr_assert_eq(store_count_rows(s, "nonsense"), -1);
    char buf[64];
    cr_assert_null(store_run_code_version(s, A, buf, sizeof buf));
    Provenance pv = {.host = "h", .code_version = "c0de", .git_dirty = 0};
    cr_assert_eq(store_run_begin(s, A, "n", "{}", 1, 1, &pv, NULL), 0, "%s", store_errmsg(s));
    cr_assert_str_eq(store_run_code_version(s, A, buf, sizeof buf), "c0de");
    cr_assert_eq(store_metric(s, A, "k", NULL, 0, 1.5), 0);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), -2);
    cr_assert_str_eq(strstr(err, "1.db"), "1.db: is the output database (the same file)");
    store_close(s);

    cr_assert_eq(store_open(&s, p2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(err, "");
    cr_assert_eq(store_count_rows(s, "runs"), 1);
    cr_assert_eq(store_count_rows(s, "metrics"), 1); /* buffered in the source's store, flushed at close */
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "runs"), 1);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    char missing[200];
    snprintf(missing, sizeof missing, "%s/none.db", t.dir);
    cr_assert_eq(merge_from(s, missing, err, sizeof err), -2);
    cr_assert_not_null(strstr(err, "none.db: No such file or directory"), "%s", err);
    cr_assert_neq(access(missing, F_OK), 0, "merge created its input");
    store_close(s);

    /* a database from before sweep_runs existed gains the table at open */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(p1, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "DROP TABLE sweep_runs", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(store_open(&s, p2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err); /* an input without it merges */
    store_close(s);
    cr_assert_eq(store_open(&s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    store_close(s);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* hostile names and labels                                            */
/* ------------------------------------------------------------------ */

/* No file named PWNED* anywhere under the test directory. */
static void assert_not_pwned(const Tmp *t, const char *when) {
    char cmd[256], out[1024];
    snprintf(cmd, sizeof cmd, "find '%s' -name 'PWNED*'", t->dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, "", "%s: a shell command ran: %s", when, out);
}

static int count_char(const char *text, char c) {
    int n = 0;
    for (; *text; text++)
        n += *text == c;
    return n;
}

static int raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            return 1;
    return 0;
}

/* A label "x\n!touch PWNED\n" would be a gnuplot shell line if it reached a
 * plot script: refused in a sweep file and in `gated train --name`; put
 * into a database by SQL it is refused by `gated merge`, and `gated report`
 * and `gated ls` on that database quote it where it is written. */
Test(sweep, hostile_labels_and_names_run_nothing, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], cmd[1024], p[256];

    /* through a sweep file, then a report */
    write_file(&t, "s.yaml",
               "name: h\nbase: base.yaml\nvariants:\n  - label: baseline\n  - label: \"x\\n!touch PWNED\\n\"\n"
               "    set: {model.gate.position: sdpa}\nbaseline: baseline\n",
               path);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' sweep s.yaml --db r.db && '%s' report --db r.db --out rep", t.dir, bin,
             bin);
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "s.yaml:5:12: error: variants[1].label: \"x\\x0a!touch PWNED\\x0a\" contains a "
                                   "control character (\\x0a at byte 2)"),
                       "%s", out);
    snprintf(p, sizeof p, "%s/r.db", t.dir);
    cr_assert_neq(access(p, F_OK), 0, "the refused sweep created its database");
    assert_not_pwned(&t, "sweep + report");

    /* gated train --name */
    static const char *const names[][2] = {{"a\\nb", "\"a\\x0ab\""}, {"a\\033[2Jb", "\"a\\x1b[2Jb\""}};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "train base.yaml --name \"$(printf '%s')\" --db r.db", names[i][0]);
        cr_assert_eq(gated(bin, &t, args, out, sizeof out), 2, "%s", out);
        char want[128];
        snprintf(want, sizeof want, "gated train: --name: %s contains a control character", names[i][1]);
        cr_assert_not_null(strstr(out, want), "%s", out);
        cr_assert(!raw_control(out), "the message echoed a control character: %s", out);
        cr_assert_neq(access(p, F_OK), 0, "a refused train created its database");
    }

    /* a real sweep, then hostile text put into its database by SQL */
    write_file(&t, "ok.yaml",
               "name: h\nbase: base.yaml\nvariants:\n  - label: baseline\n  - label: G1\n"
               "    set: {model.gate.position: sdpa}\nbaseline: baseline\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep ok.yaml --db h.db", out, sizeof out), 0, "%s", out);
    char h[160], m[160];
    snprintf(h, sizeof h, "%s/h.db", t.dir);
    snprintf(m, sizeof m, "%s/m.db", t.dir);
    db_exec(h, "UPDATE sweep_runs SET label = 'x' || char(10) || '!touch PWNED' || char(10) WHERE label = 'G1'");
    db_exec(h, "UPDATE runs SET name = 'n' || char(27) || '[2J' || char(10) || '!touch PWNED2' WHERE name = 'h-G1-s7'");

    /* ls quotes the name: one line per run, no raw escape code */
    cr_assert_eq(gated(bin, &t, "ls --db h.db", out, sizeof out), 0, "%s", out);
    cr_assert(!raw_control(out), "raw control byte in ls:\n%s", out);
    cr_assert_not_null(strstr(out, "n\\x1b[2J\\x0a!touch PWNED2"), "%s", out);
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, 3, "%s", out);

    /* report on it: the label is quoted in every plot script and table */
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep", out, sizeof out), 0, "%s", out);
    assert_not_pwned(&t, "report");
    snprintf(p, sizeof p, "%s/rep/plots/h-val_loss.gp", t.dir);
    char *gp = test_read_file(p, NULL);
    cr_assert_not_null(strstr(gp, "title 'x\\x0a!touch PWNED\\x0a'"), "%s", gp);
    cr_assert_null(strstr(gp, "\n!"), "a shell line in the plot script:\n%s", gp);
    free(gp);
    snprintf(p, sizeof p, "%s/rep/report.md", t.dir);
    char *md = test_read_file(p, NULL);
    cr_assert_not_null(strstr(md, "| x\\\\x0a!touch PWNED\\\\x0a |"), "%s", md);
    cr_assert(!raw_control(md), "raw control byte in report.md");
    free(md);
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep --format tex", out, sizeof out), 0, "%s", out);
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep --format csv", out, sizeof out), 0, "%s", out);
    snprintf(p, sizeof p, "%s/rep/h.csv", t.dir);
    char *csv = test_read_file(p, NULL);
    cr_assert_not_null(strstr(csv, "\nh,x\\x0a!touch PWNED\\x0a,"), "%s", csv);
    cr_assert_eq(count_char(csv, '\n'), 3, "%s", csv);
    free(csv);
    assert_not_pwned(&t, "report tex / csv");

    /* merge refuses the input, naming the row; nothing is merged */
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "h.db: refused, nothing merged: runs row "), "%s", out);
    cr_assert_not_null(strstr(out, ": name \"n\\x1b[2J\\x0a!touch PWNED2\" contains a control character"), "%s", out);
    cr_assert(!raw_control(out), "%s", out);
    cr_assert_eq(db_int(m, "SELECT count(*) FROM runs"), 0);
    db_exec(h, "UPDATE runs SET name = 'h-G1-s7' WHERE name LIKE 'n%'");
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, ": label \"x\\x0a!touch PWNED\\x0a\" contains a control character"), "%s", out);
    cr_assert_eq(db_int(m, "SELECT count(*) FROM runs"), 0);
    cr_assert_eq(db_int(m, "SELECT count(*) FROM sweep_runs"), 0);

    /* other text is merged, and shown escaped */
    db_exec(h, "UPDATE sweep_runs SET label = 'G1' WHERE label LIKE 'x%'");
    db_exec(h, "UPDATE runs SET host = 'h' || char(27) || ']0;x' || char(7) WHERE name = 'h-G1-s7'");
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 0, "%s", out);
    cr_assert_eq(gated(bin, &t, "show h-G1-s7 --db m.db", out, sizeof out), 0, "%s", out);
    cr_assert(!raw_control(out), "raw control byte in show:\n%s", out);
    cr_assert_not_null(strstr(out, "host        h\\x1b]0;x\\x07\n"), "%s", out);
    assert_not_pwned(&t, "merge");
    tmp_rm(&t);
}
