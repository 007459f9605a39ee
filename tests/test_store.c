/*
 * test_store.c — the store's run claims (atomic, never restarting finished
 * or live runs; a claim of an exited process), untrusted rows kept in
 * bounds, metric timestamps, schema 1 databases (open, merge, migrate) and
 * code attestations (bit-for-bit comparison, merge).  The other store
 * suites: test_store_open.c (writing, the schema, refusals, crash safety),
 * test_store_read.c (reading back, ls / show, merge input, read-only);
 * their helpers are store_fx.c's.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/merge/merge.h"
#include "run/store.h"
#include "util/sysinfo.h"
#include "testutil.h"
#include "store_fx.h"

/* ------------------------------------------------------------------ */
/* claims                                                              */
/* ------------------------------------------------------------------ */

/* The sweep's rule for a run it planned as new: claim unless finished or
 * diverged.  Counts its calls and keeps the status it was shown. */
typedef struct {
    int calls;
    char seen[16];
} Decide;

static int decide_new(void *ctx, const StoreRunState *rs) {
    Decide *d = ctx;
    d->calls++;
    snprintf(d->seen, sizeof d->seen, "%s", rs->status ? rs->status : "-");
    return !(rs->status && (strcmp(rs->status, "finished") == 0 || strcmp(rs->status, "diverged") == 0));
}

Test(store, claims_are_atomic_and_never_restart_finished_or_live_runs) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db), *w = open_or_die(t.db); /* a sweep, and another worker */
    Provenance p = test_prov("h");
    char st[16], buf[16];
    Decide d = {0, ""};
    sqlite3 *db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", ARGS("run_claims")),
                 1);

    /* planned as new, then finished by the other worker before the claim:
     * not claimed, and the result is untouched */
    cr_assert_null(store_run_status(s, "r1", buf, sizeof buf));
    cr_assert_eq(store_run_begin(w, "r1", "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(w));
    cr_assert_eq(store_metric(w, "r1", "train_loss", NULL, 1, 2.5), 0);
    cr_assert_eq(store_run_end(w, "r1", "finished", NULL, -1), 0, "%s", store_errmsg(w));
    cr_assert_eq(store_run_claim(s, "r1", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIM_DECLINED, "%s",
                 store_errmsg(s));
    cr_assert_str_eq(st, "finished");
    cr_assert_eq(d.calls, 1);
    cr_assert_str_eq(d.seen, "finished");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE run_id = 'r1'", NULL), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    /* the default rule (no decide) declines it too */
    cr_assert_eq(store_run_claim(s, "r1", "A:1", NULL, NULL, st, sizeof st), STORE_CLAIM_DECLINED);

    /* an absent run is claimed once: another owner finds it live (and is
     * not asked to decide); the owner itself (its child) is accepted */
    cr_assert_eq(store_run_claim(s, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED, "%s",
                 store_errmsg(s));
    cr_assert_str_eq(st, "-");
    cr_assert_eq(d.calls, 2);
    char *o = q_text(db, "SELECT owner FROM run_claims WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(o, "A:1");
    free(o);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_str_eq(st, "running");
    cr_assert_eq(store_run_claim(w, "r2", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_eq(store_run_claim(w, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(d.calls, 2);

    /* 'running' with a fresh heartbeat is live without any claim; with a
     * stale one it reads killed and may be claimed */
    cr_assert_eq(store_run_begin(w, "r2", "two", "{}", 1, 1, &p, NULL), 0);
    raw_exec(db, "DELETE FROM run_claims");
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);
    cr_assert_eq(store_debug_set_heartbeat(w, "r2", (double)time(NULL) - 2 * STORE_STALE_SECONDS), 0);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    cr_assert_str_eq(st, "killed");
    cr_assert_str_eq(d.seen, "killed");

    /* a claim not refreshed for STORE_STALE_SECONDS is void; a refreshed one holds */
    raw_exec(db, "UPDATE run_claims SET claimed_at = claimed_at - 1000");
    cr_assert_eq(store_run_claim(s, "r2", "A:1", decide_new, &d, st, sizeof st), STORE_CLAIMED);
    raw_exec(db, "UPDATE run_claims SET claimed_at = claimed_at - 50");
    cr_assert_eq(store_claim_refresh(s, "A:1"), 0, "%s", store_errmsg(s));
    cr_assert_eq(q_int(db, "SELECT claimed_at > strftime('%s', 'now') - 5 FROM run_claims", NULL), 1);
    cr_assert_eq(store_run_claim(w, "r2", "B:2", decide_new, &d, st, sizeof st), STORE_CLAIM_LIVE);

    /* release: another owner's claim is left alone; the owner's ends the
     * run its dead child left 'running', and the claim */
    cr_assert_eq(store_run_release(w, "r2", "B:2", "killed", "not mine"), 0);
    char *stt = q_text(db, "SELECT status FROM runs WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(stt, "running");
    free(stt);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 1);
    cr_assert_eq(store_run_release(s, "r2", "A:1", "killed", "gone"), 1, "%s", store_errmsg(s));
    stt = q_text(db, "SELECT status || ':' || error_text FROM runs WHERE run_id = 'r2'", NULL);
    cr_assert_str_eq(stt, "killed:gone");
    free(stt);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    cr_assert_eq(store_run_release(s, "r2", "A:1", "finished", NULL), -1); /* only failed or killed */

    /* a claim ends with its run */
    cr_assert_eq(store_run_claim(s, "r3", "A:1", NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_begin(w, "r3", "three", "{}", 1, 1, &p, NULL), 0);
    cr_assert_eq(store_run_end(w, "r3", "finished", NULL, -1), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims", NULL), 0);
    cr_assert_eq(store_run_release(s, "r3", "A:1", "failed", "x"), 0); /* nothing left to release */
    stt = q_text(db, "SELECT status FROM runs WHERE run_id = 'r3'", NULL);
    cr_assert_str_eq(stt, "finished");
    free(stt);

    raw_close(db);
    store_close(w);
    store_close(s);
    tmp_db_remove(&t);
}

/* A claim's owner token is HOST:PID:START (this process's); the older
 * HOST:PID still parses (start -1), anything else does not. */
Test(store, owner_tokens_name_host_pid_and_start) {
    char tok[300], host[256], me[256];
    long pid;
    long long start;
    store_owner_token(tok, sizeof tok);
    cr_assert_eq(store_owner_parse(tok, host, sizeof host, &pid, &start), 0, "%s", tok);
    sysinfo_host(me, sizeof me);
    cr_assert_str_eq(host, me, "%s", tok);
    cr_assert_eq(pid, (long)getpid(), "%s", tok);
    cr_assert_gt(start, 0, "%s: no start time", tok);
    cr_assert_eq(store_owner_parse("h.example:12", host, sizeof host, &pid, &start), 0);
    cr_assert(strcmp(host, "h.example") == 0 && pid == 12 && start == -1, "%s %ld %lld", host, pid, start);
    cr_assert_eq(store_owner_parse("nocolon", host, sizeof host, &pid, &start), -1);
    cr_assert_eq(store_owner_parse("h:x", host, sizeof host, &pid, &start), -1);
}

/* A claim whose owner is a process of this host that has exited is dead at
 * once (a SIGKILLed `gated train` can be resumed right away), and so is the
 * 'running' row it left, in both token forms; so is one whose pid now
 * belongs to a process started at another time (the pid was reused); an
 * owner on another host keeps its claim until it goes stale. */
Test(store, a_claim_of_an_exited_process_is_not_live) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    char st[16], tok[300], host[256], dead[3][320], buf[16];
    long me;
    long long start;
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    store_owner_token(tok, sizeof tok);
    cr_assert_eq(store_owner_parse(tok, host, sizeof host, &me, &start), 0);
    snprintf(dead[0], sizeof dead[0], "%s:%ld", host, (long)child);               /* gone (older form) */
    snprintf(dead[1], sizeof dead[1], "%s:%ld:%lld", host, (long)child, start);   /* gone */
    snprintf(dead[2], sizeof dead[2], "%s:%ld:1", host, me);                       /* this pid, another start */
    for (int k = 0; k < 3; k++) {
        char id[16];
        snprintf(id, sizeof id, "d%d", k);
        cr_assert_eq(store_run_claim(s, id, dead[k], NULL, NULL, st, sizeof st), STORE_CLAIMED);
        cr_assert_eq(store_run_begin(s, id, "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(s));
        /* the row says running with a fresh heartbeat, but its owner is gone: read as killed at once */
        cr_assert_str_eq(store_run_status(s, id, buf, sizeof buf), "killed", "%s", dead[k]);
        cr_assert_eq(store_run_claim(s, id, "B:2", NULL, NULL, st, sizeof st), STORE_CLAIMED, "%s: %s", dead[k],
                     store_errmsg(s));
        cr_assert_str_eq(st, "killed", "%s", dead[k]);
    }
    /* this process itself, with its own start time: live */
    cr_assert_eq(store_run_claim(s, "r1", tok, NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_begin(s, "r1", "one", "{}", 1, 1, &p, NULL), 0, "%s", store_errmsg(s));
    cr_assert_str_eq(store_run_status(s, "r1", buf, sizeof buf), "running");
    cr_assert_eq(store_run_claim(s, "r1", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    /* a live owner elsewhere (another host) is respected */
    cr_assert_eq(store_run_claim(s, "r2", "some-other-host:1", NULL, NULL, st, sizeof st), STORE_CLAIMED);
    cr_assert_eq(store_run_claim(s, "r2", "B:2", NULL, NULL, st, sizeof st), STORE_CLAIM_LIVE);
    store_close(s);
    tmp_db_remove(&t);
}

/* Contents of a file that came from elsewhere (gated merge copies rows as
 * they are): negative histogram counts do not take `gated show` out of its
 * bar buffer, and a run id that is not 16 hex digits never becomes the
 * name of a checkpoint file `gated eval` opens. */
Test(store, untrusted_rows_stay_in_bounds) {
    const char *bin = getenv("GATED_BIN");
    if (!bin || access(bin, X_OK) != 0) cr_skip_test("GATED_BIN is not set");
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("h");
    long long counts[2] = {5, 10};
    OK(store_run_begin(s, "hist-run", "hist-run", "{}", 1, 1, &p, NULL));
    OK(store_histogram(s, "hist-run", "gate", "layer=0", 2, 0.0, 1.0, counts, 2));
    OK(store_run_end(s, "hist-run", "finished", NULL, -1));
    OK(store_run_begin(s, "../../../tmp/x", "escape", "{}", 1, 1, &p, NULL));
    OK(store_run_end(s, "../../../tmp/x", "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    raw_exec(db, "UPDATE histograms SET counts = '[-5, 10]'");
    raw_close(db);
    char out[8192];
    int rc = run_gated("show hist-run --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert(rc == 0 || rc == 2, "show: exit %d: %s", rc, out);
    cr_assert_eq(store_run_id_valid("0123456789abcdef"), 1);
    cr_assert_eq(store_run_id_valid("../../../tmp/x"), 0);
    cr_assert_eq(store_run_id_valid("0123456789ABCDEF"), 0);
    cr_assert_eq(store_run_id_valid("0123456789abcdef0"), 0);
    rc = run_gated("eval escape --db '%s' --lengths 64%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 2, "eval: exit %d: %s", rc, out);
    cr_assert(strstr(out, "is not 16 hex digits"), "%s", out);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* metric timestamps and schema 1                                      */
/* ------------------------------------------------------------------ */

/* Each metric row holds when store_metric was called (t, unix seconds);
 * merge carries it. */
Test(store, metric_rows_are_timestamped) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "timed", "{}", 1, 1, &p, NULL));
    struct timespec ts;
    cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    double before = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_metric(s, RID, "val_loss", NULL, 1, 2.4));
    OK(store_summary(s, RID, "val_loss", NULL, 2.4, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, 2.5, NULL));
    OK(store_flush(s));
    cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    double after = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    OK(store_run_end(s, RID, "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    sqlite3_stmt *st = raw_query(db, "SELECT key, t FROM metrics ORDER BY key", NULL);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        n++;
        cr_assert_eq(sqlite3_column_type(st, 1), SQLITE_FLOAT, "%s: no timestamp", sqlite3_column_text(st, 0));
        double v = sqlite3_column_double(st, 1);
        /* 1 ms of slack: sto_now and this clock_gettime round differently */
        cr_assert(v >= before - 1e-3 && v <= after + 1e-3, "%s: t %.6f outside [%.6f, %.6f]",
                  sqlite3_column_text(st, 0), v, before, after);
    }
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    cr_assert_eq(n, 2);
    raw_close(db);

    Store *d = open_or_die(u.db);
    char err[1024];
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    store_close(d);
    db = raw_open(u.db);
    char attach[256];
    snprintf(attach, sizeof attach, "ATTACH DATABASE '%s' AS a", t.db);
    raw_exec(db, attach);
    cr_assert_eq(q_int(db,
                       "SELECT count(*) FROM metrics m JOIN a.metrics o USING (run_id, key, context, step)"
                       " WHERE m.t IS o.t AND m.t IS NOT NULL",
                       NULL),
                 2, "merge lost or changed the timestamps");
    raw_close(db);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* The schema of version 1, as shipped: metrics without t, and the
 * per-update keys counted from 0. */
static const char V1_SQL[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE environments (env_id INTEGER PRIMARY KEY, env_hash TEXT NOT NULL UNIQUE, host TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL, compiler TEXT NOT NULL, cflags TEXT NOT NULL, openblas_version TEXT NOT NULL,"
    " sqlite_version TEXT NOT NULL, libyaml_version TEXT NOT NULL);"
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL"
    " CHECK (status IN ('running','finished','failed','diverged','killed')), config_json TEXT NOT NULL,"
    " seed INTEGER NOT NULL, threads INTEGER NOT NULL, code_version TEXT NOT NULL, git_dirty INTEGER,"
    " host TEXT NOT NULL, cpu_model TEXT NOT NULL, compiler TEXT NOT NULL, cflags TEXT NOT NULL,"
    " openblas_version TEXT NOT NULL, sqlite_version TEXT NOT NULL, libyaml_version TEXT NOT NULL, argv TEXT,"
    " started_at REAL NOT NULL, ended_at REAL, heartbeat_at REAL NOT NULL, error_text TEXT, diverged_step INTEGER,"
    " env_id INTEGER NOT NULL REFERENCES environments(env_id));"
    "CREATE INDEX runs_name ON runs(name);"
    "CREATE TABLE metrics (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', step INTEGER NOT NULL, value REAL, UNIQUE (run_id, key, context, step));"
    "CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);"
    "CREATE TABLE summary (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', value REAL, text TEXT, PRIMARY KEY (run_id, key, context));"
    "CREATE TABLE histograms (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, key TEXT NOT NULL,"
    " context TEXT NOT NULL DEFAULT '', step INTEGER NOT NULL, lo REAL NOT NULL, hi REAL NOT NULL,"
    " counts TEXT NOT NULL, PRIMARY KEY (run_id, key, context, step));"
    "INSERT INTO meta VALUES ('schema_version', '1');"
    /* a run of 3 updates that diverged at its 4th (0-based step 3) */
    "INSERT INTO environments VALUES (1, 'e1', 'h', 'c', 'gcc', '-O2', 'ob', 'sq', 'y');"
    "INSERT INTO runs VALUES ('0123456789abcdef', 'old', 'diverged', '{}', 1, 1, 'unknown', NULL, 'h', 'c', 'gcc',"
    " '-O2', 'ob', 'sq', 'y', NULL, 1.0, 2.0, 2.0, NULL, 3, 1);"
    "INSERT INTO metrics VALUES ('0123456789abcdef', 'train_loss', '', 0, 3.0), ('0123456789abcdef', 'train_loss',"
    " '', 1, 2.5), ('0123456789abcdef', 'train_loss', '', 2, 2.0), ('0123456789abcdef', 'train_loss', '', 3, 30.0),"
    " ('0123456789abcdef', 'lr', '', 0, 0.1), ('0123456789abcdef', 'lr', '', 1, 0.2), ('0123456789abcdef', 'lr', '',"
    " 2, 0.3), ('0123456789abcdef', 'grad_norm', '', 2, 1.5), ('0123456789abcdef', 'spike', '', 2, 0.7),"
    " ('0123456789abcdef', 'val_loss', '', 3, 2.2), ('0123456789abcdef', 'f_attn', 'layer=0', 3, 0.4);"
    "INSERT INTO histograms VALUES ('0123456789abcdef', 'gate', 'layer=0', 3, 0, 1, '[1,2]');";

/* What a schema-1 run reads as in schema 2, through db (a connection whose
 * unqualified metrics / runs are the ones to check; what: for messages). */
static void assert_renumbered(sqlite3 *db, const char *what) {
    static const struct {
        const char *key, *want;
    } k[] = {{"train_loss", "1:3.0,2:2.5,3:2.0,4:30.0"},
             {"lr", "1:0.1,2:0.2,3:0.3"},
             {"grad_norm", "3:1.5"},
             {"spike", "3:0.7"},
             {"val_loss", "3:2.2"},
             {"f_attn", "3:0.4"}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        char *got = q_text(db,
                           "SELECT group_concat(step || ':' || value, ',') FROM"
                           " (SELECT step, value FROM metrics WHERE key = ?1 ORDER BY step)",
                           ARGS(k[i].key));
        cr_assert_str_eq(got, k[i].want, "%s: %s", what, k[i].key);
        free(got);
    }
    cr_assert_eq(q_int(db, "SELECT diverged_step FROM runs", NULL), 4, "%s: diverged_step", what);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE t IS NOT NULL", NULL), 0, "%s: old rows' t", what);
    cr_assert_eq(q_int(db, "SELECT step FROM histograms", NULL), 3, "%s: histogram step", what);
}

/* A database of schema 1 opens: read-only it is read as schema 2 and left
 * as it is; merged, it arrives renumbered; opened for writing, it is
 * migrated once (ALTER TABLE, old rows' t NULL). */
Test(store, schema_1_databases_open_merge_and_migrate) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(t.db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    raw_exec(db, V1_SQL);
    raw_close(db);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);

    /* read-only */
    Store *s = NULL;
    char err[1024];
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    assert_renumbered(store_db(s), "read-only");
    StoreRunList l;
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 1);
    cr_assert_eq(l.rows[0].steps, 4, "ls: %lld steps", l.rows[0].steps);
    store_run_list_free(&l);
    StoreRunInfo ri;
    OK(store_run_info(s, RID, &ri));
    cr_assert(ri.has_diverged && ri.diverged_step == 4, "show: diverged at %lld", ri.diverged_step);
    store_run_info_free(&ri);
    OK(store_metric(s, RID, "x", NULL, 1, 1.0));
    cr_assert_eq(store_flush(s), -1);
    cr_assert(strstr(store_errmsg(s), "readonly"), "%s", store_errmsg(s));
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open changed a schema-1 file");

    /* merged into a new database, twice */
    Store *d = open_or_die(u.db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "metrics"), 11);
    store_close(d);
    db = raw_open(u.db);
    assert_renumbered(db, "merged");
    raw_close(db);
    cr_assert(same_bytes(before, n0, t.db), "merge changed its input");

    /* opened for writing: migrated, then a new row gets its timestamp and a
     * second open changes nothing more */
    s = open_or_die(t.db);
    OK(store_metric(s, RID, "eval_loss", "len=64", 4, 2.1));
    store_close(s);
    store_close(open_or_die(t.db));
    db = raw_open(t.db);
    char *v = q_text(db, "SELECT value FROM meta WHERE key = ?1", ARGS("schema_version"));
    char want[16];
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    cr_assert_str_eq(v, want);
    free(v);
    raw_exec(db, "DELETE FROM metrics WHERE key = 'eval_loss' AND t IS NOT NULL");
    cr_assert_eq(sqlite3_changes(db), 1, "the new row has no timestamp");
    assert_renumbered(db, "migrated");
    raw_close(db);
    free(before);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* ------------------------------------------------------------------ */
/* code attestations (store_attest.c)                                  */
/* ------------------------------------------------------------------ */

static const char CODE_A[] = "1111111111111111111111111111111111111111", CODE_B[] = "2222222222222222222222222222222222222222";

/* A finished run RID recorded by code: train_loss at steps 1..3, at step 2
 * val_loss, a NaN f_attn (stored NULL) and a gate histogram. */
static void attest_fixture(Store *s, const char *code, double val_loss) {
    Provenance p = test_prov("h");
    p.code_version = code;
    OK(store_run_begin(s, RID, "r", "{\"seed\":1}", 1, 1, &p, NULL));
    for (int k = 1; k <= 3; k++)
        OK(store_metric(s, RID, "train_loss", NULL, k, 3.0 / k));
    OK(store_metric(s, RID, "val_loss", NULL, 2, val_loss));
    OK(store_metric(s, RID, "f_attn", "layer=0", 2, NAN));
    const long long counts[2] = {1, 2};
    OK(store_histogram(s, RID, "gate", "layer=0", 2, 0, 1, counts, 2));
    OK(store_summary(s, RID, "val_loss", NULL, val_loss, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, val_loss, NULL));
    OK(store_run_end(s, RID, "finished", NULL, -1));
}

/* Set metric (key, step) of RID in the database at path to value, bound. */
static void set_metric(const char *path, const char *key, long long step, double value) {
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = raw_query(db, "UPDATE metrics SET value = ?3 WHERE key = ?1 AND step = ?2", NULL);
    cr_assert_eq(sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC), SQLITE_OK);
    cr_assert_eq(sqlite3_bind_int64(st, 2, step), SQLITE_OK);
    cr_assert_eq(sqlite3_bind_double(st, 3, value), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_changes(db), 1, "%s step %lld", key, step);
    cr_assert_eq(sqlite3_finalize(st), SQLITE_OK);
    raw_close(db);
}

/* Compare RID in s with RID in the re-execution at path (steps <= 3). */
static StoreAttestCmp compare3(Store *s, const char *path) {
    StoreAttestCmp c;
    OK(store_attest_compare(s, RID, path, RID, 3, &c));
    return c;
}

/* The comparison is bit for bit over every metric and histogram row of the
 * window (not gated eval's, not later steps), NULL equal only to NULL; an
 * attestation names the build and holds only for the copy it compared. */
Test(store, attest_compares_bit_for_bit_and_holds_for_one_copy) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    Store *s = open_or_die(t.db), *v = open_or_die(u.db);
    attest_fixture(s, CODE_A, 2.5);
    attest_fixture(v, CODE_B, 2.5);
    /* only in the stored run: `gated eval` rows and a step past the window */
    OK(store_metric(s, RID, store_eval_keys[0], "split=val,len=64", 3, 1.25));
    OK(store_metric(s, RID, "infer_ppl", "split=val,len=64,quant=float", 3, 3.5)); /* gated eval --quant's */
    OK(store_metric(s, RID, "train_loss", NULL, 4, 9.0));
    OK(store_flush(s));
    store_close(v);

    StoreAttestCmp c = compare3(s, u.db);
    cr_assert(c.equal, "%s", c.first);
    cr_assert_eq(c.rows, 6, "3 train_loss, val_loss, f_attn, the histogram: %lld", c.rows);
    cr_assert_eq(c.steps, 3);
    cr_assert_str_eq(c.run_code, CODE_A);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 0);
    cr_assert_eq(store_attest_record(s, RID, "unknown", 0, "-O2", &c), -1, "only a commit attests");
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 1, "%s", store_errmsg(s));
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 1, "a second record replaces the first");
    cr_assert_eq(store_count_rows(s, "code_attest"), 1);
    StoreAttest at = {0, 0, 0};
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", &at), 1);
    cr_assert(at.steps == 3 && at.rows == 6 && at.verified_at > 0, "%lld %lld", at.steps, at.rows);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O0", NULL), 0, "other flags");
    cr_assert_eq(store_attest_get(s, RID, CODE_A, "-O2", NULL), 0, "other code");
    cr_assert_eq(store_attest_get(s, "ffffffffffffffff", CODE_B, "-O2", NULL), 0);

    /* one ulp apart */
    set_metric(u.db, "val_loss", 2, nextafter(2.5, 3.0));
    StoreAttestCmp d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_eq(d.ndiff, 1);
    cr_assert_str_eq(d.first, "metric val_loss step 2: stored 2.5 (0x4004000000000000), re-executed "
                              "2.5000000000000004 (0x4004000000000001)");
    cr_assert_eq(store_attest_record(s, RID, CODE_A, 0, "-O2", &d), -1, "a difference attests nothing");
    set_metric(u.db, "val_loss", 2, 2.5);
    cr_assert(compare3(s, u.db).equal);
    /* NULL (NaN) against a number, a row on one side only, histogram counts */
    set_metric(u.db, "f_attn", 2, 0.5);
    d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_str_eq(d.first, "metric f_attn [layer=0] step 2: stored NULL, re-executed 0.5 (0x3fe0000000000000)");
    set_metric(u.db, "f_attn", 2, NAN);
    sqlite3 *db = raw_open(u.db);
    raw_exec(db, "DELETE FROM metrics WHERE key = 'train_loss' AND step = 1;"
                 "UPDATE histograms SET counts = '[1,3]'");
    raw_close(db);
    d = compare3(s, u.db);
    cr_assert(!d.equal);
    cr_assert_eq(d.ndiff, 2);
    cr_assert_str_eq(d.first, "metric train_loss step 1: stored only");
    db = raw_open(u.db);
    raw_exec(db, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, key, context, 1, 3.0"
                 " FROM metrics WHERE key = 'train_loss' AND step = 2");
    raw_close(db);
    d = compare3(s, u.db);
    cr_assert_eq(d.ndiff, 1);
    cr_assert_str_eq(d.first, "histogram gate [layer=0] step 2 counts: stored \"[1,2]\", re-executed \"[1,3]\"");
    db = raw_open(u.db);
    raw_exec(db, "UPDATE histograms SET counts = '[1,2]'");
    raw_close(db);
    cr_assert(compare3(s, u.db).equal);
    /* no such run in the re-execution's database */
    OK(store_attest_compare(s, RID, u.db, "ffffffffffffffff", 3, &d));
    cr_assert(!d.equal && strstr(d.first, "recorded no run ffffffffffffffff"), "%s", d.first);

    /* the run ends again (another copy): the attestation no longer holds,
     * and one compared before cannot be recorded */
    db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET ended_at = ended_at + 1");
    raw_close(db);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 0);
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 1, "-O2", &c), 0);
    /* a run begun again drops its attestations */
    db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET ended_at = ended_at - 1");
    raw_close(db);
    cr_assert_eq(store_attest_get(s, RID, CODE_B, "-O2", NULL), 1);
    Provenance p = test_prov("h");
    OK(store_run_begin(s, RID, "r", "{\"seed\":1}", 1, 1, &p, NULL));
    cr_assert_eq(store_count_rows(s, "code_attest"), 0);
    cr_assert_eq(store_attest_compare(s, RID, u.db, RID, 3, &d), -1, "a running run is no result");
    store_close(s);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* A probe added since the stored run: the re-execution's rows of a key the
 * stored run never recorded are counted, not differences; a new row of a
 * key it has (another context, here) still differs. */
Test(store, attest_counts_rows_of_keys_the_stored_run_lacks) {
    TmpDb t, u;
    tmp_db(&t);
    tmp_db(&u);
    Store *s = open_or_die(t.db), *v = open_or_die(u.db);
    attest_fixture(s, CODE_A, 2.5);
    attest_fixture(v, CODE_B, 2.5);
    OK(store_metric(v, RID, "attn_mass_none", "", 2, 0.25));
    OK(store_metric(v, RID, "attn_mass_none", "layer=0", 2, 0.5));
    const long long counts[2] = {3, 4};
    OK(store_histogram(v, RID, "gate_new", "layer=0", 2, 0, 1, counts, 2));
    OK(store_flush(v));
    StoreAttestCmp c = compare3(s, u.db);
    cr_assert(c.equal, "%s", c.first);
    cr_assert_eq(c.rows, 6);
    cr_assert_eq(c.added, 3, "two metric rows and a histogram of new keys: %lld", c.added);
    OK(store_metric(v, RID, "val_loss", "layer=0", 2, 2.5));
    OK(store_flush(v));
    store_close(v);
    c = compare3(s, u.db);
    cr_assert(!c.equal);
    cr_assert_eq(c.ndiff, 1);
    cr_assert_str_eq(c.first, "metric val_loss [layer=0] step 2: re-executed only");
    store_close(s);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
}

/* A database holding RID finished by CODE_A and attested under CODE_B
 * (compared with a copy of itself). */
static void attested_db(const TmpDb *t, const TmpDb *u) {
    Store *s = open_or_die(t->db), *v = open_or_die(u->db);
    attest_fixture(s, CODE_A, 2.5);
    attest_fixture(v, CODE_B, 2.5);
    store_close(v);
    StoreAttestCmp c = compare3(s, u->db);
    cr_assert(c.equal, "%s", c.first);
    cr_assert_eq(store_attest_record(s, RID, CODE_B, 0, "-O2", &c), 1, "%s", store_errmsg(s));
    store_close(s);
}

/* The input's attestation made to have checked delta more steps, merged
 * into d (at out): the output's steps_checked after. */
static long long steps_after_merge(Store *d, const char *in, const char *out, int delta) {
    char sql[128], err[1024];
    snprintf(sql, sizeof sql, "UPDATE code_attest SET steps_checked = steps_checked + %d", delta);
    sqlite3 *h = raw_open(in);
    raw_exec(h, sql);
    raw_close(h);
    cr_assert_eq(merge_from(d, in, err, sizeof err), 0, "%s", err);
    h = raw_open(out);
    long long n = q_int(h, "SELECT steps_checked FROM code_attest", NULL);
    raw_close(h);
    return n;
}

/* gated merge carries an attestation with the copy of the run it holds
 * for, idempotently; not one for another copy. */
Test(store, merge_carries_attestations) {
    TmpDb t, u, m;
    tmp_db(&t);
    tmp_db(&u);
    tmp_db(&m);
    attested_db(&t, &u);
    Store *d = open_or_die(m.db);
    char err[1024];
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_attest_get(d, RID, CODE_B, "-O2", NULL), 1);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "code_attest"), 1);
    /* of two valid attestations of the same copy, the one that checked more
     * steps stays: a longer input's replaces the output's, a shorter one's
     * does not */
    long long before = steps_after_merge(d, t.db, m.db, 0);
    cr_assert_eq(steps_after_merge(d, t.db, m.db, 100), before + 100,
                 "a longer attestation did not replace a shorter one");
    cr_assert_eq(steps_after_merge(d, t.db, m.db, -100), before + 100,
                 "a shorter attestation replaced a longer one");
    store_close(d);

    /* the output's own copy wins (finished later): the input's attestation
     * is of another copy and stays out */
    tmp_db_remove(&m);
    tmp_db(&m);
    d = open_or_die(m.db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    sqlite3 *db = raw_open(m.db);
    raw_exec(db, "DELETE FROM code_attest; UPDATE runs SET ended_at = ended_at + 10");
    raw_close(db);
    cr_assert_eq(merge_from(d, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(d, "code_attest"), 0);
    store_close(d);
    tmp_db_remove(&t);
    tmp_db_remove(&u);
    tmp_db_remove(&m);
}

/* An attestation from an untrusted database is data: one row that is not
 * well formed refuses the whole input, nothing merged. */
Test(store, merge_refuses_malformed_attestations) {
    static const struct {
        const char *sql, *want;
    } bad[] = {
        {"UPDATE code_attest SET code_version = '--output=x'",
         "code_version is not a commit (40 lowercase hex digits) (the text \"--output=x\")"},
        {"UPDATE code_attest SET code_version = 'unknown'", "code_version is not a commit"},
        {"UPDATE code_attest SET run_id = 'x' || char(27) || '[2J'",
         "run_id is not a run id (16 lowercase hex digits) (the text \"x\\x1b[2J\")"},
        {"UPDATE code_attest SET cflags = char(10)", "cflags \"\\x0a\" contains a control"},
        {"UPDATE code_attest SET run_code_version = x'41'", "run_code_version is not printable text (a blob of 1 byte)"},
        {"UPDATE code_attest SET rows_checked = 'many'", "rows_checked is not a positive count (the text \"many\")"},
        {"UPDATE code_attest SET rows_checked = 0", "rows_checked is not a positive count (the integer 0)"},
        {"UPDATE code_attest SET steps_checked = -1", "steps_checked is not a count (the integer -1)"},
        {"UPDATE code_attest SET git_dirty = 2", "git_dirty is not 0 or 1"},
        {"UPDATE code_attest SET run_ended_at = 'yesterday'", "run_ended_at is not a time (the text \"yesterday\")"},
        {"UPDATE code_attest SET verified_at = 1e999", "verified_at is not a time (the real inf)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        TmpDb t, u, m;
        tmp_db(&t);
        tmp_db(&u);
        tmp_db(&m);
        attested_db(&t, &u);
        sqlite3 *db = raw_open(t.db);
        raw_exec(db, bad[i].sql);
        raw_close(db);
        Store *d = open_or_die(m.db);
        char err[1024];
        cr_assert_eq(merge_from(d, t.db, err, sizeof err), -2, "%s", bad[i].sql);
        cr_assert(strstr(err, "refused, nothing merged: code_attest row 1 (run "), "%s: %s", bad[i].sql, err);
        cr_assert(strstr(err, bad[i].want), "%s: %s", bad[i].sql, err);
        cr_assert_eq(store_count_rows(d, "runs"), 0);
        cr_assert_eq(store_count_rows(d, "code_attest"), 0);
        store_close(d);
        tmp_db_remove(&t);
        tmp_db_remove(&u);
        tmp_db_remove(&m);
    }
}
