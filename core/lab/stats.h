/*
 * stats.h — the statistics of `gated report` (report.h): the Student-t
 * distribution, mean and sample standard deviation, Welch's and the paired
 * t-test, the two one-sided tests of equivalence (TOST), the minimum
 * detectable effect of a paired t-test, Holm–Bonferroni, Fisher's exact
 * test and its stratified form (the exact Cochran–Mantel–Haenszel test);
 * and of `gated compare` (bench.h): the Mann–Whitney U test.
 *
 * Pure functions of their arguments (no I/O, no global state; stats_holm
 * and stats_cmh_exact alone allocate, and say so).  Small samples are part
 * of the contract, since a report row may have 0, 1 or 2 finished runs:
 * each function says what it returns for n < 2.
 */
#ifndef GATED_STATS_H
#define GATED_STATS_H

/* Regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1]
 * (continued fraction, Lentz's method).  NAN outside the domain. */
double stats_betainc(double a, double b, double x);
/* Student-t cumulative distribution P(T <= t) with df > 0 degrees of
 * freedom (df need not be an integer).  NAN for a NAN t or df <= 0. */
double stats_t_cdf(double t, double df);
/* Two-sided p-value P(|T| >= |t|): 0 for an infinite t; NAN for a NAN t
 * or df <= 0. */
double stats_t_p2(double t, double df);
/* Quantile: the t with P(T <= t) = p, p in (0, 1) (bisection); NAN for a
 * p outside (0, 1) or df <= 0. */
double stats_t_quantile(double p, double df);

/* Mean and sample standard deviation (n - 1) of x[0..n-1]; either output
 * may be NULL.  n = 1: the mean is x[0] and std is NAN; n < 1: both NAN. */
void stats_mean_std(const double *x, int n, double *mean, double *std);

/* A t-test of a difference: Welch's (two samples) or paired (one sample of
 * per-seed differences). */
typedef struct {
    double diff;       /* mean(a) - mean(b); paired: mean of a_i - b_i */
    double se;         /* standard error of diff */
    double t, df, p;   /* statistic, degrees of freedom, two-sided p */
    double lo, hi;     /* 95% confidence interval of diff */
} TTest;

/* Welch's unequal-variance t-test of mean(a) - mean(b): se = sqrt(var_a /
 * na + var_b / nb), Welch–Satterthwaite df.  0 on success; -1 (w
 * untouched) when na < 2 or nb < 2.  With zero variance in both samples:
 * p = 1 if the means are equal, else 0, and the interval is [diff, diff]
 * (df = na + nb - 2). */
int stats_welch(const double *a, int na, const double *b, int nb, TTest *w);

/* Paired t-test of the differences d_i = a_i - b_i, i < n: diff = mean(d),
 * se = std(d) / sqrt(n), df = n - 1.  0 on success; -1 (w untouched) when
 * n < 2.  Zero variance of d: p = 1 if diff = 0, else 0; interval [diff,
 * diff]. */
int stats_paired(const double *a, const double *b, int n, TTest *w);

/* Equivalence (TOST, Schuirmann's two one-sided tests) of the difference
 * that t tested (stats_welch or stats_paired: its diff, se and df) within
 * the margin (-margin, +margin), margin > 0: H0 |diff| >= margin against
 * H1 |diff| < margin, p = max(P(T >= (diff + margin) / se), P(T <= (diff -
 * margin) / se)) with T ~ t(df).  p < alpha is the same as the (1 - 2
 * alpha) confidence interval lying inside the margin.  se = 0: 0 when
 * |diff| < margin, else 1.  NAN when margin is not positive and finite or
 * diff, se or df is NAN. */
double stats_tost(const TTest *t, double margin);

/* The minimum detectable effect of a two-sided paired t-test of n pairs
 * whose differences have standard deviation sd: the |mean difference| it
 * finds at level alpha with probability `power`, (t(1 - alpha/2, n - 1) +
 * t(power, n - 1)) sd / sqrt(n) (the usual approximation: the noncentral t
 * replaced by a shifted central one).  NAN when n < 2, sd is NAN or
 * negative, or alpha or power is outside (0, 1). */
double stats_paired_mde(double sd, int n, double alpha, double power);

/* Holm–Bonferroni: adj[i] for the family of the non-NAN p[i] (m of them):
 * sorted ascending (ties in index order), adj_(j) = max over k <= j of
 * min(1, (m - k + 1) p_(k)) (ranks from 1); NAN where p[i] is NAN.  m = 1:
 * adj = p; n = 0: nothing to do.  adj may be p.  0, or -1 when out of
 * memory (adj untouched). */
int stats_holm(const double *p, int n, double *adj);

/* Fisher's exact test of the 2x2 table [[a, b], [c, d]] (counts >= 0),
 * two-sided: the sum of the hypergeometric probabilities (margins fixed)
 * of the tables no more likely than the observed one (relative tolerance
 * 1e-7, as R and SciPy).  NAN when a count is negative or a row is empty;
 * 1 when the margins allow a single table. */
double stats_fisher_exact(long a, long b, long c, long d);

/* The exact conditional test of independence in k 2x2 tables (strata
 * t[i] = {a, b, c, d}, the table [[a, b], [c, d]]), two-sided, as R's
 * mantelhaen.test(exact = TRUE): under a common odds ratio of 1 and every
 * stratum's margins fixed, the sum S of the top-left counts has the
 * convolution of the strata's hypergeometric distributions; p sums the
 * probabilities of the values of S no more likely than the observed one
 * (relative tolerance 1e-7, as stats_fisher_exact, which it equals for k =
 * 1).  A stratum with an empty row carries no information and is left out.
 * *p: NAN when a count is negative, no stratum is left, or the strata's
 * supports sum to 2^20 values or more; 1 when the margins allow a single
 * value of S.  0, or -1 when out of memory (*p NAN). */
int stats_cmh_exact(const long (*t)[4], int k, double *p);

/* The Mann–Whitney U test (Wilcoxon rank-sum), two-sided, of samples a and
 * b: are they drawn from one distribution?  As SciPy's mannwhitneyu with
 * its defaults (what Google Benchmark's compare.py calls): u is the U of a,
 * the number of pairs (a_i, b_j) with a_i > b_j plus half the tied pairs.
 * Exact: no ties, the smaller sample at most 8 values and na * nb at most
 * 100000; p = 2 P(U <= min(u, na nb - u)) under the null (every ordering
 * of the na + nb values equally likely), at most 1.  Otherwise the normal
 * approximation with the tie correction and a continuity correction of
 * 1/2: sigma^2 = na nb / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))), N =
 * na + nb, t the size of each group of tied values; z = (max(u, na nb - u)
 * - na nb / 2 - 1/2) / sigma, p = 2 (1 - Phi(z)), at most 1 (1 when every
 * value is tied).  0 on success; -1 (w untouched) when na < 1, nb < 1, a
 * value is NAN, or out of memory. */
typedef struct {
    double u, p;
    int exact; /* 1: the exact distribution; 0: the normal approximation */
} MWUTest;
int stats_mann_whitney(const double *a, int na, const double *b, int nb, MWUTest *w);

/* The smallest two-sided p the test can give for samples of na and nb
 * values (no ties, the samples apart): 2 / C(na + nb, na), at most 1; 1
 * when na < 1 or nb < 1.  3 against 3 values: 0.1, so no result of 3
 * repetitions each is significant at 0.05. */
double stats_mann_whitney_min_p(int na, int nb);

#endif
