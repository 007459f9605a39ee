/*
 * test_report_budget.c — `gated report`'s budget series beyond Δ
 * (report_budget.c, report_budget_size.c, report_budget_plot.c): the
 * flatness rule per row and budget, epochs of Brown's training split, the
 * train − validation gap and overfitting, and Δ by model size and budget.
 * fixture_sizes holds one config at two model sizes (small: 3 budgets, a
 * row only it has and a longest budget with fewer rows; large: 2 budgets)
 * and a third series on another corpus that must stay out of the size
 * table; test_report_sections.c has the series' Δ tables and their plot.
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

/* One finished run: val_loss evaluations at k * eval (k = 1..4) of vl +
 * above[k - 1]; train_loss 5.0 at step 1, 9.0 at the third evaluation
 * (the end of the interval before the last), and vl - gap -+ 0.01 at the
 * last two steps: its gap, averaged since the evaluation before the last,
 * is `gap`; summary params. */
static void add_sized_run(Store *s, const char *json, const char *name, long long seed, long long eval, double vl,
                          const double above[4], double gap, double params, char id[17]) {
    store_run_id(json, id);
    cr_assert_eq(store_run_begin(s, id, name, json, seed, 1, &PROV, NULL), 0, "%s", store_errmsg(s));
    for (int k = 1; k <= 4; k++) cr_assert_eq(store_metric(s, id, "val_loss", "", k * eval, vl + above[k - 1]), 0);
    cr_assert_eq(store_metric(s, id, "train_loss", "", 1, 5.0), 0);
    cr_assert_eq(store_metric(s, id, "train_loss", "", 3 * eval, 9.0), 0);
    cr_assert_eq(store_metric(s, id, "train_loss", "", 4 * eval - 1, vl - gap - 0.01), 0);
    cr_assert_eq(store_metric(s, id, "train_loss", "", 4 * eval, vl - gap + 0.01), 0);
    cr_assert_eq(store_summary(s, id, "val_loss", "", vl, NULL), 0);
    cr_assert_eq(store_summary(s, id, "params", "", params, NULL), 0);
    cr_assert_eq(store_run_end(s, id, "finished", NULL, -1), 0, "%s", store_errmsg(s));
}

/* Sweeps sm_a, sm_b, sm_c (d_model 64; 100, 200, 400 steps), lg_a, lg_b
 * (d_model 96; 100, 200 steps) and ot_a, ot_b (as sm_a, sm_b on the
 * synthetic corpus), batch 1000 x seq_len 64 (6.4M, 12.8M, 25.6M tokens:
 * 1.17, 2.34, 4.68 epochs of 5,467,137), seeds 1..3, evaluations every
 * steps / 4.  Rows baseline, "G1 'q'" (every sweep) and G5 (sm_a, sm_b;
 * at sm_b seeds 2, 3 pending).  Final val loss: baseline 2.0 - 0.2 b +
 * 0.02 k - 0.1 (large) (b the budget index, k the seed; sd 0.02); G1
 * baseline + Δ + 0.01 (k - 2), Δ -0.10 -0.05 -0.02 (small), -0.04 -0.02
 * (large) (sd 0.03); G5 baseline + 0.05 + 0.01 k.  Evaluations above the
 * final: budget 0 {0.3, 0.2, 0.1, 0} (last-quarter drop 0.1), budgets 1
 * and 2 {0.1, 0.05, 0.01, 0} (0.01); G5 seed 1 at sm_a {0.3, 0.2, -0.005,
 * 0}: its minimum at step 75, 0.005 below its last.  Gap 0.05 (baseline),
 * 0.07 (G1), 0.06 (G5); params 1000 / 1100 / 1050 small, 2000 / 2200
 * large. */
static void fixture_sizes(Fx *fx) {
    Store *s = fx_open(fx);
    static const char *const names[7] = {"sm_a", "sm_b", "sm_c", "lg_a", "lg_b", "ot_a", "ot_b"};
    static const int budget[7] = {0, 1, 2, 0, 1, 0, 1}, large[7] = {0, 0, 0, 1, 1, 0, 0};
    static const double delta[2][3] = {{-0.10, -0.05, -0.02}, {-0.04, -0.02, 0}};
    static const double above[2][4] = {{0.3, 0.2, 0.1, 0}, {0.1, 0.05, 0.01, 0}}, dip[4] = {0.3, 0.2, -0.005, 0};
    static const char *const pos[3] = {"none", "sdpa", "dense"};
    static const char *const labels[3] = {"baseline", "G1 'q'", "G5"};
    static const double gap[3] = {0.05, 0.07, 0.06}, params[3] = {1000, 1100, 1050};
    for (int w = 0; w < 7; w++) {
        int b = budget[w], z = large[w], nv = w < 2 || w >= 5 ? 3 : 2, n = 0;
        long long steps = 100LL << b;
        char ids[9][17];
        StoreSweepRun sr[9];
        for (int v = 0; v < nv; v++)
            for (int k = 1; k <= 3; k++, n++) {
                char json[512], name[64];
                snprintf(json, sizeof json,
                         "{\"model.d_model\":%d,\"model.n_head\":%d,\"model.n_kv_head\":1,\"model.d_ff\":%d,"
                         "\"model.gate.position\":\"%s\",\"model.seq_len\":64,\"train.batch\":1000,\"train.steps\":%lld,"
                         "\"train.eval_every\":%lld,\"train.checkpoint_every\":1000,\"train.lr\":0.003,\"train.seed\":%d,"
                         "\"data.corpus\":\"%s\"}",
                         z ? 96 : 64, z ? 3 : 2, z ? 256 : 172, pos[v], steps, steps / 4, k, w >= 5 ? "synthetic" : "brown");
                snprintf(name, sizeof name, "%s-%d-s%d", names[w], v, k);
                double base = 2.0 - 0.2 * b + 0.02 * k - 0.1 * z;
                double vl = v == 0 ? base : v == 1 ? base + delta[z][b] + 0.01 * (k - 2) : base + 0.05 + 0.01 * k;
                if (v == 2 && w == 1 && k > 1)
                    store_run_id(json, ids[n]); /* pending */
                else
                    add_sized_run(s, json, name, k, steps / 4, vl, v == 2 && w == 0 && k == 1 ? dip : above[b > 0],
                                  gap[v], params[v] * (z ? 2 : 1), ids[n]);
                sr[n] = (StoreSweepRun){ids[n], labels[v], k, n, v == 0};
            }
        cr_assert_eq(store_sweep_record(s, names[w], n, sr, n), 0, "%s", store_errmsg(s));
    }
    store_close(s);
}

/* Run the report in md (gnuplot as found) and return report.md. */
static char *sizes_md(Fx *fx) {
    char err[1024], *log;
    fixture_sizes(fx);
    int rc = run_report(fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    return out_file(fx, "report.md");
}

/* The flatness rule per row and budget: the mean last-quarter drop against
 * the sd of the final val loss; n/a with one seed; a longest budget with
 * fewer rows still joins the series. */
Test(report_budget, flatness_rule) {
    Fx fx;
    char *md = sizes_md(&fx);
    assert_has(md, "### Series `sm_a`, `sm_b`, `sm_c`\n");
    assert_has(md, "### Series `lg_a`, `lg_b`\n");
    assert_has(md, "**Flatness rule** (results/budget_plan.md): a row is *flat* at a budget when its mean last-quarter "
                   "drop (the table above) is below the std across seeds of its final val loss");
    const char *sec = strstr(md, "### Series `sm_a`");
    const char *flat = strstr(sec, "**Flatness rule**");
    cr_assert_not_null(flat);
    assert_has(flat, "| baseline | not flat (0.1000 ≥ 0.0200) | flat (0.0100 < 0.0200) | flat (0.0100 < 0.0200) |\n");
    assert_has(flat, "| G1 'q' | not flat (0.1000 ≥ 0.0300) | flat (0.0100 < 0.0300) | flat (0.0100 < 0.0300) |\n");
    /* G5: seed 1 overfits at sm_a (read at minimum); one finished seed at sm_b; no G5 at sm_c */
    assert_has(flat, "| G5 | not flat (0.0650 ≥ 0.0300); read at minimum | n/a (1 seed) | – |\n");
    free(md);

    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "budget.csv"), f[32];
    csv_field(c, "sm_a,sm_a,6400000,100,baseline,", "flat", f, sizeof f);
    cr_assert_str_eq(f, "not flat");
    csv_field(c, "sm_a,sm_b,12800000,200,baseline,", "flat", f, sizeof f);
    cr_assert_str_eq(f, "flat");
    csv_field(c, "sm_a,sm_b,12800000,200,G5,", "flat", f, sizeof f);
    cr_assert_str_eq(f, "n/a");
    cr_assert_eq(csv_num_of(c, "sm_a,sm_a,6400000,100,G5,", "read_at_minimum"), 1);
    cr_assert_eq(csv_num_of(c, "sm_a,sm_a,6400000,100,baseline,", "read_at_minimum"), 0);
    free(c);

    cr_assert_eq(run_report(&fx, REPORT_TEX, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *t = out_file(&fx, "budget.tex");
    assert_has(t, "baseline & not flat (0.1000 $\\geq$ 0.0200) & flat (0.0100 $<$ 0.0200) &");
    assert_has(t, "% flatness rule: flat when the mean last-quarter drop");
    free(t);
    fx_rm(&fx);
}

/* Epochs of Brown's training split per budget, in the caption, the header
 * and budget.csv; none for a series on another corpus. */
Test(report_budget, epochs) {
    Fx fx;
    char *md = sizes_md(&fx);
    assert_has(md, "`sm_a` 6400000 tokens (100 steps, 1.17 epochs), `sm_b` 12800000 tokens (200 steps, 2.34 epochs), "
                   "`sm_c` 25600000 tokens (400 steps, 4.68 epochs).");
    assert_has(md, "Epochs (ep): tokens per run / 5467137, the tokens of Brown's training split");
    assert_has(md, "| row | sm_a (6.4M, 1.17 ep) | sm_b (12.8M, 2.34 ep) | sm_c (25.6M, 4.68 ep) |\n");
    const char *ot = strstr(md, "### Series `ot_a`, `ot_b`");
    cr_assert_not_null(ot);
    assert_has(ot, "`ot_a` 6400000 tokens (100 steps), `ot_b` 12800000 tokens (200 steps).");
    assert_has(ot, "| row | ot_a (6.4M) | ot_b (12.8M) |\n");
    free(md);
    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "budget.csv");
    cr_assert_float_eq(csv_num_of(c, "sm_a,sm_c,25600000,400,baseline,", "epochs"), 25600000.0 / 5467137, 1e-9);
    cr_assert(isnan(csv_num_of(c, "ot_a,ot_a,6400000,100,baseline,", "epochs")));
    free(c);
    fx_rm(&fx);
}

/* The train - validation gap (the mean train loss since the evaluation
 * before the last: the 9.0 at that evaluation and the 5.0 at step 1 are
 * outside it), overfitting (where and by how much), and the gap plot. */
Test(report_budget, gap_and_overfitting) {
    Fx fx;
    char *md = sizes_md(&fx);
    const char *sec = strstr(md, "### Series `sm_a`");
    const char *gap = strstr(sec, "**Train − validation gap**");
    cr_assert_not_null(gap);
    assert_has(gap, "| baseline | 0.0500 ± 0.0000 (3) | 0.0500 ± 0.0000 (3) | 0.0500 ± 0.0000 (3) |\n");
    assert_has(gap, "| G5 | 0.0600 ± 0.0000 (3) | 0.0600 (1) | – |\n");
    const char *ov = strstr(sec, "**Overfitting**: finished runs whose val loss was lower");
    cr_assert_not_null(ov);
    assert_has(ov, "| G5 | 1 of 3: step 75, +0.0050 | none | – |\n");
    assert_has(ov, "| baseline | none | none | none |\n");
    assert_has(strstr(md, "### Series `lg_a`"), "**Overfitting**: none; no finished run had a lower val loss");
    /* the gap plot: the longest budget's runs, one line per row, labels quoted */
    char *gp = out_file(&fx, "plots/budget-sm_a-gap.gp");
    assert_has(gp, "set title 'sm_c: val loss - train loss");
    assert_has(gp, "'budget-sm_a-gap.dat' index 1 using 1:2 with linespoints");
    assert_has(gp, " title 'G1 ''q'''");
    assert_lacks(gp, "index 2");
    free(gp);
    char *dat = out_file(&fx, "plots/budget-sm_a-gap.dat");
    assert_has(dat, "# G1 'q': tokens, mean gap, std, runs\n");
    /* at the last evaluation (step 400: 25.6M tokens) the gap; at step 300 the 9.0 counts */
    assert_has(dat, "25600000 0.05 ");
    assert_has(dat, "19200000 -7.35 ");
    free(dat);
    if (have_gnuplot()) assert_has(md, "(plots/budget-sm_a-gap.png)");
    free(md);
    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "budget-runs.csv");
    cr_assert_float_eq(csv_num_of(c, "sm_a,sm_a,6400000,100,G5,1,", "min_step"), 75, 1e-12);
    cr_assert_float_eq(csv_num_of(c, "sm_a,sm_a,6400000,100,G5,1,", "min_rise"), 0.005, 1e-12);
    cr_assert(isnan(csv_num_of(c, "sm_a,sm_a,6400000,100,G5,2,", "min_step")));
    cr_assert_float_eq(csv_num_of(c, "sm_a,sm_b,12800000,200,baseline,1,", "gap"), 0.05, 1e-12);
    free(c);
    fx_rm(&fx);
}

/* Δ by model size and budget: the small and the large series in one table
 * (their shared contrast only), the synthetic-corpus series outside it;
 * its plot against compute and its csv. */
Test(report_budget, delta_by_size) {
    Fx fx;
    char *md = sizes_md(&fx), want[512], c1[64], c2[64], c3[64], c4[64], c5[64];
    double h = q_df2(0.975) * 0.01 / sqrt(3);
    const char *sz = strstr(md, "### Δ by model size and budget\n\n");
    cr_assert_not_null(sz);
    assert_has(sz, "Sizes: `sm_a`, `sm_b`, `sm_c` (1000 params); `lg_a`, `lg_b` (2000 params).\n");
    assert_has(sz, "| row - baseline | sm_a: 1k params, 6.4M tokens, 6400.0 tok/param | sm_b: 1k params, 12.8M tokens, "
                   "12800.0 tok/param | sm_c: 1k params, 25.6M tokens, 25600.0 tok/param | lg_a: 2k params, 6.4M "
                   "tokens, 3200.0 tok/param | lg_b: 2k params, 12.8M tokens, 6400.0 tok/param |\n");
    static const double d[5] = {-0.10, -0.05, -0.02, -0.04, -0.02};
    char *cells[5] = {c1, c2, c3, c4, c5};
    for (int i = 0; i < 5; i++) snprintf(cells[i], 64, "%+.4f [%+.4f, %+.4f] (3)", d[i], d[i] - h, d[i] + h);
    snprintf(want, sizeof want, "| G1 'q' | %s | %s | %s | %s | %s |\n", c1, c2, c3, c4, c5);
    assert_has(sz, want);
    assert_lacks(sz, "| G5 |");
    assert_lacks(sz, "ot_a");
    char *gp = out_file(&fx, "plots/budget-size-sm_a-0.gp");
    assert_has(gp, "set title 'G1 ''q'' - baseline by model size'\n");
    assert_has(gp, "set logscale x\n");
    assert_has(gp, "set yrange [-0.115:0.015]\n"); /* the means (-0.10 .. -0.02) and 0, 15% to spare */
    assert_has(gp, "'budget-size-sm_a-0.dat' index 1 using 1:2:3:4 with yerrorlines");
    assert_has(gp, " title '2k params'");
    free(gp);
    char *dat = out_file(&fx, "plots/budget-size-sm_a-0.dat");
    assert_has(dat, "# G1 'q' - baseline, 1000 params: FLOPs, delta, CI low, CI high, seed pairs, tokens\n");
    assert_has(dat, "\n3.84e+10 -0.1 "); /* 6 x 1000 params x 6.4M tokens */
    assert_has(dat, "\n7.68e+10 -0.04 "); /* 6 x 2000 x 6.4M */
    free(dat);
    free(md);
    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "budget-size.csv");
    cr_assert_float_eq(csv_num_of(c, "sm_a,lg_a,lg_b,2000,12800000,6400,1.536e+11,G1 'q',", "delta_val_loss"), -0.02,
                       1e-9);
    cr_assert_eq(csv_num_of(c, "sm_a,sm_a,sm_c,1000,25600000,25600,1.536e+11,G1 'q',", "n_pairs"), 3);
    assert_lacks(c, "ot_a");
    free(c);
    fx_rm(&fx);
}
