/*
 * test_sweep_file.c — sweep files: expansion of variants, grids, zips and
 * seeds (order, labels, overrides, names, baseline), the util helpers they
 * use, and the exact message of every kind of bad sweep file (in process
 * and through `gated sweep --dry-run`, exit 2).  Helpers: sweep_fx.c.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/codever.h"
#include "run/config.h"
#include "run/store.h"
#include "lab/merge/merge.h"
#include "testutil.h"
#include "lab/sweep/sweep.h"
#include "util/util.h"
#include "nn/variant.h"
#include "sweep_fx.h"

/* ------------------------------------------------------------------ */
/* expansion                                                           */
/* ------------------------------------------------------------------ */

Test(sweep, variants_seeds_order_overrides_and_baseline) {
    Tmp t;
    tmp_dir(&t);
    Sweep s = load_ok(&t, "name: abl\n"
                          "base: base.yaml\n"
                          "set:\n"
                          "  train.steps: 3\n"
                          "  model: {gate: {activation: sigmoid}}\n"
                          "variants:\n"
                          "  - label: base\n"
                          "  - label: g1\n"
                          "    set: {model.gate.position: sdpa, train.steps: 5}\n"
                          "  - label: g2\n"
                          "    set:\n"
                          "      model:\n"
                          "        gate: {position: value, granularity: headwise}\n"
                          "seeds: [3, 1]\n"
                          "baseline: g1\n");
    cr_assert_str_eq(s.name, "abl");
    cr_assert_eq(s.method, SWEEP_VARIANTS);
    cr_assert_eq(s.nrows, 3);
    cr_assert_eq(s.nseeds, 2);
    cr_assert_str_eq(s.baseline, "g1");
    char want_base[160];
    snprintf(want_base, sizeof want_base, "%s/base.yaml", t.dir);
    cr_assert_str_eq(s.base, want_base);
    cr_assert_eq(s.nruns, 6);

    static const struct {
        const char *label, *name, *ov;
        long long seed;
        int baseline, steps, pos;
    } want[] = {
        {"base", "abl-base-s3", "train.steps=3 model.gate.activation=sigmoid train.seed=3", 3, 0, 3, GP_NONE},
        {"base", "abl-base-s1", "train.steps=3 model.gate.activation=sigmoid train.seed=1", 1, 0, 3, GP_NONE},
        {"g1", "abl-g1-s3",
         "train.steps=3 model.gate.activation=sigmoid model.gate.position=sdpa train.steps=5 train.seed=3", 3, 1, 5,
         GP_SDPA},
        {"g1", "abl-g1-s1",
         "train.steps=3 model.gate.activation=sigmoid model.gate.position=sdpa train.steps=5 train.seed=1", 1, 1, 5,
         GP_SDPA},
        {"g2", "abl-g2-s3",
         "train.steps=3 model.gate.activation=sigmoid model.gate.position=value model.gate.granularity=headwise "
         "train.seed=3",
         3, 0, 3, GP_VALUE},
        {"g2", "abl-g2-s1",
         "train.steps=3 model.gate.activation=sigmoid model.gate.position=value model.gate.granularity=headwise "
         "train.seed=1",
         1, 0, 3, GP_VALUE},
    };
    for (int i = 0; i < 6; i++) {
        const SweepRun *r = &s.runs[i];
        char ov[1024];
        joined(r, ov, sizeof ov);
        cr_assert_eq(r->index, i);
        cr_assert_eq(r->row, i / 2);
        cr_assert_str_eq(r->label, want[i].label);
        cr_assert_str_eq(r->name, want[i].name);
        cr_assert_str_eq(ov, want[i].ov, "run %d", i);
        cr_assert_eq(r->seed, want[i].seed);
        cr_assert_eq(r->is_baseline, want[i].baseline, "run %d", i);
        /* the resolved config: base file, then the overrides in order */
        cr_assert(r->config.resolved);
        cr_assert_eq(r->config.steps, want[i].steps, "run %d", i);
        cr_assert_eq(r->config.gate.position, want[i].pos);
        cr_assert_eq(r->config.seed, want[i].seed);
        cr_assert_eq(r->config.d_model, 32);
        cr_assert_eq(r->config.n_kv_head, 4); /* resolved from 0 */
        /* run id as `gated train` computes it */
        char json[8192], id[17];
        config_to_json(&r->config, json, sizeof json);
        store_run_id(json, id);
        cr_assert_str_eq(r->run_id, id);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(s.runs[j].run_id, r->run_id);
    }
    /* the same config through the config API gives the same id */
    Config c;
    ConfigError e;
    config_defaults(&c);
    cr_assert_eq(config_load_file(&c, s.base, &e), 0, "%s", e.msg);
    for (int k = 0; k < s.runs[2].noverrides; k++)
        cr_assert_eq(config_set(&c, s.runs[2].overrides[k], &e), 0);
    cr_assert_eq(config_resolve(&c, &e), 0);
    char j1[8192], j2[8192];
    config_to_json(&c, j1, sizeof j1);
    config_to_json(&s.runs[2].config, j2, sizeof j2);
    cr_assert_str_eq(j1, j2);
    sweep_free(&s);
    sweep_free(&s); /* twice is fine */
    tmp_rm(&t);
}

Test(sweep, grid_is_a_product_in_key_order_last_key_fastest) {
    Tmp t;
    tmp_dir(&t);
    Sweep s = load_ok(&t, "name: g\n"
                          "base: base.yaml\n"
                          "method: grid\n"
                          "parameters:\n"
                          "  model.gate.position: {values: [sdpa, value]}\n"
                          "  train.lr: {value: 0.002}\n"
                          "  model.gate.granularity: {values: [elementwise, headwise]}\n"
                          "seeds: [5]\n"
                          "baseline: position=value,granularity=elementwise\n");
    cr_assert_eq(s.method, SWEEP_GRID);
    cr_assert_eq(s.nrows, 4);
    cr_assert_eq(s.nruns, 4);
    static const char *const labels[] = {
        "position=sdpa,granularity=elementwise", "position=sdpa,granularity=headwise",
        "position=value,granularity=elementwise", "position=value,granularity=headwise"};
    static const char *const ovs[] = {
        "model.gate.position=sdpa train.lr=0.002 model.gate.granularity=elementwise train.seed=5",
        "model.gate.position=sdpa train.lr=0.002 model.gate.granularity=headwise train.seed=5",
        "model.gate.position=value train.lr=0.002 model.gate.granularity=elementwise train.seed=5",
        "model.gate.position=value train.lr=0.002 model.gate.granularity=headwise train.seed=5"};
    for (int i = 0; i < 4; i++) {
        char ov[1024], name[256];
        joined(&s.runs[i], ov, sizeof ov);
        cr_assert_str_eq(s.runs[i].label, labels[i]);
        cr_assert_str_eq(ov, ovs[i]);
        snprintf(name, sizeof name, "g-%s-s5", labels[i]);
        cr_assert_str_eq(s.runs[i].name, name);
        cr_assert_eq(s.runs[i].is_baseline, i == 2);
        cr_assert_float_eq(s.runs[i].config.lr, 0.002, 1e-15);
    }
    sweep_free(&s);

    /* only constants: one row, labelled base; no seeds: the base seed, no train.seed override */
    s = load_ok(&t, "name: c\nbase: base.yaml\nmethod: grid\nparameters: {model.n_head: {value: 2}}\n");
    cr_assert_eq(s.nruns, 1);
    cr_assert_str_eq(s.runs[0].label, "base");
    cr_assert_str_eq(s.runs[0].name, "c-base-s7");
    cr_assert_eq(s.runs[0].noverrides, 1);
    cr_assert_str_eq(s.runs[0].overrides[0], "model.n_head=2");
    cr_assert_eq(s.runs[0].seed, 7);
    cr_assert_null(s.baseline);
    cr_assert_eq(s.runs[0].is_baseline, 0);
    sweep_free(&s);
    tmp_rm(&t);
}

Test(sweep, zip_takes_lists_side_by_side) {
    Tmp t;
    tmp_dir(&t);
    Sweep s = load_ok(&t, "name: z\n"
                          "base: base.yaml\n"
                          "method: zip\n"
                          "parameters:\n"
                          "  model.n_head: {values: [2, 4, 8]}\n"
                          "  model.d_model: {values: [16, 32, 64]}\n"
                          "  model.qk_norm: {value: false}\n"
                          "seeds: [1, 2]\n");
    cr_assert_eq(s.method, SWEEP_ZIP);
    cr_assert_eq(s.nrows, 3);
    cr_assert_eq(s.nruns, 6);
    static const int heads[] = {2, 4, 8}, dm[] = {16, 32, 64};
    for (int i = 0; i < 6; i++) {
        const SweepRun *r = &s.runs[i];
        char label[64], ov[512], want[512];
        snprintf(label, sizeof label, "n_head=%d,d_model=%d", heads[i / 2], dm[i / 2]);
        snprintf(want, sizeof want, "model.n_head=%d model.d_model=%d model.qk_norm=false train.seed=%d",
                 heads[i / 2], dm[i / 2], 1 + i % 2);
        joined(r, ov, sizeof ov);
        cr_assert_str_eq(r->label, label);
        cr_assert_str_eq(ov, want);
        cr_assert_eq(r->config.n_head, heads[i / 2]);
        cr_assert_eq(r->config.d_head, dm[i / 2] / heads[i / 2]);
        cr_assert_eq(r->config.qk_norm, 0);
        cr_assert_eq(r->seed, 1 + i % 2);
    }
    sweep_free(&s);
    tmp_rm(&t);
}

/* The paper's names of the gate positions (G1..G5) in a sweep file read as
 * the positions: the same runs (ids) as the names give. */
Test(sweep, paper_position_names) {
    Tmp t;
    tmp_dir(&t);
    Sweep g = load_ok(&t, "name: g\nbase: base.yaml\nvariants:\n  - label: a\n    set: {model.gate.position: G1}\n"
                          "  - label: b\n    set: {model.gate.position: g5}\n");
    Sweep n = load_ok(&t, "name: g\nbase: base.yaml\nvariants:\n  - label: a\n    set: {model.gate.position: sdpa}\n"
                          "  - label: b\n    set: {model.gate.position: dense}\n");
    cr_assert_eq(g.nruns, 2);
    cr_assert_eq(g.runs[0].config.gate.position, GP_SDPA);
    cr_assert_eq(g.runs[1].config.gate.position, GP_DENSE);
    for (int i = 0; i < 2; i++) cr_assert_str_eq(g.runs[i].run_id, n.runs[i].run_id);
    sweep_free(&g);
    sweep_free(&n);
    tmp_rm(&t);
}

Test(sweep, run_name_templates) {
    Tmp t;
    tmp_dir(&t);
    Sweep s =
        load_ok(&t, "name: n\n"
                    "base: base.yaml\n"
                    "variants:\n"
                    "  - {label: a}\n"
                    "  - {label: b, set: {model.gate.position: sdpa, train.lr: 1e-3}}\n"
                    "seeds: [11, 12]\n"
                    "run_name: \"{sweep}/{index}/{label}/{seed}/{model.gate.position}/{train.lr}/{model.d_head}\"\n");
    static const char *const names[] = {"n/0/a/11/none/0.003/8", "n/1/a/12/none/0.003/8", "n/2/b/11/sdpa/0.001/8",
                                        "n/3/b/12/sdpa/0.001/8"};
    cr_assert_eq(s.nruns, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(s.runs[i].name, names[i]);
    sweep_free(&s);

    /* without {seed} and one seed, names are still unique; a literal '}' is kept */
    s = load_ok(&t, "name: n\nbase: base.yaml\nvariants: [{label: a}, {label: b, set: {train.lr: 0.001}}]\n"
                    "run_name: \"x}{label}\"\n");
    cr_assert_str_eq(s.runs[0].name, "x}a");
    cr_assert_str_eq(s.runs[1].name, "x}b");
    sweep_free(&s);

    /* a text key (train.init_from) names another sweep's run: {sweep}, {label}, {seed} expand */
    s = load_ok(&t, "name: cont\nbase: base.yaml\nset: {train.init_from: \"long-{label}-s{seed}-{sweep}\"}\n"
                    "variants: [{label: a}, {label: b, set: {train.lr: 0.001}}]\nseeds: [3]\n");
    cr_assert_str_eq(s.runs[1].config.init_from, "long-b-s3-cont");
    cr_assert_str_eq(s.runs[1].overrides[0], "train.init_from=long-b-s3-cont");
    sweep_free(&s);

    /* {KEY} is the value as stored, whole: a text with a comma and a quote,
     * and keys the stored JSON leaves out at their default */
    s = load_ok(&t, "name: n\nbase: base.yaml\nset: {train.init_from: 'x,y\"z'}\nvariants: [{label: a}]\n"
                    "run_name: \"{label}/{train.init_from}/{model.rope_scaling}/{train.micro_batch}/"
                    "{model.rope_factor}\"\n");
    cr_assert_str_eq(s.runs[0].name, "a/x,y\"z/none/0/1");
    sweep_free(&s);
    tmp_rm(&t);
}

/* The shared helpers the sweep command uses (core/util/util.h). */
Test(sweep, util_helpers) {
    long v = 7;
    cr_assert_eq(util_parse_long("42", 0, 100, &v), 0);
    cr_assert_eq(v, 42);
    static const char *const bad_longs[] = {"", "4x", "101", "-1", "99999999999999999999999", "1 ", "x"};
    for (size_t i = 0; i < sizeof bad_longs / sizeof bad_longs[0]; i++) {
        v = 7;
        cr_assert_eq(util_parse_long(bad_longs[i], 0, 100, &v), -1, "\"%s\" was accepted", bad_longs[i]);
        cr_assert_eq(v, 7);
    }
    double t0 = util_now(), t1 = util_now();
    cr_assert(t0 > 0 && t1 >= t0);

    Tmp t;
    tmp_dir(&t);
    char p[300], f[128];
    snprintf(p, sizeof p, "%s/a/b//c/", t.dir);
    cr_assert_eq(util_mkdir_p(p), 0, "%s: %s", p, strerror(errno));
    cr_assert_eq(util_mkdir_p(p), 0, "an existing directory is fine");
    struct stat sb;
    snprintf(p, sizeof p, "%s/a/b/c", t.dir);
    cr_assert(stat(p, &sb) == 0 && S_ISDIR(sb.st_mode));
    /* a file in the way: the error is reported, with errno */
    write_file(&t, "file", "x", f);
    snprintf(p, sizeof p, "%s/sub/dir", f);
    errno = 0;
    cr_assert_eq(util_mkdir_p(p), -1);
    cr_assert_eq(errno, ENOTDIR, "errno %d", errno);
    cr_assert_eq(util_mkdir_p(""), -1);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* bad sweep files                                                     */
/* ------------------------------------------------------------------ */

/* Each file (written as DIR/s.yaml, base.yaml beside it) and the exact
 * message after "DIR/s.yaml"; '@' in a message stands for DIR, '$' for
 * any run id (16 hex digits: it changes with the schema). */
static const struct {
    const char *yaml, *msg;
} bad[] = {
    {"nmae: x\n", ":1:1: error: nmae: unknown key (did you mean name?)"},
    {"base: base.yaml\nvariants: [{label: a}]\n",
     ":1:1: error: name: required (names the sweep in the results store)"},
    {"name: x\nvariants: [{label: a}]\n", ":1:1: error: base: required (a run config, relative to the sweep file)"},
    {"name: x\nbase: nothere.yaml\nvariants: [{label: a}]\n",
     ":2:7: error: base: cannot open @/nothere.yaml: No such file or directory"},
    {"name: x\nbase: .\nvariants: [{label: a}]\n", ":2:7: error: base: cannot open @/.: Is a directory"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nmethod: grid\nparameters: {model.n_head: {values: [2]}}\n",
     ":4:1: error: method: a sweep has either variants or method with parameters, not both"},
    {"name: x\nbase: base.yaml\n",
     ":1:1: error: expected variants (a list of {label, set}), or method (grid or zip) with parameters"},
    {"name: x\nbase: base.yaml\nmethod: grid\n",
     ":3:1: error: parameters: required with method (config keys with {values: [...]})"},
    {"name: x\nbase: base.yaml\nmethod: random\nparameters: {model.n_head: {value: 2}}\n",
     ":3:9: error: method: expected grid or zip, got \"random\""},
    {"name: x\nname: y\n", ":2:1: error: name: duplicate key (first set at line 1)"},
    {"name:\nbase: base.yaml\nvariants: [{label: a}]\n", ":1:6: error: name: must not be empty"},
    {"name: [a]\n", ":1:7: error: name: expected a value, got a list"},
    {"name: x\nbase: base.yaml\nmodel.n_head: 4\nvariants: [{label: a}]\n",
     ":3:1: error: model.n_head: unknown key (config keys go under set:, or in the base file)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, set: {model.n_heads: 4}}]\n",
     ":3:29: error: model.n_heads: unknown key (did you mean model.n_head?)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, set: {modle: {n_head: 4}}}]\n",
     ":3:37: error: modle.n_head: unknown key (did you mean model.n_head?)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, set: {model: {n_head: 12x}}}]\n",
     ":3:45: error: model.n_head: expected integer in [1, 256], got \"12x\""},
    {"name: x\nbase: base.yaml\nset: {model.gate.position: G6}\nvariants: [{label: a}]\n",
     ":3:28: error: model.gate.position: expected one of none, sdpa (G1), value (G2), key (G3), query (G4), dense "
     "(G5), got \"G6\""},
    {"name: x\nbase: base.yaml\nset: {model: 3}\nvariants: [{label: a}]\n",
     ":3:7: error: model: is a section, not a key (set one of its keys, e.g. model.vocab_size)"},
    {"name: x\nbase: base.yaml\nset: {model.n_head: 2, model: {n_head: 4}}\nvariants: [{label: a}]\n",
     ":3:32: error: model.n_head: duplicate key (first set at line 3)"},
    {"name: x\nbase: base.yaml\nset: [a]\nvariants: [{label: a}]\n",
     ":3:6: error: set: expected a mapping of config keys to values, got a list"},
    {"name: x\nbase: base.yaml\nvariants: {label: a}\n",
     ":3:11: error: variants: expected a list of {label: NAME, set: {...}}, got a mapping"},
    {"name: x\nbase: base.yaml\nvariants: []\n",
     ":3:11: error: variants: empty list (give at least one {label: NAME, set: {...}})"},
    {"name: x\nbase: base.yaml\nvariants: [{set: {}}]\n",
     ":3:12: error: variants[0].label: required (each variant needs a label)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, sett: {}}]\n",
     ":3:23: error: variants[0].sett: unknown key (did you mean set?)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}, {label: a}]\n",
     ":3:32: error: variants[1].label: duplicate label \"a\" (also variants[0], line 3)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}, {label: b, set: {model.n_head: 4}}]\n",
     ":3:24: error: variants[1]: \"b\" resolves to the same configuration as \"a\" (run id $); each "
     "configuration runs once"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, set: {model.n_kv_head: 3}}]\n",
     ":3:46: error: model.n_kv_head: must divide model.n_head (n_head 4, n_kv_head 3) (run 0: a, seed 7)"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters:\n"
     "  model.gate.position: {values: [sdpa, dense]}\n  model.gate.granularity: {values: [headwise]}\n",
     ":6:37: error: model.gate.granularity: headwise is not valid with model.gate.position dense (G5 gates d_model "
     "channels; it has no heads) (run 1: position=dense,granularity=headwise, seed 7)"},
    {"name: x\nbase: base.yaml\nmethod: zip\nparameters:\n  model.n_head: {values: [1, 2]}\n"
     "  model.d_model: {values: [32]}\n",
     ":6:28: error: model.d_model: zip needs lists of equal length: 1 value here, 2 for model.n_head"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters:\n  model.n_head: {values: []}\n",
     ":5:26: error: model.n_head: values: empty list"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {}\n",
     ":4:13: error: parameters: empty mapping (give config keys with {values: [...]})"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {model.n_head: {values: [1], value: 2}}\n",
     ":4:28: error: model.n_head: give values (a list to sweep) or value (a constant), not both"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {model.n_head: 4}\n",
     ":4:28: error: model.n_head: expected {values: [...]} or {value: x}, got \"4\""},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {model.n_head: {valeus: [2]}}\n",
     ":4:29: error: model.n_head.valeus: unknown key (did you mean values?)"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {model.gate: {values: [1]}}\n",
     ":4:14: error: model.gate: is a section, not a key (set one of its keys, e.g. model.gate.position)"},
    {"name: x\nbase: base.yaml\nmethod: grid\nparameters: {model.n_head: {values: [2, 3, 2]}}\n",
     ":4:44: error: model.n_head: duplicate value \"2\" (also at line 4, column 38)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nseeds: []\n",
     ":4:8: error: seeds: empty list (leave seeds out to use the base config's seed)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nseeds: 1\n",
     ":4:8: error: seeds: expected a list of integers, got \"1\""},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nseeds: [1, x]\n",
     ":4:12: error: seeds: expected integer in [0, 9007199254740992], got \"x\""},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nseeds: [1, 2, 1]\n",
     ":4:15: error: seeds: duplicate seed 1 (also at line 4)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a, set: {train.seed: 3}}]\nseeds: [1]\n",
     ":3:29: error: train.seed: set by seeds (line 4); remove it here, or drop seeds"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nbaseline: b\n",
     ":4:11: error: baseline: no variant labelled \"b\" (labels: a)"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nrun_name: \"{sweep}-{modle.n_head}\"\n",
     ":4:11: error: run_name: unknown placeholder {modle.n_head} (did you mean {model.n_head}?); use {sweep}, "
     "{label}, {seed}, {index} or a config key"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nrun_name: \"{sweep\"\n",
     ":4:11: error: run_name: unclosed { in \"{sweep\""},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nseeds: [1, 2]\nrun_name: \"{sweep}-{label}\"\n",
     ":5:11: error: run_name: runs 0 and 1 are both named \"x-a\" (use {label}, {seed} or {index})"},
    {"name: [x\n", ":2:1: error: YAML syntax: did not find expected ',' or ']'"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\n---\nname: y\n",
     ":4:1: error: more than one YAML document (a sweep file holds one)"},
    {"- a\n", ":1:1: error: expected a mapping of sweep keys at the top level, got a list"},
    /* names and labels reach plot scripts, file names and terminals: printable text only */
    {"name: x\nbase: base.yaml\nvariants: [{label: \"x\\n!touch PWNED\\n\"}]\n",
     ":3:20: error: variants[0].label: \"x\\x0a!touch PWNED\\x0a\" contains a control character (\\x0a at byte 2); "
     "names and labels must be printable text"},
    {"name: \"run\\e[2J\"\nbase: base.yaml\nvariants: [{label: a}]\n",
     ":1:7: error: name: \"run\\x1b[2J\" contains a control character (\\x1b at byte 4); names and labels must be "
     "printable text"},
    {"name: x\nbase: base.yaml\nvariants: [{label: a}]\nrun_name: \"{label}\\t{seed}\"\n",
     ":4:11: error: run_name: run 0 gets the name \"a\\x097\", which contains a control character (\\x09 at byte 2); "
     "names and labels must be printable text"},
};

/* msg with '@' replaced by dir. */
static void expand_at(const char *msg, const char *dir, char *out, size_t cap) {
    size_t o = 0;
    for (const char *c = msg; *c && o + 1 < cap; c++) {
        if (*c == '@')
            o += (size_t)snprintf(out + o, cap - o, "%s", dir);
        else
            out[o++] = *c;
    }
    out[o < cap ? o : cap - 1] = '\0';
}

/* got equals want, where '$' in want matches any 16 lowercase hex digits. */
static int msg_matches(const char *want, const char *got) {
    for (; *want; want++) {
        if (*want == '$') {
            for (int i = 0; i < 16; i++, got++)
                if (!((*got >= '0' && *got <= '9') || (*got >= 'a' && *got <= 'f')))
                    return 0;
            continue;
        }
        if (*got++ != *want)
            return 0;
    }
    return *got == '\0';
}

Test(sweep, bad_files_have_exact_messages) {
    Tmp t;
    tmp_dir(&t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Sweep s;
        ConfigError e;
        char path[128], want[1200], suffix[1024];
        memset(&e, 0, sizeof e);
        int rc = load_text(&t, bad[i].yaml, &s, &e, path);
        expand_at(bad[i].msg, t.dir, suffix, sizeof suffix);
        snprintf(want, sizeof want, "%s%s", path, suffix);
        cr_expect_eq(rc, -1, "row %zu accepted:\n%s", i, bad[i].yaml);
        cr_expect(msg_matches(want, e.msg), "row %zu:\n%s\nwant: %s\ngot:  %s", i, bad[i].yaml, want, e.msg);
        cr_assert_eq(s.nruns, 0);
        cr_assert_null(s.runs);
        sweep_free(&s);
    }
    /* a missing sweep file */
    Sweep s;
    ConfigError e;
    char path[160];
    snprintf(path, sizeof path, "%s/none.yaml", t.dir);
    cr_assert_eq(sweep_load(&s, path, &e), -1);
    char want[300];
    snprintf(want, sizeof want, "%s: error: cannot open: No such file or directory", path);
    cr_assert_str_eq(e.msg, want);
    tmp_rm(&t);
}

Test(sweep, cli_exits_2_with_the_message) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[128], cmd[512], out[4096], want[1200], suffix[1024];
        write_file(&t, "s.yaml", bad[i].yaml, path);
        snprintf(cmd, sizeof cmd, "'%s' sweep '%s' --dry-run --db '%s/r.db'", bin, path, t.dir);
        int rc = sh(cmd, out, sizeof out);
        expand_at(bad[i].msg, t.dir, suffix, sizeof suffix);
        snprintf(want, sizeof want, "%s%s\n", path, suffix);
        cr_expect_eq(rc, 2, "row %zu: exit %d: %s", i, rc, out);
        cr_expect(msg_matches(want, out), "row %zu:\nwant: %sgot:  %s", i, want, out);
    }
    /* usage errors are 2 as well, and nothing was created */
    static const char *const args[] = {"",        "--jobs 0",  "--shard 3/2",           "--shard 2/2",
                                       "--shard x", "--shard -1/2", "--index 1 --shard 1/2", "--bogus",
                                       "--index 99", "--count --index 1"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        char path[128], cmd[512], out[4096];
        write_file(&t, "ok.yaml", "name: ok\nbase: base.yaml\nvariants: [{label: a}]\n", path);
        snprintf(cmd, sizeof cmd, "'%s' sweep %s %s --db '%s/r.db'", bin, i ? path : "", args[i], t.dir);
        cr_expect_eq(sh(cmd, out, sizeof out), 2, "%s: %s", args[i], out);
    }
    char db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_neq(access(db, F_OK), 0, "a failed sweep created the database");
    tmp_rm(&t);
}

/* What cannot make a file name or is cut by C strings is refused when the
 * sweep is loaded, at its place (issue 39, items 11 and 12): "\0" in a
 * string (the name "sw\0../../etc" was read as "sw", labels "a\0b" and
 * "a\0c" both as "a"), a sweep name or label over SWEEP_NAME_MAX bytes, a
 * run name over SWEEP_RUN_NAME_MAX, a right-to-left override or a line
 * separator in a label. */
Test(sweep, nul_bidi_and_names_too_long_for_a_file_name_are_refused) {
    Tmp t;
    tmp_dir(&t);
    char long_name[400], long_label[400], long_run[400];
    snprintf(long_name, sizeof long_name, "name: %0300d\nbase: base.yaml\nvariants: [{label: a}]\n", 0);
    snprintf(long_label, sizeof long_label, "name: s\nbase: base.yaml\nvariants: [{label: l%070d}]\n", 0);
    snprintf(long_run, sizeof long_run, "name: s\nbase: base.yaml\nrun_name: \"{label}-%0130d\"\nvariants: [{label: a}]\n", 0);
    const char *const cases[][2] = {
        {"name: \"sw\\0../../etc\"\nbase: base.yaml\nvariants: [{label: a}]\n", "s.yaml:1:7: error: a NUL character"},
        {"name: s\nbase: base.yaml\nvariants:\n  - {label: \"a\\0b\"}\n  - {label: \"a\\0c\"}\n",
         "s.yaml:4:13: error: a NUL character"},
        {"name: s\nbase: base.yaml\nvariants: [{label: a}]\nset: {data.corpus: \"syn\\0x\"}\n",
         "s.yaml:4:20: error: a NUL character"},
        {long_name, "s.yaml:1:7: error: name: \"00000"},
        {long_label, "is 71 bytes long; at most 64"},
        {long_run, "which is 132 bytes long; at most 128"},
        {"name: s\nbase: base.yaml\nvariants: [{label: \"a\\u202Egpj\"}]\n", "(\\xe2\\x80\\xae at byte 2)"},
        {"name: s\nbase: base.yaml\nvariants: [{label: \"a\\u2028b\"}]\n", "(\\xe2\\x80\\xa8 at byte 2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Sweep s;
        ConfigError e;
        char path[128];
        cr_expect_neq(load_text(&t, cases[i][0], &s, &e, path), 0, "loaded:\n%s", cases[i][0]);
        cr_expect(strstr(e.msg, cases[i][1]), "%s\nwant: %s", e.msg, cases[i][1]);
    }
    /* the command: exit 2, FILE:LINE:COL */
    const char *bin = sweep_gated_bin();
    char out[2048], p[128];
    write_file(&t, "n.yaml", cases[0][0], p);
    cr_expect_eq(gated(bin, &t, "sweep n.yaml --dry-run", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "n.yaml:1:7: error: a NUL character"), "%s", out);
    /* a run file too */
    write_file(&t, "r.yaml", "model: {d_model: 32}\ndata: {corpus: \"synthetic\\0x\"}\n", p);
    cr_expect_eq(gated(bin, &t, "info r.yaml", out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "r.yaml:2:16: error: a NUL character"), "%s", out);
    tmp_rm(&t);
}
