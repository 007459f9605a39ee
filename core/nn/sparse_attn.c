/*
 * sparse_attn.c — softmax attention over each query's selected keys
 * (sparse.h).  The selected keys are gathered: a row costs O(k d), so the
 * layer O(T k d), whatever T is.
 *
 * Forward, per (sequence b, head h, query t), n = |S_t|:
 *   s_i = scale q_t.k_{S_t[i]},  lse = log sum_i exp(s_i),  p_i = exp(s_i - lse),
 *   o_t = sum_i p_i v_{S_t[i]}.
 * Backward (selection constant), with D = dout_t.o_t:
 *   dp_i = dout_t.v_i,  ds_i = p_i (dp_i - D),
 *   dq_t += scale sum_i ds_i k_i,  dk_i += scale ds_i q_t,  dv_i += p_i dout_t.
 * Backward runs one (sequence, KV head) pair per iteration, its queries in
 * order t = 0..T-1 and its query heads in order, so every dk/dv sum has a
 * fixed order whatever the thread count.  Every dot product over a head is
 * dot8() (dots_t.h): a fixed, written-out order of 8 partial sums, so it
 * vectorises and gives the same bits on every machine.
 */
#include "nn/sparse.h"

#include "nn/dots_t.h"

#include <math.h>
#include <stdlib.h>

int sparse_attn_forward(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                        const int *sel, int kk, int B, int T, int H, int Hk, int d, real scale) {
    int grp = H / Hk, fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        real *p = malloc(sizeof(real) * (size_t)kk);
        if (!p) fail = 1;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            if (!p) continue;
            int b = r / T, t = r % T, nt = sparse_nsel(kk, t);
            const int *S = sel + (size_t)r * kk;
            for (int h = 0; h < H; h++) {
                const real *qt = q + (size_t)r * sq + (size_t)h * d;
                size_t koff = (size_t)(h / grp) * d;
                real mx = -INFINITY, sum = 0;
                for (int i = 0; i < nt; i++) {
                    p[i] = scale * dot8(qt, k + (size_t)(b * T + S[i]) * sk + koff, d);
                    mx = p[i] > mx ? p[i] : mx;
                }
                for (int i = 0; i < nt; i++) sum += (p[i] = exp(p[i] - mx));
                real *ot = o + ((size_t)r * H + h) * d;
                for (int c = 0; c < d; c++) ot[c] = 0;
                for (int i = 0; i < nt; i++) {
                    const real *vi = v + (size_t)(b * T + S[i]) * sv + koff;
                    real w = p[i] / sum;
#pragma omp simd
                    for (int c = 0; c < d; c++) ot[c] += w * vi[c];
                }
                lse[((size_t)b * H + h) * T + t] = mx + log(sum);
            }
        }
        free(p);
    }
    return fail ? -1 : 0;
}

/* One query head h of row r (b, t) over its n selected keys: dq, dk, dv +=. */
static void bwd_row(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse, const real *q,
                    int sq, const real *k, int sk, const real *v, int sv, const int *S, int n, int r, int b, int t,
                    int h, int T, int H, int d, size_t koff, real scale) {
    const real *qt = q + (size_t)r * sq + (size_t)h * d;
    const real *dot = dout + ((size_t)r * H + h) * d, *ot = o + ((size_t)r * H + h) * d;
    real *dqt = dq + (size_t)r * sq + (size_t)h * d;
    real L = lse[((size_t)b * H + h) * T + t], D = dot8(dot, ot, d);
    for (int i = 0; i < n; i++) {
        size_t js = (size_t)(b * T + S[i]);
        const real *ki = k + js * sk + koff;
        real pi = exp(scale * dot8(qt, ki, d) - L);
        real ds = pi * (dot8(dot, v + js * sv + koff, d) - D) * scale;
        real *dki = dk + js * sk + koff, *dvi = dv + js * sv + koff;
#pragma omp simd
        for (int c = 0; c < d; c++) {
            dqt[c] += ds * ki[c];
            dki[c] += ds * qt[c];
            dvi[c] += pi * dot[c];
        }
    }
}

int sparse_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                         const real *q, int sq, const real *k, int sk, const real *v, int sv, const int *sel, int kk,
                         int B, int T, int H, int Hk, int d, real scale) {
    int grp = H / Hk;
#pragma omp parallel for schedule(static)
    for (int bk = 0; bk < B * Hk; bk++) {
        int b = bk / Hk, kh = bk % Hk;
        size_t koff = (size_t)kh * d;
        for (int t = 0; t < T; t++) {
            int r = b * T + t, nt = sparse_nsel(kk, t);
            const int *S = sel + (size_t)r * kk;
            for (int h = kh * grp; h < (kh + 1) * grp; h++)
                bwd_row(dq, dk, dv, dout, o, lse, q, sq, k, sk, v, sv, S, nt, r, b, t, h, T, H, d, koff, scale);
        }
    }
    return 0;
}
