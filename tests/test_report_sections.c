/*
 * test_report_sections.c — `gated report` across sweeps and in the
 * sections a sweep gets from its data.  fixture_family adds sweeps that
 * share the main fixture's baseline runs (one Holm family over them, the
 * same p (Holm) in every table and with --sweep; the TOST verdicts and
 * --margin; the MDE line) and one that has its own; fixture_budget holds
 * one row set at three budgets, a pending row and a sweep at another lr
 * (the budget series: Δ with CIs, test loss, the last quarter's drop, the
 * plot and its quoting, csv and tex); fixture_sink holds attention-sink
 * probes and `gated eval` results: the sink columns, the sink formation,
 * per-head F-Attn and perplexity-against-context-length sections in md,
 * csv and tex, the viridis heatmap and their plot data; the main fixture
 * must get none of them.
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

/* ------------------------------------------------------------------ */
/* Holm families across sweeps, equivalence, minimum detectable effect */
/* ------------------------------------------------------------------ */

/* The run ids of row `label` of sweep `sweep`, seeds 1..3, into ids. */
static void row_ids(Store *s, const char *sweep, const char *label, char ids[3][17]) {
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s),
                                    "SELECT run_id FROM sweep_runs WHERE sweep = ?1 AND label = ?2 ORDER BY seed", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, label, -1, SQLITE_STATIC);
    int n = 0;
    while (n < 3 && sqlite3_step(st) == SQLITE_ROW) snprintf(ids[n++], 17, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    cr_assert_eq(n, 3, "%s/%s: %d runs", sweep, label, n);
}

/* The fixture above, and two sweeps more:
 *   "main2": main's baseline, G1-elementwise and G1-silu runs (the same run
 *     ids, as a sweep that shares them records them) and two rows of its own:
 *       G1-headwise-copy  1.49 1.53 1.57: per-seed Δ as G1-headwise, p 0.478
 *       near-baseline     1.501 1.522 1.543: Δ 0.001 0.002 0.003, mean 0.002,
 *                         sd 0.001, t = 2 sqrt(3), df 2: p = 1 - 2 sqrt(3) /
 *                         sqrt(14) = 0.074; inside ±0.02
 *     main and main2 then share one family of 6 distinct contrasts (main's 4,
 *     main2's 2 new ones; G1-elementwise and G1-silu once), p sorted: 0.00274
 *     (G1) 0.0351 (silu) 0.0376 (more-q-heads, Welch) 0.0742 (near) 0.478
 *     0.478: Holm G1 6p, silu 5p, more-q-heads max(5 p_silu, 4p) = 5 p_silu,
 *     near 3p, the two headwise 2p;
 *   "other": a baseline of its own (its configs carry "other":1; the losses
 *     are main's) and G1 1.40 1.41 1.42: a family of one, p (Holm) = p. */
static void fixture_family(Fx *fx) {
    fixture(fx);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, fx->db, err, sizeof err), 0, "%s", err);
    char ids[5][3][17];
    row_ids(s, "main", "baseline", ids[0]);
    row_ids(s, "main", "G1-elementwise", ids[1]);
    row_ids(s, "main", "G1-silu", ids[2]);
    static const char *const own[2] = {"G1-headwise-copy", "near-baseline"};
    static const double own_vl[2][3] = {{1.49, 1.53, 1.57}, {1.501, 1.522, 1.543}};
    for (int v = 0; v < 2; v++)
        for (int k = 0; k < 3; k++) {
            char json[160], name[64];
            snprintf(json, sizeof json, "{\"model.gate.position\":\"sdpa\",\"row\":%d,\"train.seed\":%d}", v, k + 1);
            snprintf(name, sizeof name, "main2-%s-s%d", own[v], k + 1);
            add_run(s, json, name, k + 1, "finished", own_vl[v][k], 0.1, 5, NAN, 0, 0, 500, ids[3 + v][k]);
        }
    static const char *const labels[5] = {"baseline", "G1-elementwise", "G1-silu", "G1-headwise-copy",
                                          "near-baseline"};
    StoreSweepRun sr[15];
    for (int i = 0; i < 15; i++) sr[i] = (StoreSweepRun){ids[i / 3][i % 3], labels[i / 3], i % 3 + 1, i, i < 3};
    cr_assert_eq(store_sweep_record(s, "main2", 15, sr, 15), 0, "%s", store_errmsg(s));
    static const double other_vl[2][3] = {{1.50, 1.52, 1.54}, {1.40, 1.41, 1.42}};
    char oids[2][3][17];
    for (int v = 0; v < 2; v++)
        for (int k = 0; k < 3; k++) {
            char json[160], name[64];
            snprintf(json, sizeof json, "{\"model.gate.position\":\"%s\",\"other\":1,\"train.seed\":%d}",
                     v ? "sdpa" : "none", k + 1);
            snprintf(name, sizeof name, "other-%d-s%d", v, k + 1);
            add_run(s, json, name, k + 1, "finished", other_vl[v][k], 0.1, 5, NAN, 0, 0, 500, oids[v][k]);
            sr[v * 3 + k] = (StoreSweepRun){oids[v][k], v ? "G1-elementwise" : "baseline", k + 1, v * 3 + k, v == 0};
        }
    cr_assert_eq(store_sweep_record(s, "other", 6, sr, 6), 0, "%s", store_errmsg(s));
    store_close(s);
}

/* Sweeps that share their baseline runs share one Holm family: the same
 * contrast gets the same p (Holm) in every table, whichever tables are
 * written (--sweep); a sweep with a baseline of its own keeps its own
 * family.  The raw p-values are the mpmath ones of Test(report, csv). */
Test(report, holm_family_per_sweep_group) {
    const double p_g1 = 0.00274348939442592404, p_silu = 0.0350987186459846505, p_hw = 0.4777670321;
    const double t_near = 2 * sqrt(3), p_near = 1 - t_near / sqrt(t_near * t_near + 2);
    Fx fx;
    fixture_family(&fx);
    char err[1024], *log, want[640];
    int rc = run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    static const char *const shared[2] = {"main", "main2"};
    for (int i = 0; i < 2; i++) {
        char *sec = md_section(md, shared[i]);
        assert_has(sec, "Holm–Bonferroni family: 6 distinct contrasts with a p over the sweeps `main` and `main2`, "
                        "whose baseline rows are the same runs (a contrast shown in several of their tables is "
                        "counted once).");
        snprintf(want, sizeof want, "| -0.1100* | [-0.1348, -0.0852] | paired (3) | 0.003 | %.3f | ", 6 * p_g1);
        assert_has(sec, want);
        snprintf(want, sizeof want, "| -0.0300 | [-0.0548, -0.0052] | paired (3) | 0.035 | %.3f | ", 5 * p_silu);
        assert_has(sec, want);
        snprintf(want, sizeof want, "| +0.0100 | [-0.0397, +0.0597] | paired (3) | 0.478 | %.3f | ", 2 * p_hw);
        assert_has(sec, want);
        free(sec);
    }
    char *sec = md_section(md, "main");
    snprintf(want, sizeof want, "| Welch | 0.038 | %.3f | ", 5 * p_silu);
    assert_has(sec, want);
    /* the MDE: sd_d pooled over G1 (0.01), G1-headwise (0.02), G1-silu (0.01), n = 3, df 2; Holm: m = 6 */
    double sd = sqrt((0.0001 + 0.0004 + 0.0001) / 3);
    snprintf(want, sizeof want,
             "Minimum detectable effect: with n = 3 seed pairs this table detects |Δ| ≥ %.4f nats at 80%% power "
             "(paired t-test, two-sided α = 0.05; σ_d = %.4f, the std of the per-seed differences pooled over its 3 "
             "paired rows), and |Δ| ≥ %.4f at the Holm worst case α/m = 0.05/6; equivalence margin ±0.02 nats.",
             (q_df2(0.975) + q_df2(0.8)) * sd / sqrt(3), sd, (q_df2(1 - 0.05 / 12) + q_df2(0.8)) * sd / sqrt(3));
    assert_has(sec, want);
    free(sec);
    /* main2's own rows: near-baseline is equivalent within ±0.02 (TOST at t = (0.002 - 0.02) / (0.001 / sqrt 3)) */
    sec = md_section(md, "main2");
    snprintf(want, sizeof want, "| paired (3) | %.3f | %.3f | %.1e | equivalent within ±0.02 |", p_near, 3 * p_near,
             cdf_df2(-18 * sqrt(3)));
    assert_has(sec, want);
    assert_has(sec, "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 |");
    free(sec);
    /* a baseline of its own: its own family of one */
    sec = md_section(md, "other");
    assert_has(sec, "Holm–Bonferroni family: the 1 contrast with a p of this table (no other sweep has the same "
                    "baseline runs).");
    assert_has(sec, "| -0.1100* | [-0.1348, -0.0852] | paired (3) | 0.003 | 0.003 | ");
    free(sec);
    free(md);

    /* one table written: the family is still the group's */
    rc = run_report_opts(&fx, REPORT_MD, "main2", NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    md = out_file(&fx, "report.md");
    assert_lacks(md, "## Sweep `main`\n");
    assert_lacks(md, "## Sweep `other`\n");
    assert_has(md, "6 distinct contrasts with a p over the sweeps `main` and `main2`");
    snprintf(want, sizeof want, "| paired (3) | 0.035 | %.3f | ", 5 * p_silu);
    assert_has(md, want);
    free(md);

    /* csv: the family's size and p (Holm) per row */
    rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *c = out_file(&fx, "main2.csv");
    cr_assert_eq(csv_num_of(c, "main2,G1-silu,", "holm_family_size"), 6);
    cr_assert_float_eq(csv_num_of(c, "main2,G1-silu,", "p_holm"), 5 * p_silu, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "main2,G1-elementwise,", "p_holm"), 6 * p_g1, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "main2,near-baseline,", "p_tost"), cdf_df2(-18 * sqrt(3)), 1e-9);
    char verdict[32];
    csv_field(c, "main2,near-baseline,", "verdict", verdict, sizeof verdict);
    cr_assert_str_eq(verdict, "equivalent");
    free(c);
    c = out_file(&fx, "other.csv");
    cr_assert_eq(csv_num_of(c, "other,G1-elementwise,", "holm_family_size"), 1);
    cr_assert_float_eq(csv_num_of(c, "other,G1-elementwise,", "p_holm"), p_g1, 1e-9);
    free(c);

    /* a narrower margin (--margin 0.001): near-baseline's 0.002 is no longer inside it */
    FILE *lg = tmpfile();
    cr_assert_not_null(lg);
    ReportOpts o = {fx.db, "main2", REPORT_MD, fx.out, 1, NULL, lg, NULL, 0.001, NULL, NULL};
    cr_assert_eq(report_run(&o, err, sizeof err), 0, "%s", err);
    fclose(lg);
    md = out_file(&fx, "report.md");
    assert_has(md, "- equivalence margin: ±0.001 nats of val loss (`--margin`)\n");
    snprintf(want, sizeof want, "| paired (3) | %.3f | %.3f | ", p_near, 3 * p_near);
    const char *near = strstr(md, want);
    cr_assert_not_null(near, "missing %s", want);
    const char *inc = strstr(near, "| inconclusive |");
    cr_assert(inc && inc < strchr(near, '\n'), "near-baseline is inconclusive at ±0.001");
    assert_lacks(md, "equivalent within ±0.02");
    free(md);
    o.margin = -1; /* a bad margin: bad input */
    cr_assert_eq(report_run(&o, err, sizeof err), REPORT_BADINPUT);
    assert_has(err, "equivalence margin must be a positive number");
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* the effect against the training budget                             */
/* ------------------------------------------------------------------ */

/* One finished run of a budget sweep: summary val_loss (vl) and test_loss
 * (tl), and the metric val_loss at the given evaluation steps, final +
 * above[i] (above[last] = 0). */
static void add_budget_run(Store *s, const char *json, const char *name, long long seed, double vl, double tl,
                           const long long *steps, const double *above, int nsteps, char id[17]) {
    store_run_id(json, id);
    cr_assert_eq(store_run_begin(s, id, name, json, seed, 1, &PROV, NULL), 0, "%s", store_errmsg(s));
    for (int i = 0; i < nsteps; i++) cr_assert_eq(store_metric(s, id, "val_loss", "", steps[i], vl + above[i]), 0);
    cr_assert_eq(store_summary(s, id, "val_loss", "", vl, NULL), 0);
    cr_assert_eq(store_summary(s, id, "val_ppl", "", exp(vl), NULL), 0);
    cr_assert_eq(store_summary(s, id, "test_loss", "", tl, NULL), 0);
    cr_assert_eq(store_run_end(s, id, "finished", NULL, -1), 0, "%s", store_errmsg(s));
}

/* Budget sweeps bud_a, bud_b, bud_0c (named out of budget order: the
 * series is ordered by tokens): rows baseline, G1 (a label with a
 * quote and a line break, escaped when loaded) and G2, seeds 1..3, at
 * train.steps 100, 200, 400 (eval_every 25, 50, 100: left out of the
 * comparison like steps), batch 4 x seq_len 64: 25,600, 51,200 and
 * 102,400 tokens per run.
 *   val loss: baseline 2.0 - 0.2 b + {0, 0.02, 0.04} (b = 0, 1, 2);
 *     G1 = baseline + Δ_b + {-0.01, 0, +0.01}, Δ = -0.10, -0.05, -0.01
 *     (mean Δ_b, sd 0.01: 95% CI Δ_b ± t(0.975, 2) 0.01 / sqrt 3);
 *     G2 = baseline + {0.04, 0.05, 0.06} at bud_a and bud_b; at bud_0c G2 has
 *     not started (sweep_runs only): the series takes bud_0c all the same
 *   test loss: val + 0.1, G1 val + 0.12 (test Δ = Δ_b + 0.02)
 *   val_loss evaluations (above the final value): bud_a at 25 50 75 100:
 *     0.12 0.08 0.04 0: drop over the last quarter 0.04; bud_b at 50 100 140
 *     180 200: 0.6 0.4 0.3 0.1 0: at 150 (interpolated) 0.25; bud_0c at 100
 *     200 300 400: 0.03 0.02 0.01 0: 0.01
 * And bud_lr: the same rows at 800 steps but train.lr 0.01: not part of the
 * series. */
static void fixture_budget(Fx *fx) {
    Store *s = fx_open(fx);
    static const char *const names[4] = {"bud_a", "bud_b", "bud_0c", "bud_lr"};
    static const long long steps[4] = {100, 200, 400, 800};
    static const long long ev[4][5] = {{25, 50, 75, 100}, {50, 100, 140, 180, 200}, {100, 200, 300, 400},
                                       {200, 400, 600, 800}};
    static const double above[4][5] = {{0.12, 0.08, 0.04, 0}, {0.6, 0.4, 0.3, 0.1, 0}, {0.03, 0.02, 0.01, 0},
                                       {0.03, 0.02, 0.01, 0}};
    static const int nev[4] = {4, 5, 4, 4};
    static const double delta[4] = {-0.10, -0.05, -0.01, -0.01};
    static const char *const pos[3] = {"none", "sdpa", "value"};
    const char *labels[3] = {"baseline", "G1 'q'", "G2"};
    for (int b = 0; b < 4; b++) {
        char ids[9][17];
        StoreSweepRun sr[9];
        for (int v = 0; v < 3; v++)
            for (int k = 0; k < 3; k++) {
                int i = v * 3 + k;
                char json[320], name[64];
                snprintf(json, sizeof json,
                         "{\"model.gate.position\":\"%s\",\"model.seq_len\":64,\"train.batch\":4,\"train.steps\":%lld,"
                         "\"train.eval_every\":%lld,\"train.checkpoint_every\":1000,\"train.lr\":%g,\"train.seed\":%d}",
                         pos[v], steps[b], steps[b] / 4, b == 3 ? 0.01 : 0.003, k + 1);
                snprintf(name, sizeof name, "%s-%d-s%d", names[b], v, k + 1);
                double base = 2.0 - 0.2 * b + 0.02 * k;
                double vl = v == 0 ? base : v == 1 ? base + delta[b] + 0.01 * (k - 1) : base + 0.04 + 0.01 * k;
                if (v == 2 && b == 2)
                    store_run_id(json, ids[i]); /* pending: in sweep_runs, not in runs */
                else
                    add_budget_run(s, json, name, k + 1, vl, vl + 0.1 + (v == 1 ? 0.02 : 0), ev[b], above[b], nev[b],
                                   ids[i]);
                sr[i] = (StoreSweepRun){ids[i], labels[v], k + 1, i, v == 0};
            }
        cr_assert_eq(store_sweep_record(s, names[b], 9, sr, 9), 0, "%s", store_errmsg(s));
    }
    /* the store refuses a line break in a label; a database merged from elsewhere may hold one */
    cr_assert_eq(sqlite3_exec(store_db(s), "UPDATE sweep_runs SET label = label || char(10) || '!x' WHERE label = "
                                           "'G1 ''q'''", NULL, NULL, NULL), SQLITE_OK);
    store_close(s);
}

/* A Δ cell of the budget tables: Δ [Δ - h, Δ + h] (3), h the half-width of
 * the 95% CI of 3 pairs whose differences have sd 0.01. */
static void budget_cell(char *out, size_t cap, double d) {
    double h = q_df2(0.975) * 0.01 / sqrt(3);
    snprintf(out, cap, "%+.4f [%+.4f, %+.4f] (3)", d, d - h, d + h);
}

Test(report, effect_against_budget) {
    Fx fx;
    fixture_budget(&fx);
    char err[1024], *log, want[512], c1[64], c2[64], c3[64];
    int rc = run_report(&fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "- [effect against training budget](#budget): 1 series of sweeps at several budgets\n");
    assert_has(md, "<a id=\"budget\"></a>\n\n## Effect against training budget\n\n");
    assert_has(md, "### Series `bud_a`, `bud_b`, `bud_0c`\n\nBudgets (tokens per run = train.steps × train.batch × "
                   "model.seq_len): `bud_a` 25600 tokens (100 steps), `bud_b` 51200 tokens (200 steps), `bud_0c` 102400 "
                   "tokens (400 steps). Baseline row: `baseline`.\n");
    assert_lacks(md, "`bud_lr` 204800"); /* another train.lr: not the same rows at another budget */
    /* Δ final val loss per contrast and budget; the pending G2 at bud_0c has none */
    assert_has(md, "| row - baseline | bud_a (25.6k) | bud_b (51.2k) | bud_0c (102k) |\n|---|--:|--:|--:|\n");
    budget_cell(c1, sizeof c1, -0.10), budget_cell(c2, sizeof c2, -0.05), budget_cell(c3, sizeof c3, -0.01);
    snprintf(want, sizeof want, "| G1 'q'\\\\x0a!x | %s | %s | %s |\n", c1, c2, c3);
    assert_has(md, want);
    budget_cell(c1, sizeof c1, 0.05);
    snprintf(want, sizeof want, "| G2 | %s | %s | – |\n", c1, c1);
    assert_has(md, want);
    /* Δ final test loss: Δ + 0.02 */
    assert_has(md, "**Δ final test loss** (summary `test_loss`; as above):\n\n");
    budget_cell(c1, sizeof c1, -0.08), budget_cell(c2, sizeof c2, -0.03), budget_cell(c3, sizeof c3, 0.01);
    snprintf(want, sizeof want, "| G1 'q'\\\\x0a!x | %s | %s | %s |\n", c1, c2, c3);
    assert_has(md, want);
    /* final val loss and the last quarter's drop per row and budget */
    assert_has(md, "| baseline | 2.0200 ± 0.0200 (3) | 1.8200 ± 0.0200 (3) | 1.6200 ± 0.0200 (3) |\n");
    assert_has(md, "| baseline | 0.0400 ± 0.0000 (3) | 0.2500 ± 0.0000 (3) | 0.0100 ± 0.0000 (3) |\n");
    assert_has(md, "| G2 | 0.0400 ± 0.0000 (3) | 0.2500 ± 0.0000 (3) | – |\n");
    /* the plot: Δ against tokens, log x, a tick at each budget, error bars, the zero line, labels quoted */
    char *gp = out_file(&fx, "plots/budget-bud_a.gp");
    assert_has(gp, "set logscale x\n");
    assert_has(gp, "set xtics ('25.6k' 25600, '51.2k' 51200, '102k' 102400)\n");
    assert_has(gp, "set arrow from graph 0, first 0 to graph 1, first 0 nohead");
    /* the y range fits the means (-0.10 .. +0.05, and 0) with 15% to spare, not the CIs, which would flatten
     * every budget's differences onto the zero line when a small budget's interval is wide */
    assert_has(gp, "set yrange [-0.1225:0.0725]\n");
    assert_has(gp, "'budget-bud_a.dat' index 0 using 1:2:3:4 with yerrorlines");
    assert_has(gp, " title 'G1 ''q''\\x0a!x'");
    assert_has(gp, " title 'G2'");
    assert_lacks(gp, "\n!");
    free(gp);
    char *dat = out_file(&fx, "plots/budget-bud_a.dat");
    assert_has(dat, "# G1 'q'\\x0a!x - baseline: tokens (offset), delta, CI low, CI high, seed pairs, tokens\n");
    double h = q_df2(0.975) * 0.01 / sqrt(3);
    for (int b = 0; b < 3; b++) {
        static const double d[3] = {-0.10, -0.05, -0.01};
        static const char *const tok[3] = {" 3 25600\n", " 3 51200\n", " 3 102400\n"};
        const char *line = strstr(dat, tok[b]);
        cr_assert_not_null(line, "no point at %s", tok[b]);
        while (line > dat && line[-1] != '\n') line--;
        double x, y, lo, hi;
        cr_assert_eq(sscanf(line, "%lf %lf %lf %lf", &x, &y, &lo, &hi), 4);
        cr_assert_float_eq(y, d[b], 1e-9);
        cr_assert_float_eq(lo, d[b] - h, 1e-9);
        cr_assert_float_eq(hi, d[b] + h, 1e-9);
        cr_assert(x > 0.9 * 25600 * (1 << b) && x < 1.1 * 25600 * (1 << b), "x %g", x);
    }
    free(dat);
    if (have_gnuplot()) {
        char p[256];
        snprintf(p, sizeof p, "%s/plots/budget-bud_a.png", fx.out);
        cr_assert(exists(p), "%s missing", p);
        assert_has(md, "(plots/budget-bud_a.png)");
    }
    free(md);

    fx_rm(&fx);
}

/* The budget series in csv (a line per series, budget and row; a line per
 * run) and tex, and which sweeps' selection shows it. */
Test(report, effect_against_budget_csv_tex) {
    Fx fx;
    fixture_budget(&fx);
    char err[1024], *log, *md;
    double h = q_df2(0.975) * 0.01 / sqrt(3);
    int rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *c = out_file(&fx, "budget.csv");
    assert_has(c, "series,sweep,tokens,steps,label,is_baseline,n_finished,val_loss_mean,");
    const char *g1 = "bud_a,bud_b,51200,200,G1 'q'\\x0a!x,";
    cr_assert_float_eq(csv_num_of(c, g1, "delta_val_loss"), -0.05, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "delta_val_ci_lo"), -0.05 - h, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "delta_val_ci_hi"), -0.05 + h, 1e-9);
    cr_assert_eq(csv_num_of(c, g1, "n_pairs_val"), 3);
    cr_assert_float_eq(csv_num_of(c, g1, "delta_test_loss"), -0.03, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_b,51200,200,baseline,", "q_drop_mean"), 0.25, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_0c,102400,400,baseline,", "val_loss_mean"), 1.62, 1e-9);
    cr_assert_eq(csv_num_of(c, "bud_a,bud_0c,102400,400,G2,", "n_finished"), 0);
    assert_lacks(c, "bud_lr");
    free(c);
    c = out_file(&fx, "budget-runs.csv");
    assert_has(c, "series,sweep,tokens,steps,label,seed,run_id,status,val_loss,test_loss,q_from_step,q_to_step,"
                  "q_drop,gap,min_step,min_rise,params\n");
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_b,51200,200,baseline,2,", "q_from_step"), 150, 1e-12);
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_b,51200,200,baseline,2,", "q_to_step"), 200, 1e-12);
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_b,51200,200,baseline,2,", "q_drop"), 0.25, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "bud_a,bud_a,25600,100,G2,1,", "q_drop"), 0.04, 1e-9);
    free(c);

    /* tex */
    rc = run_report(&fx, REPORT_TEX, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *t = out_file(&fx, "budget.tex");
    assert_has(t, "% series bud_a, bud_b, bud_0c\n");
    assert_has(t, "\\begin{tabular}{lrrr}\n\\toprule\nrow - baseline & bud\\_a (25.6k) & bud\\_b (51.2k) & "
                  "bud\\_0c (102k) \\\\\n\\midrule\n");
    free(t);

    /* one budget's table asked for: the whole series; a sweep outside every series: no section */
    rc = run_report_opts(&fx, REPORT_MD, "bud_b", NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    md = out_file(&fx, "report.md");
    assert_has(md, "### Series `bud_a`, `bud_b`, `bud_0c`\n");
    assert_lacks(md, "## Sweep `bud_a`");
    free(md);
    rc = run_report_opts(&fx, REPORT_MD, "bud_lr", NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    md = out_file(&fx, "report.md");
    assert_lacks(md, "Effect against training budget");
    free(md);
    fx_rm(&fx);
}

/* Sink probes of one run at evaluation steps 50 and 100 (the last; step 50
 * holds decoys but for sink_formed): formed[] per step, heads[] the
 * per-head F-Attn at step 100 as L0H0 L0H1 L1H0 L1H1, rel the mean F-Attn
 * over uniform, share the share of sink heads. */
static void add_sink(Store *s, const char *id, const double formed[2], const double heads[4], double rel,
                     double share) {
    for (int t = 0; t < 2; t++) {
        long long step = 50 * (t + 1);
        cr_assert_eq(store_metric(s, id, "sink_formed", "", step, formed[t]), 0);
        cr_assert_eq(store_metric(s, id, "f_attn_rel", "", step, t ? rel : 99), 0);
        cr_assert_eq(store_metric(s, id, "f_attn_rel", "layer=0", step, 77), 0);
        cr_assert_eq(store_metric(s, id, "sink_head_share", "", step, t ? share : 0.99), 0);
        cr_assert_eq(store_metric(s, id, "sink_heads", "", step, t ? 4 * share : 3), 0);
        for (int c = 0; c < 4; c++) {
            char ctx[32];
            snprintf(ctx, sizeof ctx, "layer=%d,head=%d", c / 2, c % 2);
            cr_assert_eq(store_metric(s, id, "f_attn", ctx, step, t ? heads[c] : 0.99), 0);
        }
    }
}

/* One `gated eval` result of a run trained for 100 steps. */
static void add_eval(Store *s, const char *id, const char *split, long len, const char *scaling, double factor,
                     double ppl) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "split=%s,len=%ld,scaling=%s,factor=%g", split, len, scaling, factor);
    cr_assert_eq(store_metric(s, id, "eval_ppl", ctx, 100, ppl), 0);
    cr_assert_eq(store_metric(s, id, "eval_loss", ctx, 100, log(ppl)), 0);
    cr_assert_eq(store_metric(s, id, "eval_windows", ctx, 100, 8), 0);
}

/* Sweep "sink": rows baseline and G1-elementwise, seeds 1 and 2 finished
 * (a diverged G1 seed 3 with a sink must be left out), 2 layers x 2 heads,
 * train.steps 100 x train.batch 4 x model.seq_len 128 = 51,200 tokens:
 *   sink_formed at steps 50, 100: baseline s1 0 1, s2 1 1 -> 100, 50, 2/2;
 *     G1 s1 0 0, s2 0 1 -> no, 100, 1/2
 *   per-head F-Attn at step 100 (L0H0 L0H1 L1H0 L1H1): baseline s1 .10 .20
 *     .60 .30, s2 .12 .22 .70 .32: max 0.650 +- 0.071 at L1.H0, mean L1 row
 *     65.0 31.0; G1 s1 .05 .30 .03 .20, s2 .06 .55 .02 .10: max 0.425 +-
 *     0.177 at L0.H1
 *   f_attn_rel: baseline 8, 9; G1 2, 3.  sink_head_share: baseline .25 .25;
 *     G1 0 .25
 *   eval_ppl (val) at 128, 256, 512: none (factor 1) baseline s1 5 9 20, s2
 *     5.2 9.4 22 (512: 21.000 +- 1.414); yarn at factor len/128, and also
 *     factor 4 at 256 (a second factor there: series "yarn F=4"); test
 *     split: none at 512 only; a malformed context, ignored. */
static void fixture_sink(Fx *fx) {
    Store *s = fx_open(fx);
    static const char *const labels[2] = {"baseline", "G1-elementwise"};
    static const double formed[2][2][2] = {{{0, 1}, {1, 1}}, {{0, 0}, {0, 1}}};
    static const double heads[2][2][4] = {{{.10, .20, .60, .30}, {.12, .22, .70, .32}},
                                          {{.05, .30, .03, .20}, {.06, .55, .02, .10}}};
    static const double rel[2][2] = {{8, 9}, {2, 3}}, share[2][2] = {{.25, .25}, {0, .25}};
    static const double none[2][2][3] = {{{5, 9, 20}, {5.2, 9.4, 22}}, {{4.8, 6, 8}, {5, 6.2, 8.4}}};
    static const double yarn[2][2][3] = {{{5, 7, 10}, {5.2, 7.4, 11}}, {{4.8, 5.5, 6}, {5, 5.7, 6.4}}};
    char ids[5][17];
    StoreSweepRun sr[5];
    for (int i = 0; i < 5; i++) {
        int v = i < 2 ? 0 : 1, seed = i % 2 + 1, div = i == 4;
        if (div) seed = 3;
        char json[256], name[64];
        snprintf(json, sizeof json,
                 "{\"model.gate.position\":\"%s\",\"model.seq_len\":128,\"train.batch\":4,\"train.steps\":100,"
                 "\"train.seed\":%d}",
                 v ? "sdpa" : "none", seed);
        snprintf(name, sizeof name, "sink-%s-s%d", labels[v], seed);
        add_run(s, json, name, seed, div ? "diverged" : "finished", div ? NAN : 1.5 - 0.1 * v, 0.3, 10, NAN, 0, 0,
                1000, ids[i]);
        sr[i] = (StoreSweepRun){ids[i], labels[v], seed, i, v == 0};
        if (div) {
            add_sink(s, ids[i], (const double[2]){1, 1}, heads[1][0], 9, 0.5);
            continue;
        }
        int k = seed - 1;
        add_sink(s, ids[i], formed[v][k], heads[v][k], rel[v][k], share[v][k]);
        /* the attention-row probes: the baseline's seeds and G1's seed 2; G1's seed 1 is a run recorded before
         * them (no rows: left out, never 0); G1's mass on nothing is a softmax's rounding (-1e-9) */
        if (v == 0 || k == 1)
            for (int t = 0; t < 2; t++) {
                double eps = v ? 0 : 0.25 * (k + 1), none = v ? -1e-9 : 0.1 * (k + 1);
                cr_assert_eq(store_metric(s, ids[i], "sink_eps_share", "", 50 * (t + 1), t ? eps : 0.99), 0);
                cr_assert_eq(store_metric(s, ids[i], "attn_mass_none", "", 50 * (t + 1), t ? none : 0.99), 0);
            }
        for (int q = 0; q < 3; q++) {
            long len = 128L << q;
            add_eval(s, ids[i], "val", len, "none", 1, none[v][k][q]);
            add_eval(s, ids[i], "val", len, "yarn", (double)(1 << q), yarn[v][k][q]);
        }
        add_eval(s, ids[i], "val", 256, "yarn", 4, 8 + 0.2 * k - 2 * v);
        add_eval(s, ids[i], "test", 512, "none", 1, 30 + k);
        cr_assert_eq(store_metric(s, ids[i], "eval_ppl", "split=val,len=x,scaling=none,factor=1", 100, 1), 0);
    }
    cr_assert_eq(store_sweep_record(s, "sink", 5, sr, 5), 0, "%s", store_errmsg(s));
    store_close(s);
}

/* ------------------------------------------------------------------ */
/* sink probes and `gated eval` results                                */
/* ------------------------------------------------------------------ */

Test(report, sink_and_context_length_md) {
    Fx fx;
    fixture_sink(&fx);
    char err[1024], *log;
    int rc = run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "- runs: 5 (4 finished, 1 diverged)");
    assert_has(md, "- **sink heads (%)**, **F-Attn/unif** (sweeps with sink probes): ");
    /* the main table gains the two columns, after gate */
    assert_has(md, "| F-Attn | M-Act | gate | sink heads (%) | F-Attn/unif | spikes |");
    assert_has(md, "| 0.3000 ± 0.0000 | 10.00 ± 0.00 | – | 25.0 ± 0.0 | 8.50 ± 0.71 | 0.0 |");
    assert_has(md, "| 0.3000 ± 0.0000 | 10.00 ± 0.00 | – | 12.5 ± 17.7 | 2.50 ± 0.71 | 0.0 |");
    /* sink formation: per seed the first step with a sink, formed k/n (the diverged seed 3 left out) */
    assert_has(md, "### Sink formation\n\n`gated train` tests at every evaluation whether an attention sink has "
                   "formed: some query head puts more than 50% of its attention on position 0");
    assert_has(md, "| variant | tokens/run | seq_len | seed 1 | seed 2 | formed | max head F-Attn | where "
                   "| F-Attn/unif | sink heads (%) | Sink1(0.3) (%) | mass on nothing | paper F-Attn |\n"
                   "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    assert_has(md, "| baseline | 51.2k | 128 | 100 | 50 | 2/2 | 0.650 ± 0.071 | L1.H0 | 8.50 ± 0.71 | 25.0 ± 0.0 "
                   "| 37.5 ± 17.7 | 0.150 ± 0.071 | 0.467 |\n");
    assert_has(md, "| G1-elementwise | 51.2k | 128 | no | 100 | 1/2 | 0.425 ± 0.177 | L0.H1 | 2.50 ± 0.71 "
                   "| 12.5 ± 17.7 | 0.0 | 0.000 | 0.048 |\n");
    assert_lacks(md, "seed 3");
    /* per-head heatmap tables, last step, mean over the two seeds, in % */
    assert_has(md, "`baseline` (2 runs; uniform causal attention at T = 128: 3.5%):\n\n| layer | H0 | H1 |\n"
                   "|---|--:|--:|\n| L0 | 11.0 | 21.0 |\n| L1 | 65.0 | 31.0 |\n");
    assert_has(md, "`G1-elementwise` (2 runs; uniform causal attention at T = 128: 3.5%):\n\n| layer | H0 | H1 |\n"
                   "|---|--:|--:|\n| L0 | 5.5 | 42.5 |\n| L1 | 2.5 | 15.0 |\n");
    /* perplexity against context length: one table per series and split */
    assert_has(md, "**Scaling `none`**, split `val`:\n\n| variant | n | 128 (1x) | 256 (2x) | 512 (4x) |\n");
    assert_has(md, "| baseline | 2 | 5.100 ± 0.141 | 9.200 ± 0.283 | 21.000 ± 1.414 |\n");
    assert_has(md, "| G1-elementwise | 2 | 4.900 ± 0.141 | 6.100 ± 0.141 | 8.200 ± 0.283 |\n");
    assert_has(md, "**Scaling `yarn`**, split `val`:\n\n| variant | n | 128 (1x) | 256 (2x) | 512 (4x) |\n"
                   "|---|--:|--:|--:|--:|\n| baseline | 2 | 5.100 ± 0.141 | 7.200 ± 0.283 | 10.500 ± 0.707 |\n");
    assert_has(md, "**Scaling `yarn F=4`**, split `val`:\n\n| variant | n | 256 (2x) |\n|---|--:|--:|\n"
                   "| baseline | 2 | 8.100 ± 0.141 |\n| G1-elementwise | 2 | 6.100 ± 0.141 |\n");
    assert_has(md, "**Scaling `none`**, split `test`:\n\n| variant | n | 512 (4x) |\n|---|--:|--:|\n"
                   "| baseline | 2 | 30.500 ± 0.707 |\n");
    assert_lacks(md, "split `test`:\n\n| variant | n | 128");
    /* the order: none, yarn, yarn F=4 */
    cr_assert(strstr(md, "**Scaling `none`**, split `val`") < strstr(md, "**Scaling `yarn`**, split `val`"));
    cr_assert(strstr(md, "**Scaling `yarn`**, split `val`") < strstr(md, "**Scaling `yarn F=4`**"));
    /* the paper's Table 5 beside it */
    assert_has(md, "The paper's long-context result (Table 5, RULER accuracy %; trained at 4k with RoPE base 10k, "
                   "continued at 32k with base 1M, then extended to 128k with YaRN (no training)):");
    assert_has(md, "| within 32k (before YaRN) | 79.50 | 79.77 |\n| 32k, YaRN | 37.94 | 72.88 |\n"
                   "| 64k, YaRN | 37.51 | 66.60 |\n| 128k, YaRN | 31.65 | 58.82 |\n");
    assert_lacks(md, "### Plots");
    free(md);
    free(log);
    fx_rm(&fx);
}

/* A Bigram-Backcopy run (it has bb_bos_attn_other per head): the sink
 * table and the per-head table read that measure, not its F-Attn, and say
 * so.  F-Attn per head (L0H0 L0H1 L1H0 L1H1) .10 .20 .60 .30 (max at L1.H0);
 * attention on BOS from other queries .05 .80 .10 .20 (max 0.800 at L0.H1;
 * the layer and overall rows are not heads and are ignored). */
Test(report, sink_table_of_bigram_backcopy_runs) {
    Fx fx;
    Store *s = fx_open(&fx);
    char id[17];
    add_run(s, "{\"data.corpus\":\"bb\",\"model.seq_len\":128,\"train.batch\":4,\"train.steps\":100}", "bb-s1", 1,
            "finished", 1.5, 0.3, 10, NAN, 0, 0, 1000, id);
    add_sink(s, id, (const double[2]){0, 1}, (const double[4]){.10, .20, .60, .30}, 8, 0.25);
    static const double bos[4] = {.05, .80, .10, .20};
    for (int c = 0; c < 4; c++) {
        char ctx[32];
        snprintf(ctx, sizeof ctx, "layer=%d,head=%d", c / 2, c % 2);
        cr_assert_eq(store_metric(s, id, "bb_bos_attn_other", ctx, 50, 0.99), 0);
        cr_assert_eq(store_metric(s, id, "bb_bos_attn_other", ctx, 100, bos[c]), 0);
    }
    cr_assert_eq(store_metric(s, id, "bb_bos_attn_other", "layer=1", 100, 0.97), 0);
    cr_assert_eq(store_metric(s, id, "bb_bos_attn_other", "", 100, 0.98), 0);
    StoreSweepRun sr = {id, "baseline", 1, 0, 1};
    cr_assert_eq(store_sweep_record(s, "bbs", 1, &sr, 1), 0, "%s", store_errmsg(s));
    store_close(s);
    char err[1024], *log;
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "Bigram-Backcopy runs (`data.corpus: bb`) take, in place of a head's F-Attn, its attention on BOS "
                   "from other (non-trigger) queries");
    assert_has(md, "| formed | max head BOS attn (other queries) | where |");
    /* F-Attn over uniform reads the overall BOS attention from other queries (0.98), not f_attn_rel */
    char row[160];
    snprintf(row, sizeof row, "| baseline | 51.2k | 128 | 100 | 1/1 | 0.800 | L0.H1 | %.2f |",
             0.98 / probe_uniform_fattn(128));
    assert_has(md, row);
    assert_has(md, "#### Attention on BOS from other queries per layer and query head\n");
    assert_has(md, "| L0 | 5.0 | 80.0 |\n| L1 | 10.0 | 20.0 |\n");
    free(md);
    free(log);
    fx_rm(&fx);
}

Test(report, sink_and_context_length_plots) {
    Fx fx;
    fixture_sink(&fx);
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    /* the heatmap: a matrix block per row (layers as lines), panels side by side on one colour scale */
    char *d = out_file(&fx, "plots/sink-fattn-heads.dat");
    assert_has(d, "# baseline (2 runs): F-Attn, rows layers 0..1, columns heads 0..1\n0.11 0.21\n0.65 0.31\n\n\n");
    assert_has(d, "# G1-elementwise (2 runs): F-Attn, rows layers 0..1, columns heads 0..1\n0.055 0.425\n0.025 0.15\n");
    free(d);
    d = out_file(&fx, "plots/sink-fattn-heads.gp");
    assert_has(d, "set cbrange [0:1]\n");
    /* viridis (9 stops of matplotlib's map), not gnuplot's rainbow */
    assert_has(d, "set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', "
                  "5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')\n");
    assert_lacks(d, "rgb 33,13,10");
    assert_has(d, " 'sink-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image");
    assert_has(d, " 'sink-fattn-heads.dat' index 1 matrix using ($1+3):2:3 with image");
    assert_has(d, "set label 2 'G1-elementwise' at 3.5, graph 1.03 center\n");
    free(d);
    /* PPL against length: val only, a block per (row, series) */
    d = out_file(&fx, "plots/sink-ppl-vs-length.dat");
    assert_has(d, "# baseline, none: context length, mean val PPL, std, runs\n128 5.1 0.1414213562 2\n"
                  "256 9.2 0.2828427125 2\n512 21 1.414213562 2\n");
    assert_has(d, "# G1-elementwise, yarn F=4: context length, mean val PPL, std, runs\n256 6.1 0.1414213562 2\n");
    assert_lacks(d, "30.5");
    free(d);
    d = out_file(&fx, "plots/sink-ppl-vs-length.gp");
    assert_has(d, "set logscale x 2\nset logscale y\n");
    assert_has(d, "set arrow from 128, graph 0 to 128, graph 1 nohead dt 3\n");
    /* PPL means +- std span 4.76 (G1 at 128: 4.9 - 0.14) .. 22.41 (baseline at 512: 21 + 1.41): 4 labelled
     * ticks, where gnuplot labels only 10 */
    assert_has(d, "set ytics (\"5\" 5, \"10\" 10, \"15\" 15, \"20\" 20)\n");
    assert_has(d, "index 0 using 1:2:3 with yerrorlines lc rgb ");
    assert_has(d, " title 'baseline (none)'");
    assert_has(d, " title 'G1-elementwise (yarn F=4)'");
    /* blocks: (baseline, G1) x (none, yarn, yarn F=4): colour by row, dash type by series */
    char lk[6][128];
    for (int i = 0; i < 6; i++) gp_look_of(d, i, "1:2:3 with yerrorlines", lk[i], sizeof lk[i]);
    cr_assert(strstr(lk[0], " dt 1") && strstr(lk[1], " dt 1") && strstr(lk[2], " dt 2") && strstr(lk[5], " dt 3"),
              "%s\n%s\n%s\n%s", lk[0], lk[1], lk[2], lk[5]);
    cr_assert(strncmp(lk[0], lk[2], 20) == 0 && strncmp(lk[0], lk[4], 20) == 0, "one colour per row: %s / %s / %s",
              lk[0], lk[2], lk[4]);
    cr_assert(strncmp(lk[0], lk[1], 20) != 0, "rows differ in colour: %s / %s", lk[0], lk[1]);
    free(d);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "**F-Attn per layer and query head (last step, mean over seeds; one panel per row, colour scale 0 "
                   "to 1)**: not drawn; data `plots/sink-fattn-heads.dat`");
    assert_has(md, "**Validation perplexity against context length");
    free(md);
    free(log);
    if (have_gnuplot()) {
        fx_rm(&fx);
        fixture_sink(&fx);
        rc = run_report(&fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
        cr_assert_eq(rc, 0, "%s\n%s", err, log);
        static const char *const imgs[] = {"sink-fattn-heads", "sink-ppl-vs-length"};
        for (size_t i = 0; i < 2; i++) {
            char p[256];
            snprintf(p, sizeof p, "%s/plots/%s.png", fx.out, imgs[i]);
            cr_assert(exists(p), "%s missing", p);
            snprintf(p, sizeof p, "%s/plots/%s.svg", fx.out, imgs[i]);
            cr_assert(exists(p), "%s missing", p);
        }
        free(log);
    }
    fx_rm(&fx);
}

Test(report, sink_and_context_length_csv_tex) {
    Fx fx;
    fixture_sink(&fx);
    char err[1024];
    int rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *c = out_file(&fx, "sink.csv");
    assert_has(c, ",paper_f_attn,sink_head_share_mean,sink_head_share_std,f_attn_rel_mean,f_attn_rel_std,"
                  "holm_family_size,p_tost,tost_margin,verdict,kernels,rank,tokens_per_s_min,tokens_per_s_max,"
                  "n_load_recorded,n_beside_other_jobs,matrix_family_size\n");
    assert_has(c, ",0.467,0.25,0,8.5,0.7071067812,,,,,,2,1000,1000,0,0,1\n");
    free(c);
    c = out_file(&fx, "sink-sink.csv");
    assert_has(c, "sweep,label,seed,run_id,tokens,seq_len,first_sink_step,max_head_f_attn,max_layer,max_head,"
                  "f_attn_rel,sink_head_share,sink_eps_share,attn_mass_none\n");
    assert_has(c, ",51200,128,100,0.6,1,0,8,0.25,0.25,0.1\n");
    assert_has(c, ",51200,128,50,0.7,1,0,9,0.25,0.5,0.2\n");
    assert_has(c, ",51200,128,,0.3,0,1,2,0,,\n");
    assert_has(c, ",51200,128,100,0.55,0,1,3,0.25,0,-1e-09\n");
    assert_lacks(c, "G1-elementwise,3,");
    free(c);
    c = out_file(&fx, "sink-fattn-heads.csv");
    assert_has(c, "sweep,label,runs,layer,head,f_attn_mean\nsink,baseline,2,0,0,0.11\n");
    assert_has(c, "sink,baseline,2,1,0,0.65\n");
    free(c);
    c = out_file(&fx, "sink-ppl.csv");
    assert_has(c, "sweep,label,split,series,scaling,factor,len,train_len,n,ppl_mean,ppl_std\n");
    assert_has(c, "sink,baseline,val,none,none,,512,128,2,21,1.414213562\n");
    assert_has(c, "sink,G1-elementwise,val,yarn F=4,yarn,4,256,128,2,6.1,0.1414213562\n");
    assert_has(c, "sink,baseline,test,none,none,,512,128,2,30.5,0.7071067812\n");
    free(c);

    rc = run_report(&fx, REPORT_TEX, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *t = out_file(&fx, "sink.tex");
    assert_has(t, "F-Attn & M-Act & gate & sink heads (\\%) & F-Attn/unif & spikes &");
    assert_has(t, "\\begin{tabular}{lrrrrrrrrrrrr}\n\\toprule\nvariant & tokens/run & seq\\_len & seed 1 & seed 2 & "
                  "formed & max head F-Attn & where & F-Attn/unif & sink heads (\\%) & Sink1(0.3) (\\%) & "
                  "mass on nothing & paper F-Attn \\\\\n\\midrule\n"
                  "baseline & 51.2k & 128 & 100 & 50 & 2/2 & 0.650 $\\pm$ 0.071 & L1.H0 & 8.50 $\\pm$ 0.71 & "
                  "25.0 $\\pm$ 0.0 & 37.5 $\\pm$ 17.7 & 0.150 $\\pm$ 0.071 & 0.467 \\\\\n");
    assert_has(t, "% F-Attn (%) per layer and head: baseline (2 runs; uniform causal attention at T = 128: 3.5%)\n"
                  "\\begin{tabular}{lrr}\n\\toprule\nlayer & H0 & H1 \\\\\n\\midrule\nL0 & 11.0 & 21.0 \\\\\n"
                  "L1 & 65.0 & 31.0 \\\\\n\\bottomrule\n\\end{tabular}\n");
    assert_has(t, "% Perplexity against context length: scaling none, split val (eval_ppl, mean $\\pm$ std over "
                  "seeds)\n\\begin{tabular}{lrrrr}\n\\toprule\nvariant & n & 128 (1x) & 256 (2x) & 512 (4x) \\\\\n"
                  "\\midrule\nbaseline & 2 & 5.100 $\\pm$ 0.141 & 9.200 $\\pm$ 0.283 & 21.000 $\\pm$ 1.414 \\\\\n");
    free(t);
    fx_rm(&fx);
}

Test(report, paper_longctx_table) {
    cr_assert_eq(paper_nlongctx, 4);
    cr_assert_float_eq(paper_longctx[0].baseline, 79.50, 1e-12);
    cr_assert_float_eq(paper_longctx[0].gated, 79.77, 1e-12);
    cr_assert_eq(paper_longctx[3].context, 131072);
    cr_assert_float_eq(paper_longctx[3].baseline, 31.65, 1e-12);
    cr_assert_float_eq(paper_longctx[3].gated, 58.82, 1e-12);
    for (int i = 1; i < paper_nlongctx; i++) cr_assert(paper_longctx[i].gated > paper_longctx[i].baseline);
}
