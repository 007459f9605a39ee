/*
 * merge_int.h — what merge.c (the copy) and merge_check.c (the input's
 * checks) share: one merge's state and the statement helpers for the
 * connection the input is attached to.  Not part of the library's
 * interface (lab/merge.h is).
 */
#ifndef GATED_MERGE_INT_H
#define GATED_MERGE_INT_H

#include <sqlite3.h>
#include <stddef.h>

#include "run/store.h"

/* One merge into dst: its connection, and the first error's message. */
typedef struct {
    Store *dst;
    sqlite3 *db;
    const char *path; /* dst's path */
    char err[1024];
} Merge;

/* What merge_check_input found out about the input (attached as merge_src). */
typedef struct {
    int version;    /* its schema version (1 or 2) */
    int has_sweeps; /* it has sweep_runs */
    int has_attest; /* it has code_attest */
} MergeSrc;

/* Format into s->err; -1. */
__attribute__((format(printf, 2, 3))) int mg_fail(Merge *s, const char *fmt, ...);
/* "DST: WHAT: sqlite message"; -1. */
int mg_dbfail(Merge *s, const char *what);
/* Prepare sql into *st (NULL on failure); 0 or -1. */
int mg_prep(Merge *s, sqlite3_stmt **st, const char *sql);
/* Bind parameters 1.. from types, each 't' (a const char *). */
int mg_bind(Merge *s, sqlite3_stmt *st, const char *types, ...);
/* Finalize a statement whose evaluation succeeded. */
int mg_fin(Merge *s, sqlite3_stmt *st);
/* Column i as text (NULL for SQL NULL) / dflt for SQL NULL. */
const char *mg_text(sqlite3_stmt *st, int i);
const char *mg_text_or(sqlite3_stmt *st, int i, const char *dflt);

/* Whether merge_src (attached) is a gated database this build reads, and
 * every row of it is what gated writes (merge.h lists the rules): 0 with
 * *src filled, -2 (the message names src, the table, the row and the
 * rule), -1 on another failure. */
int merge_check_input(Merge *s, const char *src, MergeSrc *info);

#endif
