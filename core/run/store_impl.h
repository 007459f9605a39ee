/*
 * store_impl.h — private to the store's own files (core/run/store*.c): the
 * Store struct and the statement helpers they share.  Nothing else may
 * include it; every other module goes through store.h.
 *
 * The files: store.c (schema, open / close, runs, metrics, summaries,
 * histograms, run identity, provenance), store_sql.c (these helpers),
 * store_text.c (untrusted text), store_claims.c (run_claims),
 * store_sweep.c (sweep_runs, row counts), store_query.c (finding runs and
 * reading them back for ls / show), store_bench.c (the bench table),
 * store_attest.c (code_attest: results verified under other code),
 * store_views.c (the views for the common joins), store_guard.c (what a
 * database path and file must be).
 *
 * Every helper that fails records the message in s->err (store_errmsg)
 * and returns -1, so callers can `return sto_fail(...)`.
 */
#ifndef GATED_STORE_IMPL_H
#define GATED_STORE_IMPL_H

#include <sqlite3.h>
#include <stddef.h>

#include "run/store.h"

/* One buffered metric row; strings are offsets into Store.pool. */
typedef struct {
    size_t run, key, ctx;
    long long step;
    double value, t; /* t: unix seconds when store_metric was called */
} MetricRow;

struct Store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *ins_metric; /* cached INSERT OR REPLACE INTO metrics (NULL read-only) */
    MetricRow *rows;          /* STORE_FLUSH_ROWS slots */
    int nrows;
    char *pool; /* NUL-terminated strings of the buffered rows */
    size_t pool_len, pool_cap;
    int readonly; /* store_open_ro: SQLITE_OPEN_READONLY, nothing written at open */
    int schema;   /* the file's schema_version (a read-only schema-1 file stays 1) */
    char db_id[17]; /* meta db_id (store_db_id); "" when a read-only file has none */
    int bad_input;  /* the open failed for the file's sake, not the machine's (store_open: -2) */
    int runtime_err; /* the last error was the machine's (store_err_runtime) */
    char err[1024];
};

/* Unix time now, in seconds. */
double sto_now(void);
/* s or "unknown" when NULL. */
const char *sto_or_unknown(const char *s);

/* Format into s->err; returns -1. */
__attribute__((format(printf, 2, 3))) int sto_fail(Store *s, const char *fmt, ...);
/* "PATH: WHAT: sqlite message"; returns -1. */
int sto_dbfail(Store *s, const char *what);

/* Prepare sql into *st (NULL on failure). */
int sto_prep(Store *s, sqlite3_stmt **st, const char *sql);
/* Bind parameters 1.. from types: 't' const char * (NULL binds NULL),
 * 'i' long long, 'I' long long (< 0 binds NULL), 'd' double (NaN binds NULL). */
int sto_bind(Store *s, sqlite3_stmt *st, const char *types, ...);
/* Both: 0 with *st ready to step, or -1 with nothing to finalize. */
int sto_prep_bind(Store *s, sqlite3_stmt **st, const char *sql, const char *types, ...);
/* Finalize a statement whose evaluation succeeded. */
int sto_fin(Store *s, sqlite3_stmt *st);
/* Prepare, bind (as sto_bind), step once expecting SQLITE_DONE, finalize.
 * *changes (if non-NULL) gets the number of rows changed. */
int sto_run(Store *s, int *changes, const char *sql, const char *types, ...);
/* Step a prepared statement expecting SQLITE_DONE, then reset it. */
int sto_step_done(Store *s, sqlite3_stmt *st, const char *what);
/* Constant SQL without values (BEGIN, COMMIT, schema, PRAGMA). */
int sto_exec(Store *s, const char *sql);

/* BEGIN IMMEDIATE / COMMIT; sto_rollback rolls back an open transaction
 * after an error, keeping the first error's message. */
int sto_begin(Store *s);
int sto_commit(Store *s);
void sto_rollback(Store *s);

/* Whether run_id's claim is held by a process of this host that has
 * exited (store_claims.c): 1 yes, 0 no (or no claim), -1 on error. */
int sto_claim_owner_dead(Store *s, const char *run_id);

/* Column i as text: NULL for SQL NULL / dflt for SQL NULL. */
const char *sto_text(sqlite3_stmt *st, int i);
const char *sto_text_or(sqlite3_stmt *st, int i, const char *dflt);

/* 1 if the main database has a table called name, 0 if not, -1 on error. */
int sto_has_table(Store *s, const char *name);

/* Prepare sql (whose one parameter ?1 is a run id) and step to the run's
 * row: 0 with the statement in *out (the caller finalizes it), or -1 with
 * the error set ("no run ID" when absent) and nothing to finalize. */
int sto_run_row(Store *s, const char *sql, const char *run_id, const char *what, sqlite3_stmt **out);

/* What a run's status reads as: 'running' with a stale heartbeat is killed. */
const char *sto_effective_status(const char *status, double heartbeat, double now);

/* Create the tables added after schema 1's first release where they are
 * missing (store_sweep.c, store_claims.c); run by store_open. */
int sto_ensure_sweep_schema(Store *s);
int sto_ensure_claims_schema(Store *s);
/* The same for code_attest (store_attest.c; read-only, an empty TEMP one). */
int sto_ensure_attest_schema(Store *s);
/* The views of store_views.c (run_metrics, sweep_metrics, final_metrics):
 * in the file where missing or different (writers), as TEMP views when
 * read-only; run by store_open after the tables. */
int sto_ensure_views(Store *s);

/* store_guard.c: the database path is a file name and, when it exists, a
 * regular file; a writer's file holds only the store's objects; the URI a
 * read-only open uses in a folder it cannot write (NULL: the plain path).
 * The first two set bad_input when they refuse. */
int sto_check_path(Store *s);
int sto_check_objects(Store *s);
char *sto_ro_uri(const char *path);
/* The numeric columns of runs, summary, histograms and sweep_runs hold
 * numbers (NULL where allowed): a value of another type refused, naming
 * the table, run, key and value (bad_input). */
int sto_check_values(Store *s);

#endif
