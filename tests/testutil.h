/*
 * testutil.h — helpers shared by the Criterion suites.
 *
 * Built into both test binaries: with the float core (test_*.c) and with
 * the double core (f64_*.c), so `real` follows the library it links with.
 */
#ifndef GATED_TESTUTIL_H
#define GATED_TESTUTIL_H

#include <stddef.h>
#include <stdio.h>
#include "nn/model.h"
#include "run/config.h"
#include "nn/real.h"

/* Worst disagreement of a against b over n values. */
typedef struct {
    double max_abs, max_rel; /* rel = |a-b| / (|b| + floor) */
    size_t worst;            /* index of max_abs */
    double a, b;             /* values at worst */
} Cmp;
Cmp cmp_arrays(const real *a, const real *b, size_t n, double floor);

/* Tiny test config: defaults, then the given model dims (not resolved:
 * set gate fields, then call resolve_or_die). */
Config tiny_config(int V, int C, int L, int H, int Hk, int F, int T, int B);
/* config_resolve, aborting with its message on error. */
void resolve_or_die(Config *c);

/* model_init / model_layout / model_memory_estimate from a run config
 * (its network part, config_model). */
int cfg_model_init(Model *m, const Config *c);
int cfg_model_layout(Model *m, const Config *c);

/* The top kk of row[0..n) by repeated arg-max (the first of equal scores
 * wins; NaN below every number, -0 equal to 0), into out in ascending
 * positions: the reference for the sparse selections. */
void brute_topk(int *out, const real *row, int n, int kk);
/* sparse_topk_row against brute_topk (asserts) on rows of `real` drawn
 * from seed: scores over many binades (past float's range, so infinities
 * and subnormals), both signs, ties, signed zeros, NaN; every n and many
 * k, including a k-th score inside a run of equal ones. */
void check_topk_rows(unsigned seed);

/* Set OpenBLAS and OpenMP threads (one owner: tests call this, nothing
 * else changes thread counts behind their back). */
void set_threads(int n);

/* A fresh directory /tmp/gated-test-XXXXXX in buf (asserts). */
void test_tmpdir(char *buf, size_t cap);

/* A tiny run on the synthetic corpus (vocab 257, d 32, 2 layers, batch 4
 * x 32): steps steps, eval every 10 on 8 windows, lr 1e-2 -> 1e-3. */
Config synth_config(int steps);

/* Where run run_id of the database db keeps its checkpoint in ckdir:
 * CKDIR/DB_ID/RUN_ID.ckpt (run/checkpoint.h), into out (asserts). */
void test_ckpt_path(const char *db, const char *ckdir, const char *run_id, char *out, size_t cap);

/* $GATED_BIN, or the test is skipped when it is unset or not executable. */
const char *gated_bin(void);

/* The whole of a file / an open stream (from its start), NUL-terminated
 * and malloc'd; *len (may be NULL) gets its length.  Asserts on failure. */
char *test_read_file(const char *path, size_t *len);
char *test_read_stream(FILE *f, size_t *len);

/* Run $GATED_BIN (skipped without it) with args (NULL-terminated), in
 * directory cwd (NULL: this one), with env ("K=V" strings, NULL-terminated;
 * may be NULL) added and a limit of timeout_s seconds (SIGALRM, kept across
 * exec); stdin from /dev/null; stdout and stderr together into *out
 * (malloc'd).  Returns the exit status, or 128 + the signal that ended it
 * (128 + SIGALRM: it ran past the limit). */
int test_gated(const char *cwd, const char *const *args, const char *const *env, unsigned timeout_s, char **out);

/* Send stdout to /dev/null until quiet_end (commands print run ids and
 * result lines there; keep the test log clean).  Returns the saved fd. */
int quiet_begin(void);
void quiet_end(int saved);

#endif
