/*
 * report_family.c — `gated report`: the statistics that span sweeps, or
 * need the whole table (report.h says what they are for the reader).
 *
 * Holm families.  Sweeps may share runs: a run id is the hash of its
 * config, so table1_positions, table3_nonlinearity, table4_sink and
 * activations all hold the very same baseline and G1 runs, and the same
 * contrast (G1 against that baseline) appears in four tables.  Holm per
 * table would adjust one p for 13 tests in one table and 6 in another, so
 * the same p could be starred in one and not in the next.  So a family is
 * per sweep group: the sweeps whose baseline rows are the same set of runs
 * (the sorted run ids, whatever their status) form a group; its family is
 * every distinct contrast with a p over the group's tables, a contrast
 * being a row's set of runs against its reference row's set (the baseline
 * row, or under the lr rule the baseline's line at the row's lr), counted
 * once however many tables show it (the same runs give the same test, so
 * one p).  Holm over the family gives each row its p (Holm).  Every sweep
 * of the database is loaded for this (report_run.c), --sweep or not, so a
 * row's p (Holm) does not depend on which tables are written.
 *
 * Equivalence.  p (TOST) is stats_tost of the row's own test (paired or
 * Welch: its Δ, standard error and df) within ±R.margin; the verdict is
 * "differs" when p (Holm) < 0.05, else "equivalent" when p (TOST) < 0.05
 * (not adjusted: a claim of equivalence is made per row, and adjusting it
 * would only make it rarer), else "inconclusive".
 *
 * Minimum detectable effect.  Per table, for its paired rows (2+ seed
 * pairs): sd_d, the per-seed difference std pooled over them (variances
 * weighted by pairs - 1), n the pair count most of them have (the larger
 * on a tie), and stats_paired_mde at alpha 0.05 and at the Holm worst
 * case alpha / m (m the family size: the smallest p of the family is
 * compared with alpha / m), power 0.8.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The MDE's level and power (report.h). */
#define MDE_ALPHA 0.05
#define MDE_POWER 0.8

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Row v's run ids, sorted, as one string ("LEN:ID" each: no separator can
 * be confused with an id's text).  Heap; NULL and the error set. */
static char *runset(R *r, const RSweep *s, const RVar *v) {
    const char **ids = malloc(sizeof *ids * (size_t)(v->nruns + 1));
    if (!ids) return rep_oom(r), NULL;
    size_t len = 1;
    for (int i = 0; i < v->nruns; i++) {
        ids[i] = s->runs[v->runs[i]].run_id;
        len += strlen(ids[i]) + 24;
    }
    qsort(ids, (size_t)v->nruns, sizeof *ids, str_cmp);
    char *out = malloc(len);
    if (!out) {
        free(ids);
        return rep_oom(r), NULL;
    }
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < v->nruns; i++) o += (size_t)snprintf(out + o, len - o, "%zu:%s", strlen(ids[i]), ids[i]);
    free(ids);
    return out;
}

/* A contrast of a group's family. */
typedef struct {
    int group;
    char *row, *ref; /* run sets (runset) */
    double p, adj;
} Contrast;

/* The index of the contrast (group, row, ref), added with p if new; -1 on
 * failure. */
static int contrast_of(R *r, Contrast **c, int *n, int *cap, int group, char *row, char *ref, double p) {
    for (int i = 0; i < *n; i++)
        if ((*c)[i].group == group && strcmp((*c)[i].row, row) == 0 && strcmp((*c)[i].ref, ref) == 0) {
            free(row);
            free(ref);
            return i;
        }
    if (rep_grow(r, (void **)c, cap, *n + 1, sizeof **c)) {
        free(row);
        free(ref);
        return -1;
    }
    (*c)[*n] = (Contrast){group, row, ref, p, NAN};
    return (*n)++;
}

/* Sweep s's minimum detectable effect (RSweep.mde*). */
static void table_mde(RSweep *s) {
    double ss = 0;
    int dof = 0, best = 0;
    s->mde_n = s->mde_rows = 0;
    s->mde_sd = s->mde = s->mde_holm = NAN;
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        if (!v->paired || isnan(v->sd_d)) continue;
        ss += (v->n_pairs - 1) * v->sd_d * v->sd_d;
        dof += v->n_pairs - 1;
        s->mde_rows++;
        int same = 0; /* rows with this pair count: the most common one, the larger on a tie */
        for (int j = 0; j < s->nvars; j++) same += s->vars[j].paired && s->vars[j].n_pairs == v->n_pairs;
        if (same > best || (same == best && v->n_pairs > s->mde_n)) best = same, s->mde_n = v->n_pairs;
    }
    if (!dof) return;
    s->mde_sd = sqrt(ss / dof);
    s->mde = stats_paired_mde(s->mde_sd, s->mde_n, MDE_ALPHA, MDE_POWER);
    if (s->fam_m >= 1) s->mde_holm = stats_paired_mde(s->mde_sd, s->mde_n, MDE_ALPHA / s->fam_m, MDE_POWER);
}

int rep_families(R *r) {
    char **base = calloc((size_t)r->nsw + 1, sizeof *base);
    int *off = calloc((size_t)r->nsw + 1, sizeof *off), total = 0;
    for (int i = 0; i < r->nsw; i++) total += r->sw[i].nvars;
    int *ci = malloc(sizeof *ci * (size_t)(total + 1));
    Contrast *c = NULL;
    int nc = 0, ccap = 0, rc = !base || !off || !ci ? rep_oom(r) : 0;
    /* the groups: sweeps whose baseline rows hold the same runs */
    for (int i = 0; rc == 0 && i < r->nsw; i++) {
        RSweep *s = &r->sw[i];
        off[i + 1] = off[i] + s->nvars;
        s->group = -1;
        if (s->base < 0) continue;
        if (!(base[i] = runset(r, s, &s->vars[s->base]))) rc = -1;
        for (int j = 0; rc == 0 && j <= i && s->group < 0; j++)
            if (base[j] && strcmp(base[j], base[i]) == 0) s->group = j;
    }
    /* each group's distinct contrasts with a p */
    for (int i = 0; rc == 0 && i < r->nsw; i++) {
        RSweep *s = &r->sw[i];
        for (int k = 0; rc == 0 && k < s->nvars; k++) {
            RVar *v = &s->vars[k];
            ci[off[i] + k] = -1;
            if (!v->have_test || s->group < 0) continue;
            char *row = runset(r, s, v), *ref = row ? runset(r, s, &s->vars[v->ref]) : NULL;
            if (!ref) {
                free(row);
                rc = -1;
            } else if ((ci[off[i] + k] = contrast_of(r, &c, &nc, &ccap, s->group, row, ref, v->t.p)) < 0)
                rc = -1;
        }
    }
    /* Holm within each family */
    double *p = malloc(sizeof *p * (size_t)(nc + 1));
    int *idx = malloc(sizeof *idx * (size_t)(nc + 1));
    if (rc == 0 && (!p || !idx)) rc = rep_oom(r);
    for (int g = 0; rc == 0 && g < r->nsw; g++) {
        int m = 0;
        for (int q = 0; q < nc; q++)
            if (c[q].group == g) idx[m] = q, p[m++] = c[q].p;
        if (!m) continue;
        if (stats_holm(p, m, p)) rc = rep_oom(r);
        for (int q = 0; rc == 0 && q < m; q++) c[idx[q]].adj = p[q];
        for (int i = 0; i < r->nsw; i++)
            if (r->sw[i].group == g) r->sw[i].fam_m = m;
    }
    for (int i = 0; rc == 0 && i < r->nsw; i++) {
        RSweep *s = &r->sw[i];
        for (int k = 0; k < s->nvars; k++) {
            RVar *v = &s->vars[k];
            int q = ci[off[i] + k];
            v->p_holm = q >= 0 ? c[q].adj : NAN;
            v->p_tost = v->have_test ? stats_tost(&v->t, r->margin) : NAN;
        }
        table_mde(s);
    }
    for (int i = 0; base && i < r->nsw; i++) free(base[i]);
    for (int q = 0; q < nc; q++) {
        free(c[q].row);
        free(c[q].ref);
    }
    free(base);
    free(off);
    free(ci);
    free(c);
    free(p);
    free(idx);
    return rc;
}

const char *rep_verdict(const R *r, const RVar *v) {
    (void)r;
    if (!v->have_test) return NULL;
    if (v->p_holm < 0.05) return "differs";
    if (v->p_tost < 0.05) return "equivalent";
    return "inconclusive";
}

void rep_family_text(const R *r, FILE *f, const RSweep *s, int md) {
    if (s->base < 0) return;
    int shared = 0;
    for (int i = 0; i < r->nsw; i++) shared += r->sw[i].group == s->group && &r->sw[i] != s;
    if (!s->fam_m)
        fprintf(f, "No row has a p (a test needs 2 paired seeds, or 2 finished runs in each row), so no Holm family.");
    else if (!shared)
        fprintf(f, "Holm–Bonferroni family: the %d contrast%s with a p of this table (no other sweep has the same "
                   "baseline runs).",
                s->fam_m, s->fam_m == 1 ? "" : "s");
    else {
        fprintf(f, "Holm–Bonferroni family: %d distinct contrast%s with a p over the sweeps ", s->fam_m,
                s->fam_m == 1 ? "" : "s");
        for (int i = 0, k = 0; i < r->nsw; i++) {
            if (r->sw[i].group != s->group) continue;
            fputs(k == 0 ? "" : k == shared ? " and " : ", ", f);
            if (md)
                rep_md_code(f, r->sw[i].name);
            else
                store_fput_escaped(f, r->sw[i].name);
            k++;
        }
        fprintf(f, ", whose baseline rows are the same runs (a contrast shown in several of their tables is counted "
                   "once).");
    }
    if (s->fam_m >= 1 && s->fam_m < r->mx_m)
        fprintf(f, " A small family: Holm adjusts over %d contrast%s here, %s over %d, so a `differs` here is weaker "
                   "evidence than one there.",
                s->fam_m, s->fam_m == 1 ? "" : "s", r->mx_other ? "the committed matrix" : "this database's largest family",
                r->mx_m);
    if (s->mde_rows == 0) {
        fprintf(f, " Minimum detectable effect: none (no row is paired by seed with 2 or more pairs).");
        return;
    }
    const char *pm = md ? "±" : "+-";
    fprintf(f,
            " Minimum detectable effect: with n = %d seed pairs this table detects |Δ| ≥ %.4f nats at %.0f%% power "
            "(paired t-test, two-sided α = %g; σ_d = %.4f, the std of the per-seed differences pooled over its %d "
            "paired row%s)",
            s->mde_n, s->mde, 100 * MDE_POWER, MDE_ALPHA, s->mde_sd, s->mde_rows, s->mde_rows == 1 ? "" : "s");
    if (s->fam_m > 1 && !isnan(s->mde_holm))
        fprintf(f, ", and |Δ| ≥ %.4f at the Holm worst case α/m = %g/%d", s->mde_holm, MDE_ALPHA, s->fam_m);
    fprintf(f, "; equivalence margin %s%g nats.", pm, r->margin);
}
