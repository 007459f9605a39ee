/*
 * test_sweep.c — sweep files and the sweep / merge commands: expansion of
 * variants, grids, zips and seeds (order, labels, overrides, names,
 * baseline), the exact message of every kind of bad sweep file (in process
 * and through `gated sweep --dry-run`, exit 2), and end to end with
 * GATED_BIN: a sweep run twice runs everything once, failures / divergence
 * / --fail-fast / --rerun-failed / code-version reruns, sharding plus
 * `gated merge` against one unsharded sweep, and merge idempotence and its
 * choice between two copies of a run.
 *
 * The end-to-end tests run tiny models on the synthetic corpus from a
 * temporary directory; every run records the code version of the build
 * (run/codever.h), so a commit made meanwhile cannot turn a skip into a
 * rerun.  Which other code versions and compiler flags keep a result valid
 * is tested on codever_same_results itself, with a made-up git answer and
 * with a scratch git repository.
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
#include "lab/merge.h"
#include "testutil.h"
#include "lab/sweep.h"
#include "util/util.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* The base run config of the tests: a tiny model on the synthetic corpus. */
static const char BASE_YAML[] = "model:\n"
                                "  vocab_size: 257\n"
                                "  d_model: 32\n"
                                "  n_layer: 1\n"
                                "  n_head: 4\n"
                                "  d_ff: 48\n"
                                "  seq_len: 16\n"
                                "train:\n"
                                "  batch: 2\n"
                                "  steps: 4\n"
                                "  warmup: 1\n"
                                "  eval_every: 2\n"
                                "  eval_windows: 2\n"
                                "  seed: 7\n"
                                "data:\n"
                                "  corpus: synthetic\n";

typedef struct {
    char dir[64];
} Tmp;

/* A fresh directory holding base.yaml. */
static void tmp_dir(Tmp *t) {
    strcpy(t->dir, "/tmp/test_sweep_XXXXXX");
    cr_assert(mkdtemp(t->dir), "mkdtemp: %s", strerror(errno));
    char p[128];
    snprintf(p, sizeof p, "%s/base.yaml", t->dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(BASE_YAML, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static void tmp_rm(Tmp *t) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    cr_assert_eq(system(cmd), 0);
}

/* Write text to DIR/name; the path goes to path (>= 128 bytes). */
static void write_file(const Tmp *t, const char *name, const char *text, char *path) {
    snprintf(path, 128, "%s/%s", t->dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert(fputs(text, f) >= 0);
    cr_assert_eq(fclose(f), 0);
}

/* sweep_load of text (as DIR/s.yaml); rc, and the path in path. */
static int load_text(const Tmp *t, const char *text, Sweep *s, ConfigError *e, char *path) {
    write_file(t, "s.yaml", text, path);
    return sweep_load(s, path, e);
}

static Sweep load_ok(const Tmp *t, const char *text) {
    Sweep s;
    ConfigError e;
    char path[128];
    int rc = load_text(t, text, &s, &e, path);
    cr_assert_eq(rc, 0, "sweep_load: %s\n--- file:\n%s", e.msg, text);
    return s;
}

/* The overrides of run r joined with ' '. */
static void joined(const SweepRun *r, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->noverrides && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? " " : "", r->overrides[i]);
}

static const char *sweep_gated_bin(void) {
    const char *bin = getenv("GATED_BIN");
    struct stat st;
    if (!bin || !*bin)
        cr_skip_test("GATED_BIN is not set");
    if (stat(bin, &st) != 0)
        cr_skip_test("GATED_BIN=%s does not exist", bin);
    cr_assert(strchr(bin, '\'') == NULL, "GATED_BIN contains a quote: %s", bin);
    return bin;
}

/* Run a shell command; its stdout + stderr into out (cap bytes); the exit
 * status is returned (-1 if it did not exit normally). */
static int sh(const char *cmd, char *out, size_t cap) {
    size_t fl = strlen(cmd) + 16;
    char *full = malloc(fl);
    cr_assert_not_null(full);
    snprintf(full, fl, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    cr_assert_not_null(p, "popen %s", cmd);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) {
    }
    int st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last non-empty line of text. */
static const char *last_line(char *text) {
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        text[--n] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

/* Absolute path of experiments/smoke.yaml (tests run from the repository root). */
static void smoke_path(char *out) {
    cr_assert_not_null(realpath("experiments/smoke.yaml", out),
                       "experiments/smoke.yaml: %s (run the tests from the repository root)", strerror(errno));
}

static sqlite3 *db_open(const char *path) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "open %s", path);
    return db;
}

static long long q_int(const char *path, const char *sql) {
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* group_concat of one text query's rows (ordered by the query). */
static void q_text(const char *path, const char *sql, char *out, size_t cap) {
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    size_t o = 0;
    out[0] = '\0';
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW && o < cap) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? ";" : "", t ? (const char *)t : "NULL");
    }
    cr_assert_eq(r, SQLITE_DONE, "%s", sql);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Change a database with one statement (as another tool would). */
static void db_exec(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

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
    {"name: x\nbase: base.yaml\nset: {model.gate.position: G1}\nvariants: [{label: a}]\n",
     ":3:28: error: model.gate.position: expected one of none, sdpa, value, key, query, dense, got \"G1\""},
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

/* ------------------------------------------------------------------ */
/* end to end                                                          */
/* ------------------------------------------------------------------ */

/* Run `gated ARGS` in dir; output into out; exit status returned. */
static int gated(const char *bin, const Tmp *t, const char *args, char *out, size_t cap) {
    size_t cap2 = strlen(t->dir) + strlen(bin) + strlen(args) + 16;
    char *cmd = malloc(cap2);
    cr_assert_not_null(cmd);
    snprintf(cmd, cap2, "cd '%s' && '%s' %s", t->dir, bin, args);
    int rc = sh(cmd, out, cap);
    free(cmd);
    return rc;
}

Test(sweep, smoke_twice_runs_everything_once) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], db[160];
    smoke_path(smoke);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    snprintf(args, sizeof args, "sweep '%s' --db r.db --jobs 2", smoke);

    int rc = gated(bin, &t, args, out, sizeof out);
    cr_assert_eq(rc, 0, "first sweep: exit %d\n%s", rc, out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 6 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 6);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sweep_runs WHERE sweep = 'smoke'"), 6);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sweep_runs s JOIN runs r USING (run_id)"), 6);
    char txt[2048];
    q_text(db, "SELECT label || ':' || seed || ':' || idx || ':' || is_baseline FROM sweep_runs ORDER BY idx", txt,
           sizeof txt);
    cr_assert_str_eq(txt, "baseline:1:0:1;baseline:2:1:1;G1-elementwise:1:2:0;G1-elementwise:2:3:0;"
                          "G1-headwise:1:4:0;G1-headwise:2:5:0");
    q_text(db, "SELECT r.name FROM sweep_runs s JOIN runs r USING (run_id) ORDER BY s.idx", txt, sizeof txt);
    cr_assert_str_eq(txt, "smoke-baseline-s1;smoke-baseline-s2;smoke-G1-elementwise-s1;smoke-G1-elementwise-s2;"
                          "smoke-G1-headwise-s1;smoke-G1-headwise-s2");
    long long metrics = q_int(db, "SELECT count(*) FROM metrics");
    cr_assert_gt(metrics, 0);

    rc = gated(bin, &t, args, out, sizeof out);
    cr_assert_eq(rc, 0, "second sweep: exit %d\n%s", rc, out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 0 finished, 0 diverged, 0 failed, 6 skipped", "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics"), metrics);

    /* --dry-run shows the stored status; --index runs exactly one run (here with --force) */
    snprintf(args, sizeof args, "sweep '%s' --db r.db --dry-run", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "    3  finished  skip"), "%s", out);
    cr_assert_not_null(strstr(out, "smoke-G1-elementwise-s2"), "%s", out);
    cr_assert_not_null(strstr(out, "model.gate.granularity=elementwise train.seed=2"), "%s", out);
    snprintf(args, sizeof args, "sweep '%s' --db r.db --index 3 --force", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);

    /* a result recorded by another code version is run again */
    db_exec(db, "UPDATE runs SET code_version = 'deadbeef' WHERE name = 'smoke-G1-headwise-s1'");
    snprintf(args, sizeof args, "sweep '%s' --db r.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 1 finished, 0 diverged, 0 failed, 5 skipped", "%s", out);
    char want[128];
    snprintf(want, sizeof want, "finished by code deadbeef, now %.12s: rerun", codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    /* ... and so is one of this code version built with other flags */
    db_exec(db, "UPDATE runs SET cflags = '-O0 -g' WHERE name = 'smoke-G1-headwise-s2'");
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 1 finished, 0 diverged, 0 failed, 5 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "finished with other compiler flags: rerun"), "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE cflags = '-O0 -g'"), 0);
    tmp_rm(&t);
}

/* A made-up git: 1 (unchanged) or 0, and what it was asked. */
typedef struct {
    int answer, calls;
    char paths[256];
} FakeGit;

static int fake_unchanged(void *ctx, const char *a, const char *b, const char *const *paths) {
    FakeGit *g = ctx;
    (void)a, (void)b;
    g->calls++;
    size_t n = 0;
    g->paths[0] = '\0';
    for (int i = 0; paths[i]; i++) n += (size_t)snprintf(g->paths + n, sizeof g->paths - n, "%s%s", i ? " " : "", paths[i]);
    return g->answer;
}

/* A result stands for another build when the flags are equal and the code
 * is the same, or when git finds nothing changed under core/util, core/nn
 * and core/run between the two commits. */
Test(sweep, results_stay_valid_for_the_same_result_code_and_flags) {
    const char *A = "1111111111111111111111111111111111111111", *B = "2222222222222222222222222222222222222222";
    FakeGit g = {1, 0, ""};
    cr_assert_eq(codever_same_results(A, "-O2", A, "-O2", fake_unchanged, &g), 1);
    cr_assert_eq(g.calls, 0, "the same commit needs no diff");
    cr_assert_eq(codever_same_results("unknown", "-O2", "unknown", "-O2", fake_unchanged, &g), 1);
    cr_assert_eq(codever_same_results(A, "-O2", B, "-O2", fake_unchanged, &g), 1, "unchanged result code");
    cr_assert_eq(g.calls, 1);
    cr_assert_str_eq(g.paths, "core/util core/nn core/run");
    g.answer = 0;
    cr_assert_eq(codever_same_results(A, "-O2", B, "-O2", fake_unchanged, &g), 0, "changed result code");
    /* other flags: rerun, whatever git says, even at the same commit */
    g.answer = 1;
    g.calls = 0;
    cr_assert_eq(codever_same_results(A, "-O0", A, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(A, "-O0", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(A, NULL, A, "-O2", fake_unchanged, &g), 0);
    /* only commits reach git (never an option, never "unknown") */
    cr_assert_eq(codever_same_results("unknown", "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results("--output=x", "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(codever_same_results(NULL, "-O2", B, "-O2", fake_unchanged, &g), 0);
    cr_assert_eq(g.calls, 0);
}

/* codever_git_unchanged on a scratch repository: commits that differ only
 * in docs or the CLI leave results valid, one in core/nn does not. */
Test(sweep, git_diff_looks_at_the_result_code_only) {
    Tmp t;
    tmp_dir(&t);
    char cmd[PATH_MAX + 1024], out[4096];
    const char *git = "git -c user.email=t@example.com -c user.name=t -c commit.gpgsign=false";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && git init -q && mkdir -p core/run core/nn cli && echo 1 > core/run/a.c && echo 1 > core/nn/b.c"
             " && echo a > README.md && echo 1 > cli/main.c && git add -A && %s commit -qm A && git rev-parse HEAD"
             " && echo b > README.md && %s commit -qam B && git rev-parse HEAD"
             " && echo 2 > cli/main.c && %s commit -qam C && git rev-parse HEAD"
             " && echo 2 > core/nn/b.c && %s commit -qam D && git rev-parse HEAD",
             t.dir, git, git, git, git);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    char c[4][41];
    cr_assert_eq(sscanf(out, "%40s %40s %40s %40s", c[0], c[1], c[2], c[3]), 4, "%s", out);
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[1], codever_result_paths), 1, "a README change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[2], codever_result_paths), 1, "a CLI change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[2], c[3], codever_result_paths), 0, "a core/nn change");
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], c[3], codever_result_paths), 0);
    static const char *const no_such = "3333333333333333333333333333333333333333";
    cr_assert_eq(codever_git_unchanged(t.dir, c[0], no_such, codever_result_paths), 0, "an unknown commit");
    cr_assert_eq(codever_same_results(c[0], "-O2", c[2], "-O2", codever_git_unchanged, t.dir), 1);
    cr_assert_eq(codever_same_results(c[0], "-O2", c[3], "-O2", codever_git_unchanged, t.dir), 0);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* --verify-code                                                       */
/* ------------------------------------------------------------------ */

/* Two runs of BASE_YAML (4 steps, the first evaluation after step 2, so
 * --verify-code re-executes 2 steps). */
static const char VERIFY_SWEEP[] = "name: vc\nbase: base.yaml\nvariants:\n  - label: a\nseeds: [1, 2]\n";
static const char OTHER_CODE[] = "1111111111111111111111111111111111111111";

/* A metric of run `name` (exactly one row), read or written with bound values. */
static double metric_get(const char *db, const char *name, const char *key, long long step) {
    sqlite3 *h = db_open(db);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT m.value FROM metrics m JOIN runs r USING (run_id)"
                                    " WHERE r.name = ?1 AND m.key = ?2 AND m.step = ?3",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s %s %lld", name, key, step);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void metric_set(const char *db, const char *name, const char *key, long long step, double v) {
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "UPDATE metrics SET value = ?4 WHERE key = ?2 AND step = ?3"
                                    " AND run_id = (SELECT run_id FROM runs WHERE name = ?1)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    sqlite3_bind_double(st, 4, v);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    cr_assert_eq(sqlite3_changes(h), 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Results recorded by other code (here a made-up commit) whose first steps
 * this build re-executes bitwise equal are attested and kept, by this sweep
 * and the next ones; a database of schema 1 is compared after the store's
 * migration, so its 0-based per-update steps line up. */
Test(sweep, verify_code_keeps_results_that_re_execute_bitwise_equal, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], want[512], txt[2048], cmd[512];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    long long metrics = q_int(db, "SELECT count(*) FROM metrics");
    char ended[256];
    q_text(db, "SELECT ended_at FROM runs ORDER BY run_id", ended, sizeof ended);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    /* past the 2 steps verified, nothing is looked at */
    metric_set(db, "vc-a-s2", "train_loss", 4, metric_get(db, "vc-a-s2", "train_loss", 4) + 1);

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --dry-run", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "    0  finished  verify  "), "%s", out);
    snprintf(want, sizeof want,
             "verify vc-a-s1 (index 0): finished by code 111111111111, now %.12s: verify its first 2 steps, rerun if "
             "they differ",
             codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM code_attest"), 0, "--dry-run wrote");

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 2 steps, "), "%s", out);
    snprintf(want, sizeof want, "skip vc-a-s2 (index 1): finished by code 111111111111, now %.12s, verified equal under "
                                "%.12s (2 steps, ", codever_commit(), codever_commit());
    cr_assert_not_null(strstr(out, want), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM code_attest WHERE steps_checked = 2 AND rows_checked > 10"), 2);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics"), metrics);
    snprintf(cmd, sizeof cmd, "SELECT count(*) FROM runs WHERE code_version = '%s'", OTHER_CODE);
    cr_assert_eq(q_int(db, cmd), 2, "a run was rerun");
    q_text(db, "SELECT ended_at FROM runs ORDER BY run_id", txt, sizeof txt);
    cr_assert_str_eq(txt, ended);
    /* the scratch database is gone, the log stays */
    snprintf(cmd, sizeof cmd, "cd '%s' && ls && ls logs", t.dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "verify-"), "%s", out);
    cr_assert_not_null(strstr(out, "vc-a-s1.verify.log"), "%s", out);
    /* a plain sweep honours the attestations */
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified equal under"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);

    /* the same runs in a database of schema 1, recorded by yet other code */
    char v1[160];
    snprintf(v1, sizeof v1, "%s/v1.db", t.dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", db, v1);
    cr_assert_eq(system(cmd), 0);
    db_exec(v1, "PRAGMA journal_mode=DELETE");
    /* schema 1 had neither code_attest, metrics.t nor the views (which read metrics.t) */
    db_exec(v1, "DROP VIEW final_metrics; DROP VIEW sweep_metrics; DROP VIEW run_metrics;"
                "DROP TABLE code_attest; ALTER TABLE metrics DROP COLUMN t;"
                "UPDATE metrics SET step = -step WHERE key IN ('train_loss', 'lr', 'grad_norm', 'spike');"
                "UPDATE metrics SET step = -step - 1 WHERE step < 0;"
                "UPDATE runs SET code_version = '2222222222222222222222222222222222222222';"
                "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    q_text(v1, "SELECT group_concat(step) FROM (SELECT step FROM metrics JOIN runs USING (run_id)"
               " WHERE name = 'vc-a-s1' AND key = 'train_loss' ORDER BY step)", txt, sizeof txt);
    cr_assert_str_eq(txt, "0,1,2,3");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db v1.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    cr_assert_eq(q_int(v1, "SELECT count(*) FROM code_attest WHERE steps_checked = 2"), 2, "%s", out);
    q_text(v1, "SELECT group_concat(step) FROM (SELECT step FROM metrics JOIN runs USING (run_id)"
               " WHERE name = 'vc-a-s1' AND key = 'train_loss' ORDER BY step)", txt, sizeof txt);
    cr_assert_str_eq(txt, "1,2,3,4");
    tmp_rm(&t);
}

/* A stored value one ulp away from what this build computes, or a row the
 * re-execution has and the stored run lacks: nothing attested, the first
 * difference printed, the run rerun as without --verify-code. */
Test(sweep, verify_code_reruns_a_result_one_ulp_off_or_missing_a_row, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], cmd[256];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    double v = metric_get(db, "vc-a-s1", "val_loss", 2);
    metric_set(db, "vc-a-s1", "val_loss", 2, nextafter(v, INFINITY));
    db_exec(db, "DELETE FROM metrics WHERE key = 'lr' AND step = 1"
                " AND run_id = (SELECT run_id FROM runs WHERE name = 'vc-a-s2')");

    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1 (index 0): differs: metric val_loss step 2: stored "), "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s2 (index 1): differs: metric lr step 1: re-executed only (1 row "
                                   "differs, "),
                       "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 2 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM code_attest"), 0);
    double now = metric_get(db, "vc-a-s1", "val_loss", 2);
    cr_assert_eq(memcmp(&now, &v, sizeof v), 0, "the rerun gives %.17g, first %.17g", now, v);
    snprintf(cmd, sizeof cmd, "SELECT count(*) FROM runs WHERE code_version = '%s'", codever_commit());
    cr_assert_eq(q_int(db, cmd), 2);
    tmp_rm(&t);
}

/* A whole-run verification (--verify-steps = train.steps) leaves its final
 * checkpoint where the run's own would be (so a database brought from
 * elsewhere gets checkpoints for `gated eval`), replacing a file there (here
 * one of an earlier step, as a stopped rerun leaves). */
Test(sweep, verify_code_of_the_whole_run_keeps_its_checkpoint, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], id1[64], id2[64], c1[300], c2[300], cmd[4096];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    q_text(db, "SELECT run_id FROM runs WHERE name = 'vc-a-s1'", id1, sizeof id1);
    q_text(db, "SELECT run_id FROM runs WHERE name = 'vc-a-s2'", id2, sizeof id2);
    snprintf(c1, sizeof c1, "%s/checkpoints/%s.ckpt", t.dir, id1);
    snprintf(c2, sizeof c2, "%s/checkpoints/%s.ckpt", t.dir, id2);
    cr_assert_eq(access(c1, F_OK), 0, "%s", c1);
    /* s1 has no checkpoint, s2 a wrong one (s1's) */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.orig' && rm '%s' && cp '%s' '%s.orig' && cp '%s.orig' '%s'", c1, c1, c1,
             c2, c2, c1, c2);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    /* a verification of part of the run keeps nothing */
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --index 0", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 2 steps, "), "%s", out);
    cr_assert_neq(access(c1, F_OK), 0, "a 2-step re-execution left a checkpoint");
    db_exec(db, "DELETE FROM code_attest");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code --verify-steps 4", out, sizeof out), 0, "%s",
                 out);
    cr_assert_not_null(strstr(out, "verified vc-a-s1 (index 0): 4 steps, "), "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1: the whole run was re-executed: its final checkpoint is now "), "%s",
                       out);
    cr_assert_not_null(strstr(out, " (replacing the file there)"), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 0 finished, 0 diverged, 0 failed, 2 skipped", "%s", out);
    /* each kept checkpoint is the run's own but for the training wall time
     * (one 8-byte double) and the checksum after it (the last 8 bytes):
     * the offsets of the other differing bytes span at most 8 */
    for (int k = 0; k < 2; k++) {
        const char *c = k ? c2 : c1;
        snprintf(cmd, sizeof cmd,
                 "n=$(stat -c %%s '%s'); test \"$n\" = \"$(stat -c %%s '%s.orig')\" || echo size;"
                 " cmp -l '%s' '%s.orig' | awk -v n=\"$n\" '$1 <= n - 8 {if (!lo) lo = $1; hi = $1}"
                 " END {print hi - lo}'",
                 c, c, c, c);
        cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
        cr_assert(atoi(out) >= 0 && atoi(out) < 8 && !strstr(out, "size"), "%s: differing bytes span %s", c, out);
    }
    tmp_rm(&t);
}

/* A run stored as made with another OpenBLAS build (here a hostile text, as
 * a merged database may hold) is not re-executed: its bits cannot be
 * reproduced here, so the reason is printed, escaped, and the run is rerun. */
Test(sweep, verify_code_does_not_re_execute_a_run_of_another_openblas_build, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160], cmd[512];
    write_file(&t, "v.yaml", VERIFY_SWEEP, path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db", out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "UPDATE runs SET code_version = '%s'", OTHER_CODE);
    db_exec(db, cmd);
    db_exec(db, "UPDATE runs SET openblas_version = 'OpenBLAS 9.9 DYNAMIC_ARCH Haswell' || char(10) || '!id'"
                " WHERE name = 'vc-a-s1'");
    cr_assert_eq(gated(bin, &t, "sweep v.yaml --db r.db --verify-code", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verify vc-a-s1 (index 0): made with another OpenBLAS build (\"OpenBLAS 9.9 "
                                   "DYNAMIC_ARCH Haswell\\x0a!id\"; this one: "),
                       "%s", out);
    cr_assert_null(strstr(out, "\n!id"), "an unescaped newline reached the terminal: %s", out);
    cr_assert_not_null(strstr(out, "verified vc-a-s2 (index 1): 2 steps, "), "%s", out);
    cr_assert_str_eq(last_line(out), "sweep vc: 2 runs: 1 finished, 0 diverged, 0 failed, 1 skipped", "%s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && ls logs", t.dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "vc-a-s1.verify.log"), "it was re-executed: %s", out);
    tmp_rm(&t);
}

Test(sweep, failures_divergence_fail_fast_and_rerun_failed) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    /* b cannot train (train refuses a vocabulary below 257), c diverges at once */
    write_file(&t, "f.yaml",
               "name: f\nbase: base.yaml\nvariants:\n"
               "  - {label: a}\n"
               "  - {label: b, set: {model.vocab_size: 64}}\n"
               "  - {label: c, set: {train.diverge_loss: 1}}\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep f.yaml --db r.db --jobs 2", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep f: 3 runs: 1 finished, 1 diverged, 1 failed, 0 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "FAILED f-b-s7"), "%s", out);
    cr_assert_not_null(strstr(out, "model.vocab_size: must be at least 257"), "the log tail: %s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs"), 2); /* b never started */

    /* again: a and c are results; b runs (and fails) again */
    cr_assert_eq(gated(bin, &t, "sweep f.yaml --db r.db", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep f: 3 runs: 0 finished, 0 diverged, 1 failed, 2 skipped", "%s", out);

    /* --fail-fast: nothing starts after the first failure */
    write_file(&t, "ff.yaml",
               "name: ff\nbase: base.yaml\nvariants:\n"
               "  - {label: b, set: {model.vocab_size: 64}}\n"
               "  - {label: a, set: {train.lr: 0.001}}\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep ff.yaml --db r.db --fail-fast", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep ff: 2 runs: 0 finished, 0 diverged, 1 failed, 1 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "--fail-fast: 1 run not started"), "%s", out);

    /* a run recorded as failed is skipped (exit 1) unless --rerun-failed */
    db_exec(db, "UPDATE runs SET status = 'failed' WHERE name = 'f-a-s7'");
    write_file(&t, "a.yaml", "name: a\nbase: base.yaml\nvariants: [{label: a}]\nrun_name: f-a-s7\n", path);
    cr_assert_eq(gated(bin, &t, "sweep a.yaml --db r.db", out, sizeof out), 1, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep a: 1 runs: 0 finished, 0 diverged, 0 failed, 1 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "1 failed run skipped (pass --rerun-failed to rerun)"), "%s", out);
    cr_assert_eq(gated(bin, &t, "sweep a.yaml --db r.db --rerun-failed", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep a: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE name = 'f-a-s7' AND status = 'finished'"), 1);
    /* the run is a member of both sweeps */
    cr_assert_eq(q_int(db, "SELECT count(DISTINCT sweep) FROM sweep_runs WHERE run_id ="
                           " (SELECT run_id FROM runs WHERE name = 'f-a-s7')"),
                 2);
    tmp_rm(&t);
}


/* The sum of the numbers just before each occurrence of word in text
 * (" finished," in "...: 3 finished, ..." adds 3), and the number of lines
 * beginning with start. */
static int sum_before(const char *text, const char *word) {
    int sum = 0;
    for (const char *p = text; (p = strstr(p, word)) != NULL; p++) {
        const char *q = p;
        while (q > text && q[-1] == ' ')
            q--;
        const char *e = q;
        while (q > text && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q < e)
            sum += atoi(q);
    }
    return sum;
}

static int count_lines_starting(const char *text, const char *start) {
    int n = 0;
    size_t l = strlen(start);
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, start, l) == 0)
            n++;
    }
    return n;
}

/* Two sweeps of one file started together on one database: every run is
 * trained exactly once (one "start", one set of steps), every run is
 * finished, no run fails; a sweep that left a run to the other while it was
 * running there says so and exits 1 (its results were not all there when
 * it ended), else 0. */
Test(sweep, concurrent_identical_sweeps_train_each_run_once, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], cmd[2 * PATH_MAX + 512], out[32768], db[160], a[160], b[160];
    smoke_path(smoke);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    snprintf(a, sizeof a, "%s/a.out", t.dir);
    snprintf(b, sizeof b, "%s/b.out", t.dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { '%s' sweep '%s' --db r.db > a.out 2>&1; echo \"rc $?\" >> a.out; } & "
             "{ cd '%s' && '%s' sweep '%s' --db r.db > b.out 2>&1; echo \"rc $?\" >> b.out; } & wait",
             t.dir, bin, smoke, t.dir, bin, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    char *ta = test_read_file(a, NULL), *tb = test_read_file(b, NULL);
    cr_assert(ta && tb);
    snprintf(out, sizeof out, "--- sweep 1:\n%s--- sweep 2:\n%s", ta, tb);
    for (int k = 0; k < 2; k++) {
        const char *o = k ? tb : ta;
        int live = strstr(o, " running in another process, not waited for\n") != NULL;
        cr_assert(strstr(o, live ? "\nrc 1\n" : "\nrc 0\n"), "%s", out);
        cr_assert_null(strstr(o, "FAILED"), "%s", out);
    }
    int starts = count_lines_starting(ta, "start ") + count_lines_starting(tb, "start ");
    cr_assert_eq(starts, 6, "%d runs started for 6 runs:\n%s", starts, out);
    cr_assert_eq(sum_before(ta, " finished,") + sum_before(tb, " finished,"), 6, "%s", out);
    cr_assert_eq(sum_before(ta, " skipped\n") + sum_before(tb, " skipped\n"), 6, "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 6, "%s", out);
    /* each run's 12 steps, once each, from one attempt */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM (SELECT run_id FROM metrics WHERE key = 'train_loss'"
                           " GROUP BY run_id HAVING count(*) = 12 AND count(DISTINCT step) = 12"
                           " AND min(step) = 1 AND max(step) = 12)"),
                 6, "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_claims"), 0, "claims left behind");
    free(ta);
    free(tb);
    tmp_rm(&t);
}

/* A sweep that planned a run as new does not start it when another worker
 * finished it meanwhile.  The sweep is held (deterministically) before its
 * first run: that run's log is a FIFO, whose opening blocks until this test
 * reads it; the second run is finished meanwhile by another sweep. */
Test(sweep, run_finished_elsewhere_after_planning_is_not_restarted, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], cmd[PATH_MAX + 256], out[16384], db[160], fifo[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    write_file(&t, "p.yaml", "name: p\nbase: base.yaml\nvariants: [{label: a}, {label: b, set: {train.lr: 0.002}}]\n",
               path);
    snprintf(fifo, sizeof fifo, "%s/logs", t.dir);
    cr_assert_eq(mkdir(fifo, 0777), 0);
    snprintf(fifo, sizeof fifo, "%s/logs/p-a-s7.log", t.dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0, "mkfifo: %s", strerror(errno));

    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' sweep p.yaml --db r.db 2>&1", t.dir, bin);
    FILE *x = popen(cmd, "r");
    cr_assert_not_null(x);
    char line[1024], all[8192] = "";
    int planned = 0;
    while (!planned && fgets(line, sizeof line, x)) {
        strncat(all, line, sizeof all - strlen(all) - 1);
        planned = strncmp(line, "sweep p: 2 of 2 runs selected, 2 to run", 39) == 0;
    }
    cr_assert(planned, "the sweep did not plan both runs:\n%s", all);

    /* the other worker: run b (index 1) to the end */
    cr_assert_eq(gated(bin, &t, "sweep p.yaml --db r.db --index 1", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep p: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    char before[256], after[256];
    q_text(db, "SELECT started_at || ':' || ended_at || ':' || (SELECT count(*) FROM metrics m"
               " WHERE m.run_id = r.run_id) FROM runs r WHERE name = 'p-b-s7'",
           before, sizeof before);

    /* let the first sweep go on: it trains a, and must leave b alone */
    FILE *f = fopen(fifo, "r");
    cr_assert_not_null(f, "%s: %s", fifo, strerror(errno));
    while (fgets(line, sizeof line, f)) {
    }
    fclose(f);
    while (fgets(line, sizeof line, x))
        strncat(all, line, sizeof all - strlen(all) - 1);
    int ws = pclose(x);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "exit %d\n%s", ws, all);
    cr_assert_str_eq(last_line(all), "sweep p: 2 runs: 1 finished, 0 diverged, 0 failed, 1 skipped", "%s", all);
    cr_assert_not_null(strstr(all, "skip p-b-s7 (index 1): finished by another worker since this sweep started"),
                       "%s", all);
    q_text(db, "SELECT started_at || ':' || ended_at || ':' || (SELECT count(*) FROM metrics m"
               " WHERE m.run_id = r.run_id) FROM runs r WHERE name = 'p-b-s7'",
           after, sizeof after);
    cr_assert_str_eq(after, before, "b was run again");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 2);
    tmp_rm(&t);
}

/* A killed run (here: stopped by `gated train --stop-after`, which keeps a
 * checkpoint) is resumed by a plain rerun of its sweep, without flags, and
 * ends with each step recorded once. */
Test(sweep, killed_run_resumes_on_a_plain_rerun, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], db[160];
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    write_file(&t, "k.yaml", "name: k\nbase: base.yaml\nvariants: [{label: a}]\n", path);
    gated(bin, &t, "train base.yaml --name k-a-s7 --db r.db --ckpt checkpoints --data data --stop-after 2", out,
          sizeof out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE name = 'k-a-s7' AND status = 'killed'"), 1, "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE key = 'train_loss'"), 2);

    cr_assert_eq(gated(bin, &t, "sweep k.yaml --db r.db", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep k: 1 runs: 1 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_not_null(strstr(out, "killed, resuming from its checkpoint"), "%s", out);
    char log[256];
    snprintf(log, sizeof log, "%s/logs/k-a-s7.log", t.dir);
    char *l = test_read_file(log, NULL);
    cr_assert(l && strstr(l, "resuming"), "not resumed: %s", l ? l : "(no log)");
    free(l);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) || '/' || count(DISTINCT step) = '4/4' FROM metrics"
                           " WHERE key = 'train_loss'"),
                 1);
    tmp_rm(&t);
}

/* "run_id:status;..." and the metrics row count of a database. */
static void db_state(const char *db, char *runs, size_t cap, long long *metrics) {
    q_text(db, "SELECT run_id || ':' || status FROM runs ORDER BY run_id", runs, cap);
    *metrics = q_int(db, "SELECT count(*) FROM metrics");
}

Test(sweep, shards_merged_equal_one_unsharded_sweep) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384];
    smoke_path(smoke);
    static const char *const runs[] = {"--db all.db --jobs 2", "--db s1.db --shard 0/2", "--db s2.db --shard 1/2"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "sweep '%s' %s", smoke, runs[i]);
        cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s: %s", runs[i], out);
    }
    cr_assert_str_eq(last_line(out), "sweep smoke: 3 runs: 3 finished, 0 diverged, 0 failed, 0 skipped", "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db s1.db s2.db", out, sizeof out), 0, "%s", out);

    char a[4096], m[4096], p[160];
    long long ma, mm;
    snprintf(p, sizeof p, "%s/all.db", t.dir);
    db_state(p, a, sizeof a, &ma);
    long long sa = q_int(p, "SELECT count(*) FROM summary"), ha = q_int(p, "SELECT count(*) FROM histograms");
    snprintf(p, sizeof p, "%s/s1.db", t.dir);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs"), 3);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM sweep_runs WHERE idx % 2 = 0"), 3);
    snprintf(p, sizeof p, "%s/m.db", t.dir);
    db_state(p, m, sizeof m, &mm);
    cr_assert_str_eq(m, a);
    cr_assert_eq(mm, ma);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM summary"), sa);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM histograms"), ha);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM sweep_runs WHERE sweep = 'smoke'"), 6);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM environments"), 1);
    /* every run points at an environment of its own file */
    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs r JOIN environments e USING (env_id)"), 6);
    /* the merged database is complete: the sweep skips everything */
    snprintf(args, sizeof args, "sweep '%s' --db m.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(last_line(out), "sweep smoke: 6 runs: 0 finished, 0 diverged, 0 failed, 6 skipped", "%s", out);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* scale-out recipes (README, "Scale-out")                             */
/* ------------------------------------------------------------------ */

/* How many rows one query gives in db with the database other ATTACHed
 * as o (each query compares one table both ways). */
static long long q_two(const char *db, const char *other, const char *sql) {
    sqlite3 *h = db_open(db);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "ATTACH ?1 AS o", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, other, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "attach %s: %s", other, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* merged holds what one process wrote into one: the same runs with the same
 * statuses, sweep membership, and metric and histogram rows bitwise (SQL's
 * EXCEPT compares REAL values exactly; t, when recorded, is a wall-clock
 * time and left out), and the final results that do not measure time. */
static void same_results(const char *one, const char *merged) {
    static const char *const tables[][2] = {
        {"runs", "run_id, name, status, seed, config_json"},
        {"sweep_runs", "sweep, run_id, label, seed, idx, is_baseline"},
        {"metrics", "run_id, key, context, step, value"},
        {"histograms", "run_id, key, context, step, lo, hi, counts"},
        {"summary", "run_id, key, context, value FROM %s WHERE key NOT IN ('tokens_per_s', 'peak_rss_mib', 'wall_s')"},
    };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char from[256], cols[512], sql[2048];
        const char *t = tables[i][0], *c = tables[i][1];
        /* "COLS" or "COLS FROM %s WHERE ...": the FROM part for main and o */
        const char *fp = strstr(c, " FROM ");
        snprintf(cols, sizeof cols, "%.*s", fp ? (int)(fp - c) : (int)strlen(c), c);
        for (int side = 0; side < 2; side++) {
            char a[128], b[128], fa[300], fb[300];
            snprintf(a, sizeof a, "%s%s", side ? "o." : "main.", t);
            snprintf(b, sizeof b, "%s%s", side ? "main." : "o.", t);
            if (fp) {
                snprintf(fa, sizeof fa, fp + 6, a);
                snprintf(fb, sizeof fb, fp + 6, b);
            } else {
                snprintf(fa, sizeof fa, "%s", a);
                snprintf(fb, sizeof fb, "%s", b);
            }
            snprintf(sql, sizeof sql, "SELECT count(*) FROM (SELECT %s FROM %s EXCEPT SELECT %s FROM %s)", cols, fa,
                     cols, fb);
            cr_assert_eq(q_two(one, merged, sql), 0, "%s: rows of %s not in %s:\n%s", t, side ? merged : one,
                         side ? one : merged, sql);
        }
        snprintf(from, sizeof from, "SELECT (SELECT count(*) FROM main.%s) - (SELECT count(*) FROM o.%s)", t, t);
        cr_assert_eq(q_two(one, merged, from), 0, "%s: row counts differ", t);
    }
    cr_assert_gt(q_int(one, "SELECT count(*) FROM metrics"), 0);
}

/* The path of GNU parallel, or the test is skipped, saying how to get it. */
static void need_parallel(void) {
    char out[256];
    if (sh("command -v parallel && parallel --version", out, sizeof out) == 0 && strstr(out, "GNU parallel")) return;
    fprintf(stderr, "SKIPPED: GNU parallel is not installed (make deps installs it; as root: "
                    "apt-get install -y --no-install-recommends parallel)\n");
    cr_skip_test("GNU parallel is not installed: apt-get install -y --no-install-recommends parallel");
}

/* The README's GNU parallel recipe on the smoke sweep: one database per
 * run index, run by `parallel`, merged, equals one process's sweep. */
Test(sweep, gnu_parallel_shards_merge_into_the_one_process_result, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    need_parallel();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], cmd[3 * PATH_MAX + 512];
    smoke_path(smoke);
    cr_assert(strchr(smoke, '\'') == NULL);
    snprintf(args, sizeof args, "sweep '%s' --db one.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    /* as in the README: N from --count, run indices 0..N-1 through parallel, then merge */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && N=$('%s' sweep '%s' --count) && [ \"$N\" = 6 ] &&"
             " seq 0 $((N-1)) | parallel --will-cite -j 2 '%s' sweep '%s' --index {} --db shards/shard-{}.db &&"
             " '%s' merge merged.db shards/shard-*.db",
             t.dir, bin, smoke, bin, smoke, bin);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    cr_assert_not_null(strstr(out, "merged.db: 6 runs"), "%s", out);
    char one[160], merged[160], shard[160];
    snprintf(one, sizeof one, "%s/one.db", t.dir);
    snprintf(merged, sizeof merged, "%s/merged.db", t.dir);
    for (int i = 0; i < 6; i++) { /* each index ran in its own database */
        snprintf(shard, sizeof shard, "%s/shards/shard-%d.db", t.dir, i);
        cr_assert_eq(q_int(shard, "SELECT count(*) FROM runs"), 1, "%s", shard);
    }
    same_results(one, merged);
    tmp_rm(&t);
}

/* tools/slurm_sweep.sbatch end to end under a stand-in for sbatch that runs
 * each job at once (the array's tasks one after another, with
 * SLURM_ARRAY_TASK_ID set) and records its arguments. */
Test(sweep, slurm_array_script_merges_into_the_one_process_result, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char script[PATH_MAX], smoke[PATH_MAX], path[128], args[PATH_MAX + 256], out[16384], cmd[3 * PATH_MAX + 512];
    smoke_path(smoke);
    cr_assert_not_null(realpath("tools/slurm_sweep.sbatch", script), "tools/slurm_sweep.sbatch: %s", strerror(errno));
    cr_assert(strchr(script, '\'') == NULL && strchr(smoke, '\'') == NULL);
    cr_assert_eq(mkdir(strcat(strcpy(path, t.dir), "/bin"), 0755), 0);
    write_file(&t, "bin/sbatch",
               "#!/bin/bash\n"
               "# a stand-in for sbatch: runs the job now, in this directory\n"
               "echo \"sbatch $*\" >> \"$FAKE_DIR/sbatch.calls\"\n"
               "array=\n"
               "while [ $# -gt 0 ]; do case \"$1\" in --array=*) array=${1#--array=} ;; --*) ;; *) break ;; esac;"
               " shift; done\n"
               "script=$1; shift\n"
               "if [ -n \"$array\" ]; then\n"
               "  for ((i = ${array%-*}; i <= ${array#*-}; i++)); do\n"
               "    SLURM_ARRAY_TASK_ID=$i bash \"$script\" \"$@\" >> \"$FAKE_DIR/jobs.log\" 2>&1 || exit 1\n"
               "  done\n"
               "else\n"
               "  bash \"$script\" \"$@\" >> \"$FAKE_DIR/jobs.log\" 2>&1 || exit 1\n"
               "fi\n"
               "echo $((++n + 40))\n",
               path);
    cr_assert_eq(chmod(path, 0755), 0);
    snprintf(args, sizeof args, "sweep '%s' --db one.db", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && FAKE_DIR='%s' PATH='%s/bin':\"$PATH\" GATED='%s' '%s' --submit '%s' out --time=10"
             " || { cat '%s/jobs.log'; exit 1; }",
             t.dir, t.dir, t.dir, bin, script, smoke, t.dir);
    int rc = sh(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s\n%s", cmd, out);
    cr_assert_not_null(strstr(out, "6 runs: array job 41 (tasks 0-5), merge job 41"), "%s", out);
    char calls[4 * PATH_MAX + 256], *c = test_read_file(strcat(strcpy(path, t.dir), "/sbatch.calls"), NULL);
    snprintf(calls, sizeof calls, "sbatch --parsable --array=0-5 --time=10 %s %s out\n"
                                  "sbatch --parsable --dependency=afterok:41 --time=10 %s --merge %s out\n",
             script, smoke, script, smoke);
    cr_assert_str_eq(c, calls);
    free(c);
    char one[160], merged[160];
    snprintf(one, sizeof one, "%s/one.db", t.dir);
    snprintf(merged, sizeof merged, "%s/out/merged.db", t.dir);
    same_results(one, merged);
    /* a task run by hand without the array's id, and a merge with a shard missing, are refused */
    snprintf(cmd, sizeof cmd, "cd '%s' && rm out/shard-3.db && GATED='%s' bash '%s' --merge '%s' out", t.dir, bin,
             script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
    cr_assert_not_null(strstr(out, "out/shard-3.db is missing: run array task 3 again"), "%s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && GATED='%s' bash '%s' '%s' out", t.dir, bin, script, smoke);
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    tmp_rm(&t);
}

/* SIGINT stops a sweep after its cleanup: the child gets SIGTERM and
 * leaves its run killed (resumable), and the sweep exits 130. */
Test(sweep, sigint_exits_130_with_the_run_killed, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], db[160];
    write_file(&t, "long.yaml", "name: long\nbase: base.yaml\nset: {train.steps: 100000}\nvariants: [{label: a}]\n",
               path);
    snprintf(db, sizeof db, "%s/r.db", t.dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (chdir(t.dir) != 0)
            _exit(126);
        dup2(null, 1), dup2(null, 2);
        execl(bin, bin, "sweep", "long.yaml", "--db", "r.db", (char *)NULL);
        _exit(127);
    }
    long long rows = 0; /* polled without asserting: the schema may not be there yet */
    for (int i = 0; i < 600 && rows == 0; i++) {
        usleep(100000);
        sqlite3 *h;
        sqlite3_stmt *q;
        if (access(db, F_OK) != 0)
            continue;
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            sqlite3_close(h);
            continue;
        }
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM metrics", -1, &q, NULL) == SQLITE_OK) {
            if (sqlite3_step(q) == SQLITE_ROW)
                rows = sqlite3_column_int64(q, 0);
            sqlite3_finalize(q);
        }
        sqlite3_close(h);
    }
    kill(pid, SIGINT);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert_gt(rows, 0, "the run never wrote a metric");
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "wait status %d", ws);
    char st[256];
    q_text(db, "SELECT status || ':' || error_text FROM runs", st, sizeof st);
    cr_assert(strncmp(st, "killed:stopped by signal 15", 27) == 0, "%s", st);
    tmp_rm(&t);
}

static void counts(const char *db, long long c[7]) {
    static const char *const q[7] = {"SELECT count(*) FROM runs",
                                     "SELECT count(*) FROM metrics",
                                     "SELECT count(*) FROM summary",
                                     "SELECT count(*) FROM histograms",
                                     "SELECT count(*) FROM sweep_runs",
                                     "SELECT count(*) FROM environments",
                                     "SELECT total(value) FROM metrics WHERE value IS NOT NULL"};
    for (int i = 0; i < 7; i++)
        c[i] = q_int(db, q[i]);
}

Test(sweep, merge_is_idempotent_and_keeps_the_better_copy) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char smoke[PATH_MAX], args[PATH_MAX + 256], out[16384], a[160], b[160], m[160];
    smoke_path(smoke);
    snprintf(a, sizeof a, "%s/a.db", t.dir);
    snprintf(b, sizeof b, "%s/b.db", t.dir);
    snprintf(m, sizeof m, "%s/m.db", t.dir);
    snprintf(args, sizeof args, "sweep '%s' --db a.db --jobs 2", smoke);
    cr_assert_eq(gated(bin, &t, args, out, sizeof out), 0, "%s", out);

    /* the same input twice, and again in a second command: nothing changes */
    cr_assert_eq(gated(bin, &t, "merge m.db a.db a.db", out, sizeof out), 0, "%s", out);
    long long c1[7], c2[7], ca[7];
    counts(m, c1);
    counts(a, ca);
    cr_assert_eq(gated(bin, &t, "merge m.db a.db", out, sizeof out), 0, "%s", out);
    counts(m, c2);
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(c1[i], c2[i], "count %d", i);
        cr_assert_eq(c1[i], ca[i], "count %d", i);
    }
    cr_assert_not_null(strstr(out, "runs +0, metrics +0, summary +0, histograms +0, sweep_runs +0"), "%s", out);

    /* b: a copy with one run failed (ended later, one metric changed); the
     * finished copy wins in either merge order, and b's extra row is kept */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a, b);
    cr_assert_eq(system(cmd), 0);
    db_exec(b, "PRAGMA journal_mode=DELETE");
    db_exec(b, "UPDATE runs SET status = 'failed', ended_at = ended_at + 100 WHERE name = 'smoke-baseline-s1'");
    db_exec(b, "UPDATE metrics SET value = 99 WHERE step = 1 AND key = 'train_loss' AND run_id ="
               " (SELECT run_id FROM runs WHERE name = 'smoke-baseline-s1')");
    db_exec(b, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, 'extra', '', 0, 1"
               " FROM runs WHERE name = 'smoke-baseline-s1'");
    /* and one run finished later in b (a --force rerun): b's copy and values win */
    db_exec(b, "UPDATE runs SET ended_at = ended_at + 50 WHERE name = 'smoke-baseline-s2'");
    db_exec(b, "UPDATE metrics SET value = 42 WHERE step = 1 AND key = 'train_loss' AND run_id ="
               " (SELECT run_id FROM runs WHERE name = 'smoke-baseline-s2')");
    static const char *const orders[] = {"merge ab.db a.db b.db", "merge ba.db b.db a.db"};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(gated(bin, &t, orders[k], out, sizeof out), 0, "%s", out);
        char p[160], txt[256];
        snprintf(p, sizeof p, "%s/%s.db", t.dir, k ? "ba" : "ab");
        q_text(p, "SELECT status FROM runs WHERE name = 'smoke-baseline-s1'", txt, sizeof txt);
        cr_assert_str_eq(txt, "finished", "%s", orders[k]);
        q_text(p,
               "SELECT value FROM metrics m JOIN runs r USING (run_id) WHERE r.name = 'smoke-baseline-s1'"
               " AND m.key = 'train_loss' AND m.step = 1",
               txt, sizeof txt);
        cr_assert_str_neq(txt, "99.0", "%s: the failed copy's metric replaced the finished one", orders[k]);
        cr_assert_eq(q_int(p, "SELECT count(*) FROM metrics WHERE key = 'extra'"), 1, "%s", orders[k]);
        q_text(p,
               "SELECT value FROM metrics m JOIN runs r USING (run_id) WHERE r.name = 'smoke-baseline-s2'"
               " AND m.key = 'train_loss' AND m.step = 1",
               txt, sizeof txt);
        cr_assert_str_eq(txt, "42.0", "%s", orders[k]);
        cr_assert_eq(q_int(p, "SELECT count(*) FROM runs"), 6);
        cr_assert_eq(q_int(p, "SELECT count(*) FROM metrics"), ca[1] + 1);
    }

    /* bad inputs: exit 2, output untouched */
    long long before[7], after[7];
    counts(m, before);
    char junk[128];
    write_file(&t, "junk.db", "this is not a database, just some text long enough to look like a header....\n", junk);
    cr_assert_eq(gated(bin, &t, "merge m.db junk.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "junk.db: not a gated database"), "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db missing.db", out, sizeof out), 2, "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db m.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "m.db: is the output database"), "%s", out);
    cr_assert_eq(gated(bin, &t, "merge m.db", out, sizeof out), 2, "%s", out);
    counts(m, after);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(before[i], after[i]);
    tmp_rm(&t);
}

/* merge_from and store_sweep_record directly, on hand-made rows. */
Test(sweep, store_sweep_record_and_merge_api) {
    Tmp t;
    tmp_dir(&t);
    char p1[160], p2[160], err[512];
    snprintf(p1, sizeof p1, "%s/1.db", t.dir);
    snprintf(p2, sizeof p2, "%s/2.db", t.dir);
    Store *s;
    cr_assert_eq(store_open(&s, p1, err, sizeof err), 0, "%s", err);
    static const char A[] = "aaaaaaaaaaaaaaaa", B[] = "bbbbbbbbbbbbbbbb", C[] = "cccccccccccccccc",
                      D[] = "dddddddddddddddd";
    StoreSweepRun r[3] = {{A, "x", 1, 0, 1}, {B, "y", 1, 1, 0}, {C, "z", 1, 2, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 3, r, 3), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 3);
    /* the sweep changed: index 1 is another run now, and it has 2 runs */
    StoreSweepRun r2[1] = {{D, "y2", 1, 1, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 2, r2, 1), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    cr_assert_eq(store_count_rows(s, "nonsense"), -1);
    char buf[64];
    cr_assert_null(store_run_code_version(s, A, buf, sizeof buf));
    Provenance pv = {.host = "h", .code_version = "c0de", .git_dirty = 0};
    cr_assert_eq(store_run_begin(s, A, "n", "{}", 1, 1, &pv, NULL), 0, "%s", store_errmsg(s));
    cr_assert_str_eq(store_run_code_version(s, A, buf, sizeof buf), "c0de");
    cr_assert_eq(store_metric(s, A, "k", NULL, 0, 1.5), 0);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), -2);
    cr_assert_str_eq(strstr(err, "1.db"), "1.db: is the output database");
    store_close(s);

    cr_assert_eq(store_open(&s, p2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(err, "");
    cr_assert_eq(store_count_rows(s, "runs"), 1);
    cr_assert_eq(store_count_rows(s, "metrics"), 1); /* buffered in the source's store, flushed at close */
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "runs"), 1);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 2);
    char missing[200];
    snprintf(missing, sizeof missing, "%s/none.db", t.dir);
    cr_assert_eq(merge_from(s, missing, err, sizeof err), -2);
    cr_assert_not_null(strstr(err, "none.db: No such file or directory"), "%s", err);
    cr_assert_neq(access(missing, F_OK), 0, "merge created its input");
    store_close(s);

    /* a database from before sweep_runs existed gains the table at open */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(p1, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "DROP TABLE sweep_runs", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(store_open(&s, p2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(merge_from(s, p1, err, sizeof err), 0, "%s", err); /* an input without it merges */
    store_close(s);
    cr_assert_eq(store_open(&s, p1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    store_close(s);
    tmp_rm(&t);
}

/* ------------------------------------------------------------------ */
/* hostile names and labels                                            */
/* ------------------------------------------------------------------ */

/* No file named PWNED* anywhere under the test directory. */
static void assert_not_pwned(const Tmp *t, const char *when) {
    char cmd[256], out[1024];
    snprintf(cmd, sizeof cmd, "find '%s' -name 'PWNED*'", t->dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, "", "%s: a shell command ran: %s", when, out);
}

static int count_char(const char *text, char c) {
    int n = 0;
    for (; *text; text++)
        n += *text == c;
    return n;
}

static int raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            return 1;
    return 0;
}

/* A label "x\n!touch PWNED\n" would be a gnuplot shell line if it reached a
 * plot script: refused in a sweep file and in `gated train --name`; put
 * into a database by SQL it is refused by `gated merge`, and `gated report`
 * and `gated ls` on that database quote it where it is written. */
Test(sweep, hostile_labels_and_names_run_nothing, .timeout = 120) {
    const char *bin = sweep_gated_bin();
    Tmp t;
    tmp_dir(&t);
    char path[128], out[16384], cmd[1024], p[256];

    /* through a sweep file, then a report */
    write_file(&t, "s.yaml",
               "name: h\nbase: base.yaml\nvariants:\n  - label: baseline\n  - label: \"x\\n!touch PWNED\\n\"\n"
               "    set: {model.gate.position: sdpa}\nbaseline: baseline\n",
               path);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' sweep s.yaml --db r.db && '%s' report --db r.db --out rep", t.dir, bin,
             bin);
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "s.yaml:5:12: error: variants[1].label: \"x\\x0a!touch PWNED\\x0a\" contains a "
                                   "control character (\\x0a at byte 2)"),
                       "%s", out);
    snprintf(p, sizeof p, "%s/r.db", t.dir);
    cr_assert_neq(access(p, F_OK), 0, "the refused sweep created its database");
    assert_not_pwned(&t, "sweep + report");

    /* gated train --name */
    static const char *const names[][2] = {{"a\\nb", "\"a\\x0ab\""}, {"a\\033[2Jb", "\"a\\x1b[2Jb\""}};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "train base.yaml --name \"$(printf '%s')\" --db r.db", names[i][0]);
        cr_assert_eq(gated(bin, &t, args, out, sizeof out), 2, "%s", out);
        char want[128];
        snprintf(want, sizeof want, "gated train: --name: %s contains a control character", names[i][1]);
        cr_assert_not_null(strstr(out, want), "%s", out);
        cr_assert(!raw_control(out), "the message echoed a control character: %s", out);
        cr_assert_neq(access(p, F_OK), 0, "a refused train created its database");
    }

    /* a real sweep, then hostile text put into its database by SQL */
    write_file(&t, "ok.yaml",
               "name: h\nbase: base.yaml\nvariants:\n  - label: baseline\n  - label: G1\n"
               "    set: {model.gate.position: sdpa}\nbaseline: baseline\n",
               path);
    cr_assert_eq(gated(bin, &t, "sweep ok.yaml --db h.db", out, sizeof out), 0, "%s", out);
    char h[160], m[160];
    snprintf(h, sizeof h, "%s/h.db", t.dir);
    snprintf(m, sizeof m, "%s/m.db", t.dir);
    db_exec(h, "UPDATE sweep_runs SET label = 'x' || char(10) || '!touch PWNED' || char(10) WHERE label = 'G1'");
    db_exec(h, "UPDATE runs SET name = 'n' || char(27) || '[2J' || char(10) || '!touch PWNED2' WHERE name = 'h-G1-s7'");

    /* ls quotes the name: one line per run, no raw escape code */
    cr_assert_eq(gated(bin, &t, "ls --db h.db", out, sizeof out), 0, "%s", out);
    cr_assert(!raw_control(out), "raw control byte in ls:\n%s", out);
    cr_assert_not_null(strstr(out, "n\\x1b[2J\\x0a!touch PWNED2"), "%s", out);
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, 3, "%s", out);

    /* report on it: the label is quoted in every plot script and table */
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep", out, sizeof out), 0, "%s", out);
    assert_not_pwned(&t, "report");
    snprintf(p, sizeof p, "%s/rep/plots/h-val_loss.gp", t.dir);
    char *gp = test_read_file(p, NULL);
    cr_assert_not_null(strstr(gp, "title 'x\\x0a!touch PWNED\\x0a'"), "%s", gp);
    cr_assert_null(strstr(gp, "\n!"), "a shell line in the plot script:\n%s", gp);
    free(gp);
    snprintf(p, sizeof p, "%s/rep/report.md", t.dir);
    char *md = test_read_file(p, NULL);
    cr_assert_not_null(strstr(md, "| x\\\\x0a!touch PWNED\\\\x0a |"), "%s", md);
    cr_assert(!raw_control(md), "raw control byte in report.md");
    free(md);
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep --format tex", out, sizeof out), 0, "%s", out);
    cr_assert_eq(gated(bin, &t, "report --db h.db --out rep --format csv", out, sizeof out), 0, "%s", out);
    snprintf(p, sizeof p, "%s/rep/h.csv", t.dir);
    char *csv = test_read_file(p, NULL);
    cr_assert_not_null(strstr(csv, "\nh,x\\x0a!touch PWNED\\x0a,"), "%s", csv);
    cr_assert_eq(count_char(csv, '\n'), 3, "%s", csv);
    free(csv);
    assert_not_pwned(&t, "report tex / csv");

    /* merge refuses the input, naming the row; nothing is merged */
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "h.db: refused, nothing merged: runs row "), "%s", out);
    cr_assert_not_null(strstr(out, ": name \"n\\x1b[2J\\x0a!touch PWNED2\" contains a control character"), "%s", out);
    cr_assert(!raw_control(out), "%s", out);
    cr_assert_eq(q_int(m, "SELECT count(*) FROM runs"), 0);
    db_exec(h, "UPDATE runs SET name = 'h-G1-s7' WHERE name LIKE 'n%'");
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, ": label \"x\\x0a!touch PWNED\\x0a\" contains a control character"), "%s", out);
    cr_assert_eq(q_int(m, "SELECT count(*) FROM runs"), 0);
    cr_assert_eq(q_int(m, "SELECT count(*) FROM sweep_runs"), 0);

    /* other text is merged, and shown escaped */
    db_exec(h, "UPDATE sweep_runs SET label = 'G1' WHERE label LIKE 'x%'");
    db_exec(h, "UPDATE runs SET host = 'h' || char(27) || ']0;x' || char(7) WHERE name = 'h-G1-s7'");
    cr_assert_eq(gated(bin, &t, "merge m.db h.db", out, sizeof out), 0, "%s", out);
    cr_assert_eq(gated(bin, &t, "show h-G1-s7 --db m.db", out, sizeof out), 0, "%s", out);
    cr_assert(!raw_control(out), "raw control byte in show:\n%s", out);
    cr_assert_not_null(strstr(out, "host        h\\x1b]0;x\\x07\n"), "%s", out);
    assert_not_pwned(&t, "merge");
    tmp_rm(&t);
}
