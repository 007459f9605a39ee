/*
 * cmd_show.c — `gated ls` and `gated show RUN`: the store read only (its
 * bytes, journal mode included, stay as they are), formatted by
 * store_show.c as text or (--json) one JSON document.
 */
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "store_show.h"

enum { O_DB, O_JSON, O__COUNT };
static const CliOpt opts[O__COUNT + 1] = {
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_JSON] = {"json", NULL, "one JSON document instead of the text (docs/cli.md, \"Machine-readable output\")", 0},
};

/* ls (cmd_ls, no argument) or show (cmd_show, one run). */
static int run_store(const Command *cmd, int argc, char **argv) {
    const char *db = cli_default_db(), *v;
    int show = cmd == &cmd_show, json = 0, o;
    CliArgs a;
    cli_begin(&a, cmd, argc, argv);
    while ((o = cli_next(&a, &v)) >= 0) {
        if (o == O_DB) db = v;
        if (o == O_JSON) json = 1;
    }
    if (o == CLI_EXIT) return a.status;
    char **rest;
    int n = cli_rest(&a, &rest);
    if (show && n != 1) return n ? cli_usage_error(cmd, "one RUN, not %d", n) : cli_usage_error(cmd, "no RUN given");
    if (!show && n) return cli_usage_error(cmd, "takes no argument (got \"%s\")", rest[0]);
    if (cli_require_db(cmd, db)) return EXIT_BADINPUT;
    char err[1024];
    Store *st;
    int orc = store_open_ro(&st, db, err, sizeof err);
    if (orc) {
        fprintf(stderr, "gated %s: %s\n", cmd->name, err);
        return cli_store_exit(orc);
    }
    int rc = show && json ? show_run_json(st, rest[0], stdout, err, sizeof err)
             : show       ? show_run(st, rest[0], stdout, err, sizeof err)
             : json       ? show_ls_json(st, stdout, err, sizeof err)
                          : show_ls(st, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "gated %s: %s\n", cmd->name, err);
    int code = !rc ? EXIT_OK : store_err_runtime(st) ? EXIT_RUNTIME : EXIT_BADINPUT;
    store_close(st);
    return code;
}

static int run_ls(int argc, char **argv) { return run_store(&cmd_ls, argc, argv); }
static int run_show(int argc, char **argv) { return run_store(&cmd_show, argc, argv); }

const Command cmd_ls = {"ls", "", "The runs in the database: id, name, status, steps, val loss, start.", opts,
                        "A run recorded as running whose heartbeat stopped is shown killed.\n", run_ls};
const Command cmd_show = {"show", "RUN",
                          "One run (id, name or id prefix): config, provenance, results.",
                          opts, NULL, run_show};
