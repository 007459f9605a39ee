/*
 * indexer.c — DeepSeek's lightning indexer (DeepSeek-V3.2-Exp,
 * inference/model.py class Indexer; sparse.h has the formulas): one layer's
 * index scores I(t, s) from its normed input h, forward and backward.
 *
 * Here k_I is RMS-normed with a learned weight (DeepSeek: LayerNorm) and
 * RoPE rotates all d_I channels of q_I and k_I (DeepSeek: a part of them);
 * w is scaled by (H_I d_I)^-1/2 as in the source.
 */
#include "nn/sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/dots_t.h"
#include "nn/ops.h"

static inline real dotr(const real *a, const real *b, int d) {
    real s = 0;
    for (int c = 0; c < d; c++) s += a[c] * b[c];
    return s;
}

static inline int idx_width(int HI, int dI) { return HI * dI + dI + HI; }

size_t indexer_acts_len(int B, int T, int HI, int dI) {
    size_t n = (size_t)B * T;
    return n * ((size_t)idx_width(HI, dI) + 1 + dI + (size_t)HI * dI + dI + HI) + n * T;
}

void indexer_acts_carve(IndexerActs *a, real *base, int B, int T, int HI, int dI) {
    size_t n = (size_t)B * T;
    a->P = base;
    a->rstd = a->P + n * idx_width(HI, dI);
    a->kn = a->rstd + n;
    a->qr = a->kn + n * dI;
    a->kr = a->qr + n * HI * dI;
    a->w = a->kr + n * dI;
    a->sc = a->w + n * HI;
}

size_t indexer_scratch_len(int B, int T, int HI, int dI) {
    size_t n = (size_t)B * T;
    return n * ((size_t)idx_width(HI, dI) + (size_t)HI * dI + 2 * (size_t)dI + HI);
}

/* The score stage runs on transposed operands so that its inner loops are
 * over independent outputs (keys s, or channels c) and vectorise with no
 * sum reassociated: every dot product is still summed over c in ascending
 * order, and every gradient over s (or t, j) in ascending order, as the
 * plain loops would, so the bits are the plain loops' (row_plain() and
 * grad_row()/grad_key() without x are those loops: the fallback when the
 * per-thread buffers cannot be had).  All t + 1 dot products of a row are
 * made even where only k have a gradient (sparse training's KL over S_t):
 * vectorised, that is faster than k plain ones at these widths.  Per thread: one sequence's keys transposed
 * (d_I x T), or its queries (d_I x T H_I), and a row of dot products. */

static void row_plain(real *row, const real *qi, const real *ki, const real *w, int r, int b, int t, int T, int HI,
                      int dI) {
    for (int s = 0; s < T; s++) {
        real acc = 0;
        if (s <= t)
            for (int j = 0; j < HI; j++) {
                real x = dotr(qi + ((size_t)r * HI + j) * dI, ki + (size_t)(b * T + s) * dI, dI);
                acc += w[(size_t)r * HI + j] * (x > 0 ? x : 0);
            }
        row[s] = acc;
    }
}

void indexer_scores(real *sc, const real *qi, const real *ki, const real *w, int B, int T, int HI, int dI) {
#pragma omp parallel
    {
        real *kT = malloc(sizeof(real) * (size_t)T * dI), *x = malloc(sizeof(real) * (size_t)T);
        int have = -1; /* the sequence kT holds */
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            int b = r / T, t = r % T;
            real *row = sc + (size_t)r * T;
            if (!kT || !x) {
                row_plain(row, qi, ki, w, r, b, t, T, HI, dI);
                continue;
            }
            if (have != b) transpose_rows(kT, ki + (size_t)b * T * dI, T, dI), have = b;
            for (int s = 0; s < T; s++) row[s] = 0;
            for (int j = 0; j < HI; j++) {
                real wj = w[(size_t)r * HI + j];
                dots_t(x, qi + ((size_t)r * HI + j) * dI, kT, T, t + 1, dI);
#pragma omp simd
                for (int s = 0; s <= t; s++) row[s] += wj * (x[s] > 0 ? x[s] : 0);
            }
        }
        free(kT);
        free(x);
    }
}

void indexer_token_scores(real *score, const real *qr, const real *w, const real *kT, size_t ldk, int n, int HI,
                          int dI, real *x) {
    for (int s = 0; s < n; s++) score[s] = 0;
    for (int j = 0; j < HI; j++) {
        real wj = w[j];
        dots_t(x, qr + (size_t)j * dI, kT, (int)ldk, n, dI);
#pragma omp simd
        for (int s = 0; s < n; s++) score[s] += wj * (x[s] > 0 ? x[s] : 0);
    }
}

/* dq(t), dw(t) of row r over the keys s <= t with a gradient; x (t + 1
 * reals) and idx (t + 1 ints): scratch for the row's dot products, or NULL:
 * the plain loops.  Where at most half the keys have a gradient (sparse
 * training's KL over S_t), the dot products are made at those keys alone
 * (dots_t_at), else at every key (dots_t); either way in the plain order. */
static void grad_row(real *dq, real *dw, const real *dsc, const real *qi, const real *ki, const real *w, int r, int b,
                     int t, int T, int HI, int dI, const real *kT, real *x, int *idx) {
    const real *grow = dsc + (size_t)r * T;
    int m = 0;
    for (int s = 0; x && s <= t; s++)
        if (grow[s] != 0) idx[m++] = s;
    int at = x && 2 * m <= t + 1;
    for (int j = 0; j < HI; j++) {
        const real *qj = qi + ((size_t)r * HI + j) * dI;
        if (at) dots_t_at(x, qj, kT, T, idx, m, dI);
        else if (x) dots_t(x, qj, kT, T, t + 1, dI);
        real *dqj = dq + ((size_t)r * HI + j) * dI;
        for (int i = 0; i < (x ? m : t + 1); i++) {
            int s = x ? idx[i] : i;
            real g = grow[s];
            if (g == 0) continue;
            const real *ks = ki + (size_t)(b * T + s) * dI;
            real xs = at ? x[i] : x ? x[s] : dotr(qj, ks, dI);
            if (!(xs > 0)) continue;
            dw[(size_t)r * HI + j] += g * xs;
            real gw = g * w[(size_t)r * HI + j];
#pragma omp simd
            for (int c = 0; c < dI; c++) dqj[c] += gw * ks[c];
        }
    }
}

/* dk(s) of key r = (b, s) over the rows t >= s that give it a gradient, j =
 * 0..H_I-1; qT: sequence b's queries transposed (d_I x T H_I), x (T H_I
 * reals), tl (T ints) and u (T H_I ints) scratch, or x NULL (plain).  As
 * grad_row: the dot products at those rows alone where they are at most
 * half of them. */
static void grad_key(real *dk, const real *dsc, const real *qi, const real *ki, const real *w, int r, int b, int s,
                     int T, int HI, int dI, const real *qT, real *x, int *tl, int *u) {
    const real *ks = ki + (size_t)r * dI;
    real *dks = dk + (size_t)r * dI;
    int n = T * HI, u0 = s * HI, m = 0;
    for (int t = s; x && t < T; t++)
        if (dsc[((size_t)b * T + t) * T + s] != 0) tl[m++] = t;
    int at = x && 2 * m <= T - s;
    if (at) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < HI; j++) u[i * HI + j] = tl[i] * HI + j;
        dots_t_at(x, ks, qT, n, u, m * HI, dI);
    } else if (x) {
        dots_t(x + u0, ks, qT + u0, n, n - u0, dI);
    }
    for (int i = 0; i < (x ? m : T - s); i++) {
        int t = x ? tl[i] : s + i;
        size_t rt = (size_t)b * T + t;
        real g = dsc[rt * T + s];
        if (g == 0) continue;
        for (int j = 0; j < HI; j++) {
            const real *qj = qi + (rt * HI + j) * dI;
            real xs = at ? x[i * HI + j] : x ? x[t * HI + j] : dotr(qj, ks, dI);
            if (!(xs > 0)) continue;
            real gw = g * w[rt * HI + j];
#pragma omp simd
            for (int c = 0; c < dI; c++) dks[c] += gw * qj[c];
        }
    }
}

void indexer_scores_backward(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                             const real *w, int B, int T, int HI, int dI) {
    /* rows: dq(t), dw(t) over s = 0..t */
#pragma omp parallel
    {
        real *kT = malloc(sizeof(real) * (size_t)T * dI), *x = malloc(sizeof(real) * (size_t)T);
        int *idx = malloc(sizeof(int) * (size_t)T);
        int have = -1, ok = kT && x && idx;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            int b = r / T, t = r % T;
            if (ok && have != b) transpose_rows(kT, ki + (size_t)b * T * dI, T, dI), have = b;
            grad_row(dq, dw, dsc, qi, ki, w, r, b, t, T, HI, dI, kT, ok ? x : NULL, idx);
        }
        free(kT);
        free(x);
        free(idx);
    }
    /* keys: dk(s) over t = s..T-1 */
#pragma omp parallel
    {
        size_t n = (size_t)T * HI;
        real *qT = malloc(sizeof(real) * n * dI), *x = malloc(sizeof(real) * n);
        int *tl = malloc(sizeof(int) * (size_t)T), *u = malloc(sizeof(int) * n);
        int have = -1, ok = qT && x && tl && u;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            int b = r / T, s = r % T;
            if (ok && have != b) transpose_rows(qT, qi + (size_t)b * n * dI, (int)n, dI), have = b;
            grad_key(dk, dsc, qi, ki, w, r, b, s, T, HI, dI, qT, ok ? x : NULL, tl, u);
        }
        free(qT);
        free(x);
        free(tl);
        free(u);
    }
}

void indexer_forward(IndexerActs *a, const real *W, const real *knw, const real *h, int ldh, int B, int T, int C,
                     int HI, int dI, const real *cos_t, const real *sin_t, real eps) {
    int n = B * T, np = idx_width(HI, dI);
    real c = 1 / sqrt((real)HI * dI);
    linear_forward(a->P, np, h, ldh, W, n, np, C, 0);
    rmsnorm_forward(a->kn, dI, a->rstd, a->P + (size_t)HI * dI, np, knw, n, 1, dI, eps);
    rope_forward(a->qr, a->P, np, cos_t, sin_t, n, T, HI, dI);
    rope_forward(a->kr, a->kn, dI, cos_t, sin_t, n, T, 1, dI);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < HI; j++) a->w[(size_t)r * HI + j] = c * a->P[(size_t)r * np + HI * dI + dI + j];
    indexer_scores(a->sc, a->qr, a->kr, a->w, B, T, HI, dI);
}

void indexer_token(real *qr, real *kr, real *w, real *P, const real *W, const real *knw, const real *h, int C, int HI,
                   int dI, const real *cos_t, const real *sin_t, real eps) {
    int np = idx_width(HI, dI);
    real rstd, kn[1024], c = 1 / sqrt((real)HI * dI); /* d_I <= 1024 (config_schema.c) */
    linear_forward(P, np, h, C, W, 1, np, C, 0);
    rmsnorm_forward(kn, dI, &rstd, P + (size_t)HI * dI, np, knw, 1, 1, dI, eps);
    rope_forward(qr, P, np, cos_t, sin_t, 1, 1, HI, dI);
    rope_forward(kr, kn, dI, cos_t, sin_t, 1, 1, 1, dI);
    for (int j = 0; j < HI; j++) w[j] = c * P[(size_t)HI * dI + dI + j];
}

void indexer_backward(real *dW, real *dknw, real *dh, int ldh, const real *dsc, const IndexerActs *a, const real *W,
                      const real *knw, const real *h, int B, int T, int C, int HI, int dI, const real *cos_t,
                      const real *sin_t, real *scratch) {
    int n = B * T, np = idx_width(HI, dI);
    size_t N = (size_t)n;
    real c = 1 / sqrt((real)HI * dI);
    real *dP = scratch, *dqr = dP + N * np, *dkr = dqr + N * HI * dI, *dkn = dkr + N * dI, *dw = dkn + N * dI;
    memset(scratch, 0, sizeof(real) * indexer_scratch_len(B, T, HI, dI));
    indexer_scores_backward(dqr, dkr, dw, dsc, a->qr, a->kr, a->w, B, T, HI, dI);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < HI; j++) dP[(size_t)r * np + HI * dI + dI + j] = c * dw[(size_t)r * HI + j];
    rope_backward(dP, np, dqr, cos_t, sin_t, n, T, HI, dI);
    rope_backward(dkn, dI, dkr, cos_t, sin_t, n, T, 1, dI);
    rmsnorm_backward(dP + (size_t)HI * dI, np, dknw, dkn, dI, a->P + (size_t)HI * dI, np, knw, a->rstd, n, 1, dI);
    linear_backward(dh, ldh, dW, dP, np, h, W, n, np, C);
}
