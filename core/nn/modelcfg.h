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
} ModelCfg;

#endif
