/*
 * bench_suite.c — loading a benchmark suite (see bench.h for the format):
 * the YAML document (read by run/yamlfile.h's bounded reader), checked key
 * by key with "FILE:LINE:COL: error: WHERE: reason" messages, each case
 * item expanded into its cases (gates x shapes, passes x T, variants plus
 * their sgemm ceilings, ops), step configs resolved through run/config,
 * then names checked unique and `ceiling: NAME` resolved.
 */
#include "lab/bench/bench_yaml_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "nn/gate.h"
#include "nn/variant.h"
#include "run/yamlfile.h"

const char *const bench_kind_names[] = {"gate", "attention_forward", "attention_backward", "step", "sgemm", "op",
                                        "decode", NULL};
const char *const bench_op_names[] = {"rmsnorm", "rope", "swiglu", "crossentropy", NULL};

#define TIMING_KEYS "repetitions", "warmup", "iterations", "min_time"

/* One item of a gate case's gates: its label and a config whose gate is
 * the item's model.gate keys over the defaults (position sdpa). */
static int parse_gate(BL *L, const yaml_node_t *gn, const char *gw, char *label, size_t lcap, Config *cfg) {
    static const char *const gkeys[] = {"label",      "position", "granularity", "sharing", "form",
                                        "activation", "input",    "control",     NULL};
    char w[320];
    if (!gn || gn->type != YAML_MAPPING_NODE)
        return bl_berr(L, gn, gw, "expected a mapping (label and model.gate keys), got %s",
                    gn ? bl_kind_text(gn) : "nothing");
    if (bl_check_keys(L, gn, gw, gkeys)) return -1;
    yaml_node_t *lab = bl_get(L, gn, "label");
    bl_sub(w, sizeof w, gw, "label");
    if (!lab) return bl_berr(L, gn, gw, "missing key label");
    if (bl_parse_label(L, lab, w, label, lcap)) return -1;
    config_defaults(cfg);
    cfg->gate.position = GP_SDPA;
    for (yaml_node_pair_t *p = gn->data.mapping.pairs.start; p < gn->data.mapping.pairs.top; p++) {
        const char *k = bl_scalar(bl_node(L, p->key));
        yaml_node_t *v = bl_node(L, p->value);
        if (strcmp(k, "label") == 0) continue;
        bl_sub(w, sizeof w, gw, k);
        if (bl_want_scalar(L, v, w)) return -1;
        char a[400];
        snprintf(a, sizeof a, "model.gate.%s=%s", k, bl_scalar(v));
        ConfigError e;
        if (config_set(cfg, a, &e)) {
            const char *why = strstr(e.msg, ": error: ");
            return bl_berr(L, v, NULL, "%s", why ? why + 9 : e.msg);
        }
    }
    const char *bad_key = NULL;
    const char *why = gate_validate(&cfg->gate, &bad_key);
    if (why) return bl_berr(L, gn, gw, "%s", why);
    if (cfg->gate.position == GP_NONE) return bl_berr(L, gn, gw, "position none has no gate to time");
    return 0;
}

/* A gate case's gates: a list of items (label and model.gate keys), or one
 * of the words `covering` (gate_covering(): every value of every gate axis,
 * as the PyTorch cross-check runs them) or `all` (gate_enumerate(): every
 * valid combination), labelled by gate_label, so a new variant in the
 * tables is timed without editing a suite.  *out is malloc'd. */
typedef struct {
    char label[64];
    GateCfg gate;
} GateItem;

static int gate_items(BL *L, const yaml_node_t *item, yaml_node_t *gates, const char *where, GateItem **out,
                      int *n) {
    char w[320];
    bl_sub(w, sizeof w, where, "gates");
    *out = NULL;
    *n = 0;
    if (gates && gates->type == YAML_SCALAR_NODE) {
        const char *t = bl_scalar(gates);
        int all = strcmp(t, "all") == 0;
        if (!all && strcmp(t, "covering") != 0)
            return bl_berr(L, gates, w, "expected a list of gates, covering or all, got \"%s\"", t);
        int total = all ? gate_enumerate(NULL, 0) : gate_covering(NULL, 0);
        GateCfg *g = malloc(sizeof *g * (size_t)(total > 0 ? total : 1));
        GateItem *it = malloc(sizeof *it * (size_t)(total > 0 ? total : 1));
        if (!g || !it) {
            free(g), free(it);
            return bl_berr(L, gates, w, "out of memory");
        }
        total = all ? gate_enumerate(g, total) : gate_covering(g, total);
        for (int i = 0; i < total; i++) {
            if (g[i].position == GP_NONE) continue; /* nothing to time */
            it[*n].gate = g[i];
            gate_label(&g[i], it[*n].label, sizeof it[*n].label);
            (*n)++;
        }
        free(g);
        *out = it;
        return 0;
    }
    if (!gates || gates->type != YAML_SEQUENCE_NODE || gates->data.sequence.items.start == gates->data.sequence.items.top)
        return bl_berr(L, gates ? gates : item, w, "expected a non-empty list of gates, covering or all");
    int cap = (int)(gates->data.sequence.items.top - gates->data.sequence.items.start);
    GateItem *it = malloc(sizeof *it * (size_t)cap);
    if (!it) return bl_berr(L, gates, w, "out of memory");
    for (yaml_node_item_t *g = gates->data.sequence.items.start; g < gates->data.sequence.items.top; g++) {
        char gw[340];
        snprintf(gw, sizeof gw, "%s.gates[%d]", where, *n);
        Config cfg;
        if (parse_gate(L, bl_node(L, *g), gw, it[*n].label, sizeof it[*n].label, &cfg)) {
            free(it);
            return -1;
        }
        it[(*n)++].gate = cfg.gate;
    }
    *out = it;
    return 0;
}

/* One shape of a gate case: tokens, heads, width and a label. */
static int parse_gate_shape(BL *L, yaml_node_t *sn, const char *sw, int *t, int *h, int *d, char *slabel,
                            size_t cap) {
    char w[360];
    if (!sn || sn->type != YAML_MAPPING_NODE)
        return bl_berr(L, sn, sw, "expected a mapping (tokens, heads, width), got %s", sn ? bl_kind_text(sn) : "nothing");
    if (bl_check_keys(L, sn, sw, (const char *const[]){"label", "tokens", "heads", "width", NULL})) return -1;
    const char *need[] = {"tokens", "heads", "width"};
    int *dst[] = {t, h, d};
    int hi[] = {1 << 24, 4096, 65536};
    for (int q = 0; q < 3; q++) {
        yaml_node_t *v = bl_get(L, sn, need[q]);
        if (!v) return bl_berr(L, sn, sw, "missing key %s", need[q]);
        bl_sub(w, sizeof w, sw, need[q]);
        if (bl_parse_int(L, v, w, 1, hi[q], dst[q])) return -1;
    }
    yaml_node_t *sl = bl_get(L, sn, "label");
    if (!sl) {
        snprintf(slabel, cap, "n%d_h%d_d%d", *t, *h, *d);
        return 0;
    }
    bl_sub(w, sizeof w, sw, "label");
    return bl_parse_label(L, sl, w, slabel, cap);
}

static int parse_gate_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "gates", "shapes", "ceiling", TIMING_KEYS, NULL};
    if (bl_check_keys(L, item, where, keys)) return -1;
    yaml_node_t *shapes = bl_get(L, item, "shapes");
    char w[320];
    if (!shapes || shapes->type != YAML_SEQUENCE_NODE || shapes->data.sequence.items.start == shapes->data.sequence.items.top) {
        bl_sub(w, sizeof w, where, "shapes");
        return bl_berr(L, shapes ? shapes : item, w, "expected a non-empty list of shapes");
    }
    GateItem *gi;
    int ng, first = L->s->n, rc = 0;
    if (gate_items(L, item, bl_get(L, item, "gates"), where, &gi, &ng)) return -1;
    for (int g = 0; rc == 0 && g < ng; g++) {
        int si = 0;
        for (yaml_node_item_t *sh = shapes->data.sequence.items.start; rc == 0 && sh < shapes->data.sequence.items.top;
             sh++, si++) {
            char sw[340], slabel[64];
            int t = 0, h = 0, d = 0;
            snprintf(sw, sizeof sw, "%s.shapes[%d]", where, si);
            BenchCase *c = NULL;
            if (parse_gate_shape(L, bl_node(L, *sh), sw, &t, &h, &d, slabel, sizeof slabel) ||
                !(c = bl_new_case(L, item, idx, BK_GATE))) {
                rc = -1;
                break;
            }
            c->gate = gi[g].gate;
            c->tokens = t;
            c->heads = h;
            c->width = d;
            snprintf(c->name, sizeof c->name, "gate/%s/%s", gi[g].label, slabel);
        }
    }
    free(gi);
    return rc ? -1 : bl_finish_item(L, item, where, first);
}

/* An attention case's normalizers: absent (softmax, not named in the case
 * name), a name or a list of names from attn_norm_names[], or `all` (every
 * row of the table, in its order). */
static int parse_normalizers(BL *L, yaml_node_t *v, const char *where, int *out, int *n, int *named) {
    char w[320];
    *n = 0, *named = v != NULL;
    if (!v) return out[(*n)++] = AN_SOFTMAX, 0;
    bl_sub(w, sizeof w, where, "normalizer");
    if (v->type == YAML_SCALAR_NODE && strcmp(bl_scalar(v), "all") == 0) {
        for (int a = 0; a < AN__COUNT; a++) out[(*n)++] = a;
        return 0;
    }
    yaml_node_t *its[AN__COUNT];
    int ni = 0;
    if (bl_items(L, v, w, its, AN__COUNT, &ni)) return -1;
    for (int i = 0; i < ni; i++) {
        if (bl_want_scalar(L, its[i], w)) return -1;
        int a = name_index(attn_norm_names, bl_scalar(its[i]));
        if (a < 0) {
            char list[256] = "";
            for (int k = 0; attn_norm_names[k]; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), ", %s", attn_norm_names[k]);
            return bl_berr(L, its[i], w, "expected all or one of %s, got \"%s\"", list + 2, bl_scalar(its[i]));
        }
        for (int j = 0; j < *n; j++)
            if (out[j] == a) return bl_berr(L, its[i], w, "\"%s\" is listed twice", bl_scalar(its[i]));
        out[(*n)++] = a;
    }
    return 0;
}

static int parse_attention_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind",    "label",   "pass",       "T",         "n_head", "n_kv_head",
                                       "d_head",  "batch",   "batch_T",    "normalizer", "ceiling", TIMING_KEYS,
                                       NULL};
    if (bl_check_keys(L, item, where, keys)) return -1;
    char w[320], label[64] = "";
    yaml_node_t *v;
    if ((v = bl_get(L, item, "label"))) {
        bl_sub(w, sizeof w, where, "label");
        if (bl_parse_label(L, v, w, label, sizeof label)) return -1;
    }
    yaml_node_t *passes[2], *Ts[64];
    int np = 0, nT = 0;
    v = bl_get(L, item, "pass");
    bl_sub(w, sizeof w, where, "pass");
    if (!v) return bl_berr(L, item, where, "missing key pass (forward, backward or a list of them)");
    if (bl_items(L, v, w, passes, 2, &np)) return -1;
    int pk[2];
    for (int i = 0; i < np; i++) {
        const char *t = bl_scalar(passes[i]);
        if (strcmp(t, "forward") == 0)
            pk[i] = BK_ATTN_FWD;
        else if (strcmp(t, "backward") == 0)
            pk[i] = BK_ATTN_BWD;
        else
            return bl_berr(L, passes[i], w, "expected forward or backward, got \"%s\"", t);
    }
    v = bl_get(L, item, "T");
    bl_sub(w, sizeof w, where, "T");
    if (!v) return bl_berr(L, item, where, "missing key T (an integer or a list)");
    if (bl_items(L, v, w, Ts, 64, &nT)) return -1;
    int T[64], Tmax = 0;
    for (int i = 0; i < nT; i++) {
        if (bl_parse_int(L, Ts[i], w, 1, 1 << 20, &T[i])) return -1;
        if (T[i] > Tmax) Tmax = T[i];
    }
    int H = 0, Hk = 0, d = 0, batch = 1, bT = Tmax;
    const char *need[] = {"n_head", "d_head"};
    int *dst[] = {&H, &d};
    for (int q = 0; q < 2; q++) {
        v = bl_get(L, item, need[q]);
        if (!v) return bl_berr(L, item, where, "missing key %s", need[q]);
        bl_sub(w, sizeof w, where, need[q]);
        if (bl_parse_int(L, v, w, 1, 4096, dst[q])) return -1;
    }
    Hk = H;
    if ((v = bl_get(L, item, "n_kv_head"))) {
        bl_sub(w, sizeof w, where, "n_kv_head");
        if (bl_parse_int(L, v, w, 1, 4096, &Hk)) return -1;
        if (H % Hk) return bl_berr(L, v, w, "must divide n_head (%d), got %d", H, Hk);
    }
    if ((v = bl_get(L, item, "batch"))) {
        bl_sub(w, sizeof w, where, "batch");
        if (bl_parse_int(L, v, w, 1, 1 << 20, &batch)) return -1;
    }
    if ((v = bl_get(L, item, "batch_T"))) {
        bl_sub(w, sizeof w, where, "batch_T");
        if (bl_parse_int(L, v, w, 1, 1 << 20, &bT)) return -1;
    }
    int norms[AN__COUNT], nn = 0, named = 0;
    if (parse_normalizers(L, bl_get(L, item, "normalizer"), where, norms, &nn, &named)) return -1;
    int first = L->s->n;
    for (int u = 0; u < nn * np * nT; u++) {
        int a = u / (np * nT), p = u / nT % np, i = u % nT;
        BenchCase *c = bl_new_case(L, item, idx, pk[p]);
        if (!c) return -1;
        c->normalizer = norms[a];
        double r = (double)bT / T[i];
        double B = floor(batch * r * r + 0.5);
        c->B = B < 1 ? 1 : B > (1 << 24) ? (1 << 24) : (int)B;
        c->T = T[i];
        c->H = H;
        c->Hk = Hk;
        c->d = d;
        snprintf(c->name, sizeof c->name, "attention/%s%s%s%s%s/T%d", label, *label ? "/" : "",
                 named ? attn_norm_names[norms[a]] : "", named ? "/" : "",
                 pk[p] == BK_ATTN_FWD ? "forward" : "backward", T[i]);
    }
    return bl_finish_item(L, item, where, first);
}

/* A decode case's contexts (`context`, required there; refused on a step). */
static int decode_contexts(BL *L, const yaml_node_t *item, const char *where, int *ctx, int *n) {
    char w[320];
    int decode = strcmp(bl_scalar(bl_get(L, item, "kind")), "decode") == 0;
    yaml_node_t *v = bl_get(L, item, "context"), *cs[16];
    bl_sub(w, sizeof w, where, "context");
    if (!decode) return v ? bl_berr(L, v, w, "only for kind decode") : 0;
    if (!v) return bl_berr(L, item, where, "missing key context (an integer or a list)");
    if (bl_items(L, v, w, cs, 16, n)) return -1;
    for (int i = 0; i < *n; i++)
        if (bl_parse_int(L, cs[i], w, 1, 1 << 20, &ctx[i])) return -1;
    return 0;
}

/* One decode case per context of a model variant. */
static int add_decode_cases(BL *L, const yaml_node_t *item, int idx, const Config *cfg, const char *mlabel,
                            const char *label, const int *ctx, int nctx) {
    for (int i = 0; i < nctx; i++) {
        BenchCase *c = bl_new_case(L, item, idx, BK_DECODE);
        if (!c) return -1;
        c->cfg = *cfg, c->B = 1, c->T = ctx[i];
        snprintf(c->name, sizeof c->name, "decode/%s/%s/ctx%d", mlabel, label, ctx[i]);
    }
    return 0;
}

static int parse_step_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "model", "variants", "ceiling", "context", TIMING_KEYS, NULL};
    if (bl_check_keys(L, item, where, keys)) return -1;
    char w[320];
    int ctxs[16], nctx = 0; /* decode cases: their contexts */
    if (decode_contexts(L, item, where, ctxs, &nctx)) return -1;
    yaml_node_t *mv = bl_get(L, item, "model");
    bl_sub(w, sizeof w, where, "model");
    if (!mv) return bl_berr(L, item, where, "missing key model (a name under models)");
    if (bl_want_scalar(L, mv, w)) return -1;
    const char *mname = bl_scalar(mv);
    const ModelDef *md = NULL;
    for (int i = 0; i < L->nmodels; i++)
        if (strcmp(L->models[i].name, mname) == 0) md = &L->models[i];
    if (!md) {
        char list[400] = "";
        for (int i = 0; i < L->nmodels; i++) {
            size_t m = strlen(list);
            snprintf(list + m, sizeof list - m, "%s%s", i ? ", " : "", L->models[i].name);
        }
        return bl_berr(L, mv, w, "unknown model \"%s\" (models: %s)", mname, *list ? list : "none defined");
    }
    char mlabel[64];
    if (bl_parse_label(L, mv, w, mlabel, sizeof mlabel)) return -1;
    int ceiling = 1;
    yaml_node_t *ce = bl_get(L, item, "ceiling");
    if (ce) {
        bl_sub(w, sizeof w, where, "ceiling");
        if (bl_parse_bool(L, ce, w, &ceiling)) return -1;
    }
    yaml_node_t *vars = bl_get(L, item, "variants");
    int first = L->s->n;
    int nv = 0, ncov = 0;
    yaml_node_item_t *vi = NULL, *ve = NULL;
    BenchStepVariant cov[64];
    if (vars && vars->type == YAML_SCALAR_NODE) {
        bl_sub(w, sizeof w, where, "variants");
        if (strcmp(bl_scalar(vars), "covering") != 0)
            return bl_berr(L, vars, w, "expected a list of {label, set} or covering, got \"%s\"", bl_scalar(vars));
        ncov = bench_step_covering(cov, (int)(sizeof cov / sizeof cov[0]));
        if (ncov > (int)(sizeof cov / sizeof cov[0])) return bl_berr(L, vars, w, "more than 64 covering variants");
        vars = NULL;
    } else if (vars) {
        bl_sub(w, sizeof w, where, "variants");
        if (vars->type != YAML_SEQUENCE_NODE || vars->data.sequence.items.start == vars->data.sequence.items.top)
            return bl_berr(L, vars, w, "expected a non-empty list of {label, set} or covering");
        vi = vars->data.sequence.items.start;
        ve = vars->data.sequence.items.top;
    }
    for (int k = 0; vars ? vi + k < ve : k < (ncov ? ncov : 1); k++, nv++) {
        yaml_node_t *vn = vars ? bl_node(L, vi[k]) : NULL;
        char vw[340], label[64] = "baseline";
        if (ncov) snprintf(label, sizeof label, "%.47s", cov[k].label);
        snprintf(vw, sizeof vw, "%s.variants[%d]", where, k);
        const yaml_node_t *vset = NULL;
        char sw[360];
        bl_sub(sw, sizeof sw, vw, "set");
        if (vn) {
            if (vn->type != YAML_MAPPING_NODE)
                return bl_berr(L, vn, vw, "expected a mapping {label, set}, got %s", bl_kind_text(vn));
            if (bl_check_keys(L, vn, vw, (const char *const[]){"label", "set", NULL})) return -1;
            yaml_node_t *lab = bl_get(L, vn, "label");
            if (!lab) return bl_berr(L, vn, vw, "missing key label");
            bl_sub(w, sizeof w, vw, "label");
            if (bl_parse_label(L, lab, w, label, sizeof label)) return -1;
            vset = bl_get(L, vn, "set");
        }
        char ctx[300];
        snprintf(ctx, sizeof ctx, "model %s, variant %s", mname, label);
        Config cfg;
        if (bl_build_config(L, md->node, mname, vset, ncov ? cov[k].set : NULL, sw, vn ? vn : item, ctx, &cfg))
            return -1;
        if (nctx && add_decode_cases(L, item, idx, &cfg, mlabel, label, ctxs, nctx)) return -1;
        if (nctx) continue;
        BenchCase *c = bl_new_case(L, item, idx, BK_STEP);
        if (!c) return -1;
        c->cfg = cfg;
        c->B = cfg.batch;
        c->T = cfg.seq_len;
        snprintf(c->name, sizeof c->name, "step/%s/%s", mlabel, label);
        if (ceiling) {
            BenchCase *g = bl_new_case(L, item, idx, BK_SGEMM);
            if (!g) return -1;
            c = &L->s->c[L->s->n - 2]; /* new_case may have moved the array */
            g->cfg = cfg;
            g->B = cfg.batch;
            g->T = cfg.seq_len;
            snprintf(g->name, sizeof g->name, "sgemm/%s/%s", mlabel, label);
            c->ceiling = L->s->n - 1;
        }
    }
    return bl_finish_item(L, item, where, first);
}

static int parse_op_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "op", "tokens", "width", "heads", "T", "ceiling", TIMING_KEYS, NULL};
    if (bl_check_keys(L, item, where, keys)) return -1;
    char w[320];
    yaml_node_t *ops[BOP__COUNT * 2], *v;
    int nops = 0;
    v = bl_get(L, item, "op");
    bl_sub(w, sizeof w, where, "op");
    if (!v) return bl_berr(L, item, where, "missing key op (rmsnorm, rope, swiglu, crossentropy or a list)");
    if (bl_items(L, v, w, ops, BOP__COUNT * 2, &nops)) return -1;
    int opk[BOP__COUNT * 2];
    for (int i = 0; i < nops; i++) {
        opk[i] = name_index(bench_op_names, bl_scalar(ops[i]));
        if (opk[i] < 0)
            return bl_berr(L, ops[i], w, "expected rmsnorm, rope, swiglu or crossentropy, got \"%s\"", bl_scalar(ops[i]));
    }
    int t = 0, wd = 0, h = 1, T = 0;
    const char *need[] = {"tokens", "width"};
    int *dst[] = {&t, &wd};
    for (int q = 0; q < 2; q++) {
        v = bl_get(L, item, need[q]);
        if (!v) return bl_berr(L, item, where, "missing key %s", need[q]);
        bl_sub(w, sizeof w, where, need[q]);
        if (bl_parse_int(L, v, w, 1, 1 << 24, dst[q])) return -1;
    }
    if ((v = bl_get(L, item, "heads"))) {
        bl_sub(w, sizeof w, where, "heads");
        if (bl_parse_int(L, v, w, 1, 4096, &h)) return -1;
    }
    T = t;
    if ((v = bl_get(L, item, "T"))) {
        bl_sub(w, sizeof w, where, "T");
        if (bl_parse_int(L, v, w, 1, 1 << 24, &T)) return -1;
    }
    int first = L->s->n;
    for (int i = 0; i < nops; i++) {
        if (opk[i] == BOP_ROPE && wd % 2) {
            bl_sub(w, sizeof w, where, "width");
            return bl_berr(L, bl_get(L, item, "width"), w, "rope needs an even width (d_head), got %d", wd);
        }
        BenchCase *c = bl_new_case(L, item, idx, BK_OP);
        if (!c) return -1;
        c->op = opk[i];
        c->tokens = t;
        c->width = wd;
        c->heads = opk[i] == BOP_ROPE ? h : 1;
        c->T = T;
        snprintf(c->name, sizeof c->name, "op/%s/n%d_w%d", bench_op_names[opk[i]], t, wd);
    }
    return bl_finish_item(L, item, where, first);
}

/* The models mapping: each name (a label) and its mapping, for step cases. */
static int load_models(BL *L, const yaml_node_t *v) {
    if (v->type != YAML_MAPPING_NODE)
        return bl_berr(L, v, "models", "expected a mapping of model names, got %s", bl_kind_text(v));
    int n = (int)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
    L->models = calloc((size_t)(n ? n : 1), sizeof *L->models);
    if (!L->models) return bl_berr(L, NULL, NULL, "out of memory");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = bl_node(L, p->key), *m = bl_node(L, p->value);
        char lab[64];
        if (bl_parse_label(L, k, "models", lab, sizeof lab)) return -1;
        for (int i = 0; i < L->nmodels; i++)
            if (strcmp(L->models[i].name, bl_scalar(k)) == 0) return bl_berr(L, k, "models", "duplicate model %s", lab);
        char w[200];
        snprintf(w, sizeof w, "models.%s", lab);
        if (!m || m->type != YAML_MAPPING_NODE)
            return bl_berr(L, m, w, "expected a mapping (config and/or set), got %s", m ? bl_kind_text(m) : "nothing");
        L->models[L->nmodels].name = bl_scalar(k);
        L->models[L->nmodels].node = m;
        L->nmodels++;
    }
    return 0;
}

/* Case names unique, then each `ceiling: NAME` resolved to its case. */
static int check_names(BL *L) {
    BenchSuite *s = L->s;
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(s->c[i].name, s->c[j].name) == 0) {
                char where[64];
                snprintf(where, sizeof where, "cases[%d]", L->case_item[i]);
                snprintf(L->err, L->cap, "%s:%d:%d: error: %s: duplicate case name %s (also made by cases[%d], line %d)",
                         L->path, s->c[i].line, s->c[i].col, where, s->c[i].name, L->case_item[j], s->c[j].line);
                return -1;
            }
    for (int i = 0; i < s->n; i++) {
        if (!L->ceil_name[i]) continue;
        int j = bench_find(s, L->ceil_name[i]);
        char where[64];
        snprintf(where, sizeof where, "cases[%d].ceiling", L->case_item[i]);
        if (j < 0) return bl_berr(L, L->ceil_node[i], where, "no case named \"%s\" in this suite", L->ceil_name[i]);
        if (j == i) return bl_berr(L, L->ceil_node[i], where, "a case cannot be its own ceiling");
        s->c[i].ceiling = j;
    }
    return 0;
}

static int load_root(BL *L, yaml_node_t *root) {
    if (!root || root->type != YAML_MAPPING_NODE)
        return bl_berr(L, root, NULL, "expected a mapping with cases at the top level, got %s",
                    root ? bl_kind_text(root) : "an empty file");
    if (bl_check_keys(L, root, NULL, (const char *const[]){"name", "defaults", "models", "cases", NULL})) return -1;
    yaml_node_t *v;
    if ((v = bl_get(L, root, "name"))) {
        if (bl_parse_label(L, v, "name", L->s->name, sizeof L->s->name)) return -1;
    }
    if ((v = bl_get(L, root, "defaults"))) {
        if (v->type != YAML_MAPPING_NODE) return bl_berr(L, v, "defaults", "expected a mapping, got %s", bl_kind_text(v));
        if (bl_check_keys(L, v, "defaults", (const char *const[]){TIMING_KEYS, NULL})) return -1;
        if (bl_timing(L, v, "defaults", &L->repetitions, &L->warmup, &L->iterations, &L->min_time)) return -1;
    }
    if ((v = bl_get(L, root, "models")) && load_models(L, v)) return -1;
    yaml_node_t *cases = bl_get(L, root, "cases");
    if (!cases) return bl_berr(L, root, NULL, "missing key cases");
    if (cases->type != YAML_SEQUENCE_NODE || cases->data.sequence.items.start == cases->data.sequence.items.top)
        return bl_berr(L, cases, "cases", "expected a non-empty list of cases");
    int idx = 0;
    for (yaml_node_item_t *it = cases->data.sequence.items.start; it < cases->data.sequence.items.top; it++, idx++) {
        yaml_node_t *item = bl_node(L, *it);
        char where[64];
        snprintf(where, sizeof where, "cases[%d]", idx);
        if (!item || item->type != YAML_MAPPING_NODE)
            return bl_berr(L, item, where, "expected a mapping with a kind, got %s", item ? bl_kind_text(item) : "nothing");
        yaml_node_t *k = bl_get(L, item, "kind");
        char w[80];
        bl_sub(w, sizeof w, where, "kind");
        if (!k) return bl_berr(L, item, where, "missing key kind (gate, attention, step, decode or op)");
        if (bl_want_scalar(L, k, w)) return -1;
        const char *kt = bl_scalar(k);
        int rc;
        if (strcmp(kt, "gate") == 0)
            rc = parse_gate_case(L, item, idx, where);
        else if (strcmp(kt, "attention") == 0)
            rc = parse_attention_case(L, item, idx, where);
        else if (strcmp(kt, "step") == 0 || strcmp(kt, "decode") == 0)
            rc = parse_step_case(L, item, idx, where);
        else if (strcmp(kt, "op") == 0)
            rc = parse_op_case(L, item, idx, where);
        else
            return bl_berr(L, k, w, "expected gate, attention, step, decode or op, got \"%s\"", kt);
        if (rc) return -1;
    }
    return check_names(L);
}

int bench_load_file(BenchSuite *s, const char *path, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    if (err && cap) err[0] = '\0';
    char dummy[8];
    BL L;
    memset(&L, 0, sizeof L);
    L.path = path;
    L.err = err && cap ? err : dummy;
    L.cap = err && cap ? cap : sizeof dummy;
    L.s = s;
    L.repetitions = 5;
    L.warmup = 1;
    L.iterations = 0;
    L.min_time = 0.2;
    snprintf(s->path, sizeof s->path, "%s", path);
    /* the suite's directory: relative model configs resolve from there */
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(L.dir, sizeof L.dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(L.dir, sizeof L.dir, ".");
    if (slash && slash == path) snprintf(L.dir, sizeof L.dir, "/");
    /* default name: base name without .yaml / .yml */
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    if (bl > 5 && strcmp(base + bl - 5, ".yaml") == 0) bl -= 5;
    else if (bl > 4 && strcmp(base + bl - 4, ".yml") == 0) bl -= 4;
    snprintf(s->name, sizeof s->name, "%.*s", (int)(bl < 100 ? bl : 100), base);

    /* the shared reader: bounded size, depth and alias expansion, one document */
    yaml_document_t doc;
    ConfigError ce;
    int rc = -1;
    if (yaml_file_load(path, "a bench suite", &doc, &ce)) {
        snprintf(L.err, L.cap, "%s", ce.msg);
    } else {
        L.doc = &doc;
        rc = load_root(&L, yaml_document_get_root_node(&doc));
        yaml_document_delete(&doc);
    }
    free(L.models);
    free(L.ceil_name);
    free(L.ceil_node);
    free(L.case_item);
    if (rc) bench_suite_free(s);
    return rc;
}

void bench_suite_free(BenchSuite *s) {
    free(s->c);
    s->c = NULL;
    s->n = s->cap = 0;
}

int bench_find(const BenchSuite *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->c[i].name, name) == 0) return i;
    return -1;
}
