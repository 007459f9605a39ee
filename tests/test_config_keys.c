/*
 * test_config_keys.c — the per-key rules of the config schema
 * (ConfigKey.alias, ConfigKey.applies): the paper's names G1..G5 of the
 * gate positions read wherever a position is (--set, a YAML run file,
 * stored JSON), stored as the position's own name (so a run's id does not
 * depend on the spelling), listed beside it in messages; and which keys
 * have an effect in which configs (what `gated export` leaves empty); and
 * the attention normaliser's keys.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/config.h"
#include "nn/variant.h"

static Config with(const char *const *sets) {
    Config c;
    config_defaults(&c);
    ConfigError e;
    for (int i = 0; sets[i]; i++) cr_assert_eq(config_set(&c, sets[i], &e), 0, "%s", e.msg);
    return c;
}

Test(config_keys, paper_names_of_positions_are_read_everywhere) {
    static const char *const g[] = {"G1", "G2", "G3", "g4", "G5"};
    static const int want[] = {GP_SDPA, GP_VALUE, GP_KEY, GP_QUERY, GP_DENSE};
    for (int i = 0; i < 5; i++) {
        char set[64], plain[64];
        snprintf(set, sizeof set, "model.gate.position=%s", g[i]);
        Config c = with((const char *[]){set, NULL});
        cr_assert_eq(c.gate.position, want[i], "%s", set);
        /* stored as the position's name: the same JSON (and run id) as the name gives */
        snprintf(plain, sizeof plain, "model.gate.position=%s", gate_position_names[want[i]]);
        Config d = with((const char *[]){plain, NULL});
        char a[8192], b[8192];
        cr_assert_gt(config_to_json(&c, a, sizeof a), 0);
        cr_assert_gt(config_to_json(&d, b, sizeof b), 0);
        cr_assert_str_eq(a, b);
        char *pos = strstr(a, "\"model.gate.position\":\"");
        cr_assert_not_null(pos);
        cr_assert_eq(strncmp(pos + 23, gate_position_names[want[i]], strlen(gate_position_names[want[i]])), 0);
        /* stored JSON holding the alias reads back too */
        Config j;
        config_defaults(&j);
        ConfigError e;
        char json[96];
        snprintf(json, sizeof json, "{\"model.gate.position\":\"%s\"}", g[i]);
        cr_assert_eq(config_from_json(&j, json, &e), 0, "%s", e.msg);
        cr_assert_eq(j.gate.position, want[i]);
    }
    /* a YAML run file */
    char path[] = "/tmp/test_config_keys_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    static const char yaml[] = "model:\n  gate:\n    position: G2\n    granularity: headwise\n";
    cr_assert_eq(write(fd, yaml, sizeof yaml - 1), (ssize_t)(sizeof yaml - 1));
    cr_assert_eq(close(fd), 0);
    Config y;
    config_defaults(&y);
    ConfigError e;
    int rc = config_load_file(&y, path, &e);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", e.msg);
    cr_assert_eq(y.gate.position, GP_VALUE);
    cr_assert_eq(y.gate.granularity, GG_HEADWISE);
    /* an unknown value: both spellings listed; the aliases are the position key's alone */
    Config c;
    config_defaults(&c);
    cr_assert_neq(config_set(&c, "model.gate.position=G6", &e), 0);
    cr_assert_not_null(strstr(e.msg, "model.gate.position: expected one of none, sdpa (G1), value (G2), key (G3), "
                                     "query (G4), dense (G5), got \"G6\""),
                       "%s", e.msg);
    cr_assert_neq(config_set(&c, "model.gate.activation=G1", &e), 0);
    cr_assert_not_null(strstr(e.msg, "expected one of sigmoid, silu,"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "(G"), "%s", e.msg);
}

/* The keys without effect in c, as one line "key key ...". */
static void idle_keys(const Config *c, char *out, size_t cap) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < config_schema_len; i++)
        if (!config_key_applies(c, &config_schema[i]))
            o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? " " : "", config_schema[i].key);
}

Test(config_keys, which_keys_have_an_effect) {
    char idle[2048];
    Config c = with((const char *[]){NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle,
                     "model.rope_factor model.rope_train_len model.yarn_alpha model.yarn_beta model.match_params "
                     "model.gate.granularity model.gate.sharing model.gate.form model.gate.activation "
                     "model.gate.input model.gate.control_scale model.gate.bias model.gate.init_bias "
                     "model.attention.sink_init model.attention.d_c model.attention.d_R model.attention.topk "
                     "model.attention.indexer_heads model.attention.indexer_dim model.attention.indexer_warmup "
                     "data.bb.tokens data.bb.triggers data.bb.source data.bb.alpha data.bb.first data.bb.seed");
    /* a hidden-input G1 gate: every gate key but the bias's start (no bias) and control_scale */
    c = with((const char *[]){"model.gate.position=sdpa", "model.rope_scaling=linear", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "model.rope_train_len model.yarn_alpha model.yarn_beta model.gate.control_scale "
                           "model.gate.init_bias model.attention.sink_init model.attention.d_c model.attention.d_R "
                           "model.attention.topk model.attention.indexer_heads model.attention.indexer_dim "
                           "model.attention.indexer_warmup data.bb.tokens data.bb.triggers data.bb.source data.bb.alpha data.bb.first data.bb.seed");
    c = with((const char *[]){"model.gate.position=G1", "model.gate.bias=true", "model.gate.control=scale",
                              "model.rope_scaling=yarn", "data.corpus=bb", "model.attention.normalizer=sink_logit",
                              "model.attention.kv=latent", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "model.attention.topk model.attention.indexer_heads model.attention.indexer_dim "
                           "model.attention.indexer_warmup data.bb.alpha");
    /* a static gate has no bias; its logits start at init_bias */
    c = with((const char *[]){"model.gate.position=value", "model.gate.input=static", "data.corpus=bb",
                              "data.bb.source=random", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "model.rope_factor model.rope_train_len model.yarn_alpha model.yarn_beta "
                           "model.gate.control_scale model.gate.bias model.attention.sink_init model.attention.d_c "
                           "model.attention.d_R model.attention.topk model.attention.indexer_heads "
                           "model.attention.indexer_dim model.attention.indexer_warmup");
    /* a sparse row: topk applies; the indexer's keys only with the indexer */
    c = with((const char *[]){"model.attention.sparse=window", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_not_null(strstr(idle, "model.attention.sink_init model.attention.d_c model.attention.d_R "
                                    "model.attention.indexer_heads model.attention.indexer_dim "
                                    "model.attention.indexer_warmup data.bb"),
                       "%s", idle);
    c = with((const char *[]){"model.attention.sparse=indexer", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_not_null(strstr(idle, "model.attention.sink_init model.attention.d_c model.attention.d_R data.bb"), "%s",
                       idle);
}

/* model.attention.*: at their defaults they stay out of the stored JSON (so
 * every earlier run keeps its id); set, they enter it and read back; an
 * unknown normaliser is refused at FILE:LINE:COL, and sink_init without
 * sink_logit with the reason. */
Test(config, attention_normalizer_keys) {
    Config c;
    ConfigError e;
    char buf[4096], path[64], want[256];
    config_defaults(&c);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    cr_assert_null(strstr(buf, "model.attention."), "defaults are left out: %s", buf);
    cr_assert_eq(config_model(&c).attn.normalizer, AN_SOFTMAX);

    for (int a = 0; a < AN__COUNT; a++) {
        char set[96];
        config_defaults(&c);
        snprintf(set, sizeof set, "model.attention.normalizer=%s", attn_norm_names[a]);
        cr_assert_eq(config_set(&c, set, &e), 0, "%s", e.msg);
        if (a == AN_SINK_LOGIT) cr_assert_eq(config_set(&c, "model.attention.sink_init=-2", &e), 0, "%s", e.msg);
        cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
        cr_assert_eq(config_model(&c).attn.normalizer, a);
        cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
        snprintf(want, sizeof want, "\"model.attention.normalizer\":\"%s\"", attn_norm_names[a]);
        cr_assert((a == AN_SOFTMAX) == !strstr(buf, want), "%s: %s", attn_norm_names[a], buf);
        Config back;
        config_defaults(&back);
        cr_assert_eq(config_from_json(&back, buf, &e), 0, "%s", e.msg);
        cr_assert_eq(config_resolve(&back, &e), 0, "%s", e.msg);
        char buf2[4096];
        cr_assert_gt(config_to_json(&back, buf2, sizeof buf2), 0);
        cr_assert_str_eq(buf2, buf);
        cr_assert_eq(back.attn.sink_init, a == AN_SINK_LOGIT ? -2.0 : 0.0);
    }

    config_defaults(&c);
    strcpy(path, "/tmp/test_config_keys_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *text = "model:\n  attention:\n    normalizer: softmax2\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    cr_assert_eq(close(fd), 0);
    int rc = config_load_file(&c, path, &e);
    unlink(path);
    cr_assert_neq(rc, 0);
    snprintf(want, sizeof want,
             "%s:3:17: error: model.attention.normalizer: expected one of softmax, softmax1, sink_logit, kv_bias, "
             "sigmoid, softpick, got \"softmax2\"",
             path);
    cr_assert_str_eq(e.msg, want);

    config_defaults(&c);
    cr_assert_eq(config_set(&c, "model.attention.sink_init=1", &e), 0, "%s", e.msg);
    cr_assert_neq(config_resolve(&c, &e), 0);
    cr_assert_not_null(strstr(e.msg, "model.attention.sink_init: has no effect unless model.attention.normalizer is "
                                     "sink_logit"),
                       "%s", e.msg);
}

/* Load YAML text from a temporary file; the loader's and resolver's rc and
 * message in *e. */
static int load_text(Config *c, const char *text, char *path, size_t cap, ConfigError *e) {
    snprintf(path, cap, "/tmp/test_config_kv_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    cr_assert_eq(close(fd), 0);
    config_defaults(c);
    int rc = config_load_file(c, path, e);
    if (!rc) rc = config_resolve(c, e);
    unlink(path);
    return rc;
}

/* model.attention.kv / d_c / d_R: left out of the stored JSON at their
 * defaults (every earlier run keeps its id); latent resolves d_c and d_R
 * (4 d_head, d_head / 2), stores them and reads back; what does not fit
 * the head layout or is not defined with latent KV is refused at
 * FILE:LINE:COL of the key at fault, with the reason. */
Test(config, attention_kv_keys) {
    Config c;
    ConfigError e;
    char buf[4096], path[64], want[512];
    config_defaults(&c);
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    cr_assert_null(strstr(buf, "model.attention."), "defaults are left out: %s", buf);
    cr_assert_eq(config_model(&c).attn.kv, KV_HEADS);

    cr_assert_eq(load_text(&c, "model:\n  qk_norm: false\n  attention:\n    kv: latent\n", path, sizeof path, &e), 0,
                 "%s", e.msg);
    cr_assert_eq(c.attn.kv, KV_LATENT);
    cr_assert_eq(c.attn.d_c, 4 * c.d_head);
    cr_assert_eq(c.attn.d_R, c.d_head / 2);
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    snprintf(want, sizeof want, "\"model.attention.kv\":\"latent\",\"model.attention.d_c\":%d,\"model.attention.d_R\":%d",
             4 * c.d_head, c.d_head / 2);
    cr_assert_not_null(strstr(buf, want), "%s", buf);
    Config back;
    config_defaults(&back);
    cr_assert_eq(config_from_json(&back, buf, &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&back, &e), 0, "%s", e.msg);
    char buf2[4096];
    cr_assert_gt(config_to_json(&back, buf2, sizeof buf2), 0);
    cr_assert_str_eq(buf2, buf);
    /* d_R 0: MLA without the RoPE key */
    cr_assert_eq(load_text(&c, "model:\n  qk_norm: false\n  attention:\n    kv: latent\n    d_R: 0\n", path,
                           sizeof path, &e),
                 0, "%s", e.msg);
    cr_assert_eq(c.attn.d_R, 0);
    cr_assert_eq(attn_kv_cache(&c.attn, c.n_kv_head, c.d_head), 4 * c.d_head);

    const struct {
        const char *text, *at, *msg;
    } bad[] = {
        {"model:\n  attention:\n    kv: latnt\n", ":3:9: error: model.attention.kv: expected one of heads, latent",
         NULL},
        {"model:\n  qk_norm: false\n  attention:\n    kv: latent\n    d_R: 3\n", ":5:5: error: model.attention.d_R: ",
         "must be even"},
        {"model:\n  qk_norm: false\n  attention:\n    kv: latent\n    d_R: 34\n",
         ":5:5: error: model.attention.d_R: ", "to model.d_head (32)"},
        {"model:\n  qk_norm: false\n  attention:\n    kv: latent\n    d_c: 256\n",
         ":5:5: error: model.attention.d_c: ", "must be below 2 x model.n_head x model.d_head = 256"},
        {"model:\n  attention:\n    d_c: 64\n", ":3:5: error: model.attention.d_c: ",
         "has no effect unless model.attention.kv is latent"},
        {"model:\n  attention:\n    kv: latent\n", ":3:5: error: model.attention.kv: latent KV needs model.qk_norm: false", "could not be absorbed"},
        {"model:\n  qk_norm: true\n  attention:\n    kv: latent\n", ":2:3: error: model.qk_norm: latent KV needs", NULL},
        {"model:\n  qk_norm: false\n  n_kv_head: 2\n  attention:\n    kv: latent\n", ":3:3: error: model.n_kv_head: ",
         "must equal model.n_head"},
        {"model:\n  qk_norm: false\n  gate:\n    position: G2\n  attention:\n    kv: latent\n",
         ":4:5: error: model.gate.position: ", "value (G2) and key (G3) are not defined"},
        {"model:\n  qk_norm: false\n  gate:\n    position: key\n  attention:\n    kv: latent\n",
         ":4:5: error: model.gate.position: ", "value (G2) and key (G3) are not defined"},
        {"model:\n  qk_norm: false\n  gate:\n    position: G4\n  attention:\n    kv: latent\n",
         ":4:5: error: model.gate.position: ", "query (G4) is not defined"},
        {"model:\n  qk_norm: false\n  attention:\n    normalizer: kv_bias\n    kv: latent\n",
         ":4:5: error: model.attention.normalizer: ", "kv_bias is not defined"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_neq(load_text(&c, bad[i].text, path, sizeof path, &e), 0, "%s", bad[i].text);
        cr_assert_not_null(strstr(e.msg, bad[i].at), "%zu: %s", i, e.msg);
        cr_assert_eq(strncmp(e.msg, path, strlen(path)), 0, "%zu: names the file: %s", i, e.msg);
        if (bad[i].msg) cr_assert_not_null(strstr(e.msg, bad[i].msg), "%zu: %s", i, e.msg);
    }
    /* G1 and G5 are defined with latent KV */
    cr_assert_eq(load_text(&c,
                           "model:\n  qk_norm: false\n  gate:\n    position: G1\n    granularity: headwise\n"
                           "  attention:\n    kv: latent\n",
                           path, sizeof path, &e),
                 0, "%s", e.msg);
    cr_assert_eq(load_text(&c, "model:\n  qk_norm: false\n  gate:\n    position: G5\n  attention:\n    kv: latent\n",
                           path, sizeof path, &e),
                 0, "%s", e.msg);
}

/* Refused at FILE:LINE:COL with the key and the reason (config_load_file +
 * config_resolve, as gated reads a file). */
static void refused(const char *text, const char *want) {
    char path[64];
    Config c;
    ConfigError e;
    config_defaults(&c);
    strcpy(path, "/tmp/test_config_sparse_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    cr_assert_eq(close(fd), 0);
    int rc = config_load_file(&c, path, &e);
    if (rc == 0) rc = config_resolve(&c, &e);
    unlink(path);
    cr_assert_neq(rc, 0, "accepted: %s", text);
    cr_assert_eq(strncmp(e.msg, path, strlen(path)), 0, "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, want), "%s (wanted %s)", e.msg, want);
}

/* model.attention.sparse and its keys (issue 37): each row reads back and
 * enters the run id's JSON only when set; k <= 0, a normaliser other than
 * softmax, an odd d_I, the indexer's keys without the indexer, topk without
 * a sparse row and a negative warm-up are refused with FILE:LINE:COL. */
Test(config_keys, attention_sparse_keys) {
    ConfigError e;
    char buf[4096];
    for (int s = 0; s < AS__COUNT; s++) {
        char set[96];
        snprintf(set, sizeof set, "model.attention.sparse=%s", attn_sparse_names[s]);
        Config c = with((const char *[]){set, NULL});
        cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
        cr_assert_eq(config_model(&c).attn.sparse, s);
        cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
        cr_assert((s == AS_NONE) == !strstr(buf, "model.attention.sparse"), "%s", buf);
        cr_assert_null(strstr(buf, "model.attention.topk"), "k at its default is left out: %s", buf);
    }
    Config c = with((const char *[]){"model.attention.sparse=indexer", "model.attention.topk=16",
                                     "model.attention.indexer_heads=2", "model.attention.indexer_dim=8", NULL});
    cr_assert_eq(config_resolve(&c, &e), 0, "%s", e.msg);
    cr_assert_gt(config_to_json(&c, buf, sizeof buf), 0);
    Config back;
    config_defaults(&back);
    cr_assert_eq(config_from_json(&back, buf, &e), 0, "%s", e.msg);
    cr_assert_eq(config_resolve(&back, &e), 0, "%s", e.msg);
    AttnCfg a = config_model(&back).attn;
    cr_assert(a.sparse == AS_INDEXER && a.topk == 16 && a.idx_heads == 2 && a.idx_dim == 8, "%s", buf);

    refused("model:\n  attention:\n    sparse: indexer\n    topk: 0\n", ":4:11: error: model.attention.topk: expected integer");
    refused("model:\n  attention:\n    sparse: window\n    topk: -3\n", "model.attention.topk");
    refused("model:\n  attention:\n    sparse: topk\n", ":3:13: error: model.attention.sparse: expected one of none, indexer");
    refused("model:\n  attention:\n    sparse: oracle\n    normalizer: softpick\n",
            "model.attention.sparse: is defined only with model.attention.normalizer softmax");
    refused("model:\n  attention:\n    topk: 8\n", "model.attention.topk: has no effect unless model.attention.sparse");
    refused("model:\n  attention:\n    sparse: random\n    indexer_heads: 2\n",
            "model.attention.indexer_heads: has no effect unless model.attention.sparse is indexer");
    refused("model:\n  attention:\n    sparse: indexer\n    indexer_dim: 7\n",
            "model.attention.indexer_dim: must be a positive even number");
    refused("model:\n  attention:\n    sparse: indexer\n    indexer_warmup: -1\n",
            "model.attention.indexer_warmup: expected integer");
    refused("model:\n  qk_norm: false\n  attention:\n    kv: latent\n    sparse: window\n",
            ":5:5: error: model.attention.sparse: is not defined with model.attention.kv latent");
}
