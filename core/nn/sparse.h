/*
 * sparse.h — top-k sparse attention (model.attention.sparse; the rows are
 * ATTN_SPARSES in modelcfg.h, the formulas in docs/model.md).
 *
 * Each query t of a layer attends only to a set S_t of its visible keys
 * s <= t, |S_t| = min(k, t + 1) (a row with <= k keys is dense), one set
 * shared by all heads of the layer:
 *   o_t = sum_{s in S_t} p_ts v_s,  p_ts = exp(scale q_t.k_s) / sum_{s' in S_t} exp(scale q_t.k_s').
 * A selection is an int array (B, T, k): row t holds its n_t = min(k, t+1)
 * key positions in increasing order, then -1 up to k.
 *
 * Pieces: the selections (sparse_select.c), the attention over a selection
 * (sparse_attn.c), the lightning indexer (indexer.c) and the model's hooks
 * (sparse.c).  Every parallel loop owns its outputs whole (a row, or a
 * (sequence, KV head) pair), so results do not depend on the thread count.
 */
#ifndef GATED_SPARSE_H
#define GATED_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "nn/modelcfg.h"
#include "nn/real.h"

/* Keys row t uses: min(k, t + 1). */
static inline int sparse_nsel(int k, int t) { return t + 1 < k ? t + 1 : k; }

/* ------------------------------------------------------------ selections */

/* The k largest score[b][t][s] over s <= t (score (B, T, T), row-major),
 * in ascending positions, the rest of row t's k slots -1.  Ties: the lower
 * position wins (a total order, so the set does not depend on the method
 * or the threads); -0 counts as 0, NaN below every number.  0, or -1 out
 * of memory. */
int sparse_select_topk(int *sel, const real *score, int B, int T, int k);
/* The last k keys: max(0, t - k + 1) .. t. */
void sparse_select_window(int *sel, int B, int T, int k);
/* k distinct keys of 0..t, drawn (Floyd's algorithm) from a generator
 * seeded by hash(seed, step, layer, t) alone: the same set for every
 * sequence of the batch, and no shared stream is advanced. */
void sparse_select_random(int *sel, int B, int T, int k, uint64_t seed, long step, int layer);
/* One row of the above (topk.c): the min(kk, n) best of row[0..n) into
 * out (ascending positions; all of them when n <= kk), with scratch of
 * sparse_topk_scratch(n) bytes (or more: a row of any shorter length). */
size_t sparse_topk_scratch(int n);
void sparse_topk_row(int *out, const real *row, int n, int kk, void *scratch);
/* Row t of sparse_select_random (out: k ints). */
void sparse_random_row(int *out, int t, int k, uint64_t seed, long step, int layer);
/* One row of the oracle's scores: out[s] for s <= t, sum_h p_h(t, s), the
 * dense softmax weights summed over the H query heads at qt (H x d), key s
 * of KV head g at k + s ldk + g d (GQA as attn.h); p: t + 1 reals of
 * scratch.  The decoder's too (kvcache_sparse.c). */
void sparse_oracle_row(real *out, const real *qt, const real *k, size_t ldk, int t, int H, int Hk, int d, real scale,
                       real *p);
/* Every row: score[b][t][s] (q, k after RoPE).  0, or -1 out of memory. */
int sparse_oracle_scores(real *score, const real *q, int sq, const real *k, int sk, int B, int T, int H, int Hk,
                         int d, real scale);

/* ----------------------------------------------- attention over S_t */

/* o (B*T, H, d) and lse (B, H, T): softmax over the selected keys only
 * (gathered: cost O(T k d), not O(T^2 d)).  0, or -1 out of memory. */
int sparse_attn_forward(real *o, real *lse, const real *q, int sq, const real *k, int sk, const real *v, int sv,
                        const int *sel, int kk, int B, int T, int H, int Hk, int d, real scale);
/* dq, dk, dv (strides as q, k, v) += the gradients through the selected
 * keys (the selection is constant).  0, or -1 out of memory. */
int sparse_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *o, const real *lse,
                         const real *q, int sq, const real *k, int sk, const real *v, int sv, const int *sel, int kk,
                         int B, int T, int H, int Hk, int d, real scale);

/* ------------------------------------------------------ lightning indexer */

/* One layer's indexer on n = B*T tokens of hidden state h (n, C):
 *   P   = h . W^T                      W: (H_I d_I + d_I + H_I) x C, rows q_I | k_I | w
 *   q_I = RoPE(P.q)                     (n, H_I, d_I)
 *   k_I = RoPE(rmsnorm(P.k) . knw)      (n, d_I), one key per position
 *   w   = P.w / sqrt(H_I d_I)           (n, H_I)
 *   I(t, s) = sum_j w(t, j) relu(q_I(t, j) . k_I(s)),  s <= t   (B, T, T; 0 above the diagonal)
 * The buffers below are the caller's (indexer_acts_len reals carved in
 * this order). */
typedef struct {
    real *P, *rstd, *kn, *qr, *kr, *w, *sc;
} IndexerActs;
size_t indexer_acts_len(int B, int T, int HI, int dI);
void indexer_acts_carve(IndexerActs *a, real *base, int B, int T, int HI, int dI);

/* cos/sin: RoPE tables (T, d_I / 2) (rope_tables at width d_I). */
void indexer_forward(IndexerActs *a, const real *W, const real *knw, const real *h, int ldh, int B, int T, int C,
                     int HI, int dI, const real *cos_t, const real *sin_t, real eps);
/* Given dI (B, T, T; read for s <= t): dW, dknw and dh (stride ldh) +=.
 * dh may be NULL (the indexer's input detached; ldh is still h's stride).  scratch:
 * indexer_scratch_len reals.  Deterministic: rows and keys each summed in a
 * fixed order. */
void indexer_backward(real *dW, real *dknw, real *dh, int ldh, const real *dsc, const IndexerActs *a, const real *W,
                      const real *knw, const real *h, int B, int T, int C, int HI, int dI, const real *cos_t,
                      const real *sin_t, real *scratch);
size_t indexer_scratch_len(int B, int T, int HI, int dI);

/* The indexer's loss against the layer's attention (indexer_kl.c): per row
 * t, KL(p_t || softmax(I_t)) over U_t, p_t the heads' softmax weights over
 * U_t summed and divided by H, U_t every key s <= t (sel NULL: the dense
 * warm-up) or the selection S_t.  dI (B, T, T) is overwritten: g (r_t - p_t)
 * on U_t, 0 elsewhere.  Returns the sum of KL_t over the rows (NAN out of
 * memory). */
double indexer_kl(real *dI, const real *isc, const real *q, int sq, const real *k, int sk, const int *sel, int kk,
                  int B, int T, int H, int Hk, int d, real scale, real g);

/* One token at position t (KV-cache decoding): indexer_forward's row of q_I
 * (H_I, d_I), k_I (d_I) and w (H_I) from the token's h (C), with P scratch
 * of H_I d_I + d_I + H_I reals and cos/sin the tables' row t. */
void indexer_token(real *qr, real *kr, real *w, real *P, const real *W, const real *knw, const real *h, int C, int HI,
                   int dI, const real *cos_t, const real *sin_t, real eps);
/* score[s] = I(t, s) = sum_j w_j relu(q_j . k_s) for s < n, the keys
 * transposed (channel c of key s at kT[c ldk + s]), x: n reals of scratch;
 * the same sums in the same order as indexer_scores, so decoding selects
 * what the forward selects. */
void indexer_token_scores(real *score, const real *qr, const real *w, const real *kT, size_t ldk, int n, int HI,
                          int dI, real *x);

/* The score stage alone (for tests): I from q_I (n, H_I, d_I), k_I (n,
 * d_I), w (n, H_I); its backward adds into dq, dk, dw. */
void indexer_scores(real *sc, const real *qi, const real *ki, const real *w, int B, int T, int HI, int dI);
void indexer_scores_backward(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                             const real *w, int B, int T, int HI, int dI);
/* The score backward as plain loops (the formulas as written: dq, dw of
 * each row over s ascending, dk of each key over t ascending then j, every
 * dot product one at a time): indexer_scores_backward's fallback when its
 * lists cannot be had, whose bits it gives. */
void indexer_scores_backward_plain(real *dq, real *dk, real *dw, const real *dsc, const real *qi, const real *ki,
                                   const real *w, int B, int T, int HI, int dI);
/* Bytes indexer_scores_backward allocates for its lists of the gradient's
 * nonzeros and their dot products: every key of every row when k <= 0 or
 * k >= T (the dense warm-up's KL), else at most k a row. */
size_t indexer_backward_memory(int B, int T, int HI, int k);

/* --------------------------------------------- the model's hooks (sparse.c) */

struct Model;
/* After the dense model's tensors (so they start as without sparsity):
 * l<i>.indexer ((H_I + 1) d_I + H_I rows of d_model) and
 * l<i>.indexer_knorm (d_I) per layer for the indexer row; the state for
 * every sparse row.  0 or -1. */
int sparse_model_layout(struct Model *m);
void sparse_model_free(struct Model *m);
/* Bytes a forward of B x T adds (selections, indexer and oracle buffers). */
size_t sparse_model_memory(const ModelCfg *cfg, int B, int T);
/* Buffers for B x T and the indexer's RoPE tables; 0 or -1 (errno). */
int sparse_model_ensure(struct Model *m, int B, int T);
/* Layer l: select its keys (indexer from h, the layer's normed input;
 * oracle from q, k after RoPE) and attend over them. 0 or -1 (ENOMEM). */
int sparse_model_forward(struct Model *m, int l, real *o, real *lse, const real *h, const real *q, int sq,
                         const real *k, int sk, const real *v, int sv, real scale);
int sparse_model_backward(struct Model *m, int l, real *dq, real *dk, real *dv, const real *dout,
                          const real *o, const real *lse, const real *q, int sq, const real *k, int sk, const real *v,
                          int sv, real scale);
/* Training (DeepSeek's recipe, indexer row with model.attention.indexer_warmup
 * W): steps 1..W are the dense warm-up: the model runs dense, every tensor but
 * the indexer's is frozen (optimizer), and model_backward computes only the
 * indexer's gradient, from the KL over every key.  After it (and whenever
 * the step is 0: evaluation of a loaded model) the model runs sparse, the
 * language-model loss trains everything but the indexer, and the indexer
 * learns from the KL over S_t with its input detached.  The KL is averaged
 * over the rows and layers. */
/* Set m->step (the step the next forward belongs to) and the frozen flags. */
void sparse_set_step(struct Model *m, long step);
/* Whether m is in the dense warm-up (its step and k < its last forward's T). */
int sparse_warm(const struct Model *m);
/* model_backward in the warm-up: the indexer's KL gradients only.  0 or -1. */
int sparse_warm_backward(struct Model *m);
/* The indexer's mean KL in the last backward (NAN without an indexer, or
 * when its last forward ran dense: k >= T). */
double sparse_indexer_kl(const struct Model *m);
/* Whether a forward of T tokens runs the sparse hooks: a sparse row, k < T,
 * and not forced dense. */
int sparse_on(const struct Model *m, int T);
/* Whether decoding (kvcache.h) selects keys: a sparse row, not forced
 * dense, not in the indexer's warm-up; a row with <= k keys is dense. */
int sparse_decode_on(const struct Model *m);
/* on: the next forwards run dense (the same weights, every key; the
 * probes' sparse - dense loss gap); off: sparse again.  No effect on a
 * dense model. */
void sparse_force_dense(struct Model *m, int on);
/* Layer l's selection in the last forward ((B, T, k)), NULL when it was dense. */
const int *sparse_selection(const struct Model *m, int l);
/* Whether query t of sequence b attends to key s (s <= t) in layer l in the
 * last forward: 1 when the layer ran dense, else s in S_t (for probes). */
int sparse_attends(const struct Model *m, int l, int b, int t, int s);
/* Restrict one query head's dense weights P (T x T, sequence b of layer l;
 * a softmax row per query) to what the layer attended to: entries outside
 * S_t set to 0 and each row renormalised over S_t (softmax over S_t).
 * Before that, if recall is non-NULL: *recall += sum over rows t >= k of
 * sum_{s in S_t} P(t, s).  Nothing when the layer ran dense. */
void sparse_restrict_weights(const struct Model *m, int l, int b, real *P, int T, double *recall);
/* FLOPs per token of one layer that sparsity adds to the dense model's
 * count at length T (negative where it saves): q.k and p.v over the mean
 * min(k, t + 1) keys instead of the mean t + 1; the indexer's projection
 * and scores (2 H_I d_I + 2 H_I per pair s <= t); the oracle's dense q.k.
 * 0 when a forward at T is dense. */
double sparse_flops_delta(const ModelCfg *cfg, int T);
/* The indexer's parameters, all layers. */
long model_indexer_params(const struct Model *m);

#endif
