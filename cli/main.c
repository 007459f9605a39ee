/*
 * main.c — the `gated` command: git-style subcommands, dispatched through
 * the command table below.  Each command is described (synopsis, options,
 * notes) in the file that runs it; `gated help CMD`, `gated CMD --help`,
 * the usage after a usage error and the table printed here all come from
 * those descriptions (cli.h).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static int run_help(int argc, char **argv);
static const Command cmd_help = {"help", "[COMMAND]", "This overview, or a command's options (as COMMAND --help).",
                                 NULL, NULL, run_help};

const Command *const cli_commands[] = {&cmd_info,   &cmd_xcheck, &cmd_train, &cmd_sweep, &cmd_merge,
                                       &cmd_eval,   &cmd_report, &cmd_export, &cmd_ls,   &cmd_show,
                                       &cmd_bench,  &cmd_compare, &cmd_help, NULL};

/* The overview: the commands, the default database, exit statuses and
 * streams (docs/cli.md, "Exit status and output streams", says the same). */
static void usage(FILE *f) {
    fprintf(f, "usage: gated COMMAND [ARGS] [OPTIONS]\n\ncommands:\n");
    for (int i = 0; cli_commands[i]; i++)
        fprintf(f, "  %-8s %-20s %s\n", cli_commands[i]->name, cli_commands[i]->args, cli_commands[i]->summary);
    fprintf(f,
            "\nEvery command answers -h / --help (its options; the same as gated help COMMAND) and --version.\n"
            "\nDatabase: without --db, commands use $GATED_DB when it is set, else " CLI_DEFAULT_DB "\n"
            "under the current directory (train and sweep create it; git ignores .gated/).  The committed\n"
            "results are read with --db results/gated.db.\n"
            "\nExit status and output streams:\n"
            "  0       success; a diverged training run is a result, so 0 too\n"
            "  1       runtime failure, the machine's fault: a run failed, a sweep left a run failed, not\n"
            "          started or running in another process, a write failed (a full disk), a database\n"
            "          locked by another process, out of memory, gnuplot failed\n"
            "  2       bad usage or input: an unknown option or missing value, a bad config, sweep or suite\n"
            "          file (FILE:LINE:COL: error: ...), a missing file or database, an unknown run, a\n"
            "          --db that is no database file (:memory:, a URI, a device), a damaged database (a\n"
            "          missing table, a value of the wrong type, objects gated does not define), a\n"
            "          database merge refuses, a checkpoint --resume refuses\n"
            "  3       gated compare: a regression\n"
            "  130     interrupted by SIGINT (143: SIGTERM); train and sweep first checkpoint, store the rows\n"
            "          and mark the run killed (train --resume, or the sweep run again, continues it)\n"
            "  stdout  results: info's tables, train's run id, ls, show, the sweep plan (--dry-run), --count,\n"
            "          the sweep's per-run lines and summary, merge's counts, the files report wrote, export's\n"
            "          rows, eval's results, bench's table, compare's verdicts, every --json document;\n"
            "          --help and --version\n"
            "  stderr  progress, warnings, errors, and the usage after a usage error\n");
}

static int run_help(int argc, char **argv) {
    CliArgs a;
    const char *v;
    int k;
    cli_begin(&a, &cmd_help, argc, argv);
    while ((k = cli_next(&a, &v)) >= 0) {
    }
    if (k == CLI_EXIT) return a.status;
    char **rest;
    int n = cli_rest(&a, &rest);
    if (n > 1) return cli_usage_error(&cmd_help, "one COMMAND at most");
    if (n == 0) {
        usage(stdout);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    const Command *c = cli_find(rest[0]);
    if (!c) return cli_usage_error(&cmd_help, "no command '%s' (gated help lists them)", rest[0]);
    cli_help(c, stdout);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
}

/* An unknown command: the nearest one, if near, and the list. */
static int unknown_command(const char *name) {
    char q[300];
    config_quote(name, q, sizeof q);
    const char *best = NULL;
    int bestd = 3; /* at most 2 edits away */
    for (int i = 0; cli_commands[i]; i++) {
        int d = config_edit_distance(name, cli_commands[i]->name);
        if (d < bestd) bestd = d, best = cli_commands[i]->name;
    }
    fprintf(stderr, "gated: unknown command '%s'", q);
    if (best) fprintf(stderr, " (did you mean %s?)", best);
    fprintf(stderr, "\ncommands:");
    for (int i = 0; cli_commands[i]; i++) fprintf(stderr, " %s", cli_commands[i]->name);
    fprintf(stderr, " (gated --help explains them)\n");
    return EXIT_BADINPUT;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_BADINPUT;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        usage(stdout);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    if (strcmp(name, "--version") == 0) {
        cli_version(stdout);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    const Command *c = cli_find(name);
    return c ? c->run(argc - 1, argv + 1) : unknown_command(name);
}
