/*
 * store_fx.h — what the store suites (test_store*.c) share (store_fx.c).
 */
#ifndef GATED_STORE_FX_H
#define GATED_STORE_FX_H

#include <sqlite3.h>
#include <stddef.h>

#include "run/store.h"

/* A scratch directory and the path of a database in it. */
typedef struct {
    char dir[64];
    char db[96];
} TmpDb;

/* A store call that must succeed (a Store *s in scope names the error). */
#define OK(call) cr_assert_eq((call), 0, "%s: %s", #call, store_errmsg(s))

/* A NULL-terminated list of text parameters. */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A run id. */
extern const char RID[];

/* A fresh directory holding the path of a (not yet existing) results.db. */
void tmp_db(TmpDb *t);
/* Remove it and what is in it. */
void tmp_db_remove(TmpDb *t);
/* store_open, asserting that it works. */
Store *open_or_die(const char *path);

/* A fixed provenance, so environments dedup deterministically. */
Provenance test_prov(const char *host);
/* The database through SQLite alone (asserts), and its close. */
sqlite3 *raw_open(const char *path);
void raw_close(sqlite3 *db);

/* Prepare sql and bind text parameters ?1..?n (NULL-terminated list). */
sqlite3_stmt *raw_query(sqlite3 *db, const char *sql, const char *const *args);

/* The single integer a query returns. */
long long q_int(sqlite3 *db, const char *sql, const char *const *args);

/* The single text a query returns (malloc'd; NULL for SQL NULL). */
char *q_text(sqlite3 *db, const char *sql, const char *const *args);
/* Run sql (asserts). */
void raw_exec(sqlite3 *db, const char *sql);
/* The bytes of a file (malloc'd) and their count. */
unsigned char *read_all(const char *path, size_t *n);
int path_exists(const char *path);

/* `$GATED_BIN CMD [ARG] --db DB` (the test is skipped without GATED_BIN),
 * run directly, not through a shell, so ARG may hold any byte: its stdout
 * into *out (malloc'd), its stderr into err; the exit status. */
int gated_run(const char *cmd, const char *arg, const char *db, char **out, char *err, size_t cap);

/* `gated ls --db DB`: its output (malloc'd). */
char *capture_ls(const char *db);

/* `gated show ARG --db DB`: its output, or NULL (having asserted that it
 * exited 2 and printed nothing on stdout) with its message in err. */
char *capture_show(const char *db, const char *arg, char *err, size_t cap);

/* The listed row of run id (asserts there is one). */
const StoreRunRow *list_find(const StoreRunList *l, const char *id);

/* `gated CMD...` with output into out; the exit status (-1: no exit). */
int run_gated(const char *cmd_fmt, const char *a1, const char *a2, char *out, size_t cap);
/* The file at path holds exactly the na bytes of a. */
int same_bytes(const unsigned char *a, size_t na, const char *path);
/* No -wal, -shm or -journal file beside db. */
void assert_no_side_files(const char *db);

/* A database with one finished run and a sweep, switched to a rollback
 * journal (as one written by an older tool, or copied); RID is the run. */
void rollback_db(const char *path, int with_sweeps);

/* Everything ls and show read, through a read-only store (RID, "ro-run"). */
void ro_read_all(Store *s);

/* True if text holds a byte below 0x20 other than a newline, or 0x7f. */
int has_raw_control(const char *text);
/* Lines of text. */
int count_lines(const char *text);

#endif
