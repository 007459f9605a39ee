/*
 * kvcache.c — one-token decoding from a KV cache (see kvcache.h).
 */
#include "nn/kvcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kvcache_sparse.h"
#include "nn/ops.h"

/* The per-step scratch, carved from KvCache.buf. */
typedef struct {
    real *x, *h, *P, *q, *k, *v, *o, *oc, *og, *S, *a, *ag, *U, *hs, *xf, *logits, *p, *lat;
} Step;

static size_t step_len(const Model *m, int cap, Step *s, real *base) {
    int W = m->nq > m->C ? m->nq : m->C, E = m->cfg.attn.d_c + m->cfg.attn.d_R;
    size_t sz[] = {m->C, m->C, m->Np, m->nq, m->nkv, m->nkv, m->nq, m->nq, m->nq, W, m->C, m->C,
                   2 * (size_t)m->F, m->F, m->C, m->V, 2 * (size_t)cap, (size_t)m->H * (E > 0 ? E : 1)};
    real **dst[] = {&s->x, &s->h, &s->P, &s->q, &s->k, &s->v, &s->o, &s->oc, &s->og, &s->S, &s->a, &s->ag,
                    &s->U, &s->hs, &s->xf, &s->logits, &s->p, &s->lat};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        if (base) *dst[i] = base + off;
        off += sz[i];
    }
    return off;
}

int kvcache_init(KvCache *c, const Model *m, int cap) {
    memset(c, 0, sizeof *c);
    if (m->cfg.attn.normalizer != AN_SOFTMAX) {
        errno = EINVAL;
        return -1;
    }
    int latent = m->cfg.attn.kv == KV_LATENT, dR = latent ? m->cfg.attn.d_R : 0;
    Step s;
    c->cap = cap;
    c->width = (int)attn_kv_cache(&m->cfg.attn, m->Hk, m->dh);
    c->mem = malloc(sizeof(real) * (size_t)m->L * cap * c->width);
    c->cos_t = malloc(sizeof(real) * (size_t)cap * (m->dh / 2));
    c->sin_t = malloc(sizeof(real) * (size_t)cap * (m->dh / 2));
    c->cosR = malloc(sizeof(real) * ((size_t)cap * (dR / 2) + 1));
    c->sinR = malloc(sizeof(real) * ((size_t)cap * (dR / 2) + 1));
    c->buf = malloc(sizeof(real) * step_len(m, cap, &s, NULL));
    if (!c->mem || !c->cos_t || !c->sin_t || !c->cosR || !c->sinR || !c->buf ||
        rope_tables(c->cos_t, c->sin_t, cap, m->dh, &m->rope) ||
        (dR && rope_tables(c->cosR, c->sinR, cap, dR, &m->rope)) || kvsparse_init(c, m, cap)) {
        kvcache_free(c);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void kvcache_free(KvCache *c) {
    free(c->mem);
    free(c->cos_t);
    free(c->sin_t);
    free(c->cosR);
    free(c->sinR);
    free(c->buf);
    kvsparse_free(c);
    memset(c, 0, sizeof *c);
}

size_t kvcache_bytes_per_token(const KvCache *c, const Model *m) {
    return sizeof(real) * (size_t)(c->width + kvsparse_width(m)) * m->L;
}

/* Softmax weights of n scores in p (in place). */
static void softmax_row(real *p, int n) {
    real mx = p[0];
    for (int j = 1; j < n; j++) mx = p[j] > mx ? p[j] : mx;
    real sum = 0;
    for (int j = 0; j < n; j++) sum += p[j] = exp(p[j] - mx);
    for (int j = 0; j < n; j++) p[j] /= sum;
}

/* A query . key over one head: a vectorised sum (reassociated: decoding
 * matches the forward within float round-off, tests/test_kvcache.c, and is
 * not part of any stored result). */
static real dotr(const real *a, const real *b, int d) {
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < d; i++) s += a[i] * b[i];
    return s;
}

/* Heads: q, k, v of the new token (QK-norm, G4/G3/G2, RoPE at position t),
 * k and v into the cache slot, then each query head over the cached keys
 * (a top-k layer: over its selection). */
static void attend_heads(const Model *m, int l, real *slot0, int t, const Step *s, const real *L, int sl,
                         KvCache *c) {
    const LayerParams *p = &m->lp[l];
    const Arena *A = &m->p;
    int H = m->H, Hk = m->Hk, dh = m->dh, grp = H / Hk, pos = m->cfg.gate.position, half = dh / 2;
    real eps = (real)m->cfg.norm_eps;
    const real *q = s->P, *k = s->P + m->nq, *v = s->P + m->nq + m->nkv;
    if (m->cfg.qk_norm) {
        real r[256];
        rmsnorm_forward(s->q, m->nq, r, q, m->Np, AW(A, p->q_norm), 1, H, dh, eps);
        rmsnorm_forward(s->k, m->nkv, r, k, m->Np, AW(A, p->k_norm), 1, Hk, dh, eps);
        q = s->q, k = s->k;
    }
    real *kt = slot0 + (size_t)t * c->width, *vt = kt + m->nkv;
    if (pos == GP_QUERY) gate_forward(&m->gop, s->o, m->nq, s->S, q, m->nq, L, sl, 1), q = s->o;
    if (pos == GP_KEY) gate_forward(&m->gop, s->oc, m->nkv, s->S, k, m->nkv, L, sl, 1), k = s->oc;
    if (pos == GP_VALUE) gate_forward(&m->gop, vt, m->nkv, s->S, v, m->nkv, L, sl, 1);
    else memcpy(vt, v, sizeof(real) * m->nkv);
    rope_forward(s->og, q, m->nq, c->cos_t + (size_t)t * half, c->sin_t + (size_t)t * half, 1, 1, H, dh);
    rope_forward(kt, k, m->nkv, c->cos_t + (size_t)t * half, c->sin_t + (size_t)t * half, 1, 1, Hk, dh);
    int n = t + 1;
    const int *sel = kvsparse_select(c, m, l, t, s->h, s->og, slot0, s->p, &n);
    real scale = 1 / sqrt((real)dh);
    for (int h = 0; h < H; h++) {
        const real *qh = s->og + (size_t)h * dh, *k0 = slot0 + (size_t)(h / grp) * dh;
        for (int i = 0; i < n; i++) s->p[i] = scale * dotr(qh, k0 + (size_t)(sel ? sel[i] : i) * c->width, dh);
        softmax_row(s->p, n);
        real *oh = s->o + (size_t)h * dh;
        memset(oh, 0, sizeof(real) * dh);
        for (int i = 0; i < n; i++) {
            const real *vj = k0 + (size_t)(sel ? sel[i] : i) * c->width + m->nkv;
#pragma omp simd
            for (int d = 0; d < dh; d++) oh[d] += s->p[i] * vj[d];
        }
    }
}

/* Latent: c and k^R into the cache slot; each head's query absorbs W_UK,
 * attends over the cached [c; k^R] with c as the value, and W_UV maps the
 * attended latent to the head's output. */
static void attend_latent(const Model *m, const LayerParams *p, real *slot0, int t, const Step *s, const KvCache *c) {
    const Arena *A = &m->p;
    int H = m->H, dh = m->dh, dc = m->cfg.attn.d_c, dR = m->cfg.attn.d_R, E = dc + dR, hR = dR / 2;
    int offR = H * dh, offC = H * (dh + dR), offK = offC + dc;
    real *ct = slot0 + (size_t)t * c->width, rc;
    rmsnorm_forward(ct, dc, &rc, s->P + offC, m->Np, AW(A, p->kv_norm), 1, 1, dc, (real)m->cfg.norm_eps);
    if (dR) {
        rope_forward(ct + dc, s->P + offK, m->Np, c->cosR + (size_t)t * hR, c->sinR + (size_t)t * hR, 1, 1, 1, dR);
        rope_forward(s->q, s->P + offR, m->Np, c->cosR + (size_t)t * hR, c->sinR + (size_t)t * hR, 1, 1, H, dR);
    }
    const real *wuk = AW(A, p->w_uk), *wuv = AW(A, p->w_uv);
    real scale = 1 / sqrt((real)(dh + dR));
    for (int h = 0; h < H; h++) {
        real *qa = s->lat + (size_t)h * E; /* [W_UK,h^T q^C_h ; q^R_h] */
        const real *qc = s->P + (size_t)h * dh, *W = wuk + (size_t)h * dh * dc;
        memset(qa, 0, sizeof(real) * dc);
        for (int i = 0; i < dh; i++)
            for (int j = 0; j < dc; j++) qa[j] += qc[i] * W[(size_t)i * dc + j];
        memcpy(qa + dc, s->q + (size_t)h * dR, sizeof(real) * dR);
        for (int j = 0; j <= t; j++) s->p[j] = scale * dotr(qa, slot0 + (size_t)j * c->width, E);
        softmax_row(s->p, t + 1);
        real *ol = qa; /* the attended latent, over the query (no longer needed) */
        memset(ol, 0, sizeof(real) * dc);
        for (int j = 0; j <= t; j++) {
            const real *cj = slot0 + (size_t)j * c->width;
#pragma omp simd
            for (int d = 0; d < dc; d++) ol[d] += s->p[j] * cj[d];
        }
        linear_forward(s->o + (size_t)h * dh, dh, ol, dc, wuv + (size_t)h * dh * dc, 1, dh, dc, 0);
    }
}

const real *kvcache_step(KvCache *c, const Model *m, int token) {
    if (c->len >= c->cap) {
        errno = ENOSPC;
        return NULL;
    }
    Step s;
    step_len(m, c->cap, &s, c->buf);
    const Arena *A = &m->p;
    int C = m->C, t = c->len, pos = m->cfg.gate.position, ctl = m->cfg.gate.control;
    real eps = (real)m->cfg.norm_eps, r;
    memcpy(s.x, AW(A, m->wte) + (size_t)token * C, sizeof(real) * C);
    for (int l = 0; l < m->L; l++) {
        const LayerParams *p = &m->lp[l];
        real *slot0 = c->mem + (size_t)l * c->cap * c->width;
        rmsnorm_forward(s.h, C, &r, s.x, C, AW(A, p->ln1), 1, 1, C, eps);
        linear_forward(s.P, m->Np, s.h, C, AW(A, p->wq), 1, m->Np, C, 0);
        real *L = s.P + m->Np - m->ng;
        if (p->gate_b >= 0)
            for (int j = 0; j < m->ng; j++) L[j] += AW(A, p->gate_b)[j];
        const real *gl = m->cfg.gate.input == GI_STATIC ? AW(A, p->gate_p) : L;
        int sl = m->cfg.gate.input == GI_STATIC ? 0 : m->ng;
        if (m->cfg.attn.kv == KV_LATENT)
            attend_latent(m, p, slot0, t, &s, c);
        else
            attend_heads(m, l, slot0, t, &s, gl, sl, c);
        const real *o = s.o;
        if (ctl == GC_SILU) silu_forward(s.oc, o, 1, m->nq, m->nq), o = s.oc;
        if (ctl == GC_RMSNORM) {
            real ro[256];
            rmsnorm_forward(s.oc, m->nq, ro, o, m->nq, AW(A, p->sdpa_norm), 1, m->H, m->dh, eps), o = s.oc;
        }
        if (ctl == GC_SCALE) {
            for (int i = 0; i < m->nq; i++) s.oc[i] = (real)m->cfg.gate.control_scale * o[i];
            o = s.oc;
        }
        if (pos == GP_SDPA) gate_forward(&m->gop, s.og, m->nq, s.S, o, m->nq, gl, sl, 1), o = s.og;
        linear_forward(s.a, C, o, m->nq, AW(A, p->wo), 1, C, m->nq, 0);
        const real *att = s.a;
        if (pos == GP_DENSE) gate_forward(&m->gop, s.ag, C, s.S, att, C, gl, sl, 1), att = s.ag;
        for (int i = 0; i < C; i++) s.x[i] += att[i];
        rmsnorm_forward(s.h, C, &r, s.x, C, AW(A, p->ln2), 1, 1, C, eps);
        linear_forward(s.U, 2 * m->F, s.h, C, AW(A, p->w_gate), 1, 2 * m->F, C, 0);
        swiglu_forward(s.hs, s.U, 1, m->F);
        linear_forward(s.x, C, s.hs, m->F, AW(A, p->w_down), 1, C, m->F, 1);
    }
    rmsnorm_forward(s.xf, C, &r, s.x, C, AW(A, m->ln_f), 1, 1, C, eps);
    linear_forward(s.logits, m->V, s.xf, C, AW(A, m->wte), 1, m->V, C, 0);
    c->len++;
    return s.logits;
}
