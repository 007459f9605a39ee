/*
 * test_mla.c — multi-head latent attention (model.attention.kv latent) in
 * float: the absorbed inference path gives the training path's logits, the
 * latent parameters are real parameters (gradients, optimizer, sizes), and
 * losses are bitwise the same at any thread count.  Gradients are checked
 * by finite differences in tests/f64_grad.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/optim.h"
#include "nn/rng.h"
#include "nn/variant.h"
#include "testutil.h"

/* V 64, d_model 64, 2 layers, 4 heads of 16, T 32, batch 2. */
static Config mla_config(int d_c, int d_R, GateCfg g) {
    Config c = tiny_config(64, 64, 2, 4, 4, 0, 32, 2);
    c.qk_norm = 0;
    c.gate = g;
    c.attn.kv = KV_LATENT, c.attn.d_c = d_c, c.attn.d_R = d_R;
    resolve_or_die(&c);
    return c;
}

/* Weights N(0, 0.15) (norm weights 1 + N(0, 0.15)): large enough that
 * attention is far from uniform and every head matters. */
static void spread_weights(Model *m, uint64_t seed) {
    Rng r = rng_seed(seed);
    for (int i = 0; i < m->p.n; i++)
        for (size_t j = 0; j < m->p.t[i].n; j++) {
            real *w = m->p.w + m->p.t[i].off + j;
            *w = m->p.t[i].decay ? (real)(0.15 * rng_normal(&r)) : *w + (real)(0.15 * rng_normal(&r));
        }
}

/* The largest |logit difference| between the absorbed and the training
 * path, and the largest |logit| (*scale). */
static double absorbed_vs_training(const Config *c, double *scale) {
    set_threads(1);
    Model m;
    cr_assert(cfg_model_init(&m, c) == 0);
    spread_weights(&m, 9);
    int B = 2, T = 32, n = B * T, tok[64];
    Rng r = rng_seed(4);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64);
    size_t nl = (size_t)n * m.V;
    real *ref = malloc(sizeof(real) * nl);
    cr_assert(ref);
    cr_assert(isfinite(model_forward(&m, tok, NULL, B, T)));
    memcpy(ref, m.logits, sizeof(real) * nl);
    m.kv_absorbed = 1;
    cr_assert(isfinite(model_forward(&m, tok, NULL, B, T)));
    double worst = 0, big = 0;
    for (size_t i = 0; i < nl; i++) {
        worst = fmax(worst, fabs((double)m.logits[i] - ref[i]));
        big = fmax(big, fabs((double)ref[i]));
    }
    free(ref);
    model_free(&m);
    *scale = big;
    return worst;
}

/* The absorbed path (W_UK into the query, attention over the cached
 * latent, W_UV after it) gives the training path's logits within float
 * round-off: at most 1e-4 of the largest logit.  A wrong head, scale or
 * RoPE part moves logits by a sizeable fraction of their size. */
Test(mla, absorbed_path_gives_the_training_logits) {
    GateCfg none = gate_default(), g1 = none, g1h = none;
    g1.position = g1h.position = GP_SDPA;
    g1h.granularity = GG_HEADWISE;
    const struct {
        int d_c, d_R;
        GateCfg g;
        const char *what;
    } cases[] = {{32, 8, none, "MLA"}, {32, 0, none, "MLA without the RoPE key"}, {24, 16, g1, "MLA + G1"},
                 {32, 8, g1h, "MLA + G1 headwise"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Config c = mla_config(cases[i].d_c, cases[i].d_R, cases[i].g);
        double scale, diff = absorbed_vs_training(&c, &scale);
        cr_log_info("%s: max |logit difference| %.3g, max |logit| %.3g", cases[i].what, diff, scale);
        cr_assert_gt(scale, 0.5, "%s: logits too small to tell paths apart (%g)", cases[i].what, scale);
        cr_assert_lt(diff, 1e-4 * scale, "%s: absorbed vs training max |diff| %.3g (max |logit| %.3g)", cases[i].what,
                     diff, scale);
    }
}

/* The latent tensors are model parameters: declared with their shapes
 * (the KV cache d_c + d_R per token), given gradients by backward and moved
 * by the optimizer. */
Test(mla, latent_parameters_train) {
    set_threads(1);
    Config c = mla_config(24, 8, gate_default());
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    cr_assert_eq(attn_kv_cache(&c.attn, c.n_kv_head, c.d_head), 32);
    const struct {
        const char *name;
        int d0, d1;
    } want[] = {{"l1.wq", 4 * (16 + 8), 64}, {"l1.w_dkv", 24, 64}, {"l1.w_kr", 8, 64},
                {"l1.kv_norm", 24, 0},       {"l1.w_uk", 64, 24},  {"l1.w_uv", 64, 24}};
    size_t want_n[6] = {0};
    for (size_t k = 0; k < 6; k++) {
        int found = -1;
        for (int i = 0; i < m.p.n; i++)
            if (strcmp(m.p.t[i].name, want[k].name) == 0) found = i;
        cr_assert_geq(found, 0, "no tensor %s", want[k].name);
        const Tensor *t = &m.p.t[found];
        cr_assert_eq(t->shape[0], want[k].d0, "%s", want[k].name);
        if (want[k].d1) cr_assert_eq(t->shape[1], want[k].d1, "%s", want[k].name);
        want_n[k] = (size_t)found;
    }
    spread_weights(&m, 2);
    int B = 2, T = 32, n = B * T, tok[64], tgt[64];
    Rng r = rng_seed(6);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64), tgt[i] = (int)rng_below(&r, 64);
    real *w0 = malloc(sizeof(real) * m.p.total);
    cr_assert(w0);
    memcpy(w0, m.p.w, sizeof(real) * m.p.total);
    cr_assert(isfinite(model_forward(&m, tok, tgt, B, T)));
    model_zero_grad(&m);
    cr_assert(model_backward(&m, tok) == 0);
    AdamW o = {1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0};
    for (size_t k = 0; k < 6; k++) {
        const Tensor *t = &m.p.t[want_n[k]];
        double g = 0;
        for (size_t j = 0; j < t->n; j++) g += fabs((double)m.p.g[t->off + j]);
        cr_assert_gt(g, 0, "%s has no gradient", t->name);
    }
    adamw_step(&m.p, &o, 1);
    for (size_t k = 0; k < 6; k++) {
        const Tensor *t = &m.p.t[want_n[k]];
        cr_assert(memcmp(m.p.w + t->off, w0 + t->off, sizeof(real) * t->n) != 0, "%s did not move", t->name);
    }
    free(w0);
    model_free(&m);
}

/* Loss and gradients bitwise the same at 1, 2 and 3 threads. */
Test(mla, bitwise_at_any_thread_count) {
    GateCfg g1 = gate_default();
    g1.position = GP_SDPA;
    Config c = mla_config(32, 8, g1);
    real *g[3] = {NULL, NULL, NULL};
    double loss[3];
    size_t total = 0;
    for (int t = 0; t < 3; t++) {
        set_threads(t + 1);
        Model m;
        cr_assert(cfg_model_init(&m, &c) == 0);
        spread_weights(&m, 3);
        int B = 2, T = 32, n = B * T, tok[64], tgt[64];
        Rng r = rng_seed(8);
        for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64), tgt[i] = (int)rng_below(&r, 64);
        loss[t] = model_forward(&m, tok, tgt, B, T);
        model_zero_grad(&m);
        cr_assert(model_backward(&m, tok) == 0);
        total = m.p.total;
        g[t] = malloc(sizeof(real) * total);
        cr_assert(g[t]);
        memcpy(g[t], m.p.g, sizeof(real) * total);
        model_free(&m);
    }
    set_threads(1);
    for (int t = 1; t < 3; t++) {
        cr_assert(memcmp(&loss[0], &loss[t], sizeof(double)) == 0, "loss %.17g vs %.17g (%d threads)", loss[0],
                  loss[t], t + 1);
        cr_assert(memcmp(g[0], g[t], sizeof(real) * total) == 0, "gradients differ at %d threads", t + 1);
    }
    for (int t = 0; t < 3; t++) free(g[t]);
}

/* Every KV name has a row and every row a name; the cache formulas give
 * 2 n_kv_head d_head (heads) and d_c + d_R (latent). */
Test(mla, kv_table_rows_and_cache_sizes) {
    int n = 0;
    while (attn_kv_names[n]) n++;
    cr_assert_eq(n, KV__COUNT);
    for (int i = 0; i < KV__COUNT; i++) {
        cr_assert_str_eq(attn_kvs[i].name, attn_kv_names[i]);
        cr_assert_not_null(attn_kvs[i].what);
    }
    AttnCfg a = attn_default();
    cr_assert_eq(attn_kv_cache(&a, 2, 32), 2 * 2 * 32);
    a.kv = KV_LATENT, a.d_c = 128, a.d_R = 16;
    cr_assert_eq(attn_kv_cache(&a, 4, 32), 144);
    a.d_c = 0, a.d_R = -1;
    attn_kv_resolve(&a, 32);
    cr_assert(a.d_c == 128 && a.d_R == 16, "resolved d_c %d d_R %d", a.d_c, a.d_R);
}
