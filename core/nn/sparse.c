/*
 * sparse.c — the model's hooks for top-k sparse attention (sparse.h,
 * model.attention.sparse): the indexer's parameters, the selection of each
 * layer's keys in the forward, and the attention over them forward and
 * backward.  model.c calls these where it would call the dense kernel, when
 * attn_sparse_active(cfg, T).
 *
 * The selection is piecewise constant in the weights, so the language-model
 * loss gives the indexer no gradient: its parameters are real parameters
 * (optimizer, checkpoint, counts) whose gradient from model_backward is 0.
 * What trains it is the KL loss of DeepSeek's recipe (docs/model.md: not
 * built yet; indexer_backward is its backward).
 */
#include "nn/sparse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/rope.h"

typedef struct SparseState {
    int B, T;
    int *sel;     /* (L, B, T, k): each layer's selection in the last forward */
    real *ibuf;   /* one layer's indexer activations (reused layer by layer) */
    real *score;  /* the oracle's head-summed weights (B, T, T) */
    real *cos_t, *sin_t; /* the indexer's RoPE tables (T, d_I / 2) */
} SparseState;

static int has_indexer(const ModelCfg *c) { return attn_sparses[c->attn.sparse].indexer; }

int sparse_model_layout(Model *m) {
    const AttnCfg *a = &m->cfg.attn;
    if (a->sparse == AS_NONE) return 0;
    if (!(m->sp = calloc(1, sizeof *m->sp))) return -1;
    if (!has_indexer(&m->cfg)) return 0;
    int rows = a->idx_heads * a->idx_dim + a->idx_dim + a->idx_heads;
    for (int l = 0; l < m->L; l++) {
        char name[48];
        snprintf(name, sizeof name, "l%d.indexer", l);
        m->lp[l].idx_w = arena_add(&m->p, name, 1, 2, rows, m->C, 0);
        snprintf(name, sizeof name, "l%d.indexer_knorm", l);
        m->lp[l].idx_kn = arena_add(&m->p, name, 0, 1, a->idx_dim, 0, 0);
    }
    return m->p.failed ? -1 : 0;
}

static size_t sel_len(const ModelCfg *c, int B, int T) { return (size_t)c->n_layer * B * T * c->attn.topk; }

size_t sparse_model_memory(const ModelCfg *c, int B, int T) {
    if (c->attn.sparse == AS_NONE) return 0;
    size_t r = 0, n = (size_t)B * T;
    if (has_indexer(c)) r += indexer_acts_len(B, T, c->attn.idx_heads, c->attn.idx_dim) + (size_t)T * c->attn.idx_dim;
    if (c->attn.sparse == AS_ORACLE) r += n * T;
    return sizeof(int) * sel_len(c, B, T) + sizeof(real) * r;
}

void sparse_model_free(Model *m) {
    SparseState *s = m->sp;
    if (!s) return;
    free(s->sel);
    free(s->ibuf);
    free(s->score);
    free(s->cos_t);
    free(s->sin_t);
    free(s);
    m->sp = NULL;
}

int sparse_model_ensure(Model *m, int B, int T) {
    SparseState *s = m->sp;
    const AttnCfg *a = &m->cfg.attn;
    if (s->sel && s->B == B && s->T == T) goto tables;
    free(s->sel), free(s->ibuf), free(s->score), free(s->cos_t), free(s->sin_t);
    memset(s, 0, sizeof *s);
    size_t n = (size_t)B * T;
    int ok = (s->sel = malloc(sizeof(int) * sel_len(&m->cfg, B, T))) != NULL;
    if (has_indexer(&m->cfg)) {
        ok = ok && (s->ibuf = malloc(sizeof(real) * indexer_acts_len(B, T, a->idx_heads, a->idx_dim)));
        ok = ok && (s->cos_t = malloc(sizeof(real) * (size_t)T * (a->idx_dim / 2)));
        ok = ok && (s->sin_t = malloc(sizeof(real) * (size_t)T * (a->idx_dim / 2)));
    }
    if (a->sparse == AS_ORACLE) ok = ok && (s->score = malloc(sizeof(real) * n * T));
    if (!ok) {
        errno = ENOMEM;
        return -1;
    }
    s->B = B, s->T = T;
tables:
    /* every forward: model_set_rope may have changed the frequencies */
    if (s->cos_t && rope_tables(s->cos_t, s->sin_t, T, a->idx_dim, &m->rope)) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

const int *sparse_selection(const Model *m, int l) {
    if (!m->sp || !m->sp->sel || !attn_sparse_active(&m->cfg.attn, m->T)) return NULL;
    return m->sp->sel + (size_t)l * m->B * m->T * m->cfg.attn.topk;
}

/* Layer l's selection into its slot of s->sel. */
static int select_keys(Model *m, int l, const real *h, const real *q, int sq, const real *k, int sk, real scale) {
    SparseState *s = m->sp;
    const AttnCfg *a = &m->cfg.attn;
    int B = s->B, T = s->T, kk = a->topk;
    int *sel = s->sel + (size_t)l * B * T * kk;
    switch (a->sparse) {
    case AS_INDEXER: {
        IndexerActs ia;
        indexer_acts_carve(&ia, s->ibuf, B, T, a->idx_heads, a->idx_dim);
        const LayerParams *p = &m->lp[l];
        indexer_forward(&ia, AW(&m->p, p->idx_w), AW(&m->p, p->idx_kn), h, m->C, B, T, m->C, a->idx_heads,
                        a->idx_dim, s->cos_t, s->sin_t, (real)m->cfg.norm_eps);
        return sparse_select_topk(sel, ia.sc, B, T, kk);
    }
    case AS_WINDOW: sparse_select_window(sel, B, T, kk); return 0;
    case AS_RANDOM: sparse_select_random(sel, B, T, kk, (uint64_t)m->cfg.seed, m->step, l); return 0;
    case AS_ORACLE:
        if (sparse_oracle_scores(s->score, q, sq, k, sk, B, T, m->H, m->Hk, m->dh, scale)) return -1;
        return sparse_select_topk(sel, s->score, B, T, kk);
    default: return -1;
    }
}

int sparse_model_forward(Model *m, int l, real *o, real *lse, const real *h, const real *q, int sq, const real *k,
                         int sk, const real *v, int sv, real scale) {
    if (select_keys(m, l, h, q, sq, k, sk, scale)) return -1;
    return sparse_attn_forward(o, lse, q, sq, k, sk, v, sv, sparse_selection(m, l), m->cfg.attn.topk, m->B, m->T,
                               m->H, m->Hk, m->dh, scale);
}

int sparse_model_backward(const Model *m, int l, real *dq, real *dk, real *dv, const real *dout, const real *o,
                          const real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                          real scale) {
    return sparse_attn_backward(dq, dk, dv, dout, o, lse, q, sq, k, sk, v, sv, sparse_selection(m, l),
                                m->cfg.attn.topk, m->B, m->T, m->H, m->Hk, m->dh, scale);
}

long model_indexer_params(const Model *m) {
    long n = 0;
    for (int l = 0; l < m->L; l++)
        if (m->lp[l].idx_w >= 0) n += (long)(m->p.t[m->lp[l].idx_w].n + m->p.t[m->lp[l].idx_kn].n);
    return n;
}
