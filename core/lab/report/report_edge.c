/*
 * report_edge.c — `gated report`: the section "Learning-rate edge" of a
 * sweep whose rows differ in train.lr (issue 28: where does training
 * break, and does a gate move that edge?).
 *
 * Variants.  Rows whose configurations are equal but for train.lr,
 * train.min_lr and train.seed (RVar.key) are one variant at several lrs;
 * its name is the first row's label without its lr part ("-lr3.5e-1").  A
 * row with no config yet (every run pending) has no key: it joins the
 * variant of the same name, at the lr its label gives.  The variant of
 * the sweep's reference row (RSweep.base) is the baseline variant.
 *
 * Per variant and lr (a cell), over its ended runs (finished + diverged):
 * diverged / ended; the runs with a loss spike, a run with at least one
 * stored `spike` metric (train.c: a step whose training loss exceeds the
 * median of the previous 100 steps' by more than train.spike_threshold),
 * and the largest excess; the median step at which the diverged ones
 * stopped (runs.diverged_step); the finished runs' final val loss; and,
 * for a variant other than the baseline, Fisher's exact two-sided p of
 * (diverged, finished) against the baseline variant at the same lr.
 * Per variant: the largest lr at which every run finished and none spiked
 * (stable up to), at which every run finished (no divergence up to), the
 * smallest lr at which one diverged, and one pooled p over the lrs both
 * have: the exact conditional test of a common odds ratio (stats_cmh_exact,
 * each lr a stratum), not Fisher on the summed counts, because the
 * divergence rate moves with lr far more than with the variant (pooling
 * would compare variants at a mixture of rates, Simpson's paradox), and
 * because at 4 seeds a cell is too small for the chi-square approximation.
 * A cell with runs not ended (pending, running, killed, failed) is never
 * stable.
 *
 * Family.  Sweeps whose variants match one to one (names, and configs but
 * for train.grad_clip and train.warmup besides the lr keys) form a family:
 * the same rows under other conditions.  The first selected sweep of a
 * family of two or more gets one more table, condition x variant.
 *
 * Everything is computed when a section is written (the writers take the
 * loaded sweeps read-only); only lr sweeps have the section, so the few
 * queries (one per run) are cheap.  Names come from escaped labels
 * (rep_esc); Tab's column 0 and headers are escaped per format, and every
 * other cell is a number this file formats.
 */
#include "lab/report/report_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One variant at one lr. */
typedef struct {
    double lr;
    int runs, fin, div, spiked; /* spiked: of the fin + div ended runs */
    double worst;               /* the largest spike excess of those runs (nats); NAN: none */
    double div_step;            /* median runs.diverged_step of the diverged; NAN: none */
    int n_loss;
    double loss_m, loss_sd; /* final val loss of the finished */
    double p;               /* Fisher's p against the baseline variant at this lr; NAN */
    double *steps, *losses; /* while building: the values the medians and means take */
} ECell;

typedef struct {
    char *name; /* escaped */
    char *key;  /* RVar.key of its rows (NULL: none has a config) */
    char *fkey; /* key without train.grad_clip, train.warmup (NULL as key) */
    ECell *c;   /* by ascending lr */
    int nc, cap;
    double stable, nodiv, first_div; /* NAN: none */
    double pooled;                   /* exact stratified p against the baseline variant; NAN */
    int strata;                      /* the lrs it pools */
} EVar;

typedef struct {
    EVar *v;
    int nv, cap;
    int base;          /* the baseline variant; -1: none */
    int skipped;       /* rows with no single lr */
    double clip, warm; /* train.grad_clip, train.warmup of the baseline variant (NAN: unknown) */
} Edge;

static const char *const COND_KEYS[2] = {"$.\"train.grad_clip\"", "$.\"train.warmup\""};

/* ------------------------------------------------------------------ */
/* rows into variants                                                  */
/* ------------------------------------------------------------------ */

/* The lr part of a label: "lr" or "lr=" at the start or after a
 * separator, then a number running to the end or to a separator
 * ("baseline-lr3.5e-1", "lr=0.001,position=none"); its start (the
 * separator before it) and end, and the number.  0 when there is none. */
static int lr_part(const char *s, const char **from, const char **to, double *lr) {
    for (const char *p = s + strlen(s); p-- > s;) {
        const char *num = p + 2 + (p[0] == 'l' && p[1] == 'r' && p[2] == '=');
        if (strncmp(p, "lr", 2) != 0 || !(isdigit((unsigned char)*num) || *num == '.')) continue;
        if (p > s && !strchr("-_ ,", p[-1])) continue;
        char *e;
        double x = strtod(num, &e);
        if (*e && !strchr("-_ ,", *e)) continue;
        if (!(x > 0 && isfinite(x))) continue;
        *from = p > s ? p - 1 : p;
        *to = e;
        *lr = x;
        return 1;
    }
    return 0;
}

/* The variant name of a label: without its lr part (the label itself when
 * that would leave nothing). */
static char *variant_name(R *r, const char *label) {
    const char *a, *b;
    double x;
    if (!lr_part(label, &a, &b, &x) || (a == label && !*b)) return rep_dup(r, label);
    return rep_fmt(r, "%.*s%s", (int)(a - label), label, a == label && *b ? b + 1 : b);
}

/* key without the condition keys, and the conditions; SQL, since keys are
 * JSON (a key that is not is its own family key). */
static int cond_of(R *r, const char *key, char **fkey, double *clip, double *warm) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT CASE WHEN json_valid(?1) THEN json_remove(?1, ?2, ?3) ELSE ?1 END,"
                   " CASE WHEN json_valid(?1) THEN CASE WHEN json_type(?1, ?2) IN ('integer', 'real')"
                   " THEN json_extract(?1, ?2) END END,"
                   " CASE WHEN json_valid(?1) THEN CASE WHEN json_type(?1, ?3) IN ('integer', 'real')"
                   " THEN json_extract(?1, ?3) END END",
                   "ttt", key, COND_KEYS[0], COND_KEYS[1]))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *fkey = rep_dup(r, rep_col_text(st, 0));
        if (clip) *clip = rep_col_real(st, 1);
        if (warm) *warm = rep_col_real(st, 2);
    }
    return rep_q_done(r, st, rc, "read a run's config") || r->failed ? -1 : 0;
}

/* The variant row v belongs to (new if none), named name (taken). */
static EVar *variant_of(R *r, Edge *e, const RVar *v, char *name) {
    if (!name) return NULL;
    for (int i = 0; i < e->nv; i++) {
        EVar *w = &e->v[i];
        int same = v->key && w->key ? strcmp(v->key, w->key) == 0 : strcmp(name, w->name) == 0;
        if (!same) continue;
        free(name);
        if (!w->key && v->key && (!(w->key = rep_dup(r, v->key)) || cond_of(r, w->key, &w->fkey, NULL, NULL)))
            return NULL;
        return w;
    }
    for (int i = 0; i < e->nv; i++) /* the same name, another config: the full label tells them apart */
        if (strcmp(name, e->v[i].name) == 0) {
            free(name);
            if (!(name = rep_dup(r, v->label))) return NULL;
            break;
        }
    if (rep_grow(r, (void **)&e->v, &e->cap, e->nv + 1, sizeof *e->v)) return free(name), NULL;
    EVar *w = &e->v[e->nv++];
    *w = (EVar){.name = name};
    if (v->key && (!(w->key = rep_dup(r, v->key)) || cond_of(r, w->key, &w->fkey, NULL, NULL))) return NULL;
    return w;
}

/* Variant w's cell at lr, inserted in order if new (room for n runs). */
static ECell *cell_of(R *r, EVar *w, double lr, int n) {
    int i = 0;
    while (i < w->nc && w->c[i].lr < lr) i++;
    if (i < w->nc && w->c[i].lr == lr) {
        ECell *c = &w->c[i];
        double *s = realloc(c->steps, sizeof(double) * (size_t)(c->runs + n + 1));
        if (s) c->steps = s;
        double *l = s ? realloc(c->losses, sizeof(double) * (size_t)(c->runs + n + 1)) : NULL;
        if (l) c->losses = l;
        return s && l ? c : (rep_oom(r), NULL);
    }
    if (rep_grow(r, (void **)&w->c, &w->cap, w->nc + 1, sizeof *w->c)) return NULL;
    memmove(&w->c[i + 1], &w->c[i], sizeof *w->c * (size_t)(w->nc - i));
    w->nc++;
    ECell *c = &w->c[i];
    *c = (ECell){.lr = lr, .worst = NAN, .p = NAN};
    c->steps = malloc(sizeof(double) * (size_t)(n + 1));
    c->losses = malloc(sizeof(double) * (size_t)(n + 1));
    return c->steps && c->losses ? c : (rep_oom(r), NULL);
}

/* Run u into cell c: its status, spikes, divergence step, val loss. */
static int add_run(R *r, ECell *c, const RRun *u) {
    c->runs++;
    int fin = strcmp(u->status, "finished") == 0, div = strcmp(u->status, "diverged") == 0;
    if (!fin && !div) return 0;
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT (SELECT count(*) FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3),"
                   " (SELECT max(value) FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3),"
                   " (SELECT diverged_step FROM runs WHERE run_id = ?1)",
                   "ttt", u->run_id, "spike", ""))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        double worst = rep_col_real(st, 1), step = rep_col_real(st, 2);
        if (sqlite3_column_int64(st, 0) > 0) c->spiked++;
        if (!isnan(worst) && !(worst <= c->worst)) c->worst = worst;
        if (div) c->steps[c->div] = step;
    }
    if (rep_q_done(r, st, rc, "read a run's spikes")) return -1;
    if (div) c->div++;
    if (fin) {
        c->fin++;
        if (!isnan(u->val_loss)) c->losses[c->n_loss++] = u->val_loss;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the non-NAN x[0..n-1] (reordered); NAN when none. */
static double median(double *x, int n) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) x[m++] = x[i];
    if (!m) return NAN;
    qsort(x, (size_t)m, sizeof *x, cmp_double);
    return m % 2 ? x[m / 2] : (x[m / 2 - 1] + x[m / 2]) / 2;
}

/* ------------------------------------------------------------------ */
/* per-variant statistics                                              */
/* ------------------------------------------------------------------ */

/* The baseline variant's cell at lr; NULL if none. */
static const ECell *base_cell(const Edge *e, double lr) {
    const EVar *b = &e->v[e->base];
    for (int i = 0; i < b->nc; i++)
        if (b->c[i].lr == lr) return &b->c[i];
    return NULL;
}

/* Cells' medians, means and Fisher p; each variant's edges and pooled p. */
static int variant_stats(R *r, Edge *e) {
    for (int i = 0; i < e->nv; i++) {
        EVar *w = &e->v[i];
        w->stable = w->nodiv = w->first_div = w->pooled = NAN;
        long(*strata)[4] = malloc(sizeof *strata * (size_t)(w->nc + 1));
        if (!strata) return rep_oom(r);
        for (int j = 0; j < w->nc; j++) {
            ECell *c = &w->c[j];
            c->div_step = median(c->steps, c->div);
            stats_mean_std(c->losses, c->n_loss, &c->loss_m, &c->loss_sd);
            if (c->runs > 0 && c->fin == c->runs) {
                w->nodiv = c->lr;
                if (c->spiked == 0) w->stable = c->lr;
            }
            if (c->div > 0 && isnan(w->first_div)) w->first_div = c->lr;
            const ECell *b = e->base >= 0 && i != e->base ? base_cell(e, c->lr) : NULL;
            if (!b || c->fin + c->div == 0 || b->fin + b->div == 0) continue;
            c->p = stats_fisher_exact(c->div, c->fin, b->div, b->fin);
            long *t = strata[w->strata++];
            t[0] = c->div, t[1] = c->fin, t[2] = b->div, t[3] = b->fin;
        }
        int rc = w->strata ? stats_cmh_exact((const long(*)[4])strata, w->strata, &w->pooled) : 0;
        free(strata);
        if (rc) return rep_oom(r);
    }
    return 0;
}

static void edge_free(Edge *e) {
    for (int i = 0; i < e->nv; i++) {
        for (int j = 0; j < e->v[i].nc; j++) {
            free(e->v[i].c[j].steps);
            free(e->v[i].c[j].losses);
        }
        free(e->v[i].c);
        free(e->v[i].name);
        free(e->v[i].key);
        free(e->v[i].fkey);
    }
    free(e->v);
    *e = (Edge){0};
}

/* Sweep s's variants, cells and statistics. */
static int edge_build(R *r, const RSweep *s, Edge *e) {
    *e = (Edge){.base = -1, .clip = NAN, .warm = NAN};
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        const char *a, *b;
        double lr = v->lr;
        if (isnan(lr) && (v->key || !lr_part(v->label, &a, &b, &lr))) {
            e->skipped++; /* runs with several lrs, or none known */
            continue;
        }
        EVar *w = variant_of(r, e, v, variant_name(r, v->label));
        ECell *c = w ? cell_of(r, w, lr, v->nruns) : NULL;
        if (!c) return edge_free(e), -1;
        for (int i = 0; i < v->nruns; i++)
            if (add_run(r, c, &s->runs[v->runs[i]])) return edge_free(e), -1;
        if (k == s->base) e->base = (int)(w - e->v);
    }
    if (e->base >= 0 && e->v[e->base].key) {
        char *fk = NULL;
        int rc = cond_of(r, e->v[e->base].key, &fk, &e->clip, &e->warm);
        free(fk);
        if (rc) return edge_free(e), -1;
    }
    return variant_stats(r, e) ? (edge_free(e), -1) : 0;
}

/* ------------------------------------------------------------------ */
/* families                                                            */
/* ------------------------------------------------------------------ */

/* Whether two sweeps hold the same variants, but for the conditions. */
static int same_family(const Edge *a, const Edge *b) {
    if (a->nv != b->nv || a->base != b->base) return 0;
    for (int i = 0; i < a->nv; i++) {
        const EVar *x = &a->v[i], *y = &b->v[i];
        if (strcmp(x->name, y->name) != 0 || (x->fkey && y->fkey && strcmp(x->fkey, y->fkey) != 0)) return 0;
    }
    return 1;
}

static int has_edge_rows(const RSweep *s) {
    for (int i = 0; i < s->nvars; i++)
        for (int j = i + 1; j < s->nvars; j++) {
            const RVar *a = &s->vars[i], *b = &s->vars[j];
            if (a->key && b->key && strcmp(a->key, b->key) == 0 && !isnan(a->lr) && !isnan(b->lr) && a->lr != b->lr)
                return 1;
        }
    return 0;
}

int rep_has_edge(const RSweep *s) { return s->lr_plot && has_edge_rows(s); }

/* Every sweep's Edge (zero where it has none) in *all (R.sw order). */
static int edges_all(R *r, Edge **all) {
    *all = calloc((size_t)r->nsw + 1, sizeof **all);
    if (!*all) return rep_oom(r);
    for (int i = 0; i < r->nsw; i++) {
        (*all)[i].base = -1;
        if (rep_has_edge(&r->sw[i]) && edge_build(r, &r->sw[i], &(*all)[i])) {
            for (int j = 0; j < i; j++) edge_free(&(*all)[j]);
            free(*all);
            return -1;
        }
    }
    return 0;
}

static void edges_free(R *r, Edge *all) {
    for (int i = 0; all && i < r->nsw; i++) edge_free(&all[i]);
    free(all);
}

/* The family of sweep i: the first sweep (R.sw order) of it, and into
 * *first_shown the first selected one; the family's size. */
static int family_of(const R *r, const Edge *all, int i, int *first, int *first_shown) {
    int n = 0;
    *first = *first_shown = -1;
    for (int j = 0; j < r->nsw; j++) {
        if (!all[j].nv || !same_family(&all[i], &all[j])) continue;
        n++;
        if (*first < 0) *first = j;
        if (*first_shown < 0 && !r->sw[j].context) *first_shown = j;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* md and tex                                                          */
/* ------------------------------------------------------------------ */

static char *num_cell(R *r, const RepStyle *y, const char *fmt, double x) {
    return isnan(x) ? rep_dup(r, y->miss) : rep_fmt(r, fmt, x);
}

static char *p_cell(R *r, const RepStyle *y, double p) {
    char buf[32];
    if (isnan(p)) return rep_dup(r, y->miss);
    rep_fmt_p(buf, sizeof buf, p);
    return rep_dup(r, buf);
}

/* An lr edge: the lr, or "none" (not even the smallest lr tested). */
static char *edge_cell(R *r, double lr) { return isnan(lr) ? rep_dup(r, "none") : rep_fmt(r, "%g", lr); }

/* A line per variant and lr. */
static int cells_tab(R *r, const Edge *e, const RepStyle *y, Tab *t) {
    static const char *const head[] = {"variant", "lr", "ended/runs", "diverged", "spiked", "worst spike",
                                       "div. step", "val loss (finished)", "p (div)"};
    int rc = rep_tab_init(r, t, 9);
    for (int j = 0; rc == 0 && j < 9; j++) rc = rep_tab_put(t, 0, j, rep_dup(r, head[j]));
    for (int i = 0; rc == 0 && i < e->nv; i++)
        for (int j = 0; rc == 0 && j < e->v[i].nc; j++) {
            const ECell *c = &e->v[i].c[j];
            int n = c->fin + c->div, row = rep_tab_row(r, t);
            rc = row < 0 || rep_tab_put(t, row, 0, rep_dup(r, e->v[i].name)) ||
                 rep_tab_put(t, row, 1, rep_fmt(r, "%g", c->lr)) ||
                 rep_tab_put(t, row, 2, rep_fmt(r, "%d/%d", n, c->runs)) ||
                 rep_tab_put(t, row, 3, rep_fmt(r, "%d/%d", c->div, n)) ||
                 rep_tab_put(t, row, 4, rep_fmt(r, "%d/%d", c->spiked, n)) ||
                 rep_tab_put(t, row, 5, num_cell(r, y, "%.2f", c->worst)) ||
                 rep_tab_put(t, row, 6, num_cell(r, y, "%g", c->div_step)) ||
                 rep_tab_put(t, row, 7, rep_ms_cell(r, y, c->loss_m, c->loss_sd, 4)) ||
                 rep_tab_put(t, row, 8, i == e->base ? rep_dup(r, "(baseline)") : p_cell(r, y, c->p));
        }
    return rc ? -1 : 0;
}

/* A line per variant: its edges and pooled p. */
static int variants_tab(R *r, const Edge *e, const RepStyle *y, Tab *t) {
    static const char *const head[] = {"variant", "stable up to", "no divergence up to", "first divergence",
                                       "p (div, pooled)", "lrs pooled"};
    int rc = rep_tab_init(r, t, 6);
    for (int j = 0; rc == 0 && j < 6; j++) rc = rep_tab_put(t, 0, j, rep_dup(r, head[j]));
    for (int i = 0; rc == 0 && i < e->nv; i++) {
        const EVar *w = &e->v[i];
        int row = rep_tab_row(r, t);
        rc = row < 0 || rep_tab_put(t, row, 0, rep_dup(r, w->name)) || rep_tab_put(t, row, 1, edge_cell(r, w->stable)) ||
             rep_tab_put(t, row, 2, edge_cell(r, w->nodiv)) ||
             rep_tab_put(t, row, 3, edge_cell(r, w->first_div)) ||
             rep_tab_put(t, row, 4, i == e->base ? rep_dup(r, "(baseline)") : p_cell(r, y, w->pooled)) ||
             rep_tab_put(t, row, 5, i == e->base ? rep_dup(r, y->miss) : rep_fmt(r, "%d", w->strata));
    }
    return rc ? -1 : 0;
}

/* The distinct lrs of the family's sweeps (members: their indices),
 * ascending, into *lrs; how many, or -1. */
static int family_lrs(R *r, const Edge *all, const int *members, int nm, double **lrs) {
    int n = 0, cap = 0;
    *lrs = NULL;
    for (int m = 0; m < nm; m++)
        for (int i = 0; i < all[members[m]].nv; i++)
            for (int j = 0; j < all[members[m]].v[i].nc; j++) {
                double lr = all[members[m]].v[i].c[j].lr;
                int k = 0;
                while (k < n && (*lrs)[k] < lr) k++;
                if (k < n && (*lrs)[k] == lr) continue;
                if (rep_grow(r, (void **)lrs, &cap, n + 1, sizeof **lrs)) return -1;
                memmove(*lrs + k + 1, *lrs + k, sizeof **lrs * (size_t)(n - k));
                (*lrs)[k] = lr;
                n++;
            }
    return n;
}

/* Condition x variant: a line per member sweep and variant. */
static int family_tab(R *r, const Edge *all, const int *members, int nm, const RepStyle *y, Tab *t) {
    double *lrs;
    int nl = family_lrs(r, all, members, nm, &lrs), rc = nl < 0 ? -1 : rep_tab_init(r, t, 6 + nl);
    static const char *const head[] = {"sweep / variant", "grad_clip", "warmup", "stable up to", "first divergence"};
    for (int j = 0; rc == 0 && j < 5; j++) rc = rep_tab_put(t, 0, j, rep_dup(r, head[j]));
    for (int q = 0; rc == 0 && q < nl; q++) rc = rep_tab_put(t, 0, 5 + q, rep_fmt(r, "div @ %g", lrs[q]));
    rc = rc || rep_tab_put(t, 0, 5 + nl, rep_dup(r, "p (div, pooled)"));
    for (int m = 0; rc == 0 && m < nm; m++) {
        const Edge *e = &all[members[m]];
        for (int i = 0; rc == 0 && i < e->nv; i++) {
            const EVar *w = &e->v[i];
            int row = rep_tab_row(r, t);
            rc = row < 0 || rep_tab_put(t, row, 0, rep_fmt(r, "%s / %s", r->sw[members[m]].name, w->name)) ||
                 rep_tab_put(t, row, 1, num_cell(r, y, "%g", e->clip)) ||
                 rep_tab_put(t, row, 2, num_cell(r, y, "%g", e->warm)) ||
                 rep_tab_put(t, row, 3, edge_cell(r, w->stable)) || rep_tab_put(t, row, 4, edge_cell(r, w->first_div));
            for (int q = 0; rc == 0 && q < nl; q++) {
                const ECell *c = NULL;
                for (int j = 0; j < w->nc; j++)
                    if (w->c[j].lr == lrs[q]) c = &w->c[j];
                rc = rep_tab_put(t, row, 5 + q,
                                 c && c->fin + c->div ? rep_fmt(r, "%d/%d", c->div, c->fin + c->div) : rep_dup(r, y->miss));
            }
            rc = rc || rep_tab_put(t, row, 5 + nl, i == e->base ? rep_dup(r, "(baseline)") : p_cell(r, y, w->pooled));
        }
    }
    free(lrs);
    return rc ? -1 : 0;
}

static void intro(FILE *f, const RSweep *s, const Edge *e, const RepStyle *y) {
    if (!y->md) {
        fprintf(f, "%% Learning-rate edge: per variant (rows equal but for train.lr) and lr, diverged/ended, runs with "
                   "a stored spike metric, the largest spike excess (nats), the median divergence step, final val "
                   "loss of the finished, Fisher p against the baseline variant; per variant the largest lr with "
                   "every run finished and no spike (stable up to), with every run finished, the smallest lr with a "
                   "divergence, and the exact stratified (conditional, Cochran-Mantel-Haenszel) p over the lrs.\n");
        return;
    }
    fprintf(f, "### Learning-rate edge\n\n"
               "Rows whose configurations are equal but for `train.lr` (and `train.min_lr`, `train.seed`) are one "
               "**variant** at several learning rates, named by the label without its lr part. Per variant and lr, "
               "over the runs that ended (finished or diverged; **ended/runs**): **diverged**; **spiked**: runs with "
               "a loss spike, that is at least one stored `spike` metric (a training step whose loss exceeded the "
               "median of the previous 100 steps' by more than `train.spike_threshold`, 0.3 nats unless set; "
               "warmup and diverged runs included); **worst spike**: the largest such excess in nats; **div. step**: "
               "the median step at which the diverged runs stopped; **val loss**: final, mean ± std over the "
               "finished runs; **p (div)**: Fisher's exact two-sided p of diverged against finished, against the "
               "baseline variant at the same lr.\n\n");
    fprintf(f, "Per variant: **stable up to**: the largest lr at which every run finished and none spiked; **no "
               "divergence up to**: the largest lr at which every run finished; **first divergence**: the smallest "
               "lr at which a run diverged (`none`: no such lr; an lr with runs not yet ended counts for neither "
               "edge). **p (div, pooled)**: the exact conditional test of a common odds ratio of 1 over the lrs both "
               "variants ended runs at (each lr a stratum; R's `mantelhaen.test(exact = TRUE)`), not Fisher on the "
               "summed counts: the divergence rate moves with lr, and pooling the counts would compare the "
               "variants at a mix of rates; at a few seeds per lr the exact test, not the chi-square one.\n\n");
    if (e->skipped) {
        fprintf(f, "%d row%s of sweep ", e->skipped, e->skipped == 1 ? "" : "s");
        rep_md_code(f, s->name);
        fputs(" with no single lr (runs at several, or no config and no lr in the label) left out.\n\n", f);
    }
}

int rep_edge_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    Edge *all;
    if (edges_all(r, &all)) return -1;
    int self = (int)(s - r->sw), first, shown, rc = 0;
    const Edge *e = &all[self];
    intro(f, s, e, y);
    Tab t = {0}, tv = {0}, tf = {0};
    rc = rep_tab_done(f, &t, y, cells_tab(r, e, y, &t));
    rc = rc || rep_tab_done(f, &tv, y, variants_tab(r, e, y, &tv));
    int nm = family_of(r, all, self, &first, &shown);
    if (rc == 0 && nm >= 2 && shown == self) {
        int *members = malloc(sizeof *members * (size_t)nm), m = 0;
        if (!members) rc = rep_oom(r);
        for (int j = 0; rc == 0 && j < r->nsw; j++)
            if (all[j].nv && same_family(e, &all[j])) members[m++] = j;
        if (rc == 0 && y->md)
            fprintf(f, "#### Learning-rate edge across conditions\n\n"
                       "The %d sweeps below hold the same variants and differ only in `train.grad_clip` and "
                       "`train.warmup` (besides the lr keys): per sweep and variant, the edges and the pooled p as "
                       "above, and diverged/ended per lr (–: no run ended there).\n\n",
                    nm);
        else if (rc == 0)
            fprintf(f, "%% Learning-rate edge across conditions (train.grad_clip, train.warmup): %d sweeps\n", nm);
        rc = rc || rep_tab_done(f, &tf, y, family_tab(r, all, members, nm, y, &tf));
        free(members);
    }
    edges_free(r, all);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* csv                                                                 */
/* ------------------------------------------------------------------ */

int rep_edge_csv(R *r, FILE *f, const RSweep *s) {
    Edge *all;
    if (edges_all(r, &all)) return -1;
    int self = (int)(s - r->sw), first, shown;
    const Edge *e = &all[self];
    int nm = family_of(r, all, self, &first, &shown);
    fprintf(f, "sweep,variant,family,grad_clip,warmup,lr,runs,ended,diverged,spiked,worst_spike,div_step_median,"
               "finished_with_loss,val_loss_mean,val_loss_std,div_p,stable_up_to,no_div_up_to,first_div_lr,"
               "pooled_div_p,lrs_pooled\n");
    for (int i = 0; i < e->nv; i++) {
        const EVar *w = &e->v[i];
        for (int j = 0; j < w->nc; j++) {
            const ECell *c = &w->c[j];
            csv_fput_text(s->name, f);
            fputc(',', f);
            csv_fput_text(w->name, f);
            fputc(',', f);
            if (nm >= 2) csv_fput_text(r->sw[first].name, f);
            fputc(',', f);
            rep_csv_num(f, e->clip);
            rep_csv_num(f, e->warm);
            rep_csv_num(f, c->lr);
            fprintf(f, "%d,%d,%d,%d,", c->runs, c->fin + c->div, c->div, c->spiked);
            rep_csv_num(f, c->worst);
            rep_csv_num(f, c->div_step);
            fprintf(f, "%d,", c->n_loss);
            rep_csv_num(f, c->loss_m);
            rep_csv_num(f, c->loss_sd);
            rep_csv_num(f, c->p);
            rep_csv_num(f, w->stable);
            rep_csv_num(f, w->nodiv);
            rep_csv_num(f, w->first_div);
            rep_csv_num(f, i == e->base ? NAN : w->pooled);
            fprintf(f, "%d\n", w->strata);
        }
    }
    edges_free(r, all);
    return 0;
}
