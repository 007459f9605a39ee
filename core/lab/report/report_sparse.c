/*
 * report_sparse.c — `gated report`: the top-k selection probes of sparse
 * attention runs (`model.attention.sparse`, issue 37; core/run/probes.c,
 * stored by core/run/train.c; docs/store.md has the keys).
 *
 * Per finished run (rep_sparse_load_run), in one query, each key at its
 * context's last step: sparse_recall, sparse_p0 and sparse_dense_gap
 * (context '': over every layer) and indexer_kl (context 'selected': the
 * indexer's KL over S_t at the last training step).  A run with
 * sparse_recall is a sparse run (RRun.has_sparse); evaluations in the
 * indexer's dense warm-up store none.  Per row (rep_sparse_row): each
 * value's mean and sample std over the row's finished runs that have it.
 * The section "Top-k selection" is a Tab in md and tex, SWEEP-sparse.csv
 * in csv; its plots (recall and P(0 in S_t), and the indexer's KL, against
 * step) are rep_plot_steps'.
 */
#include "lab/report/report_int.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* The keys read and their contexts, in SP_* order (SP_VAL is the run's own). */
static const char *const KEYS[SP_NV] = {"", "sparse_recall", "sparse_p0", "sparse_dense_gap", "indexer_kl"};
static const char *const CTXS[SP_NV] = {"", "", "", "", "selected"};

/* RepRowFn on (key, context, value). */
static int sparse_add(R *r, void *arg, sqlite3_stmt *st) {
    (void)r;
    RRun *u = arg;
    const char *key = rep_col_text(st, 0), *ctx = rep_col_text(st, 1);
    for (int k = SP_RECALL; k < SP_NV; k++)
        if (strcmp(KEYS[k], key) == 0 && strcmp(CTXS[k], ctx) == 0) {
            u->spv[k] = rep_col_real(st, 2);
            if (k == SP_RECALL) u->has_sparse = 1;
        }
    return 0;
}

int rep_sparse_load_run(R *r, RRun *u) {
    for (int k = 0; k < SP_NV; k++) u->spv[k] = NAN;
    u->has_sparse = 0;
    sqlite3_stmt *st;
    int rc = rep_q_prep(r, &st,
                        "SELECT m.key, m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND"
                        " ((m.key IN (?2, ?3, ?4) AND m.context = '') OR (m.key = ?5 AND m.context = ?6))"
                        " AND m.step = (SELECT max(x.step) FROM metrics x"
                        " WHERE x.run_id = m.run_id AND x.key = m.key AND x.context = m.context)",
                        "tttttt", u->run_id, KEYS[SP_RECALL], KEYS[SP_P0], KEYS[SP_GAP], KEYS[SP_KL], CTXS[SP_KL]);
    if (rc == 0) rc = rep_q_rows(r, st, sparse_add, u);
    if (rc == 0 && u->has_sparse) u->spv[SP_VAL] = u->val_loss;
    return rc;
}

static int sparse_counts(const RRun *u) { return rep_is_finished(u) && u->has_sparse; }

void rep_sparse_row(const RSweep *s, RVar *v, double *buf) {
    v->n_sparse = 0;
    for (int i = 0; i < v->nruns; i++) v->n_sparse += sparse_counts(&s->runs[v->runs[i]]);
    rep_row_stats(s, v, sparse_counts, offsetof(RRun, spv), SP_NV, v->sp_m, v->sp_sd, buf);
}

/* ================================================================== */
/* md and tex                                                          */
/* ================================================================== */

/* The table's value columns: header, value, decimals. */
static const struct {
    const char *head;
    int val, prec;
} COLS[] = {
    {"val loss", SP_VAL, 4},
    {"recall", SP_RECALL, 3},
    {"P(0 in S)", SP_P0, 3},
    {"sparse - dense loss", SP_GAP, 4},
    {"indexer KL", SP_KL, 3},
};
enum { NCOLS = (int)(sizeof COLS / sizeof COLS[0]), FIRST = 2 }; /* variant, seeds, then COLS */

static int sparse_tab(R *r, const RSweep *s, const RepStyle *y, Tab *t) {
    int rc = rep_tab_init(r, t, FIRST + NCOLS) || rep_tab_put(t, 0, 0, rep_dup(r, "variant")) ||
             rep_tab_put(t, 0, 1, rep_dup(r, "seeds"));
    for (int j = 0; rc == 0 && j < NCOLS; j++) rc = rep_tab_put(t, 0, FIRST + j, rep_dup(r, COLS[j].head));
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        if (!v->n_sparse) continue; /* a dense row: the main table has it */
        int i = rep_tab_row(r, t);
        rc = i < 0 || rep_tab_put(t, i, 0, rep_dup(r, v->label)) ||
             rep_tab_put(t, i, 1, rep_fmt(r, "%d", v->n_sparse));
        for (int j = 0; rc == 0 && j < NCOLS; j++) {
            int c = COLS[j].val;
            double m = rep_zero_if_rounds(v->sp_m[c], COLS[j].prec);
            rc = rep_tab_put(t, i, FIRST + j, rep_ms_cell(r, y, m, v->sp_sd[c], COLS[j].prec));
        }
    }
    return rc ? -1 : 0;
}

int rep_sparse_section(R *r, FILE *f, const RSweep *s, const RepStyle *y) {
    if (y->md)
        fprintf(f, "### Top-k selection\n\n"
                   "Rows with top-k sparse attention (`model.attention.sparse`: each query attends to k keys chosen "
                   "by the lightning indexer, or by the window, random or oracle rule), at each run's last evaluation "
                   "on the validation windows; mean ± sample std over the row's finished runs (**seeds**); dense rows "
                   "are in the main table. **val loss**: final validation loss (nats/token) of the same runs. "
                   "**recall**: the share of the dense attention mass (softmax of the same q and k over every key) "
                   "that falls on the selected keys, mean over query heads, layers and queries t ≥ k. "
                   "**P(0 in S)**: how often position 0 is selected, over queries t ≥ k (a sink spends part of the k "
                   "budget). **sparse - dense loss**: the validation loss of the model minus that of the same "
                   "weights run dense. **indexer KL**: the indexer's training loss at the last step, KL of its "
                   "softmax from the head-summed attention over the selected keys (`–`: no indexer, or no step after "
                   "its warm-up). "
                   "`docs/store.md` has the definitions.\n\n");
    else
        fprintf(f, "%% Top-k selection (model.attention.sparse), last evaluation, mean $\\pm$ std over seeds: val "
                   "loss; recall of the dense attention mass by the selected keys; P(position 0 selected); sparse "
                   "minus dense validation loss of the same weights; the indexer's KL over the selected keys at the "
                   "last step.\n");
    Tab t = {0};
    return rep_tab_done(f, &t, y, sparse_tab(r, s, y, &t));
}

/* ================================================================== */
/* csv                                                                 */
/* ================================================================== */

static const char *const CSV_NAMES[SP_NV] = {
    [SP_VAL] = "val_loss",         [SP_RECALL] = "recall",     [SP_P0] = "p0_selected",
    [SP_GAP] = "sparse_dense_gap", [SP_KL] = "indexer_kl"};

int rep_sparse_csv(R *r, FILE *f, const RSweep *s) {
    (void)r;
    fprintf(f, "sweep,label,runs");
    for (int c = 0; c < SP_NV; c++) fprintf(f, ",%s_mean,%s_std", CSV_NAMES[c], CSV_NAMES[c]);
    fputc('\n', f);
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        if (!v->n_sparse) continue;
        rep_csv_row_head(f, s, k);
        fprintf(f, "%d", v->n_sparse);
        for (int c = 0; c < SP_NV; c++) {
            fputc(',', f);
            rep_csv_val(f, v->sp_m[c], ',');
            if (!isnan(v->sp_sd[c])) fprintf(f, "%.10g", v->sp_sd[c]);
        }
        fputc('\n', f);
    }
    return 0;
}

/* ================================================================== */
/* plots                                                               */
/* ================================================================== */

static int run_has_sparse(const RRun *u) { return u->has_sparse; }

int rep_plot_sparse(R *r, RSweep *s) {
    static const char *const sel_keys[2] = {"sparse_recall", "sparse_p0"};
    static const char *const kl_keys[2] = {"indexer_kl", "indexer_kl"};
    static const StepPlot sel = {
        "sparse-selection", sel_keys, {NULL, NULL}, {"recall", "P(0 in S)"}, 0, run_has_sparse,
        "the selection's recall of the dense attention mass and P(position 0 selected) against step, mean +- std "
        "over seeds",
        "recall (solid), P(0 in S) (dashed)", "[0:1]",
        "Top-k selection against step: the recall of the dense attention mass (solid) and how often position 0 is "
        "selected (dashed), one colour per row"};
    static const StepPlot kl = {
        "sparse-indexer-kl", kl_keys, {"dense", "selected"}, {"warm-up, every key", "sparse, over S"}, 0,
        run_has_sparse,
        "the lightning indexer's KL against step (its dense warm-up: over every key; after it: over the selected "
        "keys), mean +- std over seeds",
        "indexer KL (nats)", NULL,
        "The lightning indexer's training loss against step: KL of its softmax from the head-summed attention, over "
        "every key in its dense warm-up (solid) and over the selected keys after it (dashed), one colour per row"};
    return rep_plot_steps(r, s, &sel) || rep_plot_steps(r, s, &kl) ? -1 : 0;
}
