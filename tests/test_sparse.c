/*
 * test_sparse.c — top-k sparse attention in the float model (issue 37;
 * nn/sparse.h): every row of ATTN_SPARSES adds the parameters its table
 * says and leaves the dense tensors' start alone; with k >= T the model is
 * the dense one bit for bit; with k < T the step is bitwise the same at any
 * thread count and micro-batch split, and training lowers the loss.  (The
 * gradients: f64_sparse.c and f64_grad.c's model_fd.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/dp.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/rng.h"
#include "nn/sparse.h"
#include "nn/variant.h"
#include "run/config.h"
#include "run/infer.h"
#include "run/probes.h"
#include "testutil.h"

static Config sparse_config(int sparse, int k, int T) {
    Config c = tiny_config(64, 32, 2, 4, 2, 0, T, 4);
    c.attn.sparse = sparse;
    if (sparse != AS_NONE) c.attn.topk = k;
    if (attn_sparses[sparse].indexer) c.attn.idx_heads = 2, c.attn.idx_dim = 8;
    resolve_or_die(&c);
    return c;
}

static void batch(int *tok, int *tgt, int n, unsigned seed) {
    Rng r = rng_seed(seed);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64), tgt[i] = (tok[i] * 7 + 3) % 64;
}

/* The radix selection against brute force (check_topk_rows, testutil.c;
 * f64_sparse.c runs it on the double build's keys). */
Test(sparse_select, topk_keys_against_brute_force) { check_topk_rows(11); }

Test(sparse, rows_params_and_init) {
    Config cd = sparse_config(AS_NONE, 64, 16);
    Model md;
    cr_assert(cfg_model_init(&md, &cd) == 0);
    for (int s = 0; s < AS__COUNT; s++) {
        cr_expect_str_eq(attn_sparses[s].name, attn_sparse_names[s]);
        Config c = sparse_config(s, 4, 16);
        Model m;
        cr_assert(cfg_model_init(&m, &c) == 0);
        long per = attn_indexer_params(&c.attn, c.d_model);
        cr_expect_eq(per, attn_sparses[s].indexer ? (3 * 8 + 2) * 32 + 8 : 0, "%s", attn_sparse_names[s]);
        cr_expect_eq((long)(m.p.total - md.p.total), 2 * per, "%s", attn_sparse_names[s]);
        cr_expect_eq(model_indexer_params(&m), 2 * per, "%s", attn_sparse_names[s]);
        /* FLOPs per token at T 16, k 4: q.k and p.v over a mean of (1 + 2 + 3 + 13 x 4) / 16
         * keys instead of 17 / 2, plus the indexer's projection and scores, the oracle's q.k */
        double fd, td, fs, ts, nq = 4.0 * 8, want = 2 * 4 * nq * (58.0 / 16 - 8.5);
        model_flops(&md, 16, &fd, &td);
        model_flops(&m, 16, &fs, &ts);
        if (s == AS_INDEXER) want += 2 * (2.0 * 32 * (3 * 8 + 2) + (2.0 * 2 * 8 + 2 * 2) * 8.5);
        if (s == AS_ORACLE) want += 2 * 2 * nq * 8.5;
        cr_expect(fabs(fs - fd - (s ? want : 0)) < 1e-6 * fd, "%s: FLOPs %g vs dense %g (want %+g)",
                  attn_sparse_names[s], fs, fd, want);
        /* the dense tensors come first and start as the dense model's */
        cr_assert(memcmp(m.p.w, md.p.w, sizeof(real) * md.p.total) == 0, "%s: dense tensors start elsewhere",
                  attn_sparse_names[s]);
        model_free(&m);
    }
    model_free(&md);
}

/* Loss and gradients of one forward + backward (gradients into g). */
static double step_grads(Model *m, const int *tok, const int *tgt, int B, int T, real *g) {
    double l = model_forward(m, tok, tgt, B, T);
    model_zero_grad(m);
    cr_assert(isfinite(l) && model_backward(m, tok) == 0);
    memcpy(g, m->p.g, sizeof(real) * m->p.total);
    return l;
}

/* A model of row `sparse` at k (T tokens): its loss and gradients on the
 * batch into *g (malloc'd); the model is left for the caller to free. */
static double sparse_step(Model *m, int sparse, int k, int T, const int *tok, const int *tgt, real **g) {
    Config c = sparse_config(sparse, k, T);
    cr_assert(cfg_model_init(m, &c) == 0);
    cr_assert((*g = malloc(sizeof(real) * m->p.total)));
    return step_grads(m, tok, tgt, c.batch, T, *g);
}

Test(sparse, k_at_least_T_runs_dense_bitwise) {
    set_threads(2);
    enum { B = 4, T = 16 };
    int tok[B * T], tgt[B * T];
    batch(tok, tgt, B * T, 9);
    Model md, m;
    real *gd, *g;
    double ld = sparse_step(&md, AS_NONE, 64, T, tok, tgt, &gd);
    for (int s = AS_NONE + 1; s < AS__COUNT; s++) {
        const char *name = attn_sparse_names[s];
        for (int k = T; k <= T + 1; k++) {
            double l = sparse_step(&m, s, k, T, tok, tgt, &g);
            cr_assert(!attn_sparse_active(&m.cfg.attn, T) && !sparse_selection(&m, 0));
            cr_assert(memcmp(&l, &ld, sizeof l) == 0, "%s k %d: loss %.9g vs dense %.9g", name, k, l, ld);
            cr_assert(memcmp(g, gd, sizeof(real) * md.p.total) == 0, "%s k %d: gradients differ from dense", name, k);
            free(g);
            model_free(&m);
        }
        /* k < T: sparse, a different loss; the indexer learns from its KL
         * (the language-model loss gives it none: f64_sparse.c) */
        double l = sparse_step(&m, s, 3, T, tok, tgt, &g);
        cr_assert(sparse_selection(&m, 1) && l != ld, "%s: k 3 of 16 did not change the loss", name);
        int nz = 0;
        for (size_t i = md.p.total; i < m.p.total; i++) nz += g[i] != 0;
        cr_assert(nz > 0 || m.p.total == md.p.total, "%s: the indexer got no gradient from its KL", name);
        /* forced dense (the probes' sparse - dense gap): the dense model's loss bit for bit, then sparse again */
        sparse_force_dense(&m, 1);
        double lf = model_forward(&m, tok, tgt, B, T);
        cr_assert(memcmp(&lf, &ld, sizeof lf) == 0 && !sparse_selection(&m, 0), "%s: forced dense %.9g vs %.9g",
                  name, lf, ld);
        sparse_force_dense(&m, 0);
        double ls = model_forward(&m, tok, tgt, B, T);
        cr_assert(memcmp(&ls, &l, sizeof ls) == 0 && sparse_selection(&m, 0), "%s: sparse again", name);
        free(g);
        model_free(&m);
    }
    free(gd);
    model_free(&md);
}

/* 8 training steps of a sparse row at k 5 of T 24 (the indexer with a
 * warm-up of `warm` steps), a new batch each step if vary, else the same
 * one; losses into out, the indexer's KL into kl (with
 * one micro-batch: the master runs the backward). *frozen_ok: whether every
 * non-indexer weight still had its initial value after the warm-up. */
static void train8(int sparse, int threads, int mb, int warm, double *out, double *kl, int *frozen_ok, int vary) {
    set_threads(threads);
    Config c = tiny_config(64, 32, 2, 4, 2, 0, 24, 4);
    c.attn.sparse = sparse, c.attn.topk = 5;
    if (attn_sparses[sparse].indexer) c.attn.idx_heads = 2, c.attn.idx_dim = 8, c.attn.idx_warmup = warm;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    real *w0 = malloc(sizeof(real) * m.p.total);
    cr_assert(w0);
    memcpy(w0, m.p.w, sizeof(real) * m.p.total);
    size_t ndense = (size_t)m.p.t[m.lp[0].idx_w >= 0 ? m.lp[0].idx_w : m.p.n - 1].off;
    DataParallel dp;
    cr_assert(dp_init(&dp, &m, c.batch, mb) == 0);
    AdamW o = {1e-2, 0.9, 0.95, 1e-8, 0.1, 1.0};
    int n = c.batch * c.seq_len, *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n);
    cr_assert(tok && tgt);
    for (int step = 0; step < 8; step++) {
        batch(tok, tgt, n, 100 + (unsigned)(vary ? step : 0));
        sparse_set_step(&m, step + 1);
        int bad = 0;
        out[step] = dp_step(&dp, tok, tgt, c.seq_len, &bad);
        kl[step] = sparse_indexer_kl(&m);
        cr_assert(!bad && isfinite(out[step]));
        adamw_step(&m.p, &o, step + 1);
        if (step + 1 == warm) *frozen_ok = memcmp(m.p.w, w0, sizeof(real) * ndense) == 0;
    }
    if (warm) cr_assert(memcmp(m.p.w + ndense, w0 + ndense, sizeof(real) * (m.p.total - ndense)) != 0);
    free(tok), free(tgt), free(w0);
    dp_free(&dp);
    model_free(&m);
}

Test(sparse, bitwise_for_any_thread_count_and_split, .timeout = 240) {
    for (int s = AS_NONE + 1; s < AS__COUNT; s++) {
        double l1[8], l3[8], l2mb[8], l1mb[8], kl[8];
        int fz = 0, warm = attn_sparses[s].indexer ? 3 : 0;
        train8(s, 1, 4, warm, l1, kl, &fz, 1);
        train8(s, 3, 4, warm, l3, kl, &fz, 1);
        train8(s, 1, 2, warm, l1mb, kl, &fz, 1);
        train8(s, 2, 2, warm, l2mb, kl, &fz, 1);
        cr_assert(memcmp(l1, l3, sizeof l1) == 0, "%s: 1 vs 3 threads differ", attn_sparse_names[s]);
        cr_assert(memcmp(l1mb, l2mb, sizeof l1mb) == 0, "%s: micro-batches, 1 vs 2 threads differ",
                  attn_sparse_names[s]);
        cr_assert(l1[7] < l1[0] - 0.1, "%s: training did not lower the loss (%.4f -> %.4f)", attn_sparse_names[s],
                  l1[0], l1[7]);
    }
    set_threads(1);
}

/* The indexer's warm-up (DeepSeek's recipe): for its steps every other
 * tensor keeps its initial weights (frozen: no update, no decay), the
 * indexer's KL to the dense attention on a fixed batch falls at every
 * step while the language-model loss stays put; then the model trains. */
Test(sparse, indexer_warm_up_trains_only_the_indexer, .timeout = 120) {
    double l[8], kl[8];
    int fz = 0;
    train8(AS_INDEXER, 2, 4, 6, l, kl, &fz, 0);
    cr_assert(fz, "a non-indexer weight moved during the warm-up");
    for (int i = 0; i < 8; i++) cr_assert(isfinite(kl[i]) && kl[i] >= 0, "step %d: KL %g", i + 1, kl[i]);
    for (int i = 1; i < 6; i++) {
        cr_assert(kl[i] < kl[i - 1], "warm-up step %d: the KL did not fall (%.6f -> %.6f)", i + 1, kl[i - 1], kl[i]);
        cr_assert(memcmp(&l[i], &l[0], sizeof l[0]) == 0, "warm-up step %d: the LM loss moved", i + 1);
    }
    cr_assert(kl[5] < 0.9 * kl[0], "the warm-up did not lower the indexer's KL (%.5f -> %.5f)", kl[0], kl[5]);
    cr_assert(l[7] != l[0], "after the warm-up the model did not train");
}

/* Scaled scores s[u] = q_t.k_u / sqrt(d_head) of query head h, row t of
 * sequence b in layer l's last forward, for u = lo..t; returns their max. */
static double row_scores(const Model *m, int l, int b, int h, int t, int lo, double *s) {
    const LayerActs *a = &m->la[l];
    int T = m->T;
    double mx = -INFINITY;
    for (int u = lo; u <= t; u++) {
        double x = 0;
        for (int e = 0; e < m->dh; e++)
            x += (double)a->qr[(size_t)(b * T + t) * m->nq + h * m->dh + e] *
                 a->kr[(size_t)(b * T + u) * m->nkv + (h / (m->H / m->Hk)) * m->dh + e];
        s[u] = x / sqrt((double)m->dh);
        mx = s[u] > mx ? s[u] : mx;
    }
    return mx;
}

/* The probes of a sparse model (run/probes.h): sparse_recall against the
 * dense softmax computed here, sparse_p0 against the selections, and the
 * row probes reading the weights over S_t (rows sum to 1, no mass on 0
 * from a query whose window left it out); a dense model stores neither. */
Test(sparse, probes_recall_and_p0) {
    set_threads(1);
    enum { B = 2, T = 10, K = 3 };
    int tok[B * T], tgt[B * T];
    batch(tok, tgt, B * T, 4);
    for (int s = AS_NONE; s < AS__COUNT; s++) {
        Config c = sparse_config(s, K, T);
        Model m;
        cr_assert(cfg_model_init(&m, &c) == 0);
        Rng r = rng_seed(8);
        for (size_t j = 0; j < m.p.total; j++) m.p.w[j] += (real)(0.5 * rng_normal(&r)); /* peaked rows */
        cr_assert(isfinite(model_forward(&m, tok, tgt, B, T)));
        Probes p;
        cr_assert(probes_init(&p, &m) == 0);
        probes_accumulate(&p, &m);
        cr_assert(probes_rows_accumulate(&p, &m, NULL) == 0);
        const char *name = attn_sparse_names[s];
        if (s == AS_NONE) {
            cr_assert(isnan(probe_sparse_recall(&p, -1)) && isnan(probe_sparse_p0(&p, 0)), "dense: %s", name);
        }
        for (int l = 0; l < m.L && s != AS_NONE; l++) {
            double rec = 0, p0 = 0, rows = 0, mass0 = 0;
            for (int b = 0; b < B; b++)
                for (int t = 1; t < T; t++) {
                    if (t >= K) rows++, p0 += sparse_attends(&m, l, b, t, 0);
                    for (int h = 0; h < m.H; h++) {
                        double sc[T], sum = 0, in = 0, mx = row_scores(&m, l, b, h, t, 0, sc);
                        for (int u = 0; u <= t; u++) sum += (sc[u] = exp(sc[u] - mx));
                        for (int u = 0; u <= t; u++) in += sparse_attends(&m, l, b, t, u) ? sc[u] / sum : 0;
                        if (t >= K) rec += in / m.H;
                        mass0 += sparse_attends(&m, l, b, t, 0) ? sc[0] / sum / in : 0;
                    }
                }
            cr_assert(fabs(probe_sparse_recall(&p, l) - rec / rows) < 1e-4, "%s layer %d: recall %.6f, direct %.6f",
                      name, l, probe_sparse_recall(&p, l), rec / rows);
            cr_assert(rec / rows < 1 - 1e-3, "%s layer %d: nothing left out (%.6f)", name, l, rec / rows);
            cr_assert_eq(probe_sparse_p0(&p, l), p0 / rows, "%s layer %d", name, l);
            if (s == AS_WINDOW) cr_assert_eq(p0, 0, "window: key 0 is never among the last %d of t >= %d", K, K);
            double pm0 = 0;
            for (int h = 0; h < m.H; h++) {
                pm0 += probe_mass0(&p, l, h) / m.H;
                cr_assert(fabs(probe_mass_none(&p, l, h)) < 1e-5, "%s: rows over S_t sum to 1", name);
            }
            cr_assert(fabs(pm0 - mass0 / (B * (T - 1) * m.H)) < 1e-5, "%s layer %d: attn_mass0 %.6f, direct %.6f",
                      name, l, pm0, mass0 / (B * (T - 1) * m.H));
        }
        probes_free(&p);
        model_free(&m);
    }
}

enum { WB = 2, WT = 10, WK = 3 };

/* A window model at k WK of T WT on a batch of WB (seed bs), its weights
 * moved off init (peaked rows), one thread. */
static void window_model(Model *m, int *tok, int *tgt, unsigned bs) {
    set_threads(1);
    batch(tok, tgt, WB * WT, bs);
    Config c = sparse_config(AS_WINDOW, WK, WT);
    cr_assert(cfg_model_init(m, &c) == 0);
    Rng r = rng_seed(9);
    for (size_t j = 0; j < m->p.total; j++) m->p.w[j] += (real)(0.5 * rng_normal(&r));
}

/* gated eval's drop=entropy reads a sparse row as the softmax over S_t:
 * infer_attn_entropy against the entropy of the window's weights computed
 * here, and _rel divided by log of the keys attended to. */
Test(sparse, attention_entropy_over_the_selection) {
    enum { B = WB, T = WT, K = WK };
    int tok[B * T], tgt[B * T];
    Model m;
    window_model(&m, tok, tgt, 6);
    cr_assert(isfinite(model_forward(&m, tok, tgt, B, T)));
    for (int l = 0; l < m.L; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < m.H; h++)
                for (int i = 0; i < T; i++) {
                    int lo = i - K + 1 > 0 ? i - K + 1 : 0;
                    double s[T], z = 0, ent = 0, mx = row_scores(&m, l, b, h, i, lo, s);
                    for (int j = lo; j <= i; j++) z += exp(s[j] - mx);
                    for (int j = lo; j <= i; j++) {
                        double p = exp(s[j] - mx) / z;
                        ent -= p > 0 ? p * log(p) : 0;
                    }
                    double got = infer_attn_entropy(&m, l, b, h, i), rel = infer_attn_entropy_rel(&m, l, b, h, i);
                    cr_assert(fabs(got - ent) < 1e-4, "layer %d row %d head %d: entropy %.6f, over S_t %.6f", l, i, h,
                              got, ent);
                    int n = i - lo + 1;
                    cr_assert(fabs(rel - (n > 1 ? ent / log((double)n) : 0)) < 1e-4, "row %d: relative entropy", i);
                }
    model_free(&m);
}

/* gated eval's FLOPs saved by a dropped (token, head) pair count the keys
 * a sparse row attended to: min(k, i + 1), not i + 1. */
Test(sparse, dropped_pairs_save_the_selected_keys_flops) {
    enum { B = WB, T = WT, K = WK };
    int tok[B * T], tgt[B * T];
    Model m;
    window_model(&m, tok, tgt, 7);
    InferHook h;
    cr_assert_eq(infer_hook_init(&h, m.L), 0);
    double one[2] = {1, 1};
    h.sel = SEL_RANDOM, h.frac = one;
    model_set_linear_hook(&m, infer_hook, &h);
    cr_assert(isfinite(model_forward(&m, tok, tgt, B, T)));
    model_set_linear_hook(&m, NULL, NULL);
    double wo = 2.0 * m.L * B * T * m.H * m.dh * m.C, att = 0;
    for (int i = 0; i < T; i++) att += 2.0 * m.L * B * m.H * 2.0 * m.dh * (i + 1 < K ? i + 1 : K);
    cr_assert(fabs(h.flops_attn - wo - att) < 1e-6 * (wo + att), "FLOPs saved %g, want %g", h.flops_attn, wo + att);
    infer_hook_free(&h);
    model_free(&m);
}

/* The score backward from sparse.h's formulas, apart from the library's
 * code: every listed pair's dot products first (each summed over c
 * ascending), then dq, dw of each row over s ascending, and dk of each key
 * over t ascending, then the heads j. */
static void backward_reference(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                               const real *w, int B, int T, int HI, int dI) {
    real *X = malloc(sizeof(real) * (size_t)B * T * T * HI);
    cr_assert_not_null(X);
    for (int r = 0; r < B * T; r++)
        for (int s = 0; s <= r % T; s++)
            for (int j = 0; j < HI; j++) {
                real acc = 0;
                for (int c = 0; c < dI; c++)
                    acc += qi[((size_t)r * HI + j) * dI + c] * ki[((size_t)(r / T) * T + s) * dI + c];
                X[((size_t)r * T + s) * HI + j] = acc;
            }
    for (int r = 0; r < B * T; r++)
        for (int j = 0; j < HI; j++)
            for (int s = 0; s <= r % T; s++) {
                real g = dsc[(size_t)r * T + s], x = X[((size_t)r * T + s) * HI + j];
                if (g == 0 || !(x > 0)) continue;
                dw[(size_t)r * HI + j] += g * x;
                for (int c = 0; c < dI; c++)
                    dq[((size_t)r * HI + j) * dI + c] += g * w[(size_t)r * HI + j] * ki[((size_t)(r / T) * T + s) * dI + c];
            }
    for (int key = 0; key < B * T; key++)
        for (int t = key % T; t < T; t++) {
            size_t rt = (size_t)(key / T) * T + t;
            real g = dsc[rt * T + key % T];
            for (int j = 0; g != 0 && j < HI; j++) {
                if (!(X[(rt * T + key % T) * HI + j] > 0)) continue;
                for (int c = 0; c < dI; c++) dk[(size_t)key * dI + c] += g * w[rt * HI + j] * qi[(rt * HI + j) * dI + c];
            }
        }
    free(X);
}

/* indexer_scores_backward (nonzero lists made once, gathered keys, each dot
 * product made once) and its plain loops give the formulas' bits: rows with
 * a gradient at every key (the warm-up's KL), at a few (the KL over S_t),
 * at three quarters of them, and at none, a -0 and an infinity among the
 * gradients, at 1 and 2 threads. */
Test(sparse, indexer_backward_is_the_plain_loops_bitwise) {
    enum { B = 2, T = 40, HI = 3, dI = 12 };
    static real dsc[B * T * T], qi[B * T * HI * dI], ki[B * T * dI], w[B * T * HI];
    static real dq[2][B * T * HI * dI], dk[2][B * T * dI], dw[2][B * T * HI];
    Rng g = rng_seed(5);
    for (int i = 0; i < B * T * HI * dI; i++) qi[i] = (real)(2 * rng_uniform(&g) - 1);
    for (int i = 0; i < B * T * dI; i++) ki[i] = (real)(2 * rng_uniform(&g) - 1);
    for (int i = 0; i < B * T * HI; i++) w[i] = (real)(2 * rng_uniform(&g) - 1);
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T, keep = b == 0 && t < 15 ? t + 1 : b == 0 && t >= 30 ? 3 * (t + 1) / 4 : 4;
        if (b == 1 && t % 7 == 3) keep = 0;
        for (int s = 0; s <= t; s++)
            if (keep > t || rng_below(&g, (uint64_t)t + 1) < (uint64_t)keep) dsc[(size_t)r * T + s] = (real)rng_normal(&g);
    }
    dsc[(size_t)(T + 20) * T + 3] = -0.0, dsc[(size_t)(T + 21) * T + 5] = INFINITY;
    memset(dq[0], 0, sizeof dq[0]), memset(dk[0], 0, sizeof dk[0]), memset(dw[0], 0, sizeof dw[0]);
    backward_reference(dq[0], dk[0], dw[0], dsc, qi, ki, w, B, T, HI, dI);
    for (int run = 0; run < 3; run++) {
        int threads = run == 2 ? 2 : 1;
        set_threads(threads);
        memset(dq[1], 0, sizeof dq[1]), memset(dk[1], 0, sizeof dk[1]), memset(dw[1], 0, sizeof dw[1]);
        if (run == 0) indexer_scores_backward_plain(dq[1], dk[1], dw[1], dsc, qi, ki, w, B, T, HI, dI);
        else indexer_scores_backward(dq[1], dk[1], dw[1], dsc, qi, ki, w, B, T, HI, dI);
        const char *what = run == 0 ? "the plain loops" : "the fast backward";
        cr_assert(memcmp(dq[0], dq[1], sizeof dq[0]) == 0, "dq differs: %s, %d threads", what, threads);
        cr_assert(memcmp(dk[0], dk[1], sizeof dk[0]) == 0, "dk differs: %s, %d threads", what, threads);
        cr_assert(memcmp(dw[0], dw[1], sizeof dw[0]) == 0, "dw differs: %s, %d threads", what, threads);
    }
    set_threads(1);
}
