/*
 * test_report_edge.c — `gated report`'s section "Learning-rate edge"
 * (core/lab/report/report_edge.c) on tiny synthetic lr sweeps with planted
 * divergences and spikes:
 *
 *   edge_a (grad_clip 0, warmup 10), rows baseline-lrX and G1-lrX at lr
 *   0.1 0.2 0.4 0.8, seeds 1-4, and G1-lr1.6e+0 pending (no runs row):
 *     baseline 0.1 clean; 0.2 seed 2 spikes (0.35 at step 40, 0.5 at 41);
 *       0.4 seeds 1-3 diverge at steps 12, 20, 30; 0.8 all diverge at
 *       5, 6, 7, 8
 *     G1 0.1, 0.2 clean; 0.4 seed 1 diverges at 50, the others finish
 *       with val loss 1.9 + 0.01 seed; 0.8 all diverge at 9
 *   So: baseline stable up to 0.1, no divergence up to 0.2, first
 *   divergence 0.4; G1 stable up to 0.2, first divergence 0.4; Fisher at
 *   0.4: (1, 3) against (3, 1), 17/35; pooled over the lrs (exact
 *   stratified): 17/35 as well, the other strata being single tables,
 *   where Fisher on the summed counts (5, 11) against (7, 9) would give
 *   0.716.
 *   edge_b: the same rows with grad_clip 1: baseline 0.4 seed 1 diverges
 *     (step 15), 0.8 all; G1 0.8 seeds 1, 2 diverge; pooled p of G1 3/14.
 *   edge_c: another model (n_layer 4), a G1 label with an escape byte and
 *     a '|' (written by raw SQL: the store refuses control bytes); edge_d:
 *     the rows of edge_a under another model (n_layer 5): not its family.
 *   flat: one lr: no section.
 * The expected p-values are exact fractions from an independent brute
 * force (Python's Fraction over every table of the strata).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/report/report.h"
#include "lab/stats.h"
#include "report_fx.h"
#include "run/store.h"
#include "testutil.h"

/* A run with its status, divergence step (< 0: none), final val loss
 * (NAN: none) and spikes (step, excess). */
static void edge_run(Store *s, const char *json, const char *name, long long seed, const char *status, long long dstep,
                     double vl, const double (*spikes)[2], int nsp, char id[17]) {
    store_run_id(json, id);
    cr_assert_eq(store_run_begin(s, id, name, json, seed, 1, &PROV, NULL), 0, "%s", store_errmsg(s));
    for (int i = 0; i < nsp; i++)
        cr_assert_eq(store_metric(s, id, "spike", "", (long long)spikes[i][0], spikes[i][1]), 0);
    if (!isnan(vl)) {
        cr_assert_eq(store_summary(s, id, "val_loss", "", vl, NULL), 0);
        cr_assert_eq(store_summary(s, id, "val_ppl", "", exp(vl), NULL), 0);
    }
    cr_assert_eq(store_run_end(s, id, status, NULL, dstep), 0, "%s", store_errmsg(s));
}

enum { NLR = 4, NSEED = 4 };
static const double LRS[NLR + 1] = {0.1, 0.2, 0.4, 0.8, 1.6};
static const char *const LR_TEXT[NLR + 1] = {"1e-1", "2e-1", "4e-1", "8e-1", "1.6e+0"};

/* The divergence step of (variant, lr, seed) in a sweep; -1: it finished. */
typedef long long (*DivFn)(int var, int lr, int seed);

static long long div_a(int var, int lr, int seed) {
    static const long long base4[NSEED] = {12, 20, 30, -1};
    if (lr == 3) return var == 0 ? 5 + seed : 9;
    if (lr == 2) return var == 0 ? base4[seed] : seed == 0 ? 50 : -1;
    return -1;
}

static long long div_b(int var, int lr, int seed) {
    if (lr == 3) return var == 0 || seed < 2 ? 10 : -1;
    return var == 0 && lr == 2 && seed == 0 ? 15 : -1;
}

/* One lr sweep: 2 variants x NLR lrs x NSEED seeds (extra: a key added to
 * the config), and with `pending` the G1 row at 1.6 without runs. */
static void edge_sweep(Store *s, const char *sweep, double clip, const char *extra, DivFn div, int pending,
                       const char *g1) {
    static const double spike2[2][2] = {{40, 0.35}, {41, 0.5}};
    enum { MAX = 2 * NLR * NSEED + NSEED };
    char ids[MAX][17], labels[2 * (NLR + 1)][48];
    StoreSweepRun sr[MAX];
    int n = 0;
    for (int l = 0; l <= NLR; l++)
        for (int v = 0; v < 2; v++) {
            if (l == NLR && (v == 0 || !pending)) continue;
            char *label = labels[2 * l + v];
            snprintf(label, 48, "%s-lr%s", v ? g1 : "baseline", LR_TEXT[l]);
            for (int k = 0; k < NSEED; k++) {
                char json[320], name[96];
                snprintf(json, sizeof json,
                         "{\"model.gate.position\":\"%s\",%s\"train.grad_clip\":%g,\"train.warmup\":10,"
                         "\"train.lr\":%g,\"train.seed\":%d}",
                         v ? "sdpa" : "none", extra, clip, LRS[l], k + 1);
                snprintf(name, sizeof name, "%s-%s-s%d", sweep, label, k + 1);
                if (l == NLR) {
                    store_run_id(json, ids[n]); /* pending: in sweep_runs only */
                } else {
                    long long d = div(v, l, k);
                    int spiky = v == 0 && l == 1 && k == 1 && div == div_a;
                    edge_run(s, json, name, k + 1, d >= 0 ? "diverged" : "finished", d,
                             d >= 0 ? NAN : (v ? 1.9 : 2.0) + 0.01 * (k + 1), spike2, spiky ? 2 : 0, ids[n]);
                }
                sr[n] = (StoreSweepRun){ids[n], label, k + 1, n, v == 0 && l == 0};
                n++;
            }
        }
    cr_assert_eq(store_sweep_record(s, sweep, n, sr, n), 0, "%s", store_errmsg(s));
}

static long long div_none(int var, int lr, int seed) {
    (void)var, (void)lr, (void)seed;
    return -1;
}

static void fixture_edge(Fx *fx) {
    Store *s = fx_open(fx);
    edge_sweep(s, "edge_a", 0, "", div_a, 1, "G1");
    edge_sweep(s, "edge_b", 1, "", div_b, 0, "G1");
    edge_sweep(s, "edge_c", 0, "\"model.n_layer\":4,", div_none, 0, "G1");
    edge_sweep(s, "edge_d", 0, "\"model.n_layer\":5,", div_none, 0, "G1");
    /* flat: one lr, two rows */
    char ids[2][17];
    StoreSweepRun sr[2];
    for (int v = 0; v < 2; v++) {
        char json[160];
        snprintf(json, sizeof json, "{\"model.gate.position\":\"%s\",\"model.n_layer\":3,\"train.lr\":0.1}",
                 v ? "sdpa" : "none");
        edge_run(s, json, v ? "flat-g1" : "flat-base", 1, v ? "diverged" : "finished", v ? 7 : -1, v ? NAN : 2.0,
                 NULL, 0, ids[v]);
        sr[v] = (StoreSweepRun){ids[v], v ? "G1-lr1e-1" : "baseline-lr1e-1", 1, v, v == 0};
    }
    cr_assert_eq(store_sweep_record(s, "flat", 2, sr, 2), 0, "%s", store_errmsg(s));
    cr_assert_eq(sqlite3_exec(store_db(s),
                              "UPDATE sweep_runs SET label = replace(label, 'G1', 'G1' || char(27) || '|x') "
                              "WHERE sweep = 'edge_c'",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    store_close(s);
}

static char *edge_md(Fx *fx, const char *sweep) {
    char err[1024], *log;
    int rc = run_report_opts(fx, REPORT_MD, sweep, NULL, 1, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    free(log);
    return out_file(fx, "report.md");
}

Test(report, edge_counts_and_edges) {
    Fx fx;
    fixture_edge(&fx);
    char *md = edge_md(&fx, NULL);
    char *a = md_section(md, "edge_a");
    /* per variant and lr: ended/runs, diverged, spiked, worst spike, median divergence step, val loss, p */
    assert_has(a, "### Learning-rate edge\n");
    assert_has(a, "| baseline | 0.1 | 4/4 | 0/4 | 0/4 | – | – | 2.0250 ± 0.0129 | (baseline) |\n");
    assert_has(a, "| baseline | 0.2 | 4/4 | 0/4 | 1/4 | 0.50 | – | 2.0250 ± 0.0129 | (baseline) |\n");
    assert_has(a, "| baseline | 0.4 | 4/4 | 3/4 | 0/4 | – | 20 | 2.0400 | (baseline) |\n");
    assert_has(a, "| baseline | 0.8 | 4/4 | 4/4 | 0/4 | – | 6.5 | – | (baseline) |\n");
    assert_has(a, "| G1 | 0.4 | 4/4 | 1/4 | 0/4 | – | 50 | 1.9300 ± 0.0100 | 0.486 |\n");
    assert_has(a, "| G1 | 0.8 | 4/4 | 4/4 | 0/4 | – | 9 | – | 1.000 |\n");
    assert_has(a, "| G1 | 1.6 | 0/4 | 0/0 | 0/0 | – | – | – | – |\n"); /* pending: its lr from the label */
    /* the edges; pooled: stratified (17/35), not Fisher on the summed counts (0.716) */
    assert_has(a, "| baseline | 0.1 | 0.2 | 0.4 | (baseline) | – |\n");
    assert_has(a, "| G1 | 0.2 | 0.2 | 0.4 | 0.486 | 4 |\n");
    assert_lacks(a, "0.716");
    /* the family: edge_a and edge_b, not edge_c (another model) or flat; in edge_a's section only */
    assert_has(a, "#### Learning-rate edge across conditions\n");
    assert_has(a, "| edge_a / G1 | 0 | 10 | 0.2 | 0.4 | 0/4 | 0/4 | 1/4 | 4/4 | – | 0.486 |\n");
    assert_has(a, "| edge_b / baseline | 1 | 10 | 0.2 | 0.4 | 0/4 | 0/4 | 1/4 | 4/4 | – | (baseline) |\n");
    assert_has(a, "| edge_b / G1 | 1 | 10 | 0.4 | 0.8 | 0/4 | 0/4 | 0/4 | 2/4 | – | 0.214 |\n");
    assert_lacks(a, "edge_c /");
    assert_lacks(a, "edge_d /");
    cr_assert_eq(count_of(md, "Learning-rate edge across conditions"), 1);
    char *b = md_section(md, "edge_b");
    assert_has(b, "| G1 | 0.4 | 0.4 | 0.8 | 0.214 | 4 |\n");
    assert_lacks(b, "across conditions");
    char *f = md_section(md, "flat");
    assert_lacks(f, "Learning-rate edge"); /* one lr */
    /* a label with control bytes: escaped, no raw byte anywhere */
    char *c = md_section(md, "edge_c");
    assert_has(c, "| G1\\\\x1b\\|x | 0.1 | 4/4 |");
    cr_assert(!raw_control(md));
    free(a), free(b), free(c), free(f), free(md);
    /* --sweep edge_b: the family's table moves to the first selected sweep */
    md = edge_md(&fx, "edge_b");
    assert_has(md, "| edge_a / baseline | 0 | 10 | 0.1 | 0.4 | 0/4 | 0/4 | 3/4 | 4/4 | – | (baseline) |\n");
    free(md);
    fx_rm(&fx);
}

Test(report, edge_csv_and_tex) {
    Fx fx;
    fixture_edge(&fx);
    char err[1024], *log;
    cr_assert_eq(run_report_opts(&fx, REPORT_CSV, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *csv = out_file(&fx, "edge_a-edge.csv");
    cr_assert(csv);
    const char *g4 = "edge_a,G1,edge_a,0,10,0.4,";
    cr_assert_eq(csv_num_of(csv, g4, "diverged"), 1);
    cr_assert_eq(csv_num_of(csv, g4, "ended"), 4);
    cr_assert_float_eq(csv_num_of(csv, g4, "div_p"), 17.0 / 35, 1e-9);
    cr_assert_float_eq(csv_num_of(csv, g4, "pooled_div_p"), 17.0 / 35, 1e-9);
    cr_assert_eq(csv_num_of(csv, g4, "stable_up_to"), 0.2);
    cr_assert_eq(csv_num_of(csv, g4, "first_div_lr"), 0.4);
    cr_assert_eq(csv_num_of(csv, g4, "div_step_median"), 50);
    const char *b2 = "edge_a,baseline,edge_a,0,10,0.2,";
    cr_assert_eq(csv_num_of(csv, b2, "spiked"), 1);
    cr_assert_float_eq(csv_num_of(csv, b2, "worst_spike"), 0.5, 1e-12);
    cr_assert_eq(csv_num_of(csv, b2, "stable_up_to"), 0.1);
    cr_assert_eq(csv_num_of(csv, b2, "no_div_up_to"), 0.2);
    cr_assert(isnan(csv_num_of(csv, b2, "pooled_div_p")));
    free(csv);
    csv = out_file(&fx, "edge_b-edge.csv");
    cr_assert_float_eq(csv_num_of(csv, "edge_b,G1,edge_a,1,10,0.8,", "pooled_div_p"), 3.0 / 14, 1e-9);
    free(csv);
    csv = out_file(&fx, "edge_c-edge.csv");
    cr_assert(csv);
    assert_has(csv, "edge_c,baseline,,0,10,0.1,"); /* no family */
    cr_assert(!raw_control(csv));
    free(csv);
    char path[256];
    snprintf(path, sizeof path, "%s/flat-edge.csv", fx.out);
    cr_assert(!exists(path));
    cr_assert_eq(run_report_opts(&fx, REPORT_TEX, NULL, NULL, 1, &log, err, sizeof err), 0, "%s\n%s", err, log);
    free(log);
    char *tex = out_file(&fx, "edge_a.tex");
    assert_has(tex, "G1 & 0.4 & 4/4 & 1/4 & 0/4 & -- & 50 & 1.9300 $\\pm$ 0.0100 & 0.486 \\\\\n");
    assert_has(tex, "edge\\_b / G1 & 1 & 10 & 0.4 & 0.8 & 0/4 & 0/4 & 0/4 & 2/4 & -- & 0.214 \\\\\n");
    free(tex);
    tex = out_file(&fx, "edge_c.tex");
    assert_has(tex, "G1\\textbackslash{}x1b|x & 0.1 &");
    cr_assert(!raw_control(tex));
    free(tex);
    fx_rm(&fx);
}

/* The main fixture's lr sweep: labels "lr=0.001,position=none" name the
 * variant "position=none"; the baseline line diverges at 0.01 (2 of 4),
 * the gated one never, and its row at 0.003 has no baseline to test. */
Test(report, edge_lr_first_labels) {
    Fx fx;
    fixture(&fx);
    char *md = edge_md(&fx, "lr");
    assert_has(md, "| position=none | 0.01 | 4/4 | 2/4 | 0/4 | – | 30 | 2.5500 ± 0.0707 | (baseline) |\n");
    assert_has(md, "| position=sdpa | 0.003 | 4/4 | 0/4 | 0/4 | – | – | 2.0250 ± 0.0520 | – |\n");
    assert_has(md, "| position=sdpa | 0.01 | 0.01 | none | 0.429 | 2 |\n");
    free(md);
    fx_rm(&fx);
}
