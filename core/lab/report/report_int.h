/*
 * report_int.h — what the sections of `gated report` share (report.h says
 * what the report is; this header is internal to core/lab/report/).  Three
 * floors, each calling only the floors below it:
 *
 *   the driver    report_run.c: report_run, and the table of sections
 *                 (SECTIONS) with what walks it; called by nobody here
 *   the sections  the files below, which may call one another
 *   the toolkit   kit/ (kit/report_kit.h): the data model, errors, memory,
 *                 files, SQL, quoting, text tables, gnuplot; calls no
 *                 section and not the driver
 *
 *   report_load.c     the store into RSweep: runs, rows, their statistics
 *                     (stats.h), sink probes, `gated eval` results
 *   report_family.c   the statistics across sweeps: Holm families of sweep
 *                     groups, equivalence verdicts, minimum detectable effects
 *   report_budget.c   the effect against the training budget: series of
 *                     sweeps, their tables (md, tex, csv)
 *   report_plot.c     the list of plots; those of the main table
 *   report_plot_sections.c  the plots of the sections and budget series
 *   report_write.c    the main table in md, csv and tex, report.md's
 *                     header and legend (a sweep's sections through the
 *                     driver's R.write_sections)
 *   report_sections.c the sink and context-length sections (md, tex, csv)
 *   report_bb.c       the Bigram-Backcopy probes: loading, per-row
 *                     statistics, their section (md, tex, csv); its plots
 *                     are report_plot_sections.c's
 *   report_sparse.c   the top-k selection probes of sparse attention runs:
 *                     loading, per-row statistics, the section "Top-k
 *                     selection" (md, tex, csv) and its plots
 *   report_edge.c     the section "Learning-rate edge" of lr sweeps: per
 *                     variant and lr divergences and loss spikes, the
 *                     edges, Fisher and exact stratified p; the table
 *                     across sweeps that differ in clipping and warmup
 *   report_rank.c     the section "Ranking and all pairs": which row is best
 *                     and how sure, every pair's test in a Holm family of its
 *                     own; the small-family notes; the tok/s spread and load
 *   report_infer.c    `gated eval --quant / --drop` results (run/infer.h):
 *                     loading, per-row statistics, the sections
 *                     "Quantization" and "Gate-sparse heads" (md, tex,
 *                     csv); their plots are report_plot_sections.c's
 */
#ifndef GATED_REPORT_INT_H
#define GATED_REPORT_INT_H

#include "lab/report/kit/report_kit.h"

/* ------------------------------------------------------------------ */
/* report_load.c: loading                                              */
/* ------------------------------------------------------------------ */

/* Every sweep name in the database, sorted (heap, as stored: not escaped). */
int rep_list_sweeps(R *r, char ***names, int *n);
/* Load sweep s (raw, name and fname set, the rest zero): its runs, rows,
 * statistics, sink probes and `gated eval` results. */
int rep_load_sweep(R *r, RSweep *s);
void rep_free_sweep(RSweep *s);
/* ------------------------------------------------------------------ */
/* report_family.c                                                     */
/* ------------------------------------------------------------------ */

/* Over every loaded sweep: the sweep groups and their Holm families
 * (RVar.p_holm, RSweep.group, fam_m), each row's TOST p, each table's
 * minimum detectable effect.  -1 when out of memory. */
int rep_families(R *r);
/* The verdict of row v: "differs", "equivalent" or "inconclusive"; NULL
 * without a test. */
const char *rep_verdict(const R *r, const RVar *v);
/* The sentence under a table in md (or a TeX comment's text, md = 0): the
 * family (its size, the sweeps that share it) and the MDE. */
void rep_family_text(const R *r, FILE *f, const RSweep *s, int md);

/* ------------------------------------------------------------------ */
/* report_budget.c                                                     */
/* ------------------------------------------------------------------ */

/* Find the budget series among the loaded sweeps (R.bud) and read what
 * their tables need (the last-quarter drop of each finished run). */
int rep_budget_find(R *r);
/* Groups of the items 0..n-1 that use() accepts (NULL: all): each joins
 * the first group with all of whose items ok() agrees, else starts one.
 * The groups of two items or more into *out (heap, each idx heap, in item
 * order); -1 when out of memory. */
typedef struct {
    int *idx;
    int n, cap;
} RepGroup;
int rep_first_fit(R *r, int n, int (*use)(const R *r, int i), int (*ok)(const R *r, int a, int b), RepGroup **out,
                  int *nout);
/* Sort the n indices at idx by key, ascending (stable). */
void rep_sort_by(const R *r, int *idx, int n, double (*key)(const R *r, int i));
/* The row of sweep s labelled label; -1 if none. */
int rep_row_of(const RSweep *s, const char *label);
/* A difference of row k against the sweep's baseline row, paired by seed:
 * n pairs; n >= 2: d the mean difference with its 95% CI [lo, hi] and
 * two-sided p; n = 1: d alone (lo, hi, p NAN); n = 0: all NAN. */
typedef struct {
    int n;
    double d, lo, hi, p;
} RepDelta;
/* Field off (offsetof(RRun, ...)) of row k against the baseline; -1 when
 * out of memory. */
int rep_budget_delta(R *r, const RSweep *s, int k, size_t off, RepDelta *o);
/* A Δ as a table cell: "Δ [lo, hi] (n)", "Δ (1)" for one pair, miss for none. */
char *rep_delta_cell(R *r, const RepDelta *d, const RepStyle *y);
/* Epochs of Brown's training split that `tokens` make when every run of
 * sweep s with a config trains on Brown; NAN otherwise. */
double rep_budget_epochs(const RSweep *s, double tokens);
/* The section "Effect against training budget" of report.md. */
int rep_budget_md(R *r, FILE *f);
/* DIR/budget.tex, or DIR/budget.csv and DIR/budget-runs.csv, when a series is shown. */
int rep_budget_files(R *r);
void rep_budget_free(R *r);
/* Free n plot entries and their array. */
void rep_plots_free(PlotEntry *p, int n);

/* ------------------------------------------------------------------ */
/* report_bb.c                                                         */
/* ------------------------------------------------------------------ */

/* The metric keys of the BB head's probes, read per step by the plots. */
extern const char *const REP_BB_BOS_KEYS[2]; /* bb_bos_attn_other, bb_bos_attn_trigger */
extern const char *const REP_BB_LOSS_KEYS[2]; /* bb_loss_other, bb_loss_trigger */
extern const char *const REP_BB_GATE_KEYS[2]; /* bb_gate_other, bb_gate_trigger (histograms) */
/* A finished run's Bigram-Backcopy probes (RRun.has_bb, bb_l, bb_h, bbv). */
int rep_bb_load_run(R *r, RRun *u);
/* Row v's BB statistics (RVar.n_bb, bb_where, bb_m, bb_sd; buf: cap >=
 * nruns). */
void rep_bb_row(const RSweep *s, RVar *v, double *buf);
/* The section "Bigram-Backcopy probes" in markdown (md) or TeX. */
int rep_bb_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
/* DIR/SWEEP-bb.csv: a line per row. */
int rep_bb_csv(R *r, FILE *f, const RSweep *s);

/* ------------------------------------------------------------------ */
/* report_sparse.c                                                     */
/* ------------------------------------------------------------------ */

/* A finished run's top-k selection probes (RRun.has_sparse, spv). */
int rep_sparse_load_run(R *r, RRun *u);
/* Row v's statistics (RVar.n_sparse, sp_m, sp_sd; buf: cap >= nruns). */
void rep_sparse_row(const RSweep *s, RVar *v, double *buf);
/* The section "Top-k selection" in markdown (md) or TeX; DIR/SWEEP-sparse.csv
 * (a line per sparse row); the plots against step. */
int rep_sparse_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_sparse_csv(R *r, FILE *f, const RSweep *s);
int rep_plot_sparse(R *r, RSweep *s);

/* ------------------------------------------------------------------ */
/* report_infer.c                                                      */
/* ------------------------------------------------------------------ */

/* Run `run` (finished; its row var) of s: its infer_* metrics on split val
 * at its length (RRun.inf_len, inf_float) into RSweep.inf. */
int rep_infer_load_run(R *r, RSweep *s, int var, int run);
/* After every run is loaded: the derived ΔPPL values, the schemes, taus
 * and fractions, the correlations, has_quant / has_drop. */
int rep_infer_finish(R *r, RSweep *s);
/* Value x (INF_*) of run `run` at (kind, name, v); NAN when absent (v is
 * ignored for INF_QUANT). */
double rep_infer_value(const RSweep *s, int run, int kind, const char *name, double v, int x);
/* Value x over row k's runs that have it at (kind, name, v): its mean and
 * sample std (buf: cap >= the row's runs); returns how many. */
int rep_infer_stats(const RSweep *s, int k, int kind, const char *name, double v, int x, double *buf, double *m,
                    double *sd);
/* The sections "Quantization" and "Gate-sparse heads" in markdown (md) or TeX. */
int rep_infer_quant_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_infer_drop_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
/* DIR/SWEEP-quant.csv (a line per row and scheme) and DIR/SWEEP-drop.csv
 * (a line per row, rule and tau or F). */
int rep_infer_quant_csv(R *r, FILE *f, const RSweep *s);
int rep_infer_drop_csv(R *r, FILE *f, const RSweep *s);

/* ------------------------------------------------------------------ */
/* report_edge.c                                                       */
/* ------------------------------------------------------------------ */

/* Whether sweep s gets the section "Learning-rate edge": its runs vary
 * train.lr and two rows differ in nothing else. */
int rep_has_edge(const RSweep *s);
/* The section in markdown (md) or TeX, and DIR/SWEEP-edge.csv (a line per
 * variant and lr). */
int rep_edge_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_edge_csv(R *r, FILE *f, const RSweep *s);

/* ------------------------------------------------------------------ */
/* report_plot.c, report_plot_sections.c                               */
/* ------------------------------------------------------------------ */

/* The sweep's plots: data files and scripts, and the images when gnuplot
 * is usable; each is listed in s->plots. */
int rep_make_plots(R *r, RSweep *s);
/* The plots of the sections (report_plot_sections.c; report_sections.c's
 * table of sections says which sweep gets which), each listed in
 * s->plots: per-head F-Attn, ppl against context length, ΔPPL per
 * quantization scheme and per scheme against M-Act, PPL against heads
 * dropped, the Bigram-Backcopy plots. */
int rep_plot_heads(R *r, RSweep *s);
int rep_plot_ppl(R *r, RSweep *s);
int rep_plot_quant(R *r, RSweep *s);
int rep_plot_drop(R *r, RSweep *s);
int rep_plot_bb(R *r, RSweep *s);
/* What a plot of per-step probes against step draws (rep_plot_steps): for
 * every row two lines, keys[q] at context ctxs[q] (NULL: ''; or with head
 * set, each run's BB head), q = 0 solid and q = 1 dashed, named types[q];
 * over the row's finished runs that has() accepts. */
typedef struct {
    const char *suffix;        /* the file name: SWEEP-suffix */
    const char *const *keys;   /* [2] */
    const char *ctxs[2];
    const char *types[2];      /* "other queries", "trigger queries" */
    int head;
    int (*has)(const RRun *u);
    const char *what, *ylabel; /* the script's comment; the y axis */
    const char *yrange;        /* "[0:1]", or NULL: autoscale */
    const char *caption;       /* report.md's title, before "(mean over seeds...)" */
} StepPlot;
/* The plot: per row and line the mean over runs at each step, a band of
 * +- one std when some step has two runs or more; colour and point type by
 * row.  Nothing is listed when no run has the keys. */
int rep_plot_steps(R *r, RSweep *s, const StepPlot *p);
/* The plot of budget series b: Δ against tokens (listed in b->plots). */
int rep_plot_budget(R *r, RBudget *b);
/* Finished run u's val_loss - train_loss at each evaluation but the first
 * (the mean train_loss of the steps since the evaluation before it), as
 * (tokens seen, gap) into pts (may be NULL); sets u's q_drop, q_last, gap,
 * min_step and min_rise. */
int rep_budget_curves(R *r, RRun *u, Pts *pts);
/* report_budget_plot.c: series b's val - train gap against tokens (its
 * longest budget's runs), and size group z's Δ against training compute,
 * a plot per contrast. */
int rep_plot_budget_gap(R *r, RBudget *b);
int rep_plot_size(R *r, RSize *z);

/* ------------------------------------------------------------------ */
/* report_budget_size.c                                                */
/* ------------------------------------------------------------------ */

/* The size groups among the series (R.size); after rep_budget_find. */
int rep_size_find(R *r);
/* The size tables of the shown groups in style y (md: a subsection). */
int rep_size_tables(R *r, FILE *f, const RepStyle *y);
/* DIR/budget-size.csv: a line per group, contrast, series and budget. */
int rep_size_csv(R *r, FILE *f);
/* Whether a size group is shown. */
int rep_size_shown(const R *r);
void rep_size_free(R *r);

/* ------------------------------------------------------------------ */
/* report_write.c                                                      */
/* ------------------------------------------------------------------ */

/* DIR/report.md: every sweep. */
int rep_write_md(R *r, const char *path);
/* DIR/SWEEP.csv and DIR/SWEEP.tex: one sweep's main table (tex: and its
 * sections). */
int rep_write_csv(R *r, const RSweep *s, const char *path);
int rep_write_tex(R *r, const RSweep *s, const char *path);

/* ------------------------------------------------------------------ */
/* report_sections.c                                                   */
/* ------------------------------------------------------------------ */

/* The sections "Sink formation", the per-head F-Attn tables and
 * "Perplexity against context length" in markdown (md) or TeX, and their
 * CSV files SWEEP-sink.csv, SWEEP-fattn-heads.csv and SWEEP-ppl.csv (the
 * driver's SECTIONS says which sweep gets which). */
int rep_sink_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_heads_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_ppl_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_sink_csv(R *r, FILE *f, const RSweep *s);
int rep_heads_csv(R *r, FILE *f, const RSweep *s);
int rep_ppl_csv(R *r, FILE *f, const RSweep *s);

/* ------------------------------------------------------------------ */
/* report_rank.c                                                       */
/* ------------------------------------------------------------------ */

/* Sweep s's ranking, its pairs and their Holm family, and each row's tok/s
 * spread and load (after rep_families).  -1 when out of memory. */
int rep_rank_sweep(R *r, RSweep *s);
/* Whether s gets the section "Ranking and all pairs": 3 or more ranked rows. */
int rep_has_rank(const RSweep *s);
/* The section in markdown (md) or TeX, and DIR/SWEEP-pairs.csv. */
int rep_rank_section(R *r, FILE *f, const RSweep *s, const RepStyle *y);
int rep_rank_csv(R *r, FILE *f, const RSweep *s);
/* The verdict of a test: "differs" (p Holm < 0.05), "equivalent" (p TOST
 * < 0.05) or "inconclusive". */
const char *rep_verdict_p(double p_holm, double p_tost);
/* "; 1 contrast in this family; the committed matrix adjusts over 23" when
 * a family of m contrasts is smaller than R.mx_m, else "" (into buf). */
void rep_small_family(const R *r, int m, char *buf, size_t cap);
/* The tok/s cell: "mean (min–max)", and a dagger when a run ran beside
 * other jobs (dash: the format's range dash). */
void rep_tps_cell(char *buf, size_t cap, const RVar *v, const char *dash, const char *dagger, const char *miss);
/* The sentence under the cost table of s: what tok/s is, and the runs
 * beside other jobs (md: markdown, else a TeX comment's text). */
void rep_tps_note(FILE *f, const RSweep *s, int md);

/* What the per-head sink numbers of sweep s measure (probes.h: the sink
 * test reads F-Attn, or for Bigram-Backcopy the attention on BOS from
 * other queries). */
static inline const char *rep_head_measure(const RSweep *s) {
    if (!s->sink_bb) return "F-Attn";
    return s->sink_fattn ? "F-Attn (Bigram-Backcopy runs: attention on BOS from other queries)"
                         : "Attention on BOS from other queries";
}

#endif
