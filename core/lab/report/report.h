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
 *   - raw p and the Holm–Bonferroni adjusted p over the family of the
 *     sweep's group: the sweeps whose baseline rows are the same set of
 *     runs (run ids) share one family, every distinct contrast (a row's
 *     runs against its reference row's runs) with a p counted once however
 *     many of the group's tables show it; `*` when the adjusted p < 0.05.
 *     Every sweep is loaded for this, --sweep or not, so a p (Holm) does
 *     not depend on which tables are written;
 *   - p (TOST): the two one-sided tests of |Δ| < margin (ReportOpts.margin,
 *     default 0.02 nats) on the same t statistics, and a verdict: "differs"
 *     (p Holm < 0.05), "equivalent" within ±margin (TOST p < 0.05, not
 *     adjusted) or "inconclusive";
 *   - under the table the family (size, the sweeps sharing it) and the
 *     minimum detectable effect of the table: (t(0.975, n-1) + t(0.8,
 *     n-1)) sd_d / sqrt(n) for the paired test, sd_d the std of the
 *     per-seed differences pooled over the paired rows (weights pairs - 1),
 *     n the pair count most of them have; and the same at the Holm worst
 *     case alpha / m (m the family size).
 * Then the last-step probes F-Attn, M-Act and gate mean (metrics f_attn,
 * m_act, gate_mean at context '') as mean ± std over seeds, loss spikes,
 * added parameters, tokens/s, and the paper's figures for the same label
 * (paper.h).  In a sweep whose rows differ in train.lr also diverged/total
 * (total: finished + diverged) and Fisher's exact two-sided p of the
 * divergence count against the reference row.  Means are over the row's
 * finished runs.  The statistics are stats.h's.
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
 *     the most common place), F-Attn/unif, sink heads, Sink1(0.3)
 *     (sink_eps_share, %) and mass on nothing (attn_mass_none), both
 *     context '' and `–` for runs without them, the paper's F-Attn;
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
 * A sweep with 3 or more rows with finished runs also gets "Ranking and
 * all pairs" (report_rank.c): the rows by mean val loss, every pair (up to
 * 8 rows; above, each against the best) tested as above in a Holm family
 * of its own, and the best row's Δ to the runner-up and how sure.  A
 * `differs` from a Holm family smaller than the largest family of
 * ReportOpts.matrix_db (else of this database) says so beside it.  The
 * tok/s cell is mean (min–max), marked when a run ran beside other jobs
 * (summary load_end).
 *
 * Sweeps that form a budget series (report_budget.c: the same rows, whose
 * configs differ only in train.steps, train.eval_every and
 * train.checkpoint_every, at different tokens per run) get the section
 * "Effect against training budget": per contrast (row against the baseline
 * row) the paired Δ of final val and test loss with its 95% CI and pairs
 * at each budget, each row's final val loss and its drop over the last
 * quarter of the run, and the plot budget-SWEEP (Δ against tokens).
 *
 * Formats: md (DIR/report.md: header, legend, every sweep, plot links),
 * csv (DIR/SWEEP.csv, one per sweep, plain numbers; with sink probes also
 * SWEEP-sink.csv, a line per run, and SWEEP-fattn-heads.csv; with eval
 * results SWEEP-ppl.csv; with a budget series budget.csv and
 * budget-runs.csv) and tex (DIR/SWEEP.tex, booktabs tabulars: the main
 * table, then the sections above; with a budget series DIR/budget.tex).
 * Plots (every format) go to DIR/plots/ as gnuplot data files, scripts,
 * SVG and PNG: validation loss against step, F-Attn and M-Act per layer,
 * gate-score histograms per gated variant, final val loss against learning
 * rate for a sweep whose runs vary train.lr, and the three plots above.
 * Without gnuplot the tables are still written.
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
    const char *out_dir;   /* created (with parents) if missing; not "" */
    int no_plots;          /* 1: write no plots at all */
    const char *gnuplot;   /* program to run: a name looked up on PATH, or a
                              path; NULL means "gnuplot" */
    FILE *log;             /* warnings; NULL: stderr */
    FILE *info;            /* "wrote PATH" for each table file; NULL: nothing */
    double margin;         /* the equivalence (TOST) margin in nats, > 0; 0: REPORT_MARGIN */
    const char *ref;       /* a row label: in every sweep that has a row so labelled, Δ, the tests and
                              the budget series are against it instead of the sweep's baseline row
                              (sweeps without one keep theirs); NULL: the baselines */
    const char *matrix_db; /* the committed matrix's database (results/gated.db), read only for the size of
                              its largest Holm family, which the notes on small families compare with;
                              NULL: this database's largest family */
} ReportOpts;

/* The default equivalence margin: 0.02 nats of final val loss. */
#define REPORT_MARGIN 0.02

/* Exit statuses, as the CLI's. */
enum { REPORT_OK = 0, REPORT_RUNTIME = 1, REPORT_BADINPUT = 2 };

/* Write the report.  Returns REPORT_OK, REPORT_BADINPUT (no database or
 * output directory given, a missing or corrupt database, an unknown sweep,
 * a ref label no (selected) sweep has)
 * or REPORT_RUNTIME (an unwritable output, a read error, a gnuplot
 * failure); the message is then in err (always NUL-terminated, "" on
 * success).  A missing gnuplot is not an error: a
 * warning goes to the log and into report.md. */
int report_run(const ReportOpts *o, char *err, size_t errcap);

#endif
