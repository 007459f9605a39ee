/*
 * cmd_sweep.c — `gated sweep` and `gated merge`.
 *
 * Loads and validates the whole sweep (sweep.h; any error exits 2 before
 * anything runs), selects runs (--index I: run I alone, or a list of
 * indices and ranges, 0,3,6-11; --shard i/N: the
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
 *                               killed at once (store_run_status, and
 *                               plan_live for a run the plan saw live)
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
 * A verification holds the run's claim while it lasts, so a second sweep
 * verifying the same database leaves that run alone.
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
 *
 * Every name in a sweep file (name, labels, the names run_name gives) must
 * be printable text (store_name_check); --dry-run opens the database
 * read-only.
 *
 * Files: this one holds the options and the phases of a sweep; the plan of
 * each run is sweep_plan.c, the child processes sweep_child.c, --verify-code
 * sweep_verify.c, what they share sweep_int.h; `gated merge` is cmd_merge.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "run/codever.h"
#include "run/store.h"
#include "lab/sweep/sweep.h"
#include "util/outfile.h"
#include "util/util.h"
#include "sweep_int.h"

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
    [O_JSON] = {"json", NULL, "with --dry-run: the plan as one JSON document (docs/cli.md, \"Machine-readable output\")", 0},
    [O_COUNT] = {"count", NULL, "print the number of selected runs (all, without --index / --shard) and stop", 0},
    [O_INDEX] = {"index", "I", "run I alone (0 <= I < the --count), or a list: 0,3,6-11", 0},
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

/* --index's LIST: N or N-M (N <= M), comma-separated, digits only, each N in
 * [0, 2^30).  With pick (nruns entries), marks the runs listed.  Returns 0,
 * -1 for a malformed list, or 1 with *past the first index listed past run
 * nruns - 1 (nruns < 0: no bound). */
static int parse_index_list(const char *v, long nruns, unsigned char *pick, long *past) {
    char buf[32];
    for (const char *p = v;; p++) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof buf || strspn(p, "0123456789-") < n) return -1;
        memcpy(buf, p, n);
        buf[n] = 0;
        char *dash = strchr(buf + 1, '-');
        long lo, hi;
        if (dash) *dash = 0;
        if (util_parse_long(buf, 0, (1L << 30) - 1, &lo) ||
            (dash ? util_parse_long(dash + 1, 0, (1L << 30) - 1, &hi) || hi < lo : (hi = lo, 0)))
            return -1;
        if (nruns >= 0 && hi >= nruns) {
            *past = lo >= nruns ? lo : nruns;
            return 1;
        }
        for (long i = lo; pick && i <= hi; i++) pick[i] = 1;
        p += n;
        if (!*p) return 0;
    }
}

/* -1: go on; else the exit status. */
static int parse_sweep_args(int argc, char **argv, SweepOpts *o) {
    *o = (SweepOpts){.db = cli_default_db(), .data = "data", .jobs = 1};
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
            if (parse_index_list(v, -1, NULL, NULL))
                return cli_usage_error(c, "--index: expected a run index (0, 1, ...) or a list of them and of "
                                          "ranges (0,3,6-11), got \"%s\"", v);
            o->index = v;
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
    if (o->index && o->shard_n) return cli_usage_error(c, "give --index or --shard, not both");
    if (o->verify_steps && !o->verify_code) return cli_usage_error(c, "--verify-steps needs --verify-code");
    if (o->verify_code && !codever_is_commit(codever_commit()))
        fprintf(stderr, "gated sweep: --verify-code: this build has no commit (built outside a git checkout), so "
                        "nothing can be verified; results of other code are rerun\n");
    if (o->json && !o->dry_run) return cli_usage_error(c, "--json goes with --dry-run");
    return -1;
}

/* Whether --index / --shard select run i. */
static int selected(const SweepOpts *o, int i) {
    return (!o->pick || o->pick[i]) && (!o->shard_n || i % o->shard_n == o->shard_i);
}

/* ------------------------------------------------------------------ */
/* jobs                                                                */
/* ------------------------------------------------------------------ */


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
    int orc = access(x->o->db, F_OK) == 0 ? store_open_ro(&x->st, x->o->db, dberr, sizeof dberr) : 0;
    if (orc) {
        fprintf(stderr, "gated sweep: %s\n", dberr);
        return cli_store_exit(orc);
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
    int orc = store_open(&x->st, o->db, dberr, sizeof dberr);
    if (orc) {
        fprintf(stderr, "gated sweep: %s\n", dberr);
        return cli_store_exit(orc);
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
        plan_live(&x->jobs[i], x->st, x->owner, x->code, o, x->t0);
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
    char derr[1024];
    if (x->nrun && outfile_mkdir(x->logdir, derr, sizeof derr) != 0) { /* logs/ as a link: refused */
        fprintf(stderr, "gated sweep: %s\n", derr);
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

/* --index's list marked in o->pick (left NULL without --index): GO, or the
 * exit status (an index past the sweep's last run is bad input). */
static int sweep_pick(SweepOpts *o, const Sweep *sw) {
    long past;
    if (!o->index)
        return GO;
    if (!(o->pick = calloc((size_t)sw->nruns + 1, 1)))
        return sweep_oom();
    if (parse_index_list(o->index, sw->nruns, o->pick, &past) != 0) {
        fprintf(stderr, "gated sweep: --index %ld: %s has %d runs (0-%d)\n", past, o->path, sw->nruns, sw->nruns - 1);
        free(o->pick);
        o->pick = NULL;
        return EXIT_BADINPUT;
    }
    return GO;
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
    if ((rc = sweep_pick(&o, &sw)) != GO) {
        sweep_free(&sw);
        return rc;
    }
    if (o.count) { /* machine-readable: the number alone */
        int n = 0;
        for (int i = 0; i < sw.nruns; i++)
            n += selected(&o, i);
        free(o.pick);
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
    free(o.pick);
    sweep_free(&sw);
    return rc;
}

const Command cmd_sweep = {
    "sweep", "SWEEP.yaml", "The runs of a sweep file (rows x seeds), each a child gated train.", opts,
    "The format is at the top of core/lab/sweep/sweep.c.  A run already finished by the same code is skipped,\n"
    "a killed one resumed, a failed one rerun only with --rerun-failed.  --verify-code first re-executes\n"
    "the first steps of a result of other code (or flags) and keeps it when every row is bitwise equal\n"
    "(docs/sweeps.md).  Logs and checkpoints go beside the database (DBDIR/logs, DBDIR/checkpoints).\n"
    "Indices count from 0: a Slurm array --array=0-$((N-1)) runs --index $SLURM_ARRAY_TASK_ID or\n"
    "--shard $SLURM_ARRAY_TASK_ID/N.\n"
    "stdout: the plan (--dry-run), the count (--count), one line per run started, skipped or ended,\n"
    "and the summary line; stderr: a failed run's last log lines, warnings and errors.\n",
    run_sweep};
