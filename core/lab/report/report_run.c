/*
 * report_run.c — `gated report` (see report.h for what it writes): the driver,
 * above the sections (report_int.h lists the files and what each does):
 * report_run, and the table of sections (SECTIONS) with what walks it.
 * The small helpers every file shares are the toolkit's (kit/).
 *
 * The driver opens the database, loads every sweep (report_load.c: the
 * store into RSweep, each statistic computed there; with --sweep the
 * others too, marked `context`, since the Holm families and budget series
 * span sweeps), computes what spans sweeps (report_family.c,
 * report_budget.c), draws the plots (report_plot*.c; before the tables,
 * since report.md says which plots were made) and writes the tables of the
 * selected sweeps (report_write.c, report_sections.c, report_budget.c).
 *
 * Reading.  The database is opened read-only with store_open_ro (which
 * validates it and writes nothing: a read-only file works, and its bytes
 * stay as they are) and read through store_db() with prepared statements;
 * every value, constant keys such as 'val_loss' and JSON paths included, is
 * bound.  Stored JSON (run configs, histogram counts) is read with SQLite's
 * JSON functions, never by scanning its text.
 *
 * Untrusted text.  A database may come from elsewhere (`gated merge`), so
 * every text read from it that reaches an output (sweep names, labels, run
 * ids, code versions) is escaped (store_escape: control characters as
 * \xNN, so no text holds a newline) when loaded, or when written for the
 * few written straight from a query, and each writer quotes for its format
 * again: gnuplot single-quoted strings ('' for a quote; a control character
 * can never end the line, where gnuplot would run a `!` shell command),
 * Markdown (specials backslash-escaped, labels in code spans with long
 * enough backtick fences), TeX (specials escaped; comments kept to one
 * line), CSV (quoted fields).  File names use [A-Za-z0-9._-] only.
 */
#include "lab/report/report_int.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const report_format_names[] = {"md", "csv", "tex", NULL};

/* ================================================================== */
/* errors, memory, strings, files                                      */
/* ================================================================== */

/* ================================================================== */
/* driver                                                              */
/* ================================================================== */

/* Write DIR/SWEEP-suffix.csv with fn. */
static int csv_file(R *r, const RSweep *s, const char *suffix, int (*fn)(R *, FILE *, const RSweep *)) {
    char *path = rep_fmt(r, "%s/%s-%s.csv", r->o->out_dir, s->fname, suffix);
    if (!path) return -1;
    FILE *f = rep_open(r, path);
    return rep_finish(r, f, f ? fn(r, f, s) : -1, path);
}

/* ================================================================== */
/* the table of sections                                               */
/* ================================================================== */

static int has_sink(const RSweep *s) { return s->has_sink; }
static int has_bb(const RSweep *s) { return s->has_bb; }
static int has_sparse(const RSweep *s) { return s->has_sparse; }
static int has_eval(const RSweep *s) { return s->nev > 0; }
static int has_quant(const RSweep *s) { return s->has_quant; }
static int has_drop(const RSweep *s) { return s->has_drop; }

/* The sections a sweep gets when its finished runs have their data, one
 * row each, in the order report.md, SWEEP.tex, the CSV files and the plots
 * take them: adding a section is adding a row. */
static const struct {
    const char *csv_name; /* DIR/SWEEP-csv_name.csv */
    int (*has)(const RSweep *s);
    int (*text)(R *r, FILE *f, const RSweep *s, const RepStyle *y); /* md (report.md) or TeX (SWEEP.tex) */
    int (*csv)(R *r, FILE *f, const RSweep *s);
    int (*plot)(R *r, RSweep *s); /* its plots (report_plot_sections.c); NULL: none */
} SECTIONS[] = {
    {"pairs", rep_has_rank, rep_rank_section, rep_rank_csv, NULL},
    {"sink", has_sink, rep_sink_section, rep_sink_csv, NULL},
    {"fattn-heads", has_sink, rep_heads_section, rep_heads_csv, rep_plot_heads},
    {"bb", has_bb, rep_bb_section, rep_bb_csv, rep_plot_bb},
    {"sparse", has_sparse, rep_sparse_section, rep_sparse_csv, rep_plot_sparse},
    {"ppl", has_eval, rep_ppl_section, rep_ppl_csv, rep_plot_ppl},
    {"quant", has_quant, rep_infer_quant_section, rep_infer_quant_csv, rep_plot_quant},
    {"drop", has_drop, rep_infer_drop_section, rep_infer_drop_csv, rep_plot_drop},
    {"edge", rep_has_edge, rep_edge_section, rep_edge_csv, NULL},
};
enum { NSECTIONS = (int)(sizeof SECTIONS / sizeof SECTIONS[0]) };

static int write_sections(R *r, FILE *f, const RSweep *s, int md) {
    const RepStyle *y = md ? &REP_MD_STYLE : &REP_TEX_STYLE;
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].has(s) && SECTIONS[i].text(r, f, s, y)) return -1;
    return 0;
}

static int write_csv_sections(R *r, const RSweep *s) {
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].has(s) && csv_file(r, s, SECTIONS[i].csv_name, SECTIONS[i].csv)) return -1;
    return 0;
}

static int section_plots(R *r, RSweep *s) {
    for (int i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i].plot && SECTIONS[i].has(s) && SECTIONS[i].plot(r, s)) return -1;
    return 0;
}

/* Check the options and open the database: REPORT_OK or REPORT_BADINPUT
 * (the error set). */
static int open_db(R *r) {
    const ReportOpts *o = r->o;
    if (!o->db_path || !o->out_dir || !*o->out_dir) {
        rep_fail(r, "report: no database or output directory given");
        return REPORT_BADINPUT;
    }
    if ((int)o->format < 0 || o->format > REPORT_TEX) {
        rep_fail(r, "report: bad format %d", (int)o->format);
        return REPORT_BADINPUT;
    }
    if (o->margin != 0 && !(o->margin > 0 && isfinite(o->margin))) {
        rep_fail(r, "report: the equivalence margin must be a positive number of nats, got %g", o->margin);
        return REPORT_BADINPUT;
    }
    if (access(o->db_path, F_OK) != 0) {
        rep_fail(r, "%s: no such database (run a sweep first, or pass --db)", o->db_path);
        return REPORT_BADINPUT;
    }
    char serr[1024];
    int orc = store_open_ro(&r->st, o->db_path, serr, sizeof serr);
    if (orc) {
        rep_fail(r, "%s", serr);
        return orc == -2 ? REPORT_BADINPUT : REPORT_RUNTIME;
    }
    r->db = store_db(r->st);
    return REPORT_OK;
}

/* Whether a selected sweep has the row ReportOpts.ref names; if none has,
 * the error, naming the label. */
static int ref_found(R *r) {
    for (int i = 0; i < r->nsw; i++)
        if (!r->sw[i].context && r->sw[i].base >= 0 && strcmp(r->sw[i].vars[r->sw[i].base].label, r->ref) == 0)
            return 1;
    const char *in = "any sweep";
    for (int i = 0; r->o->sweep && i < r->nsw; i++)
        if (!r->sw[i].context) in = r->sw[i].name;
    rep_fail(r, "--ref %s: no row has this label in %s%s", r->ref, r->o->sweep ? "sweep " : "", in);
    return 0;
}

/* Load every sweep into r->sw, those the options do not select (--sweep
 * names one) marked context; then what spans sweeps.  REPORT_OK,
 * REPORT_BADINPUT (no such sweep) or REPORT_RUNTIME. */
static int load_sweeps(R *r, char **names, int nnames) {
    const char *want = r->o->sweep;
    if (want) {
        int found = 0;
        for (int i = 0; i < nnames; i++) found |= strcmp(names[i], want) == 0;
        if (!found) {
            char list[512] = "", q[128], wq[256];
            size_t n = 0;
            for (int i = 0; i < nnames && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                      store_escape(names[i], q, sizeof q));
            rep_fail(r, "%s: no sweep '%s' (sweeps: %s)", r->o->db_path, store_escape(want, wq, sizeof wq),
                     nnames ? list : "none");
            return REPORT_BADINPUT;
        }
    }
    for (int i = 0; i < nnames; i++) {
        if (rep_grow(r, (void **)&r->sw, &r->sw_cap, r->nsw + 1, sizeof *r->sw)) return REPORT_RUNTIME;
        RSweep *s = &r->sw[r->nsw++];
        memset(s, 0, sizeof *s);
        s->context = want && strcmp(names[i], want) != 0;
        if (!(s->raw = rep_dup(r, names[i])) || !(s->name = rep_esc(r, names[i])) ||
            !(s->fname = rep_safe_name(r, names[i])))
            return REPORT_RUNTIME;
        /* sanitising can map two names to one ("a b", "a/b" -> "a_b"): a later
         * one gets a suffix, so no sweep's files overwrite another's */
        for (int k = 0; k < r->nsw - 1; k++)
            if (strcmp(r->sw[k].fname, s->fname) == 0) {
                char *f = rep_fmt(r, "%s-%d", s->fname, r->nsw);
                if (!f) return REPORT_RUNTIME;
                free(s->fname);
                s->fname = f;
                k = -1; /* check the new name too */
            }
        if (rep_load_sweep(r, s)) return REPORT_RUNTIME;
    }
    if (r->ref && !ref_found(r)) return REPORT_BADINPUT;
    if (rep_families(r) || rep_budget_find(r)) return REPORT_RUNTIME;
    for (int i = 0; i < r->nsw; i++)
        if (rep_rank_sweep(r, &r->sw[i])) return REPORT_RUNTIME;
    return REPORT_OK;
}

/* R.mx_m: the largest Holm family of the matrix database
 * (ReportOpts.matrix_db, loaded as a report of its own that writes
 * nothing), else of this one.  REPORT_OK, or the matrix's error. */
static int matrix_family(R *r) {
    for (int i = 0; i < r->nsw; i++)
        if (r->sw[i].fam_m > r->mx_m) r->mx_m = r->sw[i].fam_m;
    if (!r->o->matrix_db) return REPORT_OK;
    r->mx_other = 1;
    char *a = realpath(r->o->db_path, NULL), *b = realpath(r->o->matrix_db, NULL);
    int same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    if (same) return REPORT_OK;
    ReportOpts mo = *r->o;
    mo.db_path = r->o->matrix_db;
    mo.sweep = mo.ref = mo.matrix_db = NULL;
    R m = {0};
    m.o = &mo;
    m.err = r->err;
    m.errcap = r->errcap;
    m.log = r->log;
    m.margin = r->margin;
    char **names = NULL;
    int nnames = 0, code = open_db(&m);
    if (code == REPORT_OK) code = rep_list_sweeps(&m, &names, &nnames) ? REPORT_RUNTIME : load_sweeps(&m, names, nnames);
    r->mx_m = 0;
    for (int i = 0; code == REPORT_OK && i < m.nsw; i++)
        if (m.sw[i].fam_m > r->mx_m) r->mx_m = m.sw[i].fam_m;
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    rep_budget_free(&m);
    for (int i = 0; i < m.nsw; i++) rep_free_sweep(&m.sw[i]);
    free(m.sw);
    store_close(m.st);
    r->failed |= m.failed;
    return code;
}

/* Sweep s's files failed (the error set): say so and go on with the other
 * sweeps', so one sweep's output never sinks the others' (the report then
 * exits 1 naming how many failed).  -1 when the failure is not the
 * sweep's own (out of memory). */
static int sweep_failed(R *r, const RSweep *s) {
    const char *why = r->err && r->err[0] ? r->err : "failed";
    if (strcmp(why, "out of memory") == 0) return -1;
    fprintf(r->log, "gated report: sweep %s: %s; the other sweeps' files are written\n", s->name, why);
    r->sweeps_failed++;
    r->failed = 0;
    if (r->err && r->errcap) r->err[0] = '\0';
    return 0;
}

/* DIR/plots/: every sweep's plots (not with --no-plots). */
static int write_plots(R *r) {
    if (r->o->no_plots || r->nsw == 0) return 0;
    if (!(r->plots_dir = rep_fmt(r, "%s/plots", r->o->out_dir)) || rep_mkdir(r, r->plots_dir)) return -1;
    if (rep_gp_begin(r)) return -1;
    rep_gp_check(r);
    if (r->failed) return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < r->nsw; i++)
        if (!r->sw[i].context && (rep_make_plots(r, &r->sw[i]) || section_plots(r, &r->sw[i])) &&
            sweep_failed(r, &r->sw[i]))
            rc = -1;
    for (int i = 0; rc == 0 && i < r->nbud; i++)
        if (r->bud[i].shown && (rep_plot_budget(r, &r->bud[i]) || rep_plot_budget_gap(r, &r->bud[i]))) rc = -1;
    for (int i = 0; rc == 0 && i < r->nsize; i++)
        if (r->size[i].shown && rep_plot_size(r, &r->size[i])) rc = -1;
    /* plots/gnuplot.log: this report's gnuplot messages (written when gnuplot ran) */
    if (rep_gp_write_log(r)) rc = -1;
    return rc;
}

/* The tables: DIR/report.md, or DIR/SWEEP.csv (and its sections' files)
 * or DIR/SWEEP.tex per sweep. */
static int write_tables(R *r) {
    const ReportOpts *o = r->o;
    if (o->format == REPORT_MD) {
        char *path = rep_fmt(r, "%s/report.md", o->out_dir);
        if (!path) return -1;
        int rc = rep_write_md(r, path);
        if (rc == 0 && r->info) fprintf(r->info, "wrote %s\n", path);
        free(path);
        return rc;
    }
    if (r->nsw == 0) fprintf(r->log, "gated report: %s: no sweeps recorded; nothing written\n", o->db_path);
    for (int i = 0; i < r->nsw; i++) {
        if (r->sw[i].context) continue;
        char *path = rep_fmt(r, "%s/%s.%s", o->out_dir, r->sw[i].fname, report_format_names[o->format]);
        if (!path) return -1;
        int rc = o->format == REPORT_CSV ? rep_write_csv(r, &r->sw[i], path) : rep_write_tex(r, &r->sw[i], path);
        if (rc == 0 && r->info) fprintf(r->info, "wrote %s\n", path);
        free(path);
        if ((rc || (o->format == REPORT_CSV && write_csv_sections(r, &r->sw[i]))) && sweep_failed(r, &r->sw[i]))
            return -1;
    }
    return rep_budget_files(r);
}

int report_run(const ReportOpts *o, char *err, size_t errcap) {
    R r = {0};
    r.o = o;
    r.err = err;
    r.errcap = errcap;
    r.log = o->log ? o->log : stderr;
    r.info = o->info;
    r.margin = o->margin > 0 ? o->margin : REPORT_MARGIN;
    r.write_sections = write_sections;
    if (err && errcap) err[0] = '\0';
    char **names = NULL;
    int nnames = 0;
    if (o->ref && !(r.ref = rep_esc(&r, o->ref))) return REPORT_RUNTIME;
    int code = open_db(&r);
    if (code != REPORT_OK) {
        free(r.ref);
        return code;
    }
    code = REPORT_RUNTIME;
    if (rep_list_sweeps(&r, &names, &nnames)) goto out;
    if ((code = load_sweeps(&r, names, nnames)) != REPORT_OK || (code = matrix_family(&r)) != REPORT_OK) goto out;
    code = REPORT_RUNTIME;
    if (rep_mkdir(&r, o->out_dir) || write_plots(&r) || write_tables(&r)) goto out;
    if (r.sweeps_failed) {
        rep_fail(&r, "the files of %d sweep%s could not be written (see above); the others are", r.sweeps_failed,
                 r.sweeps_failed == 1 ? "" : "s");
        goto out;
    }
    if (r.gp_fail) {
        rep_fail(&r, "gnuplot failed on %d plot%s (see %s/gnuplot.log); the tables are written", r.gp_fail,
                 r.gp_fail == 1 ? "" : "s", r.plots_dir);
        goto out;
    }
    code = REPORT_OK;
out:
    if (code == REPORT_RUNTIME && r.bad_db) code = REPORT_BADINPUT;
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    rep_budget_free(&r);
    for (int i = 0; i < r.nsw; i++) rep_free_sweep(&r.sw[i]);
    free(r.sw);
    rep_files_end(&r);
    free(r.plots_dir);
    free(r.gp_prog);
    free(r.ref);
    store_close(r.st);
    if (code == REPORT_OK && err && errcap) err[0] = '\0';
    return code;
}
