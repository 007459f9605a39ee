/*
 * report.h — `gated report`: tables and plots from the results store.
 *
 * For every sweep (table sweep_runs) one table, a row per variant label in
 * sweep order: finished runs n and diverged runs, mean ± sample std over
 * seeds of the final validation loss and perplexity (summary val_loss,
 * val_ppl), and the difference Δ in val loss against the row's reference
 * row:
 *   - the reference is the sweep's baseline row; in a sweep whose rows
 *     differ in train.lr it is the row of the baseline's line (the same
 *     config but for train.lr, train.min_lr, train.seed) at the row's own
 *     train.lr, falling back to the baseline row when there is none;
 *   - paired by seed (the seed fixes initialisation and data order) when
 *     the two rows share at least 2 seeds with finished runs: Δ is the mean
 *     per-seed difference, with a one-sample t interval and two-sided p
 *     (df = pairs - 1); otherwise Welch's unequal-variance test of the two
 *     means; the table says which;
 *   - raw p and the Holm–Bonferroni adjusted p across the rows of the table
 *     that have one; `*` when the adjusted p < 0.05.
 * Then the last-step probes F-Attn, M-Act and gate mean (metrics f_attn,
 * m_act, gate_mean at context '') as mean ± std over seeds, loss spikes,
 * added parameters, tokens/s, and the paper's figures for the same label
 * (paper.h).  In a sweep whose rows differ in train.lr also diverged/total
 * (total: finished + diverged) and Fisher's exact two-sided p of the
 * divergence count against the reference row.  Means are over the row's
 * finished runs.
 *
 *
 * A sweep whose finished runs have attention-sink probes (metric
 * sink_formed, written by `gated train` at every evaluation; probes.h)
 * also gets:
 *   - in the table above, "sink heads (%)" (sink_head_share) and
 *     "F-Attn/unif" (f_attn_rel, context ''), last step, mean ± std;
 *   - "Sink formation": a line per row with tokens per run
 *     (train.steps x train.batch x model.seq_len), model.seq_len, per seed
 *     the first evaluation step at which sink_formed = 1 ("no": never),
 *     formed k/n, mean ± std of the largest per-head F-Attn (f_attn,
 *     context layer=L,head=H) at the last step and where it is ("L1.H0",
 *     the most common place), F-Attn/unif, sink heads, the paper's F-Attn;
 *   - per row, a layer x head table of F-Attn in % (last step, mean over
 *     the finished runs) and the plot SWEEP-fattn-heads (one panel per row,
 *     colour scale 0..1).
 * A sweep whose finished runs have `gated eval` results (metric eval_ppl,
 * context split=S,len=L,scaling=K,factor=F) also gets "Perplexity against
 * context length": per scaling series and split, rows x lengths
 * (ascending, headed "512 (4x)": the multiple of model.seq_len), cells
 * eval_ppl mean ± std over finished runs; a series is K at its automatic
 * factor (L / model.seq_len, at least 1, or the only F used at that
 * (L, K)), or "K F=4" for another fixed factor; the plot
 * SWEEP-ppl-vs-length (val; log2 x, log y, std error bars); and the
 * paper's Table 5 (paper.h) beside it.  Sweeps without these metrics get
 * none of this.
 *
 * Formats: md (DIR/report.md: header, legend, every sweep, plot links),
 * csv (DIR/SWEEP.csv, one per sweep, plain numbers; with sink probes also
 * SWEEP-sink.csv, a line per run, and SWEEP-fattn-heads.csv; with eval
 * results SWEEP-ppl.csv) and tex (DIR/SWEEP.tex, booktabs tabulars: the
 * main table, then the sections above).  Plots (every format) go to
 * DIR/plots/ as gnuplot data files, scripts, SVG and PNG: validation loss
 * against step, F-Attn and M-Act per layer, gate-score histograms per gated
 * variant, final val loss against learning rate for a sweep whose runs
 * vary train.lr, and the two plots above.  Without gnuplot the tables are
 * still written.
 *
 * Every query binds its values; the database is opened read-only
 * (store_open_ro: nothing is created or changed).  Text read from it is
 * untrusted (a database may be merged from elsewhere): it is escaped when
 * loaded and quoted for each format (gnuplot, Markdown, TeX, CSV), so a
 * label can neither break a plot script's line nor inject markup.
 */
#ifndef GATED_REPORT_H
#define GATED_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef enum { REPORT_MD, REPORT_CSV, REPORT_TEX } ReportFormat;

/* Format names in enum order, NULL-terminated ("md", "csv", "tex"). */
extern const char *const report_format_names[];

typedef struct {
    const char *db_path;   /* the results database (must exist) */
    const char *sweep;     /* one sweep, or NULL for all */
    ReportFormat format;
    const char *out_dir;   /* created (with parents) if missing */
    int no_plots;          /* 1: write no plots at all */
    const char *gnuplot;   /* program to run: a name looked up on PATH, or a
                              path; NULL means "gnuplot" */
    FILE *log;             /* warnings; NULL: stderr */
    FILE *info;            /* "wrote PATH" for each table file; NULL: nothing */
} ReportOpts;

/* Exit statuses, as the CLI's. */
enum { REPORT_OK = 0, REPORT_RUNTIME = 1, REPORT_BADINPUT = 2 };

/* Write the report.  Returns REPORT_OK, REPORT_BADINPUT (missing or corrupt
 * database, unknown sweep) or REPORT_RUNTIME (an unwritable output, a read
 * error, a gnuplot failure); the message is then in err (always
 * NUL-terminated, "" on success).  A missing gnuplot is not an error: a
 * warning goes to the log and into report.md. */
int report_run(const ReportOpts *o, char *err, size_t errcap);

/* ------------------------------------------------------------------ */
/* statistics (exported for the tests)                                 */
/* ------------------------------------------------------------------ */

/* Regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1]
 * (continued fraction, Lentz's method).  NAN outside the domain. */
double report_betainc(double a, double b, double x);
/* Student-t cumulative distribution P(T <= t) with df > 0 degrees of
 * freedom (df need not be an integer). */
double report_t_cdf(double t, double df);
/* Two-sided p-value P(|T| >= |t|). */
double report_t_p2(double t, double df);
/* Quantile: the t with P(T <= t) = p, p in (0, 1). */
double report_t_quantile(double p, double df);

/* Mean and sample standard deviation (n - 1); std is NAN for n < 2, mean
 * NAN for n < 1. */
void report_mean_std(const double *x, int n, double *mean, double *std);

/* A t-test of a difference: Welch's (two samples) or paired (one sample of
 * per-seed differences). */
typedef struct {
    double diff;       /* mean(a) - mean(b); paired: mean of a_i - b_i */
    double se;         /* standard error of diff */
    double t, df, p;   /* statistic, degrees of freedom, two-sided p */
    double lo, hi;     /* 95% confidence interval of diff */
} TTest;
typedef TTest Welch;

/* Welch's unequal-variance t-test of mean(a) - mean(b): se = sqrt(var_a /
 * na + var_b / nb), Welch–Satterthwaite df.  0 on success; -1 (w
 * untouched) when na < 2 or nb < 2.  With zero variance in both samples:
 * p = 1 if the means are equal, else 0, and the interval is [diff, diff]. */
int report_welch(const double *a, int na, const double *b, int nb, TTest *w);

/* Paired t-test of the differences d_i = a_i - b_i, i < n: diff = mean(d),
 * se = std(d) / sqrt(n), df = n - 1.  0 on success; -1 (w untouched) when
 * n < 2.  Zero variance of d: p = 1 if diff = 0, else 0; interval [diff,
 * diff]. */
int report_paired(const double *a, const double *b, int n, TTest *w);

/* Holm–Bonferroni: adj[i] for the family of the non-NAN p[i] (m of them):
 * sorted ascending, adj_(j) = max over k <= j of min(1, (m - k + 1) p_(k))
 * (ranks from 1); NAN where p[i] is NAN.  adj may be p.  0, or -1 when out
 * of memory (adj untouched). */
int report_holm(const double *p, int n, double *adj);

/* Fisher's exact test of the 2x2 table [[a, b], [c, d]] (counts >= 0),
 * two-sided: the sum of the hypergeometric probabilities (margins fixed)
 * of the tables no more likely than the observed one (relative tolerance
 * 1e-7, as R and SciPy).  NAN when a count is negative or a row is empty. */
double report_fisher_exact(long a, long b, long c, long d);

#endif
