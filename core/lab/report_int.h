/*
 * report_int.h — what the files of `gated report` share (report.h says
 * what the report is; this header is internal to core/lab/report*.c).
 *
 *   report.c          the driver (report_run) and the small helpers below:
 *                     errors, memory, strings, output files
 *   report_load.c     the store into RSweep: SQL helpers, runs, rows, their
 *                     statistics (stats.h), sink probes, `gated eval` results
 *   report_plot.c     gnuplot: data files, scripts, running gnuplot
 *   report_write.c    the main table in md, csv and tex; quoting per format
 *   report_sections.c the sink and context-length sections (md, tex, csv)
 *
 * Errors: a function that fails sets the message once (rep_fail: the first
 * message wins, R.failed is set) and returns -1 (or NULL); callers only
 * pass the failure up.  Names with external linkage start with rep_ (or
 * Rep), since these files share the library with the rest of the core.
 */
#ifndef GATED_REPORT_INT_H
#define GATED_REPORT_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lab/report.h"
#include "lab/stats.h"
#include "run/store.h"
#include "util/csv.h"

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

/* One run of a sweep (a sweep_runs line, LEFT JOINed to runs). */
typedef struct {
    char *run_id, *label, *status;
    char *cfg_key; /* the config without train.lr, train.min_lr, train.seed (json_remove;
                      the whole text when it is not JSON); NULL: no config (pending) */
    long long seed;
    int idx, is_baseline;
    double lr; /* train.lr of the config, a JSON number; NAN if absent */
    double val_loss, val_ppl, f_attn, m_act, gate_mean, spikes, gate_params, tokens_per_s;
    double tokens, seq_len; /* train.steps x train.batch x model.seq_len, and model.seq_len; NAN if absent */
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

/* One sweep: its runs, rows and plots. */
typedef struct {
    char *raw;          /* the name as stored, for queries */
    char *name, *fname; /* name escaped for output (rep_esc); fname: safe for a file name */
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

/* The report being written: options, database, sweeps, gnuplot. */
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

static inline int rep_is_finished(const RRun *u) { return strcmp(u->status, "finished") == 0; }

/* ------------------------------------------------------------------ */
/* report.c: errors, memory, strings, files                            */
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
 * of an empty name or one that starts with '.'.  Heap. */
char *rep_safe_name(R *r, const char *s);
/* fopen(path, "w"), the error set on failure. */
FILE *rep_open(R *r, const char *path);
/* fclose, the error set when writing or closing failed. */
int rep_close(R *r, FILE *f, const char *path);

/* ------------------------------------------------------------------ */
/* report_load.c: SQL helpers and loading                              */
/* ------------------------------------------------------------------ */

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

/* Every sweep name in the database, sorted (heap, as stored: not escaped). */
int rep_list_sweeps(R *r, char ***names, int *n);
/* Load sweep s (raw, name and fname set, the rest zero): its runs, rows,
 * statistics, sink probes and `gated eval` results. */
int rep_load_sweep(R *r, RSweep *s);
void rep_free_sweep(RSweep *s);
/* The distinct lengths of series j on split sp, ascending, into lens
 * (cap >= nev); returns how many. */
int rep_eval_lens(const RSweep *s, int j, int sp, long long *lens);
/* eval_ppl of row k in series j, split sp, at length len: mean and std
 * over the row's finished runs (buf: cap >= nev); returns how many. */
int rep_eval_stats(const RSweep *s, int k, int j, int sp, long long len, double *buf, double *m, double *sd);

/* ------------------------------------------------------------------ */
/* report_plot.c                                                       */
/* ------------------------------------------------------------------ */

/* Look for gnuplot and its terminals once (r->plots_dir exists); a warning
 * if it is unusable. */
void rep_gp_check(R *r);
/* The sweep's plots: data files and scripts, and the images when gnuplot
 * is usable; each is listed in s->plots. */
int rep_make_plots(R *r, RSweep *s);

/* ------------------------------------------------------------------ */
/* report_write.c                                                      */
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
/* mean ± std with prec decimals into dst; the mean alone when std is NAN,
 * miss when the mean is. */
void rep_cell_ms(char *dst, size_t cap, double m, double sd, int prec, const char *pm, const char *miss);

/* DIR/report.md: every sweep. */
int rep_write_md(R *r, const char *path);
/* DIR/SWEEP.csv and DIR/SWEEP.tex: one sweep's main table (tex: and its
 * sections). */
int rep_write_csv(R *r, const RSweep *s, const char *path);
int rep_write_tex(R *r, const RSweep *s, const char *path);

/* ------------------------------------------------------------------ */
/* report_sections.c                                                   */
/* ------------------------------------------------------------------ */

/* The sections sweep s has data for (sink formation, per-head F-Attn,
 * perplexity against context length) after its main table, in markdown
 * (md: report.md) or TeX (SWEEP.tex). */
int rep_write_sections(R *r, FILE *f, const RSweep *s, int md);
/* Their CSV files: SWEEP-sink.csv, SWEEP-fattn-heads.csv, SWEEP-ppl.csv. */
int rep_write_csv_sections(R *r, const RSweep *s);

#endif
