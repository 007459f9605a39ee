/*
 * report_gp.c — `gated report`: what every plot uses (report_plot.c lists
 * the plots): finding and running gnuplot, the pieces of a script
 * (terminals, quoting, the colours and dash types of series, log-axis
 * ticks), opening a plot's data file and script and registering it, and
 * the data the plots read (points aggregated by x, a metric against step,
 * gate-score histograms summed over runs).
 */
#include "lab/report/kit/report_kit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rep_pts_add(R *r, Pts *v, double x, double y) {
    if (isnan(y)) return 0;
    if (rep_grow(r, (void **)&v->p, &v->cap, v->n + 1, sizeof *v->p)) return -1;
    v->p[v->n++] = (Pt){x, y};
    return 0;
}

static int pt_cmp(const void *a, const void *b) {
    double x = ((const Pt *)a)->x, y = ((const Pt *)b)->x;
    return (x > y) - (x < y);
}

/* Sort by x and write "x mean std n" per distinct x (std 0 for n = 1);
 * returns the number of lines written.  The range of mean +- std (of the
 * mean where mean - std <= 0, for log axes) widens [*lo, *hi], and *multi
 * is set when some x has n > 1 (both may be NULL). */
int rep_pts_write(Pts *v, FILE *f, double *lo, double *hi, int *multi) {
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
void rep_gp_str(FILE *f, const char *s) {
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
    if (rep_run_gnuplot(r, "-e", "set terminal pngcairo", 0) == 0)
        r->term_png = "pngcairo";
    else if (rep_run_gnuplot(r, "-e", "set terminal png", 0) == 0)
        r->term_png = "png";
    r->term_svg = rep_run_gnuplot(r, "-e", "set terminal svg", 0) == 0;
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
void rep_gp_head(R *r, FILE *f, const char *base, const char *what) {
    fprintf(f, "# %s\n# written by `gated report`; run `gnuplot %s.gp` in this directory\n", what, base);
    if (gp_svg(r))
        fprintf(f, "set terminal svg " GP_SIZE " dynamic noenhanced background rgb 'white'\nset output '%s.svg'\n",
                base);
    else
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\n", gp_png(r), base);
    /* the key below the plot, in as many columns as fit: beside it, nine
     * labels took a third of the width from the data */
    fprintf(f, "set grid\nset key below\n");
}

/* After the plot command: the PNG as well (replot), then close. */
void rep_gp_tail(R *r, FILE *f, const char *base) {
    if (gp_svg(r) && gp_png(r))
        fprintf(f, "set terminal %s " GP_SIZE " noenhanced\nset output '%s.png'\nreplot\n", gp_png(r), base);
    fprintf(f, "set output\n");
}

void rep_gp_item(FILE *gp, int first, const char *base, int index, const char *how) {
    fprintf(gp, "%s '%s.dat' index %d %s", first ? "" : ", \\\n    ", base, index, how);
}

void rep_gp_title(FILE *gp, const char *text) {
    fprintf(gp, " title ");
    rep_gp_str(gp, text);
}

void rep_gp_band(FILE *gp, const char *base, int index, int c) {
    char how[160];
    snprintf(how, sizeof how, "using 1:($2-$3):($2+$3) with filledcurves fc rgb '%s' fs transparent solid 0.15 "
                              "noborder notitle", REP_GP_COLOURS[c % REP_GP_NCOLOURS]);
    rep_gp_item(gp, !index, base, index, how);
}

/* The end of a plot command of `blocks` series (a NaN placeholder when
 * there are none, so the script stays valid), then rep_gp_tail. */
void rep_gp_end(R *r, FILE *gp, const char *base, int blocks) {
    if (!blocks) fprintf(gp, " NaN notitle");
    fprintf(gp, "\n");
    rep_gp_tail(r, gp, base);
}

/* Line colours: Okabe & Ito's colour-blind-safe set, its yellow (unreadable
 * on white) replaced by grey.  One place: the number of colours is what
 * makes dash types necessary. */
const char *const REP_GP_COLOURS[REP_GP_NCOLOURS] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                                     "#e69f00", "#56b4e9", "#000000", "#999999"};
/* Dash types: gnuplot's solid, dashed, dotted, dash-dot, dash-dot-dot and
 * three patterns of our own (the built-in ones repeat after 5). */
static const char *const GP_DASHES[] = {"1", "2", "3", "4", "5", "(12,4,2,4,2,4)", "(20,6)", "(2,8)"};
#define GP_NDASHES ((int)(sizeof GP_DASHES / sizeof GP_DASHES[0]))
/* Point types 1..13 (+, x, *, open and filled square, circle, triangle,
 * inverted triangle, diamond) are all distinct shapes. */
#define GP_NPOINTS 13

/* " lc ... dt ... pt ..." for colour c, dash d and point type p (each taken
 * modulo its count; p < 0: no point type, for styles without points). */
void rep_gp_look(FILE *f, int c, int d, int p) {
    fprintf(f, " lc rgb '%s' dt %s", REP_GP_COLOURS[c % REP_GP_NCOLOURS], GP_DASHES[d % GP_NDASHES]);
    if (p >= 0) fprintf(f, " pt %d", p % GP_NPOINTS + 1);
}

/* The look of series k of a plot: colour k mod the colours, the next dash
 * type each time the colours run out (solid lines up to REP_GP_NCOLOURS
 * series), point type k mod 13.  Colour and dash alone differ for the
 * first 64 series; with the point type for the first 832. */
void rep_gp_series_look(FILE *f, int k) { rep_gp_look(f, k, k / REP_GP_NCOLOURS, k); }

/* Labelled ticks for a log axis ("x" or "y") whose data span [lo, hi]
 * (lo > 0).  A decade or more: the powers of ten when 3 or more of them
 * fall inside (every step-th one past 12), else 1, 2 and 5 times them
 * (any decade holds 3 of those).  Under a decade, where gnuplot labels one
 * power of ten or none: evenly spaced round values, the largest step of 1,
 * 2 or 5 times a power of ten that fits 3 times (3 to 7 ticks).  Nothing
 * for a range that is not positive and finite (gnuplot's own ticks). */
void rep_gp_log_tics(FILE *f, const char *axis, double lo, double hi) {
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
    char why[512];
    int ok = rep_gp_draw(r, base, why, sizeof why);
    if (ok < 0) return -1;
    if (ok)
        e->made = 1;
    else {
        r->gp_fail++;
        fprintf(r->log, "gated report: gnuplot failed on %s/%s.gp: %s (see %s/gnuplot.log)\n", r->plots_dir, base,
                why, r->plots_dir);
    }
    return r->failed ? -1 : 0;
}

/* Open plots/BASE.dat and plots/BASE.gp. */
int rep_plot_open(R *r, const char *base, FILE **dat, FILE **gp, char **datp, char **gpp) {
    *dat = *gp = NULL;
    *datp = rep_fmt(r, "%s/%s.dat", r->plots_dir, base);
    *gpp = rep_fmt(r, "%s/%s.gp", r->plots_dir, base);
    if (!*datp || !*gpp) return -1;
    if (!(*dat = rep_open(r, *datp))) return -1;
    if (!(*gp = rep_open(r, *gpp))) {
        rep_abort(r, *dat);
        *dat = NULL;
        return -1;
    }
    return 0;
}

/* Commit a plot's files (rc 0) or drop them (the previous ones stay). */
static int plot_close(R *r, int rc, FILE *dat, FILE *gp, char *datp, char *gpp) {
    if (rc == 0 && dat && rep_close(r, dat, datp)) rc = -1;
    if (rc == 0 && gp && rep_close(r, gp, gpp)) rc = -1;
    if (rc) {
        rep_abort(r, dat); /* (nothing once committed) */
        rep_abort(r, gp);
    }
    free(datp);
    free(gpp);
    return rc;
}

/* Close a plot's files and, when nothing failed and it has data (any),
 * register and draw it under the title fmt: in sweep s's plots, or (s
 * NULL) in budget series b's.  Returns the new rc. */
int rep_plot_done(R *r, RSweep *s, RBudget *b, int rc, int any, FILE *dat, FILE *gp, char *datp, char *gpp,
                  const char *base, const char *fmt, ...) {
    if (plot_close(r, rc, dat, gp, datp, gpp)) rc = -1;
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

/* RepRowFn on (step, value): into the Pts arg. */
static int add_step_pt(R *r, void *arg, sqlite3_stmt *st) {
    return rep_pts_add(r, arg, (double)sqlite3_column_int64(st, 0), rep_col_real(st, 1));
}

/* (step, value) of the run's metric `key` at context ctx into pts. */
int rep_q_steps_ctx(R *r, const char *run_id, const char *key, const char *ctx, Pts *pts) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st, "SELECT step, value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3", "ttt",
                   run_id, key, ctx))
        return -1;
    return rep_q_rows(r, st, add_step_pt, pts);
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
int rep_hist_load_run(R *r, Hists *h, const RRun *u) {
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

void rep_hists_range(const Hists *h, int nh, double *lo, double *hi) {
    *lo = INFINITY, *hi = -INFINITY;
    for (int q = 0; q < nh; q++)
        for (int j = 0; j < h[q].n; j++) {
            const HistAcc *a = &h[q].a[j];
            double w = (a->hi - a->lo) / a->nbins;
            for (int b = 0; b < a->nbins; b++)
                if (a->counts[b]) *lo = fmin(*lo, a->lo + b * w), *hi = fmax(*hi, a->lo + (b + 1) * w);
        }
    for (int q = 0; q < nh && !(*hi > *lo); q++)
        if (h[q].n) *lo = h[q].a[0].lo, *hi = h[q].a[0].hi;
}

void rep_hist_write(FILE *dat, const HistAcc *a) {
    long long tot = 0;
    for (int b = 0; b < a->nbins; b++) tot += a->counts[b];
    double w = (a->hi - a->lo) / a->nbins;
    for (int b = 0; b < a->nbins; b++)
        fprintf(dat, "%.10g %.10g %lld\n", a->lo + (b + 0.5) * w, tot ? (double)a->counts[b] / tot : 0.0, a->counts[b]);
    fprintf(dat, "\n\n");
}

/* h's layers in order. */
void rep_hists_sort(Hists *h) {
    for (int i = 1; i < h->n; i++)
        for (int j = i; j > 0 && h->a[j - 1].layer > h->a[j].layer; j--) {
            HistAcc t = h->a[j];
            h->a[j] = h->a[j - 1];
            h->a[j - 1] = t;
        }
}
