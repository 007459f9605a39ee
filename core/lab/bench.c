/*
 * bench.c — benchmark suites (see bench.h): loading and validating suite
 * files, FLOP counting, the gemm list of a training step, running cases,
 * statistics, Google-Benchmark JSON out and in, and comparing two runs.
 */
#include "lab/bench.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "nn/dp.h"
#include "nn/gate.h"
#include "nn/model.h"
#include "nn/ops.h"
#include "nn/rope.h"
#include "nn/optim.h"
#include "nn/rng.h"
#include "run/store.h"
#include "nn/variant.h"
#include "run/yamlfile.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

const char *const bench_kind_names[] = {"gate", "attention_forward", "attention_backward", "step", "sgemm", "op", NULL};
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

static int parse_gate_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "gates", "shapes", "ceiling", TIMING_KEYS, NULL};
    if (check_keys(L, item, where, keys)) return -1;
    yaml_node_t *gates = get(L, item, "gates"), *shapes = get(L, item, "shapes");
    char w[320];
    if (!gates || gates->type != YAML_SEQUENCE_NODE || gates->data.sequence.items.start == gates->data.sequence.items.top) {
        sub(w, sizeof w, where, "gates");
        return berr(L, gates ? gates : item, w, "expected a non-empty list of gates");
    }
    if (!shapes || shapes->type != YAML_SEQUENCE_NODE || shapes->data.sequence.items.start == shapes->data.sequence.items.top) {
        sub(w, sizeof w, where, "shapes");
        return berr(L, shapes ? shapes : item, w, "expected a non-empty list of shapes");
    }
    int first = L->s->n;
    int gi = 0;
    for (yaml_node_item_t *g = gates->data.sequence.items.start; g < gates->data.sequence.items.top; g++, gi++) {
        yaml_node_t *gn = node(L, *g);
        char gw[340];
        snprintf(gw, sizeof gw, "%s.gates[%d]", where, gi);
        if (!gn || gn->type != YAML_MAPPING_NODE)
            return berr(L, gn, gw, "expected a mapping (label and model.gate keys), got %s",
                        gn ? kind_text(gn) : "nothing");
        static const char *const gkeys[] = {"label",       "position", "granularity", "sharing", "form",
                                            "activation", "input",    "control",     NULL};
        if (check_keys(L, gn, gw, gkeys)) return -1;
        yaml_node_t *lab = get(L, gn, "label");
        char label[64];
        sub(w, sizeof w, gw, "label");
        if (!lab) return berr(L, gn, gw, "missing key label");
        if (parse_label(L, lab, w, label, sizeof label)) return -1;
        Config cfg;
        config_defaults(&cfg);
        cfg.gate.position = GP_SDPA;
        for (yaml_node_pair_t *p = gn->data.mapping.pairs.start; p < gn->data.mapping.pairs.top; p++) {
            const char *k = scalar(node(L, p->key));
            yaml_node_t *v = node(L, p->value);
            if (strcmp(k, "label") == 0) continue;
            sub(w, sizeof w, gw, k);
            if (want_scalar(L, v, w)) return -1;
            char a[400];
            snprintf(a, sizeof a, "model.gate.%s=%s", k, scalar(v));
            ConfigError e;
            if (config_set(&cfg, a, &e)) {
                const char *why = strstr(e.msg, ": error: ");
                return berr(L, v, NULL, "%s", why ? why + 9 : e.msg);
            }
        }
        const char *bad_key = NULL;
        const char *why = gate_validate(&cfg.gate, &bad_key);
        if (why) return berr(L, gn, gw, "%s", why);
        if (cfg.gate.position == GP_NONE) return berr(L, gn, gw, "position none has no gate to time");
        int si = 0;
        for (yaml_node_item_t *sh = shapes->data.sequence.items.start; sh < shapes->data.sequence.items.top;
             sh++, si++) {
            yaml_node_t *sn = node(L, *sh);
            char sw[340];
            snprintf(sw, sizeof sw, "%s.shapes[%d]", where, si);
            if (!sn || sn->type != YAML_MAPPING_NODE)
                return berr(L, sn, sw, "expected a mapping (tokens, heads, width), got %s",
                            sn ? kind_text(sn) : "nothing");
            if (check_keys(L, sn, sw, (const char *const[]){"label", "tokens", "heads", "width", NULL})) return -1;
            int t = 0, h = 0, d = 0;
            const char *need[] = {"tokens", "heads", "width"};
            int *dst[] = {&t, &h, &d};
            int hi[] = {1 << 24, 4096, 65536};
            for (int q = 0; q < 3; q++) {
                yaml_node_t *v = get(L, sn, need[q]);
                if (!v) return berr(L, sn, sw, "missing key %s", need[q]);
                sub(w, sizeof w, sw, need[q]);
                if (parse_int(L, v, w, 1, hi[q], dst[q])) return -1;
            }
            char slabel[64];
            yaml_node_t *sl = get(L, sn, "label");
            if (sl) {
                sub(w, sizeof w, sw, "label");
                if (parse_label(L, sl, w, slabel, sizeof slabel)) return -1;
            } else {
                snprintf(slabel, sizeof slabel, "n%d_h%d_d%d", t, h, d);
            }
            BenchCase *c = new_case(L, item, idx, BK_GATE);
            if (!c) return -1;
            c->gate = cfg.gate;
            c->tokens = t;
            c->heads = h;
            c->width = d;
            snprintf(c->name, sizeof c->name, "gate/%s/%s", label, slabel);
        }
    }
    return finish_item(L, item, where, first);
}

static int parse_attention_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind",  "label", "pass",    "T",       "n_head", "n_kv_head", "d_head",
                                       "batch", "batch_T", "ceiling", TIMING_KEYS, NULL};
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
    int first = L->s->n;
    for (int p = 0; p < np; p++)
        for (int i = 0; i < nT; i++) {
            BenchCase *c = new_case(L, item, idx, pk[p]);
            if (!c) return -1;
            double r = (double)bT / T[i];
            double B = floor(batch * r * r + 0.5);
            c->B = B < 1 ? 1 : B > (1 << 24) ? (1 << 24) : (int)B;
            c->T = T[i];
            c->H = H;
            c->Hk = Hk;
            c->d = d;
            snprintf(c->name, sizeof c->name, "attention/%s%s%s/T%d", label, *label ? "/" : "",
                     pk[p] == BK_ATTN_FWD ? "forward" : "backward", T[i]);
        }
    return finish_item(L, item, where, first);
}

static int parse_step_case(BL *L, const yaml_node_t *item, int idx, const char *where) {
    static const char *const keys[] = {"kind", "model", "variants", "ceiling", TIMING_KEYS, NULL};
    if (check_keys(L, item, where, keys)) return -1;
    char w[320];
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
    if ((v = get(L, root, "models"))) {
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
    }
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
        if (!k) return berr(L, item, where, "missing key kind (gate, attention, step or op)");
        if (want_scalar(L, k, w)) return -1;
        const char *kt = scalar(k);
        int rc;
        if (strcmp(kt, "gate") == 0)
            rc = parse_gate_case(L, item, idx, where);
        else if (strcmp(kt, "attention") == 0)
            rc = parse_attention_case(L, item, idx, where);
        else if (strcmp(kt, "step") == 0)
            rc = parse_step_case(L, item, idx, where);
        else if (strcmp(kt, "op") == 0)
            rc = parse_op_case(L, item, idx, where);
        else
            return berr(L, k, w, "expected gate, attention, step or op, got \"%s\"", kt);
        if (rc) return -1;
    }
    /* unique names, then ceilings by name */
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

/* ==================================================================== */
/* FLOPs and the step's gemms                                            */
/* ==================================================================== */

static void gemm_put(BenchGemm *out, int cap, int *n, int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc,
                     int beta) {
    if (*n < cap) out[*n] = (BenchGemm){ta, tb, M, N, K, lda, ldb, ldc, beta};
    (*n)++;
}

/* linear_forward(y, ldy, x, ldx, W, n, N, K, beta) */
static void g_fwd(BenchGemm *o, int cap, int *k, int n, int N, int K, int ldx, int ldy, int beta) {
    gemm_put(o, cap, k, 0, 1, n, N, K, ldx, K, ldy, beta);
}
/* linear_backward(dx, ldx, dW, dy, ldy, x, W, n, N, K), both outputs */
static void g_bwd(BenchGemm *o, int cap, int *k, int n, int N, int K, int ldx, int ldy) {
    gemm_put(o, cap, k, 0, 0, n, K, N, ldy, K, ldx, 1);
    gemm_put(o, cap, k, 1, 0, N, K, n, ldy, ldx, K, 1);
}

int bench_step_gemms(const Config *cfg, BenchGemm *out, int cap) {
    Model m;
    ModelCfg mc = config_model(cfg);
    if (model_layout(&m, &mc)) return -1;
    int n = cfg->batch * cfg->seq_len, C = m.C, F = m.F, V = m.V, nq = m.nq, Np = m.Np, L = m.L, k = 0;
    model_free(&m);
    /* forward, as model_forward issues them */
    for (int l = 0; l < L; l++) {
        g_fwd(out, cap, &k, n, Np, C, C, Np, 0);    /* q|k|v|gate projection */
        g_fwd(out, cap, &k, n, C, nq, nq, C, 0);    /* wo */
        g_fwd(out, cap, &k, n, 2 * F, C, C, 2 * F, 0); /* SwiGLU gate|up */
        g_fwd(out, cap, &k, n, C, F, F, C, 1);      /* w_down, added into the residual */
    }
    g_fwd(out, cap, &k, n, V, C, C, V, 0); /* tied output layer */
    /* backward, as model_backward issues them */
    g_bwd(out, cap, &k, n, V, C, C, V);
    for (int l = L - 1; l >= 0; l--) {
        g_bwd(out, cap, &k, n, C, F, F, C);
        g_bwd(out, cap, &k, n, 2 * F, C, C, 2 * F);
        g_bwd(out, cap, &k, n, C, nq, nq, C);
        g_bwd(out, cap, &k, n, Np, C, C, Np);
    }
    return k;
}

double bench_case_flops(const BenchCase *c) {
    switch (c->kind) {
    case BK_GATE: {
        GateOp g = gate_op(&c->gate, c->heads, c->width);
        double W = (double)c->heads * c->width, A = (double)g.lh * g.ld;
        return (double)c->tokens * ((W + A) + (3 * W + 2 * A));
    }
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: {
        double P = (double)c->B * c->H * c->T * (c->T + 1.0) / 2.0, f = 4.0 * c->d * P;
        return c->kind == BK_ATTN_FWD ? f : 2.5 * f;
    }
    case BK_STEP: {
        Model m;
        ModelCfg mc = config_model(&c->cfg);
        if (model_layout(&m, &mc)) return NAN;
        double f, tr;
        model_flops(&m, c->T, &f, &tr);
        model_free(&m);
        return tr * c->B * c->T;
    }
    case BK_SGEMM: {
        int n = bench_step_gemms(&c->cfg, NULL, 0);
        if (n < 0) return NAN;
        BenchGemm *g = malloc(sizeof *g * (size_t)(n ? n : 1));
        if (!g) return NAN;
        bench_step_gemms(&c->cfg, g, n);
        double f = 0;
        for (int i = 0; i < n; i++) f += 2.0 * g[i].M * g[i].N * g[i].K;
        free(g);
        return f;
    }
    case BK_OP: {
        double nw = (double)c->tokens * c->width;
        switch (c->op) {
        case BOP_RMSNORM: return 10 * nw;
        case BOP_ROPE: return 6 * nw * c->heads;
        case BOP_SWIGLU: return 14 * nw;
        default: return 6 * nw;
        }
    }
    default: return NAN;
    }
}

double bench_case_tokens(const BenchCase *c) { return c->kind == BK_STEP ? (double)c->B * c->T : 0; }

/* ==================================================================== */
/* statistics                                                            */
/* ==================================================================== */

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *x, int n) {
    if (n <= 0) return NAN;
    double small[64], *t = n <= 64 ? small : malloc(sizeof *t * (size_t)n);
    if (!t) return NAN;
    memcpy(t, x, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, cmp_dbl);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    if (t != small) free(t);
    return m;
}

void bench_stats(const double *x, int n, BenchStats *st) {
    st->median = median_of(x, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    st->mean = n > 0 ? s / n : NAN;
    double v = 0;
    for (int i = 0; i < n; i++) v += (x[i] - st->mean) * (x[i] - st->mean);
    st->stddev = n > 1 ? sqrt(v / (n - 1)) : 0;
    st->cv = n > 0 && st->mean != 0 ? st->stddev / st->mean : NAN;
}

void bench_result_free(BenchResult *r) {
    free(r->real);
    free(r->cpu);
    free(r->iters);
    memset(r, 0, sizeof *r);
}

double bench_gflops(const BenchSuite *s, const BenchResult *res, int i) {
    (void)s;
    const BenchResult *r = &res[i];
    if (!r->ran || !(r->rs.median > 0)) return NAN;
    return r->flops / r->rs.median * 1e-9;
}

double bench_pct_ceiling(const BenchSuite *s, const BenchResult *res, int i) {
    int j = s->c[i].ceiling;
    if (j < 0 || !res[j].ran) return NAN;
    double a = bench_gflops(s, res, i), b = bench_gflops(s, res, j);
    return b > 0 ? 100.0 * a / b : NAN;
}

/* ==================================================================== */
/* running                                                               */
/* ==================================================================== */

static double now_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static double now_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

enum { MAXMEM = 24 };

typedef struct {
    const BenchCase *c;
    void *mem[MAXMEM];
    int nmem, oom;
    Rng rng;
    /* gate */
    GateOp g;
    int sl, sdl;
    real *y, *L, *out, *S, *dy, *dL, *G, *dout;
    /* attention and ops */
    real *q, *k, *v, *o, *lse, *dq, *dk, *dv, *x, *w, *dx, *dw, *rstd, *cos_t, *sin_t;
    int *tok, *tgt;
    /* step */
    Model m;
    int have_model;
    DataParallel dp; /* the step's micro-batches, as training runs them */
    AdamW opt;
    long t;
    /* sgemm */
    BenchGemm *gm;
    int ngm;
    real *A, *B, *Cm;
} St;

static void *st_alloc(St *s, size_t bytes) {
    void *p = NULL;
    if (s->nmem < MAXMEM) p = malloc(bytes ? bytes : 1);
    if (!p) {
        s->oom = 1;
        return NULL;
    }
    s->mem[s->nmem++] = p;
    return p;
}

/* n values ~ N(0, sd^2) (sd 0: zeros). */
static real *st_real(St *s, size_t n, double sd) {
    real *p = st_alloc(s, sizeof(real) * n);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = sd > 0 ? (real)(sd * rng_normal(&s->rng)) : 0;
    return p;
}

static int *st_ints(St *s, size_t n, int below) {
    int *p = st_alloc(s, sizeof(int) * n);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = (int)rng_below(&s->rng, (uint64_t)below);
    return p;
}

static void st_free(St *s) {
    for (int i = 0; i < s->nmem; i++) free(s->mem[i]);
    if (s->have_model) dp_free(&s->dp), model_free(&s->m);
    s->nmem = 0;
    s->have_model = 0;
}

static int st_setup(St *s, const BenchCase *c, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    s->c = c;
    s->rng = rng_seed(0xBE5C4ull);
    switch (c->kind) {
    case BK_GATE: {
        size_t n = (size_t)c->tokens, W = (size_t)c->heads * c->width;
        s->g = gate_op(&c->gate, c->heads, c->width);
        size_t nl = (size_t)s->g.lh * s->g.ld;
        int stat = c->gate.input == GI_STATIC;
        s->sl = stat ? 0 : (int)nl;
        s->sdl = s->sl;
        s->y = st_real(s, n * W, 1);
        s->L = st_real(s, stat ? nl : n * nl, 1);
        s->dL = st_real(s, stat ? nl : n * nl, 0);
        s->out = st_real(s, n * W, 0);
        s->S = st_real(s, n * W, 0);
        s->dy = st_real(s, n * W, 0);
        s->G = st_real(s, n * W, 0);
        s->dout = st_real(s, n * W, 1);
        break;
    }
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: {
        size_t n = (size_t)c->B * c->T, nq = (size_t)c->H * c->d, nk = (size_t)c->Hk * c->d;
        s->q = st_real(s, n * nq, 1);
        s->k = st_real(s, n * nk, 1);
        s->v = st_real(s, n * nk, 1);
        s->o = st_real(s, n * nq, 0);
        s->lse = st_real(s, (size_t)c->B * c->H * c->T, 0);
        if (c->kind == BK_ATTN_BWD) {
            s->dq = st_real(s, n * nq, 0);
            s->dk = st_real(s, n * nk, 0);
            s->dv = st_real(s, n * nk, 0);
            s->dout = st_real(s, n * nq, 1);
            if (!s->oom && attention_forward(s->o, s->lse, s->q, (int)nq, s->k, (int)nk, s->v, (int)nk, c->B, c->T,
                                             c->H, c->Hk, c->d, 1 / sqrt((real)c->d)))
                s->oom = 1;
        }
        break;
    }
    case BK_OP: {
        size_t n = (size_t)c->tokens, w = (size_t)c->width, hw = (size_t)c->heads * c->width;
        switch (c->op) {
        case BOP_RMSNORM:
            s->x = st_real(s, n * w, 1);
            s->w = st_real(s, w, 1);
            s->o = st_real(s, n * w, 0);
            s->rstd = st_real(s, n, 0);
            s->dout = st_real(s, n * w, 1);
            s->dx = st_real(s, n * w, 0);
            s->dw = st_real(s, w, 0);
            break;
        case BOP_ROPE:
            s->x = st_real(s, n * hw, 1);
            s->o = st_real(s, n * hw, 0);
            s->dout = st_real(s, n * hw, 1);
            s->dx = st_real(s, n * hw, 0);
            s->cos_t = st_real(s, (size_t)c->T * (w / 2), 0);
            s->sin_t = st_real(s, (size_t)c->T * (w / 2), 0);
            if (!s->oom) {
                RopeScaling rp = rope_plain(10000.0);
                rope_tables(s->cos_t, s->sin_t, c->T, c->width, &rp);
            }
            break;
        case BOP_SWIGLU:
            s->x = st_real(s, n * 2 * w, 1);
            s->o = st_real(s, n * w, 0);
            s->dout = st_real(s, n * w, 1);
            s->dx = st_real(s, n * 2 * w, 0);
            break;
        default:
            s->x = st_real(s, n * w, 1);
            s->o = st_real(s, n * w, 0);
            s->dx = st_real(s, n * w, 0);
            s->tgt = st_ints(s, n, c->width);
            break;
        }
        break;
    }
    case BK_STEP: {
        ModelCfg mc = config_model(&c->cfg);
        if (model_init(&s->m, &mc)) {
            snprintf(err, cap, "%s: out of memory for the model", c->name);
            return -1;
        }
        if (dp_init(&s->dp, &s->m, c->B, dp_micro_batch(c->B, c->cfg.micro_batch))) {
            snprintf(err, cap, "%s: out of memory for the micro-batch workers", c->name);
            model_free(&s->m);
            return -1;
        }
        s->have_model = 1;
        size_t n = (size_t)c->B * c->T;
        s->tok = st_ints(s, n, c->cfg.vocab_size);
        s->tgt = st_ints(s, n, c->cfg.vocab_size);
        s->opt = (AdamW){c->cfg.lr, c->cfg.beta1, c->cfg.beta2, c->cfg.adam_eps, c->cfg.weight_decay,
                         c->cfg.grad_clip};
        break;
    }
    case BK_SGEMM: {
        int n = bench_step_gemms(&c->cfg, NULL, 0);
        if (n <= 0) {
            snprintf(err, cap, "%s: no gemms for this model", c->name);
            return -1;
        }
        s->gm = st_alloc(s, sizeof *s->gm * (size_t)n);
        if (!s->gm) break;
        s->ngm = bench_step_gemms(&c->cfg, s->gm, n);
        size_t na = 0, nb = 0, nc = 0;
        for (int i = 0; i < s->ngm; i++) {
            const BenchGemm *g = &s->gm[i];
            size_t ra = (size_t)(g->ta ? g->K : g->M) * g->lda, rb = (size_t)(g->tb ? g->N : g->K) * g->ldb,
                   rc = (size_t)g->M * g->ldc;
            if (ra > na) na = ra;
            if (rb > nb) nb = rb;
            if (rc > nc) nc = rc;
        }
        s->A = st_real(s, na, 0.05);
        s->B = st_real(s, nb, 0.05);
        s->Cm = st_real(s, nc, 0);
        break;
    }
    default: break;
    }
    if (s->oom) {
        snprintf(err, cap, "%s: out of memory", c->name);
        st_free(s);
        return -1;
    }
    return 0;
}

static int st_iter(St *s, char *err, size_t cap) {
    const BenchCase *c = s->c;
    switch (c->kind) {
    case BK_GATE: {
        int W = c->heads * c->width;
        gate_forward(&s->g, s->out, W, s->S, s->y, W, s->L, s->sl, c->tokens);
        gate_backward(&s->g, s->dy, W, s->dL, s->sdl, s->G, s->dout, W, s->S, s->y, W, s->L, s->sl, c->tokens);
        break;
    }
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: {
        int nq = c->H * c->d, nk = c->Hk * c->d;
        real scale = 1 / sqrt((real)c->d);
        int rc = c->kind == BK_ATTN_FWD
                     ? attention_forward(s->o, s->lse, s->q, nq, s->k, nk, s->v, nk, c->B, c->T, c->H, c->Hk, c->d, scale)
                     : attention_backward(s->dq, s->dk, s->dv, s->dout, s->o, s->lse, s->q, nq, s->k, nk, s->v, nk, c->B,
                                          c->T, c->H, c->Hk, c->d, scale);
        if (rc) {
            snprintf(err, cap, "%s: out of memory for the attention work area", c->name);
            return -1;
        }
        break;
    }
    case BK_OP: {
        int n = c->tokens, w = c->width, hw = c->heads * c->width;
        switch (c->op) {
        case BOP_RMSNORM:
            rmsnorm_forward(s->o, w, s->rstd, s->x, w, s->w, n, 1, w, (real)1e-6);
            rmsnorm_backward(s->dx, w, s->dw, s->dout, w, s->x, w, s->w, s->rstd, n, 1, w);
            break;
        case BOP_ROPE:
            rope_forward(s->o, s->x, hw, s->cos_t, s->sin_t, n, c->T, c->heads, w);
            rope_backward(s->dx, hw, s->dout, s->cos_t, s->sin_t, n, c->T, c->heads, w);
            break;
        case BOP_SWIGLU:
            swiglu_forward(s->o, s->x, n, w);
            swiglu_backward(s->dx, s->dout, s->x, n, w);
            break;
        default:
            crossentropy_forward(s->o, s->x, s->tgt, n, w);
            crossentropy_backward(s->dx, s->o, s->tgt, n, w, 1);
            break;
        }
        break;
    }
    case BK_STEP: {
        int bad = 0;
        errno = 0;
        double loss = dp_step(&s->dp, s->tok, s->tgt, c->T, &bad);
        if (loss != loss) {
            snprintf(err, cap, "%s: forward failed (%s)", c->name, errno == ENOMEM ? "out of memory" : "NaN loss");
            return -1;
        }
        if (bad) {
            snprintf(err, cap, "%s: backward failed (out of memory)", c->name);
            return -1;
        }
        adamw_step(&s->m.p, &s->opt, ++s->t);
        break;
    }
    case BK_SGEMM:
        for (int i = 0; i < s->ngm; i++) {
            const BenchGemm *g = &s->gm[i];
            gemm(g->ta, g->tb, g->M, g->N, g->K, 1, s->A, g->lda, s->B, g->ldb, (real)g->beta, s->Cm, g->ldc);
        }
        break;
    default: break;
    }
    return 0;
}

struct BenchRun {
    const BenchCase *c;
    St s;
    int reps, cg;
    long fixed;
    double min_time;
};

int bench_case_begin(const BenchCase *c, const BenchRunOpts *o, BenchRun **out, BenchResult *r, char *err,
                     size_t cap) {
    memset(r, 0, sizeof *r);
    *out = NULL;
    int reps = o && o->repetitions > 0 ? o->repetitions : c->repetitions;
    long fixed = c->iterations;
    int cg = o && o->callgrind;
    if (cg) {
#ifndef BENCH_HAVE_CALLGRIND
        snprintf(err, cap, "%s: built without <valgrind/callgrind.h>; --callgrind is unavailable", c->name);
        return -1;
#endif
        reps = 1;
        if (fixed < 1) fixed = 1;
    }
    BenchRun *b = calloc(1, sizeof *b);
    r->real = malloc(sizeof(double) * (size_t)reps);
    r->cpu = malloc(sizeof(double) * (size_t)reps);
    r->iters = malloc(sizeof(long) * (size_t)reps);
    if (!b || !r->real || !r->cpu || !r->iters) {
        free(b);
        bench_result_free(r);
        snprintf(err, cap, "%s: out of memory", c->name);
        return -1;
    }
    b->c = c;
    b->reps = reps;
    b->cg = cg;
    b->fixed = fixed;
    b->min_time = o && o->min_time >= 0 ? o->min_time : c->min_time;
    r->flops = bench_case_flops(c);
    r->tokens = bench_case_tokens(c);
    if (st_setup(&b->s, c, err, cap)) {
        free(b);
        bench_result_free(r);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < c->warmup && !rc; i++) rc = st_iter(&b->s, err, cap);
    if (rc) {
        st_free(&b->s);
        free(b);
        bench_result_free(r);
        return -1;
    }
    *out = b;
    return 0;
}

int bench_case_rep(BenchRun *b, BenchResult *r, char *err, size_t cap) {
    if (r->n >= b->reps) return 1;
#ifdef BENCH_HAVE_CALLGRIND
    if (b->cg) CALLGRIND_ZERO_STATS;
#endif
    int rc = 0;
    double w0 = now_wall(), c0 = now_cpu(), el = 0;
    long k = 0;
    do {
        rc = st_iter(&b->s, err, cap);
        k++;
        el = now_wall() - w0;
    } while (!rc && (b->fixed > 0 ? k < b->fixed : el < b->min_time));
    double ce = now_cpu() - c0;
    if (rc) return -1;
#ifdef BENCH_HAVE_CALLGRIND
    if (b->cg) CALLGRIND_DUMP_STATS_AT(b->c->name);
#endif
    r->real[r->n] = el / k;
    r->cpu[r->n] = ce / k;
    r->iters[r->n] = k;
    r->n++;
    return 0;
}

void bench_case_end(BenchRun *b, BenchResult *r, int ok) {
    if (b) {
        st_free(&b->s);
        free(b);
    }
    if (!ok || r->n == 0) {
        bench_result_free(r);
        return;
    }
    bench_stats(r->real, r->n, &r->rs);
    bench_stats(r->cpu, r->n, &r->cs);
    r->ran = 1;
}

int bench_run_case(const BenchCase *c, const BenchRunOpts *o, BenchResult *r, char *err, size_t cap) {
    BenchRun *b;
    if (bench_case_begin(c, o, &b, r, err, cap)) return -1;
    int rc;
    while ((rc = bench_case_rep(b, r, err, cap)) == 0) {
    }
    bench_case_end(b, r, rc > 0);
    return rc > 0 ? 0 : -1;
}

/* ==================================================================== */
/* the perf environment                                                  */
/* ==================================================================== */

void bench_env_fill(BenchEnv *e) {
    static const char *const keys[BENCH_ENV_N] = {"arch", "cpu", "cpu_id", "openblas_core", "openblas_config",
                                                  "openblas_coretype", "compiler", "libc"};
    memset(e, 0, sizeof *e);
    for (int i = 0; i < BENCH_ENV_N; i++) e->key[i] = keys[i];
    struct utsname u;
    snprintf(e->val[0], sizeof e->val[0], "%s", uname(&u) == 0 ? u.machine : "unknown");
    store_cpu_model(e->val[1], sizeof e->val[1]);
    /* x86: vendor, family, model, stepping (a virtual machine's name is often generic);
     * arm: implementer, part, revision */
    char v[64], fam[32], mod[32], step[32];
    store_cpuinfo("vendor_id", v, sizeof v);
    store_cpuinfo("cpu family", fam, sizeof fam);
    store_cpuinfo("model", mod, sizeof mod);
    store_cpuinfo("stepping", step, sizeof step);
    if (fam[0])
        snprintf(e->val[2], sizeof e->val[2], "%s family %s model %s stepping %s", v, fam, mod, step);
    else {
        store_cpuinfo("CPU implementer", v, sizeof v);
        store_cpuinfo("CPU part", mod, sizeof mod);
        store_cpuinfo("CPU revision", step, sizeof step);
        if (v[0] || mod[0]) snprintf(e->val[2], sizeof e->val[2], "implementer %s part %s revision %s", v, mod, step);
    }
    if (!e->val[2][0]) snprintf(e->val[2], sizeof e->val[2], "unknown");
    const char *cn = openblas_get_corename(), *cf = openblas_get_config();
    snprintf(e->val[3], sizeof e->val[3], "%s", cn ? cn : "unknown");
    snprintf(e->val[4], sizeof e->val[4], "%s", cf ? cf : "unknown");
    store_trim(e->val[3]);
    store_trim(e->val[4]);
    const char *ct = getenv("OPENBLAS_CORETYPE");
    snprintf(e->val[5], sizeof e->val[5], "%s", ct ? ct : "(unset)");
    snprintf(e->val[6], sizeof e->val[6], "%s", store_compiler());
#ifdef __GLIBC__
    snprintf(e->val[7], sizeof e->val[7], "glibc %s", gnu_get_libc_version());
#else
    snprintf(e->val[7], sizeof e->val[7], "unknown");
#endif
}

static void jstr(FILE *f, const char *s);

void bench_env_write_json(FILE *f, const BenchEnv *e) {
    fputs("{\n", f);
    for (int i = 0; i < BENCH_ENV_N; i++) {
        fputs("  ", f);
        jstr(f, e->key[i]);
        fputs(": ", f);
        jstr(f, e->val[i]);
        fputs(i + 1 < BENCH_ENV_N ? ",\n" : "\n", f);
    }
    fputs("}\n", f);
}

/* ==================================================================== */
/* Google-Benchmark JSON out                                             */
/* ==================================================================== */

static void jstr(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double x) {
    if (isnan(x))
        fputs("NaN", f);
    else if (isinf(x))
        fputs(x < 0 ? "-Infinity" : "Infinity", f);
    else
        fprintf(f, "%.17g", x);
}

/* A time unit for a case: the largest of s, ms, us, ns under its median. */
static const char *unit_for(double sec, double *scale) {
    if (sec >= 1) return *scale = 1, "s";
    if (sec >= 1e-3) return *scale = 1e3, "ms";
    if (sec >= 1e-6) return *scale = 1e6, "us";
    return *scale = 1e9, "ns";
}

/* The first line of a file (trimmed), or "". */
static void read_line(const char *path, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(out, (int)cap, f)) out[0] = '\0';
    fclose(f);
    store_trim(out);
}

/* One benchmark row.  agg NULL: an iteration row for repetition rep. */
static void row(FILE *f, const BenchSuite *s, const BenchResult *res, int i, int family, const char *agg, int rep,
                int *first) {
    const BenchCase *c = &s->c[i];
    const BenchResult *r = &res[i];
    double scale;
    const char *unit = unit_for(r->rs.median, &scale);
    double rt, ct, ips = NAN, gf = NAN, pct = NAN;
    long long iters;
    const char *aunit = "time";
    if (!agg) {
        rt = r->real[rep] * scale;
        ct = r->cpu[rep] * scale;
        iters = r->iters[rep];
        if (r->tokens > 0) ips = r->tokens / r->real[rep];
        gf = r->flops / r->real[rep] * 1e-9;
        int j = c->ceiling;
        if (j >= 0 && res[j].ran && res[j].rs.median > 0) pct = 100.0 * (r->flops / r->real[rep]) / (res[j].flops / res[j].rs.median);
    } else {
        iters = r->n;
        /* counters aggregate like GB: the statistic of the per-repetition rates */
        double *rates = malloc(sizeof(double) * (size_t)r->n * 2);
        BenchStats tok = {NAN, NAN, NAN, NAN}, fl = {NAN, NAN, NAN, NAN};
        if (rates) {
            for (int k = 0; k < r->n; k++) {
                rates[k] = r->tokens / r->real[k];
                rates[r->n + k] = r->flops / r->real[k] * 1e-9;
            }
            bench_stats(rates, r->n, &tok);
            bench_stats(rates + r->n, r->n, &fl);
            free(rates);
        }
        if (strcmp(agg, "median") == 0) {
            rt = r->rs.median * scale, ct = r->cs.median * scale, ips = tok.median, gf = fl.median;
            pct = bench_pct_ceiling(s, res, i);
        } else if (strcmp(agg, "mean") == 0) {
            rt = r->rs.mean * scale, ct = r->cs.mean * scale, ips = tok.mean, gf = fl.mean;
        } else if (strcmp(agg, "stddev") == 0) {
            rt = r->rs.stddev * scale, ct = r->cs.stddev * scale, ips = tok.stddev, gf = fl.stddev;
        } else {
            rt = r->rs.cv, ct = r->cs.cv, ips = tok.cv, gf = fl.cv;
            aunit = "percentage";
        }
        if (r->tokens <= 0) ips = NAN;
    }
    fprintf(f, "%s    {\n      \"name\": ", *first ? "" : ",\n");
    *first = 0;
    if (agg) {
        char nm[256];
        snprintf(nm, sizeof nm, "%s_%s", c->name, agg);
        jstr(f, nm);
    } else {
        jstr(f, c->name);
    }
    fprintf(f, ",\n      \"family_index\": %d,\n      \"per_family_instance_index\": 0,\n      \"run_name\": ", family);
    jstr(f, c->name);
    fprintf(f, ",\n      \"run_type\": \"%s\",\n      \"repetitions\": %d,\n", agg ? "aggregate" : "iteration", r->n);
    if (!agg) fprintf(f, "      \"repetition_index\": %d,\n", rep);
    fprintf(f, "      \"threads\": 1,\n");
    if (agg) fprintf(f, "      \"aggregate_name\": \"%s\",\n      \"aggregate_unit\": \"%s\",\n", agg, aunit);
    fprintf(f, "      \"iterations\": %lld,\n      \"real_time\": ", iters);
    jnum(f, rt);
    fprintf(f, ",\n      \"cpu_time\": ");
    jnum(f, ct);
    fprintf(f, ",\n      \"time_unit\": \"%s\"", unit);
    if (!isnan(ips)) {
        fprintf(f, ",\n      \"items_per_second\": ");
        jnum(f, ips);
    }
    if (!isnan(gf)) {
        fprintf(f, ",\n      \"gflops\": ");
        jnum(f, gf);
    }
    if (!isnan(pct)) {
        fprintf(f, ",\n      \"pct_of_ceiling\": ");
        jnum(f, pct);
    }
    fprintf(f, ",\n      \"label\": ");
    jstr(f, bench_kind_names[c->kind]);
    fprintf(f, "\n    }");
}

int bench_write_json(FILE *f, const BenchSuite *s, const BenchResult *res, const BenchContext *ctx) {
    char date[64], host[256], mhz[64], gov[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", &tm);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    store_cpuinfo("cpu MHz", mhz, sizeof mhz);
    read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    double la[3] = {0, 0, 0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = la[1] = la[2] = 0;
        fclose(lf);
    }
    fprintf(f, "{\n  \"context\": {\n    \"date\": ");
    jstr(f, date);
    fprintf(f, ",\n    \"host_name\": ");
    jstr(f, host);
    fprintf(f, ",\n    \"executable\": ");
    jstr(f, ctx && ctx->executable ? ctx->executable : "gated");
    fprintf(f, ",\n    \"num_cpus\": %ld,\n    \"mhz_per_cpu\": %.0f,\n", sysconf(_SC_NPROCESSORS_ONLN),
            *mhz ? atof(mhz) : 0.0);
    fprintf(f, "    \"cpu_scaling_enabled\": %s,\n", *gov && strcmp(gov, "performance") != 0 ? "true" : "false");
    fprintf(f, "    \"caches\": [],\n    \"load_avg\": [%g, %g, %g],\n", la[0], la[1], la[2]);
    fprintf(f, "    \"library_build_type\": \"release\",\n    \"gated_suite\": ");
    jstr(f, s->name);
    fprintf(f, ",\n    \"gated_suite_path\": ");
    jstr(f, ctx && ctx->suite_path ? ctx->suite_path : s->path);
    fprintf(f, ",\n    \"gated_code_version\": ");
    jstr(f, ctx && ctx->code_version ? ctx->code_version : "unknown");
    fprintf(f, ",\n    \"gated_git_dirty\": %d,\n    \"gated_cflags\": ", ctx ? ctx->git_dirty : -1);
    jstr(f, ctx && ctx->cflags ? ctx->cflags : "unknown");
    fprintf(f, ",\n    \"gated_openblas\": ");
    jstr(f, ctx && ctx->openblas ? ctx->openblas : "unknown");
    fprintf(f, ",\n    \"gated_threads\": %d,\n    \"gated_real\": \"%s\"\n  },\n  \"benchmarks\": [\n",
            ctx ? ctx->threads : 0, GATED_REAL_NAME);
    int first = 1, family = 0;
    static const char *const aggs[] = {"median", "mean", "stddev", "cv"};
    for (int i = 0; i < s->n; i++) {
        if (!res[i].ran) continue;
        for (int k = 0; k < res[i].n; k++) row(f, s, res, i, family, NULL, k, &first);
        for (int a = 0; a < 4; a++) row(f, s, res, i, family, aggs[a], 0, &first);
        family++;
    }
    fprintf(f, "\n  ]\n}\n");
    return ferror(f) ? -1 : 0;
}

/* ==================================================================== */
/* JSON in                                                               */
/* ==================================================================== */

typedef struct {
    const char *s, *p;
    char *err;
    size_t cap;
    int depth;
} JP;

static void jp_where(const JP *j, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *q = j->s; q < j->p; q++) {
        if (*q == '\n')
            (*line)++, *col = 1;
        else
            (*col)++;
    }
}

__attribute__((format(printf, 2, 3))) static BenchJson *jp_fail(JP *j, const char *fmt, ...) {
    if (j->err && j->err[0]) return NULL; /* keep the first */
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int l, c;
    jp_where(j, &l, &c);
    if (j->err) snprintf(j->err, j->cap, "line %d col %d: %s", l, c, why);
    return NULL;
}

static void jp_ws(JP *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

static BenchJson *jnew(JP *j, BenchJsonType t) {
    BenchJson *v = calloc(1, sizeof *v);
    if (!v) return jp_fail(j, "out of memory");
    v->type = t;
    return v;
}

static int put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 63)), o[2] = (char)(0x80 | (cp & 63)), 3;
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)), o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static char *jp_string(JP *j) {
    j->p++; /* opening quote */
    const char *q = j->p;
    size_t n = 0;
    while (*q && *q != '"') {
        if (*q == '\\' && q[1]) q++;
        q++, n++;
    }
    if (*q != '"') return (char *)jp_fail(j, "unterminated string");
    char *out = malloc(n * 4 + 1), *o = out;
    if (!out) return (char *)jp_fail(j, "out of memory");
    while (*j->p != '"') {
        unsigned char ch = (unsigned char)*j->p;
        if (ch < 0x20) {
            free(out);
            return (char *)jp_fail(j, "control character in string");
        }
        if (ch != '\\') {
            *o++ = (char)ch;
            j->p++;
            continue;
        }
        j->p++;
        switch (*j->p) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(j->p + 1, &cp)) {
                free(out);
                return (char *)jp_fail(j, "bad \\u escape");
            }
            j->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && j->p[1] == '\\' && j->p[2] == 'u') {
                unsigned lo;
                if (!hex4(j->p + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    j->p += 6;
                }
            }
            o += put_utf8(o, cp);
            break;
        }
        default: free(out); return (char *)jp_fail(j, "bad escape \\%c", *j->p ? *j->p : '0');
        }
        j->p++;
    }
    j->p++;
    *o = '\0';
    return out;
}

static BenchJson *jp_value(JP *j);

static int jp_push(JP *j, BenchJson *a, char *key, BenchJson *v) {
    if (a->n == 0 || (a->n >= 4 && (a->n & (a->n - 1)) == 0)) { /* capacity 4, 8, 16, ... */
        int nc = a->n ? 2 * a->n : 4;
        BenchJson **nv = realloc(a->v, sizeof *nv * (size_t)nc);
        if (nv) a->v = nv;
        if (a->type == BJ_OBJ) {
            char **nk = realloc(a->keys, sizeof *nk * (size_t)nc);
            if (nk) a->keys = nk;
            if (!nk) nv = NULL;
        }
        if (!nv) {
            free(key);
            bench_json_free(v);
            jp_fail(j, "out of memory");
            return -1;
        }
    }
    if (a->type == BJ_OBJ) a->keys[a->n] = key;
    a->v[a->n++] = v;
    return 0;
}

static BenchJson *jp_value(JP *j) {
    jp_ws(j);
    if (++j->depth > 64) return jp_fail(j, "nested too deeply");
    BenchJson *v = NULL;
    char c = *j->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v = jnew(j, obj ? BJ_OBJ : BJ_ARR);
        if (!v) return NULL;
        j->p++;
        jp_ws(j);
        if (*j->p == (obj ? '}' : ']')) {
            j->p++;
        } else {
            for (;;) {
                char *key = NULL;
                jp_ws(j);
                if (obj) {
                    if (*j->p != '"') {
                        bench_json_free(v);
                        return jp_fail(j, "expected a member name");
                    }
                    if (!(key = jp_string(j))) {
                        bench_json_free(v);
                        return NULL;
                    }
                    jp_ws(j);
                    if (*j->p != ':') {
                        free(key);
                        bench_json_free(v);
                        return jp_fail(j, "expected ':'");
                    }
                    j->p++;
                }
                BenchJson *e = jp_value(j);
                if (!e) {
                    free(key);
                    bench_json_free(v);
                    return NULL;
                }
                if (jp_push(j, v, key, e)) {
                    bench_json_free(v);
                    return NULL;
                }
                jp_ws(j);
                if (*j->p == ',') {
                    j->p++;
                    continue;
                }
                if (*j->p == (obj ? '}' : ']')) {
                    j->p++;
                    break;
                }
                bench_json_free(v);
                return jp_fail(j, "expected ',' or '%c'", obj ? '}' : ']');
            }
        }
    } else if (c == '"') {
        v = jnew(j, BJ_STR);
        if (!v) return NULL;
        if (!(v->str = jp_string(j))) {
            free(v);
            return NULL;
        }
    } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
        v = jnew(j, BJ_BOOL);
        if (!v) return NULL;
        v->num = c == 't';
        j->p += c == 't' ? 4 : 5;
    } else if (strncmp(j->p, "null", 4) == 0) {
        v = jnew(j, BJ_NULL);
        j->p += 4;
    } else if (strncmp(j->p, "NaN", 3) == 0 || strncmp(j->p, "Infinity", 8) == 0 ||
               strncmp(j->p, "-Infinity", 9) == 0) {
        v = jnew(j, BJ_NUM);
        if (!v) return NULL;
        v->num = c == 'N' ? NAN : c == '-' ? -INFINITY : INFINITY;
        j->p += c == 'N' ? 3 : c == '-' ? 9 : 8;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        /* RFC 8259 number grammar, then strtod */
        const char *q = j->p;
        if (*q == '-') q++;
        if (*q == '0')
            q++;
        else if (*q >= '1' && *q <= '9')
            while (*q >= '0' && *q <= '9') q++;
        else
            return jp_fail(j, "bad number");
        if (*q == '.') {
            q++;
            if (!(*q >= '0' && *q <= '9')) return jp_fail(j, "bad number");
            while (*q >= '0' && *q <= '9') q++;
        }
        if (*q == 'e' || *q == 'E') {
            q++;
            if (*q == '+' || *q == '-') q++;
            if (!(*q >= '0' && *q <= '9')) return jp_fail(j, "bad number");
            while (*q >= '0' && *q <= '9') q++;
        }
        v = jnew(j, BJ_NUM);
        if (!v) return NULL;
        v->num = strtod(j->p, NULL);
        j->p = q;
    } else {
        if (!*j->p) return jp_fail(j, "unexpected end of input");
        return jp_fail(j, "unexpected character '%c'", *j->p);
    }
    j->depth--;
    return v;
}

BenchJson *bench_json_parse(const char *text, char *err, size_t cap) {
    if (err && cap) err[0] = '\0';
    JP j = {text, text, err, cap, 0};
    BenchJson *v = jp_value(&j);
    if (!v) {
        if (err && cap && !err[0]) snprintf(err, cap, "invalid JSON");
        return NULL;
    }
    jp_ws(&j);
    if (*j.p) {
        bench_json_free(v);
        return jp_fail(&j, "trailing characters after the value");
    }
    return v;
}

BenchJson *bench_json_parse_file(const char *path, char *err, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t n = 0, c = 1 << 16;
    char *buf = malloc(c);
    while (buf) {
        n += fread(buf + n, 1, c - n - 1, f);
        if (n < c - 1) break;
        char *nb = realloc(buf, c * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        c *= 2;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        snprintf(err, cap, "%s: %s", path, buf ? "read error" : "out of memory");
        return NULL;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        snprintf(err, cap, "%s: not JSON (NUL byte)", path);
        return NULL;
    }
    char why[400];
    BenchJson *v = bench_json_parse(buf, why, sizeof why);
    free(buf);
    if (!v) snprintf(err, cap, "%s: not valid JSON: %s", path, why);
    return v;
}

void bench_json_free(BenchJson *j) {
    if (!j) return;
    for (int i = 0; i < j->n; i++) {
        bench_json_free(j->v[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->v);
    free(j->keys);
    free(j->str);
    free(j);
}

const BenchJson *bench_json_get(const BenchJson *o, const char *key) {
    if (!o || o->type != BJ_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0) return o->v[i];
    return NULL;
}

/* ==================================================================== */
/* compare                                                               */
/* ==================================================================== */

typedef struct {
    const char *name;
    double median; /* the "median" aggregate, NAN if none */
    double *it;    /* iteration values */
    int nit, cap;
    int is_time;
} CmpCase;

typedef struct {
    CmpCase *c;
    int n, cap;
    BenchJson *root;
} CmpSet;

static void cmpset_free(CmpSet *s) {
    for (int i = 0; i < s->n; i++) free(s->c[i].it);
    free(s->c);
    bench_json_free(s->root);
}

static double unit_seconds(const char *u) {
    if (!u || strcmp(u, "ns") == 0) return 1e-9;
    if (strcmp(u, "us") == 0) return 1e-6;
    if (strcmp(u, "ms") == 0) return 1e-3;
    if (strcmp(u, "s") == 0) return 1;
    return NAN;
}

static const char *jtext(const BenchJson *o, const char *key) {
    const BenchJson *v = bench_json_get(o, key);
    return v && v->type == BJ_STR ? v->str : NULL;
}

static CmpCase *cmp_case(CmpSet *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->c[i].name, name) == 0) return &s->c[i];
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 32;
        CmpCase *nv = realloc(s->c, sizeof *nv * (size_t)nc);
        if (!nv) return NULL;
        s->c = nv;
        s->cap = nc;
    }
    CmpCase *c = &s->c[s->n++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->median = NAN;
    return c;
}

static int load_cmp(const char *path, const char *metric, CmpSet *s, FILE *errf) {
    char err[600];
    memset(s, 0, sizeof *s);
    s->root = bench_json_parse_file(path, err, sizeof err);
    if (!s->root) {
        fprintf(errf, "gated compare: %s\n", err);
        return -1;
    }
    const BenchJson *b = bench_json_get(s->root, "benchmarks");
    if (!b || b->type != BJ_ARR) {
        fprintf(errf, "gated compare: %s: not Google-Benchmark JSON (no \"benchmarks\" array)\n", path);
        return -1;
    }
    int is_time = strcmp(metric, "real_time") == 0 || strcmp(metric, "cpu_time") == 0;
    for (int i = 0; i < b->n; i++) {
        const BenchJson *e = b->v[i];
        const char *name = jtext(e, "run_name");
        if (!name) name = jtext(e, "name");
        if (!name) {
            fprintf(errf, "gated compare: %s: benchmarks[%d] has no name\n", path, i);
            return -1;
        }
        const BenchJson *err_occ = bench_json_get(e, "error_occurred");
        if (err_occ && err_occ->type == BJ_BOOL && err_occ->num) continue;
        const char *rt = jtext(e, "run_type");
        const char *agg = jtext(e, "aggregate_name");
        int aggregate = (rt && strcmp(rt, "aggregate") == 0) || agg;
        if (aggregate && (!agg || strcmp(agg, "median") != 0)) continue;
        const BenchJson *v = bench_json_get(e, metric);
        if (!v || v->type != BJ_NUM) continue;
        double x = v->num;
        if (is_time) {
            double u = unit_seconds(jtext(e, "time_unit"));
            if (isnan(u)) {
                fprintf(errf, "gated compare: %s: %s: unknown time_unit \"%s\"\n", path, name, jtext(e, "time_unit"));
                return -1;
            }
            x *= u;
        }
        CmpCase *c = cmp_case(s, name);
        if (!c) {
            fprintf(errf, "gated compare: out of memory\n");
            return -1;
        }
        c->is_time = is_time;
        if (aggregate) {
            c->median = x;
        } else {
            if (c->nit == c->cap) {
                int nc = c->cap ? 2 * c->cap : 8;
                double *nv = realloc(c->it, sizeof *nv * (size_t)nc);
                if (!nv) {
                    fprintf(errf, "gated compare: out of memory\n");
                    return -1;
                }
                c->it = nv;
                c->cap = nc;
            }
            c->it[c->nit++] = x;
        }
    }
    return 0;
}

static double cmp_value(const CmpCase *c) { return !isnan(c->median) ? c->median : median_of(c->it, c->nit); }

static void fmt_val(char *buf, size_t cap, double x, int is_time) {
    if (isnan(x)) {
        snprintf(buf, cap, "-");
        return;
    }
    if (!is_time) {
        if (x == floor(x) && fabs(x) < 1e15)
            snprintf(buf, cap, "%.0f", x); /* counts, exactly */
        else
            snprintf(buf, cap, "%.6g", x);
        return;
    }
    double sc;
    const char *u = unit_for(x, &sc);
    snprintf(buf, cap, "%.4g %s", x * sc, u);
}

int bench_compare_files(const char *base, const char *head, const BenchCompareOpts *o, FILE *out, FILE *errf) {
    const char *metric = o && o->metric ? o->metric : "real_time";
    double thr = o ? o->threshold : 5;
    CmpSet A, B;
    int la = load_cmp(base, metric, &A, errf), lb = la ? -1 : load_cmp(head, metric, &B, errf);
    if (la || lb) {
        cmpset_free(&A);
        if (!la) cmpset_free(&B);
        return 2;
    }
    if (A.n == 0) {
        fprintf(errf, "gated compare: %s: no benchmark has a value for %s\n", base, metric);
        cmpset_free(&A);
        cmpset_free(&B);
        return 2;
    }
    int w = 40;
    for (int i = 0; i < A.n; i++)
        if ((int)strlen(A.c[i].name) > w) w = (int)strlen(A.c[i].name);
    fprintf(out, "%-*s %14s %14s %9s  %s\n", w, "case", "base", "head", "change", "verdict");
    int nreg = 0, nmiss = 0;
    char regs[4096] = "", miss[4096] = "";
    for (int i = 0; i < A.n; i++) {
        const CmpCase *a = &A.c[i];
        const CmpCase *b = NULL;
        for (int k = 0; k < B.n; k++)
            if (strcmp(B.c[k].name, a->name) == 0) b = &B.c[k];
        double va = cmp_value(a), vb = b ? cmp_value(b) : NAN;
        char sa[32], sb[32];
        fmt_val(sa, sizeof sa, va, a->is_time);
        fmt_val(sb, sizeof sb, vb, a->is_time);
        if (!b || isnan(vb)) {
            nmiss++;
            size_t m = strlen(miss);
            snprintf(miss + m, sizeof miss - m, "%s%s", m ? ", " : "", a->name);
            fprintf(out, "%-*s %14s %14s %9s  %s\n", w, a->name, sa, "-", "", "MISSING in head");
            continue;
        }
        double ch = va > 0 ? 100.0 * (vb - va) / va : (vb > va ? INFINITY : 0);
        const char *verdict = "ok";
        if (ch > thr) {
            verdict = "REGRESSION";
            nreg++;
            size_t m = strlen(regs);
            snprintf(regs + m, sizeof regs - m, "%s%s (%+.1f%%)", m ? ", " : "", a->name, ch);
        } else if (ch < -thr) {
            verdict = "faster";
        }
        fprintf(out, "%-*s %14s %14s %+8.1f%%  %s\n", w, a->name, sa, sb, ch, verdict);
    }
    int nnew = 0;
    for (int k = 0; k < B.n; k++) {
        int found = 0;
        for (int i = 0; i < A.n && !found; i++) found = strcmp(A.c[i].name, B.c[k].name) == 0;
        if (!found) {
            char sb[32];
            fmt_val(sb, sizeof sb, cmp_value(&B.c[k]), B.c[k].is_time);
            fprintf(out, "%-*s %14s %14s %9s  %s\n", w, B.c[k].name, "-", sb, "", "new in head");
            nnew++;
        }
    }
    if (nreg) fprintf(out, "regressions over %.3g%% (%s): %s\n", thr, metric, regs);
    if (nmiss) fprintf(out, "missing in %s: %s\n", head, miss);
    if (!nreg && !nmiss) fprintf(out, "no regression over %.3g%% (%s) in %d cases\n", thr, metric, A.n);
    cmpset_free(&A);
    cmpset_free(&B);
    return nreg || (nmiss && o && o->fail_missing) ? 3 : 0;
}
