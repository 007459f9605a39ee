/*
 * test_sweep_safety.c — what a sweep does with runs other processes hold,
 * and with sweep files too big to expand:
 *   - a run whose claim is held by a process of this host that has exited
 *     (a sweep killed with SIGKILL) is resumed by the next sweep at once,
 *     not skipped for a minute as "running elsewhere";
 *   - a run claimed by a live process elsewhere is skipped, and the sweep
 *     says so and exits 1 (its results are not all there);
 *   - a sweep killed outright takes the runs it started with it, so no run
 *     goes on under a claim whose owner is gone;
 *   - the run count is checked from the lists' sizes before any run is
 *     built, and duplicates in long lists are found fast.
 * End-to-end parts run $GATED_BIN (skipped without it) on tiny models of
 * the synthetic corpus in a temporary directory.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/sweep/sweep.h"
#include "run/store.h"
#include "testutil.h"
#include "util/util.h"

static const char BASE[] = "model: {vocab_size: 257, d_model: 32, n_layer: 1, n_head: 4, d_ff: 48, seq_len: 16}\n"
                           "train: {batch: 2, steps: 4, warmup: 1, eval_every: 2, eval_windows: 2, seed: 7}\n"
                           "data: {corpus: synthetic}\n";

/* text into DIR/name; the path into p (128 bytes). */
static void put(const char *dir, const char *name, const char *text, char p[128]) {
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    cr_assert(fputs(text, f) >= 0);
    cr_assert_eq(fclose(f), 0);
}

/* A directory with base.yaml and k.yaml (one run, k-a-s7, of train.steps
 * steps); its run id into id (as the sweep computes it). */
static void one_run_sweep(char dir[64], int steps, char id[17]) {
    test_tmpdir(dir, 64);
    char p[128], k[160];
    put(dir, "base.yaml", BASE, p);
    snprintf(k, sizeof k, "name: k\nbase: base.yaml\nset: {train.steps: %d}\nvariants: [{label: a}]\n", steps);
    put(dir, "k.yaml", k, p);
    Sweep s;
    ConfigError e;
    cr_assert_eq(sweep_load(&s, p, &e), 0, "%s", e.msg);
    snprintf(id, 17, "%s", s.runs[0].run_id);
    sweep_free(&s);
}

static void rm_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* In a child process (so that it exits, as a killed sweep does): claim the
 * run for owner (NULL: the child itself) and, with begin, leave its row
 * 'running' with a fresh heartbeat. */
static void claim_in_child(const char *db, const char *id, const char *owner, int begin) {
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        Store *s;
        char err[512], tok[300], seen[16];
        if (store_open(&s, db, err, sizeof err)) _exit(2);
        store_owner_token(tok, sizeof tok);
        if (store_run_claim(s, id, owner ? owner : tok, NULL, NULL, seen, sizeof seen) != STORE_CLAIMED) _exit(3);
        if (begin && store_run_begin(s, id, "k-a-s7", "{}", 7, 1, NULL, NULL)) _exit(4);
        store_close(s);
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "claiming child: status %d", st);
}

/* The last line of text (its own buffer). */
static const char *last_line(const char *text) {
    static char line[512];
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n') n--;
    size_t b = n;
    while (b && text[b - 1] != '\n') b--;
    snprintf(line, sizeof line, "%.*s", (int)(n - b), text + b);
    return line;
}

Test(sweep_safety, a_run_of_a_dead_local_owner_is_resumed_at_once, .timeout = 120) {
    char dir[64], id[17], db[128], *out;
    one_run_sweep(dir, 4, id);
    snprintf(db, sizeof db, "%s/r.db", dir);
    claim_in_child(db, id, NULL, 1); /* its claimant, and the run's row, left behind */
    double t0 = util_now();
    const char *args[] = {"sweep", "k.yaml", "--db", "r.db", NULL};
    int rc = test_gated(dir, args, NULL, 50, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "start k-a-s7 (index 0, run "), "not started:\n%s", out);
    cr_assert_null(strstr(out, "elsewhere"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep k: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_lt(util_now() - t0, 40, "it waited for the claim to go stale");
    free(out);
    rm_dir(dir);
}

Test(sweep_safety, a_run_live_elsewhere_is_skipped_and_the_sweep_exits_1, .timeout = 120) {
    char dir[64], id[17], db[128], *out;
    one_run_sweep(dir, 4, id);
    snprintf(db, sizeof db, "%s/r.db", dir);
    claim_in_child(db, id, "another-host:4242:1", 0);
    const char *args[] = {"sweep", "k.yaml", "--db", "r.db", NULL};
    int rc = test_gated(dir, args, NULL, 50, &out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "skip k-a-s7 (index 0): running elsewhere (claimed by another process)\n"), "%s", out);
    cr_assert(strstr(out, "\n1 run running in another process, not waited for\n"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep k: 1 runs: 0 finished, 0 diverged, 0 failed, 1 skipped", "%s", out);
    free(out);
    rm_dir(dir);
}

/* The pids of pid's children (from /proc/PID/stat of every process). */
static int children_of(pid_t parent, pid_t *kids, int cap) {
    DIR *d = opendir("/proc");
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        long pid;
        if (util_parse_long(e->d_name, 1, 1L << 30, &pid)) continue;
        char p[64], buf[512];
        snprintf(p, sizeof p, "/proc/%ld/stat", pid);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = '\0';
        const char *r = strrchr(buf, ')');
        char state;
        long ppid;
        if (r && sscanf(r + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) kids[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

/* Whether pid is gone (or a zombie nobody reaps). */
static int gone(pid_t pid) {
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(p, "r");
    if (!f) return 1;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    const char *r = strrchr(buf, ')');
    return r && r[1] == ' ' && r[2] == 'Z';
}

/* Whether the one run in db has this status (0 while there is none). */
static int status_is(const char *db, const char *status) {
    sqlite3 *h;
    int yes = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        sqlite3_busy_timeout(h, 1000);
        if (sqlite3_prepare_v2(h, "SELECT status FROM runs", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) yes = strcmp((const char *)sqlite3_column_text(st, 0), status) == 0;
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(h);
    return yes;
}

/* `kill -9` of a sweep: the run it started dies with it, and the next plan
 * reads the run as killed (to resume), not as running elsewhere. */
Test(sweep_safety, a_run_dies_with_its_killed_sweep, .timeout = 120) {
    char dir[64], id[17];
    one_run_sweep(dir, 1000000, id); /* runs until killed */
    const char *bin = gated_bin();
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t sweep = fork();
    cr_assert_geq(sweep, 0);
    if (sweep == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        if (chdir(dir) != 0) _exit(126);
        execl(bin, bin, "sweep", "k.yaml", "--db", "r.db", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[512];
    int started = 0;
    while (!started && fgets(line, sizeof line, f)) started = strncmp(line, "start k-a-s7", 12) == 0;
    cr_assert(started, "the sweep did not start its run");
    pid_t kids[8];
    int nk = 0;
    for (int i = 0; i < 100 && nk == 0; i++, usleep(20000)) nk = children_of(sweep, kids, 8);
    cr_assert_eq(nk, 1, "the sweep has %d children", nk);
    char db[128];
    snprintf(db, sizeof db, "%s/r.db", dir);
    int running = 0;
    for (int i = 0; i < 200 && !running; i++, usleep(50000)) running = status_is(db, "running");
    cr_assert(running, "the run never started");
    cr_assert_eq(kill(sweep, SIGKILL), 0);
    cr_assert_eq(waitpid(sweep, NULL, 0), sweep);
    fclose(f);
    int dead = 0;
    for (int i = 0; i < 100 && !dead; i++, usleep(50000)) dead = gone(kids[0]);
    if (!dead) kill(kids[0], SIGKILL); /* do not leave it training */
    cr_assert(dead, "the run outlived its sweep by 5 s");
    char *out;
    const char *plan[] = {"sweep", "k.yaml", "--db", "r.db", "--dry-run", NULL};
    cr_assert_eq(test_gated(dir, plan, NULL, 30, &out), 0, "%s", out);
    cr_assert(strstr(out, "killed    run "), "not planned as killed, to resume:\n%s", out);
    free(out);
    rm_dir(dir);
}

/* sweep_load of text in dir (as s.yaml): its return, the message, the
 * seconds it took. */
static int load_timed(const char *dir, const char *text, char *msg, size_t cap, double *secs) {
    char p[128];
    put(dir, "s.yaml", text, p);
    Sweep s;
    ConfigError e;
    double t0 = util_now();
    int rc = sweep_load(&s, p, &e);
    *secs = util_now() - t0;
    snprintf(msg, cap, "%s", rc ? e.msg : "");
    if (rc == 0) sweep_free(&s);
    return rc;
}

/* A list of n integers from first, "[a, b, ...]", with last as the final
 * one when last >= 0 (malloc'd). */
static char *int_list(int first, int n, int last) {
    char *b = malloc((size_t)n * 12 + 16);
    cr_assert_not_null(b);
    size_t k = 0;
    b[k++] = '[';
    for (int i = 0; i < n; i++)
        k += (size_t)sprintf(b + k, "%s%d", i ? ", " : "", i == n - 1 && last >= 0 ? last : first + i);
    b[k++] = ']';
    b[k] = '\0';
    return b;
}

/* The case (3 rows x 100,000 seeds took 72 s to be refused) and
 * its kin: refused from the lists' sizes at once; a duplicate at the end
 * of a long list found fast. */
Test(sweep_safety, limits_are_checked_before_any_run_is_built, .timeout = 300) {
    char dir[64], msg[1024];
    test_tmpdir(dir, sizeof dir);
    set_threads(1);
    double secs;
    char *seeds = int_list(0, 100000, -1), *vals = int_list(1, 1000, -1), *dup = int_list(0, 60000, 17);
    size_t cap = strlen(seeds) + strlen(dup) + 4096;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    snprintf(text, cap, "name: s\nbase: base.yaml\nvariants: [{label: a}, {label: b, set: {train.lr: 0.002}},"
                        " {label: c, set: {train.lr: 0.003}}]\nseeds: %s\n", seeds);
    char p[128];
    put(dir, "base.yaml", BASE, p);
    cr_assert_eq(load_timed(dir, text, msg, sizeof msg, &secs), -1);
    cr_expect(strstr(msg, "s.yaml:1:1: error: the sweep has 300000 runs, more than 100000"), "%s", msg);
    cr_expect_lt(secs, 10, "%.1f s to refuse 300,000 runs", secs);

    snprintf(text, cap, "name: s\nbase: base.yaml\nmethod: grid\nparameters:\n  train.steps: {values: %s}\n"
                        "  train.seed: {values: %s}\n", vals, vals);
    cr_assert_eq(load_timed(dir, text, msg, sizeof msg, &secs), -1);
    cr_expect(strstr(msg, "error: the sweep has more than 100000 runs"), "%s", msg);
    cr_expect_lt(secs, 10, "%.1f s to refuse a 1000 x 1000 grid", secs);

    snprintf(text, cap, "name: s\nbase: base.yaml\nvariants: [{label: a}]\nseeds: %s\n", dup);
    cr_assert_eq(load_timed(dir, text, msg, sizeof msg, &secs), -1);
    cr_expect(strstr(msg, "error: seeds: duplicate seed 17 (also at line 4)"), "%s", msg);
    cr_expect_lt(secs, 10, "%.1f s to find a duplicate among 60,000 seeds", secs);
    free(seeds), free(vals), free(dup), free(text);
    rm_dir(dir);
}
