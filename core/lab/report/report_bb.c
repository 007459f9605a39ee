/*
 * report_bb.c — `gated report`: the Bigram-Backcopy probes (`data.corpus:
 * bb` runs; core/run/probes.c, stored by core/run/train.c).
 *
 * Per finished run (rep_bb_load_run), every bb_* metric at its context's
 * last step, in one query (the keys bound); a run with any of them is a
 * Bigram-Backcopy run (RRun.has_bb).  Its *BB head* is the query head
 * (context layer=L,head=H) with the largest bb_bos_attn_other, the first
 * in (layer, head) order on ties: the head a sink forms in, since the sink
 * test of such runs reads that measure (probes.h).  RRun.bbv holds:
 *   BB_LOSS_T, BB_LOSS_O  bb_loss_trigger, bb_loss_other (context '')
 *   BB_BOS_O_MAX          bb_bos_attn_other of the BB head
 *   BB_BOS_O              bb_bos_attn_other '' (mean over layers of the
 *                         mean over heads)
 *   BB_BOS_T, BB_PREV_T, BB_DRAIN   bb_bos_attn_trigger,
 *                         bb_prev_attn_trigger, bb_value_drain of the BB head
 *   BB_PEAK               bb_residual_peak '' (the largest over layers)
 *   BB_GATE_T, BB_GATE_O  bb_gate_trigger, bb_gate_other '' (gated runs)
 *   BB_NONE_O_H, BB_NONE_O  bb_none_attn_other of the BB head, and ''
 *                         (runs with the attention-row probes; NAN before)
 * Per row (rep_bb_row): each value's mean and sample std over the row's
 * finished runs that have it, and the most common place of the BB head
 * (the first run's on ties).  The section is a Tab (report_sections.c) in
 * md and tex, and SWEEP-bb.csv (a line per row) in csv format; the plots
 * (attention on BOS and the two losses against step, the gate-score
 * histograms by query type) are report_plot_sections.c's.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const REP_BB_BOS_KEYS[2] = {"bb_bos_attn_other", "bb_bos_attn_trigger"};
const char *const REP_BB_LOSS_KEYS[2] = {"bb_loss_other", "bb_loss_trigger"};
const char *const REP_BB_GATE_KEYS[2] = {"bb_gate_other", "bb_gate_trigger"};

/* ================================================================== */
/* loading                                                             */
/* ================================================================== */

/* The keys read, in the order of the query's parameters ?2 .. */
enum { K_LOSS_T, K_LOSS_O, K_BOS_T, K_BOS_O, K_PREV_T, K_DRAIN, K_PEAK, K_GATE_T, K_GATE_O, K_NONE_O, NK };
static const char *const KEYS[NK] = {"bb_loss_trigger",  "bb_loss_other",        "bb_bos_attn_trigger",
                                     "bb_bos_attn_other", "bb_prev_attn_trigger", "bb_value_drain",
                                     "bb_residual_peak",  "bb_gate_trigger",      "bb_gate_other",
                                     "bb_none_attn_other"};

/* A run's values while they are read: context '' per key, and the per-head
 * ones. */
typedef struct {
    double all[NK];
    HeadMap head[NK];
    int any;
} BBLoad;

/* RepRowFn on (key, context, value). */
static int bb_add(R *r, void *arg, sqlite3_stmt *st) {
    BBLoad *b = arg;
    const char *key = rep_col_text(st, 0), *ctx = rep_col_text(st, 1);
    int k = 0;
    while (k < NK && strcmp(KEYS[k], key) != 0) k++;
    if (k == NK) return 0;
    b->any = 1;
    double x = rep_col_real(st, 2);
    if (!*ctx) {
        b->all[k] = x;
        return 0;
    }
    long h, l = rep_parse_layer_head(ctx, &h);
    if (l < 0 || h < 0 || l >= HEADMAP_MAX || h >= HEADMAP_MAX) return 0; /* a layer's mean, or not a head */
    return rep_headmap_set(r, &b->head[k], (int)l, (int)h, x);
}

/* m at (l, h), NAN outside it. */
static double head_at(const HeadMap *m, int l, int h) {
    return l >= 0 && h >= 0 && l < m->nl && h < m->nh ? m->v[l * m->nh + h] : NAN;
}

int rep_bb_load_run(R *r, RRun *u) {
    BBLoad b = {.any = 0};
    for (int k = 0; k < NK; k++) b.all[k] = NAN;
    sqlite3_stmt *st;
    int rc = rep_q_prep(r, &st,
                        "SELECT m.key, m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key IN"
                        " (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) AND m.step = (SELECT max(x.step) FROM metrics x"
                        " WHERE x.run_id = m.run_id AND x.key = m.key AND x.context = m.context)"
                        " ORDER BY m.key, m.context",
                        "ttttttttttt", u->run_id, KEYS[0], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6],
                        KEYS[7], KEYS[8], KEYS[9]);
    if (rc == 0) rc = rep_q_rows(r, st, bb_add, &b);
    if (rc == 0 && (u->has_bb = b.any)) {
        double best = rep_headmap_argmax(&b.head[K_BOS_O], &u->bb_l, &u->bb_h);
        u->bbv[BB_LOSS_T] = b.all[K_LOSS_T];
        u->bbv[BB_LOSS_O] = b.all[K_LOSS_O];
        u->bbv[BB_BOS_O_MAX] = best;
        u->bbv[BB_BOS_O] = b.all[K_BOS_O];
        u->bbv[BB_BOS_T] = head_at(&b.head[K_BOS_T], u->bb_l, u->bb_h);
        u->bbv[BB_PREV_T] = head_at(&b.head[K_PREV_T], u->bb_l, u->bb_h);
        u->bbv[BB_DRAIN] = head_at(&b.head[K_DRAIN], u->bb_l, u->bb_h);
        u->bbv[BB_PEAK] = b.all[K_PEAK];
        u->bbv[BB_GATE_T] = b.all[K_GATE_T];
        u->bbv[BB_GATE_O] = b.all[K_GATE_O];
        u->bbv[BB_NONE_O_H] = head_at(&b.head[K_NONE_O], u->bb_l, u->bb_h);
        u->bbv[BB_NONE_O] = b.all[K_NONE_O];
    }
    for (int k = 0; k < NK; k++) free(b.head[k].v);
    return rc;
}

/* Whether run u counts in its row's BB statistics. */
static int bb_counts(const RRun *u) { return rep_is_finished(u) && u->has_bb; }

void rep_bb_row(const RSweep *s, RVar *v, double *buf) {
    v->n_bb = 0;
    v->bb_where = -1;
    int best = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!bb_counts(u)) continue;
        v->n_bb++;
        if (u->bb_l < 0) continue;
        int same = 0; /* runs whose BB head is at the same place: the most common place wins, the first on ties */
        for (int j = 0; j < v->nruns; j++) {
            const RRun *w = &s->runs[v->runs[j]];
            same += bb_counts(w) && w->bb_l == u->bb_l && w->bb_h == u->bb_h;
        }
        if (same > best) best = same, v->bb_where = v->runs[i];
    }
    rep_row_stats(s, v, bb_counts, offsetof(RRun, bbv), BB_NV, v->bb_m, v->bb_sd, buf);
}

/* ================================================================== */
/* md and tex                                                          */
/* ================================================================== */

/* The table's value columns: header, value, decimals. */
static const struct {
    const char *head;
    int val, prec;
} COLS[] = {
    {"loss trigger", BB_LOSS_T, 4},
    {"loss other", BB_LOSS_O, 4},
    {"BOS attn other (head)", BB_BOS_O_MAX, 3},
    {"BOS attn other (mean)", BB_BOS_O, 3},
    {"nothing other (head)", BB_NONE_O_H, 3},
    {"nothing other (mean)", BB_NONE_O, 3},
    {"BOS attn trigger (head)", BB_BOS_T, 3},
    {"prev attn trigger (head)", BB_PREV_T, 3},
    {"value drain (head)", BB_DRAIN, 3},
    {"residual peak", BB_PEAK, 2},
    {"gate trigger", BB_GATE_T, 3},
    {"gate other", BB_GATE_O, 3},
};
enum { NCOLS = (int)(sizeof COLS / sizeof COLS[0]), FIRST = 3 }; /* variant, seeds, head, then COLS */

/* The table: a line per row. */
static int bb_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t) {
    int rc = rep_tab_init(r, t, FIRST + NCOLS) || rep_tab_put(t, 0, 0, rep_dup(r, "variant")) ||
             rep_tab_put(t, 0, 1, rep_dup(r, "seeds")) || rep_tab_put(t, 0, 2, rep_dup(r, "head"));
    for (int j = 0; rc == 0 && j < NCOLS; j++) rc = rep_tab_put(t, 0, FIRST + j, rep_dup(r, COLS[j].head));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        const RRun *w = v->bb_where >= 0 ? &s->runs[v->bb_where] : NULL;
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, v->label)) || rep_tab_put(t, i, 1, rep_fmt(r, "%d", v->n_bb)) ||
             rep_tab_put(t, i, 2, w ? rep_fmt(r, "L%d.H%d", w->bb_l, w->bb_h) : rep_dup(r, y->miss));
        for (int j = 0; rc == 0 && j < NCOLS; j++)
            rc = rep_tab_put(t, i, FIRST + j,
                             rep_ms_cell(r, y, rep_zero_if_rounds(v->bb_m[COLS[j].val], COLS[j].prec),
                                         v->bb_sd[COLS[j].val], COLS[j].prec));
    }
    return rc ? -1 : 0;
}

int rep_bb_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    if (y->md)
        fprintf(f, "### Bigram-Backcopy probes\n\n"
                   "Runs on the Bigram-Backcopy task (`data.corpus: bb`), at each run's last evaluation on the "
                   "validation windows; mean ± sample std over the row's finished runs (**seeds**). A query position "
                   "i ≥ 1 is a *trigger query* when the backcopy rule decides the next token (i ≥ 2 and token i is a "
                   "trigger), else an *other query*. **loss trigger**, **loss other**: validation loss (nats) at "
                   "trigger positions and at all other positions. The *BB head* of a run is its query head with the "
                   "largest attention on BOS from other queries (the measure of its sink test); **head**: where it "
                   "is (layer.head; the most common place over seeds). **BOS attn other (head)**: that head's "
                   "attention on BOS from other queries; **(mean)**: the same averaged over every layer and head. "
                   "**nothing other (head)**, **(mean)**: the mass on *nothing*, 1 − the sum of a query's attention "
                   "weights, over other queries, of the BB head and averaged over every layer and head (0 for softmax, "
                   "where rows sum to 1; `–` for runs recorded before this probe). "
                   "**BOS attn trigger (head)**, **prev attn trigger (head)**: the BB head's attention on BOS and on "
                   "the previous token (position i − 1) from trigger queries: a formed sink head is dormant on BOS "
                   "for other queries and active, copying token i − 1, for triggers. **value drain (head)**: mean "
                   "‖v₀‖ / mean ‖vᵢ‖ (i ≥ 1) of the values the BB head reads (below 1: BOS's value is drained). "
                   "**residual peak**: mean ‖h₀‖ / mean ‖hᵢ‖ (i ≥ 1) of a layer's output residual stream, the "
                   "largest over layers (above 1: a peak at BOS). **gate trigger**, **gate other** (gated rows; `–` "
                   "otherwise): the mean gate score at trigger and at other positions ≥ 1, over the gated heads and "
                   "layers.\n\n");
    else
        fprintf(f, "%% Bigram-Backcopy probes (data.corpus bb), last step, mean $\\pm$ std over seeds: loss at "
                   "trigger / other positions (nats); the BB head (per run the head with the largest attention on "
                   "BOS from other queries; most common place): its BOS attention from other queries, the mean of "
                   "that over all heads, the mass on nothing (1 - row sum) of other queries (head, mean), its BOS and previous-token attention from trigger queries, its value drain "
                   "(mean |v_0| / mean |v_i|); residual peak (mean |h_0| / mean |h_i|, largest layer); mean gate "
                   "score at trigger / other positions (gated rows).\n");
    Tab t = {0};
    return rep_tab_done(f, &t, y, bb_tab(r, s, y, &t));
}

/* ================================================================== */
/* csv                                                                 */
/* ================================================================== */

/* The CSV names of RRun.bbv's values, each written as NAME_mean,NAME_std. */
static const char *const CSV_NAMES[BB_NV] = {
    [BB_LOSS_T] = "loss_trigger",
    [BB_LOSS_O] = "loss_other",
    [BB_BOS_O_MAX] = "bos_attn_other_head",
    [BB_BOS_O] = "bos_attn_other_mean",
    [BB_BOS_T] = "bos_attn_trigger_head",
    [BB_PREV_T] = "prev_attn_trigger_head",
    [BB_DRAIN] = "value_drain_head",
    [BB_PEAK] = "residual_peak",
    [BB_GATE_T] = "gate_trigger",
    [BB_GATE_O] = "gate_other",
    [BB_NONE_O_H] = "none_attn_other_head",
    [BB_NONE_O] = "none_attn_other_mean",
};

int rep_bb_csv(R *r, FILE *f, const RSweep *s) {
    (void)r;
    fprintf(f, "sweep,label,runs,head_layer,head_head");
    for (int c = 0; c < BB_NV; c++) fprintf(f, ",%s_mean,%s_std", CSV_NAMES[c], CSV_NAMES[c]);
    fputc('\n', f);
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        const RRun *w = v->bb_where >= 0 ? &s->runs[v->bb_where] : NULL;
        rep_csv_row_head(f, s, k);
        fprintf(f, "%d,", v->n_bb);
        if (w)
            fprintf(f, "%d,%d", w->bb_l, w->bb_h);
        else
            fputc(',', f);
        for (int c = 0; c < BB_NV; c++) {
            fputc(',', f);
            rep_csv_val(f, v->bb_m[c], ',');
            if (!isnan(v->bb_sd[c])) fprintf(f, "%.10g", v->bb_sd[c]);
        }
        fputc('\n', f);
    }
    return 0;
}
