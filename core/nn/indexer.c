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

#include <limits.h>
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
 * indexer_scores_backward_plain() are those loops: the fallbacks when the
 * lists cannot be had; a thread without its buffers makes its dot products
 * one at a time; tests/test_sparse.c holds the backward to the plain loops
 * bit for bit).  The
 * forward makes all t + 1 dot products of a row; the backward makes each
 * listed pair's once, in the rows' pass, and the keys' pass reads them
 * (a 7-10% shorter top-k step at T 512: docs/performance.md).  Per thread:
 * one sequence's keys transposed (d_I x T), its gathered keys, and a row of
 * dot products. */

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

/* Where the scores' gradient dsc (B x T x T) is nonzero: per row r = (b, t)
 * its keys s <= t in ascending order (ri[rp[r] .. rp[r + 1]]), and per key
 * r = (b, s) its rows t >= s in ascending order (ci[cp[r] .. cp[r + 1]],
 * cq the place of each in the rows' list), made in two passes over dsc's
 * rows in order; x[k H_I + j]: head j's dot product q_I(t, j) . k_I(s) of
 * the k-th listed pair, which the rows' pass makes and the keys' pass reads
 * (the same product of the same two vectors summed in the same order, so
 * the keys' pass needs none of its own).  A gradient that is NaN counts as
 * nonzero, as in the plain loops. */
typedef struct {
    int *rp, *ri, *cp, *ci, *cq;
    real *x;
} Nonzeros;

static void nz_free(Nonzeros *z) {
    free(z->rp), free(z->ri), free(z->cp), free(z->ci), free(z->cq), free(z->x);
    memset(z, 0, sizeof *z);
}

/* 0, or -1 when memory is short (z left empty: the callers fall back). */
static int nz_make(Nonzeros *z, const real *dsc, int B, int T, int HI) {
    size_t n = (size_t)B * T, nnz = 0;
    memset(z, 0, sizeof *z);
    z->rp = calloc(n + 1, sizeof(int)), z->cp = calloc(n + 1, sizeof(int));
    if (!z->rp || !z->cp) return nz_free(z), -1;
    for (size_t r = 0; r < n; r++) { /* counts (each <= T) */
        const real *g = dsc + r * T;
        size_t b = r / T, t = r % T;
        for (size_t s = 0; s <= t; s++)
            if (g[s] != 0) z->rp[r + 1]++, z->cp[b * T + s + 1]++;
        nnz += (size_t)z->rp[r + 1];
    }
    if (nnz > INT_MAX - 1) return nz_free(z), -1; /* the places are ints */
    for (size_t r = 0; r < n; r++) z->rp[r + 1] += z->rp[r], z->cp[r + 1] += z->cp[r];
    nnz += 1;
    z->ri = malloc(sizeof(int) * nnz), z->ci = malloc(sizeof(int) * nnz), z->cq = malloc(sizeof(int) * nnz);
    z->x = malloc(sizeof(real) * nnz * HI);
    int *fill = malloc(sizeof(int) * n);
    if (!z->ri || !z->ci || !z->cq || !z->x || !fill) return free(fill), nz_free(z), -1;
    memcpy(fill, z->cp, sizeof(int) * n);
    for (size_t r = 0; r < n; r++) {
        const real *g = dsc + r * T;
        size_t b = r / T, t = r % T;
        int k = z->rp[r];
        for (size_t s = 0; s <= t; s++)
            if (g[s] != 0) {
                int c = fill[b * T + s]++;
                z->ci[c] = (int)t, z->cq[c] = k, z->ri[k++] = (int)s;
            }
    }
    free(fill);
    return 0;
}

size_t indexer_backward_memory(int B, int T, int HI, int k) {
    size_t n = (size_t)B * T, nnz = k <= 0 || k >= T ? n * (size_t)(T + 1) / 2 : n * (size_t)k;
    /* rp, cp, fill; ri, ci, cq and x with nz_make's one spare place */
    return sizeof(int) * (3 * n + 2 + 3 * (nnz + 1)) + sizeof(real) * (nnz + 1) * HI;
}

/* dq(t), dw(t) of row r over its keys with a gradient (idx: its list, m
 * long), each pair's dot products kept in xr (m x H_I); kT (sequence b's
 * keys transposed, d_I x T), kS (d_I x T) and x (T reals): scratch, or x
 * NULL (plain loops, one dot product at a time).  Where at most half the
 * keys have a gradient (sparse training's KL over S_t) their keys are
 * gathered once into kS (d_I x m) for every head's dot products, else the
 * dot products are made at every key of kT; either way each is summed over
 * c in the plain order, and the gradients over s. */
static void grad_row(real *dq, real *dw, const real *qi, const real *ki, const real *w, const real *grow, int r, int b,
                     int t, int T, int HI, int dI, const real *kT, real *kS, real *x, const int *idx, int m, real *xr) {
    int at = x && 2 * m <= t + 1;
    if (at)
        for (int c = 0; c < dI; c++)
            for (int i = 0; i < m; i++) kS[(size_t)c * m + i] = ki[((size_t)b * T + idx[i]) * dI + c];
    for (int j = 0; j < HI; j++) {
        const real *qj = qi + ((size_t)r * HI + j) * dI;
        if (at) dots_t(x, qj, kS, m, m, dI);
        else if (x) dots_t(x, qj, kT, T, t + 1, dI);
        real *dqj = dq + ((size_t)r * HI + j) * dI;
        for (int i = 0; i < m; i++) {
            int s = idx[i];
            real g = grow[s];
            const real *ks = ki + (size_t)(b * T + s) * dI;
            real xs = at ? x[i] : x ? x[s] : dotr(qj, ks, dI);
            xr[(size_t)i * HI + j] = xs;
            if (!(xs > 0)) continue;
            dw[(size_t)r * HI + j] += g * xs;
            real gw = g * w[(size_t)r * HI + j];
#pragma omp simd
            for (int c = 0; c < dI; c++) dqj[c] += gw * ks[c];
        }
    }
}

/* dk(s) of key r = (b, s) over its rows t with a gradient (tl, their
 * places pl in the rows' lists, m of them), in ascending t, then j =
 * 0..H_I-1, with the dot products the rows' pass kept (zx). */
static void grad_key(real *dk, const real *dsc, const real *qi, const real *w, int r, int b, int s, int T, int HI,
                     int dI, const int *tl, const int *pl, int m, const real *zx) {
    real *dks = dk + (size_t)r * dI;
    for (int i = 0; i < m; i++) {
        size_t rt = (size_t)b * T + tl[i];
        real g = dsc[rt * T + s];
        for (int j = 0; j < HI; j++) {
            real xs = zx[(size_t)pl[i] * HI + j];
            if (!(xs > 0)) continue;
            const real *qj = qi + (rt * HI + j) * dI;
            real gw = g * w[rt * HI + j];
#pragma omp simd
            for (int c = 0; c < dI; c++) dks[c] += gw * qj[c];
        }
    }
}

/* The plain loops (sparse.h): the fallback, and the fast one's reference. */
void indexer_scores_backward_plain(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                                   const real *w, int B, int T, int HI, int dI) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T;
        for (int j = 0; j < HI; j++)
            for (int s = 0; s <= t; s++) {
                real g = dsc[(size_t)r * T + s];
                if (g == 0) continue;
                const real *qj = qi + ((size_t)r * HI + j) * dI, *ks = ki + (size_t)(b * T + s) * dI;
                real xs = dotr(qj, ks, dI);
                if (!(xs > 0)) continue;
                dw[(size_t)r * HI + j] += g * xs;
                real gw = g * w[(size_t)r * HI + j];
                for (int c = 0; c < dI; c++) dq[((size_t)r * HI + j) * dI + c] += gw * ks[c];
            }
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int b = r / T, s = r % T;
        for (int t = s; t < T; t++) {
            size_t rt = (size_t)b * T + t;
            real g = dsc[rt * T + s];
            if (g == 0) continue;
            for (int j = 0; j < HI; j++) {
                const real *qj = qi + (rt * HI + j) * dI;
                real xs = dotr(qj, ki + (size_t)r * dI, dI);
                if (!(xs > 0)) continue;
                real gw = g * w[rt * HI + j];
                for (int c = 0; c < dI; c++) dk[(size_t)r * dI + c] += gw * qj[c];
            }
        }
    }
}

void indexer_scores_backward(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                             const real *w, int B, int T, int HI, int dI) {
    Nonzeros z;
    if (nz_make(&z, dsc, B, T, HI)) {
        indexer_scores_backward_plain(dq, dk, dw, dsc, qi, ki, w, B, T, HI, dI);
        return;
    }
    /* rows: dq(t), dw(t) over their keys, keeping the dot products */
#pragma omp parallel
    {
        real *kT = malloc(sizeof(real) * (size_t)T * dI), *kS = malloc(sizeof(real) * (size_t)T * dI);
        real *x = malloc(sizeof(real) * (size_t)T);
        int have = -1, ok = kT && kS && x;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            int b = r / T, t = r % T;
            if (ok && have != b) transpose_rows(kT, ki + (size_t)b * T * dI, T, dI), have = b;
            grad_row(dq, dw, qi, ki, w, dsc + (size_t)r * T, r, b, t, T, HI, dI, kT, kS, ok ? x : NULL,
                     z.ri + z.rp[r], z.rp[r + 1] - z.rp[r], z.x + (size_t)z.rp[r] * HI);
        }
        free(kT);
        free(kS);
        free(x);
    }
    /* keys: dk(s) over their rows, from the kept dot products */
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++)
        grad_key(dk, dsc, qi, w, r, r / T, r % T, T, HI, dI, z.ci + z.cp[r], z.cq + z.cp[r], z.cp[r + 1] - z.cp[r], z.x);
    nz_free(&z);
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
