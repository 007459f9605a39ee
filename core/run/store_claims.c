/*
 * store_claims.c — who is about to run, or is running, a run (store.h,
 * "Claims"; the run_claims table is documented with the schema at the top
 * of store.c).
 */
#include "run/store_impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/codever.h"
#include "util/sysinfo.h"

/* The run_claims table, exactly as documented at the top of store.c. */
static const char CLAIMS_SCHEMA_SQL[] = "CREATE TABLE IF NOT EXISTS run_claims (\n"
                                        "    run_id      TEXT PRIMARY KEY,\n"
                                        "    owner       TEXT NOT NULL,\n"
                                        "    claimed_at  REAL NOT NULL\n"
                                        ");\n";


/* Create run_claims where it is missing (only then: opening an up-to-date
 * database writes nothing). */
int sto_ensure_claims_schema(Store *s) {
    int h = sto_has_table(s, "run_claims");
    if (h < 0) return -1;
    return h ? 0 : sto_exec(s, CLAIMS_SCHEMA_SQL);
}

void store_owner_token(char *out, size_t cap) {
    char host[256];
    sysinfo_host(host, sizeof host);
    snprintf(out, cap, "%s:%ld", host, (long)getpid());
}

/* Whether owner ("HOST:PID") is a process of this host that no longer
 * exists: its claim, and a 'running' row it left, are dead at once rather
 * than after STORE_STALE_SECONDS (a SIGKILLed run can be resumed right
 * away).  Owners on other hosts are judged by their timestamps only. */
static int owner_dead(const char *owner) {
    const char *colon = strrchr(owner, ':');
    if (!colon || colon == owner) return 0;
    char host[256];
    if (gethostname(host, sizeof host) != 0) return 0;
    host[sizeof host - 1] = '\0';
    size_t hl = (size_t)(colon - owner);
    if (hl != strlen(host) || memcmp(owner, host, hl) != 0) return 0;
    char *end;
    errno = 0;
    long pid = strtol(colon + 1, &end, 10);
    if (errno || *end || pid <= 0 || pid > INT_MAX) return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The claim on run_id and the run's row, read inside the claim's
 * transaction.  Strings are copied into the caller's buffers. */
typedef struct {
    int has_claim, has_run;
    char owner[256];
    double claimed_at;
    char status[16], code[128], cflags[512];
    double heartbeat, ended_at;
    int has_attest; /* an attestation for this build (store_attest.c) */
    StoreAttest attest;
} ClaimView;

static int claim_view(Store *s, const char *run_id, ClaimView *v) {
    memset(v, 0, sizeof *v);
    v->ended_at = NAN;
    sqlite3_stmt *st;
    if (sto_prep(s, &st, "SELECT owner, claimed_at FROM run_claims WHERE run_id = ?1")) return -1;
    if (sto_bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        v->has_claim = 1;
        snprintf(v->owner, sizeof v->owner, "%s", sto_text_or(st, 0, ""));
        v->claimed_at = sqlite3_column_double(st, 1);
    } else if (r != SQLITE_DONE) {
        sto_dbfail(s, "claim: read claim");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sto_fin(s, st)) return -1;
    if (sto_prep(s, &st, "SELECT status, heartbeat_at, code_version, ended_at, cflags FROM runs WHERE run_id = ?1"))
        return -1;
    if (sto_bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        v->has_run = 1;
        snprintf(v->status, sizeof v->status, "%s", sto_text_or(st, 0, "?"));
        v->heartbeat = sqlite3_column_double(st, 1);
        snprintf(v->code, sizeof v->code, "%s", sto_text_or(st, 2, "unknown"));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL) v->ended_at = sqlite3_column_double(st, 3);
        /* flags too long to hold compare unequal: never a false match */
        const char *f = sto_text_or(st, 4, "unknown");
        snprintf(v->cflags, sizeof v->cflags, "%s", strlen(f) < sizeof v->cflags ? f : "(too long)");
    } else if (r != SQLITE_DONE) {
        sto_dbfail(s, "claim: read run");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sto_fin(s, st)) return -1;
    /* the claimant's child is this build, so the attestation that counts is this build's */
    if (v->has_run && (v->has_attest = store_attest_get(s, run_id, codever_commit(), codever_cflags(), &v->attest)) < 0)
        return -1;
    return 0;
}

int store_run_claim(Store *s, const char *run_id, const char *owner, StoreClaimDecide decide, void *ctx,
                    char *status, size_t cap) {
    if (status && cap) status[0] = '\0';
    if (!run_id || !*run_id || !owner || !*owner) return sto_fail(s, "%s: claim: empty run id or owner", s->path);
    if (store_flush(s) || sto_begin(s)) return -1;
    ClaimView v;
    if (claim_view(s, run_id, &v)) goto bad;
    double now = sto_now();
    const char *eff = v.has_run ? sto_effective_status(v.status, v.heartbeat, now) : NULL;
    int mine = v.has_claim && strcmp(v.owner, owner) == 0 && now - v.claimed_at <= STORE_STALE_SECONDS;
    int dead = v.has_claim && !mine && owner_dead(v.owner);
    if (dead && eff && strcmp(eff, "running") == 0) eff = "killed"; /* its process is gone */
    int rc;
    if (mine) {
        rc = STORE_CLAIMED; /* a claim made for this owner: already decided */
    } else if (!dead && ((v.has_claim && now - v.claimed_at <= STORE_STALE_SECONDS) ||
                         (eff && strcmp(eff, "running") == 0))) {
        rc = STORE_CLAIM_LIVE;
        eff = "running";
    } else {
        StoreRunState rs = {eff, v.has_run ? v.code : NULL, v.ended_at, v.has_run ? v.cflags : NULL,
                            v.has_attest > 0 ? &v.attest : NULL};
        int yes = decide ? decide(ctx, &rs) : !(eff && (strcmp(eff, "finished") == 0 || strcmp(eff, "diverged") == 0));
        rc = yes ? STORE_CLAIMED : STORE_CLAIM_DECLINED;
    }
    if (rc == STORE_CLAIMED &&
        sto_run(s, NULL,
                 "INSERT INTO run_claims(run_id, owner, claimed_at) VALUES (?1, ?2, ?3)"
                 " ON CONFLICT(run_id) DO UPDATE SET owner = excluded.owner, claimed_at = excluded.claimed_at",
                 "ttd", run_id, owner, now))
        goto bad;
    if (sto_commit(s)) goto bad;
    if (status && cap) snprintf(status, cap, "%s", eff ? eff : "-");
    return rc;
bad:
    sto_rollback(s);
    return -1;
}

int store_claim_refresh(Store *s, const char *owner) {
    return sto_run(s, NULL, "UPDATE run_claims SET claimed_at = ?2 WHERE owner = ?1", "td", owner, sto_now());
}

int store_run_release(Store *s, const char *run_id, const char *owner, const char *status,
                      const char *error_text) {
    if (!status || (strcmp(status, "failed") != 0 && strcmp(status, "killed") != 0))
        return sto_fail(s, "%s: release: status must be failed or killed, got '%s'", s->path, status ? status : "(null)");
    if (store_flush(s) || sto_begin(s)) return -1;
    ClaimView v;
    int ended = 0;
    if (claim_view(s, run_id, &v)) goto bad;
    if (v.has_claim && strcmp(v.owner, owner) == 0) {
        if (v.has_run && strcmp(v.status, "running") == 0) {
            double now = sto_now();
            if (sto_run(s, NULL,
                         "UPDATE runs SET status = ?2, error_text = ?3, diverged_step = NULL,"
                         " ended_at = ?4, heartbeat_at = ?4 WHERE run_id = ?1",
                         "tttd", run_id, status, error_text, now))
                goto bad;
            ended = 1;
        }
        if (sto_run(s, NULL, "DELETE FROM run_claims WHERE run_id = ?1 AND owner = ?2", "tt", run_id, owner))
            goto bad;
    }
    if (sto_commit(s)) goto bad;
    return ended;
bad:
    sto_rollback(s);
    return -1;
}
