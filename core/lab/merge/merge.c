/*
 * merge.c — `gated merge` (see merge.h).
 *
 * The input is ATTACHed to dst's connection (store_db) as merge_src,
 * checked whole (merge_check.c), then copied with INSERT ... SELECT, every
 * value bound.  A failure to read the input names the input (exit 2 in
 * the CLI); SQLite failures while writing name dst's path, as the store's
 * own do.  An input
 * of schema 1 (run/store.c) is copied as schema 2 reads: its per-update
 * keys and diverged_step one step later, metric timestamps NULL.
 */
#include "lab/merge/merge.h"
#include "lab/merge/merge_int.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* ------------------------------------------------------------------ */
/* statements (the store's helpers, for the attached connection)       */
/* ------------------------------------------------------------------ */

int mg_fail(Merge *s, const char *fmt, ...) {
    char raw[sizeof s->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    store_escape(raw, s->err, sizeof s->err); /* SQLite's messages quote the input's text */
    return -1;
}

int mg_dbfail(Merge *s, const char *what) {
    char w[600];
    store_sql_words(s->db, w, sizeof w);
    return mg_fail(s, "%s: %s: %s", s->path, what, w);
}

int mg_prep(Merge *s, sqlite3_stmt **st, const char *sql) {
    *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        mg_dbfail(s, "cannot read or write the database");
        *st = NULL;
        return -1;
    }
    return 0;
}

/* Bind parameters 1.. from types, each 't' (a const char *; merging binds
 * only text). */
static int mg_vbind(Merge *s, sqlite3_stmt *st, const char *types, va_list ap) {
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        if (types[i] != 't') return mg_fail(s, "%s: internal: bad bind type '%c'", s->path, types[i]);
        rc = sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return mg_dbfail(s, "bind");
    return 0;
}

int mg_bind(Merge *s, sqlite3_stmt *st, const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = mg_vbind(s, st, types, ap);
    va_end(ap);
    return rc;
}

int mg_fin(Merge *s, sqlite3_stmt *st) {
    if (sqlite3_finalize(st) != SQLITE_OK) return mg_dbfail(s, "finalize");
    return 0;
}

/* Prepare, bind, step once expecting SQLITE_DONE, finalize. */
static int mg_run(Merge *s, const char *sql, const char *types, ...) {
    sqlite3_stmt *st;
    if (mg_prep(s, &st, sql)) return -1;
    va_list ap;
    va_start(ap, types);
    int rc = mg_vbind(s, st, types, ap);
    va_end(ap);
    if (rc) goto bad;
    if (sqlite3_step(st) != SQLITE_DONE) {
        mg_dbfail(s, "cannot write the database");
        goto bad;
    }
    return mg_fin(s, st);
bad:
    (void)sqlite3_finalize(st); /* the error is already recorded */
    return -1;
}

/* Constant SQL without values. */
static int mg_exec(Merge *s, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sqlite3_free(msg);
        return mg_dbfail(s, strncmp(sql, "BEGIN", 5) == 0    ? "cannot start writing"
                            : strncmp(sql, "COMMIT", 6) == 0 ? "cannot commit the merge"
                                                             : "cannot update the database");
    }
    return 0;
}

static int mg_begin(Merge *s) { return mg_exec(s, "BEGIN IMMEDIATE"); }
static int mg_commit(Merge *s) { return mg_exec(s, "COMMIT"); }
/* Roll back after an error, keeping the first error's message. */
static void mg_rollback(Merge *s) {
    if (sqlite3_get_autocommit(s->db)) return; /* nothing open */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    if (mg_exec(s, "ROLLBACK") != 0) {
        size_t n = strlen(keep);
        snprintf(keep + n, sizeof keep - n, " (and rollback failed: %.400s)", s->err);
    }
    memcpy(s->err, keep, sizeof keep);
}

const char *mg_text(sqlite3_stmt *st, int i) { return (const char *)sqlite3_column_text(st, i); }
const char *mg_text_or(sqlite3_stmt *st, int i, const char *dflt) {
    const char *t = mg_text(st, i);
    return t ? t : dflt;
}

/* ------------------------------------------------------------------ */
/* copying the input (checked first: merge_check.c)                    */
/* ------------------------------------------------------------------ */

/* Rank of a run's status for merging (t: table alias); ?1..?4 bind
 * finished, diverged, failed, killed.  running (and anything else) is 0. */
#define MERGE_RANK(t) "(CASE " t ".status WHEN ?1 THEN 4 WHEN ?2 THEN 3 WHEN ?3 THEN 2 WHEN ?4 THEN 1 ELSE 0 END)"
#define MERGE_ENDED(t) "coalesce(" t ".ended_at, -1.0)"

#define RUN_COLS                                                                                         \
    "run_id, name, status, config_json, seed, threads, code_version, git_dirty, host, cpu_model,"       \
    " compiler, cflags, openblas_version, sqlite_version, libyaml_version, argv, started_at, ended_at," \
    " heartbeat_at, error_text, diverged_step"

/* The rows of merge_src's runs (merge_copy, temp.merge_win holding the
 * runs the input wins): metrics, summary, histograms, sweep membership,
 * attestations.  0, or the first error. */
static int merge_rows(Merge *s, int has_sweeps, int has_attest, int version) {
    int rc = 0;
    /* a winning run's rows replace the output's on the same key; every
     * other run's rows only fill gaps */
#define MERGE_METRICS(verb, in, step, t)                                                  \
    "INSERT OR " verb " INTO main.metrics(run_id, key, context, step, value, t)"         \
    " SELECT run_id, key, context, " step ", value, " t " FROM merge_src.metrics"         \
    " WHERE run_id " in " (SELECT run_id FROM temp.merge_win)"
#define V1_STEP "step + (key IN (?1, ?2, ?3, ?4))"
    static const char *const metrics_sql[2][2] = {
        {MERGE_METRICS("REPLACE", "IN", "step", "t"), MERGE_METRICS("IGNORE", "NOT IN", "step", "t")},
        {MERGE_METRICS("REPLACE", "IN", V1_STEP, "NULL"), MERGE_METRICS("IGNORE", "NOT IN", V1_STEP, "NULL")}};
#undef V1_STEP
#undef MERGE_METRICS
    const char *const *k = store_update_keys;
    for (int i = 0; rc == 0 && i < 2; i++)
        rc = version == 1 ? mg_run(s, metrics_sql[1][i], "tttt", k[0], k[1], k[2], k[3])
                          : mg_run(s, metrics_sql[0][i], "");
    static const char *const rows_sql[] = {
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
        rc = mg_run(s, rows_sql[i], "");
    if (rc == 0 && has_sweeps)
        rc = mg_run(s,
                      "INSERT OR IGNORE INTO main.sweep_runs(sweep, run_id, label, seed, idx, is_baseline)"
                      " SELECT sweep, run_id, label, seed, idx, is_baseline FROM merge_src.sweep_runs",
                      "");
    /* attestations of the copy of each run that the output now holds (one
     * of another copy could never be honoured); an output row already valid
     * for that copy stays unless the input's checked more steps (a whole-run
     * re-execution after a partial one), a stale one is replaced */
#define ATTEST_HOLDS(a) \
    "EXISTS (SELECT 1 FROM main.runs r WHERE r.run_id = " a ".run_id AND r.code_version = " a \
    ".run_code_version AND r.ended_at = " a ".run_ended_at)"
    if (rc == 0 && has_attest)
        rc = mg_run(s,
                    "INSERT INTO main.code_attest(run_id, code_version, cflags, git_dirty, run_code_version,"
                    " run_ended_at, verified_at, steps_checked, rows_checked)"
                    " SELECT run_id, code_version, cflags, git_dirty, run_code_version, run_ended_at, verified_at,"
                    " steps_checked, rows_checked FROM merge_src.code_attest a WHERE " ATTEST_HOLDS("a") //
                    " ON CONFLICT(run_id, code_version, cflags) DO UPDATE SET git_dirty = excluded.git_dirty,"
                    " run_code_version = excluded.run_code_version, run_ended_at = excluded.run_ended_at,"
                    " verified_at = excluded.verified_at, steps_checked = excluded.steps_checked,"
                    " rows_checked = excluded.rows_checked WHERE NOT " ATTEST_HOLDS("code_attest") //
                    " OR excluded.steps_checked > code_attest.steps_checked",
                    "");
#undef ATTEST_HOLDS
    return rc;
}

/* The copy itself, in one transaction (merge_src attached, of schema
 * version `version`). */
static int merge_copy(Merge *s, int has_sweeps, int has_attest, int version) {
    if (mg_begin(s)) return -1;
    int rc = mg_exec(s, "CREATE TEMP TABLE IF NOT EXISTS merge_win (run_id TEXT PRIMARY KEY)");
    if (rc == 0) rc = mg_exec(s, "DELETE FROM temp.merge_win");
    /* environments, by content hash (env_id differs between files) */
    if (rc == 0)
        rc = mg_run(s,
                      "INSERT INTO main.environments(env_hash, host, cpu_model, compiler, cflags,"
                      " openblas_version, sqlite_version, libyaml_version)"
                      " SELECT env_hash, host, cpu_model, compiler, cflags, openblas_version, sqlite_version,"
                      " libyaml_version FROM merge_src.environments WHERE true"
                      " ON CONFLICT(env_hash) DO NOTHING",
                      "");
    /* runs the input wins: new ones, and ones with a better status, or the
     * same status and a later end (then a later heartbeat) */
    if (rc == 0)
        rc = mg_run(s,
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
        rc = mg_run(s,
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
    /* schema 1 counted the per-update keys and diverged_step from 0 */
    if (rc == 0 && version == 1)
        rc = mg_run(s,
                      "UPDATE main.runs SET diverged_step = diverged_step + 1"
                      " WHERE diverged_step IS NOT NULL AND run_id IN (SELECT run_id FROM temp.merge_win)",
                      "");
    if (rc == 0) rc = merge_rows(s, has_sweeps, has_attest, version);
    /* the input's database id and those merged into it: their checkpoints
     * may hold runs now stored here (run/checkpoint.h, store_db_knows) */
    if (rc == 0)
        rc = mg_run(s,
                    "INSERT OR IGNORE INTO main.meta(key, value)"
                    " SELECT ?1 || value, ?2 FROM merge_src.meta WHERE key = ?3"
                    "   AND length(value) = 16 AND value NOT GLOB '*[^0-9a-f]*'"
                    " UNION SELECT key, ?2 FROM merge_src.meta WHERE substr(key, 1, length(?1)) = ?1"
                    "   AND length(key) = length(?1) + 16 AND substr(key, length(?1) + 1) NOT GLOB '*[^0-9a-f]*'",
                    "ttt", STORE_MERGED_KEY, "merged", "db_id");
    if (rc == 0) rc = mg_exec(s, "DELETE FROM temp.merge_win");
    if (rc == 0) rc = mg_commit(s);
    if (rc) mg_rollback(s);
    return rc;
}

static int merge_inner(Merge *s, const char *src) {
    struct stat st;
    if (!src || !*src) return mg_fail(s, "merge: empty input path"), -2;
    if (stat(src, &st) != 0) return mg_fail(s, "%s: %s", src, strerror(errno)), -2;
    if (S_ISDIR(st.st_mode)) return mg_fail(s, "%s: %s", src, strerror(EISDIR)), -2;
    if (!S_ISREG(st.st_mode)) return mg_fail(s, "%s: not a regular file", src), -2;
    /* the same file by another name (a link, a hard link) too: its own
     * read lock would block the write ("database is locked") */
    struct stat ot;
    int same = stat(s->path, &ot) == 0 && ot.st_dev == st.st_dev && ot.st_ino == st.st_ino;
    if (same) return mg_fail(s, "%s: is the output database (the same file)", src), -2;
    if (store_flush(s->dst)) return mg_fail(s, "%s", store_errmsg(s->dst));
    sqlite3_stmt *at;
    if (mg_prep(s, &at, "ATTACH DATABASE ?1 AS merge_src")) return -1;
    int r = mg_bind(s, at, "t", src) ? SQLITE_ERROR : sqlite3_step(at);
    if (r != SQLITE_DONE) /* the input's fault: unreadable, not a database, damaged */
        mg_fail(s, "%s: %s (%s)", src,
                (sqlite3_errcode(s->db) & 0xff) == SQLITE_NOTADB ? "not a gated database"
                                                                  : "cannot be read as a database",
                sqlite3_errmsg(s->db));
    (void)sqlite3_finalize(at);
    if (r != SQLITE_DONE) return -2;
    MergeSrc in = {0};
    int rc = merge_check_input(s, src, &in);
    if (rc == 0) rc = merge_copy(s, in.has_sweeps, in.has_attest, in.version);
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    if (mg_exec(s, "DETACH DATABASE merge_src") && rc == 0) return -1;
    if (rc) memcpy(s->err, keep, sizeof keep); /* the first error's message */
    return rc;
}

int merge_from(Store *dst, const char *src_path, char *err, size_t cap) {
    Merge m = {.dst = dst, .db = store_db(dst), .path = store_path(dst)};
    int rc = dst && m.db ? merge_inner(&m, src_path) : mg_fail(&m, "merge: no output database");
    if (err && cap) snprintf(err, cap, "%s", rc ? m.err : "");
    return rc;
}

