/*
 * model.h — the decoder LM: parameters, activations, forward, backward.
 *
 * Pre-norm decoder: tied token embedding, RMSNorm, RoPE, causal multi-head
 * attention with grouped KV heads and optional QK-norm, one configurable
 * attention gate (gate.h / variant.h), SwiGLU FFN, final RMSNorm,
 * cross-entropy.  Per layer, q | k | v | gate-logit weights are adjacent
 * rows of one matrix and are applied with one sgemm; the SwiGLU gate | up
 * weights likewise.
 */
#ifndef GATED_MODEL_H
#define GATED_MODEL_H

#include "nn/arena.h"
#include "nn/modelcfg.h"
#include "nn/gate.h"
#include "nn/real.h"
#include "nn/rope.h"
#include "nn/variant.h"

/* Parameter indices of one layer in the arena (-1 when absent). */
typedef struct {
    int ln1, wq, wk, wv, wg, gate_b, gate_p, q_norm, k_norm, sdpa_norm, wo, ln2, w_gate, w_up, w_down;
    int sink, kstar; /* the normaliser's: sink_logit's b (n_head), kv_bias's k* (n_kv_head x d_head) */
    int kv_norm, w_uk, w_uv; /* latent KV (mla.h): the latent's norm and the per-head up-projections */
    int idx_w, idx_kn; /* the sparse indexer's projection and k_I norm weight (sparse.h) */
} LayerParams;

/* Saved activations of one layer (pointers into Model.actmem). */
typedef struct {
    real *x_in, *rstd1, *h, *P;
    real *qn, *rq, *kn, *rk;  /* QK-norm outputs and their rstd */
    real *gy, *S;             /* gated tensor and its scores (position != none) */
    real *qr, *kr, *o, *lse;
    real *z;                  /* the virtual key's logit per row (B, H, T; normalisers with one) */
    real *oc, *ro;            /* control output (silu / rmsnorm) and rstd */
    real *og, *a, *ag, *x_mid, *rstd2, *h2, *U, *hs;
    real *mla;                /* latent KV's activations (mla.c lays them out; NULL with kv heads) */
} LayerActs;

/* The inputs of the linear layers of a block, where an evaluation hook may
 * replace them (model_set_linear_hook). */
typedef enum {
    LIN_QKV,      /* h, the normed hidden state, into the fused q|k|v|gate projection */
    LIN_WO,       /* the attention output (after control and G1 gate) into wo */
    LIN_FFN_IN,   /* h2 into the SwiGLU w_gate|w_up */
    LIN_FFN_DOWN, /* the SwiGLU output into w_down */
    LIN__COUNT
} LinearSite;

struct Model;
/* Called by model_forward with the input x (n rows of width k, stride *ld)
 * of linear layer `site` of layer l, after everything before it in that
 * layer ran (so the layer's attention and gate scores are in m->la[l]).
 * Returns the rows to multiply instead (stride written to *ld), x itself,
 * or NULL (out of memory: model_forward returns NAN with errno ENOMEM).
 * The rows returned are read once, before the hook is called again. */
typedef const real *(*LinearInputHook)(void *ctx, const struct Model *m, int l, LinearSite site, const real *x,
                                       int n, int k, int *ld);

typedef struct Model {
    ModelCfg cfg; /* what it was built from */
    int C, L, H, Hk, dh, F, V;
    int nq, nkv, ng, Np; /* fused projection widths: q, k (= v), gate logits, total */
    GateShape gs;
    GateOp gop;
    Arena p;
    int wte, ln_f;
    LayerParams *lp;

    /* activations for B x T, allocated by model_forward on demand */
    int B, T;
    real *actmem;
    size_t actlen;
    LayerActs *la;
    real *x_out, *rstdf, *xf, *logits, *probs;
    int *targets;
    real *cos_t, *sin_t;
    RopeScaling rope; /* what cos_t / sin_t hold: rope_of_config(cfg) unless model_set_rope changed it */
    real *gradmem; /* backward scratch */
    size_t gradlen, gbig;
    double loss;
    LinearInputHook lin_hook; /* NULL (the default, and always in training): the float forward */
    void *lin_ctx;
    int kv_absorbed; /* evaluation: latent layers attend over the cached latent, W_UK and W_UV absorbed (mla.h) */
    struct SparseState *sp; /* model.attention.sparse's state (sparse.c); NULL when dense */
    long step; /* the optimizer step the next forward belongs to (the random sparse control's seed); 0 */
} Model;

/* Declare the parameter views of cfg without allocating them (for
 * counting); model_free releases it.  0 or -1. */
int model_layout(Model *m, const ModelCfg *cfg);

/* The memory a training step of cfg at batch B, length T allocates, in
 * bytes: parameters (weights, gradients and the two AdamW moments), the
 * activations one forward saves (plus targets and RoPE tables) and the
 * backward scratch: the sizes model_init, model_forward and model_backward
 * allocate, computed without allocating them.  0 or -1 (out of memory). */
typedef struct {
    long long nparams;
    size_t params, activations, scratch, total;
} ModelMemory;
int model_memory_estimate(const ModelCfg *cfg, int B, int T, ModelMemory *out);

/* Declare parameter l.NAME (NAME alone for l < 0) in m's arena: the
 * arena index, or -1.  For layouts that live beside model.c (mla.c). */
int model_add_param(Model *m, int l, const char *nm, int decay, int ndim, int d0, int d1);

/* Build a model from a resolved config (config_resolve already called);
 * parameters initialised from cfg->seed.  0 or -1 (allocation failure). */
int model_init(Model *m, const ModelCfg *cfg);
void model_free(Model *m);

/* Initialise parameters: N(0, init_std) for matrices and the embedding,
 * ones for norm weights, zeros for static gate parameters. */
void model_init_params(Model *m, uint64_t seed);

/* Forward over tokens (B, T) with targets (B, T); returns the mean loss.
 * targets may be NULL (no loss; logits only).  Returns NAN on allocation
 * failure (errno set). */
double model_forward(Model *m, const int *tokens, const int *targets, int B, int T);

/* Backward of the last forward: ADDS dloss/dparam into m->p.g. */
int model_backward(Model *m, const int *tokens);

/* Use RoPE scaling r from now on (evaluation beyond the training length). */
void model_set_rope(Model *m, const RopeScaling *r);

/* Evaluation only: call hook (with ctx) on the input of every linear layer
 * of every block from the next forward on (run/infer.h: simulated
 * quantization, dropped heads); NULL restores the float forward.  The
 * output layer (the tied embedding) is never hooked.  Backward after a
 * hooked forward is undefined. */
void model_set_linear_hook(Model *m, LinearInputHook hook, void *ctx);

/* Zero all gradients. */
void model_zero_grad(Model *m);

/* The gated tensor of layer l in the last forward: its input y and output
 * (token strides sy, so).  0 when the model has no gate. */
int model_gate_io(const Model *m, int l, const real **y, int *sy, const real **out, int *so);

/* The values attention averaged in layer l in the last forward (the G2
 * gate's output when the value is gated), token stride *sv. */
const real *model_attn_values(const Model *m, int l, int *sv);

/* The queries, keys and values attention used in layer l in the last
 * forward, as the kernel saw them (after RoPE): query head h of token t at
 * q + t sq + h d, its key head g = h / (n_head / hk) at k + t sk + g d, the
 * value at v + t sv + g d; scores are q.k / sqrt(d).  d is d_head, or
 * d_head + d_R with latent KV (whose values are zero-padded to d there). */
typedef struct {
    const real *q, *k, *v;
    int sq, sk, sv, d, hk;
} AttnQKV;
void model_attn_qkv(const Model *m, int l, AttnQKV *out);

/* Gate parameters added per layer and in total. */
long model_gate_params(const Model *m);
/* The attention normaliser's parameters, all layers. */
long model_attn_params(const Model *m);

/* FLOPs per token: forward and training (forward + backward) at length T. */
void model_flops(const Model *m, int T, double *fwd, double *train);

#endif
