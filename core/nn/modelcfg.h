/*
 * modelcfg.h — what the network is built from: dimensions, the gate variant
 * and the RoPE frequencies.
 *
 * The run configuration (run/config.h) holds these keys among its train,
 * data and runtime ones, and hands the network only this part
 * (config_model), as llm.c's model holds its few dimensions: nothing in
 * core/nn depends on how a run is configured.
 */
#ifndef GATED_MODELCFG_H
#define GATED_MODELCFG_H

#include <stdint.h>

/* The gate variant lists: each is the one source of its enum (GP_NONE ...),
 * its names (variant.c: gate_position_names[] ...) and its table rows
 * (variant.c: gate_positions[]; gate.c: gate_acts[]), expanded with
 * X-macros, so a value cannot exist without its name and its row.  Append
 * new rows at the end: configs are stored by name, but the values fix
 * gate_enumerate()'s order (and so the tests' variant lists and seeds).
 *
 * Positions:  X(ID, "name", paper label, what is gated, head split,
 *               headwise ok, head-shared ok,
 *               paper's added weights per layer: elementwise, headwise)
 * The formulas are products of d_model, n_head, n_kv_head, d_head joined
 * by " x " (gate_paper_params() evaluates them, independently of
 * gate_shape()); NULL where the granularity is not valid. */
#define GATE_POSITIONS(X)                                                                                    \
    X(NONE, "none", "-", "no gate", HEADS_NONE, 0, 0, NULL, NULL)                                            \
    X(SDPA, "sdpa", "G1", "SDPA output per query head, before W_o", HEADS_Q, 1, 1,                           \
      "d_model x n_head x d_head", "d_model x n_head")                                                      \
    X(VALUE, "value", "G2", "value projection (token j gated by X_j)", HEADS_KV, 1, 1,                      \
      "d_model x n_kv_head x d_head", "d_model x n_kv_head")                                                \
    X(KEY, "key", "G3", "key projection, after QK-norm, before RoPE", HEADS_KV, 1, 1,                       \
      "d_model x n_kv_head x d_head", "d_model x n_kv_head")                                                \
    X(QUERY, "query", "G4", "query projection, after QK-norm, before RoPE", HEADS_Q, 1, 1,                  \
      "d_model x n_head x d_head", "d_model x n_head")                                                      \
    X(DENSE, "dense", "G5", "attention block output, after W_o", HEADS_ONE, 0, 0, "d_model x d_model", NULL)

/* Activations:  X(ID, "name", act(x), act'(x), act'(x) from y = act(x) or
 *                 NULL, histogram range [lo, hi] of its scores for probes)
 * The functions are defined in gate.c (the table's row is built there).
 * Sigmoid-like scores live in [0, 1]; the others get a symmetric range,
 * with out-of-range values in the end bins. */
#define GATE_ACTIVATIONS(X)                                                                                 \
    X(SIGMOID, "sigmoid", act_sigmoid, dact_sigmoid, dact_sigmoid_y, 0, 1)                                   \
    X(SILU, "silu", act_silu, dact_silu, NULL, -2, 2)                                                        \
    X(TANH, "tanh", act_tanh, dact_tanh, dact_tanh_y, -2, 2)                                                 \
    X(NONE, "none", act_identity, dact_identity, NULL, -2, 2)                                                \
    X(NS_SIGMOID, "ns_sigmoid", act_ns_sigmoid, dact_ns_sigmoid, NULL, 0, 1)

/* The other axes:  X(ID, "name") (forms also carry gate_label's short word). */
#define GATE_GRANULARITIES(X) X(ELEMENTWISE, "elementwise") X(HEADWISE, "headwise")
#define GATE_SHARINGS(X) X(HEAD_SPECIFIC, "head_specific") X(HEAD_SHARED, "head_shared")
#define GATE_FORMS(X) X(MULTIPLICATIVE, "multiplicative", "mult") X(ADDITIVE, "additive", "add")
#define GATE_INPUTS(X) X(HIDDEN, "hidden") X(STATIC, "static")
/* The no-gate controls on the SDPA output (before a G1 gate, if any): the
 * paper's SiLU-only and per-head RMSNorm, and a parameter-free fixed
 * multiplier (control_scale) that separates a gate from the scale it starts
 * at (a sigmoid gate starts near x0.5). */
#define GATE_CONTROLS(X) X(NONE, "none") X(SILU, "silu") X(RMSNORM, "rmsnorm") X(SCALE, "scale")

#define GATE_ENUM_GP_(id, ...) GP_##id,
#define GATE_ENUM_GG_(id, ...) GG_##id,
#define GATE_ENUM_GS_(id, ...) GS_##id,
#define GATE_ENUM_GF_(id, ...) GF_##id,
#define GATE_ENUM_GA_(id, ...) GA_##id,
#define GATE_ENUM_GI_(id, ...) GI_##id,
#define GATE_ENUM_GC_(id, ...) GC_##id,
typedef enum { GATE_POSITIONS(GATE_ENUM_GP_) GP__COUNT } GatePosition;
typedef enum { GATE_GRANULARITIES(GATE_ENUM_GG_) GG__COUNT } GateGranularity;
typedef enum { GATE_SHARINGS(GATE_ENUM_GS_) GS__COUNT } GateSharing;
typedef enum { GATE_FORMS(GATE_ENUM_GF_) GF__COUNT } GateForm;
typedef enum { GATE_ACTIVATIONS(GATE_ENUM_GA_) GA__COUNT } GateActivation;
typedef enum { GATE_INPUTS(GATE_ENUM_GI_) GI__COUNT } GateInput;
typedef enum { GATE_CONTROLS(GATE_ENUM_GC_) GC__COUNT } GateControl;

typedef struct {
    int position;    /* GatePosition */
    int granularity; /* GateGranularity */
    int sharing;     /* GateSharing */
    int form;        /* GateForm */
    int activation;  /* GateActivation */
    int input;       /* GateInput */
    int control;     /* GateControl */
    int bias;        /* a learned bias on the gate logits (hidden input) */
    double control_scale; /* the fixed multiplier of control scale */
    double init_bias;     /* the bias's initial value; with static input, the
                             static logits' initial value (else 0) */
} GateCfg;
/* No padding: tests and `gated xcheck --list` compare GateCfgs with memcmp. */
_Static_assert(sizeof(GateCfg) == 8 * sizeof(int) + 2 * sizeof(double), "GateCfg has padding");

/* The attention normalisers (model.attention.normalizer): how a query's
 * scores s_ij = scale q_i.k_j over its visible keys j <= i become the
 * weights p_ij of o_i = sum_j p_ij v_j.  Like the gate lists, the one source
 * of the enum (AN_SOFTMAX ...), the names (attn_norm_names[], variant.c) and
 * the table rows (attn_norms[], variant.c); the math of each row is in
 * attn_norm.h (kernel, by family) and attn_ref.c (reference).  Append new rows at the end.
 *
 *   X(ID, "name", family, virtual key, rows sum to 1,
 *     parameters per layer (a formula over n_head, n_kv_head, d_head, or
 *     NULL), the weights in one line)
 *
 * family: how the tiled kernel computes it (AF_SOFTMAX: online softmax;
 * AF_SIGMOID: no normalisation; AF_SOFTPICK: online rescaled softpick).
 * virtual key: AV_NONE, or a key with value 0 that every query also sees,
 * whose logit z is AV_ZERO (0), AV_HEAD (a learned b_h per query head) or
 * AV_KEY (scale q_i.k*_h, k* a learned key per KV head).
 *
 * Sources:
 *  softmax    Vaswani et al. 2017, "Attention is all you need" (today's).
 *  softmax1   E. Miller, "Attention is off by one" (blog post, 2023):
 *             p_ij = exp(s_ij) / (1 + sum_j exp(s_ij)).
 *  sink_logit gpt-oss (OpenAI 2025); Hugging Face transformers
 *             models/gpt_oss/modeling_gpt_oss.py eager_attention_forward:
 *             a learned logit per head ("sinks") joins the row's softmax and
 *             its column is dropped: p_ij = exp(s_ij) / (exp(b_h) + sum_j exp(s_ij)).
 *  kv_bias    Gu et al. 2024, "When attention sink emerges in language
 *             models" (arXiv 2410.10781), section 7: a learned key k* per KV
 *             head with value v* = 0 that every query sees (no RoPE on it).
 *  sigmoid    Ramapuram et al. 2024, "Theory, analysis, and best practices
 *             for sigmoid self-attention" (arXiv 2409.04431):
 *             p_ij = sigmoid(s_ij + b), b = -log(n), n the keys row i sees.
 *  softpick   Zuhri et al. 2025, "Softpick: no attention sink, no massive
 *             activations with rectified softmax" (arXiv 2504.20966):
 *             p_ij = relu(exp(s_ij) - 1) / (sum_j |exp(s_ij) - 1| + eps). */
#define ATTN_NORMALIZERS(X)                                                                                   \
    X(SOFTMAX, "softmax", AF_SOFTMAX, AV_NONE, 1, NULL, "exp(s_ij) / sum_j exp(s_ij)")                        \
    X(SOFTMAX1, "softmax1", AF_SOFTMAX, AV_ZERO, 0, NULL, "exp(s_ij) / (1 + sum_j exp(s_ij))")                \
    X(SINK_LOGIT, "sink_logit", AF_SOFTMAX, AV_HEAD, 0, "n_head", "exp(s_ij) / (exp(b_h) + sum_j exp(s_ij))") \
    X(KV_BIAS, "kv_bias", AF_SOFTMAX, AV_KEY, 0, "n_kv_head x d_head",                                        \
      "exp(s_ij) / (exp(scale q_i.k*) + sum_j exp(s_ij)), v* = 0")                                           \
    X(SIGMOID, "sigmoid", AF_SIGMOID, AV_NONE, 0, NULL, "sigmoid(s_ij - log(i + 1))")                         \
    X(SOFTPICK, "softpick", AF_SOFTPICK, AV_NONE, 0, NULL, "relu(exp(s_ij) - 1) / (sum_j |exp(s_ij) - 1| + eps)")

typedef enum { AF_SOFTMAX, AF_SIGMOID, AF_SOFTPICK } AttnFamily;
typedef enum { AV_NONE, AV_ZERO, AV_HEAD, AV_KEY } AttnVirtualKey;
#define ATTN_ENUM_AN_(id, ...) AN_##id,
typedef enum { ATTN_NORMALIZERS(ATTN_ENUM_AN_) AN__COUNT } AttnNormalizer;

/* softpick's eps (in the row's unscaled sums; see attn_norm.h). */
#define ATTN_SOFTPICK_EPS 1e-6

/* How a layer's keys and values are built and cached (model.attention.kv),
 * the same X-macro pattern: the enum (KV_HEADS ...), the names
 * (attn_kv_names[], variant.c) and the rows (attn_kvs[], variant.c).
 * Append new rows at the end.
 *
 *   X(ID, "name", numbers cached per token per layer (a formula over
 *     n_kv_head, d_head, d_c, d_R), what it is in one line)
 *
 * Sources:
 *  heads   multi-head attention (Vaswani et al. 2017) and grouped-query
 *          attention (Ainslie et al. 2023): n_kv_head key and value heads
 *          projected from h (today's).
 *  latent  multi-head latent attention, DeepSeek-V2 (arXiv 2405.04434),
 *          inference/model.py class MLA: c = RMSNorm(W_DKV h) (d_c), per
 *          head k^C_i = W_UK,i c, v_i = W_UV,i c, a decoupled RoPE key
 *          k^R = RoPE(W_KR h) (d_R, shared by the heads), queries
 *          [q^C_i; q^R_i] (no query compression), scores over d_head + d_R;
 *          the math is in mla.h / mla.c. */
#define ATTN_KVS(X)                                                                                           \
    X(HEADS, "heads", "2 x n_kv_head x d_head", "n_kv_head key and value heads projected from h (MHA, GQA)")   \
    X(LATENT, "latent", "d_c + d_R", "a d_c latent up-projected per head, plus a shared RoPE key of d_R (MLA)")

#define ATTN_ENUM_KV_(id, ...) KV_##id,
typedef enum { ATTN_KVS(ATTN_ENUM_KV_) KV__COUNT } AttnKv;

/* Top-k sparse attention (model.attention.sparse): which keys S_t each
 * query t attends to, |S_t| = min(k, t + 1), one selection shared by the
 * layer's heads (softmax over S_t; sparse.h, docs/model.md).  Like the
 * lists above, the one source of the enum (AS_NONE ...), the names
 * (attn_sparse_names[], variant.c) and the rows (attn_sparses[]).  Append
 * new rows at the end.
 *
 *   X(ID, "name", has an indexer, how S_t is chosen)
 *
 * Sources: indexer: DeepSeek-V3.2-Exp (DSA), inference/model.py class
 * Indexer: I(t,s) = sum_j w(t,j) relu(q_I(t,j).k_I(s)); window, random and
 * oracle are this project's controls at the same k. */
#define ATTN_SPARSES(X)                                                                            \
    X(NONE, "none", 0, "every key s <= t (dense)")                                                 \
    X(INDEXER, "indexer", 1, "the k largest lightning-indexer scores I(t,s)")                     \
    X(WINDOW, "window", 0, "the last k keys t-k+1..t")                                             \
    X(RANDOM, "random", 0, "k keys drawn from hash(seed, step, layer, t), the same for every sequence") \
    X(ORACLE, "oracle", 0, "the k largest head-summed dense softmax weights (no indexer)")
#define ATTN_ENUM_AS_(id, ...) AS_##id,
typedef enum { ATTN_SPARSES(ATTN_ENUM_AS_) AS__COUNT } AttnSparse;

typedef struct {
    int normalizer;   /* AttnNormalizer */
    double sink_init; /* sink_logit: every b_h's initial value */
    int kv;           /* AttnKv (zero: heads) */
    int d_c, d_R;     /* latent: the latent's width and the decoupled RoPE key's (0: none); before
                         attn_kv_resolve 0 and -1 mean automatic; unused with heads */
    int sparse;       /* AttnSparse (0: dense) */
    int topk;         /* k: keys per query (>= 1) */
    int idx_heads;    /* indexer: H_I */
    int idx_dim;      /* indexer: d_I (even: RoPE) */
    int idx_warmup;   /* indexer: dense warm-up steps (0: none) */
} AttnCfg;

typedef enum { ROPE_NONE, ROPE_LINEAR, ROPE_NTK, ROPE_YARN, ROPE__COUNT } RopeScalingKind;

typedef struct {
    int kind;           /* RopeScalingKind */
    double base;        /* model.rope_base */
    double factor;      /* s */
    int train_len;      /* L_train: the context length the model was trained at (yarn) */
    double alpha, beta; /* yarn ramp bounds, in rotations over L_train */
} RopeScaling;

typedef struct {
    int vocab_size, d_model, n_layer, n_head, n_kv_head, d_head, d_ff; /* resolved (no 0 = auto) */
    int seq_len;        /* the training length (probes' T; RoPE tables follow each forward's T) */
    int qk_norm;        /* bool */
    double norm_eps;    /* RMSNorm epsilon */
    double init_std;    /* N(0, init_std) for matrices and the embedding */
    int64_t seed;       /* parameter initialisation */
    GateCfg gate;
    RopeScaling rope;   /* the frequencies the model starts with (model_set_rope changes them) */
    AttnCfg attn;       /* the attention normaliser (last: zero = softmax where a literal leaves it out) */
} ModelCfg;

#endif
