/*
 * ops.c — forward/backward of every non-gate operation (see ops.h).
 *
 * The attention kernels live in attn.c (attn.h).
 */
#include "nn/ops.h"

#include <omp.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- linear */
/*
 * Every dense matmul is C (M, N) = alpha op(A) op(B) + beta C, cut into
 * fixed tiles of GEMM_TM x GEMM_TN output elements; each tile is one
 * single-threaded OpenBLAS call over the whole reduction dimension K, and
 * OpenMP spreads the tiles over threads.
 *
 * Why this is deterministic by construction: an output element is written
 * by exactly one call, whose arguments (the tile's M, N, K, and operands) do
 * not depend on the thread count, and a single-threaded sgemm is a fixed
 * sequence of operations for fixed arguments on a given kernel.  Which
 * thread runs a tile changes nothing.  OpenBLAS's own threading, by
 * contrast, splits the work by the number of threads, and some kernels
 * (Haswell, Zen) then round differently: 1 and 2 threads gave different
 * losses at step 0 before this change.  So OpenBLAS always runs with one
 * thread here (gemm enforces it before each parallel region), and the
 * two thread pools never compete for the cores.
 *
 * The tile shape is a compromise between OpenBLAS's efficiency (it packs
 * each tile's panels anew, so tiles must be large enough to amortise that)
 * and parallel slack (enough tiles to keep every core busy at this model's
 * skinny shapes, e.g. 4096 x 768 x 256).  Changing it changes the bits of
 * every result on kernels that split K differently by shape: it is part of
 * the numerics, like the attention tile BT.
 */

void ops_blas_single(void) {
    if (!omp_in_parallel() && openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

void gemm(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb,
          real beta, real *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    ops_blas_single();
    int mt = (M + GEMM_TM - 1) / GEMM_TM, nt = (N + GEMM_TN - 1) / GEMM_TN;
#pragma omp parallel for schedule(static) collapse(2) if (mt * nt > 1)
    for (int i = 0; i < mt; i++)
        for (int j = 0; j < nt; j++) {
            int m0 = i * GEMM_TM, n0 = j * GEMM_TN;
            int m = M - m0 < GEMM_TM ? M - m0 : GEMM_TM, nn = N - n0 < GEMM_TN ? N - n0 : GEMM_TN;
            /* row-major: op(A) rows m0.., op(B) columns n0.. */
            const real *a = ta ? A + m0 : A + (size_t)m0 * lda;
            const real *b = tb ? B + (size_t)n0 * ldb : B + n0;
            cblas_gemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, nn, K,
                       alpha, a, lda, b, ldb, beta, C + (size_t)m0 * ldc + n0, ldc);
        }
}

void ops_set_threads(int n) {
    openblas_set_num_threads(1);
    if (n > 0) omp_set_num_threads(n); /* else OpenMP's default: OMP_NUM_THREADS, or every core */
    omp_set_max_active_levels(1); /* a region inside a data-parallel worker (dp.c) runs with a team of one */
}

void linear_forward(real *y, int ldy, const real *x, int ldx, const real *W, int n, int N, int K, real beta) {
    gemm(0, 1, n, N, K, 1, x, ldx, W, K, beta, y, ldy);
}

void linear_backward(real *dx, int ldx, real *dW, const real *dy, int ldy, const real *x, const real *W, int n,
                     int N, int K) {
    if (dx) gemm(0, 0, n, K, N, 1, dy, ldy, W, K, 1, dx, ldx);
    if (dW) gemm(1, 0, N, K, n, 1, dy, ldy, x, ldx, 1, dW, K);
}

/* --------------------------------------------------------------- rmsnorm */

/* A row's sum of squares is a chain of dependent adds in column order,
 * which the float result depends on: it cannot be split or reordered
 * without changing the bits.  So the forward runs the chains of RMS_RB rows
 * side by side, each in its own order, as one row alone would: the same
 * result, without each add waiting on the last (1.5x faster in isolation
 * at 4096 x 256, 1.25x at the QK-norm's 4096 x 4 heads x 64). */
enum { RMS_RB = 8 };

/* The RMS_RB row pointers of a block of nr (1..RMS_RB) rows from x, stride
 * s; rows past nr repeat the last one (their results are never used). */
static inline void rms_rows(const real **xr, const real *x, size_t s, int nr) {
    for (int l = 0; l < RMS_RB; l++) xr[l] = x + (size_t)(l < nr ? l : nr - 1) * s;
}

/* ss[l] = sum over c < d of xr[l][c]^2, c ascending. */
static inline void rms_sumsq(real *ss, const real *const *xr, int d) {
    real a[RMS_RB] = {0};
    for (int c = 0; c < d; c++)
#pragma GCC unroll 8
        for (int l = 0; l < RMS_RB; l++) a[l] += xr[l][c] * xr[l][c];
    for (int l = 0; l < RMS_RB; l++) ss[l] = a[l];
}

void rmsnorm_forward(real *out, int so, real *rstd, const real *x, int s, const real *w, int n, int g, int d,
                     real eps) {
#ifdef GATED_PERF_PLANT
    /* The perf gate's own test only (tests/perf_gate_test.sh builds it; no
     * other build defines it): four wasted passes over the first
     * GATED_PERF_PLANT rows, a slowdown the gate must name (all rows) or a
     * change within its threshold that must pass (one row). */
    volatile real plant_sink = 0;
    for (int i = 0; i < n && i < GATED_PERF_PLANT; i++)
        for (int k = 0; k < 4; k++)
            for (int c = 0; c < g * d; c++) plant_sink += x[(size_t)i * s + c] * x[(size_t)i * s + c];
#endif
#pragma omp parallel for schedule(static)
    for (int i0 = 0; i0 < n; i0 += RMS_RB) {
        int nr = n - i0 < RMS_RB ? n - i0 : RMS_RB;
        for (int j = 0; j < g; j++) {
            const real *xr[RMS_RB];
            real ss[RMS_RB];
            rms_rows(xr, x + (size_t)i0 * s + (size_t)j * d, s, nr);
            rms_sumsq(ss, xr, d);
            for (int l = 0; l < nr; l++) {
                real *or_ = out + (size_t)(i0 + l) * so + (size_t)j * d;
                real r = 1 / sqrt(ss[l] / d + eps);
                rstd[(size_t)(i0 + l) * g + j] = r;
                for (int c = 0; c < d; c++) or_[c] = xr[l][c] * r * w[c];
            }
        }
    }
}

void rmsnorm_backward(real *dx, int sdx, real *dw, const real *dout, int sdo, const real *x, int s,
                      const real *w, const real *rstd, int n, int g, int d) {
    /* dx rows are independent; dw is a sum over rows, kept serial so its
     * order (and result) is fixed.  (Running the dot products of RMS_RB
     * rows side by side, as the forward does, measured no faster here: this
     * loop is bound by reading x and dout, not by the adds.) */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < g; j++) {
            const real *xr = x + (size_t)i * s + (size_t)j * d;
            const real *dor = dout + (size_t)i * sdo + (size_t)j * d;
            real *dxr = dx + (size_t)i * sdx + (size_t)j * d;
            real r = rstd[(size_t)i * g + j];
            real dot = 0;
            for (int c = 0; c < d; c++) dot += dor[c] * w[c] * xr[c] * r;
            dot /= d;
            for (int c = 0; c < d; c++) dxr[c] += r * (dor[c] * w[c] - xr[c] * r * dot);
        }
    }
    if (dw) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < g; j++) {
                const real *xr = x + (size_t)i * s + (size_t)j * d;
                const real *dor = dout + (size_t)i * sdo + (size_t)j * d;
                real r = rstd[(size_t)i * g + j];
                for (int c = 0; c < d; c++) dw[c] += dor[c] * xr[c] * r;
            }
    }
}

/* ------------------------------------------------------------------ rope */

void rope_forward(real *out, const real *x, int s, const real *cos_t, const real *sin_t, int n, int T, int h,
                  int d) {
    int half = d / 2;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const real *c = cos_t + (size_t)(i % T) * half, *sn = sin_t + (size_t)(i % T) * half;
        for (int j = 0; j < h; j++) {
            const real *xr = x + (size_t)i * s + (size_t)j * d;
            real *o = out + ((size_t)i * h + j) * d;
            for (int k = 0; k < half; k++) {
                real x1 = xr[k], x2 = xr[k + half];
                o[k] = x1 * c[k] - x2 * sn[k];
                o[k + half] = x2 * c[k] + x1 * sn[k];
            }
        }
    }
}

void rope_backward(real *dx, int sdx, const real *dout, const real *cos_t, const real *sin_t, int n, int T,
                   int h, int d) {
    int half = d / 2;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const real *c = cos_t + (size_t)(i % T) * half, *sn = sin_t + (size_t)(i % T) * half;
        for (int j = 0; j < h; j++) {
            const real *g = dout + ((size_t)i * h + j) * d;
            real *dr = dx + (size_t)i * sdx + (size_t)j * d;
            for (int k = 0; k < half; k++) {
                real g1 = g[k], g2 = g[k + half];
                dr[k] += g1 * c[k] + g2 * sn[k];
                dr[k + half] += g2 * c[k] - g1 * sn[k];
            }
        }
    }
}

/* ---------------------------------------------------------- swiglu, silu */

static inline real sigm(real x) { return 1 / (1 + exp(-x)); }

void swiglu_forward(real *out, const real *u, int n, int F) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const real *g = u + (size_t)i * 2 * F, *up = g + F;
        real *o = out + (size_t)i * F;
        for (int c = 0; c < F; c++) o[c] = g[c] * sigm(g[c]) * up[c];
    }
}

void swiglu_backward(real *du, const real *dout, const real *u, int n, int F) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const real *g = u + (size_t)i * 2 * F, *up = g + F;
        const real *d = dout + (size_t)i * F;
        real *dg = du + (size_t)i * 2 * F, *dup = dg + F;
        for (int c = 0; c < F; c++) {
            real s = sigm(g[c]), si = g[c] * s;
            dup[c] += d[c] * si;
            dg[c] += d[c] * up[c] * s * (1 + g[c] * (1 - s));
        }
    }
}

void silu_forward(real *out, const real *x, int n, int w, int s) {
#ifdef GATED_PERF_PLANT_VARIANTS
    /* The perf gate's own test only (tests/perf_gate_test.sh): the SiLU-only
     * control's work three more times, a 4x slowdown of a variant that no
     * default model runs. */
    volatile real plant_sink = 0;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++)
            for (int c = 0; c < w; c++) plant_sink += x[(size_t)i * s + c] * sigm(x[(size_t)i * s + c]);
#endif
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        for (int c = 0; c < w; c++) {
            real xv = x[(size_t)i * s + c];
            out[(size_t)i * s + c] = xv * sigm(xv);
        }
}

void silu_backward(real *dx, const real *dout, const real *x, int n, int w, int s) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        for (int c = 0; c < w; c++) {
            real xv = x[(size_t)i * s + c], sv = sigm(xv);
            dx[(size_t)i * s + c] += dout[(size_t)i * s + c] * sv * (1 + xv * (1 - sv));
        }
}

/* --------------------------------------------------------- cross-entropy */

double crossentropy_forward(real *probs, const real *logits, const int *targets, int n, int V) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const real *l = logits + (size_t)i * V;
        real *p = probs + (size_t)i * V;
        real mx = l[0];
        for (int c = 1; c < V; c++) mx = l[c] > mx ? l[c] : mx;
        real sum = 0;
        for (int c = 0; c < V; c++) sum += (p[c] = exp(l[c] - mx));
        real inv = 1 / sum;
        for (int c = 0; c < V; c++) p[c] *= inv;
    }
    double loss = 0;
    for (int i = 0; i < n; i++) {
        real pt = probs[(size_t)i * V + targets[i]];
        loss -= log(pt > (real)1e-30 ? (double)pt : 1e-30);
    }
    return loss / n;
}

void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int n, int V, real dloss) {
    real sc = dloss / n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        real *dl = dlogits + (size_t)i * V;
        const real *p = probs + (size_t)i * V;
        for (int c = 0; c < V; c++) dl[c] = p[c] * sc;
        dl[targets[i]] -= sc;
    }
}
