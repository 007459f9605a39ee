/*
 * dots_t.h — dot products with lanes across independent outputs, for the
 * top-k kernels (sparse_attn.c, indexer.c, indexer_kl.c).
 *
 * y[i] = a . (column i of xT), xT a d x n block (column i: one key, or one
 * query), summed over c = 0..d-1 in ascending order: the order of the plain
 * loop `s = 0; for c: s += a[c] * x_i[c]`, so the result is that loop's,
 * bit for bit, whatever the vector width -- no sum is reassociated, only
 * independent sums are run side by side (the indexer's scores, over one
 * sequence's keys transposed once).  dot8 is for a dot product whose
 * operands are not worth transposing (a query's selected keys).
 */
#ifndef GATED_DOTS_T_H
#define GATED_DOTS_T_H

#include <stddef.h>

#include "nn/real.h"

/* y[i] = a . xT[., i] for i < m; xT has leading dimension ld (>= m). */
static inline void dots_t(real *y, const real *a, const real *xT, int ld, int m, int d) {
    for (int i = 0; i < m; i++) y[i] = 0;
    for (int c = 0; c < d; c++) {
        real ac = a[c];
        const real *xc = xT + (size_t)c * ld;
#pragma omp simd
        for (int i = 0; i < m; i++) y[i] += ac * xc[i];
    }
}

/* xT (d x n, leading dimension n) = the transpose of n rows of d (stride d). */
static inline void transpose_rows(real *xT, const real *x, int n, int d) {
    for (int i = 0; i < n; i++)
        for (int c = 0; c < d; c++) xT[(size_t)c * n + i] = x[(size_t)i * d + c];
}

/* a . b over d numbers in a fixed order that vectorises without a gather:
 * 8 partial sums (channel c into s[c mod 8]), then ((s0 + s1) + (s2 + s3)) +
 * ((s4 + s5) + (s6 + s7)), then the d mod 8 tail in order.  The order is
 * written out, not left to the compiler (and ISO C mode does not fuse a
 * multiply and an add), so the sum is the same on every machine and vector
 * width; it is not the plain loop's order. */
static inline real dot8(const real *a, const real *b, int d) {
    real s[8] = {0};
    int c = 0;
    for (; c + 8 <= d; c += 8)
        for (int u = 0; u < 8; u++) s[u] += a[c + u] * b[c + u];
    real r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; c < d; c++) r += a[c] * b[c];
    return r;
}

#endif
