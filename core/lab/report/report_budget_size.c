/*
 * report_budget_size.c — `gated report`: the effect by model size and
 * budget (report.h), across budget series (report_budget.c).
 *
 * A series trains one model; a second model size is a series of its own
 * (its config differs in model.*).  Two series are one config at two
 * sizes when
 *   - their baseline rows have the same label, and their baseline runs'
 *     configs are equal but for the keys a budget may change (train.seed,
 *     train.steps, train.eval_every, train.checkpoint_every) and the size
 *     keys model.d_model, model.n_head, model.n_kv_head and model.d_ff
 *     (RRun.skey);
 *   - every row label they share has the same skey in both (where both
 *     have a config), so a contrast means the same change at both sizes;
 *   - their baselines' parameter counts (summary params) differ.
 * Series are taken in order; each joins the first group with all of whose
 * series it agrees, else starts one; a group needs two series or more and
 * a contrast (a non-baseline label every series has); it is ordered by
 * parameters.
 *
 * Its table: a row per contrast (row − baseline), a column per (series,
 * budget): the baseline's parameters, tokens per run, and tokens per
 * parameter; each cell the paired Δ final val loss [95% CI] (pairs) of
 * that budget, as the series' own Δ table.  Its plots (report_budget_plot.c)
 * draw each contrast's Δ against training compute, 6 × parameters ×
 * tokens FLOPs (the usual estimate of a dense transformer's forward and
 * backward), a line per size.  md: a subsection of the budget section;
 * tex: budget.tex; csv: DIR/budget-size.csv.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The skey of row `label` in series b: of its first run that has one. */
static const char *row_skey(const R *r, const RBudget *b, const char *label) {
    for (int m = 0; m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        int j = rep_row_of(s, label);
        for (int i = 0; j >= 0 && i < s->vars[j].nruns; i++)
            if (s->runs[s->vars[j].runs[i]].skey) return s->runs[s->vars[j].runs[i]].skey;
    }
    return NULL;
}

/* Whether series a and b are one config at two sizes. */
static int sizes_agree(const R *r, const RBudget *a, const RBudget *b) {
    if (!a->skey || !b->skey || strcmp(a->skey, b->skey) != 0 || strcmp(a->base, b->base) != 0 ||
        isnan(a->params) || isnan(b->params) || a->params == b->params)
        return 0;
    for (int k = 0; k < a->nlab; k++) {
        const char *ka = row_skey(r, a, a->labels[k]), *kb = row_skey(r, b, a->labels[k]);
        if (ka && kb && strcmp(ka, kb) != 0) return 0;
    }
    return 1;
}

/* Whether series b has a row labelled label. */
static int has_label(const RBudget *b, const char *label) {
    for (int k = 0; k < b->nlab; k++)
        if (strcmp(b->labels[k], label) == 0) return 1;
    return 0;
}

static double series_params(const R *r, int q) { return r->bud[q].params; }

/* Group z's members by params, its contrasts, name and shown flag; 0, or
 * -1 when out of memory. */
static int size_finish(R *r, RSize *z) {
    rep_sort_by(r, z->bud, z->n, series_params);
    const RBudget *b0 = &r->bud[z->bud[0]];
    for (int k = 0; k < b0->nlab; k++) {
        int all = strcmp(b0->labels[k], b0->base) != 0;
        for (int m = 1; m < z->n && all; m++) all = has_label(&r->bud[z->bud[m]], b0->labels[k]);
        if (!all) continue;
        if (rep_grow(r, (void **)&z->labels, &z->lab_cap, z->nlab + 1, sizeof *z->labels)) return -1;
        z->labels[z->nlab++] = b0->labels[k];
    }
    for (int m = 0; m < z->n; m++) z->shown |= r->bud[z->bud[m]].shown;
    z->fname = rep_fmt(r, "budget-size-%s", r->sw[b0->sw[0]].fname);
    return z->fname ? 0 : -1;
}

static int series_agree(const R *r, int a, int b) { return sizes_agree(r, &r->bud[a], &r->bud[b]); }

int rep_size_find(R *r) {
    RepGroup *g;
    int ng;
    if (rep_first_fit(r, r->nbud, NULL, series_agree, &g, &ng)) return -1;
    int rc = ng && !(r->size = calloc((size_t)ng, sizeof *r->size)) ? rep_oom(r) : 0;
    for (int q = 0; q < ng; q++) {
        if (rc) {
            free(g[q].idx);
            continue;
        }
        RSize *z = &r->size[r->nsize];
        *z = (RSize){.bud = g[q].idx, .n = g[q].n, .cap = g[q].cap};
        r->nsize++;
        rc = size_finish(r, z);
        if (rc == 0 && z->nlab == 0) { /* no contrast every size has */
            free(z->bud), free(z->labels), free(z->fname);
            r->nsize--;
        }
    }
    r->size_cap = ng;
    free(g);
    return rc;
}

void rep_size_free(R *r) {
    for (int g = 0; g < r->nsize; g++) {
        RSize *z = &r->size[g];
        rep_plots_free(z->plots, z->nplots);
        free(z->bud);
        free(z->labels);
        free(z->fname);
    }
    free(r->size);
    r->size = NULL;
    r->nsize = 0;
}

int rep_size_shown(const R *r) {
    for (int g = 0; g < r->nsize; g++)
        if (r->size[g].shown) return 1;
    return 0;
}

/* The header: per member series and budget, "SWEEP: PARAMS params, TOKENS
 * tokens, T tok/param". */
static int size_head(R *r, const RSize *z, Tab *t) {
    int ncol = 1;
    for (int m = 0; m < z->n; m++) ncol += r->bud[z->bud[m]].n;
    int rc = rep_tab_init(r, t, ncol) || rep_tab_put(t, 0, 0, rep_dup(r, "row - baseline"));
    for (int m = 0, c = 1; rc == 0 && m < z->n; m++) {
        const RBudget *b = &r->bud[z->bud[m]];
        char *p = rep_fmt_count(r, b->params, "?");
        for (int q = 0; rc == 0 && p && q < b->n; q++, c++) {
            const RSweep *s = &r->sw[b->sw[q]];
            char *tok = rep_fmt_count(r, s->tokens, "?");
            rc = !tok || rep_tab_put(t, 0, c,
                                     rep_fmt(r, "%s: %s params, %s tokens, %.1f tok/param", s->name, p, tok,
                                             s->tokens / b->params));
            free(tok);
        }
        if (!p) rc = -1;
        free(p);
    }
    return rc ? -1 : 0;
}

/* Group z's table: Δ final val loss per contrast and (series, budget). */
static int size_tab(R *r, const RSize *z, const RepStyle *y, Tab *t) {
    int rc = size_head(r, z, t);
    for (int k = 0; rc == 0 && k < z->nlab; k++) {
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, z->labels[k]));
        for (int m = 0, c = 1; rc == 0 && m < z->n; m++) {
            const RBudget *b = &r->bud[z->bud[m]];
            for (int q = 0; rc == 0 && q < b->n; q++, c++) {
                const RSweep *s = &r->sw[b->sw[q]];
                int j = rep_row_of(s, z->labels[k]);
                RepDelta d = {0, NAN, NAN, NAN, NAN};
                rc = (j >= 0 && rep_budget_delta(r, s, j, offsetof(RRun, val_loss), &d)) ||
                     rep_tab_put(t, i, c, rep_delta_cell(r, &d, y));
            }
        }
    }
    return rc ? -1 : 0;
}

int rep_size_tables(R *r, FILE *f, const RepStyle *y) {
    if (!rep_size_shown(r)) return 0;
    fputs(y->md ? "### Δ by model size and budget\n\n"
                  "Series that train one config at several model sizes (equal configs but for the budget's keys and "
                  "`model.d_model`, `model.n_head`, `model.n_kv_head`, `model.d_ff`): per contrast, the paired Δ "
                  "final val loss [95% CI] (pairs) of each size and budget, against the baseline of the same size "
                  "and budget. Params: summary `params` of the size's baseline runs; tok/param: tokens per run over "
                  "it. The plots draw Δ against training compute, 6 × params × tokens FLOPs.\n\n"
                : "% Delta final val loss by model size and budget: series equal but for the budget's keys and "
                  "model.d_model, n_head, n_kv_head, d_ff; paired by seed within each size and budget; params: "
                  "summary params of the baseline runs\n",
          f);
    for (int g = 0; g < r->nsize; g++) {
        RSize *z = &r->size[g];
        if (!z->shown) continue;
        fputs(y->md ? "Sizes: " : "% sizes: ", f);
        for (int m = 0; m < z->n; m++) {
            const RBudget *b = &r->bud[z->bud[m]];
            fputs(m ? "; " : "", f);
            for (int q = 0; q < b->n; q++) {
                fputs(q ? ", " : "", f);
                rep_cap_label(f, y->md, r->sw[b->sw[q]].name);
            }
            fprintf(f, " (%.0f params)", b->params);
        }
        fputs(y->md ? ".\n\n" : "\n", f);
        Tab t = {0};
        if (rep_tab_done(f, &t, y, size_tab(r, z, y, &t))) return -1;
        if (y->md && !r->o->no_plots)
            for (int k = 0; k < z->nplots; k++) rep_md_plot(r, f, &z->plots[k]);
    }
    return 0;
}

int rep_size_csv(R *r, FILE *f) {
    fprintf(f, "group,series,sweep,params,tokens,tokens_per_param,flops,label,n_pairs,delta_val_loss,delta_val_ci_lo,"
               "delta_val_ci_hi,p_val\n");
    for (int g = 0; g < r->nsize; g++) {
        const RSize *z = &r->size[g];
        if (!z->shown) continue;
        for (int k = 0; k < z->nlab; k++)
            for (int m = 0; m < z->n; m++) {
                const RBudget *b = &r->bud[z->bud[m]];
                for (int q = 0; q < b->n; q++) {
                    const RSweep *s = &r->sw[b->sw[q]];
                    int j = rep_row_of(s, z->labels[k]);
                    RepDelta d = {0, NAN, NAN, NAN, NAN};
                    if (j >= 0 && rep_budget_delta(r, s, j, offsetof(RRun, val_loss), &d)) return -1;
                    csv_fput_text(r->sw[r->bud[z->bud[0]].sw[0]].name, f);
                    fputc(',', f);
                    csv_fput_text(r->sw[b->sw[0]].name, f);
                    fputc(',', f);
                    csv_fput_text(s->name, f);
                    fputc(',', f);
                    rep_csv_num(f, b->params);
                    rep_csv_num(f, s->tokens);
                    rep_csv_num(f, s->tokens / b->params);
                    rep_csv_num(f, 6 * b->params * s->tokens);
                    csv_fput_text(z->labels[k], f);
                    fprintf(f, ",%d,", d.n);
                    rep_csv_num(f, d.d);
                    rep_csv_num(f, d.lo);
                    rep_csv_num(f, d.hi);
                    rep_csv_val(f, d.p, '\n');
                }
            }
    }
    return 0;
}
