/*
 * report.c — `gated report` (see report.h for what it writes).
 *
 * Reading.  The database is opened read-only with store_open_ro (which
 * validates it and writes nothing: a read-only file works, and its bytes
 * stay as they are) and read through store_db() with prepared statements;
 * every value, constant keys such as 'val_loss' included, is bound.
 *
 * Untrusted text.  A database may come from elsewhere (`gated merge`), so
 * every text read from it that reaches an output (sweep names, labels, run
 * ids, code versions) is escaped when loaded (store_escape: control
 * characters as \xNN, so no text holds a newline), and each writer quotes
 * for its format again: gnuplot single-quoted strings ('' for a quote; a
 * control character can never end the line, where gnuplot would run a `!`
 * shell command), Markdown (specials backslash-escaped, labels in code
 * spans with long enough backtick fences), TeX (specials escaped; comments
 * kept to one line), CSV (quoted fields).  File names use
 * [A-Za-z0-9._-] only.  A sweep's membership comes
 * from sweep_runs, LEFT JOINed to runs (membership is recorded before a run
 * exists: such a run is "pending").  A 'running' run whose heartbeat is
 * older than STORE_STALE_SECONDS counts as killed, as in `gated ls`.
 *
 * Per variant row (runs of one label, rows in order of their first idx):
 *   n            finished runs; every mean and std below is over them
 *   div          diverged runs
 *   val loss/PPL summary val_loss / val_ppl: mean ± sample std (n - 1)
 *   ref          the row Δ is against: the baseline row; when the rows differ
 *                in train.lr (as the lr plot decides) and the baseline row
 *                has one lr and one config, the row whose config equals the
 *                baseline's but for train.lr, train.min_lr, train.seed at
 *                this row's lr (the baseline first), such rows being
 *                references themselves, else the baseline row (fallback)
 *   Δ loss       paired by seed when the row and ref have >= 2 seeds with
 *                finished runs in common (no seed twice among either's
 *                finished runs): mean of the per-seed differences, 95% CI
 *                mean ± t(0.975, k - 1)·sd/sqrt(k), two-sided paired t p;
 *                else mean(row) - mean(ref) with Welch's test (CI with the
 *                Welch–Satterthwaite df; needs n >= 2 in both rows); p from
 *                the Student-t CDF (regularized incomplete beta function)
 *   p (Holm)     Holm–Bonferroni over the table's rows with a p; `*` when
 *                the adjusted p < 0.05
 *   div/total, p (div)    lr rule only: diverged / (finished + diverged),
 *                Fisher's exact two-sided p against ref's counts
 *   F-Attn, M-Act, gate   metrics f_attn / m_act / gate_mean, context '',
 *                at each run's last step, mean ± std over runs
 *   spikes, tok/s         summary spikes / tokens_per_s, mean
 *   +params      summary gate_params (the first run that has it)
 *   paper        paper.h's row for the label, and its PPL minus 6.026
 *
 * Plots (DIR/plots/SWEEP-*.{dat,gp,svg,png}; SWEEP with characters other
 * than [A-Za-z0-9._-] replaced by '_'), each from finished runs:
 *   -val_loss     metric val_loss against step, mean over the variant's runs
 *   -f_attn       metric f_attn, context layer=N, last step, mean, per layer
 *   -m_act        the same for m_act (log y axis)
 *   -gate-K-LABEL histogram 'gate', context layer=N, last step, counts summed
 *                 over the variant's runs, as a fraction per layer (K: the
 *                 row's position, so two labels cannot collide)
 *   -lr           when the sweep's runs have more than one train.lr: final
 *                 val loss against lr (log x), mean ± std, one line per
 *                 series; a series is the runs whose configs agree on every
 *                 key but train.lr, train.min_lr and train.seed, named by
 *                 their labels without the lr=... component; diverged runs
 *                 are drawn as crosses along the top of the plot
 *   -fattn-heads  sweeps with sink probes: metric f_attn, context
 *                 layer=L,head=H, last step, mean over the row's finished
 *                 runs; one panel per row, side by side on one colour scale
 *                 0..1
 *   -ppl-vs-length  sweeps with `gated eval` results: eval_ppl on split=val
 *                 against the context length (log2 x, log y), mean ± std,
 *                 one colour per row and one dash type per scaling series
 * Each .gp script is self-contained (run `gnuplot NAME.gp` in plots/) and
 * is run by fork/exec with plots/ as working directory; gnuplot's output
 * goes to plots/gnuplot.log.  The SVG / PNG terminals are probed once
 * (pngcairo, else png).  Attention heatmaps need per-position attention
 * data, which the store does not hold: the report says so.
 *
 * Sections a sweep gets only when its finished runs have the metrics:
 *   sink probes (metric sink_formed, context ''): the main table gains
 *     "sink heads" (sink_head_share, as %) and "F-Attn/unif" (f_attn_rel,
 *     context ''), both last step, mean ± std; a "Sink formation" table per
 *     row (tokens per run = train.steps x train.batch x model.seq_len from
 *     the config, model.seq_len, per seed the first step with
 *     sink_formed = 1, formed k/n, the largest per-head F-Attn at the last
 *     step and where it is, the two columns above, the paper's F-Attn); and
 *     per row a layer x head table of F-Attn (%).
 *   `gated eval` results (metric eval_ppl, context
 *     split=S,len=L,scaling=K,factor=F): a series is a scaling K with its
 *     automatic factor (F = max(1, L / model.seq_len), or the only F used
 *     at that (L, K)); another F at the same (L, K) makes a series "K F=F".
 *     Per series and split a table of rows x lengths (ascending, headed
 *     "L (Mx)" with M = L / model.seq_len when the runs share one), cells
 *     eval_ppl mean ± std over the row's finished runs; then the paper's
 *     Table 5 (paper.h).
 * In csv format these sections are SWEEP-sink.csv (one line per finished
 * run with sink probes), SWEEP-fattn-heads.csv (row, layer, head) and
 * SWEEP-ppl.csv (row, split, series, length); in tex they follow the main
 * tabular in SWEEP.tex.
 */
#include "lab/report.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/paper.h"
#include "run/probes.h"
#include "run/store.h"

const char *const report_format_names[] = {"md", "csv", "tex", NULL};

/* ================================================================== */
/* statistics                                                          */
/* ================================================================== */

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

double report_betainc(double a, double b, double x) {
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1)) return NAN;
    return betainc_xy(a, b, x, 1 - x);
}

double report_t_p2(double t, double df) {
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return 0;
    /* P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2) */
    double t2 = t * t;
    return betainc_xy(df / 2, 0.5, df / (df + t2), t2 / (df + t2));
}

double report_t_cdf(double t, double df) {
    double p2 = report_t_p2(t, df);
    if (isnan(p2)) return NAN;
    return t > 0 ? 1 - p2 / 2 : p2 / 2;
}

double report_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    double lo = -1, hi = 1;
    while (report_t_cdf(lo, df) > p && lo > -1e300) lo *= 2;
    while (report_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
    for (int i = 0; i < 400; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid == lo || mid == hi) break;
        if (report_t_cdf(mid, df) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

void report_mean_std(const double *x, int n, double *mean, double *std) {
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
        r->p = report_t_p2(r->t, r->df);
        double q = report_t_quantile(0.975, r->df);
        r->lo = r->diff - q * r->se;
        r->hi = r->diff + q * r->se;
    }
}

int report_welch(const double *a, int na, const double *b, int nb, TTest *w) {
    if (na < 2 || nb < 2) return -1;
    double ma, sa, mb, sb;
    report_mean_std(a, na, &ma, &sa);
    report_mean_std(b, nb, &mb, &sb);
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

int report_paired(const double *a, const double *b, int n, TTest *w) {
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

int report_holm(const double *p, int n, double *adj) {
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

static double lchoose(long n, long k) { return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0); }

double report_fisher_exact(long a, long b, long c, long d) {
    if (a < 0 || b < 0 || c < 0 || d < 0 || a + b == 0 || c + d == 0) return NAN;
    long r1 = a + b, r2 = c + d, c1 = a + c, n = r1 + r2;
    long lo = c1 - r2 > 0 ? c1 - r2 : 0, hi = c1 < r1 ? c1 : r1;
    if (lo == hi) return 1;
    /* P(x) = C(r1, x) C(r2, c1 - x) / C(n, c1), x the top-left count */
    double den = lchoose(n, c1);
    double pobs = exp(lchoose(r1, a) + lchoose(r2, c1 - a) - den);
    double p = 0;
    for (long x = lo; x <= hi; x++) {
        double px = exp(lchoose(r1, x) + lchoose(r2, c1 - x) - den);
        if (px <= pobs * (1 + 1e-7)) p += px;
    }
    return p > 1 ? 1 : p;
}

/* ================================================================== */
/* data model                                                          */
/* ================================================================== */

/* Per-head values of a run or a row: v[l * nh + h], NAN where absent. */
typedef struct {
    int nl, nh;
    double *v;
} HeadMap;

/* Layer and head indices larger than this are ignored (a bound on memory). */
enum { HEADMAP_MAX = 4096 };

typedef struct {
    char *run_id, *label, *status, *config_json;
    long long seed;
    int idx, is_baseline;
    double lr; /* train.lr from config_json; NAN if absent */
    double val_loss, val_ppl, f_attn, m_act, gate_mean, spikes, gate_params, tokens_per_s;
    double tokens, seq_len; /* train.steps x train.batch x model.seq_len and model.seq_len; NAN if absent */
    /* sink probes, read for finished runs only */
    int has_sink;           /* the run has sink_formed metrics */
    long long sink_step;    /* first evaluation step with sink_formed = 1; -1: none */
    double sink_share, f_attn_rel; /* last step, context '': sink_head_share, f_attn_rel */
    HeadMap heads;          /* f_attn per (layer, head), last step */
    double head_max;        /* the largest of heads, at layer max_l, head max_h */
    int max_l, max_h;
} RRun;

/* One `gated eval` result: eval_ppl of a finished run at one context. */
typedef struct {
    int var, split;         /* the run's row; split 0 val, 1 test */
    long long len;          /* context length */
    char scaling[16];       /* none, linear, ntk, yarn */
    double factor, train_len, ppl; /* train_len: the run's model.seq_len (NAN if unknown) */
    int automatic;          /* the factor is the automatic one (see the top of this file) */
    int series;             /* index into RSweep.eser */
} EvalPt;

/* A curve of the context-length tables: a scaling and its factor rule. */
typedef struct {
    char scaling[16];
    double factor;          /* NAN: the automatic factor */
    char name[48];          /* "yarn", "yarn F=4" */
} EvalSeries;

typedef struct {
    char *title; /* what the plot shows */
    char *base;  /* file name without extension, in plots/ */
    int made;    /* images written */
} PlotEntry;

/* How a row's reference row was chosen. */
enum { RULE_NONE, RULE_BASE, RULE_LR, RULE_FALLBACK };

typedef struct {
    char *label;
    int is_baseline;
    int *runs; /* indices into RSweep.runs */
    int nruns, cap;
    int n_fin, n_div;
    double loss_mean, loss_std, ppl_mean, ppl_std;
    double lr; /* train.lr of every run of the row that has a config; NAN if none or they differ */
    char *key; /* config without train.lr, train.min_lr, train.seed; NULL if none or the runs differ */
    int ref;   /* the row Δ is against; -1: none (a reference row, or no baseline) */
    int is_ref; /* a reference: the baseline row or (lr rule) its line's row at this lr */
    int rule;  /* RULE_*: how ref was chosen */
    int have_delta, have_test, paired, n_pairs;
    double delta; /* paired: mean per-seed difference; else difference of the means */
    TTest t;
    double p_holm; /* Holm-adjusted t.p; NAN without a test */
    double div_p;  /* Fisher p of the divergence count against ref (lr rule); NAN if none */
    double f_attn, f_attn_std, m_act, m_act_std, gate_mean, gate_std, spikes, gate_params, tokens_per_s;
    double tokens, seq_len; /* of the row's first run that has them */
    /* sink probes: over the row's finished runs that have them */
    int n_sink, n_formed; /* such runs; those of them in which a sink formed */
    int where;            /* the run (index into RSweep.runs) whose head_max place is the most common; -1 */
    double sink_share, sink_share_std, f_attn_rel, f_attn_rel_std, head_max, head_max_std;
    HeadMap heads;        /* mean per-head F-Attn */
} RVar;

typedef struct {
    char *raw;          /* the name as stored, for queries */
    char *name, *fname; /* name escaped for output (esc); fname: safe for a file name */
    RRun *runs;
    int nruns, runs_cap;
    RVar *vars;
    int nvars, vars_cap;
    int base; /* baseline variant, -1 if none */
    PlotEntry *plots;
    int nplots, plots_cap;
    int lr_plot; /* runs vary train.lr */
    int lr_rule; /* rows differ in train.lr and the baseline has an lr and a config: Δ is lr-matched */
    int n_fallback; /* lr rule: rows with no baseline-line row at their lr, compared with the baseline */
    int n_tests;    /* rows with a p-value: the Holm family */
    int has_sink;   /* finished runs have sink probes: the sink columns and sections */
    long long *seeds; /* the seeds of those runs, ascending */
    int nseeds;
    EvalPt *ev;     /* `gated eval` results of finished runs */
    int nev, ev_cap;
    EvalSeries *eser; /* in table order */
    int neser, eser_cap;
    double train_len; /* model.seq_len shared by the runs in ev; NAN if they differ */
} RSweep;

typedef struct {
    const ReportOpts *o;
    FILE *log, *info;
    Store *st;
    sqlite3 *db;
    char *err;
    size_t errcap;
    int failed; /* an error message is set */
    RSweep *sw;
    int nsw, sw_cap;
    char *plots_dir;
    /* gnuplot */
    int gp_checked, gp_ok, gp_fail;
    char *gp_prog;
    const char *term_png; /* "pngcairo", "png" or NULL */
    int term_svg;
    char gp_note[256]; /* why plots are missing, for report.md */
} R;

__attribute__((format(printf, 2, 3))) static int rfail(R *r, const char *fmt, ...) {
    if (!r->failed && r->err && r->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errcap, fmt, ap);
        va_end(ap);
    }
    r->failed = 1;
    return -1;
}

static int oom(R *r) { return rfail(r, "out of memory"); }

static int dbfail(R *r, const char *what) {
    return rfail(r, "%s: %s: %s", r->o->db_path, what, sqlite3_errmsg(r->db));
}

/* Grow *p (elements of size elem) so that it holds at least need. */
static int grow(R *r, void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return oom(r);
    *p = q;
    *cap = nc;
    return 0;
}

static char *sdup(R *r, const char *s) {
    char *d = strdup(s ? s : "");
    if (!d) oom(r);
    return d;
}

/* Text read from the database, for output: escaped (store_escape), so it
 * holds no control character.  Heap; NULL and the error set on failure. */
static char *esc(R *r, const char *s) {
    char *d = store_escape_dup(s ? s : "");
    if (!d) oom(r);
    return d;
}

/* s as a Markdown code span (not inside a table): fenced by one backtick
 * more than its longest run of backticks, padded with a space when it
 * starts or ends with one (CommonMark), control characters as \xNN. */
static void md_code(FILE *f, const char *s) {
    size_t longest = 0, run = 0, n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        run = s[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    int pad = n && (s[0] == '`' || s[n - 1] == '`');
    for (size_t i = 0; i <= longest; i++) fputc('`', f);
    if (pad) fputc(' ', f);
    store_fput_escaped(f, s);
    if (pad) fputc(' ', f);
    for (size_t i = 0; i <= longest; i++) fputc('`', f);
}

/* md_code's text on the heap (NULL and the error set on failure). */
static char *md_code_str(R *r, const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return oom(r), NULL;
    md_code(f, s);
    if (fclose(f) != 0) {
        free(buf);
        return oom(r), NULL;
    }
    return buf;
}

/* Formatted string on the heap (NULL and the error set on failure). */
__attribute__((format(printf, 2, 3))) static char *sfmt(R *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
        oom(r);
    }
    va_end(ap);
    return s;
}

/* ------------------------------------------------------------------ */
/* SQL helpers                                                         */
/* ------------------------------------------------------------------ */

/* Prepare sql and bind parameters 1.. from types: 't' const char *,
 * 'i' long long. */
static int q_prep(R *r, sqlite3_stmt **st, const char *sql, const char *types, ...) {
    *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) != SQLITE_OK) {
        rfail(r, "%s: prepare \"%.60s\": %s", r->o->db_path, sql, sqlite3_errmsg(r->db));
        *st = NULL;
        return -1;
    }
    va_list ap;
    va_start(ap, types);
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        if (types[i] == 't')
            rc = sqlite3_bind_text(*st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else
            rc = sqlite3_bind_int64(*st, i + 1, (sqlite3_int64)va_arg(ap, long long));
    }
    va_end(ap);
    if (rc != SQLITE_OK) {
        dbfail(r, "bind");
        sqlite3_finalize(*st);
        *st = NULL;
        return -1;
    }
    return 0;
}

/* Finish a statement after stepping: rc is the last sqlite3_step result. */
static int q_done(R *r, sqlite3_stmt *st, int rc, const char *what) {
    int bad = rc != SQLITE_DONE && rc != SQLITE_ROW;
    if (bad) dbfail(r, what);
    sqlite3_finalize(st);
    return bad ? -1 : 0;
}

static double col_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

/* summary value (context '') or NAN. */
static int q_summary(R *r, const char *run_id, const char *key, double *v) {
    sqlite3_stmt *st;
    *v = NAN;
    if (q_prep(r, &st, "SELECT value FROM summary WHERE run_id = ?1 AND key = ?2 AND context = ?3", "ttt", run_id,
               key, ""))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = col_real(st, 0);
    return q_done(r, st, rc, "read summary");
}

/* The metric's value at its last step (context '') or NAN. */
static int q_last_metric(R *r, const char *run_id, const char *key, double *v) {
    sqlite3_stmt *st;
    *v = NAN;
    if (q_prep(r, &st,
               "SELECT value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3"
               " ORDER BY step DESC LIMIT 1",
               "ttt", run_id, key, ""))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = col_real(st, 0);
    return q_done(r, st, rc, "read metrics");
}

/* Called on each result row of a statement; non-zero stops the walk (an
 * error, which the callback has set). */
typedef int (*RowFn)(R *r, void *arg, sqlite3_stmt *st);

/* Step st to its end, calling fn on every row; finalizes st. */
static int q_rows(R *r, sqlite3_stmt *st, RowFn fn, void *arg) {
    int sr, rc = 0;
    while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) rc = fn(r, arg, st);
    if (rc) {
        sqlite3_finalize(st);
        return -1;
    }
    return q_done(r, st, sr, "read metrics");
}

/* Rows (context, value): for every context of the run's metric `key`, its
 * value at that context's last step. */
static int q_each_context_last(R *r, const char *run_id, const char *key, RowFn fn, void *arg) {
    sqlite3_stmt *st;
    if (q_prep(r, &st,
               "SELECT m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key = ?2 AND"
               " m.step = (SELECT max(x.step) FROM metrics x WHERE x.run_id = m.run_id AND"
               " x.key = m.key AND x.context = m.context) ORDER BY m.context",
               "tt", run_id, key))
        return -1;
    return q_rows(r, st, fn, arg);
}

/* The run's sink_formed metric: how many evaluations have it, and the
 * first step at which it was set (-1: never). */
static int q_first_formed(R *r, const char *run_id, long long *n, long long *first) {
    sqlite3_stmt *st;
    *n = 0;
    *first = -1;
    if (q_prep(r, &st,
               "SELECT count(*), min(CASE WHEN value > ?4 THEN step END) FROM metrics"
               " WHERE run_id = ?1 AND key = ?2 AND context = ?3",
               "ttti", run_id, "sink_formed", "", 0LL))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *n = sqlite3_column_int64(st, 0);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) *first = sqlite3_column_int64(st, 1);
    }
    return q_done(r, st, rc, "read metrics");
}

/* ------------------------------------------------------------------ */
/* small text helpers                                                  */
/* ------------------------------------------------------------------ */

/* Decimal digits at *p -> their value (<= 1000000), *p past them; -1 if
 * there are none or too many. */
static long parse_index(const char **p) {
    if (**p < '0' || **p > '9') return -1;
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (errno || v > 1000000) return -1;
    *p = end;
    return v;
}

/* "layer=N" -> N with *head = -1; "layer=N,head=M" -> N with *head = M;
 * else -1. */
static long parse_layer_head(const char *ctx, long *head) {
    *head = -1;
    if (strncmp(ctx, "layer=", 6) != 0) return -1;
    const char *p = ctx + 6;
    long l = parse_index(&p);
    if (l < 0) return -1;
    if (strncmp(p, ",head=", 6) == 0) {
        p += 6;
        if ((*head = parse_index(&p)) < 0) return -1;
    }
    return *p ? -1 : l;
}

/* "layer=N" exactly -> N, else -1. */
static long parse_layer(const char *ctx) {
    long h, l = parse_layer_head(ctx, &h);
    return h < 0 ? l : -1;
}

/* "split=S,len=L,scaling=K,factor=F" (S val or test, L > 0, F > 0) into
 * p's split, len, scaling and factor; -1 if it is not one. */
static int parse_eval_context(const char *ctx, EvalPt *p) {
    char split[8];
    int end = -1;
    if (sscanf(ctx, "split=%7[^,],len=%lld,scaling=%15[^,],factor=%lf%n", split, &p->len, p->scaling, &p->factor,
               &end) != 4 ||
        end < 0 || ctx[end] || p->len <= 0 || !(p->factor > 0) || !isfinite(p->factor))
        return -1;
    /* the scaling names a series in every output: a plain word only */
    if (strspn(p->scaling, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(p->scaling))
        return -1;
    p->split = strcmp(split, "val") == 0 ? 0 : strcmp(split, "test") == 0 ? 1 : -1;
    return p->split < 0 ? -1 : 0;
}

/* The numeric value of "KEY": in a flat JSON object, NAN if absent. */
static double json_number(const char *js, const char *key) {
    if (!js) return NAN;
    size_t kl = strlen(key);
    for (const char *p = js; (p = strchr(p, '"')) != NULL; p++) {
        if (strncmp(p + 1, key, kl) == 0 && p[1 + kl] == '"' && p[2 + kl] == ':') {
            char *end;
            double v = strtod(p + 3 + kl, &end);
            return end == p + 3 + kl ? NAN : v;
        }
    }
    return NAN;
}

/* Copy of a flat JSON object without the entries whose key is in drop
 * (NULL-terminated).  A text it cannot parse is copied whole. */
static char *json_without(R *r, const char *js, const char *const *drop) {
    size_t n = strlen(js);
    char *out = malloc(n + 1);
    if (!out) return oom(r), NULL;
    size_t o = 0;
    const char *p = js;
    while (*p && *p != '{') p++;
    if (*p != '{') goto whole;
    out[o++] = *p++;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == '}' || !*p) break;
        if (*p != '"') goto whole;
        const char *start = p, *k = p + 1;
        p++;
        while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
        if (*p != '"') goto whole;
        size_t kl = (size_t)(p - k);
        p++;
        if (*p != ':') goto whole;
        p++;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p != '"') goto whole;
            p++;
        } else {
            while (*p && *p != ',' && *p != '}') p++;
        }
        int keep = 1;
        for (int i = 0; drop[i]; i++)
            if (strlen(drop[i]) == kl && strncmp(drop[i], k, kl) == 0) keep = 0;
        if (keep) {
            memcpy(out + o, start, (size_t)(p - start));
            o += (size_t)(p - start);
            out[o++] = ',';
        }
    }
    out[o] = '\0';
    return out;
whole:
    memcpy(out, js, n + 1);
    return out;
}

/* A name usable as a file name: [A-Za-z0-9._-], others '_'. */
static char *safe_name(R *r, const char *s) {
    char *d = sdup(r, s);
    if (!d) return NULL;
    for (char *p = d; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '-' || *p == '_'))
            *p = '_';
    if (!*d || d[0] == '.') {
        char *e = sfmt(r, "_%s", d);
        free(d);
        return e;
    }
    return d;
}

static int mkdir_p(R *r, const char *dir) {
    char *d = sdup(r, dir);
    if (!d) return -1;
    for (char *p = d + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(d, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                rfail(r, "%s: cannot create directory: %s", d, strerror(e));
                free(d);
                return -1;
            }
            *p = c;
            if (!c) break;
        }
    }
    free(d);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return rfail(r, "%s: not a directory", dir);
    return 0;
}

static FILE *open_out(R *r, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) rfail(r, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

static int close_out(R *r, FILE *f, const char *path) {
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) return rfail(r, "%s: write failed: %s", path, strerror(errno ? errno : EIO));
    return 0;
}

/* ================================================================== */
/* loading                                                             */
/* ================================================================== */

/* Every sweep name in the database, sorted. */
static int list_sweeps(R *r, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    int cap = 0;
    sqlite3_stmt *st;
    if (q_prep(r, &st, "SELECT sweep FROM sweep_runs GROUP BY sweep ORDER BY sweep", "")) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(r, (void **)names, &cap, *n + 1, sizeof **names)) break;
        char *s = sdup(r, col_text(st, 0));
        if (!s) break;
        (*names)[(*n)++] = s;
    }
    if (r->failed) {
        sqlite3_finalize(st);
        return -1;
    }
    return q_done(r, st, rc, "read sweep_runs");
}

static int is_finished(const RRun *u) { return strcmp(u->status, "finished") == 0; }

static RVar *find_var(RSweep *s, const char *label) {
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].label, label) == 0) return &s->vars[i];
    return NULL;
}

static double mean_of(const RSweep *s, const RVar *v, size_t off) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        double x = *(const double *)((const char *)u + off);
        if (strcmp(u->status, "finished") == 0 && !isnan(x)) sum += x, n++;
    }
    return n ? sum / n : NAN;
}

/* Values of field off of the finished runs of v into buf (cap >= nruns). */
static int finished_values(const RSweep *s, const RVar *v, size_t off, double *buf) {
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        double x = *(const double *)((const char *)u + off);
        if (strcmp(u->status, "finished") == 0 && !isnan(x)) buf[n++] = x;
    }
    return n;
}

/* The finished runs of v and w with a val loss and the same seed, as
 * pairs a[i] (v), b[i] (w) in v's order (a, b: cap >= v->nruns).  0 when a
 * seed occurs twice among either row's finished runs: pairing is then
 * ambiguous. */
static int paired_values(const RSweep *s, const RVar *v, const RVar *w, double *a, double *b) {
    const RVar *rows[2] = {v, w};
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < rows[q]->nruns; i++) {
            const RRun *x = &s->runs[rows[q]->runs[i]];
            if (strcmp(x->status, "finished") != 0 || isnan(x->val_loss)) continue;
            for (int j = i + 1; j < rows[q]->nruns; j++) {
                const RRun *y = &s->runs[rows[q]->runs[j]];
                if (y->seed == x->seed && strcmp(y->status, "finished") == 0 && !isnan(y->val_loss)) return 0;
            }
        }
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *x = &s->runs[v->runs[i]];
        if (strcmp(x->status, "finished") != 0 || isnan(x->val_loss)) continue;
        for (int j = 0; j < w->nruns; j++) {
            const RRun *y = &s->runs[w->runs[j]];
            if (y->seed == x->seed && strcmp(y->status, "finished") == 0 && !isnan(y->val_loss)) {
                a[n] = x->val_loss;
                b[n] = y->val_loss;
                n++;
                break;
            }
        }
    }
    return n;
}

/* Each row's lr and config key (see RVar), from the runs that have a
 * config. */
static int row_configs(R *r, RSweep *s) {
    static const char *const drop[] = {"train.lr", "train.min_lr", "train.seed", NULL};
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        int any = 0, same_lr = 1, same_key = 1;
        v->lr = NAN;
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (!u->config_json) continue;
            char *key = json_without(r, u->config_json, drop);
            if (!key) return -1;
            if (!any) {
                v->lr = u->lr;
                v->key = key;
                any = 1;
                continue;
            }
            if (!(u->lr == v->lr)) same_lr = 0; /* NAN never equals */
            if (strcmp(key, v->key) != 0) same_key = 0;
            free(key);
        }
        if (!same_lr) v->lr = NAN;
        if (!same_key) {
            free(v->key);
            v->key = NULL;
        }
    }
    return 0;
}

/* Each row's reference row (RVar.ref, is_ref, rule) and the sweep's rule. */
static void choose_refs(RSweep *s) {
    for (int k = 0; k < s->nvars; k++) {
        s->vars[k].ref = -1;
        s->vars[k].rule = RULE_NONE;
    }
    if (s->base < 0) return;
    const RVar *bv = &s->vars[s->base];
    s->lr_rule = s->lr_plot && bv->key && !isnan(bv->lr);
    s->vars[s->base].is_ref = 1;
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        if (k == s->base) continue;
        if (!s->lr_rule) {
            v->ref = s->base;
            v->rule = RULE_BASE;
            continue;
        }
        /* the baseline's line at this row's lr: the baseline itself first */
        int j = -1;
        if (!isnan(v->lr)) {
            if (bv->lr == v->lr) j = s->base;
            for (int i = 0; i < s->nvars && j < 0; i++)
                if (s->vars[i].key && strcmp(s->vars[i].key, bv->key) == 0 && s->vars[i].lr == v->lr) j = i;
        }
        if (j == k)
            v->is_ref = 1;
        else if (j >= 0) {
            v->ref = j;
            v->rule = RULE_LR;
        } else {
            v->ref = s->base;
            v->rule = RULE_FALLBACK;
            s->n_fallback++;
        }
    }
}

/* ------------------------------------------------------------------ */
/* sink probes                                                         */
/* ------------------------------------------------------------------ */

/* m[l][h] = x, growing m (new cells NAN). */
static int headmap_set(R *r, HeadMap *m, int l, int h, double x) {
    if (l >= m->nl || h >= m->nh) {
        int nl = l >= m->nl ? l + 1 : m->nl, nh = h >= m->nh ? h + 1 : m->nh;
        double *v = malloc(sizeof(double) * (size_t)nl * (size_t)nh);
        if (!v) return oom(r);
        for (int i = 0; i < nl * nh; i++) v[i] = NAN;
        for (int i = 0; i < m->nl; i++)
            for (int j = 0; j < m->nh; j++) v[i * nh + j] = m->v[i * m->nh + j];
        free(m->v);
        *m = (HeadMap){nl, nh, v};
    }
    m->v[l * m->nh + h] = x;
    return 0;
}

/* RowFn on (context, value): a context layer=L,head=H into the HeadMap arg. */
static int add_head_cell(R *r, void *arg, sqlite3_stmt *st) {
    long h, l = parse_layer_head(col_text(st, 0), &h);
    if (l < 0 || h < 0 || l >= HEADMAP_MAX || h >= HEADMAP_MAX) return 0;
    return headmap_set(r, arg, (int)l, (int)h, col_real(st, 1));
}

/* A finished run's sink probes (RRun.has_sink and what follows it). */
static int load_run_sink(R *r, RRun *u) {
    long long n;
    if (q_first_formed(r, u->run_id, &n, &u->sink_step)) return -1;
    if (!(u->has_sink = n > 0)) return 0;
    if (q_last_metric(r, u->run_id, "sink_head_share", &u->sink_share) ||
        q_last_metric(r, u->run_id, "f_attn_rel", &u->f_attn_rel) ||
        q_each_context_last(r, u->run_id, "f_attn", add_head_cell, &u->heads))
        return -1;
    const HeadMap *m = &u->heads;
    for (int i = 0; i < m->nl * m->nh; i++)
        if (!isnan(m->v[i]) && (isnan(u->head_max) || m->v[i] > u->head_max)) {
            u->head_max = m->v[i];
            u->max_l = i / m->nh;
            u->max_h = i % m->nh;
        }
    return 0;
}

/* The row's sink statistics (RVar.n_sink ... heads) from its runs'. */
static int row_sink(R *r, const RSweep *s, RVar *v, double *buf) {
    int nl = 0, nh = 0, best = 0;
    v->where = -1;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!u->has_sink) continue;
        v->n_sink++;
        v->n_formed += u->sink_step >= 0;
        if (u->heads.nl > nl) nl = u->heads.nl;
        if (u->heads.nh > nh) nh = u->heads.nh;
        if (isnan(u->head_max)) continue;
        int same = 0; /* runs with the largest head at the same place: the most common place wins, the first on ties */
        for (int j = 0; j < v->nruns; j++) {
            const RRun *w = &s->runs[v->runs[j]];
            same += w->has_sink && !isnan(w->head_max) && w->max_l == u->max_l && w->max_h == u->max_h;
        }
        if (same > best) best = same, v->where = v->runs[i];
    }
    int n = finished_values(s, v, offsetof(RRun, sink_share), buf);
    report_mean_std(buf, n, &v->sink_share, &v->sink_share_std);
    n = finished_values(s, v, offsetof(RRun, f_attn_rel), buf);
    report_mean_std(buf, n, &v->f_attn_rel, &v->f_attn_rel_std);
    n = finished_values(s, v, offsetof(RRun, head_max), buf);
    report_mean_std(buf, n, &v->head_max, &v->head_max_std);
    if (!nl || !nh) return 0;
    /* the per-head mean: each cell over the runs that have it */
    for (int c = 0; c < nl * nh; c++) {
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < v->nruns; i++) {
            const HeadMap *m = &s->runs[v->runs[i]].heads;
            int l = c / nh, h = c % nh;
            if (l < m->nl && h < m->nh && !isnan(m->v[l * m->nh + h])) sum += m->v[l * m->nh + h], cnt++;
        }
        if (cnt && headmap_set(r, &v->heads, c / nh, c % nh, sum / cnt)) return -1;
    }
    return 0;
}

static int ll_cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* RSweep.seeds: the distinct seeds of the runs with sink probes. */
static int sweep_seeds(R *r, RSweep *s) {
    s->seeds = malloc(sizeof *s->seeds * (size_t)(s->nruns + 1));
    if (!s->seeds) return oom(r);
    for (int i = 0; i < s->nruns; i++) {
        if (!s->runs[i].has_sink) continue;
        int dup = 0;
        for (int j = 0; j < s->nseeds; j++) dup |= s->seeds[j] == s->runs[i].seed;
        if (!dup) s->seeds[s->nseeds++] = s->runs[i].seed;
    }
    qsort(s->seeds, (size_t)s->nseeds, sizeof *s->seeds, ll_cmp);
    return 0;
}

/* ------------------------------------------------------------------ */
/* `gated eval` results                                                */
/* ------------------------------------------------------------------ */

typedef struct {
    RSweep *s;
    int var;
    double train_len;
} EvalLoad;

/* RowFn on (context, value): one eval_ppl result into the sweep's points. */
static int add_eval_pt(R *r, void *arg, sqlite3_stmt *st) {
    EvalLoad *e = arg;
    EvalPt p = {.var = e->var, .train_len = e->train_len, .ppl = col_real(st, 1)};
    if (isnan(p.ppl) || parse_eval_context(col_text(st, 0), &p)) return 0;
    if (grow(r, (void **)&e->s->ev, &e->s->ev_cap, e->s->nev + 1, sizeof *e->s->ev)) return -1;
    e->s->ev[e->s->nev++] = p;
    return 0;
}

/* Whether p's factor is the automatic one: L / model.seq_len (at least 1;
 * the context prints it with %g, 6 significant digits), or the only factor
 * the sweep used at p's length and scaling. */
static int is_auto_factor(const RSweep *s, const EvalPt *p) {
    double want = p->train_len > 0 ? fmax(1.0, (double)p->len / p->train_len) : NAN;
    if (fabs(p->factor - want) <= 1e-5 * want) return 1;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *q = &s->ev[i];
        if (q->len == p->len && strcmp(q->scaling, p->scaling) == 0 && q->factor != p->factor) return 0;
    }
    return 1;
}

static int scaling_rank(const char *k) {
    static const char *const order[] = {"none", "linear", "ntk", "yarn"};
    for (int i = 0; i < 4; i++)
        if (strcmp(k, order[i]) == 0) return i;
    return 4;
}

/* Table order: scalings as scaling_rank, then by name; the automatic
 * factor first, then ascending factors. */
static int series_cmp(const void *a, const void *b) {
    const EvalSeries *x = a, *y = b;
    int c = scaling_rank(x->scaling) - scaling_rank(y->scaling);
    if (!c) c = strcmp(x->scaling, y->scaling);
    if (!c) c = isnan(y->factor) - isnan(x->factor);
    if (!c && !isnan(x->factor)) c = (x->factor > y->factor) - (x->factor < y->factor);
    return c;
}

static int find_series(const RSweep *s, const EvalPt *p) {
    double f = p->automatic ? NAN : p->factor;
    for (int j = 0; j < s->neser; j++) {
        const EvalSeries *e = &s->eser[j];
        if (strcmp(e->scaling, p->scaling) == 0 && (isnan(f) ? isnan(e->factor) : e->factor == f)) return j;
    }
    return -1;
}

/* Each point's series (RSweep.eser, sorted) and the sweep's train_len. */
static int eval_series(R *r, RSweep *s) {
    for (int i = 0; i < s->nev; i++) s->ev[i].automatic = is_auto_factor(s, &s->ev[i]);
    s->train_len = s->nev ? s->ev[0].train_len : NAN;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        if (!(p->train_len == s->train_len)) s->train_len = NAN;
        if (find_series(s, p) >= 0) continue;
        if (grow(r, (void **)&s->eser, &s->eser_cap, s->neser + 1, sizeof *s->eser)) return -1;
        EvalSeries *e = &s->eser[s->neser++];
        snprintf(e->scaling, sizeof e->scaling, "%s", p->scaling);
        e->factor = p->automatic ? NAN : p->factor;
        if (p->automatic)
            snprintf(e->name, sizeof e->name, "%s", p->scaling);
        else
            snprintf(e->name, sizeof e->name, "%s F=%g", p->scaling, p->factor);
    }
    if (s->neser) qsort(s->eser, (size_t)s->neser, sizeof *s->eser, series_cmp);
    for (int i = 0; i < s->nev; i++) s->ev[i].series = find_series(s, &s->ev[i]);
    return 0;
}

/* The distinct lengths of series j on split sp, ascending, into lens
 * (cap >= nev); returns how many. */
static int eval_lens(const RSweep *s, int j, int sp, long long *lens) {
    int n = 0;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        int dup = 0;
        for (int q = 0; q < n; q++) dup |= lens[q] == p->len;
        if (p->series == j && p->split == sp && !dup) lens[n++] = p->len;
    }
    qsort(lens, (size_t)n, sizeof *lens, ll_cmp);
    return n;
}

/* eval_ppl of row k in series j, split sp, at length len: mean and std
 * over the row's finished runs (buf: cap >= nev); returns how many. */
static int eval_stats(const RSweep *s, int k, int j, int sp, long long len, double *buf, double *m, double *sd) {
    int n = 0;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        if (p->var == k && p->series == j && p->split == sp && p->len == len) buf[n++] = p->ppl;
    }
    report_mean_std(buf, n, m, sd);
    return n;
}

/* A finished run's sink probes and `gated eval` results; var: its row. */
static int load_run_probes(R *r, RSweep *s, int var, RRun *u) {
    if (load_run_sink(r, u)) return -1;
    s->has_sink |= u->has_sink;
    EvalLoad e = {s, var, u->seq_len};
    return q_each_context_last(r, u->run_id, "eval_ppl", add_eval_pt, &e);
}

static int load_sweep(R *r, RSweep *s) {
    sqlite3_stmt *st;
    if (q_prep(r, &st,
               "SELECT sr.run_id, sr.label, sr.seed, sr.idx, sr.is_baseline, r.status, r.heartbeat_at,"
               " r.config_json FROM sweep_runs sr LEFT JOIN runs r ON r.run_id = sr.run_id"
               " WHERE sr.sweep = ?1 ORDER BY sr.idx, sr.run_id",
               "t", s->raw))
        return -1;
    double now = (double)time(NULL);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(r, (void **)&s->runs, &s->runs_cap, s->nruns + 1, sizeof *s->runs)) break;
        RRun *u = &s->runs[s->nruns];
        memset(u, 0, sizeof *u);
        s->nruns++;
        const char *status = "pending";
        if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
            status = col_text(st, 5);
            if (strcmp(status, "running") == 0 && now - sqlite3_column_double(st, 6) > STORE_STALE_SECONDS)
                status = "killed";
        }
        u->run_id = sdup(r, col_text(st, 0)); /* for queries; escaped where it is written */
        u->label = esc(r, col_text(st, 1));
        u->status = sdup(r, status);
        u->config_json = sqlite3_column_type(st, 7) == SQLITE_NULL ? NULL : sdup(r, col_text(st, 7));
        u->seed = sqlite3_column_int64(st, 2);
        u->idx = sqlite3_column_int(st, 3);
        u->is_baseline = sqlite3_column_int(st, 4) != 0;
        if (r->failed) break;
        u->lr = json_number(u->config_json, "train.lr");
        u->seq_len = json_number(u->config_json, "model.seq_len");
        u->tokens =
            json_number(u->config_json, "train.steps") * json_number(u->config_json, "train.batch") * u->seq_len;
        u->sink_step = -1;
        u->sink_share = u->f_attn_rel = u->head_max = NAN;
    }
    if (r->failed) {
        sqlite3_finalize(st);
        return -1;
    }
    if (q_done(r, st, rc, "read sweep_runs")) return -1;

    /* per-run values, and the variants */
    s->base = -1;
    for (int i = 0; i < s->nruns; i++) {
        RRun *u = &s->runs[i];
        if (q_summary(r, u->run_id, "val_loss", &u->val_loss) || q_summary(r, u->run_id, "val_ppl", &u->val_ppl) ||
            q_summary(r, u->run_id, "spikes", &u->spikes) ||
            q_summary(r, u->run_id, "gate_params", &u->gate_params) ||
            q_summary(r, u->run_id, "tokens_per_s", &u->tokens_per_s) ||
            q_last_metric(r, u->run_id, "f_attn", &u->f_attn) || q_last_metric(r, u->run_id, "m_act", &u->m_act) ||
            q_last_metric(r, u->run_id, "gate_mean", &u->gate_mean))
            return -1;
        RVar *v = find_var(s, u->label);
        if (!v) {
            if (grow(r, (void **)&s->vars, &s->vars_cap, s->nvars + 1, sizeof *s->vars)) return -1;
            v = &s->vars[s->nvars++];
            memset(v, 0, sizeof *v);
            if (!(v->label = sdup(r, u->label))) return -1;
        }
        if (grow(r, (void **)&v->runs, &v->cap, v->nruns + 1, sizeof *v->runs)) return -1;
        v->runs[v->nruns++] = i;
        if (is_finished(u) && load_run_probes(r, s, (int)(v - s->vars), u)) return -1;
        if (u->is_baseline) v->is_baseline = 1;
        if (strcmp(u->status, "finished") == 0) v->n_fin++;
        if (strcmp(u->status, "diverged") == 0) v->n_div++;
    }
    for (int k = 0; k < s->nvars; k++)
        if (s->vars[k].is_baseline && s->base < 0) s->base = k;

    /* does the sweep vary train.lr? */
    double lr0 = NAN;
    for (int i = 0; i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        if (isnan(u->lr) || (strcmp(u->status, "finished") != 0 && strcmp(u->status, "diverged") != 0)) continue;
        if (isnan(lr0))
            lr0 = u->lr;
        else if (u->lr != lr0)
            s->lr_plot = 1;
    }
    if (row_configs(r, s)) return -1;
    choose_refs(s);

    /* statistics */
    size_t cap = (size_t)s->nruns + 1;
    double *a = malloc(sizeof(double) * cap), *b = malloc(sizeof(double) * cap);
    double *p = malloc(sizeof(double) * (size_t)(s->nvars + 1));
    if (!a || !b || !p) {
        free(a), free(b), free(p);
        return oom(r);
    }
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        int na = finished_values(s, v, offsetof(RRun, val_loss), a);
        report_mean_std(a, na, &v->loss_mean, &v->loss_std);
        int np = finished_values(s, v, offsetof(RRun, val_ppl), a);
        report_mean_std(a, np, &v->ppl_mean, &v->ppl_std);
        np = finished_values(s, v, offsetof(RRun, f_attn), a);
        report_mean_std(a, np, &v->f_attn, &v->f_attn_std);
        np = finished_values(s, v, offsetof(RRun, m_act), a);
        report_mean_std(a, np, &v->m_act, &v->m_act_std);
        np = finished_values(s, v, offsetof(RRun, gate_mean), a);
        report_mean_std(a, np, &v->gate_mean, &v->gate_std);
        v->spikes = mean_of(s, v, offsetof(RRun, spikes));
        v->tokens_per_s = mean_of(s, v, offsetof(RRun, tokens_per_s));
        v->gate_params = v->tokens = v->seq_len = NAN;
        for (int i = 0; i < v->nruns && isnan(v->gate_params); i++) v->gate_params = s->runs[v->runs[i]].gate_params;
        for (int i = 0; i < v->nruns && isnan(v->tokens); i++) {
            v->tokens = s->runs[v->runs[i]].tokens;
            v->seq_len = s->runs[v->runs[i]].seq_len;
        }
        if (row_sink(r, s, v, a)) break;
    }
    if (r->failed || sweep_seeds(r, s) || eval_series(r, s)) {
        free(a), free(b), free(p);
        return -1;
    }
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        v->p_holm = v->div_p = NAN;
        p[k] = NAN;
        if (v->ref < 0) continue;
        const RVar *w = &s->vars[v->ref];
        if (s->lr_rule) v->div_p = report_fisher_exact(v->n_div, v->n_fin, w->n_div, w->n_fin);
        int n = paired_values(s, v, w, a, b);
        if (n >= 2) {
            report_paired(a, b, n, &v->t);
            v->have_delta = v->have_test = v->paired = 1;
            v->n_pairs = n;
            v->delta = v->t.diff;
        } else {
            int na = finished_values(s, v, offsetof(RRun, val_loss), a);
            int nb = finished_values(s, w, offsetof(RRun, val_loss), b);
            if (na >= 1 && nb >= 1) {
                v->have_delta = 1;
                v->delta = v->loss_mean - w->loss_mean;
                v->have_test = report_welch(a, na, b, nb, &v->t) == 0;
            }
        }
        if (v->have_test) {
            p[k] = v->t.p;
            s->n_tests++;
        }
    }
    int bad = report_holm(p, s->nvars, p);
    for (int k = 0; !bad && k < s->nvars; k++) s->vars[k].p_holm = p[k];
    free(a);
    free(b);
    free(p);
    return bad ? oom(r) : 0;
}

static void free_sweep(RSweep *s) {
    for (int i = 0; i < s->nruns; i++) {
        free(s->runs[i].heads.v);
        free(s->runs[i].run_id);
        free(s->runs[i].label);
        free(s->runs[i].status);
        free(s->runs[i].config_json);
    }
    for (int k = 0; k < s->nvars; k++) {
        free(s->vars[k].label);
        free(s->vars[k].key);
        free(s->vars[k].runs);
        free(s->vars[k].heads.v);
    }
    for (int k = 0; k < s->nplots; k++) {
        free(s->plots[k].title);
        free(s->plots[k].base);
    }
    free(s->runs);
    free(s->vars);
    free(s->plots);
    free(s->seeds);
    free(s->ev);
    free(s->eser);
    free(s->raw);
    free(s->name);
    free(s->fname);
}

/* ================================================================== */
/* plots                                                               */
/* ================================================================== */

/* (x, y) samples, aggregated by x. */
typedef struct {
    double x, y;
} Pt;
typedef struct {
    Pt *p;
    int n, cap;
} Pts;

static int pts_add(R *r, Pts *v, double x, double y) {
    if (isnan(y)) return 0;
    if (grow(r, (void **)&v->p, &v->cap, v->n + 1, sizeof *v->p)) return -1;
    v->p[v->n++] = (Pt){x, y};
    return 0;
}

static int pt_cmp(const void *a, const void *b) {
    double x = ((const Pt *)a)->x, y = ((const Pt *)b)->x;
    return (x > y) - (x < y);
}

/* Sort by x and write "x mean std n" per distinct x (std 0 for n = 1);
 * returns the number of lines written. */
static int pts_write(Pts *v, FILE *f) {
    if (v->n == 0) return 0;
    qsort(v->p, (size_t)v->n, sizeof *v->p, pt_cmp);
    int lines = 0;
    for (int i = 0; i < v->n;) {
        int j = i;
        while (j < v->n && v->p[j].x == v->p[i].x) j++;
        int n;
        double sum = 0, m, s;
        for (int k = i; k < j; k++) sum += v->p[k].y;
        m = sum / (j - i);
        double ss = 0;
        for (int k = i; k < j; k++) ss += (v->p[k].y - m) * (v->p[k].y - m);
        n = j - i;
        s = n > 1 ? sqrt(ss / (n - 1)) : 0;
        fprintf(f, "%.10g %.10g %.10g %d\n", v->p[i].x, m, s, n);
        lines++;
        i = j;
    }
    return lines;
}

/* Single-quoted gnuplot string: '' for a quote (backslashes, backquotes
 * and @ are literal there); a control character is written as \xNN, as
 * text: a newline would end the command, and a next line starting with !
 * is a shell command to gnuplot. */
static void gp_str(FILE *f, const char *s) {
    fputc('\'', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else {
            if (*p == '\'') fputc('\'', f);
            fputc(*p, f);
        }
    }
    fputc('\'', f);
}

/* Find prog (a name on PATH, or a path); heap copy of its path or NULL. */
static char *find_program(R *r, const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0 ? sdup(r, prog) : NULL;
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t n = e ? (size_t)(e - path) : strlen(path);
        char *cand = n ? sfmt(r, "%.*s/%s", (int)n, path, prog) : sfmt(r, "./%s", prog);
        if (!cand) return NULL;
        struct stat sb;
        if (access(cand, X_OK) == 0 && stat(cand, &sb) == 0 && S_ISREG(sb.st_mode)) return cand;
        free(cand);
        path += n;
        if (*path == ':') path++;
    }
    return NULL;
}

/* Run gnuplot with args (after argv[0]) in dir, output appended to logpath
 * (NULL: /dev/null).  Returns the exit status, or -1 if it could not run. */
static int run_gnuplot(R *r, const char *a1, const char *a2, const char *dir, const char *logpath) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* open the log before chdir: its path may be relative to the caller */
        int fd = open(logpath ? logpath : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0666);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0 || chdir(dir) != 0) _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        char *argv[4] = {r->gp_prog, (char *)a1, (char *)a2, NULL};
        execv(r->gp_prog, argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Look for gnuplot and its terminals once; a warning if it is unusable. */
static void gp_check(R *r) {
    if (r->gp_checked) return;
    r->gp_checked = 1;
    const char *prog = r->o->gnuplot ? r->o->gnuplot : "gnuplot";
    r->gp_prog = find_program(r, prog);
    if (r->failed) return;
    if (!r->gp_prog) {
        fprintf(r->log, "gated report: gnuplot not found; plots skipped (apt-get install -y gnuplot-nox)\n");
        snprintf(r->gp_note, sizeof r->gp_note,
                 "gnuplot not found (apt-get install -y gnuplot-nox); the plots' data files and gnuplot scripts are "
                 "in `plots/`");
        return;
    }
    if (run_gnuplot(r, "-e", "set terminal pngcairo", r->plots_dir, NULL) == 0)
        r->term_png = "pngcairo";
    else if (run_gnuplot(r, "-e", "set terminal png", r->plots_dir, NULL) == 0)
        r->term_png = "png";
    r->term_svg = run_gnuplot(r, "-e", "set terminal svg", r->plots_dir, NULL) == 0;
    if (!r->term_png && !r->term_svg) {
        fprintf(r->log, "gated report: %s has neither a png nor an svg terminal; plots skipped\n", r->gp_prog);
        snprintf(r->gp_note, sizeof r->gp_note,
                 "gnuplot has neither a png nor an svg terminal; the plots' data files and gnuplot scripts are in "
                 "`plots/`");
        return;
    }
    r->gp_ok = 1;
}

#define GP_SIZE "size 960,560"

/* The terminals a script uses: those found, or (gnuplot missing, the
 * script is only kept for later) svg and pngcairo. */
static int gp_svg(const R *r) { return r->gp_ok ? r->term_svg : 1; }
static const char *gp_png(const R *r) { return r->gp_ok ? r->term_png : "pngcairo"; }

/* The script's first lines: a comment and the first terminal. */
static void gp_head(R *r, FILE *f, const char *base, const char *what) {
    fprintf(f, "# %s\n# written by `gated report`; run `gnuplot %s.gp` in this directory\n", what, base);
    if (gp_svg(r))
        fprintf(f, "set terminal svg " GP_SIZE " dynamic noenhanced background rgb 'white'\nset output '%s.svg'\n",
                base);
    else
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\n", gp_png(r), base);
    fprintf(f, "set grid\nset key outside right top\n");
}

/* After the plot command: the PNG as well (replot), then close. */
static void gp_tail(R *r, FILE *f, const char *base) {
    if (gp_svg(r) && gp_png(r))
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\nreplot\n", gp_png(r), base);
    fprintf(f, "set output\n");
}

/* Record the plot and run its script (when gnuplot is usable). */
static int plot_finish(R *r, RSweep *s, const char *base, char *title) {
    if (grow(r, (void **)&s->plots, &s->plots_cap, s->nplots + 1, sizeof *s->plots)) {
        free(title);
        return -1;
    }
    PlotEntry *e = &s->plots[s->nplots++];
    e->title = title;
    e->base = sdup(r, base);
    e->made = 0;
    if (!e->base) return -1;
    if (!r->gp_ok) return 0;
    char *script = sfmt(r, "%s.gp", base);
    char *logp = sfmt(r, "%s/gnuplot.log", r->plots_dir);
    if (!script || !logp) {
        free(script), free(logp);
        return -1;
    }
    int st = run_gnuplot(r, script, NULL, r->plots_dir, logp);
    int ok = st == 0;
    const char *exts[2] = {r->term_svg ? "svg" : NULL, r->term_png ? "png" : NULL};
    for (int i = 0; ok && i < 2; i++) {
        if (!exts[i]) continue;
        char *img = sfmt(r, "%s/%s.%s", r->plots_dir, base, exts[i]);
        struct stat sb;
        if (!img || stat(img, &sb) != 0 || sb.st_size == 0) ok = 0;
        free(img);
    }
    if (ok)
        e->made = 1;
    else {
        r->gp_fail++;
        fprintf(r->log, "gated report: gnuplot failed on %s/%s (exit %d; see %s)\n", r->plots_dir, script, st, logp);
    }
    free(script);
    free(logp);
    return r->failed ? -1 : 0;
}

/* Open plots/BASE.dat and plots/BASE.gp. */
static int plot_open(R *r, const char *base, FILE **dat, FILE **gp, char **datp, char **gpp) {
    *dat = *gp = NULL;
    *datp = sfmt(r, "%s/%s.dat", r->plots_dir, base);
    *gpp = sfmt(r, "%s/%s.gp", r->plots_dir, base);
    if (!*datp || !*gpp) return -1;
    if (!(*dat = open_out(r, *datp))) return -1;
    if (!(*gp = open_out(r, *gpp))) {
        fclose(*dat);
        *dat = NULL;
        return -1;
    }
    return 0;
}

static int plot_close(R *r, FILE *dat, FILE *gp, char *datp, char *gpp) {
    int rc = 0;
    if (dat && close_out(r, dat, datp)) rc = -1;
    if (gp && close_out(r, gp, gpp)) rc = -1;
    free(datp);
    free(gpp);
    return rc;
}

/* Close a plot's files and, when nothing failed and it has data (any),
 * register and draw it under the title fmt.  Returns the new rc. */
static int plot_done(R *r, RSweep *s, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp, const char *base,
                     const char *fmt, ...) __attribute__((format(printf, 10, 11)));
static int plot_done(R *r, RSweep *s, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp, const char *base,
                     const char *fmt, ...) {
    if (plot_close(r, dat, gp, datp, gpp)) rc = -1;
    if (rc != 0 || !any) return rc;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *t = sdup(r, buf);
    return t ? plot_finish(r, s, base, t) : -1;
}

/* RowFn on (context, value): a context layer=N as (N, value) into the Pts arg. */
static int add_layer_pt(R *r, void *arg, sqlite3_stmt *st) {
    long l = parse_layer(col_text(st, 0));
    return l < 0 ? 0 : pts_add(r, arg, (double)l, col_real(st, 1));
}

/* RowFn on (step, value): into the Pts arg. */
static int add_step_pt(R *r, void *arg, sqlite3_stmt *st) {
    return pts_add(r, arg, (double)sqlite3_column_int64(st, 0), col_real(st, 1));
}

/* (step, value) of the run's metric `key` at context '' into pts. */
static int q_steps(R *r, const char *run_id, const char *key, Pts *pts) {
    sqlite3_stmt *st;
    if (q_prep(r, &st, "SELECT step, value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3", "ttt",
               run_id, key, ""))
        return -1;
    return q_rows(r, st, add_step_pt, pts);
}

/* One line per variant of metric `key`, mean over the finished seeds:
 * against the step (per_layer 0: context '', every step) or against the
 * layer (per_layer 1: context 'layer=N', each run's last step). */
static int plot_series(R *r, RSweep *s, const char *key, int per_layer, const char *ylabel, const char *title,
                       int logy) {
    char *base = sfmt(r, "%s-%s", s->fname, key);
    if (!base) return -1;
    FILE *dat, *gp;
    char *datp, *gpp;
    int rc = plot_open(r, base, &dat, &gp, &datp, &gpp);
    int blocks = 0;
    const char *xname = per_layer ? "layer" : "step";
    if (rc == 0) {
        gp_head(r, gp, base, title);
        fprintf(gp, "set title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel '%s'\n%s%sset ylabel ", xname, per_layer ? "set xtics 1\n" : "",
                logy ? "set logscale y\n" : "");
        gp_str(gp, ylabel);
        fprintf(gp, "\nplot");
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        Pts pts = {0};
        for (int i = 0; rc == 0 && i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (is_finished(u))
                rc = per_layer ? q_each_context_last(r, u->run_id, key, add_layer_pt, &pts)
                               : q_steps(r, u->run_id, key, &pts);
        }
        if (rc == 0 && pts.n) {
            fprintf(dat, "# %s: %s, mean, std, runs\n", v->label, xname);
            pts_write(&pts, dat);
            fprintf(dat, "\n\n");
            fprintf(gp, "%s '%s.dat' index %d using 1:2 with linespoints title ", blocks ? ", \\\n    " : "", base,
                    blocks);
            gp_str(gp, v->label);
            blocks++;
        }
        free(pts.p);
    }
    if (rc == 0) {
        if (!blocks) fprintf(gp, " NaN notitle");
        fprintf(gp, "\n");
        gp_tail(r, gp, base);
    }
    rc = plot_done(r, s, rc, blocks, dat, gp, datp, gpp, base, "%s", title);
    free(base);
    return rc;
}

/* "[1,2,3]" -> counts (heap); -1 if malformed. */
static int parse_counts(const char *js, long long **out, int *n) {
    *out = NULL;
    *n = 0;
    const char *p = js;
    while (*p == ' ') p++;
    if (*p++ != '[') return -1;
    int cap = 0;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ']') return 0;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno) break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            long long *q = realloc(*out, sizeof **out * (size_t)cap);
            if (!q) break;
            *out = q;
        }
        (*out)[(*n)++] = v;
        p = end;
    }
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

typedef struct {
    long layer;
    double lo, hi;
    long long *counts;
    int nbins, nruns;
} HistAcc;

/* Gate-score histograms of variant k, summed over its finished runs. */
static int plot_gate_hist(R *r, RSweep *s, int k) {
    RVar *v = &s->vars[k];
    HistAcc *acc = NULL;
    int nacc = 0, cap = 0, rc = 0, runs_with = 0;
    for (int i = 0; rc == 0 && i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!is_finished(u)) continue;
        sqlite3_stmt *st;
        if ((rc = q_prep(r, &st,
                         "SELECT h.context, h.lo, h.hi, h.counts FROM histograms h WHERE h.run_id = ?1 AND"
                         " h.key = ?2 AND h.step = (SELECT max(x.step) FROM histograms x WHERE"
                         " x.run_id = h.run_id AND x.key = h.key AND x.context = h.context)",
                         "tt", u->run_id, "gate")))
            break;
        int sr, any = 0;
        while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) {
            long l = parse_layer(col_text(st, 0));
            if (l < 0) continue;
            long long *c;
            int nb;
            if (parse_counts(col_text(st, 3), &c, &nb) || nb == 0) {
                char qid[64];
                fprintf(r->log, "gated report: run %s: histogram gate %s: bad counts; skipped\n",
                        store_escape(u->run_id, qid, sizeof qid), col_text(st, 0));
                continue;
            }
            double lo = sqlite3_column_double(st, 1), hi = sqlite3_column_double(st, 2);
            HistAcc *a = NULL;
            for (int j = 0; j < nacc; j++)
                if (acc[j].layer == l) a = &acc[j];
            if (!a) {
                if (grow(r, (void **)&acc, &cap, nacc + 1, sizeof *acc)) {
                    free(c);
                    rc = -1;
                    break;
                }
                a = &acc[nacc++];
                *a = (HistAcc){l, lo, hi, c, nb, 1};
                any = 1;
                continue;
            }
            if (a->nbins != nb || a->lo != lo || a->hi != hi) {
                char qid[64];
                fprintf(r->log, "gated report: run %s: histogram gate %s has other bins than its variant's first run; "
                                "skipped\n", store_escape(u->run_id, qid, sizeof qid), col_text(st, 0));
            } else {
                for (int b = 0; b < nb; b++) a->counts[b] += c[b];
                a->nruns++;
                any = 1;
            }
            free(c);
        }
        if (rc)
            sqlite3_finalize(st);
        else
            rc = q_done(r, st, sr, "read histograms");
        runs_with += any;
    }
    if (rc == 0 && nacc > 0) {
        /* layers in order */
        for (int i = 1; i < nacc; i++)
            for (int j = i; j > 0 && acc[j - 1].layer > acc[j].layer; j--) {
                HistAcc t = acc[j];
                acc[j] = acc[j - 1];
                acc[j - 1] = t;
            }
        char *lab = safe_name(r, v->label);
        char *base = lab ? sfmt(r, "%s-gate-%d-%s", s->fname, k, lab) : NULL;
        free(lab);
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
            rc = -1;
        else {
            gp_head(r, gp, base, "gate-score histogram per layer, last step, counts summed over seeds");
            /* the labels in files: escaped when loaded; gp_str quotes again */
            fprintf(gp, "set title ");
            char *t = sfmt(r, "%s: gate scores of %s (last step, %d run%s summed)", s->name, v->label, runs_with,
                           runs_with == 1 ? "" : "s");
            if (!t) rc = -1;
            if (t) gp_str(gp, t);
            free(t);
            fprintf(gp, "\nset xlabel 'gate score'\nset ylabel 'fraction of scores'\nset xrange [%.10g:%.10g]\nplot",
                    acc[0].lo, acc[0].hi);
            for (int j = 0; j < nacc; j++) {
                HistAcc *a = &acc[j];
                long long tot = 0;
                for (int b = 0; b < a->nbins; b++) tot += a->counts[b];
                fprintf(dat, "# layer %ld (%d runs): bin centre, fraction, count\n", a->layer, a->nruns);
                double w = (a->hi - a->lo) / a->nbins;
                for (int b = 0; b < a->nbins; b++)
                    fprintf(dat, "%.10g %.10g %lld\n", a->lo + (b + 0.5) * w, tot ? (double)a->counts[b] / tot : 0.0,
                            a->counts[b]);
                fprintf(dat, "\n\n");
                fprintf(gp, "%s '%s.dat' index %d using 1:2 with histeps lw 2 title 'layer %ld'",
                        j ? ", \\\n    " : "", base, j, a->layer);
            }
            fprintf(gp, "\n");
            gp_tail(r, gp, base);
        }
        char *code = rc == 0 ? md_code_str(r, v->label) : NULL;
        if (!code) rc = -1;
        rc = plot_done(r, s, rc, 1, dat, gp, datp, gpp, base, "Gate scores of %s per layer (last step, %d run%s summed)",
                       code ? code : "", runs_with, runs_with == 1 ? "" : "s");
        free(code);
        free(base);
    }
    for (int j = 0; j < nacc; j++) free(acc[j].counts);
    free(acc);
    return rc;
}

/* A series of the lr plot: runs that differ only in lr and seed. */
typedef struct {
    char *key, *name;
    Pts fin;  /* (lr, final val loss) of finished runs */
    Pts div;  /* (lr, 0) of diverged runs */
} LrSeries;

/* The label without its learning rate: every "lr" (or "train.lr") that
 * starts the label or follows one of - _ . , and is followed by an
 * optional '=' and a number is removed with the separator before it
 * ("lr=1e-3,position=sdpa" -> "position=sdpa", "baseline-lr3.0e-3" ->
 * "baseline"); "all runs" if nothing is left. */
static char *strip_lr(R *r, const char *label) {
    size_t n = strlen(label);
    char *out = malloc(n + 16);
    if (!out) return oom(r), NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int at_start = i == 0 || strchr("-_.,", label[i - 1]) != NULL;
        if (at_start && label[i] == 'l' && label[i + 1] == 'r') {
            size_t j = i + 2;
            if (label[j] == '=') j++;
            if ((label[j] >= '0' && label[j] <= '9') || label[j] == '.') {
                char *end;
                (void)strtod(label + j, &end);
                if (end > label + j) {
                    /* drop "train." before it, then the separator before that */
                    if (o >= 6 && strncmp(out + o - 6, "train.", 6) == 0) o -= 6;
                    if (o > 0 && strchr("-_,", out[o - 1])) o--;
                    i = (size_t)(end - label);
                    /* at the start, drop the separator after it instead */
                    if (o == 0 && i < n && strchr("-_,", label[i])) i++;
                    continue;
                }
            }
        }
        out[o++] = label[i++];
    }
    out[o] = '\0';
    if (!o) strcpy(out, "all runs");
    return out;
}

static int plot_lr(R *r, RSweep *s) {
    static const char *const drop[] = {"train.lr", "train.min_lr", "train.seed", NULL};
    LrSeries *ser = NULL;
    int nser = 0, cap = 0, rc = 0;
    double ymin = INFINITY, ymax = -INFINITY;
    for (int i = 0; rc == 0 && i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        int fin = is_finished(u), div = strcmp(u->status, "diverged") == 0;
        if ((!fin && !div) || isnan(u->lr) || !u->config_json) continue;
        char *key = json_without(r, u->config_json, drop);
        char *name = key ? strip_lr(r, u->label) : NULL;
        if (!name) {
            free(key);
            rc = -1;
            break;
        }
        LrSeries *q = NULL;
        for (int j = 0; j < nser; j++)
            if (strcmp(ser[j].key, key) == 0) q = &ser[j];
        if (!q) {
            if (grow(r, (void **)&ser, &cap, nser + 1, sizeof *ser)) {
                free(key), free(name);
                rc = -1;
                break;
            }
            q = &ser[nser++];
            memset(q, 0, sizeof *q);
            q->key = key;
            q->name = name;
        } else {
            free(key);
            if (!strstr(q->name, name)) { /* labels that differ beyond lr: name both */
                char *nn = sfmt(r, "%s / %s", q->name, name);
                if (!nn) rc = -1;
                else {
                    free(q->name);
                    q->name = nn;
                }
            }
            free(name);
        }
        if (rc) break;
        if (fin && !isnan(u->val_loss) && isfinite(u->val_loss)) {
            rc = pts_add(r, &q->fin, u->lr, u->val_loss);
            if (u->val_loss < ymin) ymin = u->val_loss;
            if (u->val_loss > ymax) ymax = u->val_loss;
        } else if (div)
            rc = pts_add(r, &q->div, u->lr, 0);
    }
    char *base = NULL;
    if (rc == 0 && nser > 0) {
        base = sfmt(r, "%s-lr", s->fname);
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
            rc = -1;
        else {
            if (!isfinite(ymin)) ymin = 0, ymax = 1;
            double span = ymax - ymin > 0 ? ymax - ymin : fabs(ymax) * 0.1 + 0.1;
            double ydiv = ymax + 0.15 * span;
            gp_head(r, gp, base, "final validation loss against peak learning rate; diverged runs as crosses");
            fprintf(gp, "set title ");
            gp_str(gp, s->name);
            fprintf(gp, "\nset logscale x\nset format x '%%g'\nset xlabel 'train.lr (log scale)'\n"
                        "set ylabel 'final validation loss, mean +- std over seeds'\n"
                        "set yrange [%.10g:%.10g]\nset offsets graph 0.05, graph 0.05, 0, 0\nplot",
                    ymin - 0.1 * span, ymax + 0.3 * span);
            int blocks = 0, ndiv = 0;
            for (int j = 0; j < nser; j++) {
                ndiv += ser[j].div.n;
                if (!ser[j].fin.n) continue;
                fprintf(dat, "# %s: lr, mean final val loss, std, finished runs\n", ser[j].name);
                pts_write(&ser[j].fin, dat);
                fprintf(dat, "\n\n");
                fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorlines title ", blocks ? ", \\\n    " : "",
                        base, blocks);
                gp_str(gp, ser[j].name);
                blocks++;
            }
            if (ndiv) {
                fprintf(dat, "# diverged runs: lr, drawn at, series\n");
                for (int j = 0; j < nser; j++)
                    for (int i = 0; i < ser[j].div.n; i++) fprintf(dat, "%.10g %.10g %d\n", ser[j].div.p[i].x, ydiv, j);
                fprintf(dat, "\n\n");
                fprintf(gp, "%s '%s.dat' index %d using 1:2 with points pt 2 ps 2.5 lw 2 lc rgb 'red' title "
                            "'diverged'",
                        blocks ? ", \\\n    " : "", base, blocks);
                blocks++;
            }
            fprintf(gp, "\n");
            gp_tail(r, gp, base);
        }
        rc = plot_done(r, s, rc, 1, dat, gp, datp, gpp, base,
                       "Final validation loss against learning rate (log scale; diverged runs as red crosses above the "
                       "curves)");
    }
    free(base);
    for (int j = 0; j < nser; j++) {
        free(ser[j].key);
        free(ser[j].name);
        free(ser[j].fin.p);
        free(ser[j].div.p);
    }
    free(ser);
    return rc;
}

/* Per-head F-Attn of every row that has it: one panel per row, side by
 * side, on one colour scale 0..1 (data: one matrix block per panel, rows
 * layers, columns heads). */
static int plot_heads(R *r, RSweep *s) {
    int panels = 0;
    for (int k = 0; k < s->nvars; k++) panels += s->vars[k].heads.nl > 0;
    if (!panels) return 0;
    char *base = sfmt(r, "%s-fattn-heads", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = base ? plot_open(r, base, &dat, &gp, &datp, &gpp) : -1;
    if (rc == 0) {
        gp_head(r, gp, base, "F-Attn per layer and query head, last step, mean over seeds; one panel per row");
        fprintf(gp, "unset grid\nunset key\nset title ");
        gp_str(gp, s->name);
        /* more than 4 panels: labels alternate between two heights so long ones do not overlap */
        int stagger = panels > 4;
        fprintf(gp, " offset 0,%d\nset cbrange [0:1]\nset cblabel 'F-Attn (share of attention on position 0)'\n"
                    "set palette rgb 33,13,10\nset xlabel 'query head (one panel per row)'\nset ylabel 'layer'\n"
                    "set ytics 1\nset xtics () scale 0\n%s",
                stagger ? 2 : 1, stagger ? "set tmargin 5\n" : "");
        int x0 = 0, nl = 0, i = 0;
        for (int k = 0; k < s->nvars; k++) {
            const RVar *v = &s->vars[k];
            const HeadMap *m = &v->heads;
            if (!m->nl) continue;
            fprintf(dat, "# %s (%d runs): F-Attn, rows layers 0..%d, columns heads 0..%d\n", v->label, v->n_sink,
                    m->nl - 1, m->nh - 1);
            for (int l = 0; l < m->nl; l++)
                for (int h = 0; h < m->nh; h++)
                    fprintf(dat, "%.10g%c", m->v[l * m->nh + h], h + 1 < m->nh ? ' ' : '\n');
            fprintf(dat, "\n\n");
            for (int h = 0; h < m->nh; h++) fprintf(gp, "set xtics add ('%d' %d)\n", h, x0 + h);
            fprintf(gp, "set label %d ", ++i);
            gp_str(gp, v->label);
            fprintf(gp, " at %g, graph %g center\n", x0 + (m->nh - 1) / 2.0, stagger && i % 2 == 0 ? 1.08 : 1.03);
            x0 += m->nh + 1;
            if (m->nl > nl) nl = m->nl;
        }
        fprintf(gp, "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nplot", x0 - 1.5, nl - 0.5);
        x0 = i = 0;
        for (int k = 0; k < s->nvars; k++) {
            const HeadMap *m = &s->vars[k].heads;
            if (!m->nl) continue;
            fprintf(gp, "%s '%s.dat' index %d matrix using ($1+%d):2:3 with image", i ? ", \\\n    " : "", base, i, x0);
            x0 += m->nh + 1;
            i++;
        }
        fprintf(gp, "\n");
        gp_tail(r, gp, base);
    }
    rc = plot_done(r, s, rc, 1, dat, gp, datp, gpp, base,
                   "F-Attn per layer and query head (last step, mean over seeds; one panel per row, colour scale 0 "
                   "to 1)");
    free(base);
    return rc;
}

/* Validation PPL against context length: a line per (row, series), colour
 * by row, dash type by series, error bars the std over seeds. */
static int plot_ppl(R *r, RSweep *s) {
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    char *base = sfmt(r, "%s-ppl-vs-length", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0;
    if (!lens || !buf)
        rc = oom(r);
    else if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    if (rc == 0) {
        gp_head(r, gp, base, "validation perplexity against context length, mean +- std over seeds");
        fprintf(gp, "set title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset logscale x 2\nset logscale y\nset format x '%%g'\nset format y '%%g'\n"
                    "set autoscale yfix\nset offsets 0, 0, graph 0.05, graph 0.05\n"
                    "set xlabel 'context length (tokens, log2 scale)'\n"
                    "set ylabel 'validation PPL (log scale), mean +- std over seeds'\n");
        if (!isnan(s->train_len))
            fprintf(gp, "set arrow from %g, graph 0 to %g, graph 1 nohead dt 3\n", s->train_len, s->train_len);
        fprintf(gp, "plot");
    }
    for (int j = 0; rc == 0 && j < s->neser; j++) {
        int nl = eval_lens(s, j, 0, lens);
        for (int k = 0; rc == 0 && k < s->nvars; k++) {
            int lines = 0;
            for (int q = 0; q < nl; q++) {
                double m, sd;
                int n = eval_stats(s, k, j, 0, lens[q], buf, &m, &sd);
                if (!n) continue;
                if (!lines++)
                    fprintf(dat, "# %s, %s: context length, mean val PPL, std, runs\n", s->vars[k].label,
                            s->eser[j].name);
                fprintf(dat, "%lld %.10g %.10g %d\n", lens[q], m, isnan(sd) ? 0 : sd, n);
            }
            if (!lines) continue;
            fprintf(dat, "\n\n");
            char *t = sfmt(r, "%s (%s)", s->vars[k].label, s->eser[j].name);
            if (!t) {
                rc = -1;
                break;
            }
            fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorlines lc %d dt %d title ",
                    blocks ? ", \\\n    " : "", base, blocks, k + 1, j + 1);
            gp_str(gp, t);
            free(t);
            blocks++;
        }
    }
    if (rc == 0) {
        if (!blocks) fprintf(gp, " NaN notitle");
        fprintf(gp, "\n");
        gp_tail(r, gp, base);
    }
    rc = plot_done(r, s, rc, blocks, dat, gp, datp, gpp, base,
                   "Validation perplexity against context length (log-log; one colour per row, one dash type per RoPE "
                   "scaling; error bars: std over seeds)");
    free(base);
    free(lens);
    free(buf);
    return rc;
}

/* 1 if any finished run of variant k has a 'gate' histogram. */
static int has_gate_hist(R *r, const RSweep *s, int k, int *out) {
    const RVar *v = &s->vars[k];
    *out = 0;
    for (int i = 0; i < v->nruns && !*out; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!is_finished(u)) continue;
        sqlite3_stmt *st;
        if (q_prep(r, &st, "SELECT 1 FROM histograms WHERE run_id = ?1 AND key = ?2 LIMIT 1", "tt", u->run_id, "gate"))
            return -1;
        int sr = sqlite3_step(st);
        if (sr == SQLITE_ROW) *out = 1;
        if (q_done(r, st, sr, "read histograms")) return -1;
    }
    return 0;
}

static int make_plots(R *r, RSweep *s) {
    if (plot_series(r, s, "val_loss", 0, "validation loss (nats/token), mean over seeds",
                    "Validation loss against step (mean over seeds)", 0))
        return -1;
    if (plot_series(r, s, "f_attn", 1, "F-Attn (attention on position 0)", "F-Attn per layer (last step, mean over seeds)",
                    0))
        return -1;
    if (plot_series(r, s, "m_act", 1, "M-Act (max |h| of the layer output, log scale)",
                    "M-Act per layer (last step, mean over seeds; log scale)", 1))
        return -1;
    for (int k = 0; k < s->nvars; k++) {
        int has;
        if (has_gate_hist(r, s, k, &has)) return -1;
        if (has && plot_gate_hist(r, s, k)) return -1;
    }
    if (s->lr_plot && plot_lr(r, s)) return -1;
    if (s->has_sink && plot_heads(r, s)) return -1;
    if (s->nev && plot_ppl(r, s)) return -1;
    return 0;
}

/* ================================================================== */
/* tables                                                              */
/* ================================================================== */

/* A number into a cell, or the missing mark. */
static void cellnum(char *dst, size_t cap, double v, const char *fmt, const char *missing) {
    if (isnan(v))
        snprintf(dst, cap, "%s", missing);
    else
        snprintf(dst, cap, fmt, v);
}

static void fmt_p(char *buf, size_t cap, double p) {
    if (p >= 0.001)
        snprintf(buf, cap, "%.3f", p);
    else
        snprintf(buf, cap, "%.1e", p);
}

/* Table columns (md and tex). */
enum {
    C_LABEL, C_N, C_DIV, C_LOSS, C_PPL, C_DELTA, C_VS, C_CI, C_TEST, C_P, C_PHOLM, C_DIVTOT, C_PDIV, C_FATTN,
    C_MACT, C_GATE, C_SINKS, C_FREL, C_SPIKES, C_PARAMS, C_TPS, C_PPPL, C_PDELTA, C_PGATE, C_PMACT, C_PFATTN, NCOL
};
enum { NPAPER = NCOL - C_PPPL };
enum { ONLY_LR = 1, ONLY_SINK = 2 };
static const struct {
    const char *md, *tex;
    char align;  /* 'l' or 'r' */
    int only;    /* ONLY_LR: only under the lr rule; ONLY_SINK: only in sweeps with sink probes */
    int text;    /* a label: escaped when written */
} COLS[NCOL] = {
    [C_LABEL] = {"variant", "variant", 'l', 0, 1},
    [C_N] = {"n", "$n$", 'r', 0, 0},
    [C_DIV] = {"div", "div", 'r', 0, 0},
    [C_LOSS] = {"val loss", "val loss", 'r', 0, 0},
    [C_PPL] = {"val PPL", "val PPL", 'r', 0, 0},
    [C_DELTA] = {"Δ loss", "$\\Delta$ loss", 'r', 0, 0},
    [C_VS] = {"vs", "vs", 'l', 1, 1},
    [C_CI] = {"95% CI of Δ", "95\\% CI of $\\Delta$", 'r', 0, 0},
    [C_TEST] = {"test", "test", 'l', 0, 0},
    [C_P] = {"p", "$p$", 'r', 0, 0},
    [C_PHOLM] = {"p (Holm)", "$p_{\\mathrm{Holm}}$", 'r', 0, 0},
    [C_DIVTOT] = {"div/total", "div/total", 'r', 1, 0},
    [C_PDIV] = {"p (div, Fisher)", "$p_{\\mathrm{div}}$ (Fisher)", 'r', 1, 0},
    [C_FATTN] = {"F-Attn", "F-Attn", 'r', 0, 0},
    [C_MACT] = {"M-Act", "M-Act", 'r', 0, 0},
    [C_GATE] = {"gate", "gate", 'r', 0, 0},
    [C_SINKS] = {"sink heads (%)", "sink heads (\\%)", 'r', ONLY_SINK, 0},
    [C_FREL] = {"F-Attn/unif", "F-Attn/unif", 'r', ONLY_SINK, 0},
    [C_SPIKES] = {"spikes", "spikes", 'r', 0, 0},
    [C_PARAMS] = {"+params", "+params", 'r', 0, 0},
    [C_TPS] = {"tok/s", "tok/s", 'r', 0, 0},
    [C_PPPL] = {"paper PPL", "PPL", 'r', 0, 0},
    [C_PDELTA] = {"paper ΔPPL", "$\\Delta$PPL", 'r', 0, 0},
    [C_PGATE] = {"paper gate", "gate", 'r', 0, 0},
    [C_PMACT] = {"paper M-Act", "M-Act", 'r', 0, 0},
    [C_PFATTN] = {"paper F-Attn", "F-Attn", 'r', 0, 0},
};

static int col_on(const RSweep *s, int c) {
    return COLS[c].only == ONLY_LR ? s->lr_rule : COLS[c].only == ONLY_SINK ? s->has_sink : 1;
}

/* All the table cells of one row, as text for md / tex (missing: miss);
 * text[c] points into buf or at a label (COLS[c].text: to be escaped). */
typedef struct {
    char buf[NCOL][96];
    const char *text[NCOL];
    const char *after[NCOL]; /* written after text, unescaped */
} Cells;

/* mean ± std with prec decimals; the mean alone when std is NAN. */
static void cell_ms(char *dst, size_t cap, double m, double sd, int prec, const char *pm, const char *miss) {
    if (isnan(m))
        snprintf(dst, cap, "%s", miss);
    else if (isnan(sd))
        snprintf(dst, cap, "%.*f", prec, m);
    else
        snprintf(dst, cap, "%.*f%s%.*f", prec, m, pm, prec, sd);
}

static void cells(const RSweep *s, int k, const char *pm, const char *star, const char *miss, Cells *c) {
    const RVar *v = &s->vars[k];
    const size_t cap = sizeof c->buf[0];
    for (int j = 0; j < NCOL; j++) {
        snprintf(c->buf[j], cap, "%s", miss);
        c->text[j] = c->buf[j];
        c->after[j] = "";
    }
    c->text[C_LABEL] = v->label;
    snprintf(c->buf[C_N], cap, "%d", v->n_fin);
    snprintf(c->buf[C_DIV], cap, "%d", v->n_div);
    cell_ms(c->buf[C_LOSS], cap, v->loss_mean, v->loss_std, 4, pm, miss);
    cell_ms(c->buf[C_PPL], cap, v->ppl_mean, v->ppl_std, 3, pm, miss);
    if (k == s->base)
        snprintf(c->buf[C_DELTA], cap, "(baseline)");
    else if (v->is_ref)
        snprintf(c->buf[C_DELTA], cap, "(lr baseline)");
    else if (v->have_delta)
        snprintf(c->buf[C_DELTA], cap, "%+.4f%s", v->delta, v->have_test && v->p_holm < 0.05 ? star : "");
    if (v->ref >= 0) c->text[C_VS] = s->vars[v->ref].label;
    if (v->rule == RULE_FALLBACK) c->after[C_VS] = " (no lr match)";
    if (v->have_test) {
        snprintf(c->buf[C_CI], cap, "[%+.4f, %+.4f]", v->t.lo, v->t.hi);
        if (v->paired)
            snprintf(c->buf[C_TEST], cap, "paired (%d)", v->n_pairs);
        else
            snprintf(c->buf[C_TEST], cap, "Welch");
        fmt_p(c->buf[C_P], cap, v->t.p);
        fmt_p(c->buf[C_PHOLM], cap, v->p_holm);
    }
    snprintf(c->buf[C_DIVTOT], cap, "%d/%d", v->n_div, v->n_div + v->n_fin);
    if (!isnan(v->div_p)) fmt_p(c->buf[C_PDIV], cap, v->div_p);
    cell_ms(c->buf[C_FATTN], cap, v->f_attn, v->f_attn_std, 4, pm, miss);
    cell_ms(c->buf[C_MACT], cap, v->m_act, v->m_act_std, 2, pm, miss);
    cell_ms(c->buf[C_GATE], cap, v->gate_mean, v->gate_std, 3, pm, miss);
    cell_ms(c->buf[C_SINKS], cap, 100 * v->sink_share, 100 * v->sink_share_std, 1, pm, miss);
    cell_ms(c->buf[C_FREL], cap, v->f_attn_rel, v->f_attn_rel_std, 2, pm, miss);
    cellnum(c->buf[C_SPIKES], cap, v->spikes, "%.1f", miss);
    cellnum(c->buf[C_PARAMS], cap, v->gate_params, "%.0f", miss);
    cellnum(c->buf[C_TPS], cap, v->tokens_per_s, "%.0f", miss);
    const PaperRow *pr = paper_lookup(v->label);
    double nan = NAN;
    cellnum(c->buf[C_PPPL], cap, pr ? pr->ppl : nan, "%.3f", miss);
    cellnum(c->buf[C_PDELTA], cap, pr ? pr->ppl - PAPER_BASELINE_PPL : nan, "%+.3f", miss);
    cellnum(c->buf[C_PGATE], cap, pr ? pr->gate_mean : nan, "%.3f", miss);
    cellnum(c->buf[C_PMACT], cap, pr ? pr->m_act : nan, "%.0f", miss);
    cellnum(c->buf[C_PFATTN], cap, pr ? pr->f_attn : nan, "%.3f", miss);
}

/* Count of the sweep's runs per status, as "6 finished, 1 diverged". */
static void status_line(const RSweep *s, char *buf, size_t cap) {
    static const char *const order[] = {"finished", "diverged", "failed", "killed", "running", "pending"};
    buf[0] = '\0';
    size_t o = 0;
    for (size_t j = 0; j < sizeof order / sizeof order[0]; j++) {
        int n = 0;
        for (int i = 0; i < s->nruns; i++) n += strcmp(s->runs[i].status, order[j]) == 0;
        if (n && o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s%d %s", o ? ", " : "", n, order[j]);
    }
    if (!o) snprintf(buf, cap, "none");
}

/* Markdown text (a table cell, outside code spans): the characters that
 * could start markup (code, emphasis, links, HTML, strikethrough, math, the
 * cell's end) backslash-escaped, '_' unless inside a word (where it is
 * literal anyway: "seq_len" stays); control characters as \xNN. */
static void md_text(FILE *f, const char *s) {
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\x%02x", c);
            continue;
        }
        int in_word = c == '_' && p > s && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1]);
        if (strchr("\\`*[]<>|~$", c) || (c == '_' && !in_word)) fputc('\\', f);
        fputc(c, f);
    }
}

static void md_legend(FILE *f, int sink) {
    fprintf(f,
            "## How to read the tables\n\n"
            "One row per variant label, in sweep order.\n\n"
            "- **n**: finished runs (seeds). Every mean and standard deviation is over these; `±` is the sample "
            "standard deviation (n − 1). **div**: diverged runs, counted apart and left out of the means.\n"
            "- **val loss**, **val PPL**: final validation loss (nats per byte token) and perplexity "
            "(summary `val_loss`, `val_ppl`).\n"
            "- **Δ loss**: the row's val loss minus its reference row's (negative: the variant is better). The "
            "reference is the sweep's baseline row; in a sweep whose rows differ in `train.lr` it is the row with the "
            "baseline's configuration at the row's own `train.lr` (column **vs**; such rows are marked "
            "`(lr baseline)`), or the baseline row when there is none. Each table's caption says which rule it "
            "uses.\n"
            "- **test**: `paired (k)`: a seed fixes the initialisation and the data order, so runs with the same "
            "seed are compared seed by seed: Δ is the mean of the k per-seed differences (seeds with a finished run "
            "in both rows), **95%% CI** its t interval (k − 1 degrees of freedom) and **p** the two-sided paired "
            "t-test. `Welch`: fewer than 2 seeds pair up; Δ is the difference of the means, with Welch's "
            "unequal-variance interval and two-sided p (at least 2 finished runs in each row). `–`: too few runs "
            "for either (Δ, if shown, is then the plain difference of the means).\n"
            "- **p** is the raw p-value of the row; **p (Holm)** is Holm–Bonferroni-adjusted over all rows of the "
            "same table that have a p, so that the chance of any false `*` in a table stays below 5%%. `*` on Δ "
            "marks p (Holm) < 0.05; the CI is per row and not adjusted. With 2–3 seeds per row these tests have "
            "little power: an effect of the size of the seed-to-seed noise will usually get no `*`, so no `*` "
            "means \"not resolved with these seeds\", not \"no effect\". They also assume roughly normal "
            "per-seed values, which so few seeds cannot check.\n"
            "- **div/total**, **p (div, Fisher)** (only in sweeps whose rows differ in `train.lr`): diverged runs "
            "out of the runs that finished or diverged, and Fisher's exact two-sided p of that count against the "
            "reference row's (not adjusted for multiple comparisons).\n"
            "- **F-Attn**, **M-Act**, **gate**: the probes at each run's last evaluation, averaged over layers "
            "(first-token attention share, maximum |activation| of the residual stream, mean gate score), then "
            "mean ± sample std over seeds.\n"
            "- **spikes**: loss spikes per run (mean); **+params**: parameters the gate adds; **tok/s**: training "
            "throughput (mean).\n");
    if (sink)
        fprintf(f, "- **sink heads (%%)**, **F-Attn/unif** (sweeps with sink probes): at each run's last evaluation, "
                   "the share of the layer × head query heads that put more than %g%% of their attention on position "
                   "0, and F-Attn over the uniform causal level u(T) = mean over i = 1..T−1 of 1/(i+1) (1: no "
                   "preference for position 0); mean ± sample std over seeds.\n",
                100 * SINK_HEAD_FATTN);
    fprintf(f,
            "- **paper** columns: the paper's figure for the same label (Tables 1, 3, 4 of arXiv 2505.06708) and its "
            "PPL minus its baseline's 6.026. The paper trained a 15B-parameter MoE on 400B tokens, so magnitudes "
            "are not comparable: compare only directions (the sign of Δ loss against the sign of paper ΔPPL; "
            "F-Attn and M-Act lower with a gate). `–`: no value.\n\n");
}

static int write_md_table(FILE *f, const RSweep *s) {
    fprintf(f, "|");
    for (int j = 0; j < NCOL; j++)
        if (col_on(s, j)) fprintf(f, " %s |", COLS[j].md);
    fprintf(f, "\n|");
    for (int j = 0; j < NCOL; j++)
        if (col_on(s, j)) fprintf(f, "%s|", COLS[j].align == 'l' ? "---" : "--:");
    fprintf(f, "\n");
    for (int k = 0; k < s->nvars; k++) {
        Cells c;
        cells(s, k, " ± ", "*", "–", &c);
        fprintf(f, "|");
        for (int j = 0; j < NCOL; j++) {
            if (!col_on(s, j)) continue;
            fprintf(f, " ");
            if (COLS[j].text)
                md_text(f, c.text[j]);
            else
                fputs(c.text[j], f);
            fprintf(f, "%s |", c.after[j]);
        }
        fprintf(f, "\n");
    }
    return 0;
}

/* The rule for Δ and the size of the Holm family, as one paragraph; lab
 * writes a label (quoted as the format needs). */
static void rule_text(FILE *f, const RSweep *s, void (*lab)(FILE *, const char *), const char *code_on,
                      const char *code_off) {
    const char *bl = s->vars[s->base].label;
    if (!s->lr_rule) {
        fprintf(f, "Δ: every row against the baseline row ");
        lab(f, bl);
        fprintf(f, ".");
    } else {
        fprintf(f,
                "Rows differ in %strain.lr%s, so Δ is lr-matched: each row against the row with the configuration of "
                "the baseline row ",
                code_on, code_off);
        lab(f, bl);
        fprintf(f,
                " (every key but %strain.lr%s, %strain.min_lr%s, %strain.seed%s) at the row's own %strain.lr%s "
                "(column vs; those reference rows are marked %s(lr baseline)%s)",
                code_on, code_off, code_on, code_off, code_on, code_off, code_on, code_off, code_on, code_off);
        if (s->n_fallback) {
            fprintf(f, "; %d row%s with no such row (marked %s(no lr match)%s) %s compared with ", s->n_fallback,
                    s->n_fallback == 1 ? "" : "s", code_on, code_off, s->n_fallback == 1 ? "is" : "are");
            lab(f, bl);
            fprintf(f, " instead");
        }
        fprintf(f, ".");
    }
    if (s->n_tests)
        fprintf(f, " Holm–Bonferroni over the %d row%s with a p.", s->n_tests, s->n_tests == 1 ? "" : "s");
    else
        fprintf(f, " No row has a p (a test needs 2 paired seeds, or 2 finished runs in each row).");
}

static void md_label(FILE *f, const char *s) { md_code(f, s); }

/* TeX text with the special characters escaped (a control character as
 * the text \xNN). */
static void tex_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\textbackslash{}x%02x", c);
            continue;
        }
        switch (*s) {
        case '\\': fputs("\\textbackslash{}", f); break;
        case '~': fputs("\\textasciitilde{}", f); break;
        case '^': fputs("\\textasciicircum{}", f); break;
        case '&': case '%': case '$': case '#': case '_': case '{': case '}':
            fputc('\\', f);
            fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

/* A label in a TeX comment: as is, but on one line (a control character
 * as the text \xNN: a line break would end the comment and make the rest
 * TeX input). */
static void tex_comment_label(FILE *f, const char *s) { store_fput_escaped(f, s); }

/* ------------------------------------------------------------------ */
/* the sink and context-length sections                                */
/* ------------------------------------------------------------------ */

/* How a section is written: markdown (report.md) or TeX (SWEEP.tex). */
typedef struct {
    int md;
    const char *pm, *miss;
} Style;
static const Style MD_STYLE = {1, " ± ", "–"}, TEX_STYLE = {0, " $\\pm$ ", "--"};

/* A table of text cells; row 0 is the header.  The header and column 0
 * (labels) are escaped when written, other cells are written as they are
 * (they hold the format's own markup, such as the ± of the style). */
typedef struct {
    int ncol, nrow, cap;
    char **cell; /* nrow x ncol; NULL: empty */
} Tab;

/* Append an empty row; its index, or -1. */
static int tab_row(R *r, Tab *t) {
    if (grow(r, (void **)&t->cell, &t->cap, (t->nrow + 1) * t->ncol, sizeof *t->cell)) return -1;
    for (int j = 0; j < t->ncol; j++) t->cell[t->nrow * t->ncol + j] = NULL;
    return t->nrow++;
}

static int tab_init(R *r, Tab *t, int ncol) {
    *t = (Tab){ncol, 0, 0, NULL};
    return tab_row(r, t) < 0 ? -1 : 0;
}

/* Set a cell to text (heap, owned by the table from now on; NULL: an error
 * already set). */
static int tab_put(Tab *t, int row, int col, char *text) {
    if (!text) return -1;
    free(t->cell[row * t->ncol + col]);
    t->cell[row * t->ncol + col] = text;
    return 0;
}

static void tab_free(Tab *t) {
    for (int i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i]);
    free(t->cell);
}

static void tab_write(FILE *f, const Tab *t, const Style *y) {
    if (!y->md) {
        fprintf(f, "\\begin{tabular}{l");
        for (int j = 1; j < t->ncol; j++) fputc('r', f);
        fprintf(f, "}\n\\toprule\n");
    }
    for (int i = 0; i < t->nrow; i++) {
        if (y->md) fputc('|', f);
        for (int j = 0; j < t->ncol; j++) {
            const char *c = t->cell[i * t->ncol + j];
            fputs(y->md ? " " : j ? " & " : "", f);
            if (i && j)
                fputs(c ? c : "", f);
            else if (y->md)
                md_text(f, c ? c : "");
            else
                tex_text(f, c ? c : "");
            if (y->md) fputs(" |", f);
        }
        fputs(y->md ? "\n" : " \\\\\n", f);
        if (i == 0 && y->md) {
            fputc('|', f);
            for (int j = 0; j < t->ncol; j++) fputs(j ? "--:|" : "---|", f);
            fputc('\n', f);
        }
        if (i == 0 && !y->md) fputs("\\midrule\n", f);
    }
    fputs(y->md ? "\n" : "\\bottomrule\n\\end{tabular}\n", f);
}

/* Builds a table of sweep s; arg says which one. */
typedef int (*TabFn)(R *r, const RSweep *s, const Style *y, int arg, Tab *t);

static int emit_tab(R *r, FILE *f, const RSweep *s, const Style *y, TabFn fn, int arg) {
    Tab t = {0};
    int rc = fn(r, s, y, arg, &t);
    if (rc == 0) tab_write(f, &t, y);
    tab_free(&t);
    return rc;
}

/* A label inside a caption: `code` in markdown, as is in a TeX comment. */
static void cap_label(FILE *f, const Style *y, const char *s) {
    if (y->md)
        md_label(f, s);
    else
        tex_comment_label(f, s);
}

/* A count with a k / M / B suffix and 3 significant digits ("51.2k"). */
static char *fmt_count(R *r, double v, const char *miss) {
    static const char *const suffix[] = {"", "k", "M", "B"};
    int i = 0;
    if (isnan(v)) return sdup(r, miss);
    while (i < 3 && fabs(v) >= 1000) v /= 1000, i++;
    return i ? sfmt(r, "%.3g%s", v, suffix[i]) : sfmt(r, "%.0f", v);
}

/* mean ± std (cell_ms) as a table cell. */
static char *ms_cell(R *r, const Style *y, double m, double sd, int prec) {
    char buf[96];
    cell_ms(buf, sizeof buf, m, sd, prec, y->pm, y->miss);
    return sdup(r, buf);
}

/* The first step with a sink of row v's run with seed `seed`: "no" if
 * none formed, the missing mark if the row has no such run. */
static char *seed_cell(R *r, const RSweep *s, const RVar *v, long long seed, const Style *y) {
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (u->has_sink && u->seed == seed) return u->sink_step >= 0 ? sfmt(r, "%lld", u->sink_step) : sdup(r, "no");
    }
    return sdup(r, y->miss);
}

/* TabFn: the sink formation table, a line per row. */
static int sink_tab(R *r, const RSweep *s, const Style *y, int arg, Tab *t) {
    (void)arg;
    int ns = s->nseeds, rc = tab_init(r, t, 9 + ns);
    static const char *const head[] = {"formed", "max head F-Attn", "where", "F-Attn/unif", "sink heads (%)",
                                       "paper F-Attn"};
    rc = rc || tab_put(t, 0, 0, sdup(r, "variant")) || tab_put(t, 0, 1, sdup(r, "tokens/run")) ||
         tab_put(t, 0, 2, sdup(r, "seq_len"));
    for (int q = 0; rc == 0 && q < ns; q++) rc = tab_put(t, 0, 3 + q, sfmt(r, "seed %lld", s->seeds[q]));
    for (int q = 0; rc == 0 && q < 6; q++) rc = tab_put(t, 0, 3 + ns + q, sdup(r, head[q]));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        const RRun *w = v->where >= 0 ? &s->runs[v->where] : NULL;
        const PaperRow *pr = paper_lookup(v->label);
        int i = tab_row(r, t), c = 3 + ns;
        rc = i < 0 || tab_put(t, i, 0, sdup(r, v->label)) || tab_put(t, i, 1, fmt_count(r, v->tokens, y->miss)) ||
             tab_put(t, i, 2, isnan(v->seq_len) ? sdup(r, y->miss) : sfmt(r, "%.0f", v->seq_len));
        for (int q = 0; rc == 0 && q < ns; q++) rc = tab_put(t, i, 3 + q, seed_cell(r, s, v, s->seeds[q], y));
        rc = rc || tab_put(t, i, c, v->n_sink ? sfmt(r, "%d/%d", v->n_formed, v->n_sink) : sdup(r, y->miss)) ||
             tab_put(t, i, c + 1, ms_cell(r, y, v->head_max, v->head_max_std, 3)) ||
             tab_put(t, i, c + 2, w ? sfmt(r, "L%d.H%d", w->max_l, w->max_h) : sdup(r, y->miss)) ||
             tab_put(t, i, c + 3, ms_cell(r, y, v->f_attn_rel, v->f_attn_rel_std, 2)) ||
             tab_put(t, i, c + 4, ms_cell(r, y, 100 * v->sink_share, 100 * v->sink_share_std, 1)) ||
             tab_put(t, i, c + 5, pr && !isnan(pr->f_attn) ? sfmt(r, "%.3f", pr->f_attn) : sdup(r, y->miss));
    }
    return rc ? -1 : 0;
}

/* TabFn: row arg's per-head F-Attn in %, layers as rows. */
static int heads_tab(R *r, const RSweep *s, const Style *y, int arg, Tab *t) {
    const HeadMap *m = &s->vars[arg].heads;
    int rc = tab_init(r, t, 1 + m->nh) || tab_put(t, 0, 0, sdup(r, "layer"));
    for (int h = 0; rc == 0 && h < m->nh; h++) rc = tab_put(t, 0, 1 + h, sfmt(r, "H%d", h));
    for (int l = 0; rc == 0 && l < m->nl; l++) {
        int i = tab_row(r, t);
        rc = i < 0 || tab_put(t, i, 0, sfmt(r, "L%d", l));
        for (int h = 0; rc == 0 && h < m->nh; h++) {
            double x = m->v[l * m->nh + h];
            rc = tab_put(t, i, 1 + h, isnan(x) ? sdup(r, y->miss) : sfmt(r, "%.1f", 100 * x));
        }
    }
    return rc ? -1 : 0;
}

/* TabFn: eval_ppl of series arg / 2 on split arg % 2, rows x lengths. */
static int ppl_tab(R *r, const RSweep *s, const Style *y, int arg, Tab *t) {
    int j = arg / 2, sp = arg % 2;
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    int nl = lens && buf ? eval_lens(s, j, sp, lens) : 0;
    int rc = !lens || !buf ? oom(r) : tab_init(r, t, 2 + nl);
    rc = rc || tab_put(t, 0, 0, sdup(r, "variant")) || tab_put(t, 0, 1, sdup(r, "n"));
    for (int q = 0; rc == 0 && q < nl; q++)
        rc = tab_put(t, 0, 2 + q,
                     isnan(s->train_len) ? sfmt(r, "%lld", lens[q])
                                         : sfmt(r, "%lld (%gx)", lens[q], (double)lens[q] / s->train_len));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        int n = 0, i = -1;
        for (int q = 0; rc == 0 && q < nl; q++) {
            double m, sd;
            int nq = eval_stats(s, k, j, sp, lens[q], buf, &m, &sd);
            if (nq && i < 0) rc = (i = tab_row(r, t)) < 0 || tab_put(t, i, 0, sdup(r, s->vars[k].label));
            if (rc == 0 && i >= 0) rc = tab_put(t, i, 2 + q, ms_cell(r, y, m, sd, 3));
            if (nq > n) n = nq;
        }
        if (rc == 0 && i >= 0) rc = tab_put(t, i, 1, sfmt(r, "%d", n));
    }
    free(lens);
    free(buf);
    return rc ? -1 : 0;
}

static int sink_section(R *r, FILE *f, const RSweep *s, const Style *y) {
    if (y->md)
        fprintf(f, "### Sink formation\n\n"
                   "`gated train` tests at every evaluation whether an attention sink has formed: some query head "
                   "puts more than %g%% of its attention on position 0 (its F-Attn, over query positions ≥ 1 of the "
                   "validation windows) and that head's layer has a mean F-Attn at least %g× the uniform causal level "
                   "u(T). **seed S**: the first evaluation step at which that seed's run had a sink (`no`: never); "
                   "**formed**: runs that had one / finished runs with the probe; **max head F-Attn**: the largest per-head F-Attn at "
                   "the last evaluation, mean ± std over seeds, and **where** it is (layer.head; the most common "
                   "place); **F-Attn/unif** and **sink heads** as in the table above; **tokens/run**: train.steps × "
                   "train.batch × model.seq_len; **paper F-Attn**: Table 4 for the same label.\n\n",
                100 * SINK_HEAD_FATTN, SINK_LAYER_RATIO);
    else
        fprintf(f, "%% Sink formation: per seed the first evaluation step with a sink (a head with F-Attn > %g and "
                   "its layer's mean F-Attn >= %gx uniform; no: never), formed/runs, the largest per-head F-Attn at "
                   "the last step (mean $\\pm$ std) and where, F-Attn over uniform, share of sink heads (%%).\n",
                SINK_HEAD_FATTN, SINK_LAYER_RATIO);
    return emit_tab(r, f, s, y, sink_tab, 0);
}

static int heads_section(R *r, FILE *f, const RSweep *s, const Style *y) {
    int any = 0;
    for (int k = 0; k < s->nvars; k++) any |= s->vars[k].heads.nl > 0;
    if (!any) return 0;
    if (y->md)
        fprintf(f, "#### F-Attn per layer and query head\n\n"
                   "At the last evaluation, in %%, mean over the row's finished runs; rows: layers, columns: query "
                   "heads.\n\n");
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        if (!v->heads.nl) continue;
        fputs(y->md ? "" : "% F-Attn (%) per layer and head: ", f);
        cap_label(f, y, v->label);
        fprintf(f, " (%d run%s", v->n_sink, v->n_sink == 1 ? "" : "s");
        if (v->seq_len >= 2)
            fprintf(f, "; uniform causal attention at T = %.0f: %.1f%%", v->seq_len,
                    100 * probe_uniform_fattn((int)v->seq_len));
        fputs(y->md ? "):\n\n" : ")\n", f);
        if (emit_tab(r, f, s, y, heads_tab, k)) return -1;
    }
    return 0;
}

/* The paper's Table 5, beside the context-length tables (markdown only). */
static void paper_longctx_md(FILE *f) {
    fprintf(f, "The paper's long-context result (Table 5, RULER accuracy %%; %s):\n\n| RULER | baseline | gated |\n"
               "|---|--:|--:|\n",
            paper_longctx_setup);
    for (int i = 0; i < paper_nlongctx; i++)
        fprintf(f, "| %s | %.2f | %.2f |\n", paper_longctx[i].what, paper_longctx[i].baseline,
                paper_longctx[i].gated);
    fprintf(f, "\nThe trend to compare: within the trained length the two are level; beyond it the gated model keeps "
               "much more of its accuracy. Here: whether the gated rows' perplexity grows less than the baseline's "
               "past 1x (byte-level perplexity, not RULER accuracy: compare directions only).\n\n");
}

static int ppl_section(R *r, FILE *f, const RSweep *s, const Style *y) {
    static const char *const splits[2] = {"val", "test"};
    if (y->md)
        fprintf(f, "### Perplexity against context length\n\n"
                   "`gated eval` results (metric `eval_ppl`) of each row's finished runs: perplexity at each evaluated "
                   "context length, mean ± std over seeds (**n**: runs). Headers: the length and its multiple of the "
                   "training length `model.seq_len`. One table per RoPE scaling and split; a scaling's factor is "
                   "length / `model.seq_len` (at least 1) unless the table's name gives a fixed F.\n\n");
    for (int j = 0; j < s->neser; j++)
        for (int sp = 0; sp < 2; sp++) {
            int any = 0;
            for (int i = 0; i < s->nev; i++) any |= s->ev[i].series == j && s->ev[i].split == sp;
            if (!any) continue;
            if (y->md)
                fprintf(f, "**Scaling `%s`**, split `%s`:\n\n", s->eser[j].name, splits[sp]);
            else
                fprintf(f, "%% Perplexity against context length: scaling %s, split %s (eval_ppl, mean $\\pm$ std "
                           "over seeds)\n", s->eser[j].name, splits[sp]);
            if (emit_tab(r, f, s, y, ppl_tab, 2 * j + sp)) return -1;
        }
    if (y->md) paper_longctx_md(f);
    return 0;
}

/* The sections a sweep has data for, after its main table. */
static int write_sections(R *r, FILE *f, const RSweep *s, const Style *y) {
    if (s->has_sink && (sink_section(r, f, s, y) || heads_section(r, f, s, y))) return -1;
    if (s->nev && ppl_section(r, f, s, y)) return -1;
    return 0;
}

static int write_md(R *r, const char *path) {
    FILE *f = open_out(r, path);
    if (!f) return -1;
    char tbuf[64];
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(tbuf, sizeof tbuf, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(tbuf, sizeof tbuf, "%lld", (long long)now);
    fprintf(f, "# gated report\n\n- database: ");
    md_code(f, r->o->db_path);
    fprintf(f, "\n- generated: %s\n", tbuf);

    /* runs by status, code versions */
    sqlite3_stmt *st;
    static const char *const order[] = {"finished", "diverged", "failed", "killed", "running"};
    int cnt[5] = {0}, total = 0;
    double nowd = (double)now;
    if (q_prep(r, &st, "SELECT status, heartbeat_at FROM runs", "")) goto bad;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *stt = col_text(st, 0);
        if (strcmp(stt, "running") == 0 && nowd - sqlite3_column_double(st, 1) > STORE_STALE_SECONDS) stt = "killed";
        for (int j = 0; j < 5; j++)
            if (strcmp(stt, order[j]) == 0) cnt[j]++;
        total++;
    }
    if (q_done(r, st, sr, "read runs")) goto bad;
    fprintf(f, "- runs: %d", total);
    for (int j = 0, first = 1; j < 5; j++)
        if (cnt[j]) {
            fprintf(f, "%s%d %s", first ? " (" : ", ", cnt[j], order[j]);
            first = 0;
        }
    fprintf(f, "%s\n- code versions:", total && (cnt[0] + cnt[1] + cnt[2] + cnt[3] + cnt[4]) ? ")" : "");
    if (q_prep(r, &st,
               "SELECT code_version, git_dirty, count(*) FROM runs GROUP BY code_version, git_dirty"
               " ORDER BY count(*) DESC, code_version",
               ""))
        goto bad;
    int nver = 0;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int dirty = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_int(st, 1) == 1;
        long long n = sqlite3_column_int64(st, 2);
        fprintf(f, "%s ", nver ? "," : "");
        md_code(f, col_text(st, 0)); /* escaped by md_code: the database is untrusted */
        fprintf(f, "%s (%lld run%s)", dirty ? " + uncommitted changes" : "", n, n == 1 ? "" : "s");
        nver++;
    }
    if (q_done(r, st, sr, "read runs")) goto bad;
    fprintf(f, "%s\n", nver ? "" : " none");
    fprintf(f, "- sweeps:");
    for (int i = 0; i < r->nsw; i++) {
        fprintf(f, "%s [", i ? "," : "");
        md_code(f, r->sw[i].name);
        fprintf(f, "](#sweep-%s) (%d runs)", r->sw[i].fname, r->sw[i].nruns);
    }
    fprintf(f, "%s\n", r->nsw ? "" : " none recorded (run `gated sweep` first)");
    if (r->o->no_plots)
        fprintf(f, "- plots: not requested (--no-plots)\n");
    else if (!r->gp_ok)
        fprintf(f, "- plots: skipped: %s\n", r->gp_note);
    else
        fprintf(f, "- plots: `plots/` (SVG and PNG, with the gnuplot data files and scripts that made them)\n");
    fprintf(f, "\n");
    int any_sink = 0;
    for (int i = 0; i < r->nsw; i++) any_sink |= r->sw[i].has_sink;
    md_legend(f, any_sink);

    for (int i = 0; i < r->nsw; i++) {
        const RSweep *s = &r->sw[i];
        char sl[256];
        status_line(s, sl, sizeof sl);
        fprintf(f, "<a id=\"sweep-%s\"></a>\n\n## Sweep ", s->fname);
        md_code(f, s->name);
        fprintf(f, "\n\n%d runs: %s. ", s->nruns, sl);
        if (s->base >= 0) {
            fprintf(f, "Baseline row: ");
            md_code(f, s->vars[s->base].label);
            fprintf(f, ". ");
            rule_text(f, s, md_label, "`", "`");
            fprintf(f, "\n\n");
        } else
            fprintf(f, "No baseline row (set `baseline:` in the sweep file): no Δ column.\n\n");
        write_md_table(f, s);
        fprintf(f, "\n");
        if (write_sections(r, f, s, &MD_STYLE)) goto bad;
        if (r->o->no_plots) continue;
        fprintf(f, "### Plots\n\n");
        if (!r->gp_ok) fprintf(f, "Plots skipped: %s.\n\n", r->gp_note);
        for (int k = 0; k < s->nplots; k++) {
            const PlotEntry *e = &s->plots[k];
            fprintf(f, "**%s**", e->title);
            if (e->made) {
                if (r->term_svg && r->term_png)
                    fprintf(f, " ([SVG](plots/%s.svg))\n\n![%s](plots/%s.png)\n\n", e->base, e->base, e->base);
                else
                    fprintf(f, "\n\n![%s](plots/%s.%s)\n\n", e->base, e->base, r->term_png ? "png" : "svg");
            } else if (r->gp_ok)
                fprintf(f, ": gnuplot failed (see `plots/gnuplot.log`); data `plots/%s.dat`, script `plots/%s.gp`\n\n",
                        e->base, e->base);
            else
                fprintf(f, ": not drawn; data `plots/%s.dat`, script `plots/%s.gp`\n\n", e->base, e->base);
        }
        if (s->nplots == 0) fprintf(f, "No finished runs with data to plot.\n\n");
        if (!s->lr_plot) fprintf(f, "Val loss against learning rate: not drawn (the runs share one `train.lr`).\n\n");
        fprintf(f, "Attention heatmap (baseline vs G1, first-token column): skipped — it needs per-position "
                   "attention data, which the database does not hold (the store keeps only per-layer aggregates "
                   "such as F-Attn%s).\n\n",
                s->has_sink ? ", and F-Attn per head: see the per-head plot above" : "");
    }
    return close_out(r, f, path);
bad:
    fclose(f);
    return -1;
}

/* CSV field: quoted when it holds a comma, quote or newline. */
static void csv_text(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A number, or nothing when NAN; then the separator sep (',' or '\n'). */
static void csv_val(FILE *f, double v, char sep) {
    if (!isnan(v)) fprintf(f, "%.10g", v);
    fputc(sep, f);
}

static void csv_num(FILE *f, double v) { csv_val(f, v, ','); }

static int write_csv(R *r, const RSweep *s, const char *path) {
    static const char *const rules[] = {[RULE_NONE] = "", [RULE_BASE] = "baseline", [RULE_LR] = "lr_matched",
                                        [RULE_FALLBACK] = "baseline_fallback"};
    FILE *f = open_out(r, path);
    if (!f) return -1;
    fprintf(f, "sweep,label,idx,is_baseline,n_finished,n_diverged,n_runs,val_loss_mean,val_loss_std,val_ppl_mean,"
               "val_ppl_std,delta_rule,delta_vs,delta_val_loss,delta_ci_lo,delta_ci_hi,test,n_pairs,t,df,p_raw,p_holm,"
               "significant,f_attn_mean,f_attn_std,m_act_mean,m_act_std,gate_mean,gate_mean_std,spikes_mean,"
               "gate_params,tokens_per_s_mean,train_lr,n_ended,div_fisher_p,paper_ppl,paper_delta_ppl,"
               "paper_gate_mean,paper_m_act,paper_f_attn%s\n",
            s->has_sink ? ",sink_head_share_mean,sink_head_share_std,f_attn_rel_mean,f_attn_rel_std" : "");
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        csv_text(f, s->name);
        fputc(',', f);
        csv_text(f, v->label);
        fprintf(f, ",%d,%d,%d,%d,%d,", s->runs[v->runs[0]].idx, k == s->base, v->n_fin, v->n_div, v->nruns);
        csv_num(f, v->loss_mean);
        csv_num(f, v->loss_std);
        csv_num(f, v->ppl_mean);
        csv_num(f, v->ppl_std);
        fprintf(f, "%s,", v->is_ref ? "reference" : rules[v->rule]);
        if (v->ref >= 0) csv_text(f, s->vars[v->ref].label);
        fputc(',', f);
        csv_num(f, v->have_delta ? v->delta : NAN);
        csv_num(f, v->have_test ? v->t.lo : NAN);
        csv_num(f, v->have_test ? v->t.hi : NAN);
        fprintf(f, "%s,", v->have_test ? (v->paired ? "paired" : "welch") : "");
        if (v->paired) fprintf(f, "%d", v->n_pairs);
        fputc(',', f);
        csv_num(f, v->have_test ? v->t.t : NAN);
        csv_num(f, v->have_test ? v->t.df : NAN);
        csv_num(f, v->have_test ? v->t.p : NAN);
        csv_num(f, v->have_test ? v->p_holm : NAN);
        if (v->have_test) fprintf(f, "%d", v->p_holm < 0.05);
        fputc(',', f);
        csv_num(f, v->f_attn);
        csv_num(f, v->f_attn_std);
        csv_num(f, v->m_act);
        csv_num(f, v->m_act_std);
        csv_num(f, v->gate_mean);
        csv_num(f, v->gate_std);
        csv_num(f, v->spikes);
        csv_num(f, v->gate_params);
        csv_num(f, v->tokens_per_s);
        csv_num(f, v->lr);
        fprintf(f, "%d,", v->n_fin + v->n_div);
        csv_num(f, v->div_p);
        const PaperRow *pr = paper_lookup(v->label);
        csv_num(f, pr ? pr->ppl : NAN);
        csv_num(f, pr ? pr->ppl - PAPER_BASELINE_PPL : NAN);
        csv_num(f, pr ? pr->gate_mean : NAN);
        csv_num(f, pr ? pr->m_act : NAN);
        csv_val(f, pr ? pr->f_attn : NAN, s->has_sink ? ',' : '\n');
        if (s->has_sink) {
            csv_num(f, v->sink_share);
            csv_num(f, v->sink_share_std);
            csv_num(f, v->f_attn_rel);
            csv_val(f, v->f_attn_rel_std, '\n');
        }
    }
    return close_out(r, f, path);
}

/* The sweep's name and a row's label: the first two fields of a line. */
static void csv_row_head(FILE *f, const RSweep *s, const RVar *v) {
    csv_text(f, s->name);
    fputc(',', f);
    csv_text(f, v->label);
    fputc(',', f);
}

/* SWEEP-sink.csv: one line per finished run with sink probes. */
static int csv_sink(R *r, FILE *f, const RSweep *s) {
    (void)r;
    fprintf(f, "sweep,label,seed,run_id,tokens,seq_len,first_sink_step,max_head_f_attn,max_layer,max_head,f_attn_rel,"
               "sink_head_share\n");
    for (int k = 0; k < s->nvars; k++)
        for (int i = 0; i < s->vars[k].nruns; i++) {
            const RRun *u = &s->runs[s->vars[k].runs[i]];
            if (!u->has_sink) continue;
            csv_row_head(f, s, &s->vars[k]);
            char qid[64];
            fprintf(f, "%lld,", u->seed);
            csv_text(f, store_escape(u->run_id, qid, sizeof qid));
            fputc(',', f);
            csv_num(f, u->tokens);
            csv_num(f, u->seq_len);
            if (u->sink_step >= 0) fprintf(f, "%lld", u->sink_step);
            fputc(',', f);
            csv_num(f, u->head_max);
            if (isnan(u->head_max))
                fputs(",,", f);
            else
                fprintf(f, "%d,%d,", u->max_l, u->max_h);
            csv_num(f, u->f_attn_rel);
            csv_val(f, u->sink_share, '\n');
        }
    return 0;
}

/* SWEEP-fattn-heads.csv: each row's mean per-head F-Attn. */
static int csv_heads(R *r, FILE *f, const RSweep *s) {
    (void)r;
    fprintf(f, "sweep,label,runs,layer,head,f_attn_mean\n");
    for (int k = 0; k < s->nvars; k++) {
        const HeadMap *m = &s->vars[k].heads;
        for (int c = 0; c < m->nl * m->nh; c++) {
            csv_row_head(f, s, &s->vars[k]);
            fprintf(f, "%d,%d,%d,", s->vars[k].n_sink, c / m->nh, c % m->nh);
            csv_val(f, m->v[c], '\n');
        }
    }
    return 0;
}

/* SWEEP-ppl.csv: eval_ppl per row, split, series and length. */
static int csv_ppl(R *r, FILE *f, const RSweep *s) {
    static const char *const splits[2] = {"val", "test"};
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    if (!lens || !buf) {
        free(lens), free(buf);
        return oom(r);
    }
    fprintf(f, "sweep,label,split,series,scaling,factor,len,train_len,n,ppl_mean,ppl_std\n");
    for (int j = 0; j < s->neser; j++)
        for (int sp = 0; sp < 2; sp++) {
            int nl = eval_lens(s, j, sp, lens);
            for (int k = 0; k < s->nvars; k++)
                for (int q = 0; q < nl; q++) {
                    double m, sd;
                    int n = eval_stats(s, k, j, sp, lens[q], buf, &m, &sd);
                    if (!n) continue;
                    csv_row_head(f, s, &s->vars[k]);
                    fprintf(f, "%s,", splits[sp]);
                    csv_text(f, s->eser[j].name);
                    fputc(',', f);
                    csv_text(f, s->eser[j].scaling);
                    fputc(',', f);
                    csv_num(f, s->eser[j].factor);
                    fprintf(f, "%lld,", lens[q]);
                    csv_num(f, s->train_len);
                    fprintf(f, "%d,", n);
                    csv_num(f, m);
                    csv_val(f, sd, '\n');
                }
        }
    free(lens);
    free(buf);
    return 0;
}

/* Write DIR/SWEEP-suffix.csv with fn. */
static int csv_file(R *r, const RSweep *s, const char *suffix, int (*fn)(R *, FILE *, const RSweep *)) {
    char *path = sfmt(r, "%s/%s-%s.csv", r->o->out_dir, s->fname, suffix);
    if (!path) return -1;
    FILE *f = open_out(r, path);
    int rc = -1;
    if (f) {
        rc = fn(r, f, s);
        if (close_out(r, f, path)) rc = -1;
    }
    if (rc == 0 && r->info) fprintf(r->info, "wrote %s\n", path);
    free(path);
    return rc;
}

/* The CSV files of the sections the sweep has data for. */
static int write_csv_sections(R *r, const RSweep *s) {
    if (s->has_sink && (csv_file(r, s, "sink", csv_sink) || csv_file(r, s, "fattn-heads", csv_heads))) return -1;
    if (s->nev && csv_file(r, s, "ppl", csv_ppl)) return -1;
    return 0;
}

static int write_tex(R *r, const RSweep *s, const char *path) {
    FILE *f = open_out(r, path);
    if (!f) return -1;
    char sl[256];
    status_line(s, sl, sizeof sl);
    fprintf(f, "%% gated report: sweep ");
    tex_comment_label(f, s->name);
    fprintf(f, " (%d runs: %s); database ", s->nruns, sl);
    tex_comment_label(f, r->o->db_path);
    fprintf(f, "\n%% needs \\usepackage{booktabs}.  Means over finished runs, $\\pm$ sample std over seeds; "
               "test: paired by seed when 2 or more seeds pair up, else Welch; $p$ raw, $p_{\\mathrm{Holm}}$ "
               "Holm-Bonferroni-adjusted over the table's rows; $^{*}$: $p_{\\mathrm{Holm}} < 0.05$ (few seeds: low "
               "power, no $^{*}$ is not evidence of no effect).\n");
    if (s->base >= 0) {
        fprintf(f, "%% ");
        rule_text(f, s, tex_comment_label, "", "");
        fprintf(f, "\n");
    } else
        fprintf(f, "%% No baseline row: no Delta.\n");
    fprintf(f, "%% Paper: 15B MoE, 400B tokens (arXiv 2505.06708): compare directions only.\n");
    int ns = 0; /* columns of this suite, the label excluded */
    fprintf(f, "\\begin{tabular}{");
    for (int j = 0; j < NCOL; j++)
        if (col_on(s, j)) {
            fputc(COLS[j].align, f);
            if (j > C_LABEL && j < C_PPPL) ns++;
        }
    fprintf(f, "}\n\\toprule\n & \\multicolumn{%d}{c}{this suite} & \\multicolumn{%d}{c}{paper (15B MoE)} \\\\\n"
               "\\cmidrule(lr){2-%d}\\cmidrule(lr){%d-%d}\n",
            ns, NPAPER, ns + 1, ns + 2, ns + 1 + NPAPER);
    for (int j = 0, first = 1; j < NCOL; j++)
        if (col_on(s, j)) {
            fprintf(f, "%s%s", first ? "" : " & ", COLS[j].tex);
            first = 0;
        }
    fprintf(f, " \\\\\n\\midrule\n");
    for (int k = 0; k < s->nvars; k++) {
        Cells c;
        cells(s, k, " $\\pm$ ", "$^{*}$", "--", &c);
        for (int j = 0, first = 1; j < NCOL; j++) {
            if (!col_on(s, j)) continue;
            if (!first) fputs(" & ", f);
            first = 0;
            /* labels are escaped; the other cells hold no TeX specials but their own markup */
            if (COLS[j].text)
                tex_text(f, c.text[j]);
            else
                fputs(c.text[j], f);
            fputs(c.after[j], f);
        }
        fprintf(f, " \\\\\n");
    }
    fprintf(f, "\\bottomrule\n\\end{tabular}\n");
    if (write_sections(r, f, s, &TEX_STYLE)) {
        fclose(f);
        return -1;
    }
    return close_out(r, f, path);
}

/* ================================================================== */
/* driver                                                              */
/* ================================================================== */

int report_run(const ReportOpts *o, char *err, size_t errcap) {
    R r = {0};
    r.o = o;
    r.err = err;
    r.errcap = errcap;
    r.log = o->log ? o->log : stderr;
    r.info = o->info;
    if (err && errcap) err[0] = '\0';
    int code = REPORT_RUNTIME;
    char **names = NULL;
    int nnames = 0;

    if (!o->db_path || !o->out_dir) {
        rfail(&r, "report: no database or output directory given");
        return REPORT_BADINPUT;
    }
    if ((int)o->format < 0 || o->format > REPORT_TEX) {
        rfail(&r, "report: bad format %d", (int)o->format);
        return REPORT_BADINPUT;
    }
    if (access(o->db_path, F_OK) != 0) {
        rfail(&r, "%s: no such database (run a sweep first, or pass --db)", o->db_path);
        return REPORT_BADINPUT;
    }
    char serr[1024];
    if (store_open_ro(&r.st, o->db_path, serr, sizeof serr)) {
        rfail(&r, "%s", serr);
        return REPORT_BADINPUT;
    }
    r.db = store_db(r.st);
    if (list_sweeps(&r, &names, &nnames)) goto out;

    if (o->sweep) {
        int found = 0;
        for (int i = 0; i < nnames; i++) found |= strcmp(names[i], o->sweep) == 0;
        if (!found) {
            char list[512] = "", q[128], want[256];
            size_t n = 0;
            for (int i = 0; i < nnames && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                      store_escape(names[i], q, sizeof q));
            rfail(&r, "%s: no sweep '%s' (sweeps: %s)", o->db_path, store_escape(o->sweep, want, sizeof want),
                  nnames ? list : "none");
            code = REPORT_BADINPUT;
            goto out;
        }
    }
    for (int i = 0; i < nnames; i++) {
        if (o->sweep && strcmp(names[i], o->sweep) != 0) continue;
        if (grow(&r, (void **)&r.sw, &r.sw_cap, r.nsw + 1, sizeof *r.sw)) goto out;
        RSweep *s = &r.sw[r.nsw++];
        memset(s, 0, sizeof *s);
        if (!(s->raw = sdup(&r, names[i])) || !(s->name = esc(&r, names[i])) || !(s->fname = safe_name(&r, names[i])))
            goto out;
        if (load_sweep(&r, s)) goto out;
    }

    if (mkdir_p(&r, o->out_dir)) goto out;
    if (!o->no_plots && r.nsw > 0) {
        if (!(r.plots_dir = sfmt(&r, "%s/plots", o->out_dir)) || mkdir_p(&r, r.plots_dir)) goto out;
        gp_check(&r);
        if (r.failed) goto out;
        for (int i = 0; i < r.nsw; i++)
            if (make_plots(&r, &r.sw[i])) goto out;
    }

    if (o->format == REPORT_MD) {
        char *path = sfmt(&r, "%s/report.md", o->out_dir);
        if (!path) goto out;
        int rc = write_md(&r, path);
        if (rc == 0 && r.info) fprintf(r.info, "wrote %s\n", path);
        free(path);
        if (rc) goto out;
    } else {
        if (r.nsw == 0) fprintf(r.log, "gated report: %s: no sweeps recorded; nothing written\n", o->db_path);
        for (int i = 0; i < r.nsw; i++) {
            char *path = sfmt(&r, "%s/%s.%s", o->out_dir, r.sw[i].fname, report_format_names[o->format]);
            if (!path) goto out;
            int rc = o->format == REPORT_CSV ? write_csv(&r, &r.sw[i], path) : write_tex(&r, &r.sw[i], path);
            if (rc == 0 && r.info) fprintf(r.info, "wrote %s\n", path);
            free(path);
            if (rc || (o->format == REPORT_CSV && write_csv_sections(&r, &r.sw[i]))) goto out;
        }
    }
    if (r.gp_fail) {
        rfail(&r, "gnuplot failed on %d plot%s (see %s/gnuplot.log); the tables are written", r.gp_fail,
              r.gp_fail == 1 ? "" : "s", r.plots_dir);
        goto out;
    }
    code = REPORT_OK;
out:
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    for (int i = 0; i < r.nsw; i++) free_sweep(&r.sw[i]);
    free(r.sw);
    free(r.plots_dir);
    free(r.gp_prog);
    store_close(r.st);
    if (code == REPORT_OK && err && errcap) err[0] = '\0';
    return code;
}
