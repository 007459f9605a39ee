/*
 * test_eval.c — RoPE scaling functions against hand-computed values, the
 * config keys that carry them, long-context evaluation and continued
 * training (train.init_from), on the synthetic corpus.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/config.h"
#include "run/eval.h"
#include "nn/rope.h"
#include "run/store.h"
#include "testutil.h"
#include "run/train.h"

/* ------------------------------------------------------------ rope */

static void check_inv(const RopeScaling *r, const double *want) {
    double inv[4];
    rope_inv_freq(r, 8, inv);
    for (int k = 0; k < 4; k++)
        cr_assert(fabs(inv[k] - want[k]) <= 1e-9 * want[k], "kind %d k %d: %.10g, want %.10g", r->kind, k, inv[k],
                  want[k]);
}

/* d = 8, base 10^4: theta_k = 10^(-k) */
Test(rope, none_and_linear) {
    RopeScaling r = rope_plain(10000);
    check_inv(&r, (double[]){1, 0.1, 0.01, 0.001});
    r.kind = ROPE_LINEAR, r.factor = 4;
    check_inv(&r, (double[]){0.25, 0.025, 0.0025, 0.00025});
    cr_assert_eq(rope_mscale(&r), 1.0);
}

/* NTK: base' = 10^4 * 4^(8/6); theta_k = 10^(-k) * 4^(-k/3): the highest
 * frequency kept, the lowest divided by exactly s. */
Test(rope, ntk_aware_base) {
    RopeScaling r = rope_plain(10000);
    r.kind = ROPE_NTK, r.factor = 4;
    check_inv(&r, (double[]){1, 0.1 * 0.62996052494743658, 0.01 * 0.39685026299204984, 0.00025});
}

/* YaRN, L_train = 128, s = 4, alpha 1, beta 32: r_k = 128 theta_k / 2pi =
 * 20.3718327, 2.03718327, 0.2037183, ...; gamma = (r - 1) / 31 = 0.62489783, 0.03345752,
 * 0, 0; theta' = theta (0.25 + 0.75 gamma). */
Test(rope, yarn_ramp_and_temperature) {
    cr_assert_eq(rope_yarn_ramp(0.5, 1, 32), 0.0);
    cr_assert_eq(rope_yarn_ramp(40, 1, 32), 1.0);
    cr_assert(fabs(rope_yarn_ramp(16.5, 1, 32) - 0.5) < 1e-15);
    RopeScaling r = {ROPE_YARN, 10000, 4, 128, 1, 32};
    check_inv(&r, (double[]){0.718673372155547, 0.0275093143667168, 0.0025, 0.00025});
    cr_assert(fabs(rope_mscale(&r) - 1.1386294361119891) < 1e-12);
    r.factor = 1;
    cr_assert_eq(rope_mscale(&r), 1.0, "no temperature without extension");
    /* tables carry the temperature: t = 0 gives m, t = 1 gives m cos(theta'_0) */
    r.factor = 4;
    real c[3 * 4], s[3 * 4];
    cr_assert_eq(rope_tables(c, s, 3, 8, &r), 0);
    cr_assert(fabs(c[0] - 1.1386294) < 1e-6 && fabs(s[0]) < 1e-7);
    cr_assert(fabs(c[4] - 1.1386294 * cos(0.718673372)) < 1e-6, "cos %.7f", (double)c[4]);
    cr_assert(fabs(s[4 + 2] - 1.1386294 * sin(0.0025)) < 1e-7);
}

/* the new keys: parsed, range-checked, and left out of the run id while at
 * their defaults (earlier runs keep their ids) */
Test(rope, config_keys_and_run_ids) {
    Config c;
    ConfigError e;
    config_defaults(&c);
    char before[4096], id0[17];
    config_to_json(&c, before, sizeof before);
    cr_assert_null(strstr(before, "rope_scaling"), "a default new key changed the JSON: %s", before);
    cr_assert_null(strstr(before, "init_from"));
    store_run_id(before, id0);
    cr_assert_eq(config_set(&c, "model.rope_scaling=yarn", &e), 0);
    cr_assert_eq(config_set(&c, "model.rope_factor=4", &e), 0);
    cr_assert_eq(config_set(&c, "train.init_from=long-s{1}", &e), 0);
    cr_assert_neq(config_set(&c, "model.rope_scaling=ntk-by-parts", &e), 0);
    cr_assert(strstr(e.msg, "expected one of none, linear, ntk, yarn"), "%s", e.msg);
    cr_assert_neq(config_set(&c, "model.rope_factor=0.5", &e), 0);
    char after[4096];
    config_to_json(&c, after, sizeof after);
    cr_assert(strstr(after, "\"model.rope_scaling\":\"yarn\",\"model.rope_factor\":4"), "%s", after);
    cr_assert(strstr(after, "\"train.init_from\":\"long-s{1}\""), "%s", after);
    /* and back */
    Config d;
    config_defaults(&d);
    cr_assert_eq(config_from_json(&d, after, &e), 0, "%s", e.msg);
    char again[4096];
    config_to_json(&d, again, sizeof again);
    cr_assert_str_eq(again, after);
    cr_assert_eq(config_set(&d, "model.yarn_alpha=40", &e), 0);
    cr_assert_neq(config_resolve(&d, &e), 0);
    cr_assert(strstr(e.msg, "model.yarn_alpha must be below model.yarn_beta"), "%s", e.msg);
}

/* ------------------------------------------------------------ eval */

static Config synth(int T, int steps) {
    Config c = tiny_config(257, 32, 2, 4, 2, 48, T, 4);
    c.corpus = CORPUS_SYNTHETIC;
    c.steps = steps;
    c.warmup = 3;
    c.eval_every = steps;
    c.eval_windows = 4;
    c.lr = 1e-2;
    c.min_lr = 1e-3;
    return c;
}

static double metric(const char *db, const char *key, const char *ctx, int *found) {
    sqlite3 *h;
    sqlite3_stmt *st;
    double v = NAN;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT value FROM metrics WHERE key = ?1 AND context = ?2 ORDER BY step DESC",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ctx, -1, SQLITE_STATIC);
    *found = sqlite3_step(st) == SQLITE_ROW;
    if (*found) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void train_ok(const Config *c, const char *db, const char *name, const char *ck) {
    TrainOpts o = {db, name, "data", "test", 0, 0, ck, 0, 0};
    int saved = quiet_begin();
    int rc = train_run(c, &o);
    quiet_end(saved);
    cr_assert_eq(rc, 0, "training %s failed", name);
}

Test(eval, lengths_scalings_and_stored_metrics, .timeout = 120) {
    set_threads(1);
    char dir[] = "/tmp/gated-eval-XXXXXX", db[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/e.db", dir);
    Config c = synth(32, 30);
    resolve_or_die(&c);
    train_ok(&c, db, "short", dir);
    int lengths[] = {32, 128};
    EvalOpts o = {db, "data", dir, lengths, 2, ROPE_NONE, 0, 4, 1, 0, 0, NULL, 0, NULL, 0};
    int saved = quiet_begin();
    int rc0 = eval_run("short", &o);
    o.scaling = ROPE_YARN;
    int rc1 = eval_run("short", &o);
    quiet_end(saved);
    cr_assert_eq(rc0, 0);
    cr_assert_eq(rc1, 0);
    int f;
    double l32 = metric(db, "eval_loss", "split=val,len=32,scaling=none,factor=1", &f);
    cr_assert(f && isfinite(l32) && l32 < log(257.0), "loss at the training length %g", l32);
    double p32 = metric(db, "eval_ppl", "split=val,len=32,scaling=none,factor=1", &f);
    cr_assert(f && fabs(p32 - exp(l32)) < 1e-9 * p32);
    /* at the training length YaRN's factor is 1: the same model, the same loss */
    double y32 = metric(db, "eval_loss", "split=val,len=32,scaling=yarn,factor=1", &f);
    cr_assert(f && y32 == l32, "yarn at 1x %.9g vs none %.9g", y32, l32);
    /* at 4x it is s = 4, a different model */
    double n128 = metric(db, "eval_loss", "split=val,len=128,scaling=none,factor=1", &f);
    cr_assert(f);
    double y128 = metric(db, "eval_loss", "split=val,len=128,scaling=yarn,factor=4", &f);
    cr_assert(f && isfinite(y128) && y128 != n128, "yarn %g none %g", y128, n128);
    double w = metric(db, "eval_windows", "split=val,len=128,scaling=yarn,factor=4", &f);
    cr_assert(f && w == 4, "windows %g", w);
    double fa = metric(db, "eval_f_attn", "split=val,len=128,scaling=none,factor=1", &f);
    cr_assert(f && fa > 0 && fa < 1);
    /* bad input: an unknown run, a length no document holds */
    saved = quiet_begin();
    int rc2 = eval_run("no-such-run", &o);
    int big[] = {100000};
    o.lengths = big, o.nlengths = 1;
    int rc3 = eval_run("short", &o);
    quiet_end(saved);
    cr_assert_eq(rc2, 2);
    cr_assert_eq(rc3, 2);
}

Test(eval, continued_training_starts_from_the_weights, .timeout = 120) {
    set_threads(1);
    char dir[] = "/tmp/gated-cont-XXXXXX", db[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/c.db", dir);
    Config a = synth(32, 30);
    resolve_or_die(&a);
    train_ok(&a, db, "parent", dir);
    /* 4x the length, a larger RoPE base, weights from "parent" */
    Config b = synth(128, 2);
    b.batch = 1;
    b.rope_base = 1e6;
    snprintf(b.init_from, sizeof b.init_from, "parent");
    resolve_or_die(&b);
    train_ok(&b, db, "child", dir);
    Config fresh = b;
    fresh.init_from[0] = 0;
    train_ok(&fresh, db, "fresh", dir);
    /* step-1 training losses: the child starts where the parent was */
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT r.name, m.value FROM metrics m JOIN runs r ON r.run_id = m.run_id "
                                       "WHERE m.key = 'train_loss' AND m.step = 1 ORDER BY r.name",
                                    -1, &st, NULL),
                 SQLITE_OK);
    double v[3];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 3) v[n++] = sqlite3_column_double(st, 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
    cr_assert_eq(n, 3);
    /* ordered by name: child, fresh, parent */
    cr_assert(v[0] < v[1] - 1.0, "child first loss %.3f vs fresh %.3f", v[0], v[1]);
    /* another architecture is refused with exit 2 */
    Config bad = b;
    bad.d_model = 64;
    bad.resolved = 0;
    bad.d_ff = 0;
    resolve_or_die(&bad);
    TrainOpts o = {db, "bad", "data", "test", 0, 0, dir, 0, 0};
    int saved = quiet_begin();
    int rc = train_run(&bad, &o);
    quiet_end(saved);
    cr_assert_eq(rc, 2);
}

/* eval and train.init_from read checkpoints too: a corrupt one is refused
 * (exit 2), never evaluated or trained from */
Test(eval, a_corrupt_checkpoint_is_refused, .timeout = 120) {
    set_threads(1);
    char dir[] = "/tmp/gated-evck-XXXXXX", db[128], ck[160], id[17];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/e.db", dir);
    Config c = synth(32, 10);
    resolve_or_die(&c);
    train_ok(&c, db, "src", dir);
    free(store_config_json(&c, id));
    test_ckpt_path(db, dir, id, ck, sizeof ck);
    FILE *f = fopen(ck, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, -5000, SEEK_END), 0); /* inside the second moments */
    int byte = fgetc(f);
    cr_assert_eq(fseek(f, -5000, SEEK_END), 0);
    fputc(byte ^ 0x01, f);
    cr_assert_eq(fclose(f), 0);
    int lengths[] = {32};
    EvalOpts o = {db, "data", dir, lengths, 1, ROPE_NONE, 0, 2, 1, 0, 0, NULL, 0, NULL, 0};
    Config child = synth(32, 2);
    snprintf(child.init_from, sizeof child.init_from, "src");
    resolve_or_die(&child);
    TrainOpts t = {db, "child", "data", "test", 0, 0, dir, 0, 0};
    int saved = quiet_begin();
    int rc_eval = eval_run("src", &o);
    int rc_child = train_run(&child, &t);
    quiet_end(saved);
    cr_assert_eq(rc_eval, 2);
    cr_assert_eq(rc_child, 2);
    int found;
    metric(db, "eval_loss", "split=val,len=32,scaling=none,factor=1", &found);
    cr_assert(!found, "a corrupt checkpoint was evaluated");
}
