/*
 * test_config.c — the run configuration: schema, YAML loading, --set,
 * resolution, printing, and the exact text of every kind of config error.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/config.h"
#include "util/json.h"
#include "run/store.h"
#include "nn/variant.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* Write text to a fresh /tmp file; its path goes to path (>= 64 bytes). */
static void write_tmp(const char *text, char *path) {
    strcpy(path, "/tmp/test_config_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n, "write %s", path);
    cr_assert_eq(close(fd), 0);
}

/* Load text as a run file over defaults. */
static int load_text(Config *c, const char *text, ConfigError *err, char *path) {
    write_tmp(text, path);
    int rc = config_load_file(c, path, err);
    unlink(path);
    return rc;
}

static void json_of(const Config *c, char *buf, size_t cap) {
    int n = config_to_json(c, buf, cap);
    cr_assert(n > 0 && (size_t)n < cap, "config_to_json returned %d for cap %zu", n, cap);
}

/* ------------------------------------------------------------------ */
/* schema                                                              */
/* ------------------------------------------------------------------ */

Test(config, schema_rows_are_consistent) {
    cr_assert_eq(config_schema_len, 65);
    for (int i = 0; i < config_schema_len; i++) {
        const ConfigKey *k = &config_schema[i];
        cr_assert_eq(config_find(k->key), k, "config_find(%s)", k->key);
        cr_assert(k->desc && *k->desc, "%s has no description", k->key);
        cr_assert(k->def, "%s has no default", k->key);
        cr_assert(k->offset < sizeof(Config), "%s offset", k->key);
        cr_assert_eq(k->type == CT_ENUM, k->names != NULL, "%s: names iff enum", k->key);
        if (k->type == CT_INT || k->type == CT_FLOAT) cr_assert(k->min <= k->max, "%s range", k->key);
        for (int j = 0; j < i; j++) cr_assert_str_neq(config_schema[j].key, k->key);
        /* Every default is accepted by the user-facing parser too. */
        char set[256];
        snprintf(set, sizeof set, "%s=%s", k->key, k->def);
        Config c;
        ConfigError e;
        config_defaults(&c);
        cr_assert_eq(config_set(&c, set, &e), 0, "--set %s: %s", set, e.msg);
    }
    cr_assert_null(config_find("model.n_heads"));
    cr_assert_null(config_find("model"));
    cr_assert_null(config_find(""));
}

Test(config, defaults_resolve) {
    Config c;
    ConfigError e;
    config_defaults(&c);
    /* Unresolved: automatic values stay 0. */
    cr_assert_eq(c.n_kv_head, 0);
    cr_assert_eq(c.d_head, 0);
    cr_assert_eq(c.d_ff, 0);
    cr_assert_eq(c.vocab_size, 257);
    cr_assert_eq(c.d_model, 128);
    cr_assert_eq(c.qk_norm, 1);
    cr_assert_eq(c.match_params, 0);
    cr_assert_float_eq(c.lr, 3e-3, 1e-18);
    cr_assert_float_eq(c.norm_eps, 1e-6, 1e-21);
    cr_assert_eq(c.seed, 1234);
    GateCfg g = gate_default();
    cr_assert_eq(memcmp(&c.gate, &g, sizeof g), 0, "default gate differs from gate_default()");

    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.n_kv_head, 4);
    cr_assert_eq(c.d_head, 32);
    cr_assert_eq(c.d_ff, 344);

    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.d_model=256", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_ff, 688);
    cr_assert_eq(c.d_head, 64);
}

Test(config, empty_and_comment_only_files_are_defaults) {
    static const char *texts[] = {"", "# nothing here\n", "---\n", "model:\n"};
    char want[4096], got[4096], path[64];
    Config d, c;
    ConfigError e;
    config_defaults(&d);
    json_of(&d, want, sizeof want);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        config_defaults(&c);
        cr_assert_eq(load_text(&c, texts[i], &e, path), 0, "text %zu: %s", i, e.msg);
        json_of(&c, got, sizeof got);
        cr_assert_str_eq(got, want, "text %zu", i);
    }
}

Test(config, nested_file_sets_values) {
    const char *text = "# a run\n"
                       "model:\n"
                       "  d_model: 64\n"
                       "  n_head: 8\n"
                       "  n_kv_head: 2\n"
                       "  qk_norm: false\n"
                       "  rope_base: 500000\n"
                       "  gate:\n"
                       "    position: value\n"
                       "    granularity: headwise\n"
                       "    activation: ns_sigmoid\n"
                       "    input: static\n"
                       "train:\n"
                       "  lr: 1e-3\n"
                       "  min_lr: 0\n"
                       "  seed: 9007199254740992\n"
                       "  beta2: 0.999\n"
                       "model.seq_len: 256\n" /* dotted keys work at any level */
                       "threads: 3\n";
    Config c;
    ConfigError e;
    char path[64];
    config_defaults(&c);
    cr_assert_eq(load_text(&c, text, &e, path), 0, "%s", e.msg);
    cr_assert_eq(c.d_model, 64);
    cr_assert_eq(c.n_head, 8);
    cr_assert_eq(c.n_kv_head, 2);
    cr_assert_eq(c.qk_norm, 0);
    cr_assert_eq(c.seq_len, 256);
    cr_assert_float_eq(c.rope_base, 500000.0, 0);
    cr_assert_eq(c.gate.position, GP_VALUE);
    cr_assert_eq(c.gate.granularity, GG_HEADWISE);
    cr_assert_eq(c.gate.activation, GA_NS_SIGMOID);
    cr_assert_eq(c.gate.input, GI_STATIC);
    cr_assert_eq(c.gate.sharing, GS_HEAD_SPECIFIC);
    cr_assert_float_eq(c.lr, 1e-3, 0);
    cr_assert_float_eq(c.min_lr, 0.0, 0);
    cr_assert_float_eq(c.beta2, 0.999, 0);
    cr_assert_eq(c.seed, (int64_t)9007199254740992LL);
    cr_assert_eq(c.threads, 3);
    cr_assert_eq(c.vocab_size, 257, "keys not in the file keep their defaults");
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_head, 8);
    cr_assert_eq(c.n_kv_head, 2);
    cr_assert_eq(c.d_ff, 176);
}

Test(config, set_overrides_file) {
    Config c;
    ConfigError e;
    char path[64];
    config_defaults(&c);
    cr_assert_eq(load_text(&c, "model:\n  n_head: 2\n  gate:\n    position: sdpa\n", &e, path), 0, "%s", e.msg);
    cr_assert_eq(c.n_head, 2);
    cr_assert_eq(config_set(&c, "model.n_head=8", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, " model.gate.position = dense ", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "train.seed=42", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.match_params=true", &e), 0, "%s", e.msg);
    cr_assert_eq(c.n_head, 8);
    cr_assert_eq(c.gate.position, GP_DENSE);
    cr_assert_eq(c.seed, 42);
    cr_assert_eq(c.match_params, 1);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_head, 16);
    /* dense elementwise adds d_model x d_model per layer: 344 - round(16384/384) */
    cr_assert_eq(c.d_ff, 301);
}

/* ------------------------------------------------------------------ */
/* match_params                                                        */
/* ------------------------------------------------------------------ */

static int matched_d_ff(const char *granularity, const char *input) {
    Config c;
    ConfigError e;
    char a[128], b[128];
    config_defaults(&c);
    snprintf(a, sizeof a, "model.gate.granularity=%s", granularity);
    snprintf(b, sizeof b, "model.gate.input=%s", input);
    cr_assert_eq(config_set(&c, "model.gate.position=sdpa", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, a, &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, b, &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.match_params=true", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    GateShape s = gate_shape(&c.gate, c.d_model, c.n_head, c.n_kv_head, c.d_head);
    cr_assert_gt(s.wg_params, 0);
    return c.d_ff;
}

Test(config, match_params_g1_elementwise) {
    /* G1 elementwise: 128*128 weights per layer; 344 - round(16384/384) = 301 */
    cr_assert_eq(matched_d_ff("elementwise", "hidden"), 301);
}

Test(config, match_params_g1_headwise) {
    /* G1 headwise: 4 logits * 128 = 512 weights; 344 - round(512/384) = 343 */
    cr_assert_eq(matched_d_ff("headwise", "hidden"), 343);
    /* static headwise: 4 parameters, round(4/384) = 0 units */
    cr_assert_eq(matched_d_ff("headwise", "static"), 344);
}

Test(config, match_params_ungated_and_off_leave_d_ff) {
    Config c;
    ConfigError e;
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.match_params=true", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_ff, 344);
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.gate.position=sdpa", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.d_ff=500", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_ff, 500, "explicit d_ff without match_params is kept");
}

/* ------------------------------------------------------------------ */
/* bad run files: exact messages                                       */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *yaml;
    const char *msg;  /* expected message after the file's path */
    int at_resolve;   /* 0: config_load_file fails; 1: it loads, config_resolve fails */
} BadYaml;

static const BadYaml bad_yaml[] = {
    /* 0 */ {"model:\n  n_heads: 4\n", ":2:3: error: model.n_heads: unknown key (did you mean model.n_head?)", 0},
    /* 1 */ {"foo: 1\n", ":1:1: error: foo: unknown key", 0},
    /* 2 */ {"optim:\n  lr: 0.1\n", ":2:3: error: optim.lr: unknown key (did you mean train.lr?)", 0},
    /* 3 */ {"modle:\n  n_head: 4\n", ":2:3: error: modle.n_head: unknown key (did you mean model.n_head?)", 0},
    /* 4 */ {"n_head: 4\n", ":1:1: error: n_head: unknown key (did you mean model.n_head?)", 0},
    /* 5 */ {"model:\n  n_head: 12x\n", ":2:11: error: model.n_head: expected integer in [1, 256], got \"12x\"", 0},
    /* 6 */ {"train:\n  lr: fast\n", ":2:7: error: train.lr: expected number in [0, 10], got \"fast\"", 0},
    /* 7 */ {"model:\n  qk_norm: yes\n", ":2:12: error: model.qk_norm: expected true or false, got \"yes\"", 0},
    /* 8 */
    {"model:\n  gate:\n    position: foo\n",
     ":3:15: error: model.gate.position: expected one of none, sdpa (G1), value (G2), key (G3), query (G4), dense "
     "(G5), got \"foo\"", 0},
    /* 9 */ {"model:\n  n_layer: 300\n", ":2:12: error: model.n_layer: expected integer in [1, 256], got \"300\"", 0},
    /* 10 */
    {"model:\n  norm_eps: 1\n", ":2:13: error: model.norm_eps: expected number in [1e-12, 0.01], got \"1\"", 0},
    /* 11 */
    {"train:\n  seed: 9007199254740993\n",
     ":2:9: error: train.seed: expected integer in [0, 9007199254740992], got \"9007199254740993\"", 0},
    /* 12 */
    {"model:\n  n_head: 4\n  n_head: 8\n", ":3:3: error: model.n_head: duplicate key (first set at line 2)", 0},
    /* 13 */
    {"model.n_head: 4\nmodel:\n  n_head: 8\n", ":3:3: error: model.n_head: duplicate key (first set at line 1)", 0},
    /* 14 */ {"model:\n  n_head:\n    x: 1\n", ":3:5: error: model.n_head: expected a value, got a mapping", 0},
    /* 15 */ {"model: 5\n", ":1:8: error: model: expected a mapping (section), got \"5\"", 0},
    /* 16 */
    {"model:\n  gate: sdpa\n", ":2:9: error: model.gate: expected a mapping (section), got \"sdpa\"", 0},
    /* 17 */
    {"model:\n n_head: 4\n  d_model: 5\n", ":3:10: error: YAML syntax: mapping values are not allowed in this context",
     0},
    /* 18 */ {"model:\n\tn_head: 4\n", ":2:1: error: YAML syntax: found character that cannot start any token", 0},
    /* 19 */ {"- a\n- b\n", ":1:1: error: expected a mapping of keys at the top level, got a sequence", 0},
    /* 20 */
    {"model:\n  n_head: 4\n---\nmodel:\n  n_head: 8\n",
     ":3:1: error: more than one YAML document (a run file holds one)", 0},
    /* 21 */
    {"model:\n  n_kv_head: 3\n", ":2:3: error: model.n_kv_head: must divide model.n_head (n_head 4, n_kv_head 3)", 1},
    /* 22 */
    {"model:\n  gate:\n    position: dense\n    granularity: headwise\n",
     ":4:5: error: model.gate.granularity: headwise is not valid with model.gate.position dense "
     "(G5 gates d_model channels; it has no heads)",
     1},
    /* 23 */
    {"model:\n  gate:\n    sharing: head_shared\n",
     ":3:5: error: model.gate.sharing: has no effect when model.gate.position is none "
     "(set a position, or remove the key)",
     1},
    /* 24 */
    {"train:\n  min_lr: 0.01\n",
     ":2:3: error: train.min_lr: train.min_lr must not exceed train.lr (min_lr 0.01, lr 0.003)", 1},
    /* 25 */
    {"model:\n  d_head: 5\n", ":2:3: error: model.d_head: must be even (RoPE rotates pairs of dimensions), got 5", 1},
    /* 26 */
    {"model:\n  d_model: 130\n",
     ":2:3: error: model.d_model: model.d_model (130) is not divisible by model.n_head (4); "
     "change one of them or set model.d_head",
     1},
    /* 27 */
    {"model:\n  d_model: 72\n  n_head: 8\n",
     ":3:3: error: model.n_head: model.d_head = model.d_model / model.n_head = 72 / 8 = 9 must be even "
     "(RoPE rotates pairs of dimensions)",
     1},
    /* 28 */
    {"model:\n  d_ff: 40\n  match_params: true\n  gate:\n    position: sdpa\n",
     ":3:3: error: model.match_params: the gate adds 16384 parameters per layer, more than model.d_ff (40) "
     "can give back (43 SwiGLU units)",
     1},
    /* 29 */
    {"train:\n  lr: 1e-400\n",
     ":2:7: error: train.lr: expected number in [0, 10], got \"1e-400\" (out of the range of a double: underflow)", 0},
    /* 30: nesting is bounded (libyaml takes quadratic time in the depth) */
    {"model: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     ":1:71: error: YAML nesting depth exceeds 64 levels", 0},
    /* 31: an alias inside the node it names */
    {"model: &m {gate: *m}\n", ":1:18: error: YAML alias *m refers to a node that contains it (a cycle)", 0},
    /* 32: aliases of aliases (a "billion laughs") */
    {"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
     "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
     "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
     "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
     ":7:8: error: YAML aliases expand the document past 2000000 nodes", 0},
    /* 33: micro-batches must cut the batch evenly */
    {"train:\n  batch: 8\n  micro_batch: 3\n",
     ":3:3: error: train.micro_batch: must divide train.batch (batch 8, micro_batch 3)", 1},
    /* 34-39: the Bigram-Backcopy keys */
    {"data:\n  bb:\n    token: 63\n", ":3:5: error: data.bb.token: unknown key (did you mean data.bb.tokens?)", 0},
    {"data:\n  bb:\n    source: markov\n",
     ":3:13: error: data.bb.source: expected one of brown, random, got \"markov\"", 0},
    {"data:\n  corpus: bb\n  bb:\n    triggers: 63\n",
     ":4:5: error: data.bb.triggers: data.bb.triggers must be below data.bb.tokens (triggers 63, tokens 63)", 1},
    {"data:\n  corpus: bb\n  bb:\n    tokens: 300\n",
     ":4:5: error: data.bb.tokens: model.vocab_size (257) must be at least data.bb.tokens + 1 = 301 (the "
     "Bigram-Backcopy tokens and BOS)",
     1},
    {"data:\n  corpus: bb\n  bos_start: false\n",
     ":3:3: error: data.bos_start: must be true with data.corpus bb (every Bigram-Backcopy sequence starts with "
     "BOS)",
     1},
    {"data:\n  bb:\n    alpha: 0.5\n",
     ":3:5: error: data.bb.alpha: only used with data.corpus bb (data.corpus is brown)", 1},
};
#define N_BAD_YAML ((int)(sizeof bad_yaml / sizeof bad_yaml[0]))

ParameterizedTestParameters(config, bad_yaml) {
    static int rows[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                         15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
                         34, 35, 36, 37, 38, 39};
    _Static_assert(sizeof rows / sizeof rows[0] == sizeof bad_yaml / sizeof bad_yaml[0],
                   "one parameter per bad_yaml row");
    return cr_make_param_array(int, rows, sizeof rows / sizeof rows[0]);
}

ParameterizedTest(int *row, config, bad_yaml) {
    cr_assert(*row >= 0 && *row < N_BAD_YAML);
    const BadYaml *b = &bad_yaml[*row];
    Config c, before;
    ConfigError e;
    char path[64], want[1100], json_before[4096], json_after[4096];
    memset(&e, 0, sizeof e);
    config_defaults(&c);
    before = c;
    int rc = load_text(&c, b->yaml, &e, path);
    snprintf(want, sizeof want, "%s%s", path, b->msg);
    if (!b->at_resolve) {
        cr_assert_eq(rc, -1, "row %d: load should fail", *row);
        cr_assert_str_eq(e.msg, want, "row %d", *row);
        /* A failed load changes nothing. */
        json_of(&before, json_before, sizeof json_before);
        json_of(&c, json_after, sizeof json_after);
        cr_assert_str_eq(json_after, json_before, "row %d: failed load modified the config", *row);
        return;
    }
    cr_assert_eq(rc, 0, "row %d: load failed: %s", *row, e.msg);
    Config loaded = c;
    cr_assert_eq(config_resolve(&c, &e), -1, "row %d: resolve should fail", *row);
    cr_assert_str_eq(e.msg, want, "row %d", *row);
    cr_assert_eq(memcmp(&c, &loaded, sizeof c), 0, "row %d: failed resolve modified the config", *row);
}

Test(config, failed_load_changes_nothing) {
    Config c, before;
    ConfigError e;
    char path[64];
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.n_layer=2", &e), 0, "%s", e.msg);
    before = c;
    cr_assert_eq(load_text(&c, "model:\n  n_head: 8\n  n_layer: 6\n  d_model: 12x\n", &e, path), -1);
    cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "a failed load left values behind (n_head %d, n_layer %d)",
                 c.n_head, c.n_layer);
    /* ... and its positions: n_layer is still blamed on the --set. */
    c.n_kv_head = 3;
    cr_assert_eq(config_set(&c, "model.n_kv_head=3", &e), 0, "%s", e.msg);
    cr_assert_eq(load_text(&c, "model:\n  n_kv_head: 3\n  vocab_size: 1\n", &e, path), -1);
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "--set model.n_kv_head=3: error: model.n_kv_head: must divide model.n_head "
                            "(n_head 4, n_kv_head 3)");
}

Test(config, missing_file) {
    char path[64], want[256];
    Config c;
    ConfigError e;
    write_tmp("", path);
    cr_assert_eq(unlink(path), 0);
    config_defaults(&c);
    cr_assert_eq(config_load_file(&c, path, &e), -1);
    snprintf(want, sizeof want, "%s: error: cannot open: No such file or directory", path);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(config_load_file(&c, "/tmp", &e), -1);
    cr_assert_str_eq(e.msg, "/tmp: error: cannot open: Is a directory");
}

/* ------------------------------------------------------------------ */
/* bad --set: exact messages                                           */
/* ------------------------------------------------------------------ */

Test(config, bad_set) {
    static const struct {
        const char *set, *msg;
    } rows[] = {
        {"model.n_head=0", "--set model.n_head=0: error: model.n_head: expected integer in [1, 256], got \"0\""},
        {"model.n_head", "--set model.n_head: error: expected key=value"},
        {"=4", "--set =4: error: expected key=value"},
        {"model.n_heads=4", "--set model.n_heads=4: error: model.n_heads: unknown key (did you mean model.n_head?)"},
        {"train.n_head=4", "--set train.n_head=4: error: train.n_head: unknown key (did you mean model.n_head?)"},
        {"bogus=1", "--set bogus=1: error: bogus: unknown key"},
        {"model.d_mdl=64", "--set model.d_mdl=64: error: model.d_mdl: unknown key (did you mean model.d_model?)"},
        {"train.wrmup=1", "--set train.wrmup=1: error: train.wrmup: unknown key (did you mean train.warmup?)"},
        {"train.lrate=0.1", "--set train.lrate=0.1: error: train.lrate: unknown key (did you mean train.lr?)"},
        {"model.vocab=5", "--set model.vocab=5: error: model.vocab: unknown key"}, /* 5 edits: too far */
        {"model=1", "--set model=1: error: model: is a section, not a key (set one of its keys, e.g. model.vocab_size)"},
        {"model.gate.activation=relu",
         "--set model.gate.activation=relu: error: model.gate.activation: expected one of sigmoid, silu, tanh, none, "
         "ns_sigmoid, got \"relu\""},
        {"train.lr=1e400",
         "--set train.lr=1e400: error: train.lr: expected number in [0, 10], got \"1e400\" (out of the range of a "
         "double: overflow)"},
        /* underflow is not 0 */
        {"train.lr=1e-400",
         "--set train.lr=1e-400: error: train.lr: expected number in [0, 10], got \"1e-400\" (out of the range of a "
         "double: underflow)"},
        {"train.min_lr=-2e-320",
         "--set train.min_lr=-2e-320: error: train.min_lr: expected number in [0, 10], got \"-2e-320\" (out of the "
         "range of a double: underflow)"},
        {"train.seed=99999999999999999999",
         "--set train.seed=99999999999999999999: error: train.seed: expected integer in [0, 9007199254740992], got "
         "\"99999999999999999999\" (out of the range of a 64-bit integer)"},
        {"model.n_head=-99999999999999999999",
         "--set model.n_head=-99999999999999999999: error: model.n_head: expected integer in [1, 256], got "
         "\"-99999999999999999999\" (out of the range of a 64-bit integer)"},
        {"train.lr=", "--set train.lr=: error: train.lr: expected number in [0, 10], got \"\""},
        {"model.match_params=1", "--set model.match_params=1: error: model.match_params: expected true or false, got \"1\""},
        {"train.seed=-1", "--set train.seed=-1: error: train.seed: expected integer in [0, 9007199254740992], got \"-1\""},
        {"threads=0x10", "--set threads=0x10: error: threads: expected integer in [0, 256], got \"0x10\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Config c, before;
        ConfigError e;
        memset(&e, 0, sizeof e);
        config_defaults(&c);
        before = c;
        cr_assert_eq(config_set(&c, rows[i].set, &e), -1, "--set %s should fail", rows[i].set);
        cr_assert_str_eq(e.msg, rows[i].msg);
        cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "--set %s modified the config", rows[i].set);
    }
}

/* "KEY=" followed by n copies of ch (malloc'd). */
static char *long_assignment(const char *key, char ch, size_t n) {
    size_t kl = strlen(key);
    char *a = malloc(kl + 1 + n + 1);
    cr_assert_not_null(a);
    memcpy(a, key, kl);
    a[kl] = '=';
    memset(a + kl + 1, ch, n);
    a[kl + 1 + n] = '\0';
    return a;
}

/* A 5,000-byte value: the message shows the first 64 bytes of it and keeps
 * the reason (it used to be cut before the reason). */
Test(config, long_set_values_keep_the_reason) {
    static const struct {
        const char *key, *reason;
    } rows[] = {
        {"model.n_head", "model.n_head: expected integer in [1, 256], got \""},
        {"train.init_from", "train.init_from: expected text of at most 255 bytes without control characters, got \""},
        {"model.n_heads", "model.n_heads: unknown key (did you mean model.n_head?)"},
    };
    char x64[65];
    memset(x64, 'x', 64);
    x64[64] = '\0';
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Config c;
        ConfigError e;
        char want[1100];
        config_defaults(&c);
        char *a = long_assignment(rows[i].key, 'x', 5000);
        cr_assert_eq(config_set(&c, a, &e), -1, "%s", rows[i].key);
        free(a);
        int quoted = rows[i].reason[strlen(rows[i].reason) - 1] == '"';
        snprintf(want, sizeof want, "--set %s=%s...: error: %s%s%s", rows[i].key, x64, rows[i].reason,
                 quoted ? x64 : "", quoted ? "...\"" : "");
        cr_assert_str_eq(e.msg, want);
    }

    /* A long key: unknown, shown cut. */
    {
        Config c;
        ConfigError e;
        char want[1100];
        config_defaults(&c);
        char *a = long_assignment("", 'k', 3002); /* "=kkk...k" */
        memmove(a, a + 1, 3002);                  /* "kkk...k", then "=1" over its end */
        a[3000] = '=';
        a[3001] = '1';
        a[3002] = '\0';
        cr_assert_eq(config_set(&c, a, &e), -1);
        free(a);
        char k64[65];
        memset(k64, 'k', 64);
        k64[64] = '\0';
        snprintf(want, sizeof want, "--set %s...=1: error: %s...: unknown key", k64, k64);
        cr_assert_str_eq(e.msg, want);
    }

    /* A long valid value, blamed later by config_resolve: the reason stays. */
    {
        Config c;
        ConfigError e;
        config_defaults(&c);
        char *a = long_assignment("train.min_lr", '0', 5000);
        a[strlen("train.min_lr=") + 1] = '.';
        a[strlen("train.min_lr=") + 2] = '5'; /* 0.5000...0 */
        cr_assert_eq(config_set(&c, a, &e), 0, "%s", e.msg);
        free(a);
        cr_assert_eq(c.min_lr, 0.5);
        cr_assert_eq(config_resolve(&c, &e), -1);
        const char *tail = ": error: train.min_lr: train.min_lr must not exceed train.lr (min_lr 0.5, lr 0.003)";
        cr_assert(strlen(e.msg) > strlen(tail) && strcmp(e.msg + strlen(e.msg) - strlen(tail), tail) == 0, "%s",
                  e.msg);
        cr_assert_eq(strncmp(e.msg, "--set train.min_lr=0.50000000", 29), 0, "%s", e.msg);
        cr_assert(strlen(e.msg) < 200, "%s", e.msg);
    }
}

/* ------------------------------------------------------------------ */
/* where cross-key errors point                                        */
/* ------------------------------------------------------------------ */

Test(config, resolve_errors_name_the_origin) {
    Config c;
    ConfigError e;
    char path[64], want[256];

    /* Set by --set after the file: the --set is blamed. */
    config_defaults(&c);
    cr_assert_eq(load_text(&c, "model:\n  n_kv_head: 2\n", &e, path), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.n_kv_head=3", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "--set model.n_kv_head=3: error: model.n_kv_head: must divide model.n_head "
                            "(n_head 4, n_kv_head 3)");

    /* Set in a file, the other key by --set: the key the rule names first. */
    config_defaults(&c);
    cr_assert_eq(load_text(&c, "train:\n  lr: 0.001\n", &e, path), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "train.min_lr=0.002", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "--set train.min_lr=0.002: error: train.min_lr: train.min_lr must not exceed train.lr "
                            "(min_lr 0.002, lr 0.001)");

    /* Only lr set (in a file): lr is blamed at its file position. */
    config_defaults(&c);
    cr_assert_eq(load_text(&c, "\ntrain:\n    lr: 0.0001\n", &e, path), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), -1);
    snprintf(want, sizeof want,
             "%s:3:5: error: train.lr: train.min_lr must not exceed train.lr (min_lr 0.0003, lr 0.0001)", path);
    cr_assert_str_eq(e.msg, want);

    /* Filled in by code: "config:". */
    config_defaults(&c);
    c.n_kv_head = 3;
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "config: error: model.n_kv_head: must divide model.n_head (n_head 4, n_kv_head 3)");
    config_defaults(&c);
    c.d_model = 0;
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "config: error: model.d_model: expected integer in [4, 8192], got \"0\"");
    config_defaults(&c);
    c.gate.activation = 99;
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "config: error: model.gate.activation: expected one of sigmoid, silu, tanh, none, "
                            "ns_sigmoid, got \"99\"");

    /* config_defaults forgets earlier origins. */
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.n_kv_head=3", &e), 0, "%s", e.msg);
    config_defaults(&c);
    c.n_kv_head = 3;
    cr_assert_eq(config_resolve(&c, &e), -1);
    cr_assert_str_eq(e.msg, "config: error: model.n_kv_head: must divide model.n_head (n_head 4, n_kv_head 3)");
}

/* ------------------------------------------------------------------ */
/* output                                                              */
/* ------------------------------------------------------------------ */

Test(config, print_is_nested_yaml_and_reloads) {
    Config c, back;
    ConfigError e;
    char path[64], a[4096], b[4096];
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.gate.position=sdpa", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.match_params=true", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "train.lr=0.30000000000000004", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "train.seed=9007199254740992", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    config_print(&c, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_not_null(text);
    const char *head = "model:\n  vocab_size: 257\n  d_model: 128\n";
    cr_assert_eq(strncmp(text, head, strlen(head)), 0, "%s", text);
    cr_assert_not_null(strstr(text, "\n  d_ff: 301\n  seq_len: 128\n  rope_base: 10000\n  rope_scaling: none\n  rope_factor: 1\n"
                                     "  rope_train_len: 0\n  yarn_alpha: 1\n  yarn_beta: 32\n  qk_norm: true\n"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "\n  match_params: true\n  gate:\n    position: sdpa\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n    control: none\n    control_scale: 0.5\n    bias: false\n    init_bias: 0\n  attention:\n"
                                     "    normalizer: softmax\n    sink_init: 0\n    kv: heads\n    d_c: 0\n    d_R: -1\n"
                                     "    sparse: none\n    topk: 64\n    indexer_heads: 4\n"
                                     "    indexer_dim: 32\n    indexer_warmup: 0\ntrain:\n  steps: 200\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  lr: 0.30000000000000004\n  min_lr: 0.0003\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  seed: 9007199254740992\n  init_from: \"\"\n  micro_batch: 0\n  eval_every: 50\n  eval_windows: 32\n  checkpoint_every: 0\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\ndata:\n  corpus: brown\n  bos_start: true\n  bb:\n    tokens: 63\n    triggers: 3\n"
                                     "    source: brown\n    alpha: 0.1\n    first: stationary\n    seed: 0\nthreads: 0\n"), "%s", text);
    cr_assert_eq(len, strlen(text));
    cr_assert_eq(text[len - 1], '\n');

    /* Printed YAML loads back to the same values. */
    config_defaults(&back);
    cr_assert_eq(load_text(&back, text, &e, path), 0, "%s", e.msg);
    free(text);
    json_of(&c, a, sizeof a);
    json_of(&back, b, sizeof b);
    cr_assert_str_eq(b, a);
}

Test(config, json_is_canonical) {
    Config c;
    ConfigError e;
    char buf[4096];
    config_defaults(&c);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    int n = config_to_json(&c, buf, sizeof buf);
    cr_assert_eq(n, (int)strlen(buf));
    const char *want =
        "{\"model.vocab_size\":257,\"model.d_model\":128,\"model.n_layer\":4,\"model.n_head\":4,"
        "\"model.n_kv_head\":4,\"model.d_head\":32,\"model.d_ff\":344,\"model.seq_len\":128,"
        "\"model.rope_base\":10000,\"model.qk_norm\":true,\"model.norm_eps\":1e-06,\"model.init_std\":0.02,"
        "\"model.match_params\":false,\"model.gate.position\":\"none\",\"model.gate.granularity\":\"elementwise\","
        "\"model.gate.sharing\":\"head_specific\",\"model.gate.form\":\"multiplicative\","
        "\"model.gate.activation\":\"sigmoid\",\"model.gate.input\":\"hidden\",\"model.gate.control\":\"none\","
        "\"train.steps\":200,\"train.batch\":8,\"train.lr\":0.003,\"train.min_lr\":0.0003,\"train.warmup\":20,"
        "\"train.weight_decay\":0.1,\"train.beta1\":0.9,\"train.beta2\":0.95,\"train.adam_eps\":1e-08,"
        "\"train.grad_clip\":1,\"train.seed\":1234,\"train.eval_every\":50,\"train.eval_windows\":32,\"train.checkpoint_every\":0,\"train.spike_threshold\":0.3,\"train.diverge_loss\":20,\"data.corpus\":\"brown\",\"data.bos_start\":true,\"threads\":0}";
    cr_assert_str_eq(buf, want);

    /* Like snprintf: the full length whatever the capacity, always terminated. */
    char small[10];
    memset(small, 'x', sizeof small);
    cr_assert_eq(config_to_json(&c, small, sizeof small), n);
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert_eq(strncmp(small, want, sizeof small - 1), 0);
    cr_assert_eq(config_to_json(&c, NULL, 0), n);

    /* Values that %g would round are written in full. */
    cr_assert_eq(config_set(&c, "train.lr=0.1234567891", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.gate.position=key", &e), 0, "%s", e.msg);
    config_to_json(&c, buf, sizeof buf);
    cr_assert_not_null(strstr(buf, ",\"train.lr\":0.1234567891,"), "%s", buf);
    cr_assert_not_null(strstr(buf, ",\"model.gate.position\":\"key\","), "%s", buf);
}

/* The stored JSON is resolved: reading it back and resolving again gives the
 * same config (match_params shrank d_ff once, not twice; fuzzing found
 * 344 -> 301 -> 258, so a checkpoint of such a run did not load). */
Test(config, json_round_trip_is_a_fixed_point) {
    static const char *const sets[][3] = {
        {"model.gate.position=sdpa", "model.match_params=true", NULL},
        {"model.gate.position=dense", "model.match_params=true", "model.gate.granularity=elementwise"},
        {"model.gate.position=value", "model.d_ff=0", "model.match_params=false"},
    };
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++) {
        Config a, b;
        ConfigError e;
        config_defaults(&a);
        for (int i = 0; i < 3 && sets[k][i]; i++) cr_assert_eq(config_set(&a, sets[k][i], &e), 0, "%s", e.msg);
        cr_assert_eq(config_resolve(&a, &e), 0, "%s", e.msg);
        char j1[8192], j2[8192];
        config_to_json(&a, j1, sizeof j1);
        config_defaults(&b);
        cr_assert_eq(config_from_json(&b, j1, &e), 0, "%s", e.msg);
        cr_assert_eq(config_resolve(&b, &e), 0, "%s", e.msg);
        config_to_json(&b, j2, sizeof j2);
        cr_assert_str_eq(j2, j1, "case %zu: d_ff %d then %d", k, a.d_ff, b.d_ff);
        cr_assert_eq(b.d_ff, a.d_ff);
    }
}

/* Config strings in JSON are escaped, never cut: two init_from paths that
 * differ after byte 64 give two run ids (they used to give one), and
 * config_from_json reads the whole path back. */
Test(config, json_strings_are_whole_and_read_back) {
    const char *tails[] = {"/run-a.ckpt", "/run-b.ckpt"};
    char json[2][4096], ids[2][17], path[2][300];
    for (int i = 0; i < 2; i++) {
        Config c, d;
        ConfigError e;
        char set[700], again[4096];
        memset(path[i], 'p', 100);
        snprintf(path[i] + 100, sizeof path[i] - 100, "%s", tails[i]);
        snprintf(set, sizeof set, "train.init_from=%s", path[i]);
        config_defaults(&c);
        cr_assert_eq(config_set(&c, set, &e), 0, "%s", e.msg);
        json_of(&c, json[i], sizeof json[i]);
        char want[700];
        snprintf(want, sizeof want, "\"train.init_from\":\"%s\"", path[i]);
        cr_assert_not_null(strstr(json[i], want), "%s", json[i]);
        store_run_id(json[i], ids[i]);
        config_defaults(&d);
        cr_assert_eq(config_from_json(&d, json[i], &e), 0, "%s", e.msg);
        cr_assert_str_eq(d.init_from, path[i]);
        json_of(&d, again, sizeof again);
        cr_assert_str_eq(again, json[i]);
    }
    cr_assert_str_neq(json[0], json[1]);
    cr_assert_str_neq(ids[0], ids[1]);

    /* quotes, backslashes, UTF-8, blanks at the ends; the longest value of
     * only quotes; through JSON and through printed YAML */
    char quotes[256];
    memset(quotes, '"', 255);
    quotes[255] = '\0';
    const char *vals[] = {"dir \"q\"\\sub/\xc3\xa9t\xc3\xa9.ckpt", " lead and trail ", quotes, "a: b # c"};
    const char *wants[] = {"\"train.init_from\":\"dir \\\"q\\\"\\\\sub/\xc3\xa9t\xc3\xa9.ckpt\"", NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        Config c, d, y;
        ConfigError e;
        char a[8192], b[8192], p[64];
        config_defaults(&c);
        snprintf(c.init_from, sizeof c.init_from, "%s", vals[i]);
        json_of(&c, a, sizeof a);
        cr_assert_null(strstr(a, "\\x"), "%s", a);
        if (wants[i]) cr_assert_not_null(strstr(a, wants[i]), "%s", a);
        config_defaults(&d);
        cr_assert_eq(config_from_json(&d, a, &e), 0, "%s: %s", vals[i], e.msg);
        cr_assert_str_eq(d.init_from, vals[i]);
        json_of(&d, b, sizeof b);
        cr_assert_str_eq(b, a);

        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        cr_assert_not_null(f);
        config_print(&c, f);
        cr_assert_eq(fclose(f), 0);
        config_defaults(&y);
        cr_assert_eq(load_text(&y, text, &e, p), 0, "%s\n%s", e.msg, text);
        free(text);
        cr_assert_str_eq(y.init_from, vals[i]);
    }

    /* the old \xNN form and broken strings are errors, not silently misread */
    Config d;
    ConfigError e;
    config_defaults(&d);
    cr_assert_eq(config_from_json(&d, "{\"train.init_from\":\"a\\x41\"}", &e), -1);
    cr_assert_not_null(strstr(e.msg, "train.init_from"), "%s", e.msg);
    cr_assert_eq(config_from_json(&d, "{\"train.init_from\":\"abc}", &e), -1);
    cr_assert_str_eq(d.init_from, "");
}

/* The shared escaper: control bytes as \uXXXX, UTF-8 through, snprintf-like. */
Test(config, json_quote_and_unquote) {
    const char *s = "a\x01\x1f\x7f\n\t\r\"\\\xc3\xa9/";
    const char *want = "\"a\\u0001\\u001f\\u007f\\n\\t\\r\\\"\\\\\xc3\xa9/\"";
    char buf[128], back[128];
    size_t n = json_quote(s, buf, sizeof buf);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(n, strlen(want));
    cr_assert_eq(json_quote(s, NULL, 0), n);
    char small[5];
    cr_assert_eq(json_quote(s, small, sizeof small), n);
    cr_assert_str_eq(small, "\"a\\u");
    const char *end = json_unquote(buf, back, sizeof back);
    cr_assert(end == buf + n);
    cr_assert_str_eq(back, s);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_eq(json_fput(s, f), 0);
    cr_assert_eq(fclose(f), 0);
    cr_assert_str_eq(text, want);
    free(text);

    /* \u escapes, surrogate pairs and \/ decode to UTF-8 */
    cr_assert_not_null(json_unquote("\"\\u00e9\\u20ac\\ud83d\\ude00\\/\\b\\f\"", back, sizeof back));
    cr_assert_str_eq(back, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\b\f");
    /* malformed, or too long for the buffer */
    const char *bad[] = {"\"abc", "abc\"", "\"a\\x41\"", "\"\\ud800\"", "\"\\ude00\"", "\"\\u0000\"",
                         "\"\\u12\"", "\"a\nb\"", "\"a\\", "\"\\q\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_null(json_unquote(bad[i], back, sizeof back), "%zu: %s", i, bad[i]);
    cr_assert_null(json_unquote("\"abcd\"", back, 4));
    cr_assert_not_null(json_unquote("\"abc\"", back, 4));
}

/* ------------------------------------------------------------------ */
/* the CLI's exit status                                               */
/* ------------------------------------------------------------------ */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(config, cli_exits_2_on_config_errors) {
    const char *bin = getenv("GATED_BIN");
    struct stat st;
    if (!bin || !*bin) cr_skip_test("GATED_BIN is not set");
    if (stat(bin, &st) != 0) cr_skip_test("GATED_BIN=%s does not exist", bin);
    cr_assert(strchr(bin, '\'') == NULL, "GATED_BIN contains a quote: %s", bin);

    static const struct {
        const char *yaml, *msg;
    } rows[] = {
        {"model:\n  n_head: 12x\n", ":2:11: error: model.n_head: expected integer in [1, 256], got \"12x\""},
        {"model:\n  n_kv_head: 3\n", ":2:3: error: model.n_kv_head: must divide model.n_head (n_head 4, n_kv_head 3)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char yaml[64], errf[64], cmd[512], want[512];
        write_tmp(rows[i].yaml, yaml);
        write_tmp("", errf);
        snprintf(cmd, sizeof cmd, "'%s' info '%s' >/dev/null 2>'%s'", bin, yaml, errf);
        int status = system(cmd);
        char *err = slurp(errf);
        unlink(yaml);
        unlink(errf);
        cr_assert(status != -1 && WIFEXITED(status), "%s: did not exit normally", cmd);
        cr_assert_eq(WEXITSTATUS(status), 2, "%s: exit %d, stderr: %s", cmd, WEXITSTATUS(status), err);
        snprintf(want, sizeof want, "%s%s", yaml, rows[i].msg);
        cr_assert_not_null(strstr(err, want), "stderr lacks \"%s\": %s", want, err);
    }
}

/* A second config_resolve changes nothing (match_params cuts d_ff once). */
Test(config, resolve_is_idempotent) {
    Config c;
    ConfigError e;
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.gate.position=sdpa", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.match_params=true", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    Config once = c;
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.d_ff, 301);
    cr_assert(memcmp(&once, &c, sizeof c) == 0);
}

/* 100,000 levels of nesting: refused at level 65, in well under the
 * timeout (libyaml alone is quadratic in depth: 50,000 levels 5 s in the measurement), with the place; exit 2 from the CLI. */
Test(config, deep_yaml_is_refused_quickly, .timeout = 20) {
    enum { N = 100000 };
    char *text = malloc(2 * N + 16);
    cr_assert_not_null(text);
    size_t o = (size_t)sprintf(text, "model: ");
    memset(text + o, '[', N);
    memset(text + o + N, ']', N);
    strcpy(text + o + 2 * N, "\n");
    Config c;
    ConfigError e;
    char path[64], want[200];
    config_defaults(&c);
    write_tmp(text, path);
    free(text);
    cr_assert_eq(config_load_file(&c, path, &e), -1);
    snprintf(want, sizeof want, "%s:1:71: error: YAML nesting depth exceeds 64 levels", path);
    cr_assert_str_eq(e.msg, want);

    const char *bin = getenv("GATED_BIN");
    struct stat st;
    if (bin && *bin && stat(bin, &st) == 0 && !strchr(bin, '\'')) {
        char errf[64], cmd[512];
        write_tmp("", errf);
        snprintf(cmd, sizeof cmd, "'%s' info '%s' >/dev/null 2>'%s'", bin, path, errf);
        int status = system(cmd);
        char *err = slurp(errf);
        unlink(errf);
        cr_assert(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s: %d %s", cmd, status, err);
        cr_assert_not_null(strstr(err, want), "%s", err);
    }
    unlink(path);

    /* block style: the line of the 65th level */
    char *deep = malloc(70 * 80);
    cr_assert_not_null(deep);
    o = 0;
    for (int i = 0; i < 70; i++) o += (size_t)sprintf(deep + o, "%*sk%d:\n", i, "", i);
    config_defaults(&c);
    cr_assert_eq(load_text(&c, deep, &e, path), -1);
    free(deep);
    snprintf(want, sizeof want, "%s:65:65: error: YAML nesting depth exceeds 64 levels", path);
    cr_assert_str_eq(e.msg, want);
}

/* A file over the size limit is refused before parsing. */
Test(config, huge_yaml_file_is_refused, .timeout = 20) {
    size_t n = (size_t)2 << 20;
    char *text = malloc(n + 1);
    cr_assert_not_null(text);
    for (size_t i = 0; i < n; i += 16) memcpy(text + i, "# padding line \n", 16);
    text[n] = '\0';
    Config c;
    ConfigError e;
    char path[64], want[200];
    config_defaults(&c);
    cr_assert_eq(load_text(&c, text, &e, path), -1);
    free(text);
    snprintf(want, sizeof want, "%s: error: larger than 1 MiB (too large for a run file)", path);
    cr_assert_str_eq(e.msg, want);
}

/* data.corpus bb: the data.bb.* keys resolve, reach config_bb, and enter
 * the stored JSON only when set away from their defaults (so the run ids of
 * earlier runs, which have none, stay as they were). */
Test(config, bigram_backcopy_keys) {
    Config c;
    ConfigError e;
    char buf[4096];
    config_defaults(&c);
    cr_assert_eq(config_set(&c, "data.corpus=bb", &e), 0, "%s", e.msg);
    cr_assert_eq(config_set(&c, "model.vocab_size=64", &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    config_to_json(&c, buf, sizeof buf);
    cr_assert_not_null(strstr(buf, "\"data.corpus\":\"bb\""), "%s", buf);
    cr_assert_null(strstr(buf, "data.bb."), "defaults are left out: %s", buf);
    BBCfg b = config_bb(&c);
    cr_assert(b.tokens == 63 && b.triggers == 3 && b.source == BB_SOURCE_BROWN && b.seed == 0 &&
              b.first == BB_FIRST_STATIONARY);
    cr_assert_float_eq(b.alpha, 0.1, 1e-15);

    config_defaults(&c);
    static const char *const sets[] = {"data.corpus=bb", "model.vocab_size=33", "data.bb.tokens=32",
                                       "data.bb.triggers=5", "data.bb.source=random", "data.bb.alpha=0.5",
                                       "data.bb.first=non_trigger", "data.bb.seed=7"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        cr_assert_eq(config_set(&c, sets[i], &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    config_to_json(&c, buf, sizeof buf);
    cr_assert_not_null(strstr(buf, "\"data.bb.tokens\":32,\"data.bb.triggers\":5,\"data.bb.source\":\"random\","
                                   "\"data.bb.alpha\":0.5,\"data.bb.first\":\"non_trigger\",\"data.bb.seed\":7"),
                       "%s", buf);
    b = config_bb(&c);
    cr_assert(b.tokens == 32 && b.triggers == 5 && b.source == BB_SOURCE_RANDOM && b.seed == 7 &&
              b.first == BB_FIRST_NON_TRIGGER);
    Config back;
    config_defaults(&back);
    cr_assert_eq(config_from_json(&back, buf, &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&back, &e), 0, "%s", e.msg);
    char buf2[4096];
    config_to_json(&back, buf2, sizeof buf2);
    cr_assert_str_eq(buf2, buf);
}
