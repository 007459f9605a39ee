/*
 * gate.h — the math of every gate variant, in one place.
 *
 * A gate maps a tensor Y (n tokens × hpos heads × D) to Y' using scores S
 * computed from gate logits L by an activation:
 *
 *     multiplicative  Y' = Y ⊙ S        additive  Y' = Y + S
 *
 * where S has the shape of Y after broadcasting:
 *
 *   elementwise / headwise        S varies over (h, d) / only over h
 *   head_specific / head_shared   S differs per head / is the mean over
 *                                 heads of the per-head scores (after the
 *                                 activation) and the same for every head
 *   input hidden / static         L = X·W_g^T per token (query-dependent) /
 *                                 L = P, one learned tensor for all tokens
 *
 * The activations are a table (gate_acts[]): a value and a derivative (and,
 * optionally, the derivative from the value, which backward then uses), and
 * the range of the probes' score histogram.  Adding an activation = one row
 * in GATE_ACTIVATIONS (modelcfg.h) plus its functions in gate.c; adding a
 * position = one row in GATE_POSITIONS plus where the model calls
 * gate_forward / gate_backward (README, "adding a variant").
 */
#ifndef GATED_GATE_H
#define GATED_GATE_H

#include "nn/modelcfg.h"
#include "nn/real.h"

typedef struct {
    const char *name;
    real (*f)(real x);   /* act(x) */
    real (*df)(real x);  /* act'(x) */
    real (*dfy)(real y); /* act'(x) from y = act(x) (the saved score), where that
                            is cheaper (sigmoid, tanh: no second exp); or NULL */
    double hist_lo, hist_hi; /* the range of probes' score histogram */
} GateAct;
/* One row per activation, generated from GATE_ACTIVATIONS (modelcfg.h). */
extern const GateAct gate_acts[GA__COUNT];

/* Geometry of one gate application. */
typedef struct {
    int hpos;       /* heads of Y */
    int D;          /* width of each head of Y */
    int lh;         /* heads of L: hpos, or 1 for a static head-shared gate */
    int ld;         /* width per head of L: D (elementwise) or 1 (headwise) */
    int avg;        /* average scores over L's heads (head_shared, hidden) */
    int additive;
    int act;        /* GateActivation */
} GateOp;

/* Build the GateOp for cfg at a tensor of hpos heads × D. */
GateOp gate_op(const GateCfg *cfg, int hpos, int D);

/* out (n, hpos*D; stride so) = gate(y (stride sy), L (stride sl)); the
 * scores S (n, hpos*D, contiguous) are written and saved for backward and
 * probes.  sl = 0 broadcasts one set of logits (static input) to all tokens. */
void gate_forward(const GateOp *g, real *out, int so, real *S, const real *y, int sy, const real *L, int sl,
                  int n);

/* dy (stride sdy) += dY;  dL (stride sdl) += dL.  With sdl = 0 every token
 * adds into the same dL (the static parameter's gradient).  G (n, hpos*D)
 * is scratch. */
void gate_backward(const GateOp *g, real *dy, int sdy, real *dL, int sdl, real *G, const real *dout, int sdo,
                   const real *S, const real *y, int sy, const real *L, int sl, int n);

/* Gate scores S for one token, written as hpos*D values (for probes). */
void gate_scores(const GateOp *g, real *S, const real *L);

#endif
