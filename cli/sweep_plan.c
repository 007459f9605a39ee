/*
 * sweep_plan.c — what `gated sweep` does with each run (the table at the
 * top of cmd_sweep.c): decided from the run's stored state, once for the
 * listing and again inside each run's claim, and the plan as --dry-run
 * prints it (text or JSON).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run/codever.h"
#include "util/json.h"
#include "cli.h"
#include "sweep_int.h"


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
long verify_window(const SweepRun *r, const SweepOpts *o) {
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
void plan(Job *j, Store *st, const char *code, const SweepOpts *o, double t0) {
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

/* store_run_claim's decision: plan again from the state seen inside the
 * claim's transaction. */
int claim_decide(void *ctx, const StoreRunState *rs) {
    ClaimCtx *c = ctx;
    plan_state(c->job, rs, c->code, c->o, c->t0);
    return c->job->run_it;
}

/* The same plan, and no claim: only what the claim would see. */
static int claim_peek(void *ctx, const StoreRunState *rs) {
    claim_decide(ctx, rs);
    return 0;
}

/* A run stored 'running' with a fresh heartbeat reads as live, but its
 * claim's owner may be a process of this host that is gone (a sweep
 * SIGKILLed together with its child: nobody marked the run killed).  The
 * claim knows (store_run_claim reads such a run as killed), so it decides
 * again, declining: the run is claimed when it is launched, as any other.
 * Else a sweep resubmitted at once would skip the run as live for up to
 * STORE_STALE_SECONDS and exit 0 without it. */
void plan_live(Job *j, Store *st, const char *owner, const char *code, const SweepOpts *o, double t0) {
    if (!j->live) return;
    ClaimCtx cc = {j, code, o, t0};
    char seen[16];
    if (store_run_claim(st, j->run->run_id, owner, claim_peek, &cc, seen, sizeof seen) < 0) {
        /* the plan stands (skip as live); the claim at launch is not tried */
        fprintf(stderr, "gated sweep: %s: %s\n", j->run->name, store_errmsg(st));
        plan(j, st, code, o, t0);
    }
}

void print_dry(const Sweep *sw, Job *jobs, int n) {
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
void print_dry_json(const Sweep *sw, const SweepOpts *o, Job *jobs, int n) {
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

int sweep_oom(void) {
    fprintf(stderr, "gated sweep: out of memory\n");
    return EXIT_RUNTIME;
}
