/*
 * infer.h — what a gate buys at inference (`gated eval --quant/--drop`):
 * perplexity of a trained model under simulated integer quantization, and
 * with (token, head) outputs of attention dropped by their gate score, at
 * random, or by attention entropy.  Evaluation only: the float forward
 * (nn/model.h) is unchanged; everything here goes through the model's
 * linear-input hook and a quantized copy of its weights.
 *
 * Quantization (nn/quant.h: symmetric round-to-nearest, dynamic scales).
 * A scheme is written  [wB[gG]][-aB(tensor|token)]  or  float:
 *   wB      weights of every linear layer of every block (the fused
 *           q|k|v|gate projection, wo, w_gate|w_up, w_down) in B bits, one
 *           scale per output channel (row of W), or per group of G
 *           consecutive input columns with gG;
 *   aB...   the input of each of those layers in B bits, one scale for the
 *           whole tensor of a window (tensor) or one per token (token).
 * e.g. w8-a8tensor (W8A8 per-tensor), w8-a8token, w4g32 (weight-only int4,
 * groups of 32).  The token embedding, which is also the output layer
 * (tied), the norms and gate parameters outside the projection stay float,
 * as in SmoothQuant's and GPTQ's W8A8/W4 settings.
 *
 * Dropping (token, head) pairs: the head's slice of the input of wo is set
 * to zero, which is what skipping that head's share of the output
 * projection computes.  Selection rules:
 *   gate:TAU      drop the pairs whose G1 gate score (mean |score| over the
 *                 head's elements: the headwise score, or the elementwise
 *                 head's mean) is below TAU.  Only for a multiplicative
 *                 gate at G1 (model.gate.position sdpa).  Each is followed
 *                 by its two matched controls, which drop in every layer the
 *                 fraction of pairs the gate dropped in that layer:
 *                 "random" (uniform, seeded, exactly that count per window)
 *                 and "entropy" (the pairs of highest relative attention
 *                 entropy H / log(i + 1), H = lse - sum_j p_j s_j: heads
 *                 that average over many keys, relative to the uniform
 *                 row at that position; the lowest-entropy pairs, focused
 *                 heads such as previous-token heads, are the worst to
 *                 drop: at 4.1M tokens dropping half by lowest entropy
 *                 cost more than at random, by highest far less, so the
 *                 competent direction is the control).  The controls drop
 *                 exactly the gate's count in each (window, layer).
 *   frac:F        random and entropy at fraction F in every layer (any run,
 *                 the ungated baseline's pruning curve).
 * FLOPs a dropped pair at position i saves: 2 dh C of wo (infer_flops_wo)
 * and, because a G1 gate score is known from h before attention runs,
 * also 2 * 2 dh (i + 1) of its q.k and p.v (infer_flops_attn, the sum of
 * both; min(k, i + 1) keys in a top-k sparse layer), each as a fraction of
 * the forward's FLOPs (model_flops).
 *
 * Stored, per (split, length L, scheme) in context
 * "split=S,len=L,quant=SCHEME" or "split=S,len=L,drop=RULE,tau=T" /
 * "...,drop=RULE,frac=F" (numbers %g), at step = the checkpoint's steps:
 * infer_loss, infer_ppl, infer_windows, and for drops infer_drop (the
 * fraction of pairs dropped), infer_flops_wo, infer_flops_attn.  With the
 * float reference, per linear site S (qkv, wo, ffn_in, ffn_down) in
 * context "split=S,len=L,site=S": infer_in_max (the largest |input| over
 * layers, tokens and windows) and infer_in_outlier (infer_in_max over the
 * mean of each token's largest |input|): what sets a per-tensor scale,
 * as opposed to M-Act, which is measured in the residual stream before
 * the norms.  The float
 * reference (quant=float) is stored with every quantization.  Rewriting a
 * context replaces its values.
 */
#ifndef GATED_INFER_H
#define GATED_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model.h"

enum { QA_NONE, QA_TENSOR, QA_TOKEN };

typedef struct {
    int wbits, wgroup; /* weights: wbits 0 float; wgroup 0 per output channel */
    int abits, agran;  /* linear inputs: abits 0 float; agran QA_TENSOR / QA_TOKEN */
} QuantSpec;

/* "w8-a8token" etc. into q.  0, or -1 with the reason in err. */
int quant_spec_parse(const char *s, QuantSpec *q, char *err, size_t cap);
/* The canonical name ("float" when nothing is quantized). */
void quant_spec_name(const QuantSpec *q, char *buf, size_t cap);

enum { DROP_GATE, DROP_FRAC };
typedef struct {
    int kind;  /* DROP_GATE (v = tau) or DROP_FRAC (v = fraction in [0, 1]) */
    double v;
} DropSpec;
/* "gate:0.1" / "frac:0.25" into d.  0, or -1 with the reason in err. */
int drop_spec_parse(const char *s, DropSpec *d, char *err, size_t cap);

/* Selection rules of the dropped pairs. */
typedef enum { SEL_NONE = -1, SEL_GATE, SEL_RANDOM, SEL_ENTROPY, SEL__COUNT } DropSel;
extern const char *const drop_sel_names[SEL__COUNT]; /* gate, random, entropy */
extern const char *const lin_site_names[LIN__COUNT];  /* qkv, wo, ffn_in, ffn_down */

/* 1 when model m has a gate that drop=gate can read (multiplicative, G1). */
int infer_has_g1_gate(const Model *m);

typedef struct {
    double key;
    int idx;
} InferKey;

/* The state of one hooked evaluation (infer_hook is its LinearInputHook). */
typedef struct {
    int abits, agran;     /* activation quantization of every linear input (abits 0: none) */
    int sel;              /* DropSel */
    double tau;           /* SEL_GATE: drop pairs with score < tau */
    const double *frac;   /* SEL_RANDOM / SEL_ENTROPY: the fraction per layer ... */
    const int *match;     /* ... or, when set, exactly match[window * L + l] pairs */
    int *record;          /* SEL_GATE: when set, its count per (window, layer) is written here */
    uint64_t window;      /* the window being evaluated (random keys) */
    long long *dropped, *pairs; /* per layer, accumulated over windows */
    double flops_wo, flops_attn; /* FLOPs saved, accumulated */
    real *buf;            /* scratch: the rows returned */
    size_t cap;
    InferKey *key;        /* scratch: per (token, head) keys, sorted */
    size_t kcap;
    long nonfinite;       /* activation blocks left unquantized (not finite), accumulated */
    /* measure: the largest |input| of each linear site over the hooked
     * forwards (every layer), and the sum and count of each token's own
     * largest |input|: in_max / (tok_sum / tok_n) is how far above a typical
     * token's scale a per-tensor scale sits (the outlier factor) */
    int measure;
    double in_max[LIN__COUNT], tok_sum[LIN__COUNT];
    long long tok_n[LIN__COUNT];
} InferHook;

/* Allocate the per-layer counters for L layers (zeroed).  0 or -1. */
int infer_hook_init(InferHook *h, int L);
void infer_hook_free(InferHook *h);
const real *infer_hook(void *ctx, const Model *m, int l, LinearSite site, const real *x, int n, int k, int *ld);

/* Attention entropy (nats) of query i (0-based position in its sequence)
 * of head h in layer l of the last forward, sequence b; _rel: divided by
 * log(i + 1), the uniform row's (0 at i = 0), so that late positions,
 * which have more keys, are not "diffuse" for that alone.  A top-k sparse
 * layer's row is its softmax over S_i, of min(k, i + 1) keys (nn/sparse.h). */
double infer_attn_entropy(const Model *m, int l, int b, int h, int i);
double infer_attn_entropy_rel(const Model *m, int l, int b, int h, int i);

/* Quantize the block weights of m in place (wbits / wgroup of q; nothing
 * when q->wbits is 0).  Returns the blocks left unchanged (non-finite). */
long infer_quant_weights(Model *m, const QuantSpec *q);

/* Mean loss over count windows (each T + 1 tokens, one forward each) with
 * hook state h (NULL: the float forward); h->window is set per window.
 * 0, -1 (out of memory) or -2 (a logit was not finite). */
int infer_windows_loss(Model *m, InferHook *h, const int *win, int count, int T, double *loss);

#endif
