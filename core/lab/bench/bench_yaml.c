/*
 * bench_yaml.c — the loader's toolkit (bench_yaml_int.h): errors, typed
 * scalars and key checks over the suite's YAML document, the flattened
 * model.* overrides of a step case resolved into a Config, new cases and
 * their timing keys.  The case parsers are bench_suite.c's.
 */
#include "lab/bench/bench_yaml_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/variant.h"
#include "run/yamlfile.h"

/* ==================================================================== */
/* loading                                                               */
/* ==================================================================== */



__attribute__((format(printf, 4, 5))) int bl_berr(BL *L, const yaml_node_t *n, const char *where,
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

const char *bl_kind_text(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return "a value";
    default: return "nothing";
    }
}

yaml_node_t *bl_node(BL *L, int id) { return yaml_document_get_node(L->doc, id); }

const char *bl_scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Check a mapping's keys: scalars, no duplicates, each in allowed (NULL-
 * terminated). */
int bl_check_keys(BL *L, const yaml_node_t *map, const char *where, const char *const *allowed) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = bl_node(L, p->key);
        const char *name = bl_scalar(k);
        if (!name) return bl_berr(L, k, where, "expected a key name, got %s", k ? bl_kind_text(k) : "nothing");
        for (yaml_node_pair_t *e = map->data.mapping.pairs.start; e < p; e++) {
            const char *en = bl_scalar(bl_node(L, e->key));
            if (en && strcmp(en, name) == 0)
                return bl_berr(L, k, where, "duplicate key %s (first set at line %zu)", name,
                            bl_node(L, e->key)->start_mark.line + 1);
        }
        int ok = 0;
        for (int i = 0; allowed[i]; i++) ok |= strcmp(allowed[i], name) == 0;
        if (!ok) {
            char list[600] = "";
            for (int i = 0; allowed[i]; i++) {
                size_t m = strlen(list);
                snprintf(list + m, sizeof list - m, "%s%s", i ? ", " : "", allowed[i]);
            }
            return bl_berr(L, k, where, "unknown key %s (expected one of: %s)", name, list);
        }
    }
    return 0;
}

yaml_node_t *bl_get(BL *L, const yaml_node_t *map, const char *key) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = bl_scalar(bl_node(L, p->key));
        if (k && strcmp(k, key) == 0) return bl_node(L, p->value);
    }
    return NULL;
}

/* buf = "WHERE.KEY" (or KEY), truncated to cap. */
void bl_sub(char *buf, size_t cap, const char *where, const char *key) {
    size_t n = 0;
    const char *parts[3] = {where ? where : "", where && *where ? "." : "", key};
    for (int i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++) buf[n++] = *p;
    buf[n] = '\0';
}

int bl_want_scalar(BL *L, const yaml_node_t *v, const char *where) {
    if (!v || v->type != YAML_SCALAR_NODE || v->data.scalar.length != strlen((const char *)v->data.scalar.value))
        return bl_berr(L, v, where, "expected a value, got %s", v ? bl_kind_text(v) : "nothing");
    return 0;
}

int bl_parse_long(BL *L, const yaml_node_t *v, const char *where, long lo, long hi, long *out) {
    if (bl_want_scalar(L, v, where)) return -1;
    const char *t = bl_scalar(v);
    char *end;
    errno = 0;
    long x = strtol(t, &end, 10);
    if (!*t || *end || errno || x < lo || x > hi)
        return bl_berr(L, v, where, "expected an integer in [%ld, %ld], got \"%s\"", lo, hi, t);
    *out = x;
    return 0;
}

int bl_parse_int(BL *L, const yaml_node_t *v, const char *where, int lo, int hi, int *out) {
    long x;
    if (bl_parse_long(L, v, where, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}

int bl_parse_num(BL *L, const yaml_node_t *v, const char *where, double lo, double hi, double *out) {
    if (bl_want_scalar(L, v, where)) return -1;
    const char *t = bl_scalar(v);
    char *end;
    double x = strtod(t, &end);
    if (!*t || *end || !(x >= lo && x <= hi))
        return bl_berr(L, v, where, "expected a number in [%g, %g], got \"%s\"", lo, hi, t);
    *out = x;
    return 0;
}

int bl_parse_bool(BL *L, const yaml_node_t *v, const char *where, int *out) {
    if (bl_want_scalar(L, v, where)) return -1;
    const char *t = bl_scalar(v);
    if (strcmp(t, "true") == 0 || strcmp(t, "yes") == 0 || strcmp(t, "on") == 0) return *out = 1, 0;
    if (strcmp(t, "false") == 0 || strcmp(t, "no") == 0 || strcmp(t, "off") == 0) return *out = 0, 0;
    return bl_berr(L, v, where, "expected true or false, got \"%s\"", t);
}

/* A label that can go into a case name: [A-Za-z0-9_.:+=-], 1..48 chars. */
int bl_parse_label(BL *L, const yaml_node_t *v, const char *where, char *out, size_t cap) {
    if (bl_want_scalar(L, v, where)) return -1;
    const char *t = bl_scalar(v);
    size_t n = strlen(t);
    int ok = n > 0 && n <= 48 && n < cap;
    for (size_t i = 0; ok && i < n; i++)
        ok = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9') ||
             strchr("_.:+=-", t[i]);
    if (!ok)
        return bl_berr(L, v, where, "expected a label of 1-48 characters from A-Z a-z 0-9 _ . : + = -, got \"%s\"",
                    t);
    snprintf(out, cap, "%s", t);
    return 0;
}

/* Items of a value that may be one scalar or a list of scalars. */
int bl_items(BL *L, yaml_node_t *v, const char *where, yaml_node_t **out, int cap, int *n) {
    *n = 0;
    if (v && v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            if (*n >= cap) return bl_berr(L, v, where, "more than %d values", cap);
            yaml_node_t *e = bl_node(L, *it);
            if (bl_want_scalar(L, e, where)) return -1; /* a list of lists or maps is not a list of values */
            out[(*n)++] = e;
        }
        if (*n == 0) return bl_berr(L, v, where, "empty list");
        return 0;
    }
    if (bl_want_scalar(L, v, where)) return -1;
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

/* Append the override "key=value" text. */
static int ov_push(BL *L, OvList *l, const char *text, const yaml_node_t *kn, const yaml_node_t *vn) {
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 16;
        Ov *nv = realloc(l->v, sizeof *nv * (size_t)nc);
        if (!nv) return bl_berr(L, NULL, NULL, "out of memory");
        l->v = nv;
        l->cap = nc;
    }
    Ov *o = &l->v[l->n++];
    snprintf(o->text, sizeof o->text, "%s", text);
    o->kn = kn;
    o->vn = vn;
    return 0;
}

static int ov_add(BL *L, OvList *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn) {
    char t[sizeof ((Ov *)0)->text];
    snprintf(t, sizeof t, "%s=%s", key, bl_scalar(vn));
    return ov_push(L, l, t, kn, vn);
}

/* Flatten a `set` mapping (dotted keys and/or nested sections). */
static int flatten(BL *L, const yaml_node_t *map, const char *prefix, const char *where, OvList *l) {
    if (!map || map->type != YAML_MAPPING_NODE)
        return bl_berr(L, map, where, "expected a mapping of config keys, got %s", map ? bl_kind_text(map) : "nothing");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = bl_node(L, p->key), *v = bl_node(L, p->value);
        const char *name = bl_scalar(k);
        if (!name) return bl_berr(L, k, where, "expected a key name, got %s", k ? bl_kind_text(k) : "nothing");
        char full[300];
        snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "." : "", name);
        if (v && v->type == YAML_MAPPING_NODE) {
            if (flatten(L, v, full, where, l)) return -1;
        } else {
            if (!v || v->type != YAML_SCALAR_NODE)
                return bl_berr(L, v, where, "%s: expected a value, got %s", full, v ? bl_kind_text(v) : "nothing");
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
                return bl_berr(L, n, NULL, "%s (%s)", msg + 6 + al + 9, ctx);
            }
        }
    if (strncmp(msg, "config: error: ", 15) == 0) return bl_berr(L, at, NULL, "%s (%s)", msg + 15, ctx);
    snprintf(L->err, L->cap, "%s (%s)", msg, ctx);
    return -1;
}

/* The run config of model `mname` plus a variant's overrides. */
int bl_build_config(BL *L, const yaml_node_t *model_node, const char *mname, const yaml_node_t *vset,
                    const char *extra, const char *vwhere, const yaml_node_t *at, const char *ctx, Config *c) {
    OvList ovs = {0};
    int rc = -1;
    ConfigError e;
    config_defaults(c);
    char where[300];
    snprintf(where, sizeof where, "models.%s", mname);
    if (bl_check_keys(L, model_node, where, (const char *const[]){"config", "set", NULL})) goto out;
    yaml_node_t *cf = bl_get(L, model_node, "config"), *set = bl_get(L, model_node, "set");
    if (cf) {
        char w2[320];
        bl_sub(w2, sizeof w2, where, "config");
        if (bl_want_scalar(L, cf, w2)) goto out;
        char p[2200];
        const char *f = bl_scalar(cf);
        if (f[0] == '/')
            snprintf(p, sizeof p, "%s", f);
        else
            snprintf(p, sizeof p, "%s/%s", L->dir, f);
        if (access(p, R_OK) != 0) {
            char w3[320];
            bl_sub(w3, sizeof w3, where, "config");
            bl_berr(L, cf, w3, "cannot open %s: %s", p, strerror(errno));
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
        bl_sub(w2, sizeof w2, where, "set");
        if (flatten(L, set, "", w2, &ovs)) goto out;
    }
    if (vset && flatten(L, vset, "", vwhere, &ovs)) goto out;
    for (const char *x = extra; x && *x;) { /* a generated variant's "k=v;k=v" (bench_cover.c) */
        const char *semi = strchr(x, ';');
        size_t len = semi ? (size_t)(semi - x) : strlen(x);
        char one[sizeof ((Ov *)0)->text];
        if (len >= sizeof one) {
            bl_berr(L, at, vwhere, "generated override too long (%zu bytes)", len);
            goto out;
        }
        snprintf(one, sizeof one, "%.*s", (int)len, x);
        if (ov_push(L, &ovs, one, at, at)) goto out;
        x = semi ? semi + 1 : x + len;
    }
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

BenchCase *bl_new_case(BL *L, const yaml_node_t *item, int item_index, int kind) {
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
            bl_berr(L, NULL, NULL, "out of memory");
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
int bl_timing(BL *L, const yaml_node_t *map, const char *where, int *reps, int *warm, long *iters,
              double *mt) {
    char w[320];
    yaml_node_t *v;
    if ((v = bl_get(L, map, "repetitions"))) {
        bl_sub(w, sizeof w, where, "repetitions");
        if (bl_parse_int(L, v, w, 1, 100000, reps)) return -1;
    }
    if ((v = bl_get(L, map, "warmup"))) {
        bl_sub(w, sizeof w, where, "warmup");
        if (bl_parse_int(L, v, w, 0, 1000000, warm)) return -1;
    }
    if ((v = bl_get(L, map, "iterations"))) {
        bl_sub(w, sizeof w, where, "iterations");
        if (bl_parse_long(L, v, w, 0, 1000000000L, iters)) return -1;
    }
    if ((v = bl_get(L, map, "min_time"))) {
        bl_sub(w, sizeof w, where, "min_time");
        if (bl_parse_num(L, v, w, 0, 3600, mt)) return -1;
    }
    return 0;
}

/* Apply the item's own timing keys and ceiling to the cases [first, n). */
int bl_finish_item(BL *L, const yaml_node_t *item, const char *where, int first) {
    int reps = L->repetitions, warm = L->warmup;
    long iters = L->iterations;
    double mt = L->min_time;
    if (bl_timing(L, item, where, &reps, &warm, &iters, &mt)) return -1;
    yaml_node_t *ce = bl_get(L, item, "ceiling");
    char w[320];
    bl_sub(w, sizeof w, where, "ceiling");
    for (int i = first; i < L->s->n; i++) {
        BenchCase *c = &L->s->c[i];
        c->repetitions = reps;
        c->warmup = warm;
        c->iterations = iters;
        c->min_time = mt;
        if (ce && c->kind != BK_STEP && c->kind != BK_SGEMM) {
            if (bl_want_scalar(L, ce, w)) return -1;
            L->ceil_name[i] = bl_scalar(ce);
            L->ceil_node[i] = ce;
        }
    }
    return 0;
}

