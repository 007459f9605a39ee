/*
 * test_infer.c — simulated quantization (nn/quant.h) on hand-made tensors,
 * the evaluation hook and dropped heads (run/infer.h) on small models, and
 * `gated eval --quant / --drop` end to end on the synthetic corpus.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/quant.h"
#include "nn/rng.h"
#include "run/eval.h"
#include "run/infer.h"
#include "run/train.h"
#include "testutil.h"

/* ------------------------------------------------------- quantization */

/* 4 bits: qmax 7; a block with maximum 7 has scale 1, so the result is
 * rint of each value, clamped, ties to even (2.5 -> 2, 3.5 -> 4, -0.5 -> 0). */
Test(quant, round_to_nearest_half_even_by_hand) {
    real x[] = {7, 2.5f, 3.5f, -0.5f, 1.49f, -6.51f};
    real want[] = {7, 2, 4, 0, 1, -7};
    cr_assert_eq(quant_tensor(x, 1, 6, 6, 4), 0);
    for (int i = 0; i < 6; i++) cr_assert_eq(x[i], want[i], "x[%d] = %g, want %g", i, x[i], want[i]);
    /* 8 bits, maximum 127 * 2^-4: scale 2^-4 exactly */
    real y[] = {127.0f / 16, 1.0f / 32, 3.0f / 32, -5.0f / 64};
    real wy[] = {127.0f / 16, 0, 2.0f / 16, -1.0f / 16};
    quant_rows(y, 1, 4, 4, 8, 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(y[i], wy[i], "y[%d] = %g, want %g", i, y[i], wy[i]);
    cr_assert_eq(quant_scale(127, 8), 1);
    cr_assert_eq(quant_scale(7, 4), 1);
}

/* Random rows, every bit width and grouping: each value ends on its block's
 * grid (an integer multiple of s, |q| <= qmax), within s / 2 of where it
 * started, and the block maximum maps to +-qmax exactly. */
Test(quant, error_bound_and_grid_per_row_and_group) {
    int n = 7, k = 50, ld = 53;
    Rng r = rng_seed(3);
    real *x = malloc(sizeof(real) * n * ld), *q = malloc(sizeof(real) * n * ld);
    cr_assert(x && q);
    for (int i = 0; i < n * ld; i++) x[i] = (real)(rng_normal(&r) * (1 + i % 5));
    int groups[] = {0, 8, 16, 50, 64};
    for (int bits = 2; bits <= 8; bits++)
        for (int gi = 0; gi < 5; gi++) {
            int g = groups[gi], G = g <= 0 || g > k ? k : g;
            memcpy(q, x, sizeof(real) * n * ld);
            cr_assert_eq(quant_rows(q, n, k, ld, bits, g), 0);
            double qmax = (1 << (bits - 1)) - 1;
            for (int i = 0; i < n; i++)
                for (int j0 = 0; j0 < k; j0 += G) {
                    int j1 = j0 + G < k ? j0 + G : k;
                    double amax = 0;
                    for (int j = j0; j < j1; j++) amax = fmax(amax, fabs((double)x[i * ld + j]));
                    double s = (double)quant_scale((real)amax, bits);
                    int hit = 0;
                    for (int j = j0; j < j1; j++) {
                        double a = x[i * ld + j], b = q[i * ld + j], m = b / s;
                        cr_assert(fabs(a - b) <= s / 2 * (1 + 1e-5) + 1e-7, "bits %d group %d: |%g - %g| > s/2 = %g",
                                  bits, g, a, b, s / 2);
                        cr_assert(fabs(m - rint(m)) < 1e-4 && fabs(m) <= qmax + 1e-4, "off the grid: %g / %g", b, s);
                        hit |= fabs(fabs(m) - qmax) < 1e-4 && fabs(a) == amax;
                    }
                    cr_assert(hit, "bits %d group %d: the maximum is not at qmax", bits, g);
                }
            /* the padding between rows is untouched */
            for (int i = 0; i < n; i++)
                for (int j = k; j < ld; j++) cr_assert_eq(q[i * ld + j], x[i * ld + j]);
        }
    free(x), free(q);
}

/* One outlier (a massive activation) in one token: per-tensor int8 puts
 * every other token on a grid of outlier/127 and wipes out the small
 * values; per-token keeps them within their own rows' s/2. */
Test(quant, an_outlier_coarsens_per_tensor_not_per_token) {
    int n = 4, k = 16;
    real x[64], t[64], p[64];
    Rng r = rng_seed(5);
    for (int i = 0; i < n * k; i++) x[i] = (real)(0.1 * rng_normal(&r));
    x[2 * k + 3] = 1000; /* token 2, channel 3 */
    memcpy(t, x, sizeof x), memcpy(p, x, sizeof x);
    quant_tensor(t, n, k, k, 8);
    quant_rows(p, n, k, k, 8, 0);
    double et = 0, ep = 0;
    for (int i = 0; i < n * k; i++)
        if (i / k != 2) et = fmax(et, fabs(t[i] - x[i])), ep = fmax(ep, fabs(p[i] - x[i]));
    for (int i = 0; i < n * k; i++)
        if (i / k != 2) cr_assert_eq(t[i], 0, "per-tensor: %g survived a step of 1000/127", x[i]);
    cr_assert(ep < 0.01 && et > 0.1, "per-token error %g, per-tensor %g", ep, et);
}

Test(quant, zero_and_non_finite_blocks) {
    real z[4] = {0, 0, 0, 0};
    cr_assert_eq(quant_rows(z, 2, 2, 2, 8, 0), 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(z[i], 0);
    real b[4] = {1, INFINITY, 0.3f, 0.7f};
    cr_assert_eq(quant_rows(b, 2, 2, 2, 2, 0), 1, "the row holding inf is counted");
    cr_assert(isinf(b[1]) && b[0] == 1, "an infinite block is left as it was");
    cr_assert_eq(b[3], 0.7f);
    cr_assert_eq(b[2], 0, "0.3 / 0.7 rounds to 0 on 2 bits (qmax 1)");
    real c[2] = {NAN, 1};
    cr_assert_eq(quant_tensor(c, 1, 2, 2, 8), 1);
}

/* A maximum so small that the scale underflows, or so large that s * qmax
 * rounds past it: left as it is (counted), or clamped to the maximum. */
Test(quant, scale_underflow_and_overflow) {
    real t[3] = {0, 1e-42f, -5e-43f};
    cr_assert_eq(quant_tensor(t, 1, 3, 3, 16), 1);
    cr_assert(t[0] == 0 && t[1] == 1e-42f && t[2] == -5e-43f, "a subnormal block changed");
    real b[2] = {FLT_MAX, -FLT_MAX};
    cr_assert_eq(quant_tensor(b, 1, 2, 2, 8), 0);
    cr_assert(b[0] == FLT_MAX && b[1] == -FLT_MAX, "%g %g", b[0], b[1]);
}

Test(quant, scheme_names_parse_and_print) {
    const char *ok[][2] = {{"float", "float"},         {"w8", "w8"},
                           {"w4g32", "w4g32"},         {"a8tensor", "a8tensor"},
                           {"w8-a8token", "w8-a8token"}, {"w4g128-a8tensor", "w4g128-a8tensor"}};
    char err[256], name[64];
    for (int i = 0; i < 6; i++) {
        QuantSpec q;
        cr_assert_eq(quant_spec_parse(ok[i][0], &q, err, sizeof err), 0, "%s: %s", ok[i][0], err);
        quant_spec_name(&q, name, sizeof name);
        cr_assert_str_eq(name, ok[i][1]);
    }
    QuantSpec q;
    cr_assert_eq(quant_spec_parse("w8-a8token", &q, err, sizeof err), 0);
    cr_assert(q.wbits == 8 && q.wgroup == 0 && q.abits == 8 && q.agran == QA_TOKEN);
    const char *bad[] = {"",       "w",    "w1",     "w17",    "w8g",          "w8g1",     "a8",
                         "a8row",  "w8a8token", "w8-", "int8", "w8-a8token-x", "w+8",      "w 8",
                         "w8g+32", "a+8token"};
    for (int i = 0; i < 16; i++)
        cr_assert_eq(quant_spec_parse(bad[i], &q, err, sizeof err), -1, "\"%s\" accepted", bad[i]);
    DropSpec d;
    cr_assert(drop_spec_parse("gate:0.1", &d, err, sizeof err) == 0 && d.kind == DROP_GATE && d.v == 0.1);
    cr_assert(drop_spec_parse("frac:1", &d, err, sizeof err) == 0 && d.kind == DROP_FRAC && d.v == 1);
    const char *dbad[] = {"gate",      "gate:",     "gate:-1",     "frac:1.5",  "frac:nan", "random:0.1",
                          "gate:0.1x", "gate: 0.5", "gate:0x1p-1", "frac:-0",   "gate:2000", "gate:inf"};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(drop_spec_parse(dbad[i], &d, err, sizeof err), -1, "\"%s\" accepted", dbad[i]);
}

/* ------------------------------------------------- hooked model forwards */

/* A small G1 model (headwise unless elementwise), weights scaled up so the
 * attention is not uniform. */
static void g1_model(Model *m, int headwise, int T) {
    Config c = tiny_config(61, 32, 2, 4, 2, 48, T, 2);
    c.gate.position = GP_SDPA;
    if (headwise) c.gate.granularity = GG_HEADWISE;
    c.init_std = 0.2;
    resolve_or_die(&c);
    cr_assert_eq(cfg_model_init(m, &c), 0);
}

static void tokens(int *x, int n, int V, uint64_t seed) {
    Rng r = rng_seed(seed);
    for (int i = 0; i < n; i++) x[i] = (int)rng_below(&r, (uint64_t)V);
}

/* loss of one forward of (B=2, T) with hook state h (NULL: float) */
static double hooked_loss(Model *m, InferHook *h, const int *x, int T) {
    model_set_linear_hook(m, h ? infer_hook : NULL, h);
    double l = model_forward(m, x, x + 2 * T, 2, T);
    model_set_linear_hook(m, NULL, NULL);
    return l;
}

/* Dropping nothing is the float forward bit for bit; dropping everything
 * (gate tau above any score, or fraction 1 by either control) is the model
 * whose wo is zero. */
Test(infer, dropping_nothing_or_everything) {
    set_threads(1);
    int T = 16;
    Model m;
    g1_model(&m, 1, T);
    int x[4 * 16];
    tokens(x, 4 * T, 61, 9);
    double f = hooked_loss(&m, NULL, x, T);
    InferHook h;
    cr_assert_eq(infer_hook_init(&h, m.L), 0);
    double zero[2] = {0, 0}, one[2] = {1, 1};
    /* measuring the linear inputs changes nothing, and sees every site */
    h.measure = 1;
    cr_assert_eq(hooked_loss(&m, &h, x, T), f, "measuring changed the loss");
    for (int k = 0; k < LIN__COUNT; k++) {
        double mean = h.tok_sum[k] / h.tok_n[k];
        cr_assert(h.tok_n[k] == (long long)m.L * 2 * T && h.in_max[k] >= mean && mean > 0, "site %d: %lld tokens, max %g mean %g",
                  k, h.tok_n[k], h.in_max[k], mean);
    }
    h.measure = 0;
    h.sel = SEL_GATE, h.tau = 0;
    cr_assert_eq(hooked_loss(&m, &h, x, T), f, "tau 0 changed the loss");
    cr_assert_eq(h.dropped[0] + h.dropped[1], 0);
    h.sel = SEL_RANDOM, h.frac = zero;
    cr_assert_eq(hooked_loss(&m, &h, x, T), f);
    h.sel = SEL_ENTROPY;
    cr_assert_eq(hooked_loss(&m, &h, x, T), f);

    /* everything dropped */
    double all[3];
    h.sel = SEL_GATE, h.tau = 2;
    memset(h.dropped, 0, 2 * sizeof *h.dropped), memset(h.pairs, 0, 2 * sizeof *h.pairs);
    h.flops_wo = h.flops_attn = 0;
    all[0] = hooked_loss(&m, &h, x, T);
    long long np = 2LL * T * m.H;
    cr_assert(h.dropped[0] == np && h.dropped[1] == np && h.pairs[0] == np, "dropped %lld of %lld", h.dropped[0], np);
    /* FLOPs: every pair saves 2 dh C of wo, plus 2*2 dh (i+1) of attention */
    double wo = 2.0 * m.L * np * m.dh * m.C, att = 0;
    for (int i = 0; i < T; i++) att += 2.0 * m.L * 2 * m.H * 2.0 * m.dh * (i + 1);
    cr_assert(fabs(h.flops_wo - wo) < 1e-6 * wo && fabs(h.flops_attn - wo - att) < 1e-6 * (wo + att),
              "flops %g / %g, want %g / %g", h.flops_wo, h.flops_attn, wo, wo + att);
    h.sel = SEL_RANDOM, h.frac = one;
    all[1] = hooked_loss(&m, &h, x, T);
    h.sel = SEL_ENTROPY;
    all[2] = hooked_loss(&m, &h, x, T);
    for (int l = 0; l < m.L; l++) memset(AW(&m.p, m.lp[l].wo), 0, sizeof(real) * (size_t)m.C * m.nq);
    double z = hooked_loss(&m, NULL, x, T);
    for (int i = 0; i < 3; i++) cr_assert_eq(all[i], z, "rule %d: %.9g vs wo = 0: %.9g", i, all[i], z);
    cr_assert(fabs(z - f) > 1e-3, "dropping every head did not change the loss");
    infer_hook_free(&h);
    model_free(&m);
}

/* The gate rule drops exactly the pairs whose mean |score| is below tau
 * (counted here from the scores a float forward saves), and the controls
 * drop round(f * pairs) per forward and layer. */
Test(infer, gate_rule_and_matched_counts) {
    set_threads(1);
    int T = 16;
    Model m;
    g1_model(&m, 0, T);
    int x[4 * 16];
    tokens(x, 4 * T, 61, 11);
    hooked_loss(&m, NULL, x, T);
    double tau = 0.5;
    long long want[2] = {0, 0};
    for (int l = 0; l < m.L; l++)
        for (int t = 0; t < 2 * T; t++)
            for (int hh = 0; hh < m.H; hh++) {
                double s = 0;
                for (int d = 0; d < m.dh; d++) s += fabs((double)m.la[l].S[(size_t)t * m.nq + hh * m.dh + d]);
                want[l] += s / m.dh < tau;
            }
    InferHook h;
    cr_assert_eq(infer_hook_init(&h, m.L), 0);
    h.sel = SEL_GATE, h.tau = tau;
    hooked_loss(&m, &h, x, T);
    /* layer 0's scores do not depend on the drop; layer 1's may (its input changed) */
    cr_assert_eq(h.dropped[0], want[0], "layer 0: %lld dropped, %lld scores below tau", h.dropped[0], want[0]);
    cr_assert(want[0] > 0 && want[0] < 2 * T * m.H, "tau %g should drop some, not all: %lld", tau, want[0]);
    double frac[2] = {0.3, 0.55};
    for (int sel = SEL_RANDOM; sel <= SEL_ENTROPY; sel++) {
        memset(h.dropped, 0, 2 * sizeof *h.dropped);
        h.sel = sel, h.frac = frac;
        hooked_loss(&m, &h, x, T);
        for (int l = 0; l < 2; l++)
            cr_assert_eq(h.dropped[l], llround(frac[l] * 2 * T * m.H), "rule %d layer %d: %lld", sel, l, h.dropped[l]);
    }
    infer_hook_free(&h);
    model_free(&m);
}

/* Which pairs the controls pick, read from what reaches wo in layer 0
 * (whose attention, and so its entropies, no drop can change): the entropy
 * rule zeroes exactly the k pairs of highest entropy / log(i+1), the
 * random rule k pairs that differ between layers and windows but not
 * between two identical forwards. */
typedef struct {
    InferHook h;
    unsigned char dropped[2][2 * 16 * 4]; /* [layer][token * H + head] */
} Spy;

static const real *spy_hook(void *ctx, const Model *m, int l, LinearSite site, const real *x, int n, int k, int *ld) {
    Spy *s = ctx;
    const real *y = infer_hook(&s->h, m, l, site, x, n, k, ld);
    if (y && site == LIN_WO && l < 2)
        for (int p = 0; p < n * m->H; p++) {
            const real *v = y + (size_t)(p / m->H) * *ld + (size_t)(p % m->H) * m->dh;
            int zero = 1;
            for (int d = 0; d < m->dh; d++) zero &= v[d] == 0;
            s->dropped[l][p] = (unsigned char)zero;
        }
    return y;
}

static void spy_forward(Model *m, Spy *s, const int *x, int T, int sel, const double *frac, uint64_t window) {
    memset(s->dropped, 0, sizeof s->dropped);
    s->h.sel = sel, s->h.frac = frac, s->h.window = window;
    model_set_linear_hook(m, spy_hook, s);
    cr_assert(!isnan(model_forward(m, x, x + 2 * T, 2, T)));
    model_set_linear_hook(m, NULL, NULL);
}

Test(infer, controls_pick_the_pairs_they_say) {
    set_threads(1);
    int T = 16, np = 2 * 16 * 4;
    Model m;
    g1_model(&m, 1, T);
    int x[4 * 16];
    tokens(x, 4 * T, 61, 19);
    hooked_loss(&m, NULL, x, T);
    double Hr[2 * 16 * 4];
    for (int p = 0; p < np; p++) {
        int t = p / m.H;
        Hr[p] = infer_attn_entropy_rel(&m, 0, t / T, p % m.H, t % T);
    }
    Spy s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(infer_hook_init(&s.h, m.L), 0);
    double frac[2] = {0.25, 0.25};
    spy_forward(&m, &s, x, T, SEL_ENTROPY, frac, 0);
    int k = 0;
    double lo_dropped = INFINITY, hi_kept = -INFINITY;
    for (int p = 0; p < np; p++) {
        k += s.dropped[0][p];
        if (s.dropped[0][p]) lo_dropped = fmin(lo_dropped, Hr[p]);
        else hi_kept = fmax(hi_kept, Hr[p]);
    }
    cr_assert_eq(k, np / 4);
    cr_assert(lo_dropped >= hi_kept, "entropy rule kept %.6g above a dropped %.6g", hi_kept, lo_dropped);
    spy_forward(&m, &s, x, T, SEL_RANDOM, frac, 0);
    unsigned char a[2][2 * 16 * 4];
    memcpy(a, s.dropped, sizeof a);
    spy_forward(&m, &s, x, T, SEL_RANDOM, frac, 0);
    cr_assert(memcmp(a, s.dropped, sizeof a) == 0, "random: two identical forwards dropped different pairs");
    int same_layers = memcmp(a[0], a[1], sizeof a[0]) == 0;
    spy_forward(&m, &s, x, T, SEL_RANDOM, frac, 1);
    int same_windows = memcmp(a[0], s.dropped[0], sizeof a[0]) == 0;
    cr_assert(!same_layers && !same_windows, "random: the same pairs in every layer (%d) or window (%d)", same_layers,
              same_windows);
    infer_hook_free(&s.h);
    model_free(&m);
}

/* Attention entropy from the saved lse against softmax rows computed here
 * in double: equal to 1e-4, 0 at position 0 (one key), at most log(i+1). */
Test(infer, attention_entropy_matches_direct_softmax) {
    set_threads(1);
    int T = 12;
    Model m;
    g1_model(&m, 1, T);
    int x[4 * 12];
    tokens(x, 4 * T, 61, 13);
    hooked_loss(&m, NULL, x, T);
    int grp = m.H / m.Hk;
    double scale = 1 / sqrt((double)m.dh), minH = 1e9;
    for (int l = 0; l < m.L; l++)
        for (int b = 0; b < 2; b++)
            for (int hh = 0; hh < m.H; hh++)
                for (int i = 0; i < T; i++) {
                    double s[12], mx = -1e300, z = 0, H = 0;
                    const LayerActs *a = &m.la[l];
                    for (int j = 0; j <= i; j++) {
                        double d = 0;
                        for (int e = 0; e < m.dh; e++)
                            d += (double)a->qr[(size_t)(b * T + i) * m.nq + hh * m.dh + e] *
                                 a->kr[(size_t)(b * T + j) * m.nkv + (hh / grp) * m.dh + e];
                        s[j] = d * scale;
                        mx = fmax(mx, s[j]);
                    }
                    for (int j = 0; j <= i; j++) z += exp(s[j] - mx);
                    for (int j = 0; j <= i; j++) {
                        double p = exp(s[j] - mx) / z;
                        if (p > 0) H -= p * log(p);
                    }
                    double got = infer_attn_entropy(&m, l, b, hh, i);
                    cr_assert(fabs(got - H) < 1e-4, "l %d b %d h %d i %d: %.6g vs %.6g", l, b, hh, i, got, H);
                    cr_assert(got <= log(i + 1.0) + 1e-5);
                    if (i == 0) cr_assert(got < 1e-5);
                    if (i > 0) minH = fmin(minH, H / log(i + 1.0));
                }
    cr_assert(minH < 0.95, "every row near uniform: the test would not tell the keys apart");
    model_free(&m);
}

/* Weights on a fine grid (16 bits) and linear inputs at 16 bits change
 * the loss by round-off only; 8 bits by a little; 2 bits a lot. */
Test(infer, fine_quantization_reduces_to_float) {
    set_threads(1);
    int T = 16;
    Model m;
    g1_model(&m, 0, T);
    int x[4 * 16];
    tokens(x, 4 * T, 61, 17);
    double f = hooked_loss(&m, NULL, x, T);
    real *w0 = malloc(sizeof(real) * m.p.total);
    cr_assert(w0);
    memcpy(w0, m.p.w, sizeof(real) * m.p.total);
    const char *sch[] = {"w16-a16token", "w16-a16tensor", "w8-a8token", "w2-a2tensor"};
    double lim[] = {1e-4, 1e-4, 2e-2, INFINITY}, got[4];
    char err[256];
    for (int i = 0; i < 4; i++) {
        QuantSpec q;
        cr_assert_eq(quant_spec_parse(sch[i], &q, err, sizeof err), 0);
        memcpy(m.p.w, w0, sizeof(real) * m.p.total);
        cr_assert_eq(infer_quant_weights(&m, &q), 0);
        InferHook h;
        cr_assert_eq(infer_hook_init(&h, m.L), 0);
        h.abits = q.abits, h.agran = q.agran;
        got[i] = hooked_loss(&m, &h, x, T);
        infer_hook_free(&h);
        cr_assert(fabs(got[i] - f) <= lim[i] * fabs(f), "%s: loss %.6f vs float %.6f", sch[i], got[i], f);
    }
    cr_assert(got[0] != f || got[1] != f, "16-bit quantization changed nothing at all (not applied?)");
    cr_assert(fabs(got[3] - f) > 10 * fabs(got[2] - f), "2 bits (%g) not much worse than 8 (%g)", got[3] - f,
              got[2] - f);
    /* the embedding (also the output layer) and the norms stay float */
    memcpy(m.p.w, w0, sizeof(real) * m.p.total);
    QuantSpec q = {2, 0, 0, 0};
    infer_quant_weights(&m, &q);
    cr_assert(memcmp(AW(&m.p, m.wte), w0 + m.p.t[m.wte].off, sizeof(real) * m.p.t[m.wte].n) == 0);
    cr_assert(memcmp(AW(&m.p, m.lp[0].ln1), w0 + m.p.t[m.lp[0].ln1].off, sizeof(real) * (size_t)m.C) == 0);
    cr_assert(memcmp(AW(&m.p, m.lp[0].wo), w0 + m.p.t[m.lp[0].wo].off, sizeof(real) * (size_t)m.C * m.nq) != 0);
    free(w0);
    model_free(&m);
}

/* ------------------------------------------------------- gated eval */

/* The metric (key, context) of the run named run. */
static double metric_of(const char *db, const char *run, const char *key, const char *ctx, int *found) {
    sqlite3 *h;
    sqlite3_stmt *st;
    double v = NAN;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT m.value FROM metrics m JOIN runs r USING (run_id) WHERE r.name = ?3"
                                    " AND m.key = ?1 AND m.context = ?2",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ctx, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, run, -1, SQLITE_STATIC);
    *found = sqlite3_step(st) == SQLITE_ROW;
    if (*found) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

#define metric(db, key, ctx, found) metric_of(db, "gated", key, ctx, found)

static void train_synth(const char *db, const char *dir, const char *name, int gated) {
    Config c = synth_config(20);
    if (gated) c.gate.position = GP_SDPA;
    resolve_or_die(&c);
    TrainOpts o = {db, name, "data", "test", 0, 0, dir, 0, 0};
    int saved = quiet_begin();
    int rc = train_run(&c, &o);
    quiet_end(saved);
    cr_assert_eq(rc, 0, "training %s failed", name);
}

Test(infer, eval_stores_every_scheme_and_rule, .timeout = 120) {
    set_threads(1);
    char dir[] = "/tmp/gated-infer-XXXXXX", db[128], err[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/i.db", dir);
    train_synth(db, dir, "gated", 1);
    train_synth(db, dir, "plain", 0);
    QuantSpec q[2];
    DropSpec d[2];
    cr_assert_eq(quant_spec_parse("w8-a8token", &q[0], err, sizeof err), 0);
    cr_assert_eq(quant_spec_parse("w4g16", &q[1], err, sizeof err), 0);
    cr_assert_eq(drop_spec_parse("gate:0.5", &d[0], err, sizeof err), 0);
    cr_assert_eq(drop_spec_parse("frac:0.25", &d[1], err, sizeof err), 0);
    EvalOpts o = {db, "data", dir, NULL, 0, ROPE_NONE, 0, 4, 1, 0, 0, q, 2, d, 2};
    int saved = quiet_begin();
    int rc = eval_run("gated", &o) | eval_run("plain", &o);
    quiet_end(saved);
    cr_assert_eq(rc, 0);
    int f;
    char ctx[128];
    const char *rules[] = {"gate,tau=0.5", "random,tau=0.5", "entropy,tau=0.5", "random,frac=0.25",
                           "entropy,frac=0.25"};
    double with_quant[5];
    for (int i = 0; i < 5; i++) {
        snprintf(ctx, sizeof ctx, "split=val,len=32,drop=%s", rules[i]);
        with_quant[i] = metric(db, "infer_loss", ctx, &f);
        cr_assert(f, "%s", ctx);
    }
    /* the drop rules alone (no weight copy): the same losses, bit for bit,
     * so the schemes before them left the float weights as they were */
    EvalOpts od = o;
    od.nquant = 0;
    saved = quiet_begin();
    int rcd = eval_run("gated", &od);
    quiet_end(saved);
    cr_assert_eq(rcd, 0);
    for (int i = 0; i < 5; i++) {
        snprintf(ctx, sizeof ctx, "split=val,len=32,drop=%s", rules[i]);
        double v = metric(db, "infer_loss", ctx, &f);
        cr_assert(f && v == with_quant[i], "%s: %.17g after quantization, %.17g alone", rules[i], with_quant[i], v);
    }
    for (int k = 0; k < LIN__COUNT; k++) {
        snprintf(ctx, sizeof ctx, "split=val,len=32,site=%s", lin_site_names[k]);
        double mx = metric(db, "infer_in_max", ctx, &f), of = metric(db, "infer_in_outlier", ctx, &f);
        cr_assert(f && mx > 0 && of >= 1, "%s: max %g outlier %g", ctx, mx, of);
    }
    double pf = metric_of(db, "plain", "infer_loss", "split=val,len=32,quant=float", &f);
    cr_assert(f && pf != metric(db, "infer_loss", "split=val,len=32,quant=float", &f), "two runs, one float loss");
    /* synth_config trains at T = 32: the default length */
    double fl = metric(db, "infer_loss", "split=val,len=32,quant=float", &f);
    cr_assert(f && isfinite(fl));
    double w8 = metric(db, "infer_loss", "split=val,len=32,quant=w8-a8token", &f);
    cr_assert(f && fabs(w8 - fl) < 0.05 && w8 != fl, "w8a8 %g float %g", w8, fl);
    cr_assert(metric(db, "infer_windows", "split=val,len=32,quant=w4g16", &f) == 4 && f);
    double p = metric(db, "infer_ppl", "split=val,len=32,quant=w4g16", &f);
    double l = metric(db, "infer_loss", "split=val,len=32,quant=w4g16", &f);
    cr_assert(f && fabs(p - exp(l)) < 1e-9 * p);
    double drop[5];
    for (int i = 0; i < 5; i++) {
        snprintf(ctx, sizeof ctx, "split=val,len=32,drop=%s", rules[i]);
        drop[i] = metric(db, "infer_drop", ctx, &f);
        cr_assert(f, "%s missing", ctx);
        double fw = metric(db, "infer_flops_wo", ctx, &f), fa = metric(db, "infer_flops_attn", ctx, &f);
        cr_assert(f && fw > 0 && fa > fw && fa < 1, "%s: flops %g %g", ctx, fw, fa);
    }
    cr_assert(drop[0] > 0.01 && drop[0] < 0.99, "gate at 0.5 dropped %g", drop[0]);
    cr_assert(drop[1] == drop[0] && drop[2] == drop[0], "matched %g %g vs %g", drop[1], drop[2], drop[0]);
    cr_assert(fabs(drop[3] - 0.25) < 0.01 && fabs(drop[4] - 0.25) < 0.01);
    /* the ungated run: no gate rule, but the fraction controls */
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT count(*), sum(m.context LIKE '%drop=gate%') FROM metrics m JOIN runs r "
                                    "USING (run_id) WHERE r.name = 'plain' AND m.key = 'infer_drop'",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 2, "plain: %d drop rows", sqlite3_column_int(st, 0));
    cr_assert_eq(sqlite3_column_int(st, 1), 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    char rm[200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    cr_assert_eq(system(rm), 0);
}
