/*
 * mla.c — multi-head latent attention: layout, forward, backward and the
 * absorbed inference path (see mla.h).
 */
#include "nn/mla.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops.h"

/* The latent layer's widths. */
typedef struct {
    int H, dh, dR, dc, D, HD; /* D = dh + dR: a head's key width; HD = H D */
    int offR, offC, offK;     /* columns of P: q^R, W_DKV h, W_KR h (q^C at 0) */
} MlaDims;

static MlaDims mla_dims(const ModelCfg *cfg) {
    MlaDims d;
    d.H = cfg->n_head, d.dh = cfg->d_head, d.dR = cfg->attn.d_R, d.dc = cfg->attn.d_c;
    d.D = d.dh + d.dR, d.HD = d.H * d.D;
    d.offR = d.H * d.dh, d.offC = d.HD, d.offK = d.HD + d.dc;
    return d;
}

int mla_proj_width(const ModelCfg *cfg) {
    MlaDims d = mla_dims(cfg);
    return d.HD + d.dc + d.dR;
}

void mla_layout_proj(Model *m, int l, LayerParams *p) {
    MlaDims d = mla_dims(&m->cfg);
    p->wq = model_add_param(m, l, "wq", 1, 2, d.HD, m->C); /* q^C of every head, then q^R */
    p->wk = model_add_param(m, l, "w_dkv", 1, 2, d.dc, m->C);
    if (d.dR) p->wv = model_add_param(m, l, "w_kr", 1, 2, d.dR, m->C);
}

void mla_layout_up(Model *m, int l, LayerParams *p) {
    MlaDims d = mla_dims(&m->cfg);
    p->kv_norm = model_add_param(m, l, "kv_norm", 0, 1, d.dc, 0);
    p->w_uk = model_add_param(m, l, "w_uk", 1, 2, d.H * d.dh, d.dc);
    p->w_uv = model_add_param(m, l, "w_uv", 1, 2, d.H * d.dh, d.dc);
}

/* One layer's saved latent activations (n tokens, length T). */
typedef struct {
    real *c, *rc;           /* the normed latent (n, d_c) and its rstd (n) */
    real *vC;               /* per-head values W_UV c (n, H dh) */
    real *qp, *kp, *vp, *op; /* the kernel's q, k, zero-padded v and o (n, H D) */
    real *kR;               /* the roped shared key (n, d_R) */
    real *cosR, *sinR;      /* RoPE tables for d_R (T, d_R / 2) */
} MlaActs;

static size_t views(const MlaDims *d, real *base, size_t n, int T, MlaActs *v) {
    size_t sz[] = {n * d->dc, n, n * d->H * d->dh, n * d->HD, n * d->HD, n * d->HD, n * d->HD, n * d->dR,
                   (size_t)T * (d->dR / 2), (size_t)T * (d->dR / 2)};
    MlaActs count; /* written when only counting (v NULL) */
    MlaActs *o = v ? v : &count;
    real **dst[] = {&o->c, &o->rc, &o->vC, &o->qp, &o->kp, &o->vp, &o->op, &o->kR, &o->cosR, &o->sinR};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        if (v) *dst[i] = base + off;
        off += sz[i];
    }
    return off;
}

size_t mla_act_len(const Model *m, int B, int T) {
    MlaDims d = mla_dims(&m->cfg);
    return views(&d, NULL, (size_t)B * T, T, NULL);
}

static MlaActs acts_of(const Model *m, int l) {
    MlaDims d = mla_dims(&m->cfg);
    MlaActs v;
    views(&d, m->la[l].mla, (size_t)m->B * m->T, m->T, &v);
    return v;
}

const real *mla_values(const Model *m, int l, int *sv) {
    *sv = m->H * m->dh;
    return acts_of(m, l).vC;
}

void mla_attn_qkv(const Model *m, int l, AttnQKV *out) {
    MlaDims d = mla_dims(&m->cfg);
    MlaActs v = acts_of(m, l);
    out->q = v.qp, out->k = v.kp, out->v = v.vp;
    out->sq = out->sk = out->sv = d.HD;
    out->d = d.D, out->hk = d.H;
}

/* The layer's normaliser with its virtual-key logits (sink_logit's b_h,
 * softmax1's 0; kv_bias is refused with latent KV, so q is not read). */
static AttnNorm norm_of(const Model *m, int l, const real *q, int sq, int d, real scale) {
    const LayerParams *p = &m->lp[l];
    const LayerActs *a = &m->la[l];
    AttnNorm an = {m->cfg.attn.normalizer, a->z};
    if (a->z)
        attn_virtual_logits(a->z, an.kind, p->sink >= 0 ? AW(&m->p, p->sink) : NULL, NULL, q, sq, m->B, m->T, m->H,
                            m->H, d, scale);
    return an;
}

/* c = rmsnorm(W_DKV h) and k^R = rope(W_KR h) (the cached part), the
 * shared RoPE tables first. */
static int latent_forward(Model *m, int l, const MlaDims *d, const MlaActs *v) {
    const LayerActs *a = &m->la[l];
    int n = m->B * m->T, Np = m->Np;
    rmsnorm_forward(v->c, d->dc, v->rc, a->P + d->offC, Np, AW(&m->p, m->lp[l].kv_norm), n, 1, d->dc,
                    (real)m->cfg.norm_eps);
    if (!d->dR) return 0;
    if (rope_tables(v->cosR, v->sinR, m->T, d->dR, &m->rope)) return -1;
    rope_forward(v->kR, a->P + d->offK, Np, v->cosR, v->sinR, n, m->T, 1, d->dR);
    return 0;
}

/* The training path: per-head keys and values up-projected, assembled for
 * the kernel with width D. */
static int forward_heads(Model *m, int l, const MlaDims *d, const MlaActs *v) {
    LayerActs *a = &m->la[l];
    const LayerParams *p = &m->lp[l];
    int n = m->B * m->T, Hdh = d->H * d->dh;
    /* a->kr (n, H dh) holds k^C, a->qr (n, H dh >= H d_R) the roped q^R */
    linear_forward(a->kr, Hdh, v->c, d->dc, AW(&m->p, p->w_uk), n, Hdh, d->dc, 0);
    linear_forward(v->vC, Hdh, v->c, d->dc, AW(&m->p, p->w_uv), n, Hdh, d->dc, 0);
    if (d->dR) rope_forward(a->qr, a->P + d->offR, m->Np, v->cosR, v->sinR, n, m->T, d->H, d->dR);
    for (int t = 0; t < n; t++)
        for (int h = 0; h < d->H; h++) {
            size_t o = (size_t)t * d->HD + (size_t)h * d->D, s = (size_t)t * Hdh + (size_t)h * d->dh;
            memcpy(v->qp + o, a->P + (size_t)t * m->Np + (size_t)h * d->dh, sizeof(real) * d->dh);
            memcpy(v->kp + o, a->kr + s, sizeof(real) * d->dh);
            memcpy(v->vp + o, v->vC + s, sizeof(real) * d->dh);
            memcpy(v->qp + o + d->dh, a->qr + ((size_t)t * d->H + h) * d->dR, sizeof(real) * d->dR);
            memcpy(v->kp + o + d->dh, v->kR + (size_t)t * d->dR, sizeof(real) * d->dR);
            memset(v->vp + o + d->dh, 0, sizeof(real) * d->dR);
        }
    real scale = 1 / sqrt((real)d->D);
    AttnNorm an = norm_of(m, l, v->qp, d->HD, d->D, scale);
    if (attention_forward_norm(v->op, a->lse, v->qp, d->HD, v->kp, d->HD, v->vp, d->HD, m->B, m->T, d->H, d->H,
                               d->D, scale, &an))
        return -1;
    for (int t = 0; t < n; t++)
        for (int h = 0; h < d->H; h++)
            memcpy(a->o + (size_t)t * Hdh + (size_t)h * d->dh, v->op + (size_t)t * d->HD + (size_t)h * d->D,
                   sizeof(real) * d->dh);
    return 0;
}

/* The absorbed path: q~_i = W_UK,i^T q^C_i, one key head [c ; k^R] shared
 * by the query heads with value c (width E = d_c + d_R, the value zero-
 * padded), then o_i = W_UV,i (attended latent). */
static int forward_absorbed(Model *m, int l, const MlaDims *d, const MlaActs *v) {
    LayerActs *a = &m->la[l];
    const LayerParams *p = &m->lp[l];
    int n = m->B * m->T, E = d->dc + d->dR, HE = d->H * E, Hdh = d->H * d->dh;
    size_t N = (size_t)n;
    real *ql = malloc(sizeof(real) * N * HE * 2), *ol = ql ? ql + N * HE : NULL;
    real *kl = malloc(sizeof(real) * N * E * 2), *vl = kl ? kl + N * E : NULL;
    int rc = -1;
    if (!ql || !kl) goto done;
    const real *wuk = AW(&m->p, p->w_uk), *wuv = AW(&m->p, p->w_uv);
    for (int h = 0; h < d->H; h++) /* (n, d_c) = q^C_i (n, d_h) W_UK,i (d_h, d_c) */
        gemm(0, 0, n, d->dc, d->dh, 1, a->P + (size_t)h * d->dh, m->Np, wuk + (size_t)h * d->dh * d->dc, d->dc, 0,
             ql + (size_t)h * E, HE);
    if (d->dR) rope_forward(a->qr, a->P + d->offR, m->Np, v->cosR, v->sinR, n, m->T, d->H, d->dR);
    for (size_t t = 0; t < N; t++) {
        for (int h = 0; h < d->H; h++)
            memcpy(ql + t * HE + (size_t)h * E + d->dc, a->qr + (t * d->H + h) * d->dR, sizeof(real) * d->dR);
        memcpy(kl + t * E, v->c + t * d->dc, sizeof(real) * d->dc);
        memcpy(kl + t * E + d->dc, v->kR + t * d->dR, sizeof(real) * d->dR);
        memcpy(vl + t * E, v->c + t * d->dc, sizeof(real) * d->dc);
        memset(vl + t * E + d->dc, 0, sizeof(real) * d->dR);
    }
    real scale = 1 / sqrt((real)d->D); /* the training path's: the scores are the same numbers */
    AttnNorm an = norm_of(m, l, ql, HE, E, scale);
    if (attention_forward_norm(ol, a->lse, ql, HE, kl, E, vl, E, m->B, m->T, d->H, 1, E, scale, &an)) goto done;
    for (int h = 0; h < d->H; h++)
        linear_forward(a->o + (size_t)h * d->dh, Hdh, ol + (size_t)h * E, HE, wuv + (size_t)h * d->dh * d->dc, n,
                       d->dh, d->dc, 0);
    rc = 0;
done:
    free(ql);
    free(kl);
    return rc;
}

int mla_forward(Model *m, int l, int B, int T) {
    (void)B, (void)T; /* m->B, m->T: ensure_acts set them */
    MlaDims d = mla_dims(&m->cfg);
    MlaActs v = acts_of(m, l);
    if (latent_forward(m, l, &d, &v)) return -1;
    return m->kv_absorbed ? forward_absorbed(m, l, &d, &v) : forward_heads(m, l, &d, &v);
}

size_t mla_scratch_len(const Model *m, int B, int T) {
    MlaDims d = mla_dims(&m->cfg);
    return (size_t)B * T * (4 * (size_t)d.HD + d.dc + (size_t)d.H * d.dh + (size_t)d.H * d.dR + d.dR);
}

int mla_backward(Model *m, int l, const real *dO, real *dP) {
    MlaDims d = mla_dims(&m->cfg);
    MlaActs v = acts_of(m, l);
    const LayerActs *a = &m->la[l];
    const LayerParams *p = &m->lp[l];
    Arena *A = &m->p;
    int n = m->B * m->T, Hdh = d.H * d.dh, Np = m->Np;
    size_t N = (size_t)n;
    /* dO padded, dq, dk, dv (n, H D); dc (n, d_c); dk^C / dv gathered (n, H dh); dq^R (n, H d_R); dk^R (n, d_R) */
    real *s = calloc(mla_scratch_len(m, m->B, m->T), sizeof(real));
    if (!s) {
        errno = ENOMEM;
        return -1;
    }
    real *dOp = s, *dq = dOp + N * d.HD, *dk = dq + N * d.HD, *dv = dk + N * d.HD, *dc = dv + N * d.HD;
    real *dg = dc + N * d.dc, *dqR = dg + N * Hdh, *dkR = dqR + N * d.H * d.dR;
    for (size_t t = 0; t < N; t++)
        for (int h = 0; h < d.H; h++)
            memcpy(dOp + t * d.HD + (size_t)h * d.D, dO + t * Hdh + (size_t)h * d.dh, sizeof(real) * d.dh);
    real scale = 1 / sqrt((real)d.D);
    AttnNorm an = {m->cfg.attn.normalizer, a->z};
    int rc = attention_backward_norm(dq, dk, dv, dOp, v.op, a->lse, v.qp, d.HD, v.kp, d.HD, v.vp, d.HD, m->B, m->T,
                                     d.H, d.H, d.D, scale, &an);
    if (rc) {
        free(s);
        errno = ENOMEM;
        return -1;
    }
    if (a->z)
        attn_virtual_backward(dq, p->sink >= 0 ? AG(A, p->sink) : NULL, NULL, an.kind, a->z, a->lse, dOp, v.op, NULL,
                              v.qp, d.HD, m->B, m->T, d.H, d.H, d.D, scale);
    /* split the per-head gradients: q^C and q^R, k^C (into dg), k^R summed over heads in order */
    for (size_t t = 0; t < N; t++)
        for (int h = 0; h < d.H; h++) {
            size_t o = t * d.HD + (size_t)h * d.D;
            real *dqc = dP + t * Np + (size_t)h * d.dh;
            for (int j = 0; j < d.dh; j++) dqc[j] += dq[o + j];
            memcpy(dg + t * Hdh + (size_t)h * d.dh, dk + o, sizeof(real) * d.dh);
            memcpy(dqR + (t * d.H + h) * d.dR, dq + o + d.dh, sizeof(real) * d.dR);
            for (int j = 0; j < d.dR; j++) dkR[t * d.dR + j] += dk[o + d.dh + j];
        }
    if (d.dR) {
        rope_backward(dP + d.offR, Np, dqR, v.cosR, v.sinR, n, m->T, d.H, d.dR);
        rope_backward(dP + d.offK, Np, dkR, v.cosR, v.sinR, n, m->T, 1, d.dR);
    }
    linear_backward(dc, d.dc, AG(A, p->w_uk), dg, Hdh, v.c, AW(A, p->w_uk), n, Hdh, d.dc);
    for (size_t t = 0; t < N; t++)
        for (int h = 0; h < d.H; h++)
            memcpy(dg + t * Hdh + (size_t)h * d.dh, dv + t * d.HD + (size_t)h * d.D, sizeof(real) * d.dh);
    linear_backward(dc, d.dc, AG(A, p->w_uv), dg, Hdh, v.c, AW(A, p->w_uv), n, Hdh, d.dc);
    rmsnorm_backward(dP + d.offC, Np, AG(A, p->kv_norm), dc, d.dc, a->P + d.offC, Np, AW(A, p->kv_norm), v.rc, n, 1,
                     d.dc);
    free(s);
    return 0;
}

double mla_extra_flops(const Model *m, int T) {
    MlaDims d = mla_dims(&m->cfg);
    double up = 2.0 * 2.0 * d.dc * d.H * d.dh;                      /* W_UK and W_UV */
    double wider = 2.0 * 2.0 * (double)d.H * d.dR * (T + 1) / 2.0; /* scores and padded values over D, not d_h */
    return up + wider;
}
