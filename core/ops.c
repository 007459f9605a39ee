/*
 * ops.c — forward/backward of every non-gate operation (see ops.h).
 *
 * The attention kernel here is the row-wise "recompute" form: forward keeps
 * only the log-sum-exp of each row, backward recomputes probabilities.  It
 * never holds more than one T-long row per thread.  Work is split over
 * (batch, kv-head) so that the heads sharing a kv head, which all add into
 * the same dk/dv rows, run in one thread in a fixed order.
 */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- linear */

void linear_forward(real *y, int ldy, const real *x, int ldx, const real *W, int n, int N, int K, real beta) {
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, N, K, 1, x, ldx, W, K, beta, y, ldy);
}

void linear_backward(real *dx, int ldx, real *dW, const real *dy, int ldy, const real *x, const real *W, int n,
                     int N, int K) {
    if (dx) cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, K, N, 1, dy, ldy, W, K, 1, dx, ldx);
    if (dW) cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, n, 1, dy, ldy, x, ldx, 1, dW, K);
}

/* --------------------------------------------------------------- rmsnorm */

void rmsnorm_forward(real *out, int so, real *rstd, const real *x, int s, const real *w, int n, int g, int d,
                     real eps) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < g; j++) {
            const real *xr = x + (size_t)i * s + (size_t)j * d;
            real *or_ = out + (size_t)i * so + (size_t)j * d;
            real ss = 0;
            for (int c = 0; c < d; c++) ss += xr[c] * xr[c];
            real r = 1 / sqrt(ss / d + eps);
            rstd[(size_t)i * g + j] = r;
            for (int c = 0; c < d; c++) or_[c] = xr[c] * r * w[c];
        }
    }
}

void rmsnorm_backward(real *dx, int sdx, real *dw, const real *dout, int sdo, const real *x, int s,
                      const real *w, const real *rstd, int n, int g, int d) {
    /* dx rows are independent; dw is a sum over rows, kept serial so its
     * order (and result) is fixed. */
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

void rope_tables(real *cos_t, real *sin_t, int T, int d, double base) {
    int half = d / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            /* angles in double: positions up to 1M would lose digits in float */
            double inv = pow(base, -2.0 * i / d);
            double a = t * inv;
            cos_t[(size_t)t * half + i] = (real)cos(a);
            sin_t[(size_t)t * half + i] = (real)sin(a);
        }
}

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

static inline real dotp(const real *a, const real *b, int d) {
    real s = 0;
    for (int i = 0; i < d; i++) s += a[i] * b[i];
    return s;
}

void attention_forward(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                       int B, int T, int H, int Hk, int d, real scale) {
    int grp = H / Hk;
#pragma omp parallel
    {
        real *row = malloc(sizeof(real) * (size_t)T);
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                if (!row) continue;
                int kh = h / grp;
                for (int i = 0; i < T; i++) {
                    const real *qi = q + (size_t)(b * T + i) * sq + (size_t)h * d;
                    real mx = -INFINITY;
                    for (int j = 0; j <= i; j++) {
                        row[j] = scale * dotp(qi, k + (size_t)(b * T + j) * sk + (size_t)kh * d, d);
                        if (row[j] > mx) mx = row[j];
                    }
                    real sum = 0;
                    for (int j = 0; j <= i; j++) sum += (row[j] = exp(row[j] - mx));
                    real *oi = o + ((size_t)(b * T + i) * H + h) * d;
                    for (int c = 0; c < d; c++) oi[c] = 0;
                    real inv = 1 / sum;
                    for (int j = 0; j <= i; j++) {
                        const real *vj = v + (size_t)(b * T + j) * sv + (size_t)kh * d;
                        real p = row[j] * inv;
                        for (int c = 0; c < d; c++) oi[c] += p * vj[c];
                    }
                    lse[((size_t)b * H + h) * T + i] = mx + log(sum);
                }
            }
        free(row);
    }
}

void attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                        const real *q, int sq, const real *k, int sk, const real *v, int sv, int B, int T, int H,
                        int Hk, int d, real scale) {
    int grp = H / Hk;
#pragma omp parallel for schedule(static) collapse(2)
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < Hk; kh++) {
            for (int h = kh * grp; h < (kh + 1) * grp; h++) {
                for (int i = 0; i < T; i++) {
                    const real *qi = q + (size_t)(b * T + i) * sq + (size_t)h * d;
                    const real *doi = dout + ((size_t)(b * T + i) * H + h) * d;
                    const real *oi = o + ((size_t)(b * T + i) * H + h) * d;
                    real *dqi = dq + (size_t)(b * T + i) * sq + (size_t)h * d;
                    real l = lse[((size_t)b * H + h) * T + i];
                    real D = dotp(doi, oi, d);
                    for (int j = 0; j <= i; j++) {
                        const real *kj = k + (size_t)(b * T + j) * sk + (size_t)kh * d;
                        const real *vj = v + (size_t)(b * T + j) * sv + (size_t)kh * d;
                        real p = exp(scale * dotp(qi, kj, d) - l);
                        real dp = dotp(doi, vj, d);
                        real ds = p * (dp - D) * scale;
                        real *dkj = dk + (size_t)(b * T + j) * sk + (size_t)kh * d;
                        real *dvj = dv + (size_t)(b * T + j) * sv + (size_t)kh * d;
                        for (int c = 0; c < d; c++) {
                            dqi[c] += ds * kj[c];
                            dkj[c] += ds * qi[c];
                            dvj[c] += p * doi[c];
                        }
                    }
                }
            }
        }
}

void attention_forward_ref(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                           int sv, int B, int T, int H, int Hk, int d, real scale) {
    int grp = H / Hk;
    real *p = malloc(sizeof(real) * (size_t)T * T);
    if (!p) abort(); /* test-only path */
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
