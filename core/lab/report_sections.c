/*
 * report_sections.c — `gated report`: the sections a sweep gets only when
 * its finished runs have the metrics (report_load.c reads them).
 *
 *   sink probes (metric sink_formed, context ''): the main table gains
 *     "sink heads" (sink_head_share, as %) and "F-Attn/unif" (f_attn_rel,
 *     context ''), both last step, mean ± std (report_write.c); here a
 *     "Sink formation" table, a line per row (tokens per run = train.steps
 *     x train.batch x model.seq_len from the config, model.seq_len, per
 *     seed the first step with sink_formed = 1, formed k/n, the largest
 *     per-head F-Attn at the last step and where it is, the two columns
 *     above, the paper's F-Attn); and per row a layer x head table of
 *     F-Attn (%).
 *   `gated eval` results (metric eval_ppl, context
 *     split=S,len=L,scaling=K,factor=F): per series (report_load.c) and
 *     split a table of rows x lengths (ascending, headed "L (Mx)" with
 *     M = L / model.seq_len when the runs share one), cells eval_ppl
 *     mean ± std over the row's finished runs; then the paper's Table 5
 *     (paper.h; markdown only).
 *   Bigram-Backcopy probes (bb_* metrics): report_bb.c's section, between
 *     the sink sections and the context-length ones.
 *   `gated eval --quant / --drop` results (infer_* metrics): report_infer.c's
 *     sections "Quantization" and "Gate-sparse heads", after the
 *     context-length ones.
 *   rows that differ in train.lr alone: report_edge.c's section
 *     "Learning-rate edge", last.
 * In md and tex a section is a Tab (report_int.h; report_budget.c's tables
 * are Tabs too), written by rep_tab_write in the style of the format
 * (RepStyle); in csv format the sections are files of their own:
 * SWEEP-sink.csv (one line per finished run with sink probes),
 * SWEEP-fattn-heads.csv (row, layer, head), SWEEP-bb.csv (row) and
 * SWEEP-ppl.csv (row, split, series, length), SWEEP-quant.csv (row,
 * scheme), SWEEP-drop.csv (row, rule, tau or F) and SWEEP-edge.csv
 * (variant, lr).  In tex they follow the main tabular in SWEEP.tex.
 * Which sweep gets which section, and each section's writers (md / tex,
 * csv) and plots, is one table (SECTIONS, at the end): report.md,
 * SWEEP.tex, the CSV files and rep_make_plots all walk it in its order.
 */
#include "lab/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/paper.h"
#include "run/probes.h"

/* ================================================================== */
/* md and tex                                                          */
/* ================================================================== */

const RepStyle REP_MD_STYLE = {1, " ± ", "–"}, REP_TEX_STYLE = {0, " $\\pm$ ", "--"};

int rep_tab_row(R *r, Tab *t) {
    if (rep_grow(r, (void **)&t->cell, &t->cap, (t->nrow + 1) * t->ncol, sizeof *t->cell)) return -1;
    for (int j = 0; j < t->ncol; j++) t->cell[t->nrow * t->ncol + j] = NULL;
    return t->nrow++;
}

int rep_tab_init(R *r, Tab *t, int ncol) {
    *t = (Tab){ncol, 0, 0, NULL};
    return rep_tab_row(r, t) < 0 ? -1 : 0;
}

int rep_tab_put(Tab *t, int row, int col, char *text) {
    if (!text) return -1;
    free(t->cell[row * t->ncol + col]);
    t->cell[row * t->ncol + col] = text;
    return 0;
}

void rep_tab_free(Tab *t) {
    for (int i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i]);
    free(t->cell);
}

void rep_tab_write(FILE *f, const Tab *t, const RepStyle *y) {
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
                rep_md_text(f, c ? c : "");
            else
                rep_tex_text(f, c ? c : "");
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
typedef int (*TabFn)(R *r, const RSweep *s, const RepStyle *y, int arg, Tab *t);

int rep_tab_done(FILE *f, Tab *t, const RepStyle *y, int rc) {
    if (rc == 0) rep_tab_write(f, t, y);
    rep_tab_free(t);
    return rc;
}

static int emit_tab(R *r, FILE *f, const RSweep *s, const RepStyle *y, TabFn fn, int arg) {
    Tab t = {0};
    return rep_tab_done(f, &t, y, fn(r, s, y, arg, &t));
}

/* A label inside a caption: `code` in markdown; in a TeX comment as is,
 * but on one line (store_fput_escaped: a line break would end the comment
 * and make the rest TeX input). */
void rep_cap_label(FILE *f, int md, const char *s) {
    if (md)
        rep_md_code(f, s);
    else
        store_fput_escaped(f, s);
}

char *rep_fmt_count(R *r, double v, const char *miss) {
    static const char *const suffix[] = {"", "k", "M", "B"};
    int i = 0;
    if (isnan(v)) return rep_dup(r, miss);
    while (i < 3 && fabs(v) >= 1000) v /= 1000, i++;
    return i ? rep_fmt(r, "%.3g%s", v, suffix[i]) : rep_fmt(r, "%.0f", v);
}

char *rep_ms_cell(R *r, const RepStyle *y, double m, double sd, int prec) {
    char buf[96];
    rep_cell_ms(buf, sizeof buf, m, sd, prec, y->pm, y->miss);
    return rep_dup(r, buf);
}

/* The first step with a sink of row v's run with seed `seed`: "no" if
 * none formed, the missing mark if the row has no such run. */
static char *seed_cell(R *r, const RSweep *s, const RVar *v, long long seed, const RepStyle *y) {
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (u->has_sink && u->seed == seed)
            return u->sink_step >= 0 ? rep_fmt(r, "%lld", u->sink_step) : rep_dup(r, "no");
    }
    return rep_dup(r, y->miss);
}

/* TabFn: the sink formation table, a line per row. */
static int sink_tab(R *r, const RSweep *s, const RepStyle *y, int arg, Tab *t) {
    (void)arg;
    int ns = s->nseeds, rc = rep_tab_init(r, t, 9 + ns);
    static const char *const head[] = {"formed", "max head F-Attn", "where", "F-Attn/unif", "sink heads (%)",
                                       "paper F-Attn"};
    rc = rc || rep_tab_put(t, 0, 0, rep_dup(r, "variant")) || rep_tab_put(t, 0, 1, rep_dup(r, "tokens/run")) ||
         rep_tab_put(t, 0, 2, rep_dup(r, "seq_len"));
    for (int q = 0; rc == 0 && q < ns; q++) rc = rep_tab_put(t, 0, 3 + q, rep_fmt(r, "seed %lld", s->seeds[q]));
    for (int q = 0; rc == 0 && q < 6; q++)
        rc = rep_tab_put(t, 0, 3 + ns + q,
                     rep_dup(r, q == 1 && s->sink_bb && !s->sink_fattn ? "max head BOS attn (other queries)" : head[q]));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        const RRun *w = v->where >= 0 ? &s->runs[v->where] : NULL;
        const PaperRow *pr = paper_lookup(v->label);
        int i = rep_tab_row(r, t), c = 3 + ns;
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, v->label)) ||
             rep_tab_put(t, i, 1, rep_fmt_count(r, v->tokens, y->miss)) ||
             rep_tab_put(t, i, 2, isnan(v->seq_len) ? rep_dup(r, y->miss) : rep_fmt(r, "%.0f", v->seq_len));
        for (int q = 0; rc == 0 && q < ns; q++) rc = rep_tab_put(t, i, 3 + q, seed_cell(r, s, v, s->seeds[q], y));
        rc = rc ||
             rep_tab_put(t, i, c, v->n_sink ? rep_fmt(r, "%d/%d", v->n_formed, v->n_sink) : rep_dup(r, y->miss)) ||
             rep_tab_put(t, i, c + 1, rep_ms_cell(r, y, v->head_max, v->head_max_std, 3)) ||
             rep_tab_put(t, i, c + 2, w ? rep_fmt(r, "L%d.H%d", w->max_l, w->max_h) : rep_dup(r, y->miss)) ||
             rep_tab_put(t, i, c + 3, rep_ms_cell(r, y, v->f_attn_rel, v->f_attn_rel_std, 2)) ||
             rep_tab_put(t, i, c + 4, rep_ms_cell(r, y, 100 * v->sink_share, 100 * v->sink_share_std, 1)) ||
             rep_tab_put(t, i, c + 5,
                         pr && !isnan(pr->f_attn) ? rep_fmt(r, "%.3f", pr->f_attn) : rep_dup(r, y->miss));
    }
    return rc ? -1 : 0;
}

/* TabFn: row arg's per-head F-Attn in %, layers as rows. */
static int heads_tab(R *r, const RSweep *s, const RepStyle *y, int arg, Tab *t) {
    const HeadMap *m = &s->vars[arg].heads;
    int rc = rep_tab_init(r, t, 1 + m->nh) || rep_tab_put(t, 0, 0, rep_dup(r, "layer"));
    for (int h = 0; rc == 0 && h < m->nh; h++) rc = rep_tab_put(t, 0, 1 + h, rep_fmt(r, "H%d", h));
    for (int l = 0; rc == 0 && l < m->nl; l++) {
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_fmt(r, "L%d", l));
        for (int h = 0; rc == 0 && h < m->nh; h++) {
            double x = m->v[l * m->nh + h];
            rc = rep_tab_put(t, i, 1 + h, isnan(x) ? rep_dup(r, y->miss) : rep_fmt(r, "%.1f", 100 * x));
        }
    }
    return rc ? -1 : 0;
}

/* TabFn: eval_ppl of series arg / 2 on split arg % 2, rows x lengths. */
static int ppl_tab(R *r, const RSweep *s, const RepStyle *y, int arg, Tab *t) {
    int j = arg / 2, sp = arg % 2;
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    int nl = lens && buf ? rep_eval_lens(s, j, sp, lens) : 0;
    int rc = !lens || !buf ? rep_oom(r) : rep_tab_init(r, t, 2 + nl);
    rc = rc || rep_tab_put(t, 0, 0, rep_dup(r, "variant")) || rep_tab_put(t, 0, 1, rep_dup(r, "n"));
    for (int q = 0; rc == 0 && q < nl; q++)
        rc = rep_tab_put(t, 0, 2 + q,
                     isnan(s->train_len) ? rep_fmt(r, "%lld", lens[q])
                                         : rep_fmt(r, "%lld (%gx)", lens[q], (double)lens[q] / s->train_len));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        int n = 0, i = -1;
        for (int q = 0; rc == 0 && q < nl; q++) {
            double m, sd;
            int nq = rep_eval_stats(s, k, j, sp, lens[q], buf, &m, &sd);
            if (nq && i < 0)
                rc = (i = rep_tab_row(r, t)) < 0 || rep_tab_put(t, i, 0, rep_dup(r, s->vars[k].label));
            if (rc == 0 && i >= 0) rc = rep_tab_put(t, i, 2 + q, rep_ms_cell(r, y, m, sd, 3));
            if (nq > n) n = nq;
        }
        if (rc == 0 && i >= 0) rc = rep_tab_put(t, i, 1, rep_fmt(r, "%d", n));
    }
    free(lens);
    free(buf);
    return rc ? -1 : 0;
}

static int sink_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
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
    if (s->sink_bb)
        fprintf(f, y->md ? "Bigram-Backcopy runs (`data.corpus: bb`) take, in place of a head's F-Attn, its attention "
                           "on BOS from other (non-trigger) queries, and in place of the layer's F-Attn the mean of "
                           "that over the layer's heads: trigger queries are meant to attend to the previous token. "
                           "The max head column, the F-Attn over uniform column (the mean of that over layers, over "
                           "uniform) and the per-head table read that measure for those runs.\n\n"
                         : "%% Bigram-Backcopy runs: a head's attention on BOS from other (non-trigger) queries in "
                           "place of its F-Attn.\n");
    return emit_tab(r, f, s, y, sink_tab, 0);
}

static int heads_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    int any = 0;
    for (int k = 0; k < s->nvars; k++) any |= s->vars[k].heads.nl > 0;
    if (!any) return 0;
    if (y->md)
        fprintf(f, "#### %s per layer and query head\n\n"
                   "At the last evaluation, in %%, mean over the row's finished runs; rows: layers, columns: query "
                   "heads.\n\n",
                rep_head_measure(s));
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        if (!v->heads.nl) continue;
        fputs(y->md ? "" : "% F-Attn (%) per layer and head: ", f);
        rep_cap_label(f, y->md, v->label);
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

static int ppl_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
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

/* ================================================================== */
/* csv                                                                 */
/* ================================================================== */

void rep_csv_num(FILE *f, double v) { rep_csv_val(f, v, ','); }

void rep_csv_row_head(FILE *f, const RSweep *s, int k) {
    csv_fput_text(s->name, f);
    fputc(',', f);
    csv_fput_text(s->vars[k].label, f);
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
            rep_csv_row_head(f, s, k);
            char qid[64];
            fprintf(f, "%lld,", u->seed);
            csv_fput_text(store_escape(u->run_id, qid, sizeof qid), f);
            fputc(',', f);
            rep_csv_num(f, u->tokens);
            rep_csv_num(f, u->seq_len);
            if (u->sink_step >= 0) fprintf(f, "%lld", u->sink_step);
            fputc(',', f);
            rep_csv_num(f, u->head_max);
            if (isnan(u->head_max))
                fputs(",,", f);
            else
                fprintf(f, "%d,%d,", u->max_l, u->max_h);
            rep_csv_num(f, u->f_attn_rel);
            rep_csv_val(f, u->sink_share, '\n');
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
            rep_csv_row_head(f, s, k);
            fprintf(f, "%d,%d,%d,", s->vars[k].n_sink, c / m->nh, c % m->nh);
            rep_csv_val(f, m->v[c], '\n');
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
        return rep_oom(r);
    }
    fprintf(f, "sweep,label,split,series,scaling,factor,len,train_len,n,ppl_mean,ppl_std\n");
    for (int j = 0; j < s->neser; j++)
        for (int sp = 0; sp < 2; sp++) {
            int nl = rep_eval_lens(s, j, sp, lens);
            for (int k = 0; k < s->nvars; k++)
                for (int q = 0; q < nl; q++) {
                    double m, sd;
                    int n = rep_eval_stats(s, k, j, sp, lens[q], buf, &m, &sd);
                    if (!n) continue;
                    rep_csv_row_head(f, s, k);
                    fprintf(f, "%s,", splits[sp]);
                    csv_fput_text(s->eser[j].name, f);
                    fputc(',', f);
                    csv_fput_text(s->eser[j].scaling, f);
                    fputc(',', f);
                    rep_csv_num(f, s->eser[j].factor);
                    fprintf(f, "%lld,", lens[q]);
                    rep_csv_num(f, s->train_len);
                    fprintf(f, "%d,", n);
                    rep_csv_num(f, m);
                    rep_csv_val(f, sd, '\n');
                }
        }
    free(lens);
    free(buf);
    return 0;
}

/* Write DIR/SWEEP-suffix.csv with fn. */
static int csv_file(R *r, const RSweep *s, const char *suffix, int (*fn)(R *, FILE *, const RSweep *)) {
    char *path = rep_fmt(r, "%s/%s-%s.csv", r->o->out_dir, s->fname, suffix);
    if (!path) return -1;
    FILE *f = rep_open(r, path);
    int rc = -1;
    if (f) {
        rc = fn(r, f, s);
        if (rc)
            rep_abort(r, f);
        else if (rep_close(r, f, path))
            rc = -1;
    }
    if (rc == 0 && r->info) fprintf(r->info, "wrote %s\n", path);
    free(path);
    return rc;
}

/* ================================================================== */
/* the table of sections                                               */
/* ================================================================== */

static int has_sink(const RSweep *s) { return s->has_sink; }
static int has_bb(const RSweep *s) { return s->has_bb; }
static int has_eval(const RSweep *s) { return s->nev > 0; }
static int has_quant(const RSweep *s) { return s->has_quant; }
static int has_drop(const RSweep *s) { return s->has_drop; }

/* The sections a sweep gets when its finished runs have their data, one
 * row each, in the order report.md, SWEEP.tex, the CSV files and the plots
 * take them: adding a section is adding a row. */
static const struct {
    const char *csv_name; /* DIR/SWEEP-csv_name.csv */
    int (*has)(const RSweep *s);
    int (*text)(R *r, FILE *f, const RSweep *s, const RepStyle *y); /* md (report.md) or TeX (SWEEP.tex) */
    int (*csv)(R *r, FILE *f, const RSweep *s);
    int (*plot)(R *r, RSweep *s); /* its plots (report_plot_sections.c); NULL: none */
} SECTIONS[] = {
    {"sink", has_sink, sink_section, csv_sink, NULL},
    {"fattn-heads", has_sink, heads_section, csv_heads, rep_plot_heads},
    {"bb", has_bb, rep_bb_section, rep_bb_csv, rep_plot_bb},
    {"ppl", has_eval, ppl_section, csv_ppl, rep_plot_ppl},
    {"quant", has_quant, rep_infer_quant_section, rep_infer_quant_csv, rep_plot_quant},
    {"drop", has_drop, rep_infer_drop_section, rep_infer_drop_csv, rep_plot_drop},
    {"edge", rep_has_edge, rep_edge_section, rep_edge_csv, NULL},
};
enum { NSECTIONS = (int)(sizeof SECTIONS / sizeof SECTIONS[0]) };

int rep_write_sections(R *r, FILE *f, const RSweep *s, int md) {
    const RepStyle *y = md ? &REP_MD_STYLE : &REP_TEX_STYLE;
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].has(s) && SECTIONS[i].text(r, f, s, y)) return -1;
    return 0;
}

int rep_write_csv_sections(R *r, const RSweep *s) {
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].has(s) && csv_file(r, s, SECTIONS[i].csv_name, SECTIONS[i].csv)) return -1;
    return 0;
}

int rep_section_plots(R *r, RSweep *s) {
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].plot && SECTIONS[i].has(s) && SECTIONS[i].plot(r, s)) return -1;
    return 0;
}
