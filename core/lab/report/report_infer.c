/*
 * report_infer.c — `gated report`: what the gate buys at inference, from
 * `gated eval --quant / --drop` (core/run/infer.h; issue 17).
 *
 * Per finished run (rep_infer_load_run), the metrics infer_loss, infer_ppl,
 * infer_windows, infer_drop, infer_flops_wo and infer_flops_attn at each
 * context's last step, in one query (the keys bound).  Contexts are
 *   split=S,len=L,quant=SCHEME           INF_QUANT (SCHEME float: the reference)
 *   split=S,len=L,drop=RULE,tau=T        INF_TAU (RULE gate, and its matched
 *                                        controls random and entropy)
 *   split=S,len=L,drop=RULE,frac=F       INF_FRAC (RULE random or entropy)
 * with numbers as %g; anything else is skipped, as is split test.  A
 * scheme names columns and plot series: [A-Za-z0-9._-] only (another is
 * skipped).  When a run was evaluated at several lengths, its results are
 * those at its training length model.seq_len, else at the smallest length
 * it has (RRun.inf_len).  Each point's ΔPPL is its infer_ppl minus the
 * run's quant=float infer_ppl at that length (RRun.inf_float), and ΔPPL% the
 * same in % of the float PPL: paired per run, since both are measured on
 * the same windows (the summary val PPL is measured on other windows and is
 * never used here).
 *
 * Per sweep (rep_infer_finish): the schemes but float, sorted by name; the
 * distinct tau of the gate rule and F of the fixed fractions, ascending;
 * per scheme the correlation over the sweep's runs of a run's ΔPPL% with
 * its M-Act (RRun.m_act, the main table's): Pearson's r, its two-sided p
 * from t = r sqrt((n - 2) / (1 - r^2)) with n - 2 degrees of freedom
 * (stats_t_p2), and Spearman's rho (Pearson's r of the ranks, ties given
 * their mean rank).
 *
 * The sections (md and tex: Tabs of report_sections.c; csv:
 * SWEEP-quant.csv and SWEEP-drop.csv):
 *   Quantization       a line per row: runs, float PPL, per scheme ΔPPL
 *                      and ΔPPL% (mean ± std over the row's runs) and,
 *                      with a baseline row, the row's ΔPPL% minus the
 *                      baseline row's (paired by seed when 2 or more seeds
 *                      pair up, else Welch; raw p); M-Act; then the
 *                      correlations
 *   Gate-sparse heads  a line per gated row and tau: the fraction dropped,
 *                      FLOPs saved, PPL and ΔPPL of the gate rule and its
 *                      matched controls; then a line per row and F: random
 *                      and entropy at that fraction
 * The plots (ΔPPL% per scheme and row, ΔPPL% against M-Act per scheme, PPL
 * against the fraction dropped) are report_plot_sections.c's.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* loading                                                             */
/* ================================================================== */

/* The keys read, in the order of the query's parameters ?2 .., and the
 * value (INF_*) each is. */
static const char *const KEYS[INF_DPPL] = {"infer_loss", "infer_drop", "infer_flops_attn", "infer_flops_wo",
                                           "infer_ppl",  "infer_windows"};
static const int KEY_X[INF_DPPL] = {INF_LOSS, INF_DROP, INF_FLOPS_ATTN, INF_FLOPS_WO, INF_PPL, INF_WINDOWS};

/* The rules of drop contexts (infer.h's drop_sel_names). */
static const char *const RULES[3] = {"gate", "random", "entropy"};

static int is_word(const char *s) {
    return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(s);
}

static int rule_index(const char *s) {
    for (int i = 0; i < 3; i++)
        if (strcmp(s, RULES[i]) == 0) return i;
    return -1;
}

/* A context of split val into p's kind, name, v and len; -1 if it is not
 * one (or is of another split). */
static int parse_ctx(const char *ctx, InferPt *p) {
    char split[8], name[INF_NAME], par[8];
    int end = -1;
    p->v = NAN;
    if (sscanf(ctx, "split=%7[^,],len=%lld,quant=%23[^,]%n", split, &p->len, name, &end) == 3 && end >= 0 &&
        !ctx[end]) {
        if (!is_word(name)) return -1;
        p->kind = INF_QUANT;
    } else {
        end = -1;
        if (sscanf(ctx, "split=%7[^,],len=%lld,drop=%23[^,],%7[^=]=%lf%n", split, &p->len, name, par, &p->v, &end) !=
                5 ||
            end < 0 || ctx[end] || !isfinite(p->v) || p->v < 0)
            return -1;
        int rule = rule_index(name);
        if (strcmp(par, "tau") == 0 && rule >= 0)
            p->kind = INF_TAU;
        else if (strcmp(par, "frac") == 0 && rule > 0 && p->v <= 1)
            p->kind = INF_FRAC;
        else
            return -1;
    }
    if (p->len <= 0 || strcmp(split, "val") != 0) return -1;
    snprintf(p->name, sizeof p->name, "%s", name);
    return 0;
}

static int same_pt(const InferPt *a, const InferPt *b) {
    return a->kind == b->kind && a->len == b->len && strcmp(a->name, b->name) == 0 &&
           (a->kind == INF_QUANT || a->v == b->v);
}

/* A run's points while they are read. */
typedef struct {
    InferPt *p;
    int n, cap;
} InfLoad;

/* RepRowFn on (key, context, value). */
static int inf_add(R *r, void *arg, sqlite3_stmt *st) {
    InfLoad *l = arg;
    const char *key = rep_col_text(st, 0);
    int k = 0;
    while (k < INF_DPPL && strcmp(KEYS[k], key) != 0) k++;
    InferPt q;
    if (k == INF_DPPL || parse_ctx(rep_col_text(st, 1), &q)) return 0;
    InferPt *p = NULL;
    for (int i = 0; i < l->n && !p; i++)
        if (same_pt(&l->p[i], &q)) p = &l->p[i];
    if (!p) {
        if (rep_grow(r, (void **)&l->p, &l->cap, l->n + 1, sizeof *l->p)) return -1;
        p = &l->p[l->n++];
        *p = q;
        for (int x = 0; x < INF_NX; x++) p->x[x] = NAN;
    }
    p->x[KEY_X[k]] = rep_col_real(st, 2);
    return 0;
}

/* The linear inputs of infer_in_outlier (run/infer.h's lin_site_names). */
static const char *const SITES[INF_NSITES] = {"qkv", "wo", "ffn_in", "ffn_down"};

typedef struct {
    RRun *u;
    long long len;
} OutLoad;

/* RepRowFn on (context, value) of infer_in_outlier: "split=val,len=L,site=S"
 * at the run's length into u->inf_outlier. */
static int out_add(R *r, void *arg, sqlite3_stmt *st) {
    (void)r;
    OutLoad *o = arg;
    char split[8], site[16];
    long long len;
    int end = -1;
    const char *ctx = rep_col_text(st, 0);
    if (sscanf(ctx, "split=%7[^,],len=%lld,site=%15[^,]%n", split, &len, site, &end) != 3 || end < 0 || ctx[end] ||
        strcmp(split, "val") != 0 || len != o->len)
        return 0;
    for (int k = 0; k < INF_NSITES; k++)
        if (strcmp(site, SITES[k]) == 0) o->u->inf_outlier[k] = rep_col_real(st, 1);
    return 0;
}

int rep_infer_load_run(R *r, RSweep *s, int var, int run) {
    RRun *u = &s->runs[run];
    InfLoad l = {NULL, 0, 0};
    sqlite3_stmt *st;
    int rc = rep_q_prep(r, &st,
                        "SELECT m.key, m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key IN"
                        " (?2, ?3, ?4, ?5, ?6, ?7) AND m.step = (SELECT max(x.step) FROM metrics x"
                        " WHERE x.run_id = m.run_id AND x.key = m.key AND x.context = m.context)"
                        " ORDER BY m.context, m.key",
                        "ttttttt", u->run_id, KEYS[0], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]);
    if (rc == 0) rc = rep_q_rows(r, st, inf_add, &l);
    /* the length: the training length when the run was evaluated there, else the smallest */
    long long len = -1;
    for (int i = 0; rc == 0 && i < l.n; i++) {
        const InferPt *p = &l.p[i];
        if (!isfinite(p->x[INF_PPL])) continue;
        if ((double)p->len == u->seq_len) {
            len = p->len;
            break;
        }
        if (len < 0 || p->len < len) len = p->len;
    }
    u->inf_len = len;
    for (int i = 0; rc == 0 && len >= 0 && i < l.n; i++) {
        InferPt *p = &l.p[i];
        if (p->len != len || !isfinite(p->x[INF_PPL])) continue;
        p->run = run;
        p->var = var;
        if (p->kind == INF_QUANT && strcmp(p->name, "float") == 0) u->inf_float = p->x[INF_PPL];
        if (rep_grow(r, (void **)&s->inf, &s->inf_cap, s->ninf + 1, sizeof *s->inf)) rc = -1;
        if (rc == 0) s->inf[s->ninf++] = *p;
    }
    free(l.p);
    for (int k = 0; k < INF_NSITES; k++) u->inf_outlier[k] = NAN;
    if (rc == 0 && len >= 0) {
        OutLoad o = {u, len};
        rc = rep_q_each_context_last(r, u->run_id, "infer_in_outlier", out_add, &o);
    }
    return rc;
}

double rep_infer_value(const RSweep *s, int run, int kind, const char *name, double v, int x) {
    for (int i = 0; i < s->ninf; i++) {
        const InferPt *p = &s->inf[i];
        if (p->run == run && p->kind == kind && strcmp(p->name, name) == 0 && (kind == INF_QUANT || p->v == v))
            return p->x[x];
    }
    return NAN;
}

int rep_infer_stats(const RSweep *s, int k, int kind, const char *name, double v, int x, double *buf, double *m,
                    double *sd) {
    const RVar *w = &s->vars[k];
    int n = 0;
    for (int i = 0; i < w->nruns; i++) {
        double y = rep_infer_value(s, w->runs[i], kind, name, v, x);
        if (!isnan(y)) buf[n++] = y;
    }
    stats_mean_std(buf, n, m, sd);
    return n;
}

/* ------------------------------------------------------------------ */
/* correlation                                                         */
/* ------------------------------------------------------------------ */

/* Pearson's r of (x, y), n values; NAN when n < 2 or either is constant. */
static double pearson(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= n, my /= n;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0) || !(syy > 0)) return NAN;
    double r = sxy / sqrt(sxx * syy);
    return r > 1 ? 1 : r < -1 ? -1 : r;
}

/* The ranks of x (1-based; tied values get their mean rank) into rk. */
static void ranks(const double *x, int n, double *rk) {
    for (int i = 0; i < n; i++) {
        int below = 0, tied = 0;
        for (int j = 0; j < n; j++) below += x[j] < x[i], tied += x[j] == x[i];
        rk[i] = below + (tied + 1) / 2.0;
    }
}

/* Pearson's r with its two-sided p (n - 2 df) and Spearman's rho of (x, y);
 * rx, ry: scratch of n. */
static void correlate(const double *x, const double *y, int n, double *rx, double *ry, RepCorr *c) {
    c->n = n;
    c->r = c->p = c->rho = NAN;
    if (n < 3) return;
    c->r = pearson(x, y, n);
    ranks(x, n, rx);
    ranks(y, n, ry);
    c->rho = pearson(rx, ry, n);
    if (isnan(c->r)) return;
    double df = n - 2, d = 1 - c->r * c->r;
    c->p = d > 0 ? stats_t_p2(c->r * sqrt(df / d), df) : 0;
}

/* ------------------------------------------------------------------ */
/* per sweep                                                           */
/* ------------------------------------------------------------------ */

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int scheme_cmp(const void *a, const void *b) {
    return strcmp(((const InferScheme *)a)->name, ((const InferScheme *)b)->name);
}

/* v into the distinct values vs[*n] (cap >= ninf). */
static void add_distinct(double *vs, int *n, double v) {
    for (int i = 0; i < *n; i++)
        if (vs[i] == v) return;
    vs[(*n)++] = v;
}

int rep_infer_finish(R *r, RSweep *s) {
    s->inf_len = -1;
    if (!s->ninf) return 0;
    size_t cap = (size_t)s->ninf + 1;
    s->qs = malloc(sizeof *s->qs * cap);
    s->taus = malloc(sizeof *s->taus * cap);
    s->fracs = malloc(sizeof *s->fracs * cap);
    size_t rcap = (size_t)s->nruns + 1;
    double *x = malloc(sizeof *x * rcap), *y = malloc(sizeof *y * rcap), *rx = malloc(sizeof *rx * rcap),
           *ry = malloc(sizeof *ry * rcap);
    int rc = !s->qs || !s->taus || !s->fracs || !x || !y || !rx || !ry ? rep_oom(r) : 0;
    int mixed = 0;
    for (int i = 0; rc == 0 && i < s->ninf; i++) {
        InferPt *p = &s->inf[i];
        const RRun *u = &s->runs[p->run];
        double fl = u->inf_float;
        p->x[INF_DPPL] = p->x[INF_PPL] - fl;
        p->x[INF_DPCT] = 100 * (p->x[INF_PPL] - fl) / fl;
        if (s->inf_len < 0 && !mixed) s->inf_len = p->len;
        if (p->len != s->inf_len) mixed = 1;
        if (p->kind == INF_QUANT && strcmp(p->name, "float") != 0) {
            int j = 0;
            while (j < s->nqs && strcmp(s->qs[j].name, p->name) != 0) j++;
            if (j == s->nqs) {
                memset(&s->qs[s->nqs], 0, sizeof *s->qs);
                snprintf(s->qs[s->nqs++].name, INF_NAME, "%s", p->name);
            }
        } else if (p->kind == INF_TAU && strcmp(p->name, "gate") == 0)
            add_distinct(s->taus, &s->ntau, p->v);
        else if (p->kind == INF_FRAC)
            add_distinct(s->fracs, &s->nfrac, p->v);
        if (p->kind != INF_QUANT) s->has_drop = 1;
    }
    if (mixed) s->inf_len = -1;
    if (rc == 0) {
        s->has_quant = s->nqs > 0;
        if (s->nqs) qsort(s->qs, (size_t)s->nqs, sizeof *s->qs, scheme_cmp);
        if (s->ntau) qsort(s->taus, (size_t)s->ntau, sizeof *s->taus, dbl_cmp);
        if (s->nfrac) qsort(s->fracs, (size_t)s->nfrac, sizeof *s->fracs, dbl_cmp);
    }
    /* per scheme: a run's ΔPPL% against its M-Act, over the sweep's runs */
    for (int q = 0; rc == 0 && q < s->nqs; q++) {
        int n = 0;
        for (int i = 0; i < s->nruns; i++) {
            double d = rep_infer_value(s, i, INF_QUANT, s->qs[q].name, NAN, INF_DPCT), m = s->runs[i].m_act;
            if (isfinite(d) && isfinite(m)) x[n] = m, y[n] = d, n++;
        }
        correlate(x, y, n, rx, ry, &s->qs[q].corr);
        for (int k = 0; k < INF_NSITES; k++) {
            n = 0;
            for (int i = 0; i < s->nruns; i++) {
                double d = rep_infer_value(s, i, INF_QUANT, s->qs[q].name, NAN, INF_DPCT), o = s->runs[i].inf_outlier[k];
                if (isfinite(d) && isfinite(o)) x[n] = o, y[n] = d, n++;
            }
            correlate(x, y, n, rx, ry, &s->qs[q].corr_site[k]);
        }
    }
    free(x);
    free(y);
    free(rx);
    free(ry);
    return rc;
}

/* ================================================================== */
/* statistics of the tables                                            */
/* ================================================================== */

/* Row k's ΔPPL% under scheme q minus the baseline row's: paired by seed
 * when 2 or more seeds pair up (no seed twice among either row's runs
 * with a value), else Welch (2 or more runs each).  0 with *t set and
 * *paired the pairs (0: Welch); -1 without a test (a, b: cap >= nruns). */
static int vs_base(const RSweep *s, int k, const char *q, double *a, double *b, TTest *t, int *paired) {
    const RVar *rows[2] = {&s->vars[k], &s->vars[s->base]};
    int unique = 1;
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < rows[w]->nruns; i++)
            for (int j = i + 1; j < rows[w]->nruns; j++) {
                const RRun *x = &s->runs[rows[w]->runs[i]], *y = &s->runs[rows[w]->runs[j]];
                if (x->seed == y->seed && !isnan(rep_infer_value(s, rows[w]->runs[i], INF_QUANT, q, NAN, INF_DPCT)) &&
                    !isnan(rep_infer_value(s, rows[w]->runs[j], INF_QUANT, q, NAN, INF_DPCT)))
                    unique = 0;
            }
    int n = 0;
    for (int i = 0; unique && i < rows[0]->nruns; i++) {
        double x = rep_infer_value(s, rows[0]->runs[i], INF_QUANT, q, NAN, INF_DPCT);
        if (isnan(x)) continue;
        for (int j = 0; j < rows[1]->nruns; j++) {
            double y = rep_infer_value(s, rows[1]->runs[j], INF_QUANT, q, NAN, INF_DPCT);
            if (!isnan(y) && s->runs[rows[1]->runs[j]].seed == s->runs[rows[0]->runs[i]].seed) {
                a[n] = x, b[n] = y, n++;
                break;
            }
        }
    }
    if (n >= 2) {
        *paired = n;
        return stats_paired(a, b, n, t);
    }
    *paired = 0;
    double m, sd;
    int na = rep_infer_stats(s, k, INF_QUANT, q, NAN, INF_DPCT, a, &m, &sd);
    int nb = rep_infer_stats(s, s->base, INF_QUANT, q, NAN, INF_DPCT, b, &m, &sd);
    return stats_welch(a, na, b, nb, t);
}

/* Row k's M-Act over its runs with the float reference: mean and std. */
static int row_m_act(const RSweep *s, int k, double *buf, double *m, double *sd) {
    const RVar *v = &s->vars[k];
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!isnan(u->inf_float) && !isnan(u->m_act)) buf[n++] = u->m_act;
    }
    stats_mean_std(buf, n, m, sd);
    return n;
}

/* "mean ± std" of value x at (kind, name, v) over row k's runs, times
 * scale, prec decimals, *n the runs (buf: cap >= the row's runs). */
static char *stat_cell(R *r, const RSweep *s, const RepStyle *y, int k, int kind, const char *name, double v, int x,
                       double scale, int prec, double *buf, int *n) {
    double m, sd;
    int c = rep_infer_stats(s, k, kind, name, v, x, buf, &m, &sd);
    if (n) *n = c;
    return rep_ms_cell(r, y, scale * m, scale * sd, prec);
}

/* ================================================================== */
/* md and tex                                                          */
/* ================================================================== */

/* A length clause for the captions: "at length L" or "at each run's own length". */
static void len_text(FILE *f, const RSweep *s) {
    if (s->inf_len > 0)
        fprintf(f, "at context length %lld", s->inf_len);
    else
        fprintf(f, "at each run's training length (or its smallest evaluated one; they differ between runs)");
}

/* A table line whose first statistic is cell (from stat_cell, over *n
 * runs), put in column col, with the row's label in column 0: the line's
 * index, -2 when no run has the statistic (no line), -1 on error. */
static int tab_line(R *r, Tab *t, char *cell, int col, const int *n, const char *label) {
    if (!cell) return -1;
    if (!*n) {
        free(cell);
        return -2;
    }
    int i = rep_tab_row(r, t);
    if (i < 0) {
        free(cell);
        return -1;
    }
    return rep_tab_put(t, i, col, cell) || rep_tab_put(t, i, 0, rep_dup(r, label)) ? -1 : i;
}

/* The quantization table: a line per row with the float reference. */
static int quant_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t, double *a, double *b) {
    int base = s->base >= 0, per = 2 + base; /* columns per scheme */
    int ncol = 3 + per * s->nqs + 1;
    int rc = rep_tab_init(r, t, ncol) || rep_tab_put(t, 0, 0, rep_dup(r, "variant")) ||
             rep_tab_put(t, 0, 1, rep_dup(r, "n")) || rep_tab_put(t, 0, 2, rep_dup(r, "float PPL")) ||
             rep_tab_put(t, 0, ncol - 1, rep_dup(r, "M-Act"));
    for (int q = 0; rc == 0 && q < s->nqs; q++) {
        const char *nm = s->qs[q].name;
        const char *d = y->md ? "ΔPPL" : "Delta PPL";
        rc = rep_tab_put(t, 0, 3 + per * q, rep_fmt(r, "%s %s", d, nm)) ||
             rep_tab_put(t, 0, 4 + per * q, rep_fmt(r, "%s%% %s", d, nm)) ||
             (base && rep_tab_put(t, 0, 5 + per * q, rep_fmt(r, "%s%% %s vs baseline", d, nm)));
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        int n;
        int i = tab_line(r, t, stat_cell(r, s, y, k, INF_QUANT, "float", NAN, INF_PPL, 1, 3, a, &n), 2, &n,
                         s->vars[k].label);
        if (i == -2) continue;
        if (i < 0) return -1;
        rc = rep_tab_put(t, i, 1, rep_fmt(r, "%d", n));
        for (int q = 0; rc == 0 && q < s->nqs; q++) {
            const char *nm = s->qs[q].name;
            int nd;
            char *d = stat_cell(r, s, y, k, INF_QUANT, nm, NAN, INF_DPPL, 1, 4, a, &nd);
            /* a scheme some runs lack: its run count beside the cell */
            if (d && nd != n) {
                char *e = rep_fmt(r, "%s (%d)", d, nd);
                free(d);
                d = e;
            }
            rc = rep_tab_put(t, i, 3 + per * q, d) ||
                 rep_tab_put(t, i, 4 + per * q, stat_cell(r, s, y, k, INF_QUANT, nm, NAN, INF_DPCT, 1, 2, a, NULL));
            if (rc || !base) continue;
            TTest tt;
            int paired;
            char p[32];
            if (k == s->base)
                rc = rep_tab_put(t, i, 5 + per * q, rep_dup(r, "(baseline)"));
            else if (vs_base(s, k, nm, a, b, &tt, &paired) == 0) {
                rep_fmt_p(p, sizeof p, tt.p);
                rc = rep_tab_put(t, i, 5 + per * q,
                                 paired ? rep_fmt(r, "%+.2f (p %s, paired %d)", tt.diff, p, paired)
                                        : rep_fmt(r, "%+.2f (p %s, Welch)", tt.diff, p));
            } else
                rc = rep_tab_put(t, i, 5 + per * q, rep_dup(r, y->miss));
        }
        double m, sd;
        row_m_act(s, k, a, &m, &sd);
        if (rc == 0) rc = rep_tab_put(t, i, ncol - 1, rep_ms_cell(r, y, m, sd, 2));
    }
    return rc ? -1 : 0;
}

/* One correlation as text: "r = 0.91 (p 0.087), Spearman rho = 0.80, n = 4". */
static void corr_text(FILE *f, const RepCorr *c, const RepStyle *y) {
    char p[32];
    if (isnan(c->r))
        fprintf(f, "Pearson r %s", y->miss);
    else {
        rep_fmt_p(p, sizeof p, c->p);
        fprintf(f, "Pearson r = %+.3f (p %s)", c->r, p);
    }
    if (isnan(c->rho))
        fprintf(f, ", Spearman %s %s", y->md ? "ρ" : "rho", y->miss);
    else
        fprintf(f, ", Spearman %s = %+.3f", y->md ? "ρ" : "rho", c->rho);
    fprintf(f, ", n = %d", c->n);
}

int rep_infer_quant_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    int md = y->md;
    if (md) {
        fprintf(f, "### Quantization\n\n"
                   "`gated eval --quant` results (metric `infer_ppl`, context `split=val,len=L,quant=SCHEME`) of each "
                   "row's finished runs, on the validation windows ");
        len_text(f, s);
        fprintf(f, ". Simulated symmetric round-to-nearest integer quantization of every linear layer of the blocks "
                   "(`core/run/infer.h`): `wB` weights in B bits with a scale per output channel (`gG`: per group of G "
                   "input columns), `aBtensor` / `aBtoken` the layers' inputs in B bits with one scale per window / "
                   "per token; the embedding (the tied output layer) and the norms stay float. **n**: runs with the "
                   "float reference; **float PPL**: the unquantized model on the same windows (mean ± std over "
                   "seeds; not the summary val PPL, which is measured on other windows); **ΔPPL S**: scheme S's PPL "
                   "minus the float PPL, per run, mean ± std over the row's runs (a count in brackets: runs with "
                   "that scheme, when fewer than n); **ΔPPL%% S**: the same in %% of the run's float PPL");
        if (s->base >= 0)
            fprintf(f, "; **ΔPPL%% S vs baseline**: the row's ΔPPL%% minus the baseline row's, paired by seed when "
                       "2 or more seeds pair up (the number of pairs), else Welch, with the raw two-sided p (not "
                       "adjusted for the schemes and rows compared)");
        fprintf(f, "; **M-Act**: the runs' largest |activation| of a layer output at the last evaluation (the main "
                   "table's M-Act), mean ± std.\n\n");
    } else
        fprintf(f, "%% Quantization (gated eval --quant, infer_ppl on split val): float PPL, and per scheme PPL minus "
                   "float PPL per run (and in %% of it), mean $\\pm$ std over seeds%s; M-Act.\n",
                s->base >= 0 ? "; the row's Delta PPL % minus the baseline row's (paired by seed, else Welch; raw p)"
                             : "");
    size_t cap = (size_t)s->nruns + 1;
    double *a = malloc(sizeof *a * cap), *b = malloc(sizeof *b * cap);
    Tab t = {0};
    int rc = rep_tab_done(f, &t, y, !a || !b ? rep_oom(r) : quant_tab(r, s, y, &t, a, b));
    free(a);
    free(b);
    if (rc) return -1;
    if (md)
        fprintf(f, "Does a larger massive activation make a model more fragile under quantization? The correlation "
                   "over the sweep's runs (one point per run, every row) of a run's ΔPPL%% with its M-Act:\n\n");
    for (int q = 0; q < s->nqs; q++) {
        if (md) {
            fputs("- ", f);
            rep_md_code(f, s->qs[q].name);
            fputs(": ", f);
        } else {
            fputs("% Delta PPL % against M-Act over the runs, ", f);
            store_fput_escaped(f, s->qs[q].name);
            fputs(": ", f);
        }
        corr_text(f, &s->qs[q].corr, y);
        fputs(md ? "\n" : ".\n", f);
    }
    /* the scale a per-tensor quantizer sees: each linear input's outlier factor */
    int any = 0;
    for (int q = 0; q < s->nqs; q++)
        for (int k = 0; k < INF_NSITES; k++) any |= s->qs[q].corr_site[k].n >= 3;
    if (any && md)
        fprintf(f, "\nM-Act is measured in the residual stream; what a quantizer sees is each linear layer's input. "
                   "The correlation of ΔPPL%% with each input's **outlier factor** (`infer_in_outlier`: its largest "
                   "|x| over the mean of each token's largest |x|, from the float pass) — `qkv` and `ffn_in` are "
                   "RMSNorm outputs, `wo` the attention output (after the gate), `ffn_down` the SwiGLU output:\n\n");
    for (int q = 0; any && q < s->nqs; q++) {
        for (int k = 0; k < INF_NSITES; k++) {
            if (s->qs[q].corr_site[k].n < 3) continue;
            if (md) {
                fputs("- ", f);
                rep_md_code(f, s->qs[q].name);
                fprintf(f, " against the `%s` input: ", SITES[k]);
            } else {
                fputs("% Delta PPL % against the outlier factor of the ", f);
                fputs(SITES[k], f);
                fputs(" input, ", f);
                store_fput_escaped(f, s->qs[q].name);
                fputs(": ", f);
            }
            corr_text(f, &s->qs[q].corr_site[k], y);
            fputs(md ? "\n" : ".\n", f);
        }
    }
    if (md)
        fprintf(f, "\nPearson's p: the t-test of r with n − 2 degrees of freedom (normal data assumed); Spearman's ρ "
                   "ranks the runs, so one outlying run weighs less. Rows differ in more than M-Act (the gate "
                   "itself), so a correlation over rows is not a causal effect of M-Act.\n\n");
    return 0;
}

/* A header cell: h as it is in markdown; in TeX with Δ as "Delta " and τ
 * as "tau" (rep_tex_text writes them as they are, which TeX without
 * inputenc's Greek cannot typeset). */
static char *head_cell(R *r, const RepStyle *y, const char *h) {
    if (y->md) return rep_dup(r, h);
    char *d = malloc(3 * strlen(h) + 1); /* each 2-byte letter becomes at most 6 bytes */
    if (!d) return rep_oom(r), NULL;
    size_t o = 0;
    for (const char *p = h; *p;)
        if (strncmp(p, "Δ", 2) == 0)
            memcpy(d + o, "Delta ", 6), o += 6, p += 2;
        else if (strncmp(p, "τ", 2) == 0)
            memcpy(d + o, "tau", 3), o += 3, p += 2;
        else
            d[o++] = *p++;
    d[o] = '\0';
    return d;
}

/* A drop table: kind INF_TAU (a line per gated row and tau: the gate rule
 * and its matched controls) or INF_FRAC (a line per row and F: random and
 * entropy).  The dropped and FLOPs columns are the first rule's (gate, or
 * random: entropy saves other attention FLOPs). */
static int drop_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t, double *buf, int kind) {
    int tau = kind == INF_TAU, q0 = tau ? 0 : 1, nr = 3 - q0, nc = 6 + 2 * nr;
    const double *vals = tau ? s->taus : s->fracs;
    int nv = tau ? s->ntau : s->nfrac;
    const char *const fixed[] = {"variant", tau ? "τ" : "F", "n", "dropped (%)", "FLOPs saved wo (%)",
                                 "FLOPs saved wo+attn (%)"};
    int rc = rep_tab_init(r, t, nc);
    for (int j = 0; rc == 0 && j < 6; j++) rc = rep_tab_put(t, 0, j, head_cell(r, y, fixed[j]));
    for (int q = 0; rc == 0 && q < nr; q++) {
        char h[32];
        snprintf(h, sizeof h, "PPL %s", RULES[q0 + q]);
        rc = rep_tab_put(t, 0, 6 + q, head_cell(r, y, h));
        snprintf(h, sizeof h, "ΔPPL %s", RULES[q0 + q]);
        rc = rc || rep_tab_put(t, 0, 6 + nr + q, head_cell(r, y, h));
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++)
        for (int j = 0; rc == 0 && j < nv; j++) {
            double v = vals[j];
            int n;
            int i = tab_line(r, t, stat_cell(r, s, y, k, kind, RULES[q0], v, INF_DROP, 100, 1, buf, &n), 3, &n,
                             s->vars[k].label);
            if (i == -2) continue;
            if (i < 0) return -1;
            rc = rep_tab_put(t, i, 1, rep_fmt(r, "%g", v)) || rep_tab_put(t, i, 2, rep_fmt(r, "%d", n));
#define CELL(rule, x, scale, prec) stat_cell(r, s, y, k, kind, rule, v, x, scale, prec, buf, NULL)
            rc = rc || rep_tab_put(t, i, 4, CELL(RULES[q0], INF_FLOPS_WO, 100, 2)) ||
                 rep_tab_put(t, i, 5, CELL(RULES[q0], INF_FLOPS_ATTN, 100, 2));
            for (int q = 0; rc == 0 && q < nr; q++)
                rc = rep_tab_put(t, i, 6 + q, CELL(RULES[q0 + q], INF_PPL, 1, 3)) ||
                     rep_tab_put(t, i, 6 + nr + q, CELL(RULES[q0 + q], INF_DPPL, 1, 3));
#undef CELL
        }
    return rc ? -1 : 0;
}

int rep_infer_drop_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    int md = y->md;
    int nofloat = 0; /* runs with drop results but no float reference: their ΔPPL is missing */
    for (int i = 0; i < s->nruns; i++) {
        int any = 0;
        for (int j = 0; j < s->ninf && !any; j++) any = s->inf[j].run == i && s->inf[j].kind != INF_QUANT;
        nofloat += any && isnan(s->runs[i].inf_float);
    }
    if (md) {
        fprintf(f, "### Gate-sparse heads\n\n"
                   "`gated eval --drop` results (context `split=val,len=L,drop=RULE,tau=T` or `...,frac=F`) of each "
                   "row's finished runs, on the validation windows ");
        len_text(f, s);
        fprintf(f, ". A dropped (token, head) pair has its slice of the output projection's input set to zero. "
                   "**τ** (gated rows with a multiplicative G1 gate): the *gate* rule drops the pairs whose gate score "
                   "(mean |score| over the head) is below τ; its controls drop, in every layer, the same fraction "
                   "of pairs as the gate did there: *random* (uniformly) and *entropy* (the pairs of highest "
                   "attention entropy: heads that average over many keys). **dropped**: the share of pairs the gate rule "
                   "dropped; **FLOPs saved**: the forward FLOPs the dropped pairs no longer need, in %% of the "
                   "forward's: in the output projection wo alone, and in wo plus the pair's q·k and p·v (a G1 gate "
                   "score is known before attention runs); **PPL**; **ΔPPL**: PPL minus the run's float PPL "
                   "(`quant=float`, the same windows). Each cell: mean ± std over the row's runs (**n**).%s\n\n",
                nofloat ? " `–` in ΔPPL: the runs have no float reference (evaluated without `--quant`)." : "");
    } else
        fprintf(f, "%% Gate-sparse heads (gated eval --drop, split val): per tau the share of (token, head) pairs "
                   "the gate rule dropped, FLOPs saved (%% of the forward: wo, wo + attention), PPL and PPL minus "
                   "the float PPL of the gate rule and of its per-layer matched random and entropy controls; then "
                   "random and entropy at fixed fractions F; mean $\\pm$ std over seeds.\n");
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    if (!buf) return rep_oom(r);
    Tab t = {0};
    int rc = 0;
    if (s->ntau) {
        if (md) fprintf(f, "**Gate threshold τ, with matched controls:**\n\n");
        rc = rep_tab_done(f, &t, y, drop_tab(r, s, y, &t, buf, INF_TAU));
    }
    if (rc == 0 && s->nfrac) {
        if (md)
            fprintf(f, "**Fixed fractions F** (every row, the ungated ones too; random and entropy drop F of the pairs "
                       "in every layer; dropped and FLOPs saved: the random rule's, as the entropy rule saves "
                       "different attention FLOPs, depending on the positions it drops):\n\n");
        else
            fprintf(f, "%% Fixed fractions F: random and entropy drop F of the pairs in every layer (dropped, FLOPs: "
                       "the random rule's).\n");
        t = (Tab){0};
        rc = rep_tab_done(f, &t, y, drop_tab(r, s, y, &t, buf, INF_FRAC));
    }
    free(buf);
    return rc;
}

/* ================================================================== */
/* csv                                                                 */
/* ================================================================== */


int rep_infer_quant_csv(R *r, FILE *f, const RSweep *s) {
    size_t cap = (size_t)s->nruns + 1;
    double *a = malloc(sizeof *a * cap), *b = malloc(sizeof *b * cap);
    if (!a || !b) {
        free(a), free(b);
        return rep_oom(r);
    }
    fprintf(f, "sweep,label,scheme,len,n,float_ppl_mean,float_ppl_std,ppl_mean,ppl_std,dppl_mean,dppl_std,"
               "dppl_pct_mean,dppl_pct_std,m_act_mean,m_act_std,vs_baseline_dppl_pct,vs_baseline_test,"
               "vs_baseline_pairs,vs_baseline_p,corr_n,corr_pearson_r,corr_pearson_p,corr_spearman_rho\n");
    for (int k = 0; k < s->nvars; k++)
        for (int q = 0; q < s->nqs; q++) {
            const char *nm = s->qs[q].name;
            double m, sd, fm, fsd, am, asd;
            int n = rep_infer_stats(s, k, INF_QUANT, nm, NAN, INF_PPL, a, &m, &sd);
            if (!n) continue;
            rep_csv_row_head(f, s, k);
            csv_fput_text(nm, f);
            fputc(',', f);
            rep_csv_num(f, s->inf_len > 0 ? (double)s->inf_len : NAN);
            fprintf(f, "%d,", n);
            rep_infer_stats(s, k, INF_QUANT, "float", NAN, INF_PPL, a, &fm, &fsd);
            rep_csv_num(f, fm);
            rep_csv_num(f, fsd);
            rep_csv_num(f, m);
            rep_csv_num(f, sd);
            rep_infer_stats(s, k, INF_QUANT, nm, NAN, INF_DPPL, a, &m, &sd);
            rep_csv_num(f, m);
            rep_csv_num(f, sd);
            rep_infer_stats(s, k, INF_QUANT, nm, NAN, INF_DPCT, a, &m, &sd);
            rep_csv_num(f, m);
            rep_csv_num(f, sd);
            row_m_act(s, k, a, &am, &asd);
            rep_csv_num(f, am);
            rep_csv_num(f, asd);
            TTest t;
            int paired;
            if (s->base >= 0 && k != s->base && vs_base(s, k, nm, a, b, &t, &paired) == 0) {
                rep_csv_num(f, t.diff);
                fprintf(f, "%s,", paired ? "paired" : "welch");
                if (paired) fprintf(f, "%d", paired);
                fputc(',', f);
                rep_csv_num(f, t.p);
            } else
                fputs(",,,,", f);
            const RepCorr *c = &s->qs[q].corr;
            fprintf(f, "%d,", c->n);
            rep_csv_num(f, c->r);
            rep_csv_num(f, c->p);
            rep_csv_val(f, c->rho, '\n');
        }
    free(a);
    free(b);
    return 0;
}

int rep_infer_drop_csv(R *r, FILE *f, const RSweep *s) {
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    if (!buf) return rep_oom(r);
    static const int xs[] = {INF_DROP, INF_FLOPS_WO, INF_FLOPS_ATTN, INF_PPL, INF_DPPL, INF_DPCT};
    fprintf(f, "sweep,label,rule,setting,value,len,n,drop_mean,drop_std,flops_wo_mean,flops_wo_std,flops_attn_mean,"
               "flops_attn_std,ppl_mean,ppl_std,dppl_mean,dppl_std,dppl_pct_mean,dppl_pct_std\n");
    for (int k = 0; k < s->nvars; k++)
        for (int kind = INF_TAU; kind <= INF_FRAC; kind++) {
            int nv = kind == INF_TAU ? s->ntau : s->nfrac;
            for (int j = 0; j < nv; j++)
                for (int q = kind == INF_TAU ? 0 : 1; q < 3; q++) {
                    double v = kind == INF_TAU ? s->taus[j] : s->fracs[j], m, sd;
                    int n = rep_infer_stats(s, k, kind, RULES[q], v, INF_PPL, buf, &m, &sd);
                    if (!n) continue;
                    rep_csv_row_head(f, s, k);
                    fprintf(f, "%s,%s,%.10g,", RULES[q], kind == INF_TAU ? "tau" : "frac", v);
                    rep_csv_num(f, s->inf_len > 0 ? (double)s->inf_len : NAN);
                    fprintf(f, "%d", n);
                    for (size_t x = 0; x < sizeof xs / sizeof xs[0]; x++) {
                        rep_infer_stats(s, k, kind, RULES[q], v, xs[x], buf, &m, &sd);
                        fputc(',', f);
                        rep_csv_num(f, m);
                        if (!isnan(sd)) fprintf(f, "%.10g", sd);
                    }
                    fputc('\n', f);
                }
        }
    free(buf);
    return 0;
}
