/*
 * report_plot.c — `gated report`: the plots (gnuplot data files, scripts
 * and images in DIR/plots/).
 *
 * Plots (DIR/plots/SWEEP-*.{dat,gp,svg,png}; SWEEP with characters other
 * than [A-Za-z0-9._-] replaced by '_'), each from finished runs:
 *   -val_loss     metric val_loss against step, mean over the variant's runs,
 *                 a band of +- one std over them (when some step has 2 runs)
 *   -f_attn       metric f_attn, context layer=N, last step, mean, per layer,
 *                 error bars +- std
 *   -m_act        the same for m_act (log y axis)
 *   -gate-K-LABEL histogram 'gate', context layer=N, last step, counts summed
 *                 over the variant's runs, as a fraction per layer (K: the
 *                 row's position, so two labels cannot collide); the counts
 *                 are a JSON array of integers, read with json_each (another
 *                 value is skipped with a warning)
 *   -lr           when the sweep's runs have more than one train.lr: final
 *                 val loss against lr (log x), mean ± std, one line per
 *                 series; a series is the runs whose configs agree on every
 *                 key but train.lr, train.min_lr and train.seed, named by
 *                 their labels without the lr=... component; diverged runs
 *                 are drawn as crosses along the top of the plot
 *   -fattn-heads  sweeps with sink probes: metric f_attn, context
 *                 layer=L,head=H, last step, mean over the row's finished
 *                 runs; one panel per row, side by side on one colour scale
 *                 0..1 (viridis: perceptually uniform, readable in grey)
 *   -bb-bos       sweeps with Bigram-Backcopy probes (report_bb.c): at each
 *                 run's BB head (context layer=L,head=H), bb_bos_attn_other
 *                 (solid) and bb_bos_attn_trigger (dashed) against step, mean
 *                 over the row's finished runs with a band of +- one std;
 *                 one colour per row
 *   -bb-loss      the same for bb_loss_other and bb_loss_trigger (context '')
 *   -bb-gate-K-LABEL  gated rows of those sweeps: histograms bb_gate_other
 *                 (solid) and bb_gate_trigger (dashed), context layer=N, last
 *                 step, summed over the row's runs, as a share per layer and
 *                 type; one colour per layer
 *   -ppl-vs-length  sweeps with `gated eval` results: eval_ppl on split=val
 *                 against the context length (log2 x, log y), mean ± std,
 *                 one colour per row and one dash type per scaling series
 *   -quant        sweeps with `gated eval --quant` results (report_infer.c):
 *                 ΔPPL in % of the float PPL per scheme (x) and row, mean
 *                 ± std over the row's runs, the rows offset along x
 *   -quant-mact-K-SCHEME  per scheme K: each run's ΔPPL% against its
 *                 M-Act, one point per run, colour by row (log x past a
 *                 decade)
 *   -drop         sweeps with `gated eval --drop` results: PPL (log y)
 *                 against the share of (token, head) pairs dropped, per row
 *                 (colour) a curve per rule (dash type): the gate at each
 *                 tau, its matched random and entropy controls, random and
 *                 entropy at fixed fractions; from the float model at 0
 * and per budget series (report_budget.c), DIR/plots/budget-SWEEP.*, SWEEP
 * its smallest budget's sweep:
 *   budget-       the paired Δ final val loss of each row against the
 *                 baseline of the same budget, against tokens per run (log
 *                 x), error bars the 95% CI, a dashed zero line
 * Series are told apart by colour (GP_COLOURS), then dash type and point
 * type (gp_look), so more series than colours never repeat a look.  Log
 * axes get explicit labelled ticks (gp_log_tics): gnuplot labels only the
 * powers of ten, which leaves a range under a decade with one label or
 * none.
 * Each .gp script is self-contained (run `gnuplot NAME.gp` in plots/) and
 * is run by fork/exec with plots/ as working directory; gnuplot's output
 * goes to plots/gnuplot.log.  The SVG / PNG terminals are probed once
 * (pngcairo, else png).  Attention heatmaps need per-position attention
 * data, which the store does not hold: the report says so.
 */
#include "lab/report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* (x, y) samples, aggregated by x. */
typedef struct {
    double x, y;
} Pt;
typedef struct {
    Pt *p;
    int n, cap;
} Pts;

static int pts_add(R *r, Pts *v, double x, double y) {
    if (isnan(y)) return 0;
    if (rep_grow(r, (void **)&v->p, &v->cap, v->n + 1, sizeof *v->p)) return -1;
    v->p[v->n++] = (Pt){x, y};
    return 0;
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int pt_cmp(const void *a, const void *b) {
    double x = ((const Pt *)a)->x, y = ((const Pt *)b)->x;
    return (x > y) - (x < y);
}

/* Sort by x and write "x mean std n" per distinct x (std 0 for n = 1);
 * returns the number of lines written.  The range of mean +- std (of the
 * mean where mean - std <= 0, for log axes) widens [*lo, *hi], and *multi
 * is set when some x has n > 1 (both may be NULL). */
static int pts_write(Pts *v, FILE *f, double *lo, double *hi, int *multi) {
    if (v->n == 0) return 0;
    qsort(v->p, (size_t)v->n, sizeof *v->p, pt_cmp);
    int lines = 0;
    for (int i = 0; i < v->n;) {
        int j = i;
        while (j < v->n && v->p[j].x == v->p[i].x) j++;
        int n;
        double sum = 0, m, s;
        for (int k = i; k < j; k++) sum += v->p[k].y;
        m = sum / (j - i);
        double ss = 0;
        for (int k = i; k < j; k++) ss += (v->p[k].y - m) * (v->p[k].y - m);
        n = j - i;
        s = n > 1 ? sqrt(ss / (n - 1)) : 0;
        fprintf(f, "%.10g %.10g %.10g %d\n", v->p[i].x, m, s, n);
        if (lo && isfinite(m)) {
            *lo = fmin(*lo, m - s > 0 ? m - s : m);
            *hi = fmax(*hi, m + s);
        }
        if (multi && n > 1) *multi = 1;
        lines++;
        i = j;
    }
    return lines;
}

/* Single-quoted gnuplot string: '' for a quote (backslashes, backquotes
 * and @ are literal there); a control character is written as \xNN, as
 * text: a newline would end the command, and a next line starting with !
 * is a shell command to gnuplot. */
static void gp_str(FILE *f, const char *s) {
    fputc('\'', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else {
            if (*p == '\'') fputc('\'', f);
            fputc(*p, f);
        }
    }
    fputc('\'', f);
}

/* Find prog (a name on PATH, or a path); heap copy of its path or NULL. */
static char *find_program(R *r, const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0 ? rep_dup(r, prog) : NULL;
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t n = e ? (size_t)(e - path) : strlen(path);
        char *cand = n ? rep_fmt(r, "%.*s/%s", (int)n, path, prog) : rep_fmt(r, "./%s", prog);
        if (!cand) return NULL;
        struct stat sb;
        if (access(cand, X_OK) == 0 && stat(cand, &sb) == 0 && S_ISREG(sb.st_mode)) return cand;
        free(cand);
        path += n;
        if (*path == ':') path++;
    }
    return NULL;
}

/* Run gnuplot with args (after argv[0]) in dir, output appended to logpath
 * (NULL: /dev/null).  Returns the exit status, or -1 if it could not run. */
static int run_gnuplot(R *r, const char *a1, const char *a2, const char *dir, const char *logpath) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* open the log before chdir: its path may be relative to the caller */
        int fd = open(logpath ? logpath : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0666);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0 || chdir(dir) != 0) _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        char *argv[4] = {r->gp_prog, (char *)a1, (char *)a2, NULL};
        execv(r->gp_prog, argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Look for gnuplot and its terminals once; a warning if it is unusable. */
void rep_gp_check(R *r) {
    if (r->gp_checked) return;
    r->gp_checked = 1;
    const char *prog = r->o->gnuplot ? r->o->gnuplot : "gnuplot";
    r->gp_prog = find_program(r, prog);
    if (r->failed) return;
    if (!r->gp_prog) {
        fprintf(r->log, "gated report: gnuplot not found; plots skipped (apt-get install -y gnuplot-nox)\n");
        snprintf(r->gp_note, sizeof r->gp_note,
                 "gnuplot not found (apt-get install -y gnuplot-nox); the plots' data files and gnuplot scripts are "
                 "in `plots/`");
        return;
    }
    if (run_gnuplot(r, "-e", "set terminal pngcairo", r->plots_dir, NULL) == 0)
        r->term_png = "pngcairo";
    else if (run_gnuplot(r, "-e", "set terminal png", r->plots_dir, NULL) == 0)
        r->term_png = "png";
    r->term_svg = run_gnuplot(r, "-e", "set terminal svg", r->plots_dir, NULL) == 0;
    if (!r->term_png && !r->term_svg) {
        fprintf(r->log, "gated report: %s has neither a png nor an svg terminal; plots skipped\n", r->gp_prog);
        snprintf(r->gp_note, sizeof r->gp_note,
                 "gnuplot has neither a png nor an svg terminal; the plots' data files and gnuplot scripts are in "
                 "`plots/`");
        return;
    }
    r->gp_ok = 1;
}

#define GP_SIZE "size 960,560"

/* The terminals a script uses: those found, or (gnuplot missing, the
 * script is only kept for later) svg and pngcairo. */
static int gp_svg(const R *r) { return r->gp_ok ? r->term_svg : 1; }
static const char *gp_png(const R *r) { return r->gp_ok ? r->term_png : "pngcairo"; }

/* The script's first lines: a comment and the first terminal. */
static void gp_head(R *r, FILE *f, const char *base, const char *what) {
    fprintf(f, "# %s\n# written by `gated report`; run `gnuplot %s.gp` in this directory\n", what, base);
    if (gp_svg(r))
        fprintf(f, "set terminal svg " GP_SIZE " dynamic noenhanced background rgb 'white'\nset output '%s.svg'\n",
                base);
    else
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\n", gp_png(r), base);
    fprintf(f, "set grid\nset key outside right top\n");
}

/* After the plot command: the PNG as well (replot), then close. */
static void gp_tail(R *r, FILE *f, const char *base) {
    if (gp_svg(r) && gp_png(r))
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\nreplot\n", gp_png(r), base);
    fprintf(f, "set output\n");
}

/* The end of a plot command of `blocks` series (a NaN placeholder when
 * there are none, so the script stays valid), then gp_tail. */
static void gp_end(R *r, FILE *gp, const char *base, int blocks) {
    if (!blocks) fprintf(gp, " NaN notitle");
    fprintf(gp, "\n");
    gp_tail(r, gp, base);
}

/* Line colours: Okabe & Ito's colour-blind-safe set, its yellow (unreadable
 * on white) replaced by grey.  One place: the number of colours is what
 * makes dash types necessary. */
static const char *const GP_COLOURS[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                         "#e69f00", "#56b4e9", "#000000", "#999999"};
#define GP_NCOLOURS ((int)(sizeof GP_COLOURS / sizeof GP_COLOURS[0]))
/* Dash types: gnuplot's solid, dashed, dotted, dash-dot, dash-dot-dot and
 * three patterns of our own (the built-in ones repeat after 5). */
static const char *const GP_DASHES[] = {"1", "2", "3", "4", "5", "(12,4,2,4,2,4)", "(20,6)", "(2,8)"};
#define GP_NDASHES ((int)(sizeof GP_DASHES / sizeof GP_DASHES[0]))
/* Point types 1..13 (+, x, *, open and filled square, circle, triangle,
 * inverted triangle, diamond) are all distinct shapes. */
#define GP_NPOINTS 13

/* " lc ... dt ... pt ..." for colour c, dash d and point type p (each taken
 * modulo its count; p < 0: no point type, for styles without points). */
static void gp_look(FILE *f, int c, int d, int p) {
    fprintf(f, " lc rgb '%s' dt %s", GP_COLOURS[c % GP_NCOLOURS], GP_DASHES[d % GP_NDASHES]);
    if (p >= 0) fprintf(f, " pt %d", p % GP_NPOINTS + 1);
}

/* The look of series k of a plot: colour k mod the colours, the next dash
 * type each time the colours run out (solid lines up to GP_NCOLOURS
 * series), point type k mod 13.  Colour and dash alone differ for the
 * first 64 series; with the point type for the first 832. */
static void gp_series_look(FILE *f, int k) { gp_look(f, k, k / GP_NCOLOURS, k); }

/* Labelled ticks for a log axis ("x" or "y") whose data span [lo, hi]
 * (lo > 0).  A decade or more: the powers of ten when 3 or more of them
 * fall inside (every step-th one past 12), else 1, 2 and 5 times them
 * (any decade holds 3 of those).  Under a decade, where gnuplot labels one
 * power of ten or none: evenly spaced round values, the largest step of 1,
 * 2 or 5 times a power of ten that fits 3 times (3 to 7 ticks).  Nothing
 * for a range that is not positive and finite (gnuplot's own ticks). */
static void gp_log_tics(FILE *f, const char *axis, double lo, double hi) {
    if (!(lo > 0) || !(hi >= lo) || !isfinite(hi)) return;
    static const double nice[3] = {1, 2, 5};
    const double lo_ = lo * (1 - 1e-9), hi_ = hi * (1 + 1e-9);
    fprintf(f, "set %stics (", axis);
    int n = 0;
    if (hi >= 10 * lo) {
        int e0 = (int)floor(log10(lo)), e1 = (int)floor(log10(hi)), powers = 0;
        for (int e = e0; e <= e1; e++) powers += pow(10, e) >= lo_;
        int step = powers > 12 ? (powers + 11) / 12 : 1, m = powers >= 3 ? 1 : 3;
        for (int e = e0; e <= e1; e++)
            for (int i = 0; i < m; i++) {
                double t = nice[i] * pow(10, e);
                if (t >= lo_ && t <= hi_ && (m > 1 || (e - e0) % step == 0))
                    fprintf(f, "%s\"%g\" %g", n++ ? ", " : "", t, t);
            }
    } else if (!(hi > lo)) {
        fprintf(f, "\"%g\" %g", lo, lo); /* one value: gnuplot widens the range around it */
    } else {
        double span = hi - lo, p10 = pow(10, floor(log10(span / 3))), st = p10;
        for (int i = 0; i < 3; i++)
            if (nice[i] * p10 <= span / 3 * (1 + 1e-9)) st = nice[i] * p10;
        for (double k = ceil(lo_ / st); k * st <= hi_; k++) fprintf(f, "%s\"%g\" %g", n++ ? ", " : "", k * st, k * st);
    }
    fprintf(f, ")\n");
}

/* Record the plot in the list (*v, *n, *cap: a sweep's or a budget
 * series') and run its script (when gnuplot is usable). */
static int plot_finish(R *r, PlotEntry **v, int *n, int *cap, const char *base, char *title) {
    if (rep_grow(r, (void **)v, cap, *n + 1, sizeof **v)) {
        free(title);
        return -1;
    }
    PlotEntry *e = &(*v)[(*n)++];
    e->title = title;
    e->base = rep_dup(r, base);
    e->made = 0;
    if (!e->base) return -1;
    if (!r->gp_ok) return 0;
    char *script = rep_fmt(r, "%s.gp", base);
    char *logp = rep_fmt(r, "%s/gnuplot.log", r->plots_dir);
    if (!script || !logp) {
        free(script), free(logp);
        return -1;
    }
    int st = run_gnuplot(r, script, NULL, r->plots_dir, logp);
    int ok = st == 0;
    const char *exts[2] = {r->term_svg ? "svg" : NULL, r->term_png ? "png" : NULL};
    for (int i = 0; ok && i < 2; i++) {
        if (!exts[i]) continue;
        char *img = rep_fmt(r, "%s/%s.%s", r->plots_dir, base, exts[i]);
        struct stat sb;
        if (!img || stat(img, &sb) != 0 || sb.st_size == 0) ok = 0;
        free(img);
    }
    if (ok)
        e->made = 1;
    else {
        r->gp_fail++;
        fprintf(r->log, "gated report: gnuplot failed on %s/%s (exit %d; see %s)\n", r->plots_dir, script, st, logp);
    }
    free(script);
    free(logp);
    return r->failed ? -1 : 0;
}

/* Open plots/BASE.dat and plots/BASE.gp. */
static int plot_open(R *r, const char *base, FILE **dat, FILE **gp, char **datp, char **gpp) {
    *dat = *gp = NULL;
    *datp = rep_fmt(r, "%s/%s.dat", r->plots_dir, base);
    *gpp = rep_fmt(r, "%s/%s.gp", r->plots_dir, base);
    if (!*datp || !*gpp) return -1;
    if (!(*dat = rep_open(r, *datp))) return -1;
    if (!(*gp = rep_open(r, *gpp))) {
        fclose(*dat);
        *dat = NULL;
        return -1;
    }
    return 0;
}

static int plot_close(R *r, FILE *dat, FILE *gp, char *datp, char *gpp) {
    int rc = 0;
    if (dat && rep_close(r, dat, datp)) rc = -1;
    if (gp && rep_close(r, gp, gpp)) rc = -1;
    free(datp);
    free(gpp);
    return rc;
}

/* Close a plot's files and, when nothing failed and it has data (any),
 * register and draw it under the title fmt: in sweep s's plots, or (s
 * NULL) in budget series b's.  Returns the new rc. */
static int plot_done(R *r, RSweep *s, RBudget *b, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp,
                     const char *base, const char *fmt, ...) __attribute__((format(printf, 11, 12)));
static int plot_done(R *r, RSweep *s, RBudget *b, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp,
                     const char *base, const char *fmt, ...) {
    if (plot_close(r, dat, gp, datp, gpp)) rc = -1;
    if (rc != 0 || !any) return rc;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *t = rep_dup(r, buf);
    if (!t) return -1;
    return s ? plot_finish(r, &s->plots, &s->nplots, &s->plots_cap, base, t)
             : plot_finish(r, &b->plots, &b->nplots, &b->plots_cap, base, t);
}

/* RepRowFn on (context, value): a context layer=N as (N, value) into the Pts arg. */
static int add_layer_pt(R *r, void *arg, sqlite3_stmt *st) {
    long l = rep_parse_layer(rep_col_text(st, 0));
    return l < 0 ? 0 : pts_add(r, arg, (double)l, rep_col_real(st, 1));
}

/* RepRowFn on (step, value): into the Pts arg. */
static int add_step_pt(R *r, void *arg, sqlite3_stmt *st) {
    return pts_add(r, arg, (double)sqlite3_column_int64(st, 0), rep_col_real(st, 1));
}

/* (step, value) of the run's metric `key` at context ctx into pts. */
static int q_steps_ctx(R *r, const char *run_id, const char *key, const char *ctx, Pts *pts) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st, "SELECT step, value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3", "ttt",
                   run_id, key, ctx))
        return -1;
    return rep_q_rows(r, st, add_step_pt, pts);
}

/* (step, value) of the run's metric `key` at context '' into pts. */
static int q_steps(R *r, const char *run_id, const char *key, Pts *pts) { return q_steps_ctx(r, run_id, key, "", pts); }

/* One line per variant of metric `key`, mean over the finished seeds
 * (title: what the plot shows; the caption adds how):
 * against the step (per_layer 0: context '', every step; a band of +- one
 * std) or against the layer (per_layer 1: context 'layer=N', each run's
 * last step; error bars +- std, the layers being discrete).  The std is
 * drawn only when some point has two runs or more. */
static int plot_series(R *r, RSweep *s, const char *key, int per_layer, const char *ylabel, const char *title,
                       int logy) {
    char *base = rep_fmt(r, "%s-%s", s->fname, key);
    if (!base) return -1;
    /* every variant's points first: the axis ticks and the bands come before the plot */
    Pts *all = calloc((size_t)s->nvars + 1, sizeof *all);
    int rc = all ? 0 : rep_oom(r);
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        for (int i = 0; rc == 0 && i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (rep_is_finished(u))
                rc = per_layer ? rep_q_each_context_last(r, u->run_id, key, add_layer_pt, &all[k])
                               : q_steps(r, u->run_id, key, &all[k]);
        }
    }
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (rc == 0) rc = plot_open(r, base, &dat, &gp, &datp, &gpp);
    int blocks = 0, multi = 0;
    double lo = INFINITY, hi = -INFINITY;
    const char *xname = per_layer ? "layer" : "step";
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        if (!all[k].n) continue;
        fprintf(dat, "# %s: %s, mean, std, runs\n", s->vars[k].label, xname);
        pts_write(&all[k], dat, &lo, &hi, &multi);
        fprintf(dat, "\n\n");
        blocks++;
    }
    if (rc == 0) {
        gp_head(r, gp, base, title);
        fprintf(gp, "set title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel '%s'\n%s", xname, per_layer ? "set xtics 1\n" : "");
        if (logy) {
            /* the range of the data, not gnuplot's whole decades, so that the ticks fall inside it */
            fprintf(gp, "set logscale y\nset autoscale yfix\nset offsets 0, 0, graph 0.05, graph 0.05\n");
            gp_log_tics(gp, "y", lo, hi);
        }
        fprintf(gp, "set ylabel ");
        char *yl = multi ? rep_fmt(r, "%s (%s: +- std)", ylabel, per_layer ? "bars" : "band") : rep_dup(r, ylabel);
        if (!yl) rc = -1;
        if (yl) gp_str(gp, yl);
        free(yl);
        fprintf(gp, "\nplot");
    }
    /* bands first, so that no band covers another series' line */
    int b = 0;
    for (int k = 0; rc == 0 && multi && !per_layer && k < s->nvars; k++) {
        if (!all[k].n) continue;
        fprintf(gp, "%s '%s.dat' index %d using 1:($2-$3):($2+$3) with filledcurves fc rgb '%s' "
                    "fs transparent solid 0.15 noborder notitle",
                b ? ", \\\n    " : "", base, b, GP_COLOURS[b % GP_NCOLOURS]);
        b++;
    }
    int nl = 0;
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        if (!all[k].n) continue;
        fprintf(gp, "%s '%s.dat' index %d using %s with %s", b || nl ? ", \\\n    " : "", base, nl,
                multi && per_layer ? "1:2:3" : "1:2", multi && per_layer ? "yerrorlines" : "linespoints");
        gp_series_look(gp, nl);
        fprintf(gp, " title ");
        gp_str(gp, s->vars[k].label);
        nl++;
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    for (int k = 0; all && k < s->nvars; k++) free(all[k].p);
    free(all);
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base, "%s (%smean over seeds%s%s)", title,
                   per_layer ? "last step, " : "", !multi ? "" : per_layer ? "; error bars: std" : "; band: +- std",
                   logy ? "; log scale" : "");
    free(base);
    return rc;
}

/* A histogram's counts: a JSON array of integers (json_each), in order,
 * into *out (heap) and *n; *n = 0 (*out NULL) when counts is not such an
 * array (another JSON value, a non-integer element, an integer beyond 64
 * bits, text that is not JSON). */
static int q_counts(R *r, const char *counts, long long **out, int *n) {
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT j.value, j.type = 'integer' AND typeof(j.value) = 'integer' FROM json_each(CASE WHEN"
                   " json_valid(?1) THEN CASE json_type(?1) WHEN 'array' THEN ?1 END END) j ORDER BY j.key",
                   "t", counts))
        return -1;
    int sr, cap = 0, ok = 1;
    while (ok && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        if (!(ok = sqlite3_column_int(st, 1) != 0)) break;
        if (rep_grow(r, (void **)out, &cap, *n + 1, sizeof **out)) break;
        (*out)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    int rc = r->failed ? (sqlite3_finalize(st), -1) : rep_q_done(r, st, sr, "read histograms");
    if (rc || !ok) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* One layer's gate-score histogram, summed over runs. */
typedef struct {
    long layer;
    double lo, hi;
    long long *counts;
    int nbins, nruns;
} HistAcc;

/* A row's histograms of one key: one per layer, in the order first seen. */
typedef struct {
    const char *key; /* the histograms' key ('gate', 'bb_gate_other', ...) */
    HistAcc *a;
    int n, cap;
    int runs_with; /* runs that added one */
} Hists;

/* Add the histogram of layer l (counts c of nb bins, taken over; the
 * line st of run u) to h: a new layer, or the sum when its bins match
 * the layer's first; *added when it was used. */
static int hist_add(R *r, Hists *h, const RRun *u, sqlite3_stmt *st, long l, long long *c, int nb, int *added) {
    double lo = sqlite3_column_double(st, 1), hi = sqlite3_column_double(st, 2);
    HistAcc *a = NULL;
    for (int j = 0; j < h->n; j++)
        if (h->a[j].layer == l) a = &h->a[j];
    if (!a) {
        if (rep_grow(r, (void **)&h->a, &h->cap, h->n + 1, sizeof *h->a)) {
            free(c);
            return -1;
        }
        h->a[h->n++] = (HistAcc){l, lo, hi, c, nb, 1};
        *added = 1;
        return 0;
    }
    if (a->nbins != nb || a->lo != lo || a->hi != hi) {
        char qid[64];
        fprintf(r->log, "gated report: run %s: histogram %s %s has other bins than its variant's first run; "
                        "skipped\n", store_escape(u->run_id, qid, sizeof qid), h->key, rep_col_text(st, 0));
    } else {
        for (int b = 0; b < nb; b++) a->counts[b] += c[b];
        a->nruns++;
        *added = 1;
    }
    free(c);
    return 0;
}

/* The histograms h->key of finished run u at their last step, per layer,
 * added to h. */
static int hist_load_run(R *r, Hists *h, const RRun *u) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT h.context, h.lo, h.hi, h.counts FROM histograms h WHERE h.run_id = ?1 AND"
                   " h.key = ?2 AND h.step = (SELECT max(x.step) FROM histograms x WHERE"
                   " x.run_id = h.run_id AND x.key = h.key AND x.context = h.context)",
                   "tt", u->run_id, h->key))
        return -1;
    int sr, rc = 0, added = 0;
    while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        long l = rep_parse_layer(rep_col_text(st, 0));
        if (l < 0) continue;
        long long *c;
        int nb;
        if ((rc = q_counts(r, rep_col_text(st, 3), &c, &nb))) break;
        if (nb == 0) {
            char qid[64];
            fprintf(r->log, "gated report: run %s: histogram %s %s: bad counts; skipped\n",
                    store_escape(u->run_id, qid, sizeof qid), h->key, rep_col_text(st, 0));
            continue;
        }
        rc = hist_add(r, h, u, st, l, c, nb, &added);
    }
    if (rc)
        sqlite3_finalize(st);
    else
        rc = rep_q_done(r, st, sr, "read histograms");
    h->runs_with += added;
    return rc;
}

/* h's layers in order. */
static void hists_sort(Hists *h) {
    for (int i = 1; i < h->n; i++)
        for (int j = i; j > 0 && h->a[j - 1].layer > h->a[j].layer; j--) {
            HistAcc t = h->a[j];
            h->a[j] = h->a[j - 1];
            h->a[j - 1] = t;
        }
}

/* The histogram plot of row k from h (h->n > 0). */
static int gate_hist_write(R *r, RSweep *s, int k, Hists *h) {
    const RVar *v = &s->vars[k];
    HistAcc *acc = h->a;
    int nacc = h->n, runs_with = h->runs_with, rc = 0;
    hists_sort(h);
    char *lab = rep_safe_name(r, v->label);
    char *base = lab ? rep_fmt(r, "%s-gate-%d-%s", s->fname, k, lab) : NULL;
    free(lab);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    else {
        gp_head(r, gp, base, "gate-score histogram per layer, last step, counts summed over seeds");
        /* the labels in files: escaped when loaded; gp_str quotes again */
        fprintf(gp, "set title ");
        char *t = rep_fmt(r, "%s: gate scores of %s (last step, %d run%s summed)", s->name, v->label, runs_with,
                          runs_with == 1 ? "" : "s");
        if (!t) rc = -1;
        if (t) gp_str(gp, t);
        free(t);
        fprintf(gp, "\nset xlabel 'gate score'\nset ylabel 'fraction of scores'\nset xrange [%.10g:%.10g]\nplot",
                acc[0].lo, acc[0].hi);
        for (int j = 0; j < nacc; j++) {
            HistAcc *a = &acc[j];
            long long tot = 0;
            for (int b = 0; b < a->nbins; b++) tot += a->counts[b];
            fprintf(dat, "# layer %ld (%d runs): bin centre, fraction, count\n", a->layer, a->nruns);
            double w = (a->hi - a->lo) / a->nbins;
            for (int b = 0; b < a->nbins; b++)
                fprintf(dat, "%.10g %.10g %lld\n", a->lo + (b + 0.5) * w, tot ? (double)a->counts[b] / tot : 0.0,
                        a->counts[b]);
            fprintf(dat, "\n\n");
            fprintf(gp, "%s '%s.dat' index %d using 1:2 with histeps lw 2", j ? ", \\\n    " : "", base, j);
            gp_look(gp, j, j / GP_NCOLOURS, -1); /* as gp_series_look, without points */
            fprintf(gp, " title 'layer %ld'", a->layer);
        }
        fprintf(gp, "\n");
        gp_tail(r, gp, base);
    }
    char *code = rc == 0 ? rep_md_code_str(r, v->label) : NULL;
    if (!code) rc = -1;
    rc = plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                   "Gate scores of %s per layer (last step, %d run%s summed)", code ? code : "", runs_with,
                   runs_with == 1 ? "" : "s");
    free(code);
    free(base);
    return rc;
}

/* Gate-score histograms of variant k, summed over its finished runs. */
static int plot_gate_hist(R *r, RSweep *s, int k) {
    const RVar *v = &s->vars[k];
    Hists h = {.key = "gate"};
    int rc = 0;
    for (int i = 0; rc == 0 && i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (rep_is_finished(u)) rc = hist_load_run(r, &h, u);
    }
    if (rc == 0 && h.n > 0) rc = gate_hist_write(r, s, k, &h);
    for (int j = 0; j < h.n; j++) free(h.a[j].counts);
    free(h.a);
    return rc;
}

/* A series of the lr plot: runs that differ only in lr and seed. */
typedef struct {
    const char *key; /* the runs' RRun.cfg_key (not owned) */
    char *name;
    Pts fin;  /* (lr, final val loss) of finished runs */
    Pts div;  /* (lr, 0) of diverged runs */
} LrSeries;

/* The label without its learning rate: every "lr" (or "train.lr") that
 * starts the label or follows one of - _ . , and is followed by an
 * optional '=' and a number is removed with the separator before it
 * ("lr=1e-3,position=sdpa" -> "position=sdpa", "baseline-lr3.0e-3" ->
 * "baseline"); "all runs" if nothing is left. */
static char *strip_lr(R *r, const char *label) {
    size_t n = strlen(label);
    char *out = malloc(n + 16);
    if (!out) return rep_oom(r), NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int at_start = i == 0 || strchr("-_.,", label[i - 1]) != NULL;
        if (at_start && label[i] == 'l' && label[i + 1] == 'r') {
            size_t j = i + 2;
            if (label[j] == '=') j++;
            if ((label[j] >= '0' && label[j] <= '9') || label[j] == '.') {
                char *end;
                (void)strtod(label + j, &end);
                if (end > label + j) {
                    /* drop "train." before it, then the separator before that */
                    if (o >= 6 && strncmp(out + o - 6, "train.", 6) == 0) o -= 6;
                    if (o > 0 && strchr("-_,", out[o - 1])) o--;
                    i = (size_t)(end - label);
                    /* at the start, drop the separator after it instead */
                    if (o == 0 && i < n && strchr("-_,", label[i])) i++;
                    continue;
                }
            }
        }
        out[o++] = label[i++];
    }
    out[o] = '\0';
    if (!o) strcpy(out, "all runs");
    return out;
}

/* The lr plot's series and the range of its final losses. */
typedef struct {
    LrSeries *ser;
    int n, cap;
    double ymin, ymax;
} LrPlot;

/* Run u (finished or diverged, with an lr and a config) into its series
 * of p, a new one if no series has its config key. */
static int lr_add_run(R *r, LrPlot *p, const RRun *u) {
    char *name = strip_lr(r, u->label);
    if (!name) return -1;
    LrSeries *q = NULL;
    for (int j = 0; j < p->n; j++)
        if (strcmp(p->ser[j].key, u->cfg_key) == 0) q = &p->ser[j];
    if (!q) {
        if (rep_grow(r, (void **)&p->ser, &p->cap, p->n + 1, sizeof *p->ser)) {
            free(name);
            return -1;
        }
        q = &p->ser[p->n++];
        memset(q, 0, sizeof *q);
        q->key = u->cfg_key;
        q->name = name;
    } else {
        if (!strstr(q->name, name)) { /* labels that differ beyond lr: name both */
            char *nn = rep_fmt(r, "%s / %s", q->name, name);
            if (!nn) {
                free(name);
                return -1;
            }
            free(q->name);
            q->name = nn;
        }
        free(name);
    }
    if (rep_is_finished(u) && !isnan(u->val_loss) && isfinite(u->val_loss)) {
        if (u->val_loss < p->ymin) p->ymin = u->val_loss;
        if (u->val_loss > p->ymax) p->ymax = u->val_loss;
        return pts_add(r, &q->fin, u->lr, u->val_loss);
    }
    return strcmp(u->status, "diverged") == 0 ? pts_add(r, &q->div, u->lr, 0) : 0;
}

/* The lr plot's data file and script from p (p->n > 0). */
static void lr_write(R *r, const RSweep *s, LrPlot *p, const char *base, FILE *dat, FILE *gp) {
    double ymin = p->ymin, ymax = p->ymax;
    if (!isfinite(ymin)) ymin = 0, ymax = 1;
    double span = ymax - ymin > 0 ? ymax - ymin : fabs(ymax) * 0.1 + 0.1;
    double ydiv = ymax + 0.15 * span;
    gp_head(r, gp, base, "final validation loss against peak learning rate; diverged runs as crosses");
    fprintf(gp, "set title ");
    gp_str(gp, s->name);
    fprintf(gp, "\nset logscale x\nset autoscale xfix\nset format x '%%g'\nset xlabel 'train.lr (log scale)'\n"
                "set ylabel 'final validation loss, mean +- std over seeds'\n"
                "set yrange [%.10g:%.10g]\nset offsets graph 0.05, graph 0.05, 0, 0\n",
            ymin - 0.1 * span, ymax + 0.3 * span);
    /* ticks at the learning rates tried, when they are few (gnuplot would label only the powers of ten) */
    double xlo = INFINITY, xhi = -INFINITY, lrs[12];
    int nlr = 0;
    for (int j = 0; j < p->n; j++) {
        const Pts *v[2] = {&p->ser[j].fin, &p->ser[j].div};
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < v[h]->n; i++) {
                double x = v[h]->p[i].x;
                xlo = fmin(xlo, x);
                xhi = fmax(xhi, x);
                int seen = 0;
                for (int k = 0; k < nlr && k < 12 && !seen; k++) seen = lrs[k] == x;
                if (!seen && nlr++ < 12) lrs[nlr - 1] = x;
            }
    }
    if (nlr > 12) {
        gp_log_tics(gp, "x", xlo, xhi);
    } else if (nlr > 0) {
        qsort(lrs, (size_t)nlr, sizeof *lrs, dbl_cmp);
        fprintf(gp, "set xtics (");
        for (int k = 0; k < nlr; k++) fprintf(gp, "%s\"%g\" %.10g", k ? ", " : "", lrs[k], lrs[k]);
        fprintf(gp, ")\n");
    }
    fprintf(gp, "plot");
    int blocks = 0, ndiv = 0;
    for (int j = 0; j < p->n; j++) {
        LrSeries *q = &p->ser[j];
        ndiv += q->div.n;
        if (!q->fin.n) continue;
        fprintf(dat, "# %s: lr, mean final val loss, std, finished runs\n", q->name);
        pts_write(&q->fin, dat, NULL, NULL, NULL);
        fprintf(dat, "\n\n");
        fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorlines", blocks ? ", \\\n    " : "", base, blocks);
        gp_series_look(gp, blocks);
        fprintf(gp, " title ");
        gp_str(gp, q->name);
        blocks++;
    }
    if (ndiv) {
        fprintf(dat, "# diverged runs: lr, drawn at, series\n");
        for (int j = 0; j < p->n; j++)
            for (int i = 0; i < p->ser[j].div.n; i++) fprintf(dat, "%.10g %.10g %d\n", p->ser[j].div.p[i].x, ydiv, j);
        fprintf(dat, "\n\n");
        fprintf(gp, "%s '%s.dat' index %d using 1:2 with points pt 2 ps 2.5 lw 2 lc rgb 'red' title 'diverged'",
                blocks ? ", \\\n    " : "", base, blocks);
    }
    fprintf(gp, "\n");
    gp_tail(r, gp, base);
}

/* Final val loss against train.lr, a line per series (LrSeries). */
static int plot_lr(R *r, RSweep *s) {
    LrPlot p = {NULL, 0, 0, INFINITY, -INFINITY};
    int rc = 0;
    for (int i = 0; rc == 0 && i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        int ended = rep_is_finished(u) || strcmp(u->status, "diverged") == 0;
        if (ended && !isnan(u->lr) && u->cfg_key) rc = lr_add_run(r, &p, u);
    }
    char *base = NULL;
    if (rc == 0 && p.n > 0) {
        base = rep_fmt(r, "%s-lr", s->fname);
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
            rc = -1;
        else
            lr_write(r, s, &p, base, dat, gp);
        rc = plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                       "Final validation loss against learning rate (log scale; diverged runs as red crosses above the "
                       "curves)");
    }
    free(base);
    for (int j = 0; j < p.n; j++) {
        free(p.ser[j].name);
        free(p.ser[j].fin.p);
        free(p.ser[j].div.p);
    }
    free(p.ser);
    return rc;
}

/* Viridis (matplotlib's default colour map) at 9 even steps: lightness
 * rises steadily from dark violet to yellow, so equal steps in value look
 * like equal steps in colour, and the map stays ordered in grey and for
 * colour-blind readers (a rainbow has neither). */
#define GP_VIRIDIS                                                                                                   \
    "set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', "           \
    "6 '#5ec962', 7 '#addc30', 8 '#fde725')"

/* Per-head F-Attn of every row that has it: one panel per row, side by
 * side, on one colour scale 0..1 (data: one matrix block per panel, rows
 * layers, columns heads). */
static int plot_heads(R *r, RSweep *s) {
    int panels = 0;
    for (int k = 0; k < s->nvars; k++) panels += s->vars[k].heads.nl > 0;
    if (!panels) return 0;
    char *base = rep_fmt(r, "%s-fattn-heads", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = base ? plot_open(r, base, &dat, &gp, &datp, &gpp) : -1;
    if (rc == 0) {
        char what[160];
        snprintf(what, sizeof what, "%s per layer and query head, last step, mean over seeds; one panel per row",
                 rep_head_measure(s));
        gp_head(r, gp, base, what);
        fprintf(gp, "unset grid\nunset key\nset title ");
        gp_str(gp, s->name);
        /* more than 4 panels: labels alternate between two heights so long ones do not overlap */
        int stagger = panels > 4;
        fprintf(gp, " offset 0,%d\nset cbrange [0:1]\nset cblabel '%s'\n"
                    "%s\nset xlabel 'query head (one panel per row)'\nset ylabel 'layer'\n"
                    "set ytics 1\nset xtics () scale 0\n%s",
                stagger ? 2 : 1,
                s->sink_bb ? "share of attention on BOS (F-Attn; Bigram-Backcopy: from other queries)"
                           : "F-Attn (share of attention on position 0)",
                GP_VIRIDIS, stagger ? "set tmargin 5\n" : "");
        int x0 = 0, nl = 0, i = 0;
        for (int k = 0; k < s->nvars; k++) {
            const RVar *v = &s->vars[k];
            const HeadMap *m = &v->heads;
            if (!m->nl) continue;
            fprintf(dat, "# %s (%d runs): F-Attn, rows layers 0..%d, columns heads 0..%d\n", v->label, v->n_sink,
                    m->nl - 1, m->nh - 1);
            for (int l = 0; l < m->nl; l++)
                for (int h = 0; h < m->nh; h++)
                    fprintf(dat, "%.10g%c", m->v[l * m->nh + h], h + 1 < m->nh ? ' ' : '\n');
            fprintf(dat, "\n\n");
            for (int h = 0; h < m->nh; h++) fprintf(gp, "set xtics add ('%d' %d)\n", h, x0 + h);
            fprintf(gp, "set label %d ", ++i);
            gp_str(gp, v->label);
            fprintf(gp, " at %g, graph %g center\n", x0 + (m->nh - 1) / 2.0, stagger && i % 2 == 0 ? 1.08 : 1.03);
            x0 += m->nh + 1;
            if (m->nl > nl) nl = m->nl;
        }
        fprintf(gp, "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nplot", x0 - 1.5, nl - 0.5);
        x0 = i = 0;
        for (int k = 0; k < s->nvars; k++) {
            const HeadMap *m = &s->vars[k].heads;
            if (!m->nl) continue;
            fprintf(gp, "%s '%s.dat' index %d matrix using ($1+%d):2:3 with image", i ? ", \\\n    " : "", base, i, x0);
            x0 += m->nh + 1;
            i++;
        }
        fprintf(gp, "\n");
        gp_tail(r, gp, base);
    }
    rc = plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                   "%s per layer and query head (last step, mean over seeds; one panel per row, colour scale 0 to 1)",
                   rep_head_measure(s));
    free(base);
    return rc;
}

/* Validation PPL against context length: a line per (row, series), colour
 * by row, dash type by series, error bars the std over seeds. */
static int plot_ppl(R *r, RSweep *s) {
    size_t cap = (size_t)s->nev + 1;
    long long *lens = malloc(sizeof *lens * cap);
    double *buf = malloc(sizeof *buf * cap);
    char *base = rep_fmt(r, "%s-ppl-vs-length", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0;
    if (!lens || !buf)
        rc = rep_oom(r);
    else if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    if (rc == 0) {
        gp_head(r, gp, base, "validation perplexity against context length, mean +- std over seeds");
        fprintf(gp, "set title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset logscale x 2\nset logscale y\nset format x '%%g'\nset format y '%%g'\n"
                    "set autoscale yfix\nset offsets 0, 0, graph 0.05, graph 0.05\n"
                    "set xlabel 'context length (tokens, log2 scale)'\n"
                    "set ylabel 'validation PPL (log scale), mean +- std over seeds'\n");
        if (!isnan(s->train_len))
            fprintf(gp, "set arrow from %g, graph 0 to %g, graph 1 nohead dt 3\n", s->train_len, s->train_len);
        /* the y ticks from the range of mean +- std (the mean where that would not be positive) */
        double lo = INFINITY, hi = -INFINITY;
        for (int j = 0; j < s->neser; j++) {
            int nl = rep_eval_lens(s, j, 0, lens);
            for (int k = 0; k < s->nvars; k++)
                for (int q = 0; q < nl; q++) {
                    double m, sd;
                    if (!rep_eval_stats(s, k, j, 0, lens[q], buf, &m, &sd) || !isfinite(m)) continue;
                    if (isnan(sd)) sd = 0;
                    lo = fmin(lo, m - sd > 0 ? m - sd : m);
                    hi = fmax(hi, m + sd);
                }
        }
        gp_log_tics(gp, "y", lo, hi);
        fprintf(gp, "plot");
    }
    for (int j = 0; rc == 0 && j < s->neser; j++) {
        int nl = rep_eval_lens(s, j, 0, lens);
        for (int k = 0; rc == 0 && k < s->nvars; k++) {
            int lines = 0;
            for (int q = 0; q < nl; q++) {
                double m, sd;
                int n = rep_eval_stats(s, k, j, 0, lens[q], buf, &m, &sd);
                if (!n) continue;
                if (!lines++)
                    fprintf(dat, "# %s, %s: context length, mean val PPL, std, runs\n", s->vars[k].label,
                            s->eser[j].name);
                fprintf(dat, "%lld %.10g %.10g %d\n", lens[q], m, isnan(sd) ? 0 : sd, n);
            }
            if (!lines) continue;
            fprintf(dat, "\n\n");
            char *t = rep_fmt(r, "%s (%s)", s->vars[k].label, s->eser[j].name);
            if (!t) {
                rc = -1;
                break;
            }
            /* colour by row, dash type by series; the point type by row too, for rows past the colours */
            fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorlines", blocks ? ", \\\n    " : "", base, blocks);
            gp_look(gp, k, j, k);
            fprintf(gp, " title ");
            gp_str(gp, t);
            free(t);
            blocks++;
        }
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "Validation perplexity against context length (log-log; one colour per row, one dash type per RoPE "
                   "scaling; error bars: std over seeds)");
    free(base);
    free(lens);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* quantization and dropped heads (report_infer.c)                     */
/* ------------------------------------------------------------------ */

/* ΔPPL% per quantization scheme (x: the schemes, by name) and row (one
 * colour and point type per row, offset a little along x), mean ± std
 * over the row's runs; a dashed zero line. */
static int plot_quant(R *r, RSweep *s) {
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    char *base = rep_fmt(r, "%s-quant", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0, nrows = 0;
    if (!buf)
        rc = rep_oom(r);
    else if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        double m, sd;
        nrows += rep_infer_stats(s, k, INF_QUANT, "float", NAN, INF_PPL, buf, &m, &sd) > 0;
    }
    if (rc == 0) {
        gp_head(r, gp, base, "PPL increase under each quantization scheme, % of the float PPL, mean +- std over seeds");
        fprintf(gp, "set title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel 'quantization scheme'\n"
                    "set ylabel 'PPL - float PPL (%% of float PPL), mean +- std over seeds'\n"
                    "set xrange [-0.5:%g]\nset offsets 0, 0, graph 0.05, graph 0.05\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nset xtics (",
                s->nqs - 0.5);
        for (int q = 0; q < s->nqs; q++) {
            fprintf(gp, "%s", q ? ", " : "");
            gp_str(gp, s->qs[q].name);
            fprintf(gp, " %d", q);
        }
        fprintf(gp, ")\nplot");
    }
    for (int k = 0, row = 0; rc == 0 && k < s->nvars; k++) {
        int lines = 0;
        double shift = nrows > 1 ? 0.3 * ((double)row / (nrows - 1) - 0.5) : 0;
        for (int q = 0; q < s->nqs; q++) {
            double m, sd;
            int n = rep_infer_stats(s, k, INF_QUANT, s->qs[q].name, NAN, INF_DPCT, buf, &m, &sd);
            if (!n) continue;
            if (!lines++)
                fprintf(dat, "# %s: scheme index (offset), mean dPPL %%, std, runs, scheme index\n", s->vars[k].label);
            fprintf(dat, "%.10g %.10g %.10g %d %d\n", q + shift, m, isnan(sd) ? 0 : sd, n, q);
        }
        if (!lines) continue;
        row++;
        fprintf(dat, "\n\n");
        fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorbars ps 1.5 lw 2", blocks ? ", \\\n    " : "", base,
                blocks);
        gp_series_look(gp, blocks);
        fprintf(gp, " title ");
        gp_str(gp, s->vars[k].label);
        blocks++;
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "PPL increase under simulated quantization (ΔPPL in %% of each run's float PPL, per scheme and row; "
                   "error bars: std over seeds; the rows are offset slightly along x; dashed: no change)");
    free(base);
    free(buf);
    return rc;
}

/* Scheme q: each run's ΔPPL% against its M-Act (one point per run, colour
 * and point type by row); log x when M-Act spans a decade or more. */
static int plot_quant_mact(R *r, RSweep *s, int q) {
    const InferScheme *qs = &s->qs[q];
    char *nm = rep_safe_name(r, qs->name);
    char *base = nm ? rep_fmt(r, "%s-quant-mact-%d-%s", s->fname, q, nm) : NULL;
    free(nm);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = !base || plot_open(r, base, &dat, &gp, &datp, &gpp) ? -1 : 0, blocks = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->nruns; i++) {
        double d = rep_infer_value(s, i, INF_QUANT, qs->name, NAN, INF_DPCT), m = s->runs[i].m_act;
        if (isfinite(d) && isfinite(m)) lo = fmin(lo, m), hi = fmax(hi, m);
    }
    int logx = lo > 0 && hi >= 10 * lo;
    if (rc == 0) {
        gp_head(r, gp, base, "each run's PPL increase under a quantization scheme against its M-Act");
        fprintf(gp, "set title ");
        const RepCorr *c = &qs->corr;
        char *t = isnan(c->r) ? rep_fmt(r, "%s: %s (n = %d)", s->name, qs->name, c->n)
                              : rep_fmt(r, "%s: %s (Pearson r = %+.3f, Spearman rho = %+.3f, n = %d)", s->name,
                                        qs->name, c->r, c->rho, c->n);
        if (!t) rc = -1;
        if (t) gp_str(gp, t);
        free(t);
        fprintf(gp, "\nset xlabel 'M-Act (max |h| of a layer output, last evaluation%s)'\n"
                    "set ylabel ",
                logx ? "; log scale" : "");
        t = rep_fmt(r, "PPL - float PPL under %s (%% of float PPL)", qs->name);
        if (!t) rc = -1;
        if (t) gp_str(gp, t);
        free(t);
        fprintf(gp, "\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\n");
        if (logx) {
            fprintf(gp, "set logscale x\n");
            gp_log_tics(gp, "x", lo, hi);
        }
        fprintf(gp, "plot");
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        int lines = 0;
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            double d = rep_infer_value(s, v->runs[i], INF_QUANT, qs->name, NAN, INF_DPCT);
            if (!isfinite(d) || !isfinite(u->m_act)) continue;
            if (!lines++) fprintf(dat, "# %s: M-Act, dPPL %%, seed\n", v->label);
            fprintf(dat, "%.10g %.10g %lld\n", u->m_act, d, u->seed);
        }
        if (!lines) continue;
        fprintf(dat, "\n\n");
        fprintf(gp, "%s '%s.dat' index %d using 1:2 with points ps 1.5 lw 2", blocks ? ", \\\n    " : "", base,
                blocks);
        gp_series_look(gp, k);
        fprintf(gp, " title ");
        gp_str(gp, v->label);
        blocks++;
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    char *code = rc == 0 ? rep_md_code_str(r, qs->name) : NULL;
    if (!code) rc = -1;
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "ΔPPL under %s (%% of the float PPL) against M-Act, one point per run, one colour per row%s",
                   code ? code : "", logx ? " (log x)" : "");
    free(code);
    free(base);
    return rc;
}

/* The curves of the drop plot: a rule at tau (matched to the gate) or at
 * a fixed fraction. */
static const struct {
    int kind;
    const char *rule, *name;
} DROP_CURVES[] = {
    {INF_TAU, "gate", "gate"},
    {INF_TAU, "random", "random (matched)"},
    {INF_TAU, "entropy", "entropy (matched)"},
    {INF_FRAC, "random", "random (fixed F)"},
    {INF_FRAC, "entropy", "entropy (fixed F)"},
};
#define NDROP_CURVES ((int)(sizeof DROP_CURVES / sizeof DROP_CURVES[0]))

/* PPL against the share of (token, head) pairs dropped: per row a curve
 * per rule (DROP_CURVES: colour by row, dash and point type by rule),
 * each point the mean over the row's runs at one tau or F (x: the mean
 * share dropped, error bars the std of PPL), from the float model at 0
 * when the row has the reference; log y. */
static int plot_drop(R *r, RSweep *s) {
    double *buf = malloc(sizeof *buf * ((size_t)s->nruns + 1));
    char *base = rep_fmt(r, "%s-drop", s->fname);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = 0, blocks = 0;
    if (!buf)
        rc = rep_oom(r);
    else if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))
        rc = -1;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; rc == 0 && i < s->ninf; i++)
        if (s->inf[i].kind != INF_QUANT || strcmp(s->inf[i].name, "float") == 0) {
            lo = fmin(lo, s->inf[i].x[INF_PPL]);
            hi = fmax(hi, s->inf[i].x[INF_PPL]);
        }
    if (rc == 0) {
        gp_head(r, gp, base, "validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds");
        fprintf(gp, "set key below\nset title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset logscale y\nset format y '%%g'\nset autoscale yfix\n"
                    "set offsets 0, 0, graph 0.05, graph 0.05\nset xrange [-2:*]\n"
                    "set xlabel '(token, head) pairs dropped (%%)'\n"
                    "set ylabel 'validation PPL (log scale), mean +- std over seeds'\n");
        gp_log_tics(gp, "y", lo, hi);
        fprintf(gp, "plot");
    }
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        double fm, fsd;
        int nf = rep_infer_stats(s, k, INF_QUANT, "float", NAN, INF_PPL, buf, &fm, &fsd);
        for (int c = 0; rc == 0 && c < NDROP_CURVES; c++) {
            int kind = DROP_CURVES[c].kind, nv = kind == INF_TAU ? s->ntau : s->nfrac, lines = 0;
            for (int j = 0; j < nv; j++) {
                double v = kind == INF_TAU ? s->taus[j] : s->fracs[j], m, sd, dm, dsd;
                int n = rep_infer_stats(s, k, kind, DROP_CURVES[c].rule, v, INF_PPL, buf, &m, &sd);
                int nd = rep_infer_stats(s, k, kind, DROP_CURVES[c].rule, v, INF_DROP, buf, &dm, &dsd);
                if (!n || !nd) continue;
                if (!lines++) {
                    fprintf(dat, "# %s, %s: pairs dropped (%%, mean), mean PPL, std, runs, %s\n", s->vars[k].label,
                            DROP_CURVES[c].name, kind == INF_TAU ? "tau" : "F");
                    if (nf) fprintf(dat, "0 %.10g %.10g %d float\n", fm, isnan(fsd) ? 0 : fsd, nf);
                }
                fprintf(dat, "%.10g %.10g %.10g %d %.10g\n", 100 * dm, m, isnan(sd) ? 0 : sd, n, v);
            }
            if (!lines) continue;
            fprintf(dat, "\n\n");
            char *t = rep_fmt(r, "%s: %s", s->vars[k].label, DROP_CURVES[c].name);
            if (!t) {
                rc = -1;
                break;
            }
            fprintf(gp, "%s '%s.dat' index %d using 1:2:3 with yerrorlines", blocks ? ", \\\n    " : "", base, blocks);
            gp_look(gp, k, c, c); /* colour by row; dash and point type by rule */
            fprintf(gp, " title ");
            gp_str(gp, t);
            free(t);
            blocks++;
        }
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base,
                   "Validation PPL against the share of (token, head) pairs dropped (log y; one colour per row; gate "
                   "threshold solid, its matched random and entropy controls dashed and dotted, fixed-fraction random "
                   "and entropy dash-dotted; curves start at the float model; error bars: std over seeds)");
    free(base);
    free(buf);
    return rc;
}

/* Budget series b: Δ final val loss of each contrast against tokens per
 * run (log x), error bars its 95% CI (a budget with one seed pair: the
 * point alone), a dashed line at 0; the contrasts are offset by a few per
 * cent along x so that their bars do not hide one another. */
int rep_plot_budget(R *r, RBudget *b) {
    const RSweep *s0 = &r->sw[b->sw[0]];
    int nc = s0->nvars, blocks = 0;
    RepDelta *d = calloc((size_t)nc * (size_t)b->n + 1, sizeof *d);
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    int rc = d ? 0 : rep_oom(r);
    double ylo = 0, yhi = 0; /* 0 is always in range: the zero line */
    for (int k = 0; rc == 0 && k < nc; k++)
        for (int m = 0; rc == 0 && m < b->n; m++) {
            const RSweep *s = &r->sw[b->sw[m]];
            int j = rep_row_of(s, s0->vars[k].label);
            RepDelta *x = &d[k * b->n + m];
            *x = (RepDelta){0, NAN, NAN, NAN, NAN};
            if (k == s0->base || j < 0) continue;
            rc = rep_budget_delta(r, s, j, offsetof(RRun, val_loss), x);
            if (rc == 0 && x->n > 0) {
                ylo = fmin(ylo, isnan(x->lo) ? x->d : x->lo);
                yhi = fmax(yhi, isnan(x->hi) ? x->d : x->hi);
            }
        }
    if (rc == 0) rc = plot_open(r, b->fname, &dat, &gp, &datp, &gpp);
    if (rc == 0) {
        const RSweep *sl = &r->sw[b->sw[b->n - 1]];
        char *title = rep_fmt(r, "%s ... %s: %s", s0->name, sl->name, "row - baseline at each budget");
        if (!title) rc = -1;
        gp_head(r, gp, b->fname, "final val loss of each row minus the baseline's, against tokens per run");
        fprintf(gp, "set title ");
        gp_str(gp, title ? title : "");
        free(title);
        double span = yhi - ylo > 0 ? yhi - ylo : 0.1;
        fprintf(gp, "\nset logscale x\nset xrange [%.10g:%.10g]\nset yrange [%.10g:%.10g]\n"
                    "set xlabel 'tokens per run (log scale)'\n"
                    "set ylabel 'final val loss - baseline (nats), mean over seed pairs, 95%% CI'\n"
                    "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2\nset xtics (",
                r->sw[b->sw[0]].tokens / 1.5, sl->tokens * 1.5, ylo - 0.1 * span, yhi + 0.1 * span);
        for (int m = 0; m < b->n; m++) {
            double t = r->sw[b->sw[m]].tokens;
            char *lab = rep_fmt_count(r, t, "?");
            if (!lab) {
                rc = -1;
                break;
            }
            fprintf(gp, "%s", m ? ", " : "");
            gp_str(gp, lab);
            fprintf(gp, " %.10g", t);
            free(lab);
        }
        fprintf(gp, ")\nplot");
    }
    int ndata = 0; /* contrasts with a point: the offsets are centred on them */
    for (int k = 0; k < nc && d; k++)
        for (int m = 0; m < b->n; m++)
            if (d[k * b->n + m].n > 0) {
                ndata++;
                break;
            }
    for (int k = 0; rc == 0 && k < nc; k++) {
        int lines = 0;
        double shift = 1 + 0.03 * (blocks - (ndata - 1) / 2.0);
        for (int m = 0; m < b->n; m++) {
            const RepDelta *x = &d[k * b->n + m];
            if (x->n == 0 || isnan(x->d)) continue;
            if (!lines++)
                fprintf(dat, "# %s - %s: tokens (offset), delta, CI low, CI high, seed pairs, tokens\n",
                        s0->vars[k].label, s0->vars[s0->base].label);
            double t = r->sw[b->sw[m]].tokens;
            fprintf(dat, "%.10g %.10g %.10g %.10g %d %.10g\n", t * shift, x->d, isnan(x->lo) ? x->d : x->lo,
                    isnan(x->hi) ? x->d : x->hi, x->n, t);
        }
        if (!lines) continue;
        fprintf(dat, "\n\n");
        fprintf(gp, "%s '%s.dat' index %d using 1:2:3:4 with yerrorlines", blocks ? ", \\\n    " : "", b->fname,
                blocks);
        gp_series_look(gp, blocks);
        fprintf(gp, " title ");
        gp_str(gp, s0->vars[k].label);
        blocks++;
    }
    if (rc == 0) gp_end(r, gp, b->fname, blocks);
    rc = plot_done(r, NULL, b, rc, blocks, dat, gp, datp, gpp, b->fname,
                   "Δ final val loss against the training budget (row minus the baseline of the same budget, paired "
                   "by seed; log x; error bars: 95%% CI; dashed: no effect; the rows are offset slightly along x)");
    free(d);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Bigram-Backcopy                                                     */
/* ------------------------------------------------------------------ */

/* What a Bigram-Backcopy plot against step draws: keys[q] for query type q
 * (0: other, 1: trigger), named types[q]; at each run's BB head (head) or
 * at context ''. */
typedef struct {
    const char *suffix;         /* the file name: SWEEP-suffix */
    const char *const *keys;    /* [2] */
    const char *types[2];       /* "other queries", "trigger queries" */
    int head;
    const char *what, *ylabel;  /* the script's comment; the y axis */
    const char *yrange;         /* "[0:1]", or NULL: autoscale */
    const char *caption;        /* report.md's title, before "(mean over seeds...)" */
} BBPlot;

/* A Bigram-Backcopy plot against step: for every row a line per query type
 * (other: solid, trigger: dashed), the mean over the row's finished runs
 * with the probes, a band of +- one std when some step has two runs or
 * more; colour and point type by row (past the colours the point type
 * still tells rows apart). */
static int plot_bb_steps(R *r, RSweep *s, const BBPlot *p) {
    int ns = 2 * s->nvars;
    Pts *all = calloc((size_t)ns + 1, sizeof *all);
    int rc = all ? 0 : rep_oom(r);
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        const RVar *v = &s->vars[k];
        for (int i = 0; rc == 0 && i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (!rep_is_finished(u) || !u->has_bb || (p->head && u->bb_l < 0)) continue;
            char *ctx = p->head ? rep_fmt(r, "layer=%d,head=%d", u->bb_l, u->bb_h) : rep_dup(r, "");
            if (!ctx) rc = -1;
            for (int q = 0; rc == 0 && q < 2; q++) rc = q_steps_ctx(r, u->run_id, p->keys[q], ctx, &all[2 * k + q]);
            free(ctx);
        }
    }
    char *base = rc == 0 ? rep_fmt(r, "%s-%s", s->fname, p->suffix) : NULL;
    FILE *dat = NULL, *gp = NULL;
    char *datp = NULL, *gpp = NULL;
    if (rc == 0 && (!base || plot_open(r, base, &dat, &gp, &datp, &gpp))) rc = -1;
    int blocks = 0, multi = 0;
    for (int j = 0; rc == 0 && j < ns; j++) {
        if (!all[j].n) continue;
        fprintf(dat, "# %s, %s: step, mean, std, runs\n", s->vars[j / 2].label, p->types[j % 2]);
        pts_write(&all[j], dat, NULL, NULL, &multi);
        fprintf(dat, "\n\n");
        blocks++;
    }
    if (rc == 0) {
        gp_head(r, gp, base, p->what);
        /* two lines per row with long labels: the key below the plot, so that it leaves the plot its width */
        fprintf(gp, "set key below\nset title ");
        gp_str(gp, s->name);
        fprintf(gp, "\nset xlabel 'step'\n");
        if (p->yrange) fprintf(gp, "set yrange %s\n", p->yrange);
        fprintf(gp, "set ylabel ");
        char *yl = multi ? rep_fmt(r, "%s (band: +- std)", p->ylabel) : rep_dup(r, p->ylabel);
        if (!yl) rc = -1;
        if (yl) gp_str(gp, yl);
        free(yl);
        fprintf(gp, "\nplot");
    }
    /* bands first, so that no band covers another series' line */
    for (int j = 0, b = 0; rc == 0 && multi && j < ns; j++) {
        if (!all[j].n) continue;
        fprintf(gp, "%s '%s.dat' index %d using 1:($2-$3):($2+$3) with filledcurves fc rgb '%s' "
                    "fs transparent solid 0.15 noborder notitle",
                b ? ", \\\n    " : "", base, b, GP_COLOURS[(j / 2) % GP_NCOLOURS]);
        b++;
    }
    for (int j = 0, b = 0; rc == 0 && j < ns; j++) {
        if (!all[j].n) continue;
        fprintf(gp, "%s '%s.dat' index %d using 1:2 with linespoints", b || multi ? ", \\\n    " : "", base, b);
        gp_look(gp, j / 2, j % 2, j / 2); /* colour by row; dash type by query type: other solid, trigger dashed */
        char *t = rep_fmt(r, "%s (%s)", s->vars[j / 2].label, p->types[j % 2]);
        if (!t) {
            rc = -1;
            break;
        }
        fprintf(gp, " title ");
        gp_str(gp, t);
        free(t);
        b++;
    }
    if (rc == 0) gp_end(r, gp, base, blocks);
    for (int j = 0; all && j < ns; j++) free(all[j].p);
    free(all);
    rc = plot_done(r, s, NULL, rc, blocks, dat, gp, datp, gpp, base, "%s (mean over seeds%s)", p->caption,
                   multi ? "; band: +- std" : "");
    free(base);
    return rc;
}

/* Row k's gate-score histograms by query type (bb_gate_other,
 * bb_gate_trigger; per layer, last step), summed over its finished runs:
 * one plot, a line per layer and type, each a share of the layer's scores
 * of that type; colour by layer, other queries solid, trigger queries
 * dashed.  Nothing when the row has none. */
static int plot_bb_gate(R *r, RSweep *s, int k) {
    const RVar *v = &s->vars[k];
    Hists h[2] = {{.key = REP_BB_GATE_KEYS[0]}, {.key = REP_BB_GATE_KEYS[1]}};
    static const char *const types[2] = {"other", "trigger"};
    int rc = 0;
    for (int i = 0; rc == 0 && i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        for (int q = 0; rc == 0 && q < 2; q++)
            if (rep_is_finished(u)) rc = hist_load_run(r, &h[q], u);
    }
    char *base = NULL, *code = NULL;
    if (rc == 0 && h[0].n + h[1].n > 0) {
        FILE *dat = NULL, *gp = NULL;
        char *datp = NULL, *gpp = NULL;
        int runs_with = h[0].runs_with > h[1].runs_with ? h[0].runs_with : h[1].runs_with;
        const HistAcc *first = h[0].n ? &h[0].a[0] : &h[1].a[0];
        char *lab = rep_safe_name(r, v->label);
        base = lab ? rep_fmt(r, "%s-bb-gate-%d-%s", s->fname, k, lab) : NULL;
        free(lab);
        if (!base || plot_open(r, base, &dat, &gp, &datp, &gpp)) rc = -1;
        if (rc == 0) {
            gp_head(r, gp, base, "gate-score histograms by query type (Bigram-Backcopy), per layer, last step, "
                                 "counts summed over seeds");
            fprintf(gp, "set title ");
            char *t = rep_fmt(r, "%s: gate scores of %s by query type (last step, %d run%s summed)", s->name,
                              v->label, runs_with, runs_with == 1 ? "" : "s");
            if (!t) rc = -1;
            if (t) gp_str(gp, t);
            free(t);
            fprintf(gp, "\nset xlabel 'gate score'\nset ylabel 'share of the layer''s scores of the type'\n"
                        "set xrange [%.10g:%.10g]\nplot",
                    first->lo, first->hi);
        }
        for (int q = 0, b = 0; rc == 0 && q < 2; q++) {
            hists_sort(&h[q]);
            for (int j = 0; j < h[q].n; j++, b++) {
                const HistAcc *a = &h[q].a[j];
                long long tot = 0;
                for (int i = 0; i < a->nbins; i++) tot += a->counts[i];
                fprintf(dat, "# layer %ld, %s queries (%d runs): bin centre, share, count\n", a->layer, types[q],
                        a->nruns);
                double w = (a->hi - a->lo) / a->nbins;
                for (int i = 0; i < a->nbins; i++)
                    fprintf(dat, "%.10g %.10g %lld\n", a->lo + (i + 0.5) * w, tot ? (double)a->counts[i] / tot : 0.0,
                            a->counts[i]);
                fprintf(dat, "\n\n");
                fprintf(gp, "%s '%s.dat' index %d using 1:2 with histeps lw 2", b ? ", \\\n    " : "", base, b);
                gp_look(gp, (int)a->layer, q, -1); /* colour by layer, dash type by query type */
                fprintf(gp, " title 'layer %ld, %s'", a->layer, types[q]);
            }
        }
        if (rc == 0) {
            fprintf(gp, "\n");
            gp_tail(r, gp, base);
        }
        code = rc == 0 ? rep_md_code_str(r, v->label) : NULL;
        if (!code) rc = -1;
        rc = plot_done(r, s, NULL, rc, 1, dat, gp, datp, gpp, base,
                       "Gate scores of %s by query type, Bigram-Backcopy (per layer, last step, %d run%s summed; each "
                       "line a share of the layer's scores of that type; other queries solid, trigger queries dashed)",
                       code ? code : "", runs_with, runs_with == 1 ? "" : "s");
    }
    free(code);
    free(base);
    for (int q = 0; q < 2; q++) {
        for (int j = 0; j < h[q].n; j++) free(h[q].a[j].counts);
        free(h[q].a);
    }
    return rc;
}

/* The Bigram-Backcopy plots of sweep s: attention on BOS of the BB head
 * and the two losses against step, and each gated row's gate-score
 * histograms by query type. */
static int plot_bb(R *r, RSweep *s) {
    static const BBPlot bos = {
        "bb-bos", REP_BB_BOS_KEYS, {"other queries", "trigger queries"}, 1,
        "attention on BOS of the BB head by query type against step, mean +- std over seeds",
        "attention on BOS (BB head)", "[0:1]",
        "Attention on BOS against step, Bigram-Backcopy: each run's BB head (its query head with the largest "
        "attention on BOS from other queries at the last step); other queries solid, trigger queries dashed, one "
        "colour per row"};
    static const BBPlot loss = {
        "bb-loss", REP_BB_LOSS_KEYS, {"other positions", "trigger positions"}, 0,
        "validation loss on trigger and on other positions against step, mean +- std over seeds",
        "validation loss (nats)", NULL,
        "Validation loss on trigger and on other positions against step, Bigram-Backcopy: other positions solid, "
        "trigger positions dashed, one colour per row"};
    if (plot_bb_steps(r, s, &bos) || plot_bb_steps(r, s, &loss)) return -1;
    for (int k = 0; k < s->nvars; k++)
        if (plot_bb_gate(r, s, k)) return -1;
    return 0;
}

/* 1 if any finished run of variant k has a 'gate' histogram. */
static int has_gate_hist(R *r, const RSweep *s, int k, int *out) {
    const RVar *v = &s->vars[k];
    *out = 0;
    for (int i = 0; i < v->nruns && !*out; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!rep_is_finished(u)) continue;
        sqlite3_stmt *st;
        if (rep_q_prep(r, &st, "SELECT 1 FROM histograms WHERE run_id = ?1 AND key = ?2 LIMIT 1", "tt", u->run_id,
                       "gate"))
            return -1;
        int sr = sqlite3_step(st);
        if (sr == SQLITE_ROW) *out = 1;
        if (rep_q_done(r, st, sr, "read histograms")) return -1;
    }
    return 0;
}

int rep_make_plots(R *r, RSweep *s) {
    if (plot_series(r, s, "val_loss", 0, "validation loss (nats/token), mean over seeds",
                    "Validation loss against step", 0))
        return -1;
    if (plot_series(r, s, "f_attn", 1, "F-Attn (attention on position 0)", "F-Attn per layer", 0)) return -1;
    if (plot_series(r, s, "m_act", 1, "M-Act (max |h| of the layer output, log scale)", "M-Act per layer", 1))
        return -1;
    for (int k = 0; k < s->nvars; k++) {
        int has;
        if (has_gate_hist(r, s, k, &has)) return -1;
        if (has && plot_gate_hist(r, s, k)) return -1;
    }
    if (s->lr_plot && plot_lr(r, s)) return -1;
    if (s->has_sink && plot_heads(r, s)) return -1;
    if (s->has_bb && plot_bb(r, s)) return -1;
    if (s->nev && plot_ppl(r, s)) return -1;
    if (s->has_quant && plot_quant(r, s)) return -1;
    for (int q = 0; s->has_quant && q < s->nqs; q++)
        if (plot_quant_mact(r, s, q)) return -1;
    if (s->has_drop && plot_drop(r, s)) return -1;
    return 0;
}
