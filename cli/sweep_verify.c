/*
 * sweep_verify.c — `gated sweep --verify-code` (cmd_sweep.c, top): a stored
 * result of other code or flags is re-executed by this build for its first
 * steps into a scratch database and kept, with an attestation, when every
 * row of those steps is bitwise equal.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blas_kernel.h"
#include "cli.h"
#include "run/checkpoint.h"
#include "run/codever.h"
#include "run/eval.h"
#include "util/util.h"
#include "sweep_int.h"


/* nftw callback: remove one entry of the scratch directory (deepest
 * first; links are not followed). */
static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "gated sweep: %s: %s\n", path, strerror(errno));
    return 0;
}

/* Wait for the verification child pid (the sweep's only child while it
 * verifies), refreshing the sweep's claims meanwhile (the run's, so that
 * no other sweep verifies it too) and forwarding a stop signal to it once
 * (it checkpoints and ends as killed).  0 with *ws, or -1. */
static int wait_verify(SweepCtx *x, pid_t pid, int *ws) {
    int forwarded = 0;
    double last = util_now();
    for (;;) {
        pid_t r = wait_child(ws, x->st, x->owner, &last, forwarded);
        if (r == pid)
            return 0;
        if (r < 0 && errno == EINTR) {
            if (stop_requested && !forwarded)
                kill(pid, SIGTERM), forwarded = 1;
            continue;
        }
        if (r > 0)
            continue; /* not ours (none is expected) */
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
        if (trained_locate(r->config.init_from, x->o->db, x->ckptdir, 0, &parent, path, sizeof path, pid, err,
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
 * scratch directory vck, kept by the scratch database vdb): it goes where
 * the run's own would be (DBDIR/checkpoints/DB_ID/RUN_ID.ckpt), so `gated
 * eval` can use it.  A file already there is replaced: it may be the final
 * one (then the two differ only in the training wall time) or left by
 * another execution of the run id that was stopped early (a rerun later
 * undone by a merge), which `gated eval` would evaluate at its step; the
 * verified one is the run's final state.  Only for a run that does not
 * start from another's weights (its re-execution's id and checkpoint are
 * the run's own). */
static void keep_checkpoint(const SweepCtx *x, const char *vdb, const char *vck, const SweepRun *r) {
    size_t l = strlen(x->ckptdir) + strlen(vck) + 64;
    char *from = malloc(l), *to = malloc(l), *dir = malloc(l), err[1024];
    Store *vs = NULL;
    if (!from || !to || !dir) {
        fprintf(stderr, "gated sweep: out of memory\n");
        goto out;
    }
    if (store_open_ro(&vs, vdb, err, sizeof err) || checkpoint_locate(vs, vck, 0, r->run_id, from, l) <= 0)
        goto out; /* nothing written: no checkpoint to keep */
    snprintf(dir, l, "%s/%s", x->ckptdir, store_db_id(x->st));
    checkpoint_path(x->ckptdir, store_db_id(x->st), r->run_id, to, l);
    int had = access(to, F_OK) == 0;
    /* written for the scratch database, on behalf of the run in this one */
    if (checkpoint_retag(from, store_db_id(x->st), err, sizeof err))
        fprintf(stderr, "gated sweep: keeping %s: %s\n", from, err);
    else if (util_mkdir_p(dir) != 0 || rename(from, to) != 0)
        fprintf(stderr, "gated sweep: keeping %s as %s: %s\n", from, to, strerror(errno));
    else
        printf("verify %s: the whole run was re-executed: its final checkpoint is now %s%s\n", r->name, to,
               had ? " (replacing the file there)" : "");
out:
    store_close(vs);
    free(from);
    free(to);
    free(dir);
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
        wait_verify(x, pid, &ws)) {
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
    if (store_claim_refresh(x->st, x->owner)) /* the comparison may take a while: keep the claim fresh */
        fprintf(stderr, "gated sweep: %s\n", store_errmsg(x->st));
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
        printf("verified %s (index %d): %lld steps, %lld rows bitwise equal", r->name, r->index, cmp.steps, cmp.rows);
        if (cmp.added) printf(" (+ %lld rows of keys the stored run lacks, not compared)", cmp.added);
        printf(" (%.1f s); kept as this build's result\n", util_now() - t0);
        if (n == r->config.steps && strcmp(vid, r->run_id) == 0)
            keep_checkpoint(x, vdb, vck, r);
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

/* End this sweep's claim on job j's run (a finished run: the row is not
 * touched). */
static void verify_release(SweepCtx *x, Job *j) {
    if (store_run_release(x->st, j->run->run_id, x->owner, "killed", "its sweep ended while verifying it") < 0)
        fprintf(stderr, "gated sweep: %s: %s\n", j->run->name, store_errmsg(x->st));
}

/* Claim job j's run for its verification, as a run is claimed before it
 * runs (cmd_sweep.c, launch_job), so that two sweeps verifying one database
 * re-execute each run once: 1 claimed (verify it, then release the claim),
 * 0 not: another process holds it (verifying or running it), or what is
 * stored now needs no verification (the job is planned again after). */
static int verify_claim(SweepCtx *x, Job *j) {
    char seen[16];
    ClaimCtx cc = {j, x->code, x->o, x->t0};
    int c = store_run_claim(x->st, j->run->run_id, x->owner, claim_decide, &cc, seen, sizeof seen);
    if (c < 0) {
        char e[600];
        store_escape(store_errmsg(x->st), e, sizeof e);
        printf("verify %s (index %d): could not claim it (%s); rerun\n", j->run->name, j->run->index, e);
        fflush(stdout);
        return 0;
    }
    if (c == STORE_CLAIMED && j->verify)
        return 1;
    if (c == STORE_CLAIMED)
        verify_release(x, j); /* no longer a verification: planned again, claimed again at launch */
    else if (c == STORE_CLAIM_LIVE)
        printf("verify %s (index %d): not now, claimed by another process (verifying or running it)\n", j->run->name,
               j->run->index);
    fflush(stdout);
    return 0;
}

/* --verify-code: each job planned for verification (a result of other
 * code or flags, without an attestation for this build) is verified, one
 * at a time with every core, then planned again: kept when attested, else
 * rerun as before.  GO, or the exit code (a stop signal). */
int sweep_verify(SweepCtx *x) {
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
            if (verify_claim(x, j)) {
                verify_job(x, j);
                verify_release(x, j);
            }
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
