/*
 * test_report_rank.c — `gated report`'s answer to "which row is best, and
 * how sure" (core/lab/report/report_rank.c): the ranking, every pair with its
 * test and its Holm family, the best row's line (resolved or not), the
 * small-family notes next to a verdict (against this database's largest
 * family and against a matrix database), and the tok/s spread with the
 * runs that ran beside other jobs; in md, csv and tex.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/report/report.h"
#include "run/store.h"
#include "report_fx.h"
#include "testutil.h"

/* A sweep `name` of rows labels[0..nv) x seeds 1..3, row 0 the baseline;
 * val loss vl[row][seed - 1]; tok/s 1000 + 100 row + 10 seed; load_end
 * load[row][seed - 1] when not NAN (the runs have 1 thread). */
static void add_sweep(Store *s, const char *name, int nv, const char *const *labels, const double (*vl)[3],
                      const double (*load)[3]) {
    char ids[16][17];
    StoreSweepRun sr[16];
    cr_assert(nv * 3 <= 16);
    for (int v = 0; v < nv; v++)
        for (int k = 0; k < 3; k++) {
            int i = v * 3 + k;
            char json[160], run[96];
            snprintf(json, sizeof json, "{\"sweep\":\"%s\",\"row\":\"%s\",\"train.seed\":%d}", name, labels[v], k + 1);
            snprintf(run, sizeof run, "%s-%s-s%d", name, labels[v], k + 1);
            add_run(s, json, run, k + 1, "finished", vl[v][k], 0.1, 5, NAN, 0, 0, 1000 + 100 * v + 10 * (k + 1),
                    ids[i]);
            if (load && !isnan(load[v][k])) cr_assert_eq(store_summary(s, ids[i], "load_end", "", load[v][k], NULL), 0);
            sr[i] = (StoreSweepRun){ids[i], labels[v], k + 1, i, v == 0};
        }
    cr_assert_eq(store_sweep_record(s, name, nv * 3, sr, nv * 3), 0, "%s", store_errmsg(s));
}

static int report_to(Fx *fx, ReportFormat fmt, const char *matrix) {
    char err[1024];
    FILE *lg = tmpfile();
    ReportOpts o = {fx->db, NULL, fmt, fx->out, 1, NULL, lg, NULL, 0, NULL, matrix};
    int rc = report_run(&o, err, sizeof err);
    fclose(lg);
    cr_assert_eq(rc, REPORT_OK, "%s", err);
    return rc;
}

/* Holm's adjustment of p[0..m) computed here from its definition (sorted
 * ascending, running max of min(1, (m - k) p_(k)), k from 0). */
static void holm_here(const double *p, int m, double *adj) {
    int idx[64];
    for (int i = 0; i < m; i++) idx[i] = i;
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && p[idx[j]] < p[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    double run = 0;
    for (int k = 0; k < m; k++) {
        double a = (m - k) * p[idx[k]];
        if (a > 1) a = 1;
        if (a > run) run = a;
        adj[idx[k]] = run;
    }
}

/* The main fixture's sweep main (5 rows): ranked by mean val loss, every
 * pair tested, p (Holm) over the 10 pairs, the best row not resolved. */
Test(report_rank, five_rows_ranked_every_pair_tested) {
    Fx fx;
    fixture(&fx);
    report_to(&fx, REPORT_MD, NULL);
    char *md = out_file(&fx, "report.md"), *sec = md_section(md, "main");
    assert_has(sec, "### Ranking and all pairs\n");
    assert_has(sec, "over the 10 pairwise contrasts of this sweep (those with a p)");
    /* G1-elementwise 1.41 < more-q-heads 1.47 < G1-silu 1.49 < baseline 1.52 < G1-headwise 1.53 */
    assert_has(sec, "| 1 | G1-elementwise | 3 | 1.4100 ± 0.0100 | (best) |");
    assert_has(sec, "| 2 | more-q-heads | 3 | 1.4700 ± 0.0200 | +0.0600 | [+0.0184, +0.1016] | Welch |");
    assert_has(sec, "| 4 | baseline | 3 | 1.5200 ± 0.0200 | +0.1100* | [+0.0852, +0.1348] | paired (3) | 0.003 |");
    assert_has(sec, "| 5 | G1-headwise | 3 | 1.5300 ± 0.0400 | +0.1200 |");
    assert_has(sec, "**Best: `G1-elementwise`** (val loss 1.4100 ± 0.0100, n = 3). Against the runner-up "
                    "`more-q-heads`: Δ = +0.0600 nats [95% CI +0.0184, +0.1016] (Welch), p = 0.020, p (Holm over the "
                    "10 pairwise contrasts of this sweep) = ");
    assert_has(sec, "**How sure:** not resolved with these seeds: not separated (p (Holm) ≥ 0.05 or untested) from 2 "
                    "of the other 4 rows: `more-q-heads`, `G1-headwise`.");
    assert_has(sec, "| baseline | G1-headwise | +0.0100 | [-0.0397, +0.0597] | paired (3) | 0.478 |");
    /* a `differs` of the ranking's family: 10 contrasts, the largest family here, so no note */
    assert_lacks(sec, "in this family;");
    free(sec);
    free(md);

    /* csv: the 10 pairs; p (Holm) is Holm over their raw p, recomputed here */
    report_to(&fx, REPORT_CSV, NULL);
    char *c = out_file(&fx, "main-pairs.csv");
    cr_assert_eq(lines_of(c), 11, "%s", c);
    static const char *const order[5] = {"G1-elementwise", "more-q-heads", "G1-silu", "baseline", "G1-headwise"};
    double p[10], holm[10], adj[10];
    int m = 0;
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++, m++) {
            char pre[96];
            snprintf(pre, sizeof pre, "main,%s,%s,%d,%d,", order[i], order[j], i + 1, j + 1);
            p[m] = csv_num_of(c, pre, "p_raw");
            holm[m] = csv_num_of(c, pre, "p_holm");
            cr_assert_eq(csv_num_of(c, pre, "holm_family_size"), 10);
        }
    holm_here(p, 10, adj);
    for (int i = 0; i < 10; i++) cr_assert_float_eq(holm[i], adj[i], 1e-9, "pair %d: %g vs %g", i, holm[i], adj[i]);
    cr_assert_float_eq(csv_num_of(c, "main,G1-elementwise,baseline,", "delta_val_loss"), 0.11, 1e-9);
    free(c);
    /* the main table's csv: the rank and the tok/s spread of each row */
    c = out_file(&fx, "main.csv");
    cr_assert_eq(csv_num_of(c, "main,G1-elementwise,", "rank"), 1);
    cr_assert_eq(csv_num_of(c, "main,baseline,", "rank"), 4);
    cr_assert_eq(csv_num_of(c, "main,G1-headwise,", "tokens_per_s_min"), 1200);
    cr_assert_eq(csv_num_of(c, "main,G1-headwise,", "tokens_per_s_max"), 1220);
    free(c);
    /* tex: the ranking follows the main tabular, math-free headers */
    report_to(&fx, REPORT_TEX, NULL);
    char *t = out_file(&fx, "main.tex");
    assert_has(t, "% Best: G1-elementwise (val loss 1.4100 +- 0.0100, n = 3).");
    assert_has(t, "rank & variant & n & val loss & Delta vs best & 95\\% CI of Delta & test &");
    free(t);
    fx_rm(&fx);
}

/* Three well separated rows: resolved; a family smaller than the matrix's
 * says so beside its `differs`; the main table's one-contrast family too. */
Test(report_rank, resolved_best_and_small_families) {
    Fx fx;
    Store *s = fx_open(&fx);
    static const char *const lab[3] = {"sigmoid", "silu", "tanh"};
    static const double vl[3][3] = {{1.50, 1.52, 1.51}, {1.00, 1.01, 1.03}, {2.00, 2.03, 2.01}};
    add_sweep(s, "act", 3, lab, vl, NULL);
    static const char *const two[2] = {"base", "gate"};
    static const double v2[2][3] = {{3.0, 3.1, 3.2}, {2.0, 2.11, 2.19}};
    add_sweep(s, "one", 2, two, v2, NULL);
    store_close(s);
    report_to(&fx, REPORT_MD, NULL);
    char *md = out_file(&fx, "report.md"), *sec = md_section(md, "act");
    assert_has(sec, "**Best: `silu`** (val loss 1.0133 ± 0.0153, n = 3). Against the runner-up `sigmoid`: Δ = +0.4967 "
                    "nats");
    assert_has(sec, "**How sure:** resolved: lower than each of the other 2 rows, p (Holm) < 0.05 in every one of "
                    "its contrasts.\n");
    /* this database's largest family is 3 (the ranking of act has 3 pairs, its main table 2 contrasts) */
    assert_lacks(sec, "contrasts in this family;");
    free(sec);
    sec = md_section(md, "one");
    /* sweep one: a main-table family of 1 contrast, whose `differs` says so beside it */
    assert_has(sec, "| differs; 1 contrast in this family; this database's largest family adjusts over 2 |");
    assert_has(sec, "A small family: Holm adjusts over 1 contrast here, this database's largest family over 2, so a "
                    "`differs` here is weaker evidence than one there.");
    free(sec);
    free(md);
    /* against a matrix database with a family of 4 (the main fixture): every smaller family says so */
    Fx mx;
    fixture(&mx);
    report_to(&fx, REPORT_MD, mx.db);
    md = out_file(&fx, "report.md");
    sec = md_section(md, "act");
    assert_has(sec, "p (Holm over the 3 pairwise contrasts of this sweep) = ");
    assert_has(sec, ": differs; 3 contrasts in this family; the committed matrix adjusts over 4. **How sure:**");
    assert_has(sec, "| differs; 3 contrasts in this family; the committed matrix adjusts over 4 |");
    free(sec);
    free(md);
    report_to(&fx, REPORT_CSV, mx.db);
    char *c = out_file(&fx, "act-pairs.csv");
    cr_assert_eq(csv_num_of(c, "act,silu,sigmoid,", "matrix_family_size"), 4);
    free(c);
    /* a matrix that is not a database: exit 2, nothing half-written matters */
    char err[1024];
    ReportOpts o = {fx.db, NULL, REPORT_MD, fx.out, 1, NULL, NULL, NULL, 0, NULL, "/nonexistent/matrix.db"};
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    assert_has(err, "/nonexistent/matrix.db: no such database");
    fx_rm(&mx);
    fx_rm(&fx);
}

/* tok/s: mean (min–max) over the finished runs; a row whose run ended with
 * the load average over its threads by 0.5 or more is marked. */
Test(report_rank, tokens_per_s_spread_and_load) {
    Fx fx;
    Store *s = fx_open(&fx);
    static const char *const lab[3] = {"a", "b", "c"};
    static const double vl[3][3] = {{1.5, 1.6, 1.7}, {1.4, 1.5, 1.6}, {1.3, 1.4, 1.5}};
    static const double load[3][3] = {{1.2, 1.4, NAN}, {1.0, 3.0, 1.1}, {NAN, NAN, NAN}};
    add_sweep(s, "cost", 3, lab, vl, load);
    store_close(s);
    report_to(&fx, REPORT_MD, NULL);
    char *md = out_file(&fx, "report.md");
    /* a: 1010 1020 1030, loads 0.2 and 0.4 over its 1 thread: not marked */
    assert_has(md, "| 1020 (1010–1030) |");
    /* b: one run ended at load 3.0 with 1 thread: 2 others beside it */
    assert_has(md, "| 1120 (1110–1130)† |");
    assert_has(md, "| 1220 (1210–1230) |");
    assert_has(md, "1 of the 5 finished runs with a recorded load ran beside other jobs (1-minute load average at the "
                   "end minus the run's threads ≥ 0.5), their rows marked †; the others recorded none.");
    free(md);
    report_to(&fx, REPORT_CSV, NULL);
    char *c = out_file(&fx, "cost.csv");
    cr_assert_eq(csv_num_of(c, "cost,b,", "n_beside_other_jobs"), 1);
    cr_assert_eq(csv_num_of(c, "cost,b,", "n_load_recorded"), 3);
    cr_assert_eq(csv_num_of(c, "cost,c,", "n_load_recorded"), 0);
    free(c);
    fx_rm(&fx);
}
