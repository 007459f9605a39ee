/*
 * sweep_fx.h — what the sweep suites (test_sweep*.c) share (sweep_fx.c).
 */
#ifndef GATED_SWEEP_FX_H
#define GATED_SWEEP_FX_H

#include <sqlite3.h>
#include <stddef.h>

#include "run/config.h"
#include "lab/sweep/sweep.h"

/* A scratch directory. */
typedef struct {
    char dir[64];
} Tmp;

/* The base run config of the tests: a tiny model on the synthetic corpus. */
extern const char BASE_YAML[];

/* A fresh directory holding base.yaml. */
void tmp_dir(Tmp *t);
/* Remove it and what is in it. */
void tmp_rm(Tmp *t);

/* Write text to DIR/name; the path goes to path (>= 128 bytes). */
void write_file(const Tmp *t, const char *name, const char *text, char *path);

/* sweep_load of text (as DIR/s.yaml); rc, and the path in path. */
int load_text(const Tmp *t, const char *text, Sweep *s, ConfigError *e, char *path);
/* load_text, asserting that it loads. */
Sweep load_ok(const Tmp *t, const char *text);

/* The overrides of run r joined with ' '. */
void joined(const SweepRun *r, char *buf, size_t cap);
/* $GATED_BIN (skips the test when unset or missing; asserts it holds no quote). */
const char *sweep_gated_bin(void);

/* Run a shell command; its stdout + stderr into out (cap bytes); the exit
 * status is returned (-1 if it did not exit normally). */
int sh(const char *cmd, char *out, size_t cap);

/* The last non-empty line of text. */
const char *last_line(char *text);

/* Absolute path of experiments/smoke.yaml (tests run from the repository root). */
void smoke_path(char *out);
/* The database through SQLite alone (asserts). */
sqlite3 *db_open(const char *path);
/* The single integer a query returns. */
long long db_int(const char *path, const char *sql);

/* group_concat of one text query's rows (ordered by the query). */
void db_text(const char *path, const char *sql, char *out, size_t cap);

/* Change a database with one statement (as another tool would). */
void db_exec(const char *path, const char *sql);
/* The same with ?1 bound to the text arg: the rows it changed. */
int db_exec1(const char *path, const char *sql, const char *arg);

/* Run `gated ARGS` in dir; output into out; exit status returned. */
int gated(const char *bin, const Tmp *t, const char *args, char *out, size_t cap);

#endif
