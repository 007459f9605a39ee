/*
 * cmd_eval.c — `gated eval`: perplexity and F-Attn of trained models at
 * context lengths beyond their training length (core/run/eval.h).
 *
 * With --quant / --drop (core/run/infer.h): perplexity under simulated
 * int quantization and with (token, head) attention outputs dropped, at
 * the training length unless --lengths, stored as infer_* metrics.
 * Defaults: --rope-scaling none, factor = length / training length,
 * --windows 16, --split val, --db the default database (cli.h), --data
 * data; --ckpt: DBDIR/checkpoints (where gated sweep writes them), else
 * checkpoints.  --sweep evaluates every finished run of the sweep.  The
 * database must exist (it is never created); runs are looked up read-only
 * and the results written to the run's row.
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

enum { O_SWEEP, O_LENGTHS, O_QUANT, O_DROP, O_ROPE_SCALING, O_FACTOR, O_WINDOWS, O_SPLIT, O_DB, O_DATA, O_CKPT, O__COUNT };
static const CliOpt opts[O__COUNT + 1] = {
    [O_SWEEP] = {"sweep", "NAME", "also every finished run of this sweep", 0},
    [O_LENGTHS] = {"lengths", "L1,L2,...", "the context lengths (required, but with --quant / --drop: default the training length)", 0},
    [O_QUANT] = {"quant", "S1,S2,...", "simulated quantization schemes: float, wB[gG], aB(tensor|token), wB[gG]-aB(tensor|token) (repeatable)", 0},
    [O_DROP] = {"drop", "R1,R2,...", "drop (token, head) outputs: gate:TAU (with matched random and entropy), frac:F (repeatable)", 0},
    [O_ROPE_SCALING] = {"rope-scaling", "none|linear|ntk|yarn", "RoPE scaling beyond the training length (default: none)", 0},
    [O_FACTOR] = {"factor", "F", "the scaling factor (default: length / training length)", 0},
    [O_WINDOWS] = {"windows", "N", "windows per length (default: 16)", 0},
    [O_SPLIT] = {"split", "val|test|both", "which split (default: val)", 0},
    [O_DB] = {"db", "PATH", CLI_DB_HELP, 0},
    [O_DATA] = {"data", "DIR", "the corpus (default: data)", 0},
    [O_CKPT] = {"ckpt", "DIR", "checkpoints (default: DBDIR/checkpoints, else checkpoints)", 0},
};

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

#define EVAL_MAX_SCHEMES 64
typedef struct {
    int lengths[64], nl;
    QuantSpec quant[EVAL_MAX_SCHEMES];
    DropSpec drop[EVAL_MAX_SCHEMES];
    const char *sweep;
} EvalLists;

/* A comma-separated list of quantization schemes (drop 0) or drop rules
 * (drop 1) into L.  0, or 2 (message and usage printed). */
static int parse_schemes(const char *v, int drop, EvalLists *L, EvalOpts *o) {
    char item[128], err[256];
    int *n = drop ? &o->ndrop : &o->nquant;
    const char *opt = drop ? "drop" : "quant", *list = v;
    for (;;) {
        size_t len = strcspn(v, ",");
        if (len == 0) return cli_usage_error(&cmd_eval, "--%s: an empty item in \"%.60s\"", opt, list);
        if (len >= sizeof item) return cli_usage_error(&cmd_eval, "--%s: an item longer than %zu characters", opt, sizeof item - 1);
        if (*n == EVAL_MAX_SCHEMES) return cli_usage_error(&cmd_eval, "--%s: more than %d items", opt, EVAL_MAX_SCHEMES);
        memcpy(item, v, len);
        item[len] = 0;
        if (drop ? drop_spec_parse(item, &L->drop[*n], err, sizeof err)
                 : quant_spec_parse(item, &L->quant[*n], err, sizeof err))
            return cli_usage_error(&cmd_eval, "--%s: %s", opt, err);
        ++*n;
        v += len;
        if (!*v) return 0;
        v++; /* the comma: an item must follow */
    }
}

/* The value v of option k into o (and L).  0, or 2
 * for a bad value (message and usage printed). */
static int eval_option(int k, const char *v, EvalOpts *o, EvalLists *L) {
    const Command *c = &cmd_eval;
    int *lengths = L->lengths, *nl = &L->nl;
    const char **sweep = &L->sweep;
    if (k == O_QUANT || k == O_DROP) {
        return parse_schemes(v, k == O_DROP, L, o);
    } else if (k == O_LENGTHS) {
        if ((*nl = parse_lengths(v, lengths, 64)) <= 0)
            return cli_usage_error(c, "--lengths: expected integers >= 2 separated by commas, got \"%s\"", v);
    } else if (k == O_ROPE_SCALING) {
        int s = 0;
        while (rope_scaling_names[s] && strcmp(rope_scaling_names[s], v)) s++;
        if (!rope_scaling_names[s])
            return cli_usage_error(c, "--rope-scaling: expected none, linear, ntk or yarn, got \"%s\"", v);
        o->scaling = s;
    } else if (k == O_FACTOR) {
        char *end;
        o->factor = strtod(v, &end);
        if (*end || !(o->factor >= 1 && o->factor <= 1e6))
            return cli_usage_error(c, "--factor: expected a number in [1, 1e6], got \"%s\"", v);
    } else if (k == O_WINDOWS) {
        long w;
        if (util_parse_long(v, 1, 1000000, &w))
            return cli_usage_error(c, "--windows: expected an integer in [1, 1000000], got \"%s\"", v);
        o->windows = (int)w;
    } else if (k == O_SPLIT) {
        o->val = strcmp(v, "val") == 0 || strcmp(v, "both") == 0;
        o->test = strcmp(v, "test") == 0 || strcmp(v, "both") == 0;
        if (!o->val && !o->test) return cli_usage_error(c, "--split: expected val, test or both, got \"%s\"", v);
    } else if (k == O_SWEEP) {
        *sweep = v;
    } else if (k == O_DB) {
        o->db_path = v;
    } else if (k == O_DATA) {
        o->data_dir = v;
    } else if (k == O_CKPT) {
        o->ckpt_dir = v;
    }
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

static int run_eval(int argc, char **argv) {
    EvalOpts o = {0};
    o.db_path = cli_default_db();
    o.data_dir = "data";
    o.windows = 16;
    o.val = 1;
    o.progress = isatty(2);
    static EvalLists lists; /* static: the spec arrays are large */
    memset(&lists, 0, sizeof lists);
    int k = CLI_END, rc = 0;
    const char *v;
    CliArgs a;
    cli_begin(&a, &cmd_eval, argc, argv);
    while (rc == 0 && (k = cli_next(&a, &v)) >= 0) rc = eval_option(k, v, &o, &lists);
    if (rc) return rc;
    if (k == CLI_EXIT) return a.status;
    char **targets;
    int nt = cli_rest(&a, &targets);
    int nl = lists.nl;
    const char *sweep = lists.sweep;
    if (nl == 0 && !o.nquant && !o.ndrop) return cli_usage_error(&cmd_eval, "--lengths is required (or --quant / --drop)");
    if ((o.nquant || o.ndrop) && (o.scaling != ROPE_NONE || o.factor > 0))
        return cli_usage_error(&cmd_eval, "--rope-scaling / --factor do not apply with --quant / --drop (evaluated as trained)");
    if (nt == 0 && !sweep) return cli_usage_error(&cmd_eval, "no RUN, CHECKPOINT or --sweep given");
    /* results go to the run's row in an existing database: a missing one is
     * an error, and nothing is created */
    if (cli_require_db(&cmd_eval, o.db_path)) return EXIT_BADINPUT;
    o.lengths = lists.lengths;
    o.nlengths = nl;
    o.quant = lists.quant;
    o.drop = lists.drop;
    for (int i = 0; i < nt && rc == 0; i++) rc = eval_run(targets[i], &o);
    if (sweep && rc == 0) rc = eval_sweep(sweep, &o);
    return rc;
}

const Command cmd_eval = {
    "eval", "[RUN|CHECKPOINT]...",
    "Perplexity and F-Attn of trained models beyond the training length, quantized, or with heads dropped.", opts,
    "A RUN is a run id, name or unique id prefix; its checkpoint is CKPT/DB_ID/RUN_ID.ckpt, and it must\n"
    "be this database's (another database's checkpoint is refused, exit 2).  Results are stored\n"
    "as metrics of the run (eval_loss, eval_ppl, eval_f_attn, eval_windows; a rerun replaces them)\n"
    "in the database, which must exist (it is never created).  With --quant or --drop: infer_loss,\n"
    "infer_ppl, infer_windows (and infer_drop, infer_flops_wo, infer_flops_attn) per scheme, context\n"
    "split=S,len=L,quant=SCHEME or split=S,len=L,drop=gate|random|entropy,tau=T|frac=F.\n"
    "stdout: one line per run, split and length; stderr: progress and errors.\n",
    run_eval};
