/*
 * test_kvcache.c — decoding one token at a time from the KV cache gives the
 * logits of the full forward at every position (heads: MHA, GQA, MQA, with
 * and without QK-norm, under every gate position and the controls; latent:
 * the absorbed path, with and without the RoPE key, under G1; top-k: each
 * selection, k 8 of up to 24 keys, the indexer under G1 too, each decoded
 * row's keys the forward's), and the cache holds the documented numbers per
 * token.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kvcache.h"
#include "nn/model.h"
#include "nn/rng.h"
#include "nn/sparse.h"
#include "nn/variant.h"
#include "testutil.h"

typedef struct {
    const char *what;
    int hk, qk, position, granularity, input, control, latent, d_R, sparse;
} Case;

/* The largest |logit difference| between decoding and the full forward
 * over T = 24 positions, and the largest |logit| (*scale); for a top-k
 * model, *apart: the largest difference from the same model run dense (so
 * a decode that ignored the selection would be seen). */
static double decode_vs_forward(const Case *k, double *scale, size_t *bytes, double *apart) {
    set_threads(1);
    Config c = tiny_config(64, 64, 2, 4, k->hk, 0, 24, 1);
    c.qk_norm = k->qk;
    c.gate.position = k->position, c.gate.granularity = k->granularity, c.gate.input = k->input;
    c.gate.control = k->control;
    if (k->latent) c.attn.kv = KV_LATENT, c.attn.d_c = 24, c.attn.d_R = k->d_R;
    if (k->sparse) c.attn.sparse = k->sparse, c.attn.topk = 8;
    if (k->sparse == AS_INDEXER) c.attn.idx_heads = 2, c.attn.idx_dim = 8;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    Rng r = rng_seed(21);
    for (int i = 0; i < m.p.n; i++)
        for (size_t j = 0; j < m.p.t[i].n; j++) {
            real *w = m.p.w + m.p.t[i].off + j;
            *w = m.p.t[i].decay ? (real)(0.15 * rng_normal(&r)) : *w + (real)(0.15 * rng_normal(&r));
        }
    int T = 24, tok[24];
    for (int i = 0; i < T; i++) tok[i] = (int)rng_below(&r, 64);
    cr_assert(isfinite(model_forward(&m, tok, NULL, 1, T)));
    KvCache kc;
    cr_assert(kvcache_init(&kc, &m, T) == 0, "%s", k->what);
    double worst = 0, big = 0;
    static real dec[24 * 64];
    int sel_rows = 0;
    for (int t = 0; t < T; t++) {
        const real *lg = kvcache_step(&kc, &m, tok[t]);
        cr_assert_not_null(lg);
        for (int l = 0; l < m.L && k->sparse; l++) { /* the keys decoding chose are the forward's */
            int n = 0, kk = m.cfg.attn.topk;
            const int *got = kvcache_selection(&kc, l, &n), *want = sparse_selection(&m, l);
            cr_assert_not_null(want, "%s: the forward ran sparse", k->what);
            cr_assert_eq(got == NULL, t + 1 <= kk, "%s: t %d layer %d: %s", k->what, t, l,
                         got ? "selected in a dense row" : "no selection in a sparse row");
            for (int i = 0; got && i < n; i++)
                cr_assert_eq(got[i], want[(size_t)t * kk + i], "%s: t %d layer %d key %d: decoded %d, forward %d",
                             k->what, t, l, i, got[i], want[(size_t)t * kk + i]);
            sel_rows += got != NULL;
        }
        memcpy(dec + (size_t)t * m.V, lg, sizeof(real) * m.V);
        for (int v = 0; v < m.V; v++) {
            double ref = m.logits[(size_t)t * m.V + v];
            worst = fmax(worst, fabs(lg[v] - ref));
            big = fmax(big, fabs(ref));
        }
    }
    cr_assert_eq(sel_rows, k->sparse ? m.L * (T - m.cfg.attn.topk) : 0, "%s: %d selections compared", k->what, sel_rows);
    *apart = 0;
    if (k->sparse) {
        sparse_force_dense(&m, 1);
        cr_assert(isfinite(model_forward(&m, tok, NULL, 1, T)));
        for (size_t i = 0; i < (size_t)T * m.V; i++) *apart = fmax(*apart, fabs(dec[i] - m.logits[i]));
    }
    errno = 0;
    cr_assert_null(kvcache_step(&kc, &m, tok[0]), "a full cache takes no more");
    cr_assert_eq(errno, ENOSPC);
    *bytes = kvcache_bytes_per_token(&kc, &m);
    kvcache_free(&kc);
    model_free(&m);
    *scale = big;
    return worst;
}

/* Within 1e-4 of the largest logit (float round-off; a wrong position,
 * head or cache slot moves logits by a sizeable fraction of their size). */
Test(kvcache, decoding_gives_the_forward_logits) {
    const Case cases[] = {
        {"MHA, QK-norm", 4, 1, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, 0},
        {"GQA 2, G2 value", 2, 1, GP_VALUE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, 0},
        {"MQA, G3 key headwise", 1, 1, GP_KEY, GG_HEADWISE, GI_HIDDEN, GC_NONE, 0, 0, 0},
        {"GQA 2, G4 query, no QK-norm", 2, 0, GP_QUERY, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, 0},
        {"MHA, G1 + rmsnorm control", 4, 1, GP_SDPA, GG_ELEMENTWISE, GI_HIDDEN, GC_RMSNORM, 0, 0, 0},
        {"MHA, G1 static headwise", 4, 1, GP_SDPA, GG_HEADWISE, GI_STATIC, GC_NONE, 0, 0, 0},
        {"GQA 2, G5 dense + silu control", 2, 1, GP_DENSE, GG_ELEMENTWISE, GI_HIDDEN, GC_SILU, 0, 0, 0},
        {"MLA", 4, 0, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 1, 8, 0},
        {"MLA without the RoPE key", 4, 0, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 1, 0, 0},
        {"MLA + G1 headwise", 4, 0, GP_SDPA, GG_HEADWISE, GI_HIDDEN, GC_NONE, 1, 8, 0},
        {"top-8 indexer", 4, 1, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, AS_INDEXER},
        {"top-8 indexer, GQA 2 + G1", 2, 1, GP_SDPA, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, AS_INDEXER},
        {"top-8 window", 4, 1, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, AS_WINDOW},
        {"top-8 random", 4, 1, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, AS_RANDOM},
        {"top-8 oracle, GQA 2", 2, 1, GP_NONE, GG_ELEMENTWISE, GI_HIDDEN, GC_NONE, 0, 0, AS_ORACLE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double scale, apart;
        size_t bytes;
        double diff = decode_vs_forward(&cases[i], &scale, &bytes, &apart);
        cr_log_info("%s: max |logit difference| %.3g, max |logit| %.3g, cache %zu bytes per token; from dense %.3g",
                    cases[i].what, diff, scale, bytes, apart);
        cr_assert_gt(scale, 0.5, "%s: logits too small (%g)", cases[i].what, scale);
        if (cases[i].sparse)
            cr_assert_gt(apart, 100 * diff, "%s: the selection barely matters (%.3g from dense)", cases[i].what, apart);
        cr_assert_lt(diff, 1e-4 * scale, "%s: decode vs forward max |diff| %.3g (max |logit| %.3g)", cases[i].what,
                     diff, scale);
        /* 2 layers: heads 2 x 2 n_kv_head d_head floats, latent 2 x (d_c + d_R), + 2 x d_I for the indexer */
        size_t want = cases[i].latent ? 2 * (24 + (size_t)cases[i].d_R) : 2 * 2 * (size_t)cases[i].hk * 16;
        if (cases[i].sparse == AS_INDEXER) want += 2 * 8;
        cr_assert_eq(bytes, want * sizeof(real), "%s: %zu bytes per token", cases[i].what, bytes);
    }
}

/* Normalisers other than softmax are refused (EINVAL), not decoded wrong. */
Test(kvcache, other_normalisers_refused) {
    Config c = tiny_config(64, 64, 1, 4, 4, 0, 8, 1);
    c.attn.normalizer = AN_SIGMOID;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    KvCache kc;
    errno = 0;
    cr_assert_eq(kvcache_init(&kc, &m, 8), -1);
    cr_assert_eq(errno, EINVAL);
    model_free(&m);
}
