/*
 * report_fx.c — the fixtures and helpers of the `gated report` suites
 * (test_report*.c): a database built through the store API in a fresh
 * directory, the report run on it in process, and readers of its output.
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
#include "lab/report/report.h"
#include "testutil.h"
#include "lab/stats.h"
#include "run/store.h"
#include "report_fx.h"

const Provenance PROV = {"testhost", "testcpu", "cc", "-O0", "0", "3", "0.2", "test-v1", 0};

int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

int have_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

/* One run: config, status, final val loss (NAN: none), probes. */
void add_run(Store *s, const char *json, const char *name, long long seed, const char *status, double vl,
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
Store *fx_open(Fx *fx) {
    strcpy(fx->dir, "/tmp/test_report_XXXXXX");
    cr_assert(mkdtemp(fx->dir), "mkdtemp: %s", strerror(errno));
    snprintf(fx->db, sizeof fx->db, "%s/fx.db", fx->dir);
    snprintf(fx->out, sizeof fx->out, "%s/out", fx->dir);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, fx->db, err, sizeof err), 0, "%s", err);
    return s;
}

void fixture(Fx *fx) {
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

void fx_rm(Fx *fx) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    cr_assert_eq(system(cmd), 0);
}

/* report_run into fx->out; log captured into *logtext (may be NULL). */
int run_report_opts(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, int no_plots,
                    char **logtext, char *err, size_t cap) {
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    ReportOpts o = {fx->db, sweep, fmt, fx->out, no_plots, gnuplot, log, NULL, 0, NULL, NULL};
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

int run_report(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, char **logtext, char *err,
               size_t cap) {
    return run_report_opts(fx, fmt, sweep, gnuplot, 0, logtext, err, cap);
}

char *out_file(Fx *fx, const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", fx->out, name);
    return test_read_file(p, NULL);
}

/* Field `col` (named in the header, the first line) of the line of CSV
 * text that starts with prefix, into out (unquoted fields only); "" and
 * an assertion failure when there is no such line or column. */
void csv_field(const char *text, const char *prefix, const char *col, char *out, size_t cap) {
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
double csv_num_of(const char *text, const char *prefix, const char *col) {
    char buf[64];
    csv_field(text, prefix, col, buf, sizeof buf);
    return *buf ? strtod(buf, NULL) : NAN;
}

/* The look (" lc ... dt ...[ pt ...]", up to " title") of the plot clause
 * "index N using COLS with STYLE" of a gnuplot script, into out ("" when
 * there is no such clause or it sets no colour). */
void gp_look_of(const char *gp, int index, const char *cols_style, char *out, size_t cap) {
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

/* The text of report.md's section of sweep `name` (up to the next sweep's
 * or the budget section), heap. */
char *md_section(const char *md, const char *name) {
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

/* ------------------------------------------------------------------ */
/* untrusted text from the database                                    */
/* ------------------------------------------------------------------ */

void fx_sql(Fx *fx, const char *sql) {
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(fx->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

int raw_control(const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return 1;
    return 0;
}

/* Every line of the plot scripts matching glob (quoted into a shell
 * command: no quote in it) is the report's own: none starts a shell line
 * ('!') or holds a control byte; more than min_lines lines in all. */
void assert_plot_scripts_clean(const char *dir, const char *glob, int min_lines) {
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

int lines_of(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

/* ------------------------------------------------------------------ */
/* stored JSON                                                         */
/* ------------------------------------------------------------------ */

int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* The t distribution at df 2 in closed form. */
double cdf_df2(double t) { return 0.5 + t / (2 * sqrt(t * t + 2)); }
double q_df2(double p) { return (2 * p - 1) / sqrt(2 * p * (1 - p)); }
