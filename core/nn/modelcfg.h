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

/* Gate enums.  The names users write are in the name tables
 * (variant.c: gate_position_names[] etc.), indexed by these values. */
typedef enum { GP_NONE, GP_SDPA, GP_VALUE, GP_KEY, GP_QUERY, GP_DENSE, GP__COUNT } GatePosition;
typedef enum { GG_ELEMENTWISE, GG_HEADWISE, GG__COUNT } GateGranularity;
typedef enum { GS_HEAD_SPECIFIC, GS_HEAD_SHARED, GS__COUNT } GateSharing;
typedef enum { GF_MULTIPLICATIVE, GF_ADDITIVE, GF__COUNT } GateForm;
typedef enum { GA_SIGMOID, GA_SILU, GA_TANH, GA_NONE, GA_NS_SIGMOID, GA__COUNT } GateActivation;
typedef enum { GI_HIDDEN, GI_STATIC, GI__COUNT } GateInput;
/* The paper's no-gate controls on the SDPA output (G1 position). */
typedef enum { GC_NONE, GC_SILU, GC_RMSNORM, GC__COUNT } GateControl;

typedef struct {
    int position;    /* GatePosition */
    int granularity; /* GateGranularity */
    int sharing;     /* GateSharing */
    int form;        /* GateForm */
    int activation;  /* GateActivation */
    int input;       /* GateInput */
    int control;     /* GateControl */
} GateCfg;

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
