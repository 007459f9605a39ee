/*
 * bench_suite.c — loading a benchmark suite (see bench.h for the format):
 * the YAML document (read by run/yamlfile.h's bounded reader), checked key
 * by key with "FILE:LINE:COL: error: WHERE: reason" messages, each case
 * item expanded into its cases (gates x shapes, passes x T, variants plus
 * their sgemm ceilings, ops), step configs resolved through run/config,
 * then names checked unique and `ceiling: NAME` resolved.
 */
#include "lab/bench.h"

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

/* ==================================================================== */
/* loading                                                               */
/* ==================================================================== */

typedef struct {
    const char *name;
    const yaml_node_t *node; /* the model's mapping */
} ModelDef;

typedef struct {
    const char *path;
    char dir[1024];
    yaml_document_t *doc;
    char *err;
    size_t cap;
    BenchSuite *s;
    ModelDef *models;
    int nmodels;
    /* suite defaults */
    int repetitions, warmup;
    long iterations;
    double min_time;
    /* pending `ceiling: NAME` per case (NULL: none), with its node */
    const char **ceil_name;
    const yaml_node_t **ceil_node;
    int *case_item; /* which cases[] item made each case */
} BL;

__attribute__((format(printf, 4, 5))) static int berr(BL *L, const yaml_node_t *n, const char *where,
                                                      const char *fmt, ...) {
    char why[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (n)
        snprintf(L->err, L->cap, "%s:%zu:%zu: error: %s%s%s", L->path, n->start_mark.line + 1,
                 n->start_mark.column + 1, where ? where : "", where ? ": " : "", why);
    else
        snprintf(L->err, L->cap, "%s: error: %s%s%s", L->path, where ? where : "", where ? ": " : "", why);
    return -1;
}

static const char *kind_text(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return "a value";
    default: return "nothing";
    }
}

static yaml_node_t *node(BL *L, int id) { return yaml_document_get_node(L->doc, id); }

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Check a mapping's keys: scalars, no duplicates, each in allowed (NULL-
 * terminated). */
static int check_keys(BL *L, const yaml_node_t *map, const char *where, const char *const *allowed) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key);
        const char *name = scalar(k);
        if (!name) return berr(L, k, where, "expected a key name, got %s", k ? kind_text(k) : "nothing");
        for (yaml_node_pair_t *e = map->data.mapping.pairs.start; e < p; e++) {
            const char *en = scalar(node(L, e->key));
            if (en && strcmp(en, name) == 0)
                return berr(L, k, where, "duplicate key %s (first set at line %zu)", name,
                            node(L, e->key)->start_mark.line + 1);
        }
        int ok = 0;
        for (int i = 0; allowed[i]; i++) ok |= strcmp(allowed[i], name) == 0;
        if (!ok) {
            char list[600] = "";
            for (int i = 0; allowed[i]; i++) {
                size_t m = strlen(list);
                snprintf(list + m, sizeof list - m, "%s%s", i ? ", " : "", allowed[i]);
            }
            return berr(L, k, where, "unknown key %s (expected one of: %s)", name, list);
        }
    }
    return 0;
}

static yaml_node_t *get(BL *L, const yaml_node_t *map, const char *key) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(node(L, p->key));
        if (k && strcmp(k, key) == 0) return node(L, p->value);
    }
    return NULL;
}

/* buf = "WHERE.KEY" (or KEY), truncated to cap. */
static void sub(char *buf, size_t cap, const char *where, const char *key) {
    size_t n = 0;
    const char *parts[3] = {where ? where : "", where && *where ? "." : "", key};
    for (int i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++) buf[n++] = *p;
    buf[n] = '\0';
}

static int want_scalar(BL *L, const yaml_node_t *v, const char *where) {
    if (!v || v->type != YAML_SCALAR_NODE || v->data.scalar.length != strlen((const char *)v->data.scalar.value))
        return berr(L, v, where, "expected a value, got %s", v ? kind_text(v) : "nothing");
    return 0;
}

static int parse_long(BL *L, const yaml_node_t *v, const char *where, long lo, long hi, long *out) {
    if (want_scalar(L, v, where)) return -1;
    const char *t = scalar(v);
    char *end;
    errno = 0;
    long x = strtol(t, &end, 10);
    if (!*t || *end || errno || x < lo || x > hi)
        return berr(L, v, where, "expected an integer in [%ld, %ld], got \"%s\"", lo, hi, t);
    *out = x;
    return 0;
}

static int parse_int(BL *L, const yaml_node_t *v, const char *where, int lo, int hi, int *out) {
    long x;
    if (parse_long(L, v, where, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}

static int parse_num(BL *L, const yaml_node_t *v, const char *where, double lo, double hi, double *out) {
    if (want_scalar(L, v, where)) return -1;
    const char *t = scalar(v);
    char *end;
    double x = strtod(t, &end);
    if (!*t || *end || !(x >= lo && x <= hi))
        return berr(L, v, where, "expected a number in [%g, %g], got \"%s\"", lo, hi, t);
    *out = x;
    return 0;
}

static int parse_bool(BL *L, const yaml_node_t *v, const char *where, int *out) {
    if (want_scalar(L, v, where)) return -1;
    const char *t = scalar(v);
    if (strcmp(t, "true") == 0 || strcmp(t, "yes") == 0 || strcmp(t, "on") == 0) return *out = 1, 0;
    if (strcmp(t, "false") == 0 || strcmp(t, "no") == 0 || strcmp(t, "off") == 0) return *out = 0, 0;
    return berr(L, v, where, "expected true or false, got \"%s\"", t);
}

/* A label that can go into a case name: [A-Za-z0-9_.:+=-], 1..48 chars. */
static int parse_label(BL *L, const yaml_node_t *v, const char *where, char *out, size_t cap) {
    if (want_scalar(L, v, where)) return -1;
    const char *t = scalar(v);
    size_t n = strlen(t);
    int ok = n > 0 && n <= 48 && n < cap;
    for (size_t i = 0; ok && i < n; i++)
        ok = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9') ||
             strchr("_.:+=-", t[i]);
    if (!ok)
        return berr(L, v, where, "expected a label of 1-48 characters from A-Z a-z 0-9 _ . : + = -, got \"%s\"",
                    t);
    snprintf(out, cap, "%s", t);
    return 0;
}

/* Items of a value that may be one scalar or a list of scalars. */
static int items(BL *L, yaml_node_t *v, const char *where, yaml_node_t **out, int cap, int *n) {
    *n = 0;
    if (v && v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            if (*n >= cap) return berr(L, v, where, "more than %d values", cap);
            yaml_node_t *e = node(L, *it);
            if (want_scalar(L, e, where)) return -1; /* a list of lists or maps is not a list of values */
            out[(*n)++] = e;
        }
        if (*n == 0) return berr(L, v, where, "empty list");
        return 0;
    }
    if (want_scalar(L, v, where)) return -1;
    out[(*n)++] = v;
    return 0;
}

/* ------------------------------------------------------------ run configs */

/* One override "key=value" and where it is written. */
typedef struct {
    char text[600];
    const yaml_node_t *kn, *vn;
} Ov;

typedef struct {
    Ov *v;
    int n, cap;
} OvList;

static int ov_add(BL *L, OvList *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn) {
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 16;
        Ov *nv = realloc(l->v, sizeof *nv * (size_t)nc);
        if (!nv) return berr(L, NULL, NULL, "out of memory");
        l->v = nv;
        l->cap = nc;
    }
    Ov *o = &l->v[l->n++];
    snprintf(o->text, sizeof o->text, "%s=%s", key, scalar(vn));
    o->kn = kn;
    o->vn = vn;
    return 0;
}

/* Flatten a `set` mapping (dotted keys and/or nested sections). */
static int flatten(BL *L, const yaml_node_t *map, const char *prefix, const char *where, OvList *l) {
    if (!map || map->type != YAML_MAPPING_NODE)
        return berr(L, map, where, "expected a mapping of config keys, got %s", map ? kind_text(map) : "nothing");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
        const char *name = scalar(k);
        if (!name) return berr(L, k, where, "expected a key name, got %s", k ? kind_text(k) : "nothing");
        char full[300];
        snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "." : "", name);
        if (v && v->type == YAML_MAPPING_NODE) {
            if (flatten(L, v, full, where, l)) return -1;
        } else {
            if (!v || v->type != YAML_SCALAR_NODE)
                return berr(L, v, where, "%s: expected a value, got %s", full, v ? kind_text(v) : "nothing");
            if (ov_add(L, l, full, k, v)) return -1;
        }
    }
    return 0;
}

/* Point a config_set / config_resolve message at the suite file. */
static int cfg_error(BL *L, const char *msg, const OvList *ovs, const yaml_node_t *at, const char *ctx) {
    if (strncmp(msg, "--set ", 6) == 0)
        for (int i = ovs->n - 1; i >= 0; i--) {
            const Ov *o = &ovs->v[i];
            size_t al = strlen(o->text);
            if (strncmp(msg + 6, o->text, al) == 0 && strncmp(msg + 6 + al, ": error: ", 9) == 0) {
                const char *key_end = strchr(o->text, '=');
                char key[300];
                snprintf(key, sizeof key, "%.*s", (int)(key_end - o->text), o->text);
                const yaml_node_t *n = config_find(key) ? o->vn : o->kn;
                return berr(L, n, NULL, "%s (%s)", msg + 6 + al + 9, ctx);
            }
        }
    if (strncmp(msg, "config: error: ", 15) == 0) return berr(L, at, NULL, "%s (%s)", msg + 15, ctx);
    snprintf(L->err, L->cap, "%s (%s)", msg, ctx);
    return -1;
}

/* The run config of model `mname` plus a variant's overrides. */
static int build_config(BL *L, const yaml_node_t *model_node, const char *mname, const yaml_node_t *vset,
                        const char *vwhere, const yaml_node_t *at, const char *ctx, Config *c) {
    OvList ovs = {0};
    int rc = -1;
    ConfigError e;
    config_defaults(c);
    char where[300];
    snprintf(where, sizeof where, "models.%s", mname);
    if (check_keys(L, model_node, where, (const char *const[]){"config", "set", NULL})) goto out;
    yaml_node_t *cf = get(L, model_node, "config"), *set = get(L, model_node, "set");
    if (cf) {
        char w2[320];
        sub(w2, sizeof w2, where, "config");
        if (want_scalar(L, cf, w2)) goto out;
        char p[2200];
        const char *f = scalar(cf);
        if (f[0] == '/')
            snprintf(p, sizeof p, "%s", f);
        else
            snprintf(p, sizeof p, "%s/%s", L->dir, f);
        if (access(p, R_OK) != 0) {
            char w3[320];
            sub(w3, sizeof w3, where, "config");
            berr(L, cf, w3, "cannot open %s: %s", p, strerror(errno));
            goto out;
        }
        if (config_load_file(c, p, &e)) {
            snprintf(L->err, L->cap, "%s (%s:%zu:%zu: models.%s.config)", e.msg, L->path, cf->start_mark.line + 1,
                     cf->start_mark.column + 1, mname);
            goto out;
        }
    }
    if (set) {
        char w2[320];
        sub(w2, sizeof w2, where, "set");
        if (flatten(L, set, "", w2, &ovs)) goto out;
    }
    if (vset && flatten(L, vset, "", vwhere, &ovs)) goto out;
    for (int i = 0; i < ovs.n; i++)
        if (config_set(c, ovs.v[i].text, &e)) {
            cfg_error(L, e.msg, &ovs, at, ctx);
            goto out;
        }
    if (config_resolve(c, &e)) {
        cfg_error(L, e.msg, &ovs, at, ctx);
        goto out;
    }
    rc = 0;
out:
    free(ovs.v);
    return rc;
}

/* ------------------------------------------------------------------ cases */

static BenchCase *new_case(BL *L, const yaml_node_t *item, int item_index, int kind) {
    BenchSuite *s = L->s;
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 32;
        BenchCase *nv = realloc(s->c, sizeof *nv * (size_t)nc);
        const char **cn = realloc(L->ceil_name, sizeof *cn * (size_t)nc);
        if (cn) L->ceil_name = cn;
        const yaml_node_t **cnode = realloc(L->ceil_node, sizeof *cnode * (size_t)nc);
        if (cnode) L->ceil_node = cnode;
        int *ci = realloc(L->case_item, sizeof *ci * (size_t)nc);
        if (ci) L->case_item = ci;
        if (nv) s->c = nv;
        if (!nv || !cn || !cnode || !ci) {
            berr(L, NULL, NULL, "out of memory");
            return NULL;
        }
        s->cap = nc;
    }
    BenchCase *c = &s->c[s->n];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->line = (int)item->start_mark.line + 1;
    c->col = (int)item->start_mark.column + 1;
    c->ceiling = -1;
    c->repetitions = L->repetitions;
    c->warmup = L->warmup;
    c->iterations = L->iterations;
    c->min_time = L->min_time;
    L->ceil_name[s->n] = NULL;
    L->ceil_node[s->n] = NULL;
    L->case_item[s->n] = item_index;
    s->n++;
    return c;
}

/* Timing keys, in `defaults` or in a case item. */
static int timing(BL *L, const yaml_node_t *map, const char *where, int *reps, int *warm, long *iters,
                  double *mt) {
    char w[320];
    yaml_node_t *v;
    if ((v = get(L, map, "repetitions"))) {
        sub(w, sizeof w, where, "repetitions");
        if (parse_int(L, v, w, 1, 100000, reps)) return -1;
    }
    if ((v = get(L, map, "warmup"))) {
        sub(w, sizeof w, where, "warmup");
        if (parse_int(L, v, w, 0, 1000000, warm)) return -1;
    }
    if ((v = get(L, map, "iterations"))) {
        sub(w, sizeof w, where, "iterations");
        if (parse_long(L, v, w, 0, 1000000000L, iters)) return -1;
    }
    if ((v = get(L, map, "min_time"))) {
        sub(w, sizeof w, where, "min_time");
        if (parse_num(L, v, w, 0, 3600, mt)) return -1;
    }
    return 0;
}

/* Apply the item's own timing keys and ceiling to the cases [first, n). */
static int finish_item(BL *L, const yaml_node_t *item, const char *where, int first) {
    int reps = L->repetitions, warm = L->warmup;
    long iters = L->iterations;
    double mt = L->min_time;
    if (timing(L, item, where, &reps, &warm, &iters, &mt)) return -1;
    yaml_node_t *ce = get(L, item, "ceiling");
    char w[320];
    sub(w, sizeof w, where, "ceiling");
    for (int i = first; i < L->s->n; i++) {
        BenchCase *c = &L->s->c[i];
        c->repetitions = reps;
        c->warmup = warm;
        c->iterations = iters;
        c->min_time = mt;
        if (ce && c->kind != BK_STEP && c->kind != BK_SGEMM) {
            if (want_scalar(L, ce, w)) return -1;
            L->ceil_name[i] = scalar(ce);
            L->ceil_node[i] = ce;
        }
    }
    return 0;
}

#define TIMING_KEYS "repetitions", "warmup", "iterations", "min_time"

/* One item of a gate case's gates: its label and a config whose gate is
 * the item's model.gate keys over the defaults (position sdpa). */
static int parse_gate(BL *L, const yaml_node_t *gn, const char *gw, char *label, size_t lcap, Config *cfg) {
    static const char *const gkeys[] = {"label",      "position", "granularity", "sharing", "form",
                                        "activation", "input",    "control",     NULL};
    char w[320];
    if (!gn || gn->type != YAML_MAPPING_NODE)
        return berr(L, gn, gw, "expected a mapping (label and model.gate keys), got %s",
                    gn ? kind_text(gn) : "nothing");
    if (check_keys(L, gn, gw, gkeys)) return -1;
    yaml_node_t *lab = get(L, gn, "label");
    sub(w, sizeof w, gw, "label");
    if (!lab) return berr(L, gn, gw, "missing key label");
    if (parse_label(L, lab, w, label, lcap)) return -1;
    config_defaults(cfg);
    cfg->gate.position = GP_SDPA;
    for (yaml_node_pair_t *p = gn->data.mapping.pairs.start; p < gn->data.mapping.pairs.top; p++) {
        const char *k = scalar(node(L, p->key));
        yaml_node_t *v = node(L, p->value);
        if (strcmp(k, "label") == 0) continue;
        sub(w, sizeof w, gw, k);
        if (want_scalar(L, v, w)) return -1;
        char a[400];
        snprintf(a, sizeof a, "model.gate.%s=%s", k, scalar(v));
        ConfigError e;
        if (config_set(cfg, a, &e)) {
            const char *why = strstr(e.msg, ": error: ");
            return berr(L, v, NULL, "%s", why ? why + 9 : e.msg);
        }
    }
    const char *bad_key = NULL;
    const char *why = gate_validate(&cfg->gate, &bad_key);
    if (why) return berr(L, gn, gw, "%s", why);
    if (cfg->gate.position == GP_NONE) return berr(L, gn, gw, "position none has no gate to time");
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
    sub(w, sizeof w, where, "gates");
    *out = NULL;
    *n = 0;
    if (gates && gates->type == YAML_SCALAR_NODE) {
        const char *t = scalar(gates);
        int all = strcmp(t, "all") == 0;
        if (!all && strcmp(t, "covering") != 0)
            return berr(L, gates, w, "expected a list of gates, covering or all, got \"%s\"", t);
        int total = all ? gate_enumerate(NULL, 0) : gate_covering(NULL, 0);
        GateCfg *g = malloc(sizeof *g * (size_t)(total > 0 ? total : 1));
        GateItem *it = malloc(sizeof *it * (size_t)(total > 0 ? total : 1));
        if (!g || !it) {
            free(g), free(it);
            return berr(L, gates, w, "out of memory");
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
        return berr(L, gates ? gates : item, w, "expected a non-empty list of gates, covering or all");
    int cap = (int)(gates->data.sequence.items.top - gates->data.sequence.items.start);
    GateItem *it = malloc(sizeof *it * (size_t)cap);
    if (!it) return berr(L, gates, w, "out of memory");
    for (yaml_node_item_t *g = gates->data.sequence.items.start; g < gates->data.sequence.items.top; g++) {
        char gw[340];
        snprintf(gw, sizeof gw, "%s.gates[%d]", where, *n);
        Config cfg;
        if (parse_gate(L, node(L, *g), gw, it[*n].label, sizeof it[*n].label, &cfg)) {
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
        return berr(L, sn, sw, "expected a mapping (tokens, heads, width), got %s", sn ? kind_text(sn) : "nothing");
    if (check_keys(L, sn, sw, (const char *const[]){"label", "tokens", "heads", "width", NULL})) return -1;
    const char *need[] = {"tokens", "heads", "width"};
    int *dst[] = {t, h, d};
    int hi[] = {1 << 24, 4096, 65536};
    for (int q = 0; q < 3; q++) {
        yaml_node_t *v = get(L, sn, need[q]);
        if (!v) return berr(L, sn, sw, "missing key %s", need[q]);
        sub(w, sizeof w, sw, need[q]);
        if (parse_int(L, v, w, 1, hi[q], dst[q])) return -1;
    }
    yaml_node_t *sl = get(L, sn, "label");
    if (!sl) {
        snprintf(slabel, cap, "n%d_h%d_d%d", *t, *h, *d);
        return 0;
    }
    sub(w, sizeof w, sw, "label");
    return parse_label(L, sl, w, slabel, cap);
}

static int parse_gate_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "gates", "shapes", "ceiling", TIMING_KEYS, NULL};
    if (check_keys(L, item, where, keys)) return -1;
    yaml_node_t *shapes = get(L, item, "shapes");
    char w[320];
    if (!shapes || shapes->type != YAML_SEQUENCE_NODE || shapes->data.sequence.items.start == shapes->data.sequence.items.top) {
        sub(w, sizeof w, where, "shapes");
        return berr(L, shapes ? shapes : item, w, "expected a non-empty list of shapes");
    }
    GateItem *gi;
    int ng, first = L->s->n, rc = 0;
    if (gate_items(L, item, get(L, item, "gates"), where, &gi, &ng)) return -1;
    for (int g = 0; rc == 0 && g < ng; g++) {
        int si = 0;
        for (yaml_node_item_t *sh = shapes->data.sequence.items.start; rc == 0 && sh < shapes->data.sequence.items.top;
             sh++, si++) {
            char sw[340], slabel[64];
            int t = 0, h = 0, d = 0;
            snprintf(sw, sizeof sw, "%s.shapes[%d]", where, si);
            BenchCase *c = NULL;
            if (parse_gate_shape(L, node(L, *sh), sw, &t, &h, &d, slabel, sizeof slabel) ||
                !(c = new_case(L, item, idx, BK_GATE))) {
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
    return rc ? -1 : finish_item(L, item, where, first);
}

/* An attention case's normalizers: absent (softmax, not named in the case
 * name), a name or a list of names from attn_norm_names[], or `all` (every
 * row of the table, in its order). */
static int parse_normalizers(BL *L, yaml_node_t *v, const char *where, int *out, int *n, int *named) {
    char w[320];
    *n = 0, *named = v != NULL;
    if (!v) return out[(*n)++] = AN_SOFTMAX, 0;
    sub(w, sizeof w, where, "normalizer");
    if (v->type == YAML_SCALAR_NODE && strcmp(scalar(v), "all") == 0) {
        for (int a = 0; a < AN__COUNT; a++) out[(*n)++] = a;
        return 0;
    }
    yaml_node_t *its[AN__COUNT];
    int ni = 0;
    if (items(L, v, w, its, AN__COUNT, &ni)) return -1;
    for (int i = 0; i < ni; i++) {
        if (want_scalar(L, its[i], w)) return -1;
        int a = name_index(attn_norm_names, scalar(its[i]));
        if (a < 0) {
            char list[256] = "";
            for (int k = 0; attn_norm_names[k]; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), ", %s", attn_norm_names[k]);
            return berr(L, its[i], w, "expected all or one of %s, got \"%s\"", list + 2, scalar(its[i]));
        }
        for (int j = 0; j < *n; j++)
            if (out[j] == a) return berr(L, its[i], w, "\"%s\" is listed twice", scalar(its[i]));
        out[(*n)++] = a;
    }
    return 0;
}

static int parse_attention_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind",    "label",   "pass",       "T",         "n_head", "n_kv_head",
                                       "d_head",  "batch",   "batch_T",    "normalizer", "ceiling", TIMING_KEYS,
                                       NULL};
    if (check_keys(L, item, where, keys)) return -1;
    char w[320], label[64] = "";
    yaml_node_t *v;
    if ((v = get(L, item, "label"))) {
        sub(w, sizeof w, where, "label");
        if (parse_label(L, v, w, label, sizeof label)) return -1;
    }
    yaml_node_t *passes[2], *Ts[64];
    int np = 0, nT = 0;
    v = get(L, item, "pass");
    sub(w, sizeof w, where, "pass");
    if (!v) return berr(L, item, where, "missing key pass (forward, backward or a list of them)");
    if (items(L, v, w, passes, 2, &np)) return -1;
    int pk[2];
    for (int i = 0; i < np; i++) {
        const char *t = scalar(passes[i]);
        if (strcmp(t, "forward") == 0)
            pk[i] = BK_ATTN_FWD;
        else if (strcmp(t, "backward") == 0)
            pk[i] = BK_ATTN_BWD;
        else
            return berr(L, passes[i], w, "expected forward or backward, got \"%s\"", t);
    }
    v = get(L, item, "T");
    sub(w, sizeof w, where, "T");
    if (!v) return berr(L, item, where, "missing key T (an integer or a list)");
    if (items(L, v, w, Ts, 64, &nT)) return -1;
    int T[64], Tmax = 0;
    for (int i = 0; i < nT; i++) {
        if (parse_int(L, Ts[i], w, 1, 1 << 20, &T[i])) return -1;
        if (T[i] > Tmax) Tmax = T[i];
    }
    int H = 0, Hk = 0, d = 0, batch = 1, bT = Tmax;
    const char *need[] = {"n_head", "d_head"};
    int *dst[] = {&H, &d};
    for (int q = 0; q < 2; q++) {
        v = get(L, item, need[q]);
        if (!v) return berr(L, item, where, "missing key %s", need[q]);
        sub(w, sizeof w, where, need[q]);
        if (parse_int(L, v, w, 1, 4096, dst[q])) return -1;
    }
    Hk = H;
    if ((v = get(L, item, "n_kv_head"))) {
        sub(w, sizeof w, where, "n_kv_head");
        if (parse_int(L, v, w, 1, 4096, &Hk)) return -1;
        if (H % Hk) return berr(L, v, w, "must divide n_head (%d), got %d", H, Hk);
    }
    if ((v = get(L, item, "batch"))) {
        sub(w, sizeof w, where, "batch");
        if (parse_int(L, v, w, 1, 1 << 20, &batch)) return -1;
    }
    if ((v = get(L, item, "batch_T"))) {
        sub(w, sizeof w, where, "batch_T");
        if (parse_int(L, v, w, 1, 1 << 20, &bT)) return -1;
    }
    int norms[AN__COUNT], nn = 0, named = 0;
    if (parse_normalizers(L, get(L, item, "normalizer"), where, norms, &nn, &named)) return -1;
    int first = L->s->n;
    for (int u = 0; u < nn * np * nT; u++) {
        int a = u / (np * nT), p = u / nT % np, i = u % nT;
        BenchCase *c = new_case(L, item, idx, pk[p]);
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
    return finish_item(L, item, where, first);
}

/* A decode case's contexts (`context`, required there; refused on a step). */
static int decode_contexts(BL *L, const yaml_node_t *item, const char *where, int *ctx, int *n) {
    char w[320];
    int decode = strcmp(scalar(get(L, item, "kind")), "decode") == 0;
    yaml_node_t *v = get(L, item, "context"), *cs[16];
    sub(w, sizeof w, where, "context");
    if (!decode) return v ? berr(L, v, w, "only for kind decode") : 0;
    if (!v) return berr(L, item, where, "missing key context (an integer or a list)");
    if (items(L, v, w, cs, 16, n)) return -1;
    for (int i = 0; i < *n; i++)
        if (parse_int(L, cs[i], w, 1, 1 << 20, &ctx[i])) return -1;
    return 0;
}

/* One decode case per context of a model variant. */
static int add_decode_cases(BL *L, const yaml_node_t *item, int idx, const Config *cfg, const char *mlabel,
                            const char *label, const int *ctx, int nctx) {
    for (int i = 0; i < nctx; i++) {
        BenchCase *c = new_case(L, item, idx, BK_DECODE);
        if (!c) return -1;
        c->cfg = *cfg, c->B = 1, c->T = ctx[i];
        snprintf(c->name, sizeof c->name, "decode/%s/%s/ctx%d", mlabel, label, ctx[i]);
    }
    return 0;
}

static int parse_step_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "model", "variants", "ceiling", "context", TIMING_KEYS, NULL};
    if (check_keys(L, item, where, keys)) return -1;
    char w[320];
    int ctxs[16], nctx = 0; /* decode cases: their contexts */
    if (decode_contexts(L, item, where, ctxs, &nctx)) return -1;
    yaml_node_t *mv = get(L, item, "model");
    sub(w, sizeof w, where, "model");
    if (!mv) return berr(L, item, where, "missing key model (a name under models)");
    if (want_scalar(L, mv, w)) return -1;
    const char *mname = scalar(mv);
    const ModelDef *md = NULL;
    for (int i = 0; i < L->nmodels; i++)
        if (strcmp(L->models[i].name, mname) == 0) md = &L->models[i];
    if (!md) {
        char list[400] = "";
        for (int i = 0; i < L->nmodels; i++) {
            size_t m = strlen(list);
            snprintf(list + m, sizeof list - m, "%s%s", i ? ", " : "", L->models[i].name);
        }
        return berr(L, mv, w, "unknown model \"%s\" (models: %s)", mname, *list ? list : "none defined");
    }
    char mlabel[64];
    if (parse_label(L, mv, w, mlabel, sizeof mlabel)) return -1;
    int ceiling = 1;
    yaml_node_t *ce = get(L, item, "ceiling");
    if (ce) {
        sub(w, sizeof w, where, "ceiling");
        if (parse_bool(L, ce, w, &ceiling)) return -1;
    }
    yaml_node_t *vars = get(L, item, "variants");
    int first = L->s->n;
    int nv = 0;
    yaml_node_item_t *vi = NULL, *ve = NULL;
    if (vars) {
        sub(w, sizeof w, where, "variants");
        if (vars->type != YAML_SEQUENCE_NODE || vars->data.sequence.items.start == vars->data.sequence.items.top)
            return berr(L, vars, w, "expected a non-empty list of {label, set}");
        vi = vars->data.sequence.items.start;
        ve = vars->data.sequence.items.top;
    }
    for (int k = 0; vars ? vi + k < ve : k < 1; k++, nv++) {
        yaml_node_t *vn = vars ? node(L, vi[k]) : NULL;
        char vw[340], label[64] = "baseline";
        snprintf(vw, sizeof vw, "%s.variants[%d]", where, k);
        const yaml_node_t *vset = NULL;
        char sw[360];
        sub(sw, sizeof sw, vw, "set");
        if (vn) {
            if (vn->type != YAML_MAPPING_NODE)
                return berr(L, vn, vw, "expected a mapping {label, set}, got %s", kind_text(vn));
            if (check_keys(L, vn, vw, (const char *const[]){"label", "set", NULL})) return -1;
            yaml_node_t *lab = get(L, vn, "label");
            if (!lab) return berr(L, vn, vw, "missing key label");
            sub(w, sizeof w, vw, "label");
            if (parse_label(L, lab, w, label, sizeof label)) return -1;
            vset = get(L, vn, "set");
        }
        char ctx[300];
        snprintf(ctx, sizeof ctx, "model %s, variant %s", mname, label);
        Config cfg;
        if (build_config(L, md->node, mname, vset, sw, vn ? vn : item, ctx, &cfg)) return -1;
        if (nctx && add_decode_cases(L, item, idx, &cfg, mlabel, label, ctxs, nctx)) return -1;
        if (nctx) continue;
        BenchCase *c = new_case(L, item, idx, BK_STEP);
        if (!c) return -1;
        c->cfg = cfg;
        c->B = cfg.batch;
        c->T = cfg.seq_len;
        snprintf(c->name, sizeof c->name, "step/%s/%s", mlabel, label);
        if (ceiling) {
            BenchCase *g = new_case(L, item, idx, BK_SGEMM);
            if (!g) return -1;
            c = &L->s->c[L->s->n - 2]; /* new_case may have moved the array */
            g->cfg = cfg;
            g->B = cfg.batch;
            g->T = cfg.seq_len;
            snprintf(g->name, sizeof g->name, "sgemm/%s/%s", mlabel, label);
            c->ceiling = L->s->n - 1;
        }
    }
    return finish_item(L, item, where, first);
}

static int parse_op_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "op", "tokens", "width", "heads", "T", "ceiling", TIMING_KEYS, NULL};
    if (check_keys(L, item, where, keys)) return -1;
    char w[320];
    yaml_node_t *ops[BOP__COUNT * 2], *v;
    int nops = 0;
    v = get(L, item, "op");
    sub(w, sizeof w, where, "op");
    if (!v) return berr(L, item, where, "missing key op (rmsnorm, rope, swiglu, crossentropy or a list)");
    if (items(L, v, w, ops, BOP__COUNT * 2, &nops)) return -1;
    int opk[BOP__COUNT * 2];
    for (int i = 0; i < nops; i++) {
        opk[i] = name_index(bench_op_names, scalar(ops[i]));
        if (opk[i] < 0)
            return berr(L, ops[i], w, "expected rmsnorm, rope, swiglu or crossentropy, got \"%s\"", scalar(ops[i]));
    }
    int t = 0, wd = 0, h = 1, T = 0;
    const char *need[] = {"tokens", "width"};
    int *dst[] = {&t, &wd};
    for (int q = 0; q < 2; q++) {
        v = get(L, item, need[q]);
        if (!v) return berr(L, item, where, "missing key %s", need[q]);
        sub(w, sizeof w, where, need[q]);
        if (parse_int(L, v, w, 1, 1 << 24, dst[q])) return -1;
    }
    if ((v = get(L, item, "heads"))) {
        sub(w, sizeof w, where, "heads");
        if (parse_int(L, v, w, 1, 4096, &h)) return -1;
    }
    T = t;
    if ((v = get(L, item, "T"))) {
        sub(w, sizeof w, where, "T");
        if (parse_int(L, v, w, 1, 1 << 24, &T)) return -1;
    }
    int first = L->s->n;
    for (int i = 0; i < nops; i++) {
        if (opk[i] == BOP_ROPE && wd % 2) {
            sub(w, sizeof w, where, "width");
            return berr(L, get(L, item, "width"), w, "rope needs an even width (d_head), got %d", wd);
        }
        BenchCase *c = new_case(L, item, idx, BK_OP);
        if (!c) return -1;
        c->op = opk[i];
        c->tokens = t;
        c->width = wd;
        c->heads = opk[i] == BOP_ROPE ? h : 1;
        c->T = T;
        snprintf(c->name, sizeof c->name, "op/%s/n%d_w%d", bench_op_names[opk[i]], t, wd);
    }
    return finish_item(L, item, where, first);
}

/* The models mapping: each name (a label) and its mapping, for step cases. */
static int load_models(BL *L, const yaml_node_t *v) {
    if (v->type != YAML_MAPPING_NODE)
        return berr(L, v, "models", "expected a mapping of model names, got %s", kind_text(v));
    int n = (int)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
    L->models = calloc((size_t)(n ? n : 1), sizeof *L->models);
    if (!L->models) return berr(L, NULL, NULL, "out of memory");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key), *m = node(L, p->value);
        char lab[64];
        if (parse_label(L, k, "models", lab, sizeof lab)) return -1;
        for (int i = 0; i < L->nmodels; i++)
            if (strcmp(L->models[i].name, scalar(k)) == 0) return berr(L, k, "models", "duplicate model %s", lab);
        char w[200];
        snprintf(w, sizeof w, "models.%s", lab);
        if (!m || m->type != YAML_MAPPING_NODE)
            return berr(L, m, w, "expected a mapping (config and/or set), got %s", m ? kind_text(m) : "nothing");
        L->models[L->nmodels].name = scalar(k);
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
        if (j < 0) return berr(L, L->ceil_node[i], where, "no case named \"%s\" in this suite", L->ceil_name[i]);
        if (j == i) return berr(L, L->ceil_node[i], where, "a case cannot be its own ceiling");
        s->c[i].ceiling = j;
    }
    return 0;
}

static int load_root(BL *L, yaml_node_t *root) {
    if (!root || root->type != YAML_MAPPING_NODE)
        return berr(L, root, NULL, "expected a mapping with cases at the top level, got %s",
                    root ? kind_text(root) : "an empty file");
    if (check_keys(L, root, NULL, (const char *const[]){"name", "defaults", "models", "cases", NULL})) return -1;
    yaml_node_t *v;
    if ((v = get(L, root, "name"))) {
        if (parse_label(L, v, "name", L->s->name, sizeof L->s->name)) return -1;
    }
    if ((v = get(L, root, "defaults"))) {
        if (v->type != YAML_MAPPING_NODE) return berr(L, v, "defaults", "expected a mapping, got %s", kind_text(v));
        if (check_keys(L, v, "defaults", (const char *const[]){TIMING_KEYS, NULL})) return -1;
        if (timing(L, v, "defaults", &L->repetitions, &L->warmup, &L->iterations, &L->min_time)) return -1;
    }
    if ((v = get(L, root, "models")) && load_models(L, v)) return -1;
    yaml_node_t *cases = get(L, root, "cases");
    if (!cases) return berr(L, root, NULL, "missing key cases");
    if (cases->type != YAML_SEQUENCE_NODE || cases->data.sequence.items.start == cases->data.sequence.items.top)
        return berr(L, cases, "cases", "expected a non-empty list of cases");
    int idx = 0;
    for (yaml_node_item_t *it = cases->data.sequence.items.start; it < cases->data.sequence.items.top; it++, idx++) {
        yaml_node_t *item = node(L, *it);
        char where[64];
        snprintf(where, sizeof where, "cases[%d]", idx);
        if (!item || item->type != YAML_MAPPING_NODE)
            return berr(L, item, where, "expected a mapping with a kind, got %s", item ? kind_text(item) : "nothing");
        yaml_node_t *k = get(L, item, "kind");
        char w[80];
        sub(w, sizeof w, where, "kind");
        if (!k) return berr(L, item, where, "missing key kind (gate, attention, step, decode or op)");
        if (want_scalar(L, k, w)) return -1;
        const char *kt = scalar(k);
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
            return berr(L, k, w, "expected gate, attention, step, decode or op, got \"%s\"", kt);
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
