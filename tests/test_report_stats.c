/*
 * test_report_stats.c — the statistics of `gated report` and `gated
 * compare` (lab/stats.h) against reference values: the Student-t
 * distribution (mpmath at 30 digits), Welch's and the paired t-test,
 * Holm–Bonferroni, Fisher's exact test and its stratified form (exact
 * fractions, as computed by an independent Python script; R's example), the Mann-Whitney U test (by hand and by brute
 * force over every ordering), TOST and the minimum detectable effect
 * (closed forms of the t distribution at df 1, 2 and 4); see the values'
 * comments.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/probes.h"
#include "lab/paper.h"
#include "lab/report/report.h"
#include "testutil.h"
#include "lab/stats.h"
#include "run/store.h"
#include "report_fx.h"

/* ------------------------------------------------------------------ */
/* statistics                                                          */
/* ------------------------------------------------------------------ */

Test(report, t_distribution) {
    /* regularized incomplete beta */
    cr_assert_float_eq(stats_betainc(2, 3, 0.5), 0.6875, 1e-12);
    cr_assert_float_eq(stats_betainc(0.5, 5, 0.3), 0.934737753831091821, 1e-12);
    cr_assert_float_eq(stats_betainc(10, 0.5, 0.9), 0.151640909634709969, 1e-12);
    cr_assert_eq(stats_betainc(2, 3, 0), 0);
    cr_assert_eq(stats_betainc(2, 3, 1), 1);
    cr_assert(isnan(stats_betainc(-1, 3, 0.5)));
    /* two-sided p-values */
    cr_assert_float_eq(stats_t_p2(2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(stats_t_p2(-2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(stats_t_p2(2.776, 4), 0.0500227783199764076, 1e-10);
    cr_assert_float_eq(stats_t_p2(1.0, 1), 0.5, 1e-12);  /* Cauchy */
    cr_assert_float_eq(stats_t_p2(1.96, 1e6), 0.0499960675828293641, 1e-9);
    cr_assert_float_eq(stats_t_p2(0, 3), 1.0, 1e-15);
    cr_assert_eq(stats_t_p2(INFINITY, 3), 0);
    /* CDF and quantiles */
    cr_assert_float_eq(stats_t_cdf(2.0, 5), 1 - 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(stats_t_cdf(-2.0, 5), 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(stats_t_cdf(0, 7), 0.5, 1e-15);
    cr_assert_float_eq(stats_t_quantile(0.975, 4), 2.77644510519779349, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.975, 10), 2.22813885198627422, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.025, 10), -2.22813885198627422, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.5, 3), 0, 1e-12);
}

Test(report, welch) {
    const double base[3] = {1.50, 1.52, 1.54}, g1[3] = {1.40, 1.41, 1.42}, hw[3] = {1.49, 1.53, 1.57};
    double m, sd;
    stats_mean_std(base, 3, &m, &sd);
    cr_assert_float_eq(m, 1.52, 1e-12);
    cr_assert_float_eq(sd, 0.02, 1e-12);
    stats_mean_std(base, 1, &m, &sd);
    cr_assert(m == 1.50 && isnan(sd));
    stats_mean_std(base, 0, &m, &sd);
    cr_assert(isnan(m) && isnan(sd));
    stats_mean_std(base, 3, NULL, &sd); /* either output may be NULL */
    cr_assert_float_eq(sd, 0.02, 1e-12);
    TTest w;
    cr_assert_eq(stats_welch(g1, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.diff, -0.11, 1e-12);
    cr_assert_float_eq(w.t, -8.52056336165631654, 1e-9);
    cr_assert_float_eq(w.df, 2.94117647058823529, 1e-9); /* 50/17 */
    cr_assert_float_eq(w.p, 0.00365995558368264891, 1e-10);
    cr_assert_float_eq(w.lo, -0.151553995031825180, 1e-9);
    cr_assert_float_eq(w.hi, -0.0684460049681750155, 1e-9);
    cr_assert_eq(stats_welch(hw, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.p, 0.724856169924420301, 1e-10);
    cr_assert_float_eq(w.lo, -0.0731079900636501556, 1e-9);
    cr_assert_float_eq(w.hi, 0.0931079900636501734, 1e-9);
    /* too few runs; zero variance */
    cr_assert_eq(stats_welch(hw, 1, base, 3, &w), -1);
    const double c1[2] = {1, 1}, c2[2] = {2, 2};
    cr_assert_eq(stats_welch(c1, 2, c2, 2, &w), 0);
    cr_assert(w.p == 0 && w.lo == -1 && w.hi == -1);
    cr_assert_eq(stats_welch(c1, 2, c1, 2, &w), 0);
    cr_assert(w.p == 1);
}

Test(report, paired_holm_fisher) {
    /* paired: the per-seed differences, not the two samples' spreads */
    const double base[3] = {1.50, 1.52, 1.54}, g1[3] = {1.40, 1.41, 1.42}, silu[3] = {1.48, 1.49, 1.50};
    TTest w;
    cr_assert_eq(stats_paired(g1, base, 3, &w), 0);
    cr_assert_float_eq(w.diff, -0.11, 1e-12);
    cr_assert_float_eq(w.t, -19.0525588832576502, 1e-8);
    cr_assert_eq(w.df, 2);
    cr_assert_float_eq(w.p, 0.00274348939442592404, 1e-11);
    cr_assert_float_eq(w.lo, -0.134841377117503311, 1e-9);
    cr_assert_float_eq(w.hi, -0.0851586228824966893, 1e-9);
    cr_assert_eq(stats_paired(silu, base, 3, &w), 0);
    cr_assert_float_eq(w.t, -5.19615242270663188, 1e-9);
    cr_assert_float_eq(w.p, 0.0350987186459846505, 1e-10);
    cr_assert_float_eq(w.lo, -0.0548413771175033107, 1e-9);
    cr_assert_float_eq(w.hi, -0.00515862288249668929, 1e-9);
    cr_assert_eq(stats_welch(silu, 3, base, 3, &w), 0); /* unpaired, the same data: far weaker */
    cr_assert_float_eq(w.p, 0.104478886684721866, 1e-10);
    const double a2[2] = {1.80, 1.85}, b2[2] = {2.50, 2.60}; /* df = 1 */
    cr_assert_eq(stats_paired(a2, b2, 2, &w), 0);
    cr_assert_float_eq(w.diff, -0.725, 1e-12);
    cr_assert_float_eq(w.t, -29.0, 1e-9);
    cr_assert_float_eq(w.p, 0.0219437112320219625, 1e-10);
    cr_assert_float_eq(w.lo, -1.04265511840436762, 1e-8);
    cr_assert_float_eq(w.hi, -0.407344881595632384, 1e-8);
    cr_assert_eq(stats_paired(a2, b2, 1, &w), -1);
    const double c1[2] = {1, 2}, c2[2] = {2, 3};
    cr_assert_eq(stats_paired(c1, c2, 2, &w), 0); /* constant differences */
    cr_assert(w.p == 0 && w.lo == -1 && w.hi == -1);
    cr_assert_eq(stats_paired(c1, c1, 2, &w), 0);
    cr_assert(w.p == 1 && w.diff == 0);

    /* Holm: sorted 0.005 0.01 0.03 0.04 -> 4x, 3x, 2x, then the running maximum */
    double p[6] = {0.01, NAN, 0.04, 0.03, 0.005, NAN}, adj[6];
    cr_assert_eq(stats_holm(p, 6, adj), 0);
    cr_assert_float_eq(adj[0], 0.03, 1e-15);
    cr_assert(isnan(adj[1]) && isnan(adj[5]));
    cr_assert_float_eq(adj[2], 0.06, 1e-15); /* 1 x 0.04 < 0.06 */
    cr_assert_float_eq(adj[3], 0.06, 1e-15);
    cr_assert_float_eq(adj[4], 0.02, 1e-15);
    double q[3] = {0.6, 0.5, 0.02};
    cr_assert_eq(stats_holm(q, 3, q), 0); /* in place; capped at 1 */
    cr_assert(q[0] == 1 && q[1] == 1);
    cr_assert_float_eq(q[2], 0.06, 1e-15);
    double one = 0.03, none = NAN;
    cr_assert_eq(stats_holm(&one, 1, &one), 0); /* a family of one: unadjusted */
    cr_assert_eq(one, 0.03);
    cr_assert_eq(stats_holm(&none, 1, &none), 0);
    cr_assert(isnan(none));
    cr_assert_eq(stats_holm(p, 0, adj), 0); /* no p-values: nothing to do */

    /* Fisher, two-sided (exact fractions) */
    cr_assert_float_eq(stats_fisher_exact(3, 1, 1, 3), 17.0 / 35, 1e-12);       /* the tea-tasting table */
    cr_assert_float_eq(stats_fisher_exact(1, 9, 11, 3), 41.0 / 14858, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(6, 2, 1, 4), 4.0 / 39, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(2, 7, 8, 2), 1063.0 / 46189, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(0, 5, 5, 0), 1.0 / 126, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(0, 4, 2, 2), 3.0 / 7, 1e-12);        /* the lr sweep's */
    cr_assert_float_eq(stats_fisher_exact(10, 0, 0, 1), 1.0 / 11, 1e-12);
    cr_assert_eq(stats_fisher_exact(0, 4, 0, 4), 1);                             /* nobody diverged */
    cr_assert(isnan(stats_fisher_exact(0, 0, 1, 3)));
    cr_assert(isnan(stats_fisher_exact(-1, 2, 1, 3)));
}

/* The exact stratified test against R's mantelhaen.test(exact = TRUE) on
 * its Rabbits example (S = 16, p-value = 0.03994) and exact fractions from
 * an independent brute force over every table of the strata (Python's
 * Fraction, the same two-sided rule). */
Test(report, cmh_exact) {
    static const long rabbits[5][4] = {{0, 6, 0, 5}, {3, 3, 0, 6}, {6, 0, 2, 4}, {5, 1, 6, 0}, {2, 0, 5, 0}};
    double p;
    cr_assert_eq(stats_cmh_exact(rabbits, 5, &p), 0);
    cr_assert_float_eq(p, 29.0 / 726, 1e-12); /* 0.039945 */
    /* two strata [[1, 0], [0, 1]]: S in {0, 1, 2} with 1/4, 1/2, 1/4; S = 2 observed */
    static const long two[2][4] = {{1, 0, 0, 1}, {1, 0, 0, 1}};
    cr_assert_eq(stats_cmh_exact(two, 2, &p), 0);
    cr_assert_float_eq(p, 0.5, 1e-12);
    /* lr strata: 0.35, 0.5 and an lr where every run diverged (a single table: no information) */
    static const long lr3[3][4] = {{0, 4, 2, 2}, {1, 3, 3, 1}, {4, 0, 4, 0}};
    cr_assert_eq(stats_cmh_exact(lr3, 3, &p), 0);
    cr_assert_float_eq(p, 59.0 / 490, 1e-12);
    static const long lr4[4][4] = {{2, 2, 0, 4}, {3, 1, 0, 4}, {4, 0, 2, 2}, {4, 0, 4, 0}};
    cr_assert_eq(stats_cmh_exact(lr4, 4, &p), 0);
    cr_assert_float_eq(p, 9.0 / 1372, 1e-12);
    /* one stratum is Fisher's test; a stratum with an empty row is left out */
    static const long one[2][4] = {{1, 9, 11, 3}, {0, 0, 3, 1}};
    cr_assert_eq(stats_cmh_exact(one, 2, &p), 0);
    cr_assert_float_eq(p, stats_fisher_exact(1, 9, 11, 3), 1e-15);
    static const long same[2][4] = {{0, 4, 0, 4}, {4, 0, 4, 0}}; /* a single value of S */
    cr_assert_eq(stats_cmh_exact(same, 2, &p), 0);
    cr_assert_eq(p, 1);
    static const long empty[1][4] = {{0, 0, 1, 3}}, neg[1][4] = {{-1, 2, 1, 3}};
    static const long huge[1][4] = {{1L << 20, 1L << 20, 1L << 20, 1L << 20}};
    cr_assert_eq(stats_cmh_exact(empty, 1, &p), 0);
    cr_assert(isnan(p));
    cr_assert_eq(stats_cmh_exact(neg, 1, &p), 0);
    cr_assert(isnan(p));
    cr_assert_eq(stats_cmh_exact(huge, 1, &p), 0); /* past the bound on the support */
    cr_assert(isnan(p));
    cr_assert_eq(stats_cmh_exact(rabbits, 0, &p), 0);
    cr_assert(isnan(p));
}

/* Mann-Whitney U against hand-computed values: U counted pair by pair,
 * exact p-values as fractions of the C(n+m, n) orderings (the orderings
 * with U <= k are the partitions of k into at most n parts no larger than
 * m), the normal approximation's z from hand-ranked data (midranks, the
 * tie term sum(t^3 - t)), checked also against a normal table; and the
 * exact distribution against brute force over every ordering. */
Test(report, mann_whitney) {
    MWUTest w;
    const double lo3[3] = {1, 2, 3}, hi3[3] = {4, 5, 6};
    cr_assert_eq(stats_mann_whitney(lo3, 3, hi3, 3, &w), 0);
    cr_assert(w.exact && w.u == 0);
    cr_assert_float_eq(w.p, 2.0 / 20, 1e-12); /* the one ordering of 20 at each end */
    cr_assert_eq(stats_mann_whitney(hi3, 3, lo3, 3, &w), 0);
    cr_assert(w.u == 9);
    cr_assert_float_eq(w.p, 2.0 / 20, 1e-12);
    /* u = 3 (3 > 2, 5 > 2, 5 > 4); U <= 3 of 3 vs 4: 1 + 1 + 2 + 3 = 7 of 35 orderings */
    const double a34[3] = {1, 3, 5}, b34[4] = {2, 4, 6, 7};
    cr_assert_eq(stats_mann_whitney(a34, 3, b34, 4, &w), 0);
    cr_assert(w.exact && w.u == 3);
    cr_assert_float_eq(w.p, 14.0 / 35, 1e-12);
    /* Conover's example (SciPy's docs: p 0.1111): u = 3 + 4 + 2 + 4 + 4 = 17 of 20, 7 of 126 orderings */
    const double males[5] = {19, 22, 16, 29, 24}, females[4] = {20, 11, 17, 12};
    cr_assert_eq(stats_mann_whitney(males, 5, females, 4, &w), 0);
    cr_assert(w.exact && w.u == 17);
    cr_assert_float_eq(w.p, 1.0 / 9, 1e-12);
    /* u at the centre: 2 P(U <= 2) = 2 x 4/6, capped at 1 */
    const double a22[2] = {1, 4}, b22[2] = {2, 3};
    cr_assert_eq(stats_mann_whitney(a22, 2, b22, 2, &w), 0);
    cr_assert(w.u == 2 && w.p == 1);

    /* ties: normal approximation.  {1,2,2} vs {2,3,3,4}: ranks 1 | 3 3 3 | 5.5 5.5 | 7, R_a = 7,
     * u = 7 - 6 = 1; sigma^2 = 12/12 (8 - (24 + 6) / 42) = 51/7; z = (11 - 6 - 1/2) / sigma = 1.667
     * (a normal table: two-sided 0.0955) */
    const double at[3] = {1, 2, 2}, bt[4] = {2, 3, 3, 4};
    cr_assert_eq(stats_mann_whitney(at, 3, bt, 4, &w), 0);
    cr_assert(!w.exact && w.u == 1);
    cr_assert_float_eq(w.p, erfc(4.5 / sqrt(51.0 / 7) / sqrt(2.0)), 1e-12);
    cr_assert_float_eq(w.p, 0.0955, 5e-4);
    /* both samples over 8, no ties: normal.  u = 0, sigma^2 = 100 x 21 / 12 = 175, z = 49.5 / sqrt(175)
     * = 3.742 (table: 1.83e-4) */
    double s10[20];
    for (int i = 0; i < 20; i++) s10[i] = i + 1;
    cr_assert_eq(stats_mann_whitney(s10, 10, s10 + 10, 10, &w), 0);
    cr_assert(!w.exact && w.u == 0);
    cr_assert_float_eq(w.p, erfc(49.5 / sqrt(175.0) / sqrt(2.0)), 1e-15);
    cr_assert_float_eq(w.p, 1.83e-4, 0.02e-4);
    /* every value tied: no evidence at all */
    const double five[3] = {5, 5, 5};
    cr_assert_eq(stats_mann_whitney(five, 2, five, 3, &w), 0);
    cr_assert(w.u == 3 && w.p == 1);
    /* nothing to test */
    const double nan1[1] = {NAN};
    cr_assert_eq(stats_mann_whitney(lo3, 0, hi3, 3, &w), -1);
    cr_assert_eq(stats_mann_whitney(nan1, 1, hi3, 3, &w), -1);

    /* the smallest p: 2 / C(n+m, n) */
    cr_assert_float_eq(stats_mann_whitney_min_p(3, 3), 0.1, 1e-12);
    cr_assert_float_eq(stats_mann_whitney_min_p(4, 4), 2.0 / 70, 1e-12);
    cr_assert_float_eq(stats_mann_whitney_min_p(3, 5), 2.0 / 56, 1e-12);
    cr_assert_eq(stats_mann_whitney_min_p(1, 1), 1);
    cr_assert_eq(stats_mann_whitney_min_p(0, 3), 1);

    /* the exact distribution against brute force: every subset of n of the n+m ranks as sample a */
    static const int nm[][2] = {{1, 4}, {3, 3}, {5, 7}, {8, 9}, {7, 2}};
    for (size_t c = 0; c < sizeof nm / sizeof nm[0]; c++) {
        int n = nm[c][0], m = nm[c][1], N = n + m;
        double hist[80] = {0}, total = 0;
        for (unsigned mask = 0; mask < 1u << N; mask++) {
            if (__builtin_popcount(mask) != n) continue;
            int u = 0, below = 0; /* u: pairs (a, b) with a above b */
            for (int r = 0; r < N; r++) {
                if (mask >> r & 1)
                    u += below;
                else
                    below++;
            }
            hist[u]++;
            total++;
        }
        for (unsigned mask = 0; mask < 1u << N; mask++) {
            if (__builtin_popcount(mask) != n) continue;
            double a[16], b[16];
            int ia = 0, ib = 0, u = 0, below = 0;
            for (int r = 0; r < N; r++) {
                if (mask >> r & 1) {
                    a[ia++] = r;
                    u += below;
                } else {
                    b[ib++] = r;
                    below++;
                }
            }
            int k = u < n * m - u ? u : n * m - u;
            double cum = 0;
            for (int j = 0; j <= k; j++) cum += hist[j];
            double p = 2 * cum / total > 1 ? 1 : 2 * cum / total;
            cr_assert_eq(stats_mann_whitney(a, n, b, m, &w), 0);
            cr_assert(w.exact && w.u == u, "%d vs %d: u %g, expected %d", n, m, w.u, u);
            cr_assert_float_eq(w.p, p, 1e-12 * p, "%d vs %d, u %d: p %.17g, expected %.17g", n, m, u, w.p, p);
            if (u == 0) cr_assert_float_eq(stats_mann_whitney_min_p(n, m), p, 1e-12 * p);
        }
    }
}

/* TOST and the minimum detectable effect against closed forms of the t
 * distribution: df 1 (Cauchy) P(T <= t) = 1/2 + atan(t) / pi and quantile
 * tan(pi (p - 1/2)); df 2 P(T <= t) = 1/2 + t / (2 sqrt(t^2 + 2)) and
 * quantile (2p - 1) / sqrt(2 p (1 - p)); and a printed t table (df 10). */
Test(report, tost_and_mde) {
    /* per-seed differences 0.01 0.02 0.03: mean 0.02, sd 0.01, se 0.01 / sqrt(3), df 2 */
    const double base[3] = {1.50, 1.52, 1.54}, up[3] = {1.51, 1.54, 1.57}, down[3] = {1.49, 1.50, 1.51};
    TTest w;
    cr_assert_eq(stats_paired(up, base, 3, &w), 0);
    /* margin 0.05: t = (0.02 + 0.05) / se = 7 sqrt(3) and (0.02 - 0.05) / se = -3 sqrt(3); the upper test decides */
    double p = stats_tost(&w, 0.05);
    cr_assert_float_eq(p, fmax(cdf_df2(-7 * sqrt(3)), cdf_df2(-3 * sqrt(3))), 1e-9);
    cr_assert_float_eq(p, cdf_df2(-3 * sqrt(3)), 1e-9);
    cr_assert(p < 0.05, "p %g: |0.02| inside +-0.05", p);
    /* a mirror image gives the same p */
    cr_assert_eq(stats_paired(down, base, 3, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.05), p, 1e-12);
    /* margin 0.01, below |Δ|: t = (0.02 - 0.01) / se = sqrt(3) on the near side: far from equivalent */
    cr_assert_eq(stats_paired(up, base, 3, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.01), cdf_df2(sqrt(3)), 1e-9);
    /* p < alpha exactly when the (1 - 2 alpha) interval lies inside the margin: at margin = |Δ| + t(0.95) se,
     * p = 0.05 */
    cr_assert_float_eq(stats_tost(&w, 0.02 + q_df2(0.95) * 0.01 / sqrt(3)), 0.05, 1e-9);
    /* df 1 (2 pairs): differences 0 and 0.02, mean 0.01, se 0.01; margin 0.03: t = 4 and -2 */
    const double a2[2] = {1.00, 1.02}, b2[2] = {1.00, 1.00};
    cr_assert_eq(stats_paired(a2, b2, 2, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.03), fmax(0.5 + atan(-4) / M_PI, 0.5 + atan(-2) / M_PI), 1e-9);
    /* Welch: the test's own se and df */
    TTest t = {.diff = 0.01, .se = 0.01, .df = 2};
    cr_assert_float_eq(stats_tost(&t, 0.03), cdf_df2(-2), 1e-9);
    /* no spread: inside the margin or not; no margin: no test */
    const double c1[2] = {1.25, 2.25}, c2[2] = {1.00, 2.00}; /* differences exactly 0.25 */
    cr_assert_eq(stats_paired(c1, c2, 2, &w), 0);
    cr_assert_eq(stats_tost(&w, 0.5), 0);
    cr_assert_eq(stats_tost(&w, 0.125), 1);
    cr_assert(isnan(stats_tost(&w, 0)) && isnan(stats_tost(&w, -0.02)) && isnan(stats_tost(&w, NAN)));
    t.se = NAN;
    cr_assert(isnan(stats_tost(&t, 0.02)));

    /* MDE = (t(1 - alpha/2, n-1) + t(power, n-1)) sd / sqrt(n) */
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05, 0.8), (q_df2(0.975) + q_df2(0.8)) * 0.01 / sqrt(3), 1e-9);
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05, 0.8), (4.302653 + 1.060660) * 0.01 / sqrt(3), 1e-8);
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05 / 4, 0.8), (q_df2(1 - 0.05 / 8) + q_df2(0.8)) * 0.01 / sqrt(3),
                       1e-9); /* Holm's worst case in a family of 4 */
    cr_assert_float_eq(stats_paired_mde(0.02, 2, 0.05, 0.8), (tan(M_PI * 0.475) + tan(M_PI * 0.3)) * 0.02 / sqrt(2),
                       1e-9);
    /* df 10 from a printed table: t(0.975) = 2.228, t(0.80) = 0.879 */
    cr_assert_float_eq(stats_paired_mde(1, 11, 0.05, 0.8), (2.228 + 0.879) / sqrt(11), 1e-3);
    /* more seeds, smaller effects; more power, larger */
    cr_assert(stats_paired_mde(1, 6, 0.05, 0.8) < stats_paired_mde(1, 3, 0.05, 0.8));
    cr_assert(stats_paired_mde(1, 3, 0.05, 0.9) > stats_paired_mde(1, 3, 0.05, 0.8));
    cr_assert_eq(stats_paired_mde(0, 3, 0.05, 0.8), 0);
    cr_assert(isnan(stats_paired_mde(0.01, 1, 0.05, 0.8)) && isnan(stats_paired_mde(NAN, 3, 0.05, 0.8)) &&
              isnan(stats_paired_mde(0.01, 3, 0, 0.8)) && isnan(stats_paired_mde(0.01, 3, 0.05, 1)));
}
