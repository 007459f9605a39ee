/*
 * test_report.c — `gated report`: the Student-t distribution and Welch's
 * test against reference values (computed with mpmath at 30 digits), and
 * the report itself on a fixture database built here through the store
 * API: exact numbers in the md, csv and tex tables (means, sample stds, Δ,
 * its interval and p, the `*` mark, the paper column), the plot data files
 * (last step only, means and histogram sums over seeds, the lr sweep with
 * its diverged run) and, where gnuplot exists, the SVG / PNG images; the
 * report without gnuplot; and exit status 2 with its message for a missing
 * or corrupt database and an unknown sweep (in process, and through
 * GATED_BIN when it is set).
 *
 * Fixture (two sweeps; every value chosen so the expected numbers are
 * exact):
 *   sweep "main", baseline row "baseline", seeds 1..3 per row:
 *     baseline        val loss 1.50 1.52 1.54   (mean 1.52, std 0.02)
 *     G1-elementwise  val loss 1.40 1.41 1.42   (mean 1.41, std 0.01; Δ -0.11, clearly separated)
 *     G1-headwise     val loss 1.49 1.53 1.57   (mean 1.53, std 0.04; Δ +0.01, overlapping)
 *   sweep "lr" (grid over train.lr and gate position, seeds 1, 2), the
 *     run lr=0.01,position=none seed 2 diverged; sweep "lrv", the same runs
 *     labelled as variants ("baseline-lr1.0e-3").
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "paper.h"
#include "report.h"
#include "store.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    char dir[64], db[128], out[128];
} Fx;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

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

static void fixture(Fx *fx) {
    strcpy(fx->dir, "/tmp/test_report_XXXXXX");
    cr_assert(mkdtemp(fx->dir), "mkdtemp: %s", strerror(errno));
    snprintf(fx->db, sizeof fx->db, "%s/fx.db", fx->dir);
    snprintf(fx->out, sizeof fx->out, "%s/out", fx->dir);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, fx->db, err, sizeof err), 0, "%s", err);

    /* sweep main */
    static const char *const labels[3] = {"baseline", "G1-elementwise", "G1-headwise"};
    static const char *const pos[3] = {"none", "sdpa", "sdpa"};
    static const char *const gran[3] = {"elementwise", "elementwise", "headwise"};
    static const double vl[3][3] = {{1.50, 1.52, 1.54}, {1.40, 1.41, 1.42}, {1.49, 1.53, 1.57}};
    static const double fa[3][3] = {{0.30, 0.32, 0.34}, {0.05, 0.06, 0.07}, {0.10, 0.11, 0.12}};
    static const double ma[3][3] = {{10, 12, 14}, {4, 5, 6}, {7, 8, 9}};
    static const double ga[3][3] = {{NAN, NAN, NAN}, {0.20, 0.25, 0.30}, {0.30, 0.35, 0.40}};
    static const double gp[3] = {0, 4096, 64};
    char ids[9][17], names[9][64];
    StoreSweepRun sr[9];
    for (int v = 0; v < 3; v++)
        for (int k = 0; k < 3; k++) {
            int i = v * 3 + k;
            char json[256];
            snprintf(json, sizeof json,
                     "{\"model.gate.position\":\"%s\",\"model.gate.granularity\":\"%s\",\"train.lr\":0.003,"
                     "\"train.min_lr\":0.0003,\"train.seed\":%d}",
                     pos[v], gran[v], k + 1);
            snprintf(names[i], sizeof names[i], "main-%s-s%d", labels[v], k + 1);
            add_run(s, json, names[i], k + 1, "finished", vl[v][k], fa[v][k], ma[v][k], ga[v][k],
                    v == 0 ? (double)(k + 1) : 0, gp[v], 1000 + 100 * v + 10 * k, ids[i]);
            sr[i] = (StoreSweepRun){ids[i], labels[v], k + 1, i, v == 0};
        }
    cr_assert_eq(store_sweep_record(s, "main", 9, sr, 9), 0, "%s", store_errmsg(s));

    /* sweep lr: lr x position, seeds 1, 2; one diverged run */
    static const double lrs[2] = {0.001, 0.01};
    static const double lvl[2][2][2] = {{{2.0, 2.1}, {2.5, NAN}}, {{1.9, 2.0}, {1.8, 1.85}}};
    char lids[8][17], llab[4][64];
    StoreSweepRun lsr[8];
    for (int p = 0; p < 2; p++)
        for (int l = 0; l < 2; l++) {
            int row = p * 2 + l;
            snprintf(llab[row], sizeof llab[row], "lr=%g,position=%s", lrs[l], p ? "sdpa" : "none");
            for (int k = 0; k < 2; k++) {
                int i = row * 2 + k;
                char json[256], name[96];
                snprintf(json, sizeof json,
                         "{\"model.gate.position\":\"%s\",\"train.lr\":%g,\"train.min_lr\":%g,\"train.seed\":%d}",
                         p ? "sdpa" : "none", lrs[l], lrs[l] / 10, k + 1);
                snprintf(name, sizeof name, "lr-%d-s%d", row, k + 1);
                double v = lvl[p][l][k];
                add_run(s, json, name, k + 1, isnan(v) ? "diverged" : "finished", v, 0.1, 5, p ? 0.5 : NAN, 0,
                        p ? 4096 : 0, 500, lids[i]);
                lsr[i] = (StoreSweepRun){lids[i], llab[row], k + 1, i, row == 0};
            }
        }
    cr_assert_eq(store_sweep_record(s, "lr", 8, lsr, 8), 0, "%s", store_errmsg(s));
    /* the same runs as a variants-style sweep "lrv" with the lr in the labels */
    static const char *const vlab[4] = {"baseline-lr1.0e-3", "baseline-lr1.0e-2", "G1-lr1.0e-3", "G1-lr1.0e-2"};
    for (int i = 0; i < 8; i++) lsr[i].label = vlab[i / 2];
    cr_assert_eq(store_sweep_record(s, "lrv", 8, lsr, 8), 0, "%s", store_errmsg(s));
    store_close(s);
}

static void fx_rm(Fx *fx) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    cr_assert_eq(system(cmd), 0);
}

/* report_run into fx->out; log captured into *logtext (may be NULL). */
static int run_report(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, char **logtext, char *err,
                      size_t cap) {
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    ReportOpts o = {fx->db, sweep, fmt, fx->out, 0, gnuplot, log, NULL};
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

static char *out_file(Fx *fx, const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", fx->out, name);
    return slurp(p);
}

/* ------------------------------------------------------------------ */
/* statistics                                                          */
/* ------------------------------------------------------------------ */

Test(report, t_distribution) {
    /* regularized incomplete beta */
    cr_assert_float_eq(report_betainc(2, 3, 0.5), 0.6875, 1e-12);
    cr_assert_float_eq(report_betainc(0.5, 5, 0.3), 0.934737753831091821, 1e-12);
    cr_assert_float_eq(report_betainc(10, 0.5, 0.9), 0.151640909634709969, 1e-12);
    cr_assert_eq(report_betainc(2, 3, 0), 0);
    cr_assert_eq(report_betainc(2, 3, 1), 1);
    cr_assert(isnan(report_betainc(-1, 3, 0.5)));
    /* two-sided p-values */
    cr_assert_float_eq(report_t_p2(2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(report_t_p2(-2.0, 5), 0.101939478829858369, 1e-10);
    cr_assert_float_eq(report_t_p2(2.776, 4), 0.0500227783199764076, 1e-10);
    cr_assert_float_eq(report_t_p2(1.0, 1), 0.5, 1e-12);  /* Cauchy */
    cr_assert_float_eq(report_t_p2(1.96, 1e6), 0.0499960675828293641, 1e-9);
    cr_assert_float_eq(report_t_p2(0, 3), 1.0, 1e-15);
    cr_assert_eq(report_t_p2(INFINITY, 3), 0);
    /* CDF and quantiles */
    cr_assert_float_eq(report_t_cdf(2.0, 5), 1 - 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(report_t_cdf(-2.0, 5), 0.101939478829858369 / 2, 1e-10);
    cr_assert_float_eq(report_t_cdf(0, 7), 0.5, 1e-15);
    cr_assert_float_eq(report_t_quantile(0.975, 4), 2.77644510519779349, 1e-9);
    cr_assert_float_eq(report_t_quantile(0.975, 10), 2.22813885198627422, 1e-9);
    cr_assert_float_eq(report_t_quantile(0.025, 10), -2.22813885198627422, 1e-9);
    cr_assert_float_eq(report_t_quantile(0.5, 3), 0, 1e-12);
}

Test(report, welch) {
    const double base[3] = {1.50, 1.52, 1.54}, g1[3] = {1.40, 1.41, 1.42}, hw[3] = {1.49, 1.53, 1.57};
    double m, sd;
    report_mean_std(base, 3, &m, &sd);
    cr_assert_float_eq(m, 1.52, 1e-12);
    cr_assert_float_eq(sd, 0.02, 1e-12);
    report_mean_std(base, 1, &m, &sd);
    cr_assert(m == 1.50 && isnan(sd));
    Welch w;
    cr_assert_eq(report_welch(g1, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.diff, -0.11, 1e-12);
    cr_assert_float_eq(w.t, -8.52056336165631654, 1e-9);
    cr_assert_float_eq(w.df, 2.94117647058823529, 1e-9); /* 50/17 */
    cr_assert_float_eq(w.p, 0.00365995558368264891, 1e-10);
    cr_assert_float_eq(w.lo, -0.151553995031825180, 1e-9);
    cr_assert_float_eq(w.hi, -0.0684460049681750155, 1e-9);
    cr_assert_eq(report_welch(hw, 3, base, 3, &w), 0);
    cr_assert_float_eq(w.p, 0.724856169924420301, 1e-10);
    cr_assert_float_eq(w.lo, -0.0731079900636501556, 1e-9);
    cr_assert_float_eq(w.hi, 0.0931079900636501734, 1e-9);
    /* too few runs; zero variance */
    cr_assert_eq(report_welch(hw, 1, base, 3, &w), -1);
    const double c1[2] = {1, 1}, c2[2] = {2, 2};
    cr_assert_eq(report_welch(c1, 2, c2, 2, &w), 0);
    cr_assert(w.p == 0 && w.lo == -1 && w.hi == -1);
    cr_assert_eq(report_welch(c1, 2, c1, 2, &w), 0);
    cr_assert(w.p == 1);
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
    assert_has(md, "- runs: 17 (16 finished, 1 diverged)");
    assert_has(md, "- code versions: `test-v1` (17 runs)");
    assert_has(md, "- generated: ");
    assert_has(md, "15B-parameter MoE on 400B tokens");
    assert_has(md, "## Sweep `main`");
    assert_has(md, "## Sweep `lr`");
    assert_has(md, "## Sweep `lrv`");
    assert_has(md, "9 runs: 9 finished. Baseline row: `baseline`.");
    assert_has(md, "8 runs: 7 finished, 1 diverged.");
    /* exact rows: mean ± std, Δ (with * only for the separated variant), CI, p, probes, paper */
    assert_has(md, "| baseline | 3 | 0 | 1.5200 ± 0.0200 | 4.573 ± 0.091 | (baseline) | – | – | 0.3200 | 12.00 | – "
                   "| 2.0 | 0 | 1010 | 6.026 | +0.000 | – | 1053 | 0.467 |");
    assert_has(md, "| G1-elementwise | 3 | 0 | 1.4100 ± 0.0100 | 4.096 ± 0.041 | -0.1100* | [-0.1516, -0.0684] "
                   "| 0.004 | 0.0600 | 5.00 | 0.250 | 0.0 | 4096 | 1110 | 5.761 | -0.265 | 0.116 | 94 | 0.048 |");
    assert_has(md, "| G1-headwise | 3 | 0 | 1.5300 ± 0.0400 | 4.621 ± 0.185 | +0.0100 | [-0.0731, +0.0931] "
                   "| 0.725 | 0.1100 | 8.00 | 0.350 | 0.0 | 64 | 1210 | 5.792 | -0.234 | 0.172 | 98 | 0.073 |");
    assert_lacks(md, "+0.0100*");
    /* the lr sweep: a diverged run counted apart; n = 1 gives no std, CI or p; unknown labels no paper value */
    assert_has(md, "| lr=0.01,position=none | 1 | 1 | 2.5000 | 12.182 | +0.4500 | – | – |");
    assert_has(md, "| lr=0.001,position=sdpa | 2 | 0 | 1.9500 ± 0.0707 |");
    assert_has(md, "| 500 | – | – | – | – | – |");
    assert_has(md, "Attention heatmap (baseline vs G1, first-token column): skipped — it needs per-position "
                   "attention data");
    assert_has(md, "Val loss against learning rate: not drawn");

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
    assert_has(d, "# position=none: lr, mean final val loss, std, finished runs\n0.001 2.05 0.07071067812 2\n"
                  "0.01 2.5 0 1\n");
    assert_has(d, "# position=sdpa: lr, mean final val loss, std, finished runs\n0.001 1.95 0.07071067812 2\n"
                  "0.01 1.825 0.03535533906 2\n");
    assert_has(d, "# diverged runs: lr, drawn at, series\n0.01 ");
    free(d);
    d = out_file(&fx, "plots/lr-lr.gp");
    assert_has(d, "set logscale x");
    assert_has(d, "index 0 using 1:2:3 with yerrorlines title 'position=none'");
    assert_has(d, "index 1 using 1:2:3 with yerrorlines title 'position=sdpa'");
    assert_has(d, "title 'diverged'");
    free(d);
    d = out_file(&fx, "plots/lrv-lr.gp"); /* series named by the labels without their lr */
    assert_has(d, "index 0 using 1:2:3 with yerrorlines title 'baseline'");
    assert_has(d, "index 1 using 1:2:3 with yerrorlines title 'G1'");
    free(d);

    if (have_gnuplot()) {
        static const char *const imgs[] = {"main-val_loss", "main-f_attn", "main-m_act", "main-gate-1-G1-elementwise",
                                           "main-gate-2-G1-headwise", "lr-lr", "lr-val_loss"};
        for (size_t i = 0; i < sizeof imgs / sizeof imgs[0]; i++) {
            snprintf(p, sizeof p, "%s/plots/%s.png", fx.out, imgs[i]);
            cr_assert(exists(p), "%s missing", p);
            char *png = slurp(p);
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
                  "val_ppl_std,delta_val_loss,delta_ci_lo,delta_ci_hi,welch_t,welch_df,p_value,significant,");
    assert_has(c, "\nmain,baseline,0,1,3,0,3,1.52,0.02,4.572834845,0.09145212439,,,,,,,,0.32,12,,2,0,1010,6.026,0,,"
                  "1053,0.467\n");
    assert_has(c, "\nmain,G1-elementwise,3,0,3,0,3,1.41,0.01,4.096091937,0.04096040737,-0.11,-0.151553995,"
                  "-0.06844600497,-8.520563362,2.941176471,0.003659955584,1,0.06,5,0.25,0,4096,1110,5.761,-0.265,"
                  "0.116,94,0.048\n");
    assert_has(c, "\nmain,G1-headwise,6,0,3,0,3,1.53,0.04,");
    assert_has(c, ",0.01,-0.07310799006,0.09310799006,0.3872983346,2.941176471,0.7248561699,0,0.11,8,0.35,0,64,1210,"
                  "5.792,");
    free(c);
    c = out_file(&fx, "lr.csv");
    /* labels holding a comma are quoted */
    assert_has(c, "\nlr,\"lr=0.01,position=none\",2,0,1,1,2,2.5,,12.18249396,,0.45,,,,,,,");
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
    assert_has(t, "\\begin{tabular}{lrrrrrrrrrrrrrrrrrr}\n\\toprule\n");
    assert_has(t, "\\midrule\n");
    assert_has(t, "\\bottomrule\n\\end{tabular}\n");
    assert_has(t, "G1-elementwise & 3 & 0 & 1.4100 $\\pm$ 0.0100 & 4.096 $\\pm$ 0.041 & -0.1100$^{*}$ & "
                  "[-0.1516, -0.0684] & 0.004 & 0.0600 & 5.00 & 0.250 & 0.0 & 4096 & 1110 & 5.761 & -0.265 & 0.116 & "
                  "94 & 0.048 \\\\\n");
    assert_has(t, "G1-headwise & 3 & 0 & 1.5300 $\\pm$ 0.0400 & 4.621 $\\pm$ 0.185 & +0.0100 & ");
    free(t);
    char p[256];
    snprintf(p, sizeof p, "%s/lr.tex", fx.out);
    cr_assert(!exists(p), "--sweep main wrote the lr sweep");
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
    ReportOpts o = {db, NULL, REPORT_MD, fx.out, 1, NULL, NULL, NULL};
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
            {"--db '%s/fx.db' --bogus", "unknown or incomplete option '--bogus'"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char args[512];
            snprintf(args, sizeof args, cases[i].args, fx.dir);
            snprintf(cmd, sizeof cmd, "'%s' report %s --out '%s/cli' > '%s/cli.out' 2>&1", bin, args, fx.dir, fx.dir);
            int st = system(cmd);
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", cmd, st);
            snprintf(cmd, sizeof cmd, "%s/cli.out", fx.dir);
            char *out = slurp(cmd);
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
    }
    fx_rm(&fx);
}
