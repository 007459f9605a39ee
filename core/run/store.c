/*
 * store.c — the SQLite results store (see store.h for the API).
 *
 * Schema (schema_version 2).  This block is the exact SQL store_open runs
 * on a new database (SCHEMA_SQL below repeats it; keep the two identical):
 *
 *   -- Facts about the database itself; schema_version is checked at open,
 *   -- db_id (16 random hex digits, made by the first writer that finds it
 *   -- missing) names the database in the checkpoints of its runs.
 *   CREATE TABLE IF NOT EXISTS meta (
 *       key   TEXT PRIMARY KEY,
 *       value TEXT NOT NULL
 *   );
 *   -- One row per distinct machine + toolchain; runs refer to it.
 *   CREATE TABLE IF NOT EXISTS environments (
 *       env_id           INTEGER PRIMARY KEY,
 *       env_hash         TEXT NOT NULL UNIQUE,  -- FNV-1a 64 over the columns below
 *       host             TEXT NOT NULL,
 *       cpu_model        TEXT NOT NULL,
 *       compiler         TEXT NOT NULL,
 *       cflags           TEXT NOT NULL,
 *       openblas_version TEXT NOT NULL,
 *       sqlite_version   TEXT NOT NULL,
 *       libyaml_version  TEXT NOT NULL
 *   );
 *   -- One row per training run; provenance is also kept here as plain columns.
 *   CREATE TABLE IF NOT EXISTS runs (
 *       run_id           TEXT PRIMARY KEY,      -- FNV-1a 64 of the resolved config JSON (incl. seed)
 *       name             TEXT NOT NULL,
 *       status           TEXT NOT NULL
 *                        CHECK (status IN ('running','finished','failed','diverged','killed')),
 *       config_json      TEXT NOT NULL,
 *       seed             INTEGER NOT NULL,
 *       threads          INTEGER NOT NULL,
 *       code_version     TEXT NOT NULL,         -- the build's git commit, or 'unknown'
 *       git_dirty        INTEGER,               -- at build time: 1 dirty, 0 clean, NULL unknown
 *       host             TEXT NOT NULL,
 *       cpu_model        TEXT NOT NULL,
 *       compiler         TEXT NOT NULL,
 *       cflags           TEXT NOT NULL,
 *       openblas_version TEXT NOT NULL,
 *       sqlite_version   TEXT NOT NULL,
 *       libyaml_version  TEXT NOT NULL,
 *       argv             TEXT,
 *       started_at       REAL NOT NULL,         -- unix seconds
 *       ended_at         REAL,
 *       heartbeat_at     REAL NOT NULL,         -- 'running' + stale heartbeat = killed
 *       error_text       TEXT,
 *       diverged_step    INTEGER,
 *       env_id           INTEGER NOT NULL REFERENCES environments(env_id)
 *   );
 *   CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
 *   -- Time series: one value per (run, key, context, step); NaN is stored as NULL.
 *   -- Steps count optimizer updates from 1 (train.c): train_loss, lr,
 *   -- grad_norm and spike at step s are update s's; evaluations and probes
 *   -- at step s follow update s.
 *   CREATE TABLE IF NOT EXISTS metrics (
 *       run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
 *       key     TEXT NOT NULL,
 *       context TEXT NOT NULL DEFAULT '',      -- '', 'layer=2', 'layer=1,head=3'
 *       step    INTEGER NOT NULL,
 *       value   REAL,
 *       t       REAL,                          -- unix seconds the value was recorded
 *       UNIQUE (run_id, key, context, step)
 *   );
 *   CREATE INDEX IF NOT EXISTS metrics_run_key_step ON metrics(run_id, key, step);
 *   -- Final values (val_loss, val_ppl, val_bpb, test_loss, probes, ...).
 *   CREATE TABLE IF NOT EXISTS summary (
 *       run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
 *       key     TEXT NOT NULL,
 *       context TEXT NOT NULL DEFAULT '',
 *       value   REAL,
 *       text    TEXT,
 *       PRIMARY KEY (run_id, key, context)
 *   );
 *   -- Histograms: nbins equal-width bins over [lo, hi].
 *   CREATE TABLE IF NOT EXISTS histograms (
 *       run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
 *       key     TEXT NOT NULL,
 *       context TEXT NOT NULL DEFAULT '',
 *       step    INTEGER NOT NULL,
 *       lo      REAL NOT NULL,
 *       hi      REAL NOT NULL,
 *       counts  TEXT NOT NULL,                 -- JSON array of integers, one per bin
 *       PRIMARY KEY (run_id, key, context, step)
 *   );
 *
 * Sweep membership (added later, still schema_version 1: the change is
 * purely additive, and store_open creates this table, with
 * CREATE TABLE IF NOT EXISTS, in any database that lacks it — old
 * databases gain it on first open by a new build, and old builds ignore it):
 *
 *   -- Which runs form which sweep (written by `gated sweep` before it runs
 *   -- them; a run shared by two sweeps has one row per sweep).  No foreign
 *   -- key: membership is recorded before the run exists.
 *   CREATE TABLE IF NOT EXISTS sweep_runs (
 *       sweep       TEXT NOT NULL,             -- the sweep's name
 *       run_id      TEXT NOT NULL,
 *       label       TEXT NOT NULL,             -- the variant / grid point label
 *       seed        INTEGER NOT NULL,
 *       idx         INTEGER NOT NULL,          -- the run's index in the sweep
 *       is_baseline INTEGER NOT NULL,          -- 1 for runs of the sweep's baseline row
 *       PRIMARY KEY (sweep, run_id)
 *   );
 *
 * Run claims (added later, still schema_version 1, purely additive like
 * sweep_runs: store_open creates the table where it is missing; merge
 * ignores it, a claim being a fact about live processes, not a result):
 *
 *   -- Who is about to run, or is running, a run: written by store_run_claim
 *   -- in the transaction that decides the run may start, refreshed by the
 *   -- claimant, deleted when the run ends.  A claim older than
 *   -- STORE_STALE_SECONDS is void.  No foreign key: a run is claimed
 *   -- before its row exists.
 *   CREATE TABLE IF NOT EXISTS run_claims (
 *       run_id      TEXT PRIMARY KEY,
 *       owner       TEXT NOT NULL,             -- 'HOST:PID:START' of the claimant
 *       claimed_at  REAL NOT NULL              -- unix seconds, refreshed while held
 *   );
 *
 * Code attestations (added with schema_version 2 in place, purely additive
 * like sweep_runs: store_open creates the table where it is missing, a
 * read-only open an empty TEMP one; builds from before it ignore it, and
 * what they do meanwhile cannot make a row lie: see run_code_version):
 *
 *   -- A result recorded by other code that a build re-executed and found
 *   -- bitwise equal (`gated sweep --verify-code`, store_attest.c): the
 *   -- build (code_version, cflags) computes the copy of the run whose
 *   -- row has run_code_version and run_ended_at.  It holds only while the
 *   -- run's row has both (a rerun, resume or merged-in copy changes them).
 *   -- No foreign key, like sweep_runs.
 *   CREATE TABLE IF NOT EXISTS code_attest (
 *       run_id           TEXT NOT NULL,
 *       code_version     TEXT NOT NULL,         -- the verifying build's commit (40 hex digits)
 *       cflags           TEXT NOT NULL,         -- its $(OPT) $(SANFLAGS)
 *       git_dirty        INTEGER NOT NULL,      -- its tree had uncommitted changes: 1, else 0
 *       run_code_version TEXT NOT NULL,         -- the copy verified: runs.code_version ...
 *       run_ended_at     REAL NOT NULL,         -- ... and runs.ended_at when it was verified
 *       verified_at      REAL NOT NULL,         -- unix seconds
 *       steps_checked    INTEGER NOT NULL,      -- updates re-executed (the first evaluation included)
 *       rows_checked     INTEGER NOT NULL,      -- metric and histogram rows found equal
 *       PRIMARY KEY (run_id, code_version, cflags)
 *   );
 *
 * Schema 1 (databases written before metrics.t) differs in two ways:
 * metrics has no t column, and the per-update keys (store_update_keys:
 * train_loss, lr, grad_norm, spike) and runs.diverged_step were numbered
 * from 0 (update s at step s - 1) while evaluations already followed the
 * update they came after.  A writer's store_open migrates such a file in
 * one transaction (migrate_v1: ALTER TABLE metrics ADD COLUMN t, the old
 * rows' t NULL; those steps and diverged_step + 1; schema_version 2); a
 * read-only open leaves the file alone and reads it through TEMP views
 * named metrics and runs that show it renumbered (shadow_v1).  Older
 * builds refuse a schema-2 file, so they cannot add 0-based rows to it.
 *
 * Connection settings: PRAGMA journal_mode=WAL, busy timeout 5000 ms,
 * PRAGMA foreign_keys=ON.  Writers use BEGIN IMMEDIATE transactions, so a
 * process killed at any point leaves every committed batch and nothing of
 * an uncommitted one.
 *
 * The sweep_runs, run_claims and code_attest tables are created by
 * store_sweep.c, store_claims.c and store_attest.c (SWEEP_SCHEMA_SQL,
 * CLAIMS_SCHEMA_SQL, ATTEST_SCHEMA_SQL: keep them identical to the blocks
 * above); the bench table, written only by `gated bench`, is
 * documented in store_bench.c; the views for the common joins
 * (run_metrics, sweep_metrics, final_metrics) in store_views.c.
 * store_impl.h lists the store's files.
 *
 * Every value goes through sqlite3_bind_*; the only SQL text that is not a
 * constant is none (constant strings like 'val_loss' are bound too).
 */
#include "run/store.h"
#include "run/store_impl.h"

#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "run/codever.h"
#include "util/sysinfo.h"

static const char SCHEMA_SQL[] =
    "CREATE TABLE IF NOT EXISTS meta (\n"
    "    key   TEXT PRIMARY KEY,\n"
    "    value TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS environments (\n"
    "    env_id           INTEGER PRIMARY KEY,\n"
    "    env_hash         TEXT NOT NULL UNIQUE,\n"
    "    host             TEXT NOT NULL,\n"
    "    cpu_model        TEXT NOT NULL,\n"
    "    compiler         TEXT NOT NULL,\n"
    "    cflags           TEXT NOT NULL,\n"
    "    openblas_version TEXT NOT NULL,\n"
    "    sqlite_version   TEXT NOT NULL,\n"
    "    libyaml_version  TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS runs (\n"
    "    run_id           TEXT PRIMARY KEY,\n"
    "    name             TEXT NOT NULL,\n"
    "    status           TEXT NOT NULL\n"
    "                     CHECK (status IN ('running','finished','failed','diverged','killed')),\n"
    "    config_json      TEXT NOT NULL,\n"
    "    seed             INTEGER NOT NULL,\n"
    "    threads          INTEGER NOT NULL,\n"
    "    code_version     TEXT NOT NULL,\n"
    "    git_dirty        INTEGER,\n"
    "    host             TEXT NOT NULL,\n"
    "    cpu_model        TEXT NOT NULL,\n"
    "    compiler         TEXT NOT NULL,\n"
    "    cflags           TEXT NOT NULL,\n"
    "    openblas_version TEXT NOT NULL,\n"
    "    sqlite_version   TEXT NOT NULL,\n"
    "    libyaml_version  TEXT NOT NULL,\n"
    "    argv             TEXT,\n"
    "    started_at       REAL NOT NULL,\n"
    "    ended_at         REAL,\n"
    "    heartbeat_at     REAL NOT NULL,\n"
    "    error_text       TEXT,\n"
    "    diverged_step    INTEGER,\n"
    "    env_id           INTEGER NOT NULL REFERENCES environments(env_id)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS runs_name ON runs(name);\n"
    "CREATE TABLE IF NOT EXISTS metrics (\n"
    "    run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
    "    key     TEXT NOT NULL,\n"
    "    context TEXT NOT NULL DEFAULT '',\n"
    "    step    INTEGER NOT NULL,\n"
    "    value   REAL,\n"
    "    t       REAL,\n"
    "    UNIQUE (run_id, key, context, step)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS metrics_run_key_step ON metrics(run_id, key, step);\n"
    "CREATE TABLE IF NOT EXISTS summary (\n"
    "    run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
    "    key     TEXT NOT NULL,\n"
    "    context TEXT NOT NULL DEFAULT '',\n"
    "    value   REAL,\n"
    "    text    TEXT,\n"
    "    PRIMARY KEY (run_id, key, context)\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS histograms (\n"
    "    run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
    "    key     TEXT NOT NULL,\n"
    "    context TEXT NOT NULL DEFAULT '',\n"
    "    step    INTEGER NOT NULL,\n"
    "    lo      REAL NOT NULL,\n"
    "    hi      REAL NOT NULL,\n"
    "    counts  TEXT NOT NULL,\n"
    "    PRIMARY KEY (run_id, key, context, step)\n"
    ");\n";

/* ------------------------------------------------------------------ */
/* run ids                                                             */
/* ------------------------------------------------------------------ */

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

void store_run_id(const char *config_json, char out[17]) {
    const char *s = config_json ? config_json : "";
    uint64_t h = fnv1a(FNV_OFFSET, s, strlen(s));
    snprintf(out, 17, "%016" PRIx64, h);
}

/* ------------------------------------------------------------------ */
/* open / close                                                        */
/* ------------------------------------------------------------------ */

static void free_store(Store *s) {
    if (!s) return;
    if (s->ins_metric) (void)sqlite3_finalize(s->ins_metric);
    if (s->db && sqlite3_close(s->db) != SQLITE_OK)
        fprintf(stderr, "%s: close: %s\n", s->path ? s->path : "store", sqlite3_errmsg(s->db));
    free(s->rows);
    free(s->pool);
    free(s->path);
    free(s);
}

/* Reads meta.schema_version: 1 and *v on success, 0 if absent or malformed. */
static int read_schema_version(Store *s, long long *v, int *rc) {
    sqlite3_stmt *st;
    *rc = 0;
    if (sto_prep(s, &st, "SELECT value FROM meta WHERE key = ?1")) return *rc = -1, 0;
    if (sto_bind(s, st, "t", "schema_version")) {
        (void)sqlite3_finalize(st);
        return *rc = -1, 0;
    }
    int found = 0;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const char *t = sto_text(st, 0);
        if (t && *t) {
            char *end;
            errno = 0;
            long long x = strtoll(t, &end, 10);
            if (!errno && *end == '\0') *v = x, found = 1;
        }
    } else if (r != SQLITE_DONE) {
        sto_dbfail(s, "read meta.schema_version");
        (void)sqlite3_finalize(st);
        return *rc = -1, 0;
    }
    if (sto_fin(s, st)) return *rc = -1, 0;
    return found;
}

static int check_version(Store *s, long long v) {
    if (v > STORE_SCHEMA_VERSION)
        return sto_fail(s,
                    "%s: schema version %lld is newer than this build supports (%d); "
                    "use a newer gated (the file was not changed)",
                    s->path, v, STORE_SCHEMA_VERSION);
    if (v < 1) return sto_fail(s, "%s: not a gated database (schema_version %lld)", s->path, v);
    return 0;
}

/* Opening, phase 1: the connection.  Read-only, the file must exist and
 * not be a directory (SQLite would say less). */
static int open_connection(Store *s) {
    const char *path = s->path;
    if (s->readonly) {
        struct stat sb;
        if (stat(path, &sb) != 0) {
            s->bad_input = errno == ENOENT;
            return sto_fail(s, "%s: %s", path, errno == ENOENT ? "no such database" : strerror(errno));
        }
    }
    int flags = s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    /* read-only in a folder it cannot write: immutable=1 (store_guard.c) */
    char *uri = s->readonly ? sto_ro_uri(path) : NULL;
    int rc = sqlite3_open_v2(uri ? uri : path, &s->db, flags | (uri ? SQLITE_OPEN_URI : 0), NULL);
    free(uri);
    s->bad_input = (rc & 0xff) == SQLITE_CANTOPEN; /* a missing folder, no permission: the path's fault */
    if (rc != SQLITE_OK)
        return sto_fail(s, "%s: cannot open (%s)", path, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    if (sqlite3_extended_result_codes(s->db, 1) != SQLITE_OK) return sto_dbfail(s, "extended result codes");
    if (sqlite3_busy_timeout(s->db, 5000) != SQLITE_OK) return sto_dbfail(s, "busy timeout");
    return 0;
}

/* Phase 2, before writing anything: is it SQLite, and is it ours?  An
 * empty file may become ours (*has_meta 0) unless read-only; one with a
 * meta table must carry a schema version this build reads. */
static int open_probe(Store *s, int *has_meta) {
    const char *path = s->path;
    sqlite3_stmt *st = NULL;
    long long ntables = 0, meta = 0;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT count(*), coalesce(sum(type = ?2 AND name = ?1), 0)"
                                " FROM sqlite_master",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, "meta", -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 2, "table", -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            ntables = sqlite3_column_int64(st, 0);
            meta = sqlite3_column_int64(st, 1);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        int code = sqlite3_errcode(s->db) & 0xff;
        s->bad_input = code == SQLITE_NOTADB || code == SQLITE_CORRUPT;
        if (code == SQLITE_NOTADB)
            sto_fail(s, "%s: not a gated database (%s)", path, sqlite3_errmsg(s->db));
        else
            sto_fail(s, "%s: cannot read (%s)", path, sqlite3_errmsg(s->db));
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sto_fin(s, st)) return -1;
    *has_meta = meta != 0;
    s->bad_input = 1; /* what follows is about the file */
    if (ntables > 0 && !meta) return sto_fail(s, "%s: not a gated database (no meta table)", path);
    if (s->readonly && !meta) return sto_fail(s, "%s: not a gated database (empty)", path);
    if (meta) {
        long long v = 0;
        int vrc;
        if (!read_schema_version(s, &v, &vrc))
            return vrc ? -1 : sto_fail(s, "%s: not a gated database (no schema_version in meta)", path);
        if (check_version(s, v)) return -1;
        s->schema = (int)v;
    }
    s->bad_input = 0;
    return 0;
}

/* Phase 3 (writers only): WAL and foreign keys.  Switching a new file to
 * WAL takes an exclusive lock without calling the busy handler, so when
 * several processes open a new database at once (two sweeps started
 * together) the switch is retried for as long as the busy timeout. */
static int open_settings(Store *s) {
    sqlite3_stmt *st;
    for (int tries = 0;; tries++) {
        if (sto_prep(s, &st, "PRAGMA journal_mode=WAL")) return -1;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) break;
        if ((rc & 0xff) == SQLITE_BUSY && tries < 1000) {
            (void)sqlite3_finalize(st);
            sqlite3_sleep(5);
            continue;
        }
        sto_dbfail(s, "set WAL journal mode");
        (void)sqlite3_finalize(st);
        return -1;
    }
    const char *mode = sto_text_or(st, 0, "");
    int wal_ok = strcmp(mode, "wal") == 0 || strcmp(mode, "memory") == 0;
    char got[32];
    snprintf(got, sizeof got, "%s", mode);
    if (sto_fin(s, st)) return -1;
    if (!wal_ok) return sto_fail(s, "%s: cannot use WAL journal mode (got '%s')", s->path, got);
    if (sto_exec(s, "PRAGMA foreign_keys=ON")) return -1;
    if (sto_prep(s, &st, "PRAGMA foreign_keys")) return -1;
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 0) != 1) {
        sto_fail(s, "%s: cannot enable foreign keys", s->path);
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st);
}

/* Phase 4 (writers, a file without meta): create the schema, idempotent
 * (another process may race us), and read its version back. */
static int open_create_schema(Store *s) {
    if (sto_begin(s)) return -1;
    char when[32];
    snprintf(when, sizeof when, "%.3f", sto_now());
    char ver[16];
    snprintf(ver, sizeof ver, "%d", STORE_SCHEMA_VERSION);
    long long v = 0;
    int vrc;
    if (sto_exec(s, SCHEMA_SQL) ||
        sto_run(s, NULL, "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)", "tt", "schema_version", ver) ||
        sto_run(s, NULL, "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)", "tt", "created_at", when))
        goto bad;
    if (!read_schema_version(s, &v, &vrc)) {
        if (!vrc) sto_fail(s, "%s: not a gated database (no schema_version in meta)", s->path);
        goto bad;
    }
    if (check_version(s, v) || sto_commit(s)) goto bad;
    s->schema = (int)v;
    return 0;
bad:
    sto_rollback(s);
    return -1;
}

const char *const store_update_keys[4] = {"train_loss", "lr", "grad_norm", "spike"};

/* Schema 1 -> 2 (see the top of this file), in one transaction: a process
 * that opened the file at the same time waits, then finds version 2 and
 * does nothing.  Steps are never negative, so the renumbering passes
 * through -1 - step (an UPDATE checks UNIQUE row by row: step + 1 at once
 * would collide with the next row). */
static int migrate_v1(Store *s) {
    if (sto_begin(s)) return -1;
    long long v = 0;
    int vrc;
    const char *const *k = store_update_keys;
    if (!read_schema_version(s, &v, &vrc)) {
        if (!vrc) sto_fail(s, "%s: not a gated database (no schema_version in meta)", s->path);
        goto bad;
    }
    if (v == 1) {
        char ver[16];
        snprintf(ver, sizeof ver, "%d", STORE_SCHEMA_VERSION);
        if (sto_exec(s, "ALTER TABLE metrics ADD COLUMN t REAL") ||
            sto_run(s, NULL, "UPDATE metrics SET step = -1 - step WHERE step >= 0 AND key IN (?1, ?2, ?3, ?4)",
                    "tttt", k[0], k[1], k[2], k[3]) ||
            sto_run(s, NULL, "UPDATE metrics SET step = -step WHERE step < 0 AND key IN (?1, ?2, ?3, ?4)", "tttt",
                    k[0], k[1], k[2], k[3]) ||
            sto_run(s, NULL, "UPDATE runs SET diverged_step = diverged_step + 1 WHERE diverged_step IS NOT NULL",
                    "") ||
            sto_run(s, NULL, "UPDATE meta SET value = ?2 WHERE key = ?1", "tt", "schema_version", ver))
            goto bad;
        v = STORE_SCHEMA_VERSION;
    }
    if (check_version(s, v) || sto_commit(s)) goto bad;
    s->schema = (int)v;
    return 0;
bad:
    sto_rollback(s);
    return -1;
}

/* A schema-1 file opened read-only: TEMP views that shadow metrics and runs
 * (TEMP names are found first) show it as schema 2 would, t NULL; the file
 * is not touched.  The keys go into a TEMP table: a view cannot hold bound
 * parameters. */
static int shadow_v1(Store *s) {
    if (sto_exec(s, "CREATE TEMP TABLE update_keys (key TEXT PRIMARY KEY)")) return -1;
    for (int i = 0; i < 4; i++)
        if (sto_run(s, NULL, "INSERT INTO temp.update_keys(key) VALUES (?1)", "t", store_update_keys[i])) return -1;
    return sto_exec(s,
                    "CREATE TEMP VIEW metrics AS SELECT run_id, key, context,"
                    " step + (key IN (SELECT key FROM temp.update_keys)) AS step, value, NULL AS t"
                    " FROM main.metrics;"
                    "CREATE TEMP VIEW runs AS SELECT run_id, name, status, config_json, seed, threads,"
                    " code_version, git_dirty, host, cpu_model, compiler, cflags, openblas_version,"
                    " sqlite_version, libyaml_version, argv, started_at, ended_at, heartbeat_at, error_text,"
                    " diverged_step + 1 AS diverged_step, env_id FROM main.runs");
}

/* meta.db_id into s->db_id when it is one ("" when not).  0 or -1. */
static int read_db_id(Store *s) {
    sqlite3_stmt *st;
    s->db_id[0] = '\0';
    if (sto_prep_bind(s, &st, "SELECT value FROM meta WHERE key = ?1", "t", "db_id")) return -1;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW && store_run_id_valid(sto_text_or(st, 0, "")))
        snprintf(s->db_id, sizeof s->db_id, "%s", sto_text(st, 0));
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        sto_dbfail(s, "read meta.db_id");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st);
}

/* 16 random hex digits (getrandom; time, pid and an address mixed in
 * should it fail: an id only has to differ between databases). */
static void random_id(char out[17]) {
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t parts[3] = {(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, (uint64_t)getpid(),
                             (uint64_t)(uintptr_t)&ts};
        x = fnv1a(FNV_OFFSET, parts, sizeof parts);
    }
    snprintf(out, 17, "%016" PRIx64, x);
}

/* A writer's open: the database's id, made when missing (or not an id), in
 * one transaction, so two processes opening a new file agree on one. */
static int ensure_db_id(Store *s) {
    if (read_db_id(s)) return -1;
    if (s->db_id[0]) return 0; /* the usual case: nothing written */
    char id[17];
    random_id(id);
    if (sto_begin(s) || read_db_id(s)) goto bad;
    if (!s->db_id[0] &&
        (sto_run(s, NULL, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", "tt", "db_id", id) ||
         read_db_id(s)))
        goto bad;
    if (sto_commit(s)) goto bad;
    return 0;
bad:
    sto_rollback(s);
    return -1;
}

static int open_inner(Store *s) {
    int has_meta = 0;
    if (sto_check_path(s) || open_connection(s) || open_probe(s, &has_meta)) return -1;
    if (s->readonly) {
        /* Reading only: no journal-mode switch, no schema; a database from
         * before sweep_runs gets an empty TEMP one, so readers need no case;
         * one of schema 1 is read as schema 2; the views come last, as
         * TEMP views over whatever TEMP tables stand in front. */
        if (sto_ensure_sweep_schema(s) || sto_ensure_attest_schema(s) || (s->schema == 1 && shadow_v1(s)) ||
            sto_ensure_views(s) || read_db_id(s) || sto_check_values(s))
            return -1;
    } else {
        if ((has_meta && sto_check_objects(s)) || open_settings(s) || (!has_meta && open_create_schema(s)))
            return -1;
        if (s->schema < STORE_SCHEMA_VERSION && migrate_v1(s)) return -1;
        if (sto_check_values(s) || sto_ensure_sweep_schema(s) || sto_ensure_claims_schema(s) ||
            sto_ensure_attest_schema(s) || sto_ensure_views(s) || ensure_db_id(s))
            return -1;
        /* (read-only, store_flush refuses with SQLite's own words) */
        if (sto_prep(s, &s->ins_metric,
                     "INSERT OR REPLACE INTO metrics(run_id, key, context, step, value, t)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"))
            return -1;
    }
    s->err[0] = '\0';
    return 0;
}

static int open_mode(Store **out, const char *path, int readonly, char *err, size_t errcap) {
    *out = NULL;
    if (err && errcap) err[0] = '\0';
    if (!path || !*path) {
        if (err && errcap) snprintf(err, errcap, "store: empty database path");
        return -1;
    }
    Store *s = calloc(1, sizeof *s);
    if (!s) {
        if (err && errcap) snprintf(err, errcap, "%s: out of memory", path);
        return -1;
    }
    s->path = strdup(path);
    s->rows = malloc(STORE_FLUSH_ROWS * sizeof *s->rows);
    s->pool_cap = 4096;
    s->pool = malloc(s->pool_cap);
    if (!s->path || !s->rows || !s->pool) {
        if (err && errcap) snprintf(err, errcap, "%s: out of memory", path);
        free_store(s);
        return -1;
    }
    s->readonly = readonly;
    if (open_inner(s)) {
        if (err && errcap) snprintf(err, errcap, "%s", s->err);
        int bad = s->bad_input;
        free_store(s);
        return bad ? -2 : -1;
    }
    *out = s;
    return 0;
}

int store_open(Store **out, const char *path, char *err, size_t errcap) {
    return open_mode(out, path, 0, err, errcap);
}

int store_open_ro(Store **out, const char *path, char *err, size_t errcap) {
    return open_mode(out, path, 1, err, errcap);
}

void store_close(Store *s) {
    if (!s) return;
    if (s->db && s->nrows && store_flush(s)) fprintf(stderr, "%s\n", s->err);
    free_store(s);
}


/* ------------------------------------------------------------------ */
/* runs                                                                */
/* ------------------------------------------------------------------ */

int store_run_begin(Store *s, const char *run_id, const char *name, const char *config_json,
                    long long seed, int threads, const Provenance *p, const char *argv_joined) {
    if (!run_id || !*run_id) return sto_fail(s, "%s: run_begin: empty run id", s->path);
    if (!config_json) return sto_fail(s, "%s: run_begin: no config", s->path);
    char why[160], q[200];
    if (store_name_check(run_id, why, sizeof why))
        return sto_fail(s, "%s: run_begin: run id \"%s\" %s", s->path, store_escape(run_id, q, sizeof q), why);
    if (store_name_check(name, why, sizeof why))
        return sto_fail(s, "%s: run_begin: run name \"%s\" %s", s->path, store_escape(name, q, sizeof q), why);
    Provenance local;
    if (!p) {
        store_provenance_fill(&local);
        p = &local;
    }
    if (store_flush(s)) return -1;

    const char *env[7] = {sto_or_unknown(p->host),           sto_or_unknown(p->cpu_model),
                          sto_or_unknown(p->compiler),       sto_or_unknown(p->cflags),
                          sto_or_unknown(p->openblas_version), sto_or_unknown(p->sqlite_version),
                          sto_or_unknown(p->libyaml_version)};
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < 7; i++) {
        h = fnv1a(h, env[i], strlen(env[i]));
        h = fnv1a(h, "\x1f", 1);
    }
    char env_hash[17];
    snprintf(env_hash, sizeof env_hash, "%016" PRIx64, h);
    double now = sto_now();

    if (sto_begin(s)) return -1;
    if (sto_run(s, NULL,
                 "INSERT INTO environments(env_hash, host, cpu_model, compiler, cflags,"
                 " openblas_version, sqlite_version, libyaml_version)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(env_hash) DO NOTHING",
                 "tttttttt", env_hash, env[0], env[1], env[2], env[3], env[4], env[5], env[6]))
        goto bad;

    sqlite3_stmt *st;
    if (sto_prep(s, &st, "SELECT env_id FROM environments WHERE env_hash = ?1")) goto bad;
    if (sto_bind(s, st, "t", env_hash)) {
        (void)sqlite3_finalize(st);
        goto bad;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, "run_begin: find environment");
        (void)sqlite3_finalize(st);
        goto bad;
    }
    long long env_id = sqlite3_column_int64(st, 0);
    if (sto_fin(s, st)) goto bad;

    if (sto_run(s, NULL,
                 "INSERT INTO runs(run_id, name, status, config_json, seed, threads, code_version,"
                 " git_dirty, host, cpu_model, compiler, cflags, openblas_version, sqlite_version,"
                 " libyaml_version, argv, started_at, ended_at, heartbeat_at, error_text,"
                 " diverged_step, env_id)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
                 " ?17, NULL, ?17, NULL, NULL, ?18)"
                 " ON CONFLICT(run_id) DO UPDATE SET name = excluded.name, status = excluded.status,"
                 " config_json = excluded.config_json, seed = excluded.seed,"
                 " threads = excluded.threads, code_version = excluded.code_version,"
                 " git_dirty = excluded.git_dirty, host = excluded.host,"
                 " cpu_model = excluded.cpu_model, compiler = excluded.compiler,"
                 " cflags = excluded.cflags, openblas_version = excluded.openblas_version,"
                 " sqlite_version = excluded.sqlite_version,"
                 " libyaml_version = excluded.libyaml_version, argv = excluded.argv,"
                 " ended_at = NULL, heartbeat_at = excluded.heartbeat_at, error_text = NULL,"
                 " diverged_step = NULL, env_id = excluded.env_id",
                 "ttttiitIttttttttdi", run_id, name ? name : "", "running", config_json,
                 (long long)seed, (long long)threads, sto_or_unknown(p->code_version),
                 (long long)(p->git_dirty < 0 ? -1 : p->git_dirty != 0), env[0], env[1], env[2],
                 env[3], env[4], env[5], env[6], argv_joined, now, env_id))
        goto bad;
    /* a run begun again ends as another copy: attestations of the old one
     * could never hold again (store_attest.c) */
    if (sto_run(s, NULL, "DELETE FROM code_attest WHERE run_id = ?1", "t", run_id)) goto bad;
    if (sto_commit(s)) goto bad;
    return 0;
bad:
    sto_rollback(s);
    return -1;
}


const char *store_run_status(Store *s, const char *run_id, char *buf, size_t cap) {
    sqlite3_stmt *st;
    if (sto_run_row(s, "SELECT status, heartbeat_at FROM runs WHERE run_id = ?1", run_id, "run_status", &st))
        return NULL;
    const char *eff = sto_effective_status(sto_text(st, 0), sqlite3_column_double(st, 1), sto_now());
    int n = snprintf(buf, cap, "%s", eff);
    if (sto_fin(s, st)) return NULL;
    if (strcmp(buf, "running") == 0) { /* its process may be gone already: then it is not running */
        int dead = sto_claim_owner_dead(s, run_id);
        if (dead < 0) return NULL;
        if (dead) n = snprintf(buf, cap, "killed");
    }
    if (n < 0 || (size_t)n >= cap) {
        sto_fail(s, "%s: run_status: buffer too small", s->path);
        return NULL;
    }
    return buf;
}

static int update_one(Store *s, const char *what, const char *run_id, int changes) {
    if (changes != 1) return sto_fail(s, "%s: %s: no run %s", s->path, what, run_id);
    return 0;
}

int store_heartbeat(Store *s, const char *run_id) {
    if (store_flush(s)) return -1;
    int ch = 0;
    if (sto_run(s, &ch, "UPDATE runs SET heartbeat_at = ?2 WHERE run_id = ?1", "td", run_id,
                 sto_now()))
        return -1;
    return update_one(s, "heartbeat", run_id, ch);
}

int store_debug_set_heartbeat(Store *s, const char *run_id, double t) {
    int ch = 0;
    if (sto_run(s, &ch, "UPDATE runs SET heartbeat_at = ?2 WHERE run_id = ?1", "td", run_id, t))
        return -1;
    return update_one(s, "set heartbeat", run_id, ch);
}

int store_run_end(Store *s, const char *run_id, const char *status, const char *error_text,
                  long long diverged_step) {
    static const char *const ok[] = {"finished", "failed", "diverged", "killed"};
    int valid = 0;
    for (size_t i = 0; status && i < sizeof ok / sizeof ok[0]; i++) valid |= strcmp(status, ok[i]) == 0;
    if (!valid)
        return sto_fail(s, "%s: run_end: status must be finished, failed, diverged or killed, got '%s'",
                    s->path, status ? status : "(null)");
    if (store_flush(s)) return -1;
    double now = sto_now();
    int ch = 0;
    if (sto_begin(s)) return -1;
    if (sto_run(s, &ch,
                 "UPDATE runs SET status = ?2, error_text = ?3, diverged_step = ?4,"
                 " ended_at = ?5, heartbeat_at = ?5 WHERE run_id = ?1",
                 "tttId", run_id, status, error_text, diverged_step, now) ||
        update_one(s, "run_end", run_id, ch) ||
        sto_run(s, NULL, "DELETE FROM run_claims WHERE run_id = ?1", "t", run_id) || sto_commit(s)) {
        sto_rollback(s);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* metrics, summary, histograms                                        */
/* ------------------------------------------------------------------ */

/* Copy str into the pool (or reuse prev if equal); offset into *off. */
static int pool_put(Store *s, const char *str, const size_t *prev, size_t *off) {
    if (prev && strcmp(s->pool + *prev, str) == 0) {
        *off = *prev;
        return 0;
    }
    size_t n = strlen(str) + 1;
    if (n > SIZE_MAX / 2 - s->pool_len) return sto_fail(s, "%s: metric: string too long", s->path);
    if (s->pool_len + n > s->pool_cap) {
        size_t cap = s->pool_cap;
        while (cap < s->pool_len + n) cap *= 2;
        char *p = realloc(s->pool, cap);
        if (!p) return sto_fail(s, "%s: metric: out of memory", s->path);
        s->pool = p;
        s->pool_cap = cap;
    }
    memcpy(s->pool + s->pool_len, str, n);
    *off = s->pool_len;
    s->pool_len += n;
    return 0;
}

int store_metric(Store *s, const char *run_id, const char *key, const char *context,
                 long long step, double value) {
    if (!run_id || !key) return sto_fail(s, "%s: metric: NULL run id or key", s->path);
    if (s->nrows >= STORE_FLUSH_ROWS && store_flush(s)) return -1;
    size_t pool_mark = s->pool_len;
    MetricRow *prev = s->nrows ? &s->rows[s->nrows - 1] : NULL;
    MetricRow r = {.step = step, .value = value, .t = sto_now()}; /* when it was made, not flushed */
    if (pool_put(s, run_id, prev ? &prev->run : NULL, &r.run) ||
        pool_put(s, key, prev ? &prev->key : NULL, &r.key) ||
        pool_put(s, context ? context : "", prev ? &prev->ctx : NULL, &r.ctx)) {
        s->pool_len = pool_mark;
        return -1;
    }
    s->rows[s->nrows++] = r;
    if (s->nrows >= STORE_FLUSH_ROWS) return store_flush(s);
    return 0;
}

int store_flush(Store *s) {
    int n = s->nrows;
    if (n == 0) return 0;
    if (!s->ins_metric) { /* read-only */
        s->nrows = 0;
        s->pool_len = 0;
        return sto_fail(s, "%s: flush metrics: attempt to write a readonly database (%d buffered metric rows dropped)",
                        s->path, n);
    }
    int rc = sto_begin(s);
    sqlite3_stmt *st = s->ins_metric;
    for (int i = 0; rc == 0 && i < n; i++) {
        const MetricRow *r = &s->rows[i];
        if (sto_bind(s, st, "tttidd", s->pool + r->run, s->pool + r->key, s->pool + r->ctx, r->step,
                 r->value, r->t)) {
            rc = -1;
            break;
        }
        if (sqlite3_step(st) != SQLITE_DONE) rc = sto_dbfail(s, "flush metrics");
        if (sqlite3_reset(st) != SQLITE_OK && rc == 0) rc = sto_dbfail(s, "flush: reset");
    }
    if (sqlite3_clear_bindings(st) != SQLITE_OK && rc == 0) rc = sto_dbfail(s, "flush: clear bindings");
    if (rc == 0) rc = sto_commit(s);
    if (rc != 0) {
        sto_rollback(s);
        size_t len = strlen(s->err);
        snprintf(s->err + len, sizeof s->err - len, " (%d buffered metric rows dropped)", n);
    }
    s->nrows = 0;
    s->pool_len = 0;
    return rc;
}

int store_summary(Store *s, const char *run_id, const char *key, const char *context,
                  double value, const char *text) {
    if (!run_id || !key) return sto_fail(s, "%s: summary: NULL run id or key", s->path);
    return sto_run(s, NULL,
                    "INSERT OR REPLACE INTO summary(run_id, key, context, value, text)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)",
                    "tttdt", run_id, key, context ? context : "", value, text);
}

int store_histogram(Store *s, const char *run_id, const char *key, const char *context,
                    long long step, double lo, double hi, const long long *counts, int nbins) {
    if (!run_id || !key) return sto_fail(s, "%s: histogram: NULL run id or key", s->path);
    if (nbins < 0 || (nbins > 0 && !counts)) return sto_fail(s, "%s: histogram: bad bins", s->path);
    size_t cap = (size_t)nbins * 22 + 3;
    char *js = malloc(cap);
    if (!js) return sto_fail(s, "%s: histogram: out of memory", s->path);
    size_t len = 0;
    js[len++] = '[';
    for (int i = 0; i < nbins; i++)
        len += (size_t)snprintf(js + len, cap - len, "%s%lld", i ? "," : "", counts[i]);
    js[len++] = ']';
    js[len] = '\0';
    int rc = sto_run(s, NULL,
                      "INSERT OR REPLACE INTO histograms(run_id, key, context, step, lo, hi, counts)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                      "tttiddt", run_id, key, context ? context : "", step, lo, hi, js);
    free(js);
    return rc;
}

/* ------------------------------------------------------------------ */
/* provenance                                                          */
/* ------------------------------------------------------------------ */

void store_provenance_fill(Provenance *p) {
    static char host[256], cpu[256], blas[256];
    sysinfo_host(host, sizeof host);
    sysinfo_cpu_model(cpu, sizeof cpu);
    const char *bc = openblas_get_config();
    snprintf(blas, sizeof blas, "%s", bc ? bc : "unknown");
    sysinfo_trim(blas);

    p->host = host;
    p->cpu_model = cpu;
    p->compiler = sysinfo_compiler();
    p->cflags = codever_cflags();
    p->openblas_version = blas;
    p->sqlite_version = sqlite3_libversion();
    p->libyaml_version = yaml_get_version_string();
    /* the build's, not the working directory's (codever.h) */
    p->code_version = codever_commit();
    p->git_dirty = codever_dirty();
}

/* ------------------------------------------------------------------ */
/* Run identity and restarts                                           */
/* ------------------------------------------------------------------ */

char *store_config_json(const Config *c, char id[17]) {
    Config k = *c;
    k.threads = 0; /* runtime only: results do not depend on it */
    int n = config_to_json(&k, NULL, 0);
    if (n < 0) return NULL;
    char *json = malloc((size_t)n + 1);
    if (!json) return NULL;
    config_to_json(&k, json, (size_t)n + 1);
    store_run_id(json, id);
    return json;
}

int store_run_reset(Store *s, const char *run_id) {
    if (store_flush(s)) return -1;
    if (sto_begin(s)) return -1;
    static const char *const del[] = {"DELETE FROM metrics WHERE run_id = ?1",
                                      "DELETE FROM summary WHERE run_id = ?1",
                                      "DELETE FROM histograms WHERE run_id = ?1"};
    for (size_t i = 0; i < sizeof del / sizeof del[0]; i++)
        if (sto_run(s, NULL, del[i], "t", run_id)) {
            sto_rollback(s);
            return -1;
        }
    return sto_commit(s);
}

sqlite3 *store_db(Store *s) { return s ? s->db : NULL; }

const char *store_path(Store *s) { return s ? s->path : ""; }

const char *store_db_id(Store *s) { return s ? s->db_id : ""; }
