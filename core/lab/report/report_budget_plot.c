/*
 * report_budget_plot.c — `gated report`: the plots of the budget series
 * beyond Δ against tokens (report_plot_sections.c's rep_plot_budget):
 *   budget-SWEEP-gap         per series, val loss − train loss at each
 *                            evaluation (but the first: none before it to
 *                            average train loss from) against tokens seen, one line per
 *                            row, the seed mean of its runs at the longest
 *                            budget (report_budget.c: rep_budget_curves);
 *   budget-size-SWEEP-K      per size group and contrast K, Δ final val loss
 *                            against training compute (6 × params × tokens
 *                            FLOPs, log x), one line per model size, error
 *                            bars the 95% CI (report_budget_size.c).
 * Labels and sweep names come from the database: they reach a script only
 * through rep_gp_str / rep_gp_title (quoted, no control bytes) and a data
 * file only in its '#' comment lines (escaped when loaded).
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* PlotEntry lists of a size group, registered through rep_plot_done's
 * budget-series branch (it only appends to the list it is given). */
static int size_done(R *r, RSize *z, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp, const char *base,
                     const char *title) {
    RBudget hold = {.plots = z->plots, .nplots = z->nplots, .plots_cap = z->plots_cap};
    rc = rep_plot_done(r, NULL, &hold, rc, any, dat, gp, datp, gpp, base, "%s", title);
    z->plots = hold.plots;
    z->nplots = hold.nplots;
    z->plots_cap = hold.plots_cap;
    return rc;
}

int rep_plot_budget_gap(R *r, RBudget *b) {
    RSweep *sl = &r->sw[b->sw[b->n - 1]];
    Pts *pts = calloc((size_t)b->nlab + 1, sizeof *pts);
    int rc = pts ? 0 : rep_oom(r), blocks = 0, multi = 0;
    for (int k = 0; rc == 0 && k < b->nlab; k++) {
        int j = rep_row_of(sl, b->labels[k]);
        for (int i = 0; rc == 0 && j >= 0 && i < sl->vars[j].nruns; i++) {
            RRun *u = &sl->runs[sl->vars[j].runs[i]];
            if (rep_is_finished(u)) rc = rep_budget_curves(r, u, &pts[k]);
        }
    }
    char *base = rc == 0 ? rep_fmt(r, "%s-gap", b->fname) : NULL;
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (rc == 0 && (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))) rc = -1;
    if (rc == 0) {
        rep_gp_head(r, gp, base, "val loss - train loss against tokens seen, seed mean, the longest budget's runs");
        char *title = rep_fmt(r, "%s: val loss - train loss (mean since the previous evaluation)", sl->name);
        if (!title) rc = -1;
        fprintf(gp, "set title ");
        rep_gp_str(gp, title ? title : "");
        free(title);
        fprintf(gp, "\nset format x '%%.0s%%c'\nset xlabel 'tokens seen'\nset ylabel 'val loss - train loss (nats), seed mean'\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nplot");
    }
    for (int k = 0; rc == 0 && k < b->nlab; k++) {
        if (!pts[k].n) continue;
        fprintf(dat, "# %s: tokens, mean gap, std, runs\n", b->labels[k]);
        rep_pts_write(&pts[k], dat, NULL, NULL, &multi);
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2 with linespoints");
        rep_gp_series_look(gp, blocks);
        rep_gp_title(gp, b->labels[k]);
        blocks++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    char *code = rc == 0 ? rep_md_code_str(r, sl->name) : NULL;
    if (rc == 0 && !code) rc = -1;
    rc = rep_plot_done(r, NULL, b, rc, blocks, dat, gp, datp, gpp, base,
                       "Train − validation gap against tokens seen, the runs of %s (val loss at each evaluation minus "
                       "the mean train loss of the steps since the one before; one line per row, mean over seeds; "
                       "dashed: no gap)",
                       code ? code : "");
    free(code);
    for (int k = 0; pts && k < b->nlab; k++) free(pts[k].p);
    free(pts);
    free(base);
    return rc;
}

/* Δ final val loss of row `label` at budget q of series b, and its
 * compute *c; d->n = 0 when the budget lacks the row. */
static int size_delta(R *r, const RBudget *b, int q, const char *label, RepDelta *d, double *c) {
    const RSweep *s = &r->sw[b->sw[q]];
    int j = rep_row_of(s, label);
    *d = (RepDelta){0, NAN, NAN, NAN, NAN};
    *c = 6 * b->params * s->tokens;
    return j >= 0 ? rep_budget_delta(r, s, j, offsetof(RRun, val_loss), d) : 0;
}

/* Contrast k of size group z: Δ against compute, a line per size.  As
 * rep_plot_budget's, the y range fits the means and 0, not the CIs, which
 * at two seeds and a small budget would flatten the rest. */
static int plot_size_contrast(R *r, RSize *z, int k) {
    char *base = rep_fmt(r, "%s-%d", z->fname, k);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = !base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp) ? -1 : 0, blocks = 0;
    const char *bl = r->bud[z->bud[0]].base;
    double ylo = 0, yhi = 0, c;
    RepDelta d;
    for (int m = 0; rc == 0 && m < z->n; m++)
        for (int q = 0; rc == 0 && q < r->bud[z->bud[m]].n; q++) {
            rc = size_delta(r, &r->bud[z->bud[m]], q, z->labels[k], &d, &c);
            if (d.n > 0 && !isnan(d.d)) ylo = fmin(ylo, d.d), yhi = fmax(yhi, d.d);
        }
    if (rc == 0) {
        double span = yhi - ylo > 0 ? yhi - ylo : 0.1;
        rep_gp_head(r, gp, base, "delta final val loss against training compute, a line per model size");
        fprintf(gp, "set yrange [%.10g:%.10g]\n", ylo - 0.15 * span, yhi + 0.15 * span);
        char *title = rep_fmt(r, "%s - %s by model size", z->labels[k], bl);
        if (!title) rc = -1;
        fprintf(gp, "set title ");
        rep_gp_str(gp, title ? title : "");
        free(title);
        fprintf(gp, "\nset logscale x\nset format x '%%.0e'\nset offsets graph 0.05, graph 0.05, graph 0.05, graph "
                    "0.05\nset xlabel 'training compute, 6 x params x tokens (FLOPs, log scale)'\n"
                    "set ylabel 'final val loss - baseline, seed-pair mean'\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nplot");
    }
    for (int m = 0; rc == 0 && m < z->n; m++) {
        const RBudget *b = &r->bud[z->bud[m]];
        int lines = 0;
        for (int q = 0; rc == 0 && q < b->n; q++) {
            rc = size_delta(r, b, q, z->labels[k], &d, &c);
            if (rc || d.n == 0 || isnan(d.d) || !isfinite(c) || c <= 0) continue; /* a log axis */
            if (!lines++)
                fprintf(dat, "# %s - %s, %.0f params: FLOPs, delta, CI low, CI high, seed pairs, tokens\n",
                        z->labels[k], bl, b->params);
            fprintf(dat, "%.10g %.10g %.10g %.10g %d %.10g\n", c, d.d, isnan(d.lo) ? d.d : d.lo,
                    isnan(d.hi) ? d.d : d.hi, d.n, r->sw[b->sw[q]].tokens);
        }
        if (!lines) continue;
        fprintf(dat, "\n\n");
        char *p = rep_fmt_count(r, b->params, "?"), *t = p ? rep_fmt(r, "%s params", p) : NULL;
        free(p);
        if (!t) {
            rc = -1;
            break;
        }
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2:3:4 with yerrorlines");
        rep_gp_series_look(gp, blocks);
        rep_gp_title(gp, t);
        free(t);
        blocks++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    char *code = rc == 0 ? rep_md_code_str(r, z->labels[k]) : NULL;
    char *cap = code ? rep_fmt(r,
                               "Δ final val loss of %s against training compute (6 × params × tokens FLOPs, log x; "
                               "one line per model size, one point per budget; error bars: 95%% CI, cut at the edge "
                               "where they reach past the y range, which fits the means; dashed: no effect)",
                               code)
                     : NULL;
    if (rc == 0 && !cap) rc = -1;
    rc = size_done(r, z, rc, blocks, dat, gp, datp, gpp, base, cap ? cap : "");
    free(cap);
    free(code);
    free(base);
    return rc;
}

int rep_plot_size(R *r, RSize *z) {
    for (int k = 0; k < z->nlab; k++)
        if (plot_size_contrast(r, z, k)) return -1;
    return 0;
}
