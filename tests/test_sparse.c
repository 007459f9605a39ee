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
        /* k < T: sparse, a different loss, and the indexer gets no gradient
         * from the language-model loss (the selection is piecewise constant) */
        double l = sparse_step(&m, s, 3, T, tok, tgt, &g);
        cr_assert(sparse_selection(&m, 1) && l != ld, "%s: k 3 of 16 did not change the loss", name);
        for (size_t i = md.p.total; i < m.p.total; i++) cr_assert(g[i] == 0, "%s: indexer gradient", name);
        free(g);
        model_free(&m);
    }
    free(gd);
    model_free(&md);
}

/* 8 training steps of a sparse row at k 5 of T 24; losses into out. */
static void train8(int sparse, int threads, int mb, double *out) {
    set_threads(threads);
    Config c = sparse_config(sparse, 5, 24);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    DataParallel dp;
    cr_assert(dp_init(&dp, &m, c.batch, mb) == 0);
    AdamW o = {1e-2, 0.9, 0.95, 1e-8, 0.1, 1.0};
    int n = c.batch * c.seq_len, *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n);
    cr_assert(tok && tgt);
    for (int step = 0; step < 8; step++) {
        batch(tok, tgt, n, 100 + (unsigned)step);
        m.step = step + 1;
        int bad = 0;
        out[step] = dp_step(&dp, tok, tgt, c.seq_len, &bad);
        cr_assert(!bad && isfinite(out[step]));
        adamw_step(&m.p, &o, step + 1);
    }
    free(tok), free(tgt);
    dp_free(&dp);
    model_free(&m);
}

Test(sparse, bitwise_for_any_thread_count_and_split, .timeout = 240) {
    for (int s = AS_NONE + 1; s < AS__COUNT; s++) {
        double l1[8], l3[8], l2mb[8], l1mb[8];
        train8(s, 1, 4, l1);
        train8(s, 3, 4, l3);
        train8(s, 1, 2, l1mb);
        train8(s, 2, 2, l2mb);
        cr_assert(memcmp(l1, l3, sizeof l1) == 0, "%s: 1 vs 3 threads differ", attn_sparse_names[s]);
        cr_assert(memcmp(l1mb, l2mb, sizeof l1mb) == 0, "%s: micro-batches, 1 vs 2 threads differ",
                  attn_sparse_names[s]);
        cr_assert(l1[7] < l1[0] - 0.1, "%s: training did not lower the loss (%.4f -> %.4f)", attn_sparse_names[s],
                  l1[0], l1[7]);
    }
    set_threads(1);
}
