/*
 * test_model.c — the float build: kernels against plain references,
 * determinism across thread counts, gate shapes against the paper.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/dp.h"
#include "nn/gate.h"
#include "nn/model.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/rng.h"
#include "testutil.h"
#include "nn/variant.h"

static void fill(real *x, size_t n, Rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (real)rng_normal(r);
}

/* ---------------------------------------------------- kernels vs reference */

Test(kernels, linear_matches_naive_loops) {
    set_threads(1);
    int n = 37, N = 29, K = 23;
    Rng r = rng_seed(1);
    real *x = malloc(sizeof(real) * n * K), *W = malloc(sizeof(real) * N * K), *y = malloc(sizeof(real) * n * N);
    real *yr = malloc(sizeof(real) * n * N);
    cr_assert(x && W && y && yr);
    fill(x, (size_t)n * K, &r), fill(W, (size_t)N * K, &r);
    linear_forward(y, N, x, K, W, n, N, K, 0);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)x[i * K + k] * W[j * K + k];
            yr[i * N + j] = (real)s;
        }
    Cmp c = cmp_arrays(y, yr, (size_t)n * N, 1.0);
    cr_assert(c.max_rel < 1e-5, "linear: max rel %.3g at %zu (%g vs %g)", c.max_rel, c.worst, c.a, c.b);
    free(x), free(W), free(y), free(yr);
}

/* gemm's tiling: every transpose combination on shapes that are whole
 * tiles, ragged, thinner than a tile and the model's own, against a double
 * reference (tile offsets right), and bitwise the same for 1..4 threads
 * (the tile cut does not follow the thread count).  beta = 1 checks that
 * every element is accumulated exactly once. */
static void gemm_case(int ta, int tb, int M, int N, int K, Rng *r) {
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    int lda = ta ? M : K, ldb = tb ? K : N;
    real *A = malloc(sizeof(real) * na), *B = malloc(sizeof(real) * nb), *C0 = malloc(sizeof(real) * nc);
    real *C[4], *ref = malloc(sizeof(real) * nc);
    cr_assert(A && B && C0 && ref);
    fill(A, na, r), fill(B, nb, r), fill(C0, nc, r);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b;
            }
            ref[(size_t)i * N + j] = (real)(0.5 * s + C0[(size_t)i * N + j]);
        }
    for (int t = 0; t < 4; t++) {
        C[t] = malloc(sizeof(real) * nc);
        cr_assert(C[t]);
        memcpy(C[t], C0, sizeof(real) * nc);
        set_threads(t + 1);
        gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 1, C[t], N);
    }
    set_threads(1);
    Cmp c = cmp_arrays(C[0], ref, nc, 1.0);
    cr_assert(c.max_rel < 1e-4, "gemm %c%c %dx%dx%d: max rel %.3g at %zu (%g vs %g)", ta ? 'T' : 'N', tb ? 'T' : 'N',
              M, N, K, c.max_rel, c.worst, c.a, c.b);
    for (int t = 1; t < 4; t++)
        cr_assert(memcmp(C[0], C[t], sizeof(real) * nc) == 0, "gemm %c%c %dx%dx%d: 1 vs %d threads differ",
                  ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, t + 1);
    for (int t = 0; t < 4; t++) free(C[t]);
    free(A), free(B), free(C0), free(ref);
}

Test(kernels, gemm_tiles_bitwise_for_any_thread_count, .timeout = 120) {
    static const int shapes[][3] = {
        {GEMM_TM, GEMM_TN, 64},              /* one whole tile */
        {3 * GEMM_TM, 2 * GEMM_TN, 33},      /* whole tiles, odd tile count */
        {GEMM_TM + 1, GEMM_TN - 1, 257},     /* ragged both ways */
        {517, 131, 19},                      /* ragged, many row tiles */
        {1, 300, 7},                         /* one row */
        {300, 1, 7},                         /* one column */
        {5, 3, 1},                           /* smaller than a tile, K = 1 */
        {1024, 416, 128},                    /* the fused projection of a small model */
    };
    Rng r = rng_seed(11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) gemm_case(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], &r);
}

/* Whoever sets OpenBLAS threads, gemm runs it single-threaded inside its
 * tiles: a threaded OpenBLAS call splits work by thread count. */
Test(kernels, gemm_keeps_openblas_single_threaded) {
    Rng r = rng_seed(12);
    int M = 300, N = 260, K = 200;
    real *A = malloc(sizeof(real) * M * K), *B = malloc(sizeof(real) * K * N), *C = calloc((size_t)M * N, sizeof(real));
    cr_assert(A && B && C);
    fill(A, (size_t)M * K, &r), fill(B, (size_t)K * N, &r);
    openblas_set_num_threads(2);
    gemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N);
    cr_assert(openblas_get_num_threads() == 1, "OpenBLAS left at %d threads", openblas_get_num_threads());
    free(A), free(B), free(C);
}

Test(kernels, attention_matches_reference_float) {
    set_threads(1);
    int B = 2, T = 33, H = 4, Hk = 2, d = 8;
    size_t nq = (size_t)B * T * H * d, nk = (size_t)B * T * Hk * d;
    Rng r = rng_seed(2);
    real *q = malloc(sizeof(real) * nq), *k = malloc(sizeof(real) * nk), *v = malloc(sizeof(real) * nk);
    real *o1 = malloc(sizeof(real) * nq), *o2 = malloc(sizeof(real) * nq), *lse = malloc(sizeof(real) * B * H * T);
    real *probs = malloc(sizeof(real) * B * H * T * T);
    cr_assert(q && k && v && o1 && o2 && lse && probs);
    fill(q, nq, &r), fill(k, nk, &r), fill(v, nk, &r);
    attention_forward(o1, lse, q, H * d, k, Hk * d, v, Hk * d, B, T, H, Hk, d, 0.35f);
    attention_forward_ref(o2, probs, q, H * d, k, Hk * d, v, Hk * d, B, T, H, Hk, d, 0.35f);
    Cmp c = cmp_arrays(o1, o2, nq, 1e-3);
    cr_assert(c.max_abs < 1e-5, "attention: max abs %.3g at %zu", c.max_abs, c.worst);
    /* causal rows sum to one and never look ahead */
    for (int i = 0; i < T; i++) {
        double s = 0;
        for (int j = 0; j < T; j++) s += probs[(size_t)i * T + j];
        cr_assert(fabs(s - 1) < 1e-5);
        for (int j = i + 1; j < T; j++) cr_assert(probs[(size_t)i * T + j] == 0);
    }
    free(q), free(k), free(v), free(o1), free(o2), free(lse), free(probs);
}

/* --------------------------------------------------------- determinism */

/* 20 AdamW steps, the batch of 8 cut into micro-batches of mb (dp.h; 8 =
 * one, the whole model on gemm's tiles); returns the loss after each in
 * out[]. */
static void train_losses(int threads, GateCfg g, int mb, double *out) {
    set_threads(threads);
    Config c = tiny_config(64, 64, 2, 4, 2, 0, 32, 8);
    c.gate = g;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    DataParallel dp;
    cr_assert(dp_init(&dp, &m, c.batch, mb) == 0);
    AdamW o = {3e-3, 0.9, 0.95, 1e-8, 0.1, 1.0};
    Rng r = rng_seed(3);
    int n = c.batch * c.seq_len;
    int *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n);
    cr_assert(tok && tgt);
    for (int step = 0; step < 20; step++) {
        for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64);
        for (int i = 0; i < n; i++) tgt[i] = (tok[i] * 7 + 3) % 64; /* learnable */
        int bad = 0;
        out[step] = dp_step(&dp, tok, tgt, c.seq_len, &bad);
        cr_assert(!bad && isfinite(out[step]));
        o.lr = lr_schedule(step, 20, 5, 3e-3, 3e-4);
        adamw_step(&m.p, &o, step + 1);
    }
    free(tok), free(tgt);
    dp_free(&dp);
    model_free(&m);
}

/* 1, 2 and 3 threads (3 does not divide the tile counts evenly), and 2
 * twice (repeatable). */
static void check_deterministic(GateCfg g, const char *what) {
    static const int threads[] = {1, 2, 3, 2};
    static const int mbs[] = {8, 2}; /* one batch on tiles; 4 data-parallel micro-batches */
    for (int k = 0; k < 2; k++) {
        double l[4][20];
        for (int t = 0; t < 4; t++) train_losses(threads[t], g, mbs[k], l[t]);
        for (int t = 1; t < 4; t++)
            for (int i = 0; i < 20; i++)
                cr_assert(memcmp(&l[0][i], &l[t][i], sizeof(double)) == 0,
                          "%s, micro-batch %d: step %d loss %.17g (1 thread) vs %.17g (%d threads)", what, mbs[k], i,
                          l[0][i], l[t][i], threads[t]);
        cr_assert(l[0][19] < l[0][0] - 0.1, "%s: training did not lower the loss (%.4f -> %.4f)", what, l[0][0],
                  l[0][19]);
    }
}

/* Micro-batching changes only the order of sums: the loss and gradients of
 * 4 micro-batches match the whole batch's to float round-off. */
Test(determinism, micro_batches_match_whole_batch) {
    set_threads(2);
    Config c = tiny_config(64, 64, 2, 4, 2, 0, 32, 8);
    c.gate.position = GP_SDPA;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    int n = c.batch * c.seq_len;
    int *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n);
    real *g1 = malloc(sizeof(real) * m.p.total);
    cr_assert(tok && tgt && g1);
    Rng r = rng_seed(5);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, 64), tgt[i] = (int)rng_below(&r, 64);
    DataParallel whole, parts;
    cr_assert(dp_init(&whole, &m, c.batch, c.batch) == 0 && dp_init(&parts, &m, c.batch, 2) == 0);
    cr_assert(parts.nmb == 4 && whole.nmb == 1);
    int bad = 0;
    double l1 = dp_step(&whole, tok, tgt, c.seq_len, &bad);
    memcpy(g1, m.p.g, sizeof(real) * m.p.total);
    double l2 = dp_step(&parts, tok, tgt, c.seq_len, &bad);
    cr_assert(!bad);
    cr_assert(fabs(l1 - l2) < 1e-5, "loss %.9g (whole) vs %.9g (micro-batches)", l1, l2);
    Cmp cm = cmp_arrays(m.p.g, g1, m.p.total, 1e-3);
    cr_assert(cm.max_rel < 1e-3, "gradients: max rel %.3g at %zu (%g vs %g)", cm.max_rel, cm.worst, cm.a, cm.b);
    /* a size that does not divide the batch is refused */
    DataParallel bad_dp;
    cr_assert(dp_init(&bad_dp, &m, c.batch, 3) == -1);
    dp_free(&whole), dp_free(&parts);
    free(tok), free(tgt), free(g1);
    model_free(&m);
}

Test(determinism, default_micro_batch_from_the_batch_alone) {
    cr_assert(dp_micro_batch(16, 0) == 4 && dp_micro_batch(6, 0) == 3 && dp_micro_batch(7, 0) == 1);
    cr_assert(dp_micro_batch(2, 0) == 2 && dp_micro_batch(16, 8) == 8);
}

Test(determinism, baseline_1_2_3_threads, .timeout = 180) { check_deterministic(gate_default(), "baseline"); }

Test(determinism, g1_elementwise_1_2_3_threads, .timeout = 180) {
    GateCfg g = gate_default();
    g.position = GP_SDPA;
    check_deterministic(g, "G1 elementwise");
}

Test(determinism, g2_static_shared_1_2_3_threads, .timeout = 180) {
    GateCfg g = gate_default();
    g.position = GP_VALUE;
    g.input = GI_STATIC;
    g.sharing = GS_HEAD_SHARED;
    check_deterministic(g, "G2 static head-shared");
}

/* ------------------------------------------- gate parameters vs the paper */

/* paper.md, "Positions": the weights each gate adds per layer. */
Test(variants, added_params_match_paper_formulas) {
    long C = 96, H = 6, Hk = 2, dh = 16;
    struct {
        int pos, gran;
        long expect;
    } rows[] = {
        {GP_SDPA, GG_ELEMENTWISE, C * H * dh}, {GP_SDPA, GG_HEADWISE, C * H},
        {GP_VALUE, GG_ELEMENTWISE, C * Hk * dh}, {GP_VALUE, GG_HEADWISE, C * Hk},
        {GP_KEY, GG_ELEMENTWISE, C * Hk * dh}, {GP_KEY, GG_HEADWISE, C * Hk},
        {GP_QUERY, GG_ELEMENTWISE, C * H * dh}, {GP_QUERY, GG_HEADWISE, C * H},
        {GP_DENSE, GG_ELEMENTWISE, C * C},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        GateCfg g = gate_default();
        g.position = rows[i].pos;
        g.granularity = rows[i].gran;
        GateShape s = gate_shape(&g, (int)C, (int)H, (int)Hk, (int)dh);
        cr_expect_eq(s.wg_params, rows[i].expect, "%s %s: %ld vs paper %ld", gate_position_names[rows[i].pos],
                     gate_granularity_names[rows[i].gran], s.wg_params, rows[i].expect);
        /* head-shared adds as many weights as head-specific (Table 1 rows 12/13) */
        g.sharing = GS_HEAD_SHARED;
        if (rows[i].pos != GP_DENSE) cr_expect_eq(gate_shape(&g, (int)C, (int)H, (int)Hk, (int)dh).wg_params, rows[i].expect);
    }
}

Test(variants, model_arena_matches_gate_shape) {
    GateCfg gates[400];
    int n = gate_enumerate(gates, 400);
    cr_assert_gt(n, 40);
    for (int i = 0; i < n; i++) {
        Config c = tiny_config(32, 32, 3, 4, 2, 40, 8, 1);
        Config cb = c;
        c.gate = gates[i];
        resolve_or_die(&c);
        resolve_or_die(&cb);
        Model m, mb;
        cr_assert(cfg_model_layout(&m, &c) == 0 && cfg_model_layout(&mb, &cb) == 0);
        cr_expect_eq((long)(m.p.total - mb.p.total), 3 * m.gs.wg_params, "variant %d", i);
        model_free(&m), model_free(&mb);
    }
}

Test(variants, nonsense_combinations_rejected) {
    GateCfg g = gate_default();
    const char *key;
    g.position = GP_DENSE;
    g.granularity = GG_HEADWISE;
    cr_assert(gate_validate(&g, &key) != NULL);
    cr_assert_str_eq(key, "model.gate.granularity");
    g.granularity = GG_ELEMENTWISE;
    g.sharing = GS_HEAD_SHARED;
    cr_assert(gate_validate(&g, &key) != NULL);
    cr_assert_str_eq(key, "model.gate.sharing");
    g = gate_default();
    g.activation = GA_TANH;
    cr_assert(gate_validate(&g, &key) != NULL, "a gate key without a position must be rejected");
    g.position = GP_SDPA;
    cr_assert(gate_validate(&g, &key) == NULL);
    /* the scale controls (issue 14): a bias needs hidden input, an initial
     * bias needs the bias (hidden) and a position, a scale needs control scale */
    const struct {
        GateCfg g;
        const char *key;
    } bad[] = {
        {{GP_SDPA, 0, 0, 0, 0, GI_STATIC, GC_NONE, 1, 0.5, 0}, "model.gate.bias"},
        {{GP_SDPA, 0, 0, 0, 0, GI_HIDDEN, GC_NONE, 0, 0.5, 3}, "model.gate.init_bias"},
        {{GP_NONE, 0, 0, 0, 0, GI_HIDDEN, GC_NONE, 0, 0.5, 3}, "model.gate.init_bias"},
        {{GP_NONE, 0, 0, 0, 0, GI_HIDDEN, GC_NONE, 1, 0.5, 0}, "model.gate.bias"},
        {{GP_NONE, 0, 0, 0, 0, GI_HIDDEN, GC_SILU, 0, 0.25, 0}, "model.gate.control_scale"},
        {{GP_SDPA, 0, 0, 0, 0, GI_HIDDEN, GC_NONE, 0, 2.0, 0}, "model.gate.control_scale"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect(gate_validate(&bad[i].g, &key) != NULL, "row %zu accepted", i);
        if (key) cr_expect_str_eq(key, bad[i].key, "row %zu", i);
    }
    const GateCfg good[] = {
        {GP_SDPA, 0, 0, 0, 0, GI_STATIC, GC_NONE, 0, 0.5, 3},
        {GP_SDPA, 0, 0, 0, 0, GI_HIDDEN, GC_NONE, 1, 0.5, 4},
        {GP_NONE, 0, 0, 0, 0, GI_HIDDEN, GC_SCALE, 0, 0.25, 0},
        {GP_SDPA, 0, 0, 0, 0, GI_HIDDEN, GC_SCALE, 1, 2.0, -1},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_expect(gate_validate(&good[i], &key) == NULL, "good row %zu refused: %s", i, key ? key : "");
}

/* The scale controls do what they say at initialisation: init_bias b starts
 * every G1 sigmoid score near sigmoid(b) (the logits' own spread is small at
 * init_std 0.02), for a learned bias and for a static gate; control scale
 * multiplies the SDPA output by control_scale exactly. */
Test(variants, init_bias_and_scale_start_where_configured) {
    set_threads(1);
    const double bs[] = {4, -3};
    for (int st = 0; st < 2; st++)
        for (int bi = 0; bi < 2; bi++) {
            Config c = tiny_config(11, 16, 2, 4, 2, 12, 5, 2);
            c.gate.position = GP_SDPA;
            c.gate.input = st ? GI_STATIC : GI_HIDDEN;
            c.gate.bias = !st;
            c.gate.init_bias = bs[bi];
            resolve_or_die(&c);
            Model m;
            cr_assert(cfg_model_init(&m, &c) == 0);
            int tok[10], tgt[10];
            for (int i = 0; i < 10; i++) tok[i] = i % 11, tgt[i] = (i + 3) % 11;
            cr_assert(isfinite(model_forward(&m, tok, tgt, 2, 5)));
            double want = 1 / (1 + exp(-bs[bi])), lo = 1, hi = 0;
            for (int l = 0; l < 2; l++)
                for (size_t i = 0; i < (size_t)10 * m.nq; i++) {
                    double s = m.la[l].S[i];
                    lo = s < lo ? s : lo, hi = s > hi ? s : hi;
                }
            cr_expect(lo > want - 0.02 && hi < want + 0.02, "%s init_bias %g: scores in [%g, %g], want about %g",
                      st ? "static" : "hidden", bs[bi], lo, hi, want);
            model_free(&m);
        }
    Config c = tiny_config(11, 16, 2, 4, 2, 12, 5, 2);
    c.gate.control = GC_SCALE;
    c.gate.control_scale = 0.25;
    resolve_or_die(&c);
    Model m;
    cr_assert(cfg_model_init(&m, &c) == 0);
    int tok[10], tgt[10];
    for (int i = 0; i < 10; i++) tok[i] = i % 11, tgt[i] = (i + 3) % 11;
    cr_assert(isfinite(model_forward(&m, tok, tgt, 2, 5)));
    for (size_t i = 0; i < (size_t)10 * m.nq; i++)
        cr_assert(m.la[0].oc[i] == (real)0.25 * m.la[0].o[i], "control scale: oc[%zu] %g vs o %g", i,
                  (double)m.la[0].oc[i], (double)m.la[0].o[i]);
    model_free(&m);
}

/* ------------------------------------------- the variant lists (modelcfg.h) */

/* A NULL-terminated name list of exactly n distinct names. */
static void check_names(const char *const *names, int n, const char *what) {
    int k = 0;
    while (names[k]) k++;
    cr_expect_eq(k, n, "%s: %d names for %d enum values", what, k, n);
    for (int i = 0; i < k; i++) {
        cr_expect(names[i][0] != '\0', "%s[%d]: empty name", what, i);
        cr_expect_eq(name_index(names, names[i]), i, "%s: \"%s\" is not unique", what, names[i]);
    }
}

Test(variants, every_name_has_a_row_and_every_row_a_name) {
    check_names(gate_position_names, GP__COUNT, "positions");
    check_names(gate_granularity_names, GG__COUNT, "granularities");
    check_names(gate_sharing_names, GS__COUNT, "sharings");
    check_names(gate_form_names, GF__COUNT, "forms");
    check_names(gate_form_labels, GF__COUNT, "form labels");
    check_names(gate_activation_names, GA__COUNT, "activations");
    check_names(gate_input_names, GI__COUNT, "inputs");
    check_names(gate_control_names, GC__COUNT, "controls");
    for (int p = 0; p < GP__COUNT; p++) {
        const GatePositionDef *r = &gate_positions[p];
        cr_assert(r->name && r->paper && r->what, "position %d: incomplete row", p);
        cr_expect_str_eq(r->name, gate_position_names[p]);
        if (p == GP_NONE) continue;
        cr_expect(r->heads != HEADS_NONE, "%s: no head split", r->name);
        cr_expect(r->paper_elem != NULL, "%s: no paper formula", r->name);
        cr_expect((r->paper_head != NULL) == (r->headwise_ok != 0), "%s: headwise formula vs headwise_ok", r->name);
    }
    for (int a = 0; a < GA__COUNT; a++) {
        const GateAct *r = &gate_acts[a];
        cr_assert(r->name && r->f && r->df, "activation %d: incomplete row", a);
        cr_expect_str_eq(r->name, gate_activation_names[a]);
        cr_expect(isfinite(r->hist_lo) && isfinite(r->hist_hi) && r->hist_lo < r->hist_hi,
                  "%s: histogram range [%g, %g] not set", r->name, r->hist_lo, r->hist_hi);
        /* the range holds the activation's scores near 0 */
        real s = r->f(0);
        cr_expect(s >= r->hist_lo && s <= r->hist_hi, "%s: act(0) = %g outside [%g, %g]", r->name, (double)s,
                  r->hist_lo, r->hist_hi);
        if (r->dfy)
            for (double x = -3; x <= 3; x += 0.5)
                cr_expect(fabs((double)r->dfy(r->f((real)x)) - (double)r->df((real)x)) < 1e-5,
                          "%s: dfy(f(%g)) != df(%g)", r->name, x, x);
    }
}

/* The names at their values, as configs, gate_enumerate's order and the
 * probes' histograms have them (new values are appended after these). */
Test(variants, names_values_and_ranges_pinned) {
    static const char *const pos[] = {"none", "sdpa", "value", "key", "query", "dense"};
    static const char *const act[] = {"sigmoid", "silu", "tanh", "none", "ns_sigmoid"};
    static const char *const ctl[] = {"none", "silu", "rmsnorm", "scale"};
    static const double lo[] = {0, -2, -2, -2, 0}, hi[] = {1, 2, 2, 2, 1};
    cr_assert_geq(GP__COUNT, 6);
    cr_assert_geq(GA__COUNT, 5);
    for (int i = 0; i < 6; i++) cr_expect_str_eq(gate_position_names[i], pos[i]);
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(gate_activation_names[i], act[i]);
        cr_expect(gate_acts[i].hist_lo == lo[i] && gate_acts[i].hist_hi == hi[i], "%s: histogram range", act[i]);
    }
    for (int i = 0; i < 4; i++) cr_expect_str_eq(gate_control_names[i], ctl[i]);
    cr_expect(GP_SDPA == 1 && GP_VALUE == 2 && GP_KEY == 3 && GP_QUERY == 4 && GP_DENSE == 5);
    cr_expect(GA_SILU == 1 && GA_TANH == 2 && GA_NONE == 3 && GA_NS_SIGMOID == 4);
    cr_expect(GG_HEADWISE == 1 && GS_HEAD_SHARED == 1 && GF_ADDITIVE == 1 && GI_STATIC == 1 && GC_RMSNORM == 2 && GC_SCALE == 3);
    cr_expect_str_eq(gate_granularity_names[GG_HEADWISE], "headwise");
    cr_expect_str_eq(gate_sharing_names[GS_HEAD_SHARED], "head_shared");
    cr_expect_str_eq(gate_form_names[GF_ADDITIVE], "additive");
    cr_expect_str_eq(gate_form_labels[GF_MULTIPLICATIVE], "mult");
    cr_expect_str_eq(gate_input_names[GI_STATIC], "static");
}

/* The paper's formulas in the position rows agree with gate_shape() for
 * every valid hidden-input variant (static gates have no formula). */
Test(variants, paper_formulas_match_gate_shape) {
    GateCfg gates[400];
    int n = gate_enumerate(gates, 400);
    long C = 96, H = 6, Hk = 2, dh = 16;
    for (int i = 0; i < n; i++) {
        const char *f = NULL;
        char lab[128];
        long p = gate_paper_params(&gates[i], C, H, Hk, dh, &f);
        cr_assert(f != NULL);
        gate_label(&gates[i], lab, sizeof lab);
        if (gates[i].input == GI_STATIC) {
            cr_expect_eq(p, -1, "%s: a static gate has no paper formula", lab);
            continue;
        }
        GateShape s = gate_shape(&gates[i], (int)C, (int)H, (int)Hk, (int)dh);
        cr_expect_eq(p, s.wg_params, "%s: paper (%s) %ld vs gate_shape %ld", lab, f, p, s.wg_params);
    }
    const char *f;
    GateCfg none = gate_default();
    cr_expect_eq(gate_paper_params(&none, C, H, Hk, dh, &f), 0);
    cr_expect_str_eq(f, "no gate");
    GateCfg g1 = none;
    g1.position = GP_SDPA;
    cr_expect_eq(gate_paper_params(&g1, C, H, Hk, dh, &f), C * H * dh);
    cr_expect_str_eq(f, "d_model x n_head x d_head");
}

/* The cross-check's cases (gated xcheck --list) cover every value of every
 * list, every activation in both forms, and every structural combination. */
Test(variants, covering_has_every_value) {
    GateCfg all[400], cov[400];
    int na = gate_enumerate(all, 400), nc = gate_covering(cov, 400);
    cr_assert(nc > 0 && nc <= 400 && nc < na);
    int pos[GP__COUNT] = {0}, gr[GG__COUNT] = {0}, sh[GS__COUNT] = {0}, in[GI__COUNT] = {0};
    int actform[GA__COUNT][GF__COUNT] = {{0}}, actavg[GA__COUNT] = {0};
    for (int i = 0; i < nc; i++) {
        const GateCfg *g = &cov[i];
        int found = 0;
        for (int j = 0; j < na && !found; j++) found = memcmp(g, &all[j], sizeof *g) == 0;
        cr_expect(found, "covering case %d is not a valid variant", i);
        pos[g->position]++, gr[g->granularity]++, sh[g->sharing]++, in[g->input]++;
        actform[g->activation][g->form]++;
        if (g->sharing == GS_HEAD_SHARED && g->input == GI_HIDDEN) actavg[g->activation]++;
    }
    for (int p = GP_NONE + 1; p < GP__COUNT; p++) cr_expect(pos[p], "no case at position %s", gate_position_names[p]);
    for (int i = 0; i < GG__COUNT; i++) cr_expect(gr[i], "no %s case", gate_granularity_names[i]);
    for (int i = 0; i < GS__COUNT; i++) cr_expect(sh[i], "no %s case", gate_sharing_names[i]);
    for (int i = 0; i < GI__COUNT; i++) cr_expect(in[i], "no %s case", gate_input_names[i]);
    for (int a = 0; a < GA__COUNT; a++) {
        for (int f = 0; f < GF__COUNT; f++)
            cr_expect(actform[a][f], "no %s %s case", gate_activation_names[a], gate_form_names[f]);
        cr_expect(actavg[a], "no head-shared hidden %s case (act' from the logits)", gate_activation_names[a]);
    }
    /* every valid position x granularity x sharing x input, default form and activation */
    GateCfg d = gate_default();
    for (int j = 0; j < na; j++) {
        if (all[j].form != d.form || all[j].activation != d.activation) continue;
        int found = 0;
        for (int i = 0; i < nc && !found; i++) found = memcmp(&cov[i], &all[j], sizeof cov[i]) == 0;
        char lab[128];
        cr_expect(found, "%s is not cross-checked", gate_label(&all[j], lab, sizeof lab));
    }
}

/* ------------------------------------- the attention normalisers (modelcfg.h) */

/* Every normaliser has a name, a row with its formula and family, and lays
 * out exactly the parameters its row's formula counts, as untouched-by-RNG
 * tensors starting where configured; every other tensor starts as with
 * softmax. */
Test(variants, attention_normalizers_rows_params_and_init) {
    check_names(attn_norm_names, AN__COUNT, "attn_norm_names");
    Config cb = tiny_config(32, 32, 3, 4, 2, 40, 8, 1);
    resolve_or_die(&cb);
    Model mb;
    cr_assert(cfg_model_init(&mb, &cb) == 0);
    for (int a = 0; a < AN__COUNT; a++) {
        const AttnNormDef *r = &attn_norms[a];
        cr_expect_str_eq(r->name, attn_norm_names[a]);
        cr_expect(r->formula && r->formula[0], "%s: no formula", r->name);
        cr_expect(r->sums_to_one == (a == AN_SOFTMAX), "%s: sums_to_one", r->name);
        Config c = cb;
        c.resolved = 0;
        c.attn.normalizer = a;
        if (a == AN_SINK_LOGIT) c.attn.sink_init = 1.25;
        resolve_or_die(&c);
        Model m;
        cr_assert(cfg_model_init(&m, &c) == 0);
        long per = attn_norm_params(&c.attn, c.n_head, c.n_kv_head, c.d_head);
        cr_expect_eq((long)(m.p.total - mb.p.total), 3 * per, "%s", r->name);
        cr_expect_eq(model_attn_params(&m), 3 * per, "%s", r->name);
        cr_expect_eq(per, a == AN_SINK_LOGIT ? 4 : a == AN_KV_BIAS ? 2 * 8 : 0, "%s", r->name);
        for (int i = 0, j = 0; i < m.p.n; i++) {
            const Tensor *t = &m.p.t[i];
            const char *base = strrchr(t->name, '.');
            base = base ? base + 1 : t->name;
            int own = strcmp(base, "sink_logit") == 0 || strcmp(base, "kv_bias") == 0;
            for (size_t k = 0; k < t->n; k++) {
                real want = !own ? mb.p.w[mb.p.t[j].off + k] : strcmp(base, "sink_logit") == 0 ? 1.25 : 0;
                cr_assert(m.p.w[t->off + k] == want, "%s: %s[%zu] = %g, want %g", r->name, t->name, k,
                          (double)m.p.w[t->off + k], (double)want);
            }
            cr_expect(!own || !t->decay, "%s: %s is weight-decayed", r->name, t->name);
            j += !own;
        }
        model_free(&m);
    }
    model_free(&mb);
}
