/*
 * test_config_keys.c — the per-key rules of the config schema
 * (ConfigKey.alias, ConfigKey.applies): the paper's names G1..G5 of the
 * gate positions read wherever a position is (--set, a YAML run file,
 * stored JSON), stored as the position's own name (so a run's id does not
 * depend on the spelling), listed beside it in messages; and which keys
 * have an effect in which configs (what `gated export` leaves empty).
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
                     "model.gate.input model.gate.control_scale model.gate.bias model.gate.init_bias data.bb.tokens "
                     "data.bb.triggers data.bb.source data.bb.alpha data.bb.first data.bb.seed");
    /* a hidden-input G1 gate: every gate key but the bias's start (no bias) and control_scale */
    c = with((const char *[]){"model.gate.position=sdpa", "model.rope_scaling=linear", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "model.rope_train_len model.yarn_alpha model.yarn_beta model.gate.control_scale "
                           "model.gate.init_bias data.bb.tokens data.bb.triggers data.bb.source data.bb.alpha "
                           "data.bb.first data.bb.seed");
    c = with((const char *[]){"model.gate.position=G1", "model.gate.bias=true", "model.gate.control=scale",
                              "model.rope_scaling=yarn", "data.corpus=bb", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "data.bb.alpha");
    /* a static gate has no bias; its logits start at init_bias */
    c = with((const char *[]){"model.gate.position=value", "model.gate.input=static", "data.corpus=bb",
                              "data.bb.source=random", NULL});
    idle_keys(&c, idle, sizeof idle);
    cr_assert_str_eq(idle, "model.rope_factor model.rope_train_len model.yarn_alpha model.yarn_beta "
                           "model.gate.control_scale model.gate.bias");
}
