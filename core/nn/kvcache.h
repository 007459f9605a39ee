/*
 * kvcache.h — decoding one token at a time from a KV cache.
 *
 * Each layer keeps, per token already seen, what later queries need:
 *   heads   the key (after QK-norm, a G3 gate and RoPE) and the value (after
 *           a G2 gate): 2 n_kv_head d_head numbers;
 *   latent  the latent c and the roped shared key k^R: d_c + d_R numbers,
 *           attended by the absorbed path (mla.h: W_UK in the query, W_UV
 *           after attention).
 * kvcache_step runs the whole model on one new token at the next position
 * and returns its logits; they equal model_forward's at that position up to
 * float round-off (tests/test_kvcache.c).  Softmax attention only (the
 * other normalisers are refused at kvcache_init).  Serial, one sequence.
 *
 * Top-k sparse attention (sparse.h) decodes over its selection alone
 * (kvcache_sparse.c): the indexer row also caches each token's indexer key
 * k_I (d_I numbers per layer, held transposed beside the slots) and scores
 * the new query against every cached one (the cost that grows with the context: H_I d_I a key, against
 * 2 n_head d_head for dense attention), then attends to the top k; window,
 * random and oracle select as in training (oracle from the dense weights,
 * so it saves nothing: a control).  The selections are the forward's up to
 * round-off in the one-token projections (kvcache_sparse.c).
 */
#ifndef GATED_KVCACHE_H
#define GATED_KVCACHE_H

#include <stddef.h>
#include "nn/model.h"

typedef struct {
    int cap, len; /* positions the cache holds, and holds now */
    int width;    /* numbers per token per layer (attn_kv_cache) */
    real *mem;    /* L x cap x width */
    real *cos_t, *sin_t, *cosR, *sinR; /* RoPE at positions < cap: d_head and (latent) d_R */
    real *buf;    /* per-step scratch */
    /* top-k sparse attention (kvcache_sparse.c; NULL/0 when dense) */
    real *ikT;         /* the indexer row's keys, transposed per layer: L x d_I x cap (key s, channel c
                          at c cap + s), so that scoring a query runs with lanes across keys */
    real *ik;          /* the new token's indexer key (d_I) */
    int *sel;          /* each layer's selection for the token decoded last (L x k) */
    int *seln;         /* its length per layer (L; 0: the layer attended to every key) */
    void *topk_scr;    /* sparse_topk_row's scratch for cap keys */
    real *iq, *iw, *iP; /* the indexer's q_I (H_I d_I), w (H_I) and projection */
    real *cosI, *sinI; /* the indexer's RoPE tables (cap, d_I / 2) */
} KvCache;

/* A cache of cap positions for m.  0; -1 with errno ENOMEM, or EINVAL when
 * m's normaliser is not softmax. */
int kvcache_init(KvCache *c, const Model *m, int cap);
void kvcache_free(KvCache *c);
/* Bytes the cache holds per token, all layers. */
size_t kvcache_bytes_per_token(const KvCache *c, const Model *m);
/* Run token at position c->len and append it: its logits (V values, valid
 * until the next call), or NULL when the cache is full (errno ENOSPC). */
const real *kvcache_step(KvCache *c, const Model *m, int token);
/* Layer l's keys for the token decoded last (a top-k model): *n positions,
 * ascending; NULL when the layer attended to every key (a dense row or
 * model). */
const int *kvcache_selection(const KvCache *c, int l, int *n);

#endif
