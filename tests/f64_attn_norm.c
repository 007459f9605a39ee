/*
 * f64_attn_norm.c — every attention normaliser (ATTN_NORMALIZERS,
 * modelcfg.h), in double precision: the tiled kernel's gradients (with the
 * virtual key's parameters, attn_virtual_backward) against central
 * differences of its forward, and its forward against the plain reference
 * attention_forward_ref_norm.  The rows are walked from the table, so a new
 * normaliser is checked without a new test.  (The whole model, each
 * normaliser with and without a G1 gate: f64_grad.c's model_fd.)
 *
 * Linked with build/libgated_f64.a, so `real` is double here.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/attn.h"
#include "nn/rng.h"
#include "nn/variant.h"
#include "testutil.h"

_Static_assert(sizeof(real) == 8, "gradient checks need the double build");

#define FD_H 1e-5

typedef struct {
    int kind, B, T, H, Hk, d;
    double amp; /* input amplitude: large scores make peaked rows whose max moves between key tiles */
} NCase;

/* x = [q (BT, H d) | k (BT, Hk d) | v (BT, Hk d) | sink (H) | kstar (Hk d)] */
static size_t nc_in(const NCase *c) {
    size_t n = (size_t)c->B * c->T;
    return n * (c->H + 2 * c->Hk) * c->d + c->H + (size_t)c->Hk * c->d;
}

typedef struct {
    const real *q, *k, *v, *sink, *kstar;
} Parts;

static Parts parts(const NCase *c, const real *x) {
    size_t n = (size_t)c->B * c->T;
    Parts p;
    p.q = x, p.k = p.q + n * c->H * c->d, p.v = p.k + n * c->Hk * c->d;
    p.sink = p.v + n * c->Hk * c->d, p.kstar = p.sink + c->H;
    return p;
}

/* o = attention with c's normaliser; z and lse (B H T) written. */
static void nc_forward(const NCase *c, const real *x, real *o, real *lse, real *z) {
    Parts p = parts(c, x);
    int sq = c->H * c->d, sk = c->Hk * c->d;
    real scale = 1 / sqrt((real)c->d);
    attn_virtual_logits(z, c->kind, p.sink, p.kstar, p.q, sq, c->B, c->T, c->H, c->Hk, c->d, scale);
    AttnNorm an = {c->kind, z};
    cr_assert(attention_forward_norm(o, lse, p.q, sq, p.k, sk, p.v, sk, c->B, c->T, c->H, c->Hk, c->d, scale, &an) ==
              0);
}

/* attn_weight from the kernel's saved statistic gives the reference's
 * probabilities (0 above the diagonal is the reference's). */
static void check_weights(const NCase *c, Parts p, const real *lse, const real *z) {
    int B = c->B, T = c->T, H = c->H, d = c->d, grp = c->H / c->Hk;
    real *probs = malloc(sizeof(real) * (size_t)B * H * T * T), *o = malloc(sizeof(real) * (size_t)B * T * H * d);
    cr_assert(probs && o);
    AttnNorm an = {c->kind, z};
    real scale = 1 / sqrt((real)d);
    cr_assert(attention_forward_ref_norm(o, probs, p.q, H * d, p.k, c->Hk * d, p.v, c->Hk * d, B, T, H, c->Hk, d,
                                         scale, &an) == 0);
    /* the weights alone (o NULL, the probes' path) are the same numbers */
    real *alone = malloc(sizeof(real) * (size_t)B * H * T * T);
    cr_assert(alone);
    cr_assert(attention_forward_ref_norm(NULL, alone, p.q, H * d, p.k, c->Hk * d, NULL, c->Hk * d, B, T, H, c->Hk, d,
                                         scale, &an) == 0);
    cr_assert(memcmp(alone, probs, sizeof(real) * (size_t)B * H * T * T) == 0, "%s: weights alone differ",
              attn_norms[c->kind].name);
    free(alone);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++) {
                    const real *qi = p.q + ((size_t)(b * T + i) * H + h) * d;
                    const real *kj = p.k + ((size_t)(b * T + j) * c->Hk + h / grp) * d;
                    double s = 0;
                    for (int u = 0; u < d; u++) s += qi[u] * kj[u];
                    size_t row = ((size_t)b * H + h) * T + i;
                    double w = attn_weight(c->kind, s * scale, lse[row]), want = probs[row * T + j];
                    cr_assert(fabs(w - want) < 1e-12, "%s: attn_weight(%d, %d) %.15g, reference %.15g",
                              attn_norms[c->kind].name, i, j, w, want);
                }
    free(probs), free(o);
}

static void check_case(const NCase *c) {
    size_t nin = nc_in(c), nout = (size_t)c->B * c->T * c->H * c->d, nl = (size_t)c->B * c->H * c->T;
    size_t n = (size_t)c->B * c->T;
    real *x = malloc(sizeof(real) * nin), *dx = calloc(nin, sizeof(real)), *o = malloc(sizeof(real) * nout);
    real *o2 = malloc(sizeof(real) * nout), *r = malloc(sizeof(real) * nout), *lse = malloc(sizeof(real) * nl);
    real *z = calloc(nl, sizeof(real)), *ref = malloc(sizeof(real) * nout);
    cr_assert(x && dx && o && o2 && r && lse && z && ref);
    Rng g = rng_seed(77 + (unsigned)c->kind * 13 + (unsigned)c->T);
    for (size_t i = 0; i < nin; i++) x[i] = (real)(c->amp * rng_normal(&g));
    for (size_t i = 0; i < nout; i++) r[i] = (real)rng_normal(&g);
    const char *name = attn_norms[c->kind].name;

    /* forward against the reference */
    nc_forward(c, x, o, lse, z);
    Parts p = parts(c, x);
    int sq = c->H * c->d, sk = c->Hk * c->d;
    real scale = 1 / sqrt((real)c->d);
    AttnNorm an = {c->kind, z};
    cr_assert(attention_forward_ref_norm(ref, NULL, p.q, sq, p.k, sk, p.v, sk, c->B, c->T, c->H, c->Hk, c->d, scale,
                                         &an) == 0);
    Cmp cm = cmp_arrays(o, ref, nout, 1e-6);
    cr_assert(cm.max_abs < 1e-12 * (1 + c->amp * c->amp), "%s T=%d: kernel vs reference max abs %.3g at %zu", name,
              c->T, cm.max_abs, cm.worst);
    check_weights(c, p, lse, z);

    /* backward: dx = J^T r through the kernel and the virtual key */
    Parts d = parts(c, dx);
    real *dq = dx, *dk = (real *)d.k, *dv = (real *)d.v, *dsink = (real *)d.sink, *dks = (real *)d.kstar;
    cr_assert(attention_backward_norm(dq, dk, dv, r, o, lse, p.q, sq, p.k, sk, p.v, sk, c->B, c->T, c->H, c->Hk, c->d,
                                      scale, &an) == 0);
    attn_virtual_backward(dq, dsink, dks, c->kind, z, lse, r, o, p.kstar, p.q, sq, c->B, c->T, c->H, c->Hk, c->d,
                          scale);
    int bad = 0;
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < nin; i++) {
        real keep = x[i];
        double lp = 0, lm = 0;
        x[i] = keep + FD_H;
        nc_forward(c, x, o2, lse, z);
        for (size_t j = 0; j < nout; j++) lp += r[j] * o2[j];
        x[i] = keep - FD_H;
        nc_forward(c, x, o2, lse, z);
        for (size_t j = 0; j < nout; j++) lm += r[j] * o2[j];
        x[i] = keep;
        double num = (lp - lm) / (2 * FD_H), err = fabs(num - dx[i]) / (1e-7 + 1e-5 * fabs(num));
        if (err > worst) worst = err, wi = i;
        bad += err > 1;
    }
    cr_assert(bad == 0, "%s B=%d T=%d H=%d Hk=%d d=%d: %d of %zu gradients off (worst index %zu, %.3g x tol; n=%zu)",
              name, c->B, c->T, c->H, c->Hk, c->d, bad, nin, wi, worst, n);
    free(x), free(dx), free(o), free(o2), free(r), free(lse), free(z), free(ref);
}

/* Small shapes (multi-head, GQA, ragged width), and a row longer than one
 * 64-key tile with peaked scores, for every normaliser. */
Test(attn_norm_fd, every_normalizer) {
    set_threads(1);
    for (int kind = 0; kind < AN__COUNT; kind++) {
        NCase cs[] = {{kind, 2, 4, 2, 2, 3, 1}, {kind, 1, 5, 4, 2, 2, 1}, {kind, 1, 7, 2, 1, 5, 1.5}};
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) check_case(&cs[i]);
    }
}

Test(attn_norm_fd, every_normalizer_across_key_tiles) {
    set_threads(1);
    for (int kind = 0; kind < AN__COUNT; kind++) {
        NCase c = {kind, 1, 70, 2, 1, 2, 2.5};
        check_case(&c);
    }
}
