/*
 * store.c — the SQLite results store (see store.h for the API).
 *
 * Schema (schema_version 1).  This block is the exact SQL store_open runs
 * on a new database (SCHEMA_SQL below repeats it; keep the two identical):
 *
 *   -- Facts about the database itself; schema_version is checked at open.
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
 *       code_version     TEXT NOT NULL,         -- git commit, or 'unknown'
 *       git_dirty        INTEGER,               -- 1 dirty, 0 clean, NULL unknown
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
 *   CREATE TABLE IF NOT EXISTS metrics (
 *       run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
 *       key     TEXT NOT NULL,
 *       context TEXT NOT NULL DEFAULT '',      -- '', 'layer=2', 'layer=1,head=3'
 *       step    INTEGER NOT NULL,
 *       value   REAL,
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
 *       owner       TEXT NOT NULL,             -- 'HOST:PID' of the claimant
 *       claimed_at  REAL NOT NULL              -- unix seconds, refreshed while held
 *   );
 *
 * Connection settings: PRAGMA journal_mode=WAL, busy timeout 5000 ms,
 * PRAGMA foreign_keys=ON.  Writers use BEGIN IMMEDIATE transactions, so a
 * process killed at any point leaves every committed batch and nothing of
 * an uncommitted one.
 *
 * Every value goes through sqlite3_bind_*; the only SQL text that is not a
 * constant is none (constant strings like 'val_loss' are bound too).
 */
#include "run/store.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

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

/* One buffered metric row; strings are offsets into Store.pool. */
typedef struct {
    size_t run, key, ctx;
    long long step;
    double value;
} MetricRow;

struct Store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *ins_metric; /* cached INSERT OR REPLACE INTO metrics */
    MetricRow *rows;          /* STORE_FLUSH_ROWS slots */
    int nrows;
    char *pool; /* NUL-terminated strings of the buffered rows */
    size_t pool_len, pool_cap;
    int readonly; /* store_open_ro: SQLITE_OPEN_READONLY, nothing written at open */
    char err[1024];
};

/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (double)time(NULL);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

static const char *or_unknown(const char *s) { return s ? s : "unknown"; }

/* Format into s->err; returns -1 so callers can `return fail(...)`. */
__attribute__((format(printf, 2, 3))) static int fail(Store *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* "PATH: WHAT: sqlite message". */
static int dbfail(Store *s, const char *what) {
    return fail(s, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int prep(Store *s, sqlite3_stmt **st, const char *sql) {
    *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        fail(s, "%s: prepare \"%.60s\": %s", s->path, sql, sqlite3_errmsg(s->db));
        *st = NULL;
        return -1;
    }
    return 0;
}

/* Bind parameters 1.. from types: 't' const char * (NULL binds NULL),
 * 'i' long long, 'I' long long (< 0 binds NULL), 'd' double (NaN binds NULL). */
static int vbind(Store *s, sqlite3_stmt *st, const char *types, va_list ap) {
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        int idx = i + 1;
        switch (types[i]) {
        case 't': {
            const char *v = va_arg(ap, const char *);
            rc = v ? sqlite3_bind_text(st, idx, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'i': rc = sqlite3_bind_int64(st, idx, (sqlite3_int64)va_arg(ap, long long)); break;
        case 'I': {
            long long v = va_arg(ap, long long);
            rc = v < 0 ? sqlite3_bind_null(st, idx) : sqlite3_bind_int64(st, idx, (sqlite3_int64)v);
            break;
        }
        case 'd': {
            double v = va_arg(ap, double);
            rc = isnan(v) ? sqlite3_bind_null(st, idx) : sqlite3_bind_double(st, idx, v);
            break;
        }
        default: return fail(s, "%s: internal: bad bind type '%c'", s->path, types[i]);
        }
    }
    if (rc != SQLITE_OK) return dbfail(s, "bind");
    return 0;
}

static int bind(Store *s, sqlite3_stmt *st, const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = vbind(s, st, types, ap);
    va_end(ap);
    return rc;
}

/* Finalize a statement whose evaluation succeeded. */
static int fin(Store *s, sqlite3_stmt *st) {
    if (sqlite3_finalize(st) != SQLITE_OK) return dbfail(s, "finalize");
    return 0;
}

/* Prepare, bind, step once expecting SQLITE_DONE, finalize.  *changes (if
 * non-NULL) gets the number of rows changed. */
static int run_stmt(Store *s, int *changes, const char *sql, const char *types, ...) {
    sqlite3_stmt *st;
    if (prep(s, &st, sql)) return -1;
    va_list ap;
    va_start(ap, types);
    int rc = vbind(s, st, types, ap);
    va_end(ap);
    if (rc) goto bad;
    if (sqlite3_step(st) != SQLITE_DONE) {
        fail(s, "%s: \"%.60s\": %s", s->path, sql, sqlite3_errmsg(s->db));
        goto bad;
    }
    if (changes) *changes = sqlite3_changes(s->db);
    return fin(s, st);
bad:
    (void)sqlite3_finalize(st); /* the error is already recorded */
    return -1;
}

/* Constant SQL without values (BEGIN, COMMIT, schema, PRAGMA). */
static int exec(Store *s, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fail(s, "%s: \"%.40s\": %s", s->path, sql, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int begin_tx(Store *s) { return exec(s, "BEGIN IMMEDIATE"); }
static int commit_tx(Store *s) { return exec(s, "COMMIT"); }
/* Roll back after an error, keeping the first error's message. */
static void rollback_tx(Store *s) {
    if (sqlite3_get_autocommit(s->db)) return; /* nothing open */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    if (exec(s, "ROLLBACK") != 0) {
        size_t n = strlen(keep);
        snprintf(keep + n, sizeof keep - n, " (and rollback failed: %.400s)", s->err);
    }
    memcpy(s->err, keep, sizeof keep);
}

static const char *col_text(sqlite3_stmt *st, int i) {
    return (const char *)sqlite3_column_text(st, i); /* NULL for SQL NULL */
}
static const char *col_text_or(sqlite3_stmt *st, int i, const char *dflt) {
    const char *t = col_text(st, i);
    return t ? t : dflt;
}

/* What a run's status reads as: 'running' with a stale heartbeat is killed. */
static const char *effective_status(const char *status, double heartbeat, double now) {
    if (status && strcmp(status, "running") == 0 && now - heartbeat > STORE_STALE_SECONDS)
        return "killed";
    return status ? status : "?";
}

static void fmt_time(double t, const char *fmt, char *buf, size_t cap) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || strftime(buf, cap, fmt, &tm) == 0) snprintf(buf, cap, "%.0f", t);
}

const char *store_errmsg(Store *s) { return s ? s->err : "no store"; }

/* ------------------------------------------------------------------ */
/* untrusted text                                                      */
/* ------------------------------------------------------------------ */

/* Length (1-4) of the valid UTF-8 character at p, its code point in *cp;
 * 0 when p does not start one (overlong forms, surrogates and code points
 * above U+10FFFF are not valid). */
static int utf8_char(const unsigned char *p, unsigned *cp) {
    unsigned c = p[0];
    if (c < 0x80) return *cp = c, 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n) return 0;
    unsigned v = c & (0x7fu >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        v = (v << 6) | (p[i] & 0x3fu);
    }
    if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (n == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    return *cp = v, n;
}

/* The next character of p: its length in bytes (1 for a byte that starts
 * no valid character), and in *ok whether it may appear in a name. */
static int next_char(const unsigned char *p, int *ok) {
    unsigned cp;
    int n = utf8_char(p, &cp);
    if (!n) return *ok = 0, 1;
    *ok = !(cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f));
    return n;
}

int store_name_check(const char *s, char *why, size_t cap) {
    if (why && cap) why[0] = '\0';
    if (!s) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int ok, n = next_char(p, &ok);
        if (!ok) {
            unsigned cp;
            int valid = utf8_char(p, &cp) > 0;
            if (why && cap) {
                char b[16];
                if (n == 2)
                    snprintf(b, sizeof b, "\\x%02x\\x%02x", p[0], p[1]);
                else
                    snprintf(b, sizeof b, "\\x%02x", p[0]);
                snprintf(why, cap, "%s (%s at byte %zu); names and labels must be printable text",
                         valid ? "contains a control character" : "is not valid UTF-8", b,
                         (size_t)(p - (const unsigned char *)s) + 1);
            }
            return -1;
        }
        p += n;
    }
    return 0;
}

/* Escape s into out when out is non-NULL (cap bytes, NUL included);
 * returns the length the whole escaped text needs, NUL excluded. */
static size_t escape_into(const char *s, char *out, size_t cap) {
    size_t need = 0, o = 0;
    int full = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int ok, n = next_char(p, &ok);
        char b[32];
        size_t bl = 0;
        if (ok)
            memcpy(b, p, (size_t)n), bl = (size_t)n;
        else
            for (int i = 0; i < n; i++) bl += (size_t)snprintf(b + bl, sizeof b - bl, "\\x%02x", p[i]);
        need += bl;
        if (out && !full) {
            if (o + bl < cap)
                memcpy(out + o, b, bl), o += bl;
            else
                full = 1; /* cut at a character boundary */
        }
        p += n;
    }
    if (out && cap) out[o] = '\0';
    return need;
}

char *store_escape(const char *s, char *out, size_t cap) {
    if (cap) escape_into(s, out, cap);
    return out;
}

char *store_escape_dup(const char *s) {
    size_t n = escape_into(s, NULL, 0) + 1;
    char *d = malloc(n);
    if (d) escape_into(s, d, n);
    return d;
}

void store_fput_escaped(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int ok, n = next_char(p, &ok);
        if (ok)
            fwrite(p, 1, (size_t)n, f);
        else
            for (int i = 0; i < n; i++) fprintf(f, "\\x%02x", p[i]);
        p += n;
    }
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
    if (prep(s, &st, "SELECT value FROM meta WHERE key = ?1")) return *rc = -1, 0;
    if (bind(s, st, "t", "schema_version")) {
        (void)sqlite3_finalize(st);
        return *rc = -1, 0;
    }
    int found = 0;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const char *t = col_text(st, 0);
        if (t && *t) {
            char *end;
            errno = 0;
            long long x = strtoll(t, &end, 10);
            if (!errno && *end == '\0') *v = x, found = 1;
        }
    } else if (r != SQLITE_DONE) {
        dbfail(s, "read meta.schema_version");
        (void)sqlite3_finalize(st);
        return *rc = -1, 0;
    }
    if (fin(s, st)) return *rc = -1, 0;
    return found;
}

static int check_version(Store *s, long long v) {
    if (v > STORE_SCHEMA_VERSION)
        return fail(s,
                    "%s: schema version %lld is newer than this build supports (%d); "
                    "use a newer gated (the file was not changed)",
                    s->path, v, STORE_SCHEMA_VERSION);
    if (v < 1) return fail(s, "%s: not a gated database (schema_version %lld)", s->path, v);
    return 0;
}

static int ensure_sweep_schema(Store *s); /* with the sweep functions, at the end */
static int ensure_claims_schema(Store *s); /* with the claim functions */

static int open_inner(Store *s) {
    const char *path = s->path;
    if (s->readonly) {
        struct stat sb;
        if (stat(path, &sb) != 0)
            return fail(s, "%s: %s", path, errno == ENOENT ? "no such database" : strerror(errno));
        if (S_ISDIR(sb.st_mode)) return fail(s, "%s: %s", path, strerror(EISDIR));
    }
    int flags = s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK)
        return fail(s, "%s: cannot open (%s)", path, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    if (sqlite3_extended_result_codes(s->db, 1) != SQLITE_OK) return dbfail(s, "extended result codes");
    if (sqlite3_busy_timeout(s->db, 5000) != SQLITE_OK) return dbfail(s, "busy timeout");

    /* Probe before writing anything: is it SQLite, and is it ours? */
    sqlite3_stmt *st = NULL;
    long long ntables = 0, has_meta = 0;
    rc = sqlite3_prepare_v2(s->db,
                            "SELECT count(*), coalesce(sum(type = 'table' AND name = ?1), 0)"
                            " FROM sqlite_master",
                            -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, "meta", -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            ntables = sqlite3_column_int64(st, 0);
            has_meta = sqlite3_column_int64(st, 1);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        int code = sqlite3_errcode(s->db) & 0xff;
        if (code == SQLITE_NOTADB)
            fail(s, "%s: not a gated database (%s)", path, sqlite3_errmsg(s->db));
        else
            fail(s, "%s: cannot read (%s)", path, sqlite3_errmsg(s->db));
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (fin(s, st)) return -1;
    if (ntables > 0 && !has_meta) return fail(s, "%s: not a gated database (no meta table)", path);
    if (s->readonly && !has_meta) return fail(s, "%s: not a gated database (empty)", path);
    if (has_meta) {
        long long v = 0;
        int vrc;
        if (!read_schema_version(s, &v, &vrc))
            return vrc ? -1 : fail(s, "%s: not a gated database (no schema_version in meta)", path);
        if (check_version(s, v)) return -1;
    }

    /* Reading only: no journal-mode switch, no schema; a database from
     * before sweep_runs gets an empty TEMP one, so readers need no case. */
    if (s->readonly) {
        if (ensure_sweep_schema(s)) return -1;
        goto statements;
    }

    /* Connection settings.  Switching a new file to WAL takes an exclusive
     * lock without calling the busy handler, so when several processes
     * open a new database at once (two sweeps started together) the switch
     * is retried for as long as the busy timeout. */
    for (int tries = 0;; tries++) {
        if (prep(s, &st, "PRAGMA journal_mode=WAL")) return -1;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) break;
        if ((rc & 0xff) == SQLITE_BUSY && tries < 1000) {
            (void)sqlite3_finalize(st);
            sqlite3_sleep(5);
            continue;
        }
        dbfail(s, "set WAL journal mode");
        (void)sqlite3_finalize(st);
        return -1;
    }
    const char *mode = col_text_or(st, 0, "");
    int wal_ok = strcmp(mode, "wal") == 0 || strcmp(mode, "memory") == 0;
    char got[32];
    snprintf(got, sizeof got, "%s", mode);
    if (fin(s, st)) return -1;
    if (!wal_ok) return fail(s, "%s: cannot use WAL journal mode (got '%s')", path, got);
    if (exec(s, "PRAGMA foreign_keys=ON")) return -1;
    if (prep(s, &st, "PRAGMA foreign_keys")) return -1;
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 0) != 1) {
        fail(s, "%s: cannot enable foreign keys", path);
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (fin(s, st)) return -1;

    /* Create the schema (idempotent; another process may race us). */
    if (!has_meta) {
        if (begin_tx(s)) return -1;
        char when[32];
        snprintf(when, sizeof when, "%.3f", now_s());
        char ver[16];
        snprintf(ver, sizeof ver, "%d", STORE_SCHEMA_VERSION);
        long long v = 0;
        int vrc;
        if (exec(s, SCHEMA_SQL) ||
            run_stmt(s, NULL, "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)", "tt",
                     "schema_version", ver) ||
            run_stmt(s, NULL, "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)", "tt",
                     "created_at", when)) {
            rollback_tx(s);
            return -1;
        }
        if (!read_schema_version(s, &v, &vrc)) {
            if (!vrc) fail(s, "%s: not a gated database (no schema_version in meta)", path);
            rollback_tx(s);
            return -1;
        }
        if (check_version(s, v)) {
            rollback_tx(s);
            return -1;
        }
        if (commit_tx(s)) {
            rollback_tx(s);
            return -1;
        }
    }

    if (ensure_sweep_schema(s) || ensure_claims_schema(s)) return -1;

statements: /* preparing writes nothing; read-only, they fail when run */
    if (prep(s, &s->ins_metric,
             "INSERT OR REPLACE INTO metrics(run_id, key, context, step, value)"
             " VALUES (?1, ?2, ?3, ?4, ?5)"))
        return -1;
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
        free_store(s);
        return -1;
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
    if (!run_id || !*run_id) return fail(s, "%s: run_begin: empty run id", s->path);
    if (!config_json) return fail(s, "%s: run_begin: no config", s->path);
    char why[160], q[200];
    if (store_name_check(run_id, why, sizeof why))
        return fail(s, "%s: run_begin: run id \"%s\" %s", s->path, store_escape(run_id, q, sizeof q), why);
    if (store_name_check(name, why, sizeof why))
        return fail(s, "%s: run_begin: run name \"%s\" %s", s->path, store_escape(name, q, sizeof q), why);
    Provenance local;
    if (!p) {
        store_provenance_fill(&local);
        p = &local;
    }
    if (store_flush(s)) return -1;

    const char *env[7] = {or_unknown(p->host),           or_unknown(p->cpu_model),
                          or_unknown(p->compiler),       or_unknown(p->cflags),
                          or_unknown(p->openblas_version), or_unknown(p->sqlite_version),
                          or_unknown(p->libyaml_version)};
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < 7; i++) {
        h = fnv1a(h, env[i], strlen(env[i]));
        h = fnv1a(h, "\x1f", 1);
    }
    char env_hash[17];
    snprintf(env_hash, sizeof env_hash, "%016" PRIx64, h);
    double now = now_s();

    if (begin_tx(s)) return -1;
    if (run_stmt(s, NULL,
                 "INSERT INTO environments(env_hash, host, cpu_model, compiler, cflags,"
                 " openblas_version, sqlite_version, libyaml_version)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(env_hash) DO NOTHING",
                 "tttttttt", env_hash, env[0], env[1], env[2], env[3], env[4], env[5], env[6]))
        goto bad;

    sqlite3_stmt *st;
    if (prep(s, &st, "SELECT env_id FROM environments WHERE env_hash = ?1")) goto bad;
    if (bind(s, st, "t", env_hash)) {
        (void)sqlite3_finalize(st);
        goto bad;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        dbfail(s, "run_begin: find environment");
        (void)sqlite3_finalize(st);
        goto bad;
    }
    long long env_id = sqlite3_column_int64(st, 0);
    if (fin(s, st)) goto bad;

    if (run_stmt(s, NULL,
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
                 (long long)seed, (long long)threads, or_unknown(p->code_version),
                 (long long)(p->git_dirty < 0 ? -1 : p->git_dirty != 0), env[0], env[1], env[2],
                 env[3], env[4], env[5], env[6], argv_joined, now, env_id))
        goto bad;
    if (commit_tx(s)) goto bad;
    return 0;
bad:
    rollback_tx(s);
    return -1;
}

/* Prepare sql (whose one parameter ?1 is a run id) and step to the run's
 * row: 0 with the statement in *out (the caller finalizes it), or -1 with
 * the error set ("no run ID" when absent) and nothing to finalize. */
static int run_row(Store *s, const char *sql, const char *run_id, const char *what, sqlite3_stmt **out) {
    sqlite3_stmt *st;
    s->err[0] = '\0';
    if (prep(s, &st, sql)) return -1;
    if (bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r = sqlite3_step(st);
    if (r == SQLITE_DONE) {
        fail(s, "%s: no run %s", s->path, run_id);
        (void)fin(s, st);
        return -1;
    }
    if (r != SQLITE_ROW) {
        dbfail(s, what);
        (void)sqlite3_finalize(st);
        return -1;
    }
    *out = st;
    return 0;
}

const char *store_run_status(Store *s, const char *run_id, char *buf, size_t cap) {
    sqlite3_stmt *st;
    if (run_row(s, "SELECT status, heartbeat_at FROM runs WHERE run_id = ?1", run_id, "run_status", &st))
        return NULL;
    const char *eff = effective_status(col_text(st, 0), sqlite3_column_double(st, 1), now_s());
    int n = snprintf(buf, cap, "%s", eff);
    if (fin(s, st)) return NULL;
    if (n < 0 || (size_t)n >= cap) {
        fail(s, "%s: run_status: buffer too small", s->path);
        return NULL;
    }
    return buf;
}

static int update_one(Store *s, const char *what, const char *run_id, int changes) {
    if (changes != 1) return fail(s, "%s: %s: no run %s", s->path, what, run_id);
    return 0;
}

int store_heartbeat(Store *s, const char *run_id) {
    if (store_flush(s)) return -1;
    int ch = 0;
    if (run_stmt(s, &ch, "UPDATE runs SET heartbeat_at = ?2 WHERE run_id = ?1", "td", run_id,
                 now_s()))
        return -1;
    return update_one(s, "heartbeat", run_id, ch);
}

int store_debug_set_heartbeat(Store *s, const char *run_id, double t) {
    int ch = 0;
    if (run_stmt(s, &ch, "UPDATE runs SET heartbeat_at = ?2 WHERE run_id = ?1", "td", run_id, t))
        return -1;
    return update_one(s, "set heartbeat", run_id, ch);
}

int store_run_end(Store *s, const char *run_id, const char *status, const char *error_text,
                  long long diverged_step) {
    static const char *const ok[] = {"finished", "failed", "diverged", "killed"};
    int valid = 0;
    for (size_t i = 0; status && i < sizeof ok / sizeof ok[0]; i++) valid |= strcmp(status, ok[i]) == 0;
    if (!valid)
        return fail(s, "%s: run_end: status must be finished, failed, diverged or killed, got '%s'",
                    s->path, status ? status : "(null)");
    if (store_flush(s)) return -1;
    double now = now_s();
    int ch = 0;
    if (begin_tx(s)) return -1;
    if (run_stmt(s, &ch,
                 "UPDATE runs SET status = ?2, error_text = ?3, diverged_step = ?4,"
                 " ended_at = ?5, heartbeat_at = ?5 WHERE run_id = ?1",
                 "tttId", run_id, status, error_text, diverged_step, now) ||
        update_one(s, "run_end", run_id, ch) ||
        run_stmt(s, NULL, "DELETE FROM run_claims WHERE run_id = ?1", "t", run_id) || commit_tx(s)) {
        rollback_tx(s);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* claims (the run_claims table: see the schema at the top)            */
/* ------------------------------------------------------------------ */

static const char CLAIMS_SCHEMA_SQL[] = "CREATE TABLE IF NOT EXISTS run_claims (\n"
                                        "    run_id      TEXT PRIMARY KEY,\n"
                                        "    owner       TEXT NOT NULL,\n"
                                        "    claimed_at  REAL NOT NULL\n"
                                        ");\n";

static int has_table(Store *s, const char *schema_sql, const char *name); /* with the sweep functions */

/* Create run_claims where it is missing (only then: opening an up-to-date
 * database writes nothing). */
static int ensure_claims_schema(Store *s) {
    int h = has_table(s, "SELECT count(*) FROM main.sqlite_master WHERE type = ?1 AND name = ?2", "run_claims");
    if (h < 0) return -1;
    return h ? 0 : exec(s, CLAIMS_SCHEMA_SQL);
}

void store_owner_token(char *out, size_t cap) {
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
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
    char status[16], code[128];
    double heartbeat, ended_at;
} ClaimView;

static int claim_view(Store *s, const char *run_id, ClaimView *v) {
    memset(v, 0, sizeof *v);
    v->ended_at = NAN;
    sqlite3_stmt *st;
    if (prep(s, &st, "SELECT owner, claimed_at FROM run_claims WHERE run_id = ?1")) return -1;
    if (bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        v->has_claim = 1;
        snprintf(v->owner, sizeof v->owner, "%s", col_text_or(st, 0, ""));
        v->claimed_at = sqlite3_column_double(st, 1);
    } else if (r != SQLITE_DONE) {
        dbfail(s, "claim: read claim");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (fin(s, st)) return -1;
    if (prep(s, &st, "SELECT status, heartbeat_at, code_version, ended_at FROM runs WHERE run_id = ?1")) return -1;
    if (bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        v->has_run = 1;
        snprintf(v->status, sizeof v->status, "%s", col_text_or(st, 0, "?"));
        v->heartbeat = sqlite3_column_double(st, 1);
        snprintf(v->code, sizeof v->code, "%s", col_text_or(st, 2, "unknown"));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL) v->ended_at = sqlite3_column_double(st, 3);
    } else if (r != SQLITE_DONE) {
        dbfail(s, "claim: read run");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return fin(s, st);
}

int store_run_claim(Store *s, const char *run_id, const char *owner, StoreClaimDecide decide, void *ctx,
                    char *status, size_t cap) {
    if (status && cap) status[0] = '\0';
    if (!run_id || !*run_id || !owner || !*owner) return fail(s, "%s: claim: empty run id or owner", s->path);
    if (store_flush(s) || begin_tx(s)) return -1;
    ClaimView v;
    if (claim_view(s, run_id, &v)) goto bad;
    double now = now_s();
    const char *eff = v.has_run ? effective_status(v.status, v.heartbeat, now) : NULL;
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
        StoreRunState rs = {eff, v.has_run ? v.code : NULL, v.ended_at};
        int yes = decide ? decide(ctx, &rs) : !(eff && (strcmp(eff, "finished") == 0 || strcmp(eff, "diverged") == 0));
        rc = yes ? STORE_CLAIMED : STORE_CLAIM_DECLINED;
    }
    if (rc == STORE_CLAIMED &&
        run_stmt(s, NULL,
                 "INSERT INTO run_claims(run_id, owner, claimed_at) VALUES (?1, ?2, ?3)"
                 " ON CONFLICT(run_id) DO UPDATE SET owner = excluded.owner, claimed_at = excluded.claimed_at",
                 "ttd", run_id, owner, now))
        goto bad;
    if (commit_tx(s)) goto bad;
    if (status && cap) snprintf(status, cap, "%s", eff ? eff : "-");
    return rc;
bad:
    rollback_tx(s);
    return -1;
}

int store_claim_refresh(Store *s, const char *owner) {
    return run_stmt(s, NULL, "UPDATE run_claims SET claimed_at = ?2 WHERE owner = ?1", "td", owner, now_s());
}

int store_run_release(Store *s, const char *run_id, const char *owner, const char *status,
                      const char *error_text) {
    if (!status || (strcmp(status, "failed") != 0 && strcmp(status, "killed") != 0))
        return fail(s, "%s: release: status must be failed or killed, got '%s'", s->path, status ? status : "(null)");
    if (store_flush(s) || begin_tx(s)) return -1;
    ClaimView v;
    int ended = 0;
    if (claim_view(s, run_id, &v)) goto bad;
    if (v.has_claim && strcmp(v.owner, owner) == 0) {
        if (v.has_run && strcmp(v.status, "running") == 0) {
            double now = now_s();
            if (run_stmt(s, NULL,
                         "UPDATE runs SET status = ?2, error_text = ?3, diverged_step = NULL,"
                         " ended_at = ?4, heartbeat_at = ?4 WHERE run_id = ?1",
                         "tttd", run_id, status, error_text, now))
                goto bad;
            ended = 1;
        }
        if (run_stmt(s, NULL, "DELETE FROM run_claims WHERE run_id = ?1 AND owner = ?2", "tt", run_id, owner))
            goto bad;
    }
    if (commit_tx(s)) goto bad;
    return ended;
bad:
    rollback_tx(s);
    return -1;
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
    if (n > SIZE_MAX / 2 - s->pool_len) return fail(s, "%s: metric: string too long", s->path);
    if (s->pool_len + n > s->pool_cap) {
        size_t cap = s->pool_cap;
        while (cap < s->pool_len + n) cap *= 2;
        char *p = realloc(s->pool, cap);
        if (!p) return fail(s, "%s: metric: out of memory", s->path);
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
    if (!run_id || !key) return fail(s, "%s: metric: NULL run id or key", s->path);
    if (s->nrows >= STORE_FLUSH_ROWS && store_flush(s)) return -1;
    size_t pool_mark = s->pool_len;
    MetricRow *prev = s->nrows ? &s->rows[s->nrows - 1] : NULL;
    MetricRow r = {.step = step, .value = value};
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
    int rc = begin_tx(s);
    sqlite3_stmt *st = s->ins_metric;
    for (int i = 0; rc == 0 && i < n; i++) {
        const MetricRow *r = &s->rows[i];
        if (bind(s, st, "tttid", s->pool + r->run, s->pool + r->key, s->pool + r->ctx, r->step,
                 r->value)) {
            rc = -1;
            break;
        }
        if (sqlite3_step(st) != SQLITE_DONE) rc = dbfail(s, "flush metrics");
        if (sqlite3_reset(st) != SQLITE_OK && rc == 0) rc = dbfail(s, "flush: reset");
    }
    if (sqlite3_clear_bindings(st) != SQLITE_OK && rc == 0) rc = dbfail(s, "flush: clear bindings");
    if (rc == 0) rc = commit_tx(s);
    if (rc != 0) {
        rollback_tx(s);
        size_t len = strlen(s->err);
        snprintf(s->err + len, sizeof s->err - len, " (%d buffered metric rows dropped)", n);
    }
    s->nrows = 0;
    s->pool_len = 0;
    return rc;
}

int store_summary(Store *s, const char *run_id, const char *key, const char *context,
                  double value, const char *text) {
    if (!run_id || !key) return fail(s, "%s: summary: NULL run id or key", s->path);
    return run_stmt(s, NULL,
                    "INSERT OR REPLACE INTO summary(run_id, key, context, value, text)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)",
                    "tttdt", run_id, key, context ? context : "", value, text);
}

int store_histogram(Store *s, const char *run_id, const char *key, const char *context,
                    long long step, double lo, double hi, const long long *counts, int nbins) {
    if (!run_id || !key) return fail(s, "%s: histogram: NULL run id or key", s->path);
    if (nbins < 0 || (nbins > 0 && !counts)) return fail(s, "%s: histogram: bad bins", s->path);
    size_t cap = (size_t)nbins * 22 + 3;
    char *js = malloc(cap);
    if (!js) return fail(s, "%s: histogram: out of memory", s->path);
    size_t len = 0;
    js[len++] = '[';
    for (int i = 0; i < nbins; i++)
        len += (size_t)snprintf(js + len, cap - len, "%s%lld", i ? "," : "", counts[i]);
    js[len++] = ']';
    js[len] = '\0';
    int rc = run_stmt(s, NULL,
                      "INSERT OR REPLACE INTO histograms(run_id, key, context, step, lo, hi, counts)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                      "tttiddt", run_id, key, context ? context : "", step, lo, hi, js);
    free(js);
    return rc;
}

/* ------------------------------------------------------------------ */
/* provenance                                                          */
/* ------------------------------------------------------------------ */

#if defined(__clang__)
#define STORE_COMPILER __VERSION__
#elif defined(__GNUC__)
#define STORE_COMPILER "gcc " __VERSION__
#elif defined(__VERSION__)
#define STORE_COMPILER __VERSION__
#else
#define STORE_COMPILER "unknown"
#endif

void store_trim(char *t) {
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = '\0';
}

const char *store_compiler(void) { return STORE_COMPILER; }

void store_cpuinfo(const char *key, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t kl = strlen(key);
    while (!out[0] && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0) continue;
        const char *r = line + kl;
        while (*r == ' ' || *r == '\t') r++;
        if (*r != ':') continue;
        r++;
        while (*r == ' ' || *r == '\t') r++;
        snprintf(out, cap, "%s", r); /* a value longer than out is cut, not an error */
        store_trim(out);
    }
    fclose(f);
}

void store_cpu_model(char *out, size_t cap) {
    static const char *const keys[] = {"model name", "Model", "Hardware", "cpu model", "Processor"};
    out[0] = '\0';
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !out[0]; k++) store_cpuinfo(keys[k], out, cap);
    if (!out[0]) snprintf(out, cap, "unknown");
}

/* First line of a command's stdout into out; 0 if it ran and exited 0. */
static int run_cmd(const char *cmd, char *out, size_t cap, int *any_output) {
    out[0] = '\0';
    if (any_output) *any_output = 0;
    fflush(NULL); /* popen's child must not duplicate unflushed stdio buffers */
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char buf[256];
    int first = 1;
    while (fgets(buf, sizeof buf, p)) {
        if (any_output) *any_output = 1;
        if (first) {
            snprintf(out, cap, "%s", buf);
            store_trim(out);
            first = 0;
        }
    }
    int st = pclose(p);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return 0;
}

void store_provenance_fill(Provenance *p) {
    static char host[256], cpu[256], blas[256], commit[64];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    store_cpu_model(cpu, sizeof cpu);
    const char *bc = openblas_get_config();
    snprintf(blas, sizeof blas, "%s", bc ? bc : "unknown");
    store_trim(blas);

    int dirty = -1;
    if (run_cmd("git rev-parse HEAD 2>/dev/null", commit, sizeof commit, NULL) != 0 || !commit[0]) {
        snprintf(commit, sizeof commit, "unknown");
    } else {
        char first[256];
        int any = 0;
        if (run_cmd("git status --porcelain 2>/dev/null", first, sizeof first, &any) == 0)
            dirty = any;
    }

    p->host = host;
    p->cpu_model = cpu;
    p->compiler = STORE_COMPILER;
#ifdef GATED_CFLAGS
    p->cflags = GATED_CFLAGS;
#else
    p->cflags = "unknown";
#endif
    p->openblas_version = blas;
    p->sqlite_version = sqlite3_libversion();
    p->libyaml_version = yaml_get_version_string();
    p->code_version = commit;
    p->git_dirty = dirty;
}

/* ------------------------------------------------------------------ */
/* ls                                                                  */
/* ------------------------------------------------------------------ */

static int check_stream(Store *s, FILE *f) {
    if (ferror(f)) return fail(s, "%s: write error on output", s->path);
    return 0;
}

int store_print_ls(Store *s, FILE *f) {
    sqlite3_stmt *st;
    int namew = 4;
    if (prep(s, &st, "SELECT coalesce(max(length(name)), 0) FROM runs")) return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        dbfail(s, "ls");
        (void)sqlite3_finalize(st);
        return -1;
    }
    int w = sqlite3_column_int(st, 0);
    if (fin(s, st)) return -1;
    if (w > namew) namew = w > 48 ? 48 : w;

    if (prep(s, &st,
             "SELECT r.run_id, r.name, r.status, r.heartbeat_at, r.started_at,"
             " (SELECT max(m.step) FROM metrics m WHERE m.run_id = r.run_id),"
             " coalesce((SELECT u.value FROM summary u WHERE u.run_id = r.run_id"
             "           AND u.key = ?1 AND u.context = ?2),"
             "          (SELECT m.value FROM metrics m WHERE m.run_id = r.run_id"
             "           AND m.key = ?1 AND m.context = ?2 ORDER BY m.step DESC LIMIT 1))"
             " FROM runs r ORDER BY r.started_at, r.run_id"))
        return -1;
    if (bind(s, st, "tt", "val_loss", "")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    fprintf(f, "%-16s  %-*s  %-8s  %8s  %8s  %s\n", "run id", namew, "name", "status", "steps",
            "val loss", "started");
    double now = now_s();
    int r, nruns = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        char steps[24] = "-", vl[32] = "-", when[32];
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            snprintf(steps, sizeof steps, "%lld", (long long)sqlite3_column_int64(st, 5));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            snprintf(vl, sizeof vl, "%.4f", sqlite3_column_double(st, 6));
        fmt_time(sqlite3_column_double(st, 4), "%Y-%m-%d %H:%M", when, sizeof when);
        /* every text from the file is escaped: a merged database is untrusted */
        char *id = store_escape_dup(col_text_or(st, 0, "?")), *name = store_escape_dup(col_text_or(st, 1, "")),
             *status = store_escape_dup(effective_status(col_text(st, 2), sqlite3_column_double(st, 3), now));
        if (!id || !name || !status) {
            free(id), free(name), free(status);
            (void)sqlite3_finalize(st);
            return fail(s, "%s: ls: out of memory", s->path);
        }
        fprintf(f, "%-16s  %-*s  %-8s  %8s  %8s  %s\n", id, namew, name, status, steps, vl, when);
        free(id), free(name), free(status);
        nruns++;
    }
    if (r != SQLITE_DONE) {
        dbfail(s, "ls");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (fin(s, st)) return -1;
    if (nruns == 0) fprintf(f, "(no runs in %s)\n", s->path);
    return check_stream(s, f);
}

/* ------------------------------------------------------------------ */
/* show                                                                */
/* ------------------------------------------------------------------ */

/* Runs matching one query (one text parameter): count, the first id
 * (malloc'd, into *first if non-NULL and count >= 1) and a list of up to 5
 * ids appended to list. */
static int match_runs(Store *s, const char *sql, const char *arg, char **first, char *list,
                      size_t cap, long long *count) {
    sqlite3_stmt *st;
    *count = 0;
    if (prep(s, &st, sql)) return -1;
    if (bind(s, st, "t", arg)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r;
    size_t len = strlen(list);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = col_text_or(st, 0, "");
        if (*count == 0 && first) {
            *first = strdup(id);
            if (!*first) {
                (void)sqlite3_finalize(st);
                return fail(s, "%s: show: out of memory", s->path);
            }
        }
        if (*count < 5 && len < cap) {
            char q[64];
            int n = snprintf(list + len, cap - len, "%s%s", *count ? ", " : "", store_escape(id, q, sizeof q));
            if (n > 0) len += (size_t)n;
            if (len >= cap) len = cap - 1;
        } else if (*count == 5 && len < cap) {
            int n = snprintf(list + len, cap - len, ", ...");
            if (n > 0) len += (size_t)n;
            if (len >= cap) len = cap - 1;
        }
        (*count)++;
    }
    if (r != SQLITE_DONE) {
        dbfail(s, "show: find run");
        (void)sqlite3_finalize(st);
        if (first) free(*first), *first = NULL;
        return -1;
    }
    if (fin(s, st)) {
        if (first) free(*first), *first = NULL;
        return -1;
    }
    return 0;
}

/* Run id for an exact id, exact name or unique id prefix (malloc'd). */
static char *resolve_run(Store *s, const char *arg) {
    if (!arg || !*arg) {
        fail(s, "%s: empty run id or name", s->path);
        return NULL;
    }
    static const char *const queries[] = {
        "SELECT run_id FROM runs WHERE run_id = ?1",
        "SELECT run_id FROM runs WHERE name = ?1 ORDER BY started_at, run_id",
        "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1 ORDER BY run_id",
    };
    static const char *const what[] = {"run id", "name", "run id prefix"};
    char shown[256];
    store_escape(arg, shown, sizeof shown);
    for (int q = 0; q < 3; q++) {
        char *id = NULL;
        char list[200] = "";
        long long n = 0;
        if (match_runs(s, queries[q], arg, &id, list, sizeof list, &n)) return NULL;
        if (n == 1) return id;
        free(id);
        if (n > 1) {
            fail(s, "%s: '%s' is ambiguous: %s matches %lld runs (%s)", s->path, shown, what[q], n,
                 list);
            return NULL;
        }
    }
    fail(s, "%s: no run matches '%s' (by run id, name or run id prefix)", s->path, shown);
    return NULL;
}

int store_sweep_finished(Store *s, const char *sweep, char (**ids)[17], int *n) {
    sqlite3_stmt *st;
    *ids = NULL;
    *n = 0;
    if (prep(s, &st, "SELECT w.run_id FROM sweep_runs w JOIN runs r ON r.run_id = w.run_id "
                     "WHERE w.sweep = ?1 AND r.status = 'finished' ORDER BY w.idx"))
        return -1;
    if (bind(s, st, "t", sweep)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char(*g)[17] = realloc(*ids, sizeof **ids * (size_t)cap);
            if (!g) {
                (void)sqlite3_finalize(st);
                return fail(s, "%s: out of memory", s->path);
            }
            *ids = g;
        }
        snprintf((*ids)[(*n)++], 17, "%s", col_text_or(st, 0, ""));
    }
    (void)sqlite3_finalize(st);
    if (r != SQLITE_DONE) return dbfail(s, "reading sweep_runs");
    return 0;
}

int store_find_run(Store *s, const char *arg, char id[17], char **config_json) {
    char *rid = resolve_run(s, arg);
    if (!rid) return -1;
    snprintf(id, 17, "%s", rid);
    free(rid);
    if (!config_json) return 0;
    *config_json = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT config_json FROM runs WHERE run_id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *js = (const char *)sqlite3_column_text(st, 0);
        *config_json = js ? strdup(js) : NULL;
    }
    sqlite3_finalize(st);
    if (!*config_json) return fail(s, "%s: run %s: cannot read its config", s->path, id);
    return 0;
}

typedef struct {
    long long layer;
    double f_attn, m_act;
    int has_f, has_m;
} ProbeRow;

/* Find or add a layer row (kept sorted by layer). */
static ProbeRow *probe_row(ProbeRow **rows, int *n, int *cap, long long layer) {
    for (int i = 0; i < *n; i++)
        if ((*rows)[i].layer == layer) return &(*rows)[i];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        ProbeRow *p = realloc(*rows, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        *rows = p;
        *cap = nc;
    }
    int at = *n;
    while (at > 0 && (*rows)[at - 1].layer > layer) at--;
    memmove(*rows + at + 1, *rows + at, (size_t)(*n - at) * sizeof **rows);
    (*rows)[at] = (ProbeRow){.layer = layer};
    (*n)++;
    return &(*rows)[at];
}

/* 'layer=N' exactly -> N; -1 otherwise. */
static long long parse_layer(const char *ctx) {
    if (!ctx || strncmp(ctx, "layer=", 6) != 0 || ctx[6] < '0' || ctx[6] > '9') return -1;
    char *end;
    errno = 0;
    long long v = strtoll(ctx + 6, &end, 10);
    if (errno || *end) return -1;
    return v;
}

static int print_probes(Store *s, const char *id, FILE *f) {
    static const char *const keys[2] = {"f_attn", "m_act"};
    /* summary first; metrics (last step per layer) fill what summary lacks. */
    static const char *const sqls[2] = {
        "SELECT context, value FROM summary WHERE run_id = ?1 AND key = ?2"
        " AND context GLOB 'layer=[0-9]*'",
        "SELECT m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key = ?2"
        " AND m.context GLOB 'layer=[0-9]*' AND m.step = (SELECT max(step) FROM metrics"
        " WHERE run_id = ?1 AND key = ?2 AND context = m.context)",
    };
    ProbeRow *rows = NULL;
    int n = 0, cap = 0, rc = 0;
    for (int q = 0; q < 2 && rc == 0; q++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            sqlite3_stmt *st;
            if (prep(s, &st, sqls[q])) {
                rc = -1;
                break;
            }
            if (bind(s, st, "tt", id, keys[k])) {
                (void)sqlite3_finalize(st);
                rc = -1;
                break;
            }
            int r;
            while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                long long layer = parse_layer(col_text(st, 0));
                if (layer < 0) continue;
                ProbeRow *p = probe_row(&rows, &n, &cap, layer);
                if (!p) {
                    rc = fail(s, "%s: show: out of memory", s->path);
                    break;
                }
                double v = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN
                                                                     : sqlite3_column_double(st, 1);
                if (k == 0 && !p->has_f) p->f_attn = v, p->has_f = 1;
                if (k == 1 && !p->has_m) p->m_act = v, p->has_m = 1;
            }
            if (rc == 0 && r != SQLITE_DONE) rc = dbfail(s, "show: probes");
            if (rc != 0) (void)sqlite3_finalize(st);
            else rc = fin(s, st);
        }
    if (rc == 0 && n > 0) {
        fprintf(f, "\nper-layer probes (last step)\n  %-6s  %10s  %10s\n", "layer", "f_attn", "m_act");
        for (int i = 0; i < n; i++) {
            char a[32] = "-", b[32] = "-";
            if (rows[i].has_f) snprintf(a, sizeof a, "%.4g", rows[i].f_attn);
            if (rows[i].has_m) snprintf(b, sizeof b, "%.4g", rows[i].m_act);
            fprintf(f, "  %-6lld  %10s  %10s\n", rows[i].layer, a, b);
        }
    }
    free(rows);
    return rc;
}

/* Parse a JSON array of integers; *out malloc'd. */
static int parse_counts(const char *js, long long **out, int *nout) {
    *out = NULL;
    *nout = 0;
    if (!js) return -1;
    while (*js == ' ') js++;
    if (*js != '[') return -1;
    int cap = 1;
    for (const char *p = js; *p; p++) cap += *p == ',';
    long long *v = malloc((size_t)cap * sizeof *v);
    if (!v) return -1;
    const char *p = js + 1;
    int n = 0;
    while (*p == ' ') p++;
    if (*p != ']') {
        for (;;) {
            char *end;
            errno = 0;
            long long x = strtoll(p, &end, 10);
            if (end == p || errno || n >= cap) goto bad;
            v[n++] = x;
            p = end;
            while (*p == ' ') p++;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == ']') break;
            goto bad;
        }
    }
    *out = v;
    *nout = n;
    return 0;
bad:
    free(v);
    return -1;
}

static int print_gate_hist(Store *s, const char *id, FILE *f) {
    sqlite3_stmt *st;
    if (prep(s, &st,
             "SELECT h.context, h.step, h.lo, h.hi, h.counts FROM histograms h"
             " WHERE h.run_id = ?1 AND h.key = ?2 AND h.step = (SELECT max(step) FROM histograms"
             " WHERE run_id = ?1 AND key = ?2 AND context = h.context)"
             " ORDER BY length(h.context), h.context"))
        return -1;
    if (bind(s, st, "tt", id, "gate")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        char ctx[96];
        store_escape(col_text_or(st, 0, ""), ctx, sizeof ctx);
        long long step = sqlite3_column_int64(st, 1);
        double lo = sqlite3_column_double(st, 2), hi = sqlite3_column_double(st, 3);
        long long *c;
        int nb;
        if (parse_counts(col_text(st, 4), &c, &nb)) {
            fprintf(f, "\ngate histogram%s%s (step %lld): unreadable counts\n", *ctx ? " " : "", ctx,
                    step);
            continue;
        }
        long long total = 0, mx = 0;
        for (int i = 0; i < nb; i++) {
            total += c[i];
            if (c[i] > mx) mx = c[i];
        }
        fprintf(f, "\ngate histogram%s%s (step %lld, %d bins over [%g, %g], %lld values)\n",
                *ctx ? " " : "", ctx, step, nb, lo, hi, total);
        double wdt = nb ? (hi - lo) / nb : 0;
        for (int i = 0; i < nb; i++) {
            int bar = mx > 0 ? (int)((40.0 * (double)c[i]) / (double)mx + 0.5) : 0;
            char bars[41];
            memset(bars, '#', (size_t)bar);
            bars[bar] = '\0';
            fprintf(f, "  [%7.3f, %7.3f) %10lld%s%s\n", lo + i * wdt, lo + (i + 1) * wdt, c[i],
                    bar ? " " : "", bars);
        }
        free(c);
    }
    if (r != SQLITE_DONE) {
        dbfail(s, "show: histograms");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return fin(s, st);
}

static int print_summary(Store *s, const char *id, FILE *f) {
    static const char *const results[] = {"val_loss", "val_ppl", "val_bpb", "test_loss"};
    sqlite3_stmt *st;
    /* the final results, in a fixed order */
    int header = 0;
    if (prep(s, &st, "SELECT value, text FROM summary WHERE run_id = ?1 AND key = ?2 AND context = ?3"))
        return -1;
    for (int k = 0; k < 4; k++) {
        if (sqlite3_reset(st) != SQLITE_OK) {
            dbfail(s, "show: results");
            (void)sqlite3_finalize(st);
            return -1;
        }
        if (bind(s, st, "ttt", id, results[k], "")) {
            (void)sqlite3_finalize(st);
            return -1;
        }
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            if (!header) fprintf(f, "\nresults\n"), header = 1;
            if (sqlite3_column_type(st, 0) == SQLITE_NULL)
                fprintf(f, "  %-10s  nan\n", results[k]);
            else
                fprintf(f, "  %-10s  %.4f\n", results[k], sqlite3_column_double(st, 0));
        } else if (r != SQLITE_DONE) {
            dbfail(s, "show: results");
            (void)sqlite3_finalize(st);
            return -1;
        }
    }
    if (fin(s, st)) return -1;

    /* every other summary row */
    if (prep(s, &st,
             "SELECT key, context, value, text FROM summary WHERE run_id = ?1"
             " AND NOT (context = '' AND key IN (?2, ?3, ?4, ?5))"
             " AND NOT (key IN (?6, ?7) AND context GLOB 'layer=[0-9]*'"
             "          AND substr(context, 7) NOT GLOB '*[^0-9]*')" /* shown as probes */
             " ORDER BY key, length(context), context"))
        return -1;
    if (bind(s, st, "ttttttt", id, results[0], results[1], results[2], results[3], "f_attn",
             "m_act")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r;
    header = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!header) fprintf(f, "\nsummary\n"), header = 1;
        const char *text = col_text(st, 3);
        char key[96], ctx[96];
        store_escape(col_text_or(st, 0, ""), key, sizeof key);
        store_escape(col_text_or(st, 1, ""), ctx, sizeof ctx);
        char name[200];
        snprintf(name, sizeof name, "%s%s%s%s", key, *ctx ? "[" : "", ctx, *ctx ? "]" : "");
        char val[32] = "-";
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            snprintf(val, sizeof val, "%.6g", sqlite3_column_double(st, 2));
        fprintf(f, "  %-24s  %12s%s", name, val, text ? "  " : "");
        store_fput_escaped(f, text ? text : "");
        fputc('\n', f);
    }
    if (r != SQLITE_DONE) {
        dbfail(s, "show: summary");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return fin(s, st);
}

static int print_metric_keys(Store *s, const char *id, FILE *f) {
    sqlite3_stmt *st;
    /* SQLite: with max(), bare columns come from the row holding the max. */
    if (prep(s, &st,
             "SELECT key, count(*), max(step), value FROM metrics"
             " WHERE run_id = ?1 AND context = ?2 GROUP BY key ORDER BY key"))
        return -1;
    if (bind(s, st, "tt", id, "")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r, header = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!header) fprintf(f, "\nmetrics (last value)\n"), header = 1;
        char val[32] = "nan";
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            snprintf(val, sizeof val, "%.6g", sqlite3_column_double(st, 3));
        char key[96];
        fprintf(f, "  %-24s  %12s  at step %lld (%lld points)\n", store_escape(col_text_or(st, 0, ""), key, sizeof key),
                val,
                (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 1));
    }
    if (r != SQLITE_DONE) {
        dbfail(s, "show: metrics");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (fin(s, st)) return -1;

    if (prep(s, &st,
             "SELECT count(DISTINCT key || char(31) || context) FROM metrics"
             " WHERE run_id = ?1 AND context <> ?2"))
        return -1;
    if (bind(s, st, "tt", id, "")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        dbfail(s, "show: metrics");
        (void)sqlite3_finalize(st);
        return -1;
    }
    long long nctx = sqlite3_column_int64(st, 0);
    if (fin(s, st)) return -1;
    if (nctx > 0) fprintf(f, "  (+ %lld per-layer / per-head series)\n", nctx);
    return 0;
}

/* "LABEL value\n" with the value escaped. */
static void put_field(FILE *f, const char *label, const char *v) {
    fputs(label, f);
    store_fput_escaped(f, v);
    fputc('\n', f);
}

int store_print_show(Store *s, const char *arg, FILE *f) {
    char *id = resolve_run(s, arg);
    if (!id) return -1;
    sqlite3_stmt *st;
    int rc = -1;
    if (prep(s, &st,
             "SELECT run_id, name, status, config_json, seed, threads, code_version, git_dirty,"
             " host, cpu_model, compiler, cflags, openblas_version, sqlite_version,"
             " libyaml_version, argv, started_at, ended_at, heartbeat_at, error_text,"
             " diverged_step, env_id FROM runs WHERE run_id = ?1"))
        goto out;
    if (bind(s, st, "t", id)) {
        (void)sqlite3_finalize(st);
        goto out;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        dbfail(s, "show");
        (void)sqlite3_finalize(st);
        goto out;
    }
    double now = now_s();
    const char *status = col_text(st, 2);
    double started = sqlite3_column_double(st, 16), hb = sqlite3_column_double(st, 18);
    const char *eff = effective_status(status, hb, now);
    char t0[32], t1[32], th[32];
    fmt_time(started, "%Y-%m-%d %H:%M:%S", t0, sizeof t0);
    fmt_time(hb, "%Y-%m-%d %H:%M:%S", th, sizeof th);
    /* every text from the file is escaped: a merged database is untrusted */
    put_field(f, "run         ", col_text_or(st, 0, "?"));
    put_field(f, "name        ", col_text_or(st, 1, ""));
    fprintf(f, "status      ");
    store_fput_escaped(f, eff);
    if (strcmp(eff, status ? status : "") != 0) {
        fprintf(f, " (recorded '");
        store_fput_escaped(f, status ? status : "?");
        fprintf(f, "'; no heartbeat for %.0f s)", now - hb);
    }
    fprintf(f, "\n");
    fprintf(f, "started     %s\n", t0);
    if (sqlite3_column_type(st, 17) != SQLITE_NULL) {
        double ended = sqlite3_column_double(st, 17);
        fmt_time(ended, "%Y-%m-%d %H:%M:%S", t1, sizeof t1);
        fprintf(f, "ended       %s (%.1f s)\n", t1, ended - started);
    } else {
        fprintf(f, "heartbeat   %s\n", th);
    }
    if (sqlite3_column_type(st, 19) != SQLITE_NULL) put_field(f, "error       ", col_text(st, 19));
    if (sqlite3_column_type(st, 20) != SQLITE_NULL)
        fprintf(f, "diverged    at step %lld\n", (long long)sqlite3_column_int64(st, 20));
    fprintf(f, "seed        %lld\n", (long long)sqlite3_column_int64(st, 4));
    fprintf(f, "threads     %d\n", sqlite3_column_int(st, 5));
    put_field(f, "argv        ", col_text_or(st, 15, "-"));
    int dirty_null = sqlite3_column_type(st, 7) == SQLITE_NULL;
    fprintf(f, "code        ");
    store_fput_escaped(f, col_text_or(st, 6, "unknown"));
    fprintf(f, "%s\n", dirty_null ? "" : sqlite3_column_int(st, 7) ? " (dirty)" : " (clean)");
    put_field(f, "host        ", col_text_or(st, 8, ""));
    put_field(f, "cpu         ", col_text_or(st, 9, ""));
    put_field(f, "compiler    ", col_text_or(st, 10, ""));
    put_field(f, "cflags      ", col_text_or(st, 11, ""));
    put_field(f, "openblas    ", col_text_or(st, 12, ""));
    put_field(f, "sqlite      ", col_text_or(st, 13, ""));
    put_field(f, "libyaml     ", col_text_or(st, 14, ""));
    fprintf(f, "environment %lld\n", (long long)sqlite3_column_int64(st, 21));
    put_field(f, "config      ", col_text_or(st, 3, ""));
    if (fin(s, st)) goto out;

    if (print_summary(s, id, f) || print_metric_keys(s, id, f) || print_probes(s, id, f) ||
        print_gate_hist(s, id, f))
        goto out;
    rc = check_stream(s, f);
out:
    free(id);
    return rc;
}

/* ------------------------------------------------------------------ */
/* sweeps                                                              */
/* ------------------------------------------------------------------ */

/* The sweep_runs table (documented with the schema at the top). */
static const char SWEEP_SCHEMA_SQL[] =
    "CREATE TABLE IF NOT EXISTS sweep_runs (\n"
    "    sweep       TEXT NOT NULL,\n"
    "    run_id      TEXT NOT NULL,\n"
    "    label       TEXT NOT NULL,\n"
    "    seed        INTEGER NOT NULL,\n"
    "    idx         INTEGER NOT NULL,\n"
    "    is_baseline INTEGER NOT NULL,\n"
    "    PRIMARY KEY (sweep, run_id)\n"
    ");\n";

/* 1 if schema (main or merge_src) has a table called name, 0 if not, -1 on error. */
static int has_table(Store *s, const char *schema_sql, const char *name) {
    sqlite3_stmt *st;
    if (prep(s, &st, schema_sql)) return -1;
    if (bind(s, st, "tt", "table", name)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        dbfail(s, "read schema");
        (void)sqlite3_finalize(st);
        return -1;
    }
    int n = sqlite3_column_int(st, 0) > 0;
    if (fin(s, st)) return -1;
    return n;
}

/* Create sweep_runs where it is missing (only then, so that opening an
 * up-to-date database writes nothing); read-only, an empty TEMP table of
 * that name instead (the file is not touched). */
static int ensure_sweep_schema(Store *s) {
    int h = has_table(s, "SELECT count(*) FROM main.sqlite_master WHERE type = ?1 AND name = ?2", "sweep_runs");
    if (h < 0) return -1;
    if (h) return 0;
    if (!s->readonly) return exec(s, SWEEP_SCHEMA_SQL);
    static const char temp_sql[] = "CREATE TEMP TABLE sweep_runs (sweep TEXT NOT NULL, run_id TEXT NOT NULL,"
                                   " label TEXT NOT NULL, seed INTEGER NOT NULL, idx INTEGER NOT NULL,"
                                   " is_baseline INTEGER NOT NULL, PRIMARY KEY (sweep, run_id))";
    return exec(s, temp_sql);
}

const char *store_run_code_version(Store *s, const char *run_id, char *buf, size_t cap) {
    sqlite3_stmt *st;
    if (run_row(s, "SELECT code_version FROM runs WHERE run_id = ?1", run_id, "run_code_version", &st))
        return NULL;
    int n = snprintf(buf, cap, "%s", col_text_or(st, 0, "unknown"));
    if (fin(s, st)) return NULL;
    if (n < 0 || (size_t)n >= cap) {
        fail(s, "%s: run_code_version: buffer too small", s->path);
        return NULL;
    }
    return buf;
}

/* Step a prepared statement expecting SQLITE_DONE, then reset it. */
static int step_done(Store *s, sqlite3_stmt *st, const char *what) {
    int rc = 0;
    if (sqlite3_step(st) != SQLITE_DONE) rc = dbfail(s, what);
    if (sqlite3_reset(st) != SQLITE_OK && rc == 0) rc = dbfail(s, what);
    return rc;
}

int store_sweep_record(Store *s, const char *sweep, int nruns, const StoreSweepRun *runs, int n) {
    if (!sweep || !*sweep) return fail(s, "%s: sweep_record: empty sweep name", s->path);
    if (n < 0 || (n > 0 && !runs)) return fail(s, "%s: sweep_record: bad run list", s->path);
    char why[160], q[200];
    if (store_name_check(sweep, why, sizeof why))
        return fail(s, "%s: sweep_record: sweep name \"%s\" %s", s->path, store_escape(sweep, q, sizeof q), why);
    for (int i = 0; i < n; i++) {
        const char *bad = store_name_check(runs[i].label, why, sizeof why) ? runs[i].label
                          : store_name_check(runs[i].run_id, why, sizeof why) ? runs[i].run_id
                                                                               : NULL;
        if (bad)
            return fail(s, "%s: sweep_record: run %d: %s \"%s\" %s", s->path, i,
                        bad == runs[i].label ? "label" : "run id", store_escape(bad, q, sizeof q), why);
    }
    if (store_flush(s) || begin_tx(s)) return -1;
    sqlite3_stmt *del = NULL, *ins = NULL;
    int rc = run_stmt(s, NULL, "DELETE FROM sweep_runs WHERE sweep = ?1 AND idx >= ?2", "ti", sweep,
                      (long long)nruns);
    if (rc == 0) rc = prep(s, &del, "DELETE FROM sweep_runs WHERE sweep = ?1 AND idx = ?2 AND run_id <> ?3");
    if (rc == 0)
        rc = prep(s, &ins,
                  "INSERT INTO sweep_runs(sweep, run_id, label, seed, idx, is_baseline)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(sweep, run_id) DO UPDATE SET"
                  " label = excluded.label, seed = excluded.seed, idx = excluded.idx,"
                  " is_baseline = excluded.is_baseline");
    for (int i = 0; rc == 0 && i < n; i++) {
        const StoreSweepRun *r = &runs[i];
        if (!r->run_id || !r->label) {
            rc = fail(s, "%s: sweep_record: run %d has no run id or label", s->path, i);
            break;
        }
        rc = bind(s, del, "tit", sweep, (long long)r->idx, r->run_id);
        if (rc == 0) rc = step_done(s, del, "sweep_record: delete");
        if (rc == 0)
            rc = bind(s, ins, "tttiii", sweep, r->run_id, r->label, r->seed, (long long)r->idx,
                      (long long)(r->is_baseline != 0));
        if (rc == 0) rc = step_done(s, ins, "sweep_record: insert");
    }
    if (del && sqlite3_finalize(del) != SQLITE_OK && rc == 0) rc = dbfail(s, "sweep_record: finalize");
    if (ins && sqlite3_finalize(ins) != SQLITE_OK && rc == 0) rc = dbfail(s, "sweep_record: finalize");
    if (rc == 0) rc = commit_tx(s);
    if (rc) rollback_tx(s);
    return rc;
}

long long store_count_rows(Store *s, const char *table) {
    static const char *const names[] = {"meta",    "environments", "runs",      "metrics",
                                        "summary", "histograms",   "sweep_runs"};
    static const char *const sqls[] = {
        "SELECT count(*) FROM meta",    "SELECT count(*) FROM environments", "SELECT count(*) FROM runs",
        "SELECT count(*) FROM metrics", "SELECT count(*) FROM summary",      "SELECT count(*) FROM histograms",
        "SELECT count(*) FROM sweep_runs"};
    for (size_t i = 0; table && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(table, names[i]) != 0) continue;
        if (store_flush(s)) return -1;
        sqlite3_stmt *st;
        if (prep(s, &st, sqls[i])) return -1;
        if (sqlite3_step(st) != SQLITE_ROW) {
            dbfail(s, "count rows");
            (void)sqlite3_finalize(st);
            return -1;
        }
        long long n = sqlite3_column_int64(st, 0);
        if (fin(s, st)) return -1;
        return n;
    }
    fail(s, "%s: count rows: no table '%s'", s->path, table ? table : "(null)");
    return -1;
}

/* ------------------------------------------------------------------ */
/* merge                                                               */
/* ------------------------------------------------------------------ */

/* Rank of a run's status for merging (t: table alias); ?1..?4 bind
 * finished, diverged, failed, killed.  running (and anything else) is 0. */
#define MERGE_RANK(t) "(CASE " t ".status WHEN ?1 THEN 4 WHEN ?2 THEN 3 WHEN ?3 THEN 2 WHEN ?4 THEN 1 ELSE 0 END)"
#define MERGE_ENDED(t) "coalesce(" t ".ended_at, -1.0)"

#define RUN_COLS                                                                                         \
    "run_id, name, status, config_json, seed, threads, code_version, git_dirty, host, cpu_model,"       \
    " compiler, cflags, openblas_version, sqlite_version, libyaml_version, argv, started_at, ended_at," \
    " heartbeat_at, error_text, diverged_step"

/* A message for a failure reading the attached input: not a database, or
 * some other read error. */
static int merge_src_fail(Store *s, const char *src) {
    if ((sqlite3_errcode(s->db) & 0xff) == SQLITE_NOTADB)
        return fail(s, "%s: not a gated database (%s)", src, sqlite3_errmsg(s->db));
    return fail(s, "%s: cannot read (%s)", src, sqlite3_errmsg(s->db));
}

/* Check that merge_src is a gated database this build can read.  0 ok,
 * -2 not (message set), *has_sweeps whether it has sweep_runs. */
static int merge_check_src(Store *s, const char *src, int *has_sweeps) {
    static const char *const q = "SELECT count(*) FROM merge_src.sqlite_master WHERE type = ?1 AND name = ?2";
    int meta = has_table(s, q, "meta");
    if (meta < 0) return merge_src_fail(s, src), -2;
    if (!meta) return fail(s, "%s: not a gated database (no meta table)", src), -2;
    sqlite3_stmt *st;
    if (prep(s, &st, "SELECT value FROM merge_src.meta WHERE key = ?1")) return merge_src_fail(s, src), -2;
    if (bind(s, st, "t", "schema_version")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    long long v = 0;
    int found = 0, r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const char *t = col_text(st, 0);
        char *end;
        if (t && *t) {
            errno = 0;
            v = strtoll(t, &end, 10);
            found = !errno && *end == '\0';
        }
    } else if (r != SQLITE_DONE) {
        merge_src_fail(s, src);
        (void)sqlite3_finalize(st);
        return -2;
    }
    if (fin(s, st)) return -1;
    if (!found) return fail(s, "%s: not a gated database (no schema_version in meta)", src), -2;
    if (v > STORE_SCHEMA_VERSION)
        return fail(s, "%s: schema version %lld is newer than this build supports (%d); use a newer gated", src, v,
                    STORE_SCHEMA_VERSION),
               -2;
    if (v < 1) return fail(s, "%s: not a gated database (schema_version %lld)", src, v), -2;
    static const char *const need[] = {"environments", "runs", "metrics", "summary", "histograms"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        int h = has_table(s, q, need[i]);
        if (h < 0) return merge_src_fail(s, src), -2;
        if (!h) return fail(s, "%s: not a gated database (no %s table)", src, need[i]), -2;
    }
    int h = has_table(s, q, "sweep_runs");
    if (h < 0) return merge_src_fail(s, src), -2;
    *has_sweeps = h;
    return 0;
}

/* Every run id, run name, sweep name and label of merge_src must pass
 * store_name_check (src is untrusted: its names reach gnuplot scripts,
 * file names and terminals).  0 ok, -2 (message naming the row), -1 on a
 * read error. */
static int merge_check_names(Store *s, const char *src, int has_sweeps) {
    static const char *const sqls[2] = {"SELECT run_id, name, NULL FROM merge_src.runs",
                                        "SELECT run_id, sweep, label FROM merge_src.sweep_runs"};
    static const char *const what[2][3] = {{"run id", "name", NULL}, {"run id", "sweep name", "label"}};
    for (int q = 0; q < (has_sweeps ? 2 : 1); q++) {
        sqlite3_stmt *st;
        if (prep(s, &st, sqls[q])) return merge_src_fail(s, src), -2;
        int r, rc = 0;
        while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW)
            for (int c = 0; c < 3 && rc == 0; c++) {
                const char *v = col_text(st, c);
                char why[160], qv[160], qid[64], where[96] = "";
                if (!what[q][c] || !v || store_name_check(v, why, sizeof why) == 0) continue;
                if (c)
                    snprintf(where, sizeof where, "%s %s: ", q ? "sweep_runs row of run" : "run",
                             store_escape(col_text_or(st, 0, ""), qid, sizeof qid));
                rc = fail(s, "%s: refused, nothing merged: %s%s \"%s\" %s", src, where, what[q][c],
                          store_escape(v, qv, sizeof qv), why);
            }
        if (rc) {
            (void)sqlite3_finalize(st);
            return -2;
        }
        if (r != SQLITE_DONE) {
            merge_src_fail(s, src);
            (void)sqlite3_finalize(st);
            return -2;
        }
        if (fin(s, st)) return -1;
    }
    return 0;
}

/* The copy itself, in one transaction (merge_src attached). */
static int merge_copy(Store *s, int has_sweeps) {
    if (begin_tx(s)) return -1;
    int rc = exec(s, "CREATE TEMP TABLE IF NOT EXISTS merge_win (run_id TEXT PRIMARY KEY)");
    if (rc == 0) rc = exec(s, "DELETE FROM temp.merge_win");
    /* environments, by content hash (env_id differs between files) */
    if (rc == 0)
        rc = run_stmt(s, NULL,
                      "INSERT INTO main.environments(env_hash, host, cpu_model, compiler, cflags,"
                      " openblas_version, sqlite_version, libyaml_version)"
                      " SELECT env_hash, host, cpu_model, compiler, cflags, openblas_version, sqlite_version,"
                      " libyaml_version FROM merge_src.environments WHERE true"
                      " ON CONFLICT(env_hash) DO NOTHING",
                      "");
    /* runs the input wins: new ones, and ones with a better status, or the
     * same status and a later end (then a later heartbeat) */
    if (rc == 0)
        rc = run_stmt(s, NULL,
                      "INSERT OR IGNORE INTO temp.merge_win(run_id)"
                      " SELECT r.run_id FROM merge_src.runs r LEFT JOIN main.runs d ON d.run_id = r.run_id"
                      " WHERE d.run_id IS NULL"
                      " OR " MERGE_RANK("r") " > " MERGE_RANK("d") //
                      " OR (" MERGE_RANK("r") " = " MERGE_RANK("d") //
                      "     AND (" MERGE_ENDED("r") " > " MERGE_ENDED("d") //
                      "          OR (" MERGE_ENDED("r") " = " MERGE_ENDED("d") //
                      "              AND r.heartbeat_at > d.heartbeat_at)))",
                      "tttt", "finished", "diverged", "failed", "killed");
    if (rc == 0)
        rc = run_stmt(s, NULL,
                      "INSERT INTO main.runs(" RUN_COLS ", env_id)"
                      " SELECT " RUN_COLS ", (SELECT d.env_id FROM main.environments d"
                      "   JOIN merge_src.environments e ON e.env_hash = d.env_hash WHERE e.env_id = r.env_id)"
                      " FROM merge_src.runs r WHERE r.run_id IN (SELECT run_id FROM temp.merge_win)"
                      " ON CONFLICT(run_id) DO UPDATE SET name = excluded.name, status = excluded.status,"
                      " config_json = excluded.config_json, seed = excluded.seed, threads = excluded.threads,"
                      " code_version = excluded.code_version, git_dirty = excluded.git_dirty,"
                      " host = excluded.host, cpu_model = excluded.cpu_model, compiler = excluded.compiler,"
                      " cflags = excluded.cflags, openblas_version = excluded.openblas_version,"
                      " sqlite_version = excluded.sqlite_version, libyaml_version = excluded.libyaml_version,"
                      " argv = excluded.argv, started_at = excluded.started_at, ended_at = excluded.ended_at,"
                      " heartbeat_at = excluded.heartbeat_at, error_text = excluded.error_text,"
                      " diverged_step = excluded.diverged_step, env_id = excluded.env_id",
                      "");
    /* a winning run's rows replace the output's on the same key; every
     * other run's rows only fill gaps */
    static const char *const rows_sql[] = {
        "INSERT OR REPLACE INTO main.metrics(run_id, key, context, step, value)"
        " SELECT run_id, key, context, step, value FROM merge_src.metrics"
        " WHERE run_id IN (SELECT run_id FROM temp.merge_win)",
        "INSERT OR IGNORE INTO main.metrics(run_id, key, context, step, value)"
        " SELECT run_id, key, context, step, value FROM merge_src.metrics"
        " WHERE run_id NOT IN (SELECT run_id FROM temp.merge_win)",
        "INSERT OR REPLACE INTO main.summary(run_id, key, context, value, text)"
        " SELECT run_id, key, context, value, text FROM merge_src.summary"
        " WHERE run_id IN (SELECT run_id FROM temp.merge_win)",
        "INSERT OR IGNORE INTO main.summary(run_id, key, context, value, text)"
        " SELECT run_id, key, context, value, text FROM merge_src.summary"
        " WHERE run_id NOT IN (SELECT run_id FROM temp.merge_win)",
        "INSERT OR REPLACE INTO main.histograms(run_id, key, context, step, lo, hi, counts)"
        " SELECT run_id, key, context, step, lo, hi, counts FROM merge_src.histograms"
        " WHERE run_id IN (SELECT run_id FROM temp.merge_win)",
        "INSERT OR IGNORE INTO main.histograms(run_id, key, context, step, lo, hi, counts)"
        " SELECT run_id, key, context, step, lo, hi, counts FROM merge_src.histograms"
        " WHERE run_id NOT IN (SELECT run_id FROM temp.merge_win)",
    };
    for (size_t i = 0; rc == 0 && i < sizeof rows_sql / sizeof rows_sql[0]; i++)
        rc = run_stmt(s, NULL, rows_sql[i], "");
    if (rc == 0 && has_sweeps)
        rc = run_stmt(s, NULL,
                      "INSERT OR IGNORE INTO main.sweep_runs(sweep, run_id, label, seed, idx, is_baseline)"
                      " SELECT sweep, run_id, label, seed, idx, is_baseline FROM merge_src.sweep_runs",
                      "");
    if (rc == 0) rc = exec(s, "DELETE FROM temp.merge_win");
    if (rc == 0) rc = commit_tx(s);
    if (rc) rollback_tx(s);
    return rc;
}

static int merge_inner(Store *s, const char *src) {
    struct stat st;
    if (!src || !*src) return fail(s, "merge: empty input path"), -2;
    if (stat(src, &st) != 0) return fail(s, "%s: %s", src, strerror(errno)), -2;
    if (S_ISDIR(st.st_mode)) return fail(s, "%s: %s", src, strerror(EISDIR)), -2;
    char *a = realpath(src, NULL), *b = realpath(s->path, NULL);
    int same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    if (same) return fail(s, "%s: is the output database", src), -2;
    if (store_flush(s)) return -1;
    if (run_stmt(s, NULL, "ATTACH DATABASE ?1 AS merge_src", "t", src)) {
        if ((sqlite3_errcode(s->db) & 0xff) == SQLITE_NOTADB) merge_src_fail(s, src);
        return -2;
    }
    int has_sweeps = 0;
    int rc = merge_check_src(s, src, &has_sweeps);
    if (rc == 0) rc = merge_check_names(s, src, has_sweeps);
    if (rc == 0) rc = merge_copy(s, has_sweeps);
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    if (exec(s, "DETACH DATABASE merge_src") && rc == 0) return -1;
    if (rc) memcpy(s->err, keep, sizeof keep); /* the first error's message */
    return rc;
}

int store_merge_from(Store *dst, const char *src_path, char *err, size_t cap) {
    int rc = merge_inner(dst, src_path);
    if (err && cap) snprintf(err, cap, "%s", rc ? dst->err : "");
    return rc;
}

sqlite3 *store_db(Store *s) { return s ? s->db : NULL; }

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
    if (begin_tx(s)) return -1;
    static const char *const del[] = {"DELETE FROM metrics WHERE run_id = ?1",
                                      "DELETE FROM summary WHERE run_id = ?1",
                                      "DELETE FROM histograms WHERE run_id = ?1"};
    for (size_t i = 0; i < sizeof del / sizeof del[0]; i++)
        if (run_stmt(s, NULL, del[i], "t", run_id)) {
            rollback_tx(s);
            return -1;
        }
    return commit_tx(s);
}

/* ------------------------------------------------------------------ */
/* benchmarks                                                          */
/* ------------------------------------------------------------------ */

/* The bench table (added with `gated bench`, still schema_version 1: purely
 * additive, created IF NOT EXISTS by the first store_bench_record, ignored
 * by merge and by older builds):
 *
 *   -- One row per (invocation, case): seconds per iteration over the
 *   -- repetitions, FLOP rates and provenance.  No foreign keys.
 *   CREATE TABLE IF NOT EXISTS bench (
 *       bench_id         TEXT NOT NULL,          -- one `gated bench` invocation
 *       name             TEXT NOT NULL,          -- case name (step/ref/baseline, ...)
 *       kind             TEXT NOT NULL,          -- gate, attention_forward, step, sgemm, ...
 *       suite            TEXT,
 *       started_at       REAL NOT NULL,          -- unix seconds (when recorded)
 *       threads          INTEGER NOT NULL,       -- 0 = library default (all cores)
 *       code_version     TEXT NOT NULL,
 *       git_dirty        INTEGER,
 *       host             TEXT NOT NULL,
 *       cpu_model        TEXT NOT NULL,
 *       compiler         TEXT NOT NULL,
 *       cflags           TEXT NOT NULL,
 *       openblas_version TEXT NOT NULL,
 *       argv             TEXT,
 *       repetitions      INTEGER NOT NULL,
 *       iterations       INTEGER NOT NULL,
 *       median_s         REAL,
 *       mean_s           REAL,
 *       stddev_s         REAL,
 *       cv               REAL,
 *       cpu_median_s     REAL,
 *       flops            REAL,                   -- per iteration
 *       gflops           REAL,                   -- at the median
 *       pct_ceiling      REAL,                   -- % of the ceiling case's GFLOP/s
 *       tokens_per_s     REAL,                   -- steps only
 *       samples          TEXT NOT NULL,          -- JSON array: seconds per iteration, per repetition
 *       PRIMARY KEY (bench_id, name)
 *   );
 */
static const char BENCH_SCHEMA_SQL[] =
    "CREATE TABLE IF NOT EXISTS bench (\n"
    "    bench_id         TEXT NOT NULL,\n"
    "    name             TEXT NOT NULL,\n"
    "    kind             TEXT NOT NULL,\n"
    "    suite            TEXT,\n"
    "    started_at       REAL NOT NULL,\n"
    "    threads          INTEGER NOT NULL,\n"
    "    code_version     TEXT NOT NULL,\n"
    "    git_dirty        INTEGER,\n"
    "    host             TEXT NOT NULL,\n"
    "    cpu_model        TEXT NOT NULL,\n"
    "    compiler         TEXT NOT NULL,\n"
    "    cflags           TEXT NOT NULL,\n"
    "    openblas_version TEXT NOT NULL,\n"
    "    argv             TEXT,\n"
    "    repetitions      INTEGER NOT NULL,\n"
    "    iterations       INTEGER NOT NULL,\n"
    "    median_s         REAL,\n"
    "    mean_s           REAL,\n"
    "    stddev_s         REAL,\n"
    "    cv               REAL,\n"
    "    cpu_median_s     REAL,\n"
    "    flops            REAL,\n"
    "    gflops           REAL,\n"
    "    pct_ceiling      REAL,\n"
    "    tokens_per_s     REAL,\n"
    "    samples          TEXT NOT NULL,\n"
    "    PRIMARY KEY (bench_id, name)\n"
    ");\n";

int store_bench_record(Store *s, const char *bench_id, const char *suite, int threads, const Provenance *p,
                       const char *argv_joined, const StoreBenchRow *rows, int n) {
    if (!bench_id || !*bench_id) return fail(s, "%s: bench: empty bench id", s->path);
    Provenance local;
    if (!p) {
        store_provenance_fill(&local);
        p = &local;
    }
    int h = has_table(s, "SELECT count(*) FROM main.sqlite_master WHERE type = ?1 AND name = ?2", "bench");
    if (h < 0) return -1;
    if (!h && exec(s, BENCH_SCHEMA_SQL)) return -1;
    double now = now_s();
    if (begin_tx(s)) return -1;
    for (int i = 0; i < n; i++) {
        const StoreBenchRow *r = &rows[i];
        /* samples as a JSON array of %.9g numbers (null for NaN/inf) */
        size_t cap = 16 + 26 * (size_t)(r->nsamples > 0 ? r->nsamples : 0);
        char *js = malloc(cap);
        if (!js) {
            fail(s, "%s: bench: out of memory", s->path);
            goto bad;
        }
        size_t k = (size_t)snprintf(js, cap, "[");
        for (int j = 0; j < r->nsamples; j++) {
            double v = r->samples[j];
            k += (size_t)snprintf(js + k, cap - k, isfinite(v) ? "%s%.9g" : "%snull", j ? "," : "", v);
        }
        snprintf(js + k, cap - k, "]");
        int rc = run_stmt(s, NULL,
                          "INSERT OR REPLACE INTO bench(bench_id, name, kind, suite, started_at, threads,"
                          " code_version, git_dirty, host, cpu_model, compiler, cflags, openblas_version, argv,"
                          " repetitions, iterations, median_s, mean_s, stddev_s, cv, cpu_median_s, flops, gflops,"
                          " pct_ceiling, tokens_per_s, samples)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                          " ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
                          "ttttditIttttttiidddddddddt", bench_id, r->name ? r->name : "", r->kind ? r->kind : "",
                          suite, now, (long long)threads, or_unknown(p->code_version),
                          (long long)(p->git_dirty < 0 ? -1 : p->git_dirty != 0), or_unknown(p->host),
                          or_unknown(p->cpu_model), or_unknown(p->compiler), or_unknown(p->cflags),
                          or_unknown(p->openblas_version), argv_joined, (long long)r->repetitions,
                          (long long)r->iterations, r->median_s, r->mean_s, r->stddev_s, r->cv, r->cpu_median_s,
                          r->flops, r->gflops, r->pct_ceiling, r->tokens_per_s, js);
        free(js);
        if (rc) goto bad;
    }
    if (commit_tx(s)) goto bad;
    return 0;
bad:
    rollback_tx(s);
    return -1;
}
