/*
 * model.c — parameters, forward and backward of the decoder (see model.h).
 *
 * Forward of one layer (n = B*T tokens):
 *
 *   h   = rmsnorm(x) · ln1
 *   P   = h · [wq | wk | wv | wg]^T                one sgemm
 *   q,k = qk_norm(P.q), qk_norm(P.k)               optional, per head
 *         gate at G4 (q) / G3 (k) / G2 (v)          after QK-norm, before RoPE
 *   o   = attention(rope(q), rope(k), v)
 *         control (silu / rmsnorm / ×control_scale) then gate at G1
 *   a   = o · wo^T,  gate at G5
 *   x  += a
 *   x  += swiglu(rmsnorm(x) · ln2 · [w_gate | w_up]^T) · w_down^T
 *
 * Gate logits are always computed from h, the pre-attention normed hidden
 * state of the token that owns the gated row (query i for G1/G4/G5, key j
 * for G2/G3), plus the learned bias gate_b when model.gate.bias is set
 * (added to P's gate columns right after the projection; its gradient is
 * the sum of those columns' gradients over tokens, in token order).
 */
#include "nn/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/mla.h"
#include "nn/ops.h"
#include "nn/rng.h"
#include "nn/sparse.h"

static int add(Model *m, int l, const char *nm, int decay, int ndim, int d0, int d1) {
    char name[48];
    if (l >= 0)
        snprintf(name, sizeof name, "l%d.%s", l, nm);
    else
        snprintf(name, sizeof name, "%s", nm);
    return arena_add(&m->p, name, decay, ndim, d0, d1, 0);
}

int model_add_param(Model *m, int l, const char *nm, int decay, int ndim, int d0, int d1) {
    return add(m, l, nm, decay, ndim, d0, d1);
}

int model_layout(Model *m, const ModelCfg *cfg) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->rope = cfg->rope;
    m->C = cfg->d_model;
    m->L = cfg->n_layer;
    m->H = cfg->n_head;
    m->Hk = cfg->n_kv_head;
    m->dh = cfg->d_head;
    m->F = cfg->d_ff;
    m->V = cfg->vocab_size;
    const GateCfg *g = &cfg->gate;
    m->gs = gate_shape(g, m->C, m->H, m->Hk, m->dh);
    if (g->position != GP_NONE) m->gop = gate_op(g, m->gs.hpos, m->gs.dh);
    m->nq = m->H * m->dh;
    m->nkv = m->Hk * m->dh;
    m->ng = m->gs.nlogit;
    m->Np = m->nq + 2 * m->nkv + m->ng;
    int latent = cfg->attn.kv == KV_LATENT;
    if (latent) m->Np = mla_proj_width(cfg) + m->ng;

    int C = m->C;
    m->wte = add(m, -1, "wte", 1, 2, m->V, C);
    m->lp = calloc((size_t)m->L, sizeof *m->lp);
    if (!m->lp) return -1;
    for (int l = 0; l < m->L; l++) {
        LayerParams *p = &m->lp[l];
        memset(p, -1, sizeof *p);
        p->ln1 = add(m, l, "ln1", 0, 1, C, 0);
        /* wq, wk, wv, wg back to back: one fused projection matrix */
        if (latent) {
            mla_layout_proj(m, l, p);
        } else {
            p->wq = add(m, l, "wq", 1, 2, m->nq, C);
            p->wk = add(m, l, "wk", 1, 2, m->nkv, C);
            p->wv = add(m, l, "wv", 1, 2, m->nkv, C);
        }
        if (m->ng) p->wg = add(m, l, "wg", 1, 2, m->ng, C);
        if (m->ng && g->bias) p->gate_b = add(m, l, "gate_b", 0, 1, m->ng, 0);
        if (m->gs.nstatic) {
            const GateOp *o = &m->gop;
            if (g->sharing == GS_HEAD_SPECIFIC && g->granularity == GG_ELEMENTWISE)
                p->gate_p = add(m, l, "gate_p", 0, 2, o->lh, o->ld);
            else
                p->gate_p = add(m, l, "gate_p", 0, 1, o->lh * o->ld, 0);
        }
        if (cfg->qk_norm) {
            p->q_norm = add(m, l, "q_norm", 0, 1, m->dh, 0);
            p->k_norm = add(m, l, "k_norm", 0, 1, m->dh, 0);
        }
        if (g->control == GC_RMSNORM) p->sdpa_norm = add(m, l, "sdpa_norm", 0, 1, m->dh, 0);
        /* the normaliser's parameters (no weight decay, no RNG draw: the
         * other tensors start the same as with softmax) */
        if (attn_norms[cfg->attn.normalizer].vkey == AV_HEAD) p->sink = add(m, l, "sink_logit", 0, 1, m->H, 0);
        if (attn_norms[cfg->attn.normalizer].vkey == AV_KEY) p->kstar = add(m, l, "kv_bias", 0, 2, m->Hk, m->dh);
        if (latent) mla_layout_up(m, l, p);
        p->wo = add(m, l, "wo", 1, 2, C, m->nq);
        p->ln2 = add(m, l, "ln2", 0, 1, C, 0);
        p->w_gate = add(m, l, "w_gate", 1, 2, m->F, C);
        p->w_up = add(m, l, "w_up", 1, 2, m->F, C);
        p->w_down = add(m, l, "w_down", 1, 2, C, m->F);
    }
    m->ln_f = add(m, -1, "ln_f", 0, 1, C, 0);
    if (sparse_model_layout(m) || m->p.failed) {
        model_free(m);
        return -1;
    }
    return 0;
}

int model_init(Model *m, const ModelCfg *cfg) {
    if (model_layout(m, cfg)) return -1;
    if (arena_alloc(&m->p)) {
        model_free(m);
        return -1;
    }
    model_init_params(m, (uint64_t)cfg->seed);
    return 0;
}

void model_init_params(Model *m, uint64_t seed) {
    Rng r = rng_seed(seed);
    for (int i = 0; i < m->p.n; i++) {
        Tensor *t = &m->p.t[i];
        real *w = m->p.w + t->off;
        const char *base = strrchr(t->name, '.');
        base = base ? base + 1 : t->name;
        if (t->decay) {
            for (size_t j = 0; j < t->n; j++) w[j] = (real)(m->cfg.init_std * rng_normal(&r));
        } else if (strcmp(base, "gate_p") == 0 || strcmp(base, "gate_b") == 0) {
            /* gate logits start at init_bias (0 unless configured) */
            for (size_t j = 0; j < t->n; j++) w[j] = (real)m->cfg.gate.init_bias;
        } else if (strcmp(base, "sink_logit") == 0 || strcmp(base, "kv_bias") == 0) {
            /* sink logits at model.attention.sink_init, k* at 0 (the extra key starts as softmax1's) */
            real v0 = strcmp(base, "sink_logit") == 0 ? (real)m->cfg.attn.sink_init : 0;
            for (size_t j = 0; j < t->n; j++) w[j] = v0;
        } else {
            for (size_t j = 0; j < t->n; j++) w[j] = 1;
        }
    }
}

void model_free(Model *m) {
    sparse_model_free(m);
    arena_free(&m->p);
    free(m->lp);
    free(m->la);
    free(m->actmem);
    free(m->gradmem);
    free(m->targets);
    free(m->cos_t);
    free(m->sin_t);
    memset(m, 0, sizeof *m);
}

void model_zero_grad(Model *m) { memset(m->p.g, 0, sizeof(real) * m->p.total); }

long model_gate_params(const Model *m) { return m->gs.wg_params * (long)m->L; }

long model_attn_params(const Model *m) {
    long n = 0;
    for (int l = 0; l < m->L; l++) {
        if (m->lp[l].sink >= 0) n += (long)m->p.t[m->lp[l].sink].n;
        if (m->lp[l].kstar >= 0) n += (long)m->p.t[m->lp[l].kstar].n;
    }
    return n;
}

/* ------------------------------------------------------ activation memory */

/* Carve n values from *cur (a NULL base only counts). */
static real *carve(real *base, size_t *cur, size_t n) {
    real *p = base ? base + *cur : NULL;
    *cur += n;
    return p;
}

static size_t layout_acts(Model *m, real *base, int B, int T) {
    size_t c = 0, n = (size_t)B * T;
    int qk = m->cfg.qk_norm, pos = m->cfg.gate.position, ctl = m->cfg.gate.control;
    size_t wpos = pos == GP_NONE ? 0 : (size_t)m->gs.hpos * m->gs.dh;
    for (int l = 0; l < m->L; l++) {
        LayerActs *a = base ? &m->la[l] : &(LayerActs){0};
        a->x_in = carve(base, &c, n * m->C);
        a->rstd1 = carve(base, &c, n);
        a->h = carve(base, &c, n * m->C);
        a->P = carve(base, &c, n * m->Np);
        a->qn = qk ? carve(base, &c, n * m->nq) : NULL;
        a->rq = qk ? carve(base, &c, n * m->H) : NULL;
        a->kn = qk ? carve(base, &c, n * m->nkv) : NULL;
        a->rk = qk ? carve(base, &c, n * m->Hk) : NULL;
        a->gy = wpos ? carve(base, &c, n * wpos) : NULL;
        a->S = wpos ? carve(base, &c, n * wpos) : NULL;
        a->qr = carve(base, &c, n * m->nq);
        a->kr = carve(base, &c, n * m->nkv);
        a->o = carve(base, &c, n * m->nq);
        a->lse = carve(base, &c, (size_t)B * m->H * T);
        a->z = attn_norms[m->cfg.attn.normalizer].vkey ? carve(base, &c, (size_t)B * m->H * T) : NULL;
        a->oc = ctl ? carve(base, &c, n * m->nq) : NULL;
        a->ro = ctl == GC_RMSNORM ? carve(base, &c, n * m->H) : NULL;
        a->og = carve(base, &c, n * m->nq);
        a->a = carve(base, &c, n * m->C);
        a->ag = carve(base, &c, n * m->C);
        a->x_mid = carve(base, &c, n * m->C);
        a->rstd2 = carve(base, &c, n);
        a->h2 = carve(base, &c, n * m->C);
        a->U = carve(base, &c, n * 2 * m->F);
        a->hs = carve(base, &c, n * m->F);
        a->mla = m->cfg.attn.kv == KV_LATENT ? carve(base, &c, mla_act_len(m, B, T)) : NULL;
    }
    m->x_out = carve(base, &c, n * m->C);
    m->rstdf = carve(base, &c, n);
    m->xf = carve(base, &c, n * m->C);
    m->logits = carve(base, &c, n * m->V);
    m->probs = carve(base, &c, n * m->V);
    return c;
}

/* Backward scratch for n tokens, in reals: residual grad, dh, dP, a few
 * head-sized buffers (*big: the width of those). */
static size_t grad_len(const Model *m, size_t n, size_t *big_out) {
    size_t big = (size_t)m->nq > (size_t)m->C ? (size_t)m->nq : (size_t)m->C;
    if ((size_t)2 * m->F > big) big = (size_t)2 * m->F;
    if ((size_t)m->Np > big) big = (size_t)m->Np;
    *big_out = big;
    return n * ((size_t)2 * m->C + m->Np + 6 * big + m->V);
}

int model_memory_estimate(const ModelCfg *cfg, int B, int T, ModelMemory *out) {
    Model m;
    memset(out, 0, sizeof *out);
    if (model_layout(&m, cfg)) return -1;
    size_t n = (size_t)B * T, big;
    out->nparams = (long long)m.p.total;
    out->params = 4 * sizeof(real) * m.p.total; /* w, g, m, v */
    out->activations = sizeof(real) * (layout_acts(&m, NULL, B, T) + (size_t)T * (m.dh / 2) * 2) + sizeof(int) * n +
                       sparse_model_memory(cfg, B, T);
    out->scratch = sizeof(real) * grad_len(&m, n, &big);
    if (cfg->attn.kv == KV_LATENT) out->scratch += sizeof(real) * mla_scratch_len(&m, B, T); /* mla_backward's */
    out->total = out->params + out->activations + out->scratch;
    model_free(&m);
    return 0;
}

static int ensure_acts(Model *m, int B, int T) {
    if (m->actmem && m->B == B && m->T == T) return 0;
    free(m->actmem);
    free(m->la);
    free(m->targets);
    free(m->cos_t);
    free(m->sin_t);
    free(m->gradmem);
    m->actmem = NULL;
    m->gradmem = NULL;
    m->B = m->T = 0;
    size_t n = (size_t)B * T;
    m->actlen = layout_acts(m, NULL, B, T);
    m->la = calloc((size_t)m->L, sizeof *m->la);
    m->actmem = malloc(sizeof(real) * m->actlen);
    m->targets = malloc(sizeof(int) * n);
    m->cos_t = malloc(sizeof(real) * (size_t)T * (m->dh / 2));
    m->sin_t = malloc(sizeof(real) * (size_t)T * (m->dh / 2));
    /* allocated by the first backward: evaluation never needs it */
    m->gradlen = grad_len(m, n, &m->gbig);
    if (!m->la || !m->actmem || !m->targets || !m->cos_t || !m->sin_t) {
        errno = ENOMEM;
        return -1;
    }
    layout_acts(m, m->actmem, B, T);
    rope_tables(m->cos_t, m->sin_t, T, m->dh, &m->rope);
    m->B = B;
    m->T = T;
    return 0;
}

/* --------------------------------------------------------------- forward */

/* Where the gated tensor of a position lives, given the layer's buffers. */
typedef struct {
    const real *L; /* gate logits (or static parameter) */
    int sl;
} GateIn;

static GateIn gate_in(const Model *m, const LayerParams *p, const LayerActs *a) {
    GateIn gi;
    if (m->cfg.gate.input == GI_STATIC) {
        gi.L = AW(&m->p, p->gate_p);
        gi.sl = 0;
    } else {
        gi.L = a->P + m->Np - m->ng;
        gi.sl = m->Np;
    }
    return gi;
}

void model_set_rope(Model *m, const RopeScaling *r) {
    m->rope = *r;
    if (m->cos_t && m->T > 0) rope_tables(m->cos_t, m->sin_t, m->T, m->dh, &m->rope);
}

void model_set_linear_hook(Model *m, LinearInputHook hook, void *ctx) {
    m->lin_hook = hook;
    m->lin_ctx = hook ? ctx : NULL;
}

/* The layer's normaliser, its virtual-key logits computed (from the
 * post-RoPE queries, so after a->qr is written). */
static AttnNorm attn_of(const Model *m, const LayerParams *p, LayerActs *a, int B, int T, real scale) {
    AttnNorm an = {m->cfg.attn.normalizer, a->z};
    if (a->z)
        attn_virtual_logits(a->z, an.kind, p->sink >= 0 ? AW(&m->p, p->sink) : NULL,
                            p->kstar >= 0 ? AW(&m->p, p->kstar) : NULL, a->qr, m->nq, B, T, m->H, m->Hk, m->dh, scale);
    return an;
}

/* The input of linear layer `site` of layer l: x, or what the hook gives
 * (its stride into *ld); NULL when the hook ran out of memory. */
static const real *lin_input(const Model *m, int l, LinearSite site, const real *x, int *ld, int n, int k) {
    return m->lin_hook ? m->lin_hook(m->lin_ctx, m, l, site, x, n, k, ld) : x;
}

/* The gate's bias b (model.gate.bias) onto its logits in the fused
 * projection output a->P, where the gate has one. */
static void add_gate_bias(const Model *m, const LayerParams *p, LayerActs *a, int n) {
    if (p->gate_b < 0) return;
    const real *b = AW(&m->p, p->gate_b);
    for (int t = 0; t < n; t++) {
        real *L = a->P + (size_t)t * m->Np + m->Np - m->ng; /* the gate logits end the row */
        for (int j = 0; j < m->ng; j++) L[j] += b[j];
    }
}

/* The G4 / G3 / G2 gate on the query, key or value (after QK-norm, before
 * RoPE), where the layer has one: the gated tensor in a->gy replaces it. */
static void gate_qkv(Model *m, LayerActs *a, GateIn gi, int n, const real **q, int *sq, const real **k, int *sk,
                     const real **v, int *sv) {
    int pos = m->cfg.gate.position;
    if (pos == GP_QUERY) {
        gate_forward(&m->gop, a->gy, m->nq, a->S, *q, *sq, gi.L, gi.sl, n);
        *q = a->gy, *sq = m->nq;
    } else if (pos == GP_KEY) {
#ifdef GATED_PERF_PLANT_VARIANTS
        /* the perf gate's own test only (tests/perf_gate_test.sh): the G3
         * gate's forward four times (the same result each time) */
        for (int plant = 0; plant < 3; plant++) gate_forward(&m->gop, a->gy, m->nkv, a->S, *k, *sk, gi.L, gi.sl, n);
#endif
        gate_forward(&m->gop, a->gy, m->nkv, a->S, *k, *sk, gi.L, gi.sl, n);
        *k = a->gy, *sk = m->nkv;
    } else if (pos == GP_VALUE) {
        gate_forward(&m->gop, a->gy, m->nkv, a->S, *v, *sv, gi.L, gi.sl, n);
        *v = a->gy, *sv = m->nkv;
    }
}

double model_forward(Model *m, const int *tokens, const int *targets, int B, int T) {
    if (ensure_acts(m, B, T) || (m->sp && sparse_model_ensure(m, B, T))) return NAN;
    int n = B * T, C = m->C, H = m->H, Hk = m->Hk, dh = m->dh, pos = m->cfg.gate.position;
    real eps = (real)m->cfg.norm_eps, scale = 1 / sqrt((real)dh);
    const Arena *A = &m->p;
    const real *wte = AW(A, m->wte);

    real *x = m->la[0].x_in;
    for (int i = 0; i < n; i++) memcpy(x + (size_t)i * C, wte + (size_t)tokens[i] * C, sizeof(real) * C);

    for (int l = 0; l < m->L; l++) {
        const LayerParams *p = &m->lp[l];
        LayerActs *a = &m->la[l];
        rmsnorm_forward(a->h, C, a->rstd1, a->x_in, C, AW(A, p->ln1), n, 1, C, eps);
        int ld = C;
        const real *in = lin_input(m, l, LIN_QKV, a->h, &ld, n, C);
        if (!in) goto oom;
        linear_forward(a->P, m->Np, in, ld, AW(A, p->wq), n, m->Np, C, 0);
        add_gate_bias(m, p, a, n);
        GateIn gi = gate_in(m, p, a);

        int latent = m->cfg.attn.kv == KV_LATENT; /* mla.c: from P to a->o and the row statistics */
        if (latent && mla_forward(m, l, B, T)) goto oom;
        if (latent) goto attended;
        const real *q = a->P, *k = a->P + m->nq, *v = a->P + m->nq + m->nkv;
        int sq = m->Np, sk = m->Np, sv = m->Np;
        if (m->cfg.qk_norm) {
            rmsnorm_forward(a->qn, m->nq, a->rq, q, sq, AW(A, p->q_norm), n, H, dh, eps);
            rmsnorm_forward(a->kn, m->nkv, a->rk, k, sk, AW(A, p->k_norm), n, Hk, dh, eps);
            q = a->qn, sq = m->nq, k = a->kn, sk = m->nkv;
        }
        gate_qkv(m, a, gi, n, &q, &sq, &k, &sk, &v, &sv);
        rope_forward(a->qr, q, sq, m->cos_t, m->sin_t, n, T, H, dh);
        rope_forward(a->kr, k, sk, m->cos_t, m->sin_t, n, T, Hk, dh);
        AttnNorm an = attn_of(m, p, a, B, T, scale);
        if (sparse_on(m, T)
                ? sparse_model_forward(m, l, a->o, a->lse, a->h, a->qr, m->nq, a->kr, m->nkv, v, sv, scale)
                : attention_forward_norm(a->o, a->lse, a->qr, m->nq, a->kr, m->nkv, v, sv, B, T, H, Hk, dh, scale, &an))
            goto oom;

    attended:;
        const real *o = a->o;
        if (m->cfg.gate.control == GC_SILU) {
            silu_forward(a->oc, o, n, m->nq, m->nq);
            o = a->oc;
        } else if (m->cfg.gate.control == GC_RMSNORM) {
            rmsnorm_forward(a->oc, m->nq, a->ro, o, m->nq, AW(A, p->sdpa_norm), n, H, dh, eps);
            o = a->oc;
        } else if (m->cfg.gate.control == GC_SCALE) {
            real sc = (real)m->cfg.gate.control_scale;
            for (size_t i = 0; i < (size_t)n * m->nq; i++) a->oc[i] = sc * o[i];
            o = a->oc;
        }
        if (pos == GP_SDPA) {
            gate_forward(&m->gop, a->og, m->nq, a->S, o, m->nq, gi.L, gi.sl, n);
            o = a->og;
        }
        ld = m->nq;
        if (!(in = lin_input(m, l, LIN_WO, o, &ld, n, m->nq))) goto oom;
        linear_forward(a->a, C, in, ld, AW(A, p->wo), n, C, m->nq, 0);
        const real *att = a->a;
        if (pos == GP_DENSE) {
            gate_forward(&m->gop, a->ag, C, a->S, att, C, gi.L, gi.sl, n);
            att = a->ag;
        }
        for (size_t i = 0; i < (size_t)n * C; i++) a->x_mid[i] = a->x_in[i] + att[i];

        rmsnorm_forward(a->h2, C, a->rstd2, a->x_mid, C, AW(A, p->ln2), n, 1, C, eps);
        ld = C;
        if (!(in = lin_input(m, l, LIN_FFN_IN, a->h2, &ld, n, C))) goto oom;
        linear_forward(a->U, 2 * m->F, in, ld, AW(A, p->w_gate), n, 2 * m->F, C, 0);
        swiglu_forward(a->hs, a->U, n, m->F);
        real *xo = l + 1 < m->L ? m->la[l + 1].x_in : m->x_out;
        memcpy(xo, a->x_mid, sizeof(real) * (size_t)n * C);
        ld = m->F;
        if (!(in = lin_input(m, l, LIN_FFN_DOWN, a->hs, &ld, n, m->F))) goto oom;
        linear_forward(xo, C, in, ld, AW(A, p->w_down), n, C, m->F, 1);
    }
    rmsnorm_forward(m->xf, C, m->rstdf, m->x_out, C, AW(A, m->ln_f), n, 1, C, eps);
    linear_forward(m->logits, m->V, m->xf, C, wte, n, m->V, C, 0);
    if (!targets) return m->loss = 0;
    memcpy(m->targets, targets, sizeof(int) * (size_t)n);
    return m->loss = crossentropy_forward(m->probs, m->logits, targets, n, m->V);
oom:
    errno = ENOMEM;
    return NAN;
}

/* -------------------------------------------------------------- backward */

static real *zeroed(real *p, size_t n) {
    memset(p, 0, sizeof(real) * n);
    return p;
}

int model_backward(Model *m, const int *tokens) {
    int B = m->B, T = m->T, n = B * T, C = m->C, H = m->H, Hk = m->Hk, dh = m->dh;
    int pos = m->cfg.gate.position, ctl = m->cfg.gate.control, static_gate = m->cfg.gate.input == GI_STATIC;
    real scale = 1 / sqrt((real)dh);
    Arena *A = &m->p;
    size_t N = (size_t)n;
    size_t big = m->gbig;
    if (!m->gradmem && !(m->gradmem = malloc(sizeof(real) * m->gradlen))) {
        errno = ENOMEM;
        return -1;
    }
    real *dx = m->gradmem, *dh_ = dx + N * C, *dP = dh_ + N * C, *s0 = dP + N * m->Np;
    real *s1 = s0 + N * big, *s2 = s1 + N * big, *s3 = s2 + N * big, *s4 = s3 + N * big, *s5 = s4 + N * big;
    real *dlogits = s5 + N * big;
    if (m->sp && sparse_warm(m)) return sparse_warm_backward(m); /* the indexer's warm-up: only its KL */

    /* head: logits = xf · wte^T, xf = rmsnorm(x_out) · ln_f */
    crossentropy_backward(dlogits, m->probs, m->targets, n, m->V, 1);
    real *dxf = zeroed(s0, N * C);
    linear_backward(dxf, C, AG(A, m->wte), dlogits, m->V, m->xf, AW(A, m->wte), n, m->V, C);
    zeroed(dx, N * C);
    rmsnorm_backward(dx, C, AG(A, m->ln_f), dxf, C, m->x_out, C, AW(A, m->ln_f), m->rstdf, n, 1, C);

    for (int l = m->L - 1; l >= 0; l--) {
        const LayerParams *p = &m->lp[l];
        LayerActs *a = &m->la[l];
        GateIn gi = gate_in(m, p, a);
        /* the gated tensor's input and output, as forward used them */
        const real *gin = NULL, *gout = NULL;
        int sgin = 0, sgout = 0;
        model_gate_io(m, l, &gin, &sgin, &gout, &sgout);
        real *dL = static_gate ? AG(A, p->gate_p) : dP + m->Np - m->ng;
        int sdl = static_gate ? 0 : m->Np;

        /* FFN: x_out = x_mid + swiglu(h2 · [w_gate|w_up]^T) · w_down^T */
        real *dhs = zeroed(s0, N * m->F);
        linear_backward(dhs, m->F, AG(A, p->w_down), dx, C, a->hs, AW(A, p->w_down), n, C, m->F);
        real *dU = zeroed(s1, N * 2 * m->F);
        swiglu_backward(dU, dhs, a->U, n, m->F);
        real *dh2 = zeroed(s0, N * C);
        linear_backward(dh2, C, AG(A, p->w_gate), dU, 2 * m->F, a->h2, AW(A, p->w_gate), n, 2 * m->F, C);
        rmsnorm_backward(dx, C, AG(A, p->ln2), dh2, C, a->x_mid, C, AW(A, p->ln2), a->rstd2, n, 1, C);

        /* attention block: x_mid = x_in + gate5(o' · wo^T) */
        zeroed(dP, N * m->Np);
        const real *da = dx;
        if (pos == GP_DENSE) {
            real *d = zeroed(s1, N * C);
            gate_backward(&m->gop, d, C, dL, sdl, s2, dx, C, a->S, gin, sgin, gi.L, gi.sl, n);
            da = d;
        }
        /* o' is the input of wo: og (G1), else oc (control), else o */
        const real *o_in = pos == GP_SDPA ? gout : ctl ? a->oc : a->o;
        real *dog = zeroed(s0, N * m->nq);
        linear_backward(dog, m->nq, AG(A, p->wo), da, C, o_in, AW(A, p->wo), n, C, m->nq);
        real *doc = dog;
        if (pos == GP_SDPA) {
            doc = zeroed(s1, N * m->nq);
            gate_backward(&m->gop, doc, m->nq, dL, sdl, s2, dog, m->nq, a->S, gin, sgin, gi.L, gi.sl, n);
        }
        real *dO = doc;
        if (ctl == GC_SILU) {
            dO = zeroed(s2, N * m->nq);
            silu_backward(dO, doc, a->o, n, m->nq, m->nq);
        } else if (ctl == GC_RMSNORM) {
            dO = zeroed(s2, N * m->nq);
            rmsnorm_backward(dO, m->nq, AG(A, p->sdpa_norm), doc, m->nq, a->o, m->nq, AW(A, p->sdpa_norm), a->ro,
                             n, H, dh);
        } else if (ctl == GC_SCALE) {
            dO = s2;
            real sc = (real)m->cfg.gate.control_scale;
            for (size_t i = 0; i < N * m->nq; i++) dO[i] = sc * doc[i];
        }

        if (m->cfg.attn.kv == KV_LATENT) {
            if (mla_backward(m, l, dO, dP)) return -1;
            goto projected;
        }
        int sv_att;
        const real *v_att = model_attn_values(m, l, &sv_att);

        real *dqr = zeroed(s3, N * m->nq), *dkr = zeroed(s4, N * m->nkv);
        real *dv = pos == GP_VALUE ? zeroed(s5, N * m->nkv) : dP + m->nq + m->nkv;
        AttnNorm an = {m->cfg.attn.normalizer, a->z};
        if (sparse_on(m, T)
                ? sparse_model_backward(m, l, dqr, dkr, dv, dO, a->o, a->lse, a->qr, m->nq, a->kr, m->nkv, v_att,
                                        sv_att, scale)
                : attention_backward_norm(dqr, dkr, dv, dO, a->o, a->lse, a->qr, m->nq, a->kr, m->nkv, v_att,
                                          sv_att, B, T, H, Hk, dh, scale, &an)) {
            errno = ENOMEM;
            return -1;
        }
        if (a->z)
            attn_virtual_backward(dqr, p->sink >= 0 ? AG(A, p->sink) : NULL, p->kstar >= 0 ? AG(A, p->kstar) : NULL,
                                  an.kind, a->z, a->lse, dO, a->o, p->kstar >= 0 ? AW(A, p->kstar) : NULL, a->qr,
                                  m->nq, B, T, H, Hk, dh, scale);
        if (pos == GP_VALUE)
            gate_backward(&m->gop, dP + m->nq + m->nkv, m->Np, dL, sdl, s1, dv, m->nkv, a->S, gin, sgin, gi.L, gi.sl,
                          n);

        /* rope back into the (normed) q/k, through a G4/G3 gate if any */
        real *dqn = m->cfg.qk_norm ? zeroed(s0, N * m->nq) : dP;
        int sdqn = m->cfg.qk_norm ? m->nq : m->Np;
        real *dkn = m->cfg.qk_norm ? zeroed(s2, N * m->nkv) : dP + m->nq;
        int sdkn = m->cfg.qk_norm ? m->nkv : m->Np;
        if (pos == GP_QUERY) {
            real *dg = zeroed(s5, N * m->nq);
            rope_backward(dg, m->nq, dqr, m->cos_t, m->sin_t, n, T, H, dh);
            gate_backward(&m->gop, dqn, sdqn, dL, sdl, s1, dg, m->nq, a->S, gin, sgin, gi.L, gi.sl, n);
        } else {
            rope_backward(dqn, sdqn, dqr, m->cos_t, m->sin_t, n, T, H, dh);
        }
        if (pos == GP_KEY) {
            real *dg = zeroed(s5, N * m->nkv);
            rope_backward(dg, m->nkv, dkr, m->cos_t, m->sin_t, n, T, Hk, dh);
            gate_backward(&m->gop, dkn, sdkn, dL, sdl, s1, dg, m->nkv, a->S, gin, sgin, gi.L, gi.sl, n);
        } else {
            rope_backward(dkn, sdkn, dkr, m->cos_t, m->sin_t, n, T, Hk, dh);
        }
        if (m->cfg.qk_norm) {
            rmsnorm_backward(dP, m->Np, AG(A, p->q_norm), dqn, m->nq, a->P, m->Np, AW(A, p->q_norm), a->rq, n, H,
                             dh);
            rmsnorm_backward(dP + m->nq, m->Np, AG(A, p->k_norm), dkn, m->nkv, a->P + m->nq, m->Np,
                             AW(A, p->k_norm), a->rk, n, Hk, dh);
        }

    projected:
        /* the logit bias: every token's gate-logit gradient, in token order */
        if (p->gate_b >= 0) {
            real *db = AG(A, p->gate_b);
            for (int t = 0; t < n; t++) {
                const real *d = dP + (size_t)t * m->Np + m->Np - m->ng;
                for (int j = 0; j < m->ng; j++) db[j] += d[j];
            }
        }
        /* fused projection, then the pre-attention norm into the residual */
        zeroed(dh_, N * C);
        linear_backward(dh_, C, AG(A, p->wq), dP, m->Np, a->h, AW(A, p->wq), n, m->Np, C);
        rmsnorm_backward(dx, C, AG(A, p->ln1), dh_, C, a->x_in, C, AW(A, p->ln1), a->rstd1, n, 1, C);
    }
    /* embedding lookup: serial so repeated tokens add in a fixed order */
    real *dwte = AG(A, m->wte);
    for (int i = 0; i < n; i++) {
        real *d = dwte + (size_t)tokens[i] * C;
        const real *s = dx + (size_t)i * C;
        for (int c = 0; c < C; c++) d[c] += s[c];
    }
    return 0;
}

/* ------------------------------------------------------------------ FLOPs */

void model_flops(const Model *m, int T, double *fwd, double *train) {
    double C = m->C, per_layer = 0;
    per_layer += 2.0 * C * m->Np;            /* fused q|k|v|gate projection */
    per_layer += 2.0 * m->nq * C;            /* wo */
    per_layer += 2.0 * 3.0 * C * m->F;       /* SwiGLU */
    per_layer += 2.0 * 2.0 * m->nq * (T + 1) / 2.0; /* q·k and p·v over the causal half */
    if (m->cfg.attn.kv == KV_LATENT) per_layer += mla_extra_flops(m, T);
    per_layer += sparse_flops_delta(&m->cfg, T);      /* top-k sparse attention: 0 when dense */
    double f = m->L * per_layer + 2.0 * C * m->V;   /* + tied output layer */
    *fwd = f;
    *train = 3.0 * f;
}

/* ------------------------------------------------------------ gate views */

int model_gate_io(const Model *m, int l, const real **y, int *sy, const real **out, int *so) {
    const LayerActs *a = &m->la[l];
    int qk = m->cfg.qk_norm;
    switch (m->cfg.gate.position) {
    case GP_SDPA:
        *y = m->cfg.gate.control ? a->oc : a->o, *sy = m->nq, *out = a->og, *so = m->nq;
        return 1;
    case GP_QUERY:
        *y = qk ? a->qn : a->P, *sy = qk ? m->nq : m->Np, *out = a->gy, *so = m->nq;
        return 1;
    case GP_KEY:
        *y = qk ? a->kn : a->P + m->nq, *sy = qk ? m->nkv : m->Np, *out = a->gy, *so = m->nkv;
        return 1;
    case GP_VALUE:
        *y = a->P + m->nq + m->nkv, *sy = m->Np, *out = a->gy, *so = m->nkv;
        return 1;
    case GP_DENSE:
        *y = a->a, *sy = m->C, *out = a->ag, *so = m->C;
        return 1;
    default: return 0;
    }
}

void model_attn_qkv(const Model *m, int l, AttnQKV *out) {
    if (m->cfg.attn.kv == KV_LATENT) {
        mla_attn_qkv(m, l, out);
        return;
    }
    const LayerActs *a = &m->la[l];
    out->q = a->qr, out->sq = m->nq, out->k = a->kr, out->sk = m->nkv, out->d = m->dh, out->hk = m->Hk;
    out->v = model_attn_values(m, l, &out->sv);
}

const real *model_attn_values(const Model *m, int l, int *sv) {
    /* the G2 gate's output, else the projection */
    const LayerActs *a = &m->la[l];
    if (m->cfg.attn.kv == KV_LATENT) return mla_values(m, l, sv);
    if (m->cfg.gate.position == GP_VALUE) {
        *sv = m->nkv;
        return a->gy;
    }
    *sv = m->Np;
    return a->P + m->nq + m->nkv;
}
