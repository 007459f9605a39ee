/*
 * report_plot.c — `gated report`: the plots (gnuplot data files, scripts
 * and images in DIR/plots/): the list of every plot, and those of the main
 * table (val_loss, f_attn, m_act, gate histograms, lr).  The plots of the
 * sections (per-head F-Attn, Bigram-Backcopy, context length,
 * quantization, dropped heads, budget) are report_plot_sections.c's; the
 * gnuplot machinery every plot uses is report_gp.c's.
 *
 * Plots (DIR/plots/SWEEP-*.{dat,gp,svg,png}; SWEEP with characters other
 * than [A-Za-z0-9._-] replaced by '_'), each from finished runs:
 *   -val_loss     metric val_loss against step, mean over the variant's runs,
 *                 a band of +- one std over them (when some step has 2 runs)
 *   -f_attn       metric f_attn, context layer=N, last step, mean, per layer,
 *                 error bars +- std
 *   -m_act        the same for m_act (log y axis)
 *   -gate-K-LABEL histogram 'gate', context layer=N, last step, counts summed
 *                 over the variant's runs, as a fraction per layer (K: the
 *                 row's position, so two labels cannot collide); the counts
 *                 are a JSON array of integers, read with json_each (another
 *                 value is skipped with a warning)
 *   -lr           when the sweep's runs have more than one train.lr: final
 *                 val loss against lr (log x), mean ± std, one line per
 *                 series; a series is the runs whose configs agree on every
 *                 key but train.lr, train.min_lr and train.seed, named by
 *                 their labels without the lr=... component; diverged runs
 *                 are drawn as crosses along the top of the plot
 *   -fattn-heads  sweeps with sink probes: metric f_attn, context
 *                 layer=L,head=H, last step, mean over the row's finished
 *                 runs; one panel per row, side by side on one colour scale
 *                 0..1 (viridis: perceptually uniform, readable in grey)
 *   -bb-bos       sweeps with Bigram-Backcopy probes (report_bb.c): at each
 *                 run's BB head (context layer=L,head=H), bb_bos_attn_other
 *                 (solid) and bb_bos_attn_trigger (dashed) against step, mean
 *                 over the row's finished runs with a band of +- one std;
 *                 one colour per row
 *   -bb-loss      the same for bb_loss_other and bb_loss_trigger (context '')
 *   -bb-gate-K-LABEL  gated rows of those sweeps: histograms bb_gate_other
 *                 (solid) and bb_gate_trigger (dashed), context layer=N, last
 *                 step, summed over the row's runs, as a share per layer and
 *                 type; one colour per layer
 *   -ppl-vs-length  sweeps with `gated eval` results: eval_ppl on split=val
 *                 against the context length (log2 x, log y), mean ± std,
 *                 one colour per row and one dash type per scaling series
 *   -quant        sweeps with `gated eval --quant` results (report_infer.c):
 *                 ΔPPL in % of the float PPL per scheme (x) and row, mean
 *                 ± std over the row's runs, the rows offset along x
 *   -quant-mact-K-SCHEME  per scheme K: each run's ΔPPL% against its
 *                 M-Act, one point per run, colour by row (log x past a
 *                 decade)
 *   -drop         sweeps with `gated eval --drop` results: PPL (log y)
 *                 against the share of (token, head) pairs dropped, per row
 *                 (colour) a curve per rule (dash type): the gate at each
 *                 tau, its matched random and entropy controls, random and
 *                 entropy at fixed fractions; from the float model at 0
 * and per budget series (report_budget.c), DIR/plots/budget-SWEEP.*, SWEEP
 * its smallest budget's sweep:
 *   budget-       the paired Δ final val loss of each row against the
 *                 baseline of the same budget, against tokens per run (log
 *                 x), error bars the 95% CI, a dashed zero line
 * Series are told apart by colour (REP_GP_COLOURS), then dash type and point
 * type (rep_gp_look), so more series than colours never repeat a look.  Log
 * axes get explicit labelled ticks (rep_gp_log_tics): gnuplot labels only the
 * powers of ten, which leaves a range under a decade with one label or
 * none.
 * Each .gp script is self-contained (run `gnuplot NAME.gp` in plots/) and
 * is run by fork/exec with plots/ as working directory; gnuplot's output
 * goes to plots/gnuplot.log.  The SVG / PNG terminals are probed once
 * (pngcairo, else png).  Attention heatmaps need per-position attention
 * data, which the store does not hold: the report says so.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* RepRowFn on (context, value): a context layer=N as (N, value) into the Pts arg. */
static int add_layer_pt(R *r, void *arg, sqlite3_stmt *st) {
    long l = rep_parse_layer(rep_col_text(st, 0));
    return l < 0 ? 0 : rep_pts_add(r, arg, (double)l, rep_col_real(st, 1));
}

/* (step, value) of the run's metric `key` at context '' into pts. */
static int q_steps(R *r, const char *run_id, const char *key, Pts *pts) { return rep_q_steps_ctx(r, run_id, key, "", pts); }

/* One line per variant of metric `key`, mean over the finished seeds
 * (title: what the plot shows; the caption adds how):
 * against the step (per_layer 0: context '', every step; a band of +- one
 * std) or against the layer (per_layer 1: context 'layer=N', each run's
 * last step; error bars +- std, the layers being discrete).  The std is
 * drawn only when some point has two runs or more. */
static int plot_series(R *r, RSweep *s, const char *key, int per_layer, const char *ylabel, const char *title,
                       int logy) {
    char *base = rep_fmt(r, "%s-%s", s->fname, key);
    if (!base) return -1;
    /* every variant's points first: the axis ticks and the bands come before the plot */
    Pts *all = calloc((size_t)s->nvars + 1, sizeof *all);
    int rc = all ? 0 : rep_oom(r);
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        for (int i = 0; rc == 0 && i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (rep_is_finished(u))
                rc = per_layer ? rep_q_each_context_last(r, u->run_id, key, add_layer_pt, &all[k])
                               : q_steps(r, u->run_id, key, &all[k]);
        }
    }
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (rc == 0) rc = rep_plot_open(r, base, &dat, &gp, &datp, &gpp);
    int blocks = 0, multi = 0;
    double lo = INFINITY, hi = -INFINITY;
    const char *xname = per_layer ? "layer" : "step";
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        if (!all[k].n) continue;
        fprintf(dat, "# %s: %s, mean, std, runs\n", s->vars[k].label, xname);
        rep_pts_write(&all[k], dat, &lo, &hi, &multi);
        fprintf(dat, "\n\n");
        blocks++;
    }
    if (rc == 0) {
        rep_gp_head(r, gp, base, title);
        fprintf(gp, "set title ");
        rep_gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel '%s'\n%s", xname, per_layer ? "set xtics 1\n" : "");
        if (logy) {
            /* the range of the data, not gnuplot's whole decades, so that the ticks fall inside it */
            fprintf(gp, "set logscale y\nset autoscale yfix\nset offsets 0, 0, graph 0.05, graph 0.05\n");
            rep_gp_log_tics(gp, "y", lo, hi);
        }
        fprintf(gp, "set ylabel ");
        char *yl = multi && (per_layer || blocks <= REP_MAX_BANDS)
                       ? rep_fmt(r, "%s (%s: +- std)", ylabel, per_layer ? "bars" : "band")
                       : rep_dup(r, ylabel);
        if (!yl) rc = -1;
        if (yl) rep_gp_str(gp, yl);
        free(yl);
        fprintf(gp, "\nplot");
    }
    /* bands first, so that no band covers another series' line */
    int b = 0, bands = multi && !per_layer && blocks <= REP_MAX_BANDS;
    for (int k = 0; rc == 0 && bands && k < s->nvars; k++)
        if (all[k].n) rep_gp_band(gp, base, b, b), b++;
    int nl = 0;
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        if (!all[k].n) continue;
        rep_gp_item(gp, !b && !nl, base, nl, multi && per_layer ? "using 1:2:3 with yerrorlines" : "using 1:2 with linespoints");
        rep_gp_series_look(gp, nl);
        rep_gp_title(gp, s->vars[k].label);
        nl++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    for (int k = 0; all && k < s->nvars; k++) free(all[k].p);
    free(all);
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base, "%s (%smean over seeds%s%s)", title,
                   per_layer ? "last step, " : "",
                   !multi       ? ""
                   : per_layer  ? "; error bars: std"
                   : bands      ? "; band: +- std"
                                : "; no std bands past " REP_MAX_BANDS_TEXT " rows: the std is in the table and the data file",
                   logy ? "; log scale" : "");
    free(base);
    return rc;
}

/* The histogram plot of row k from h (h->n > 0). */
static int gate_hist_write(R *r, RSweep *s, int k, Hists *h) {
    const RVar *v = &s->vars[k];
    HistAcc *acc = h->a;
    int nacc = h->n, runs_with = h->runs_with, rc = 0;
    rep_hists_sort(h);
    char *lab = rep_safe_name(r, v->label);
    char *base = lab ? rep_fmt(r, "%s-gate-%d-%s", s->fname, k, lab) : NULL;
    free(lab);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    else {
        rep_gp_head(r, gp, base, "gate-score histogram per layer, last step, counts summed over seeds");
        /* the labels in files: escaped when loaded; rep_gp_str quotes again */
        fprintf(gp, "set title ");
        char *t = rep_fmt(r, "%s: gate scores of %s (last step, %d run%s summed)", s->name, v->label, runs_with,
                          runs_with == 1 ? "" : "s");
        if (!t) rc = -1;
        if (t) rep_gp_str(gp, t);
        free(t);
        double lo, hi;
        rep_hists_range(h, 1, &lo, &hi);
        fprintf(gp, "\nset xlabel 'gate score'\nset ylabel 'fraction of scores'\nset xrange [%.10g:%.10g]\nplot", lo,
                hi);
        for (int j = 0; j < nacc; j++) {
            HistAcc *a = &acc[j];
            fprintf(dat, "# layer %ld (%d runs): bin centre, fraction, count\n", a->layer, a->nruns);
            rep_hist_write(dat, a);
            rep_gp_item(gp, !j, base, j, "using 1:2 with histeps lw 2");
            rep_gp_look(gp, j, j / REP_GP_NCOLOURS, -1); /* as rep_gp_series_look, without points */
            fprintf(gp, " title 'layer %ld'", a->layer);
        }
        fprintf(gp, "\n");
        rep_gp_tail(r, gp, base);
    }
    char *code = rc == 0 ? rep_md_code_str(r, v->label) : NULL;
    if (!code) rc = -1;
    rc = rep_plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                   "Gate scores of %s per layer (last step, %d run%s summed)", code ? code : "", runs_with,
                   runs_with == 1 ? "" : "s");
    free(code);
    free(base);
    return rc;
}

/* Gate-score histograms of variant k, summed over its finished runs. */
static int plot_gate_hist(R *r, RSweep *s, int k) {
    const RVar *v = &s->vars[k];
    Hists h = {.key = "gate"};
    int rc = 0;
    for (int i = 0; rc == 0 && i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (rep_is_finished(u)) rc = rep_hist_load_run(r, &h, u);
    }
    if (rc == 0 && h.n > 0) rc = gate_hist_write(r, s, k, &h);
    for (int j = 0; j < h.n; j++) free(h.a[j].counts);
    free(h.a);
    return rc;
}

/* A series of the lr plot: runs that differ only in lr and seed. */
typedef struct {
    const char *key; /* the runs' RRun.cfg_key (not owned) */
    char *name;
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
    if (!out) return rep_oom(r), NULL;
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

/* The lr plot's series and the range of its final losses. */
typedef struct {
    LrSeries *ser;
    int n, cap;
    double ymin, ymax;
} LrPlot;

/* Run u (finished or diverged, with an lr and a config) into its series
 * of p, a new one if no series has its config key. */
static int lr_add_run(R *r, LrPlot *p, const RRun *u) {
    char *name = strip_lr(r, u->label);
    if (!name) return -1;
    LrSeries *q = NULL;
    for (int j = 0; j < p->n; j++)
        if (strcmp(p->ser[j].key, u->cfg_key) == 0) q = &p->ser[j];
    if (!q) {
        if (rep_grow(r, (void **)&p->ser, &p->cap, p->n + 1, sizeof *p->ser)) {
            free(name);
            return -1;
        }
        q = &p->ser[p->n++];
        memset(q, 0, sizeof *q);
        q->key = u->cfg_key;
        q->name = name;
    } else {
        if (!strstr(q->name, name)) { /* labels that differ beyond lr: name both */
            char *nn = rep_fmt(r, "%s / %s", q->name, name);
            if (!nn) {
                free(name);
                return -1;
            }
            free(q->name);
            q->name = nn;
        }
        free(name);
    }
    if (rep_is_finished(u) && !isnan(u->val_loss) && isfinite(u->val_loss)) {
        if (u->val_loss < p->ymin) p->ymin = u->val_loss;
        if (u->val_loss > p->ymax) p->ymax = u->val_loss;
        return rep_pts_add(r, &q->fin, u->lr, u->val_loss);
    }
    return strcmp(u->status, "diverged") == 0 ? rep_pts_add(r, &q->div, u->lr, 0) : 0;
}

/* The lr plot's data file and script from p (p->n > 0). */
static void lr_write(R *r, const RSweep *s, LrPlot *p, const char *base, FILE *dat, FILE *gp) {
    double ymin = p->ymin, ymax = p->ymax;
    if (!isfinite(ymin)) ymin = 0, ymax = 1;
    double span = ymax - ymin > 0 ? ymax - ymin : fabs(ymax) * 0.1 + 0.1;
    double ydiv = ymax + 0.15 * span;
    rep_gp_head(r, gp, base, "final validation loss against peak learning rate; diverged runs as crosses");
    fprintf(gp, "set title ");
    rep_gp_str(gp, s->name);
    fprintf(gp, "\nset logscale x\nset autoscale xfix\nset format x '%%g'\nset xlabel 'train.lr (log scale)'\n"
                "set ylabel 'final validation loss, mean +- std over seeds'\n"
                "set yrange [%.10g:%.10g]\nset offsets graph 0.05, graph 0.05, 0, 0\n",
            ymin - 0.1 * span, ymax + 0.3 * span);
    /* ticks at the learning rates tried, when they are few (gnuplot would label only the powers of ten) */
    double xlo = INFINITY, xhi = -INFINITY, lrs[12];
    int nlr = 0;
    for (int j = 0; j < p->n; j++) {
        const Pts *v[2] = {&p->ser[j].fin, &p->ser[j].div};
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < v[h]->n; i++) {
                double x = v[h]->p[i].x;
                xlo = fmin(xlo, x);
                xhi = fmax(xhi, x);
                int seen = 0;
                for (int k = 0; k < nlr && k < 12 && !seen; k++) seen = lrs[k] == x;
                if (!seen && nlr++ < 12) lrs[nlr - 1] = x;
            }
    }
    if (nlr > 12) {
        rep_gp_log_tics(gp, "x", xlo, xhi);
    } else if (nlr > 0) {
        qsort(lrs, (size_t)nlr, sizeof *lrs, dbl_cmp);
        fprintf(gp, "set xtics (");
        for (int k = 0; k < nlr; k++) fprintf(gp, "%s\"%g\" %.10g", k ? ", " : "", lrs[k], lrs[k]);
        fprintf(gp, ")\n");
    }
    fprintf(gp, "plot");
    int blocks = 0, ndiv = 0;
    for (int j = 0; j < p->n; j++) {
        LrSeries *q = &p->ser[j];
        ndiv += q->div.n;
        if (!q->fin.n) continue;
        fprintf(dat, "# %s: lr, mean final val loss, std, finished runs\n", q->name);
        rep_pts_write(&q->fin, dat, NULL, NULL, NULL);
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2:3 with yerrorlines");
        rep_gp_series_look(gp, blocks);
        rep_gp_title(gp, q->name);
        blocks++;
    }
    if (ndiv) {
        fprintf(dat, "# diverged runs: lr, drawn at, series\n");
        for (int j = 0; j < p->n; j++)
            for (int i = 0; i < p->ser[j].div.n; i++) fprintf(dat, "%.10g %.10g %d\n", p->ser[j].div.p[i].x, ydiv, j);
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2 with points pt 2 ps 2.5 lw 2 lc rgb 'red' title 'diverged'");
    }
    fprintf(gp, "\n");
    rep_gp_tail(r, gp, base);
}

/* Final val loss against train.lr, a line per series (LrSeries). */
static int plot_lr(R *r, RSweep *s) {
    LrPlot p = {NULL, 0, 0, INFINITY, -INFINITY};
    int rc = 0;
    for (int i = 0; rc == 0 && i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        int ended = rep_is_finished(u) || strcmp(u->status, "diverged") == 0;
        if (ended && !isnan(u->lr) && u->cfg_key) rc = lr_add_run(r, &p, u);
    }
    char *base = NULL;
    if (rc == 0 && p.n > 0) {
        base = rep_fmt(r, "%s-lr", s->fname);
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))
            rc = -1;
        else
            lr_write(r, s, &p, base, dat, gp);
        rc = rep_plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                       "Final validation loss against learning rate (log scale; diverged runs as red crosses above the "
                       "curves)");
    }
    free(base);
    for (int j = 0; j < p.n; j++) {
        free(p.ser[j].name);
        free(p.ser[j].fin.p);
        free(p.ser[j].div.p);
    }
    free(p.ser);
    return rc;
}

/* 1 if any finished run of variant k has a 'gate' histogram. */
static int has_gate_hist(R *r, const RSweep *s, int k, int *out) {
    const RVar *v = &s->vars[k];
    *out = 0;
    for (int i = 0; i < v->nruns && !*out; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!rep_is_finished(u)) continue;
        sqlite3_stmt *st;
        if (rep_q_prep(r, &st, "SELECT 1 FROM histograms WHERE run_id = ?1 AND key = ?2 LIMIT 1", "tt", u->run_id,
                       "gate"))
            return -1;
        int sr = sqlite3_step(st);
        if (sr == SQLITE_ROW) *out = 1;
        if (rep_q_done(r, st, sr, "read histograms")) return -1;
    }
    return 0;
}

int rep_make_plots(R *r, RSweep *s) {
    /* the text corpora are bytes (one token a byte); Bigram-Backcopy's tokens are not */
    if (plot_series(r, s, "val_loss", 0,
                    s->has_bb ? "validation loss (nats/token), mean over seeds"
                              : "validation loss (nats/byte), mean over seeds",
                    "Validation loss against step", 0))
        return -1;
    if (plot_series(r, s, "f_attn", 1, "F-Attn (attention on position 0)", "F-Attn per layer", 0)) return -1;
    if (plot_series(r, s, "m_act", 1, "M-Act (max |h| of the layer output, log scale)", "M-Act per layer", 1))
        return -1;
    for (int k = 0; k < s->nvars; k++) {
        int has;
        if (has_gate_hist(r, s, k, &has)) return -1;
        if (has && plot_gate_hist(r, s, k)) return -1;
    }
    if (s->lr_plot && plot_lr(r, s)) return -1;
    return 0;
}
