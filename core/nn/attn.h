/*
 * attn.h — causal attention with a choice of normaliser: the tiled kernels
 * (attn.c), the plain reference (attn_ref.c), and the glue that turns a
 * normaliser's parameters into the kernel's inputs and back (attn_norm.c).
 *
 * B sequences of T tokens, H query heads of width d, Hk key/value heads
 * (head h reads kv head h / (H/Hk)).  q/k/v are token-strided (sq, sk, sv);
 * o is contiguous (B*T, H, d).  Scores are s_ij = scale q_i.k_j for j <= i
 * (scale usually 1/sqrt(d)); the normaliser (modelcfg.h's
 * ATTN_NORMALIZERS, variant.h's attn_norms[]) turns them into weights p_ij
 * and o_i = sum_j p_ij v_j.
 *
 * The forward saves one statistic per row, lse (B, H, T), from which
 * backward recomputes p tile by tile (probabilities are never stored):
 *   softmax family  log of the row's denominator (virtual key included)
 *   sigmoid         the row's bias b_i = -log(i + 1)
 *   softpick        log(sum_j |exp(s_ij) - 1| + eps)
 */
#ifndef GATED_ATTN_H
#define GATED_ATTN_H

#include "nn/modelcfg.h"
#include "nn/real.h"

/* The normaliser of one call.  NULL wherever an AttnNorm is taken means
 * plain softmax (the functions without _norm pass NULL). */
typedef struct {
    int kind;      /* AttnNormalizer */
    const real *z; /* a row with a virtual key (attn_norms[kind].vkey != AV_NONE): its logit per row,
                      (B, H, T), already scaled; see attn_virtual_logits */
} AttnNorm;

/* Causal softmax attention: attention_forward_norm with NULL. */
int attention_forward(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                      int B, int T, int H, int Hk, int d, real scale);
/* dq/dk/dv (same strides as q/k/v) += ...  Both return 0, or -1 when their
 * per-thread work area cannot be allocated (nothing written then). */
int attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                       const real *q, int sq, const real *k, int sk, const real *v, int sv, int B, int T, int H,
                       int Hk, int d, real scale);
/* Plain reference: materialises probs (B, H, T, T), which it writes if
 * non-NULL (row i holds p_ij over the real keys j <= i, 0 for j > i; with
 * a normaliser other than softmax a row need not sum to 1: the rest is the
 * mass on nothing / on the virtual key).  For tests, probes and small T. */
int attention_forward_ref(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                          int sv, int B, int T, int H, int Hk, int d, real scale);

/* The same with normaliser nm (NULL: softmax). */
int attention_forward_norm(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                           int B, int T, int H, int Hk, int d, real scale, const AttnNorm *nm);
/* The virtual key's logit gradient is not written here: attn_virtual_backward. */
int attention_backward_norm(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                            const real *q, int sq, const real *k, int sk, const real *v, int sv, int B, int T, int H,
                            int Hk, int d, real scale, const AttnNorm *nm);
/* o NULL: the weights alone into probs (the probes' path; v unused). */
int attention_forward_ref_norm(real *o, real *probs, const real *q, int sq, const real *k, int sk, const real *v,
                               int sv, int B, int T, int H, int Hk, int d, real scale, const AttnNorm *nm);

/* The virtual key (softmax1, sink_logit, kv_bias): z (B, H, T) from the
 * normaliser's parameters: 0 for softmax1; sink[h] for sink_logit (sink: H
 * values); scale q_i.kstar[h / (H/Hk)] for kv_bias (kstar: Hk x d, q as
 * given to attention, after RoPE).  Nothing for the other rows. */
void attn_virtual_logits(real *z, int kind, const real *sink, const real *kstar, const real *q, int sq, int B,
                         int T, int H, int Hk, int d, real scale);
/* Backward of the virtual key: dz_i = -p*_i (dout_i . o_i) with
 * p*_i = exp(z_i - lse_i), added into dsink (H) for sink_logit, into dkstar
 * (Hk x d) and dq (stride sq) for kv_bias, in a fixed order (b, h, i). */
void attn_virtual_backward(real *dq, real *dsink, real *dkstar, int kind, const real *z, const real *lse,
                           const real *dout, const real *o, const real *kstar, const real *q, int sq, int B, int T,
                           int H, int Hk, int d, real scale);

/* The weight p_ij of one (query, key) pair from its scaled score s and the
 * row's saved statistic lse (attention_forward_norm's), for normaliser kind:
 * exp(s - lse) for the softmax family (the virtual key is in lse), sigmoid(s
 * + lse) for sigmoid, max(exp(s - lse) - exp(-lse), 0) for softpick.  For
 * probes that read weights from the saved statistic (as exp(s - lse) did
 * for softmax). */
double attn_weight(int kind, double s, double lse);

#endif
