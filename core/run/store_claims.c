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

/* When process pid started (field 22 of /proc/PID/stat: clock ticks since
 * boot), or -1 when it cannot be read (no such process, no /proc). */
static long long proc_start(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p) return -1;
    p++;
    for (int field = 3; field < 22 && p; field++) p = strchr(p + 1, ' '); /* fields 3..21, space-separated */
    if (!p) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(p + 1, &end, 10);
    return errno || end == p + 1 ? -1 : v;
}

void store_owner_token(char *out, size_t cap) {
    char host[256];
    sysinfo_host(host, sizeof host);
    long pid = (long)getpid();
    snprintf(out, cap, "%s:%ld:%lld", host, pid, proc_start(pid));
}

/* A decimal number >= lo, whole, at s (up to end): 0 with *v, or -1. */
static int parse_num(const char *s, const char *end, long long lo, long long *v) {
    char buf[32];
    if (end <= s || end - s >= (long)sizeof buf) return -1;
    memcpy(buf, s, (size_t)(end - s));
    buf[end - s] = '\0';
    char *e;
    errno = 0;
    *v = strtoll(buf, &e, 10);
    return errno || *e || *v < lo ? -1 : 0;
}

int store_owner_parse(const char *owner, char *host, size_t hcap, long *pid, long long *start) {
    const char *last = strrchr(owner, ':');
    if (!last || last == owner) return -1;
    long long a, b;
    const char *end = owner + strlen(owner);
    const char *prev = last;
    while (prev > owner && prev[-1] != ':') prev--;
    /* HOST:PID:START, or HOST:PID as tokens were before the start time */
    if (prev > owner + 1 && parse_num(prev, last, 1, &a) == 0 && parse_num(last + 1, end, -1, &b) == 0 &&
        a <= INT_MAX) {
        snprintf(host, hcap, "%.*s", (int)(prev - 1 - owner), owner);
        *pid = (long)a, *start = b;
        return 0;
    }
    if (parse_num(last + 1, end, 1, &a) != 0 || a > INT_MAX) return -1;
    snprintf(host, hcap, "%.*s", (int)(last - owner), owner);
    *pid = (long)a, *start = -1;
    return 0;
}

/* Whether owner ("HOST:PID:START") is a process of this host that no
 * longer exists, or whose pid now belongs to a process that started at
 * another time (the pid was reused): its claim, and a 'running' row it
 * left, are dead at once rather than after STORE_STALE_SECONDS (a SIGKILLed
 * run can be resumed right away).  Owners on other hosts are judged by
 * their timestamps only. */
static int owner_dead(const char *owner) {
    char host[256], me[256];
    long pid;
    long long start;
    if (store_owner_parse(owner, host, sizeof host, &pid, &start)) return 0;
    sysinfo_host(me, sizeof me);
    if (strcmp(host, me) != 0) return 0;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
    long long now = proc_start(pid);
    return start >= 0 && now >= 0 && now != start;
}

int sto_claim_owner_dead(Store *s, const char *run_id) {
    int h = sto_has_table(s, "run_claims"); /* (a read-only open of an old file has none) */
    if (h <= 0) return h;
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st, "SELECT owner FROM run_claims WHERE run_id = ?1", "t", run_id)) return -1;
    int r = sqlite3_step(st), dead = r == SQLITE_ROW && owner_dead(sto_text_or(st, 0, ""));
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        sto_dbfail(s, "read claim");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st) ? -1 : dead;
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
