/*
 * cmd_export.c — `gated export`: the metric rows of a database as CSV or
 * JSON lines (lab/export.h says what is written), on stdout or into
 * --out FILE.  The database is opened read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "lab/export.h"
#include "util/outfile.h"

enum { O_DB, O_FORMAT, O_OUT, O_RUN, O_SWEEP, O_KEY, O_CONFIG, O__COUNT };
static const CliOpt opts[O__COUNT + 1] = {
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_FORMAT] = {"format", "csv|jsonl", "CSV with a header line (default) or JSON lines, one object per row", 0},
    [O_OUT] = {"out", "FILE", "write there, not to stdout (a regular file, replaced once every row is written)", 0},
    [O_RUN] = {"run", "ID|NAME", "only this run (id, name or unique id prefix)", 1},
    [O_SWEEP] = {"sweep", "NAME", "only the runs of this sweep; sweep and label are this sweep's", 0},
    [O_KEY] = {"key", "K", "only metric K (train_loss, val_loss, f_attn, ...: docs/store.md, \"Metric keys\")", 1},
    [O_CONFIG] = {"config", "varying|all|none",
                  "config columns: the keys whose value differs between the exported runs (default), every key, "
                  "or none",
                  0},
};

/* The index of v in names (NULL-terminated), or -1. */
static int pick(const char *const *names, const char *v) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], v) == 0) return i;
    return -1;
}

static int contains(char **list, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0) return 1;
    return 0;
}

/* Into out (util/outfile.h: a temporary file beside it, renamed over it
 * only when every row was written) or stdout. */
static int export_to(Store *st, const ExportOpts *eo, const char *out) {
    char err[1024];
    long long rows = 0;
    OutFile of = {0};
    if (out) {
        int o = outfile_open(&of, out, err, sizeof err);
        if (o) {
            fprintf(stderr, "gated export: %s\n", err);
            return o == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
        }
    }
    int rc = export_metrics(st, eo, out ? of.f : stdout, &rows, err, sizeof err);
    if (out && rc == 0 && outfile_commit(&of, err, sizeof err)) rc = -1;
    if (rc) {
        if (out) outfile_abort(&of); /* the temporary file only: FILE stays as it was */
        fprintf(stderr, "gated export: %s\n", err);
        return rc == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
    }
    if (out) printf("%s: %lld rows\n", out, rows);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
}

static int run_export(int argc, char **argv) {
    const char *db = cli_default_db(), *out = NULL, *v;
    ExportOpts eo = {EXPORT_CSV, EXPORT_CONFIG_VARYING, NULL, NULL, 0, NULL, 0};
    char **runs = calloc((size_t)argc, sizeof *runs), **keys = calloc((size_t)argc, sizeof *keys);
    int o, rc = -1;
    if (!runs || !keys) {
        free(runs), free(keys);
        fprintf(stderr, "gated export: out of memory\n");
        return EXIT_RUNTIME;
    }
    CliArgs a;
    cli_begin(&a, &cmd_export, argc, argv);
    while (rc < 0 && (o = cli_next(&a, &v)) >= 0) {
        switch (o) {
        case O_DB: db = v; break;
        case O_OUT: out = v; break;
        case O_SWEEP: eo.sweep = v; break;
        case O_RUN:
            if (!contains(runs, eo.nruns, v)) runs[eo.nruns++] = (char *)v;
            break;
        case O_KEY:
            if (!contains(keys, eo.nkeys, v)) keys[eo.nkeys++] = (char *)v;
            break;
        case O_FORMAT:
            if (pick(export_format_names, v) < 0)
                rc = cli_usage_error(&cmd_export, "--format: expected csv or jsonl, got \"%s\"", v);
            else
                eo.format = (ExportFormat)pick(export_format_names, v);
            break;
        case O_CONFIG:
            if (pick(export_config_names, v) < 0)
                rc = cli_usage_error(&cmd_export, "--config: expected varying, all or none, got \"%s\"", v);
            else
                eo.config = (ExportConfig)pick(export_config_names, v);
            break;
        }
    }
    char **rest;
    if (rc < 0 && o == CLI_EXIT) rc = a.status;
    if (rc < 0 && cli_rest(&a, &rest) > 0) rc = cli_usage_error(&cmd_export, "takes no argument (got \"%s\")", rest[0]);
    if (rc < 0 && cli_require_db(&cmd_export, db)) rc = EXIT_BADINPUT;
    Store *st = NULL;
    char err[1024];
    int orc = rc < 0 ? store_open_ro(&st, db, err, sizeof err) : 0;
    if (orc) {
        fprintf(stderr, "gated export: %s\n", err);
        rc = cli_store_exit(orc);
    }
    if (rc < 0) {
        eo.runs = runs, eo.keys = keys;
        rc = export_to(st, &eo, out);
    }
    store_close(st);
    free(runs), free(keys);
    return rc;
}

const Command cmd_export = {
    "export", "", "Metric rows as CSV or JSON lines, one per (run, key, layer, head, step).", opts,
    "Columns: run_id, name, status, seed, sweep, label, key, context, layer, head, step, value, t (when the\n"
    "database records it), then the config keys chosen by --config.  layer and head are split out of\n"
    "context (\"layer=1,head=3\"); sweep and label are the run's first sweep by name, or --sweep's.\n"
    "A config key that has no effect on a run (the gate's keys of an ungated run, ...) is empty.\n"
    "CSV: RFC 4180; a text cell starting with = + - @ gets a leading ' (spreadsheets run those).\n"
    "JSON lines: the same members on every line, null where empty.  docs/export.md.\n"
    "stdout: the rows, or with --out the file's name and row count.\n",
    run_export};
