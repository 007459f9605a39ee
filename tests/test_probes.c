/*
 * test_probes.c — the attention-row probes (probes.h): mass on position 0,
 * mass on nothing, Sink_1^eps and the residual stream's kurtosis, on
 * hand-made weight matrices whose rows do not sum to 1 and a hand-made
 * residual stream; the probes of a real forward against F-Attn; and the
 * rows a short training run stores.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "nn/model.h"
#include "nn/rng.h"
#include "nn/variant.h"
#include "run/probes.h"
#include "run/train.h"
#include "testutil.h"

/* A model of L layers and H query heads (2 KV heads), T = 4, after one
 * forward of fixed tokens. */
static void rows_model_norm(Model *m, int L, int H, int normalizer) {
    set_threads(1);
    Config c = tiny_config(8, 8, L, H, 2, 8, 4, 1);
    c.qk_norm = 0;
    c.attn.normalizer = normalizer;
    resolve_or_die(&c);
    cr_assert_eq(cfg_model_init(m, &c), 0);
    int tok[4] = {1, 2, 3, 4}, tgt[4] = {2, 3, 4, 5};
    cr_assert(isfinite(model_forward(m, tok, tgt, 1, 4)));
}

static void rows_model(Model *m, int L, int H) { rows_model_norm(m, L, H, AN_SOFTMAX); }

/* Hand-made 4 x 4 weights (row i: query i; the 9s above the diagonal must
 * not be read).  A: rows sum to less than 1 (softmax1, sink_logit, kv_bias
 * leave mass unassigned); B: more than 1 (sigmoid); C: little mass on
 * position 0 from queries i >= 1, but all of query 0's. */
static const real PA[16] = {0.5f, 9, 9, 9, 0.6f, 0.2f, 9, 9, 0.3f, 0.1f, 0.1f, 9, 0.4f, 0.2f, 0.1f, 0.1f};
static const real PB[16] = {0.9f, 9, 9, 9, 0.1f, 0.9f, 9, 9, 0.05f, 0.7f, 0.6f, 9, 0.05f, 0.5f, 0.5f, 0.5f};
static const real PC[16] = {1, 9, 9, 9, 0.1f, 0.9f, 9, 9, 0.1f, 0.4f, 0.5f, 9, 0.1f, 0.3f, 0.3f, 0.3f};

static void near(double got, double want, const char *what) {
    cr_assert(fabs(got - want) < 1e-6, "%s: %.8f, want %.8f", what, got, want);
}

Test(probes_rows, hand_made_rows_that_do_not_sum_to_one) {
    Model m;
    rows_model(&m, 2, 2);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    cr_assert(isnan(probe_mass0(&p, 0, 0)) && isnan(probe_sink_eps_share(&p, -1)), "nothing counted yet");
    probes_rows_add(&p, 0, 0, PA, 4);
    probes_rows_add(&p, 0, 1, PB, 4);
    probes_rows_add(&p, 1, 0, PC, 4);
    probes_rows_add(&p, 1, 1, PB, 4);
    /* A: p_i0 for i >= 1 = 0.6, 0.3, 0.4; row sums 0.8, 0.5, 0.8; alpha over all queries (0.5 + 1.3) / 4 */
    near(probe_mass0(&p, 0, 0), 1.3 / 3, "A mass on 0");
    near(probe_mass_none(&p, 0, 0), (0.2 + 0.5 + 0.2) / 3, "A mass on nothing");
    near(probe_first_alpha(&p, 0, 0), 1.8 / 4, "A alpha");
    /* B: p_i0 = 0.1, 0.05, 0.05; row sums 1.0, 1.35, 1.55: negative mass on nothing; alpha (0.9 + 0.2) / 4 */
    near(probe_mass0(&p, 0, 1), 0.2 / 3, "B mass on 0");
    near(probe_mass_none(&p, 0, 1), (0 - 0.35 - 0.55) / 3, "B mass on nothing");
    near(probe_first_alpha(&p, 0, 1), 1.1 / 4, "B alpha");
    /* C: 0.1 from each query i >= 1, but alpha counts query 0 (Gu et al.): 1.3 / 4 = 0.325 > eps */
    near(probe_mass0(&p, 1, 0), 0.1, "C mass on 0");
    near(probe_mass_none(&p, 1, 0), 0, "C mass on nothing");
    near(probe_first_alpha(&p, 1, 0), 1.3 / 4, "C alpha");
    /* Sink_1^0.3: layer 0 has A (0.45) over, B (0.275) under; layer 1 C (0.325) over, B under */
    near(probe_sink_eps_share(&p, 0), 0.5, "Sink_1 layer 0");
    near(probe_sink_eps_share(&p, 1), 0.5, "Sink_1 layer 1");
    near(probe_sink_eps_share(&p, -1), 0.5, "Sink_1 model");
    /* a second window of A on head (0, 1): means over both windows' queries */
    probes_rows_add(&p, 0, 1, PA, 4);
    near(probe_mass0(&p, 0, 1), (0.2 + 1.3) / 6, "B then A mass on 0");
    near(probe_mass_none(&p, 0, 1), (-0.9 + 0.9) / 6, "B then A mass on nothing");
    near(probe_first_alpha(&p, 0, 1), (1.1 + 1.8) / 8, "B then A alpha"); /* 0.3625: now over */
    near(probe_sink_eps_share(&p, 0), 1.0, "Sink_1 layer 0, both heads over");
    near(probe_sink_eps_share(&p, -1), 0.75, "Sink_1 model, 3 of 4 heads");
    probes_free(&p);
    model_free(&m);
}

Test(probes_rows, residual_kurtosis_hand_made) {
    Model m;
    rows_model(&m, 2, 2);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    /* 5 + (-2, 0 x 6, 2): mean 5, m2 = 8/8 = 1, m4 = 32/8 = 4 -> kurtosis 4 (the shift must not matter) */
    real x[8] = {3, 5, 5, 5, 5, 5, 5, 7};
    probes_kurtosis_add(&p, 0, x, 8);
    near(probe_resid_kurtosis(&p, 0), 4, "one window");
    /* (-1, 1, -1, 1): m2 = m4 = 1 -> 1; the layer's value is the mean over windows */
    real y[4] = {-1, 1, -1, 1};
    probes_kurtosis_add(&p, 0, y, 4);
    near(probe_resid_kurtosis(&p, 0), 2.5, "mean of two windows");
    /* a constant window has no kurtosis and is not counted */
    real z[4] = {2, 2, 2, 2};
    probes_kurtosis_add(&p, 0, z, 4);
    near(probe_resid_kurtosis(&p, 0), 2.5, "constant window skipped");
    cr_assert(isnan(probe_resid_kurtosis(&p, 1)), "layer 1: nothing counted");
    probes_free(&p);
    model_free(&m);
}

/* Bigram-Backcopy mass on nothing by query type.  Task: tokens 0..4, BOS
 * 5, trigger 1; the window BOS 1 2 1 3 1 has trigger queries at 3 and 5
 * and other queries at 1, 2, 4 (position 1 has only BOS before it).  Row i
 * spreads S_i evenly over its keys: S = 1, .9, .8, .5, .7, .4. */
Test(probes_rows, bigram_backcopy_mass_on_nothing_by_query_type) {
    Model m;
    rows_model(&m, 2, 2);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    static const int w[6] = {5, 1, 2, 1, 3, 1};
    static const unsigned char trig[6] = {0, 1, 0, 0, 0, 0};
    real P[36];
    probes_bb_rows_add(&p, 0, 0, P, 6, w); /* a no-op before probes_bb_init */
    cr_assert(isnan(probe_bb_none(&p, 0, 0, BB_OTHER)));
    cr_assert_eq(probes_bb_init(&p, &m, trig, 6), 0);
    static const double S[6] = {1, .9, .8, .5, .7, .4};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) P[i * 6 + j] = j <= i ? (real)(S[i] / (i + 1)) : 9;
    probes_bb_rows_add(&p, 1, 1, P, 6, w);
    near(probe_bb_none(&p, 1, 1, BB_OTHER), (.1 + .2 + .3) / 3, "other queries 1, 2, 4");
    near(probe_bb_none(&p, 1, 1, BB_TRIGGER), (.5 + .6) / 2, "trigger queries 3, 5");
    cr_assert(isnan(probe_bb_none(&p, 0, 0, BB_OTHER)), "head (0, 0): nothing counted");
    probes_free(&p);
    model_free(&m);
}

/* On a real forward (4 query heads reading 2 KV heads), the weights of
 * softmax attention: mass on 0 is F-Attn, mass on nothing 0 (rounding);
 * the kurtosis is that of the layer's output residual stream. */
Test(probes_rows, real_forward_agrees_with_f_attn) {
    Model m;
    rows_model(&m, 2, 4);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    probes_accumulate(&p, &m);
    cr_assert_eq(probes_rows_accumulate(&p, &m, NULL), 0);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 4; h++) {
            double f = probe_fattn_head(&p, l, h), m0 = probe_mass0(&p, l, h), none = probe_mass_none(&p, l, h);
            cr_assert(fabs(m0 - f) < 1e-6, "layer %d head %d: mass on 0 %.8f, F-Attn %.8f", l, h, m0, f);
            cr_assert(fabs(none) < 1e-6, "layer %d head %d: mass on nothing %.3g", l, h, none);
            cr_assert(f > 0.05 && f < 0.95, "layer %d head %d: F-Attn %.4f (a degenerate state tests nothing)", l, h,
                      f);
        }
    Probes q;
    cr_assert_eq(probes_init(&q, &m), 0);
    probes_kurtosis_add(&q, 1, m.x_out, (size_t)4 * m.C);
    near(probe_resid_kurtosis(&p, 1), probe_resid_kurtosis(&q, 1), "layer 1 reads the model's output");
    cr_assert(probe_resid_kurtosis(&p, 0) >= 1, "kurtosis >= 1 always");
    probes_free(&q);
    probes_free(&p);
    model_free(&m);
}

/* Every normaliser: F-Attn, read from the kernel's saved row statistic
 * (attn_weight), is the mass on 0 read from the reference's weights; rows
 * that need not sum to 1 leave a mass on nothing (at initialisation the
 * virtual key of softmax1, sink_logit and kv_bias has logit 0, and
 * sigmoid's rows are far from 1), rows that do leave none.  Tolerance 1e-4:
 * in float, softpick's e^s - e^-m cancels at the small scores of an
 * initial model (the kernel's and the reference's roundings differ by
 * ~5e-6 here), the other rows agree to ~1e-7. */
Test(probes_rows, every_normaliser_f_attn_is_the_mass_on_0) {
    for (int a = 0; a < AN__COUNT; a++) {
        Model m;
        rows_model_norm(&m, 2, 4, a);
        Probes p;
        cr_assert_eq(probes_init(&p, &m), 0);
        probes_accumulate(&p, &m);
        cr_assert_eq(probes_rows_accumulate(&p, &m, NULL), 0);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 4; h++) {
                double f = probe_fattn_head(&p, l, h), m0 = probe_mass0(&p, l, h), none = probe_mass_none(&p, l, h);
                cr_assert(fabs(m0 - f) < 1e-4, "%s layer %d head %d: mass on 0 %.8f, F-Attn %.8f", attn_norms[a].name,
                          l, h, m0, f);
                if (attn_norms[a].sums_to_one)
                    cr_assert(fabs(none) < 1e-6, "%s: mass on nothing %.3g", attn_norms[a].name, none);
                else
                    cr_assert(fabs(none) > 1e-3, "%s: mass on nothing %.3g", attn_norms[a].name, none);
            }
        probes_free(&p);
        model_free(&m);
    }
}

/* Latent KV (MLA, d_head 2, d_c 4, d_R 2; softmax and sink_logit): the
 * probes read the scored queries and keys (width d_head + d_R) and the
 * zero-padded values, so F-Attn from the kernel's row statistic is the
 * reference's mass on 0 and softmax rows leave no mass on nothing (reading
 * the heads layout's q/k, or scaling by 1/sqrt(d_head), breaks both). */
Test(probes_rows, latent_kv_f_attn_is_the_mass_on_0) {
    const int norms[] = {AN_SOFTMAX, AN_SINK_LOGIT};
    for (size_t k = 0; k < sizeof norms / sizeof norms[0]; k++) {
        set_threads(1);
        Config c = tiny_config(8, 8, 2, 4, 4, 8, 4, 1);
        c.qk_norm = 0;
        c.attn.normalizer = norms[k];
        c.attn.kv = KV_LATENT, c.attn.d_c = 4, c.attn.d_R = 2;
        resolve_or_die(&c);
        Model m;
        cr_assert_eq(cfg_model_init(&m, &c), 0);
        Rng r = rng_seed(12);
        for (int i = 0; i < m.p.n; i++)
            if (m.p.t[i].decay)
                for (size_t j = 0; j < m.p.t[i].n; j++) m.p.w[m.p.t[i].off + j] = (real)(0.5 * rng_normal(&r));
        int tok[4] = {1, 2, 3, 4}, tgt[4] = {2, 3, 4, 5};
        cr_assert(isfinite(model_forward(&m, tok, tgt, 1, 4)));
        Probes p;
        cr_assert_eq(probes_init(&p, &m), 0);
        probes_accumulate(&p, &m);
        cr_assert_eq(probes_rows_accumulate(&p, &m, NULL), 0);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 4; h++) {
                double f = probe_fattn_head(&p, l, h), m0 = probe_mass0(&p, l, h), none = probe_mass_none(&p, l, h);
                cr_assert(fabs(m0 - f) < 1e-5, "%s layer %d head %d: mass on 0 %.8f, F-Attn %.8f",
                          attn_norms[norms[k]].name, l, h, m0, f);
                if (norms[k] == AN_SOFTMAX) cr_assert(fabs(none) < 1e-6, "mass on nothing %.3g", none);
            }
        probes_free(&p);
        model_free(&m);
    }
}

/* The number of rows of key at context ctx (GLOB) at step, in db. */
static int count_rows(const char *db, const char *key, const char *ctx, long step) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM metrics WHERE key = ?1 AND context GLOB ?2 AND step = ?3",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ctx, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

/* The value of key at ('' context, step), NAN when absent. */
static double value_at(const char *db, const char *key, long step) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT value FROM metrics WHERE key = ?1 AND context = '' AND step = ?2", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, step);
    double v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : NAN;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

Test(probes_rows, a_short_run_stores_them_at_every_evaluation, .timeout = 120) {
    set_threads(1);
    char dir[64], db[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    Config c = synth_config(6);
    c.eval_every = 3;
    resolve_or_die(&c);
    TrainOpts o = {db, "rows", "data", "test", 0, 0, dir, 0, 0};
    int saved = quiet_begin();
    int rc = train_run(&c, &o);
    quiet_end(saved);
    cr_assert_eq(rc, 0);
    int L = c.n_layer, H = c.n_head;
    for (long step = 3; step <= 6; step += 3) {
        cr_assert_eq(count_rows(db, "attn_mass0", "layer=*,head=*", step), L * H);
        cr_assert_eq(count_rows(db, "attn_mass_none", "layer=*,head=*", step), L * H);
        cr_assert_eq(count_rows(db, "attn_mass_none", "layer=[0-9]", step), L);
        cr_assert_eq(count_rows(db, "sink_eps_share", "layer=[0-9]", step), L);
        cr_assert_eq(count_rows(db, "resid_kurtosis", "layer=[0-9]", step), L);
        double m0 = value_at(db, "attn_mass0", step), f = value_at(db, "f_attn", step);
        double none = value_at(db, "attn_mass_none", step), share = value_at(db, "sink_eps_share", step);
        double k = value_at(db, "resid_kurtosis", step);
        cr_assert(fabs(m0 - f) < 1e-6, "step %ld: mass on 0 %.8f, F-Attn %.8f", step, m0, f);
        cr_assert(fabs(none) < 1e-6, "step %ld: mass on nothing %.3g under softmax", step, none);
        cr_assert(share >= 0 && share <= 1, "step %ld: Sink_1 %.4f", step, share);
        cr_assert(isfinite(k) && k >= 1, "step %ld: kurtosis %.4f", step, k);
    }
}
