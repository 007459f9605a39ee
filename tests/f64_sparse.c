/*
 * f64_sparse.c — top-k sparse attention's pieces (nn/sparse.h) in double
 * precision: the attention over a selection against a masked dense
 * reference and its gradients against central differences; the lightning
 * indexer's gradients (weights, k-norm weight, input) against central
 * differences, checked away from the ReLU's kink; the selections (top-k
 * with ties, window, random) against brute force.  The whole model with
 * each sparse row: f64_grad.c's model_fd.
 *
 * Linked with build/libgated_f64.a, so `real` is double here.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/rng.h"
#include "nn/rope.h"
#include "nn/sparse.h"
#include "nn/variant.h"
#include "run/config.h"
#include "testutil.h"

_Static_assert(sizeof(real) == 8, "gradient checks need the double build");

#define FD_H 1e-5

/* Dense scores with every key outside S_t at -inf, then a softmax over all
 * T: another route to what sparse_attn_forward computes. */
static void masked_ref(real *o, const real *q, const real *k, const real *v, const int *sel, int kk, int B, int T,
                       int H, int Hk, int d) {
    int grp = H / Hk;
    real scale = 1 / sqrt((real)d), *s = malloc(sizeof(real) * T);
    cr_assert(s);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                const int *S = sel + ((size_t)b * T + t) * kk;
                real mx = -INFINITY, sum = 0;
                for (int u = 0; u < T; u++) {
                    int in = 0;
                    for (int i = 0; i < sparse_nsel(kk, t); i++) in |= S[i] == u;
                    real acc = 0;
                    for (int c = 0; c < d; c++)
                        acc += q[((size_t)(b * T + t) * H + h) * d + c] *
                               k[((size_t)(b * T + u) * Hk + h / grp) * d + c];
                    s[u] = in ? scale * acc : -INFINITY;
                    mx = s[u] > mx ? s[u] : mx;
                }
                for (int u = 0; u < T; u++) sum += (s[u] = exp(s[u] - mx));
                for (int c = 0; c < d; c++) {
                    real acc = 0;
                    for (int u = 0; u < T; u++) acc += s[u] / sum * v[((size_t)(b * T + u) * Hk + h / grp) * d + c];
                    o[((size_t)(b * T + t) * H + h) * d + c] = acc;
                }
            }
    free(s);
}

static double rdot(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Forward against the reference and backward against differences, for
 * one selection rule at k = 3 of T = 9 (rows 0..2 dense). */
static void attn_case(int rule) {
    enum { B = 2, T = 9, H = 4, Hk = 2, d = 4, KK = 3 };
    size_t nq = (size_t)B * T * H * d, nk = (size_t)B * T * Hk * d, nin = nq + 2 * nk;
    real x[B * T * (H + 2 * Hk) * d], dx[B * T * (H + 2 * Hk) * d], o[B * T * H * d], ref[B * T * H * d];
    real r[B * T * H * d], lse[B * H * T], sc[B * T * T];
    int sel[B * T * KK];
    Rng g = rng_seed(40 + (unsigned)rule);
    for (size_t i = 0; i < nin; i++) x[i] = (real)rng_normal(&g);
    for (size_t i = 0; i < nq; i++) r[i] = (real)rng_normal(&g);
    for (size_t i = 0; i < (size_t)B * T * T; i++) sc[i] = (real)rng_normal(&g);
    if (rule == AS_WINDOW)
        sparse_select_window(sel, B, T, KK);
    else if (rule == AS_RANDOM)
        sparse_select_random(sel, B, T, KK, 7, 3, 1);
    else
        cr_assert(sparse_select_topk(sel, sc, B, T, KK) == 0);
    const real *q = x, *k = x + nq, *v = x + nq + nk;
    real scale = 1 / sqrt((real)d);
    cr_assert(sparse_attn_forward(o, lse, q, H * d, k, Hk * d, v, Hk * d, sel, KK, B, T, H, Hk, d, scale) == 0);
    masked_ref(ref, q, k, v, sel, KK, B, T, H, Hk, d);
    Cmp cm = cmp_arrays(o, ref, nq, 1e-6);
    cr_assert(cm.max_abs < 1e-13, "%s: sparse vs masked reference: max abs %.3g", attn_sparse_names[rule], cm.max_abs);

    memset(dx, 0, sizeof dx);
    cr_assert(sparse_attn_backward(dx, dx + nq, dx + nq + nk, r, o, lse, q, H * d, k, Hk * d, v, Hk * d, sel, KK, B, T,
                                   H, Hk, d, scale) == 0);
    int bad = 0;
    for (size_t i = 0; i < nin; i++) {
        real keep = x[i];
        x[i] = keep + FD_H;
        sparse_attn_forward(o, lse, q, H * d, k, Hk * d, v, Hk * d, sel, KK, B, T, H, Hk, d, scale);
        double lp = rdot(r, o, nq);
        x[i] = keep - FD_H;
        sparse_attn_forward(o, lse, q, H * d, k, Hk * d, v, Hk * d, sel, KK, B, T, H, Hk, d, scale);
        double lm = rdot(r, o, nq), num = (lp - lm) / (2 * FD_H);
        x[i] = keep;
        if (fabs(dx[i] - num) > 1e-8 + 1e-6 * fabs(num)) {
            if (bad++ < 5)
                cr_log_error("%s: input %zu analytic %.10g numeric %.10g", attn_sparse_names[rule], i, dx[i], num);
        }
    }
    cr_assert_eq(bad, 0, "%s: %d gradient entries off", attn_sparse_names[rule], bad);
}

Test(sparse_fd, attention_over_each_selection) {
    set_threads(1);
    attn_case(AS_INDEXER); /* a top-k of scores */
    attn_case(AS_WINDOW);
    attn_case(AS_RANDOM);
}

/* The indexer from h to I: loss = sum_{s<=t} R(t,s) I(t,s); its gradient
 * in W, the k-norm weight and h against central differences.  The ReLU's
 * kink is avoided, not hoped away: the smallest |q_I . k_I| over the pairs
 * is asserted far above what a step of FD_H can move it. */
Test(sparse_fd, indexer) {
    set_threads(1);
    enum { B = 2, T = 6, C = 8, HI = 3, DI = 4, NP = HI * DI + DI + HI };
    real W[NP * C], knw[DI], h[B * T * C], R[B * T * T];
    real dW[NP * C] = {0}, dknw[DI] = {0}, dh[B * T * C] = {0}, cs[T * DI / 2], sn[T * DI / 2];
    Rng g = rng_seed(91);
    for (int i = 0; i < NP * C; i++) W[i] = (real)(0.5 * rng_normal(&g));
    for (int i = 0; i < DI; i++) knw[i] = (real)(1 + 0.3 * rng_normal(&g));
    for (int i = 0; i < B * T * C; i++) h[i] = (real)rng_normal(&g);
    for (int i = 0; i < B * T * T; i++) R[i] = (real)rng_normal(&g);
    RopeScaling rs = rope_plain(10000);
    cr_assert(rope_tables(cs, sn, T, DI, &rs) == 0);
    real *buf = malloc(sizeof(real) * indexer_acts_len(B, T, HI, DI));
    real *scr = malloc(sizeof(real) * indexer_scratch_len(B, T, HI, DI));
    cr_assert(buf && scr);
    IndexerActs a;
    indexer_acts_carve(&a, buf, B, T, HI, DI);
    indexer_forward(&a, W, knw, h, C, B, T, C, HI, DI, cs, sn, 1e-6);
    double margin = INFINITY;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int s = 0; s <= t; s++)
                for (int j = 0; j < HI; j++) {
                    double x = rdot(a.qr + ((size_t)(b * T + t) * HI + j) * DI, a.kr + (size_t)(b * T + s) * DI, DI);
                    margin = fabs(x) < margin ? fabs(x) : margin;
                }
    cr_assert_gt(margin, 1e-3, "a q_I.k_I pair sits at the ReLU's kink (%.3g): pick another seed", margin);
    /* R above the diagonal is ignored (I is 0 there) */
    indexer_backward(dW, dknw, dh, C, R, &a, W, knw, h, B, T, C, HI, DI, cs, sn, scr);
    real *xs[3] = {W, knw, h}, *ds[3] = {dW, dknw, dh};
    int ns[3] = {NP * C, DI, B * T * C}, bad = 0;
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < ns[p]; i++) {
            real keep = xs[p][i];
            double l[2];
            for (int u = 0; u < 2; u++) {
                xs[p][i] = keep + (u ? -FD_H : FD_H);
                indexer_forward(&a, W, knw, h, C, B, T, C, HI, DI, cs, sn, 1e-6);
                l[u] = 0;
                for (int r = 0; r < B * T; r++)
                    for (int s = 0; s <= r % T; s++) l[u] += R[(size_t)r * T + s] * a.sc[(size_t)r * T + s];
            }
            xs[p][i] = keep;
            double num = (l[0] - l[1]) / (2 * FD_H);
            if (fabs(ds[p][i] - num) > 1e-8 + 1e-6 * fabs(num) && bad++ < 5)
                cr_log_error("indexer input %d[%d]: analytic %.10g numeric %.10g", p, i, ds[p][i], num);
        }
    cr_assert_eq(bad, 0);
    free(buf), free(scr);
}

/* The radix selection of the double build (64-bit keys) against brute
 * force (check_topk_rows, testutil.c). */
Test(sparse_select, topk_keys_against_brute_force) { check_topk_rows(12); }

/* Top-k against brute force on rows full of ties (scores from 4 values):
 * the lower position wins, whatever the thread count. */
Test(sparse_select, topk_ties_lower_position_wins) {
    enum { B = 3, T = 40 };
    real sc[B * T * T];
    Rng g = rng_seed(5);
    for (int i = 0; i < B * T * T; i++) sc[i] = (real)rng_below(&g, 4);
    static const int ks[] = {1, 2, 5, 17, 39, 40, 64};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        int kk = ks[ki], *s1 = malloc(sizeof(int) * B * T * kk), *s4 = malloc(sizeof(int) * B * T * kk), want[T];
        cr_assert(s1 && s4);
        set_threads(1);
        cr_assert(sparse_select_topk(s1, sc, B, T, kk) == 0);
        set_threads(4);
        cr_assert(sparse_select_topk(s4, sc, B, T, kk) == 0);
        for (int r = 0; r < B * T; r++) {
            int t = r % T, nt = sparse_nsel(kk, t);
            brute_topk(want, sc + (size_t)r * T, t + 1, nt);
            cr_assert(memcmp(s1 + (size_t)r * kk, want, sizeof(int) * nt) == 0, "k %d row %d differs from brute force",
                      kk, r);
            cr_assert(memcmp(s4 + (size_t)r * kk, want, sizeof(int) * nt) == 0, "k %d row %d: 4 threads differ", kk, r);
            for (int i = nt; i < kk; i++) cr_assert_eq(s1[(size_t)r * kk + i], -1, "k %d row %d: tail not -1", kk, r);
        }
        free(s1), free(s4);
    }
    set_threads(1);
}

/* Window: the last k.  Random: k distinct keys <= t in increasing order,
 * the same for every sequence and for the same (seed, step, layer), other
 * sets for another step or layer. */
Test(sparse_select, window_and_random) {
    enum { B = 2, T = 50, KK = 8 };
    int w[B * T * KK], r1[B * T * KK], r2[B * T * KK], r3[B * T * KK], r4[B * T * KK];
    sparse_select_window(w, B, T, KK);
    sparse_select_random(r1, B, T, KK, 11, 5, 2);
    for (int r = 0; r < B * T; r++)
        for (int i = 0, t = r % T; i < sparse_nsel(KK, t); i++)
            cr_assert_eq(w[(size_t)r * KK + i], t - sparse_nsel(KK, t) + 1 + i);
    for (int r = 0; r < B * T; r++)
        for (int i = sparse_nsel(KK, r % T); i < KK; i++)
            cr_assert(w[(size_t)r * KK + i] == -1 && r1[(size_t)r * KK + i] == -1, "row %d: tail not -1", r);
    sparse_select_random(r2, B, T, KK, 11, 5, 2);
    sparse_select_random(r3, B, T, KK, 11, 6, 2);
    sparse_select_random(r4, B, T, KK, 11, 5, 3);
    int diff_step = 0, diff_layer = 0;
    for (int r = 0; r < B * T; r++) {
        int t = r % T, nt = sparse_nsel(KK, t);
        const int *s = r1 + (size_t)r * KK;
        for (int i = 0; i < nt; i++) {
            cr_assert(s[i] >= 0 && s[i] <= t && (i == 0 || s[i] > s[i - 1]),
                      "row %d: not distinct increasing keys <= t", r);
            cr_assert_eq(s[i], r2[(size_t)r * KK + i]);
            cr_assert_eq(s[i], r1[(size_t)t * KK + i], "sequences share the set");
        }
        diff_step |= memcmp(s, r3 + (size_t)r * KK, sizeof(int) * nt) != 0;
        diff_layer |= memcmp(s, r4 + (size_t)r * KK, sizeof(int) * nt) != 0;
    }
    cr_assert(diff_step && diff_layer);
}

/* The indexer's KL (indexer_kl.c): its gradient in I against central
 * differences of its value, over every key (the warm-up) and over a
 * selection; KL >= 0, and dI is 0 off the set. */
Test(sparse_fd, indexer_kl_gradient) {
    set_threads(1);
    enum { B = 2, T = 7, H = 4, Hk = 2, d = 4, KK = 3 };
    real q[B * T * H * d], k[B * T * Hk * d], isc[B * T * T], dI[B * T * T], tmp[B * T * T], sc[B * T * T];
    int sel[B * T * KK];
    Rng g = rng_seed(12);
    for (int i = 0; i < B * T * H * d; i++) q[i] = (real)rng_normal(&g);
    for (int i = 0; i < B * T * Hk * d; i++) k[i] = (real)rng_normal(&g);
    for (int i = 0; i < B * T * T; i++) isc[i] = (real)rng_normal(&g), sc[i] = (real)rng_normal(&g);
    cr_assert(sparse_select_topk(sel, sc, B, T, KK) == 0);
    real scale = 0.5, w = 0.25;
    for (int pass = 0; pass < 2; pass++) {
        const int *S = pass ? sel : NULL;
        double kl = indexer_kl(dI, isc, q, H * d, k, Hk * d, S, KK, B, T, H, Hk, d, scale, w);
        cr_assert(kl >= 0 && isfinite(kl));
        int bad = 0;
        for (int r = 0; r < B * T; r++)
            for (int s = 0; s < T; s++) {
                size_t i = (size_t)r * T + s;
                real keep = isc[i];
                isc[i] = keep + FD_H;
                double lp = indexer_kl(tmp, isc, q, H * d, k, Hk * d, S, KK, B, T, H, Hk, d, scale, w);
                isc[i] = keep - FD_H;
                double lm = indexer_kl(tmp, isc, q, H * d, k, Hk * d, S, KK, B, T, H, Hk, d, scale, w);
                isc[i] = keep;
                double num = w * (lp - lm) / (2 * FD_H);
                if (fabs(dI[i] - num) > 1e-9 + 1e-6 * fabs(num) && bad++ < 5)
                    cr_log_error("%s: dI[%d][%d] analytic %.10g numeric %.10g", pass ? "S_t" : "dense", r, s, dI[i],
                                 num);
            }
        cr_assert_eq(bad, 0);
    }
}

/* KL of the model's indexer at its current weights: forward, backward (which
 * computes it), the value; the selections must stay those of sel0. */
static double model_kl(Model *m, const int *tok, const int *tgt, int B, int T, const int *sel0, size_t nsel) {
    cr_assert(isfinite(model_forward(m, tok, tgt, B, T)));
    model_zero_grad(m);
    cr_assert(model_backward(m, tok) == 0);
    for (int l = 0; l < m->L && nsel; l++) {
        const int *s = sparse_selection(m, l);
        cr_assert(s && memcmp(s, sel0 + l * nsel, sizeof(int) * nsel) == 0, "a perturbation changed a selection");
    }
    return sparse_indexer_kl(m);
}

/* DeepSeek's recipe in the whole model: in the warm-up (step 1 of 3) the
 * model is dense, only the indexer gets a gradient, and it is the gradient
 * of the mean KL over every key; after it (step 0: sparse) the indexer's
 * gradient is the KL's over S_t (its input detached) and the other tensors
 * get the language-model loss's. */
Test(sparse_fd, model_indexer_learns_from_the_kl) {
    set_threads(1);
    Config c = tiny_config(11, 16, 2, 4, 2, 12, 6, 2);
    c.attn.sparse = AS_INDEXER, c.attn.topk = 2, c.attn.idx_heads = 2, c.attn.idx_dim = 4, c.attn.idx_warmup = 3;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    Rng r = rng_seed(321);
    for (size_t j = 0; j < m.p.total; j++) m.p.w[j] += (real)(0.3 * rng_normal(&r));
    int B = 2, T = 6, tok[12], tgt[12];
    for (int i = 0; i < B * T; i++) tok[i] = (int)rng_below(&r, 11), tgt[i] = (int)rng_below(&r, 11);
    real *ga = malloc(sizeof(real) * m.p.total);
    int *sel0 = malloc(sizeof(int) * (size_t)m.L * B * T * 2);
    cr_assert(ga && sel0);
    for (int phase = 0; phase < 2; phase++) {
        sparse_set_step(&m, phase == 0 ? 1 : 0);
        size_t nsel = phase ? (size_t)B * T * 2 : 0;
        double kl0 = model_kl(&m, tok, tgt, B, T, sel0, 0);
        cr_assert(kl0 > 0 && isfinite(kl0));
        cr_assert((sparse_selection(&m, 0) != NULL) == phase, "phase %d: sparse_selection", phase);
        for (int l = 0; l < m.L && nsel; l++) memcpy(sel0 + l * nsel, sparse_selection(&m, l), sizeof(int) * nsel);
        memcpy(ga, m.p.g, sizeof(real) * m.p.total);
        int bad = 0, nz = 0;
        for (int ti = 0; ti < m.p.n; ti++) {
            const Tensor *t = &m.p.t[ti];
            int own = strstr(t->name, ".indexer") != NULL;
            cr_assert_eq(t->frozen, phase == 0 && !own, "%s frozen", t->name);
            for (size_t j = 0; j < t->n; j++) nz += !own && ga[t->off + j] != 0;
            if (!own) continue;
            for (size_t s = 0; s < t->n; s += 1 + t->n / 40) {
                real *w = m.p.w + t->off + s, keep = *w;
                *w = keep + FD_H;
                double lp = model_kl(&m, tok, tgt, B, T, sel0, nsel);
                *w = keep - FD_H;
                double lm = model_kl(&m, tok, tgt, B, T, sel0, nsel);
                *w = keep;
                double num = (lp - lm) / (2 * FD_H), an = ga[t->off + s];
                if (fabs(an - num) > 1e-8 + 1e-5 * fabs(num) && bad++ < 5)
                    cr_log_error("phase %d %s[%zu]: analytic %.10g numeric %.10g", phase, t->name, s, an, num);
            }
        }
        cr_assert_eq(bad, 0, "phase %d: indexer gradients off", phase);
        if (phase == 0)
            cr_assert_eq(nz, 0, "warm-up: %d non-indexer gradients are not 0", nz);
        else
            cr_assert_gt(nz, 0, "sparse phase: the language-model loss gave no gradient");
    }
    free(ga), free(sel0);
    model_free(&m);
}
