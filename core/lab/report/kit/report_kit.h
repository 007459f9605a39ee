/*
 * report_kit.h — the toolkit of `gated report` (core/lab/report/kit/): the
 * data model every part shares (RSweep, RVar, RRun, R ...) and the helpers
 * below the sections: errors, memory, strings and files (report_kit.c),
 * SQL with bound parameters and the values of a row's runs
 * (report_sql.c), quoting, cells and text tables (report_text.c), gnuplot
 * (report_gp.c), every file written and gnuplot's runs in a private
 * folder (report_files.c, through util/outfile.h).  Nothing here calls a section or the driver
 * (core/lab/report/report_int.h says which file does what above it).
 *
 * Errors: a function that fails sets the message once (rep_fail: the first
 * message wins, R.failed is set) and returns -1 (or NULL); callers only
 * pass the failure up.  Names with external linkage start with rep_ (or
 * Rep), since these files share the library with the rest of the core.
 */
#ifndef GATED_REPORT_KIT_H
#define GATED_REPORT_KIT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lab/report/report.h"
#include "lab/stats.h"
#include "run/store.h"
#include "util/csv.h"
#include "util/outfile.h"

/* ------------------------------------------------------------------ */
/* data model                                                          */
/* ------------------------------------------------------------------ */

/* Per-head values of a run or a row: v[l * nh + h], NAN where absent. */
typedef struct {
    int nl, nh;
    double *v;
} HeadMap;

/* Layer and head indices at or above this are ignored (a bound on memory). */
enum { HEADMAP_MAX = 4096 };

/* The Bigram-Backcopy probe values of a run (report_bb.c), at its last
 * step: RRun.bbv[], and their means / stds over a row's runs. */
enum {
    BB_LOSS_T,    /* bb_loss_trigger '' */
    BB_LOSS_O,    /* bb_loss_other '' */
    BB_BOS_O_MAX, /* bb_bos_attn_other of the BB head: the largest over query heads */
    BB_BOS_O,     /* bb_bos_attn_other '' (mean over layers and heads) */
    BB_BOS_T,     /* bb_bos_attn_trigger of the BB head */
    BB_PREV_T,    /* bb_prev_attn_trigger of the BB head */
    BB_DRAIN,     /* bb_value_drain of the BB head */
    BB_PEAK,      /* bb_residual_peak '' (the largest over layers) */
    BB_GATE_T,    /* bb_gate_trigger '' (gated runs) */
    BB_GATE_O,    /* bb_gate_other '' (gated runs) */
    BB_NONE_O_H,  /* bb_none_attn_other of the BB head (runs with the attention-row probes) */
    BB_NONE_O,    /* bb_none_attn_other '' (mean over layers and heads) */
    BB_NV
};

/* The top-k selection probes of a run (report_sparse.c), at its last step:
 * RRun.spv[], and their means / stds over a row's runs. */
enum {
    SP_VAL,    /* RRun.val_loss (so that the row's loss is over the same runs as its probes) */
    SP_RECALL, /* sparse_recall '' (mean over layers) */
    SP_P0,     /* sparse_p0 '' */
    SP_GAP,    /* sparse_dense_gap '' */
    SP_KL,     /* indexer_kl 'selected' (the indexer's loss over S_t at the last step; indexer rows) */
    SP_NV
};

/* One `gated eval --quant / --drop` result of a finished run (report_infer.c):
 * the infer_* metrics of one context on split val, at the run's length. */
enum { INF_QUANT, INF_TAU, INF_FRAC }; /* quant=SCHEME; drop=RULE,tau=T; drop=RULE,frac=F */
enum {
    INF_LOSS,       /* infer_loss */
    INF_PPL,        /* infer_ppl */
    INF_WINDOWS,    /* infer_windows */
    INF_DROP,       /* infer_drop: the fraction of (token, head) pairs dropped */
    INF_FLOPS_WO,   /* infer_flops_wo: FLOPs saved in wo, a fraction of the forward's */
    INF_FLOPS_ATTN, /* infer_flops_attn: FLOPs saved in wo, q.k and p.v */
    INF_DPPL,       /* derived: infer_ppl minus the run's quant=float infer_ppl */
    INF_DPCT,       /* derived: the same in % of the float PPL */
    INF_NX
};
enum { INF_NAME = 24 };
typedef struct {
    int run, var;          /* indices into RSweep.runs and RSweep.vars */
    int kind;              /* INF_QUANT, INF_TAU, INF_FRAC */
    char name[INF_NAME];   /* the scheme (INF_QUANT: [A-Za-z0-9._-] only) or the rule: gate, random, entropy */
    double v;              /* tau or F (INF_TAU, INF_FRAC); NAN for INF_QUANT */
    long long len;         /* context length */
    double x[INF_NX];      /* INF_*; NAN where absent */
} InferPt;

/* A correlation over a sweep's runs (report_infer.c): Pearson's r with its
 * two-sided p (t-test, n - 2 degrees of freedom) and Spearman's rho; NAN
 * where undefined (n < 3 for r and p, a constant sample). */
typedef struct {
    int n;
    double r, p, rho;
} RepCorr;

/* A quantization scheme of a sweep (not float), and the correlation over
 * the sweep's runs of a run's ΔPPL% under it with its M-Act. */
enum { INF_NSITES = 4 }; /* the linear inputs of infer_in_outlier: qkv, wo, ffn_in, ffn_down */
typedef struct {
    char name[INF_NAME];
    RepCorr corr;
    RepCorr corr_site[INF_NSITES]; /* ... and with the run's outlier factor at each linear input */
} InferScheme;

/* One run of a sweep (a sweep_runs line, LEFT JOINed to runs). */
typedef struct {
    char *run_id, *label, *status;
    char *cfg_key; /* the config without train.lr, train.min_lr, train.seed (json_remove;
                      the whole text when it is not JSON); NULL: no config (pending) */
    long long seed;
    int idx, is_baseline;
    double lr; /* train.lr of the config, a JSON number; NAN if absent */
    char *bkey; /* the config without train.seed, train.steps, train.eval_every, train.checkpoint_every:
                   equal for the runs of one row at two budgets (report_budget.c); NULL as cfg_key */
    double val_loss, val_ppl, test_loss, f_attn, m_act, gate_mean, spikes, gate_params, tokens_per_s;
    double tokens, seq_len; /* train.steps x train.batch x model.seq_len, and model.seq_len; NAN if absent */
    double steps;           /* train.steps; NAN if absent */
    double q_drop;          /* val loss drop over the last quarter (report_budget.c); NAN if not computed */
    long long q_last;       /* the last evaluation step that drop ends at; -1 if not computed */
    /* budget series (report_budget.c), finished runs of a series only */
    double gap;             /* val_loss at the last evaluation minus the mean train_loss of the steps since
                               the evaluation before it; NAN if not computed */
    long long min_step;     /* the evaluation with the lowest val_loss when it is lower than the last one; -1 */
    double min_rise;        /* the last evaluation's val_loss minus that minimum; NAN when min_step < 0 */
    double params;          /* summary params; NAN if absent */
    int brown;              /* the config says data.corpus brown */
    char *skey;             /* the config without bkey's keys and model.d_model, n_head, n_kv_head, d_ff:
                               equal for one row at two model sizes; NULL: no config or not in a series */
    /* sink probes, read for finished runs only */
    int has_sink;           /* the run has sink_formed metrics */
    long long sink_step;    /* first evaluation step with sink_formed = 1; -1: none */
    double sink_share, f_attn_rel; /* last step, context '': sink_head_share, f_attn_rel */
    double sink_eps, mass_none;    /* last step, context '': sink_eps_share, attn_mass_none; NAN if absent */
    HeadMap heads;          /* f_attn per (layer, head), last step; bb_bos_attn_other for a bb run */
    double head_max;        /* the largest of heads, at layer max_l, head max_h */
    int max_l, max_h;
    /* Bigram-Backcopy probes (report_bb.c), read for finished runs only */
    int has_bb;             /* the run has bb_* probes */
    int bb_l, bb_h;         /* the BB head: the query head with the largest bb_bos_attn_other; -1: none */
    double bbv[BB_NV];      /* BB_* values at the last step; NAN where absent */
    /* top-k selection probes (report_sparse.c), read for finished runs only */
    int has_sparse;         /* the run has sparse_recall metrics */
    double spv[SP_NV];      /* SP_* values at the last step; NAN where absent */
    /* `gated eval --quant / --drop` results (report_infer.c), finished runs only */
    long long inf_len;      /* the length its results are taken at (model.seq_len if evaluated there,
                               else the smallest); -1: none */
    double inf_float;       /* infer_ppl at quant=float at that length; NAN if absent */
    double inf_outlier[INF_NSITES]; /* infer_in_outlier per site at that length; NAN if absent */
    char kernel[32];        /* the OpenBLAS core it ran on (rep_kernel_of), "" when not recorded */
    double load_start, load_end; /* summary load_start / load_end: the 1-minute load average when its
                                    training loop started and ended; NAN when not recorded */
    int threads;            /* runs.threads (0 when unknown) */
} RRun;

/* One `gated eval` result: eval_ppl of a finished run at one context. */
typedef struct {
    int var, split;         /* the run's row; split 0 val, 1 test */
    long long len;          /* context length */
    char scaling[16];       /* none, linear, ntk, yarn */
    double factor, train_len, ppl; /* train_len: the run's model.seq_len (NAN if unknown) */
    int automatic;          /* the factor is the automatic one (report_load.c) */
    int series;             /* index into RSweep.eser */
} EvalPt;

/* A curve of the context-length tables: a scaling and its factor rule. */
typedef struct {
    char scaling[16];
    double factor;          /* NAN: the automatic factor */
    char name[48];          /* "yarn", "yarn F=4" */
} EvalSeries;

/* A plot of a sweep, as report.md lists it. */
typedef struct {
    char *title; /* what the plot shows */
    char *base;  /* file name without extension, in plots/ */
    int made;    /* images written */
} PlotEntry;

/* How a row's reference row was chosen. */
enum { RULE_NONE, RULE_BASE, RULE_LR, RULE_FALLBACK };

/* One row of a sweep's table: the runs of one label. */
typedef struct {
    char *label;
    int is_baseline;
    int *runs; /* indices into RSweep.runs */
    int nruns, cap;
    int n_fin, n_div;
    double loss_mean, loss_std, ppl_mean, ppl_std;
    double lr; /* train.lr of every run of the row that has a config; NAN if none or they differ */
    char *key; /* the runs' cfg_key; NULL if none has a config or they differ */
    char *bkey; /* the runs' bkey; NULL if none has a config or they differ */
    int bkey_mixed; /* the runs' bkeys differ */
    int ref;   /* the row Δ is against; -1: none (a reference row, or no baseline) */
    int is_ref; /* a reference: the baseline row or (lr rule) its line's row at this lr */
    int rule;  /* RULE_*: how ref was chosen */
    int have_delta, have_test, paired, n_pairs;
    double delta; /* paired: mean per-seed difference; else difference of the means */
    TTest t;
    double p_holm; /* Holm-adjusted t.p over the sweep group's family (report_family.c); NAN without a test */
    double p_tost; /* TOST p of t within +-R.margin; NAN without a test */
    double sd_d;   /* paired: the sample std of the per-seed differences; else NAN */
    double div_p;  /* Fisher p of the divergence count against ref (lr rule); NAN if none */
    double f_attn, f_attn_std, m_act, m_act_std, gate_mean, gate_std, spikes, gate_params, tokens_per_s;
    double tokens, seq_len; /* of the row's first run that has them */
    /* sink probes: over the row's finished runs that have them */
    int n_sink, n_formed; /* such runs; those of them in which a sink formed */
    int where;            /* the run (index into RSweep.runs) whose head_max place is the most common; -1 */
    double sink_share, sink_share_std, f_attn_rel, f_attn_rel_std, head_max, head_max_std;
    double sink_eps, sink_eps_std, mass_none, mass_none_std; /* over the runs that have them */
    HeadMap heads;        /* mean per-head F-Attn */
    /* Bigram-Backcopy probes: over the row's finished runs that have them */
    int n_bb;             /* such runs */
    int bb_where;         /* the run (index into RSweep.runs) whose BB head place is the most common; -1 */
    double bb_m[BB_NV], bb_sd[BB_NV]; /* mean and sample std of RRun.bbv over them */
    /* top-k selection probes: over the row's finished runs that have them */
    int n_sparse;
    double sp_m[SP_NV], sp_sd[SP_NV]; /* mean and sample std of RRun.spv over them */
    char kernels[128];    /* the kernels of its finished and diverged runs: "Haswell", or
                             "Haswell 2, SkylakeX 1" when they differ (rep_row_kernels) */
    /* report_rank.c */
    double tps_min, tps_max; /* tokens_per_s over the finished runs; NAN when none has it */
    int n_load, n_busy;   /* finished runs with a load recorded; of them, those beside other jobs */
    int rank;             /* 0: the lowest mean val loss; -1: not ranked (no finished run) */
} RVar;

/* One sweep: its runs, rows and plots. */
typedef struct {
    char *raw;          /* the name as stored, for queries */
    char *name, *fname; /* name escaped for output (rep_esc); fname: safe for a file name */
    RRun *runs;
    int nruns, runs_cap;
    RVar *vars;
    int nvars, vars_cap;
    int base; /* the reference row: the baseline row, or --ref's (ReportOpts.ref); -1 if none */
    int own_base; /* the sweep's baseline row (sweep_runs.is_baseline), -1 if none: base unless --ref */
    PlotEntry *plots;
    int nplots, plots_cap;
    int lr_plot; /* runs vary train.lr */
    int lr_rule; /* rows differ in train.lr and the baseline has an lr and a config: Δ is lr-matched */
    int n_fallback; /* lr rule: rows with no baseline-line row at their lr, compared with the baseline */
    int n_tests;    /* rows with a p-value */
    int context;    /* not selected (--sweep): loaded only for the Holm families and budget series */
    int group;      /* the sweep group (report_family.c): index in R.sw of its first sweep; -1: no baseline */
    int fam_m;      /* the group's Holm family: distinct contrasts with a p */
    int mde_n, mde_rows; /* MDE: the seed pairs most paired rows have; the paired rows pooled */
    double mde_sd, mde, mde_holm; /* pooled std of per-seed differences; MDE at alpha and at alpha / fam_m */
    double tokens;  /* tokens per run when every run with a config has the same (report_budget.c); else NAN */
    int has_sink;   /* finished runs have sink probes: the sink columns and sections */
    int sink_fattn, sink_bb; /* some of those runs are text runs (heads: F-Attn), Bigram-Backcopy runs */
    int has_bb;     /* finished runs have Bigram-Backcopy probes: its section and plots */
    int has_sparse; /* finished runs have top-k selection probes: the section "Top-k selection" */
    long long *seeds; /* the seeds of those runs, ascending */
    int nseeds;
    EvalPt *ev;     /* `gated eval` results of finished runs */
    int nev, ev_cap;
    EvalSeries *eser; /* in table order */
    int neser, eser_cap;
    double train_len; /* model.seq_len shared by the runs in ev; NAN if they differ */
    /* `gated eval --quant / --drop` results of finished runs (report_infer.c) */
    InferPt *inf;
    int ninf, inf_cap;
    InferScheme *qs;  /* the schemes but float, by name */
    int nqs;
    double *taus, *fracs; /* the distinct tau of drop=gate and F of drop=...,frac=, ascending */
    int ntau, nfrac;
    long long inf_len; /* the length of every run's results; -1 when they differ or there are none */
    int has_quant;    /* a scheme other than float: the section "Quantization" */
    int has_drop;     /* drop results: the section "Gate-sparse heads" */
    /* the ranking and its contrasts (report_rank.c) */
    int *order;       /* the ranked rows, by ascending mean val loss */
    int nrank;
    struct RPair *pairs; /* all pairs of ranked rows, or (more than REP_PAIRS_MAX rows) the best against each */
    int npairs, pair_m;  /* pair_m: the pairs with a p, the Holm family of the ranking */
} RSweep;

/* Ranked rows up to which every pair is tested; above, the best row
 * against each other row. */
enum { REP_PAIRS_MAX = 8 };
#define REP_PAIRS_MAX_TEXT "8"

/* Two ranked rows of a sweep (report_rank.c): a ranked above b, Δ = b − a
 * in val loss (positive: a is lower), paired by seed when they share 2 or
 * more seeds, else Welch, as the main table's test. */
typedef struct RPair {
    int a, b;         /* indices into RSweep.vars */
    int have_test, paired, n_pairs;
    double delta;
    TTest t;
    double p_holm, p_tost; /* Holm over the sweep's pairs (pair_m); TOST within ±R.margin */
} RPair;

/* A budget series (report_budget.c): sweeps with the same rows at
 * different training budgets. */
typedef struct {
    int *sw;     /* indices into R.sw, by ascending tokens */
    int n, cap;
    int shown;   /* holds a selected sweep */
    char *fname; /* "budget-" + the first sweep's fname: the series' files */
    PlotEntry *plots;
    int nplots, plots_cap;
    const char **labels; /* the row labels of its sweeps, in order of first appearance by tokens (not owned) */
    int nlab, lab_cap;
    const char *base;    /* the baseline row's label (not owned) */
    double params;       /* summary params of its baseline runs; NAN if none has it */
    const char *skey;    /* the baseline runs' skey (not owned); NULL if none */
} RBudget;

/* Series of one config at several model sizes (report_budget_size.c). */
typedef struct {
    int *bud;    /* indices into R.bud, by ascending params */
    int n, cap;
    int shown;   /* holds a shown series */
    char *fname; /* "budget-size-" + its first series' first sweep's fname */
    const char **labels; /* the contrasts: labels every series has, baseline excluded (not owned) */
    int nlab, lab_cap;
    PlotEntry *plots;
    int nplots, plots_cap;
} RSize;

/* The report being written: options, database, sweeps, gnuplot. */
typedef struct R {
    const ReportOpts *o;
    FILE *log, *info;
    Store *st;
    sqlite3 *db;
    char *err;
    size_t errcap;
    int failed; /* an error message is set */
    RSweep *sw;
    int nsw, sw_cap;
    double margin;  /* the TOST margin in nats (ReportOpts.margin, or REPORT_MARGIN) */
    char *ref;      /* ReportOpts.ref escaped as labels are (rep_esc), to compare; NULL: none */
    int mx_m;       /* the largest Holm family of the matrix database (ReportOpts.matrix_db), else of this
                       one: the small-family notes compare with it; 0: none */
    int mx_other;   /* mx_m is the matrix database's (ReportOpts.matrix_db) */
    RBudget *bud;
    int nbud, bud_cap;
    RSize *size;
    int nsize, size_cap;
    char *plots_dir;
    /* gnuplot */
    int gp_checked, gp_ok, gp_fail;
    char *gp_prog;
    const char *term_png; /* "pngcairo", "png" or NULL */
    int term_svg;
    char gp_note[256]; /* why plots are missing, for report.md */
    /* the driver's (report_run.c): the sections of sweep s after its main table, in md or TeX */
    int (*write_sections)(struct R *r, FILE *f, const RSweep *s, int md);
    int sweeps_failed; /* sweeps whose files failed; the others' were written */
    int bad_db;        /* a read failed for the file's sake (damaged): REPORT_BADINPUT */
    /* report_files.c */
    OutFile *outs; /* the files being written (rep_open) */
    int nouts, outs_cap;
    char *gp_dir;  /* the private folder gnuplot runs in */
    FILE *gp_logf; /* gnuplot's messages, collected (open_memstream into gp_log) */
    char *gp_log;
    size_t gp_log_len;
} R;

/* How a text table is written: markdown (md) or TeX. */
typedef struct {
    int md;
    const char *pm, *miss;
} RepStyle;
extern const RepStyle REP_MD_STYLE, REP_TEX_STYLE;

static inline int rep_is_finished(const RRun *u) { return strcmp(u->status, "finished") == 0; }

/* ------------------------------------------------------------------ */
/* report_kit.c: errors, memory, strings, files                        */
/* ------------------------------------------------------------------ */

/* Set the error message (the first one wins) and R.failed; returns -1. */
__attribute__((format(printf, 2, 3))) int rep_fail(R *r, const char *fmt, ...);
/* rep_fail(r, "out of memory"). */
int rep_oom(R *r);
/* Grow *p (elements of size elem) so that it holds at least need. */
int rep_grow(R *r, void **p, int *cap, int need, size_t elem);
/* Heap copy of s ("" for NULL); NULL and the error set on failure. */
char *rep_dup(R *r, const char *s);
/* Text read from the database, for output: escaped (store_escape), so it
 * holds no control character.  Heap; NULL and the error set on failure. */
char *rep_esc(R *r, const char *s);
/* Formatted string on the heap (NULL and the error set on failure). */
__attribute__((format(printf, 2, 3))) char *rep_fmt(R *r, const char *fmt, ...);
/* A name usable as a file name: [A-Za-z0-9._-], others '_'; '_' in front
 * of an empty name or one that starts with '.'; one longer than
 * REP_NAME_MAX bytes cut, with 8 hex digits of its hash.  Heap. */
#define REP_NAME_MAX 64
char *rep_safe_name(R *r, const char *s);
/* ------------------------------------------------------------------ */
/* report_files.c: every file the report writes; gnuplot's runs        */
/* ------------------------------------------------------------------ */

/* An output directory (mkdir -p; a symbolic link there refused), the
 * error set on failure. */
int rep_mkdir(R *r, const char *dir);
/* Start writing path (util/outfile.h: a temporary file beside it), the
 * error set on failure. */
FILE *rep_open(R *r, const char *path);
/* Commit f as path: 0, or -1 with the error set (the old file kept). */
int rep_close(R *r, FILE *f, const char *path);
/* Drop f (a rep_open file; NULL is fine): the old file stays. */
void rep_abort(R *r, FILE *f);
/* The end of writing one file: f (rep_open's, NULL when it failed) is
 * committed when rc is 0, else dropped; "wrote PATH" on --info; path is
 * freed.  rc, or -1 when the commit failed. */
int rep_finish(R *r, FILE *f, int rc, char *path);
/* Drop every file still open; remove the gnuplot folder. */
void rep_files_end(R *r);
/* Make the private gnuplot folder under plots_dir. */
int rep_gp_begin(R *r);
/* Write plots/gnuplot.log from the collected messages. */
int rep_gp_write_log(R *r);
/* Run gnuplot with args in the private folder (log: its output into the
 * collected messages); the exit status, -1 if it could not run. */
int rep_run_gnuplot(R *r, const char *a1, const char *a2, int log);
/* Draw plots/BASE.gp: 1 made (the images complete, renamed into plots/),
 * 0 failed (why says how; the previous images stay), -1 error set. */
int rep_gp_draw(R *r, const char *base, char *why, size_t cap);

/* ------------------------------------------------------------------ */
/* report_sql.c: SQL helpers, per-head maps, the values of a row       */
/* ------------------------------------------------------------------ */

/* qsort order of long longs, ascending. */
int rep_ll_cmp(const void *a, const void *b);
/* Prepare sql and bind parameters 1.. from types: 't' const char *,
 * 'i' long long. */
int rep_q_prep(R *r, sqlite3_stmt **st, const char *sql, const char *types, ...);
/* Finish a statement after stepping: rc is the last sqlite3_step result. */
int rep_q_done(R *r, sqlite3_stmt *st, int rc, const char *what);
/* Column i as a double, NAN for NULL. */
double rep_col_real(sqlite3_stmt *st, int i);
/* Column i as text, "" for NULL. */
const char *rep_col_text(sqlite3_stmt *st, int i);
/* Called on each result row of a statement; non-zero stops the walk (an
 * error, which the callback has set). */
typedef int (*RepRowFn)(R *r, void *arg, sqlite3_stmt *st);
/* Step st to its end, calling fn on every row; finalizes st. */
int rep_q_rows(R *r, sqlite3_stmt *st, RepRowFn fn, void *arg);
/* Rows (context, value): for every context of the run's metric `key`, its
 * value at that context's last step, in context order. */
int rep_q_each_context_last(R *r, const char *run_id, const char *key, RepRowFn fn, void *arg);
/* "layer=N" exactly -> N, else -1. */
long rep_parse_layer(const char *ctx);
/* "layer=N" -> N with *head = -1; "layer=N,head=M" -> N with *head = M;
 * else -1. */
long rep_parse_layer_head(const char *ctx, long *head);
/* m[l][h] = x, growing m (new cells NAN); -1 when out of memory. */
int rep_headmap_set(R *r, HeadMap *m, int l, int h, double x);
/* The largest value of m and its place (*l, *h, left alone when m holds none); NAN when none. */
double rep_headmap_argmax(const HeadMap *m, int *l, int *h);

/* The finished runs of v and w with a value of field off (offsetof(RRun,
 * ...)) and the same seed, as pairs a[i] (v), b[i] (w) in v's order (a, b:
 * cap >= v->nruns); seeds[i] the seed (may be NULL).  0 when a seed occurs
 * twice among either row's finished runs: pairing is then ambiguous. */
int rep_paired_values(const RSweep *s, const RVar *v, const RVar *w, size_t off, double *a, double *b,
                      long long *seeds);
/* Values of field off of the finished runs of v into buf (cap >= nruns). */
int rep_finished_values(const RSweep *s, const RVar *v, size_t off, double *buf);
/* For c < nv: the mean m[c] and sample std sd[c], over the runs of v that
 * use() accepts, of element c of the double array at field off
 * (offsetof(RRun, bbv), ...), NAN values skipped (buf: cap >= nruns). */
void rep_row_stats(const RSweep *s, const RVar *v, int (*use)(const RRun *u), size_t off, int nv, double *m,
                   double *sd, double *buf);
/* The distinct lengths of series j on split sp, ascending, into lens
 * (cap >= nev); returns how many. */
int rep_eval_lens(const RSweep *s, int j, int sp, long long *lens);
/* eval_ppl of row k in series j, split sp, at length len: mean and std
 * over the row's finished runs (buf: cap >= nev); returns how many. */
int rep_eval_stats(const RSweep *s, int k, int j, int sp, long long len, double *buf, double *m, double *sd);

/* ------------------------------------------------------------------ */
/* report_gp.c: gnuplot, scripts, plot data                            */
/* ------------------------------------------------------------------ */

/* (x, y) samples, aggregated by x. */
typedef struct {
    double x, y;
} Pt;
typedef struct {
    Pt *p;
    int n, cap;
} Pts;

/* One layer's gate-score histogram, summed over runs. */
typedef struct {
    long layer;
    double lo, hi;
    long long *counts;
    int nbins, nruns;
} HistAcc;

/* A row's histograms of one key: one per layer, in the order first seen. */
typedef struct {
    const char *key; /* the histograms' key ('gate', 'bb_gate_other', ...) */
    HistAcc *a;
    int n, cap;
    int runs_with; /* runs that added one */
} Hists;

/* Look for gnuplot and its terminals once (r->plots_dir exists); a warning
 * if it is unusable. */
void rep_gp_check(R *r);
/* Add (x, y) to v (nothing when y is NAN). */
int rep_pts_add(R *r, Pts *v, double x, double y);
/* Sort by x and write "x mean std n" per distinct x (std 0 for n = 1);
 * returns the number of lines written.  The range of mean +- std (of the
 * mean where mean - std <= 0, for log axes) widens [*lo, *hi], and *multi
 * is set when some x has n > 1 (both may be NULL). */
int rep_pts_write(Pts *v, FILE *f, double *lo, double *hi, int *multi);
/* s as a single-quoted gnuplot string. */
void rep_gp_str(FILE *f, const char *s);
/* A script's first lines: a comment (what), the first terminal, the grid
 * and the key. */
void rep_gp_head(R *r, FILE *f, const char *base, const char *what);
/* After the plot command: the PNG as well (replot), then close. */
void rep_gp_tail(R *r, FILE *f, const char *base);
/* The end of a plot command of `blocks` series, then rep_gp_tail. */
void rep_gp_end(R *r, FILE *gp, const char *base, int blocks);
/* Line colours, in the order series take them. */
enum { REP_GP_NCOLOURS = 8 };
extern const char *const REP_GP_COLOURS[REP_GP_NCOLOURS];
/* " lc ... dt ... pt ..." for colour c, dash d and point type p (p < 0: none). */
void rep_gp_look(FILE *f, int c, int d, int p);
/* The look of series k of a plot. */
void rep_gp_series_look(FILE *f, int k);
/* Labelled ticks for a log axis ("x" or "y") whose data span [lo, hi]. */
void rep_gp_log_tics(FILE *f, const char *axis, double lo, double hi);
/* Open plots/BASE.dat and plots/BASE.gp. */
int rep_plot_open(R *r, const char *base, FILE **dat, FILE **gp, char **datp, char **gpp);
/* Close a plot's files and, when nothing failed and it has data (any),
 * register and draw it under the title fmt: in sweep s's plots, or (s
 * NULL) in budget series b's.  Returns the new rc. */
__attribute__((format(printf, 11, 12))) int rep_plot_done(R *r, RSweep *s, RBudget *b, int rc, int any, FILE *dat,
                                                          FILE *gp, char *datp, char *gpp, const char *base,
                                                          const char *fmt, ...);
/* (step, value) of the run's metric `key` at context ctx into pts. */
int rep_q_steps_ctx(R *r, const char *run_id, const char *key, const char *ctx, Pts *pts);
/* The histograms h->key of finished run u at their last step, per layer,
 * added to h. */
int rep_hist_load_run(R *r, Hists *h, const RRun *u);
/* h's layers in order. */
void rep_hists_sort(Hists *h);
/* The x range of the bins that hold counts in the nh Hists at h (their
 * edges), so the plot spans the scores there are: a tanh gate's [-1, 1]
 * rather than the probe's bins over [-2, 2]; the first histogram's range
 * when every bin is empty. */
void rep_hists_range(const Hists *h, int nh, double *lo, double *hi);
/* One layer's histogram as a data block: "bin centre, share of the
 * layer's scores, count" per bin, then the blank lines that end a block. */
void rep_hist_write(FILE *dat, const HistAcc *a);
/* Std bands are drawn for up to this many series: more overlap into one
 * blur (the std is in the data file and the tables). */
enum { REP_MAX_BANDS = 4 };
#define REP_MAX_BANDS_TEXT "4"
/* One std band clause of a plot command: block index of BASE.dat as a
 * filled band of mean +- std in colour c (after a separator unless index
 * is 0: bands come first, so that none covers another series' line). */
void rep_gp_band(FILE *gp, const char *base, int index, int c);
/* One clause of a plot command, "'BASE.dat' index N HOW" (HOW: "using 1:2
 * with linespoints"), after the separator of clauses unless it is first. */
void rep_gp_item(FILE *gp, int first, const char *base, int index, const char *how);
/* " title 'TEXT'" (rep_gp_str's quoting). */
void rep_gp_title(FILE *gp, const char *text);

/* ------------------------------------------------------------------ */
/* report_text.c: quoting, cells, plot entries, text tables            */
/* ------------------------------------------------------------------ */

/* s as a Markdown code span (not inside a table). */
void rep_md_code(FILE *f, const char *s);
/* rep_md_code's text on the heap (NULL and the error set on failure). */
char *rep_md_code_str(R *r, const char *s);
/* Markdown text outside code spans, markup characters escaped. */
void rep_md_text(FILE *f, const char *s);
/* TeX text, the special characters escaped. */
void rep_tex_text(FILE *f, const char *s);
/* A CSV number (nothing when NAN), then the separator sep. */
void rep_csv_val(FILE *f, double v, char sep);
/* rep_csv_val(f, v, ','). */
void rep_csv_num(FILE *f, double v);
/* The sweep's name and row k's label: the first two fields of a line. */
void rep_csv_row_head(FILE *f, const RSweep *s, int k);
/* mean ± std with prec decimals into dst; the mean alone when std is NAN,
 * miss when the mean is. */
void rep_cell_ms(char *dst, size_t cap, double m, double sd, int prec, const char *pm, const char *miss);

/* A p-value: 3 decimals, or 2 significant digits below 0.001. */
void rep_fmt_p(char *buf, size_t cap, double p);
/* One plot of report.md: its title and image, or why it was not drawn. */
void rep_md_plot(const R *r, FILE *f, const PlotEntry *e);

/* A table of text cells; row 0 is the header.  The header and column 0
 * (labels) are escaped when written, other cells are written as they are
 * (they hold the format's own markup, such as the ± of the style). */
typedef struct {
    int ncol, nrow, cap;
    char **cell; /* nrow x ncol; NULL: empty */
} Tab;
/* An empty table of ncol columns with its header row; 0 or -1. */
int rep_tab_init(R *r, Tab *t, int ncol);
/* Append an empty row; its index, or -1. */
int rep_tab_row(R *r, Tab *t);
/* Set a cell to text (heap, owned by the table from now on; NULL: an error
 * already set, -1). */
int rep_tab_put(Tab *t, int row, int col, char *text);
void rep_tab_write(FILE *f, const Tab *t, const RepStyle *y);
void rep_tab_free(Tab *t);
/* A built table's last step: written when rc is 0 (it was built), freed
 * either way; returns rc. */
int rep_tab_done(FILE *f, Tab *t, const RepStyle *y, int rc);
/* A label in a caption: a code span in markdown (md), else as is for a TeX
 * comment, kept on one line. */
void rep_cap_label(FILE *f, int md, const char *s);
/* A count with a k / M / B suffix and 3 significant digits ("51.2k"). */
char *rep_fmt_count(R *r, double v, const char *miss);
/* x, or 0 when it rounds to 0 at prec decimals: no "-0.000" cell for a
 * softmax run's mass on nothing, 0 up to rounding (NAN stays NAN). */
double rep_zero_if_rounds(double x, int prec);
/* mean ± std (rep_cell_ms) as a table cell. */
char *rep_ms_cell(R *r, const RepStyle *y, double m, double sd, int prec);

#endif
