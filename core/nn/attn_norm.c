/*
 * attn_norm.c — the virtual key of softmax1, sink_logit and kv_bias (attn.h):
 * its logit from the normaliser's parameters, and its gradient back into
 * them.  The kernel treats the key as the row's first (attn_norm.h); its
 * value is 0, so it adds nothing to o and needs no dV.
 *
 * The loops over a head's d channels are `omp simd` (vectorised at -O2):
 * the lanes' partial sums are combined in an order fixed by the build (the
 * vector width), never by the thread count, so results stay bitwise
 * reproducible for any number of threads.
 */
#include "nn/attn.h"

#include <math.h>

#include "nn/variant.h"

void attn_virtual_logits(real *z, int kind, const real *sink, const real *kstar, const real *q, int sq, int B,
                         int T, int H, int Hk, int d, real scale) {
    int vkey = attn_norms[kind].vkey, grp = H / Hk;
    if (vkey == AV_NONE) return;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            real *zr = z + ((size_t)b * H + h) * T;
            const real *ks = kstar ? kstar + (size_t)(h / grp) * d : NULL;
            for (int i = 0; i < T; i++) {
                real x = 0;
                if (vkey == AV_HEAD) x = sink[h];
                if (vkey == AV_KEY) {
                    const real *qi = q + (size_t)(b * T + i) * sq + (size_t)h * d;
#pragma omp simd reduction(+ : x)
                    for (int c = 0; c < d; c++) x += qi[c] * ks[c];
                    x *= scale;
                }
                zr[i] = x;
            }
        }
}

/* p* = exp(z - lse) is the virtual key's weight; its value is 0, so
 * dp* = 0 and dz = p* (dp* - D) = -p* D with D = dout . o (as for every
 * key of a softmax row: D = sum_j p_j dp_j). */
void attn_virtual_backward(real *dq, real *dsink, real *dkstar, int kind, const real *z, const real *lse,
                           const real *dout, const real *o, const real *kstar, const real *q, int sq, int B, int T,
                           int H, int Hk, int d, real scale) {
    int vkey = attn_norms[kind].vkey, grp = H / Hk;
    if (vkey != AV_HEAD && vkey != AV_KEY) return;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t row = ((size_t)b * H + h) * T;
            const real *ks = kstar ? kstar + (size_t)(h / grp) * d : NULL;
            real *dks = dkstar ? dkstar + (size_t)(h / grp) * d : NULL;
            for (int i = 0; i < T; i++) {
                size_t t = (size_t)(b * T + i) * H + h;
                const real *oi = o + t * d, *gi = dout + t * d;
                real D = 0;
#pragma omp simd reduction(+ : D)
                for (int c = 0; c < d; c++) D += gi[c] * oi[c];
                real dz = -exp(z[row + i] - lse[row + i]) * D;
                if (vkey == AV_HEAD) {
                    dsink[h] += dz;
                    continue;
                }
                real *dqi = dq + (size_t)(b * T + i) * sq + (size_t)h * d;
                const real *qi = q + (size_t)(b * T + i) * sq + (size_t)h * d;
#pragma omp simd
                for (int c = 0; c < d; c++) {
                    dqi[c] += dz * scale * ks[c];
                    dks[c] += dz * scale * qi[c];
                }
            }
        }
}

double attn_weight(int kind, double s, double lse) {
    switch (attn_norms[kind].family) {
    case AF_SIGMOID: return 1 / (1 + exp(-(s + lse)));
    case AF_SOFTPICK: return s > 0 ? exp(s - lse) - exp(-lse) : 0;
    default: return exp(s - lse);
    }
}
