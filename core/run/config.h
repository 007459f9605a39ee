/*
 * config.h — the run configuration: one struct, one schema table.
 *
 * Every key a user can write in a run YAML (or pass as --set key=value) is a
 * row of the schema table in config.c: dotted key, type, range, default and a
 * one-line description.  Loading, --set overrides, printing and validation
 * all walk that table, so adding a key is adding one row (plus a field here).
 *
 * Errors are reported as "FILE:LINE:COL: error: KEY: reason" in a
 * ConfigError; the CLI prints it and exits 2 (bad input).
 */
#ifndef GATED_CONFIG_H
#define GATED_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/modelcfg.h"
#include "run/data.h"

typedef enum { CORPUS_BROWN, CORPUS_SYNTHETIC, CORPUS_BB } CorpusKind;
extern const char *const corpus_names[];
extern const char *const bb_source_names[]; /* indexed by BBSource (data.h) */
extern const char *const bb_first_names[];  /* indexed by BBFirst (data.h) */

typedef struct {
    /* model */
    int vocab_size;
    int d_model;
    int n_layer;
    int n_head;
    int n_kv_head;    /* 0 = n_head; resolved by config_resolve */
    int d_head;       /* 0 = d_model / n_head; resolved */
    int d_ff;         /* 0 = 8/3 d_model rounded up to a multiple of 8; resolved */
    int seq_len;
    double rope_base;
    int rope_scaling;    /* RopeScalingKind (rope.h): none, linear, ntk, yarn */
    double rope_factor;  /* s; 1 = none */
    int rope_train_len;  /* the length the weights were trained at (yarn's ramp); 0 = model.seq_len */
    double yarn_alpha, yarn_beta;
    int qk_norm;      /* bool */
    double norm_eps;
    double init_std;
    int match_params; /* bool: shrink d_ff so the total matches the ungated model */
    GateCfg gate;
    AttnCfg attn;     /* model.attention.* */

    /* train */
    int steps;
    int batch;
    double lr;
    double min_lr;
    int warmup;
    double weight_decay;
    double beta1;
    double beta2;
    double adam_eps;
    double grad_clip; /* 0 = off */
    int64_t seed;
    char init_from[256]; /* "" or a run name / run id / checkpoint path whose weights start this run */
    int micro_batch;       /* sequences per data-parallel micro-batch (dp.h); 0 = auto from batch */
    int eval_every;
    int eval_windows;      /* fixed held-out windows per evaluation */
    int checkpoint_every;  /* steps between checkpoints; 0 = only at the end */
    double spike_threshold; /* loss spike: loss > running median of the previous 100 steps + this */
    double diverge_loss;   /* loss above this (or NaN/inf) ends the run as diverged */

    /* data */
    int corpus;    /* CorpusKind */
    int bos_start; /* bool: every window is BOS + T tokens of text (a fixed first token) */
    int bb_tokens, bb_triggers, bb_source, bb_seed, bb_first; /* data.bb.*: the Bigram-Backcopy task (data.h) */
    double bb_alpha;

    /* runtime */
    int threads; /* 0 = all cores */

    int resolved; /* set by config_resolve (not a schema key); a second call is a no-op */
    int d_ff_matched; /* not a schema key: d_ff already holds model.match_params's cut (set by
                         config_resolve, and by config_from_json: stored JSON is resolved) */
} Config;

typedef struct {
    char msg[1024]; /* "file:line:col: error: key: reason" */
} ConfigError;

/* Fill every field with its schema default (unresolved: 0 = auto stays 0). */
void config_defaults(Config *c);

/* Parse a run YAML file into c (which should hold defaults).  Nested
 * mappings give dotted keys (model: {gate: {position: sdpa}} sets
 * model.gate.position).  Unknown keys (with a did-you-mean), wrong types,
 * out-of-range values and duplicate keys are errors.  The file is read by
 * yaml_file_load (yamlfile.h), which first refuses a file over 1 MiB,
 * nesting deeper than 64 levels, an alias cycle and aliases expanding past
 * 2,000,000 nodes (FILE:LINE:COL).  Returns 0 or -1. */
int config_load_file(Config *c, const char *path, ConfigError *err);

/* Apply one "dotted.key=value" override (the CLI's --set).  Numbers that
 * overflow or underflow (1e-400) are errors, not 0 or inf.  Messages show
 * the assignment with a long key or value cut, so the reason always fits.
 * Returns 0 / -1. */
int config_set(Config *c, const char *assignment, ConfigError *err);

/* Resolve automatic values (n_kv_head, d_head, d_ff, match_params) and check
 * cross-key rules (n_kv_head divides n_head, valid gate combination, ...).
 * Errors name the offending keys and, where the key came from a file, its
 * file:line:col.  Idempotent: a resolved config is returned unchanged.
 * Returns 0 / -1. */
int config_resolve(Config *c, ConfigError *err);

/* Print the resolved configuration as YAML, one key per line, in schema order. */
void config_print(const Config *c, FILE *f);

/* Canonical one-line JSON of every key in schema order (for hashing/storing);
 * strings are escaped whole by json_quote (json.h), never cut.
 * Returns the number of characters written (as snprintf). */
int config_to_json(const Config *c, char *buf, size_t cap);
/* The same with every key of the schema, omit_default ones included (what
 * `gated info --json` shows; never hashed). */
int config_to_json_full(const Config *c, char *buf, size_t cap);

/* Read config_to_json's output back into c (which should hold defaults):
 * strings are decoded in full (json_unquote), and every "key":value pair is
 * checked and set as --set does; keys missing from the JSON keep their
 * values.  Returns 0 / -1 (message names the key). */
int config_from_json(Config *c, const char *json, ConfigError *err);

/* 1 when the weights of a fit b: every model.* key agrees except the
 * context length and the RoPE settings (seq_len, rope_*, yarn_*), which
 * continued training and long-context evaluation change.  Else 0 with the
 * first differing key in why. */
int config_same_architecture(const Config *a, const Config *b, char *why, size_t cap);

/* Schema introspection, for tests, docs and sweeps. */
typedef enum { CT_INT, CT_FLOAT, CT_BOOL, CT_ENUM, CT_STRING } ConfigType;
typedef struct {
    const char *key;
    ConfigType type;
    size_t offset;
    double min, max;          /* inclusive bounds for INT/FLOAT */
    const char *def;          /* default, as text */
    const char *const *names; /* CT_ENUM: NULL-terminated value names */
    const char *desc;
    /* Keys added after results were stored: left out of config_to_json
     * while at their default, so the run ids of earlier runs stay valid. */
    int omit_default;
    /* CT_ENUM: another accepted spelling of value i (the paper's G1..G5
     * for model.gate.position), or NULL; NULL: none has one.  Read as
     * value i (case aside) wherever the key is read; stored and printed as
     * names[i]; messages list both. */
    const char *(*alias)(int i);
    /* Whether the key has any effect in config c (NULL: always): the gate's
     * keys need a gate position, model.gate.control_scale needs control
     * scale, the RoPE scaling's keys their scaling, data.bb.* data.corpus
     * bb.  gated export leaves a key without effect empty; config_resolve
     * refuses a value other than the default for the gate's and bb's (a
     * stray value would give one run two ids). */
    int (*applies)(const Config *c);
} ConfigKey;
/* The rows of config_schema (config_schema.c). */
enum { CONFIG_NKEYS = 65 };
extern const ConfigKey config_schema[CONFIG_NKEYS];
extern const int config_schema_len;
const ConfigKey *config_find(const char *key);
/* k->applies(c), or 1 when k has no such rule. */
int config_key_applies(const Config *c, const ConfigKey *k);

/* Helpers shared by the YAML readers (run configs, sweeps): */
/* s as it goes between double quotes in a message: '"' and '\' escaped,
 * control bytes as \xNN, long text cut with "...".  For messages only:
 * it is not JSON and it loses text (json.h's json_quote is for data). */
void config_quote(const char *s, char *out, size_t cap);
/* Levenshtein distance (for did-you-mean); very long strings count as far. */
int config_edit_distance(const char *a, const char *b);
/* True when some schema key lives under "name." (model, model.gate, train). */
int config_is_section(const char *name);

/* Write a message into err (may be NULL) and return -1: the one error
 * helper of the config and YAML readers. */
int config_fail(ConfigError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The network's part of a resolved config (nn/modelcfg.h): what model_init
 * takes, so the network never sees train, data or runtime keys. */
ModelCfg config_model(const Config *c);
/* The Bigram-Backcopy task a config asks for (data.bb.*). */
BBCfg config_bb(const Config *c);
/* The RoPE scaling a config asks for (model.rope_*; rope_train_len 0 =
 * model.seq_len). */
RopeScaling rope_of_config(const Config *c);

#endif
