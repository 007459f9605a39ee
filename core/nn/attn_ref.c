/*
 * attn_ref.c — the plain attention reference (attn.h): every normaliser of
 * ATTN_NORMALIZERS written as its formula, one row at a time, with the
 * probabilities materialised.  For tests and probes: the kernel (attn.c,
 * attn_norm.h) is checked against it.
 */
#include "nn/attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/variant.h"

static inline real dotp(const real *a, const real *b, int d) {
    real s = 0;
    for (int i = 0; i < d; i++) s += a[i] * b[i];
    return s;
}

/* Weights p[0..n) of one row from its scores s[0..n) (the keys it sees);
 * z is the virtual key's logit where the row has one. */
static void ref_row(real *p, const real *s, int n, int kind, real z) {
    const AttnNormDef *r = &attn_norms[kind];
    real mx = r->vkey ? z : -INFINITY, sum = 0;
    switch (r->family) {
    case AF_SIGMOID: /* Ramapuram et al.: sigmoid(s - log n) */
        for (int j = 0; j < n; j++) p[j] = 1 / (1 + exp(-(s[j] - log((real)n))));
        return;
    case AF_SOFTPICK: /* Zuhri et al.: relu(e^s - 1) / (sum |e^s - 1| + eps), shifted by M = max(0, max s) */
        mx = 0;
        for (int j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
        for (int j = 0; j < n; j++) {
            p[j] = exp(s[j] - mx) - exp(-mx);
            sum += fabs(p[j]);
        }
        sum += (real)ATTN_SOFTPICK_EPS * exp(-mx);
        for (int j = 0; j < n; j++) p[j] = (p[j] > 0 ? p[j] : 0) / sum;
        return;
    default: /* softmax; with a virtual key of logit z and value 0 (softmax1, sink_logit, kv_bias) */
        for (int j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
        for (int j = 0; j < n; j++) sum += (p[j] = exp(s[j] - mx));
        if (r->vkey) sum += exp(z - mx);
        for (int j = 0; j < n; j++) p[j] /= sum;
        return;
    }
}

int attention_forward_ref_norm(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                               int sv, int B, int T, int H, int Hk, int d, real scale, const AttnNorm *nm) {
    int grp = H / Hk, kind = nm ? nm->kind : AN_SOFTMAX;
    const real *z = attn_norms[kind].vkey ? nm->z : NULL;
    real *p = malloc(sizeof(real) * (size_t)T * T), *s = malloc(sizeof(real) * (size_t)T);
    if (!p || !s) {
        free(p);
        free(s);
        return -1;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kh = h / grp;
            for (int i = 0; i < T; i++) {
                real *pi = p + (size_t)i * T;
                for (int j = 0; j <= i; j++)
                    s[j] = scale * dotp(q + (size_t)(b * T + i) * sq + (size_t)h * d,
                                        k + (size_t)(b * T + j) * sk + (size_t)kh * d, d);
                ref_row(pi, s, i + 1, kind, z ? z[((size_t)b * H + h) * T + i] : 0);
                for (int j = i + 1; j < T; j++) pi[j] = 0;
                if (!o) continue;
                real *oi = o + ((size_t)(b * T + i) * H + h) * d;
                for (int c = 0; c < d; c++) {
                    real acc = 0;
                    for (int j = 0; j < T; j++) acc += pi[j] * v[(size_t)(b * T + j) * sv + (size_t)kh * d + c];
                    oi[c] = acc;
                }
            }
            if (probs) memcpy(probs + ((size_t)b * H + h) * T * T, p, sizeof(real) * (size_t)T * T);
        }
    free(p);
    free(s);
    return 0;
}

int attention_forward_ref(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                          int sv, int B, int T, int H, int Hk, int d, real scale) {
    return attention_forward_ref_norm(o, probs, q, sq, k, sk, v, sv, B, T, H, Hk, d, scale, NULL);
}
