/*
 * sweep_int.h — what the files of `gated sweep` share (cmd_sweep.c: the
 * command and its phases; sweep_plan.c: what to do with each run;
 * sweep_child.c: the child processes; sweep_verify.c: --verify-code).
 * The command's behaviour is described at the top of cmd_sweep.c.
 */
#ifndef GATED_SWEEP_INT_H
#define GATED_SWEEP_INT_H

#include <signal.h>
#include <sys/types.h>

#include "run/store.h"
#include "lab/sweep/sweep.h"


typedef struct {
    const char *path, *db, *data;
    int dry_run, json, count, force, rerun_failed, fail_fast, verify_code;
    long verify_steps;     /* --verify-steps (0: not given) */
    const char *index;     /* --index LIST (NULL: all) */
    unsigned char *pick;   /* pick[i]: run i is in --index's list (NULL: all) */
    long shard_i, shard_n; /* shard_n 0: no sharding */
    long jobs;
} SweepOpts;

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
    int live;        /* skipped: running in another process (not waited for); plan_live re-checks its owner */
    Outcome outcome;
    pid_t pid;
    double t0;
    char *log;
} Job;

typedef struct {
    Job *job;
    const char *code;
    const SweepOpts *o;
    double t0;
} ClaimCtx;

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

/* cmd_sweep.c */
int sweep_oom(void); /* "out of memory" to stderr; EXIT_RUNTIME */

/* sweep_plan.c */
long verify_window(const SweepRun *r, const SweepOpts *o);
void plan(Job *j, Store *st, const char *code, const SweepOpts *o, double t0);
int claim_decide(void *ctx, const StoreRunState *rs);
void plan_live(Job *j, Store *st, const char *owner, const char *code, const SweepOpts *o, double t0);
void print_dry(const Sweep *sw, Job *jobs, int n);
void print_dry_json(const Sweep *sw, const SweepOpts *o, Job *jobs, int n);

/* sweep_child.c */
extern volatile sig_atomic_t stop_requested;
void on_stop(int sig);
int cpu_count(void);
char **child_env(int threads, const char *owner, char *own[3]);
char *log_path(const char *logdir, const char *name, const char *suffix);
int spawn_train(const SweepRun *r, const Sweep *sw, const char *db, const char *data, const char *ckptdir,
                const char *const *extra, char **envp, const char *log, pid_t *pid);
int spawn_job(Job *j, const Sweep *sw, const SweepOpts *o, char **envp, const char *logdir, const char *ckptdir);
void print_tail(const char *path, int lines);
void finish_job(Job *j, int ws, Store *st, const char *owner, int done, int total);
pid_t wait_child(int *ws, Store *st, const char *owner, double *last_refresh, int forwarded);

/* sweep_verify.c */
int sweep_verify(SweepCtx *x);

#endif
