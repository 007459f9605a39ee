/*
 * cmd_report.c — `gated report`: tables and plots from the results store
 * (core/lab/report.h says what is written).
 *
 *   gated report [--db PATH] [--sweep NAME] [--format md|csv|tex] [--out DIR] [--no-plots]
 *                [--margin NATS]
 *
 * Defaults: --db results/gated.db, every sweep, md, --out results/report,
 * --margin 0.02 (the equivalence margin of the TOST column, in nats).
 * Writes DIR/report.md (md) or DIR/SWEEP.csv / DIR/SWEEP.tex, and plots in
 * DIR/plots/ (gnuplot; without it a warning, and the tables anyway).
 * Exit 0 ok, 2 bad input (missing or corrupt database, unknown sweep, bad
 * format or option), 1 runtime failure (unwritable output, gnuplot failed).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "lab/report.h"

static void report_usage(FILE *f) {
    fprintf(f, "usage: gated report [--db PATH] [--sweep NAME] [--format md|csv|tex] [--out DIR] [--no-plots]\n"
               "                    [--margin NATS]\n");
}

int cmd_report(int argc, char **argv) {
    ReportOpts o = {0};
    o.db_path = "results/gated.db";
    o.out_dir = "results/report";
    o.format = REPORT_MD;
    o.log = stderr;
    o.info = stdout;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *opts[] = {"--db", "--sweep", "--format", "--out", "--margin"};
        int which = -1;
        for (int j = 0; j < 5; j++) {
            size_t n = strlen(opts[j]);
            if (strcmp(a, opts[j]) == 0 && i + 1 < argc) {
                which = j;
                val = argv[++i];
            } else if (strncmp(a, opts[j], n) == 0 && a[n] == '=') {
                which = j;
                val = a + n + 1;
            }
            if (which >= 0) break;
        }
        if (which < 0 && strcmp(a, "--no-plots") == 0) {
            o.no_plots = 1;
            continue;
        }
        if (which < 0 && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            report_usage(stdout);
            return 0;
        }
        if (which < 0 || !val || !*val) {
            fprintf(stderr, "gated report: unknown or incomplete option '%s'\n", a);
            report_usage(stderr);
            return REPORT_BADINPUT;
        }
        if (which == 0) o.db_path = val;
        if (which == 1) o.sweep = val;
        if (which == 3) o.out_dir = val;
        if (which == 4) {
            char *end;
            errno = 0;
            o.margin = strtod(val, &end);
            if (errno || *end || !(o.margin > 0) || !isfinite(o.margin)) {
                fprintf(stderr, "gated report: --margin: expected a positive number of nats, got \"%s\"\n", val);
                return REPORT_BADINPUT;
            }
        }
        if (which == 2) {
            int f = -1;
            for (int k = 0; report_format_names[k]; k++)
                if (strcmp(val, report_format_names[k]) == 0) f = k;
            if (f < 0) {
                fprintf(stderr, "gated report: --format: expected md, csv or tex, got \"%s\"\n", val);
                return REPORT_BADINPUT;
            }
            o.format = (ReportFormat)f;
        }
    }
    char err[1024];
    int rc = report_run(&o, err, sizeof err);
    if (rc != REPORT_OK) fprintf(stderr, "gated report: %s\n", err);
    return rc;
}
