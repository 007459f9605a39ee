/*
 * f64_grad.c — finite-difference gradient checks, in double precision.
 *
 * Two layers of checks, both against central differences:
 *   - every op on its own (linear, rmsnorm, rope, attention, swiglu, silu,
 *     cross-entropy, the gate in each geometry), on all input entries;
 *   - the whole model's loss with respect to every parameter tensor, for
 *     every valid gate variant from gate_enumerate() plus the controls, GQA
 *     and QK-norm on/off, and every attention normaliser (ATTN_NORMALIZERS)
 *     alone and under a G1 gate.  A failure names the variant, the tensor, the
 *     worst index and both values and errors.
 *
 * Linked with build/libgated_f64.a, so `real` is double here.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gate.h"
#include "nn/model.h"
#include "nn/ops.h"
#include "nn/rng.h"
#include "nn/sparse.h"
#include "testutil.h"
#include "nn/variant.h"

_Static_assert(sizeof(real) == 8, "gradient checks need the double build");

#define FD_H 1e-5
#define FD_ATOL 1e-7
#define FD_RTOL 1e-5

/* -------------------------------------------------------- op-level harness */

typedef struct OpCase OpCase;
struct OpCase {
    const char *name;
    int nin, nout;
    /* y = f(x); dx += J^T dy.  ctx holds sizes and scratch. */
    void (*fwd)(const OpCase *, const real *x, real *y);
    void (*bwd)(const OpCase *, const real *x, const real *dy, real *dx);
    int i[8];
    GateOp g;
};

static void fill(real *x, int n, Rng *r, double sd) {
    for (int i = 0; i < n; i++) x[i] = (real)(sd * rng_normal(r));
}

/* L(x) = Σ r·f(x); compares J^T r from bwd with central differences. */
static void check_op(const OpCase *oc) {
    Rng r = rng_seed(42);
    real *x = calloc(oc->nin, sizeof(real)), *y = calloc(oc->nout, sizeof(real)), *dy = calloc(oc->nout, sizeof(real));
    real *dx = calloc(oc->nin, sizeof(real)), *num = calloc(oc->nin, sizeof(real));
    cr_assert(x && y && dy && dx && num);
    fill(x, oc->nin, &r, 1.0);
    fill(dy, oc->nout, &r, 1.0);
    oc->bwd(oc, x, dy, dx);
    for (int i = 0; i < oc->nin; i++) {
        real keep = x[i];
        double lp = 0, lm = 0;
        x[i] = keep + FD_H;
        oc->fwd(oc, x, y);
        for (int j = 0; j < oc->nout; j++) lp += y[j] * dy[j];
        x[i] = keep - FD_H;
        oc->fwd(oc, x, y);
        for (int j = 0; j < oc->nout; j++) lm += y[j] * dy[j];
        x[i] = keep;
        num[i] = (real)((lp - lm) / (2 * FD_H));
    }
    Cmp c = cmp_arrays(dx, num, oc->nin, 1e-3);
    int bad = 0;
    for (int i = 0; i < oc->nin; i++)
        if (fabs(dx[i] - num[i]) > FD_ATOL + FD_RTOL * fabs(num[i])) bad++;
    cr_expect(bad == 0, "%s: %d of %d inputs off; worst index %zu analytic %.10g numeric %.10g (abs %.3g rel %.3g)",
              oc->name, bad, oc->nin, c.worst, c.a, c.b, c.max_abs, c.max_rel);
    free(x), free(y), free(dy), free(dx), free(num);
}

/* linear: x = [X (n,K) | W (N,K)] */
static void lin_f(const OpCase *o, const real *x, real *y) {
    int n = o->i[0], N = o->i[1], K = o->i[2];
    linear_forward(y, N, x, K, x + n * K, n, N, K, 0);
}
static void lin_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    int n = o->i[0], N = o->i[1], K = o->i[2];
    linear_backward(dx, K, dx + n * K, dy, N, x, x + n * K, n, N, K);
}

/* rmsnorm over groups with a token stride: x = [X (n, s) | w (d)] */
static void rms_f(const OpCase *o, const real *x, real *y) {
    int n = o->i[0], g = o->i[1], d = o->i[2], s = o->i[3];
    real rstd[64];
    rmsnorm_forward(y, g * d, rstd, x, s, x + n * s, n, g, d, 1e-6);
}
static void rms_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    int n = o->i[0], g = o->i[1], d = o->i[2], s = o->i[3];
    real rstd[64], y[512];
    rmsnorm_forward(y, g * d, rstd, x, s, x + n * s, n, g, d, 1e-6);
    rmsnorm_backward(dx, s, dx + n * s, dy, g * d, x, s, x + n * s, rstd, n, g, d);
}

/* rope: x (n, s) holding h heads of d */
static void rope_f(const OpCase *o, const real *x, real *y) {
    int n = o->i[0], T = o->i[1], h = o->i[2], d = o->i[3], s = o->i[4];
    real ct[256], st[256];
    RopeScaling rp = rope_plain(100.0);
    rope_tables(ct, st, T, d, &rp);
    rope_forward(y, x, s, ct, st, n, T, h, d);
}
static void rope_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    int n = o->i[0], T = o->i[1], h = o->i[2], d = o->i[3], s = o->i[4];
    real ct[256], st[256];
    RopeScaling rp = rope_plain(100.0);
    (void)x;
    rope_tables(ct, st, T, d, &rp);
    rope_backward(dx, s, dy, ct, st, n, T, h, d);
}

/* attention: x = [q (BT, H*d) | k (BT, Hk*d) | v (BT, Hk*d)] */
static void att_f(const OpCase *o, const real *x, real *y) {
    int B = o->i[0], T = o->i[1], H = o->i[2], Hk = o->i[3], d = o->i[4];
    real lse[256];
    const real *q = x, *k = q + B * T * H * d, *v = k + B * T * Hk * d;
    attention_forward(y, lse, q, H * d, k, Hk * d, v, Hk * d, B, T, H, Hk, d, 1 / sqrt((real)d));
}
static void att_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    int B = o->i[0], T = o->i[1], H = o->i[2], Hk = o->i[3], d = o->i[4];
    real lse[256], y[1024];
    const real *q = x, *k = q + B * T * H * d, *v = k + B * T * Hk * d;
    attention_forward(y, lse, q, H * d, k, Hk * d, v, Hk * d, B, T, H, Hk, d, 1 / sqrt((real)d));
    attention_backward(dx, dx + B * T * H * d, dx + B * T * (H + Hk) * d, dy, y, lse, q, H * d, k, Hk * d, v,
                       Hk * d, B, T, H, Hk, d, 1 / sqrt((real)d));
}

static void swi_f(const OpCase *o, const real *x, real *y) { swiglu_forward(y, x, o->i[0], o->i[1]); }
static void swi_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    swiglu_backward(dx, dy, x, o->i[0], o->i[1]);
}
static void silu_f(const OpCase *o, const real *x, real *y) { silu_forward(y, x, o->i[0], o->i[1], o->i[1]); }
static void silu_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    silu_backward(dx, dy, x, o->i[0], o->i[1], o->i[1]);
}

/* cross-entropy as a function of the logits; output is the scalar loss */
static const int ce_targets[8] = {3, 0, 5, 5, 1, 2, 4, 0};
static void ce_f(const OpCase *o, const real *x, real *y) {
    real p[64];
    y[0] = (real)crossentropy_forward(p, x, ce_targets, o->i[0], o->i[1]);
}
static void ce_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    real p[64], d[64];
    int n = o->i[0], V = o->i[1];
    crossentropy_forward(p, x, ce_targets, n, V);
    crossentropy_backward(d, p, ce_targets, n, V, dy[0]);
    for (int i = 0; i < n * V; i++) dx[i] += d[i];
}

/* gate: x = [Y (n, W) | L (n, nl) or (nl) when static] */
static void gate_f(const OpCase *o, const real *x, real *y) {
    int n = o->i[0], W = o->g.hpos * o->g.D, nl = o->i[1], stat = o->i[2];
    real S[1024];
    gate_forward(&o->g, y, W, S, x, W, x + n * W, stat ? 0 : nl, n);
}
static void gate_b(const OpCase *o, const real *x, const real *dy, real *dx) {
    int n = o->i[0], W = o->g.hpos * o->g.D, nl = o->i[1], stat = o->i[2];
    real S[1024], y[1024], G[1024];
    gate_forward(&o->g, y, W, S, x, W, x + n * W, stat ? 0 : nl, n);
    gate_backward(&o->g, dx, W, dx + n * W, stat ? 0 : nl, G, dy, W, S, x, W, x + n * W, stat ? 0 : nl, n);
}

Test(ops_fd, linear) {
    OpCase o = {"linear", 5 * 3 + 4 * 3, 5 * 4, lin_f, lin_b, {5, 4, 3}, {0}};
    check_op(&o);
}
Test(ops_fd, rmsnorm_rows) {
    OpCase o = {"rmsnorm", 4 * 6 + 6, 4 * 6, rms_f, rms_b, {4, 1, 6, 6}, {0}};
    check_op(&o);
}
Test(ops_fd, rmsnorm_groups_strided) {
    /* 3 tokens, 2 groups of 4 inside rows of 11 (as q inside the fused projection) */
    OpCase o = {"rmsnorm(groups)", 3 * 11 + 4, 3 * 8, rms_f, rms_b, {3, 2, 4, 11}, {0}};
    check_op(&o);
}
Test(ops_fd, rope) {
    OpCase o = {"rope", 6 * 9, 6 * 8, rope_f, rope_b, {6, 3, 2, 4, 9}, {0}};
    check_op(&o);
}
Test(ops_fd, attention_mha) {
    int B = 2, T = 4, H = 2, Hk = 2, d = 3;
    OpCase o = {"attention", B * T * (H + 2 * Hk) * d, B * T * H * d, att_f, att_b, {B, T, H, Hk, d}, {0}};
    check_op(&o);
}
Test(ops_fd, attention_gqa) {
    int B = 1, T = 5, H = 4, Hk = 2, d = 2;
    OpCase o = {"attention(gqa)", B * T * (H + 2 * Hk) * d, B * T * H * d, att_f, att_b, {B, T, H, Hk, d}, {0}};
    check_op(&o);
}
Test(ops_fd, swiglu) {
    OpCase o = {"swiglu", 3 * 10, 3 * 5, swi_f, swi_b, {3, 5}, {0}};
    check_op(&o);
}
Test(ops_fd, silu) {
    OpCase o = {"silu", 3 * 7, 3 * 7, silu_f, silu_b, {3, 7}, {0}};
    check_op(&o);
}
Test(ops_fd, crossentropy) {
    OpCase o = {"crossentropy", 8 * 6, 1, ce_f, ce_b, {8, 6}, {0}};
    check_op(&o);
}

/* The gate op in every geometry the model can ask for. */
Test(ops_fd, gate_all_geometries) {
    int n = 3, hpos = 3, D = 4;
    for (int gr = 0; gr < GG__COUNT; gr++)
        for (int sh = 0; sh < GS__COUNT; sh++)
            for (int in = 0; in < GI__COUNT; in++)
                for (int fo = 0; fo < GF__COUNT; fo++)
                    for (int ac = 0; ac < GA__COUNT; ac++) {
                        GateCfg cfg = gate_default();
                        cfg.position = GP_SDPA, cfg.granularity = gr, cfg.sharing = sh;
                        cfg.form = fo, cfg.activation = ac, cfg.input = in;
                        OpCase o = {0};
                        o.g = gate_op(&cfg, hpos, D);
                        int nl = o.g.lh * o.g.ld;
                        o.i[0] = n, o.i[1] = nl, o.i[2] = in == GI_STATIC;
                        o.nin = n * hpos * D + (in == GI_STATIC ? nl : n * nl);
                        o.nout = n * hpos * D;
                        o.fwd = gate_f, o.bwd = gate_b;
                        char lab[128];
                        o.name = gate_label(&cfg, lab, sizeof lab);
                        check_op(&o);
                    }
}

/* Fast attention forward against the plain materialising reference. */
Test(ops_ref, attention_forward_matches_reference) {
    int B = 2, T = 7, H = 4, Hk = 2, d = 4;
    Rng r = rng_seed(5);
    real q[2 * 7 * 16], k[2 * 7 * 8], v[2 * 7 * 8], o1[2 * 7 * 16], o2[2 * 7 * 16], lse[2 * 4 * 7];
    fill(q, 224, &r, 1), fill(k, 112, &r, 1), fill(v, 112, &r, 1);
    attention_forward(o1, lse, q, 16, k, 8, v, 8, B, T, H, Hk, d, 0.5);
    attention_forward_ref(o2, NULL, q, 16, k, 8, v, 8, B, T, H, Hk, d, 0.5);
    Cmp c = cmp_arrays(o1, o2, 224, 1e-6);
    cr_assert(c.max_abs < 1e-12, "attention fast vs ref: max abs %.3g at %zu", c.max_abs, c.worst);
}

/* ------------------------------------------------------ whole-model checks */

typedef struct {
    GateCfg g;
    int hk, qk, match;
    AttnCfg attn;
    char label[136];
} Variant;

#define MAX_VARIANTS 420

/* Every sparse row from the table (ATTN_SPARSES) at k 2 of T 5, so rows
 * 2..4 are sparse: ungated (MHA with QK-norm, GQA without) and under a G1
 * gate (GQA), the indexer at H_I 2, d_I 4.  The new count. */
static int add_sparse_variants(Variant *v, int n, GateCfg base, GateCfg g1) {
    for (int sp = AS_NONE + 1; sp < AS__COUNT; sp++) {
        const struct {
            GateCfg g;
            int hk, qk;
        } sx[] = {{base, 4, 1}, {base, 2, 0}, {g1, 2, 1}};
        for (size_t i = 0; i < sizeof sx / sizeof sx[0] && n < MAX_VARIANTS; i++, n++) {
            v[n].g = sx[i].g, v[n].hk = sx[i].hk, v[n].qk = sx[i].qk, v[n].match = 0;
            v[n].attn = attn_default(), v[n].attn.sparse = sp, v[n].attn.topk = 2;
            if (attn_sparses[sp].indexer) v[n].attn.idx_heads = 2, v[n].attn.idx_dim = 4;
        }
    }
    return n;
}

static int make_variants(Variant *v) {
    static GateCfg gates[MAX_VARIANTS];
    int ng = gate_enumerate(gates, MAX_VARIANTS), n = 0;
    /* GQA and QK-norm rotate through the gated variants so every
     * combination of the gate axes meets both settings across the list */
    static const int hks[3] = {4, 2, 1};
    for (int i = 0; i < ng && n < MAX_VARIANTS; i++, n++) {
        v[n].g = gates[i];
        v[n].hk = hks[i % 3];
        v[n].qk = (i / 3) % 2 == 0;
        v[n].match = 0;
    }
    GateCfg base = gate_default(), ctl_silu = base, ctl_rms = base;
    ctl_silu.control = GC_SILU;
    ctl_rms.control = GC_RMSNORM;
    GateCfg g1 = base;
    g1.position = GP_SDPA;
    GateCfg g1rms = g1;
    g1rms.control = GC_RMSNORM;
    /* the scale control alone and before a G1 gate (issue 14) */
    GateCfg ctl_scale = base, g1scale = g1;
    ctl_scale.control = g1scale.control = GC_SCALE;
    ctl_scale.control_scale = 0.3, g1scale.control_scale = 1.7;
    /* a learned logit bias at each position (hidden input), and a static
     * gate started at init_bias */
    GateCfg b1 = g1, b1hs = g1, b2 = base, b3 = base, b4 = base, b5 = base, st = g1;
    b1.bias = b1hs.bias = b2.bias = b3.bias = b4.bias = b5.bias = 1;
    b1.init_bias = 2, b1hs.init_bias = -1, b2.init_bias = 0.5, b3.init_bias = 1, b4.init_bias = -2, b5.init_bias = 3;
    b1hs.granularity = GG_HEADWISE, b1hs.sharing = GS_HEAD_SHARED;
    b2.position = GP_VALUE, b3.position = GP_KEY, b3.granularity = GG_HEADWISE, b4.position = GP_QUERY;
    b5.position = GP_DENSE, b5.activation = GA_TANH;
    st.input = GI_STATIC, st.init_bias = 2;
    const struct {
        GateCfg g;
        int hk, qk, match;
    } extra[] = {{base, 4, 1, 0},      {base, 4, 0, 0},     {base, 2, 1, 0},    {base, 1, 0, 0},
                 {ctl_silu, 4, 1, 0},  {ctl_silu, 2, 0, 0}, {ctl_rms, 4, 1, 0}, {ctl_rms, 1, 0, 0},
                 {g1, 4, 1, 1},        {g1rms, 2, 1, 0},    {ctl_scale, 4, 1, 0}, {g1scale, 2, 0, 0},
                 {b1, 4, 1, 0},        {b1hs, 2, 1, 0},     {b2, 2, 1, 0},      {b3, 1, 1, 0},
                 {b4, 4, 0, 0},        {b5, 4, 1, 0},       {st, 2, 1, 0},      {b1, 2, 1, 1}};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < MAX_VARIANTS; i++, n++) {
        v[n].g = extra[i].g;
        v[n].hk = extra[i].hk;
        v[n].qk = extra[i].qk;
        v[n].match = extra[i].match;
    }
    for (int i = 0; i < n; i++) v[i].attn = attn_default();
    /* every attention normaliser from the table: ungated (MHA with QK-norm,
     * GQA without) and under a G1 gate (GQA, and MQA without QK-norm);
     * sink_logit once more started off its default */
    for (int an = AN_SOFTMAX + 1; an < AN__COUNT; an++) {
        const struct {
            GateCfg g;
            int hk, qk;
        } nx[] = {{base, 4, 1}, {base, 2, 0}, {g1, 2, 1}, {g1, 1, 0}};
        for (size_t i = 0; i < sizeof nx / sizeof nx[0] && n < MAX_VARIANTS; i++, n++) {
            v[n].g = nx[i].g, v[n].hk = nx[i].hk, v[n].qk = nx[i].qk, v[n].match = 0;
            v[n].attn = attn_default(), v[n].attn.normalizer = an;
            if (an == AN_SINK_LOGIT && i == 3) v[n].attn.sink_init = 1.5;
        }
    }
    /* latent KV (MLA, d_head 4): with the decoupled RoPE key (d_R 2, and
     * d_R = d_head), without it, under G1 elementwise and headwise sigmoid,
     * with sink_logit and with G5 */
    GateCfg g1h = g1;
    g1h.granularity = GG_HEADWISE;
    GateCfg g5 = base;
    g5.position = GP_DENSE;
    const struct {
        GateCfg g;
        int d_c, d_R, norm;
    } lx[] = {{base, 6, 2, AN_SOFTMAX}, {base, 5, 4, AN_SOFTMAX}, {base, 6, 0, AN_SOFTMAX}, {g1, 6, 2, AN_SOFTMAX},
              {g1h, 6, 2, AN_SOFTMAX},  {g1, 6, 0, AN_SOFTMAX},  {base, 6, 2, AN_SINK_LOGIT}, {g5, 3, 2, AN_SOFTMAX}};
    for (size_t i = 0; i < sizeof lx / sizeof lx[0] && n < MAX_VARIANTS; i++, n++) {
        v[n].g = lx[i].g, v[n].hk = 4, v[n].qk = 0, v[n].match = 0;
        v[n].attn = attn_default(), v[n].attn.kv = KV_LATENT, v[n].attn.d_c = lx[i].d_c, v[n].attn.d_R = lx[i].d_R;
        v[n].attn.normalizer = lx[i].norm;
    }
    n = add_sparse_variants(v, n, base, g1);
    for (int i = 0; i < n; i++) {
        char lab[96];
        char lat[40] = "";
        if (v[i].attn.kv == KV_LATENT) snprintf(lat, sizeof lat, "/latent_c%d_R%d", v[i].attn.d_c, v[i].attn.d_R);
        snprintf(v[i].label, sizeof v[i].label, "%s/kv%d/%s%s%s%s%s%s%s", gate_label(&v[i].g, lab, sizeof lab), v[i].hk,
                 v[i].qk ? "qk" : "noqk", v[i].match ? "/matched" : "", v[i].attn.normalizer ? "/" : "",
                 v[i].attn.normalizer ? attn_norm_names[v[i].attn.normalizer] : "", lat, v[i].attn.sparse ? "/topk-" : "",
                 v[i].attn.sparse ? attn_sparse_names[v[i].attn.sparse] : "");
    }
    return n;
}

ParameterizedTestParameters(model_fd, every_variant) {
    static Variant v[MAX_VARIANTS];
    int n = make_variants(v);
    return cr_make_param_array(Variant, v, n);
}

/* Every layer's sparse selection after the last forward (NULL-safe:
 * nothing for a dense model), into sel (L x B x T x k ints). */
static void selections(const Model *m, int *sel) {
    size_t per = (size_t)m->B * m->T * m->cfg.attn.topk;
    for (int l = 0; l < m->L; l++) {
        const int *s = sparse_selection(m, l);
        if (s) memcpy(sel + l * per, s, sizeof(int) * per);
    }
}

/* The selection is piecewise constant in the weights: a central difference
 * is only a derivative while no perturbed forward selects other keys.  So
 * the first forward's selections are kept here and every perturbed forward
 * must give them back (else the check fails, naming the tensor): the step
 * FD_H is small against the gaps between the k-th and (k+1)-th scores at
 * these weights, and the test proves it instead of assuming it. */
static int *fd_sel0, *fd_sel;
static size_t fd_sel_n;

/* Loss of the model at its current weights on a fixed batch. */
static double loss_at(Model *m, const int *tok, const int *tgt) {
    double l = model_forward(m, tok, tgt, m->B, m->T);
    if (fd_sel_n) {
        selections(m, fd_sel);
        if (memcmp(fd_sel, fd_sel0, sizeof(int) * fd_sel_n)) return NAN;
    }
    return l;
}

/* The sparse indexer's objective (DeepSeek's KL, nn/sparse.h): its tensors'
 * gradient is that of the mean KL, computed by the backward (the language-
 * model loss gives them none), so their differences are of it. */
static double kl_at(Model *m, const int *tok, const int *tgt) {
    if (isnan(loss_at(m, tok, tgt))) return NAN;
    model_zero_grad(m);
    cr_assert(model_backward(m, tok) == 0);
    return sparse_indexer_kl(m);
}

ParameterizedTest(Variant *v, model_fd, every_variant) {
    set_threads(1);
    Config c = tiny_config(11, 16, 2, 4, v->hk, 12, 5, 2);
    c.qk_norm = v->qk;
    c.match_params = v->match;
    c.gate = v->g;
    c.attn = v->attn;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    Rng r = rng_seed(1000 + v->g.position * 7 + v->g.activation + 31 * v->attn.normalizer + 101 * v->attn.sparse);
    /* move norm weights and static gates off their init, and scale the
     * weights up so every nonlinearity is exercised away from zero */
    for (int i = 0; i < m.p.n; i++)
        for (size_t j = 0; j < m.p.t[i].n; j++)
            m.p.w[m.p.t[i].off + j] = m.p.t[i].decay ? (real)(0.3 * rng_normal(&r))
                                                      : m.p.w[m.p.t[i].off + j] + (real)(0.3 * rng_normal(&r));
    int B = 2, T = 5, tok[10], tgt[10];
    for (int i = 0; i < B * T; i++) tok[i] = (int)rng_below(&r, 11), tgt[i] = (int)rng_below(&r, 11);
    double l0 = model_forward(&m, tok, tgt, B, T);
    cr_assert(isfinite(l0));
    fd_sel_n = v->attn.sparse ? (size_t)m.L * B * T * v->attn.topk : 0;
    fd_sel0 = fd_sel_n ? calloc(fd_sel_n, sizeof(int)) : NULL;
    fd_sel = fd_sel_n ? calloc(fd_sel_n, sizeof(int)) : NULL;
    cr_assert(!fd_sel_n || (fd_sel0 && fd_sel));
    if (fd_sel_n) {
        cr_assert(sparse_selection(&m, 0), "%s: the forward was not sparse", v->label);
        selections(&m, fd_sel0);
    }
    model_zero_grad(&m);
    cr_assert(model_backward(&m, tok) == 0);
    real *ga = malloc(sizeof(real) * m.p.total);
    cr_assert(ga);
    memcpy(ga, m.p.g, sizeof(real) * m.p.total);

    int failures = 0;
    for (int ti = 0; ti < m.p.n; ti++) {
        const Tensor *t = &m.p.t[ti];
        /* all entries of small tensors, a fixed sample of 24 of larger ones */
        int ns = t->n <= 24 ? (int)t->n : 24;
        double worst = 0, wa = 0, wn = 0, wabs = 0;
        size_t widx = 0;
        for (int s = 0; s < ns; s++) {
            size_t j = t->n <= 24 ? (size_t)s : (size_t)rng_below(&r, t->n);
            real *w = m.p.w + t->off + j, keep = *w;
            double (*f)(Model *, const int *, const int *) = strstr(t->name, ".indexer") ? kl_at : loss_at;
            *w = keep + FD_H;
            double lp = f(&m, tok, tgt);
            *w = keep - FD_H;
            double lm = f(&m, tok, tgt);
            *w = keep;
            cr_assert(!isnan(lp) && !isnan(lm), "%s: tensor %s index %zu: a perturbation of %g changed the sparse "
                      "selection (a near-tie): pick another seed", v->label, t->name, j, FD_H);
            double num = (lp - lm) / (2 * FD_H), an = ga[t->off + j];
            double err = fabs(an - num), tol = FD_ATOL + FD_RTOL * fabs(num);
            if (err / tol > worst) worst = err / tol, wa = an, wn = num, widx = j, wabs = err;
        }
        if (worst > 1) {
            failures++;
            cr_log_error("%s: tensor %s worst index %zu analytic %.10g numeric %.10g abs err %.3g rel err %.3g",
                         v->label, t->name, widx, wa, wn, wabs, wabs / (fabs(wn) + 1e-30));
        }
    }
    cr_expect(failures == 0, "%s: %d tensor(s) fail the finite-difference check", v->label, failures);
    free(ga);
    free(fd_sel0), free(fd_sel);
    fd_sel0 = fd_sel = NULL, fd_sel_n = 0;
    model_free(&m);
}

/* The variant list covers what the issue asks: at least 40 configurations,
 * every position, activation and control in the tables, and every valid
 * gated combination (gate_enumerate). */
Test(model_fd, coverage) {
    static Variant v[MAX_VARIANTS];
    static GateCfg all[MAX_VARIANTS];
    int n = make_variants(v), pos[GP__COUNT] = {0}, act[GA__COUNT] = {0}, ctl[GC__COUNT] = {0};
    int ng = gate_enumerate(all, MAX_VARIANTS);
    cr_assert_leq(ng, MAX_VARIANTS, "MAX_VARIANTS (%d) is below gate_enumerate's %d", MAX_VARIANTS, ng);
    int biased[GP__COUNT] = {0};
    for (int i = 0; i < n; i++) pos[v[i].g.position]++, act[v[i].g.activation]++, ctl[v[i].g.control]++;
    for (int i = 0; i < n; i++) biased[v[i].g.position] += v[i].g.bias;
    for (int p = GP_NONE + 1; p < GP__COUNT; p++)
        cr_assert_gt(biased[p], 0, "no variant with a logit bias at position %s", gate_position_names[p]);
    int norm[AN__COUNT] = {0}, norm_g1[AN__COUNT] = {0};
    for (int i = 0; i < n; i++) norm[v[i].attn.normalizer]++, norm_g1[v[i].attn.normalizer] += v[i].g.position == GP_SDPA;
    for (int a = 0; a < AN__COUNT; a++) {
        cr_assert_gt(norm[a], 0, "no variant with normalizer %s", attn_norm_names[a]);
        cr_assert_gt(norm_g1[a], 0, "no variant with normalizer %s under a G1 gate", attn_norm_names[a]);
    }
    int latent = 0, latent_nor = 0, latent_g1[GG__COUNT] = {0};
    for (int i = 0; i < n; i++)
        if (v[i].attn.kv == KV_LATENT) {
            latent++, latent_nor += v[i].attn.d_R == 0;
            if (v[i].g.position == GP_SDPA) latent_g1[v[i].g.granularity]++;
        }
    cr_assert_gt(latent, 0, "no latent-KV variant");
    cr_assert_gt(latent_nor, 0, "no latent-KV variant without the RoPE key");
    for (int g = 0; g < GG__COUNT; g++)
        cr_assert_gt(latent_g1[g], 0, "no latent-KV variant under a %s G1 gate", gate_granularity_names[g]);
    int sp[AS__COUNT] = {0}, sp_g1[AS__COUNT] = {0};
    for (int i = 0; i < n; i++) sp[v[i].attn.sparse]++, sp_g1[v[i].attn.sparse] += v[i].g.position == GP_SDPA;
    for (int a = 0; a < AS__COUNT; a++) {
        cr_assert_gt(sp[a], 0, "no variant with sparse %s", attn_sparse_names[a]);
        cr_assert_gt(sp_g1[a], 0, "no variant with sparse %s under a G1 gate", attn_sparse_names[a]);
    }
    cr_assert_geq(n, 40);
    cr_assert_geq(n, ng);
    for (int p = 0; p < GP__COUNT; p++) cr_assert_gt(pos[p], 0, "no variant at position %s", gate_position_names[p]);
    for (int a = 0; a < GA__COUNT; a++) cr_assert_gt(act[a], 0, "no variant with activation %s", gate_activation_names[a]);
    for (int c = 0; c < GC__COUNT; c++) cr_assert_gt(ctl[c], 0, "no variant with control %s", gate_control_names[c]);
}
