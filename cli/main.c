/*
 * main.c — the `gated` command: git-style subcommands.
 *
 *   gated info    CONFIG.yaml [--set key=value]...       the resolved config, shapes, parameters
 *   gated xcheck  CONFIG.yaml [--set key=value]... --out FILE | --list
 *   gated train   CONFIG.yaml ...                        one run (core/run/train.c)
 *   gated sweep   SWEEP.yaml ...                         many runs (cli/cmd_sweep.c)
 *   gated merge   OUT.db IN.db...                        (cli/cmd_sweep.c, core/lab/merge.c)
 *   gated report  ...                                    (cli/cmd_report.c)
 *   gated eval    RUN|CHECKPOINT... ...                  (cli/cmd_eval.c)
 *   gated ls | show RUN                                  (cli/store_show.c)
 *   gated bench | compare ...                            (cli/cmd_bench.c)
 *   gated help
 *
 * usage() below has every option.
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "run/config.h"
#include "run/dump.h"
#include "nn/model.h"
#include "nn/rng.h"
#include "run/store.h"
#include "run/train.h"
#include "store_show.h"
#include "nn/variant.h"
#include "util/util.h"

#include <unistd.h>

enum { EXIT_RUNTIME = 1, EXIT_BADINPUT = 2 };

static void usage(FILE *f) {
    fprintf(f,
            "usage: gated <command> [args]\n"
            "  info   CONFIG.yaml [--set key=value]...   resolved config, parameters, gate cost, FLOPs\n"
            "  xcheck CONFIG.yaml [--set key=value]... --out FILE\n"
            "                                           dump weights, a batch, logits and gradients\n"
            "                                           for tests/torch_ref.py\n"
            "  xcheck --list                            the cases tests/xcheck.sh runs (LABEL|KEY=VALUE ...)\n"
            "  train  CONFIG.yaml [--set key=value]... [--db PATH] [--name NAME] [--data DIR]\n"
            "         [--resume] [--ckpt DIR] [--stop-after N] [--force]\n"
            "  sweep  SWEEP.yaml [--dry-run] [--index I] [--shard i/N] [--jobs J] [--force]\n"
            "         [--rerun-failed] [--fail-fast] [--db PATH] [--data DIR]\n"
            "  eval   RUN|CHECKPOINT... [--sweep NAME] --lengths L1,L2,... [--rope-scaling none|linear|ntk|yarn]\n"
            "         [--factor F] [--windows N] [--split val|test|both] [--db PATH] [--data DIR] [--ckpt DIR]\n"
            "                                           perplexity and F-Attn beyond the training length\n"
            "  merge  OUT.db IN.db...                    fold per-worker databases together\n"
            "  report [--db PATH] [--sweep NAME] [--format md|csv|tex] [--out DIR]\n"
            "  ls     [--db PATH]                        runs in the store\n"
            "  show   RUN [--db PATH]                    one run: config, provenance, metrics, probes\n"
            "  bench  [SUITE.yaml] [--filter RE] [--repetitions N] [--min-time S] [--json PATH]\n"
            "         [--db PATH] [--threads N] [--interleave] [--paced] [--list] [--callgrind] [--env]\n"
            "                                           kernels, attention, training steps\n"
            "  compare BASE.json HEAD.json [--threshold PCT] [--metric NAME] [--fail-missing]\n"
            "                                           median per case; exit 3 on a regression\n");
}

/* Options that take a value, besides --set; NULL where a command has none. */
typedef struct {
    const char *out, *db, *name, *data, *ckpt;
    int resume, force;
    long stop_after;
} Opts;

/* Load CONFIG plus --set overrides; other options go to *op (NULL: none
 * accepted).  Exits 2 on any configuration or usage error. */
static void load_config_raw(Config *c, int argc, char **argv, Opts *op, Config *raw) {
    ConfigError err;
    config_defaults(c);
    if (argc < 1) {
        usage(stderr);
        exit(EXIT_BADINPUT);
    }
    if (config_load_file(c, argv[0], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(EXIT_BADINPUT);
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            if (config_set(c, argv[++i], &err)) {
                fprintf(stderr, "%s\n", err.msg);
                exit(EXIT_BADINPUT);
            }
        } else if (strncmp(argv[i], "--set=", 6) == 0) {
            if (config_set(c, argv[i] + 6, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                exit(EXIT_BADINPUT);
            }
        } else if (op && i + 1 < argc && strcmp(argv[i], "--out") == 0) {
            op->out = argv[++i];
        } else if (op && i + 1 < argc && strcmp(argv[i], "--db") == 0) {
            op->db = argv[++i];
        } else if (op && i + 1 < argc && strcmp(argv[i], "--name") == 0) {
            op->name = argv[++i];
        } else if (op && i + 1 < argc && strcmp(argv[i], "--data") == 0) {
            op->data = argv[++i];
        } else if (op && i + 1 < argc && strcmp(argv[i], "--ckpt") == 0) {
            op->ckpt = argv[++i];
        } else if (op && strcmp(argv[i], "--resume") == 0) {
            op->resume = 1;
        } else if (op && strcmp(argv[i], "--force") == 0) {
            op->force = 1; /* train: start even when the memory estimate exceeds what is available */
        } else if (op && i + 1 < argc && strcmp(argv[i], "--stop-after") == 0) {
            if (util_parse_long(argv[++i], 1, LONG_MAX, &op->stop_after)) {
                fprintf(stderr, "gated: --stop-after: expected a positive integer, got \"%s\"\n", argv[i]);
                exit(EXIT_BADINPUT);
            }
        } else {
            fprintf(stderr, "gated: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            exit(EXIT_BADINPUT);
        }
    }
    if (raw) *raw = *c;
    if (config_resolve(c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(EXIT_BADINPUT);
    }
}

static void load_config(Config *c, int argc, char **argv, Opts *op) { load_config_raw(c, argc, argv, op, NULL); }

static void shape_text(const Tensor *t, char *buf, size_t cap) {
    if (t->ndim == 1)
        snprintf(buf, cap, "[%d]", t->shape[0]);
    else
        snprintf(buf, cap, "[%d, %d]", t->shape[0], t->shape[1]);
}

static int cmd_info(int argc, char **argv) {
    Config c, cb;
    load_config_raw(&c, argc, argv, NULL, &cb);
    printf("# resolved configuration (%s)\n", argv[0]);
    config_print(&c, stdout);

    /* the ungated model: same settings, no gate, d_ff not shrunk */
    ConfigError err;
    cb.gate = gate_default();
    cb.gate.control = c.gate.control;
    cb.match_params = 0;
    if (config_resolve(&cb, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return EXIT_BADINPUT;
    }
    Model m, base;
    ModelCfg mc = config_model(&c), mcb = config_model(&cb);
    if (model_layout(&m, &mc) || model_layout(&base, &mcb)) {
        fprintf(stderr, "gated: out of memory\n");
        return EXIT_RUNTIME;
    }
    printf("\n# parameters\n%-20s %-14s %12s  %s\n", "tensor", "shape", "count", "weight decay");
    for (int i = 0; i < m.p.n; i++) {
        char sh[40];
        shape_text(&m.p.t[i], sh, sizeof sh);
        printf("%-20s %-14s %12zu  %s\n", m.p.t[i].name, sh, m.p.t[i].n, m.p.t[i].decay ? "yes" : "no");
    }
    printf("%-20s %-14s %12zu\n", "total", "", m.p.total);

    char lab[128];
    const GateCfg *g = &c.gate;
    printf("\n# gate: %s", gate_label(g, lab, sizeof lab));
    if (g->position != GP_NONE) printf(" (%s: %s)", gate_positions[g->position].paper, gate_positions[g->position].what);
    printf("\n");
    const char *formula;
    long paper = gate_paper_params(&c.gate, c.d_model, c.n_head, c.n_kv_head, c.d_head, &formula);
    printf("added parameters per layer: %ld", m.gs.wg_params);
    if (paper >= 0) printf("  (paper: %s = %ld%s)", formula, paper, paper == m.gs.wg_params ? "" : "  MISMATCH");
    printf("\nadded parameters, all layers: %ld\n", model_gate_params(&m));
    printf("total vs ungated model: %zu vs %zu (%+.2f%%)\n", m.p.total, base.p.total,
           100.0 * ((double)m.p.total - (double)base.p.total) / (double)base.p.total);
    if (c.match_params) printf("match_params: d_ff reduced to %d to offset the gate\n", c.d_ff);

    double fwd, train, fb, tb;
    model_flops(&m, c.seq_len, &fwd, &train);
    model_flops(&base, c.seq_len, &fb, &tb);
    printf("\n# FLOPs per token at T = %d\nforward %.4g   training (fwd+bwd) %.4g   (ungated forward %.4g, %+.2f%%)\n",
           c.seq_len, fwd, train, fb, 100.0 * (fwd - fb) / fb);
    model_free(&m);
    model_free(&base);
    return 0;
}

/* Append to buf the --set overrides of g's keys that differ from the default. */
static void gate_sets(const GateCfg *g, char *buf, size_t cap) {
    GateCfg d = gate_default();
    const struct {
        const char *key;
        const char *const *names;
        int v, dv;
    } ax[] = {
        {"position", gate_position_names, g->position, d.position},
        {"granularity", gate_granularity_names, g->granularity, d.granularity},
        {"sharing", gate_sharing_names, g->sharing, d.sharing},
        {"form", gate_form_names, g->form, d.form},
        {"activation", gate_activation_names, g->activation, d.activation},
        {"input", gate_input_names, g->input, d.input},
        {"control", gate_control_names, g->control, d.control},
    };
    for (size_t i = 0; i < sizeof ax / sizeof ax[0]; i++) {
        size_t k = strlen(buf);
        if (ax[i].v != ax[i].dv && k < cap)
            snprintf(buf + k, cap - k, "%smodel.gate.%s=%s", k ? " " : "", ax[i].key, ax[i].names[ax[i].v]);
    }
}

/* One cross-check case: "LABEL|KEY=VALUE KEY=VALUE" (tests/xcheck.sh). */
static void xcheck_case(const char *prefix, const char *sets, GateCfg g) {
    char lab[128], all[512];
    snprintf(all, sizeof all, "%s", sets);
    gate_sets(&g, all, sizeof all);
    GateCfg d = gate_default();
    int plain = memcmp(&g, &d, sizeof g) == 0;
    printf("%s%s|%s\n", prefix, plain ? "baseline" : gate_label(&g, lab, sizeof lab), all);
}

/* `gated xcheck --list`: the cases tests/xcheck.sh runs, from the tables:
 * the baseline, gate_covering() (every value of every gate list), each
 * control alone and before a G1 gate, every position under GQA (n_kv_head
 * 2, and 1 with a headwise gate where the position splits into KV heads)
 * and without QK-norm, and match_params. */
static void xcheck_list(void) {
    GateCfg d = gate_default(), g, cov[GP__COUNT * GG__COUNT * GS__COUNT * GI__COUNT * GF__COUNT * GA__COUNT];
    int n = gate_covering(cov, (int)(sizeof cov / sizeof cov[0]));
    xcheck_case("", "", d);
    for (int i = 0; i < n; i++) xcheck_case("", "", cov[i]);
    for (int c = GC_NONE + 1; c < GC__COUNT; c++) {
        g = d, g.control = c;
        xcheck_case("", "", g);
        g.position = GP_SDPA;
        xcheck_case("", "", g);
    }
    for (int p = GP_NONE + 1; p < GP__COUNT; p++) {
        g = d, g.position = p;
        xcheck_case("kv2-", "model.n_kv_head=2", g);
    }
    for (int p = GP_NONE + 1; p < GP__COUNT; p++)
        if (gate_positions[p].heads == HEADS_KV && gate_positions[p].headwise_ok) {
            g = d, g.position = p, g.granularity = GG_HEADWISE;
            xcheck_case("kv1-", "model.n_kv_head=1", g);
        }
    for (int p = GP_NONE; p < GP__COUNT; p++) {
        g = d, g.position = p;
        xcheck_case("noqk-", "model.qk_norm=false", g);
    }
    g = d, g.position = GP_SDPA;
    xcheck_case("matched-", "model.match_params=true", g);
    /* a learned logit bias at every position (headwise at G3, head-shared at
     * G1), a static gate started off zero, and a scale other than the
     * default (issue 14's scale controls) */
    for (int p = GP_NONE + 1; p < GP__COUNT; p++) {
        g = d, g.position = p, g.bias = 1, g.init_bias = 2;
        if (p == GP_KEY) g.granularity = GG_HEADWISE;
        xcheck_case("", "model.gate.bias=true model.gate.init_bias=2", g);
    }
    g = d, g.position = GP_SDPA, g.granularity = GG_HEADWISE, g.sharing = GS_HEAD_SHARED, g.bias = 1, g.init_bias = -1;
    xcheck_case("", "model.gate.bias=true model.gate.init_bias=-1", g);
    g = d, g.position = GP_SDPA, g.input = GI_STATIC, g.init_bias = 2;
    xcheck_case("", "model.gate.init_bias=2", g);
    g = d, g.position = GP_SDPA, g.control = GC_SCALE, g.control_scale = 1.7;
    xcheck_case("", "model.gate.control_scale=1.7", g);
}

static int cmd_xcheck(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "--list") == 0) {
        if (argc > 1) {
            fprintf(stderr, "usage: gated xcheck --list\n");
            return EXIT_BADINPUT;
        }
        xcheck_list();
        return 0;
    }
    Config c;
    Opts op = {0};
    load_config(&c, argc, argv, &op);
    const char *out = op.out;
    if (!out) {
        fprintf(stderr, "gated xcheck: --out FILE is required\n");
        return EXIT_BADINPUT;
    }
    Model m;
    ModelCfg mc = config_model(&c);
    if (model_init(&m, &mc)) {
        fprintf(stderr, "gated: out of memory\n");
        return EXIT_RUNTIME;
    }
    /* Perturb the norm weights and static gate parameters away from their
     * init (ones / zeros) so the check sees their full effect. */
    Rng r = rng_seed((uint64_t)c.seed + 99);
    for (int i = 0; i < m.p.n; i++)
        if (!m.p.t[i].decay)
            for (size_t j = 0; j < m.p.t[i].n; j++) m.p.w[m.p.t[i].off + j] += (real)(0.3 * rng_normal(&r));
    int B = c.batch, T = c.seq_len, n = B * T;
    int *tok = malloc(sizeof(int) * (size_t)n), *tgt = malloc(sizeof(int) * (size_t)n);
    if (!tok || !tgt) {
        fprintf(stderr, "gated: out of memory\n");
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, (uint64_t)c.vocab_size);
    for (int i = 0; i < n; i++) tgt[i] = (int)rng_below(&r, (uint64_t)c.vocab_size);
    double loss = model_forward(&m, tok, tgt, B, T);
    model_zero_grad(&m);
    if (loss != loss || model_backward(&m, tok) || dump_write(out, &c, &m, tok, tgt)) {
        fprintf(stderr, "gated xcheck: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    free(tok);
    free(tgt);
    model_free(&m);
    return 0;
}

static int cmd_train(int argc, char **argv, int all_argc, char **all_argv) {
    Config c;
    Opts op = {0};
    load_config(&c, argc, argv, &op);
    /* the name reaches the store, reports, plots and terminals: printable text only */
    char why[200], q[300], shown[400];
    if (op.name && store_name_check(op.name, why, sizeof why)) {
        config_quote(op.name, q, sizeof q);
        fprintf(stderr, "gated train: --name: \"%s\" %s\n", store_escape(q, shown, sizeof shown), why);
        return EXIT_BADINPUT;
    }
    char joined[4096] = "";
    for (int i = 0; i < all_argc; i++) {
        size_t k = strlen(joined);
        snprintf(joined + k, sizeof joined - k, "%s%s", i ? " " : "", all_argv[i]);
    }
    TrainOpts to = {op.db ? op.db : "results/gated.db", op.name, op.data ? op.data : "data", joined,
                    isatty(2), op.resume, op.ckpt, op.stop_after, op.force};
    return train_run(&c, &to);
}

/* ls / show: [RUN] [--db PATH] */
static int cmd_store(int argc, char **argv, int show) {
    const char *db = "results/gated.db", *run = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            db = argv[++i];
        else if (show && !run && argv[i][0] != '-')
            run = argv[i];
        else {
            fprintf(stderr, "gated: unknown or incomplete option '%s'\n", argv[i]);
            return EXIT_BADINPUT;
        }
    }
    if (show && !run) {
        fprintf(stderr, "usage: gated show RUN [--db PATH]\n");
        return EXIT_BADINPUT;
    }
    if (access(db, F_OK) != 0) {
        fprintf(stderr, "gated: %s: no such database (train a run first, or pass --db)\n", db);
        return EXIT_BADINPUT;
    }
    char err[1024];
    Store *st;
    /* reading only: a read-only file works, and its bytes (journal mode included) stay as they are */
    if (store_open_ro(&st, db, err, sizeof err)) {
        fprintf(stderr, "gated: %s\n", err);
        return EXIT_BADINPUT;
    }
    int rc = show ? show_run(st, run, stdout, err, sizeof err) : show_ls(st, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "gated: %s\n", err);
    store_close(st);
    return rc ? EXIT_BADINPUT : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_BADINPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0) return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "xcheck") == 0) return cmd_xcheck(argc - 2, argv + 2);
    if (strcmp(cmd, "train") == 0) return cmd_train(argc - 2, argv + 2, argc, argv);
    if (strcmp(cmd, "sweep") == 0) return cmd_sweep(argc - 2, argv + 2);
    if (strcmp(cmd, "merge") == 0) return cmd_merge(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0) return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "eval") == 0) return cmd_eval(argc - 2, argv + 2);
    if (strcmp(cmd, "ls") == 0) return cmd_store(argc - 2, argv + 2, 0);
    if (strcmp(cmd, "show") == 0) return cmd_store(argc - 2, argv + 2, 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "compare") == 0) return cmd_compare(argc - 2, argv + 2);
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "gated: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_BADINPUT;
}
