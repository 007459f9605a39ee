/*
 * bench_fx.h — what the bench suites (test_bench*.c) share (bench_fx.c).
 */
#ifndef GATED_BENCH_FX_H
#define GATED_BENCH_FX_H

/* The scratch directory of the running test (mk_tmp: a test's .init,
 * rm_tmp: its .fini). */
extern char tmpdir[64];
void mk_tmp(void);
void rm_tmp(void);

/* Write text to TMP/name; the path into path (256 bytes). */
void put(const char *name, const char *text, char *path);

/* The contents of TMP/name (static buffer; "" if missing). */
const char *slurp(const char *name);

/* system(cmd)'s exit status, or -1 if it did not exit. */
int run_sh(const char *cmd);

#endif
