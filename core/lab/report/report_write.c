/*
 * report_write.c — `gated report`: the main table of each sweep in md
 * (DIR/report.md, with its header, legend and plot links), csv
 * (DIR/SWEEP.csv) and tex (DIR/SWEEP.tex), and the quoting of each format.
 *
 * The md and tex tables share one list of columns (COLS) and one row of
 * cells (cells()); a column may be there only under the lr rule or in a
 * sweep with sink probes.  Labels are the only cells with text from the
 * database: escaped when loaded, quoted again for the format
 * (rep_md_text: Markdown specials backslash-escaped; rep_md_code: code
 * spans with long enough backtick fences; rep_tex_text: TeX specials;
 * tex_comment_label: TeX comments kept to one line; CSV cells:
 * csv_fput_text, util/csv.h).  The csv table holds plain numbers (%.10g,
 * empty when missing).  The sections after the main table are
 * report_sections.c's.
 */
#include "lab/report/report_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/paper.h"
#include "run/probes.h"

/* ================================================================== */
/* quoting                                                             */
/* ================================================================== */

/* A label in a TeX comment: as is, but on one line (a control character
 * as the text \xNN: a line break would end the comment and make the rest
 * TeX input). */
static void tex_comment_label(FILE *f, const char *s) { store_fput_escaped(f, s); }

/* ================================================================== */
/* the main table                                                      */
/* ================================================================== */

/* A number into a cell, or the missing mark. */
static void cellnum(char *dst, size_t cap, double v, const char *fmt, const char *missing) {
    if (isnan(v))
        snprintf(dst, cap, "%s", missing);
    else
        snprintf(dst, cap, fmt, v);
}

/* Table columns (md and tex). */
enum {
    C_LABEL, C_N, C_DIV, C_LOSS, C_PPL, C_DELTA, C_VS, C_CI, C_TEST, C_P, C_PHOLM, C_PTOST, C_VERDICT, C_DIVTOT,
    C_PDIV, C_FATTN, C_MACT, C_GATE, C_SINKS, C_FREL, C_SPIKES, C_PARAMS, C_TPS, C_KERNEL, C_PPPL, C_PDELTA, C_PGATE, C_PMACT,
    C_PFATTN, NCOL
};
enum { NPAPER = NCOL - C_PPPL };
enum { ONLY_LR = 1, ONLY_SINK = 2 };
static const struct {
    const char *md, *tex;
    char align;  /* 'l' or 'r' */
    int only;    /* ONLY_LR: only under the lr rule; ONLY_SINK: only in sweeps with sink probes */
    int text;    /* a label: escaped when written */
} COLS[NCOL] = {
    [C_LABEL] = {"variant", "variant", 'l', 0, 1},
    [C_N] = {"n", "$n$", 'r', 0, 0},
    [C_DIV] = {"div", "div", 'r', 0, 0},
    [C_LOSS] = {"val loss", "val loss", 'r', 0, 0},
    [C_PPL] = {"val PPL", "val PPL", 'r', 0, 0},
    [C_DELTA] = {"Δ loss", "$\\Delta$ loss", 'r', 0, 0},
    [C_VS] = {"vs", "vs", 'l', 1, 1},
    [C_CI] = {"95% CI of Δ", "95\\% CI of $\\Delta$", 'r', 0, 0},
    [C_TEST] = {"test", "test", 'l', 0, 0},
    [C_P] = {"p", "$p$", 'r', 0, 0},
    [C_PHOLM] = {"p (Holm)", "$p_{\\mathrm{Holm}}$", 'r', 0, 0},
    [C_PTOST] = {"p (TOST)", "$p_{\\mathrm{TOST}}$", 'r', 0, 0},
    [C_VERDICT] = {"verdict", "verdict", 'l', 0, 0},
    [C_DIVTOT] = {"div/total", "div/total", 'r', 1, 0},
    [C_PDIV] = {"p (div, Fisher)", "$p_{\\mathrm{div}}$ (Fisher)", 'r', 1, 0},
    [C_FATTN] = {"F-Attn", "F-Attn", 'r', 0, 0},
    [C_MACT] = {"M-Act", "M-Act", 'r', 0, 0},
    [C_GATE] = {"gate", "gate", 'r', 0, 0},
    [C_SINKS] = {"sink heads (%)", "sink heads (\\%)", 'r', ONLY_SINK, 0},
    [C_FREL] = {"F-Attn/unif", "F-Attn/unif", 'r', ONLY_SINK, 0},
    [C_SPIKES] = {"spikes", "spikes", 'r', 0, 0},
    [C_PARAMS] = {"+params", "+params", 'r', 0, 0},
    [C_TPS] = {"tok/s", "tok/s", 'r', 0, 0},
    [C_KERNEL] = {"kernel", "kernel", 'l', 0, 1},
    [C_PPPL] = {"paper PPL", "PPL", 'r', 0, 0},
    [C_PDELTA] = {"paper ΔPPL", "$\\Delta$PPL", 'r', 0, 0},
    [C_PGATE] = {"paper gate", "gate", 'r', 0, 0},
    [C_PMACT] = {"paper M-Act", "M-Act", 'r', 0, 0},
    [C_PFATTN] = {"paper F-Attn", "F-Attn", 'r', 0, 0},
};

static int col_on(const RSweep *s, int c) {
    return COLS[c].only == ONLY_LR ? s->lr_rule : COLS[c].only == ONLY_SINK ? s->has_sink : 1;
}

/* All the table cells of one row, as text for md / tex (missing: miss);
 * text[c] points into buf or at a label (COLS[c].text: to be escaped). */
typedef struct {
    char buf[NCOL][128];
    const char *text[NCOL];
    const char *after[NCOL]; /* written after text, unescaped */
} Cells;

/* pm: " ± " between a mean and its std; pm1: the sign alone. */
static void cells(const R *r, const RSweep *s, int k, const char *pm, const char *pm1, const char *star,
                  const char *miss, int md, Cells *c) {
    const RVar *v = &s->vars[k];
    const size_t cap = sizeof c->buf[0];
    for (int j = 0; j < NCOL; j++) {
        snprintf(c->buf[j], cap, "%s", miss);
        c->text[j] = c->buf[j];
        c->after[j] = "";
    }
    c->text[C_LABEL] = v->label;
    snprintf(c->buf[C_N], cap, "%d", v->n_fin);
    snprintf(c->buf[C_DIV], cap, "%d", v->n_div);
    rep_cell_ms(c->buf[C_LOSS], cap, v->loss_mean, v->loss_std, 4, pm, miss);
    rep_cell_ms(c->buf[C_PPL], cap, v->ppl_mean, v->ppl_std, 3, pm, miss);
    if (k == s->base)
        snprintf(c->buf[C_DELTA], cap, "%s", s->base == s->own_base ? "(baseline)" : "(reference)");
    else if (v->is_ref)
        snprintf(c->buf[C_DELTA], cap, "(lr baseline)");
    else if (v->have_delta)
        snprintf(c->buf[C_DELTA], cap, "%+.4f%s", v->delta, v->have_test && v->p_holm < 0.05 ? star : "");
    if (v->ref >= 0) c->text[C_VS] = s->vars[v->ref].label;
    if (v->rule == RULE_FALLBACK) c->after[C_VS] = " (no lr match)";
    if (v->have_test) {
        snprintf(c->buf[C_CI], cap, "[%+.4f, %+.4f]", v->t.lo, v->t.hi);
        if (v->paired)
            snprintf(c->buf[C_TEST], cap, "paired (%d)", v->n_pairs);
        else
            snprintf(c->buf[C_TEST], cap, "Welch");
        rep_fmt_p(c->buf[C_P], cap, v->t.p);
        rep_fmt_p(c->buf[C_PHOLM], cap, v->p_holm);
        if (!isnan(v->p_tost)) rep_fmt_p(c->buf[C_PTOST], cap, v->p_tost);
        const char *verdict = rep_verdict(r, v);
        char note[112] = ""; /* a claim from a small family says so (report_rank.c) */
        if (strcmp(verdict, "differs") == 0) rep_small_family(r, s->fam_m, note, sizeof note);
        if (strcmp(verdict, "equivalent") == 0)
            snprintf(c->buf[C_VERDICT], cap, "equivalent within %s%g", pm1, r->margin);
        else
            snprintf(c->buf[C_VERDICT], cap, "%s%s", verdict, note);
    }
    snprintf(c->buf[C_DIVTOT], cap, "%d/%d", v->n_div, v->n_div + v->n_fin);
    if (!isnan(v->div_p)) rep_fmt_p(c->buf[C_PDIV], cap, v->div_p);
    rep_cell_ms(c->buf[C_FATTN], cap, v->f_attn, v->f_attn_std, 4, pm, miss);
    rep_cell_ms(c->buf[C_MACT], cap, v->m_act, v->m_act_std, 2, pm, miss);
    rep_cell_ms(c->buf[C_GATE], cap, v->gate_mean, v->gate_std, 3, pm, miss);
    rep_cell_ms(c->buf[C_SINKS], cap, 100 * v->sink_share, 100 * v->sink_share_std, 1, pm, miss);
    rep_cell_ms(c->buf[C_FREL], cap, v->f_attn_rel, v->f_attn_rel_std, 2, pm, miss);
    cellnum(c->buf[C_SPIKES], cap, v->spikes, "%.1f", miss);
    cellnum(c->buf[C_PARAMS], cap, v->gate_params, "%.0f", miss);
    rep_tps_cell(c->buf[C_TPS], cap, v, md ? "–" : "--", md ? "†" : "$^{\\dagger}$", miss);
    if (v->kernels[0]) c->text[C_KERNEL] = v->kernels;
    const PaperRow *pr = paper_lookup(v->label);
    double nan = NAN;
    cellnum(c->buf[C_PPPL], cap, pr ? pr->ppl : nan, "%.3f", miss);
    cellnum(c->buf[C_PDELTA], cap, pr ? pr->ppl - PAPER_BASELINE_PPL : nan, "%+.3f", miss);
    cellnum(c->buf[C_PGATE], cap, pr ? pr->gate_mean : nan, "%.3f", miss);
    cellnum(c->buf[C_PMACT], cap, pr ? pr->m_act : nan, "%.0f", miss);
    cellnum(c->buf[C_PFATTN], cap, pr ? pr->f_attn : nan, "%.3f", miss);
}

/* Count of the sweep's runs per status, as "6 finished, 1 diverged". */
static void status_line(const RSweep *s, char *buf, size_t cap) {
    static const char *const order[] = {"finished", "diverged", "failed", "killed", "running", "pending"};
    buf[0] = '\0';
    size_t o = 0;
    for (size_t j = 0; j < sizeof order / sizeof order[0]; j++) {
        int n = 0;
        for (int i = 0; i < s->nruns; i++) n += strcmp(s->runs[i].status, order[j]) == 0;
        if (n && o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s%d %s", o ? ", " : "", n, order[j]);
    }
    if (!o) snprintf(buf, cap, "none");
}

static void md_legend(const R *r, FILE *f, int sink) {
    double mg = r->margin;
    fprintf(f,
            "## How to read the tables\n\n"
            "One row per variant label, in sweep order: a sweep's first table holds the loss and its tests, the "
            "second the probes, the cost and the paper's figures.\n\n"
            "- **n**: finished runs (seeds). Every mean and standard deviation is over these; `±` is the sample "
            "standard deviation (n − 1). **div**: diverged runs, counted apart and left out of the means.\n"
            "- **val loss**, **val PPL**: final validation loss (nats per byte token) and perplexity "
            "(summary `val_loss`, `val_ppl`).\n"
            "- **Δ loss**: the row's val loss minus its reference row's (negative: the variant is better). The "
            "reference is the sweep's baseline row; in a sweep whose rows differ in `train.lr` it is the row with the "
            "baseline's configuration at the row's own `train.lr` (column **vs**; such rows are marked "
            "`(lr baseline)`), or the baseline row when there is none. Each table's caption says which rule it "
            "uses.\n"
            "- **test**: `paired (k)`: a seed fixes the initialisation and the data order, so runs with the same "
            "seed are compared seed by seed: Δ is the mean of the k per-seed differences (seeds with a finished run "
            "in both rows), **95%% CI** its t interval (k − 1 degrees of freedom) and **p** the two-sided paired "
            "t-test. `Welch`: fewer than 2 seeds pair up; Δ is the difference of the means, with Welch's "
            "unequal-variance interval and two-sided p (at least 2 finished runs in each row). `–`: too few runs "
            "for either (Δ, if shown, is then the plain difference of the means).\n"
            "- **p** is the raw p-value of the row; **p (Holm)** is Holm–Bonferroni-adjusted over the family of "
            "the table's sweep group, so that the chance of any false `*` in the family stays below 5%%. Sweeps "
            "whose baseline rows are the same runs (the same run ids: a run shared by several sweeps is trained "
            "once) form a group, and its family is every distinct contrast with a p in the group's tables (a row's "
            "runs against its reference row's runs), each counted once however many tables show it; so one "
            "contrast gets the same p (Holm) in every table. Under each table: the sweeps that share its family "
            "and the family's size. `*` on Δ marks p (Holm) < 0.05; the CI is per row and not adjusted. With 2–3 "
            "seeds per row these tests have little power: an effect of the size of the seed-to-seed noise will "
            "usually get no `*`, so no `*` means \"not resolved with these seeds\", not \"no effect\". They also "
            "assume roughly normal per-seed values, which so few seeds cannot check.\n"
            "- **p (TOST)**: the equivalence test of the same Δ (two one-sided t-tests, same standard error and "
            "degrees of freedom) against the margin ±%g nats (`gated report --margin`): p < 0.05 says |Δ| < %g "
            "(the 90%% CI lies inside ±%g). **verdict**: `differs` when p (Holm) < 0.05; else `equivalent within "
            "±%g` when p (TOST) < 0.05 (per row, not adjusted); else `inconclusive` (the data allow both an effect "
            "of the margin's size and none).\n"
            "- **Minimum detectable effect** (under each table): the |Δ| that the paired t-test finds with 80%% "
            "power at the table's seed count n, (t(0.975, n−1) + t(0.8, n−1)) · σ_d / √n, where σ_d is the "
            "standard deviation of the per-seed differences pooled over the table's paired rows; and the same at "
            "the Holm worst case α/m (m: the family's size). A true effect below it will usually be missed.\n"
            "- **Ranking and all pairs** (sweeps with 3 or more rows with finished runs): the rows by mean val loss, "
            "every pair tested as above (up to " REP_PAIRS_MAX_TEXT " rows; above, each row against the best), p (Holm) "
            "over those pairs as a family of their own, and the best row's line: its Δ to the runner-up with its CI "
            "and p (Holm), and **how sure** (resolved when the best row differs from every other row). A `differs` "
            "from a family smaller than the committed matrix's (`gated report --matrix`, default results/gated.db "
            "when it exists; else this database's largest family) says so beside it: Holm over few contrasts "
            "adjusts little.\n"
            "- **div/total**, **p (div, Fisher)** (only in sweeps whose rows differ in `train.lr`): diverged runs "
            "out of the runs that finished or diverged, and Fisher's exact two-sided p of that count against the "
            "reference row's (not adjusted for multiple comparisons).\n"
            "- **F-Attn**, **M-Act**, **gate**: the probes at each run's last evaluation, averaged over layers "
            "(first-token attention share, maximum |activation| of the residual stream, mean gate score), then "
            "mean ± sample std over seeds.\n"
            "- **spikes**: loss spikes per run (mean); **+params**: parameters the gate adds; **tok/s**: the training "
            "loop's throughput, mean (min–max) over the finished runs: a cost on whatever else the machine ran, not a "
            "benchmark (`gated bench` is one); `†`: a run of the row ran beside other jobs (its 1-minute load average "
            "at the end, minus its own threads, was 0.5 or more; runs record it in summary `load_end`); **kernel**: the OpenBLAS core its finished and diverged runs ran on (from each "
            "run's `openblas_version`), with a count per kernel when they differ: results are bitwise "
            "reproducible within one kernel, so a contrast across kernels carries the kernel effect too.\n",
            mg, mg, mg, mg);
    if (sink)
        fprintf(f, "- **sink heads (%%)**, **F-Attn/unif** (sweeps with sink probes): at each run's last evaluation, "
                   "the share of the layer × head query heads that put more than %g%% of their attention on position "
                   "0, and F-Attn over the uniform causal level u(T) = mean over i = 1..T−1 of 1/(i+1) (1: no "
                   "preference for position 0); mean ± sample std over seeds.\n",
                100 * SINK_HEAD_FATTN);
    fprintf(f,
            "- **paper** columns: the paper's figure for the same label (Tables 1, 3, 4 of arXiv 2505.06708) and its "
            "PPL minus its baseline's 6.026. The paper trained a 15B-parameter MoE on 400B tokens, so magnitudes "
            "are not comparable: compare only directions (the sign of Δ loss against the sign of paper ΔPPL; "
            "F-Attn and M-Act lower with a gate). `–`: no value.\n\n");
}

/* Column j in report.md's table `part` of a sweep: 0 the loss and its
 * tests, 1 the probes, the cost and the paper's figures (each with the
 * label first): one table of every column was 25 wide. */
static int md_col_in(const RSweep *s, int j, int part) {
    return col_on(s, j) && (j == C_LABEL || (j >= C_FATTN) == part);
}

static int write_md_table(const R *r, FILE *f, const RSweep *s, int part) {
    fprintf(f, "|");
    for (int j = 0; j < NCOL; j++)
        if (md_col_in(s, j, part)) fprintf(f, " %s |", COLS[j].md);
    fprintf(f, "\n|");
    for (int j = 0; j < NCOL; j++)
        if (md_col_in(s, j, part)) fprintf(f, "%s|", COLS[j].align == 'l' ? "---" : "--:");
    fprintf(f, "\n");
    for (int k = 0; k < s->nvars; k++) {
        Cells c;
        cells(r, s, k, " ± ", "±", "*", "–", 1, &c);
        fprintf(f, "|");
        for (int j = 0; j < NCOL; j++) {
            if (!md_col_in(s, j, part)) continue;
            fprintf(f, " ");
            if (COLS[j].text)
                rep_md_text(f, c.text[j]);
            else
                fputs(c.text[j], f);
            fprintf(f, "%s |", c.after[j]);
        }
        fprintf(f, "\n");
    }
    return 0;
}

/* The rule for Δ, as one paragraph; lab writes a label (quoted as the
 * format needs).  The Holm family is rep_family_text's. */
static void rule_text(FILE *f, const RSweep *s, void (*lab)(FILE *, const char *), const char *code_on,
                      const char *code_off) {
    const char *bl = s->vars[s->base].label;
    if (!s->lr_rule) {
        fprintf(f, "Δ: every row against the baseline row ");
        lab(f, bl);
        fprintf(f, ".");
    } else {
        fprintf(f,
                "Rows differ in %strain.lr%s, so Δ is lr-matched: each row against the row with the configuration of "
                "the baseline row ",
                code_on, code_off);
        lab(f, bl);
        fprintf(f,
                " (every key but %strain.lr%s, %strain.min_lr%s, %strain.seed%s) at the row's own %strain.lr%s "
                "(column vs; those reference rows are marked %s(lr baseline)%s)",
                code_on, code_off, code_on, code_off, code_on, code_off, code_on, code_off, code_on, code_off);
        if (s->n_fallback) {
            fprintf(f, "; %d row%s with no such row (marked %s(no lr match)%s) %s compared with ", s->n_fallback,
                    s->n_fallback == 1 ? "" : "s", code_on, code_off, s->n_fallback == 1 ? "is" : "are");
            lab(f, bl);
            fprintf(f, " instead");
        }
        fprintf(f, ".");
    }
}

/* ================================================================== */
/* report.md                                                           */
/* ================================================================== */

/* "- runs: N (k finished, ...)": table runs by status, a 'running' run
 * with a stale heartbeat counted as killed (now: the time). */
static int md_runs(R *r, FILE *f, double now) {
    sqlite3_stmt *st;
    static const char *const order[] = {"finished", "diverged", "failed", "killed", "running"};
    int cnt[5] = {0}, total = 0;
    if (rep_q_prep(r, &st, "SELECT status, heartbeat_at FROM runs", "")) return -1;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *stt = rep_col_text(st, 0);
        if (strcmp(stt, "running") == 0 && now - sqlite3_column_double(st, 1) > STORE_STALE_SECONDS) stt = "killed";
        for (int j = 0; j < 5; j++)
            if (strcmp(stt, order[j]) == 0) cnt[j]++;
        total++;
    }
    if (rep_q_done(r, st, sr, "read runs")) return -1;
    fprintf(f, "- runs: %d", total);
    for (int j = 0, first = 1; j < 5; j++)
        if (cnt[j]) {
            fprintf(f, "%s%d %s", first ? " (" : ", ", cnt[j], order[j]);
            first = 0;
        }
    fprintf(f, "%s\n", total && (cnt[0] + cnt[1] + cnt[2] + cnt[3] + cnt[4]) ? ")" : "");
    return 0;
}

/* "- code versions: `v` (n runs), ...", most runs first. */
static int md_versions(R *r, FILE *f) {
    sqlite3_stmt *st;
    fprintf(f, "- code versions:");
    if (rep_q_prep(r, &st,
                   "SELECT code_version, git_dirty, count(*) FROM runs GROUP BY code_version, git_dirty"
                   " ORDER BY count(*) DESC, code_version",
                   ""))
        return -1;
    int sr, nver = 0;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int dirty = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_int(st, 1) == 1;
        long long n = sqlite3_column_int64(st, 2);
        fprintf(f, "%s ", nver ? "," : "");
        rep_md_code(f, rep_col_text(st, 0)); /* escaped by rep_md_code: the database is untrusted */
        fprintf(f, "%s (%lld run%s)", dirty ? " + uncommitted changes" : "", n, n == 1 ? "" : "s");
        nver++;
    }
    if (rep_q_done(r, st, sr, "read runs")) return -1;
    fprintf(f, "%s\n", nver ? "" : " none");
    return 0;
}

/* report.md's header: the database, the time, runs, code versions, the
 * sweeps (linked to their sections) and where the plots are. */
static int md_header(R *r, FILE *f) {
    char tbuf[64];
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(tbuf, sizeof tbuf, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(tbuf, sizeof tbuf, "%lld", (long long)now);
    fprintf(f, "# gated report\n\n- database: ");
    rep_md_code(f, r->o->db_path);
    fprintf(f, "\n- generated: %s\n", tbuf);
    if (md_runs(r, f, (double)now) || md_versions(r, f)) return -1;
    fprintf(f, "- sweeps:");
    int shown = 0, series = 0;
    for (int i = 0; i < r->nsw; i++) {
        if (r->sw[i].context) continue;
        fprintf(f, "%s [", shown++ ? "," : "");
        rep_md_code(f, r->sw[i].name);
        fprintf(f, "](#sweep-%s) (%d runs)", r->sw[i].fname, r->sw[i].nruns);
    }
    fprintf(f, "%s\n", shown ? "" : " none recorded (run `gated sweep` first)");
    for (int i = 0; i < r->nbud; i++) series += r->bud[i].shown;
    if (series)
        fprintf(f, "- [effect against training budget](#budget): %d series of sweeps at several budgets\n", series);
    fprintf(f, "- equivalence margin: ±%g nats of val loss (`--margin`)\n", r->margin);
    if (r->ref) {
        int with = 0;
        for (int i = 0; i < r->nsw; i++) with += !r->sw[i].context && r->sw[i].base != r->sw[i].own_base;
        fprintf(f, "- reference row: ");
        rep_md_code(f, r->ref);
        fprintf(f, " (`--ref`): Δ, the tests and the budget series are against it in the %d sweep%s whose baseline "
                   "row it replaces; the others keep their own\n",
                with, with == 1 ? "" : "s");
    }
    if (r->o->no_plots)
        fprintf(f, "- plots: not requested (--no-plots)\n");
    else if (!r->gp_ok)
        fprintf(f, "- plots: skipped: %s\n", r->gp_note);
    else
        fprintf(f, "- plots: `plots/` (SVG and PNG, with the gnuplot data files and scripts that made them)\n");
    fprintf(f, "\n");
    return 0;
}

/* A sweep's "Plots": each plot (image, or why not) and what is not drawn. */
static void md_plots(const R *r, FILE *f, const RSweep *s) {
    fprintf(f, "### Plots\n\n");
    if (!r->gp_ok) fprintf(f, "Plots skipped: %s.\n\n", r->gp_note);
    for (int k = 0; k < s->nplots; k++) rep_md_plot(r, f, &s->plots[k]);
    if (s->nplots == 0) fprintf(f, "No finished runs with data to plot.\n\n");
    if (!s->lr_plot) fprintf(f, "Val loss against learning rate: not drawn (the runs share one `train.lr`).\n\n");
    fprintf(f, "Attention heatmap (baseline vs G1, first-token column): skipped — it needs per-position "
               "attention data, which the database does not hold (the store keeps only per-layer aggregates "
               "such as F-Attn%s).\n\n",
            s->has_sink ? ", and F-Attn per head: see the per-head plot above" : "");
}

/* A sweep's section of report.md: runs, the Δ rule, the table, its Holm
 * family and minimum detectable effect, the sections it has data for, the
 * plots. */
static int md_sweep(R *r, FILE *f, const RSweep *s) {
    char sl[256];
    status_line(s, sl, sizeof sl);
    fprintf(f, "<a id=\"sweep-%s\"></a>\n\n## Sweep ", s->fname);
    rep_md_code(f, s->name);
    fprintf(f, "\n\n%d runs: %s. ", s->nruns, sl);
    if (s->base >= 0 && s->base != s->own_base) {
        fprintf(f, "Reference row: ");
        rep_md_code(f, s->vars[s->base].label);
        fprintf(f, " (`--ref`; the sweep's baseline row: ");
        if (s->own_base >= 0)
            rep_md_code(f, s->vars[s->own_base].label);
        else
            fprintf(f, "none");
        fprintf(f, "; \"baseline\" below means the reference row). ");
        rule_text(f, s, rep_md_code, "`", "`");
        fprintf(f, "\n\n");
    } else if (s->base >= 0) {
        fprintf(f, "Baseline row: ");
        rep_md_code(f, s->vars[s->base].label);
        fprintf(f, ". ");
        rule_text(f, s, rep_md_code, "`", "`");
        if (rep_has_rank(s)) fprintf(f, " Against another row: `gated report --ref LABEL`; every pair: the section "
                                        "\"Ranking and all pairs\" below.");
        fprintf(f, "\n\n");
    } else
        fprintf(f, "No baseline row (set `baseline:` in the sweep file): no Δ column.\n\n");
    write_md_table(r, f, s, 0);
    fprintf(f, "\n");
    if (s->base >= 0) {
        rep_family_text(r, f, s, 1);
        fprintf(f, "\n\n");
    }
    fprintf(f, "Probes at the last evaluation, cost, and the paper's figures for the same labels:\n\n");
    write_md_table(r, f, s, 1);
    fprintf(f, "\n");
    rep_tps_note(f, s, 1);
    fprintf(f, "\n\n");
    if (r->write_sections(r, f, s, 1)) return -1;
    if (!r->o->no_plots) md_plots(r, f, s);
    return 0;
}

int rep_write_md(R *r, const char *path) {
    FILE *f = rep_open(r, path);
    if (!f) return -1;
    if (md_header(r, f)) goto bad;
    int any_sink = 0;
    for (int i = 0; i < r->nsw; i++) any_sink |= r->sw[i].has_sink && !r->sw[i].context;
    md_legend(r, f, any_sink);
    for (int i = 0; i < r->nsw; i++)
        if (!r->sw[i].context && md_sweep(r, f, &r->sw[i])) goto bad;
    if (rep_budget_md(r, f)) goto bad;
    return rep_close(r, f, path);
bad:
    rep_abort(r, f);
    return -1;
}

/* ================================================================== */
/* SWEEP.csv, SWEEP.tex                                                */
/* ================================================================== */

int rep_write_csv(R *r, const RSweep *s, const char *path) {
    static const char *const rules[] = {[RULE_NONE] = "", [RULE_BASE] = "baseline", [RULE_LR] = "lr_matched",
                                        [RULE_FALLBACK] = "baseline_fallback"};
    FILE *f = rep_open(r, path);
    if (!f) return -1;
    fprintf(f, "sweep,label,idx,is_baseline,n_finished,n_diverged,n_runs,val_loss_mean,val_loss_std,val_ppl_mean,"
               "val_ppl_std,delta_rule,delta_vs,delta_val_loss,delta_ci_lo,delta_ci_hi,test,n_pairs,t,df,p_raw,p_holm,"
               "significant,f_attn_mean,f_attn_std,m_act_mean,m_act_std,gate_mean,gate_mean_std,spikes_mean,"
               "gate_params,tokens_per_s_mean,train_lr,n_ended,div_fisher_p,paper_ppl,paper_delta_ppl,"
               "paper_gate_mean,paper_m_act,paper_f_attn%s,holm_family_size,p_tost,tost_margin,verdict,kernels,rank,"
               "tokens_per_s_min,tokens_per_s_max,n_load_recorded,n_beside_other_jobs,matrix_family_size\n",
            s->has_sink ? ",sink_head_share_mean,sink_head_share_std,f_attn_rel_mean,f_attn_rel_std" : "");
    for (int k = 0; k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        csv_fput_text(s->name, f);
        fputc(',', f);
        csv_fput_text(v->label, f);
        fprintf(f, ",%d,%d,%d,%d,%d,", s->runs[v->runs[0]].idx, k == s->base, v->n_fin, v->n_div, v->nruns);
        rep_csv_num(f, v->loss_mean);
        rep_csv_num(f, v->loss_std);
        rep_csv_num(f, v->ppl_mean);
        rep_csv_num(f, v->ppl_std);
        fprintf(f, "%s,", v->is_ref ? "reference" : rules[v->rule]);
        if (v->ref >= 0) csv_fput_text(s->vars[v->ref].label, f);
        fputc(',', f);
        rep_csv_num(f, v->have_delta ? v->delta : NAN);
        rep_csv_num(f, v->have_test ? v->t.lo : NAN);
        rep_csv_num(f, v->have_test ? v->t.hi : NAN);
        fprintf(f, "%s,", v->have_test ? (v->paired ? "paired" : "welch") : "");
        if (v->paired) fprintf(f, "%d", v->n_pairs);
        fputc(',', f);
        rep_csv_num(f, v->have_test ? v->t.t : NAN);
        rep_csv_num(f, v->have_test ? v->t.df : NAN);
        rep_csv_num(f, v->have_test ? v->t.p : NAN);
        rep_csv_num(f, v->have_test ? v->p_holm : NAN);
        if (v->have_test) fprintf(f, "%d", v->p_holm < 0.05);
        fputc(',', f);
        rep_csv_num(f, v->f_attn);
        rep_csv_num(f, v->f_attn_std);
        rep_csv_num(f, v->m_act);
        rep_csv_num(f, v->m_act_std);
        rep_csv_num(f, v->gate_mean);
        rep_csv_num(f, v->gate_std);
        rep_csv_num(f, v->spikes);
        rep_csv_num(f, v->gate_params);
        rep_csv_num(f, v->tokens_per_s);
        rep_csv_num(f, v->lr);
        fprintf(f, "%d,", v->n_fin + v->n_div);
        rep_csv_num(f, v->div_p);
        const PaperRow *pr = paper_lookup(v->label);
        rep_csv_num(f, pr ? pr->ppl : NAN);
        rep_csv_num(f, pr ? pr->ppl - PAPER_BASELINE_PPL : NAN);
        rep_csv_num(f, pr ? pr->gate_mean : NAN);
        rep_csv_num(f, pr ? pr->m_act : NAN);
        rep_csv_num(f, pr ? pr->f_attn : NAN);
        if (s->has_sink) {
            rep_csv_num(f, v->sink_share);
            rep_csv_num(f, v->sink_share_std);
            rep_csv_num(f, v->f_attn_rel);
            rep_csv_num(f, v->f_attn_rel_std);
        }
        /* added last, so that the columns before keep their places */
        if (v->have_test) fprintf(f, "%d", s->fam_m);
        fputc(',', f);
        rep_csv_num(f, v->p_tost);
        rep_csv_num(f, v->have_test ? r->margin : NAN);
        fprintf(f, "%s,", v->have_test ? rep_verdict(r, v) : "");
        csv_fput_text(v->kernels, f);
        fputc(',', f);
        if (v->rank >= 0) fprintf(f, "%d", v->rank + 1);
        fputc(',', f);
        rep_csv_num(f, v->tps_min);
        rep_csv_num(f, v->tps_max);
        fprintf(f, "%d,%d,", v->n_load, v->n_busy);
        if (r->mx_m) fprintf(f, "%d", r->mx_m);
        fputc('\n', f);
    }
    return rep_close(r, f, path);
}

int rep_write_tex(R *r, const RSweep *s, const char *path) {
    FILE *f = rep_open(r, path);
    if (!f) return -1;
    char sl[256];
    status_line(s, sl, sizeof sl);
    fprintf(f, "%% gated report: sweep ");
    tex_comment_label(f, s->name);
    fprintf(f, " (%d runs: %s); database ", s->nruns, sl);
    tex_comment_label(f, r->o->db_path);
    fprintf(f, "\n%% needs \\usepackage{booktabs}.  Means over finished runs, $\\pm$ sample std over seeds; "
               "test: paired by seed when 2 or more seeds pair up, else Welch; $p$ raw, $p_{\\mathrm{Holm}}$ "
               "Holm-Bonferroni-adjusted over the family of the sweeps whose baseline rows are the same runs (each "
               "distinct contrast once); $^{*}$: $p_{\\mathrm{Holm}} < 0.05$ (few seeds: low power, no $^{*}$ is not "
               "evidence of no effect); $p_{\\mathrm{TOST}}$: equivalence within $\\pm$%g nats (two one-sided "
               "t-tests); verdict: differs ($p_{\\mathrm{Holm}} < 0.05$), equivalent ($p_{\\mathrm{TOST}} < 0.05$) "
               "or inconclusive.\n",
            r->margin);
    if (s->base >= 0 && s->base != s->own_base) {
        fprintf(f, "%% Reference row (--ref): ");
        tex_comment_label(f, s->vars[s->base].label);
        fprintf(f, ", in place of the sweep's baseline row; \"baseline\" below means it.\n");
    }
    if (s->base >= 0) {
        fprintf(f, "%% ");
        rule_text(f, s, tex_comment_label, "", "");
        fprintf(f, "\n%% ");
        rep_family_text(r, f, s, 0);
        fprintf(f, "\n");
    } else
        fprintf(f, "%% No baseline row: no Delta.\n");
    fprintf(f, "%% Paper: 15B MoE, 400B tokens (arXiv 2505.06708): compare directions only.\n");
    int ns = 0; /* columns of this suite, the label excluded */
    fprintf(f, "\\begin{tabular}{");
    for (int j = 0; j < NCOL; j++)
        if (col_on(s, j)) {
            fputc(COLS[j].align, f);
            if (j > C_LABEL && j < C_PPPL) ns++;
        }
    fprintf(f, "}\n\\toprule\n & \\multicolumn{%d}{c}{this suite} & \\multicolumn{%d}{c}{paper (15B MoE)} \\\\\n"
               "\\cmidrule(lr){2-%d}\\cmidrule(lr){%d-%d}\n",
            ns, NPAPER, ns + 1, ns + 2, ns + 1 + NPAPER);
    for (int j = 0, first = 1; j < NCOL; j++)
        if (col_on(s, j)) {
            fprintf(f, "%s%s", first ? "" : " & ", COLS[j].tex);
            first = 0;
        }
    fprintf(f, " \\\\\n\\midrule\n");
    for (int k = 0; k < s->nvars; k++) {
        Cells c;
        cells(r, s, k, " $\\pm$ ", "$\\pm$", "$^{*}$", "--", 0, &c);
        for (int j = 0, first = 1; j < NCOL; j++) {
            if (!col_on(s, j)) continue;
            if (!first) fputs(" & ", f);
            first = 0;
            /* labels are escaped; the other cells hold no TeX specials but their own markup */
            if (COLS[j].text)
                rep_tex_text(f, c.text[j]);
            else
                fputs(c.text[j], f);
            fputs(c.after[j], f);
        }
        fprintf(f, " \\\\\n");
    }
    fprintf(f, "\\bottomrule\n\\end{tabular}\n%% ");
    rep_tps_note(f, s, 0);
    fputc('\n', f);
    if (r->write_sections(r, f, s, 0)) {
        rep_abort(r, f);
        return -1;
    }
    return rep_close(r, f, path);
}
