/*
 * util.h — small helpers shared by every layer: monotonic time, mkdir -p
 * that reports its errors, a strict integer parser, UTF-8 decoding.
 * Nothing here prints.
 */
#ifndef GATED_UTIL_H
#define GATED_UTIL_H

#include <stddef.h>

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

/* v as the shortest of %.15g, %.16g, %.17g that strtod reads back as v
 * exactly (so 0.1 is "0.1", and every double survives a round trip) into
 * buf (cap >= 32 holds any); "nan", "inf" or "-inf" when not finite.
 * Returns buf. */
char *util_fmt_double(double v, char *buf, size_t cap);

/* Length (1-4) of the valid UTF-8 character at p, its code point in *cp;
 * 0 when p does not start one (overlong forms, surrogates and code points
 * above U+10FFFF are not valid; a NUL inside a sequence ends it). */
int util_utf8_char(const unsigned char *p, unsigned *cp);

/* Whether code point cp must not reach a terminal or a report as it is
 * (every escaper asks this one place: store_escape, CSV, JSON text,
 * config messages): C0 controls, DEL, C1 controls, the bidirectional
 * embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069
 * (they reorder the text around them on screen: "abc\u202Efdp.exe"
 * shows as "abcexe.pdf") and the line and paragraph separators U+2028,
 * U+2029 (a line break to some terminals and viewers). */
int util_cp_unsafe(unsigned cp);

#endif
