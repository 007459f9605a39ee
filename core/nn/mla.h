/*
 * mla.h — multi-head latent attention (model.attention.kv latent), after
 * DeepSeek-V2 (arXiv 2405.04434), inference/model.py class MLA, without
 * query compression:
 *
 *   c     = RMSNorm(W_DKV h) · kv_norm                 (d_c)   cached
 *   k^R   = RoPE(W_KR h)                               (d_R)   cached, shared by the heads
 *   k_i   = [W_UK,i c ; k^R]        v_i = W_UV,i c     (d_h + d_R, d_h) per head
 *   q_i   = [q^C_i ; RoPE(q^R_i)]                      (d_h + d_R), from h
 *   o_i   = attention(q_i, k_i, v_i), scores q_i.k_i / sqrt(d_h + d_R)
 *
 * The layer's fused projection (model.c's P, one sgemm from h) holds
 * [q^C (n_head d_h) | q^R (n_head d_R) | W_DKV h (d_c) | W_KR h (d_R) | gate
 * logits]; its rows are the parameters wq, w_dkv, w_kr (and wg), adjacent
 * in the arena.  kv_norm (d_c), w_uk and w_uv (n_head d_h x d_c) follow.
 * d_R = 0 is MLA without the decoupled RoPE key (no position information in
 * the scores).  Training runs the model's tiled attention kernel over
 * per-head keys of width D = d_h + d_R and values zero-padded to D (the
 * kernel has one head width); o is their first d_h channels.
 *
 * The absorbed path (Model.kv_absorbed, evaluation): W_UK,i is absorbed
 * into the query, q~_i = W_UK,i^T q^C_i (d_c), and attention runs over the
 * cached [c ; k^R] as one key head shared by all query heads, with c as the
 * value; W_UV,i then maps the attended latent to the head's output (the
 * product W_o W_UV by associativity).  It equals the training path up to
 * rounding (tests/test_mla.c).
 */
#ifndef GATED_MLA_H
#define GATED_MLA_H

#include <stddef.h>
#include "nn/model.h"

/* Width of the latent layer's fused projection without the gate logits:
 * n_head (d_h + d_R) + d_c + d_R. */
int mla_proj_width(const ModelCfg *cfg);
/* Declare layer l's latent parameters: the projection rows (wq, w_dkv,
 * w_kr, adjacent; called where wq | wk | wv are declared otherwise) ... */
void mla_layout_proj(Model *m, int l, LayerParams *p);
/* ... and the up-projections (kv_norm, w_uk, w_uv). */
void mla_layout_up(Model *m, int l, LayerParams *p);

/* Reals one layer's latent activations take for B x T tokens (carved by
 * model.c as LayerActs.mla). */
size_t mla_act_len(const Model *m, int B, int T);

/* Reals mla_backward allocates for its work (and frees) at B x T tokens. */
size_t mla_scratch_len(const Model *m, int B, int T);

/* Layer l's attention from its projection P to o and the row statistics
 * (lse, the virtual key's z): the training path, or the absorbed one when
 * m->kv_absorbed.  0, or -1 out of memory. */
int mla_forward(Model *m, int l, int B, int T);
/* Backward of mla_forward's training path from dO (n, n_head d_h):
 * ADDS into dP (the projection's gradient, stride m->Np) and the latent
 * parameters' gradients.  0, or -1 out of memory. */
int mla_backward(Model *m, int l, const real *dO, real *dP);

/* The per-head values v_i = W_UV,i c of layer l (stride *sv). */
const real *mla_values(const Model *m, int l, int *sv);
/* model_attn_qkv for a latent layer: the kernel's per-head q, k and
 * zero-padded v (width d_head + d_R, n_head key heads). */
void mla_attn_qkv(const Model *m, int l, AttnQKV *out);
/* The FLOPs per token the latent layer adds to model_flops' count (the
 * up-projections, and the scores over d_h + d_R instead of d_h) at length T. */
double mla_extra_flops(const Model *m, int T);

#endif
