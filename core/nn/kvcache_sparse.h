/*
 * kvcache_sparse.h — the KV cache's top-k selection (kvcache_sparse.c),
 * internal to kvcache.c.
 */
#ifndef GATED_KVCACHE_SPARSE_H
#define GATED_KVCACHE_SPARSE_H

#include "nn/kvcache.h"

/* Numbers a slot adds for the selection: d_I for the indexer row, else 0. */
int kvsparse_width(const Model *m);
/* The selection's buffers for a cache of cap positions (c->cap set; m's
 * layers).  0, or -1 (ENOMEM); kvsparse_free frees what was made. */
int kvsparse_init(KvCache *c, const Model *m, int cap);
void kvsparse_free(KvCache *c);
/* Layer l's keys for the query at position t: NULL when it attends to all
 * t + 1 (a dense row, or a dense model), else c->sel with *n positions
 * (ascending).  h: the layer's normed input (the indexer's); q: the query
 * heads after RoPE (the oracle's); slot0: the layer's cache (the oracle's
 * keys; the indexer row keeps its keys in c->ikT); score: 2 (t + 1) reals
 * of scratch. */
const int *kvsparse_select(KvCache *c, const Model *m, int l, int t, const real *h, const real *q, real *slot0,
                           real *score, int *n);

#endif
