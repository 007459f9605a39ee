/*
 * kvcache_sparse.c — which cached keys a top-k layer's new query attends
 * to (kvcache.h, sparse.h): the rows' selections for one query, as the
 * training forward makes them for row t (the same ties: the lower position
 * wins; the same random draws; the indexer's scores summed in the forward's
 * order -- from q_I and k_I projected one token at a time, which a BLAS
 * kernel may round differently from the forward's batched projection, so a
 * near-tie could select another key).
 */
#include "nn/kvcache_sparse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/rope.h"
#include "nn/sparse.h"

static int has_indexer(const Model *m) { return attn_sparses[m->cfg.attn.sparse].indexer; }

int kvsparse_width(const Model *m) { return has_indexer(m) ? m->cfg.attn.idx_dim : 0; }

int kvsparse_init(KvCache *c, const Model *m, int cap) {
    const AttnCfg *a = &m->cfg.attn;
    if (a->sparse == AS_NONE) return 0;
    c->sel = malloc(sizeof(int) * (size_t)m->L * a->topk);
    c->seln = calloc((size_t)m->L, sizeof(int));
    c->topk_scr = malloc(sparse_topk_scratch(cap));
    if (!c->sel || !c->seln || !c->topk_scr) goto oom;
    if (has_indexer(m)) {
        int HI = a->idx_heads, dI = a->idx_dim;
        c->iq = malloc(sizeof(real) * (size_t)HI * dI);
        c->iw = malloc(sizeof(real) * (size_t)HI);
        c->iP = malloc(sizeof(real) * ((size_t)HI * dI + dI + HI));
        c->cosI = malloc(sizeof(real) * (size_t)cap * (dI / 2));
        c->sinI = malloc(sizeof(real) * (size_t)cap * (dI / 2));
        c->ikT = malloc(sizeof(real) * (size_t)m->L * dI * cap);
        c->ik = malloc(sizeof(real) * (size_t)dI);
        if (!c->iq || !c->iw || !c->iP || !c->cosI || !c->sinI || !c->ikT || !c->ik ||
            rope_tables(c->cosI, c->sinI, cap, dI, &m->rope))
            goto oom;
    }
    return 0;
oom:
    kvsparse_free(c);
    errno = ENOMEM;
    return -1;
}

void kvsparse_free(KvCache *c) {
    free(c->sel);
    free(c->seln);
    free(c->iq);
    free(c->iw);
    free(c->iP);
    free(c->cosI);
    free(c->sinI);
    free(c->ikT);
    free(c->ik);
    free(c->topk_scr);
    c->topk_scr = NULL;
    c->sel = c->seln = NULL, c->iq = c->iw = c->iP = c->cosI = c->sinI = c->ikT = c->ik = NULL;
}

const int *kvsparse_select(KvCache *c, const Model *m, int l, int t, const real *h, const real *q, real *slot0,
                           real *score, int *n) {
    const AttnCfg *a = &m->cfg.attn;
    int k = a->topk, on = sparse_decode_on(m), *sel = c->sel ? c->sel + (size_t)l * k : NULL;
    if (c->seln) c->seln[l] = 0;
    if (has_indexer(m)) { /* every token caches its k_I: dense rows, forced-dense and warm-up steps too */
        const LayerParams *p = &m->lp[l];
        int HI = a->idx_heads, dI = a->idx_dim, half = dI / 2;
        real *kT = c->ikT + (size_t)l * dI * c->cap;
        indexer_token(c->iq, c->ik, c->iw, c->iP, AW(&m->p, p->idx_w), AW(&m->p, p->idx_kn), h, m->C, HI, dI,
                      c->cosI + (size_t)t * half, c->sinI + (size_t)t * half, (real)m->cfg.norm_eps);
        for (int i = 0; i < dI; i++) kT[(size_t)i * c->cap + t] = c->ik[i];
        if (!on || t + 1 <= k) return NULL;
        indexer_token_scores(score, c->iq, c->iw, kT, (size_t)c->cap, t + 1, HI, dI, score + (t + 1));
    }
    if (!on || t + 1 <= k) return NULL;
    *n = k;
    switch (a->sparse) {
    case AS_INDEXER: sparse_topk_row(sel, score, t + 1, k, c->topk_scr); break;
    case AS_WINDOW:
        for (int i = 0; i < k; i++) sel[i] = t - k + 1 + i;
        break;
    case AS_RANDOM: sparse_random_row(sel, t, k, (uint64_t)m->cfg.seed, m->step, l); break;
    case AS_ORACLE:
        sparse_oracle_row(score, q, slot0, (size_t)c->width, t, m->H, m->Hk, m->dh, 1 / sqrt((real)m->dh),
                          score + (t + 1));
        sparse_topk_row(sel, score, t + 1, k, c->topk_scr);
        break;
    default: return NULL;
    }
    c->seln[l] = k;
    return sel;
}

const int *kvcache_selection(const KvCache *c, int l, int *n) {
    if (!c->seln || !c->seln[l]) return NULL;
    *n = c->seln[l];
    return c->sel + (size_t)l * *n;
}
