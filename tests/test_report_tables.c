/*
 * test_report_tables.c — `gated report` on the main fixture (report_fx.c):
 * exact numbers in the md, csv and tex tables (means, sample stds of the
 * loss and the probes, Δ, its interval, the test used, raw and
 * Holm-adjusted p, the `*` mark, the lr-matched reference and the
 * divergence test, the paper column), the plot data files (last step only,
 * means and histogram sums over seeds, the lr sweep with its diverged
 * runs), the plot scripts (no two series alike past the 8 colours, std
 * bands and error bars where seeds repeat, labelled ticks on log axes)
 * and, where gnuplot exists, the SVG / PNG images; the report without
 * gnuplot; exit status 2 with its message for a missing or corrupt
 * database and an unknown sweep (in process, and through GATED_BIN when it
 * is set); hostile text quoted in every format; stored JSON read as JSON.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/probes.h"
#include "lab/paper.h"
#include "lab/report/report.h"
#include "testutil.h"
#include "lab/stats.h"
#include "run/store.h"
#include "report_fx.h"

Test(report, paper_table) {
    static const char *const labels[] = {
        "baseline",       "more-kv-heads",      "more-q-heads",     "G1-elementwise",     "G2-elementwise",
        "G3-elementwise", "G4-elementwise",     "G5",               "G1-headwise",        "G2-headwise",
        "G1-head-shared", "G2-head-shared",     "G1-additive-silu", "G1-silu",            "G1-rmsnorm-control",
        "G1-silu-only",   "G1-additive-identity", "G1-input-independent", "G1-ns-sigmoid"};
    size_t n = sizeof labels / sizeof labels[0];
    cr_assert_eq(paper_nrows, (int)n);
    for (size_t i = 0; i < n; i++) {
        const PaperRow *r = paper_lookup(labels[i]);
        cr_assert_not_null(r, "%s", labels[i]);
        cr_assert(r->ppl > 5.7 && r->ppl < 6.1, "%s", labels[i]);
    }
    cr_assert_float_eq(paper_lookup("G1-elementwise")->ppl, 5.761, 1e-12);
    cr_assert_float_eq(paper_lookup("G1-elementwise")->f_attn, 0.048, 1e-12);
    cr_assert_float_eq(paper_lookup("baseline")->ppl, PAPER_BASELINE_PPL, 1e-12);
    cr_assert(isnan(paper_lookup("baseline")->gate_mean));
    cr_assert_null(paper_lookup("G7"));
}

/* ------------------------------------------------------------------ */
/* the report                                                          */
/* ------------------------------------------------------------------ */

/* The main fixture's report.md (fx set up, *log the report's log). */
static char *fixture_md(Fx *fx, char **log) {
    fixture(fx);
    char err[1024];
    int rc = run_report(fx, REPORT_MD, NULL, NULL, log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, *log);
    return out_file(fx, "report.md");
}

Test(report, markdown) {
    Fx fx;
    char *log, *md = fixture_md(&fx, &log);
    assert_has(md, "- database: `");
    assert_has(md, "- runs: 35 (33 finished, 2 diverged)");
    assert_has(md, "- code versions: `test-v1` (35 runs)");
    assert_has(md, "- generated: ");
    assert_has(md, "15B-parameter MoE on 400B tokens");
    /* the legend: which test, what Holm and `*` mean, and what no `*` does not mean */
    assert_has(md, "`paired (k)`: a seed fixes the initialisation and the data order");
    assert_has(md, "`*` on Δ marks p (Holm) < 0.05");
    assert_has(md, "no `*` means \"not resolved with these seeds\", not \"no effect\"");
    assert_has(md, "## Sweep `main`");
    assert_has(md, "## Sweep `lr`");
    assert_has(md, "## Sweep `lrv`");
    assert_has(md, "15 runs: 15 finished. Baseline row: `baseline`. Δ: every row against the baseline row "
                   "`baseline`. Against another row: `gated report --ref LABEL`; every pair: the section \"Ranking and all pairs\" below.\n\n| variant ");
    /* under the table: the Holm family (this sweep alone) and the minimum detectable effect */
    assert_has(md, "|\n\nHolm–Bonferroni family: the 4 contrasts with a p of this table (no other sweep has the same "
                   "baseline runs). Minimum detectable effect: with n = 3 seed pairs this table detects |Δ| ≥ ");
    /* exact rows: mean ± std, Δ, CI, test, raw and Holm p, TOST p and verdict, probes ± std, paper.  TOST p
     * from the t CDF in closed form (df 2: 1/2 + t / (2 sqrt(t^2 + 2)); df 4: 1/2 + 3x/4 (1 - x^2/3) with x = t
     * / sqrt(t^2 + 4)) at (|Δ| - 0.02) / se, se = sd_d / sqrt(3) (paired) or Welch's sqrt(2 0.02^2 / 3) */
    char row[512];
    /* two tables of 12 columns (one of 23 did not fit a screen): the loss and its tests, ... */
    assert_has(md, "| variant | n | div | val loss | val PPL | Δ loss | 95% CI of Δ | test | p | p (Holm) | p (TOST) | "
                   "verdict |\n|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|\n");
    /* ... then the probes, the cost and the paper */
    assert_has(md, "Probes at the last evaluation, cost, and the paper's figures for the same labels:\n\n| variant | "
                   "F-Attn | M-Act | gate | spikes | +params | tok/s | kernel | paper PPL | paper ΔPPL | paper gate | "
                   "paper M-Act | paper F-Attn |\n|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|\n");
    assert_has(md, "| baseline | 3 | 0 | 1.5200 ± 0.0200 | 4.573 ± 0.091 | (baseline) | – | – | – | – | – | – |\n");
    assert_has(md, "| baseline | 0.3200 ± 0.0200 | 12.00 ± 2.00 | – | 2.0 | 0 | 1010 (1000–1020) | – | 6.026 | +0.000 | – | 1053 | 0.467 "
                   "|\n");
    /* paired: p 0.00274, Holm 4 x 0.00274 = 0.011 < 0.05: `*`, differs; TOST at t = 9 sqrt(3) */
    snprintf(row, sizeof row,
             "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 | 4.096 ± 0.041 | -0.1100* | [-0.1348, -0.0852] "
             "| paired (3) | 0.003 | 0.011 | %.3f | differs |\n",
             0.5 + 9 * sqrt(3) / (2 * sqrt(243 + 2)));
    assert_has(md, row);
    assert_has(md, "| G1-elementwise | 0.0600 ± 0.0100 | 5.00 ± 1.00 | 0.250 ± 0.050 | 0.0 | 4096 | 1110 (1100–1120) | – | 5.761 "
                   "| -0.265 | 0.116 | 94 | 0.048 |\n");
    /* Δ +0.01, sd_d 0.02: TOST at t = (0.01 - 0.02) / (0.02 / sqrt 3) = -sqrt(3) / 2 */
    snprintf(row, sizeof row,
             "| G1-headwise | 3 | 0 | 1.5300 ± 0.0400 | 4.621 ± 0.185 | +0.0100 | [-0.0397, +0.0597] "
             "| paired (3) | 0.478 | 0.478 | %.3f | inconclusive |\n",
             0.5 - sqrt(3) / 2 / (2 * sqrt(0.75 + 2)));
    assert_has(md, row);
    assert_has(md, "| G1-headwise | 0.1100 ± 0.0100 | 8.00 ± 1.00 | 0.350 ± 0.050 | 0.0 | 64 | 1210 (1200–1220) | – | 5.792 | -0.234 "
                   "| 0.172 | 98 | 0.073 |\n");
    /* raw p < 0.05 but not after Holm: no `*`; TOST at t = sqrt(3) */
    snprintf(row, sizeof row,
             "| G1-silu | 3 | 0 | 1.4900 ± 0.0100 | 4.437 ± 0.044 | -0.0300 | [-0.0548, -0.0052] "
             "| paired (3) | 0.035 | 0.105 | %.3f | inconclusive |\n",
             0.5 + sqrt(3) / (2 * sqrt(5)));
    assert_has(md, row);
    assert_has(md, "| G1-silu | 0.0900 ± 0.0100 | 7.00 ± 1.00 | 0.450 ± 0.050 |");
    /* no common seed: Welch (df 4); TOST at t = 0.03 / sqrt(2 x 0.0004 / 3) */
    double tw = 0.03 / sqrt(2 * 0.0004 / 3), xw = tw / sqrt(tw * tw + 4);
    snprintf(row, sizeof row,
             "| more-q-heads | 3 | 0 | 1.4700 ± 0.0200 | 4.350 ± 0.087 | -0.0500 | [-0.0953, -0.0047] "
             "| Welch | 0.038 | 0.105 | %.3f | inconclusive |\n",
             0.5 + 0.75 * xw * (1 - xw * xw / 3));
    assert_has(md, row);
    assert_has(md, "| more-q-heads | 0.2600 ± 0.0100 | 12.00 ± 1.00 | – | 0.0 | 8192 | 1410 (1400–1420) | – | 5.953 |");
    assert_lacks(md, "+0.0100*");
    assert_lacks(md, "-0.0300*");
    assert_lacks(md, "| 4.350 ± 0.087 | -0.0500*");
    free(md);
    free(log);
    fx_rm(&fx);
}

Test(report, markdown_lr_rule) {
    Fx fx;
    char *log, *md = fixture_md(&fx, &log);
    char row[512];
    /* the lr sweep: lr-matched Δ, a vs column, divergence counts and Fisher's p */
    assert_has(md, "20 runs: 18 finished, 2 diverged. Baseline row: `lr=0.001,position=none`. Rows differ in "
                   "`train.lr`, so Δ is lr-matched: each row against the row with the configuration of the baseline row "
                   "`lr=0.001,position=none` (every key but `train.lr`, `train.min_lr`, `train.seed`) at the row's own "
                   "`train.lr` (column vs; those reference rows are marked `(lr baseline)`); 1 row with no such row "
                   "(marked `(no lr match)`) is compared with `lr=0.001,position=none` instead. Against another row: `gated report --ref LABEL`; every pair: the section \"Ranking and all pairs\" below.\n");
    /* lr and lrv hold the same runs: one family of the 3 distinct contrasts, not 6 */
    assert_has(md, "Holm–Bonferroni family: 3 distinct contrasts with a p over the sweeps `lr` and `lrv`, whose "
                   "baseline rows are the same runs (a contrast shown in several of their tables is counted once).");
    assert_has(md, "| variant | n | div | val loss | val PPL | Δ loss | vs | 95% CI of Δ | test | p | p (Holm) | "
                   "p (TOST) | verdict | div/total | p (div, Fisher) |\n");
    assert_has(md, "| lr=0.001,position=none | 4 | 0 | 2.0750 ± 0.0645 | 7.977 ± 0.515 | (baseline) | – | – | – | – "
                   "| – | – | – | 0/4 | – |\n");
    assert_has(md, "| lr=0.001,position=none | 0.1000 ± 0.0000 | 5.00 ± 0.00 | – | 0.0 | 0 | 500 | – | – | – | – | – | – |\n");
    assert_has(md, "| lr=0.01,position=none | 2 | 2 | 2.5500 ± 0.0707 | 12.823 ± 0.906 | (lr baseline) | – | – | – "
                   "| – | – | – | – | 2/4 | – |");
    assert_has(md, "| lr=0.001,position=sdpa | 4 | 0 | 1.9800 ± 0.0594 | 7.252 ± 0.424 | -0.0950* "
                   "| lr=0.001,position=none | [-0.1255, -0.0645] | paired (4) | 0.002 | 0.007 | ");
    assert_has(md, " | differs; 3 contrasts in this family; this database's largest family adjusts over 4 | 0/4 | 1.000 |");
    /* against its own lr's baseline, on the 2 seeds both finished: -0.725, not -0.2 against the baseline row;
     * TOST (df 1, Cauchy: 1/2 + atan(t) / pi) at t = (0.725 - 0.02) / 0.025 */
    snprintf(row, sizeof row,
             "| lr=0.01,position=sdpa | 4 | 0 | 1.8750 ± 0.0645 | 6.531 ± 0.421 | -0.7250* "
             "| lr=0.01,position=none | [-1.0427, -0.4073] | paired (2) | 0.022 | 0.022 | %.3f | differs; 3 contrasts in this family; this database's largest family adjusts over 4 | 0/4 "
             "| 0.429 |",
             0.5 + atan(0.705 / 0.025) / M_PI);
    assert_has(md, row);
    assert_has(md, "| lr=0.003,position=sdpa | 4 | 0 | 2.0250 ± 0.0520 | 7.584 ± 0.392 | -0.0500* "
                   "| lr=0.001,position=none (no lr match) | [-0.0725, -0.0275] | paired (4) | 0.006 | 0.012 | ");
    assert_has(md, " | differs; 3 contrasts in this family; this database's largest family adjusts over 4 | 0/4 | 1.000 |\n");
    assert_has(md, "| lr=0.003,position=sdpa | 0.1000 ± 0.0000 | 5.00 ± 0.00 | 0.500 ± 0.000 | 0.0 | 4096 | 500 | – "
                   "| – | – | – | – |");
    /* the variants-style labels give the same rows */
    snprintf(row, sizeof row,
             "| G1-lr1.0e-2 | 4 | 0 | 1.8750 ± 0.0645 | 6.531 ± 0.421 | -0.7250* | baseline-lr1.0e-2 "
             "| [-1.0427, -0.4073] | paired (2) | 0.022 | 0.022 | %.3f | differs; 3 contrasts in this family; this "
             "database's largest family adjusts over 4 | 0/4 | 0.429 |",
             0.5 + atan(0.705 / 0.025) / M_PI);
    assert_has(md, row);
    assert_has(md, "| baseline-lr1.0e-2 | 2 | 2 | 2.5500 ± 0.0707 | 12.823 ± 0.906 | (lr baseline) |");
    assert_has(md, "Attention heatmap (baseline vs G1, first-token column): skipped — it needs per-position "
                   "attention data");
    assert_has(md, "Val loss against learning rate: not drawn");
    /* no sink probes or eval results in this fixture: none of their columns and sections */
    assert_lacks(md, "sink heads");
    assert_lacks(md, "Sink formation");
    assert_lacks(md, "F-Attn per layer and query head");
    assert_lacks(md, "Perplexity against context length");
    assert_lacks(md, "fattn-heads");
    assert_lacks(md, "ppl-vs-length");

    free(md);
    free(log);
    fx_rm(&fx);
}

Test(report, markdown_plots) {
    Fx fx;
    char *log, *md = fixture_md(&fx, &log);
    /* plot data: last step, means over seeds, histograms summed over seeds */
    char *d = out_file(&fx, "plots/main-val_loss.dat");
    assert_has(d, "# baseline: step, mean, std, runs\n50 1.77 0.02 3\n100 1.52 0.02 3\n");
    free(d);
    d = out_file(&fx, "plots/main-f_attn.dat");
    assert_has(d, "# G1-headwise: layer, mean, std, runs\n0 0.22 0.01 3\n1 0.42 0.01 3\n");
    free(d);
    d = out_file(&fx, "plots/main-m_act.dat");
    assert_has(d, "0 12 1 3\n1 22 1 3\n");
    free(d);
    d = out_file(&fx, "plots/main-gate-1-G1-elementwise.dat");
    assert_has(d, "# layer 0 (3 runs): bin centre, fraction, count\n0.125 0.1 6\n0.375 0.2 12\n0.625 0.3 18\n"
                  "0.875 0.4 24\n");
    assert_has(d, "# layer 1 (3 runs): bin centre, fraction, count\n0.125 0.4 24\n0.375 0.2 12\n0.625 0.4 24\n"
                  "0.875 0 0\n");
    free(d);
    char p[256];
    snprintf(p, sizeof p, "%s/plots/main-gate-0-baseline.dat", fx.out);
    cr_assert(!exists(p), "the baseline has no gate histogram");
    d = out_file(&fx, "plots/lr-lr.dat");
    assert_has(d, "# position=none: lr, mean final val loss, std, finished runs\n0.001 2.075 0.06454972244 4\n"
                  "0.01 2.55 0.07071067812 2\n");
    assert_has(d, "# position=sdpa: lr, mean final val loss, std, finished runs\n0.001 1.98 0.05944184833 4\n"
                  "0.003 2.025 0.05196152423 4\n0.01 1.875 0.06454972244 4\n");
    assert_has(d, "# diverged runs: lr, drawn at, series\n0.01 2.72 0\n0.01 2.72 0\n");
    free(d);
    d = out_file(&fx, "plots/lr-lr.gp");
    assert_has(d, "set logscale x");
    /* a labelled tick at every learning rate tried (gnuplot alone labels 0.001 and 0.01) */
    assert_has(d, "set xtics (\"0.001\" 0.001, \"0.003\" 0.003, \"0.01\" 0.01)\n");
    assert_has(d, "index 0 using 1:2:3 with yerrorlines lc rgb ");
    assert_has(d, " title 'position=none'");
    assert_has(d, "index 1 using 1:2:3 with yerrorlines lc rgb ");
    assert_has(d, " title 'position=sdpa'");
    assert_has(d, "title 'diverged'");
    free(d);
    d = out_file(&fx, "plots/lrv-lr.gp"); /* series named by the labels without their lr */
    assert_has(d, "title 'baseline'");
    assert_has(d, "title 'G1'");
    free(d);
    /* M-Act on a log axis: the means +- std span 11 .. 26 (rows 12 +- 1 and 22 +- 1 per layer, more-q-heads
     * 15 and 25): under a decade, so round values 5 apart, not gnuplot's lone label at 10 */
    d = out_file(&fx, "plots/main-m_act.gp");
    assert_has(d, "set logscale y\nset autoscale yfix\n");
    assert_has(d, "set ytics (\"15\" 15, \"20\" 20, \"25\" 25)\n");
    free(d);

    if (have_gnuplot()) {
        static const char *const imgs[] = {"main-val_loss", "main-f_attn", "main-m_act", "main-gate-1-G1-elementwise",
                                           "main-gate-2-G1-headwise", "lr-lr", "lr-val_loss"};
        for (size_t i = 0; i < sizeof imgs / sizeof imgs[0]; i++) {
            snprintf(p, sizeof p, "%s/plots/%s.png", fx.out, imgs[i]);
            cr_assert(exists(p), "%s missing", p);
            char *png = test_read_file(p, NULL);
            cr_assert_eq(memcmp(png, "\x89PNG", 4), 0, "%s is not a PNG", p);
            free(png);
            snprintf(p, sizeof p, "%s/plots/%s.svg", fx.out, imgs[i]);
            cr_assert(exists(p), "%s missing", p);
            char link[128];
            snprintf(link, sizeof link, "(plots/%s.png)", imgs[i]);
            assert_has(md, link);
        }
        assert_lacks(md, "gnuplot not found");
    } else {
        assert_has(md, "gnuplot not found");
        assert_has(log, "gated report: gnuplot not found; plots skipped (apt-get install -y gnuplot-nox)");
    }

    free(md);
    free(log);
    fx_rm(&fx);
}

Test(report, csv) {
    Fx fx;
    fixture(&fx);
    char err[1024];
    int rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *c = out_file(&fx, "main.csv");
    assert_has(c, "sweep,label,idx,is_baseline,n_finished,n_diverged,n_runs,val_loss_mean,val_loss_std,val_ppl_mean,"
                  "val_ppl_std,delta_rule,delta_vs,delta_val_loss,delta_ci_lo,delta_ci_hi,test,n_pairs,t,df,p_raw,"
                  "p_holm,significant,f_attn_mean,f_attn_std,m_act_mean,m_act_std,gate_mean,gate_mean_std,spikes_mean,"
                  "gate_params,tokens_per_s_mean,train_lr,n_ended,div_fisher_p,paper_ppl,paper_delta_ppl,"
                  "paper_gate_mean,paper_m_act,paper_f_attn,holm_family_size,p_tost,tost_margin,verdict,kernels,rank,"
                  "tokens_per_s_min,tokens_per_s_max,n_load_recorded,n_beside_other_jobs,matrix_family_size\n");
    assert_has(c, "\nmain,baseline,0,1,3,0,3,1.52,0.02,4.572834845,0.09145212439,reference,,,,,,,,,,,,0.32,0.02,12,2,,,"
                  "2,0,1010,0.003,3,,6.026,0,,1053,0.467,,,,,,4,1000,1020,0,0,4\n");
    /* paired: t -19.0525588832576502, p 0.00274348939442592404, Holm 0.0109739575777036961 (mpmath) */
    assert_has(c, "\nmain,G1-elementwise,3,0,3,0,3,1.41,0.01,4.096091937,0.04096040737,baseline,baseline,-0.11,"
                  "-0.1348413771,-0.08515862288,paired,3,-19.05255888,2,0.002743489394,0.01097395758,1,0.06,0.01,5,1,"
                  "0.25,0.05,0,4096,1110,0.003,3,,5.761,-0.265,0.116,94,0.048,4,");
    assert_has(c, ",0.02,differs,,1,1100,1120,0,0,4\n");
    /* TOST: t CDF of df 2 in closed form at 9 sqrt(3) (see Test(report, markdown)) */
    cr_assert_float_eq(csv_num_of(c, "main,G1-elementwise,", "p_tost"), 0.5 + 9 * sqrt(3) / (2 * sqrt(245)), 1e-9);
    assert_has(c, "\nmain,G1-headwise,6,0,3,0,3,1.53,0.04,4.620640178,0.1847886521,baseline,baseline,0.01,"
                  "-0.03968275424,0.05968275424,paired,3,0.8660254038,2,0.4777670321,0.4777670321,0,0.11,0.01,8,1,0.35,"
                  "0.05,0,64,1210,0.003,3,,5.792,");
    /* raw p 0.0350987186459846505 < 0.05; Holm 3 x p = 0.105296155937953951: not significant */
    assert_has(c, "\nmain,G1-silu,9,0,3,0,3,1.49,0.01,4.437243423,0.04437187959,baseline,baseline,-0.03,"
                  "-0.05484137712,-0.005158622882,paired,3,-5.196152423,2,0.03509871865,0.1052961559,0,0.09,0.01,7,1,"
                  "0.45,0.05,0,4096,1310,0.003,3,,5.822,-0.204,,,,4,");
    cr_assert_float_eq(csv_num_of(c, "main,G1-silu,", "p_tost"), 0.5 + sqrt(3) / (2 * sqrt(5)), 1e-9);
    assert_has(c, ",0.02,inconclusive,,3,1300,1320,0,0,4\n");
    /* Welch (no common seed): p 0.0375901115111464697, Holm max(0.1053, 2 x p) = 0.1053 */
    assert_has(c, "\nmain,more-q-heads,12,0,3,0,3,1.47,0.02,4.349815058,0.08699195165,baseline,baseline,-0.05,"
                  "-0.09533915871,-0.004660841289,welch,,-3.061862178,4,0.03759011151,0.1052961559,0,0.26,0.01,12,1,"
                  ",,0,8192,1410,0.003,3,,5.953,-0.073,,,,4,");
    free(c);
    c = out_file(&fx, "lr.csv");
    /* labels holding a comma are quoted; the lr baseline is a reference; lr-matched Δ against it with
     * Fisher's p 3/7 for 0/4 against 2/4 diverged; the row without a baseline at its lr falls back */
    assert_has(c, "\nlr,\"lr=0.01,position=none\",4,0,2,2,4,2.55,0.07071067812,12.823116,0.9059763733,reference,,,,,,,"
                  ",,,,,0.1,0,5,0,,,0,0,500,0.01,4,,,,,,,,,,,,5,500,500,0,0,4\n");
    assert_has(c, "\nlr,\"lr=0.01,position=sdpa\",12,0,4,0,4,1.875,0.06454972244,6.531012252,0.4213819466,lr_matched,"
                  "\"lr=0.01,position=none\",-0.725,-1.042655118,-0.4073448816,paired,2,-29,1,0.02194371123,"
                  "0.02194371123,1,0.1,0,5,0,0.5,0,0,4096,500,0.01,4,0.4285714286,,,,,,3,");
    assert_has(c, "\nlr,\"lr=0.001,position=sdpa\",8,0,4,0,4,1.98,0.05944184833,7.252245556,0.4243337027,lr_matched,"
                  "\"lr=0.001,position=none\",-0.095,-0.1254696036,-0.06453039638,paired,4,-9.922426389,3,"
                  "0.002177513114,0.006532539341,1,");
    assert_has(c, "\nlr,\"lr=0.003,position=sdpa\",16,0,4,0,4,2.025,0.05196152423,7.583753608,0.3916144526,"
                  "baseline_fallback,\"lr=0.001,position=none\",-0.05,-0.07250329363,-0.02749670637,paired,4,"
                  "-7.071067812,3,0.005815647593,0.01163129519,1,0.1,0,5,0,0.5,0,0,4096,500,0.003,4,1,,,,,,3,");
    free(c);
    fx_rm(&fx);
}

Test(report, tex_and_one_sweep) {
    Fx fx;
    fixture(&fx);
    char err[1024];
    int rc = run_report(&fx, REPORT_TEX, "main", "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *t = out_file(&fx, "main.tex");
    assert_has(t, "% Δ: every row against the baseline row baseline.\n% Holm–Bonferroni family: the 4 contrasts "
                  "with a p of this table (no other sweep has the same baseline runs). Minimum detectable effect: ");
    assert_has(t, "\\begin{tabular}{lrrrrrrlrrrlrrrrrrlrrrrr}\n\\toprule\n"
                  " & \\multicolumn{18}{c}{this suite} & \\multicolumn{5}{c}{paper (15B MoE)} \\\\\n"
                  "\\cmidrule(lr){2-19}\\cmidrule(lr){20-24}\n"
                  "variant & $n$ & div & val loss & val PPL & $\\Delta$ loss & 95\\% CI of $\\Delta$ & test & $p$ & "
                  "$p_{\\mathrm{Holm}}$ & $p_{\\mathrm{TOST}}$ & verdict & F-Attn & M-Act & gate & spikes & +params & "
                  "tok/s & kernel & PPL & $\\Delta$PPL & gate & M-Act & F-Attn \\\\\n\\midrule\n");
    assert_has(t, "\\bottomrule\n\\end{tabular}\n");
    char row[512];
    snprintf(row, sizeof row,
             "G1-elementwise & 3 & 0 & 1.4100 $\\pm$ 0.0100 & 4.096 $\\pm$ 0.041 & -0.1100$^{*}$ & "
             "[-0.1348, -0.0852] & paired (3) & 0.003 & 0.011 & %.3f & differs & 0.0600 $\\pm$ 0.0100 & "
             "5.00 $\\pm$ 1.00 & 0.250 $\\pm$ 0.050 & 0.0 & 4096 & 1110 (1100--1120) & -- & 5.761 & -0.265 & 0.116 & 94 & 0.048 \\\\\n",
             0.5 + 9 * sqrt(3) / (2 * sqrt(245)));
    assert_has(t, row);
    assert_has(t, "G1-silu & 3 & 0 & 1.4900 $\\pm$ 0.0100 & 4.437 $\\pm$ 0.044 & -0.0300 & [-0.0548, -0.0052] & "
                  "paired (3) & 0.035 & 0.105 & ");
    assert_has(t, "more-q-heads & 3 & 0 & 1.4700 $\\pm$ 0.0200 & 4.350 $\\pm$ 0.087 & -0.0500 & [-0.0953, -0.0047] & "
                  "Welch & 0.038 & 0.105 & ");
    free(t);
    char p[256];
    snprintf(p, sizeof p, "%s/lr.tex", fx.out);
    cr_assert(!exists(p), "--sweep main wrote the lr sweep");
    /* the lr sweep: the vs, div/total and Fisher columns; labels escaped */
    rc = run_report(&fx, REPORT_TEX, "lr", "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    t = out_file(&fx, "lr.tex");
    assert_has(t, "% Rows differ in train.lr, so Δ is lr-matched: ");
    assert_has(t, "\\begin{tabular}{lrrrrrlrlrrrlrrrrrrrrlrrrrr}\n\\toprule\n"
                  " & \\multicolumn{21}{c}{this suite} & \\multicolumn{5}{c}{paper (15B MoE)} \\\\\n"
                  "\\cmidrule(lr){2-22}\\cmidrule(lr){23-27}\n");
    snprintf(row, sizeof row,
             "lr=0.01,position=sdpa & 4 & 0 & 1.8750 $\\pm$ 0.0645 & 6.531 $\\pm$ 0.421 & -0.7250$^{*}$ & "
             "lr=0.01,position=none & [-1.0427, -0.4073] & paired (2) & 0.022 & 0.022 & %.3f & differs; 3 contrasts in this family; this database's largest family adjusts over 4 & 0/4 & "
             "0.429 & ",
             0.5 + atan(0.705 / 0.025) / M_PI);
    assert_has(t, row);
    assert_has(t, "lr=0.003,position=sdpa & 4 & 0 & 2.0250 $\\pm$ 0.0520 & 7.584 $\\pm$ 0.392 & -0.0500$^{*}$ & "
                  "lr=0.001,position=none (no lr match) & ");
    free(t);
    fx_rm(&fx);
}

Test(report, without_gnuplot) {
    Fx fx;
    fixture(&fx);
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_MD, "main", "/nonexistent/gnuplot", &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    assert_has(log, "gated report: gnuplot not found; plots skipped (apt-get install -y gnuplot-nox)\n");
    char *md = out_file(&fx, "report.md");
    assert_has(md, "- plots: skipped: gnuplot not found (apt-get install -y gnuplot-nox)");
    assert_has(md, "Plots skipped: gnuplot not found");
    assert_has(md, "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 |");
    assert_lacks(md, "## Sweep `lr`");
    assert_lacks(md, ".png)");
    char p[256];
    snprintf(p, sizeof p, "%s/plots/main-val_loss.png", fx.out);
    cr_assert(!exists(p));
    snprintf(p, sizeof p, "%s/plots/main-val_loss.gp", fx.out); /* scripts are kept for later */
    cr_assert(exists(p));
    free(md);
    free(log);
    fx_rm(&fx);
}

Test(report, bad_input) {
    Fx fx;
    fixture(&fx);
    char err[1024], db[160];
    /* unknown sweep */
    int rc = run_report(&fx, REPORT_MD, "nope", NULL, NULL, err, sizeof err);
    cr_assert_eq(rc, REPORT_BADINPUT);
    char want[512];
    snprintf(want, sizeof want, "%s: no sweep 'nope' (sweeps: lr, lrv, main)", fx.db);
    cr_assert_str_eq(err, want);
    /* missing database: not created */
    snprintf(db, sizeof db, "%s/missing.db", fx.dir);
    ReportOpts o = {db, NULL, REPORT_MD, fx.out, 1, NULL, NULL, NULL, 0, NULL, NULL};
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    snprintf(want, sizeof want, "%s: no such database (run a sweep first, or pass --db)", db);
    cr_assert_str_eq(err, want);
    cr_assert_eq(access(db, F_OK), -1);
    /* not a database */
    snprintf(db, sizeof db, "%s/junk.db", fx.dir);
    FILE *f = fopen(db, "w");
    cr_assert_not_null(f);
    fputs("this is not sqlite\n", f);
    fclose(f);
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    assert_has(err, "not a gated database");

    /* the same through the command, when built */
    const char *bin = getenv("GATED_BIN");
    if (bin && access(bin, X_OK) == 0) {
        char cmd[1024];
        struct {
            const char *args, *msg;
        } cases[] = {
            {"--db '%s/missing.db'", "no such database"},
            {"--db '%s/fx.db' --sweep nope", "no sweep 'nope' (sweeps: lr, lrv, main)"},
            {"--db '%s/junk.db'", "not a gated database"},
            {"--db '%s/fx.db' --format pdf", "--format: expected md, csv or tex, got \"pdf\""},
            {"--db '%s/fx.db' --bogus", "unknown option '--bogus'"},
            {"--db '%s/fx.db' --margin -0.02", "--margin: expected a positive number of nats, got \"-0.02\""},
            {"--db '%s/fx.db' --margin 0.02x", "--margin: expected a positive number of nats, got \"0.02x\""},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char args[512];
            snprintf(args, sizeof args, cases[i].args, fx.dir);
            snprintf(cmd, sizeof cmd, "'%s' report %s --out '%s/cli' > '%s/cli.out' 2>&1", bin, args, fx.dir, fx.dir);
            int st = system(cmd);
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", cmd, st);
            snprintf(cmd, sizeof cmd, "%s/cli.out", fx.dir);
            char *out = test_read_file(cmd, NULL);
            assert_has(out, "gated report: ");
            assert_has(out, cases[i].msg);
            free(out);
        }
        snprintf(cmd, sizeof cmd, "'%s' report --db '%s/fx.db' --out '%s/cli' --format csv > '%s/cli.out' 2>&1", bin,
                 fx.dir, fx.dir, fx.dir);
        int st = system(cmd);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cmd, st);
        snprintf(cmd, sizeof cmd, "%s/cli/main.csv", fx.dir);
        cr_assert(exists(cmd));
        snprintf(cmd, sizeof cmd,
                 "'%s' report --db '%s/fx.db' --out '%s/cli' --sweep main --no-plots --margin=0.05 > '%s/cli.out' 2>&1",
                 bin, fx.dir, fx.dir, fx.dir);
        st = system(cmd);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cmd, st);
        snprintf(cmd, sizeof cmd, "%s/cli/report.md", fx.dir);
        char *md = test_read_file(cmd, NULL);
        assert_has(md, "- equivalence margin: ±0.05 nats of val loss (`--margin`)\n");
        free(md);
    }
    fx_rm(&fx);
}

/* More series than colours: 10 rows (2 seeds each) in sweep "many"; 2
 * rows of one seed in sweep "single".  Every line must look different
 * (colour, dash type), bands of +- std come first (under every line) and
 * only where some point has 2 runs, error bars on the per-layer plots. */
Test(report, plots_tell_many_series_apart_and_draw_the_std) {
    Fx fx;
    Store *s = fx_open(&fx);
    enum { NR = 10 };
    char ids[NR * 2 + 2][17], labels[NR + 2][32];
    StoreSweepRun sr[NR * 2 + 2];
    for (int i = 0; i < NR * 2 + 2; i++) {
        int row = i < NR * 2 ? i / 2 : NR + (i - NR * 2), seed = i < NR * 2 ? i % 2 + 1 : 1;
        snprintf(labels[row], sizeof labels[row], "row-%d", row);
        char json[160], name[64];
        snprintf(json, sizeof json, "{\"model.n_head\":%d,\"train.seed\":%d}", row + 1, seed);
        snprintf(name, sizeof name, "r%d-s%d", row, seed);
        add_run(s, json, name, seed, "finished", 2.0 + 0.01 * row + 0.005 * seed, 0.1, 5 + seed, NAN, 0, 0, 100,
                ids[i]);
        sr[i] = (StoreSweepRun){ids[i], labels[row], seed, i, row == 0 || row == NR};
    }
    cr_assert_eq(store_sweep_record(s, "many", NR * 2, sr, NR * 2), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_sweep_record(s, "single", 2, sr + NR * 2, 2), 0, "%s", store_errmsg(s));
    cr_assert_eq(store_sweep_record(s, "few", 6, sr, 6), 0, "%s", store_errmsg(s)); /* rows 0-2 */
    store_close(s);
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);

    char *d = out_file(&fx, "plots/many-val_loss.gp");
    char lk[NR][128];
    int dashed = 0;
    for (int i = 0; i < NR; i++) {
        gp_look_of(d, i, "1:2 with linespoints", lk[i], sizeof lk[i]);
        cr_assert(strstr(lk[i], " lc ") && strstr(lk[i], " dt "), "series %d has no colour and dash type:\n%s", i, d);
        dashed += strstr(lk[i], " dt 1") == NULL;
        /* colour and dash type: "lc rgb '#xxxxxx' dt N" */
        char *pt = strstr(lk[i], " pt ");
        if (pt) *pt = '\0';
        for (int j = 0; j < i; j++) cr_assert_str_neq(lk[i], lk[j], "series %d and %d look alike", i, j);
    }
    cr_assert_eq(dashed, NR - 8, "the series past the palette's 8 colours are dashed:\n%s", d);
    /* 10 rows: no std bands (they would blur into one), and the key below the plot, not beside it */
    const char *band = "using 1:($2-$3):($2+$3) with filledcurves";
    assert_lacks(d, band);
    assert_has(d, "set key below\n");
    assert_lacks(d, "outside right");
    free(d);
    /* 3 rows: the bands, one per row, all before the first line */
    d = out_file(&fx, "plots/few-val_loss.gp");
    cr_assert_eq(count_of(d, band), 3, "%s", d);
    cr_assert(strstr(d, band) < strstr(d, "with linespoints"), "%s", d);
    assert_has(d, "notitle");
    assert_has(d, "(nats/byte), mean over seeds (band: +- std)'");
    free(d);
    d = out_file(&fx, "plots/many-f_attn.gp");
    assert_has(d, "' index 9 using 1:2:3 with yerrorlines lc rgb ");
    free(d);
    /* one seed per row: no std to draw */
    d = out_file(&fx, "plots/single-val_loss.gp");
    assert_lacks(d, "filledcurves");
    assert_has(d, "' index 1 using 1:2 with linespoints lc rgb ");
    free(d);
    d = out_file(&fx, "plots/single-f_attn.gp");
    assert_lacks(d, "yerrorlines");
    free(d);
    /* the captions say what is drawn */
    char *md = out_file(&fx, "report.md");
    const char *cap = "Validation loss against step (mean over seeds; band: +- std)";
    assert_has(md, cap);
    assert_lacks(strstr(md, cap) + 1, cap); /* sweep few only */
    assert_has(md, "**Validation loss against step (mean over seeds; no std bands past 4 rows: the std is in the table "
                   "and the data file)**"); /* sweep many */
    assert_has(md, "**F-Attn per layer (last step, mean over seeds; error bars: std)**");
    assert_has(md, "**M-Act per layer (last step, mean over seeds; error bars: std; log scale)**");
    assert_has(md, "**Validation loss against step (mean over seeds)**"); /* sweep single */
    free(md);
    fx_rm(&fx);
}

/* A database from elsewhere (merged, or written by another tool) holds a
 * label with a newline and a gnuplot shell line, Markdown / TeX specials, a
 * sweep name with an escape code and an eval context whose scaling would
 * name a plot series: no plot script gets a line of its own from them
 * (nothing runs), and every format writes them quoted. */
Test(report, hostile_text_is_quoted_in_every_format) {
    Fx fx;
    fixture(&fx);
    fx_sql(&fx, "UPDATE sweep_runs SET label = 'G1' || char(10) || '!touch PWNED' || char(10) ||"
                " '`x` *y* |z| $w$ <b>' WHERE sweep = 'main' AND label = 'G1-elementwise'");
    fx_sql(&fx, "UPDATE sweep_runs SET sweep = 'lrv' || char(27) || '[2J' || char(10) || '!touch PWNED2'"
                " WHERE sweep = 'lrv'");
    fx_sql(&fx, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, 'eval_ppl',"
                " 'split=val,len=128,scaling=a' || char(10) || '!touch PWNED3,factor=1', 100, 5"
                " FROM sweep_runs WHERE sweep = 'main'");
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    char cmd[256], out[1024] = "";
    snprintf(cmd, sizeof cmd, "find '%s' -name 'PWNED*'", fx.dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0);
    cr_assert_str_eq(out, "", "gnuplot ran a shell command: %s", out);
    /* no plot script has a line that is not the report's own */
    assert_plot_scripts_clean(fx.out, "*.gp", 50);
    char *gp = out_file(&fx, "plots/main-val_loss.gp");
    assert_has(gp, "title 'G1\\x0a!touch PWNED\\x0a`x` *y* |z| $w$ <b>'");
    free(gp);
    char *md = out_file(&fx, "report.md");
    cr_assert(!raw_control(md), "a control byte in report.md");
    assert_has(md, "| G1\\\\x0a!touch PWNED\\\\x0a\\`x\\` \\*y\\* \\|z\\| \\$w\\$ \\<b\\> | 3 | 0 | 1.4100 ± 0.0100 |");
    assert_has(md, "**Gate scores of ``G1\\x0a!touch PWNED\\x0a`x` *y* |z| $w$ <b>`` per layer");
    assert_has(md, "## Sweep `lrv\\x1b[2J\\x0a!touch PWNED2`\n");
    assert_lacks(md, "Perplexity against context length"); /* the malformed scaling is not a series */
    free(md);

    rc = run_report(&fx, REPORT_TEX, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *t = out_file(&fx, "main.tex");
    cr_assert(!raw_control(t), "a control byte in main.tex");
    assert_has(t, "\nG1\\textbackslash{}x0a!touch PWNED\\textbackslash{}x0a`x` *y* |z| \\$w\\$ <b> & 3 & 0 & ");
    free(t);
    t = out_file(&fx, "lrv__2J__touch_PWNED2.tex"); /* the file name: [A-Za-z0-9._-] only */
    cr_assert(!raw_control(t), "a control byte in the tex file");
    assert_has(t, "% gated report: sweep lrv\\x1b[2J\\x0a!touch PWNED2 (20 runs");
    free(t);

    rc = run_report(&fx, REPORT_CSV, "main", "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *c = out_file(&fx, "main.csv");
    cr_assert(!raw_control(c), "a control byte in main.csv");
    assert_has(c, "\nmain,G1\\x0a!touch PWNED\\x0a`x` *y* |z| $w$ <b>,3,0,3,0,3,1.41,");
    cr_assert_eq(lines_of(c), 6, "%s", c);
    free(c);
    fx_rm(&fx);
}

/* Stored JSON is read as JSON (SQLite's JSON functions), not scanned as
 * text: run configs that differ only in whitespace are one configuration
 * (the lr sweep's series, lr-matched references and Fisher tests stay as
 * they are without the spaces); a config that is not JSON, or whose
 * train.lr is a string, has no lr; histogram counts may hold whitespace,
 * and counts that are not a JSON array of 64-bit integers are skipped with
 * a warning. */
Test(report, stored_json_is_read_as_json) {
    Fx fx;
    fixture(&fx);
    fx_sql(&fx, "UPDATE runs SET config_json = replace(replace(config_json, ',', ' , '), ':', ': ')"
                " WHERE run_id IN (SELECT run_id FROM sweep_runs WHERE sweep = 'lr' AND idx % 2 = 0)");
    fx_sql(&fx, "UPDATE runs SET config_json = 'not JSON {\"train.lr\":0.003' WHERE name = 'main-more-q-heads-s4'");
    fx_sql(&fx, "UPDATE runs SET config_json = replace(config_json, '\"train.lr\":0.003', '\"train.lr\":\"0.003\"')"
                " WHERE name = 'main-G1-silu-s1'");
    static const char *const counts[][3] = {
        {"main-G1-elementwise-s1", "layer=0", "[ 1 ,2,\n 3,4 ] "}, /* the same counts, spaced */
        {"main-G1-headwise-s1", "layer=0", "[1,2,\"3\",4]"},
        {"main-G1-headwise-s3", "layer=0", "[1.5,2,3,4]"},
        {"main-G1-headwise-s2", "layer=1", "[1,2,3"},
        {"main-G1-silu-s1", "layer=1", "[4,2,99999999999999999999,0]"},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "UPDATE histograms SET counts = '%s' WHERE key = 'gate' AND context = '%s' AND step = 100 AND"
                 " run_id = (SELECT run_id FROM runs WHERE name = '%s')",
                 counts[i][2], counts[i][1], counts[i][0]);
        fx_sql(&fx, sql);
    }
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    cr_assert_eq(count_of(log, ": bad counts; skipped\n"), 4, "%s", log);

    /* the lr sweep as in Test(report, csv) and Test(report, markdown) */
    char *c = out_file(&fx, "lr.csv");
    assert_has(c, "\nlr,\"lr=0.01,position=sdpa\",12,0,4,0,4,1.875,0.06454972244,6.531012252,0.4213819466,lr_matched,"
                  "\"lr=0.01,position=none\",-0.725,-1.042655118,-0.4073448816,paired,2,-29,1,0.02194371123,"
                  "0.02194371123,1,0.1,0,5,0,0.5,0,0,4096,500,0.01,4,0.4285714286,,,,,,3,");
    assert_has(c, "\nlr,\"lr=0.003,position=sdpa\",16,0,4,0,4,2.025,0.05196152423,7.583753608,0.3916144526,"
                  "baseline_fallback,\"lr=0.001,position=none\",-0.05,");
    free(c);
    c = out_file(&fx, "plots/lr-lr.dat");
    assert_has(c, "# position=none: lr, mean final val loss, std, finished runs\n0.001 2.075 0.06454972244 4\n"
                  "0.01 2.55 0.07071067812 2\n");
    assert_has(c, "# position=sdpa: lr, mean final val loss, std, finished runs\n0.001 1.98 0.05944184833 4\n"
                  "0.003 2.025 0.05196152423 4\n0.01 1.875 0.06454972244 4\n");
    assert_has(c, "# diverged runs: lr, drawn at, series\n0.01 2.72 0\n0.01 2.72 0\n");
    free(c);

    /* no train.lr from a config that is not JSON or from a string: the rows' lr is empty */
    c = out_file(&fx, "main.csv");
    assert_has(c, "\nmain,G1-silu,9,0,3,0,3,1.49,0.01,");
    assert_has(c, ",0.45,0.05,0,4096,1310,,3,,5.822,-0.204,,,,4,");
    assert_has(c, ",,,0,8192,1410,,3,,5.953,-0.073,,,,4,");
    assert_has(c, ",0,4096,1110,0.003,3,,5.761,"); /* G1-elementwise keeps its lr */
    free(c);

    /* spaced counts are read; the bad ones are left out of the sums */
    c = out_file(&fx, "plots/main-gate-1-G1-elementwise.dat");
    assert_has(c, "# layer 0 (3 runs): bin centre, fraction, count\n0.125 0.1 6\n0.375 0.2 12\n0.625 0.3 18\n"
                  "0.875 0.4 24\n");
    free(c);
    c = out_file(&fx, "plots/main-gate-2-G1-headwise.dat");
    assert_has(c, "# layer 0 (1 runs): bin centre, fraction, count\n0.125 0.1 2\n0.375 0.2 4\n0.625 0.3 6\n"
                  "0.875 0.4 8\n");
    assert_has(c, "# layer 1 (2 runs): bin centre, fraction, count\n0.125 0.4 16\n0.375 0.2 8\n0.625 0.4 16\n"
                  "0.875 0 0\n");
    free(c);
    c = out_file(&fx, "plots/main-gate-3-G1-silu.dat");
    assert_has(c, "# layer 1 (2 runs)");
    free(c);
    free(log);
    fx_rm(&fx);
}

/* Two sweep names that sanitise to one file name ("x y", "x/y" -> "x_y")
 * keep apart: the second gets a suffix, so neither's files or anchors
 * overwrite the other's. */
Test(report, sweep_names_that_sanitise_alike_stay_apart) {
    Fx fx;
    fixture(&fx);
    fx_sql(&fx, "UPDATE sweep_runs SET sweep = 'x y' WHERE sweep = 'lr'");
    fx_sql(&fx, "UPDATE sweep_runs SET sweep = 'x/y' WHERE sweep = 'lrv'");
    char err[1024], *log, path[256];
    int rc = run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    snprintf(path, sizeof path, "%s/report.md", fx.out);
    char *md = test_read_file(path, NULL);
    char *a = strstr(md, "<a id=\"sweep-x_y\">"), *b = strstr(md, "<a id=\"sweep-x_y-");
    cr_assert(a && b, "two distinct anchors expected:\n%.2000s", md);
    free(md);
    fx_rm(&fx);
}

/* --ref LABEL: each sweep's rows against its row LABEL instead of its
 * baseline row (here main's G1-elementwise: the baseline row is +0.11
 * worse, G1-headwise +0.12, paired per seed); lr and lrv have no such row
 * and keep their baselines; a label no sweep has is refused. */
Test(report, ref_replaces_the_baseline_row) {
    Fx fx;
    fixture(&fx);
    char err[1024];
    FILE *lg = tmpfile();
    ReportOpts o = {fx.db, NULL, REPORT_MD, fx.out, 1, NULL, lg, NULL, 0, "G1-elementwise", NULL};
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_OK, "%s", err);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "- reference row: `G1-elementwise` (`--ref`): Δ, the tests and the budget series are against it in "
                   "the 1 sweep whose baseline row it replaces; the others keep their own\n");
    assert_has(md, "15 runs: 15 finished. Reference row: `G1-elementwise` (`--ref`; the sweep's baseline row: "
                   "`baseline`; \"baseline\" below means the reference row). Δ: every row against the baseline row "
                   "`G1-elementwise`.\n");
    assert_has(md, "| baseline | 3 | 0 | 1.5200 ± 0.0200 | 4.573 ± 0.091 | +0.1100* | [+0.0852, +0.1348] | paired (3) "
                   "| 0.003 |");
    assert_has(md, "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 | 4.096 ± 0.041 | (reference) | – | – |");
    assert_has(md, "| G1-headwise | 3 | 0 | 1.5300 ± 0.0400 | 4.621 ± 0.185 | +0.1200* | ");
    assert_has(md, "20 runs: 18 finished, 2 diverged. Baseline row: `lr=0.001,position=none`.");
    free(md);
    o.format = REPORT_TEX;
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_OK, "%s", err);
    char *tex = out_file(&fx, "main.tex");
    assert_has(tex, "% Reference row (--ref): G1-elementwise, in place of the sweep's baseline row;");
    assert_has(tex, "(reference)");
    free(tex);
    o.format = REPORT_MD;
    o.ref = "G9";
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    cr_assert_str_eq(err, "--ref G9: no row has this label in any sweep");
    o.ref = "G1-elementwise", o.sweep = "lr";
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    cr_assert_str_eq(err, "--ref G1-elementwise: no row has this label in sweep lr");
    /* the command passes it on */
    const char *bin = getenv("GATED_BIN");
    if (bin && access(bin, X_OK) == 0) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --out '%s' --no-plots --ref G1-headwise >/dev/null", bin,
                 fx.db, fx.out);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        md = out_file(&fx, "report.md");
        assert_has(md, "| G1-headwise | 3 | 0 | 1.5300 ± 0.0400 | 4.621 ± 0.185 | (reference) |");
        free(md);
    }
    fclose(lg);
    fx_rm(&fx);
}

/* A gate-score histogram is drawn over the bins that hold scores: a tanh
 * gate's probe bins span [-2, 2], its scores [-1, 1]. */
Test(report, gate_histograms_span_the_scores_there_are) {
    Fx fx;
    Store *s = fx_open(&fx);
    char ids[2][17];
    for (int i = 0; i < 2; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"model.gate.activation\":\"tanh\",\"train.seed\":%d}", i + 1);
        add_run(s, json, i ? "t2" : "t1", i + 1, "finished", 2.0, 0.1, 5, 0.0, 0, 64, 100, ids[i]);
        for (int l = 0; l < 2; l++) {
            char ctx[16];
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            long long c[8] = {0, 0, 3, 5, 5 + l, 3, 0, 0}; /* bins of width 0.5 over [-2, 2] */
            cr_assert_eq(store_histogram(s, ids[i], "gate", ctx, 200, -2, 2, c, 8), 0, "%s", store_errmsg(s));
        }
    }
    StoreSweepRun sr[2] = {{ids[0], "G1-tanh", 1, 0, 1}, {ids[1], "G1-tanh", 2, 1, 1}};
    cr_assert_eq(store_sweep_record(s, "th", 2, sr, 2), 0, "%s", store_errmsg(s));
    store_close(s);
    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *d = out_file(&fx, "plots/th-gate-0-G1-tanh.gp");
    assert_has(d, "set xrange [-1:1]\n");
    free(d);
    d = out_file(&fx, "plots/th-gate-0-G1-tanh.dat"); /* every bin is still in the data */
    assert_has(d, "# layer 0 (2 runs): bin centre, fraction, count\n-1.75 0 0\n-1.25 0 0\n-0.75 0.1875 6\n");
    free(d);
    fx_rm(&fx);
}

/* The kernel column: each row's OpenBLAS cores from its runs'
 * openblas_version, counted when a row mixes them; a version with no core
 * named leaves it empty; a core name that is not a plain word is "?", so
 * a hostile database cannot write into the table through it. */
Test(report, kernel_per_row) {
    Fx fx;
    fixture(&fx);
    fx_sql(&fx, "UPDATE runs SET openblas_version = 'OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell "
                "MAX_THREADS=64'");
    fx_sql(&fx, "UPDATE runs SET openblas_version = 'OpenBLAS 0.3.21 DYNAMIC_ARCH SkylakeX MAX_THREADS=64'"
                " WHERE name = 'main-G1-elementwise-s1'");
    fx_sql(&fx, "UPDATE runs SET openblas_version = 'OpenBLAS 0.3.21 Has|well' || char(27) || '[2J'"
                " WHERE name = 'main-G1-headwise-s2'");
    fx_sql(&fx, "UPDATE runs SET openblas_version = 'OpenBLAS 0.3.21' WHERE name LIKE 'main-G1-silu-%'");
    char err[1024];
    cr_assert_eq(run_report(&fx, REPORT_MD, "main", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *md = out_file(&fx, "report.md");
    cr_expect(strstr(md, " | Haswell | "), "%s", md);
    assert_has(md, " | SkylakeX 1, Haswell 2 | ");
    assert_has(md, " | Haswell 2, ? 1 | ");
    cr_expect(!raw_control(md), "a control byte reached report.md");
    free(md);
    cr_assert_eq(run_report(&fx, REPORT_CSV, "main", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "main.csv"), cell[64];
    csv_field(c, "main,baseline,", "kernels", cell, sizeof cell);
    cr_expect_str_eq(cell, "Haswell");
    csv_field(c, "main,G1-silu,", "kernels", cell, sizeof cell);
    cr_expect_str_eq(cell, "");
    free(c);
    fx_rm(&fx);
}
