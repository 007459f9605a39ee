/*
 * report_fx.h — what the `gated report` suites (test_report*.c) share
 * (report_fx.c).
 */
#ifndef GATED_REPORT_FX_H
#define GATED_REPORT_FX_H

#include <stddef.h>

#include "lab/report/report.h"
#include "run/store.h"

/* A fixture's directory, database and report output directory. */
typedef struct {
    char dir[64], db[128], out[128];
} Fx;

#define assert_has(text, needle) \
    cr_assert(strstr((text), (needle)) != NULL, "missing:\n%s\n--- in:\n%s", (needle), (text))
#define assert_lacks(text, needle) \
    cr_assert(strstr((text), (needle)) == NULL, "unexpected:\n%s\n--- in:\n%s", (needle), (text))

/* The provenance every fixture run is recorded with. */
extern const Provenance PROV;
/* path exists and is not empty. */
int exists(const char *path);
int have_gnuplot(void);

/* One run: config, status, final val loss (NAN: none), probes. */
void add_run(Store *s, const char *json, const char *name, long long seed, const char *status, double vl,
             double fattn, double mact, double gate, double spikes, double gparams, double tps, char id[17]);

/* A fresh directory with the paths of the database and the output; the
 * store opened on the database. */
Store *fx_open(Fx *fx);
/* The main fixture (report_fx.c, top) in a fresh directory. */
void fixture(Fx *fx);
/* Remove the fixture's directory. */
void fx_rm(Fx *fx);

/* report_run into fx->out; log captured into *logtext (may be NULL). */
int run_report_opts(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, int no_plots,
                    char **logtext, char *err, size_t cap);
int run_report(Fx *fx, ReportFormat fmt, const char *sweep, const char *gnuplot, char **logtext, char *err,
               size_t cap);
/* The text of the output file fx->out/name, heap. */
char *out_file(Fx *fx, const char *name);

/* Field `col` (named in the header, the first line) of the line of CSV
 * text that starts with prefix, into out (unquoted fields only); "" and
 * an assertion failure when there is no such line or column. */
void csv_field(const char *text, const char *prefix, const char *col, char *out, size_t cap);

/* csv_field as a number (NAN when empty). */
double csv_num_of(const char *text, const char *prefix, const char *col);

/* The look (" lc ... dt ...[ pt ...]", up to " title") of the plot clause
 * "index N using COLS with STYLE" of a gnuplot script, into out ("" when
 * there is no such clause or it sets no colour). */
void gp_look_of(const char *gp, int index, const char *cols_style, char *out, size_t cap);

/* The text of report.md's section of sweep `name` (up to the next sweep's
 * or the budget section), heap. */
char *md_section(const char *md, const char *name);

/* Run sql on the fixture's database (raw SQLite: text no API would write). */
void fx_sql(Fx *fx, const char *sql);
/* text holds a control byte (newline aside). */
int raw_control(const char *text);

/* Every line of the plot scripts matching glob (quoted into a shell
 * command: no quote in it) is the report's own: none starts a shell line
 * ('!') or holds a control byte; more than min_lines lines in all. */
void assert_plot_scripts_clean(const char *dir, const char *glob, int min_lines);
/* Lines of text. */
int lines_of(const char *text);

/* Occurrences of needle in text. */
int count_of(const char *text, const char *needle);

/* The t distribution at df 2 in closed form: P(T <= t) = 1/2 + t / (2
 * sqrt(t^2 + 2)) and its quantile (2p - 1) / sqrt(2 p (1 - p)). */
double cdf_df2(double t);
double q_df2(double p);

#endif
