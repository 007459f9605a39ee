/*
 * cmd_report.c — `gated report`: tables and plots from the results store
 * (core/lab/report/report.h says what is written).
 *
 * --margin NATS is the equivalence margin of the TOST verdicts (default 0.02).
 * --ref LABEL compares each sweep's rows with its row LABEL instead of its
 * baseline row (sweeps without such a row keep theirs; none: exit 2), so
 * comparing, say, a tanh gate with the sigmoid one needs no edited sweep.
 * --matrix PATH (default CLI_MATRIX_DB, the committed results, when it
 * exists; "none": off) is read only for the size of its largest Holm
 * family: a verdict from a smaller family says so beside it.
 * Writes DIR/report.md (md) or DIR/SWEEP.csv / DIR/SWEEP.tex, and plots in
 * DIR/plots/ (gnuplot; without it a warning, and the tables anyway).
 * Exit 0 ok, 2 bad input (missing or corrupt database, unknown sweep, bad
 * format or option), 1 runtime failure (unwritable output, gnuplot failed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "lab/report/report.h"

enum { O_DB, O_SWEEP, O_FORMAT, O_OUT, O_NO_PLOTS, O_MARGIN, O_REF, O_MATRIX, O__COUNT };
static const CliOpt opts[O__COUNT + 1] = {
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_SWEEP] = {"sweep", "NAME", "this sweep only (default: every sweep in the database)", 0},
    [O_FORMAT] = {"format", "md|csv|tex", "report.md (default), or a table per sweep as SWEEP.csv / SWEEP.tex", 0},
    [O_OUT] = {"out", "DIR", "where to write (default: the database's directory/report)", 0},
    [O_NO_PLOTS] = {"no-plots", NULL, "tables only: no gnuplot", 0},
    [O_MARGIN] = {"margin", "NATS", "equivalence margin of the TOST verdict, in nats (default: 0.02)", 0},
    [O_REF] = {"ref", "LABEL", "compare every row with the row LABEL, in place of the sweep's baseline: row", 0},
    [O_MATRIX] = {"matrix", "PATH",
                  "the committed matrix's database, whose largest Holm family the notes on small families name "
                  "(default: " CLI_MATRIX_DB " when it exists; none: this database's largest)",
                  0},
};

static int run_report(int argc, char **argv) {
    ReportOpts o = {0};
    o.db_path = cli_default_db();
    o.format = REPORT_MD;
    o.log = stderr;
    o.info = stdout;
    CliArgs a;
    const char *v;
    int k, matrix_set = 0;
    cli_begin(&a, &cmd_report, argc, argv);
    while ((k = cli_next(&a, &v)) >= 0) {
        if (k == O_DB) o.db_path = v;
        if (k == O_SWEEP) o.sweep = v;
        if (k == O_OUT) o.out_dir = v;
        if (k == O_NO_PLOTS) o.no_plots = 1;
        if (k == O_REF) o.ref = v;
        if (k == O_MATRIX) o.matrix_db = v, matrix_set = 1;
        if (k == O_MARGIN) {
            char *end;
            o.margin = strtod(v, &end);
            if (*end || !*v || !(o.margin > 0) || !isfinite(o.margin))
                return cli_usage_error(&cmd_report, "--margin: expected a positive number of nats, got \"%s\"", v);
        }
        if (k == O_FORMAT) {
            int f = -1;
            for (int i = 0; report_format_names[i]; i++)
                if (strcmp(v, report_format_names[i]) == 0) f = i;
            if (f < 0) return cli_usage_error(&cmd_report, "--format: expected md, csv or tex, got \"%s\"", v);
            o.format = (ReportFormat)f;
        }
    }
    if (k == CLI_EXIT) return a.status;
    char **rest;
    if (cli_rest(&a, &rest)) return cli_usage_error(&cmd_report, "takes no argument (got \"%s\")", rest[0]);
    if (cli_require_db(&cmd_report, o.db_path)) return EXIT_BADINPUT;
    if (!matrix_set && access(CLI_MATRIX_DB, F_OK) == 0) o.matrix_db = CLI_MATRIX_DB;
    if (o.matrix_db && strcmp(o.matrix_db, "none") == 0) o.matrix_db = NULL;
    /* by default the report sits beside its database: results/gated.db -> results/report */
    char *dir = NULL, *out = NULL;
    if (!o.out_dir) {
        dir = cli_dir_of(o.db_path);
        if (!dir || asprintf(&out, "%s/report", dir) < 0) {
            free(dir);
            fprintf(stderr, "gated report: out of memory\n");
            return EXIT_RUNTIME;
        }
        o.out_dir = out;
    }
    char err[1024];
    int rc = report_run(&o, err, sizeof err);
    if (rc != REPORT_OK) fprintf(stderr, "gated report: %s\n", err);
    free(dir);
    free(out);
    return rc;
}

const Command cmd_report = {
    "report", "", "Tables and plots per sweep: tests against the baseline, the paper.", opts,
    "stdout: the files written; stderr: warnings (gnuplot missing: the tables anyway) and errors.\n", run_report};
