/*
 * test_report.c — `gated report`: the Student-t distribution, Welch's and
 * the paired t-test, TOST and the minimum detectable effect,
 * Holm–Bonferroni, Fisher's exact test and the Mann-Whitney U test (`gated
 * compare`'s) against reference values (t: mpmath at 30 digits; TOST and
 * the MDE: closed forms of the t distribution at df 1, 2 and 4; Fisher:
 * exact fractions, as computed by an independent Python script; U: by
 * hand and by brute force over every ordering; see the values' comments),
 * and
 * the report itself on a fixture database built here through the store
 * API: exact numbers in the md, csv and tex tables (means, sample stds of
 * the loss and the probes, Δ, its interval, the test used, raw and
 * Holm-adjusted p, the `*` mark, the lr-matched reference and the
 * divergence test, the paper column), the plot data files (last step only,
 * means and histogram sums over seeds, the lr sweep with its diverged runs),
 * the plot scripts (no two series alike past the 8 colours, std bands and
 * error bars where seeds repeat, the viridis heatmap, labelled ticks on log
 * axes) and, where gnuplot exists, the SVG / PNG images; the report without
 * gnuplot; and exit status 2 with its message for a missing or corrupt
 * database and an unknown sweep (in process, and through GATED_BIN when it
 * is set).  A second fixture (fixture_sink) holds attention-sink probes and
 * `gated eval` results: the sink columns, the sink formation, per-head
 * F-Attn and perplexity-against-context-length sections in md, csv and
 * tex, and their plot data; the first fixture must get none of them.
 * fixture_family adds sweeps that share the first fixture's baseline runs
 * (one Holm family over them, the same p (Holm) in every table and with
 * --sweep; the TOST verdicts and --margin; the MDE line) and one that has
 * its own; fixture_budget holds one row set at three budgets, a pending
 * row and a sweep at another lr (the budget series: Δ with CIs, test loss,
 * the last quarter's drop, the plot and its quoting, csv and tex);
 * fixture_infer holds `gated eval --quant / --drop` results (the sections
 * "Quantization" and "Gate-sparse heads": ΔPPL paired per run, the test
 * against the baseline row, the correlation with M-Act by hand, the gate
 * rule with its matched controls and the fixed fractions, in md, csv and
 * tex; their plots; decoys at another length, split and step).
 *
 * Fixture (two sweeps; every value chosen so the expected numbers are
 * exact):
 *   sweep "main", baseline row "baseline"; rows 0-3 ran seeds 1..3, so they
 *   pair with the baseline by seed; "more-q-heads" ran seeds 4..6 (no
 *   common seed: Welch):
 *     baseline        val loss 1.50 1.52 1.54   (mean 1.52, std 0.02)
 *     G1-elementwise  1.40 1.41 1.42  per-seed Δ -0.10 -0.11 -0.12: p 0.0027, Holm 0.011 (*)
 *     G1-headwise     1.49 1.53 1.57  per-seed Δ -0.01 +0.01 +0.03: p 0.48
 *     G1-silu         1.48 1.49 1.50  per-seed Δ -0.02 -0.03 -0.04: paired p 0.035 < 0.05 (Welch
 *                     would give 0.104), Holm 3 x 0.035 = 0.105: no `*`
 *     more-q-heads    1.45 1.47 1.49  Welch p 0.0376 < 0.05, Holm max(0.105, 2 x 0.0376): no `*`
 *   sweep "lr" (train.lr x gate position, seeds 1..4; baseline row
 *     lr=0.001,position=none):
 *     lr=0.001,position=none   2.00 2.10 2.05 2.15     (the baseline)
 *     lr=0.01,position=none    2.50 2.60, seeds 3, 4 diverged  (the lr baseline at 0.01)
 *     lr=0.001,position=sdpa   1.90 2.02 1.97 2.03     vs the baseline, paired (4)
 *     lr=0.01,position=sdpa    1.80 1.85 1.90 1.95     vs lr=0.01,position=none: paired on
 *                              seeds 1, 2: Δ -0.725 (against the baseline it would be -0.2);
 *                              divergence 0/4 vs 2/4: Fisher p 3/7
 *     lr=0.003,position=sdpa   1.96 2.05 2.01 2.08     no baseline-line row at 0.003: vs the
 *                              baseline row (no lr match)
 *   sweep "lrv": the same runs labelled as variants ("baseline-lr1.0e-3").
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
#include "lab/report.h"
#include "testutil.h"
#include "lab/stats.h"
#include "run/store.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    char dir[64], db[128], out[128];
} Fx;

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

static int have_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

#define assert_has(text, needle) \
    cr_assert(strstr((text), (needle)) != NULL, "missing:\n%s\n--- in:\n%s", (needle), (text))
#define assert_lacks(text, needle) \
    cr_assert(strstr((text), (needle)) == NULL, "unexpected:\n%s\n--- in:\n%s", (needle), (text))

static const Provenance PROV = {"testhost", "testcpu", "cc", "-O0", "0", "3", "0.2", "test-v1", 0};

/* One run: config, status, final val loss (NAN: none), probes. */
static void add_run(Store *s, const char *json, const char *name, long long seed, const char *status, double vl,
                    double fattn, double mact, double gate, double spikes, double gparams, double tps, char id[17]) {
    store_run_id(json, id);
    cr_assert_eq(store_run_begin(s, id, name, json, seed, 1, &PROV, NULL), 0, "%s", store_errmsg(s));
    if (!isnan(vl)) {
        cr_assert_eq(store_metric(s, id, "val_loss", "", 50, vl + 0.25), 0);
        cr_assert_eq(store_metric(s, id, "val_loss", "", 100, vl), 0);
        cr_assert_eq(store_summary(s, id, "val_loss", "", vl, NULL), 0);
        cr_assert_eq(store_summary(s, id, "val_ppl", "", exp(vl), NULL), 0);
    }
    /* step 50 holds decoys: only the last step may be used */
    cr_assert_eq(store_metric(s, id, "f_attn", "", 50, 0.9), 0);
    cr_assert_eq(store_metric(s, id, "f_attn", "", 100, fattn), 0);
    cr_assert_eq(store_metric(s, id, "m_act", "", 50, 999), 0);
    cr_assert_eq(store_metric(s, id, "m_act", "", 100, mact), 0);
    for (int l = 0; l < 2; l++) {
        char ctx[32];
        snprintf(ctx, sizeof ctx, "layer=%d", l);
        cr_assert_eq(store_metric(s, id, "f_attn", ctx, 50, 0.9), 0);
        cr_assert_eq(store_metric(s, id, "f_attn", ctx, 100, 0.2 * (l + 1) + 0.01 * (double)seed), 0);
        cr_assert_eq(store_metric(s, id, "m_act", ctx, 100, 10.0 * (l + 1) + (double)seed), 0);
    }
    if (!isnan(gate)) {
        cr_assert_eq(store_metric(s, id, "gate_mean", "", 50, 0.9), 0);
        cr_assert_eq(store_metric(s, id, "gate_mean", "", 100, gate), 0);
        for (int l = 0; l < 2; l++) {
            char ctx[32];
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            long long old[4] = {100, 0, 0, 0};
            long long c[4] = {1 * seed, 2 * seed, 3 * seed, 4 * seed};
            if (l == 1) c[0] = 4 * seed, c[2] = 4 * seed, c[3] = 0;
            cr_assert_eq(store_histogram(s, id, "gate", ctx, 50, 0, 1, old, 4), 0);
            cr_assert_eq(store_histogram(s, id, "gate", ctx, 100, 0, 1, c, 4), 0);
            cr_assert_eq(store_metric(s, id, "gate_mean", ctx, 100, gate), 0);
        }
    }
    cr_assert_eq(store_summary(s, id, "spikes", "", spikes, NULL), 0);
    cr_assert_eq(store_summary(s, id, "gate_params", "", gparams, NULL), 0);
    cr_assert_eq(store_summary(s, id, "tokens_per_s", "", tps, NULL), 0);
    cr_assert_eq(store_run_end(s, id, status, NULL, strcmp(status, "diverged") == 0 ? 30 : -1), 0, "%s",
                 store_errmsg(s));
}

/* A fresh directory with the paths of the database and the output; the
 * store opened on the database. */
static Store *fx_open(Fx *fx) {
    strcpy(fx->dir, "/tmp/test_report_XXXXXX");
    cr_assert(mkdtemp(fx->dir), "mkdtemp: %s", strerror(errno));
    snprintf(fx->db, sizeof fx->db, "%s/fx.db", fx->dir);
    snprintf(fx->out, sizeof fx->out, "%s/out", fx->dir);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, fx->db, err, sizeof err), 0, "%s", err);
    return s;
}

static void fixture(Fx *fx) {
    Store *s = fx_open(fx);

    /* sweep main: rows 0-3 share seeds 1..3 (paired); row 4 ran seeds 4..6 (no pairs: Welch) */
    enum { NV = 5 };
    static const char *const labels[NV] = {"baseline", "G1-elementwise", "G1-headwise", "G1-silu", "more-q-heads"};
    static const char *const pos[NV] = {"none", "sdpa", "sdpa", "sdpa", "none"};
    static const char *const gran[NV] = {"elementwise", "elementwise", "headwise", "elementwise", "elementwise"};
    static const char *const act[NV] = {"sigmoid", "sigmoid", "sigmoid", "silu", "sigmoid"};
    static const double vl[NV][3] = {
        {1.50, 1.52, 1.54}, {1.40, 1.41, 1.42}, {1.49, 1.53, 1.57}, {1.48, 1.49, 1.50}, {1.45, 1.47, 1.49}};
    static const double fa[NV][3] = {
        {0.30, 0.32, 0.34}, {0.05, 0.06, 0.07}, {0.10, 0.11, 0.12}, {0.08, 0.09, 0.10}, {0.25, 0.26, 0.27}};
    static const double ma[NV][3] = {{10, 12, 14}, {4, 5, 6}, {7, 8, 9}, {6, 7, 8}, {11, 12, 13}};
    static const double ga[NV][3] = {
        {NAN, NAN, NAN}, {0.20, 0.25, 0.30}, {0.30, 0.35, 0.40}, {0.40, 0.45, 0.50}, {NAN, NAN, NAN}};
    static const double gp[NV] = {0, 4096, 64, 4096, 8192};
    char ids[NV * 3][17], names[NV * 3][64];
    StoreSweepRun sr[NV * 3];
    for (int v = 0; v < NV; v++)
        for (int k = 0; k < 3; k++) {
            int i = v * 3 + k, seed = v == 4 ? k + 4 : k + 1;
            char json[256];
            snprintf(json, sizeof json,
                     "{\"model.gate.position\":\"%s\",\"model.gate.granularity\":\"%s\",\"model.gate.act\":\"%s\","
                     "\"model.n_head\":%d,\"train.lr\":0.003,\"train.min_lr\":0.0003,\"train.seed\":%d}",
                     pos[v], gran[v], act[v], v == 4 ? 8 : 4, seed);
            snprintf(names[i], sizeof names[i], "main-%s-s%d", labels[v], seed);
            add_run(s, json, names[i], seed, "finished", vl[v][k], fa[v][k], ma[v][k], ga[v][k],
                    v == 0 ? (double)(k + 1) : 0, gp[v], 1000 + 100 * v + 10 * k, ids[i]);
            sr[i] = (StoreSweepRun){ids[i], labels[v], seed, i, v == 0};
        }
    cr_assert_eq(store_sweep_record(s, "main", NV * 3, sr, NV * 3), 0, "%s", store_errmsg(s));

    /* sweep lr: train.lr x gate position, seeds 1..4; at lr 0.01 without a gate seeds 3, 4 diverge; lr 0.003
     * only with a gate (no baseline-line row there: falls back to the baseline row) */
    enum { NL = 5, NS = 4 };
    static const double lrs[NL] = {0.001, 0.01, 0.001, 0.01, 0.003};
    static const int lpos[NL] = {0, 0, 1, 1, 1};
    static const double lvl[NL][NS] = {{2.00, 2.10, 2.05, 2.15},
                                       {2.50, 2.60, NAN, NAN},
                                       {1.90, 2.02, 1.97, 2.03},
                                       {1.80, 1.85, 1.90, 1.95},
                                       {1.96, 2.05, 2.01, 2.08}};
    char lids[NL * NS][17], llab[NL][64];
    StoreSweepRun lsr[NL * NS];
    for (int row = 0; row < NL; row++) {
        int p = lpos[row];
        snprintf(llab[row], sizeof llab[row], "lr=%g,position=%s", lrs[row], p ? "sdpa" : "none");
        for (int k = 0; k < NS; k++) {
            int i = row * NS + k;
            char json[256], name[96];
            snprintf(json, sizeof json,
                     "{\"model.gate.position\":\"%s\",\"train.lr\":%g,\"train.min_lr\":%g,\"train.seed\":%d}",
                     p ? "sdpa" : "none", lrs[row], lrs[row] / 10, k + 1);
            snprintf(name, sizeof name, "lr-%d-s%d", row, k + 1);
            double v = lvl[row][k];
            add_run(s, json, name, k + 1, isnan(v) ? "diverged" : "finished", v, 0.1, 5, p ? 0.5 : NAN, 0,
                    p ? 4096 : 0, 500, lids[i]);
            lsr[i] = (StoreSweepRun){lids[i], llab[row], k + 1, i, row == 0};
        }
    }
    cr_assert_eq(store_sweep_record(s, "lr", NL * NS, lsr, NL * NS), 0, "%s", store_errmsg(s));
    /* the same runs as a variants-style sweep "lrv" with the lr in the labels */
    static const char *const vlab[NL] = {"baseline-lr1.0e-3", "baseline-lr1.0e-2", "G1-lr1.0e-3", "G1-lr1.0e-2",
                                         "G1-lr3.0e-3"};
    for (int i = 0; i < NL * NS; i++) lsr[i].label = vlab[i / NS];
    cr_assert_eq(store_sweep_record(s, "lrv", NL * NS, lsr, NL * NS), 0, "%s", store_errmsg(s));
    store_close(s);
}

static void fx_rm(Fx *fx) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    cr_assert_eq(system(cmd), 0);
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

/* report_run into fx->out; log captured into *logtext (may be NULL). */
static int run_report_opts(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, int no_plots,
                           char **logtext, char *err, size_t cap) {
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    ReportOpts o = {fx->db, sweep, fmt, fx->out, no_plots, gnuplot, log, NULL, 0};
    int rc = report_run(&o, err, cap);
    long n = ftell(log);
    rewind(log);
    char *t = malloc((size_t)n + 1);
    cr_assert_not_null(t);
    cr_assert_eq(fread(t, 1, (size_t)n, log), (size_t)n);
    t[n] = '\0';
    fclose(log);
    if (logtext)
        *logtext = t;
    else
        free(t);
    return rc;
}

static int run_report(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, char **logtext, char *err,
                      size_t cap) {
    return run_report_opts(fx, fmt, sweep, gnuplot, 0, logtext, err, cap);
}

static char *out_file(Fx *fx, const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", fx->out, name);
    return test_read_file(p, NULL);
}

/* Field `col` (named in the header, the first line) of the line of CSV
 * text that starts with prefix, into out (unquoted fields only); "" and
 * an assertion failure when there is no such line or column. */
static void csv_field(const char *text, const char *prefix, const char *col, char *out, size_t cap) {
    size_t hl = strcspn(text, "\n"), cl = strlen(col);
    int ci = -1, k = 0;
    for (const char *p = text; p < text + hl; k++) {
        size_t n = strcspn(p, ",\n");
        if (n == cl && strncmp(p, col, n) == 0) ci = k;
        p += n + 1;
    }
    cr_assert(ci >= 0, "no column %s in:\n%.*s", col, (int)hl, text);
    const char *line = text;
    while (line && strncmp(line, prefix, strlen(prefix)) != 0) line = (line = strchr(line, '\n')) ? line + 1 : NULL;
    cr_assert_not_null(line, "no line %s", prefix);
    for (int i = 0; i < ci; i++) line += strcspn(line, ",\n") + 1;
    snprintf(out, cap, "%.*s", (int)strcspn(line, ",\n"), line);
}

/* csv_field as a number (NAN when empty). */
static double csv_num_of(const char *text, const char *prefix, const char *col) {
    char buf[64];
    csv_field(text, prefix, col, buf, sizeof buf);
    return *buf ? strtod(buf, NULL) : NAN;
}

/* The look (" lc ... dt ...[ pt ...]", up to " title") of the plot clause
 * "index N using COLS with STYLE" of a gnuplot script, into out ("" when
 * there is no such clause or it sets no colour). */
static void gp_look_of(const char *gp, int index, const char *cols_style, char *out, size_t cap) {
    char key[96];
    snprintf(key, sizeof key, "' index %d using %s", index, cols_style);
    out[0] = '\0';
    const char *p = strstr(gp, key);
    if (!p || !(p = strstr(p, " lc "))) return;
    const char *e = strstr(p, " title");
    const char *nl = strchr(p, '\n');
    if (!e || (nl && nl < e)) return;
    snprintf(out, cap, "%.*s", (int)(e - p), p);
}

/* ------------------------------------------------------------------ */
/* statistics                                                          */
/* ------------------------------------------------------------------ */

Test(report, t_distribution) {
    /* regularized incomplete beta */
    cr_assert_float_eq(stats_betainc(2, 3, 0.5), 0.6875, 1e-12);
    cr_assert_float_eq(stats_betainc(0.5, 5, 0.3), 0.934737753831091821, 1e-12);
    cr_assert_float_eq(stats_betainc(10, 0.5, 0.9), 0.151640909634709969, 1e-12);
    cr_assert_eq(stats_betainc(2, 3, 0), 0);
    cr_assert_eq(stats_betainc(2, 3, 1), 1);
    cr_assert(isnan(stats_betainc(-1, 3, 0.5)));
    /* two-sided p-values */
    cr_assert_float_eq(stats_t_p2(2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(stats_t_p2(-2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(stats_t_p2(2.776, 4), 0.0500227783199764076, 1e-10);
    cr_assert_float_eq(stats_t_p2(1.0, 1), 0.5, 1e-12);  /* Cauchy */
    cr_assert_float_eq(stats_t_p2(1.96, 1e6), 0.0499960675828293641, 1e-9);
    cr_assert_float_eq(stats_t_p2(0, 3), 1.0, 1e-15);
    cr_assert_eq(stats_t_p2(INFINITY, 3), 0);
    /* CDF and quantiles */
    cr_assert_float_eq(stats_t_cdf(2.0, 5), 1 - 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(stats_t_cdf(-2.0, 5), 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(stats_t_cdf(0, 7), 0.5, 1e-15);
    cr_assert_float_eq(stats_t_quantile(0.975, 4), 2.77644510519779349, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.975, 10), 2.22813885198627422, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.025, 10), -2.22813885198627422, 1e-9);
    cr_assert_float_eq(stats_t_quantile(0.5, 3), 0, 1e-12);
}

Test(report, welch) {
    const double base[3] = {1.50, 1.52, 1.54}, g1[3] = {1.40, 1.41, 1.42}, hw[3] = {1.49, 1.53, 1.57};
    double m, sd;
    stats_mean_std(base, 3, &m, &sd);
    cr_assert_float_eq(m, 1.52, 1e-12);
    cr_assert_float_eq(sd, 0.02, 1e-12);
    stats_mean_std(base, 1, &m, &sd);
    cr_assert(m == 1.50 && isnan(sd));
    stats_mean_std(base, 0, &m, &sd);
    cr_assert(isnan(m) && isnan(sd));
    stats_mean_std(base, 3, NULL, &sd); /* either output may be NULL */
    cr_assert_float_eq(sd, 0.02, 1e-12);
    TTest w;
    cr_assert_eq(stats_welch(g1, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.diff, -0.11, 1e-12);
    cr_assert_float_eq(w.t, -8.52056336165631654, 1e-9);
    cr_assert_float_eq(w.df, 2.94117647058823529, 1e-9); /* 50/17 */
    cr_assert_float_eq(w.p, 0.00365995558368264891, 1e-10);
    cr_assert_float_eq(w.lo, -0.151553995031825180, 1e-9);
    cr_assert_float_eq(w.hi, -0.0684460049681750155, 1e-9);
    cr_assert_eq(stats_welch(hw, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.p, 0.724856169924420301, 1e-10);
    cr_assert_float_eq(w.lo, -0.0731079900636501556, 1e-9);
    cr_assert_float_eq(w.hi, 0.0931079900636501734, 1e-9);
    /* too few runs; zero variance */
    cr_assert_eq(stats_welch(hw, 1, base, 3, &w), -1);
    const double c1[2] = {1, 1}, c2[2] = {2, 2};
    cr_assert_eq(stats_welch(c1, 2, c2, 2, &w), 0);
    cr_assert(w.p == 0 && w.lo == -1 && w.hi == -1);
    cr_assert_eq(stats_welch(c1, 2, c1, 2, &w), 0);
    cr_assert(w.p == 1);
}

Test(report, paired_holm_fisher) {
    /* paired: the per-seed differences, not the two samples' spreads */
    const double base[3] = {1.50, 1.52, 1.54}, g1[3] = {1.40, 1.41, 1.42}, silu[3] = {1.48, 1.49, 1.50};
    TTest w;
    cr_assert_eq(stats_paired(g1, base, 3, &w), 0);
    cr_assert_float_eq(w.diff, -0.11, 1e-12);
    cr_assert_float_eq(w.t, -19.0525588832576502, 1e-8);
    cr_assert_eq(w.df, 2);
    cr_assert_float_eq(w.p, 0.00274348939442592404, 1e-11);
    cr_assert_float_eq(w.lo, -0.134841377117503311, 1e-9);
    cr_assert_float_eq(w.hi, -0.0851586228824966893, 1e-9);
    cr_assert_eq(stats_paired(silu, base, 3, &w), 0);
    cr_assert_float_eq(w.t, -5.19615242270663188, 1e-9);
    cr_assert_float_eq(w.p, 0.0350987186459846505, 1e-10);
    cr_assert_float_eq(w.lo, -0.0548413771175033107, 1e-9);
    cr_assert_float_eq(w.hi, -0.00515862288249668929, 1e-9);
    cr_assert_eq(stats_welch(silu, 3, base, 3, &w), 0); /* unpaired, the same data: far weaker */
    cr_assert_float_eq(w.p, 0.104478886684721866, 1e-10);
    const double a2[2] = {1.80, 1.85}, b2[2] = {2.50, 2.60}; /* df = 1 */
    cr_assert_eq(stats_paired(a2, b2, 2, &w), 0);
    cr_assert_float_eq(w.diff, -0.725, 1e-12);
    cr_assert_float_eq(w.t, -29.0, 1e-9);
    cr_assert_float_eq(w.p, 0.0219437112320219625, 1e-10);
    cr_assert_float_eq(w.lo, -1.04265511840436762, 1e-8);
    cr_assert_float_eq(w.hi, -0.407344881595632384, 1e-8);
    cr_assert_eq(stats_paired(a2, b2, 1, &w), -1);
    const double c1[2] = {1, 2}, c2[2] = {2, 3};
    cr_assert_eq(stats_paired(c1, c2, 2, &w), 0); /* constant differences */
    cr_assert(w.p == 0 && w.lo == -1 && w.hi == -1);
    cr_assert_eq(stats_paired(c1, c1, 2, &w), 0);
    cr_assert(w.p == 1 && w.diff == 0);

    /* Holm: sorted 0.005 0.01 0.03 0.04 -> 4x, 3x, 2x, then the running maximum */
    double p[6] = {0.01, NAN, 0.04, 0.03, 0.005, NAN}, adj[6];
    cr_assert_eq(stats_holm(p, 6, adj), 0);
    cr_assert_float_eq(adj[0], 0.03, 1e-15);
    cr_assert(isnan(adj[1]) && isnan(adj[5]));
    cr_assert_float_eq(adj[2], 0.06, 1e-15); /* 1 x 0.04 < 0.06 */
    cr_assert_float_eq(adj[3], 0.06, 1e-15);
    cr_assert_float_eq(adj[4], 0.02, 1e-15);
    double q[3] = {0.6, 0.5, 0.02};
    cr_assert_eq(stats_holm(q, 3, q), 0); /* in place; capped at 1 */
    cr_assert(q[0] == 1 && q[1] == 1);
    cr_assert_float_eq(q[2], 0.06, 1e-15);
    double one = 0.03, none = NAN;
    cr_assert_eq(stats_holm(&one, 1, &one), 0); /* a family of one: unadjusted */
    cr_assert_eq(one, 0.03);
    cr_assert_eq(stats_holm(&none, 1, &none), 0);
    cr_assert(isnan(none));
    cr_assert_eq(stats_holm(p, 0, adj), 0); /* no p-values: nothing to do */

    /* Fisher, two-sided (exact fractions) */
    cr_assert_float_eq(stats_fisher_exact(3, 1, 1, 3), 17.0 / 35, 1e-12);       /* the tea-tasting table */
    cr_assert_float_eq(stats_fisher_exact(1, 9, 11, 3), 41.0 / 14858, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(6, 2, 1, 4), 4.0 / 39, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(2, 7, 8, 2), 1063.0 / 46189, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(0, 5, 5, 0), 1.0 / 126, 1e-12);
    cr_assert_float_eq(stats_fisher_exact(0, 4, 2, 2), 3.0 / 7, 1e-12);        /* the lr sweep's */
    cr_assert_float_eq(stats_fisher_exact(10, 0, 0, 1), 1.0 / 11, 1e-12);
    cr_assert_eq(stats_fisher_exact(0, 4, 0, 4), 1);                             /* nobody diverged */
    cr_assert(isnan(stats_fisher_exact(0, 0, 1, 3)));
    cr_assert(isnan(stats_fisher_exact(-1, 2, 1, 3)));
}

/* Mann-Whitney U against hand-computed values: U counted pair by pair,
 * exact p-values as fractions of the C(n+m, n) orderings (the orderings
 * with U <= k are the partitions of k into at most n parts no larger than
 * m), the normal approximation's z from hand-ranked data (midranks, the
 * tie term sum(t^3 - t)), checked also against a normal table; and the
 * exact distribution against brute force over every ordering. */
Test(report, mann_whitney) {
    MWUTest w;
    const double lo3[3] = {1, 2, 3}, hi3[3] = {4, 5, 6};
    cr_assert_eq(stats_mann_whitney(lo3, 3, hi3, 3, &w), 0);
    cr_assert(w.exact && w.u == 0);
    cr_assert_float_eq(w.p, 2.0 / 20, 1e-12); /* the one ordering of 20 at each end */
    cr_assert_eq(stats_mann_whitney(hi3, 3, lo3, 3, &w), 0);
    cr_assert(w.u == 9);
    cr_assert_float_eq(w.p, 2.0 / 20, 1e-12);
    /* u = 3 (3 > 2, 5 > 2, 5 > 4); U <= 3 of 3 vs 4: 1 + 1 + 2 + 3 = 7 of 35 orderings */
    const double a34[3] = {1, 3, 5}, b34[4] = {2, 4, 6, 7};
    cr_assert_eq(stats_mann_whitney(a34, 3, b34, 4, &w), 0);
    cr_assert(w.exact && w.u == 3);
    cr_assert_float_eq(w.p, 14.0 / 35, 1e-12);
    /* Conover's example (SciPy's docs: p 0.1111): u = 3 + 4 + 2 + 4 + 4 = 17 of 20, 7 of 126 orderings */
    const double males[5] = {19, 22, 16, 29, 24}, females[4] = {20, 11, 17, 12};
    cr_assert_eq(stats_mann_whitney(males, 5, females, 4, &w), 0);
    cr_assert(w.exact && w.u == 17);
    cr_assert_float_eq(w.p, 1.0 / 9, 1e-12);
    /* u at the centre: 2 P(U <= 2) = 2 x 4/6, capped at 1 */
    const double a22[2] = {1, 4}, b22[2] = {2, 3};
    cr_assert_eq(stats_mann_whitney(a22, 2, b22, 2, &w), 0);
    cr_assert(w.u == 2 && w.p == 1);

    /* ties: normal approximation.  {1,2,2} vs {2,3,3,4}: ranks 1 | 3 3 3 | 5.5 5.5 | 7, R_a = 7,
     * u = 7 - 6 = 1; sigma^2 = 12/12 (8 - (24 + 6) / 42) = 51/7; z = (11 - 6 - 1/2) / sigma = 1.667
     * (a normal table: two-sided 0.0955) */
    const double at[3] = {1, 2, 2}, bt[4] = {2, 3, 3, 4};
    cr_assert_eq(stats_mann_whitney(at, 3, bt, 4, &w), 0);
    cr_assert(!w.exact && w.u == 1);
    cr_assert_float_eq(w.p, erfc(4.5 / sqrt(51.0 / 7) / sqrt(2.0)), 1e-12);
    cr_assert_float_eq(w.p, 0.0955, 5e-4);
    /* both samples over 8, no ties: normal.  u = 0, sigma^2 = 100 x 21 / 12 = 175, z = 49.5 / sqrt(175)
     * = 3.742 (table: 1.83e-4) */
    double s10[20];
    for (int i = 0; i < 20; i++) s10[i] = i + 1;
    cr_assert_eq(stats_mann_whitney(s10, 10, s10 + 10, 10, &w), 0);
    cr_assert(!w.exact && w.u == 0);
    cr_assert_float_eq(w.p, erfc(49.5 / sqrt(175.0) / sqrt(2.0)), 1e-15);
    cr_assert_float_eq(w.p, 1.83e-4, 0.02e-4);
    /* every value tied: no evidence at all */
    const double five[3] = {5, 5, 5};
    cr_assert_eq(stats_mann_whitney(five, 2, five, 3, &w), 0);
    cr_assert(w.u == 3 && w.p == 1);
    /* nothing to test */
    const double nan1[1] = {NAN};
    cr_assert_eq(stats_mann_whitney(lo3, 0, hi3, 3, &w), -1);
    cr_assert_eq(stats_mann_whitney(nan1, 1, hi3, 3, &w), -1);

    /* the smallest p: 2 / C(n+m, n) */
    cr_assert_float_eq(stats_mann_whitney_min_p(3, 3), 0.1, 1e-12);
    cr_assert_float_eq(stats_mann_whitney_min_p(4, 4), 2.0 / 70, 1e-12);
    cr_assert_float_eq(stats_mann_whitney_min_p(3, 5), 2.0 / 56, 1e-12);
    cr_assert_eq(stats_mann_whitney_min_p(1, 1), 1);
    cr_assert_eq(stats_mann_whitney_min_p(0, 3), 1);

    /* the exact distribution against brute force: every subset of n of the n+m ranks as sample a */
    static const int nm[][2] = {{1, 4}, {3, 3}, {5, 7}, {8, 9}, {7, 2}};
    for (size_t c = 0; c < sizeof nm / sizeof nm[0]; c++) {
        int n = nm[c][0], m = nm[c][1], N = n + m;
        double hist[80] = {0}, total = 0;
        for (unsigned mask = 0; mask < 1u << N; mask++) {
            if (__builtin_popcount(mask) != n) continue;
            int u = 0, below = 0; /* u: pairs (a, b) with a above b */
            for (int r = 0; r < N; r++) {
                if (mask >> r & 1)
                    u += below;
                else
                    below++;
            }
            hist[u]++;
            total++;
        }
        for (unsigned mask = 0; mask < 1u << N; mask++) {
            if (__builtin_popcount(mask) != n) continue;
            double a[16], b[16];
            int ia = 0, ib = 0, u = 0, below = 0;
            for (int r = 0; r < N; r++) {
                if (mask >> r & 1) {
                    a[ia++] = r;
                    u += below;
                } else {
                    b[ib++] = r;
                    below++;
                }
            }
            int k = u < n * m - u ? u : n * m - u;
            double cum = 0;
            for (int j = 0; j <= k; j++) cum += hist[j];
            double p = 2 * cum / total > 1 ? 1 : 2 * cum / total;
            cr_assert_eq(stats_mann_whitney(a, n, b, m, &w), 0);
            cr_assert(w.exact && w.u == u, "%d vs %d: u %g, expected %d", n, m, w.u, u);
            cr_assert_float_eq(w.p, p, 1e-12 * p, "%d vs %d, u %d: p %.17g, expected %.17g", n, m, u, w.p, p);
            if (u == 0) cr_assert_float_eq(stats_mann_whitney_min_p(n, m), p, 1e-12 * p);
        }
    }
}

/* TOST and the minimum detectable effect against closed forms of the t
 * distribution: df 1 (Cauchy) P(T <= t) = 1/2 + atan(t) / pi and quantile
 * tan(pi (p - 1/2)); df 2 P(T <= t) = 1/2 + t / (2 sqrt(t^2 + 2)) and
 * quantile (2p - 1) / sqrt(2 p (1 - p)); and a printed t table (df 10). */
static double cdf_df2(double t) { return 0.5 + t / (2 * sqrt(t * t + 2)); }
static double q_df2(double p) { return (2 * p - 1) / sqrt(2 * p * (1 - p)); }

Test(report, tost_and_mde) {
    /* per-seed differences 0.01 0.02 0.03: mean 0.02, sd 0.01, se 0.01 / sqrt(3), df 2 */
    const double base[3] = {1.50, 1.52, 1.54}, up[3] = {1.51, 1.54, 1.57}, down[3] = {1.49, 1.50, 1.51};
    TTest w;
    cr_assert_eq(stats_paired(up, base, 3, &w), 0);
    /* margin 0.05: t = (0.02 + 0.05) / se = 7 sqrt(3) and (0.02 - 0.05) / se = -3 sqrt(3); the upper test decides */
    double p = stats_tost(&w, 0.05);
    cr_assert_float_eq(p, fmax(cdf_df2(-7 * sqrt(3)), cdf_df2(-3 * sqrt(3))), 1e-9);
    cr_assert_float_eq(p, cdf_df2(-3 * sqrt(3)), 1e-9);
    cr_assert(p < 0.05, "p %g: |0.02| inside +-0.05", p);
    /* a mirror image gives the same p */
    cr_assert_eq(stats_paired(down, base, 3, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.05), p, 1e-12);
    /* margin 0.01, below |Δ|: t = (0.02 - 0.01) / se = sqrt(3) on the near side: far from equivalent */
    cr_assert_eq(stats_paired(up, base, 3, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.01), cdf_df2(sqrt(3)), 1e-9);
    /* p < alpha exactly when the (1 - 2 alpha) interval lies inside the margin: at margin = |Δ| + t(0.95) se,
     * p = 0.05 */
    cr_assert_float_eq(stats_tost(&w, 0.02 + q_df2(0.95) * 0.01 / sqrt(3)), 0.05, 1e-9);
    /* df 1 (2 pairs): differences 0 and 0.02, mean 0.01, se 0.01; margin 0.03: t = 4 and -2 */
    const double a2[2] = {1.00, 1.02}, b2[2] = {1.00, 1.00};
    cr_assert_eq(stats_paired(a2, b2, 2, &w), 0);
    cr_assert_float_eq(stats_tost(&w, 0.03), fmax(0.5 + atan(-4) / M_PI, 0.5 + atan(-2) / M_PI), 1e-9);
    /* Welch: the test's own se and df */
    TTest t = {.diff = 0.01, .se = 0.01, .df = 2};
    cr_assert_float_eq(stats_tost(&t, 0.03), cdf_df2(-2), 1e-9);
    /* no spread: inside the margin or not; no margin: no test */
    const double c1[2] = {1.25, 2.25}, c2[2] = {1.00, 2.00}; /* differences exactly 0.25 */
    cr_assert_eq(stats_paired(c1, c2, 2, &w), 0);
    cr_assert_eq(stats_tost(&w, 0.5), 0);
    cr_assert_eq(stats_tost(&w, 0.125), 1);
    cr_assert(isnan(stats_tost(&w, 0)) && isnan(stats_tost(&w, -0.02)) && isnan(stats_tost(&w, NAN)));
    t.se = NAN;
    cr_assert(isnan(stats_tost(&t, 0.02)));

    /* MDE = (t(1 - alpha/2, n-1) + t(power, n-1)) sd / sqrt(n) */
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05, 0.8), (q_df2(0.975) + q_df2(0.8)) * 0.01 / sqrt(3), 1e-9);
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05, 0.8), (4.302653 + 1.060660) * 0.01 / sqrt(3), 1e-8);
    cr_assert_float_eq(stats_paired_mde(0.01, 3, 0.05 / 4, 0.8), (q_df2(1 - 0.05 / 8) + q_df2(0.8)) * 0.01 / sqrt(3),
                       1e-9); /* Holm's worst case in a family of 4 */
    cr_assert_float_eq(stats_paired_mde(0.02, 2, 0.05, 0.8), (tan(M_PI * 0.475) + tan(M_PI * 0.3)) * 0.02 / sqrt(2),
                       1e-9);
    /* df 10 from a printed table: t(0.975) = 2.228, t(0.80) = 0.879 */
    cr_assert_float_eq(stats_paired_mde(1, 11, 0.05, 0.8), (2.228 + 0.879) / sqrt(11), 1e-3);
    /* more seeds, smaller effects; more power, larger */
    cr_assert(stats_paired_mde(1, 6, 0.05, 0.8) < stats_paired_mde(1, 3, 0.05, 0.8));
    cr_assert(stats_paired_mde(1, 3, 0.05, 0.9) > stats_paired_mde(1, 3, 0.05, 0.8));
    cr_assert_eq(stats_paired_mde(0, 3, 0.05, 0.8), 0);
    cr_assert(isnan(stats_paired_mde(0.01, 1, 0.05, 0.8)) && isnan(stats_paired_mde(NAN, 3, 0.05, 0.8)) &&
              isnan(stats_paired_mde(0.01, 3, 0, 0.8)) && isnan(stats_paired_mde(0.01, 3, 0.05, 1)));
}

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

/* The text of report.md's section of sweep `name` (up to the next sweep's
 * or the budget section), heap. */
static char *md_section(const char *md, const char *name) {
    char head[96];
    snprintf(head, sizeof head, "## Sweep `%s`\n", name);
    const char *a = strstr(md, head);
    cr_assert_not_null(a, "no section %s", name);
    const char *b = strstr(a + 1, "\n## ");
    size_t n = b ? (size_t)(b - a) : strlen(a);
    char *out = malloc(n + 1);
    cr_assert_not_null(out);
    memcpy(out, a, n);
    out[n] = '\0';
    return out;
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
    ReportOpts o = {fx.db, "main2", REPORT_MD, fx.out, 1, NULL, lg, NULL, 0.001};
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

    /* csv: a line per series, budget and row; a line per run */
    rc = run_report(&fx, REPORT_CSV, NULL, "/nonexistent/gnuplot", NULL, err, sizeof err);
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
                  "q_drop\n");
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

Test(report, markdown) {
    Fx fx;
    fixture(&fx);
    char err[1024], *log;
    int rc = run_report(&fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
    cr_assert_eq(rc, 0, "%s\n%s", err, log);
    char *md = out_file(&fx, "report.md");
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
                   "`baseline`.\n\n| variant ");
    /* under the table: the Holm family (this sweep alone) and the minimum detectable effect */
    assert_has(md, "|\n\nHolm–Bonferroni family: the 4 contrasts with a p of this table (no other sweep has the same "
                   "baseline runs). Minimum detectable effect: with n = 3 seed pairs this table detects |Δ| ≥ ");
    /* exact rows: mean ± std, Δ, CI, test, raw and Holm p, TOST p and verdict, probes ± std, paper.  TOST p
     * from the t CDF in closed form (df 2: 1/2 + t / (2 sqrt(t^2 + 2)); df 4: 1/2 + 3x/4 (1 - x^2/3) with x = t
     * / sqrt(t^2 + 4)) at (|Δ| - 0.02) / se, se = sd_d / sqrt(3) (paired) or Welch's sqrt(2 0.02^2 / 3) */
    char row[512];
    assert_has(md, "| variant | n | div | val loss | val PPL | Δ loss | 95% CI of Δ | test | p | p (Holm) | p (TOST) | "
                   "verdict | F-Attn | M-Act | gate | spikes | +params | tok/s | paper PPL | paper ΔPPL | paper gate | "
                   "paper M-Act | paper F-Attn |\n|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|--:|--:|--:|--:|--:|"
                   "--:|--:|--:|--:|--:|--:|\n");
    assert_has(md, "| baseline | 3 | 0 | 1.5200 ± 0.0200 | 4.573 ± 0.091 | (baseline) | – | – | – | – | – | – "
                   "| 0.3200 ± 0.0200 | 12.00 ± 2.00 | – | 2.0 | 0 | 1010 | 6.026 | +0.000 | – | 1053 | 0.467 |");
    /* paired: p 0.00274, Holm 4 x 0.00274 = 0.011 < 0.05: `*`, differs; TOST at t = 9 sqrt(3) */
    snprintf(row, sizeof row,
             "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 | 4.096 ± 0.041 | -0.1100* | [-0.1348, -0.0852] "
             "| paired (3) | 0.003 | 0.011 | %.3f | differs | 0.0600 ± 0.0100 | 5.00 ± 1.00 | 0.250 ± 0.050 | 0.0 "
             "| 4096 | 1110 | 5.761 | -0.265 | 0.116 | 94 | 0.048 |",
             0.5 + 9 * sqrt(3) / (2 * sqrt(243 + 2)));
    assert_has(md, row);
    /* Δ +0.01, sd_d 0.02: TOST at t = (0.01 - 0.02) / (0.02 / sqrt 3) = -sqrt(3) / 2 */
    snprintf(row, sizeof row,
             "| G1-headwise | 3 | 0 | 1.5300 ± 0.0400 | 4.621 ± 0.185 | +0.0100 | [-0.0397, +0.0597] "
             "| paired (3) | 0.478 | 0.478 | %.3f | inconclusive | 0.1100 ± 0.0100 | 8.00 ± 1.00 | 0.350 ± 0.050 "
             "| 0.0 | 64 | 1210 | 5.792 | -0.234 | 0.172 | 98 | 0.073 |",
             0.5 - sqrt(3) / 2 / (2 * sqrt(0.75 + 2)));
    assert_has(md, row);
    /* raw p < 0.05 but not after Holm: no `*`; TOST at t = sqrt(3) */
    snprintf(row, sizeof row,
             "| G1-silu | 3 | 0 | 1.4900 ± 0.0100 | 4.437 ± 0.044 | -0.0300 | [-0.0548, -0.0052] "
             "| paired (3) | 0.035 | 0.105 | %.3f | inconclusive | 0.0900 ± 0.0100 | 7.00 ± 1.00 | 0.450 ± 0.050 |",
             0.5 + sqrt(3) / (2 * sqrt(5)));
    assert_has(md, row);
    /* no common seed: Welch (df 4); TOST at t = 0.03 / sqrt(2 x 0.0004 / 3) */
    double tw = 0.03 / sqrt(2 * 0.0004 / 3), xw = tw / sqrt(tw * tw + 4);
    snprintf(row, sizeof row,
             "| more-q-heads | 3 | 0 | 1.4700 ± 0.0200 | 4.350 ± 0.087 | -0.0500 | [-0.0953, -0.0047] "
             "| Welch | 0.038 | 0.105 | %.3f | inconclusive | 0.2600 ± 0.0100 | 12.00 ± 1.00 | – | 0.0 | 8192 | 1410 "
             "| 5.953 |",
             0.5 + 0.75 * xw * (1 - xw * xw / 3));
    assert_has(md, row);
    assert_lacks(md, "+0.0100*");
    assert_lacks(md, "-0.0300*");
    assert_lacks(md, "| 4.350 ± 0.087 | -0.0500*");
    /* the lr sweep: lr-matched Δ, a vs column, divergence counts and Fisher's p */
    assert_has(md, "20 runs: 18 finished, 2 diverged. Baseline row: `lr=0.001,position=none`. Rows differ in "
                   "`train.lr`, so Δ is lr-matched: each row against the row with the configuration of the baseline row "
                   "`lr=0.001,position=none` (every key but `train.lr`, `train.min_lr`, `train.seed`) at the row's own "
                   "`train.lr` (column vs; those reference rows are marked `(lr baseline)`); 1 row with no such row "
                   "(marked `(no lr match)`) is compared with `lr=0.001,position=none` instead.\n");
    /* lr and lrv hold the same runs: one family of the 3 distinct contrasts, not 6 */
    assert_has(md, "Holm–Bonferroni family: 3 distinct contrasts with a p over the sweeps `lr` and `lrv`, whose "
                   "baseline rows are the same runs (a contrast shown in several of their tables is counted once).");
    assert_has(md, "| variant | n | div | val loss | val PPL | Δ loss | vs | 95% CI of Δ | test | p | p (Holm) | "
                   "p (TOST) | verdict | div/total | p (div, Fisher) | F-Attn |");
    assert_has(md, "| lr=0.001,position=none | 4 | 0 | 2.0750 ± 0.0645 | 7.977 ± 0.515 | (baseline) | – | – | – | – "
                   "| – | – | – | 0/4 | – | 0.1000 ± 0.0000 | 5.00 ± 0.00 | – | 0.0 | 0 | 500 | – | – | – | – | – |");
    assert_has(md, "| lr=0.01,position=none | 2 | 2 | 2.5500 ± 0.0707 | 12.823 ± 0.906 | (lr baseline) | – | – | – "
                   "| – | – | – | – | 2/4 | – |");
    assert_has(md, "| lr=0.001,position=sdpa | 4 | 0 | 1.9800 ± 0.0594 | 7.252 ± 0.424 | -0.0950* "
                   "| lr=0.001,position=none | [-0.1255, -0.0645] | paired (4) | 0.002 | 0.007 | ");
    assert_has(md, " | differs | 0/4 | 1.000 |");
    /* against its own lr's baseline, on the 2 seeds both finished: -0.725, not -0.2 against the baseline row;
     * TOST (df 1, Cauchy: 1/2 + atan(t) / pi) at t = (0.725 - 0.02) / 0.025 */
    snprintf(row, sizeof row,
             "| lr=0.01,position=sdpa | 4 | 0 | 1.8750 ± 0.0645 | 6.531 ± 0.421 | -0.7250* "
             "| lr=0.01,position=none | [-1.0427, -0.4073] | paired (2) | 0.022 | 0.022 | %.3f | differs | 0/4 "
             "| 0.429 |",
             0.5 + atan(0.705 / 0.025) / M_PI);
    assert_has(md, row);
    assert_has(md, "| lr=0.003,position=sdpa | 4 | 0 | 2.0250 ± 0.0520 | 7.584 ± 0.392 | -0.0500* "
                   "| lr=0.001,position=none (no lr match) | [-0.0725, -0.0275] | paired (4) | 0.006 | 0.012 | ");
    assert_has(md, " | differs | 0/4 | 1.000 | 0.1000 ± 0.0000 | 5.00 ± 0.00 | 0.500 ± 0.000 | 0.0 | 4096 | 500 | – "
                   "| – | – | – | – |");
    /* the variants-style labels give the same rows */
    snprintf(row, sizeof row,
             "| G1-lr1.0e-2 | 4 | 0 | 1.8750 ± 0.0645 | 6.531 ± 0.421 | -0.7250* | baseline-lr1.0e-2 "
             "| [-1.0427, -0.4073] | paired (2) | 0.022 | 0.022 | %.3f | differs | 0/4 | 0.429 |",
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
                  "paper_gate_mean,paper_m_act,paper_f_attn,holm_family_size,p_tost,tost_margin,verdict\n");
    assert_has(c, "\nmain,baseline,0,1,3,0,3,1.52,0.02,4.572834845,0.09145212439,reference,,,,,,,,,,,,0.32,0.02,12,2,,,"
                  "2,0,1010,0.003,3,,6.026,0,,1053,0.467,,,,\n");
    /* paired: t -19.0525588832576502, p 0.00274348939442592404, Holm 0.0109739575777036961 (mpmath) */
    assert_has(c, "\nmain,G1-elementwise,3,0,3,0,3,1.41,0.01,4.096091937,0.04096040737,baseline,baseline,-0.11,"
                  "-0.1348413771,-0.08515862288,paired,3,-19.05255888,2,0.002743489394,0.01097395758,1,0.06,0.01,5,1,"
                  "0.25,0.05,0,4096,1110,0.003,3,,5.761,-0.265,0.116,94,0.048,4,");
    assert_has(c, ",0.02,differs\n");
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
    assert_has(c, ",0.02,inconclusive\n");
    /* Welch (no common seed): p 0.0375901115111464697, Holm max(0.1053, 2 x p) = 0.1053 */
    assert_has(c, "\nmain,more-q-heads,12,0,3,0,3,1.47,0.02,4.349815058,0.08699195165,baseline,baseline,-0.05,"
                  "-0.09533915871,-0.004660841289,welch,,-3.061862178,4,0.03759011151,0.1052961559,0,0.26,0.01,12,1,"
                  ",,0,8192,1410,0.003,3,,5.953,-0.073,,,,4,");
    free(c);
    c = out_file(&fx, "lr.csv");
    /* labels holding a comma are quoted; the lr baseline is a reference; lr-matched Δ against it with
     * Fisher's p 3/7 for 0/4 against 2/4 diverged; the row without a baseline at its lr falls back */
    assert_has(c, "\nlr,\"lr=0.01,position=none\",4,0,2,2,4,2.55,0.07071067812,12.823116,0.9059763733,reference,,,,,,,"
                  ",,,,,0.1,0,5,0,,,0,0,500,0.01,4,,,,,,,,,,\n");
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
    assert_has(t, "\\begin{tabular}{lrrrrrrlrrrlrrrrrrrrrrr}\n\\toprule\n"
                  " & \\multicolumn{17}{c}{this suite} & \\multicolumn{5}{c}{paper (15B MoE)} \\\\\n"
                  "\\cmidrule(lr){2-18}\\cmidrule(lr){19-23}\n"
                  "variant & $n$ & div & val loss & val PPL & $\\Delta$ loss & 95\\% CI of $\\Delta$ & test & $p$ & "
                  "$p_{\\mathrm{Holm}}$ & $p_{\\mathrm{TOST}}$ & verdict & F-Attn & M-Act & gate & spikes & +params & "
                  "tok/s & PPL & $\\Delta$PPL & gate & M-Act & F-Attn \\\\\n\\midrule\n");
    assert_has(t, "\\bottomrule\n\\end{tabular}\n");
    char row[512];
    snprintf(row, sizeof row,
             "G1-elementwise & 3 & 0 & 1.4100 $\\pm$ 0.0100 & 4.096 $\\pm$ 0.041 & -0.1100$^{*}$ & "
             "[-0.1348, -0.0852] & paired (3) & 0.003 & 0.011 & %.3f & differs & 0.0600 $\\pm$ 0.0100 & "
             "5.00 $\\pm$ 1.00 & 0.250 $\\pm$ 0.050 & 0.0 & 4096 & 1110 & 5.761 & -0.265 & 0.116 & 94 & 0.048 \\\\\n",
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
    assert_has(t, "\\begin{tabular}{lrrrrrlrlrrrlrrrrrrrrrrrrr}\n\\toprule\n"
                  " & \\multicolumn{20}{c}{this suite} & \\multicolumn{5}{c}{paper (15B MoE)} \\\\\n"
                  "\\cmidrule(lr){2-21}\\cmidrule(lr){22-26}\n");
    snprintf(row, sizeof row,
             "lr=0.01,position=sdpa & 4 & 0 & 1.8750 $\\pm$ 0.0645 & 6.531 $\\pm$ 0.421 & -0.7250$^{*}$ & "
             "lr=0.01,position=none & [-1.0427, -0.4073] & paired (2) & 0.022 & 0.022 & %.3f & differs & 0/4 & "
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
    ReportOpts o = {db, NULL, REPORT_MD, fx.out, 1, NULL, NULL, NULL, 0};
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
                   "| F-Attn/unif | sink heads (%) | paper F-Attn |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    assert_has(md, "| baseline | 51.2k | 128 | 100 | 50 | 2/2 | 0.650 ± 0.071 | L1.H0 | 8.50 ± 0.71 | 25.0 ± 0.0 "
                   "| 0.467 |\n");
    assert_has(md, "| G1-elementwise | 51.2k | 128 | no | 100 | 1/2 | 0.425 ± 0.177 | L0.H1 | 2.50 ± 0.71 "
                   "| 12.5 ± 17.7 | 0.048 |\n");
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
    /* the bands: one per row, all before the first line */
    const char *band = "using 1:($2-$3):($2+$3) with filledcurves";
    int nband = 0;
    for (const char *p = d; (p = strstr(p, band)); p++) nband++;
    cr_assert_eq(nband, NR, "%s", d);
    cr_assert(strstr(d, band) < strstr(d, "with linespoints"), "%s", d);
    assert_has(d, "notitle");
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
    assert_lacks(strstr(md, cap) + 1, cap); /* sweep many only */
    assert_has(md, "**F-Attn per layer (last step, mean over seeds; error bars: std)**");
    assert_has(md, "**M-Act per layer (last step, mean over seeds; error bars: std; log scale)**");
    assert_has(md, "**Validation loss against step (mean over seeds)**"); /* sweep single */
    free(md);
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
                  "holm_family_size,p_tost,tost_margin,verdict\n");
    assert_has(c, ",0.467,0.25,0,8.5,0.7071067812,,,,\n");
    free(c);
    c = out_file(&fx, "sink-sink.csv");
    assert_has(c, "sweep,label,seed,run_id,tokens,seq_len,first_sink_step,max_head_f_attn,max_layer,max_head,"
                  "f_attn_rel,sink_head_share\n");
    assert_has(c, ",51200,128,100,0.6,1,0,8,0.25\n");
    assert_has(c, ",51200,128,50,0.7,1,0,9,0.25\n");
    assert_has(c, ",51200,128,,0.3,0,1,2,0\n");
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
    assert_has(t, "\\begin{tabular}{lrrrrrrrrrr}\n\\toprule\nvariant & tokens/run & seq\\_len & seed 1 & seed 2 & "
                  "formed & max head F-Attn & where & F-Attn/unif & sink heads (\\%) & paper F-Attn \\\\\n\\midrule\n"
                  "baseline & 51.2k & 128 & 100 & 50 & 2/2 & 0.650 $\\pm$ 0.071 & L1.H0 & 8.50 $\\pm$ 0.71 & "
                  "25.0 $\\pm$ 0.0 & 0.467 \\\\\n");
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

/* ------------------------------------------------------------------ */
/* untrusted text from the database                                    */
/* ------------------------------------------------------------------ */

static void fx_sql(Fx *fx, const char *sql) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(fx->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

static int raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return 1;
    return 0;
}

/* Every line of the plot scripts matching glob (quoted into a shell
 * command: no quote in it) is the report's own: none starts a shell line
 * ('!') or holds a control byte; more than min_lines lines in all. */
static void assert_plot_scripts_clean(const char *dir, const char *glob, int min_lines) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat '%s'/plots/%s", dir, glob);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char line[4096];
    int nlines = 0;
    while (fgets(line, sizeof line, p)) {
        nlines++;
        cr_assert_neq(line[0], '!', "a shell line in a plot script: %s", line);
        cr_assert(!raw_control(line), "a control byte in a plot script: %s", line);
    }
    cr_assert_eq(pclose(p), 0);
    cr_assert_gt(nlines, min_lines);
}

static int lines_of(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
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

/* ------------------------------------------------------------------ */
/* stored JSON                                                         */
/* ------------------------------------------------------------------ */

static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
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
                    "| BOS attn trigger (head) | prev attn trigger (head) | value drain (head) | residual peak "
                    "| gate trigger | gate other |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    assert_has(sec, "\n| baseline | 2 | L1.H0 | 0.6000 ± 0.1414 | 2.0500 ± 0.0707 | 0.700 ± 0.141 | 0.350 ± 0.071 "
                    "| 0.030 ± 0.014 | 0.850 ± 0.071 | 0.250 ± 0.071 | 4.00 ± 1.41 | – | – |\n");
    assert_has(sec, "\n| G1 'q' \"d\"\\\\x0a!touch PWNED | 2 | L0.H1 | 0.3500 ± 0.0707 | 1.9250 ± 0.0354 | 0.350 ± 0.071 "
                    "| 0.110 ± 0.014 | 0.250 ± 0.071 | 0.550 ± 0.071 | 1.200 ± 0.141 | 1.10 ± 0.14 | 0.250 ± 0.071 "
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
    assert_has(t, "\\begin{tabular}{lrrrrrrrrrrrr}\n\\toprule\nvariant & seeds & head & loss trigger & ");
    assert_has(t, "\nbaseline & 2 & L1.H0 & 0.6000 $\\pm$ 0.1414 & 2.0500 $\\pm$ 0.0707 & 0.700 $\\pm$ 0.141 & "
                  "0.350 $\\pm$ 0.071 & 0.030 $\\pm$ 0.014 & 0.850 $\\pm$ 0.071 & 0.250 $\\pm$ 0.071 & "
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

/* The plots of the section: attention on BOS of each run's BB head and
 * the two losses against step (a line per row and query type: other
 * solid, trigger dashed, one colour per row; a ±std band), and the gated
 * row's gate-score histograms by query type (summed over seeds, shares);
 * the hostile label quoted, no shell line in any script. */
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
    if (have_gnuplot()) {
        cr_assert_eq(run_report(&fx, REPORT_MD, "bb", NULL, &log, err, sizeof err), 0, "%s\n%s", err, log);
        free(log);
        static const char *const imgs[] = {"bb-bb-bos", "bb-bb-loss", "bb-bb-gate-1-G1__q___d__x0a_touch_PWNED"};
        for (size_t i = 0; i < 3; i++)
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
