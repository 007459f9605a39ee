/*
 * sparse.c — the model's hooks for top-k sparse attention (sparse.h,
 * model.attention.sparse): the indexer's parameters, the selection of each
 * layer's keys in the forward, and the attention over them forward and
 * backward.  model.c calls these where it would call the dense kernel, when
 * attn_sparse_active(cfg, T).
 *
 * The selection is piecewise constant in the weights, so the language-model
 * loss gives the indexer no gradient: what trains it is the KL loss of
 * DeepSeek's recipe (sparse.h, indexer_kl.c), whose gradient the backward
 * adds to the indexer's (its input h detached).
 */
#include "nn/sparse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/attn.h"
#include "nn/model.h"
#include "nn/rope.h"

typedef struct SparseState {
    int B, T;
    int *sel;     /* (L, B, T, k): each layer's selection in the last forward */
    real *ibuf;   /* each layer's indexer activations (L x indexer_acts_len) */
    real *iscr;   /* the indexer's backward scratch and dI (B, T, T) */
    real *score;  /* the oracle's head-summed weights (B, T, T) */
    real *cos_t, *sin_t; /* the indexer's RoPE tables (T, d_I / 2) */
    double kl;    /* the indexer's mean KL in the last backward */
    int dense;    /* sparse_force_dense */
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
    if (has_indexer(c))
        r += (size_t)c->n_layer * indexer_acts_len(B, T, c->attn.idx_heads, c->attn.idx_dim) +
             indexer_scratch_len(B, T, c->attn.idx_heads, c->attn.idx_dim) + n * T + (size_t)T * c->attn.idx_dim;
    if (c->attn.sparse == AS_ORACLE) r += n * T;
    size_t bwd = has_indexer(c) ? indexer_backward_memory(B, T, c->attn.idx_heads,
                                                          c->attn.idx_warmup > 0 ? 0 : c->attn.topk) : 0;
    return sizeof(int) * sel_len(c, B, T) + sizeof(real) * r + bwd;
}

void sparse_model_free(Model *m) {
    SparseState *s = m->sp;
    if (!s) return;
    free(s->sel);
    free(s->ibuf);
    free(s->iscr);
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
    free(s->sel), free(s->ibuf), free(s->iscr), free(s->score), free(s->cos_t), free(s->sin_t);
    int dense = s->dense;
    memset(s, 0, sizeof *s);
    s->dense = dense;
    size_t n = (size_t)B * T;
    int ok = (s->sel = malloc(sizeof(int) * sel_len(&m->cfg, B, T))) != NULL;
    if (has_indexer(&m->cfg)) {
        size_t il = indexer_acts_len(B, T, a->idx_heads, a->idx_dim);
        ok = ok && (s->ibuf = malloc(sizeof(real) * il * m->L));
        ok = ok && (s->iscr = malloc(sizeof(real) * (indexer_scratch_len(B, T, a->idx_heads, a->idx_dim) + n * T)));
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

int sparse_on(const Model *m, int T) { return m->sp && !m->sp->dense && attn_sparse_active(&m->cfg.attn, T); }

void sparse_force_dense(Model *m, int on) {
    if (m->sp) m->sp->dense = on;
}

const int *sparse_selection(const Model *m, int l) {
    if (!m->sp || !m->sp->sel || !sparse_on(m, m->T) || sparse_warm(m)) return NULL;
    return m->sp->sel + (size_t)l * m->B * m->T * m->cfg.attn.topk;
}

/* Layer l's indexer activations (its slot of s->ibuf). */
static IndexerActs layer_acts(const Model *m, int l) {
    const AttnCfg *a = &m->cfg.attn;
    size_t il = indexer_acts_len(m->sp->B, m->sp->T, a->idx_heads, a->idx_dim);
    IndexerActs ia;
    indexer_acts_carve(&ia, m->sp->ibuf + il * l, m->sp->B, m->sp->T, a->idx_heads, a->idx_dim);
    return ia;
}

static void run_indexer(Model *m, int l, const real *h) {
    const AttnCfg *a = &m->cfg.attn;
    IndexerActs ia = layer_acts(m, l);
    const LayerParams *p = &m->lp[l];
    indexer_forward(&ia, AW(&m->p, p->idx_w), AW(&m->p, p->idx_kn), h, m->C, m->sp->B, m->sp->T, m->C, a->idx_heads,
                    a->idx_dim, m->sp->cos_t, m->sp->sin_t, (real)m->cfg.norm_eps);
}

/* Layer l's selection into its slot of s->sel. */
static int select_keys(Model *m, int l, const real *h, const real *q, int sq, const real *k, int sk, real scale) {
    SparseState *s = m->sp;
    const AttnCfg *a = &m->cfg.attn;
    int B = s->B, T = s->T, kk = a->topk;
    int *sel = s->sel + (size_t)l * B * T * kk;
    switch (a->sparse) {
    case AS_INDEXER:
        run_indexer(m, l, h);
        return sparse_select_topk(sel, layer_acts(m, l).sc, B, T, kk);
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
    if (sparse_warm(m)) { /* dense, and the indexer's scores for its KL */
        run_indexer(m, l, h);
        return attention_forward(o, lse, q, sq, k, sk, v, sv, m->B, m->T, m->H, m->Hk, m->dh, scale);
    }
    if (select_keys(m, l, h, q, sq, k, sk, scale)) return -1;
    return sparse_attn_forward(o, lse, q, sq, k, sk, v, sv, sparse_selection(m, l), m->cfg.attn.topk, m->B, m->T,
                               m->H, m->Hk, m->dh, scale);
}

/* The indexer's KL over U_t (sel NULL: every key) against layer l's
 * attention (q, k after RoPE), its gradient added to the indexer's
 * parameters (input detached); the layer's share of the mean into s->kl. */
static int indexer_learn(Model *m, int l, const real *q, int sq, const real *k, int sk, const int *sel, real scale) {
    SparseState *s = m->sp;
    const AttnCfg *a = &m->cfg.attn;
    int B = s->B, T = s->T;
    size_t scr = indexer_scratch_len(B, T, a->idx_heads, a->idx_dim);
    real *dI = s->iscr + scr, g = (real)(1.0 / ((double)B * T * m->L));
    IndexerActs ia = layer_acts(m, l);
    double kl = indexer_kl(dI, ia.sc, q, sq, k, sk, sel, a->topk, B, T, m->H, m->Hk, m->dh, scale, g);
    if (kl != kl) return -1;
    s->kl += kl * (double)g;
    const LayerParams *p = &m->lp[l];
    indexer_backward(AG(&m->p, p->idx_w), AG(&m->p, p->idx_kn), NULL, m->C, dI, &ia, AW(&m->p, p->idx_w),
                     AW(&m->p, p->idx_kn), m->la[l].h, B, T, m->C, a->idx_heads, a->idx_dim, s->cos_t, s->sin_t,
                     s->iscr);
    return 0;
}

int sparse_model_backward(Model *m, int l, real *dq, real *dk, real *dv, const real *dout, const real *o,
                          const real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                          real scale) {
    const int *sel = sparse_selection(m, l);
    if (sparse_attn_backward(dq, dk, dv, dout, o, lse, q, sq, k, sk, v, sv, sel, m->cfg.attn.topk, m->B, m->T, m->H,
                             m->Hk, m->dh, scale))
        return -1;
    if (!has_indexer(&m->cfg)) return 0;
    if (l == m->L - 1) m->sp->kl = 0; /* backward runs the layers from the last */
    return indexer_learn(m, l, q, sq, k, sk, sel, scale);
}

int sparse_warm(const Model *m) {
    const AttnCfg *a = &m->cfg.attn;
    return m->sp && has_indexer(&m->cfg) && m->step >= 1 && m->step <= a->idx_warmup && sparse_on(m, m->T);
}

int sparse_decode_on(const Model *m) {
    const AttnCfg *a = &m->cfg.attn;
    if (!m->sp || m->sp->dense || a->sparse == AS_NONE) return 0;
    return !(has_indexer(&m->cfg) && m->step >= 1 && m->step <= a->idx_warmup);
}

int sparse_warm_backward(Model *m) {
    real scale = 1 / sqrt((real)m->dh);
    m->sp->kl = 0;
    for (int l = m->L - 1; l >= 0; l--)
        if (indexer_learn(m, l, m->la[l].qr, m->nq, m->la[l].kr, m->nkv, NULL, scale)) return -1;
    return 0;
}

void sparse_set_step(Model *m, long step) {
    m->step = step;
    if (!m->sp || !has_indexer(&m->cfg)) return;
    int warm = step >= 1 && step <= m->cfg.attn.idx_warmup;
    for (int i = 0; i < m->p.n; i++) {
        const char *base = strrchr(m->p.t[i].name, '.');
        int own = base && strncmp(base + 1, "indexer", 7) == 0;
        m->p.t[i].frozen = warm && !own;
    }
}

double sparse_indexer_kl(const Model *m) {
    /* with k >= T the layers ran dense and no backward trained the indexer */
    return m->sp && has_indexer(&m->cfg) && sparse_on(m, m->T) ? m->sp->kl : NAN;
}

int sparse_attends(const Model *m, int l, int b, int t, int s) {
    const int *sel = sparse_selection(m, l);
    if (!sel) return 1;
    int kk = m->cfg.attn.topk;
    const int *S = sel + ((size_t)b * m->T + t) * kk;
    for (int i = 0; i < sparse_nsel(kk, t); i++)
        if (S[i] == s) return 1;
    return 0;
}

void sparse_restrict_weights(const Model *m, int l, int b, real *P, int T, double *recall) {
    const int *sel = sparse_selection(m, l);
    if (!sel) return;
    int kk = m->cfg.attn.topk;
    for (int t = 0; t < T; t++) {
        const int *S = sel + ((size_t)b * T + t) * kk;
        real *row = P + (size_t)t * T, kept = 0;
        int n = sparse_nsel(kk, t), i = 0;
        for (int s = 0; s < T; s++) {
            int in = i < n && S[i] == s;
            i += in;
            if (in) kept += row[s];
            else row[s] = 0;
        }
        if (recall && t >= kk) *recall += kept;
        for (int s = 0; s < T && kept > 0; s++) row[s] /= kept;
    }
}

double sparse_flops_delta(const ModelCfg *c, int T) {
    const AttnCfg *a = &c->attn;
    if (!attn_sparse_active(a, T)) return 0;
    double nq = (double)c->n_head * c->d_head, dense = (T + 1) / 2.0, keys = 0;
    for (int t = 0; t < T; t++) keys += sparse_nsel(a->topk, t);
    keys /= T;
    double d = 2.0 * 2.0 * nq * (keys - dense); /* q.k and p.v */
    if (attn_sparses[a->sparse].indexer) {
        double hi = a->idx_heads, di = a->idx_dim;
        d += 2.0 * c->d_model * ((hi + 1) * di + hi) + (2.0 * hi * di + 2.0 * hi) * dense;
    }
    if (a->sparse == AS_ORACLE) d += 2.0 * nq * dense;
    return d;
}

long model_indexer_params(const Model *m) {
    long n = 0;
    for (int l = 0; l < m->L; l++)
        if (m->lp[l].idx_w >= 0) n += (long)(m->p.t[m->lp[l].idx_w].n + m->p.t[m->lp[l].idx_kn].n);
    return n;
}
