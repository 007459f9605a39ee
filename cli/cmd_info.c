/*
 * cmd_info.c — `gated info` (a run config resolved: parameters, gate cost,
 * FLOPs) and `gated xcheck` (weights, a batch, logits and gradients dumped
 * for tests/torch_ref.py; --list: the cases tests/xcheck.sh runs; --quant /
 * --drop: the logits and loss of the evaluation forward of run/infer.h,
 * quantized and / or with heads dropped, instead).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "nn/model.h"
#include "nn/sparse.h"
#include "nn/rng.h"
#include "nn/variant.h"
#include "run/config.h"
#include "run/dump.h"
#include "run/infer.h"
#include "util/json.h"

/* The options of xcheck (O_*) and info (I_*; --set is O_SET in both). */
enum { O_SET, O_OUT, O_LIST, O_QUANT, O_DROP, O__COUNT };
enum { I_JSON = O_SET + 1, I__COUNT };
static const CliOpt xcheck_opts[O__COUNT + 1] = {
    [O_SET] = {"set", "KEY=VALUE", "override a config key, a later one wins", 1},
    [O_OUT] = {"out", "FILE", "the dump to write (required unless --list)", 0},
    [O_LIST] = {"list", NULL, "print the cases tests/xcheck.sh runs (LABEL|KEY=VALUE ...) instead", 0},
    [O_QUANT] = {"quant", "SCHEME", "forward with simulated quantization (as gated eval: w8-a8token, w4g32, ...)", 0},
    [O_DROP] = {"drop", "gate:TAU", "forward with the (token, head) pairs of G1 gate score < TAU dropped", 0},
};
static const CliOpt info_opts[I__COUNT + 1] = {
    [O_SET] = {"set", "KEY=VALUE", "override a config key, a later one wins", 1},
    [I_JSON] = {"json", NULL, "one JSON document instead of the text (docs/cli.md, \"Machine-readable output\")", 0},
};

/* Parse argv: the config's path and its --set list (malloc'd into *sets),
 * xcheck's --out, --list, --quant and --drop (quant and drop NULL for
 * info), info's --json (in list).  -1: go on; else the exit status. */
static int parse(const Command *cmd, int argc, char **argv, const char **path, char ***sets, int *nsets,
                 const char **out, int *list, const char **quant, const char **drop) {
    CliArgs a;
    const char *v;
    int o;
    *sets = calloc((size_t)argc, sizeof **sets);
    if (!*sets) {
        fprintf(stderr, "gated %s: out of memory\n", cmd->name);
        return EXIT_RUNTIME;
    }
    *nsets = 0;
    cli_begin(&a, cmd, argc, argv);
    while ((o = cli_next(&a, &v)) >= 0) {
        if (o == O_SET) (*sets)[(*nsets)++] = (char *)v;
        if (cmd == &cmd_info && o == I_JSON) *list = 1; /* info: list carries --json */
        if (cmd == &cmd_xcheck && o == O_OUT) *out = v;
        if (cmd == &cmd_xcheck && o == O_LIST) *list = 1;
        if (cmd == &cmd_xcheck && o == O_QUANT) *quant = v;
        if (cmd == &cmd_xcheck && o == O_DROP) *drop = v;
    }
    if (o == CLI_EXIT) return a.status;
    char **rest;
    int n = cli_rest(&a, &rest);
    if (cmd == &cmd_xcheck && *list) {
        if (n || *nsets || *out || *quant || *drop)
            return cli_usage_error(cmd, "--list takes no config, --set, --out, --quant or --drop");
        return -1;
    }
    if (n == 0) return cli_usage_error(cmd, "no CONFIG.yaml given");
    if (n > 1) return cli_usage_error(cmd, "one CONFIG.yaml, not %d", n);
    *path = rest[0];
    return -1;
}

static void shape_text(const Tensor *t, char *buf, size_t cap) {
    if (t->ndim == 1)
        snprintf(buf, cap, "[%d]", t->shape[0]);
    else
        snprintf(buf, cap, "[%d, %d]", t->shape[0], t->shape[1]);
}

/* The sparse-attention axis (model.attention.sparse): what selects the
 * keys, k, whether a forward at model.seq_len is sparse at all, and the
 * indexer's parameters. */
static void info_sparse(const Config *c, const Model *m) {
    const AttnCfg *a = &c->attn;
    printf("\n# sparse attention: %s (%s)\n", attn_sparses[a->sparse].name, attn_sparses[a->sparse].how);
    if (a->sparse == AS_NONE) return;
    if (attn_sparse_active(a, c->seq_len))
        printf("k = %d of up to %d keys per query (rows with <= %d keys are dense)\n", a->topk, c->seq_len, a->topk);
    else
        printf("k = %d >= model.seq_len %d: every row has <= k keys, so training runs dense (the dense kernel); "
               "longer contexts (gated eval) are sparse\n",
               a->topk, c->seq_len);
    if (!attn_sparses[a->sparse].indexer) return;
    long per = attn_indexer_params(a, c->d_model);
    printf("indexer: H_I %d, d_I %d; added parameters per layer: %ld ((H_I + 1) d_I + H_I rows of d_model, + d_I); "
           "all layers: %ld%s\n",
           a->idx_heads, a->idx_dim, per, model_indexer_params(m),
           model_indexer_params(m) == per * m->L ? "" : "  MISMATCH");
    printf("decoding also caches each token's indexer key: %d numbers per layer beside the keys and values "
           "(core/nn/kvcache_sparse.c)\n",
           a->idx_dim);
}

/* What info shows, computed once for the text and the JSON. */
typedef struct {
    const char *path;
    Config c;
    Model m, base; /* the model, and the ungated one: same settings, no gate, d_ff not shrunk */
    char label[128];
    const char *formula;
    long paper; /* the paper's count per layer, or -1 */
    double fwd, train, fb, tb;
} Info;

static void info_text(const Info *in) {
    const Config *c = &in->c;
    const Model *m = &in->m;
    printf("# resolved configuration (%s)\n", in->path);
    config_print(c, stdout);
    printf("\n# parameters\n%-20s %-14s %12s  %s\n", "tensor", "shape", "count", "weight decay");
    for (int i = 0; i < m->p.n; i++) {
        char sh[40];
        shape_text(&m->p.t[i], sh, sizeof sh);
        printf("%-20s %-14s %12zu  %s\n", m->p.t[i].name, sh, m->p.t[i].n, m->p.t[i].decay ? "yes" : "no");
    }
    printf("%-20s %-14s %12zu\n", "total", "", m->p.total);
    const GateCfg *g = &c->gate;
    printf("\n# gate: %s", in->label);
    if (g->position != GP_NONE) printf(" (%s: %s)", gate_positions[g->position].paper, gate_positions[g->position].what);
    printf("\n");
    printf("added parameters per layer: %ld", m->gs.wg_params);
    if (in->paper >= 0)
        printf("  (paper: %s = %ld%s)", in->formula, in->paper, in->paper == m->gs.wg_params ? "" : "  MISMATCH");
    printf("\nadded parameters, all layers: %ld\n", model_gate_params(m));
    printf("total vs ungated model: %zu vs %zu (%+.2f%%)\n", m->p.total, in->base.p.total,
           100.0 * ((double)m->p.total - (double)in->base.p.total) / (double)in->base.p.total);
    if (c->match_params) printf("match_params: d_ff reduced to %d to offset the gate\n", c->d_ff);
    const AttnNormDef *an = &attn_norms[c->attn.normalizer];
    long anp = attn_norm_params(&c->attn, c->n_head, c->n_kv_head, c->d_head);
    printf("\n# attention normaliser: %s  p_ij = %s\n", an->name, an->formula);
    printf("added parameters per layer: %ld%s%s%s\nadded parameters, all layers: %ld%s\n", anp, an->params ? " (" : "",
           an->params ? an->params : "", an->params ? ")" : "", model_attn_params(m),
           model_attn_params(m) == anp * m->L ? "" : "  MISMATCH");
    const AttnKvDef *kv = &attn_kvs[c->attn.kv];
    printf("\n# keys and values: %s  (%s)\n", kv->name, kv->what);
    if (c->attn.kv == KV_LATENT)
        printf("d_c %d, d_R %d: score width d_head + d_R = %d\n", c->attn.d_c, c->attn.d_R, c->d_head + c->attn.d_R);
    printf("KV cache per token per layer: %ld numbers (%s); MHA %d, MQA (n_kv_head 1) %d\n",
           attn_kv_cache(&c->attn, c->n_kv_head, c->d_head), kv->cache, 2 * c->n_head * c->d_head, 2 * c->d_head);
    info_sparse(c, m);
    printf("\n# FLOPs per token at T = %d\nforward %.4g   training (fwd+bwd) %.4g   (ungated forward %.4g, %+.2f%%)\n",
           c->seq_len, in->fwd, in->train, in->fb, 100.0 * (in->fwd - in->fb) / in->fb);
}

/* The same as one JSON document (docs/cli.md, "Machine-readable output"). */
static int info_json(const Info *in) {
    const Config *c = &in->c;
    const Model *m = &in->m;
    const GateCfg *g = &c->gate;
    int n = config_to_json_full(c, NULL, 0);
    char *cfg = malloc((size_t)n + 1);
    if (!cfg) {
        fprintf(stderr, "gated info: out of memory\n");
        return EXIT_RUNTIME;
    }
    config_to_json_full(c, cfg, (size_t)n + 1);
    printf("{\"file\":");
    json_fput(in->path, stdout);
    printf(",\"config\":%s,\"parameters\":[", cfg);
    free(cfg);
    for (int i = 0; i < m->p.n; i++) {
        const Tensor *t = &m->p.t[i];
        printf("%s{\"tensor\":", i ? "," : "");
        json_fput(t->name, stdout);
        if (t->ndim == 1)
            printf(",\"shape\":[%d]", t->shape[0]);
        else
            printf(",\"shape\":[%d,%d]", t->shape[0], t->shape[1]);
        printf(",\"count\":%zu,\"weight_decay\":%s}", t->n, t->decay ? "true" : "false");
    }
    printf("],\"total_params\":%zu,\"ungated_total_params\":%zu,\"gate\":{\"label\":", m->p.total, in->base.p.total);
    json_fput(in->label, stdout);
    printf(",\"paper_position\":");
    if (g->position != GP_NONE)
        json_fput(gate_positions[g->position].paper, stdout);
    else
        printf("null");
    printf(",\"added_params_per_layer\":%ld,\"added_params\":%ld,\"paper_params_per_layer\":", m->gs.wg_params,
           model_gate_params(m));
    if (in->paper >= 0)
        printf("%ld,\"paper_formula\":", in->paper), json_fput(in->formula, stdout);
    else
        printf("null,\"paper_formula\":null");
    printf("},\"normalizer\":{\"name\":");
    json_fput(attn_norms[c->attn.normalizer].name, stdout);
    printf(",\"added_params_per_layer\":%ld,\"added_params\":%ld}",
           attn_norm_params(&c->attn, c->n_head, c->n_kv_head, c->d_head), model_attn_params(m));
    printf(",\"kv\":{\"name\":");
    json_fput(attn_kvs[c->attn.kv].name, stdout);
    printf(",\"cache_per_token_per_layer\":%ld,\"mha_cache_per_token_per_layer\":%d}",
           attn_kv_cache(&c->attn, c->n_kv_head, c->d_head), 2 * c->n_head * c->d_head);
    printf(",\"sparse\":{\"name\":");
    json_fput(attn_sparses[c->attn.sparse].name, stdout);
    printf(",\"topk\":%d,\"sparse_at_seq_len\":%s,\"indexer_params\":%ld}", c->attn.topk,
           attn_sparse_active(&c->attn, c->seq_len) ? "true" : "false", model_indexer_params(m));
    printf(",\"match_params_d_ff\":");
    if (c->match_params)
        printf("%d", c->d_ff);
    else
        printf("null");
    printf(",\"flops_per_token\":{\"seq_len\":%d,\"forward\":", c->seq_len);
    json_fput_num(in->fwd, stdout);
    printf(",\"training\":");
    json_fput_num(in->train, stdout);
    printf(",\"ungated_forward\":");
    json_fput_num(in->fb, stdout);
    printf(",\"ungated_training\":");
    json_fput_num(in->tb, stdout);
    printf("}}\n");
    return 0;
}

static int run_info(int argc, char **argv) {
    const char *out = NULL;
    char **sets;
    Info in;
    Config cb;
    int nsets, json = 0, rc = parse(&cmd_info, argc, argv, &in.path, &sets, &nsets, &out, &json, NULL, NULL);
    if (rc < 0 && cli_load_config(&in.c, in.path, sets, nsets, &cb)) rc = EXIT_BADINPUT;
    free(sets);
    if (rc >= 0) return rc;
    const Config *c = &in.c;

    /* the ungated model: same settings, no gate, d_ff not shrunk */
    ConfigError err;
    cb.gate = gate_default();
    cb.gate.control = c->gate.control;
    cb.match_params = 0;
    if (config_resolve(&cb, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return EXIT_BADINPUT;
    }
    ModelCfg mc = config_model(c), mcb = config_model(&cb);
    if (model_layout(&in.m, &mc) || model_layout(&in.base, &mcb)) {
        fprintf(stderr, "gated: out of memory\n");
        return EXIT_RUNTIME;
    }
    gate_label(&c->gate, in.label, sizeof in.label);
    in.paper = gate_paper_params(&c->gate, c->d_model, c->n_head, c->n_kv_head, c->d_head, &in.formula);
    model_flops(&in.m, c->seq_len, &in.fwd, &in.train);
    model_flops(&in.base, c->seq_len, &in.fb, &in.tb);
    if (json)
        rc = info_json(&in);
    else
        info_text(&in), rc = 0;
    model_free(&in.m);
    model_free(&in.base);
    if (rc == 0 && fflush(stdout) != 0) rc = EXIT_RUNTIME;
    return rc;
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
 * and without QK-norm, match_params, every attention normaliser alone,
 * under G1 and with grouped KV heads, every KV construction (attn_kvs[])
 * and every sparse row (attn_sparses[]). */
/* every sparse row from the table (attn_sparses[]) at k 3: alone, under a
 * G1 gate, and with grouped KV heads (the dump carries the selections;
 * torch_ref.py attends over them) */
static void xcheck_list_sparse(GateCfg d) {
    for (int a = AS_NONE + 1; a < AS__COUNT; a++) {
        char pre[48], set[128];
        snprintf(pre, sizeof pre, "topk-%s-", attn_sparse_names[a]);
        snprintf(set, sizeof set, "model.attention.sparse=%s model.attention.topk=3%s", attn_sparse_names[a],
                 attn_sparses[a].indexer ? " model.attention.indexer_heads=2 model.attention.indexer_dim=8" : "");
        GateCfg g = d;
        xcheck_case(pre, set, g);
        g.position = GP_SDPA;
        xcheck_case(pre, set, g);
        snprintf(pre, sizeof pre, "kv2-topk-%s-", attn_sparse_names[a]);
        char kv[160];
        snprintf(kv, sizeof kv, "model.n_kv_head=2 %s", set);
        xcheck_case(pre, kv, d);
    }
}

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
    /* every attention normaliser from the table (attn_norms[]): alone, under
     * a G1 gate, and with grouped KV heads (n_kv_head 2) */
    for (int a = AN_SOFTMAX + 1; a < AN__COUNT; a++) {
        char pre[48], set[96];
        snprintf(pre, sizeof pre, "%s-", attn_norm_names[a]);
        snprintf(set, sizeof set, "model.attention.normalizer=%s", attn_norm_names[a]);
        g = d;
        xcheck_case(pre, set, g);
        g.position = GP_SDPA;
        xcheck_case(pre, set, g);
        snprintf(pre, sizeof pre, "kv2-%s-", attn_norm_names[a]);
        snprintf(set, sizeof set, "model.n_kv_head=2 model.attention.normalizer=%s", attn_norm_names[a]);
        xcheck_case(pre, set, d);
    }
    /* every KV construction from the table (attn_kvs[]) but heads: alone,
     * under G1 elementwise and headwise; latent also without the decoupled
     * RoPE key (alone and under G1), with d_R = d_head and with sink_logit */
    for (int kv = KV_HEADS + 1; kv < KV__COUNT; kv++) {
        char pre[48], set[192];
        snprintf(pre, sizeof pre, "%s-", attn_kv_names[kv]);
        snprintf(set, sizeof set, "model.qk_norm=false model.attention.kv=%s", attn_kv_names[kv]);
        g = d;
        xcheck_case(pre, set, g);
        g.position = GP_SDPA;
        xcheck_case(pre, set, g);
        g.granularity = GG_HEADWISE;
        xcheck_case(pre, set, g);
        if (kv != KV_LATENT) continue;
        xcheck_case("latent-nope-", "model.qk_norm=false model.attention.kv=latent model.attention.d_R=0", d);
        g = d, g.position = GP_SDPA;
        xcheck_case("latent-nope-", "model.qk_norm=false model.attention.kv=latent model.attention.d_R=0", g);
        xcheck_case("latent-c12-r8-sink_logit-",
                    "model.qk_norm=false model.attention.kv=latent model.attention.d_c=12 model.attention.d_R=8 "
                    "model.attention.normalizer=sink_logit",
                    d);
    }
    xcheck_list_sparse(d);
}

/* The evaluation forward of `xcheck --quant / --drop` (run/infer.h, as
 * gated eval runs it): the weights quantized, the hook on every linear
 * input, then the float weights back in place for the dump (torch_ref.py
 * quantizes them itself).  The loss, NAN on failure; *hook holds the drop
 * counts. */
static double xcheck_eval_forward(Model *m, const QuantSpec *qs, const DropSpec *ds, InferHook *hook,
                                  const int *tok, const int *tgt, int B, int T) {
    memset(hook, 0, sizeof *hook);
    real *w0 = malloc(sizeof(real) * m->p.total);
    if (!w0 || infer_hook_init(hook, m->L)) {
        free(w0);
        errno = ENOMEM;
        return NAN;
    }
    memcpy(w0, m->p.w, sizeof(real) * m->p.total);
    double loss = NAN;
    if (infer_quant_weights(m, qs)) {
        fprintf(stderr, "gated xcheck: a weight block is not finite\n");
        errno = EDOM;
    } else {
        hook->abits = qs->abits, hook->agran = qs->agran;
        if (ds) hook->sel = SEL_GATE, hook->tau = ds->v;
        model_set_linear_hook(m, infer_hook, hook);
        loss = model_forward(m, tok, tgt, B, T);
        model_set_linear_hook(m, NULL, NULL);
    }
    memcpy(m->p.w, w0, sizeof(real) * m->p.total);
    free(w0);
    return loss;
}

static int run_xcheck(int argc, char **argv) {
    const char *path = NULL, *out = NULL, *quant = NULL, *drop = NULL;
    char **sets, err[256];
    int nsets, list = 0, rc = parse(&cmd_xcheck, argc, argv, &path, &sets, &nsets, &out, &list, &quant, &drop);
    Config c;
    QuantSpec qs = {0};
    DropSpec ds = {0};
    if (rc < 0 && list) {
        xcheck_list();
        rc = 0;
    } else if (rc < 0 && !out) {
        rc = cli_usage_error(&cmd_xcheck, "--out FILE is required");
    } else if (rc < 0 && quant && quant_spec_parse(quant, &qs, err, sizeof err)) {
        rc = cli_usage_error(&cmd_xcheck, "--quant: %s", err);
    } else if (rc < 0 && drop && drop_spec_parse(drop, &ds, err, sizeof err)) {
        rc = cli_usage_error(&cmd_xcheck, "--drop: %s", err);
    } else if (rc < 0 && drop && ds.kind != DROP_GATE) {
        rc = cli_usage_error(&cmd_xcheck, "--drop: only gate:TAU is cross-checked (frac:F selects pairs at random "
                                          "or by attention entropy)");
    } else if (rc < 0 && cli_load_config(&c, path, sets, nsets, NULL)) {
        rc = EXIT_BADINPUT;
    }
    free(sets);
    if (rc >= 0) return rc;
    Model m;
    ModelCfg mc = config_model(&c);
    if (model_init(&m, &mc)) {
        fprintf(stderr, "gated: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (drop && !infer_has_g1_gate(&m)) {
        fprintf(stderr, "gated xcheck: --drop %s needs a multiplicative G1 gate (model.gate.position sdpa)\n", drop);
        model_free(&m);
        return EXIT_BADINPUT;
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
    if (quant || drop) {
        /* forward only: a backward after a hooked forward is undefined */
        InferHook h;
        char qname[64], dname[64];
        quant_spec_name(&qs, qname, sizeof qname);
        /* TAU in the fewest digits that read back as the same double */
        for (int prec = 6; drop && prec <= 17; prec++) {
            snprintf(dname, sizeof dname, "gate:%.*g", prec, ds.v);
            if (strtod(dname + 5, NULL) == ds.v) break;
        }
        double loss = xcheck_eval_forward(&m, &qs, drop ? &ds : NULL, &h, tok, tgt, B, T);
        DumpEval ev = {quant ? qname : NULL, drop ? dname : NULL, h.dropped};
        if (loss != loss || dump_write_eval(out, &c, &m, tok, tgt, &ev)) {
            fprintf(stderr, "gated xcheck: %s\n", strerror(errno));
            rc = EXIT_RUNTIME;
        } else if (drop) {
            long long nd = 0, np = 0;
            for (int l = 0; l < m.L; l++) nd += h.dropped[l], np += h.pairs[l];
            printf("gated xcheck: %s dropped %lld of %lld (token, head) pairs\n", dname, nd, np);
        }
        infer_hook_free(&h);
    } else {
        double loss = model_forward(&m, tok, tgt, B, T);
        model_zero_grad(&m);
        if (loss != loss || model_backward(&m, tok) || dump_write(out, &c, &m, tok, tgt)) {
            fprintf(stderr, "gated xcheck: %s\n", strerror(errno));
            rc = EXIT_RUNTIME;
        }
    }
    free(tok);
    free(tgt);
    model_free(&m);
    return rc < 0 ? 0 : rc;
}

const Command cmd_info = {"info", "CONFIG.yaml", "The resolved config, its parameters, the gate's cost and FLOPs.",
                          info_opts, "The config is printed as resolved (automatic values filled in), then a table of\n"
                                     "tensors, the gate's added parameters (against the paper's formula) and FLOPs per\n"
                                     "token against the ungated model; all on stdout (--json: as one JSON document).\n",
                          run_info};
const Command cmd_xcheck = {"xcheck", "[CONFIG.yaml]",
                            "Dump weights, a batch, logits and gradients for tests/torch_ref.py.", xcheck_opts,
                            "The norm weights and static gate parameters are perturbed away from their init so the\n"
                            "cross-check sees them; tests/xcheck.sh runs every case of --list.  With --quant and / or\n"
                            "--drop (run/infer.h) the dump holds the float weights and the logits and loss of the\n"
                            "quantized / head-dropped forward, no gradients (core/run/dump.h).\n",
                            run_xcheck};
