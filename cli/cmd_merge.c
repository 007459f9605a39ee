/*
 * cmd_merge.c — `gated merge`.
 *
 * gated merge OUT.db IN.db... folds each input into OUT (created if missing) with merge_from():
 * idempotent, no duplicates, the better copy of a run shared by two inputs
 * wins.  Each input is merged in its own transaction; the first unusable
 * input stops the command (exit 2) with the inputs before it merged.  An
 * input is untrusted: one whose run names, run ids, sweep names or labels
 * hold a control character is unusable (store_name_check), and the other
 * text it brings is escaped wherever it is printed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "run/store.h"
#include "lab/merge/merge.h"


static int run_merge(int all_argc, char **all_argv) {
    static const char *const tables[] = {"runs",       "metrics",      "summary",    "histograms",
                                         "sweep_runs", "environments", "code_attest"};
    enum { NT = sizeof tables / sizeof tables[0] };
    CliArgs a;
    const char *v;
    int k;
    cli_begin(&a, &cmd_merge, all_argc, all_argv);
    while ((k = cli_next(&a, &v)) >= 0) {
    }
    if (k == CLI_EXIT)
        return a.status;
    char **argv;
    int argc = cli_rest(&a, &argv);
    if (argc < 2)
        return cli_usage_error(&cmd_merge, "needs OUT.db and at least one IN.db");
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "gated merge: %s: %s\n", argv[i], strerror(errno));
            return EXIT_BADINPUT;
        }
    }
    char err[1024];
    Store *st;
    int orc = store_open(&st, argv[0], err, sizeof err);
    if (orc) {
        fprintf(stderr, "gated merge: %s\n", err);
        return cli_store_exit(orc);
    }
    int rc = 0;
    long long before[NT], after[NT];
    for (int t = 0; t < NT; t++)
        if ((before[t] = store_count_rows(st, tables[t])) < 0) {
            fprintf(stderr, "gated merge: %s\n", store_errmsg(st));
            store_close(st);
            return EXIT_RUNTIME;
        }
    for (int i = 1; i < argc && rc == 0; i++) {
        int m = merge_from(st, argv[i], err, sizeof err);
        if (m != 0) {
            fprintf(stderr, "gated merge: %s\n", err);
            rc = m == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
            break;
        }
        printf("merged %s:", argv[i]);
        for (int t = 0; t < NT; t++) {
            if ((after[t] = store_count_rows(st, tables[t])) < 0) {
                fprintf(stderr, "\ngated merge: %s\n", store_errmsg(st));
                rc = EXIT_RUNTIME;
                break;
            }
            printf(" %s +%lld%s", tables[t], after[t] - before[t], t + 1 < NT ? "," : "");
            before[t] = after[t];
        }
        printf("\n");
    }
    if (rc == 0)
        printf("%s: %lld runs, %lld metric rows\n", argv[0], before[0], before[1]);
    store_close(st);
    return rc;
}

const Command cmd_merge = {"merge", "OUT.db IN.db...",
                           "Fold per-shard or per-machine databases into OUT.db, idempotently.", NULL,
                           "stdout: the rows each input added.\n", run_merge};
