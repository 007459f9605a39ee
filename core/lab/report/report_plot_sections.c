/*
 * report_plot_sections.c — `gated report`: the plots of the sections a
 * sweep has data for (report_sections.c): per-head F-Attn, perplexity
 * against context length, quantization, dropped heads, Bigram-Backcopy;
 * and the plot of a budget series (report_budget.c).  What each draws is
 * listed at the top of report_plot.c.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Viridis (matplotlib's default colour map) at 9 even steps: lightness
 * rises steadily from dark violet to yellow, so equal steps in value look
 * like equal steps in colour, and the map stays ordered in grey and for
 * colour-blind readers (a rainbow has neither). */
#define GP_VIRIDIS                                                                                                   \
    "set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', "           \
    "6 '#5ec962', 7 '#addc30', 8 '#fde725')"

/* Per-head F-Attn of every row that has it: one panel per row, side by
 * side, on one colour scale 0..1 (data: one matrix block per panel, rows
 * layers, columns heads). */
int rep_plot_heads(R *r, RSweep *s) {
    int panels = 0;
    for (int k = 0; k < s->nvars; k++) panels += s->vars[k].heads.nl > 0;
    if (!panels) return 0;
    char *base = rep_fmt(r, "%s-fattn-heads", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = base ? rep_plot_open(r, base, &dat, &gp, &datp, &gpp) : -1;
    if (rc == 0) {
        char what[160];
        snprintf(what, sizeof what, "%s per layer and query head, last step, mean over seeds; one panel per row",
                 rep_head_measure(s));
        rep_gp_head(r, gp, base, what);
        fprintf(gp, "unset grid\nunset key\nset title ");
        rep_gp_str(gp, s->name);
        /* more than 4 panels: labels alternate between two heights so long ones do not overlap */
        int stagger = panels > 4;
        fprintf(gp, " offset 0,%d\nset cbrange [0:1]\nset cblabel '%s'\n"
                    "%s\nset xlabel 'query head (one panel per row)'\nset ylabel 'layer'\n"
                    "set ytics 1\nset xtics () scale 0\n%s",
                stagger ? 2 : 1,
                s->sink_bb ? "share of attention on BOS (F-Attn; Bigram-Backcopy: from other queries)"
                           : "F-Attn (share of attention on position 0)",
                GP_VIRIDIS, stagger ? "set tmargin 5\n" : "");
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
            rep_gp_str(gp, v->label);
            fprintf(gp, " at %g, graph %g center\n", x0 + (m->nh - 1) / 2.0, stagger && i % 2 == 0 ? 1.08 : 1.03);
            x0 += m->nh + 1;
            if (m->nl > nl) nl = m->nl;
        }
        fprintf(gp, "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nplot", x0 - 1.5, nl - 0.5);
        x0 = i = 0;
        for (int k = 0; k < s->nvars; k++) {
            const HeadMap *m = &s->vars[k].heads;
            if (!m->nl) continue;
            char how[64];
            snprintf(how, sizeof how, "matrix using ($1+%d):2:3 with image", x0);
            rep_gp_item(gp, !i, base, i, how);
            x0 += m->nh + 1;
            i++;
        }
        fprintf(gp, "\n");
        rep_gp_tail(r, gp, base);
    }
    rc = rep_plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                   "%s per layer and query head (last step, mean over seeds; one panel per row, colour scale 0 to 1)",
                   rep_head_measure(s));
    free(base);
    return rc;
}

/* Validation PPL against context length: a line per (row, series), colour
 * by row, dash type by series, error bars the std over seeds. */
int rep_plot_ppl(R *r, RSweep *s) {
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    char *base = rep_fmt(r, "%s-ppl-vs-length", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0;
    if (!lens || !buf)
        rc = rep_oom(r);
    else if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    if (rc == 0) {
        rep_gp_head(r, gp, base, "validation perplexity against context length, mean +- std over seeds");
        fprintf(gp, "set title ");
        rep_gp_str(gp, s->name);
        fprintf(gp, "\nset logscale x 2\nset logscale y\nset format x '%%g'\nset format y '%%g'\n"
                    "set autoscale yfix\nset offsets 0, 0, graph 0.05, graph 0.05\n"
                    "set xlabel 'context length (tokens, log2 scale)'\n"
                    "set ylabel 'validation PPL (log scale), mean +- std over seeds'\n");
        if (!isnan(s->train_len))
            fprintf(gp, "set arrow from %g, graph 0 to %g, graph 1 nohead dt 3\n", s->train_len, s->train_len);
        /* the y ticks from the range of mean +- std (the mean where that would not be positive) */
        double lo = INFINITY, hi = -INFINITY;
        for (int j = 0; j < s->neser; j++) {
            int nl = rep_eval_lens(s, j, 0, lens);
            for (int k = 0; k < s->nvars; k++)
                for (int q = 0; q < nl; q++) {
                    double m, sd;
                    if (!rep_eval_stats(s, k, j, 0, lens[q], buf, &m, &sd) || !isfinite(m)) continue;
                    if (isnan(sd)) sd = 0;
                    lo = fmin(lo, m - sd > 0 ? m - sd : m);
                    hi = fmax(hi, m + sd);
                }
        }
        rep_gp_log_tics(gp, "y", lo, hi);
        fprintf(gp, "plot");
    }
    for (int j = 0; rc == 0 && j < s->neser; j++) {
        int nl = rep_eval_lens(s, j, 0, lens);
        for (int k = 0; rc == 0 && k < s->nvars; k++) {
            int lines = 0;
            for (int q = 0; q < nl; q++) {
                double m, sd;
                int n = rep_eval_stats(s, k, j, 0, lens[q], buf, &m, &sd);
                if (!n) continue;
                if (!lines++)
                    fprintf(dat, "# %s, %s: context length, mean val PPL, std, runs\n", s->vars[k].label,
                            s->eser[j].name);
                fprintf(dat, "%lld %.10g %.10g %d\n", lens[q], m, isnan(sd) ? 0 : sd, n);
            }
            if (!lines) continue;
            fprintf(dat, "\n\n");
            char *t = rep_fmt(r, "%s (%s)", s->vars[k].label, s->eser[j].name);
            if (!t) {
                rc = -1;
                break;
            }
            /* colour by row, dash type by series; the point type by row too, for rows past the colours */
            rep_gp_item(gp, !blocks, base, blocks, "using 1:2:3 with yerrorlines");
            rep_gp_look(gp, k, j, k);
            rep_gp_title(gp, t);
            free(t);
            blocks++;
        }
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "Validation perplexity against context length (log-log; one colour per row, one dash type per RoPE "
                   "scaling; error bars: std over seeds)");
    free(base);
    free(lens);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* quantization and dropped heads (report_infer.c)                     */
/* ------------------------------------------------------------------ */

/* ΔPPL% per quantization scheme (x: the schemes, by name) and row (one
 * colour and point type per row, offset a little along x), mean ± std
 * over the row's runs; a dashed zero line. */
static int plot_quant(R *r, RSweep *s) {
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    char *base = rep_fmt(r, "%s-quant", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0, nrows = 0;
    if (!buf)
        rc = rep_oom(r);
    else if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        double m, sd;
        nrows += rep_infer_stats(s, k, INF_QUANT, "float", NAN, INF_PPL, buf, &m, &sd) > 0;
    }
    if (rc == 0) {
        rep_gp_head(r, gp, base, "PPL increase under each quantization scheme, % of the float PPL, mean +- std over seeds");
        fprintf(gp, "set title ");
        rep_gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel 'quantization scheme'\n"
                    "set ylabel 'PPL - float PPL (%% of float PPL), mean +- std over seeds'\n"
                    "set xrange [-0.5:%g]\nset offsets 0, 0, graph 0.05, graph 0.05\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nset xtics (",
                s->nqs - 0.5);
        for (int q = 0; q < s->nqs; q++) {
            fprintf(gp, "%s", q ? ", " : "");
            rep_gp_str(gp, s->qs[q].name);
            fprintf(gp, " %d", q);
        }
        fprintf(gp, ")\nplot");
    }
    for (int k = 0, row = 0; rc == 0 && k < s->nvars; k++) {
        int lines = 0;
        double shift = nrows > 1 ? 0.3 * ((double)row / (nrows - 1) - 0.5) : 0;
        for (int q = 0; q < s->nqs; q++) {
            double m, sd;
            int n = rep_infer_stats(s, k, INF_QUANT, s->qs[q].name, NAN, INF_DPCT, buf, &m, &sd);
            if (!n) continue;
            if (!lines++)
                fprintf(dat, "# %s: scheme index (offset), mean dPPL %%, std, runs, scheme index\n", s->vars[k].label);
            fprintf(dat, "%.10g %.10g %.10g %d %d\n", q + shift, m, isnan(sd) ? 0 : sd, n, q);
        }
        if (!lines) continue;
        row++;
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2:3 with yerrorbars ps 1.5 lw 2");
        rep_gp_series_look(gp, blocks);
        rep_gp_title(gp, s->vars[k].label);
        blocks++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "PPL increase under simulated quantization (ΔPPL in %% of each run's float PPL, per scheme and row; "
                   "error bars: std over seeds; the rows are offset slightly along x; dashed: no change)");
    free(base);
    free(buf);
    return rc;
}

/* Scheme q: each run's ΔPPL% against its M-Act (one point per run, colour
 * and point type by row); log x when M-Act spans a decade or more. */
static int plot_quant_mact(R *r, RSweep *s, int q) {
    const InferScheme *qs = &s->qs[q];
    char *nm = rep_safe_name(r, qs->name);
    char *base = nm ? rep_fmt(r, "%s-quant-mact-%d-%s", s->fname, q, nm) : NULL;
    free(nm);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = !base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp) ? -1 : 0, blocks = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->nruns; i++) {
        double d = rep_infer_value(s, i, INF_QUANT, qs->name, NAN, INF_DPCT), m = s->runs[i].m_act;
        if (isfinite(d) && isfinite(m)) lo = fmin(lo, m), hi = fmax(hi, m);
    }
    int logx = lo > 0 && hi >= 10 * lo;
    if (rc == 0) {
        rep_gp_head(r, gp, base, "each run's PPL increase under a quantization scheme against its M-Act");
        fprintf(gp, "set title ");
        const RepCorr *c = &qs->corr;
        char *t = isnan(c->r) ? rep_fmt(r, "%s: %s (n = %d)", s->name, qs->name, c->n)
                              : rep_fmt(r, "%s: %s (Pearson r = %+.3f, Spearman rho = %+.3f, n = %d)", s->name,
                                        qs->name, c->r, c->rho, c->n);
        if (!t) rc = -1;
        if (t) rep_gp_str(gp, t);
        free(t);
        fprintf(gp, "\nset xlabel 'M-Act (max |h| of a layer output, last evaluation%s)'\n"
                    "set ylabel ",
                logx ? "; log scale" : "");
        t = rep_fmt(r, "PPL - float PPL under %s (%% of float PPL)", qs->name);
        if (!t) rc = -1;
        if (t) rep_gp_str(gp, t);
        free(t);
        fprintf(gp, "\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\n");
        if (logx) {
            fprintf(gp, "set logscale x\n");
            rep_gp_log_tics(gp, "x", lo, hi);
        }
        fprintf(gp, "plot");
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        int lines = 0;
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            double d = rep_infer_value(s, v->runs[i], INF_QUANT, qs->name, NAN, INF_DPCT);
            if (!isfinite(d) || !isfinite(u->m_act)) continue;
            if (!lines++) fprintf(dat, "# %s: M-Act, dPPL %%, seed\n", v->label);
            fprintf(dat, "%.10g %.10g %lld\n", u->m_act, d, u->seed);
        }
        if (!lines) continue;
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, base, blocks, "using 1:2 with points ps 1.5 lw 2");
        rep_gp_series_look(gp, k);
        rep_gp_title(gp, v->label);
        blocks++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    char *code = rc == 0 ? rep_md_code_str(r, qs->name) : NULL;
    if (!code) rc = -1;
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "ΔPPL under %s (%% of the float PPL) against M-Act, one point per run, one colour per row%s",
                   code ? code : "", logx ? " (log x)" : "");
    free(code);
    free(base);
    return rc;
}

/* The quantization plots: ΔPPL% per scheme and row, then each scheme's
 * ΔPPL% against M-Act. */
int rep_plot_quant(R *r, RSweep *s) {
    if (plot_quant(r, s)) return -1;
    for (int q = 0; q < s->nqs; q++)
        if (plot_quant_mact(r, s, q)) return -1;
    return 0;
}

/* The curves of the drop plot: a rule at tau (matched to the gate) or at
 * a fixed fraction. */
static const struct {
    int kind;
    const char *rule, *name;
} DROP_CURVES[] = {
    {INF_TAU, "gate", "gate"},
    {INF_TAU, "random", "random (matched)"},
    {INF_TAU, "entropy", "entropy (matched)"},
    {INF_FRAC, "random", "random (fixed F)"},
    {INF_FRAC, "entropy", "entropy (fixed F)"},
};
#define NDROP_CURVES ((int)(sizeof DROP_CURVES / sizeof DROP_CURVES[0]))

/* PPL against the share of (token, head) pairs dropped: per row a curve
 * per rule (DROP_CURVES: colour by row, dash and point type by rule),
 * each point the mean over the row's runs at one tau or F (x: the mean
 * share dropped, error bars the std of PPL), from the float model at 0
 * when the row has the reference; log y. */
int rep_plot_drop(R *r, RSweep *s) {
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    char *base = rep_fmt(r, "%s-drop", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0;
    if (!buf)
        rc = rep_oom(r);
    else if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; rc == 0 && i < s->ninf; i++)
        if (s->inf[i].kind != INF_QUANT || strcmp(s->inf[i].name, "float") == 0) {
            lo = fmin(lo, s->inf[i].x[INF_PPL]);
            hi = fmax(hi, s->inf[i].x[INF_PPL]);
        }
    if (rc == 0) {
        rep_gp_head(r, gp, base, "validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds");
        fprintf(gp, "set title ");
        rep_gp_str(gp, s->name);
        fprintf(gp, "\nset logscale y\nset format y '%%g'\nset autoscale yfix\n"
                    "set offsets 0, 0, graph 0.05, graph 0.05\nset xrange [-2:*]\n"
                    "set xlabel '(token, head) pairs dropped (%%)'\n"
                    "set ylabel 'validation PPL (log scale), mean +- std over seeds'\n");
        rep_gp_log_tics(gp, "y", lo, hi);
        fprintf(gp, "plot");
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        double fm, fsd;
        int nf = rep_infer_stats(s, k, INF_QUANT, "float", NAN, INF_PPL, buf, &fm, &fsd);
        for (int c = 0; rc == 0 && c < NDROP_CURVES; c++) {
            int kind = DROP_CURVES[c].kind, nv = kind == INF_TAU ? s->ntau : s->nfrac, lines = 0;
            for (int j = 0; j < nv; j++) {
                double v = kind == INF_TAU ? s->taus[j] : s->fracs[j], m, sd, dm, dsd;
                int n = rep_infer_stats(s, k, kind, DROP_CURVES[c].rule, v, INF_PPL, buf, &m, &sd);
                int nd = rep_infer_stats(s, k, kind, DROP_CURVES[c].rule, v, INF_DROP, buf, &dm, &dsd);
                if (!n || !nd) continue;
                if (!lines++) {
                    fprintf(dat, "# %s, %s: pairs dropped (%%, mean), mean PPL, std, runs, %s\n", s->vars[k].label,
                            DROP_CURVES[c].name, kind == INF_TAU ? "tau" : "F");
                    if (nf) fprintf(dat, "0 %.10g %.10g %d float\n", fm, isnan(fsd) ? 0 : fsd, nf);
                }
                fprintf(dat, "%.10g %.10g %.10g %d %.10g\n", 100 * dm, m, isnan(sd) ? 0 : sd, n, v);
            }
            if (!lines) continue;
            fprintf(dat, "\n\n");
            char *t = rep_fmt(r, "%s: %s", s->vars[k].label, DROP_CURVES[c].name);
            if (!t) {
                rc = -1;
                break;
            }
            rep_gp_item(gp, !blocks, base, blocks, "using 1:2:3 with yerrorlines");
            rep_gp_look(gp, k, c, c); /* colour by row; dash and point type by rule */
            rep_gp_title(gp, t);
            free(t);
            blocks++;
        }
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "Validation PPL against the share of (token, head) pairs dropped (log y; one colour per row; gate "
                   "threshold solid, its matched random and entropy controls dashed and dotted, fixed-fraction random "
                   "and entropy dash-dotted; curves start at the float model; error bars: std over seeds)");
    free(base);
    free(buf);
    return rc;
}

/* Budget series b: Δ final val loss of each contrast against tokens per
 * run (log x), error bars its 95% CI (a budget with one seed pair: the
 * point alone), a dashed line at 0; the contrasts are offset by a few per
 * cent along x so that their bars do not hide one another.  The y range
 * fits the means (and 0), not the intervals: with 2 seeds a small budget's
 * CI spans a nat or more and would flatten every larger budget's
 * differences onto the zero line; an interval past the range is cut at
 * its edge (the caption says so; the numbers are in the tables). */
int rep_plot_budget(R *r, RBudget *b) {
    const RSweep *s0 = &r->sw[b->sw[0]];
    int nc = b->nlab, blocks = 0;
    RepDelta *d = calloc((size_t)nc * (size_t)b->n + 1, sizeof *d);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = d ? 0 : rep_oom(r);
    double ylo = 0, yhi = 0; /* 0 is always in range: the zero line */
    for (int k = 0; rc == 0 && k < nc; k++)
        for (int m = 0; rc == 0 && m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            int j = rep_row_of(s, b->labels[k]);
            RepDelta *x = &d[k * b->n + m];
            *x = (RepDelta){0, NAN, NAN, NAN, NAN};
            if (strcmp(b->labels[k], b->base) == 0 || j < 0) continue;
            rc = rep_budget_delta(r, s, j, offsetof(RRun, val_loss), x);
            if (rc == 0 && x->n > 0 && !isnan(x->d)) ylo = fmin(ylo, x->d), yhi = fmax(yhi, x->d);
        }
    if (rc == 0) rc = rep_plot_open(r, b->fname, &dat, &gp, &datp, &gpp);
    if (rc == 0) {
        const RSweep *sl = &r->sw[b->sw[b->n - 1]];
        char *title = rep_fmt(r, "%s ... %s: %s", s0->name, sl->name, "row - baseline at each budget");
        if (!title) rc = -1;
        rep_gp_head(r, gp, b->fname, "final val loss of each row minus the baseline's, against tokens per run");
        fprintf(gp, "set title ");
        rep_gp_str(gp, title ? title : "");
        free(title);
        double span = yhi - ylo > 0 ? yhi - ylo : 0.1;
        int bytes = 1; /* the text corpora are bytes; Bigram-Backcopy's tokens are not */
        for (int m = 0; m < b->n; m++) bytes &= !r->sw[b->sw[m]].has_bb;
        fprintf(gp, "\nset logscale x\nset xrange [%.10g:%.10g]\nset yrange [%.10g:%.10g]\n"
                    "set xlabel 'tokens per run (log scale)'\n"
                    "set ylabel 'final val loss - baseline (%s), seed-pair mean'\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nset xtics (",
                r->sw[b->sw[0]].tokens / 1.5, sl->tokens * 1.5, ylo - 0.15 * span, yhi + 0.15 * span,
                bytes ? "nats/byte" : "nats/token");
        for (int m = 0; m < b->n; m++) {
            double t = r->sw[b->sw[m]].tokens;
            char *lab = rep_fmt_count(r, t, "?");
            if (!lab) {
                rc = -1;
                break;
            }
            fprintf(gp, "%s", m ? ", " : "");
            rep_gp_str(gp, lab);
            fprintf(gp, " %.10g", t);
            free(lab);
        }
        fprintf(gp, ")\nplot");
    }
    int ndata = 0; /* contrasts with a point: the offsets are centred on them */
    for (int k = 0; k < nc && d; k++)
        for (int m = 0; m < b->n; m++)
            if (d[k * b->n + m].n > 0) {
                ndata++;
                break;
            }
    for (int k = 0; rc == 0 && k < nc; k++) {
        int lines = 0;
        double shift = 1 + 0.03 * (blocks - (ndata - 1) / 2.0);
        for (int m = 0; m < b->n; m++) {
            const RepDelta *x = &d[k * b->n + m];
            if (x->n == 0 || isnan(x->d)) continue;
            if (!lines++)
                fprintf(dat, "# %s - %s: tokens (offset), delta, CI low, CI high, seed pairs, tokens\n",
                        b->labels[k], b->base);
            double t = r->sw[b->sw[m]].tokens;
            fprintf(dat, "%.10g %.10g %.10g %.10g %d %.10g\n", t * shift, x->d, isnan(x->lo) ? x->d : x->lo,
                    isnan(x->hi) ? x->d : x->hi, x->n, t);
        }
        if (!lines) continue;
        fprintf(dat, "\n\n");
        rep_gp_item(gp, !blocks, b->fname, blocks, "using 1:2:3:4 with yerrorlines");
        rep_gp_series_look(gp, blocks);
        rep_gp_title(gp, b->labels[k]);
        blocks++;
    }
    if (rc == 0) rep_gp_end(r, gp, b->fname, blocks);
    rc = rep_plot_done(r, NULL, b, rc, blocks, dat, gp, datp, gpp, b->fname,
                   "Δ final val loss against the training budget (row minus the baseline of the same budget, paired "
                   "by seed; log x; error bars: 95%% CI, cut at the edge where they reach past the y range, which "
                   "fits the means; dashed: no effect; the rows are offset slightly along x)");
    free(d);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Bigram-Backcopy                                                     */
/* ------------------------------------------------------------------ */

/* A plot of per-step probes against step (rep_plot_steps): two lines a
 * row, solid (q = 0) and dashed (q = 1). */
int rep_plot_steps(R *r, RSweep *s, const StepPlot *p) {
    int ns = 2 * s->nvars;
    Pts *all = calloc((size_t)ns + 1, sizeof *all);
    int rc = all ? 0 : rep_oom(r);
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        for (int i = 0; rc == 0 && i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (!rep_is_finished(u) || !p->has(u) || (p->head && u->bb_l < 0)) continue;
            for (int q = 0; rc == 0 && q < 2; q++) {
                char *ctx = p->head ? rep_fmt(r, "layer=%d,head=%d", u->bb_l, u->bb_h)
                                    : rep_dup(r, p->ctxs[q] ? p->ctxs[q] : "");
                rc = ctx ? rep_q_steps_ctx(r, u->run_id, p->keys[q], ctx, &all[2 * k + q]) : -1;
                free(ctx);
            }
        }
    }
    char *base = rc == 0 ? rep_fmt(r, "%s-%s", s->fname, p->suffix) : NULL;
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (rc == 0 && (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp))) rc = -1;
    int blocks = 0, multi = 0;
    for (int j = 0; rc == 0 && j < ns; j++) {
        if (!all[j].n) continue;
        fprintf(dat, "# %s, %s: step, mean, std, runs\n", s->vars[j / 2].label, p->types[j % 2]);
        rep_pts_write(&all[j], dat, NULL, NULL, &multi);
        fprintf(dat, "\n\n");
        blocks++;
    }
    if (rc == 0) {
        rep_gp_head(r, gp, base, p->what);
        fprintf(gp, "set title ");
        rep_gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel 'step'\n");
        if (p->yrange) fprintf(gp, "set yrange %s\n", p->yrange);
        fprintf(gp, "set ylabel ");
        char *yl = multi && blocks <= REP_MAX_BANDS ? rep_fmt(r, "%s (band: +- std)", p->ylabel) : rep_dup(r, p->ylabel);
        if (!yl) rc = -1;
        if (yl) rep_gp_str(gp, yl);
        free(yl);
        fprintf(gp, "\nplot");
    }
    int bands = multi && blocks <= REP_MAX_BANDS;
    for (int j = 0, b = 0; rc == 0 && bands && j < ns; j++)
        if (all[j].n) rep_gp_band(gp, base, b, j / 2), b++;
    for (int j = 0, b = 0; rc == 0 && j < ns; j++) {
        if (!all[j].n) continue;
        rep_gp_item(gp, !b && !bands, base, b, "using 1:2 with linespoints");
        rep_gp_look(gp, j / 2, j % 2, j / 2); /* colour by row; dash type by line: q = 0 solid, q = 1 dashed */
        char *t = rep_fmt(r, "%s (%s)", s->vars[j / 2].label, p->types[j % 2]);
        if (!t) {
            rc = -1;
            break;
        }
        rep_gp_title(gp, t);
        free(t);
        b++;
    }
    if (rc == 0) rep_gp_end(r, gp, base, blocks);
    for (int j = 0; all && j < ns; j++) free(all[j].p);
    free(all);
    rc = rep_plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base, "%s (mean over seeds%s)", p->caption,
                   !multi  ? ""
                   : bands ? "; band: +- std"
                           : "; no std bands past " REP_MAX_BANDS_TEXT " lines: the std is in the data file");
    free(base);
    return rc;
}

/* Row k's gate-score histograms by query type (bb_gate_other,
 * bb_gate_trigger; per layer, last step), summed over its finished runs:
 * one plot, a line per layer and type, each a share of the layer's scores
 * of that type; colour by layer, other queries solid, trigger queries
 * dashed.  Nothing when the row has none. */
static int plot_bb_gate(R *r, RSweep *s, int k) {
    const RVar *v = &s->vars[k];
    Hists h[2] = {{.key = REP_BB_GATE_KEYS[0]}, {.key = REP_BB_GATE_KEYS[1]}};
    static const char *const types[2] = {"other", "trigger"};
    int rc = 0;
    for (int i = 0; rc == 0 && i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        for (int q = 0; rc == 0 && q < 2; q++)
            if (rep_is_finished(u)) rc = rep_hist_load_run(r, &h[q], u);
    }
    char *base = NULL, *code = NULL;
    if (rc == 0 && h[0].n + h[1].n > 0) {
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        int runs_with = h[0].runs_with > h[1].runs_with ? h[0].runs_with : h[1].runs_with;
        char *lab = rep_safe_name(r, v->label);
        base = lab ? rep_fmt(r, "%s-bb-gate-%d-%s", s->fname, k, lab) : NULL;
        free(lab);
        if (!base || rep_plot_open(r, base, &dat, &gp, &datp, &gpp)) rc = -1;
        if (rc == 0) {
            rep_gp_head(r, gp, base, "gate-score histograms by query type (Bigram-Backcopy), per layer, last step, "
                                 "counts summed over seeds");
            fprintf(gp, "set title ");
            char *t = rep_fmt(r, "%s: gate scores of %s by query type (last step, %d run%s summed)", s->name,
                              v->label, runs_with, runs_with == 1 ? "" : "s");
            if (!t) rc = -1;
            if (t) rep_gp_str(gp, t);
            free(t);
            double lo, hi;
            rep_hists_range(h, 2, &lo, &hi);
            fprintf(gp, "\nset xlabel 'gate score'\nset ylabel 'share of the layer''s scores of the type'\n"
                        "set xrange [%.10g:%.10g]\nplot",
                    lo, hi);
        }
        for (int q = 0, b = 0; rc == 0 && q < 2; q++) {
            rep_hists_sort(&h[q]);
            for (int j = 0; j < h[q].n; j++, b++) {
                const HistAcc *a = &h[q].a[j];
                fprintf(dat, "# layer %ld, %s queries (%d runs): bin centre, share, count\n", a->layer, types[q],
                        a->nruns);
                rep_hist_write(dat, a);
                rep_gp_item(gp, !b, base, b, "using 1:2 with histeps lw 2");
                rep_gp_look(gp, (int)a->layer, q, -1); /* colour by layer, dash type by query type */
                fprintf(gp, " title 'layer %ld, %s'", a->layer, types[q]);
            }
        }
        if (rc == 0) {
            fprintf(gp, "\n");
            rep_gp_tail(r, gp, base);
        }
        code = rc == 0 ? rep_md_code_str(r, v->label) : NULL;
        if (!code) rc = -1;
        rc = rep_plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                       "Gate scores of %s by query type, Bigram-Backcopy (per layer, last step, %d run%s summed; each "
                       "line a share of the layer's scores of that type; other queries solid, trigger queries dashed)",
                       code ? code : "", runs_with, runs_with == 1 ? "" : "s");
    }
    free(code);
    free(base);
    for (int q = 0; q < 2; q++) {
        for (int j = 0; j < h[q].n; j++) free(h[q].a[j].counts);
        free(h[q].a);
    }
    return rc;
}

static int run_has_bb(const RRun *u) { return u->has_bb; }

/* The Bigram-Backcopy plots of sweep s: attention on BOS of the BB head
 * and the two losses against step, and each gated row's gate-score
 * histograms by query type. */
int rep_plot_bb(R *r, RSweep *s) {
    static const StepPlot bos = {
        "bb-bos", REP_BB_BOS_KEYS, {NULL, NULL}, {"other queries", "trigger queries"}, 1, run_has_bb,
        "attention on BOS of the BB head by query type against step, mean +- std over seeds",
        "attention on BOS (BB head)", "[0:1]",
        "Attention on BOS against step, Bigram-Backcopy: each run's BB head (its query head with the largest "
        "attention on BOS from other queries at the last step); other queries solid, trigger queries dashed, one "
        "colour per row"};
    static const StepPlot loss = {
        "bb-loss", REP_BB_LOSS_KEYS, {NULL, NULL}, {"other positions", "trigger positions"}, 0, run_has_bb,
        "validation loss on trigger and on other positions against step, mean +- std over seeds",
        "validation loss (nats)", NULL,
        "Validation loss on trigger and on other positions against step, Bigram-Backcopy: other positions solid, "
        "trigger positions dashed, one colour per row"};
    if (rep_plot_steps(r, s, &bos) || rep_plot_steps(r, s, &loss)) return -1;
    for (int k = 0; k < s->nvars; k++)
        if (plot_bb_gate(r, s, k)) return -1;
    return 0;
}
