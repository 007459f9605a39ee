/*
 * ops.c — forward/backward of every non-gate operation (see ops.h).
 *
 * Attention is tiled (flash-attention style): forward keeps only the
 * log-sum-exp of each row, backward recomputes probabilities tile by tile;
 * see the attention section for the kernel and its determinism argument.
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

/* ------------------------------------------------------------- attention */
/*
 * Tiled, flash-attention style kernels.  Each (batch, head) pair is cut into
 * BT x BT tiles of (query rows) x (keys); only tiles on or below the
 * diagonal are visited, and inside a diagonal tile each block of RI rows
 * stops at the last key it can see.
 *
 * Forward keeps, per query tile, a running max m, running sum l and an
 * unnormalised output accumulator (online softmax); each key tile costs
 * S = Q K^T, P = exp(scale S - m), O = alpha O + P V.  The score tile is
 * held transposed (keys down, queries across the vector lanes), so the row
 * max and sum are lane-wise and never need a horizontal reduction.
 * Backward recomputes P = exp(scale S - lse) tile by tile (queries down,
 * keys across) and accumulates dV += P^T dO, dQ += dS K, dK += dS^T Q with
 * dS = P (dO V^T - D) scale, D = rowsum(dO o).  Working memory per thread:
 * a few BT x BT tiles plus packed, zero-padded copies of the head's q/k/v/do
 * (T x d each), never the T x T probabilities.
 *
 * Every product is one micro-kernel, att_mk(): RI output rows x 1-2 vectors
 * of columns held in registers, a scalar of A broadcast against a vector
 * row of B, summed over the shared index in ascending order.  Vector lanes
 * are independent output elements, so no reduction is reassociated; the GNU
 * vector extension keeps the accumulators in registers and fp-contract
 * turns a*b+c into one FMA (only in this section).  On these tiles it runs
 * at about the speed of OpenBLAS's best sgemm kernel (7x its generic one)
 * and keeps BLAS out of the parallel regions.
 *
 * Work is split over (batch, head) in forward and (batch, kv head) in
 * backward -- the heads sharing a kv head add into the same dk/dv rows, so
 * one thread does them in a fixed order -- and tile sizes do not depend on
 * the thread count, so results are bitwise identical for any number of
 * threads.
 */

#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")

/* 512-bit vectors and 8-row register blocks where there are 32 vector
 * registers (AVX-512); 256-bit (AVX) or 128-bit vectors and 4 rows with 16. */
#if defined(__AVX512F__)
#define ATT_VBYTES 64
#define RI 8 /* output rows per register block: RI x 2 accumulators */
#elif defined(__AVX__)
#define ATT_VBYTES 32
#define RI 4
#else
#define ATT_VBYTES 16
#define RI 4
#endif
typedef real vreal __attribute__((vector_size(ATT_VBYTES)));
#define VL ((int)(ATT_VBYTES / sizeof(real))) /* lanes per vector */
#define BT 64                                 /* tile: query rows = keys; a multiple of VL and RI */

static inline vreal vld(const real *p) {
    vreal v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vst(real *p, vreal v) { memcpy(p, &v, sizeof v); }
static inline vreal vbc(real x) { return x - (vreal){0}; } /* broadcast (x - 0 == x, even for -0) */

#ifdef GATED_REAL_DOUBLE
typedef long long vmask __attribute__((vector_size(ATT_VBYTES)));
/* The double build only checks gradients: libm's exp, lane by lane. */
static inline vreal att_vexp(vreal x) {
    for (int l = 0; l < VL; l++) x[l] = exp(x[l]);
    return x;
}
#else
typedef int vmask __attribute__((vector_size(ATT_VBYTES)));
/* expf for x <= 88 (the softmax only feeds it x <= ~0), exactly 0 below
 * ln(FLT_MIN) and for -inf: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
 * Cephes' polynomial for e^r, then 2^n by the exponent bits: under 1 ulp
 * from the exact value on [-87.3, 1] (checked on every 16th float), in
 * plain arithmetic the compiler keeps in vectors. */
static inline vreal att_vexp(vreal x) {
    const float magic = 0x1.8p23f; /* adding it rounds to an integer, which lands in the low bits */
    vmask under = x < vbc(-87.33654f);
    x = (vreal)(((vmask)x & ~under) | ((vmask)vbc(-87.33654f) & under));
    vreal t = x * 1.44269504088896341f + magic, n = t - magic;
    vmask ni = (vmask)t - (vmask)vbc(magic);
    vreal r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vreal p = vbc(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    vreal two_n = (vreal)((ni + 127) << 23);
    return (vreal)((vmask)(p * two_n) & ~under);
}
#endif
static inline vreal vsel(vmask m, vreal a, vreal b) { return (vreal)(((vmask)a & m) | ((vmask)b & ~m)); }
static inline vreal vmax(vreal a, vreal b) { return vsel(a > b, a, b); }

/* C[r][x] (+)= sum over c0 <= c < c1 of A[r*ar + c*ac] * B[c*ldb + x] for
 * r < RI, x < NV*VL; c ascends, each lane is one output element. */
static inline __attribute__((always_inline)) void att_mk(real *restrict C, int ldc, const real *restrict A, int ar,
                                                         int ac, const real *restrict B, int ldb, int c0, int c1,
                                                         int acc, const int NV) {
    vreal s[RI][2];
#pragma GCC unroll 8
    for (int r = 0; r < RI; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) s[r][v] = acc ? vld(C + (size_t)r * ldc + v * VL) : (vreal){0};
    for (int c = c0; c < c1; c++) {
        vreal bv[2];
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) bv[v] = vld(B + (size_t)c * ldb + v * VL);
#pragma GCC unroll 8
        for (int r = 0; r < RI; r++) {
            vreal a = A[(size_t)r * ar + (size_t)c * ac] - (vreal){0}; /* broadcast */
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) s[r][v] += a * bv[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RI; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) vst(C + (size_t)r * ldc + v * VL, s[r][v]);
}

/* RI rows of C, nvec vectors wide (see att_mk). */
static void att_mm(real *C, int ldc, const real *A, int ar, int ac, const real *B, int ldb, int c0, int c1, int nvec,
                   int acc) {
    int v = 0;
    for (; v + 2 <= nvec; v += 2) att_mk(C + v * VL, ldc, A, ar, ac, B + v * VL, ldb, c0, c1, acc, 2);
    if (v < nvec) att_mk(C + v * VL, ldc, A, ar, ac, B + v * VL, ldb, c0, c1, acc, 1);
}

/* Vectors of keys a row block starting at row r0 needs in a tile (all of
 * them off the diagonal; up to its last row on it). */
static inline int att_nvec(int diag, int r0) { return diag ? (r0 + RI - 1) / VL + 1 : BT / VL; }

/* One 64-byte-aligned work area of n reals per thread that may run the
 * next parallel region, allocated before it (NULL when out of memory), so a
 * failure is reported before any thread starts. *stride gets each thread's
 * share, in reals. */
static real *att_alloc(size_t n, size_t *stride) {
    size_t per = (sizeof(real) * n + 63) / 64 * 64;
    /* inside an active region (a dp.c worker) the next one has one thread */
    size_t nth = omp_get_active_level() >= omp_get_max_active_levels() ? 1 : (size_t)omp_get_max_threads();
    *stride = per / sizeof(real);
    return aligned_alloc(64, per * (nth ? nth : 1));
}

/* Packed copies of a head's rows (token stride s, width d), zero-padded
 * to Tp rows: att_rows gives rows of width dp (row stride dp), att_cols the
 * transpose, d rows of Tp.  Loops here and below that GCC's -O2 cost model
 * would leave scalar (runtime trip counts) are written with vectors. */
static void att_rows(real *dst, int dp, int Tp, const real *src, size_t s, int T, int d) {
    int nv = d / VL;
    for (int i = 0; i < T; i++) {
        const real *x = src + (size_t)i * s;
        real *y = dst + (size_t)i * dp;
        for (int u = 0; u < nv; u++) vst(y + u * VL, vld(x + u * VL));
        for (int c = nv * VL; c < dp; c++) y[c] = c < d ? x[c] : 0;
    }
    for (int u = 0; u < (Tp - T) * dp / VL; u++) vst(dst + (size_t)T * dp + u * VL, (vreal){0});
}

static void att_cols_rect(real *dst, int Tp, const real *src, size_t s, int i0, int i1, int c0, int c1) {
    for (int i = i0; i < i1; i++)
        for (int c = c0; c < c1; c++) dst[(size_t)c * Tp + i] = src[(size_t)i * s + c];
}

/* 8 x 8 blocks, read as rows and written as columns (GCC turns a block
 * into vector loads and shuffles: 8x faster than element by element at
 * T 256, d 64, issue 26); a pure copy, so the bits cannot change. */
static void att_cols(real *dst, int Tp, const real *src, size_t s, int T, int d) {
    int ib = T / 8 * 8, cb = d / 8 * 8;
    for (int i = 0; i < ib; i += 8) {
        for (int c = 0; c < cb; c += 8) {
            real b[8][8];
            for (int r = 0; r < 8; r++) memcpy(b[r], src + (size_t)(i + r) * s + c, sizeof b[r]);
            for (int q = 0; q < 8; q++)
#pragma GCC unroll 8
                for (int r = 0; r < 8; r++) dst[(size_t)(c + q) * Tp + i + r] = b[r][q];
        }
        att_cols_rect(dst, Tp, src, s, i, i + 8, cb, d);
    }
    att_cols_rect(dst, Tp, src, s, ib, T, 0, d);
    for (int c = 0; c < d; c++)
        for (int i = T; i < Tp; i++) dst[(size_t)c * Tp + i] = 0;
}

/* y[0..n) *= a (n a multiple of VL); y[0..d) += x[0..d) (any d). */
static inline void att_scale(real *y, int n, real a) {
    for (int u = 0; u < n; u += VL) vst(y + u, vld(y + u) * a);
}
static inline void att_addrow(real *y, const real *x, int d) {
    int c = 0;
    for (; c + VL <= d; c += VL) vst(y + c, vld(y + c) + vld(x + c));
    for (; c < d; c++) y[c] += x[c];
}

/* D[i] = sum over c of x[i*s + c] y[i*s + c], c ascending; eight rows at a
 * time so their independent sums overlap. */
static void att_rowdot(real *D, const real *x, const real *y, size_t s, int T, int d) {
    int i = 0;
    for (; i + 8 <= T; i += 8) {
        real a[8] = {0};
        for (int c = 0; c < d; c++)
#pragma GCC unroll 8
            for (int l = 0; l < 8; l++) a[l] += x[(i + l) * s + c] * y[(i + l) * s + c];
        for (int l = 0; l < 8; l++) D[i + l] = a[l];
    }
    for (; i < T; i++) {
        real a = 0;
        for (int c = 0; c < d; c++) a += x[i * s + c] * y[i * s + c];
        D[i] = a;
    }
}

int attention_forward(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                      int B, int T, int H, int Hk, int d, real scale) {
    if (B <= 0 || T <= 0 || H <= 0 || d <= 0) return 0;
    int grp = H / Hk, nt = (T + BT - 1) / BT, Tp = nt * BT, dp = (d + VL - 1) / VL * VL, nvd = dp / VL;
    size_t szk = (size_t)Tp * dp;
    size_t ws = 2 * szk + (size_t)d * Tp + (size_t)BT * BT + (size_t)BT * dp + 3 * BT, wstride;
    real *work = att_alloc(ws, &wstride);
    if (!work) return -1;
#pragma omp parallel
    {
        real *w = work + (size_t)omp_get_thread_num() * wstride;
        real *Kp = w, *Vp = Kp + szk, *Qt = Vp + szk, *St = Qt + (size_t)d * Tp, *Oa = St + BT * BT;
        real *mrow = Oa + (size_t)BT * dp, *lrow = mrow + BT, *arow = lrow + BT;
        vmask iota;
        for (int l = 0; l < VL; l++) iota[l] = l;
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                int kh = h / grp;
                att_rows(Kp, dp, Tp, k + (size_t)b * T * sk + (size_t)kh * d, sk, T, d);
                att_rows(Vp, dp, Tp, v + (size_t)b * T * sv + (size_t)kh * d, sv, T, d);
                att_cols(Qt, Tp, q + (size_t)b * T * sq + (size_t)h * d, sq, T, d);
                for (int ti = 0; ti < nt; ti++) {
                    int i0 = ti * BT;
                    for (int r = 0; r < BT; r++) mrow[r] = -INFINITY, lrow[r] = 0;
                    memset(Oa, 0, sizeof(real) * BT * dp);
                    for (int tj = 0; tj <= ti; tj++) {
                        int j0 = tj * BT, diag = tj == ti;
                        /* St = K Q^T: row j of the key tile, queries in lanes */
                        for (int r0 = 0; r0 < BT; r0 += RI) {
                            int v0 = diag ? r0 / VL : 0; /* on the diagonal, key j only meets queries i >= j */
                            att_mm(St + r0 * BT + v0 * VL, BT, Kp + (size_t)(j0 + r0) * dp, dp, 1,
                                   Qt + i0 + v0 * VL, Tp, 0, d, BT / VL - v0, 0);
                        }
                        /* online softmax, one vector of queries at a time: max,
                         * exp and sum run down the keys, lane by lane */
                        for (int u = 0; u < BT / VL; u++) {
                            /* keys any of these queries sees, to the end of a row block */
                            int jn = diag ? ((u + 1) * VL + RI - 1) / RI * RI : BT;
                            if (jn > BT) jn = BT;
                            vmask iv = iota + u * VL;
                            vreal mo = vld(mrow + u * VL), m = mo, sum = {0};
                            for (int j = 0; j < jn; j++) {
                                real *sj = St + j * BT + u * VL;
                                vreal x = vld(sj) * scale;
                                if (diag) x = vsel(iv >= j, x, vbc(-INFINITY));
                                vst(sj, x);
                                m = vmax(m, x);
                            }
                            for (int j = 0; j < jn; j++) {
                                real *sj = St + j * BT + u * VL;
                                vreal p = att_vexp(vld(sj) - m);
                                vst(sj, p);
                                sum += p;
                            }
                            vreal alpha = att_vexp(mo - m); /* 0 on the first tile (mo = -inf) */
                            vst(lrow + u * VL, vld(lrow + u * VL) * alpha + sum);
                            vst(mrow + u * VL, m);
                            vst(arow + u * VL, alpha);
                        }
                        if (tj > 0)
                            for (int r = 0; r < BT; r++) {
                                if (arow[r] != 1) att_scale(Oa + r * dp, dp, arow[r]);
                            }
                        /* O += P V (P read transposed from St) */
                        for (int r0 = 0; r0 < BT; r0 += RI)
                            att_mm(Oa + r0 * dp, dp, St + r0, 1, BT, Vp + (size_t)j0 * dp, dp, 0,
                                   diag ? r0 + RI : BT, nvd, 1);
                    }
                    for (int r = 0; r < BT && i0 + r < T; r++) {
                        real *oi = o + ((size_t)(b * T + i0 + r) * H + h) * d, l = lrow[r];
                        const real *oa = Oa + r * dp;
                        int c = 0;
                        for (; c + VL <= d; c += VL) vst(oi + c, vld(oa + c) / l);
                        for (; c < d; c++) oi[c] = oa[c] / l;
                        lse[((size_t)b * H + h) * T + i0 + r] = mrow[r] + log(l);
                    }
                }
            }
    }
    free(work);
    return 0;
}

int attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                       const real *q, int sq, const real *k, int sk, const real *v, int sv, int B, int T, int H,
                       int Hk, int d, real scale) {
    if (B <= 0 || T <= 0 || H <= 0 || d <= 0) return 0;
    int grp = H / Hk, nt = (T + BT - 1) / BT, Tp = nt * BT, dp = (d + VL - 1) / VL * VL, nvd = dp / VL;
    size_t szq = (size_t)Tp * dp, szt = (size_t)d * Tp;
    size_t ws = 6 * szq + 2 * szt + 2 * (size_t)BT * BT + 2 * (size_t)Tp, wstride;
    real *work = att_alloc(ws, &wstride);
    if (!work) return -1;
#pragma omp parallel
    {
        real *w = work + (size_t)omp_get_thread_num() * wstride;
        real *Kp = w, *dKa = Kp + szq, *dVa = dKa + szq, *Qp = dVa + szq, *dOp = Qp + szq, *dQa = dOp + szq;
        real *Kt = dQa + szq, *Vt = Kt + szt, *P = Vt + szt, *dS = P + BT * BT, *L = dS + BT * BT, *D = L + Tp;
        vmask iota;
        for (int l = 0; l < VL; l++) iota[l] = l;
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kh = 0; kh < Hk; kh++) {
                const real *kb = k + (size_t)b * T * sk + (size_t)kh * d, *vb = v + (size_t)b * T * sv + (size_t)kh * d;
                att_rows(Kp, dp, Tp, kb, sk, T, d);
                att_cols(Kt, Tp, kb, sk, T, d);
                att_cols(Vt, Tp, vb, sv, T, d);
                memset(dKa, 0, sizeof(real) * szq);
                memset(dVa, 0, sizeof(real) * szq);
                for (int h = kh * grp; h < (kh + 1) * grp; h++) {
                    att_rows(Qp, dp, Tp, q + (size_t)b * T * sq + (size_t)h * d, sq, T, d);
                    att_rows(dOp, dp, Tp, dout + ((size_t)b * T * H + h) * d, (size_t)H * d, T, d);
                    memset(dQa, 0, sizeof(real) * szq);
                    att_rowdot(D, dout + ((size_t)b * T * H + h) * d, o + ((size_t)b * T * H + h) * d,
                               (size_t)H * d, T, d);
                    for (int i = 0; i < Tp; i++) {
                        if (i < T) L[i] = lse[((size_t)b * H + h) * T + i];
                        else D[i] = 0, L[i] = INFINITY; /* padding rows: P = 0 */
                    }
                    for (int ti = 0; ti < nt; ti++) {
                        int i0 = ti * BT;
                        for (int tj = 0; tj <= ti; tj++) {
                            int j0 = tj * BT, diag = tj == ti;
                            for (int r0 = 0; r0 < BT; r0 += RI) {
                                int nv = att_nvec(diag, r0);
                                /* S = Q K^T into P, dP = dO V^T into dS */
                                att_mm(P + r0 * BT, BT, Qp + (size_t)(i0 + r0) * dp, dp, 1, Kt + j0, Tp, 0, d, nv, 0);
                                att_mm(dS + r0 * BT, BT, dOp + (size_t)(i0 + r0) * dp, dp, 1, Vt + j0, Tp, 0, d, nv,
                                       0);
                            }
                            for (int r = 0; r < BT; r++) {
                                real *p = P + r * BT, *ds = dS + r * BT, l = L[i0 + r], Di = D[i0 + r];
                                int nv = att_nvec(diag, r / RI * RI), lim = diag ? r + 1 : BT;
                                for (int u = 0; u < nv; u++) {
                                    vreal pj = att_vexp(vld(p + u * VL) * scale - l);
                                    pj = vsel(iota + u * VL < lim, pj, (vreal){0});
                                    vst(p + u * VL, pj);
                                    vst(ds + u * VL, pj * (vld(ds + u * VL) - Di) * scale);
                                }
                            }
                            for (int r0 = 0; r0 < BT; r0 += RI) {
                                /* rows r0.. of the key tile: dV += P^T dO, dK += dS^T Q */
                                att_mm(dVa + (size_t)(j0 + r0) * dp, dp, P + r0, 1, BT, dOp + (size_t)i0 * dp, dp,
                                       diag ? r0 : 0, BT, nvd, 1);
                                att_mm(dKa + (size_t)(j0 + r0) * dp, dp, dS + r0, 1, BT, Qp + (size_t)i0 * dp, dp,
                                       diag ? r0 : 0, BT, nvd, 1);
                                /* rows r0.. of the query tile: dQ += dS K */
                                att_mm(dQa + (size_t)(i0 + r0) * dp, dp, dS + r0 * BT, BT, 1, Kp + (size_t)j0 * dp, dp,
                                       0, diag ? r0 + RI : BT, nvd, 1);
                            }
                        }
                    }
                    for (int i = 0; i < T; i++)
                        att_addrow(dq + (size_t)(b * T + i) * sq + (size_t)h * d, dQa + (size_t)i * dp, d);
                }
                for (int j = 0; j < T; j++) {
                    att_addrow(dk + (size_t)(b * T + j) * sk + (size_t)kh * d, dKa + (size_t)j * dp, d);
                    att_addrow(dv + (size_t)(b * T + j) * sv + (size_t)kh * d, dVa + (size_t)j * dp, d);
                }
            }
    }
    free(work);
    return 0;
}

#undef VL
#undef BT
#undef RI
#pragma GCC pop_options

static inline real dotp(const real *a, const real *b, int d) {
    real s = 0;
    for (int i = 0; i < d; i++) s += a[i] * b[i];
    return s;
}

int attention_forward_ref(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                          int sv, int B, int T, int H, int Hk, int d, real scale) {
    int grp = H / Hk;
    real *p = malloc(sizeof(real) * (size_t)T * T);
    if (!p) return -1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kh = h / grp;
            for (int i = 0; i < T; i++) {
                real mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    real sc = -INFINITY;
                    if (j <= i)
                        sc = scale * dotp(q + (size_t)(b * T + i) * sq + (size_t)h * d,
                                          k + (size_t)(b * T + j) * sk + (size_t)kh * d, d);
                    p[(size_t)i * T + j] = sc;
                    if (sc > mx) mx = sc;
                }
                real sum = 0;
                for (int j = 0; j < T; j++) sum += (p[(size_t)i * T + j] = j <= i ? exp(p[(size_t)i * T + j] - mx) : 0);
                for (int j = 0; j < T; j++) p[(size_t)i * T + j] /= sum;
                real *oi = o + ((size_t)(b * T + i) * H + h) * d;
                for (int c = 0; c < d; c++) {
                    real acc = 0;
                    for (int j = 0; j < T; j++) acc += p[(size_t)i * T + j] * v[(size_t)(b * T + j) * sv + (size_t)kh * d + c];
                    oi[c] = acc;
                }
            }
            if (probs) memcpy(probs + ((size_t)b * H + h) * T * T, p, sizeof(real) * (size_t)T * T);
        }
    free(p);
    return 0;
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
