/*
 * config_schema.c — the table of run configuration keys (config.h's
 * ConfigKey): for each its name, type, field, bounds, default, names, a
 * line of help, and two per-key rules: another spelling of a value
 * (alias: the paper's G1..G5 for the gate positions) and when the key has
 * any effect (applies).  config.c reads, checks, prints and resolves
 * configurations by walking it; CONFIG_NKEYS (config.h) is its length, so
 * a row added or removed without it fails to compile.
 */
#include "run/config.h"

#include <stddef.h>

#include "nn/rope.h"
#include "nn/variant.h"

#define K(key, type, field, lo, hi, def, names, desc) \
    {key, type, offsetof(Config, field), lo, hi, def, names, desc, 0, NULL, NULL}
#define KN(key, type, field, lo, hi, def, names, desc) \
    {key, type, offsetof(Config, field), lo, hi, def, names, desc, 1, NULL, NULL}
/* A key with an effect only when applies(c) holds (ConfigKey.applies). */
#define KW(applies, key, type, field, lo, hi, def, names, desc) \
    {key, type, offsetof(Config, field), lo, hi, def, names, desc, 0, NULL, applies}
#define KNW(applies, key, type, field, lo, hi, def, names, desc) \
    {key, type, offsetof(Config, field), lo, hi, def, names, desc, 1, NULL, applies}
#define NONAMES NULL

/* When a key has an effect (ConfigKey.applies). */
static int gated(const Config *c) { return c->gate.position != GP_NONE; }
static int gate_bias_applies(const Config *c) { return gated(c) && c->gate.input == GI_HIDDEN; }
static int gate_init_bias_applies(const Config *c) {
    return gated(c) && (c->gate.input == GI_STATIC || c->gate.bias);
}
static int control_scale_applies(const Config *c) { return c->gate.control == GC_SCALE; }
static int sink_logit(const Config *c) { return c->attn.normalizer == AN_SINK_LOGIT; }
static int kv_latent(const Config *c) { return c->attn.kv == KV_LATENT; }
static int sparse(const Config *c) { return c->attn.sparse != AS_NONE; }
static int indexer(const Config *c) { return attn_sparses[c->attn.sparse].indexer; }
static int rope_scaled(const Config *c) { return c->rope_scaling != ROPE_NONE; }
static int rope_yarn(const Config *c) { return c->rope_scaling == ROPE_YARN; }
static int corpus_bb(const Config *c) { return c->corpus == CORPUS_BB; }
static int bb_random(const Config *c) { return corpus_bb(c) && c->bb_source == BB_SOURCE_RANDOM; }

/* model.gate.position's other spellings: the paper's G1..G5. */
static const char *position_alias(int i) {
    return i > GP_NONE && i < GP__COUNT ? gate_positions[i].paper : NULL;
}

const char *const corpus_names[] = {"brown", "synthetic", "bb", NULL};
const char *const bb_source_names[] = {"brown", "random", NULL};
const char *const bb_first_names[] = {"stationary", "non_trigger", NULL};

const ConfigKey config_schema[] = {
    K("model.vocab_size", CT_INT, vocab_size, 2, 65536, "257", NONAMES,
      "vocabulary size (256 bytes + BOS)"),
    K("model.d_model", CT_INT, d_model, 4, 8192, "128", NONAMES, "residual stream width"),
    K("model.n_layer", CT_INT, n_layer, 1, 256, "4", NONAMES, "number of transformer blocks"),
    K("model.n_head", CT_INT, n_head, 1, 256, "4", NONAMES, "query heads per layer"),
    K("model.n_kv_head", CT_INT, n_kv_head, 0, 256, "0", NONAMES,
      "key/value heads (grouped-query attention); 0 = model.n_head"),
    K("model.d_head", CT_INT, d_head, 0, 1024, "0", NONAMES, "width of one head; 0 = d_model / n_head"),
    K("model.d_ff", CT_INT, d_ff, 0, 262144, "0", NONAMES,
      "SwiGLU hidden width; 0 = 8/3 d_model rounded up to a multiple of 8"),
    K("model.seq_len", CT_INT, seq_len, 2, 1048576, "128", NONAMES, "context length in tokens"),
    K("model.rope_base", CT_FLOAT, rope_base, 1, 1e12, "10000", NONAMES, "RoPE frequency base"),
    KN("model.rope_scaling", CT_ENUM, rope_scaling, 0, 0, "none", rope_scaling_names,
       "RoPE context scaling (rope.h): none, linear (position interpolation), ntk (larger base), yarn"),
    KNW(rope_scaled, "model.rope_factor", CT_FLOAT, rope_factor, 1, 1e6, "1", NONAMES,
       "RoPE scaling factor s: the context is s times the training length"),
    KNW(rope_yarn, "model.rope_train_len", CT_INT, rope_train_len, 0, 1048576, "0", NONAMES,
       "the context length the weights were trained at (YaRN's ramp); 0 = model.seq_len"),
    KNW(rope_yarn, "model.yarn_alpha", CT_FLOAT, yarn_alpha, 0, 1e6, "1", NONAMES,
       "YaRN: pairs rotating fewer times than this over the training length are interpolated"),
    KNW(rope_yarn, "model.yarn_beta", CT_FLOAT, yarn_beta, 0, 1e6, "32", NONAMES,
       "YaRN: pairs rotating more times than this over the training length are kept"),
    K("model.qk_norm", CT_BOOL, qk_norm, 0, 1, "true", NONAMES, "RMS-normalise queries and keys per head"),
    K("model.norm_eps", CT_FLOAT, norm_eps, 1e-12, 1e-2, "1e-6", NONAMES, "epsilon of every RMSNorm"),
    K("model.init_std", CT_FLOAT, init_std, 1e-6, 1, "0.02", NONAMES, "std of the normal weight init"),
    KW(gated, "model.match_params", CT_BOOL, match_params, 0, 1, "false", NONAMES,
      "shrink d_ff so the parameter count matches the ungated model"),
    {"model.gate.position", CT_ENUM, offsetof(Config, gate.position), 0, 0, "none", gate_position_names,
     "where the gate acts (sdpa = G1, value = G2, key = G3, query = G4, dense = G5; the G names are accepted too)",
     0, position_alias, NULL},
    KW(gated, "model.gate.granularity", CT_ENUM, gate.granularity, 0, 0, "elementwise", gate_granularity_names,
      "one gate score per channel, or one per head"),
    KW(gated, "model.gate.sharing", CT_ENUM, gate.sharing, 0, 0, "head_specific", gate_sharing_names,
      "gate scores per head, or shared across heads"),
    KW(gated, "model.gate.form", CT_ENUM, gate.form, 0, 0, "multiplicative", gate_form_names,
      "multiply by the gate score, or add it"),
    KW(gated, "model.gate.activation", CT_ENUM, gate.activation, 0, 0, "sigmoid", gate_activation_names,
      "nonlinearity applied to the gate logits"),
    KW(gated, "model.gate.input", CT_ENUM, gate.input, 0, 0, "hidden", gate_input_names,
      "gate computed from the layer input (hidden), or a learned static parameter"),
    K("model.gate.control", CT_ENUM, gate.control, 0, 0, "none", gate_control_names,
      "no-gate control applied to the SDPA output (silu, per-head rmsnorm, or a fixed scale)"),
    KNW(control_scale_applies, "model.gate.control_scale", CT_FLOAT, gate.control_scale, 0, 100, "0.5", NONAMES,
       "the fixed multiplier on the SDPA output when model.gate.control is scale (parameter-free)"),
    KNW(gate_bias_applies, "model.gate.bias", CT_BOOL, gate.bias, 0, 1, "false", NONAMES,
       "a learned bias on the gate logits (hidden input; not weight-decayed), starting at model.gate.init_bias"),
    KNW(gate_init_bias_applies, "model.gate.init_bias", CT_FLOAT, gate.init_bias, -100, 100, "0", NONAMES,
       "initial gate logit offset: the bias's start (needs model.gate.bias) or, with static input, the static "
       "logits' start; e.g. 4 starts a sigmoid gate open at 0.982"),
    KN("model.attention.normalizer", CT_ENUM, attn.normalizer, 0, 0, "softmax", attn_norm_names,
       "how attention scores become weights (nn/modelcfg.h, docs/model.md): softmax, softmax1 (+1 in the "
       "denominator), sink_logit (a learned logit per head), kv_bias (a learned key per KV head with value 0), "
       "sigmoid (sigmoid(s - log n), no normalisation), softpick (rectified softmax)"),
    KNW(sink_logit, "model.attention.sink_init", CT_FLOAT, attn.sink_init, -100, 100, "0", NONAMES,
       "sink_logit: the initial value of every head's sink logit"),
    KN("model.attention.kv", CT_ENUM, attn.kv, 0, 0, "heads", attn_kv_names,
       "how keys and values are built and cached (nn/modelcfg.h, docs/model.md): heads (n_kv_head key and "
       "value heads: MHA, GQA) or latent (multi-head latent attention: a d_c latent plus a d_R RoPE key)"),
    KNW(kv_latent, "model.attention.d_c", CT_INT, attn.d_c, 0, 65536, "0", NONAMES,
       "latent KV: the latent's width (cached per token and layer with d_R); 0 = 4 x model.d_head"),
    KNW(kv_latent, "model.attention.d_R", CT_INT, attn.d_R, -1, 1024, "-1", NONAMES,
       "latent KV: the decoupled RoPE key's width, shared by the heads (even, at most model.d_head); 0 = none "
       "(MLA without the RoPE key); -1 = model.d_head / 2"),
    KN("model.attention.sparse", CT_ENUM, attn.sparse, 0, 0, "none", attn_sparse_names,
       "top-k sparse attention (nn/modelcfg.h, docs/model.md): none (dense), indexer (DeepSeek's lightning "
       "indexer picks the keys), window (the last k), random (k seeded keys), oracle (the top k of the dense "
       "attention); softmax only"),
    KNW(sparse, "model.attention.topk", CT_INT, attn.topk, 1, 1048576, "64", NONAMES,
        "sparse: k, the keys each query attends to (a row with <= k keys, and every row when k >= "
        "model.seq_len, is dense)"),
    KNW(indexer, "model.attention.indexer_heads", CT_INT, attn.idx_heads, 1, 256, "4", NONAMES,
        "indexer: H_I, its heads"),
    KNW(indexer, "model.attention.indexer_dim", CT_INT, attn.idx_dim, 2, 1024, "32", NONAMES,
        "indexer: d_I, the width of its query heads and of its one key per position (even: RoPE)"),
    KNW(indexer, "model.attention.indexer_warmup", CT_INT, attn.idx_warmup, 0, 1000000000, "0", NONAMES,
        "indexer: dense warm-up steps 1..W in which the model runs dense and only the indexer learns (from the KL "
        "to the attention); then sparse training"),
    K("train.steps", CT_INT, steps, 0, 1000000000, "200", NONAMES, "optimizer steps"),
    K("train.batch", CT_INT, batch, 1, 65536, "8", NONAMES, "sequences per step"),
    K("train.lr", CT_FLOAT, lr, 0, 10, "3e-3", NONAMES, "peak learning rate"),
    K("train.min_lr", CT_FLOAT, min_lr, 0, 10, "3e-4", NONAMES, "learning rate at the end of the cosine decay"),
    K("train.warmup", CT_INT, warmup, 0, 1000000000, "20", NONAMES, "linear warmup steps"),
    K("train.weight_decay", CT_FLOAT, weight_decay, 0, 10, "0.1", NONAMES, "AdamW decoupled weight decay"),
    K("train.beta1", CT_FLOAT, beta1, 0, 0.999999, "0.9", NONAMES, "AdamW first-moment decay"),
    K("train.beta2", CT_FLOAT, beta2, 0, 0.999999, "0.95", NONAMES, "AdamW second-moment decay"),
    K("train.adam_eps", CT_FLOAT, adam_eps, 1e-30, 1, "1e-8", NONAMES, "AdamW epsilon"),
    K("train.grad_clip", CT_FLOAT, grad_clip, 0, 1e6, "1.0", NONAMES, "global gradient-norm clip; 0 = off"),
    K("train.seed", CT_INT, seed, 0, 9007199254740992.0, "1234", NONAMES, "random seed (init and data order)"),
    KN("train.init_from", CT_STRING, init_from, 0, 255, "", NONAMES,
       "continued training: start from the weights of this run (name or id in the database) or checkpoint "
       "file; the architecture must match, seq_len and RoPE settings may differ; \"\" = random init"),
    KN("train.micro_batch", CT_INT, micro_batch, 0, 1000000, "0", NONAMES,
       "sequences per data-parallel micro-batch (each runs whole on one thread; must divide train.batch); "
       "0 = the largest divisor of train.batch up to 4. Part of the numerics, never derived from threads"),
    K("train.eval_every", CT_INT, eval_every, 1, 1000000000, "50", NONAMES, "steps between evaluations"),
    K("train.eval_windows", CT_INT, eval_windows, 1, 1000000, "32", NONAMES,
      "held-out windows of seq_len tokens per evaluation (fixed across evaluations)"),
    K("train.checkpoint_every", CT_INT, checkpoint_every, 0, 1000000000, "0", NONAMES,
      "steps between checkpoints (a run can --resume from the last); 0 = only at the end"),
    K("train.spike_threshold", CT_FLOAT, spike_threshold, 0, 1000, "0.3", NONAMES,
      "a loss spike: loss above the median of the previous 100 steps by more than this"),
    K("train.diverge_loss", CT_FLOAT, diverge_loss, 0, 1e9, "20", NONAMES,
      "a loss above this (or NaN/inf) ends the run with status diverged"),
    K("data.corpus", CT_ENUM, corpus, 0, 0, "brown", corpus_names,
      "training text: the Brown corpus, a generated synthetic corpus, or the Bigram-Backcopy task (bb)"),
    K("data.bos_start", CT_BOOL, bos_start, 0, 1, "true", NONAMES,
      "every window starts with BOS, then T tokens from a random offset (else T+1 raw tokens)"),
    KNW(corpus_bb, "data.bb.tokens", CT_INT, bb_tokens, 2, 1024, "63", NONAMES,
       "Bigram-Backcopy: tokens besides BOS (ids 0..tokens-1, BOS = tokens); model.vocab_size must be at least "
       "tokens + 1"),
    KNW(corpus_bb, "data.bb.triggers", CT_INT, bb_triggers, 1, 1023, "3", NONAMES,
       "Bigram-Backcopy: k, the trigger tokens (the k most probable under the bigram chain's stationary "
       "distribution); after a trigger the next token copies the one before it"),
    KNW(corpus_bb, "data.bb.source", CT_ENUM, bb_source, 0, 0, "brown", bb_source_names,
       "Bigram-Backcopy: the bigram table: byte bigrams of Brown's train split between its data.bb.tokens most "
       "frequent bytes, or rows drawn from a symmetric Dirichlet (data.bb.alpha, seeded by data.bb.seed)"),
    KNW(bb_random, "data.bb.alpha", CT_FLOAT, bb_alpha, 1e-3, 1e3, "0.1", NONAMES,
       "Bigram-Backcopy, source random: the Dirichlet concentration of each row (small = sparse rows)"),
    KNW(corpus_bb, "data.bb.first", CT_ENUM, bb_first, 0, 0, "stationary", bb_first_names,
       "Bigram-Backcopy: the first token after BOS from the stationary distribution (a sequence that starts "
       "with two triggers alternates them to the end), or from it restricted to non-triggers (no two triggers "
       "ever stand side by side)"),
    KNW(corpus_bb, "data.bb.seed", CT_INT, bb_seed, 0, 2147483647, "0", NONAMES,
       "Bigram-Backcopy: seeds the random table and the fixed validation and test windows (train.seed seeds "
       "the training stream)"),
    K("threads", CT_INT, threads, 0, 256, "0", NONAMES, "worker threads; 0 = all cores"),
};

#undef K
#undef KN
#undef KW
#undef KNW
#undef NONAMES

const int config_schema_len = CONFIG_NKEYS;

int config_key_applies(const Config *c, const ConfigKey *k) { return !k->applies || k->applies(c); }
