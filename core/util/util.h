/*
 * util.h — small helpers shared by every layer: monotonic time, mkdir -p
 * that reports its errors, a strict integer parser.  Nothing here prints.
 */
#ifndef GATED_UTIL_H
#define GATED_UTIL_H

/* Seconds on CLOCK_MONOTONIC (for durations, never for dates). */
double util_now(void);

/* The median of x[0..n-1] (x is not changed); NAN for n < 1 or when out of
 * memory. */
double util_median(const double *x, int n);

/* mkdir -p: dir and every missing directory above it (mode 0777 less the
 * umask); one that exists already is fine.  0, or -1 with errno set by the
 * mkdir that failed (ENOMEM when out of memory, ENOENT for ""). */
int util_mkdir_p(const char *dir);

/* s, whole, as a base-10 integer in [lo, hi] into *out: no text after it,
 * no overflow, not empty (strtol's leading blanks and sign are accepted).
 * 0, or -1 with *out unchanged. */
int util_parse_long(const char *s, long lo, long hi, long *out);

#endif
