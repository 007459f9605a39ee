/*
 * cmd_train.c — `gated train`: one run of a config (core/run/train.c).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "commands.h"
#include "run/store.h"
#include "run/train.h"
#include "util/util.h"

enum { O_SET, O_DB, O_NAME, O_DATA, O_RESUME, O_CKPT, O_STOP_AFTER, O_FORCE, O__COUNT };
static const CliOpt opts[O__COUNT + 1] = {
    [O_SET] = {"set", "KEY=VALUE", "override a config key, a later one wins", 1},
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_NAME] = {"name", "NAME", "the run's name (default: its run id)", 0},
    [O_DATA] = {"data", "DIR", "where `make data` put the corpus (default: data)", 0},
    [O_RESUME] = {"resume", NULL, "continue from the run's checkpoint, if it has one", 0},
    [O_CKPT] = {"ckpt", "DIR", "checkpoints go to DIR/DB_ID/RUN_ID.ckpt (default: DBDIR/checkpoints, beside the db)", 0},
    [O_STOP_AFTER] = {"stop-after", "N", "stop (as if killed, checkpointing first) after N steps", 0},
    [O_FORCE] = {"force", NULL, "start even when the memory estimate exceeds what is available", 0},
};

/* The command line as given (program path included), for the run's
 * provenance: joined before getopt permutes argv. */
static void join_argv(int argc, char **argv, char *out, size_t cap) {
    snprintf(out, cap, "%s", program_invocation_name);
    for (int i = 0; i < argc; i++) {
        size_t k = strlen(out);
        snprintf(out + k, cap - k, " %s", argv[i]);
    }
}

/* A run a sweep started (its claim token in GATED_RUN_OWNER names the
 * parent) dies with the sweep: a sweep killed outright leaves no run going
 * on under a claim whose owner is gone, which the next sweep takes for
 * dead at once (store.h, "Claims") and would run a second time.  SIGKILL,
 * as the sweep had: the run resumes exactly from its last checkpoint.
 * 0, or -1 when the sweep is gone already. */
static int die_with_sweep(void) {
    const char *owner = getenv("GATED_RUN_OWNER");
    char host[256];
    long pid;
    long long start;
    if (!owner || store_owner_parse(owner, host, sizeof host, &pid, &start) || pid != (long)getppid()) return 0;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)pid) return -1;
    return 0;
}

static int run_train(int argc, char **argv) {
    char joined[4096];
    join_argv(argc, argv, joined, sizeof joined);
    char **sets = calloc((size_t)argc, sizeof *sets);
    if (!sets) {
        fprintf(stderr, "gated train: out of memory\n");
        return EXIT_RUNTIME;
    }
    TrainOpts to = {cli_default_db(), NULL, "data", joined, isatty(2), 0, NULL, 0, 0};
    int nsets = 0, o;
    CliArgs a;
    const char *v;
    cli_begin(&a, &cmd_train, argc, argv);
    while ((o = cli_next(&a, &v)) >= 0) {
        switch (o) {
        case O_SET: sets[nsets++] = (char *)v; break;
        case O_DB: to.db_path = v; break;
        case O_NAME: to.name = v; break;
        case O_DATA: to.data_dir = v; break;
        case O_RESUME: to.resume = 1; break;
        case O_CKPT: to.ckpt_dir = v; break;
        case O_FORCE: to.force = 1; break;
        case O_STOP_AFTER:
            if (util_parse_long(v, 1, LONG_MAX, &to.stop_after)) {
                a.status = cli_usage_error(&cmd_train, "--stop-after: expected a positive integer, got \"%s\"", v);
                o = CLI_EXIT;
            }
            break;
        }
        if (o == CLI_EXIT) break;
    }
    char **rest;
    int n = o == CLI_EXIT ? 0 : cli_rest(&a, &rest), rc = -1;
    Config c;
    if (o == CLI_EXIT)
        rc = a.status;
    else if (n != 1)
        rc = n ? cli_usage_error(&cmd_train, "one CONFIG.yaml, not %d", n)
               : cli_usage_error(&cmd_train, "no CONFIG.yaml given");
    else if (cli_load_config(&c, rest[0], sets, nsets, NULL))
        rc = EXIT_BADINPUT;
    free(sets);
    if (rc >= 0) return rc;

    /* the name reaches the store, reports, plots and terminals: printable text only */
    char why[200], q[300], shown[400];
    if (to.name && store_name_check(to.name, why, sizeof why)) {
        config_quote(to.name, q, sizeof q);
        fprintf(stderr, "gated train: --name: \"%s\" %s\n", store_escape(q, shown, sizeof shown), why);
        return EXIT_BADINPUT;
    }
    /* the database's directory is made on demand (the default's .gated/ first of all) */
    char *dir = cli_dir_of(to.db_path);
    if (!dir) {
        fprintf(stderr, "gated train: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (util_mkdir_p(dir)) {
        fprintf(stderr, "gated train: %s: %s\n", dir, strerror(errno));
        free(dir);
        return EXIT_BADINPUT;
    }
    free(dir);
    if (die_with_sweep()) {
        fprintf(stderr, "gated train: the sweep that started this run has exited; not started\n");
        return EXIT_RUNTIME;
    }
    return train_run(&c, &to);
}

const Command cmd_train = {
    "train", "CONFIG.yaml", "One training run of a config, recorded in the database.", opts,
    "stdout: the run id when the run ends (finished, diverged, or already done for --resume).\n"
    "stderr: progress (one redrawn line on a terminal, else a line every 30 s and at each evaluation),\n"
    "warnings and errors.  A diverged run is a result: exit 0.  SIGINT / SIGTERM write a checkpoint,\n"
    "mark the run killed (rows kept; --resume continues it) and exit 130 / 143.\n",
    run_train};
