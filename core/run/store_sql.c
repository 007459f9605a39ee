/*
 * store_sql.c — the statement helpers the store's files share (declared in
 * store_impl.h): errors into Store.err, prepare / bind / step / finalize,
 * transactions, column text, and the effective status of a run.
 *
 * Every value reaches SQLite through sto_bind (sqlite3_bind_*); sto_exec
 * runs only constant SQL.
 */
#include "run/store_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double sto_now(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (double)time(NULL);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *sto_or_unknown(const char *s) { return s ? s : "unknown"; }

/* Format into s->err, escaped (store_escape): SQLite's messages quote the
 * file's own text (a malformed schema's token, say), which must not reach
 * a terminal raw; returns -1 so callers can `return sto_fail(...)`. */
int sto_fail(Store *s, const char *fmt, ...) {
    s->runtime_err = 0; /* sto_dbfail sets it after */
    char raw[sizeof s->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    store_escape(raw, s->err, sizeof s->err);
    return -1;
}

int store_sql_words(sqlite3 *db, char *out, size_t cap) {
    const char *msg = db ? sqlite3_errmsg(db) : "out of memory";
    int code = db ? sqlite3_errcode(db) & 0xff : SQLITE_NOMEM;
    const char *missing = NULL;
    if (code == SQLITE_ERROR &&
        ((missing = strstr(msg, "no such table: ")) || (missing = strstr(msg, "no such column: "))))
        return snprintf(out, cap, "it has no %s %s: damaged, or not written by gated",
                        missing[8] == 't' ? "table" : "column", strchr(missing, ':') + 2),
               1;
    switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        snprintf(out, cap, "it is locked by another process (waited 5 s; try again when that one is done)");
        return 0;
    case SQLITE_FULL: snprintf(out, cap, "the disk is full (or a file size limit was reached)"); return 0;
    case SQLITE_READONLY: snprintf(out, cap, "it cannot be written (a read-only file, folder or mount)"); return 0;
    case SQLITE_IOERR: snprintf(out, cap, "an I/O error (SQLite: %s)", msg); return 0;
    case SQLITE_NOMEM: snprintf(out, cap, "out of memory"); return 0;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_SCHEMA:
    case SQLITE_MISMATCH:
    case SQLITE_CONSTRAINT: snprintf(out, cap, "it is damaged (SQLite: %s)", msg); return 1;
    default: snprintf(out, cap, "SQLite: %s", msg); return 0;
    }
}

/* "PATH: WHAT: the error in words" (store_sql_words; a fault of the file
 * marks the store's error as bad input). */
int sto_dbfail(Store *s, const char *what) {
    char w[600];
    int bad = store_sql_words(s->db, w, sizeof w);
    sto_fail(s, "%s: %s: %s", s->path, what, w);
    s->bad_input |= bad;
    s->runtime_err = !bad;
    return -1;
}

int sto_prep(Store *s, sqlite3_stmt **st, const char *sql) {
    *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        sto_dbfail(s, "cannot read or write the database");
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
        default: return sto_fail(s, "%s: internal: bad bind type '%c'", s->path, types[i]);
        }
    }
    if (rc != SQLITE_OK) return sto_dbfail(s, "bind");
    return 0;
}

int sto_bind(Store *s, sqlite3_stmt *st, const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = vbind(s, st, types, ap);
    va_end(ap);
    return rc;
}

int sto_prep_bind(Store *s, sqlite3_stmt **st, const char *sql, const char *types, ...) {
    if (sto_prep(s, st, sql)) return -1;
    va_list ap;
    va_start(ap, types);
    int rc = vbind(s, *st, types, ap);
    va_end(ap);
    if (rc) {
        (void)sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

/* Finalize a statement whose evaluation succeeded. */
int sto_fin(Store *s, sqlite3_stmt *st) {
    if (sqlite3_finalize(st) != SQLITE_OK) return sto_dbfail(s, "finalize");
    return 0;
}

/* Prepare, bind, step once expecting SQLITE_DONE, finalize.  *changes (if
 * non-NULL) gets the number of rows changed. */
int sto_run(Store *s, int *changes, const char *sql, const char *types, ...) {
    sqlite3_stmt *st;
    if (sto_prep(s, &st, sql)) return -1;
    va_list ap;
    va_start(ap, types);
    int rc = vbind(s, st, types, ap);
    va_end(ap);
    if (rc) goto bad;
    if (sqlite3_step(st) != SQLITE_DONE) {
        sto_dbfail(s, "cannot write the database");
        goto bad;
    }
    if (changes) *changes = sqlite3_changes(s->db);
    return sto_fin(s, st);
bad:
    (void)sqlite3_finalize(st); /* the error is already recorded */
    return -1;
}

/* Constant SQL without values (BEGIN, COMMIT, schema, PRAGMA). */
int sto_exec(Store *s, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sqlite3_free(msg);
        const char *what = strncmp(sql, "BEGIN", 5) == 0    ? "cannot start writing"
                           : strncmp(sql, "COMMIT", 6) == 0 ? "cannot commit what was written"
                                                            : "cannot update the database";
        return sto_dbfail(s, what);
    }
    return 0;
}

int sto_begin(Store *s) { return sto_exec(s, "BEGIN IMMEDIATE"); }
int sto_commit(Store *s) { return sto_exec(s, "COMMIT"); }
/* Roll back after an error, keeping the first error's message. */
void sto_rollback(Store *s) {
    if (sqlite3_get_autocommit(s->db)) return; /* nothing open */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    if (sto_exec(s, "ROLLBACK") != 0) {
        size_t n = strlen(keep);
        snprintf(keep + n, sizeof keep - n, " (and rollback failed: %.400s)", s->err);
    }
    memcpy(s->err, keep, sizeof keep);
}

const char *sto_text(sqlite3_stmt *st, int i) {
    return (const char *)sqlite3_column_text(st, i); /* NULL for SQL NULL */
}
const char *sto_text_or(sqlite3_stmt *st, int i, const char *dflt) {
    const char *t = sto_text(st, i);
    return t ? t : dflt;
}

const char *sto_effective_status(const char *status, double heartbeat, double now) {
    if (status && strcmp(status, "running") == 0 && now - heartbeat > STORE_STALE_SECONDS)
        return "killed";
    return status ? status : "?";
}

const char *store_errmsg(Store *s) { return s ? s->err : "no store"; }
int store_err_runtime(Store *s) { return s && s->runtime_err; }

int sto_has_table(Store *s, const char *name) {
    sqlite3_stmt *st;
    if (sto_prep(s, &st, "SELECT count(*) FROM main.sqlite_master WHERE type = ?1 AND name = ?2")) return -1;
    if (sto_bind(s, st, "tt", "table", name)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, "read schema");
        (void)sqlite3_finalize(st);
        return -1;
    }
    int n = sqlite3_column_int(st, 0) > 0;
    if (sto_fin(s, st)) return -1;
    return n;
}

/* Step a prepared statement expecting SQLITE_DONE, then reset it. */
int sto_step_done(Store *s, sqlite3_stmt *st, const char *what) {
    int rc = 0;
    if (sqlite3_step(st) != SQLITE_DONE) rc = sto_dbfail(s, what);
    if (sqlite3_reset(st) != SQLITE_OK && rc == 0) rc = sto_dbfail(s, what);
    return rc;
}

/* Prepare sql (whose one parameter ?1 is a run id) and step to the run's
 * row: 0 with the statement in *out (the caller finalizes it), or -1 with
 * the error set ("no run ID" when absent) and nothing to finalize. */
int sto_run_row(Store *s, const char *sql, const char *run_id, const char *what, sqlite3_stmt **out) {
    sqlite3_stmt *st;
    s->err[0] = '\0';
    if (sto_prep(s, &st, sql)) return -1;
    if (sto_bind(s, st, "t", run_id)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r = sqlite3_step(st);
    if (r == SQLITE_DONE) {
        sto_fail(s, "%s: no run %s", s->path, run_id);
        (void)sto_fin(s, st);
        return -1;
    }
    if (r != SQLITE_ROW) {
        sto_dbfail(s, what);
        (void)sqlite3_finalize(st);
        return -1;
    }
    *out = st;
    return 0;
}
