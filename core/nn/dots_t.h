/*
 * dots_t.h — dot products with lanes across independent outputs, for the
 * top-k kernels (sparse_attn.c, indexer.c, indexer_kl.c).
 *
 * y[i] = a . (column i of xT), xT a d x n block (column i: one key, or one
 * query), summed over c = 0..d-1 in ascending order: the order of the plain
 * loop `s = 0; for c: s += a[c] * x_i[c]`, so the result is that loop's,
 * bit for bit, whatever the vector width -- no sum is reassociated, only
 * independent sums are run side by side.  gather_t builds such a block from
 * rows picked by an index list (a query's selected keys).
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

/* xT (d x n, leading dimension n): column i = the d numbers at
 * x + (base + S[i]) sx + off. */
static inline void gather_t(real *xT, const real *x, int sx, size_t off, const int *S, size_t base, int n, int d) {
    for (int i = 0; i < n; i++) {
        const real *xi = x + (base + (size_t)S[i]) * sx + off;
        for (int c = 0; c < d; c++) xT[(size_t)c * n + i] = xi[c];
    }
}

/* xT (d x n, leading dimension n) = the transpose of n rows of d (stride d). */
static inline void transpose_rows(real *xT, const real *x, int n, int d) {
    for (int i = 0; i < n; i++)
        for (int c = 0; c < d; c++) xT[(size_t)c * n + i] = x[(size_t)i * d + c];
}

#endif
