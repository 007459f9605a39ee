/*
 * stats.c — the statistics of `gated report` (stats.h).
 *
 * The t distribution comes from the regularized incomplete beta function:
 * P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2), the beta
 * function's continued fraction evaluated by the modified Lentz method (as
 * Numerical Recipes' betacf), x and 1 - x passed apart so that a tail near
 * 0 keeps its precision.  Quantiles bisect the CDF until the interval
 * cannot shrink (400 halvings at most).  Fisher's exact test sums the
 * hypergeometric probabilities in log space (lgamma), so large counts do
 * not overflow; the exact test of k such tables (stratified) convolves
 * their hypergeometric distributions into that of the sum of their
 * top-left counts.  The exact Mann–Whitney distribution counts the orderings
 * with U = k: they are the coefficients of the Gaussian binomial
 * [na + nb choose n]_q = prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i) (n the
 * smaller sample), built one factor pair at a time (each partial product
 * [m + i choose i]_q has non-negative integer coefficients) and only up to
 * the degree the tail needs, since both steps compute a coefficient from
 * lower ones.
 */
#include "lab/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Continued fraction of the incomplete beta function (modified Lentz). */
static double betacf(double a, double b, double x) {
    const double EPS = 1e-16, TINY = 1e-300;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < TINY) d = TINY;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 1000; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < TINY) d = TINY;
        c = 1 + aa / c;
        if (fabs(c) < TINY) c = TINY;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < TINY) d = TINY;
        c = 1 + aa / c;
        if (fabs(c) < TINY) c = TINY;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < EPS) break;
    }
    return h;
}

/* I_x(a, b) given x and y = 1 - x (passed separately so that a y near 0
 * keeps its precision). */
static double betainc_xy(double a, double b, double x, double y) {
    if (x <= 0) return 0;
    if (y <= 0) return 1;
    double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(y));
    if (x < (a + 1) / (a + b + 2)) return bt * betacf(a, b, x) / a;
    return 1 - bt * betacf(b, a, y) / b;
}

double stats_betainc(double a, double b, double x) {
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1)) return NAN;
    return betainc_xy(a, b, x, 1 - x);
}

double stats_t_p2(double t, double df) {
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return 0;
    /* P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2) */
    double t2 = t * t;
    return betainc_xy(df / 2, 0.5, df / (df + t2), t2 / (df + t2));
}

double stats_t_cdf(double t, double df) {
    double p2 = stats_t_p2(t, df);
    if (isnan(p2)) return NAN;
    return t > 0 ? 1 - p2 / 2 : p2 / 2;
}

double stats_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    double lo = -1, hi = 1;
    while (stats_t_cdf(lo, df) > p && lo > -1e300) lo *= 2;
    while (stats_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
    for (int i = 0; i < 400; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid == lo || mid == hi) break;
        if (stats_t_cdf(mid, df) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

void stats_mean_std(const double *x, int n, double *mean, double *std) {
    double m = NAN, s = NAN;
    if (n >= 1) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += x[i];
        m = sum / n;
    }
    if (n >= 2) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
        s = sqrt(ss / (n - 1));
    }
    if (mean) *mean = m;
    if (std) *std = s;
}

/* Fill the interval and p of r from r->diff, r->se and r->df. */
static void t_finish(TTest *r) {
    if (r->se == 0) {
        r->t = r->diff == 0 ? 0 : copysign(INFINITY, r->diff);
        r->p = r->diff == 0 ? 1 : 0;
        r->lo = r->hi = r->diff;
    } else {
        r->t = r->diff / r->se;
        r->p = stats_t_p2(r->t, r->df);
        double q = stats_t_quantile(0.975, r->df);
        r->lo = r->diff - q * r->se;
        r->hi = r->diff + q * r->se;
    }
}

int stats_welch(const double *a, int na, const double *b, int nb, TTest *w) {
    if (na < 2 || nb < 2) return -1;
    double ma, sa, mb, sb;
    stats_mean_std(a, na, &ma, &sa);
    stats_mean_std(b, nb, &mb, &sb);
    double va = sa * sa / na, vb = sb * sb / nb;
    TTest r;
    r.diff = ma - mb;
    r.se = sqrt(va + vb);
    if (r.se == 0)
        r.df = na + nb - 2;
    else
        r.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
    t_finish(&r);
    *w = r;
    return 0;
}

int stats_paired(const double *a, const double *b, int n, TTest *w) {
    if (n < 2) return -1;
    double sum = 0, ss = 0;
    for (int i = 0; i < n; i++) sum += a[i] - b[i];
    double m = sum / n;
    for (int i = 0; i < n; i++) ss += (a[i] - b[i] - m) * (a[i] - b[i] - m);
    TTest r;
    r.diff = m;
    r.se = sqrt(ss / (n - 1) / n);
    r.df = n - 1;
    t_finish(&r);
    *w = r;
    return 0;
}

int stats_holm(const double *p, int n, double *adj) {
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    double *out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!idx || !out) {
        free(idx), free(out);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        out[i] = NAN;
        if (isnan(p[i])) continue;
        /* insertion sort, stable: ties keep their order */
        int j = m++;
        while (j > 0 && p[idx[j - 1]] > p[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    double run = 0;
    for (int k = 0; k < m; k++) {
        double v = (double)(m - k) * p[idx[k]];
        if (v > 1) v = 1;
        if (v < run) v = run;
        run = v;
        out[idx[k]] = v;
    }
    memcpy(adj, out, sizeof(double) * (size_t)n);
    free(idx);
    free(out);
    return 0;
}

double stats_tost(const TTest *t, double margin) {
    if (!(margin > 0) || !isfinite(margin) || isnan(t->diff) || isnan(t->se) || isnan(t->df)) return NAN;
    if (t->se == 0) return fabs(t->diff) < margin ? 0 : 1;
    /* lower test: H0 diff <= -margin, p = P(T >= t1) = P(T <= -t1) by symmetry (keeps a small tail's
     * precision); upper test: H0 diff >= +margin, p = P(T <= t2) */
    double p_lo = stats_t_cdf(-(t->diff + margin) / t->se, t->df);
    double p_hi = stats_t_cdf((t->diff - margin) / t->se, t->df);
    return fmax(p_lo, p_hi);
}

double stats_paired_mde(double sd, int n, double alpha, double power) {
    if (n < 2 || !(sd >= 0) || !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return NAN;
    double df = n - 1;
    return (stats_t_quantile(1 - alpha / 2, df) + stats_t_quantile(power, df)) * sd / sqrt(n);
}

static double lchoose(long n, long k) { return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0); }

/* The support [*lo, *hi] of the top-left count of the 2x2 table [[a, b],
 * [c, d]] with its margins fixed, and log C(n, c1), the denominator of
 * hyper_p. */
static double hyper_support(long a, long b, long c, long d, long *lo, long *hi) {
    long r1 = a + b, r2 = c + d, c1 = a + c;
    *lo = c1 - r2 > 0 ? c1 - r2 : 0;
    *hi = c1 < r1 ? c1 : r1;
    return lchoose(r1 + r2, c1);
}

/* P(x) = C(r1, x) C(r2, c1 - x) / C(n, c1): the hypergeometric probability
 * of top-left count x (lden: hyper_support's log C(n, c1)). */
static double hyper_p(long r1, long r2, long c1, long x, double lden) {
    return exp(lchoose(r1, x) + lchoose(r2, c1 - x) - lden);
}

/* The relative tolerance of "no more likely than the observed table". */
static const double REL_TOL = 1e-7;

double stats_fisher_exact(long a, long b, long c, long d) {
    if (a < 0 || b < 0 || c < 0 || d < 0 || a + b == 0 || c + d == 0) return NAN;
    long lo, hi, r1 = a + b, r2 = c + d, c1 = a + c;
    double den = hyper_support(a, b, c, d, &lo, &hi);
    if (lo == hi) return 1;
    double pobs = hyper_p(r1, r2, c1, a, den);
    double p = 0;
    for (long x = lo; x <= hi; x++) {
        double px = hyper_p(r1, r2, c1, x, den);
        if (px <= pobs * (1 + REL_TOL)) p += px;
    }
    return p > 1 ? 1 : p;
}

/* Strata of stats_cmh_exact whose support sums past this are refused
 * (NAN): the convolution's memory is that sum. */
enum { CMH_MAX_SUPPORT = 1 << 20 };

int stats_cmh_exact(const long (*t)[4], int k, double *p) {
    *p = NAN;
    long total = 0, obs = 0, used = 0;
    for (int i = 0; i < k; i++) {
        const long *x = t[i];
        if (x[0] < 0 || x[1] < 0 || x[2] < 0 || x[3] < 0) return 0;
        if (x[0] + x[1] == 0 || x[2] + x[3] == 0) continue; /* an empty row: no information */
        long lo, hi;
        hyper_support(x[0], x[1], x[2], x[3], &lo, &hi);
        total += hi - lo;
        obs += x[0] - lo;
        used++;
        if (total >= CMH_MAX_SUPPORT) return 0;
    }
    if (!used) return 0;
    /* dist[s]: P(S - sum lo = s), S the sum of the top-left counts, one stratum convolved in at a time */
    double *dist = calloc((size_t)total + 1, sizeof *dist), *next = calloc((size_t)total + 1, sizeof *next);
    if (!dist || !next) {
        free(dist), free(next);
        return -1;
    }
    long span = 0;
    dist[0] = 1;
    for (int i = 0; i < k; i++) {
        const long *x = t[i];
        if (x[0] + x[1] == 0 || x[2] + x[3] == 0) continue;
        long lo, hi, r1 = x[0] + x[1], r2 = x[2] + x[3], c1 = x[0] + x[2];
        double den = hyper_support(x[0], x[1], x[2], x[3], &lo, &hi);
        memset(next, 0, sizeof *next * (size_t)(span + hi - lo + 1));
        for (long v = lo; v <= hi; v++) {
            double pv = hyper_p(r1, r2, c1, v, den);
            for (long s = 0; s <= span; s++) next[s + v - lo] += dist[s] * pv;
        }
        span += hi - lo;
        double *tmp = dist;
        dist = next;
        next = tmp;
    }
    double pobs = dist[obs], sum = 0;
    for (long s = 0; s <= total; s++)
        if (dist[s] <= pobs * (1 + REL_TOL)) sum += dist[s];
    free(dist);
    free(next);
    *p = sum > 1 ? 1 : sum;
    return 0;
}

double stats_mann_whitney_min_p(int na, int nb) {
    if (na < 1 || nb < 1) return 1;
    double p = 2 * exp(-lchoose((long)na + nb, na));
    return p > 1 ? 1 : p;
}

typedef struct {
    double v;
    int in_a;
} RankVal;

static int rankval_cmp(const void *x, const void *y) {
    double a = ((const RankVal *)x)->v, b = ((const RankVal *)y)->v;
    return (a > b) - (a < b);
}

/* 2 P(U <= k) for samples of n and m values without ties: the low
 * coefficients of the Gaussian binomial (see the top of the file) over
 * C(n + m, n).  -1 when out of memory. */
static double mwu_exact_p2(int n, int m, long k) {
    if (n > m) {
        int t = n;
        n = m;
        m = t;
    }
    double *f = calloc((size_t)k + 1, sizeof *f);
    if (!f) return -1;
    f[0] = 1;
    for (int i = 1; i <= n; i++) {
        for (long j = k; j >= (long)m + i; j--) f[j] -= f[j - m - i]; /* times (1 - q^(m+i)) */
        for (long j = i; j <= k; j++) f[j] += f[j - i];               /* over (1 - q^i) */
    }
    double cum = 0;
    for (long j = 0; j <= k; j++) cum += f[j];
    free(f);
    double p = 2 * cum * exp(-lchoose((long)n + m, n));
    return p > 1 ? 1 : p;
}

int stats_mann_whitney(const double *a, int na, const double *b, int nb, MWUTest *w) {
    if (na < 1 || nb < 1) return -1;
    int n = na + nb;
    RankVal *v = malloc(sizeof *v * (size_t)n);
    if (!v) return -1;
    for (int i = 0; i < n; i++) {
        v[i] = i < na ? (RankVal){a[i], 1} : (RankVal){b[i - na], 0};
        if (isnan(v[i].v)) {
            free(v);
            return -1;
        }
    }
    qsort(v, (size_t)n, sizeof *v, rankval_cmp);
    /* midranks: a group of t tied values at ranks i+1..i+t gets their mean */
    double ra = 0, ties = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && v[j].v == v[i].v) j++;
        double t = j - i, mid = (i + 1 + j) / 2.0;
        for (int k = i; k < j; k++)
            if (v[k].in_a) ra += mid;
        ties += t * t * t - t;
        i = j;
    }
    free(v);
    double nm = (double)na * nb;
    MWUTest r;
    r.u = ra - na * (na + 1.0) / 2;
    double umax = fmax(r.u, nm - r.u);
    int small = na < nb ? na : nb;
    r.exact = ties == 0 && small <= 8 && nm <= 100000;
    if (r.exact) {
        /* no ties: u is an integer; the lower tail of the symmetric distribution */
        r.p = mwu_exact_p2(na, nb, (long)(nm - umax));
        if (r.p < 0) return -1;
    } else {
        double var = nm / 12 * ((n + 1) - ties / ((double)n * (n - 1)));
        if (!(var > 0)) {
            r.p = 1;
        } else {
            double z = (umax - nm / 2 - 0.5) / sqrt(var);
            r.p = erfc(z / sqrt(2.0));
            if (r.p > 1) r.p = 1;
        }
    }
    *w = r;
    return 0;
}
