/*
 * variant.h — the table of gate variants: names, shape rules, validity.
 *
 * A gate variant is a tuple (position, granularity, sharing, form,
 * activation, input) plus an optional no-gate control on the SDPA output.
 * This file says which tuples are valid, what shape each gate has and how
 * many parameters it adds; gate.h holds the math.  The f64 gradient tests
 * enumerate variants through gate_enumerate() and the PyTorch cross-check
 * through gate_covering() (`gated xcheck --list`), so a new position or
 * activation added to the lists in modelcfg.h is picked up by both; sweeps
 * and bench suites name the variants they run in their YAML.
 *
 * Nothing here depends on the floating-point type of the model.
 */
#ifndef GATED_VARIANT_H
#define GATED_VARIANT_H

#include <stddef.h>
#include "nn/modelcfg.h"

/* NULL-terminated name lists, indexed by the enums in modelcfg.h and
 * generated from its lists (GATE_POSITIONS etc.). */
extern const char *const gate_position_names[];
extern const char *const gate_granularity_names[];
extern const char *const gate_sharing_names[];
extern const char *const gate_form_names[];
extern const char *const gate_form_labels[]; /* gate_label's short words: "mult", "add" */
extern const char *const gate_activation_names[];
extern const char *const gate_input_names[];
extern const char *const gate_control_names[];

/* Which heads a position's gated tensor is split into. */
typedef enum { HEADS_NONE, HEADS_Q, HEADS_KV, HEADS_ONE } GateHeads;

/* One row per position, from GATE_POSITIONS (modelcfg.h). */
typedef struct {
    const char *name;       /* config value */
    const char *paper;      /* the paper's label (G1..G5) */
    const char *what;       /* what is gated, one line */
    GateHeads heads;        /* head split of the gated tensor */
    int headwise_ok;        /* headwise granularity meaningful here */
    int shared_ok;          /* head-shared meaningful here */
    const char *paper_elem; /* the paper's added weights per layer, elementwise (NULL: none) */
    const char *paper_head; /* the same, headwise (NULL: not valid here) */
} GatePositionDef;
extern const GatePositionDef gate_positions[GP__COUNT];

/* Shape of one layer's gate, from resolved model dims. */
typedef struct {
    int hpos;       /* heads of the gated tensor (1 for dense) */
    int dh;         /* per-head width of the gated tensor (d_model for dense) */
    int nlogit;     /* gate logits per token when input = hidden (0 otherwise) */
    int nstatic;    /* size of the static parameter when input = static */
    long wg_params; /* parameters of this layer's gate (weights or static) */
} GateShape;

/* Shape of the gate for resolved dims (n_kv_head, d_head already resolved).
 * All zero when position is none. */
GateShape gate_shape(const GateCfg *g, int d_model, int n_head, int n_kv_head, int d_head);

/* NULL when the combination is valid; otherwise a message naming the keys,
 * and *key set to the dotted key most at fault. */
const char *gate_validate(const GateCfg *g, const char **key);

/* The default (ungated) GateCfg. */
GateCfg gate_default(void);

/* Every valid gated combination (position != none, control none), in a
 * fixed order.  Writes up to cap entries, returns the total count. */
int gate_enumerate(GateCfg *out, int cap);

/* The subset of gate_enumerate() that tests/xcheck.sh cross-checks against
 * PyTorch (through `gated xcheck --list`), in gate_enumerate()'s order:
 * every position x granularity x sharing x input with the default form and
 * activation, and every activation x form at G1 (elementwise,
 * head-specific, hidden), plus every activation multiplicative at G1
 * headwise head-shared (the path that takes act' from the logits).  So every
 * value of every list is covered.  Writes up to cap entries, returns the
 * total count. */
int gate_covering(GateCfg *out, int cap);

/* The weights a hidden-input gate adds per layer by the paper's formula
 * (the position row's paper_elem / paper_head text, evaluated here,
 * independently of gate_shape()); *formula gets the text.  0 ("no gate")
 * when position is none; -1 for a static gate (its parameter is not a
 * weight matrix) or where the row has no formula. */
long gate_paper_params(const GateCfg *g, long d_model, long n_head, long n_kv_head, long d_head,
                       const char **formula);

/* Short human label, e.g. "sdpa.elementwise.head_specific.mult.sigmoid.hidden".
 * Returns buf. */
const char *gate_label(const GateCfg *g, char *buf, size_t cap);

/* Index of name in a NULL-terminated list, or -1. */
int name_index(const char *const *names, const char *name);

/* ------------------------------------------------ attention normalisers */

/* One row per normaliser, from ATTN_NORMALIZERS (modelcfg.h). */
typedef struct {
    const char *name;    /* config value */
    AttnFamily family;   /* kernel path */
    AttnVirtualKey vkey; /* the value-0 key every query sees, if any */
    int sums_to_one;     /* rows of p sum to 1 (probes: mass on nothing = 0) */
    const char *params;  /* parameters per layer, a formula over n_head, n_kv_head, d_head; NULL: none */
    const char *formula; /* p_ij in one line */
} AttnNormDef;
/* NULL-terminated names and the rows, indexed by AttnNormalizer.  To
 * enumerate: for (int i = 0; i < AN__COUNT; i++) attn_norms[i] ...; or walk
 * attn_norm_names[] to its NULL. */
extern const char *const attn_norm_names[];
extern const AttnNormDef attn_norms[AN__COUNT];

/* One row per sparse selection, from ATTN_SPARSES (modelcfg.h). */
typedef struct {
    const char *name; /* config value */
    int indexer;      /* has a lightning indexer (parameters) */
    const char *how;  /* how S_t is chosen, one line */
} AttnSparseDef;
extern const char *const attn_sparse_names[];
extern const AttnSparseDef attn_sparses[AS__COUNT];

/* Parameters the indexer adds per layer: (H_I + 1) d_I + H_I rows of
 * d_model (q_I | k_I | w) and d_I (k_I's RMSNorm weight); 0 without one. */
long attn_indexer_params(const AttnCfg *a, long d_model);

/* Whether a forward of T tokens is sparse: a sparse row and k < T (row t
 * sees t + 1 keys: with k >= T every row is dense, and the model runs the
 * dense kernel). */
int attn_sparse_active(const AttnCfg *a, int T);

/* The default: softmax, sink_init 0, kv heads (d_c 0, d_R -1: automatic),
 * dense (k 64, H_I 4, d_I 32, no warm-up). */
AttnCfg attn_default(void);

/* Parameters the normaliser adds per layer (the row's formula evaluated;
 * model.c lays out exactly this many). */
long attn_norm_params(const AttnCfg *a, long n_head, long n_kv_head, long d_head);

/* NULL when a is valid (with gate g); otherwise the reason, and *key the
 * dotted key at fault. */
const char *attn_validate(const AttnCfg *a, const GateCfg *g, const char **key);

/* ------------------------------------------------ key/value construction */

/* One row per KV kind, from ATTN_KVS (modelcfg.h). */
typedef struct {
    const char *name;  /* config value */
    const char *cache; /* numbers cached per token per layer, a formula over n_kv_head, d_head, d_c, d_R */
    const char *what;  /* one line */
} AttnKvDef;
extern const char *const attn_kv_names[];
extern const AttnKvDef attn_kvs[KV__COUNT];

/* The latent widths' automatic values (DeepSeek-V2's ratios): d_c 0 ->
 * 4 d_head, d_R -1 -> d_head / 2.  Nothing with kv heads. */
void attn_kv_resolve(AttnCfg *a, int d_head);

/* NULL when the KV construction of a (resolved) fits the head layout and
 * the gate g; otherwise the reason, and *key the dotted key at fault. */
const char *attn_kv_validate(const AttnCfg *a, const GateCfg *g, int n_head, int n_kv_head, int d_head, int qk_norm,
                             const char **key);

/* Numbers a layer caches per token for decoding (the row's formula
 * evaluated): 2 n_kv_head d_head for heads, d_c + d_R for latent. */
long attn_kv_cache(const AttnCfg *a, long n_kv_head, long d_head);

#endif
