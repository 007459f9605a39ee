/*
 * test_report.c — `gated report` on probes of their own: fixture_bb holds
 * Bigram-Backcopy runs (the section's table, its plots, hostile labels);
 * fixture_infer holds `gated eval --quant / --drop` results (the sections
 * "Quantization" and "Gate-sparse heads": ΔPPL paired per run, the test
 * against the baseline row, the correlation with M-Act by hand, the gate
 * rule with its matched controls and the fixed fractions, in md, csv and
 * tex; their plots; decoys at another length, split and step).  The other
 * report suites: test_report_stats.c (the statistics), test_report_tables.c
 * (the main table in every format), test_report_sections.c (families,
 * budgets, sink and context-length sections); their fixtures are
 * report_fx.c's.
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
/* Bigram-Backcopy probes                                              */
/* ------------------------------------------------------------------ */

/* One Bigram-Backcopy run's probes at evaluation steps 50 and 100 (the
 * last): context '' values and per-head ones (L0H0 L0H1 L1H0 L1H1) at step
 * 100; at step 50 the per-head values are half those (so the BB head is
 * the same) and the '' values 1 more.  Layer contexts hold decoys.  gate_t
 * NAN: no gate (no gate keys, no histograms). */
typedef struct {
    double loss_t, loss_o, bos_o_all, peak, gate_t, gate_o;
    double bos_o[4], bos_t[4], prev_t[4], drain[4];
} BBRun;

/* Histograms of a gated run: per layer and query type, 4 bins over [0, 1],
 * base counts times mult at step 100 ([100, 0, 0, 0] at step 50); mult < 0:
 * the decoy [0, 0, 0, 1000]. */
static void add_bb_hists(Store *s, const char *id, long long mult) {
    static const long long base[2][2][4] = {{{1, 2, 3, 4}, {0, 0, 5, 5}}, {{4, 0, 0, 4}, {1, 1, 1, 1}}};
    static const char *const key[2] = {"bb_gate_other", "bb_gate_trigger"};
    for (int q = 0; q < 2; q++)
        for (int l = 0; l < 2; l++) {
            char ctx[32];
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            long long old[4] = {100, 0, 0, 0}, c[4];
            for (int b = 0; b < 4; b++) c[b] = mult < 0 ? (b == 3 ? 1000 : 0) : base[q][l][b] * mult;
            cr_assert_eq(store_histogram(s, id, key[q], ctx, 50, 0, 1, old, 4), 0);
            cr_assert_eq(store_histogram(s, id, key[q], ctx, 100, 0, 1, c, 4), 0);
        }
}

static void add_bb(Store *s, const char *id, const BBRun *b, long long mult) {
    const struct {
        const char *key;
        double all;
        const double *head;
    } k[] = {{"bb_loss_trigger", b->loss_t, NULL},   {"bb_loss_other", b->loss_o, NULL},
             {"bb_trigger_share", 0.2, NULL},        {"bb_bos_attn_other", b->bos_o_all, b->bos_o},
             {"bb_bos_attn_trigger", 0.97, b->bos_t}, {"bb_prev_attn_trigger", 0.96, b->prev_t},
             {"bb_value_drain", 0.95, b->drain},      {"bb_residual_peak", b->peak, NULL},
             {"bb_gate_trigger", b->gate_t, NULL},    {"bb_gate_other", b->gate_o, NULL}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (isnan(k[i].all)) continue;
        for (int t = 0; t < 2; t++) {
            long long step = 50 * (t + 1);
            cr_assert_eq(store_metric(s, id, k[i].key, "", step, t ? k[i].all : k[i].all + 1), 0);
            for (int l = 0; l < 2; l++) {
                char ctx[32];
                snprintf(ctx, sizeof ctx, "layer=%d", l);
                cr_assert_eq(store_metric(s, id, k[i].key, ctx, step, 99), 0); /* not a head: ignored */
            }
            for (int c = 0; k[i].head && c < 4; c++) {
                char ctx[32];
                snprintf(ctx, sizeof ctx, "layer=%d,head=%d", c / 2, c % 2);
                cr_assert_eq(store_metric(s, id, k[i].key, ctx, step, t ? k[i].head[c] : k[i].head[c] / 2), 0);
            }
        }
    }
    if (!isnan(b->gate_t)) add_bb_hists(s, id, mult);
}

/* Sweep "bb" (data.corpus bb, 2 layers x 2 heads): rows baseline and G1
 * (gated; its label made hostile when hostile is set: G1 'q' "d", a newline,
 * !touch PWNED), seeds
 * 1 and 2 finished, and a diverged G1 seed 3 whose probes (all 9, BOS
 * attention .99, decoy histograms) must be left out; sweep "txt": a text
 * run without Bigram-Backcopy probes.  At the last step:
 *   baseline  loss trigger .50 .70 (0.6000 ± 0.1414), other 2.00 2.10;
 *             BOS other per head s1 .10 .20 .80 .30, s2 .12 .22 .60 .30:
 *             the BB head L1.H0 in both, 0.700 ± 0.141; its BOS trigger
 *             .02 .04, prev trigger .90 .80, value drain .20 .30 (the
 *             other heads: decoys .9, .11, 5); BOS other '' .40 .30;
 *             residual peak 3 5 (4.00 ± 1.41); no gate
 *   G1        loss trigger .30 .40, other 1.90 1.95 (1.9250 ± 0.0354); BB
 *             head s1 L0.H1 (.30), s2 L0.H0 (.40): a tie, the first run's
 *             place; BOS trigger .20 .30, prev .50 .60, drain 1.10 1.30 at
 *             those heads; '' .10 .12; peak 1.0 1.2; gate trigger .20 .30,
 *             other .60 .70
 * Histograms (G1, summed over seeds 1 and 2: 3x the base counts): other
 * layer 0 1 2 3 4 (shares .1 .2 .3 .4), layer 1 0 0 5 5; trigger layer 0
 * 4 0 0 4, layer 1 1 1 1 1. */
static void fixture_bb(Fx *fx, int hostile) {
    Store *s = fx_open(fx);
    static const BBRun runs[5] = {
        {.50, 2.00, .40, 3.0, NAN, NAN, {.10, .20, .80, .30}, {.9, .9, .02, .9}, {.11, .11, .90, .11}, {5, 5, .20, 5}},
        {.70, 2.10, .30, 5.0, NAN, NAN, {.12, .22, .60, .30}, {.9, .9, .04, .9}, {.11, .11, .80, .11}, {5, 5, .30, 5}},
        {.30, 1.90, .10, 1.0, .20, .60, {.05, .30, .03, .20}, {.9, .20, .9, .9}, {.11, .50, .11, .11}, {5, 1.10, 5, 5}},
        {.40, 1.95, .12, 1.2, .30, .70, {.40, .10, .02, .10}, {.30, .9, .9, .9}, {.60, .11, .11, .11}, {1.30, 5, 5, 5}},
        {9, 9, 9, 9, 9, 9, {.99, .99, .99, .99}, {9, 9, 9, 9}, {9, 9, 9, 9}, {9, 9, 9, 9}},
    };
    char ids[6][17];
    StoreSweepRun sr[5];
    for (int i = 0; i < 5; i++) {
        int g = i >= 2, seed = i < 4 ? i % 2 + 1 : 3;
        char json[256], name[64];
        snprintf(json, sizeof json,
                 "{\"data.corpus\":\"bb\",\"model.gate.position\":\"%s\",\"model.n_layer\":2,\"model.n_head\":2,"
                 "\"train.seed\":%d}",
                 g ? "sdpa" : "none", seed);
        snprintf(name, sizeof name, "bb-%d-s%d", g, seed);
        add_run(s, json, name, seed, i == 4 ? "diverged" : "finished", i == 4 ? NAN : 2 - 0.1 * g, 0.3, 10,
                g ? 0.5 : NAN, 0, 0, 1000, ids[i]);
        add_bb(s, ids[i], &runs[i], i == 4 ? -1 : seed);
        sr[i] = (StoreSweepRun){ids[i], g ? "G1" : "baseline", seed, i, !g};
    }
    cr_assert_eq(store_sweep_record(s, "bb", 5, sr, 5), 0, "%s", store_errmsg(s));
    add_run(s, "{\"model.n_layer\":2}", "txt-s1", 1, "finished", 1.5, 0.3, 10, NAN, 0, 0, 1000, ids[5]);
    StoreSweepRun tr = {ids[5], "baseline", 1, 0, 1};
    cr_assert_eq(store_sweep_record(s, "txt", 1, &tr, 1), 0, "%s", store_errmsg(s));
    store_close(s);
    if (hostile)
        fx_sql(fx, "UPDATE sweep_runs SET label = 'G1 ''q'' \"d\"' || char(10) || '!touch PWNED'"
                   " WHERE sweep = 'bb' AND label = 'G1'");
}

/* The table of the section "Bigram-Backcopy probes": each cell the mean ±
 * sample std over the two finished seeds at the last step, in md, tex and
 * csv; the diverged seed left out; the hostile label quoted per format; no
 * section for a sweep without the probes. */
Test(report, bigram_backcopy_table) {
    Fx fx;
    fixture_bb(&fx, 1);
    char err[1024], *log;
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    cr_assert(!raw_control(md), "a control byte in report.md");
    char *sec = md_section(md, "bb");
    assert_has(sec, "### Bigram-Backcopy probes\n\nRuns on the Bigram-Backcopy task (`data.corpus: bb`)");
    assert_has(sec, "The *BB head* of a run is its query head with the largest attention on BOS from other queries");
    assert_has(sec, "| variant | seeds | head | loss trigger | loss other | BOS attn other (head) | BOS attn other (mean) "
                    "| nothing other (head) | nothing other (mean) "
                    "| BOS attn trigger (head) | prev attn trigger (head) | value drain (head) | residual peak "
                    "| gate trigger | gate other |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    /* runs recorded before the attention-row probes: their mass on nothing is `–`, never 0 */
    assert_has(sec, "\n| baseline | 2 | L1.H0 | 0.6000 ± 0.1414 | 2.0500 ± 0.0707 | 0.700 ± 0.141 | 0.350 ± 0.071 "
                    "| – | – | 0.030 ± 0.014 | 0.850 ± 0.071 | 0.250 ± 0.071 | 4.00 ± 1.41 | – | – |\n");
    assert_has(sec, "\n| G1 'q' \"d\"\\\\x0a!touch PWNED | 2 | L0.H1 | 0.3500 ± 0.0707 | 1.9250 ± 0.0354 | 0.350 ± 0.071 "
                    "| 0.110 ± 0.014 | – | – | 0.250 ± 0.071 | 0.550 ± 0.071 | 1.200 ± 0.141 | 1.10 ± 0.14 | 0.250 ± 0.071 "
                    "| 0.650 ± 0.071 |\n");
    free(sec);
    sec = md_section(md, "txt");
    assert_lacks(sec, "Bigram-Backcopy");
    free(sec);
    free(md);

    cr_assert_eq(run_report(&fx, REPORT_TEX, "bb", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *t = out_file(&fx, "bb.tex");
    cr_assert(!raw_control(t), "a control byte in bb.tex");
    assert_has(t, "% Bigram-Backcopy probes (data.corpus bb), last step, mean $\\pm$ std over seeds:");
    assert_has(t, "\\begin{tabular}{lrrrrrrrrrrrrrr}\n\\toprule\nvariant & seeds & head & loss trigger & ");
    assert_has(t, "\nbaseline & 2 & L1.H0 & 0.6000 $\\pm$ 0.1414 & 2.0500 $\\pm$ 0.0707 & 0.700 $\\pm$ 0.141 & "
                  "0.350 $\\pm$ 0.071 & -- & -- & 0.030 $\\pm$ 0.014 & 0.850 $\\pm$ 0.071 & 0.250 $\\pm$ 0.071 & "
                  "4.00 $\\pm$ 1.41 & -- & -- \\\\\n");
    assert_has(t, "\nG1 'q' \"d\"\\textbackslash{}x0a!touch PWNED & 2 & L0.H1 & 0.3500 $\\pm$ 0.0707 & ");
    assert_has(t, " & 0.250 $\\pm$ 0.071 & 0.650 $\\pm$ 0.071 \\\\\n");
    free(t);

    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "bb-bb.csv");
    cr_assert(!raw_control(c), "a control byte in bb-bb.csv");
    cr_assert_eq(lines_of(c), 3, "%s", c);
    assert_has(c, "sweep,label,runs,head_layer,head_head,loss_trigger_mean,loss_trigger_std,loss_other_mean,");
    assert_has(c, "\nbb,baseline,2,1,0,0.6,0.1414213562,2.05,0.07071067812,0.7,0.1414213562,0.35,");
    const char *g1 = "bb,\"G1 'q' \"\"d\"\"\\x0a!touch PWNED\",";
    assert_has(c, g1);
    cr_assert_float_eq(csv_num_of(c, g1, "runs"), 2, 0);
    cr_assert_float_eq(csv_num_of(c, g1, "head_layer"), 0, 0);
    cr_assert_float_eq(csv_num_of(c, g1, "head_head"), 1, 0);
    cr_assert_float_eq(csv_num_of(c, g1, "bos_attn_trigger_head_mean"), 0.25, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "prev_attn_trigger_head_mean"), 0.55, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "value_drain_head_std"), sqrt(0.02), 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "residual_peak_mean"), 1.1, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g1, "gate_other_mean"), 0.65, 1e-9);
    cr_assert(isnan(csv_num_of(c, "bb,baseline,", "gate_trigger_mean")));
    free(c);
    char p[256];
    snprintf(p, sizeof p, "%s/txt-bb.csv", fx.out);
    cr_assert(!exists(p), "a BB file for a sweep without the probes");
    fx_rm(&fx);
}

/* Runs with the attention-row probes: the BB head's mass on nothing from
 * other queries (baseline: L1.H0, .30 and .50; a decoy .9 on another head)
 * and its mean over heads ('': .10 and .20); a softmax's rounding (-1e-9)
 * is shown as 0, not -0. */
Test(report, bigram_backcopy_mass_on_nothing) {
    Fx fx;
    fixture_bb(&fx, 0);
    fx_sql(&fx, "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, 'bb_none_attn_other', c.ctx, 30,"
                " CASE c.ctx WHEN 'layer=1,head=0' THEN (CASE name WHEN 'bb-0-s1' THEN 0.3 ELSE 0.5 END)"
                " WHEN '' THEN (CASE name WHEN 'bb-0-s1' THEN 0.1 ELSE 0.2 END) ELSE 0.9 END"
                " FROM runs, (SELECT 'layer=1,head=0' AS ctx UNION SELECT '' UNION SELECT 'layer=0,head=1') c"
                " WHERE name IN ('bb-0-s1', 'bb-0-s2');"
                "INSERT INTO metrics(run_id, key, context, step, value) SELECT run_id, 'bb_none_attn_other', '', 30,"
                " -1e-9 FROM runs WHERE name = 'bb-1-s1'");
    char err[1024], *log;
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    char *sec = md_section(md, "bb");
    assert_has(sec, "\n| baseline | 2 | L1.H0 | 0.6000 ± 0.1414 | 2.0500 ± 0.0707 | 0.700 ± 0.141 | 0.350 ± 0.071 "
                    "| 0.400 ± 0.141 | 0.150 ± 0.071 | 0.030 ± 0.014 |");
    assert_has(sec, " | 0.350 ± 0.071 | 0.110 ± 0.014 | – | 0.000 | 0.250 ± 0.071 |");
    free(sec);
    free(md);
    fx_rm(&fx);
}

/* The plots of the section: attention on BOS of each run's BB head and
 * the two losses against step (a line per row and query type: other
 * solid, trigger dashed, one colour per row; a ±std band), and the gated
 * row's gate-score histograms by query type (summed over seeds, shares);
 * the hostile label quoted, no shell line in any script. */
/* Where gnuplot exists: the Bigram-Backcopy images drawn (a report of the
 * sweep alone), and no file the hostile label's "!touch PWNED" would make. */
static void assert_bb_images(Fx *fx) {
    char err[1024], *log, p[256];
    if (!have_gnuplot()) return;
    cr_assert_eq(run_report(fx, REPORT_MD, "bb", NULL, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    static const char *const imgs[] = {"bb-bb-bos", "bb-bb-loss", "bb-bb-gate-1-G1__q___d__x0a_touch_PWNED"};
    for (size_t i = 0; i < 3; i++)
        for (int e = 0; e < 2; e++) {
            snprintf(p, sizeof p, "%s/plots/%s.%s", fx->out, imgs[i], e ? "svg" : "png");
            cr_assert(exists(p), "%s missing", p);
        }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "find '%s' -name 'PWNED*'", fx->dir);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char out[256] = "";
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    cr_assert_eq(pclose(f), 0);
    cr_assert_str_eq(out, "", "gnuplot ran a shell command: %s", out);
}

Test(report, bigram_backcopy_plots) {
    Fx fx;
    fixture_bb(&fx, 1);
    char err[1024], *log;
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", &log, err, sizeof err), 0, "%s\n%s", err,
                 log);
    free(log);
    /* each run's own BB head, at every step: baseline L1.H0 (.40, .30 at step 50), G1 L0.H1 and L0.H0 */
    char *d = out_file(&fx, "plots/bb-bb-bos.dat");
    assert_has(d, "# baseline, other queries: step, mean, std, runs\n50 0.35 0.07071067812 2\n"
                  "100 0.7 0.1414213562 2\n\n\n");
    assert_has(d, "# baseline, trigger queries: step, mean, std, runs\n50 0.015 0.007071067812 2\n"
                  "100 0.03 0.01414213562 2\n\n\n");
    assert_has(d, "# G1 'q' \"d\"\\x0a!touch PWNED, other queries: step, mean, std, runs\n"
                  "50 0.175 0.03535533906 2\n100 0.35 0.07071067812 2\n\n\n");
    assert_has(d, "# G1 'q' \"d\"\\x0a!touch PWNED, trigger queries: step, mean, std, runs\n"
                  "50 0.125 0.03535533906 2\n100 0.25 0.07071067812 2\n");
    assert_lacks(d, " 3\n"); /* the diverged run */
    free(d);
    d = out_file(&fx, "plots/bb-bb-loss.dat");
    assert_has(d, "# baseline, other positions: step, mean, std, runs\n50 3.05 0.07071067812 2\n"
                  "100 2.05 0.07071067812 2\n\n\n");
    assert_has(d, "# baseline, trigger positions: step, mean, std, runs\n50 1.6 0.1414213562 2\n"
                  "100 0.6 0.1414213562 2\n\n\n");
    free(d);
    static const char *const gps[2] = {"plots/bb-bb-bos.gp", "plots/bb-bb-loss.gp"};
    static const char *const types[2][2] = {{"other queries", "trigger queries"},
                                            {"other positions", "trigger positions"}};
    for (int g = 0; g < 2; g++) {
        d = out_file(&fx, gps[g]);
        /* bands first (one per line), then the lines: colour by row, dash type by query type */
        const char *band = "using 1:($2-$3):($2+$3) with filledcurves";
        cr_assert_eq(count_of(d, band), 4, "%s", d);
        cr_assert(strstr(d, band) < strstr(d, "with linespoints"), "%s", d);
        char lk[4][128];
        for (int i = 0; i < 4; i++) gp_look_of(d, i, "1:2 with linespoints", lk[i], sizeof lk[i]);
        assert_has(lk[0], " lc rgb '#0072b2' dt 1 ");
        assert_has(lk[1], " lc rgb '#0072b2' dt 2 ");
        assert_has(lk[2], " lc rgb '#d55e00' dt 1 ");
        assert_has(lk[3], " lc rgb '#d55e00' dt 2 ");
        char want[160];
        snprintf(want, sizeof want, " title 'baseline (%s)'", types[g][1]);
        assert_has(d, want);
        snprintf(want, sizeof want, " title 'G1 ''q'' \"d\"\\x0a!touch PWNED (%s)'", types[g][0]);
        assert_has(d, want);
        assert_has(d, "set title 'bb'\n");
        assert_has(d, "(band: +- std)'");
        if (g == 0) assert_has(d, "set yrange [0:1]\n");
        free(d);
    }
    /* the gate histograms: the gated row only, summed over its two finished seeds, shares per layer and type */
    d = out_file(&fx, "plots/bb-bb-gate-1-G1__q___d__x0a_touch_PWNED.dat");
    assert_has(d, "# layer 0, other queries (2 runs): bin centre, share, count\n0.125 0.1 3\n0.375 0.2 6\n"
                  "0.625 0.3 9\n0.875 0.4 12\n\n\n");
    assert_has(d, "# layer 1, other queries (2 runs): bin centre, share, count\n0.125 0 0\n0.375 0 0\n"
                  "0.625 0.5 15\n0.875 0.5 15\n\n\n");
    assert_has(d, "# layer 0, trigger queries (2 runs): bin centre, share, count\n0.125 0.5 12\n0.375 0 0\n"
                  "0.625 0 0\n0.875 0.5 12\n\n\n");
    assert_has(d, "# layer 1, trigger queries (2 runs): bin centre, share, count\n0.125 0.25 3\n0.375 0.25 3\n");
    free(d);
    d = out_file(&fx, "plots/bb-bb-gate-1-G1__q___d__x0a_touch_PWNED.gp");
    assert_has(d, "set title 'bb: gate scores of G1 ''q'' \"d\"\\x0a!touch PWNED by query type (last step, 2 runs "
                  "summed)'\n");
    assert_has(d, "set xrange [0:1]\n");
    assert_has(d, " index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0, other'");
    assert_has(d, " index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1, other'");
    assert_has(d, " index 2 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 2 title 'layer 0, trigger'");
    assert_has(d, " index 3 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 2 title 'layer 1, trigger'");
    free(d);
    char p[256];
    snprintf(p, sizeof p, "%s/plots/bb-bb-gate-0-baseline.gp", fx.out);
    cr_assert(!exists(p), "a BB gate plot for a row without a gate");
    snprintf(p, sizeof p, "%s/plots/txt-bb-bos.gp", fx.out);
    cr_assert(!exists(p), "a BB plot for a sweep without the probes");
    /* no plot script has a line that is not the report's own */
    assert_plot_scripts_clean(fx.out, "bb-bb-*.gp", 30);
    /* report.md's captions */
    char *md = out_file(&fx, "report.md");
    assert_has(md, "**Attention on BOS against step, Bigram-Backcopy: each run's BB head (its query head with the "
                   "largest attention on BOS from other queries at the last step); other queries solid, trigger "
                   "queries dashed, one colour per row (mean over seeds; band: +- std)**: not drawn; data "
                   "`plots/bb-bb-bos.dat`");
    assert_has(md, "**Validation loss on trigger and on other positions against step, Bigram-Backcopy: other "
                   "positions solid, trigger positions dashed, one colour per row (mean over seeds; band: +- std)**");
    assert_has(md, "**Gate scores of `G1 'q' \"d\"\\x0a!touch PWNED` by query type, Bigram-Backcopy (per layer, last "
                   "step, 2 runs summed; each line a share of the layer's scores of that type; other queries solid, "
                   "trigger queries dashed)**");
    free(md);
    assert_bb_images(&fx);
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* `gated eval --quant / --drop` (issue 17)                            */
/* ------------------------------------------------------------------ */

/* One infer_* result of a run trained for 100 steps, at step 100 (the
 * last; step 50 holds a decoy PPL); drop NAN: a quantization (no drop
 * keys). */
static void add_infer(Store *s, const char *id, const char *ctx, double ppl, double drop, double fwo, double fattn) {
    cr_assert_eq(store_metric(s, id, "infer_ppl", ctx, 50, 99), 0);
    cr_assert_eq(store_metric(s, id, "infer_ppl", ctx, 100, ppl), 0);
    cr_assert_eq(store_metric(s, id, "infer_loss", ctx, 100, log(ppl)), 0);
    cr_assert_eq(store_metric(s, id, "infer_windows", ctx, 100, 16), 0);
    if (isnan(drop)) return;
    cr_assert_eq(store_metric(s, id, "infer_drop", ctx, 100, drop), 0);
    cr_assert_eq(store_metric(s, id, "infer_flops_wo", ctx, 100, fwo), 0);
    cr_assert_eq(store_metric(s, id, "infer_flops_attn", ctx, 100, fattn), 0);
}

/* The fixture's ΔPPL% under w8-a8tensor and M-Act per run (baseline s1,
 * s2, G1 s1, s2). */
static const double INF_W8_PCT[4] = {10, 15, 1, 3}, INF_MACT[4] = {50, 60, 5, 10};
/* ... and the outlier factor of its wo input (infer_in_outlier, site wo). */
static const double INF_OUT_WO[4] = {3, 2, 1, 4};

/* Sweep "inf" (model.seq_len 128): rows baseline (ungated) and G1, seeds
 * 1 and 2 finished, and a diverged G1 seed 3 with results (left out); its
 * G1 label made hostile (Markdown and TeX specials, a newline and a
 * gnuplot shell line) when hostile is set.  At length 128, split val:
 *   float PPL      baseline 4.0 4.2, G1 3.9 4.1
 *   w8-a8tensor    float x (1 + INF_W8_PCT / 100): ΔPPL baseline .40 .63
 *                  (12.50 ± 3.54 %), G1 .039 .123 (2.00 ± 1.41 %)
 *   w4g32          baseline 4.1 4.41 (2.5 %, 5 %), G1 seed 1 only, 3.9 (0)
 *   drop=gate,tau=0.1 (G1): dropped .10 .12, FLOPs wo .01 .012, attn .02
 *                  .024, PPL float + .1; its random control float + .6,
 *                  entropy float + .4
 *   drop=gate,tau=0.3 (G1): dropped .5 .6, PPL float + 1, random + 3,
 *                  entropy + 2
 *   frac=0.25 (both rows): dropped .25, FLOPs .02 .04; random float + 4
 *                  (baseline) / + 2 (G1), entropy + 8 / + 6
 * M-Act (metric m_act, last step): INF_MACT.  Decoys: every value at
 * length 256 (not the training length), split test, a scheme that is not
 * a plain word, a malformed context; step 50 (infer_ppl 99). */
static void fixture_infer(Fx *fx, int hostile) {
    Store *s = fx_open(fx);
    static const double fl[2][2] = {{4.0, 4.2}, {3.9, 4.1}};
    char ids[5][17];
    StoreSweepRun sr[5];
    for (int i = 0; i < 5; i++) {
        int g = i >= 2, seed = i < 4 ? i % 2 + 1 : 3, k = i % 2, div = i == 4;
        char json[256], name[64];
        snprintf(json, sizeof json,
                 "{\"model.gate.position\":\"%s\",\"model.seq_len\":128,\"train.steps\":100,\"train.seed\":%d}",
                 g ? "sdpa" : "none", seed);
        snprintf(name, sizeof name, "inf-%d-s%d", g, seed);
        add_run(s, json, name, seed, div ? "diverged" : "finished", div ? NAN : 1.5 - 0.1 * g, 0.3,
                div ? 1000 : INF_MACT[i], g ? 0.5 : NAN, 0, 0, 1000, ids[i]);
        sr[i] = (StoreSweepRun){ids[i], g ? "G1" : "baseline", seed, i, !g};
        double f = div ? 2 : fl[g][k], nan = NAN;
        for (int len = 128; len <= 256; len *= 2) {
            double d = len == 128 && !div ? 0 : 50; /* the decoys: 50 more everywhere */
            char c[128];
#define CTX(...) (snprintf(c, sizeof c, __VA_ARGS__), c)
            add_infer(s, ids[i], CTX("split=val,len=%d,quant=float", len), f + d, nan, 0, 0);
            add_infer(s, ids[i], CTX("split=val,len=%d,quant=w8-a8tensor", len),
                      f * (1 + (div ? 9 : INF_W8_PCT[i]) / 100) + d, nan, 0, 0);
            if (i < 3)
                add_infer(s, ids[i], CTX("split=val,len=%d,quant=w4g32", len),
                          i == 0 ? 4.1 + d : i == 1 ? 4.41 + d : 3.9 + d, nan, 0, 0);
            if (g) {
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=gate,tau=0.1", len), f + 0.1 + d, 0.10 + 0.02 * k,
                          0.01 + 0.002 * k, 0.02 + 0.004 * k);
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=random,tau=0.1", len), f + 0.6 + d, 0.10 + 0.02 * k,
                          0.01 + 0.002 * k, 0.02 + 0.004 * k);
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=entropy,tau=0.1", len), f + 0.4 + d, 0.10 + 0.02 * k,
                          0.01 + 0.002 * k, 0.015);
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=gate,tau=0.3", len), f + 1 + d, 0.5 + 0.1 * k, 0.05,
                          0.1);
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=random,tau=0.3", len), f + 3 + d, 0.5 + 0.1 * k, 0.05,
                          0.1);
                add_infer(s, ids[i], CTX("split=val,len=%d,drop=entropy,tau=0.3", len), f + 2 + d, 0.5 + 0.1 * k,
                          0.05, 0.09);
            }
            add_infer(s, ids[i], CTX("split=val,len=%d,drop=random,frac=0.25", len), f + (g ? 2 : 4) + d, 0.25, 0.02,
                      0.04);
            add_infer(s, ids[i], CTX("split=val,len=%d,drop=entropy,frac=0.25", len), f + (g ? 6 : 8) + d, 0.25, 0.02,
                      0.035);
#undef CTX
        }
        /* the wo input's outlier factor at the training length (a step-50 and a length-256 decoy) */
        cr_assert_eq(store_metric(s, ids[i], "infer_in_outlier", "split=val,len=128,site=wo", 50, 99), 0);
        cr_assert_eq(store_metric(s, ids[i], "infer_in_outlier", "split=val,len=128,site=wo", 100, i < 4 ? INF_OUT_WO[i] : 50), 0);
        cr_assert_eq(store_metric(s, ids[i], "infer_in_outlier", "split=val,len=256,site=wo", 100, 77), 0);
        add_infer(s, ids[i], "split=test,len=128,quant=w8-a8token", 50, NAN, 0, 0);
        add_infer(s, ids[i], "split=val,len=128,quant=w8 evil'name", 50, NAN, 0, 0);
        add_infer(s, ids[i], "split=val,len=128,drop=gate,frac=0.5", 50, 0.5, 0, 0);
        add_infer(s, ids[i], "split=val,len=x,quant=w2", 50, NAN, 0, 0);
    }
    cr_assert_eq(store_sweep_record(s, "inf", 5, sr, 5), 0, "%s", store_errmsg(s));
    /* a sweep without such results: no section */
    char tid[17];
    add_run(s, "{\"model.n_layer\":2}", "plain-s1", 1, "finished", 1.5, 0.3, 10, NAN, 0, 0, 1000, tid);
    StoreSweepRun tr = {tid, "baseline", 1, 0, 1};
    cr_assert_eq(store_sweep_record(s, "plain", 1, &tr, 1), 0, "%s", store_errmsg(s));
    store_close(s);
    if (hostile)
        fx_sql(fx, "UPDATE sweep_runs SET label = 'G1 `x` *y* |z| $w$ & % # {b}_u' || char(10) || '!touch PWNED'"
                   " WHERE sweep = 'inf' AND label = 'G1'");
}

/* The hostile label of fixture_infer as each format writes it. */
#define INF_G1_MD "G1 \\`x\\` \\*y\\* \\|z\\| \\$w\\$ & % # {b}\\_u\\\\x0a!touch PWNED"
#define INF_G1_TEX "G1 `x` *y* |z| \\$w\\$ \\& \\% \\# \\{b\\}\\_u\\textbackslash{}x0a!touch PWNED"
#define INF_G1_GP "'G1 `x` *y* |z| $w$ & % # {b}_u\\x0a!touch PWNED'"

/* Pearson's r of the fixture's ΔPPL% under w8-a8tensor with M-Act, by
 * hand; with 4 runs (2 degrees of freedom) its two-sided p is 1 - |r|. */
static double infer_w8_r(void) {
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < 4; i++) mx += INF_MACT[i] / 4, my += INF_W8_PCT[i] / 4;
    for (int i = 0; i < 4; i++) {
        sxx += (INF_MACT[i] - mx) * (INF_MACT[i] - mx);
        syy += (INF_W8_PCT[i] - my) * (INF_W8_PCT[i] - my);
        sxy += (INF_MACT[i] - mx) * (INF_W8_PCT[i] - my);
    }
    return sxy / sqrt(sxx * syy);
}

/* The section "Quantization": float PPL, ΔPPL and ΔPPL% paired per run
 * (a count where a scheme is missing for some runs), the paired test of
 * ΔPPL% against the baseline row, M-Act, the correlation with M-Act; only
 * the results at the training length on split val, at the last step, of
 * finished runs; the hostile label quoted per format; no section for a
 * sweep without results. */
Test(report, quantization_table) {
    Fx fx;
    fixture_infer(&fx, 1);
    char err[1024], *log, want[512];
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    cr_assert(!raw_control(md), "a control byte in report.md");
    char *sec = md_section(md, "inf");
    assert_has(sec, "### Quantization\n\n`gated eval --quant` results (metric `infer_ppl`, context "
                    "`split=val,len=L,quant=SCHEME`) of each row's finished runs, on the validation windows at context "
                    "length 128.");
    /* schemes by name; w8-a8token (split test) and the non-word scheme are not columns */
    assert_has(sec, "| variant | n | float PPL | ΔPPL w4g32 | ΔPPL% w4g32 | ΔPPL% w4g32 vs baseline | ΔPPL w8-a8tensor "
                    "| ΔPPL% w8-a8tensor | ΔPPL% w8-a8tensor vs baseline | M-Act |\n"
                    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    assert_lacks(sec, "w8-a8token");
    assert_lacks(sec, "evil");
    assert_has(sec, "\n| baseline | 2 | 4.100 ± 0.141 | 0.1550 ± 0.0778 | 3.75 ± 1.77 | (baseline) | 0.5150 ± 0.1626 "
                    "| 12.50 ± 3.54 | (baseline) | 55.00 ± 7.07 |\n");
    /* G1 - baseline of ΔPPL% under w8-a8tensor, paired by seed: -9, -12: mean -10.5, t = -7 with 1 df */
    double p = 1 - 2 * atan(7) / M_PI;
    snprintf(want, sizeof want,
             "\n| %s | 2 | 4.000 ± 0.141 | 0.0000 (1) | 0.00 | – | 0.0810 ± 0.0594 | 2.00 ± 1.41 "
             "| -10.50 (p %.3f, paired 2) | 7.50 ± 3.54 |\n",
             INF_G1_MD, p);
    assert_has(sec, want);
    /* the correlation with M-Act over the four runs: r by hand, p = 1 - |r| (2 df), Spearman 1 (same order) */
    double rr = infer_w8_r();
    cr_assert_gt(rr, 0.9);
    snprintf(want, sizeof want, "\n- `w8-a8tensor`: Pearson r = %+.3f (p %.3f), Spearman ρ = +1.000, n = 4\n", rr,
             1 - rr);
    assert_has(sec, want);
    assert_has(sec, "\n- `w4g32`: Pearson r = ");
    assert_has(sec, ", Spearman ρ = +1.000, n = 3\n");
    /* ... and with the wo input's outlier factor: r by hand, Spearman 0.2 (ranks 3 4 1 2 against 3 2 1 4) */
    double mo = 0, mw = 0, soo = 0, sww = 0, sow = 0;
    for (int i = 0; i < 4; i++) mo += INF_OUT_WO[i] / 4, mw += INF_W8_PCT[i] / 4;
    for (int i = 0; i < 4; i++)
        soo += (INF_OUT_WO[i] - mo) * (INF_OUT_WO[i] - mo), sww += (INF_W8_PCT[i] - mw) * (INF_W8_PCT[i] - mw),
            sow += (INF_OUT_WO[i] - mo) * (INF_W8_PCT[i] - mw);
    double ro = sow / sqrt(soo * sww);
    snprintf(want, sizeof want, "\n- `w8-a8tensor` against the `wo` input: Pearson r = %+.3f (p %.3f), Spearman ρ = +0.200, n = 4\n",
             ro, 1 - fabs(ro));
    assert_has(sec, want);
    assert_lacks(sec, "against the `qkv` input");
    free(sec);
    sec = md_section(md, "plain");
    assert_lacks(sec, "Quantization");
    assert_lacks(sec, "Gate-sparse heads");
    free(sec);
    free(md);

    cr_assert_eq(run_report(&fx, REPORT_TEX, "inf", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *t = out_file(&fx, "inf.tex");
    cr_assert(!raw_control(t), "a control byte in inf.tex");
    assert_has(t, "% Quantization (gated eval --quant, infer_ppl on split val)");
    assert_has(t, "\nvariant & n & float PPL & Delta PPL w4g32 & Delta PPL\\% w4g32 & Delta PPL\\% w4g32 vs baseline & ");
    assert_has(t, "\nbaseline & 2 & 4.100 $\\pm$ 0.141 & 0.1550 $\\pm$ 0.0778 & 3.75 $\\pm$ 1.77 & (baseline) & ");
    snprintf(want, sizeof want, "\n%s & 2 & 4.000 $\\pm$ 0.141 & 0.0000 (1) & 0.00 & -- & ", INF_G1_TEX);
    assert_has(t, want);
    snprintf(want, sizeof want, "%% Delta PPL %% against M-Act over the runs, w8-a8tensor: Pearson r = %+.3f", rr);
    assert_has(t, want);
    free(t);

    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "inf-quant.csv");
    cr_assert(!raw_control(c), "a control byte in inf-quant.csv");
    cr_assert_eq(lines_of(c), 5, "%s", c); /* the header, 2 rows x 2 schemes */
    const char *bw = "inf,baseline,w8-a8tensor,";
    cr_assert_float_eq(csv_num_of(c, bw, "len"), 128, 0);
    cr_assert_float_eq(csv_num_of(c, bw, "n"), 2, 0);
    cr_assert_float_eq(csv_num_of(c, bw, "float_ppl_mean"), 4.1, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "dppl_mean"), 0.515, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "dppl_pct_mean"), 12.5, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "dppl_pct_std"), sqrt(12.5), 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "m_act_mean"), 55, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "corr_pearson_r"), rr, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "corr_pearson_p"), 1 - rr, 1e-9);
    cr_assert_float_eq(csv_num_of(c, bw, "corr_spearman_rho"), 1, 1e-12);
    cr_assert(isnan(csv_num_of(c, bw, "vs_baseline_p")));
    const char *gw = "inf,G1 `x` *y* |z| $w$ & % # {b}_u\\x0a!touch PWNED,w8-a8tensor,";
    assert_has(c, gw);
    cr_assert_float_eq(csv_num_of(c, gw, "vs_baseline_dppl_pct"), -10.5, 1e-9);
    cr_assert_float_eq(csv_num_of(c, gw, "vs_baseline_pairs"), 2, 0);
    cr_assert_float_eq(csv_num_of(c, gw, "vs_baseline_p"), p, 1e-9);
    free(c);
    char path[256];
    snprintf(path, sizeof path, "%s/plain-quant.csv", fx.out);
    cr_assert(!exists(path), "a quantization file for a sweep without results");
    fx_rm(&fx);
}

/* The section "Gate-sparse heads": per gated row and tau the share
 * dropped, FLOPs saved, PPL and ΔPPL of the gate rule and its matched
 * controls; per row (the ungated baseline too) and fixed fraction F random
 * and entropy; csv; ΔPPL missing without the float reference. */
Test(report, gate_sparse_heads_table) {
    Fx fx;
    fixture_infer(&fx, 1);
    char err[1024], *log, want[512];
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, "inf", NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *md = out_file(&fx, "report.md");
    char *sec = md_section(md, "inf");
    const char *tau = strstr(sec, "**Gate threshold τ, with matched controls:**\n\n");
    const char *frac = strstr(sec, "**Fixed fractions F**");
    cr_assert(tau && frac && tau < frac, "%s", sec);
    assert_has(tau, "| variant | τ | n | dropped (%) | FLOPs saved wo (%) | FLOPs saved wo+attn (%) | PPL gate "
                    "| PPL random | PPL entropy | ΔPPL gate | ΔPPL random | ΔPPL entropy |\n");
    snprintf(want, sizeof want,
             "\n| %s | 0.1 | 2 | 11.0 ± 1.4 | 1.10 ± 0.14 | 2.20 ± 0.28 | 4.100 ± 0.141 | 4.600 ± 0.141 "
             "| 4.400 ± 0.141 | 0.100 ± 0.000 | 0.600 ± 0.000 | 0.400 ± 0.000 |\n| %s"
             " | 0.3 | 2 | 55.0 ± 7.1 | 5.00 ± 0.00 | 10.00 ± 0.00 | 5.000 ± 0.141 | 7.000 ± 0.141 | 6.000 ± 0.141 "
             "| 1.000 ± 0.000 | 3.000 ± 0.000 | 2.000 ± 0.000 |\n\n",
             INF_G1_MD, INF_G1_MD);
    assert_has(tau, want);
    cr_assert(strstr(tau, "| baseline |") > frac, "an ungated row in the gate table");
    assert_has(frac, "| variant | F | n | dropped (%) | FLOPs saved wo (%) | FLOPs saved wo+attn (%) | PPL random "
                     "| PPL entropy | ΔPPL random | ΔPPL entropy |\n");
    assert_has(frac, "\n| baseline | 0.25 | 2 | 25.0 ± 0.0 | 2.00 ± 0.00 | 4.00 ± 0.00 | 8.100 ± 0.141 | 12.100 ± 0.141 "
                     "| 4.000 ± 0.000 | 8.000 ± 0.000 |\n");
    snprintf(want, sizeof want,
             "\n| %s | 0.25 | 2 | 25.0 ± 0.0 | 2.00 ± 0.00 | 4.00 ± 0.00 | 6.000 ± 0.141 "
             "| 10.000 ± 0.141 | 2.000 ± 0.000 | 6.000 ± 0.000 |\n",
             INF_G1_MD);
    assert_has(frac, want);
    assert_lacks(sec, "frac=0.5"); /* drop=gate with frac=: not a context the report reads */
    assert_lacks(sec, "the runs have no float reference");
    free(sec);
    free(md);

    cr_assert_eq(run_report(&fx, REPORT_CSV, "inf", "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    char *c = out_file(&fx, "inf-drop.csv");
    cr_assert(!raw_control(c), "a control byte in inf-drop.csv");
    cr_assert_eq(lines_of(c), 1 + 2 + 6 + 2, "%s", c); /* the header; baseline F; G1 tau x rule, F */
    const char *g = "inf,G1 `x` *y* |z| $w$ & % # {b}_u\\x0a!touch PWNED,entropy,tau,0.1,";
    cr_assert_float_eq(csv_num_of(c, g, "n"), 2, 0);
    cr_assert_float_eq(csv_num_of(c, g, "drop_mean"), 0.11, 1e-12);
    cr_assert_float_eq(csv_num_of(c, g, "flops_attn_mean"), 0.015, 1e-12);
    cr_assert_float_eq(csv_num_of(c, g, "ppl_mean"), 4.4, 1e-9);
    cr_assert_float_eq(csv_num_of(c, g, "dppl_mean"), 0.4, 1e-9);
    cr_assert_float_eq(csv_num_of(c, "inf,baseline,random,frac,0.25,", "dppl_mean"), 4, 1e-9);
    free(c);

    /* without the float reference (evaluated with --drop alone): PPL only */
    fx_sql(&fx, "DELETE FROM metrics WHERE context LIKE '%quant=%'");
    cr_assert_eq(run_report_opts(&fx, REPORT_MD, "inf", NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    md = out_file(&fx, "report.md");
    sec = md_section(md, "inf");
    assert_lacks(sec, "### Quantization");
    assert_has(sec, "`–` in ΔPPL: the runs have no float reference (evaluated without `--quant`).");
    assert_has(sec, "\n| baseline | 0.25 | 2 | 25.0 ± 0.0 | 2.00 ± 0.00 | 4.00 ± 0.00 | 8.100 ± 0.141 | 12.100 ± 0.141 "
                    "| – | – |\n");
    free(sec);
    free(md);
    fx_rm(&fx);
}

/* The plots of the two sections: ΔPPL% per scheme and row, ΔPPL% against
 * M-Act per scheme (a point per run), PPL against the share dropped (a
 * curve per row and rule, from the float model at 0); the hostile label
 * quoted, no shell line in any script. */
Test(report, inference_plots) {
    Fx fx;
    fixture_infer(&fx, 1);
    char err[1024], *log;
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", &log, err, sizeof err), 0, "%s\n%s", err,
                 log);
    free(log);
    char *d = out_file(&fx, "plots/inf-quant.dat");
    assert_has(d, "# baseline: scheme index (offset), mean dPPL %, std, runs, scheme index\n"
                  "-0.15 3.75 1.767766953 2 0\n0.85 12.5 3.535533906 2 1\n\n\n");
    assert_has(d, "# G1 `x` *y* |z| $w$ & % # {b}_u\\x0a!touch PWNED: scheme index (offset), mean dPPL %, std, runs, "
                  "scheme index\n0.15 0 0 1 0\n1.15 2 1.414213562 2 1\n");
    free(d);
    d = out_file(&fx, "plots/inf-quant.gp");
    assert_has(d, "set xtics ('w4g32' 0, 'w8-a8tensor' 1)\n");
    assert_has(d, " index 1 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#d55e00' dt 1 pt 2 title " INF_G1_GP);
    free(d);
    /* one point per finished run: M-Act, ΔPPL%, seed */
    d = out_file(&fx, "plots/inf-quant-mact-1-w8-a8tensor.dat");
    assert_has(d, "# baseline: M-Act, dPPL %, seed\n50 10 1\n60 15 2\n\n\n");
    assert_has(d, "!touch PWNED: M-Act, dPPL %, seed\n5 1 1\n10 3 2\n");
    assert_lacks(d, "1000 "); /* the diverged run */
    free(d);
    d = out_file(&fx, "plots/inf-quant-mact-1-w8-a8tensor.gp");
    char want[256];
    snprintf(want, sizeof want, "set title 'inf: w8-a8tensor (Pearson r = %+.3f, Spearman rho = +1.000, n = 4)'\n",
             infer_w8_r());
    assert_has(d, want);
    assert_has(d, "set logscale x\n"); /* M-Act spans a decade */
    free(d);
    /* the curves: from the float model at 0, x the mean share dropped in % */
    d = out_file(&fx, "plots/inf-drop.dat");
    assert_has(d, "# baseline, random (fixed F): pairs dropped (%, mean), mean PPL, std, runs, F\n"
                  "0 4.1 0.1414213562 2 float\n25 8.1 0.1414213562 2 0.25\n\n\n");
    assert_has(d, "!touch PWNED, gate: pairs dropped (%, mean), mean PPL, std, runs, tau\n"
                  "0 4 0.1414213562 2 float\n11 4.1 0.1414213562 2 0.1\n55 5 0.1414213562 2 0.3\n\n\n");
    assert_lacks(d, "baseline, gate");
    free(d);
    d = out_file(&fx, "plots/inf-drop.gp");
    /* baseline: 2 curves (F), G1: 5; colour by row, dash type by rule */
    assert_has(d, " index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 4 pt 4 title 'baseline: random (fixed F)'");
    assert_has(d, " index 2 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 1 title 'G1 `x` *y* |z| $w$ & % # "
                  "{b}_u\\x0a!touch PWNED: gate'");
    assert_has(d, " index 6 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 5 pt 5 title ");
    free(d);
    assert_plot_scripts_clean(fx.out, "inf-*.gp", 40);
    char *md = out_file(&fx, "report.md");
    assert_has(md, "**PPL increase under simulated quantization (ΔPPL in % of each run's float PPL, per scheme and row;");
    assert_has(md, "**ΔPPL under `w8-a8tensor` (% of the float PPL) against M-Act, one point per run, one colour per "
                   "row (log x)**: not drawn; data `plots/inf-quant-mact-1-w8-a8tensor.dat`");
    assert_has(md, "**Validation PPL against the share of (token, head) pairs dropped (log y;");
    free(md);
    char p[256];
    snprintf(p, sizeof p, "%s/plots/plain-quant.gp", fx.out);
    cr_assert(!exists(p), "a quantization plot for a sweep without results");
    if (have_gnuplot()) {
        cr_assert_eq(run_report(&fx, REPORT_MD, "inf", NULL, &log, err, sizeof err), 0, "%s\n%s", err, log);
        free(log);
        static const char *const imgs[] = {"inf-quant", "inf-quant-mact-0-w4g32", "inf-quant-mact-1-w8-a8tensor",
                                           "inf-drop"};
        for (size_t i = 0; i < 4; i++)
            for (int e = 0; e < 2; e++) {
                snprintf(p, sizeof p, "%s/plots/%s.%s", fx.out, imgs[i], e ? "svg" : "png");
                cr_assert(exists(p), "%s missing", p);
            }
        char cmd[256];
        snprintf(cmd, sizeof cmd, "find '%s' -name 'PWNED*'", fx.dir);
        FILE *f = popen(cmd, "r");
        cr_assert_not_null(f);
        char out[256] = "";
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = '\0';
        cr_assert_eq(pclose(f), 0);
        cr_assert_str_eq(out, "", "gnuplot ran a shell command: %s", out);
    }
    fx_rm(&fx);
}

/* plots/gnuplot.log is this report's: a rerun into the same directory
 * starts it afresh instead of appending to what an earlier report (or
 * anything else) left there. */
Test(report, gnuplot_log_starts_afresh) {
    Fx fx;
    fixture(&fx);
    char err[1024], p[256];
    snprintf(p, sizeof p, "%s/plots", fx.out);
    cr_assert_eq(mkdir(fx.out, 0777) == 0 || errno == EEXIST, 1);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/plots/gnuplot.log", fx.out);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("STALE line of an earlier report\n", f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err), 0, "%s", err);
    if (exists(p)) {
        char *log = test_read_file(p, NULL);
        assert_lacks(log, "STALE");
        free(log);
    }
    if (have_gnuplot()) {
        long size[2];
        for (int i = 0; i < 2; i++) {
            cr_assert_eq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
            struct stat st;
            size[i] = stat(p, &st) == 0 ? (long)st.st_size : 0;
        }
        cr_assert_eq(size[1], size[0], "gnuplot.log grew from %ld to %ld bytes on a rerun", size[0], size[1]);
    }
    fx_rm(&fx);
}
