/*
 * gate.c — forward and backward of every gate variant (see gate.h).
 *
 * One generic loop serves all variants.  For token t, head h and channel d
 * of Y the logit index is
 *
 *     li(h, d) = (lh == 1 ? 0 : h) * ld + (ld == 1 ? 0 : d)
 *
 * so headwise logits broadcast over d, a static head-shared logit over h,
 * and head-shared hidden gates average act(L) over L's heads.
 *
 * Backward: with G = dY'·Y (multiplicative) or dY' (additive),
 *     dY += dY'·S (multiplicative) or dY' (additive)
 *     dL[li] += act'(L[li]) · Σ G over every (h, d) that reads li
 *               (divided by lh when scores are averaged over heads);
 * where an activation has dfy, act' comes from the saved score S = act(L)
 * (sigmoid's is S(1 − S)), saving the second exp.
 */
#include "nn/gate.h"

#include <string.h>

#include "nn/variant.h"

/* -------------------------------------------------------- the activations */

static real act_sigmoid(real x) { return 1 / (1 + exp(-x)); }
static real dact_sigmoid_y(real s) { return s * (1 - s); }
static real dact_sigmoid(real x) { return dact_sigmoid_y(act_sigmoid(x)); }
static real act_silu(real x) { return x * act_sigmoid(x); }
static real dact_silu(real x) {
    real s = act_sigmoid(x);
    return s * (1 + x * (1 - s));
}
#ifdef GATED_PERF_PLANT_VARIANTS
/* The perf gate's own test only (tests/perf_gate_test.sh): a tanh gate's
 * activation computed four times, a 4x slowdown of a non-default variant. */
static real act_tanh(real x) {
    volatile real plant_sink = 0;
    for (int k = 0; k < 3; k++) plant_sink += tanh(x + k);
    return tanh(x);
}
#else
static real act_tanh(real x) { return tanh(x); }
#endif
static real dact_tanh_y(real t) { return 1 - t * t; }
static real dact_tanh(real x) { return dact_tanh_y(tanh(x)); }
static real act_identity(real x) { return x; }
static real dact_identity(real x) {
    (void)x;
    return 1;
}
/* Non-sparse sigmoid: confined to [0.5, 1] (paper Table 4). */
static real act_ns_sigmoid(real x) { return (real)0.5 + (real)0.5 * act_sigmoid(x); }
static real dact_ns_sigmoid(real x) { return (real)0.5 * dact_sigmoid(x); }

/* The rows come from GATE_ACTIVATIONS (modelcfg.h): one per activation,
 * naming the functions above. */
#define ACT_ROW_(id, name, f, df, dfy, lo, hi) [GA_##id] = {name, f, df, dfy, lo, hi},
const GateAct gate_acts[GA__COUNT] = {GATE_ACTIVATIONS(ACT_ROW_)};
#undef ACT_ROW_

/* ------------------------------------------------------------- geometry */

GateOp gate_op(const GateCfg *cfg, int hpos, int D) {
    GateOp g;
    g.hpos = hpos;
    g.D = D;
    g.ld = cfg->granularity == GG_HEADWISE ? 1 : D;
    int shared = cfg->sharing == GS_HEAD_SHARED;
    g.lh = (shared && cfg->input == GI_STATIC) ? 1 : hpos;
    g.avg = shared && g.lh > 1;
    g.additive = cfg->form == GF_ADDITIVE;
    g.act = cfg->activation;
    return g;
}

/* Scores of one token: S[h*D + d].  For averaged scores the shared row is
 * built in S[0..ld) first; expanding it row by row never overwrites a value
 * before it is read (row 0 maps onto itself). */
void gate_scores(const GateOp *g, real *S, const real *L) {
    const GateAct *a = &gate_acts[g->act];
    if (g->avg) {
        for (int dd = 0; dd < g->ld; dd++) {
            real s = 0;
            for (int h = 0; h < g->lh; h++) s += a->f(L[h * g->ld + dd]);
            S[dd] = s / g->lh;
        }
        for (int h = g->hpos - 1; h >= 0; h--)
            for (int d = g->D - 1; d >= 0; d--) S[h * g->D + d] = S[g->ld == 1 ? 0 : d];
        return;
    }
    for (int h = 0; h < g->hpos; h++) {
        const real *Lh = L + (g->lh == 1 ? 0 : h) * g->ld;
        for (int d = 0; d < g->D; d++) S[h * g->D + d] = a->f(Lh[g->ld == 1 ? 0 : d]);
    }
}

void gate_forward(const GateOp *g, real *out, int so, real *S, const real *y, int sy, const real *L, int sl,
                  int n) {
    int W = g->hpos * g->D;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < n; t++) {
        real *St = S + (size_t)t * W;
        gate_scores(g, St, L + (size_t)t * sl);
        const real *yt = y + (size_t)t * sy;
        real *ot = out + (size_t)t * so;
        if (g->additive)
            for (int i = 0; i < W; i++) ot[i] = yt[i] + St[i];
        else
            for (int i = 0; i < W; i++) ot[i] = yt[i] * St[i];
    }
}

/* dL for one token given G = dS and the token's scores S (hpos*D values
 * each; S[h*D + d] = act(L[li(h, d)]) unless scores are averaged). */
static void gate_dlogits(const GateOp *g, real *dL, const real *L, const real *G, const real *S) {
    const GateAct *a = &gate_acts[g->act];
    if (g->avg) { /* S holds averages: act' from L */
        for (int dd = 0; dd < g->ld; dd++) {
            real gs = 0;
            for (int h = 0; h < g->hpos; h++) {
                if (g->ld == 1)
                    for (int d = 0; d < g->D; d++) gs += G[h * g->D + d];
                else
                    gs += G[h * g->D + dd];
            }
            gs /= g->lh;
            for (int h = 0; h < g->lh; h++) dL[h * g->ld + dd] += a->df(L[h * g->ld + dd]) * gs;
        }
        return;
    }
    for (int h = 0; h < g->hpos; h++) {
        int lo = (g->lh == 1 ? 0 : h) * g->ld;
        if (g->ld == 1) {
            real gs = 0;
            for (int d = 0; d < g->D; d++) gs += G[h * g->D + d];
            dL[lo] += (a->dfy ? a->dfy(S[h * g->D]) : a->df(L[lo])) * gs;
        } else if (a->dfy) {
            for (int d = 0; d < g->D; d++) dL[lo + d] += a->dfy(S[h * g->D + d]) * G[h * g->D + d];
        } else {
            for (int d = 0; d < g->D; d++) dL[lo + d] += a->df(L[lo + d]) * G[h * g->D + d];
        }
    }
}

void gate_backward(const GateOp *g, real *dy, int sdy, real *dL, int sdl, real *G, const real *dout, int sdo,
                   const real *S, const real *y, int sy, const real *L, int sl, int n) {
    int W = g->hpos * g->D;
    /* G (n, W) is scratch: dS per token.  Static gates (sdl == 0) sum dL
     * over tokens; that sum runs serially below so its order is fixed. */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < n; t++) {
        const real *dot = dout + (size_t)t * sdo, *St = S + (size_t)t * W, *yt = y + (size_t)t * sy;
        real *dyt = dy + (size_t)t * sdy, *Gt = G + (size_t)t * W;
        if (g->additive)
            for (int i = 0; i < W; i++) {
                dyt[i] += dot[i];
                Gt[i] = dot[i];
            }
        else
            for (int i = 0; i < W; i++) {
                dyt[i] += dot[i] * St[i];
                Gt[i] = dot[i] * yt[i];
            }
        if (sdl) gate_dlogits(g, dL + (size_t)t * sdl, L + (size_t)t * sl, Gt, St);
    }
    if (!sdl)
        for (int t = 0; t < n; t++) gate_dlogits(g, dL, L + (size_t)t * sl, G + (size_t)t * W, S + (size_t)t * W);
}
