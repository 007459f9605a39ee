/*
 * report_rank.c — `gated report`: which row of a sweep is best and how
 * sure, every pair of rows, and what the tok/s column can say.
 *
 * Ranking.  The rows with a finished run, by ascending mean final val loss
 * (ties in sweep order).  Each pair of them (up to REP_PAIRS_MAX ranked
 * rows; above, the best row against each other row) is tested as the main
 * table's contrasts are (report_load.c): paired by seed when the two rows
 * share 2 or more seeds with finished runs, else Welch's test; Δ = the
 * lower-ranked row minus the higher-ranked one (positive: the higher one
 * is better).  The pairs with a p are one Holm family of their own (the
 * page names it: "the 3 pairwise contrasts of this sweep"), apart from the
 * main table's family of contrasts against the reference row
 * (report_family.c); p (TOST) and the verdict as there.  The best row's
 * line says how sure: resolved when its contrast with every other ranked
 * row has p (Holm) < 0.05, else which rows it is not separated from.
 *
 * Small families.  Holm over 1 contrast adjusts nothing, so a p that
 * passes in a one-row sweep may not pass in the committed matrix, whose
 * family is large.  Where a family is smaller than the largest family of
 * the matrix database (ReportOpts.matrix_db: the committed results) or,
 * without one, of this database, the verdict says so with both sizes
 * (rep_small_family).
 *
 * tok/s.  The training loop's own rate (summary tokens_per_s) on whatever
 * else the machine ran: the cell gives the mean over the row's finished
 * runs and its min–max, and marks the row when a run ran beside other
 * jobs: its 1-minute load average at its end (summary load_end, written
 * by `gated train` since the summary key exists) minus its own threads was
 * BUSY_LOAD or more.  At a loop's end the average holds the run itself and
 * whatever else ran; at its start (load_start, stored too) it still holds
 * the previous run of a sequential sweep, so the mark reads the end.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Other runnable work, in CPUs, beside a run that marks it. */
#define BUSY_LOAD 0.5

static int beside_others(const RRun *u) {
    return !isnan(u->load_end) && u->load_end - (u->threads > 0 ? u->threads : 1) >= BUSY_LOAD;
}

const char *rep_verdict_p(double p_holm, double p_tost) {
    if (p_holm < 0.05) return "differs";
    if (p_tost < 0.05) return "equivalent";
    return "inconclusive";
}

void rep_small_family(const R *r, int m, char *buf, size_t cap) {
    buf[0] = '\0';
    if (m >= 1 && m < r->mx_m)
        snprintf(buf, cap, "; %d contrast%s in this family; %s adjusts over %d", m, m == 1 ? "" : "s",
                 r->mx_other ? "the committed matrix" : "this database's largest family", r->mx_m);
}

/* Each row's tok/s spread and load (RVar.tps_min, tps_max, n_load, n_busy). */
static void row_cost(const RSweep *s, RVar *v) {
    v->tps_min = v->tps_max = NAN;
    v->n_load = v->n_busy = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!rep_is_finished(u)) continue;
        if (!isnan(u->tokens_per_s)) {
            if (isnan(v->tps_min) || u->tokens_per_s < v->tps_min) v->tps_min = u->tokens_per_s;
            if (isnan(v->tps_max) || u->tokens_per_s > v->tps_max) v->tps_max = u->tokens_per_s;
        }
        if (!isnan(u->load_end)) {
            v->n_load++;
            v->n_busy += beside_others(u);
        }
    }
}

void rep_tps_cell(char *buf, size_t cap, const RVar *v, const char *dash, const char *dagger, const char *miss) {
    if (isnan(v->tokens_per_s))
        snprintf(buf, cap, "%s", miss);
    else if (v->tps_min < v->tps_max)
        snprintf(buf, cap, "%.0f (%.0f%s%.0f)%s", v->tokens_per_s, v->tps_min, dash, v->tps_max,
                 v->n_busy ? dagger : "");
    else
        snprintf(buf, cap, "%.0f%s", v->tokens_per_s, v->n_busy ? dagger : "");
}

void rep_tps_note(FILE *f, const RSweep *s, int md) {
    int fin = 0, load = 0, busy = 0;
    for (int k = 0; k < s->nvars; k++) {
        fin += s->vars[k].n_fin;
        load += s->vars[k].n_load;
        busy += s->vars[k].n_busy;
    }
    if (!fin) return;
    fprintf(f, "tok/s is each run's training-loop rate on whatever else the machine ran, not a benchmark (`gated "
               "bench` times kernels): mean (min%smax) over the finished runs. ",
            md ? "–" : "-");
    if (!load)
        fprintf(f, "No run recorded its load (summary load_end), so whether other jobs ran beside them is unknown.");
    else
        fprintf(f, "%d of the %d finished runs with a recorded load ran beside other jobs (1-minute load average at "
                   "the end minus the run's threads ≥ %g)%s%s.",
                busy, load, BUSY_LOAD, busy ? (md ? ", their rows marked †" : ", their rows marked +") : "",
                load < fin ? "; the others recorded none" : "");
}

/* ------------------------------------------------------------------ */
/* ranking and pairs                                                   */
/* ------------------------------------------------------------------ */

static const RSweep *sort_sweep; /* qsort has no argument; the report is single-threaded */

static int rank_cmp(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    double la = sort_sweep->vars[a].loss_mean, lb = sort_sweep->vars[b].loss_mean;
    if (la != lb) return la < lb ? -1 : 1;
    return a - b;
}

/* Pair p's test (x, y: cap >= the sweep's runs). */
static void pair_test(const R *r, const RSweep *s, RPair *p, double *x, double *y) {
    const RVar *va = &s->vars[p->a], *vb = &s->vars[p->b];
    p->p_holm = p->p_tost = NAN;
    int n = rep_paired_values(s, vb, va, offsetof(RRun, val_loss), x, y, NULL);
    if (n >= 2 && stats_paired(x, y, n, &p->t) == 0) {
        p->have_test = p->paired = 1;
        p->n_pairs = n;
        p->delta = p->t.diff;
    } else {
        int nb = rep_finished_values(s, vb, offsetof(RRun, val_loss), x);
        int na = rep_finished_values(s, va, offsetof(RRun, val_loss), y);
        p->delta = vb->loss_mean - va->loss_mean;
        p->have_test = na >= 2 && nb >= 2 && stats_welch(x, nb, y, na, &p->t) == 0;
    }
    if (p->have_test) p->p_tost = stats_tost(&p->t, r->margin);
}

/* The Holm family of the sweep's pairs (RSweep.pair_m, RPair.p_holm). */
static int pairs_holm(R *r, RSweep *s) {
    double *p = malloc(sizeof *p * (size_t)(s->npairs + 1));
    int *idx = malloc(sizeof *idx * (size_t)(s->npairs + 1));
    int rc = !p || !idx ? rep_oom(r) : 0;
    s->pair_m = 0;
    for (int i = 0; rc == 0 && i < s->npairs; i++)
        if (s->pairs[i].have_test) idx[s->pair_m] = i, p[s->pair_m++] = s->pairs[i].t.p;
    if (rc == 0 && s->pair_m && stats_holm(p, s->pair_m, p)) rc = rep_oom(r);
    for (int q = 0; rc == 0 && q < s->pair_m; q++) s->pairs[idx[q]].p_holm = p[q];
    free(p);
    free(idx);
    return rc;
}

int rep_rank_sweep(R *r, RSweep *s) {
    for (int k = 0; k < s->nvars; k++) {
        row_cost(s, &s->vars[k]);
        s->vars[k].rank = -1;
    }
    if (!(s->order = malloc(sizeof *s->order * (size_t)(s->nvars + 1)))) return rep_oom(r);
    for (int k = 0; k < s->nvars; k++)
        if (s->vars[k].n_fin > 0 && !isnan(s->vars[k].loss_mean)) s->order[s->nrank++] = k;
    sort_sweep = s;
    qsort(s->order, (size_t)s->nrank, sizeof *s->order, rank_cmp);
    for (int i = 0; i < s->nrank; i++) s->vars[s->order[i]].rank = i;
    if (s->nrank < 2) return 0;
    int all = s->nrank <= REP_PAIRS_MAX, n = all ? s->nrank * (s->nrank - 1) / 2 : s->nrank - 1;
    size_t cap = (size_t)s->nruns + 1;
    double *x = malloc(sizeof *x * cap), *y = malloc(sizeof *y * cap);
    s->pairs = calloc((size_t)n, sizeof *s->pairs);
    int rc = !x || !y || !s->pairs ? rep_oom(r) : 0;
    for (int i = 0; rc == 0 && i < s->nrank; i++)
        for (int j = i + 1; j < s->nrank && (all || i == 0); j++) {
            RPair *p = &s->pairs[s->npairs++];
            p->a = s->order[i];
            p->b = s->order[j];
            pair_test(r, s, p, x, y);
        }
    free(x);
    free(y);
    return rc ? -1 : pairs_holm(r, s);
}

int rep_has_rank(const RSweep *s) { return s->nrank >= 3; }

/* The pair of rows a and b (either order); NULL if not tested. */
static const RPair *pair_of(const RSweep *s, int a, int b) {
    for (int i = 0; i < s->npairs; i++)
        if ((s->pairs[i].a == a && s->pairs[i].b == b) || (s->pairs[i].a == b && s->pairs[i].b == a))
            return &s->pairs[i];
    return NULL;
}

/* "differs", "equivalent within ±0.02" or "inconclusive"; a "differs"
 * from a small family of m says so (rep_small_family). */
static char *verdict_cell(R *r, const RPair *p, const RepStyle *y, int m) {
    if (!p || !p->have_test) return rep_dup(r, y->miss);
    const char *v = rep_verdict_p(p->p_holm, p->p_tost);
    if (strcmp(v, "equivalent") == 0) return rep_fmt(r, "equivalent within %s%g", y->md ? "±" : "$\\pm$", r->margin);
    char note[160] = "";
    if (strcmp(v, "differs") == 0) rep_small_family(r, m, note, sizeof note);
    return rep_fmt(r, "%s%s", v, note);
}

static char *p_cell(R *r, double p, const RepStyle *y) {
    if (isnan(p)) return rep_dup(r, y->miss);
    char b[32];
    rep_fmt_p(b, sizeof b, p);
    return rep_dup(r, b);
}

/* Cells c0.. of row i: Δ, 95% CI, test, p, p (Holm), p (TOST), verdict. */
static int pair_cells(R *r, Tab *t, int i, int c0, const RPair *p, const RepStyle *y, int m) {
    if (!p) {
        for (int c = 0; c < 7; c++)
            if (rep_tab_put(t, i, c0 + c, rep_dup(r, y->miss))) return -1;
        return 0;
    }
    int rc = rep_tab_put(t, i, c0, rep_fmt(r, "%+.4f%s", p->delta, p->have_test && p->p_holm < 0.05 ? (y->md ? "*" : "$^{*}$") : ""));
    rc = rc || rep_tab_put(t, i, c0 + 1, p->have_test ? rep_fmt(r, "[%+.4f, %+.4f]", p->t.lo, p->t.hi)
                                                      : rep_dup(r, y->miss));
    rc = rc || rep_tab_put(t, i, c0 + 2, !p->have_test ? rep_dup(r, y->miss)
                                         : p->paired ? rep_fmt(r, "paired (%d)", p->n_pairs)
                                                     : rep_dup(r, "Welch"));
    rc = rc || rep_tab_put(t, i, c0 + 3, p_cell(r, p->have_test ? p->t.p : NAN, y)) ||
         rep_tab_put(t, i, c0 + 4, p_cell(r, p->p_holm, y)) || rep_tab_put(t, i, c0 + 5, p_cell(r, p->p_tost, y)) ||
         rep_tab_put(t, i, c0 + 6, verdict_cell(r, p, y, m));
    return rc ? -1 : 0;
}

/* The pair columns' headers: md, TeX (Tab escapes headers, so no math there). */
static const char *const PAIR_HEAD[2][7] = {
    {"Delta loss", "95% CI of Delta", "test", "p", "p (Holm)", "p (TOST)", "verdict"},
    {"Δ loss", "95% CI of Δ", "test", "p", "p (Holm)", "p (TOST)", "verdict"},
};

/* The ranking: rank, row, n, val loss, then the row against the best. */
static int rank_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t) {
    int rc = rep_tab_init(r, t, 11);
    static const char *const head[4] = {"rank", "variant", "n", "val loss"};
    for (int c = 0; rc == 0 && c < 11; c++) rc = rep_tab_put(t, 0, c, rep_dup(r, c < 4 ? head[c] : PAIR_HEAD[y->md][c - 4]));
    if (rc == 0) rc = rep_tab_put(t, 0, 4, rep_dup(r, y->md ? "Δ vs best" : "Delta vs best"));
    for (int q = 0; rc == 0 && q < s->nrank; q++) {
        const RVar *v = &s->vars[s->order[q]];
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_fmt(r, "%d", q + 1)) || rep_tab_put(t, i, 1, rep_dup(r, v->label)) ||
             rep_tab_put(t, i, 2, rep_fmt(r, "%d", v->n_fin)) ||
             rep_tab_put(t, i, 3, rep_ms_cell(r, y, v->loss_mean, v->loss_std, 4));
        if (rc) break;
        if (q == 0) {
            for (int c = 4; rc == 0 && c < 11; c++) rc = rep_tab_put(t, i, c, rep_dup(r, c == 4 ? "(best)" : ""));
        } else
            rc = pair_cells(r, t, i, 4, pair_of(s, s->order[0], s->order[q]), y, s->pair_m);
    }
    return rc ? -1 : 0;
}

/* Every pair, in rank order: the higher-ranked row, the lower, the test. */
static int pairs_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t) {
    int rc = rep_tab_init(r, t, 9) || rep_tab_put(t, 0, 0, rep_dup(r, "row")) || rep_tab_put(t, 0, 1, rep_dup(r, "vs"));
    for (int c = 0; rc == 0 && c < 7; c++) rc = rep_tab_put(t, 0, 2 + c, rep_dup(r, PAIR_HEAD[y->md][c]));
    for (int q = 0; rc == 0 && q < s->npairs; q++) {
        const RPair *p = &s->pairs[q];
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, s->vars[p->a].label)) ||
             rep_tab_put(t, i, 1, rep_dup(r, s->vars[p->b].label)) || pair_cells(r, t, i, 2, p, y, s->pair_m);
    }
    return rc ? -1 : 0;
}

/* The ranking's Holm family, as the page names it. */
static const char *family_name(const RSweep *s) {
    return s->nrank <= REP_PAIRS_MAX ? "pairwise contrasts of this sweep" : "contrasts of the best row with the others";
}

/* The best row's line: its contrast with the runner-up, and how sure. */
static void best_line(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    const RVar *best = &s->vars[s->order[0]], *second = &s->vars[s->order[1]];
    const RPair *p = pair_of(s, s->order[0], s->order[1]);
    int md = y->md;
    char buf[96], note[160];
    fputs(md ? "**Best: " : "% Best: ", f);
    rep_cap_label(f, md, best->label);
    rep_cell_ms(buf, sizeof buf, best->loss_mean, best->loss_std, 4, md ? " ± " : " +- ", "-");
    fprintf(f, "%s (val loss %s, n = %d). Against the runner-up ", md ? "**" : "", buf, best->n_fin);
    rep_cap_label(f, md, second->label);
    if (!p || !p->have_test) {
        fprintf(f, ": Δ = %+.4f, untested (a test needs 2 paired seeds, or 2 finished runs in each row). How sure: "
                   "not at all.\n",
                p ? p->delta : second->loss_mean - best->loss_mean);
        return;
    }
    char pr[32], ph[32];
    rep_fmt_p(pr, sizeof pr, p->t.p);
    rep_fmt_p(ph, sizeof ph, p->p_holm);
    rep_small_family(r, s->pair_m, note, sizeof note);
    fprintf(f, ": Δ = %+.4f nats [95%% CI %+.4f, %+.4f] (%s), p = %s, p (Holm over the %d %s) = %s: %s%s. ",
            p->delta, p->t.lo, p->t.hi, p->paired ? "paired by seed" : "Welch", pr, s->pair_m, family_name(s), ph,
            rep_verdict_p(p->p_holm, p->p_tost), note);
    int unsep = 0, equiv = 0;
    for (int q = 1; q < s->nrank; q++) {
        const RPair *b = pair_of(s, s->order[0], s->order[q]);
        unsep += !b || !b->have_test || !(b->p_holm < 0.05);
        equiv += b && b->have_test && !(b->p_holm < 0.05) && b->p_tost < 0.05;
    }
    fprintf(f, "%sHow sure:%s ", md ? "**" : "", md ? "**" : "");
    if (!unsep)
        fprintf(f, "resolved: lower than each of the other %d rows, p (Holm) < 0.05 in every one of its contrasts.\n",
                s->nrank - 1);
    else {
        fprintf(f, "not resolved with these seeds: not separated (p (Holm) ≥ 0.05 or untested) from %d of the other "
                   "%d rows:",
                unsep, s->nrank - 1);
        for (int q = 1, k = 0; q < s->nrank; q++) {
            const RPair *b = pair_of(s, s->order[0], s->order[q]);
            if (b && b->have_test && b->p_holm < 0.05) continue;
            fputs(k++ ? ", " : " ", f);
            rep_cap_label(f, md, s->vars[s->order[q]].label);
        }
        fprintf(f, "%s", equiv ? "" : ".");
        if (equiv)
            fprintf(f, " (%d of them equivalent to it within %s%g nats by TOST).", equiv, md ? "±" : "+-", r->margin);
        fputc('\n', f);
    }
}

int rep_rank_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    int all = s->nrank <= REP_PAIRS_MAX;
    if (y->md)
        fprintf(f, "### Ranking and all pairs\n\n"
                   "The rows with finished runs, by mean final val loss (lowest first). %s, tested as the main "
                   "table's contrasts (paired by seed when the two rows share 2 or more seeds, else Welch); Δ = the "
                   "lower-ranked row minus the higher-ranked one (positive: the higher-ranked row is better). "
                   "**p (Holm)** here is over the %d %s (those with a p): a family of its own, apart from the main table's "
                   "(contrasts against the reference row). `*`: p (Holm) < 0.05. Another reference row for the main "
                   "table: `gated report --ref LABEL`.\n\n",
                all ? "Every pair of them" : "More than " REP_PAIRS_MAX_TEXT " rows: each row against the best only",
                s->pair_m, family_name(s));
    else
        fprintf(f, "%% Ranking by mean final val loss; %s; Delta = lower-ranked minus higher-ranked row; p (Holm) "
                   "over the %d contrasts of this ranking (a family of its own).\n",
                all ? "every pair" : "each row against the best", s->pair_m);
    best_line(r, f, s, y);
    fputs(y->md ? "\n" : "", f);
    Tab t = {0};
    if (rep_tab_done(f, &t, y, rank_tab(r, s, y, &t))) return -1;
    if (!all) return 0;
    if (y->md) fprintf(f, "Every pair:\n\n");
    Tab u = {0};
    return rep_tab_done(f, &u, y, pairs_tab(r, s, y, &u));
}

int rep_rank_csv(R *r, FILE *f, const RSweep *s) {
    fprintf(f, "sweep,row,vs,rank_row,rank_vs,delta_val_loss,test,n_pairs,delta_ci_lo,delta_ci_hi,t,df,p_raw,p_holm,"
               "holm_family_size,p_tost,tost_margin,verdict,matrix_family_size\n");
    for (int q = 0; q < s->npairs; q++) {
        const RPair *p = &s->pairs[q];
        rep_csv_row_head(f, s, p->a);
        csv_fput_text(s->vars[p->b].label, f);
        fprintf(f, ",%d,%d,", s->vars[p->a].rank + 1, s->vars[p->b].rank + 1);
        rep_csv_num(f, p->delta);
        fprintf(f, "%s,", p->have_test ? (p->paired ? "paired" : "welch") : "");
        if (p->paired) fprintf(f, "%d", p->n_pairs);
        fputc(',', f);
        rep_csv_num(f, p->have_test ? p->t.lo : NAN);
        rep_csv_num(f, p->have_test ? p->t.hi : NAN);
        rep_csv_num(f, p->have_test ? p->t.t : NAN);
        rep_csv_num(f, p->have_test ? p->t.df : NAN);
        rep_csv_num(f, p->have_test ? p->t.p : NAN);
        rep_csv_num(f, p->p_holm);
        fprintf(f, "%d,", s->pair_m);
        rep_csv_num(f, p->p_tost);
        rep_csv_num(f, p->have_test ? r->margin : NAN);
        fprintf(f, "%s,", p->have_test ? rep_verdict_p(p->p_holm, p->p_tost) : "");
        if (r->mx_m) fprintf(f, "%d", r->mx_m);
        fputc('\n', f);
    }
    return 0;
}
