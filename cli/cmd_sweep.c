/*
 * cmd_sweep.c — `gated sweep` and `gated merge`.
 *
 * Loads and validates the whole sweep (sweep.h; any error exits 2 before
 * anything runs), selects runs (--index I: run I alone; --shard i/N: the
 * runs with index % N == i; both count from 0, as the runs' indices, so a
 * Slurm array --array=0-(N-1) passes $SLURM_ARRAY_TASK_ID to either),
 * --count prints how many runs that selection holds and stops, records
 * their sweep membership in the
 * database (table sweep_runs), then runs each selected run that needs it as
 * a child process
 *
 *   /proc/self/exe train BASE.yaml --set k=v ... --name NAME --db DB --data DIR
 *                  --ckpt DBDIR/checkpoints [--resume]
 *
 * so a crashing run cannot take the others down.  Up to J children run at
 * once, each with OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = max(1, cores / J)
 * in its environment; a child's stdout and stderr go to DBDIR/logs/NAME.log
 * (the last lines are shown when it fails) and its checkpoints to
 * DBDIR/checkpoints (train --ckpt), DBDIR being the directory of --db.
 *
 * What runs, by the status stored for the run's id (its resolved config):
 *   absent                      run
 *   finished, diverged          skip if recorded with this build's cflags and
 *                               by the same code version (the build's git
 *                               commit; "unknown" outside a checkout) or by a
 *                               commit whose result-computing code
 *                               (core/util, core/nn, core/run:
 *                               run/codever.h) is identical to this one's,
 *                               so a commit of the CLI, the report, docs or
 *                               results invalidates nothing, or when this
 *                               build attested it (run/store.h, "Code
 *                               attestations");
 *                               else, with --verify-code, verified first
 *                               (below), else run again; --force runs it regardless;
 *                               never rerun when it ended after this sweep
 *                               started (another worker made it meanwhile)
 *   killed                      run, resuming from its checkpoint (train
 *                               --resume; from step 0 when it has none)
 *   failed                      skip and report (exit 1), unless --rerun-failed
 *                               or --force (rerun from step 0), and not when it
 *                               failed after this sweep started (elsewhere)
 *   running (live heartbeat)    skip: another process is running it (exit 1:
 *                               not done here); one whose claim's owner is a
 *                               process of this host that has exited reads
 *                               killed at once (store_run_status)
 *
 * Several sweeps (or shards, or machines sharing a file system) may work on
 * one database at once.  The plan above is made first from what is stored,
 * for the listing, and made again for each run just before it starts,
 * inside store_run_claim's one BEGIN IMMEDIATE transaction, which records
 * a claim (owner HOST:PID:START of this sweep) only when the run is still to be
 * run and not live: claimed by another process (a claim refreshed every
 * CLAIM_REFRESH_S seconds while held, void after STORE_STALE_SECONDS) or
 * 'running' with a fresh heartbeat.  So two sweeps of one file train each
 * run once, and a run another worker finished after this sweep planned is
 * not started again (its rows are never reset).  The child gets the claim's
 * owner in GATED_RUN_OWNER; the claim ends when the run does
 * (store_run_end) or when the child exits (store_run_release).
 *
 * A child that dies without ending its run (a crash, SIGKILL) has the run
 * marked failed (killed, for SIGKILL / SIGTERM / SIGINT) with the reason.
 * A failed run does not stop the others unless --fail-fast (then no new
 * run starts; the ones running finish).  SIGINT / SIGTERM stop the sweep
 * the same way, after forwarding SIGTERM to the children, and the sweep
 * exits 128 + the signal (130 for SIGINT).  A child that exits 130 / 143
 * (gated train stopped by the signal) leaves its run killed, not failed.
 *
 * --verify-code: before anything runs, each result that would be run again
 * for its code or flags alone is re-executed by this build, one at a time
 * with every core, for its first steps (verify_window) into a scratch
 * database beside the real one (DBDIR/verify-XXXXXX, removed afterwards;
 * checkpoints there too, never the run's own); when every metric and
 * histogram row of those steps is bitwise equal to the stored one
 * (store_attest_compare) an attestation is recorded and the run is kept,
 * else the first difference is printed and the run is rerun as before.
 *
 * --dry-run prints each selected run (index, stored status, what a real
 * sweep would do, run id, name, overrides) and writes nothing; with
 * --verify-code, "verify" marks the runs a sweep would verify first; with
 * --json the same as one JSON document.
 *
 * The last line is "sweep NAME: N runs: F finished, D diverged, X failed,
 * S skipped" (N selected; F, D, X: runs this invocation ran; S: not run).
 * Exit 0 when nothing failed, 1 when a run failed now, a failed run was
 * skipped, a run was not started, or one was skipped as running in
 * another process (the sweep's results are not all there: a line before
 * the summary says how many), 2 on bad input, 130 / 143 when a signal
 * stopped it.  A run finished elsewhere meanwhile is not a failure.
 *
 * gated merge OUT.db IN.db... folds each input into OUT (created if missing) with merge_from():
 * idempotent, no duplicates, the better copy of a run shared by two inputs
 * wins.  Each input is merged in its own transaction; the first unusable
 * input stops the command (exit 2) with the inputs before it merged.  An
 * input is untrusted: one whose run names, run ids, sweep names or labels
 * hold a control character is unusable (store_name_check), and the other
 * text it brings is escaped wherever it is printed.
 *
 * Every name in a sweep file (name, labels, the names run_name gives) must
 * be printable text (store_name_check); --dry-run opens the database
 * read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blas_kernel.h"
#include "commands.h"
#include "run/checkpoint.h"
#include "run/codever.h"
#include "run/eval.h"
#include "run/store.h"
#include "lab/merge.h"
#include "lab/sweep.h"
#include "util/json.h"
#include "util/util.h"

extern char **environ;

enum {
    O_DRY_RUN,
    O_JSON,
    O_COUNT,
    O_INDEX,
    O_SHARD,
    O_JOBS,
    O_FORCE,
    O_RERUN_FAILED,
    O_FAIL_FAST,
    O_VERIFY_CODE,
    O_VERIFY_STEPS,
    O_DB,
    O_DATA,
    O__COUNT
};
static const CliOpt opts[O__COUNT + 1] = {
    [O_DRY_RUN] = {"dry-run", NULL, "print each selected run (index, stored status, what a sweep would do) and stop", 0},
    [O_JSON] = {"json", NULL, "with --dry-run: the plan as one JSON document (README, \"Machine-readable output\")", 0},
    [O_COUNT] = {"count", NULL, "print the number of selected runs (all, without --index / --shard) and stop", 0},
    [O_INDEX] = {"index", "I", "run I alone (0 <= I < the --count)", 0},
    [O_SHARD] = {"shard", "i/N", "the runs whose index % N == i (0 <= i < N)", 0},
    [O_JOBS] = {"jobs", "J", "J runs at once, each with cores / J threads (default: 1)", 0},
    [O_FORCE] = {"force", NULL, "rerun finished, diverged and failed runs too", 0},
    [O_RERUN_FAILED] = {"rerun-failed", NULL, "rerun failed runs (else skipped, exit 1)", 0},
    [O_FAIL_FAST] = {"fail-fast", NULL, "start no new run after one failed", 0},
    [O_VERIFY_CODE] = {"verify-code", NULL,
                       "re-execute the first steps of results of other code; bitwise equal: keep them", 0},
    [O_VERIFY_STEPS] = {"verify-steps", "N",
                        "steps to re-execute (least: to the first evaluation and warmup + 1)", 0},
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_DATA] = {"data", "DIR", "the corpus (default: data)", 0},
};

typedef struct {
    const char *path, *db, *data;
    int dry_run, json, count, force, rerun_failed, fail_fast, verify_code;
    long verify_steps;     /* --verify-steps (0: not given) */
    long index;            /* -1: all */
    long shard_i, shard_n; /* shard_n 0: no sharding */
    long jobs;
} SweepOpts;

/* "i/N" with 0 <= i < N into o.  0, or -1. */
static int parse_shard(const char *v, SweepOpts *o) {
    const char *slash = strchr(v, '/');
    char num[32];
    if (!slash || (size_t)(slash - v) >= sizeof num) return -1;
    snprintf(num, sizeof num, "%.*s", (int)(slash - v), v);
    return util_parse_long(num, 0, (1L << 30) - 1, &o->shard_i) == 0 &&
                   util_parse_long(slash + 1, 1, 1L << 30, &o->shard_n) == 0 && o->shard_i < o->shard_n
               ? 0
               : -1;
}

/* -1: go on; else the exit status. */
static int parse_sweep_args(int argc, char **argv, SweepOpts *o) {
    *o = (SweepOpts){.db = cli_default_db(), .data = "data", .index = -1, .jobs = 1};
    const Command *c = &cmd_sweep;
    CliArgs a;
    const char *v;
    int k;
    cli_begin(&a, c, argc, argv);
    while ((k = cli_next(&a, &v)) >= 0) {
        switch (k) {
        case O_DRY_RUN: o->dry_run = 1; break;
        case O_JSON: o->json = 1; break;
        case O_COUNT: o->count = 1; break;
        case O_FORCE: o->force = 1; break;
        case O_RERUN_FAILED: o->rerun_failed = 1; break;
        case O_FAIL_FAST: o->fail_fast = 1; break;
        case O_VERIFY_CODE: o->verify_code = 1; break;
        case O_VERIFY_STEPS:
            if (util_parse_long(v, 1, 1L << 30, &o->verify_steps))
                return cli_usage_error(c, "--verify-steps: expected a positive integer, got \"%s\"", v);
            break;
        case O_DB: o->db = v; break;
        case O_DATA: o->data = v; break;
        case O_INDEX:
            if (util_parse_long(v, 0, 1L << 30, &o->index))
                return cli_usage_error(c, "--index: expected a run index (0, 1, ...), got \"%s\"", v);
            break;
        case O_JOBS:
            if (util_parse_long(v, 1, 1024, &o->jobs))
                return cli_usage_error(c, "--jobs: expected an integer in [1, 1024], got \"%s\"", v);
            break;
        case O_SHARD:
            if (parse_shard(v, o))
                return cli_usage_error(c, "--shard: expected i/N with 0 <= i < N (shards count from 0, as --index), "
                                          "got \"%s\"", v);
            break;
        }
    }
    if (k == CLI_EXIT) return a.status;
    char **rest;
    int n = cli_rest(&a, &rest);
    if (n != 1) return n ? cli_usage_error(c, "one SWEEP.yaml, not %d", n) : cli_usage_error(c, "no sweep file given");
    o->path = rest[0];
    if (o->index >= 0 && o->shard_n) return cli_usage_error(c, "give --index or --shard, not both");
    if (o->verify_steps && !o->verify_code) return cli_usage_error(c, "--verify-steps needs --verify-code");
    if (o->verify_code && !codever_is_commit(codever_commit()))
        fprintf(stderr, "gated sweep: --verify-code: this build has no commit (built outside a git checkout), so "
                        "nothing can be verified; results of other code are rerun\n");
    if (o->json && !o->dry_run) return cli_usage_error(c, "--json goes with --dry-run");
    return -1;
}

/* Whether --index / --shard select run i. */
static int selected(const SweepOpts *o, int i) {
    return (o->index < 0 || i == o->index) && (!o->shard_n || i % o->shard_n == o->shard_i);
}

/* ------------------------------------------------------------------ */
/* jobs                                                                */
/* ------------------------------------------------------------------ */

typedef enum { OUT_PENDING, OUT_FINISHED, OUT_DIVERGED, OUT_FAILED, OUT_SKIPPED } Outcome;

typedef struct {
    SweepRun *run;
    char stored[16]; /* status in the database, "-" if absent */
    char why[200];   /* why it runs / is skipped */
    int run_it;      /* 1: launch */
    int verify;      /* --verify-code: re-execute its first steps first (run_it stays 1: if they differ) */
    int verified;    /* the verification was made (whatever it found) */
    int resume;      /* a killed run: continue from its checkpoint */
    int skip_failed; /* skipped although failed */
    int live;        /* skipped: running in another process (not waited for) */
    Outcome outcome;
    pid_t pid;
    double t0;
    char *log;
} Job;

/* Whether a run's stored result is valid for this build (run/codever.h):
 * the same cflags, and the same code version or a commit whose
 * result-computing code (codever_result_paths) git finds unchanged. */
static int same_code(const StoreRunState *rs, const char *code) {
    return codever_same_results(rs->code_version, rs->cflags, code, codever_cflags(), codever_git_unchanged, NULL);
}

/* The steps --verify-code re-executes for run r: --verify-steps, and at
 * least up to the first evaluation (train.eval_every) and one step past the
 * warmup (so both branches of the learning-rate schedule run), at most the
 * run's train.steps. */
static long verify_window(const SweepRun *r, const SweepOpts *o) {
    long n = o->verify_steps, e = r->config.eval_every, w = (long)r->config.warmup + 1;
    if (n < e)
        n = e;
    if (n < w)
        n = w;
    return n < r->config.steps ? n : r->config.steps;
}

/* Decide what to do with j given the run's state (status NULL: absent).
 * t0: when this sweep started (unix seconds); a result that ended after it
 * was made by another worker meanwhile and is never redone, not even with
 * --force.  A result of other code or flags stands when this build has
 * attested it (rs->attest); else --verify-code verifies it first. */
static void plan_state(Job *j, const StoreRunState *rs, const char *code, const SweepOpts *o, double t0) {
    char qv[64];
    const char *s = rs->status;
    j->run_it = j->resume = j->skip_failed = j->verify = j->live = 0;
    store_escape(s ? s : "-", j->stored, sizeof j->stored); /* text from the database is printed escaped */
    if (!s) {
        j->run_it = 1;
        snprintf(j->why, sizeof j->why, "new");
        return;
    }
    if (strcmp(s, "finished") == 0 || strcmp(s, "diverged") == 0) {
        const char *v = rs->code_version;
        char was[120];
        if (v && strcmp(v, code) == 0)
            snprintf(was, sizeof was, "%s with other compiler flags", s);
        else
            snprintf(was, sizeof was, "%s by code %.12s, now %.12s", s, v ? store_escape(v, qv, sizeof qv) : "?",
                     code);
        if (!isnan(rs->ended_at) && rs->ended_at >= t0) {
            snprintf(j->why, sizeof j->why, "%s by another worker since this sweep started", s);
        } else if (o->force) {
            j->run_it = 1;
            snprintf(j->why, sizeof j->why, "%s, rerun (--force)", s);
        } else if (same_code(rs, code)) {
            snprintf(j->why, sizeof j->why, "already %s", s);
        } else if (rs->attest) {
            snprintf(j->why, sizeof j->why, "%s, verified equal under %.12s (%lld steps, %lld rows)", was, code,
                     rs->attest->steps, rs->attest->rows);
        } else if (o->verify_code && !j->verified && codever_is_commit(code)) {
            j->run_it = j->verify = 1;
            snprintf(j->why, sizeof j->why, "%s: verify its first %ld steps, rerun if they differ", was,
                     verify_window(j->run, o));
        } else {
            j->run_it = 1;
            snprintf(j->why, sizeof j->why, "%s: rerun", was);
        }
        return;
    }
    if (strcmp(s, "killed") == 0) {
        j->run_it = j->resume = 1;
        snprintf(j->why, sizeof j->why, "killed, resuming from its checkpoint");
        return;
    }
    if (strcmp(s, "failed") == 0) {
        if (!isnan(rs->ended_at) && rs->ended_at >= t0) {
            j->skip_failed = 1;
            snprintf(j->why, sizeof j->why, "failed in another worker since this sweep started");
        } else if (o->rerun_failed || o->force) {
            j->run_it = 1;
            snprintf(j->why, sizeof j->why, "failed, rerun");
        } else {
            j->skip_failed = 1;
            snprintf(j->why, sizeof j->why, "failed (pass --rerun-failed to rerun it)");
        }
        return;
    }
    j->live = 1;
    snprintf(j->why, sizeof j->why, "%s elsewhere (a live heartbeat or claim)", j->stored);
}

/* The plan from the stored status alone (what --dry-run shows, and the
 * first guess of a real sweep: each run is decided again when claimed). */
static void plan(Job *j, Store *st, const char *code, const SweepOpts *o, double t0) {
    char buf[16], cv[128], cf[512];
    StoreRunState rs = {NULL, NULL, NAN, NULL, NULL};
    StoreAttest at;
    if (st && (rs.status = store_run_status(st, j->run->run_id, buf, sizeof buf))) {
        rs.code_version = store_run_code_version(st, j->run->run_id, cv, sizeof cv);
        rs.cflags = store_run_cflags(st, j->run->run_id, cf, sizeof cf);
        /* (an error reads as no attestation: the run is verified or rerun) */
        if (store_attest_get(st, j->run->run_id, code, codever_cflags(), &at) > 0)
            rs.attest = &at;
    }
    plan_state(j, &rs, code, o, t0);
}

typedef struct {
    Job *job;
    const char *code;
    const SweepOpts *o;
    double t0;
} ClaimCtx;

/* store_run_claim's decision: plan again from the state seen inside the
 * claim's transaction. */
static int claim_decide(void *ctx, const StoreRunState *rs) {
    ClaimCtx *c = ctx;
    plan_state(c->job, rs, c->code, c->o, c->t0);
    return c->job->run_it;
}

static int cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* environ without OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / GATED_RUN_OWNER,
 * plus the first two set to threads and GATED_RUN_OWNER to owner (the
 * sweep's claim token, so the child can accept the claim made for it).
 * The strings of environ are shared; free only the array and the three
 * added entries (*own). */
static char **child_env(int threads, const char *owner, char *own[3]) {
    size_t n = 0;
    while (environ[n])
        n++;
    size_t ol = strlen(owner) + 24;
    char **env = malloc((n + 4) * sizeof *env);
    own[0] = malloc(48);
    own[1] = malloc(48);
    own[2] = malloc(ol);
    if (!env || !own[0] || !own[1] || !own[2]) {
        free(env), free(own[0]), free(own[1]), free(own[2]);
        own[0] = own[1] = own[2] = NULL;
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16) != 0 && strncmp(environ[i], "OPENBLAS_NUM_THREADS=", 21) != 0 &&
            strncmp(environ[i], "GATED_RUN_OWNER=", 16) != 0)
            env[k++] = environ[i];
    snprintf(own[0], 48, "OMP_NUM_THREADS=%d", threads);
    snprintf(own[1], 48, "OPENBLAS_NUM_THREADS=%d", threads);
    snprintf(own[2], ol, "GATED_RUN_OWNER=%s", owner);
    env[k++] = own[0];
    env[k++] = own[1];
    env[k++] = own[2];
    env[k] = NULL;
    return env;
}

/* DIR/logs/NAME.SUFFIX, with bytes of NAME outside [A-Za-z0-9._,=+-] as '_'. */
static char *log_path(const char *logdir, const char *name, const char *suffix) {
    size_t n = strlen(logdir) + strlen(name) + strlen(suffix) + 4;
    char *p = malloc(n);
    if (!p)
        return NULL;
    size_t o = (size_t)snprintf(p, n, "%s/", logdir);
    for (const char *c = name; *c; c++) {
        char ch = *c;
        int ok =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("._,=+-", ch);
        p[o++] = ok && !(c == name && ch == '.') ? ch : '_';
    }
    snprintf(p + o, n - o, "%s", suffix);
    return p;
}

/* Start `gated train` for run r into db, with checkpoints in ckptdir,
 * stdout and stderr to log, and the extra arguments extra (NULL-terminated)
 * after the run's own; the child's pid into *pid.  0 ok, -1 (message
 * printed). */
static int spawn_train(const SweepRun *r, const Sweep *sw, const char *db, const char *data, const char *ckptdir,
                       const char *const *extra, char **envp, const char *log, pid_t *pid) {
    int argc = 0, nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    char **argv = calloc((size_t)(3 + 2 * r->noverrides + 10 + nextra), sizeof *argv);
    if (!argv) {
        fprintf(stderr, "gated sweep: out of memory\n");
        return -1;
    }
    argv[argc++] = "gated";
    argv[argc++] = "train";
    argv[argc++] = sw->base;
    for (int i = 0; i < r->noverrides; i++) {
        argv[argc++] = "--set";
        argv[argc++] = r->overrides[i];
    }
    argv[argc++] = "--name";
    argv[argc++] = r->name;
    argv[argc++] = "--db";
    argv[argc++] = (char *)db;
    argv[argc++] = "--data";
    argv[argc++] = (char *)data;
    argv[argc++] = "--ckpt";
    argv[argc++] = (char *)ckptdir;
    for (int i = 0; i < nextra; i++)
        argv[argc++] = (char *)extra[i];
    argv[argc] = NULL;

    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "gated sweep: %s: %s\n", log, strerror(errno));
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, fd, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, fd, 2);
    if (rc == 0)
        rc = posix_spawn(pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    free(argv);
    if (rc != 0) {
        fprintf(stderr, "gated sweep: cannot start %s: %s\n", r->name, strerror(rc));
        return -1;
    }
    return 0;
}

/* Start job j's child.  0 ok, -1 (message printed). */
static int spawn_job(Job *j, const Sweep *sw, const SweepOpts *o, char **envp, const char *logdir,
                     const char *ckptdir) {
    static const char *const resume[] = {"--resume", NULL};
    j->log = log_path(logdir, j->run->name, ".log");
    if (!j->log) {
        fprintf(stderr, "gated sweep: out of memory\n");
        return -1;
    }
    if (spawn_train(j->run, sw, o->db, o->data, ckptdir, j->resume ? resume : NULL, envp, j->log, &j->pid))
        return -1;
    j->t0 = util_now();
    return 0;
}

/* The last lines of a log, indented, to stderr. */
static void print_tail(const char *path, int lines) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[4096];
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        start = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    }
    if (fseek(f, start, SEEK_SET) != 0)
        start = 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\r' || buf[i] == '\0')
            buf[i] = '\n';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    const char *p = buf + n;
    int k = 0;
    while (p > buf && k < lines) {
        p--;
        if (*p == '\n')
            k++;
    }
    if (*p == '\n')
        p++;
    while (*p) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        if (len > 0) {
            char line[4096];
            snprintf(line, sizeof line, "%.*s", len, p);
            fputs("    | ", stderr);
            store_fput_escaped(stderr, line); /* a child's output may hold escape codes */
            fputc('\n', stderr);
        }
        p += len + (e != NULL);
    }
}

/* After job j's child exited with wait status ws: end the sweep's claim
 * (marking a run the child left 'running' failed, or killed for SIGKILL /
 * SIGTERM / SIGINT), read the stored status, report. */
static void finish_job(Job *j, int ws, Store *st, const char *owner, int done, int total) {
    char buf[16], why[160] = "";
    const SweepRun *r = j->run;
    int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0, code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (sig)
        snprintf(why, sizeof why, "gated train was killed by signal %d (%s)", sig, strsignal(sig));
    else if (code != 0)
        snprintf(why, sizeof why, "gated train exited with status %d", code);
    int killed = sig == SIGKILL || sig == SIGTERM || sig == SIGINT || code == 128 + SIGINT || code == 128 + SIGTERM;
    int ended = store_run_release(st, r->run_id, owner, killed ? "killed" : "failed",
                                  *why ? why : "gated train exited 0 but left the run running");
    if (ended < 0)
        fprintf(stderr, "gated sweep: %s\n", store_errmsg(st));
    const char *s = store_run_status(st, r->run_id, buf, sizeof buf);
    double dt = util_now() - j->t0;
    if (!sig && code == 0 && s && (strcmp(s, "finished") == 0 || strcmp(s, "diverged") == 0)) {
        j->outcome = s[0] == 'f' ? OUT_FINISHED : OUT_DIVERGED;
        printf("[%d/%d] %s %s (%.1f s)\n", done, total, s, r->name, dt);
        fflush(stdout);
        return;
    }
    j->outcome = OUT_FAILED;
    if (!*why)
        snprintf(why, sizeof why, "gated train exited 0 but the run is %s", ended > 0 ? "running" : s ? s : "not in the database");
    printf("[%d/%d] FAILED %s (%.1f s): %s; status %s; log %s\n", done, total, r->name, dt, why, s ? s : "-", j->log);
    fflush(stdout);
    print_tail(j->log, 12);
}

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) { stop_requested = sig; }

/* Seconds between refreshes of this sweep's claims (well inside
 * STORE_STALE_SECONDS, after which an unrefreshed claim is void). */
#define CLAIM_REFRESH_S 5

/* Wait for a child to exit, refreshing this sweep's claims every
 * CLAIM_REFRESH_S seconds meanwhile (*last_refresh: CLOCK_MONOTONIC
 * seconds).  The child's pid, or -1 with errno (EINTR: a stop signal
 * arrived; check stop_requested).  SIGCHLD is blocked only in here, so
 * children start with the mask the sweep had. */
static pid_t wait_child(int *ws, Store *st, const char *owner, double *last_refresh, int forwarded) {
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    pid_t pid;
    for (;;) {
        if (util_now() - *last_refresh >= CLAIM_REFRESH_S) {
            if (store_claim_refresh(st, owner))
                fprintf(stderr, "gated sweep: %s\n", store_errmsg(st));
            *last_refresh = util_now();
        }
        pid = waitpid(-1, ws, WNOHANG);
        if (pid != 0)
            break; /* a child, or an error */
        if (stop_requested && !forwarded) {
            errno = EINTR;
            pid = -1;
            break;
        }
        double left = CLAIM_REFRESH_S - (util_now() - *last_refresh);
        if (left < 0.01)
            left = 0.01;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        if (sigtimedwait(&chld, NULL, &ts) < 0 && errno == EINTR) {
            pid = -1;
            break;
        }
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

/* ------------------------------------------------------------------ */
/* gated sweep                                                         */
/* ------------------------------------------------------------------ */

static void print_dry(const Sweep *sw, Job *jobs, int n) {
    int nseeds = sw->nseeds ? sw->nseeds : 1;
    printf("sweep %s: %d of %d runs (%s: %d row%s x %d seed%s), base %s, baseline %s\n", sw->name, n, sw->nruns,
           sweep_method_names[sw->method], sw->nrows, sw->nrows == 1 ? "" : "s", nseeds, nseeds == 1 ? "" : "s",
           sw->base, sw->baseline ? sw->baseline : "-");
    int namew = 4;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(jobs[i].run->name);
        if (l > namew)
            namew = l > 48 ? 48 : l;
    }
    int dow = 4, nverify = 0;
    for (int i = 0; i < n; i++)
        nverify += jobs[i].verify;
    if (nverify)
        dow = 6;
    printf("%5s  %-8s  %-*s  %-16s  %-*s  %s\n", "index", "status", dow, "do", "run id", namew, "name", "overrides");
    for (int i = 0; i < n; i++) {
        const SweepRun *r = jobs[i].run;
        printf("%5d  %-8s  %-*s  %-16s  %-*s ", r->index, jobs[i].stored, dow,
               jobs[i].verify ? "verify" : jobs[i].run_it ? "run" : "skip", r->run_id, namew, r->name);
        for (int k = 0; k < r->noverrides; k++)
            printf(" %s", r->overrides[k]);
        printf("%s\n", r->is_baseline ? "  (baseline)" : "");
    }
    for (int i = 0; i < n; i++)
        if (jobs[i].verify)
            printf("verify %s (index %d): %s\n", jobs[i].run->name, jobs[i].run->index, jobs[i].why);
}

/* --dry-run --json: the same plan as one JSON document. */
static void print_dry_json(const Sweep *sw, const SweepOpts *o, Job *jobs, int n) {
    printf("{\"sweep\":");
    json_fput(sw->name, stdout);
    printf(",\"file\":");
    json_fput(sw->path, stdout);
    printf(",\"method\":\"%s\",\"rows\":%d,\"seeds\":%d,\"base\":", sweep_method_names[sw->method], sw->nrows,
           sw->nseeds ? sw->nseeds : 1);
    json_fput(sw->base, stdout);
    printf(",\"baseline\":");
    if (sw->baseline)
        json_fput(sw->baseline, stdout);
    else
        printf("null");
    printf(",\"db\":");
    json_fput(o->db, stdout);
    printf(",\"total_runs\":%d,\"selected\":%d,\"runs\":[", sw->nruns, n);
    for (int i = 0; i < n; i++) {
        const SweepRun *r = jobs[i].run;
        printf("%s{\"index\":%d,\"row\":%d,\"label\":", i ? "," : "", r->index, r->row);
        json_fput(r->label, stdout);
        printf(",\"seed\":%lld,\"name\":", r->seed);
        json_fput(r->name, stdout);
        printf(",\"run_id\":\"%s\",\"is_baseline\":%s,\"stored_status\":", r->run_id,
               r->is_baseline ? "true" : "false");
        if (strcmp(jobs[i].stored, "-") != 0)
            json_fput(jobs[i].stored, stdout);
        else
            printf("null");
        printf(",\"action\":\"%s\",\"why\":", jobs[i].run_it ? "run" : "skip");
        json_fput(jobs[i].why, stdout);
        printf(",\"overrides\":[");
        for (int k = 0; k < r->noverrides; k++) {
            if (k) putchar(',');
            json_fput(r->overrides[k], stdout);
        }
        printf("]}");
    }
    printf("]}\n");
}

/* One `gated sweep`, shared by its phases: select, (dry run | prepare the
 * store and the children's environment), run the jobs, summary. */
typedef struct {
    const SweepOpts *o;
    Sweep *sw;
    Job *jobs; /* the selected runs */
    int n;
    Store *st;
    char owner[300]; /* this sweep's claim token */
    char code[128];  /* code version */
    char blas[256];  /* this build's OpenBLAS, as runs record it (openblas_version) */
    double t0;       /* when the sweep started, unix seconds (as the store's times) */
    StoreSweepRun *rec;
    char **envp, *own[3], *dbdir, *logdir, *ckptdir;
    char **venvp, *vown[3]; /* --verify-code's children: all cores each, one at a time */
    int nrun, threads;
    /* the jobs' loop */
    int next, running, done, failed_now, forwarded, total;
    double last_refresh;
    const char *stop_why;
} SweepCtx;

/* What a phase returns to go on (else it returns the exit code). */
enum { GO = -1 };

static int sweep_oom(void) {
    fprintf(stderr, "gated sweep: out of memory\n");
    return EXIT_RUNTIME;
}

/* The runs --index / --shard select, as jobs; the code version. */
static int sweep_select(SweepCtx *x) {
    const SweepOpts *o = x->o;
    const Sweep *sw = x->sw;
    store_owner_token(x->owner, sizeof x->owner);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    x->t0 = (double)rt.tv_sec + 1e-9 * (double)rt.tv_nsec;
    x->jobs = calloc((size_t)sw->nruns, sizeof *x->jobs);
    if (!x->jobs)
        return sweep_oom();
    for (int i = 0; i < sw->nruns; i++)
        if (selected(o, i))
            x->jobs[x->n++].run = &sw->runs[i];
    Provenance prov;
    store_provenance_fill(&prov);
    snprintf(x->code, sizeof x->code, "%s", prov.code_version ? prov.code_version : "unknown");
    snprintf(x->blas, sizeof x->blas, "%s", prov.openblas_version ? prov.openblas_version : "unknown");
    return GO;
}

/* --dry-run: the plan from what is stored, printed; reading only (the
 * database is neither created nor changed).  Returns the exit code. */
static int sweep_dry_run(SweepCtx *x) {
    char dberr[1024];
    if (access(x->o->db, F_OK) == 0 && store_open_ro(&x->st, x->o->db, dberr, sizeof dberr)) {
        fprintf(stderr, "gated sweep: %s\n", dberr);
        return EXIT_BADINPUT;
    }
    for (int i = 0; i < x->n; i++)
        plan(&x->jobs[i], x->st, x->code, x->o, x->t0);
    if (x->o->json)
        print_dry_json(x->sw, x->o, x->jobs, x->n);
    else
        print_dry(x->sw, x->jobs, x->n);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
}

/* The database (its directory made), the selection's membership recorded
 * first (so a report sees the whole selection), then each job planned. */
static int sweep_open_store(SweepCtx *x) {
    const SweepOpts *o = x->o;
    char dberr[1024];
    x->dbdir = cli_dir_of(o->db);
    if (!x->dbdir)
        return sweep_oom();
    if (util_mkdir_p(x->dbdir) != 0) {
        fprintf(stderr, "gated sweep: %s: %s\n", x->dbdir, strerror(errno));
        return EXIT_RUNTIME;
    }
    if (store_open(&x->st, o->db, dberr, sizeof dberr)) {
        fprintf(stderr, "gated sweep: %s\n", dberr);
        return EXIT_BADINPUT;
    }
    x->rec = calloc((size_t)(x->n ? x->n : 1), sizeof *x->rec);
    if (!x->rec)
        return sweep_oom();
    for (int i = 0; i < x->n; i++) {
        const SweepRun *r = x->jobs[i].run;
        x->rec[i] = (StoreSweepRun){r->run_id, r->label, r->seed, r->index, r->is_baseline};
    }
    if (store_sweep_record(x->st, x->sw->name, x->sw->nruns, x->rec, x->n)) {
        fprintf(stderr, "gated sweep: %s\n", store_errmsg(x->st));
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < x->n; i++) {
        plan(&x->jobs[i], x->st, x->code, o, x->t0);
        x->nrun += x->jobs[i].run_it;
    }
    return GO;
}

/* The children's environment, log and checkpoint directories. */
static int sweep_prepare_children(SweepCtx *x) {
    const SweepOpts *o = x->o;
    x->threads = cpu_count() / (int)o->jobs;
    if (x->threads < 1)
        x->threads = 1;
    x->envp = child_env(x->threads, x->owner, x->own);
    size_t ll = strlen(x->dbdir) + 16;
    x->logdir = malloc(ll);
    x->ckptdir = malloc(ll);
    if (!x->envp || !x->logdir || !x->ckptdir)
        return sweep_oom();
    snprintf(x->logdir, ll, "%s/logs", x->dbdir);
    snprintf(x->ckptdir, ll, "%s/checkpoints", x->dbdir);
    if (x->nrun && util_mkdir_p(x->logdir) != 0) {
        fprintf(stderr, "gated sweep: %s: %s\n", x->logdir, strerror(errno));
        return EXIT_RUNTIME;
    }
    return GO;
}

/* The plan, printed: the selection, and why each run not run is skipped. */
static int sweep_print_plan(SweepCtx *x) {
    const SweepOpts *o = x->o;
    printf("sweep %s: %d of %d runs selected, %d to run, %ld job%s x %d thread%s, db %s\n", x->sw->name, x->n,
           x->sw->nruns, x->nrun, o->jobs, o->jobs == 1 ? "" : "s", x->threads, x->threads == 1 ? "" : "s", o->db);
    for (int i = 0; i < x->n; i++)
        if (!x->jobs[i].run_it) {
            x->jobs[i].outcome = OUT_SKIPPED;
            printf("skip %s (index %d): %s\n", x->jobs[i].run->name, x->jobs[i].run->index, x->jobs[i].why);
        }
    fflush(stdout);
    return GO;
}

/* ------------------------------------------------------------------ */
/* --verify-code                                                       */
/* ------------------------------------------------------------------ */

/* nftw callback: remove one entry of the scratch directory (deepest
 * first; links are not followed). */
static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "gated sweep: %s: %s\n", path, strerror(errno));
    return 0;
}

/* Wait for the verification child pid, forwarding a stop signal to it once
 * (it checkpoints and ends as killed).  0 with *ws, or -1. */
static int wait_verify(pid_t pid, int *ws) {
    int forwarded = 0;
    for (;;) {
        pid_t r = waitpid(pid, ws, 0);
        if (r == pid)
            return 0;
        if (r < 0 && errno == EINTR) {
            if (stop_requested && !forwarded)
                kill(pid, SIGTERM), forwarded = 1;
            continue;
        }
        fprintf(stderr, "gated sweep: waitpid: %s\n", strerror(errno));
        return -1;
    }
}

/* The re-execution's arguments after the run's own (argv: 5 slots): its
 * first n steps (the whole run when n is all of it) and, for continued
 * training, the parent's checkpoint as a file (the scratch database does
 * not hold the parent run); the re-execution's run id into vid (the same as
 * the run's but when train.init_from is replaced).  0, or -1 (why). */
static int verify_args(const SweepCtx *x, const SweepRun *r, long n, char nbuf[24], char *initbuf, size_t icap,
                       const char *argv[5], char vid[17], char *why, size_t wcap) {
    int k = 0;
    snprintf(vid, 17, "%s", r->run_id);
    if (r->config.init_from[0]) {
        Config parent, c = r->config;
        char path[sizeof c.init_from], pid[17], err[1024];
        if (trained_locate(r->config.init_from, x->o->db, x->ckptdir, &parent, path, sizeof path, pid, err,
                           sizeof err)) {
            snprintf(why, wcap, "train.init_from: %s", err);
            return -1;
        }
        snprintf(c.init_from, sizeof c.init_from, "%s", path);
        char *json = store_config_json(&c, vid);
        if (!json) {
            snprintf(why, wcap, "out of memory");
            return -1;
        }
        free(json);
        snprintf(initbuf, icap, "train.init_from=%s", path);
        argv[k++] = "--set";
        argv[k++] = initbuf;
    }
    if (n < r->config.steps) {
        snprintf(nbuf, 24, "%ld", n);
        argv[k++] = "--stop-after";
        argv[k++] = nbuf;
    }
    argv[k] = NULL;
    return 0;
}

/* The OpenBLAS kernel to re-execute run r on (blas_kernel.h): "" for this
 * machine's, else a name for OPENBLAS_CORETYPE; the stored run's
 * openblas_version into stored.  0, or -1 with why (then a bitwise
 * comparison could not succeed here, so none is tried). */
static int verify_kernel(const SweepCtx *x, const SweepRun *r, char *kernel, size_t kcap, char *stored,
                         size_t scap, char *why, size_t wcap) {
    StoreRunInfo info;
    if (store_run_info(x->st, r->run_id, &info)) {
        snprintf(why, wcap, "%s", store_errmsg(x->st));
        return -1;
    }
    snprintf(stored, scap, "%s", info.openblas_version ? info.openblas_version : "");
    int k = blas_kernel_pick(info.openblas_version, x->blas, kernel, kcap, why, wcap);
    store_run_info_free(&info);
    return k < 0 ? -1 : 0;
}

/* Whether the re-execution vid in database vdb ran on the OpenBLAS build
 * and kernel stored (OpenBLAS may ignore an OPENBLAS_CORETYPE it cannot
 * use): 0, or -1 with why. */
static int same_blas(const char *vdb, const char *vid, const char *stored, char *why, size_t wcap) {
    Store *vs = NULL;
    StoreRunInfo vi;
    char err[1024], q[200];
    if (store_open_ro(&vs, vdb, err, sizeof err)) {
        snprintf(why, wcap, "%s", err);
        return -1;
    }
    int rc = 0;
    if (store_run_info(vs, vid, &vi)) {
        snprintf(why, wcap, "%s", store_errmsg(vs));
        rc = -1;
    } else {
        if (!vi.openblas_version || strcmp(vi.openblas_version, stored) != 0) {
            snprintf(why, wcap, "the re-execution ran on \"%s\", not the stored run's OpenBLAS kernel",
                     store_escape(vi.openblas_version ? vi.openblas_version : "?", q, sizeof q));
            rc = -1;
        }
        store_run_info_free(&vi);
    }
    store_close(vs);
    return rc;
}

/* A whole-run verification made the run's final checkpoint again (in the
 * scratch directory vck): it goes where the run's own would be
 * (DBDIR/checkpoints/RUN_ID.ckpt), so `gated eval` can use it.  A file
 * already there is replaced: it may be the final one (then the two differ
 * only in the training wall time) or left by another execution of the run
 * id that was stopped early (a rerun later undone by a merge), which `gated
 * eval` would evaluate at its step; the verified one is the run's final
 * state.  Only for a run that does not start from another's weights (its
 * re-execution's id and checkpoint are the run's own). */
static void keep_checkpoint(const SweepCtx *x, const char *vck, const SweepRun *r) {
    size_t l = strlen(x->ckptdir) + strlen(vck) + 64;
    char *from = malloc(l), *to = malloc(l);
    if (!from || !to) {
        fprintf(stderr, "gated sweep: out of memory\n");
        goto out;
    }
    snprintf(from, l, "%s/%s.ckpt", vck, r->run_id);
    snprintf(to, l, "%s/%s.ckpt", x->ckptdir, r->run_id);
    if (access(from, F_OK) != 0)
        goto out; /* nothing written: no checkpoint to keep */
    int had = access(to, F_OK) == 0;
    char err[1024];
    /* written for the scratch database, on behalf of the run in this one */
    if (checkpoint_retag(from, store_db_id(x->st), err, sizeof err))
        fprintf(stderr, "gated sweep: keeping %s: %s\n", from, err);
    else if (util_mkdir_p(x->ckptdir) != 0 || rename(from, to) != 0)
        fprintf(stderr, "gated sweep: keeping %s as %s: %s\n", from, to, strerror(errno));
    else
        printf("verify %s: the whole run was re-executed: its final checkpoint is now %s%s\n", r->name, to,
               had ? " (replacing the file there)" : "");
out:
    free(from);
    free(to);
}

/* Re-execute job j's run for its first steps with this build into a
 * scratch database (DBDIR/verify-XXXXXX, removed afterwards; the log is
 * DBDIR/logs/NAME.verify.log), compare every row of those steps with the
 * stored ones, and record an attestation when all are bitwise equal. */
static void verify_job(SweepCtx *x, Job *j) {
    const SweepRun *r = j->run;
    long n = verify_window(r, x->o);
    size_t dl = strlen(x->dbdir) + 64;
    char *tmp = malloc(dl), *vdb = malloc(dl), *vck = malloc(dl), *log = log_path(x->logdir, r->name, ".verify.log");
    char nbuf[24], initbuf[300], vid[17], why[1200] = "", kernel[32] = "", stored_blas[256] = "";
    char **kenv = NULL, *kown = NULL;
    const char *extra[5];
    if (!tmp || !vdb || !vck || !log) {
        snprintf(why, sizeof why, "out of memory");
        goto out;
    }
    snprintf(tmp, dl, "%s/verify-XXXXXX", x->dbdir);
    if (!mkdtemp(tmp)) {
        snprintf(why, sizeof why, "%s: %s", tmp, strerror(errno));
        free(tmp), tmp = NULL; /* nothing to remove */
        goto out;
    }
    snprintf(vdb, dl, "%s/verify.db", tmp);
    snprintf(vck, dl, "%s/checkpoints", tmp);
    if (verify_args(x, r, n, nbuf, initbuf, sizeof initbuf, extra, vid, why, sizeof why))
        goto out;
    if (verify_kernel(x, r, kernel, sizeof kernel, stored_blas, sizeof stored_blas, why, sizeof why))
        goto out;
    if (kernel[0] && !(kenv = blas_kernel_env(x->venvp, kernel, &kown))) {
        snprintf(why, sizeof why, "out of memory");
        goto out;
    }
    printf("verify %s (index %d, run %s): %s%s%s\n", r->name, r->index, r->run_id, j->why,
           kernel[0] ? ", on the OpenBLAS kernel it was made with: OPENBLAS_CORETYPE=" : "", kernel);
    fflush(stdout);
    pid_t pid;
    int ws;
    double t0 = util_now();
    if (spawn_train(r, x->sw, vdb, x->o->data, vck, extra, kenv ? kenv : x->venvp, log, &pid) ||
        wait_verify(pid, &ws)) {
        snprintf(why, sizeof why, "gated train could not be run");
        goto out;
    }
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        if (WIFSIGNALED(ws))
            snprintf(why, sizeof why, "the re-execution was killed by signal %d; log %s", WTERMSIG(ws), log);
        else
            snprintf(why, sizeof why, "the re-execution exited with status %d; log %s", WEXITSTATUS(ws), log);
        print_tail(log, 12);
        goto out;
    }
    if (kernel[0] && same_blas(vdb, vid, stored_blas, why, sizeof why))
        goto out;
    StoreAttestCmp cmp;
    if (store_attest_compare(x->st, r->run_id, vdb, vid, n, &cmp)) {
        snprintf(why, sizeof why, "%s", store_errmsg(x->st));
        goto out;
    }
    if (!cmp.equal) {
        snprintf(why, sizeof why, "differs: %s (%lld row%s, %lld equal)", cmp.first, cmp.ndiff,
                 cmp.ndiff == 1 ? " differs" : "s differ", cmp.rows);
        goto out;
    }
    int rec = store_attest_record(x->st, r->run_id, x->code, codever_dirty(), codever_cflags(), &cmp);
    if (rec < 0)
        snprintf(why, sizeof why, "%s", store_errmsg(x->st));
    else if (rec == 0)
        snprintf(why, sizeof why, "equal, but the stored run changed meanwhile; nothing recorded");
    else {
        printf("verified %s (index %d): %lld steps, %lld rows bitwise equal (%.1f s); kept as this build's result\n",
               r->name, r->index, cmp.steps, cmp.rows, util_now() - t0);
        if (n == r->config.steps && strcmp(vid, r->run_id) == 0)
            keep_checkpoint(x, vck, r);
    }
out:
    if (*why)
        printf("verify %s (index %d): %s; rerun\n", r->name, r->index, why);
    fflush(stdout);
    if (tmp && nftw(tmp, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "gated sweep: %s: %s\n", tmp, strerror(errno));
    free(tmp);
    free(vdb);
    free(vck);
    free(log);
    free(kenv);
    free(kown);
}

/* --verify-code: each job planned for verification (a result of other
 * code or flags, without an attestation for this build) is verified, one
 * at a time with every core, then planned again: kept when attested, else
 * rerun as before.  GO, or the exit code (a stop signal). */
static int sweep_verify(SweepCtx *x) {
    int nv = 0;
    for (int i = 0; i < x->n; i++)
        nv += x->jobs[i].verify;
    if (!nv)
        return GO;
    x->venvp = child_env(cpu_count(), x->owner, x->vown);
    if (!x->venvp)
        return sweep_oom();
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    x->nrun = 0;
    for (int i = 0; i < x->n; i++) {
        Job *j = &x->jobs[i];
        if (j->verify && !stop_requested) {
            verify_job(x, j);
            j->verified = 1;
            plan(j, x->st, x->code, x->o, x->t0);
        }
        x->nrun += j->run_it;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (stop_requested) {
        printf("interrupted while verifying: no run started\n");
        fflush(stdout);
        return EXIT_SIGNAL_BASE + stop_requested;
    }
    return GO;
}

/* Job j could not be claimed or started: failed now. */
static void job_failed(SweepCtx *x, Job *j) {
    j->outcome = OUT_FAILED;
    x->failed_now++;
    x->done++;
    if (x->o->fail_fast)
        x->stop_why = "--fail-fast";
}

/* Claim job j (decided again, atomically, from what is stored now) and
 * start its child, or skip it. */
static void launch_job(SweepCtx *x, Job *j) {
    char seen[16];
    ClaimCtx cc = {j, x->code, x->o, x->t0};
    int c = store_run_claim(x->st, j->run->run_id, x->owner, claim_decide, &cc, seen, sizeof seen);
    if (c < 0) {
        fprintf(stderr, "gated sweep: %s: %s\n", j->run->name, store_errmsg(x->st));
        job_failed(x, j);
        return;
    }
    if (c != STORE_CLAIMED) {
        if (c == STORE_CLAIM_LIVE) {
            j->live = 1;
            store_escape(seen, j->stored, sizeof j->stored);
            snprintf(j->why, sizeof j->why, "running elsewhere (claimed by another process)");
        }
        j->outcome = OUT_SKIPPED;
        x->total--;
        printf("skip %s (index %d): %s\n", j->run->name, j->run->index, j->why);
        fflush(stdout);
        return;
    }
    if (spawn_job(j, x->sw, x->o, x->envp, x->logdir, x->ckptdir) != 0) {
        if (store_run_release(x->st, j->run->run_id, x->owner, "failed", "gated train could not be started") < 0)
            fprintf(stderr, "gated sweep: %s\n", store_errmsg(x->st));
        job_failed(x, j);
        return;
    }
    x->running++;
    printf("start %s (index %d, run %s): %s\n", j->run->name, j->run->index, j->run->run_id, j->why);
    fflush(stdout);
}

/* Up to --jobs children at once until every job ran, or a stop (a signal,
 * --fail-fast) lets the running ones finish and starts no more. */
static void sweep_run_jobs(SweepCtx *x) {
    const SweepOpts *o = x->o;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    x->total = x->nrun;
    x->last_refresh = util_now();
    for (;;) {
        if (stop_requested && !x->stop_why)
            x->stop_why = "interrupted";
        if (x->failed_now && o->fail_fast && !x->stop_why)
            x->stop_why = "--fail-fast";
        while (!x->stop_why && x->running < o->jobs && x->next < x->n) {
            Job *j = &x->jobs[x->next++];
            if (j->run_it)
                launch_job(x, j);
        }
        if (stop_requested && !x->forwarded) {
            for (int i = 0; i < x->n; i++)
                if (x->jobs[i].pid > 0 && x->jobs[i].outcome == OUT_PENDING)
                    kill(x->jobs[i].pid, SIGTERM);
            x->forwarded = 1;
        }
        if (x->running == 0)
            break;
        int ws;
        pid_t pid = wait_child(&ws, x->st, x->owner, &x->last_refresh, x->forwarded);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "gated sweep: waitpid: %s\n", strerror(errno));
            break;
        }
        for (int i = 0; i < x->n; i++)
            if (x->jobs[i].pid == pid && x->jobs[i].outcome == OUT_PENDING) {
                x->running--;
                x->done++;
                finish_job(&x->jobs[i], ws, x->st, x->owner, x->done, x->total);
                x->failed_now += x->jobs[i].outcome == OUT_FAILED;
                break;
            }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}

/* The closing lines.  Returns the exit code. */
static int sweep_summary(const SweepCtx *x) {
    int F = 0, D = 0, X = 0, S = 0, skipped_failed = 0, not_started = 0, live = 0;
    for (int i = 0; i < x->n; i++) {
        switch (x->jobs[i].outcome) {
        case OUT_FINISHED: F++; break;
        case OUT_DIVERGED: D++; break;
        case OUT_FAILED: X++; break;
        case OUT_SKIPPED: S++, skipped_failed += x->jobs[i].skip_failed, live += x->jobs[i].live; break;
        case OUT_PENDING: S++, not_started++; break;
        }
    }
    if (live) /* not done here, nor known to be done: rerun the sweep once they end */
        printf("%d run%s running in another process, not waited for\n", live, live == 1 ? "" : "s");
    if (not_started)
        printf("%s: %d run%s not started\n", x->stop_why ? x->stop_why : "stopped", not_started,
               not_started == 1 ? "" : "s");
    if (skipped_failed)
        printf("%d failed run%s skipped (pass --rerun-failed to rerun)\n", skipped_failed,
               skipped_failed == 1 ? "" : "s");
    printf("sweep %s: %d runs: %d finished, %d diverged, %d failed, %d skipped\n", x->sw->name, x->n, F, D, X, S);
    fflush(stdout);
    return X || skipped_failed || not_started || live ? EXIT_RUNTIME : 0;
}

static void sweep_ctx_free(SweepCtx *x) {
    if (x->jobs)
        for (int i = 0; i < x->n; i++)
            free(x->jobs[i].log);
    free(x->jobs);
    free(x->rec);
    free(x->envp);
    free(x->own[0]);
    free(x->own[1]);
    free(x->own[2]);
    free(x->venvp);
    for (int i = 0; i < 3; i++)
        free(x->vown[i]);
    free(x->dbdir);
    free(x->logdir);
    free(x->ckptdir);
    store_close(x->st);
}

static int run_sweep(int argc, char **argv) {
    SweepOpts o;
    int rc = parse_sweep_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    Sweep sw;
    ConfigError err;
    if (sweep_load(&sw, o.path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return EXIT_BADINPUT;
    }
    if (o.index >= sw.nruns) {
        fprintf(stderr, "gated sweep: --index %ld: %s has %d runs (0-%d)\n", o.index, o.path, sw.nruns, sw.nruns - 1);
        sweep_free(&sw);
        return EXIT_BADINPUT;
    }
    if (o.count) { /* machine-readable: the number alone */
        int n = 0;
        for (int i = 0; i < sw.nruns; i++)
            n += selected(&o, i);
        sweep_free(&sw);
        printf("%d\n", n);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    SweepCtx x;
    memset(&x, 0, sizeof x);
    x.o = &o;
    x.sw = &sw;
    rc = sweep_select(&x);
    if (rc == GO && o.dry_run)
        rc = sweep_dry_run(&x);
    if (rc == GO)
        rc = sweep_open_store(&x);
    if (rc == GO)
        rc = sweep_prepare_children(&x);
    if (rc == GO && o.verify_code)
        rc = sweep_verify(&x);
    if (rc == GO)
        rc = sweep_print_plan(&x);
    if (rc == GO) {
        sweep_run_jobs(&x);
        rc = sweep_summary(&x);
        if (stop_requested)
            rc = EXIT_SIGNAL_BASE + stop_requested;
    }
    sweep_ctx_free(&x);
    sweep_free(&sw);
    return rc;
}

/* ------------------------------------------------------------------ */
/* gated merge                                                         */
/* ------------------------------------------------------------------ */

static int run_merge(int all_argc, char **all_argv) {
    static const char *const tables[] = {"runs",       "metrics",      "summary",    "histograms",
                                         "sweep_runs", "environments", "code_attest"};
    enum { NT = sizeof tables / sizeof tables[0] };
    CliArgs a;
    const char *v;
    int k;
    cli_begin(&a, &cmd_merge, all_argc, all_argv);
    while ((k = cli_next(&a, &v)) >= 0) {
    }
    if (k == CLI_EXIT)
        return a.status;
    char **argv;
    int argc = cli_rest(&a, &argv);
    if (argc < 2)
        return cli_usage_error(&cmd_merge, "needs OUT.db and at least one IN.db");
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "gated merge: %s: %s\n", argv[i], strerror(errno));
            return EXIT_BADINPUT;
        }
    }
    char err[1024];
    Store *st;
    if (store_open(&st, argv[0], err, sizeof err)) {
        fprintf(stderr, "gated merge: %s\n", err);
        return EXIT_BADINPUT;
    }
    int rc = 0;
    long long before[NT], after[NT];
    for (int t = 0; t < NT; t++)
        if ((before[t] = store_count_rows(st, tables[t])) < 0) {
            fprintf(stderr, "gated merge: %s\n", store_errmsg(st));
            store_close(st);
            return EXIT_RUNTIME;
        }
    for (int i = 1; i < argc && rc == 0; i++) {
        int m = merge_from(st, argv[i], err, sizeof err);
        if (m != 0) {
            fprintf(stderr, "gated merge: %s\n", err);
            rc = m == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
            break;
        }
        printf("merged %s:", argv[i]);
        for (int t = 0; t < NT; t++) {
            if ((after[t] = store_count_rows(st, tables[t])) < 0) {
                fprintf(stderr, "\ngated merge: %s\n", store_errmsg(st));
                rc = EXIT_RUNTIME;
                break;
            }
            printf(" %s +%lld%s", tables[t], after[t] - before[t], t + 1 < NT ? "," : "");
            before[t] = after[t];
        }
        printf("\n");
    }
    if (rc == 0)
        printf("%s: %lld runs, %lld metric rows\n", argv[0], before[0], before[1]);
    store_close(st);
    return rc;
}

const Command cmd_sweep = {
    "sweep", "SWEEP.yaml", "The runs of a sweep file (rows x seeds), each a child gated train.", opts,
    "The format is at the top of core/lab/sweep.c.  A run already finished by the same code is skipped,\n"
    "a killed one resumed, a failed one rerun only with --rerun-failed.  --verify-code first re-executes\n"
    "the first steps of a result of other code (or flags) and keeps it when every row is bitwise equal\n"
    "(README, \"Sweeps\").  Logs and checkpoints go beside the database (DBDIR/logs, DBDIR/checkpoints).\n"
    "Indices count from 0: a Slurm array --array=0-$((N-1)) runs --index $SLURM_ARRAY_TASK_ID or\n"
    "--shard $SLURM_ARRAY_TASK_ID/N.\n"
    "stdout: the plan (--dry-run), the count (--count), one line per run started, skipped or ended,\n"
    "and the summary line; stderr: a failed run's last log lines, warnings and errors.\n",
    run_sweep};
const Command cmd_merge = {"merge", "OUT.db IN.db...",
                           "Fold per-shard or per-machine databases into OUT.db, idempotently.", NULL,
                           "stdout: the rows each input added.\n", run_merge};
