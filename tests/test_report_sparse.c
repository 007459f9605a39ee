/*
 * test_report_sparse.c — `gated report`'s section "Top-k selection" (the
 * probes of sparse attention runs, report_sparse.c): the table in md, tex
 * and csv from the last step of each finished run, a diverged run and
 * earlier steps and other contexts left out, a dense row absent, no
 * section for a sweep without the probes; the plots' data against step.
 * The fixtures' helpers are report_fx.c's.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/report/report.h"
#include "report_fx.h"
#include "run/store.h"
#include "testutil.h"

/* One sparse run's probes: at evaluation step 20 (the last) the given
 * values; at step 10 recall and P0 half of them (the plot's first point),
 * and decoys (9) at layer contexts and in indexer_kl's 'dense' context.
 * kl NAN: no indexer (no indexer_kl rows). */
static void add_sparse(Fx *fx, const char *id, double recall, double p0, double gap, double kl) {
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO metrics(run_id, key, context, step, value) VALUES"
             " ('%s', 'sparse_recall', '', 20, %.17g), ('%s', 'sparse_recall', '', 10, %.17g),"
             " ('%s', 'sparse_recall', 'layer=1', 20, 9), ('%s', 'sparse_p0', '', 20, %.17g),"
             " ('%s', 'sparse_p0', '', 10, %.17g), ('%s', 'sparse_p0', 'layer=0', 20, 9),"
             " ('%s', 'sparse_dense_gap', '', 20, %.17g), ('%s', 'sparse_dense_gap', '', 10, 9)",
             id, recall, id, recall / 2, id, id, p0, id, p0 / 2, id, id, gap, id);
    fx_sql(fx, sql);
    if (isnan(kl)) return;
    snprintf(sql, sizeof sql,
             "INSERT INTO metrics(run_id, key, context, step, value) VALUES"
             " ('%s', 'indexer_kl', 'dense', 5, 9), ('%s', 'indexer_kl', 'selected', 19, 9),"
             " ('%s', 'indexer_kl', 'selected', 20, %.17g)",
             id, id, id, kl);
    fx_sql(fx, sql);
}

/* Sweep "tk": rows dense (no probes), topk (indexer: seeds 1, 2 finished,
 * a diverged seed 3 whose probes must be left out) and window (no
 * indexer: no KL); sweep "txt": a run without the probes.  At the last step:
 *   topk    recall .60 .80 (0.700 ± 0.141), P0 .30 .50 (0.400 ± 0.141),
 *           gap .010 .030 (0.0200 ± 0.0141), KL .20 .40 (0.300 ± 0.141),
 *           val loss 1.9 1.9
 *   window  recall .40 .40, P0 0 0, gap .05 .07 (0.0600 ± 0.0141), no KL */
static void fixture_sparse(Fx *fx) {
    Store *s = fx_open(fx);
    static const char *const lab[3] = {"dense", "topk", "window"};
    char ids[10][17];
    StoreSweepRun sr[9];
    int n = 0;
    for (int row = 0; row < 3; row++)
        for (int seed = 1; seed <= (row == 1 ? 3 : 2); seed++) {
            char json[256], name[64];
            snprintf(json, sizeof json, "{\"model.attention.sparse\":\"%s\",\"train.seed\":%d}",
                     row == 0 ? "none" : row == 1 ? "indexer" : "window", seed);
            snprintf(name, sizeof name, "tk-%s-s%d", lab[row], seed);
            int div = row == 1 && seed == 3;
            add_run(s, json, name, seed, div ? "diverged" : "finished", div ? NAN : 2 - 0.1 * row, 0.3, 10, NAN, 0,
                    0, 1000, ids[n]);
            sr[n] = (StoreSweepRun){ids[n], lab[row], seed, n, row == 0};
            n++;
        }
    cr_assert_eq(store_sweep_record(s, "tk", n, sr, n), 0, "%s", store_errmsg(s));
    add_run(s, "{\"model.n_layer\":2}", "txt-s1", 1, "finished", 1.5, 0.3, 10, NAN, 0, 0, 1000, ids[9]);
    StoreSweepRun tr = {ids[9], "baseline", 1, 0, 1};
    cr_assert_eq(store_sweep_record(s, "txt", 1, &tr, 1), 0, "%s", store_errmsg(s));
    store_close(s);
    /* ids: dense s1 s2, topk s1 s2 s3, window s1 s2 */
    add_sparse(fx, ids[2], .60, .30, .010, .20);
    add_sparse(fx, ids[3], .80, .50, .030, .40);
    add_sparse(fx, ids[4], .99, .99, .99, .99);
    add_sparse(fx, ids[5], .40, 0, .05, NAN);
    add_sparse(fx, ids[6], .40, 0, .07, NAN);
}

Test(report, top_k_selection_table) {
    Fx fx;
    fixture_sparse(&fx);
    char err[1024], *log;
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    char *sec = md_section(md, "tk");
    assert_has(sec, "### Top-k selection\n\nRows with top-k sparse attention (`model.attention.sparse`");
    assert_has(sec, "| variant | seeds | val loss | recall | P(0 in S) | sparse - dense loss | indexer KL |\n"
                    "|---|--:|--:|--:|--:|--:|--:|\n"
                    "| topk | 2 | 1.9000 ± 0.0000 | 0.700 ± 0.141 | 0.400 ± 0.141 | 0.0200 ± 0.0141 | 0.300 ± 0.141 |\n"
                    "| window | 2 | 1.8000 ± 0.0000 | 0.400 ± 0.000 | 0.000 ± 0.000 | 0.0600 ± 0.0141 | – |\n");
    const char *top = strstr(sec, "### Top-k selection");
    assert_lacks(top, "| dense | "); /* a dense row is the main table's */
    free(sec);
    sec = md_section(md, "txt");
    assert_lacks(sec, "Top-k selection");
    free(sec);
    free(md);

    cr_assert_eq(run_report(&fx, REPORT_TEX, "tk", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *t = out_file(&fx, "tk.tex");
    assert_has(t, "% Top-k selection (model.attention.sparse), last evaluation, mean $\\pm$ std over seeds:");
    assert_has(t, "\ntopk & 2 & 1.9000 $\\pm$ 0.0000 & 0.700 $\\pm$ 0.141 & 0.400 $\\pm$ 0.141 & ");
    assert_has(t, "\nwindow & 2 & 1.8000 $\\pm$ 0.0000 & 0.400 $\\pm$ 0.000 & 0.000 $\\pm$ 0.000 & 0.0600 $\\pm$ "
                  "0.0141 & -- \\\\\n");
    free(t);

    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "tk-sparse.csv");
    cr_assert_eq(lines_of(c), 3, "%s", c);
    assert_has(c, "sweep,label,runs,val_loss_mean,val_loss_std,recall_mean,recall_std,p0_selected_mean,p0_selected_std,sparse_dense_gap_mean,"
                  "sparse_dense_gap_std,indexer_kl_mean,indexer_kl_std\n");
    cr_assert_float_eq(csv_num_of(c, "tk,topk,", "runs"), 2, 0);
    cr_assert_float_eq(csv_num_of(c, "tk,topk,", "recall_mean"), 0.7, 1e-12);
    cr_assert_float_eq(csv_num_of(c, "tk,topk,", "indexer_kl_std"), sqrt(0.02), 1e-9);
    cr_assert_float_eq(csv_num_of(c, "tk,window,", "sparse_dense_gap_mean"), 0.06, 1e-12);
    cr_assert(isnan(csv_num_of(c, "tk,window,", "indexer_kl_mean")));
    free(c);
    char p[256];
    snprintf(p, sizeof p, "%s/txt-sparse.csv", fx.out);
    cr_assert(!exists(p), "a sparse file for a sweep without the probes");
    fx_rm(&fx);
}

/* The plots' data: recall and P0 at each evaluation step, the indexer's KL
 * per context (dense: its warm-up; selected), over the finished runs. */
Test(report, top_k_selection_plots) {
    Fx fx;
    fixture_sparse(&fx);
    char err[1024], *log;
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", &log, err, sizeof err), 0, "%s\n%s", err,
                 log);
    free(log);
    char *d = out_file(&fx, "plots/tk-sparse-selection.dat");
    assert_has(d, "# topk, recall: step, mean, std, runs\n10 0.35 0.07071067812 2\n20 0.7 0.1414213562 2\n\n\n");
    assert_has(d, "# topk, P(0 in S): step, mean, std, runs\n10 0.2 0.07071067812 2\n20 0.4 0.1414213562 2\n\n\n");
    assert_has(d, "# window, recall: step, mean, std, runs\n10 0.2 0 2\n20 0.4 0 2\n\n\n");
    assert_lacks(d, "# dense");
    assert_lacks(d, " 3\n"); /* the diverged run */
    free(d);
    d = out_file(&fx, "plots/tk-sparse-indexer-kl.dat");
    assert_has(d, "# topk, warm-up, every key: step, mean, std, runs\n5 9 0 2\n\n\n");
    assert_has(d, "# topk, sparse, over S: step, mean, std, runs\n19 9 0 2\n20 0.3 0.1414213562 2\n");
    assert_lacks(d, "# window");
    free(d);
    assert_plot_scripts_clean(fx.out, "tk-sparse-*.gp", 10);
    fx_rm(&fx);
}
