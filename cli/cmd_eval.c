/*
 * cmd_eval.c — `gated eval`: perplexity and F-Attn of trained models at
 * context lengths beyond their training length (core/run/eval.h).
 *
 *   gated eval RUN|CHECKPOINT... [--sweep NAME] --lengths L1,L2,...
 *              [--rope-scaling none|linear|ntk|yarn] [--factor F]
 *              [--windows N] [--split val|test|both] [--db PATH] [--data DIR] [--ckpt DIR]
 *
 * Defaults: --rope-scaling none, factor = length / training length,
 * --windows 16, --split val, --db results/gated.db, --data data; --ckpt:
 * DBDIR/checkpoints (where gated sweep writes them), else checkpoints.  --sweep evaluates every finished run of the sweep.
 * The database must exist (it is never created); runs are looked up
 * read-only and the results written to the run's row.
 * Exit 0 ok, 1 runtime failure, 2 bad usage or input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "run/eval.h"
#include "nn/rope.h"
#include "run/store.h"
#include "util/util.h"

static void eval_usage(FILE *f) {
    fprintf(f, "usage: gated eval RUN|CHECKPOINT... [--sweep NAME] --lengths L1,L2,... "
               "[--rope-scaling none|linear|ntk|yarn] [--factor F] [--windows N] [--split val|test|both] "
               "[--db PATH] [--data DIR] [--ckpt DIR]\n");
}

/* "128,256,512" -> lengths (at most cap). -1 on a bad list. */
static int parse_lengths(const char *s, int *out, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 2 || v > 1048576 || n == cap || (*end && *end != ',')) return -1;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

/* The value v of option a into o (and *lengths / *nl, *sweep).  0, 1 for
 * an unknown option (usage), -1 for a bad value (message printed). */
static int eval_option(const char *a, const char *v, EvalOpts *o, int *lengths, int *nl, const char **sweep) {
    if (strcmp(a, "--lengths") == 0) {
        if ((*nl = parse_lengths(v, lengths, 64)) <= 0) {
            fprintf(stderr, "gated eval: --lengths: expected integers >= 2 separated by commas, got \"%s\"\n", v);
            return -1;
        }
    } else if (strcmp(a, "--rope-scaling") == 0) {
        int k = 0;
        while (rope_scaling_names[k] && strcmp(rope_scaling_names[k], v)) k++;
        if (!rope_scaling_names[k]) {
            fprintf(stderr, "gated eval: --rope-scaling: expected none, linear, ntk or yarn, got \"%s\"\n", v);
            return -1;
        }
        o->scaling = k;
    } else if (strcmp(a, "--factor") == 0) {
        char *end;
        o->factor = strtod(v, &end);
        if (*end || !(o->factor >= 1 && o->factor <= 1e6)) {
            fprintf(stderr, "gated eval: --factor: expected a number in [1, 1e6], got \"%s\"\n", v);
            return -1;
        }
    } else if (strcmp(a, "--windows") == 0) {
        long w;
        if (util_parse_long(v, 1, 1000000, &w)) {
            fprintf(stderr, "gated eval: --windows: expected an integer in [1, 1000000], got \"%s\"\n", v);
            return -1;
        }
        o->windows = (int)w;
    } else if (strcmp(a, "--split") == 0) {
        o->val = strcmp(v, "val") == 0 || strcmp(v, "both") == 0;
        o->test = strcmp(v, "test") == 0 || strcmp(v, "both") == 0;
        if (!o->val && !o->test) {
            fprintf(stderr, "gated eval: --split: expected val, test or both, got \"%s\"\n", v);
            return -1;
        }
    } else if (strcmp(a, "--sweep") == 0)
        *sweep = v;
    else if (strcmp(a, "--db") == 0)
        o->db_path = v;
    else if (strcmp(a, "--data") == 0)
        o->data_dir = v;
    else if (strcmp(a, "--ckpt") == 0)
        o->ckpt_dir = v;
    else
        return 1;
    return 0;
}

/* Every finished run of the sweep.  Returns the exit code. */
static int eval_sweep(const char *sweep, const EvalOpts *o) {
    char err[1024];
    Store *st;
    char(*ids)[17] = NULL;
    int n = 0, rc = 0;
    if (store_open_ro(&st, o->db_path, err, sizeof err)) {
        fprintf(stderr, "gated eval: %s\n", err);
        return 2;
    }
    if (store_sweep_finished(st, sweep, &ids, &n)) {
        fprintf(stderr, "gated eval: %s\n", store_errmsg(st));
        rc = 1, n = 0; /* a partial list is not a sweep's runs */
    }
    store_close(st);
    if (n == 0 && rc == 0) {
        fprintf(stderr, "gated eval: sweep %s has no finished runs in %s\n", sweep, o->db_path);
        rc = 2;
    }
    for (int i = 0; i < n && rc == 0; i++) rc = eval_run(ids[i], o);
    free(ids);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    EvalOpts o = {0};
    o.db_path = "results/gated.db";
    o.data_dir = "data";
    o.windows = 16;
    o.val = 1;
    o.progress = isatty(2);
    int lengths[64], nl = 0;
    const char *sweep = NULL;
    const char **targets = calloc((size_t)argc + 1, sizeof *targets);
    int nt = 0, rc = 2;
    if (!targets) return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            targets[nt++] = a;
            continue;
        }
        if (!v) goto usage;
        i++;
        int k = eval_option(a, v, &o, lengths, &nl, &sweep);
        if (k < 0) goto out;
        if (k > 0) goto usage;
    }
    if (nl == 0 || (nt == 0 && !sweep)) goto usage;
    /* results go to the run's row in an existing database: a missing one is
     * an error, and nothing is created */
    if (access(o.db_path, F_OK) != 0) {
        fprintf(stderr, "gated eval: %s: no such database (train or sweep first, or pass --db)\n", o.db_path);
        goto out;
    }
    o.lengths = lengths;
    o.nlengths = nl;
    rc = 0;
    for (int i = 0; i < nt && rc == 0; i++) rc = eval_run(targets[i], &o);
    if (sweep && rc == 0) rc = eval_sweep(sweep, &o);
    goto out;
usage:
    fprintf(stderr, "gated eval: missing or incomplete arguments\n");
    eval_usage(stderr);
    rc = 2;
out:
    free(targets);
    return rc;
}
