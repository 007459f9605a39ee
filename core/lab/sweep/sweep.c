/*
 * sweep.c — sweep files: parsing, validation and expansion into runs (see
 * sweep.h).
 *
 * Sweep file format
 * -----------------
 * A sweep is a YAML mapping with these keys:
 *
 *   name: smoke                      # required; names the sweep in the store
 *   base: tiny.yaml                  # required; a run config, relative to the sweep file
 *   set:                             # optional; overrides applied to every run
 *     data.corpus: synthetic         #   (dotted keys, or nested sections as in run files)
 *     train: {steps: 10}
 *
 *   # then EITHER named variants ...
 *   variants:
 *     - label: baseline              # required, unique
 *     - label: G1-headwise
 *       set: {model.gate.position: sdpa, model.gate.granularity: headwise}
 *
 *   # ... OR a grid / zip over config keys
 *   method: grid                     # grid (cartesian product) or zip (lists side by side)
 *   parameters:
 *     model.gate.position: {values: [sdpa, value]}
 *     model.gate.granularity: {values: [elementwise, headwise]}
 *     train.lr: {value: 1e-3}        # a constant: applied to every point, not in labels
 *
 *   seeds: [1, 2]                    # optional; each row runs once per seed (sets train.seed)
 *   run_name: "{sweep}-{label}-s{seed}"   # optional; this is the default
 *   baseline: baseline               # optional; the label every delta is computed against
 *
 * Rows.  Variants are rows in file order.  A grid's rows are the cartesian
 * product of the `values` lists in key order, the last key varying fastest
 * (as nested loops written in file order); a zip's row i takes element i of
 * every list, and all lists must have the same length.  A grid or zip row's
 * label is "leaf=value" for each swept key (constants excluded), joined by
 * ","; the leaf is the key's last component ("position=sdpa"), or the whole
 * key when two swept keys share a last component.  With only constants the
 * single row is labelled "base".
 *
 * Runs.  Run i is (row, seed) with rows in order and seeds innermost:
 * row 0 seed 0, row 0 seed 1, ..., row 1 seed 0, ...  Without `seeds` each
 * row runs once with the seed of the base config (after overrides).  A run's
 * configuration is: schema defaults, the base file, then the overrides in
 * this order: sweep `set` (file order), the row's overrides (file order; a
 * grid/zip row's in parameter order), then train.seed=SEED.  A key set twice
 * takes the later value.  train.seed may not be set in `set`, a variant or
 * `parameters` when the sweep has `seeds`.
 *
 * run_name.  Placeholders: {sweep} (name), {label}, {seed}, {index} (the
 * run's 0-based position) and {KEY} for any config key, replaced by its
 * resolved value ({model.gate.position} -> sdpa).  Names must be unique
 * within the sweep.
 *
 * Text values.  In the value of a text key (train.init_from: the run whose
 * weights a continued-training run starts from), {sweep}, {label} and
 * {seed} are replaced by this run's, so each row and seed continues its own
 * parent:  set: {train.init_from: "long_context-{label}-s{seed}"}.
 *
 * Validation, all before anything runs: unknown keys (with a did-you-mean),
 * duplicate keys, values of the wrong type or out of range (parsed by
 * config_set, exactly as run files and --set are), missing name or base,
 * both variants and method/parameters, an unreadable base, empty lists,
 * unequal zip lists, duplicate labels or seeds, a baseline naming no row,
 * unknown run_name placeholders, two runs with the same name, two rows with
 * the same resolved configuration (same run id), and every run's
 * config_resolve (so a grid point such as position=dense with
 * granularity=headwise is reported with the file position of the override
 * at fault and the run it occurs in).  Messages read
 * "FILE:LINE:COL: error: KEY: reason".
 */
#include "lab/sweep/sweep_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "run/store.h"
#include "util/json.h"
#include "run/yamlfile.h"

const char *const sweep_method_names[] = {"variants", "grid", "zip", NULL};


/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */


/* "PATH:LINE:COL: error: KEY: reason" (no "KEY: " when key is NULL). */
int sw_perr(P *p, int line, int col, const char *key, const char *fmt, ...) {
    char why[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (key)
        return config_fail(p->err, "%s:%d:%d: error: %s: %s", p->path, line, col, key, why);
    return config_fail(p->err, "%s:%d:%d: error: %s", p->path, line, col, why);
}

int sw_nline(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }
int sw_ncol(const yaml_node_t *n) { return (int)n->start_mark.column + 1; }


int sw_oom(P *p) { return config_fail(p->err, "%s: error: out of memory", p->path); }

char *sw_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

const char *sw_node_kind(const yaml_node_t *n) {
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a value";
}

/* A YAML null written as a scalar: empty, ~ or null (plain style). */
int sw_is_null(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = (const char *)n->data.scalar.value;
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

const char *sw_scalar(const yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* What a node is, for "got ..." in messages: a scalar quoted, else its kind. */
const char *sw_got(const yaml_node_t *n, char *buf, size_t cap) {
    if (n->type != YAML_SCALAR_NODE)
        return sw_node_kind(n);
    char q[300];
    config_quote(sw_scalar(n), q, sizeof q);
    snprintf(buf, cap, "\"%s\"", q);
    return buf;
}

/* "unknown key" plus " (did you mean X?)" for the nearest of names within 3 edits. */
void sw_unknown_among(const char *key, const char *const *names, char *why, size_t cap) {
    const char *best = NULL;
    int bestd = 4;
    for (int i = 0; names[i]; i++) {
        int d = config_edit_distance(key, names[i]);
        if (d < bestd)
            best = names[i], bestd = d;
    }
    if (best)
        snprintf(why, cap, "unknown key (did you mean %s?)", best);
    else
        snprintf(why, cap, "unknown key");
}


static void buf_add(Buf *b, const char *s, size_t n) {
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *nb = realloc(b->b, cap);
        if (!nb) {
            b->oom = 1;
            return;
        }
        b->b = nb;
        b->cap = cap;
    }
    memcpy(b->b + b->n, s, n);
    b->n += n;
    b->b[b->n] = '\0';
}
void sw_buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Take the string out of b (NULL if out of memory; b is reset). */
char *sw_buf_take(Buf *b) {
    char *s = b->oom ? NULL : b->b ? b->b : sw_xstrdup("");
    if (b->oom)
        free(b->b);
    b->b = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
    return s;
}

static char *join_kv(const char *key, const char *val) {
    Buf b = {0};
    sw_buf_str(&b, key);
    sw_buf_str(&b, "=");
    sw_buf_str(&b, val);
    return sw_buf_take(&b);
}

void sw_ov_free(OvList *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].text);
        free(l->v[i].key);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Append a (validated) override. */
int sw_ov_push(P *p, OvList *l, const char *key, const char *val, int kl, int kc, int vl, int vc) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        Ov *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return sw_oom(p);
        l->v = v;
        l->cap = cap;
    }
    Ov o = {join_kv(key, val), sw_xstrdup(key), kl, kc, vl, vc};
    if (!o.text || !o.key) {
        free(o.text);
        free(o.key);
        return sw_oom(p);
    }
    l->v[l->n++] = o;
    return 0;
}

/* The part of a config_set message after "--set ASSIGNMENT: error: ". */
static const char *set_reason(const char *msg, const char *assignment) {
    size_t al = strlen(assignment);
    if (strncmp(msg, "--set ", 6) == 0 && strncmp(msg + 6, assignment, al) == 0 &&
        strncmp(msg + 6 + al, ": error: ", 9) == 0)
        return msg + 6 + al + 9;
    return msg;
}

/* Check one override key=val with config_set (the schema's own parser).
 * An unknown key is reported at (kl, kc), a bad value at (vl, vc). */
int sw_check_override(P *p, const char *key, const char *val, int kl, int kc, int vl, int vc) {
    if (strchr(key, '='))
        return sw_perr(p, kl, kc, key, "unknown key");
    char *a = join_kv(key, val);
    if (!a)
        return sw_oom(p);
    ConfigError e;
    int rc = 0;
    if (config_set(&p->scratch, a, &e) != 0) {
        const char *why = set_reason(e.msg, a);
        int at_key = config_find(key) == NULL;
        size_t kn = strlen(key);
        if (strncmp(why, key, kn) == 0 && why[kn] == ':' && why[kn + 1] == ' ')
            rc = sw_perr(p, at_key ? kl : vl, at_key ? kc : vc, NULL, "%s", why);
        else
            rc = sw_perr(p, at_key ? kl : vl, at_key ? kc : vc, key, "%s", why);
    }
    free(a);
    return rc;
}

/* Duplicate names among the scalar keys of one mapping, before pair p. */
int sw_dup_in_mapping(P *p, yaml_node_t *map, yaml_node_pair_t *pair, const char *name, const char *full) {
    for (yaml_node_pair_t *e = map->data.mapping.pairs.start; e < pair; e++) {
        yaml_node_t *ek = yaml_document_get_node(p->doc, e->key);
        if (ek && ek->type == YAML_SCALAR_NODE && strcmp((const char *)ek->data.scalar.value, name) == 0) {
            yaml_node_t *kn = yaml_document_get_node(p->doc, pair->key);
            return PERR_NODE(p, kn, full, "duplicate key (first set at line %d)", sw_nline(ek));
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* runs                                                                */
/* ------------------------------------------------------------------ */

/* Append the value of config key `key` in c to b as the stored JSON has it,
 * unquoted: c is written by config_to_json and its pairs read back one by
 * one as config_from_json reads them (json_unquote for keys and strings,
 * a bare value up to the next ',' or '}'), so a string holding a comma, a
 * quote or an escape comes out whole and decoded.  A key the JSON leaves
 * out (one added later, at its default: ConfigKey.omit_default) gives the
 * schema's default.  0, or -1 out of memory. */
static int config_value_text(const Config *c, const char *key, Buf *b) {
    int n = config_to_json(c, NULL, 0);
    char *json = malloc((size_t)n + 1), *val = malloc((size_t)n + 1);
    if (!json || !val) {
        free(json);
        free(val);
        return -1;
    }
    config_to_json(c, json, (size_t)n + 1);
    int found = 0;
    const char *s = json + (*json == '{');
    while (s && *s && *s != '}' && !found) {
        char k[256];
        if (*s == ',')
            s++;
        if (!(s = json_unquote(s, k, sizeof k)) || *s++ != ':')
            break;
        if (*s == '"') {
            s = json_unquote(s, val, (size_t)n + 1);
        } else {
            size_t l = strcspn(s, ",}");
            memcpy(val, s, l);
            val[l] = '\0';
            s += l;
        }
        found = s && strcmp(k, key) == 0;
    }
    const ConfigKey *ck = config_find(key);
    sw_buf_str(b, found ? val : ck ? ck->def : "");
    free(json);
    free(val);
    return 0;
}

/* Check a run_name template: "{...}" placeholders must be known. */
static int check_template(P *p, const char *t, int line, int col) {
    for (const char *s = t; *s; s++) {
        if (*s != '{')
            continue;
        const char *e = strchr(s, '}');
        if (!e)
            return sw_perr(p, line, col, "run_name", "unclosed { in \"%s\"", t);
        char ph[256];
        snprintf(ph, sizeof ph, "%.*s", (int)(e - s - 1), s + 1);
        if (strcmp(ph, "sweep") && strcmp(ph, "label") && strcmp(ph, "seed") && strcmp(ph, "index") &&
            !config_find(ph)) {
            /* config_set's did-you-mean for config keys */
            char *a = join_kv(ph, "");
            if (!a)
                return sw_oom(p);
            ConfigError e2;
            char sugg[300] = "";
            if (config_set(&p->scratch, a, &e2) != 0) {
                const char *m = strstr(e2.msg, "(did you mean ");
                if (m) {
                    const char *q = m + 14, *qe = strchr(q, '?');
                    if (qe)
                        snprintf(sugg, sizeof sugg, " (did you mean {%.*s}?)", (int)(qe - q), q);
                }
            }
            free(a);
            return sw_perr(p, line, col, "run_name",
                        "unknown placeholder {%s}%s; use {sweep}, {label}, {seed}, {index} or a config key", ph,
                        sugg);
        }
        s = e;
    }
    return 0;
}

static char *format_name(const char *t, const Sweep *s, const SweepRun *r) {
    Buf b = {0};
    for (const char *c = t; *c; c++) {
        const char *e = *c == '{' ? strchr(c, '}') : NULL;
        if (!e) {
            buf_add(&b, c, 1);
            continue;
        }
        char ph[256], val[128];
        snprintf(ph, sizeof ph, "%.*s", (int)(e - c - 1), c + 1);
        if (strcmp(ph, "sweep") == 0)
            sw_buf_str(&b, s->name);
        else if (strcmp(ph, "label") == 0)
            sw_buf_str(&b, r->label);
        else if (strcmp(ph, "seed") == 0) {
            snprintf(val, sizeof val, "%lld", r->seed);
            sw_buf_str(&b, val);
        } else if (strcmp(ph, "index") == 0) {
            snprintf(val, sizeof val, "%d", r->index);
            sw_buf_str(&b, val);
        } else if (config_value_text(&r->config, ph, &b)) {
            free(b.b);
            return NULL;
        }
        c = e;
    }
    return sw_buf_take(&b);
}

/* Point a config_resolve / config_set message at the sweep file: an
 * override's "--set A" origin becomes the place A is written; a schema
 * default's "config" origin becomes the row; a base-file origin stays. */
static int resolve_error(P *p, const char *msg, Ov **ovs, int nov, const Row *row, int index, long long seed) {
    char ctx[400], q[300];
    config_quote(row->label, q, sizeof q);
    snprintf(ctx, sizeof ctx, " (run %d: %s, seed %lld)", index, q, seed);
    if (strncmp(msg, "--set ", 6) == 0)
        for (int i = nov - 1; i >= 0; i--) {
            size_t al = strlen(ovs[i]->text);
            if (strncmp(msg + 6, ovs[i]->text, al) == 0 && strncmp(msg + 6 + al, ": error: ", 9) == 0)
                return sw_perr(p, ovs[i]->vl, ovs[i]->vc, NULL, "%s%s", msg + 6 + al + 9, ctx);
        }
    if (strncmp(msg, "config: error: ", 15) == 0)
        return sw_perr(p, row->line, row->col, NULL, "%s%s", msg + 15, ctx);
    char keep[sizeof p->err->msg];
    snprintf(keep, sizeof keep, "%s", msg);
    return config_fail(p->err, "%s%s", keep, ctx);
}

/* An override of a text key (train.init_from) may name another run of a
 * sweep: {sweep}, {label} and {seed} in its value are replaced by this
 * run's.  Other overrides are copied as they are.  NULL when out of memory. */
static char *expand_override(const char *text, const Sweep *s, const char *label, long long seed) {
    const char *eq = strchr(text, '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - text) : 0, text);
    const ConfigKey *k = config_find(key);
    if (!eq || !k || k->type != CT_STRING || !strchr(eq, '{'))
        return sw_xstrdup(text);
    Buf b = {0};
    for (const char *c = text; *c; c++) {
        char num[32];
        if (strncmp(c, "{sweep}", 7) == 0)
            sw_buf_str(&b, s->name), c += 6;
        else if (strncmp(c, "{label}", 7) == 0)
            sw_buf_str(&b, label), c += 6;
        else if (strncmp(c, "{seed}", 6) == 0)
            snprintf(num, sizeof num, "%lld", seed), sw_buf_str(&b, num), c += 5;
        else
            buf_add(&b, c, 1);
    }
    return sw_buf_take(&b);
}

/* Build run r from row (and seed_ov, or NULL): overrides, resolved config,
 * run id. */
static int build_run(P *p, Sweep *s, const OvList *set, const Row *row, Ov *seed_ov, SweepRun *r) {
    int nov = set->n + row->ov.n + (seed_ov != NULL);
    Ov **ovs = malloc((size_t)(nov ? nov : 1) * sizeof *ovs);
    r->overrides = calloc((size_t)(nov ? nov : 1), sizeof *r->overrides);
    r->label = sw_xstrdup(row->label);
    if (!ovs || !r->overrides || !r->label) {
        free(ovs);
        return sw_oom(p);
    }
    int k = 0;
    for (int i = 0; i < set->n; i++)
        ovs[k++] = &set->v[i];
    for (int i = 0; i < row->ov.n; i++)
        ovs[k++] = &row->ov.v[i];
    if (seed_ov)
        ovs[k++] = seed_ov;
    ConfigError e;
    Config *c = &r->config;
    config_defaults(c);
    int rc = 0;
    if (config_load_file(c, s->base, &e) != 0) {
        rc = config_fail(p->err, "%s", e.msg);
    } else {
        long long seed = seed_ov ? strtoll(strchr(seed_ov->text, '=') + 1, NULL, 10) : (long long)c->seed;
        for (int i = 0; i < nov; i++) {
            r->overrides[i] = expand_override(ovs[i]->text, s, row->label, seed);
            if (!r->overrides[i]) {
                free(ovs);
                return sw_oom(p);
            }
            r->noverrides++;
        }
        for (int i = 0; i < nov && rc == 0; i++)
            if (config_set(c, r->overrides[i], &e) != 0)
                rc = resolve_error(p, e.msg, ovs, nov, row, r->index, c->seed);
        if (rc == 0 && config_resolve(c, &e) != 0)
            rc = resolve_error(p, e.msg, ovs, nov, row, r->index, c->seed);
    }
    free(ovs);
    if (rc)
        return -1;
    r->seed = (long long)c->seed;
    char *json = store_config_json(c, r->run_id);
    if (!json)
        return sw_oom(p);
    free(json);
    return 0;
}

static const SweepRun *cmp_runs_base;
static int cmp_by_id(const void *a, const void *b) {
    const SweepRun *x = &cmp_runs_base[*(const int *)a], *y = &cmp_runs_base[*(const int *)b];
    int c = strcmp(x->run_id, y->run_id);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}
static int cmp_by_name(const void *a, const void *b) {
    const SweepRun *x = &cmp_runs_base[*(const int *)a], *y = &cmp_runs_base[*(const int *)b];
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* ------------------------------------------------------------------ */
/* the file                                                            */
/* ------------------------------------------------------------------ */

/* base relative to the directory of the sweep file (absolute kept). */
static char *base_path(const char *sweep_path, const char *base) {
    const char *slash = strrchr(sweep_path, '/');
    Buf b = {0};
    if (base[0] != '/' && slash)
        buf_add(&b, sweep_path, (size_t)(slash - sweep_path) + 1);
    sw_buf_str(&b, base);
    return sw_buf_take(&b);
}

typedef struct {
    yaml_node_t *name, *base, *method, *parameters, *variants, *seeds, *run_name, *baseline, *set;
    yaml_node_t *kmethod, *kparameters, *kvariants; /* key nodes, for conflict errors */
} Top;

/* What load_doc builds on the way to the runs, freed by doc_free. */
typedef struct {
    yaml_node_t *root;
    Top t;
    OvList set;       /* the sweep's `set` */
    Row *rows;        /* variants, or grid / zip points */
    int nrows;
    Param *ps;        /* a grid's or zip's parameters */
    int np;
    Ov *seeds;        /* train.seed=N overrides, one per seed */
    int nseeds;
    const char *tmpl; /* run_name, and where it is written */
    int tl, tc;
} Doc;

static void doc_free(Doc *d) {
    for (int i = 0; i < d->nseeds; i++) {
        free(d->seeds[i].text);
        free(d->seeds[i].key);
    }
    free(d->seeds);
    sw_params_free(d->ps, d->np);
    sw_rows_free(d->rows, d->nrows);
    sw_ov_free(&d->set);
}

/* The top-level keys into d->t: known, not twice, names and paths
 * non-empty text. */
static int read_top(P *p, Doc *d) {
    static const char *const top_keys[] = {"name",  "base",     "method",   "parameters", "variants",
                                           "seeds", "run_name", "baseline", "set",        NULL};
    yaml_node_t *root = d->root;
    Top *t = &d->t;
    if (!root || sw_is_null(root))
        return config_fail(p->err, "%s:1:1: error: name: required (the file is empty)", p->path);
    if (root->type != YAML_MAPPING_NODE) {
        char g[310];
        return PERR_NODE(p, root, NULL, "expected a mapping of sweep keys at the top level, got %s",
                         sw_got(root, g, sizeof g));
    }
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = yaml_document_get_node(p->doc, pr->key);
        yaml_node_t *vn = yaml_document_get_node(p->doc, pr->value);
        if (!kn || !vn)
            return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
        if (kn->type != YAML_SCALAR_NODE)
            return PERR_NODE(p, kn, NULL, "expected a key name, got %s", sw_node_kind(kn));
        const char *k = sw_scalar(kn);
        if (sw_dup_in_mapping(p, root, pr, k, k))
            return -1;
        yaml_node_t **slot = strcmp(k, "name") == 0         ? &t->name
                             : strcmp(k, "base") == 0       ? &t->base
                             : strcmp(k, "method") == 0     ? &t->method
                             : strcmp(k, "parameters") == 0 ? &t->parameters
                             : strcmp(k, "variants") == 0   ? &t->variants
                             : strcmp(k, "seeds") == 0      ? &t->seeds
                             : strcmp(k, "run_name") == 0   ? &t->run_name
                             : strcmp(k, "baseline") == 0   ? &t->baseline
                             : strcmp(k, "set") == 0        ? &t->set
                                                            : NULL;
        if (!slot) {
            char why[200];
            if (config_find(k) || config_is_section(k))
                snprintf(why, sizeof why, "unknown key (config keys go under set:, or in the base file)");
            else
                sw_unknown_among(k, top_keys, why, sizeof why);
            return PERR_NODE(p, kn, k, "%s", why);
        }
        *slot = vn;
        if (slot == &t->method)
            t->kmethod = kn;
        if (slot == &t->parameters)
            t->kparameters = kn;
        if (slot == &t->variants)
            t->kvariants = kn;
        /* scalars that must be non-empty text */
        if (slot == &t->name || slot == &t->base || slot == &t->method || slot == &t->run_name ||
            slot == &t->baseline) {
            if (vn->type != YAML_SCALAR_NODE)
                return PERR_NODE(p, vn, k, "expected a value, got %s", sw_node_kind(vn));
            if (sw_is_null(vn) || !*sw_scalar(vn))
                return PERR_NODE(p, vn, k, "must not be empty");
        }
    }
    return 0;
}

/* Which kind of sweep (variants, grid or zip), its name, and its base file
 * (which must be readable). */
static int read_kind(P *p, Sweep *s, Doc *d) {
    const Top *t = &d->t;
    yaml_node_t *root = d->root;
    if (t->variants && (t->method || t->parameters)) {
        yaml_node_t *other = t->kmethod ? t->kmethod : t->kparameters;
        yaml_node_t *later = sw_nline(t->kvariants) > sw_nline(other) ||
                                     (sw_nline(t->kvariants) == sw_nline(other) && sw_ncol(t->kvariants) > sw_ncol(other))
                                 ? t->kvariants
                                 : other;
        return PERR_NODE(p, later, sw_scalar(later), "a sweep has either variants or method with parameters, not both");
    }
    if (!t->name)
        return sw_perr(p, sw_nline(root), sw_ncol(root), "name", "required (names the sweep in the results store)");
    if (!t->base)
        return sw_perr(p, sw_nline(root), sw_ncol(root), "base", "required (a run config, relative to the sweep file)");
    if (t->method && !t->parameters)
        return PERR_NODE(p, t->kmethod, "parameters", "required with method (config keys with {values: [...]})");
    if (t->parameters && !t->method)
        return PERR_NODE(p, t->kparameters, "method", "required with parameters (grid or zip)");
    if (!t->variants && !t->method)
        return sw_perr(p, sw_nline(root), sw_ncol(root), NULL,
                    "expected variants (a list of {label, set}), or method (grid or zip) with parameters");
    s->method = SWEEP_VARIANTS;
    if (t->method) {
        const char *m = sw_scalar(t->method);
        if (strcmp(m, "grid") == 0)
            s->method = SWEEP_GRID;
        else if (strcmp(m, "zip") == 0)
            s->method = SWEEP_ZIP;
        else {
            char q[300];
            config_quote(m, q, sizeof q);
            return PERR_NODE(p, t->method, "method", "expected grid or zip, got \"%s\"", q);
        }
    }
    if (sw_check_name(p, t->name, "name", sw_scalar(t->name)))
        return -1;
    s->name = sw_xstrdup(sw_scalar(t->name));
    s->base = base_path(p->path, sw_scalar(t->base));
    if (!s->name || !s->base)
        return sw_oom(p);
    struct stat st;
    int se = stat(s->base, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (!se && access(s->base, R_OK) != 0)
        se = errno;
    if (se)
        return PERR_NODE(p, t->base, "base", "cannot open %s: %s", s->base, strerror(se));
    return 0;
}

/* Items in a YAML list node. */
static long long seq_len(const yaml_node_t *n) {
    return (long long)(n->data.sequence.items.top - n->data.sequence.items.start);
}

/* The run count as the sizes of the lists give it, before any item is read
 * or any run built: a sweep over SWEEP_MAX_RUNS is refused at once (one of
 * 300,000 seeds took minutes to be refused after every run was built).
 * Lists whose shape is wrong count 1 here; reading them says why. */
static int check_size(P *p, const Sweep *s, Doc *d) {
    const Top *t = &d->t;
    long long rows = 1, seeds = t->seeds && t->seeds->type == YAML_SEQUENCE_NODE ? seq_len(t->seeds) : 1;
    int zip_first = 1;
    if (t->variants && t->variants->type == YAML_SEQUENCE_NODE)
        rows = seq_len(t->variants);
    else if (t->parameters && t->parameters->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *pr = t->parameters->data.mapping.pairs.start;
             pr < t->parameters->data.mapping.pairs.top && rows <= SWEEP_MAX_RUNS; pr++) {
            yaml_node_t *spec = yaml_document_get_node(p->doc, pr->value);
            for (yaml_node_pair_t *sp = spec && spec->type == YAML_MAPPING_NODE ? spec->data.mapping.pairs.start : NULL;
                 sp && sp < spec->data.mapping.pairs.top; sp++) {
                yaml_node_t *k = yaml_document_get_node(p->doc, sp->key);
                yaml_node_t *v = yaml_document_get_node(p->doc, sp->value);
                if (!k || !v || k->type != YAML_SCALAR_NODE || strcmp(sw_scalar(k), "values") != 0 ||
                    v->type != YAML_SEQUENCE_NODE)
                    continue;
                if (s->method != SWEEP_ZIP)
                    rows *= seq_len(v) > 0 ? seq_len(v) : 1;
                else if (zip_first)
                    rows = seq_len(v), zip_first = 0;
            }
        }
    /* (rows stops growing past the limit, so the product cannot overflow) */
    if (rows > SWEEP_MAX_RUNS)
        return sw_perr(p, sw_nline(d->root), sw_ncol(d->root), NULL, "the sweep has more than %d runs",
                       SWEEP_MAX_RUNS);
    if (rows * seeds > SWEEP_MAX_RUNS)
        return sw_perr(p, sw_nline(d->root), sw_ncol(d->root), NULL, "the sweep has %lld runs, more than %d",
                       rows * seeds, SWEEP_MAX_RUNS);
    return 0;
}

/* The sweep's `set`, then its rows: variants, or a grid's / zip's points. */
static int read_rows(P *p, Sweep *s, Doc *d) {
    const Top *t = &d->t;
    if (t->set && sw_parse_set_node(p, t->set, &d->set, "set"))
        return -1;
    if (t->variants) {
        if (t->variants->type != YAML_SEQUENCE_NODE)
            return PERR_NODE(p, t->variants, "variants", "expected a list of {label: NAME, set: {...}}, got %s",
                             sw_node_kind(t->variants));
        return sw_parse_variants(p, t->variants, &d->rows, &d->nrows);
    }
    if (t->parameters->type != YAML_MAPPING_NODE)
        return PERR_NODE(p, t->parameters, "parameters", "expected a mapping of config keys to {values: [...]}, got %s",
                         sw_node_kind(t->parameters));
    if (sw_parse_parameters(p, t->parameters, &d->ps, &d->np) ||
        sw_expand_params(p, d->ps, d->np, s->method == SWEEP_ZIP, sw_nline(t->kparameters), sw_ncol(t->kparameters), &d->rows,
                      &d->nrows))
        return -1;
    return 0;
}

/* Seed item it, read by the schema's train.seed parser (reported as
 * seeds), appended to d->seeds unless it repeats one. */
static int read_seed(P *p, Doc *d, yaml_node_t *it) {
    if (!it)
        return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
    if (it->type != YAML_SCALAR_NODE)
        return PERR_NODE(p, it, "seeds", "expected an integer, got %s", sw_node_kind(it));
    char *a = join_kv("train.seed", sw_scalar(it));
    if (!a)
        return sw_oom(p);
    ConfigError e;
    if (config_set(&p->scratch, a, &e) != 0) {
        const char *why = set_reason(e.msg, a);
        if (strncmp(why, "train.seed: ", 12) == 0)
            why += 12;
        int rc = PERR_NODE(p, it, "seeds", "%s", why);
        free(a);
        return rc;
    }
    free(a);
    long long seed = (long long)p->scratch.seed;
    char val[32];
    snprintf(val, sizeof val, "%lld", seed);
    Ov *o = &d->seeds[d->nseeds++];
    o->text = join_kv("train.seed", val);
    o->key = sw_xstrdup("train.seed");
    o->kl = o->vl = sw_nline(it);
    o->kc = o->vc = sw_ncol(it);
    if (!o->text || !o->key)
        return sw_oom(p);
    return 0;
}

/* `seeds`: a list of distinct integers; then train.seed is theirs to set
 * (not in `set` or a row). */
static int read_seeds(P *p, Doc *d) {
    yaml_node_t *seeds = d->t.seeds;
    if (!seeds)
        return 0;
    if (seeds->type != YAML_SEQUENCE_NODE) {
        char g[310];
        return PERR_NODE(p, seeds, "seeds", "expected a list of integers, got %s", sw_got(seeds, g, sizeof g));
    }
    int n = (int)(seeds->data.sequence.items.top - seeds->data.sequence.items.start);
    if (n == 0)
        return PERR_NODE(p, seeds, "seeds", "empty list (leave seeds out to use the base config's seed)");
    d->seeds = calloc((size_t)n, sizeof *d->seeds);
    if (!d->seeds)
        return sw_oom(p);
    for (int i = 0; i < n; i++)
        if (read_seed(p, d, yaml_document_get_node(p->doc, seeds->data.sequence.items.start[i])))
            return -1;
    /* the same seed twice: the texts are "train.seed=N" with N as %lld writes it */
    char **texts = malloc((size_t)(n > 0 ? n : 1) * sizeof *texts);
    if (!texts)
        return sw_oom(p);
    for (int i = 0; i < n; i++)
        texts[i] = d->seeds[i].text;
    int j, i, dup = sw_first_dup(texts, n, &j, &i);
    free(texts);
    if (dup < 0)
        return sw_oom(p);
    if (dup)
        return sw_perr(p, d->seeds[i].vl, d->seeds[i].vc, "seeds", "duplicate seed %s (also at line %d)",
                       d->seeds[i].text + strlen("train.seed="), d->seeds[j].vl);
    for (int r = -1; r < d->nrows; r++) {
        const OvList *l = r < 0 ? &d->set : &d->rows[r].ov;
        for (int i = 0; i < l->n; i++)
            if (strcmp(l->v[i].key, "train.seed") == 0)
                return sw_perr(p, l->v[i].kl, l->v[i].kc, "train.seed",
                            "set by seeds (line %d); remove it here, or drop seeds", sw_nline(seeds));
    }
    return 0;
}

/* `baseline` must name a row. */
static int read_baseline(P *p, Sweep *s, Doc *d) {
    if (!d->t.baseline)
        return 0;
    const char *b = sw_scalar(d->t.baseline);
    int found = 0;
    for (int r = 0; r < d->nrows && !found; r++)
        found = strcmp(d->rows[r].label, b) == 0;
    if (!found) {
        char q[300];
        Buf lb = {0};
        config_quote(b, q, sizeof q);
        for (int r = 0; r < d->nrows && r < 8; r++) {
            char ql[300];
            config_quote(d->rows[r].label, ql, sizeof ql);
            if (r)
                sw_buf_str(&lb, ", ");
            sw_buf_str(&lb, ql);
        }
        if (d->nrows > 8)
            sw_buf_str(&lb, ", ...");
        char *labels = sw_buf_take(&lb);
        if (!labels)
            return sw_oom(p);
        PERR_NODE(p, d->t.baseline, "baseline", "no %s labelled \"%s\" (labels: %s)",
                  s->method == SWEEP_VARIANTS ? "variant" : "row", q, labels);
        free(labels);
        return -1;
    }
    s->baseline = sw_xstrdup(b);
    return s->baseline ? 0 : sw_oom(p);
}

/* Every (row, seed) as a run, resolved. */
static int expand_runs(P *p, Sweep *s, Doc *d) {
    long long nruns = (long long)d->nrows * (d->nseeds ? d->nseeds : 1);
    if (nruns > SWEEP_MAX_RUNS)
        return sw_perr(p, sw_nline(d->root), sw_ncol(d->root), NULL, "the sweep has %lld runs, more than %d", nruns,
                    SWEEP_MAX_RUNS);
    s->runs = calloc((size_t)nruns, sizeof *s->runs);
    if (!s->runs)
        return sw_oom(p);
    s->nrows = d->nrows;
    s->nseeds = d->nseeds;
    for (int r = 0; r < d->nrows; r++)
        for (int k = 0; k < (d->nseeds ? d->nseeds : 1); k++) {
            SweepRun *run = &s->runs[s->nruns];
            run->index = s->nruns;
            run->row = r;
            s->nruns++; /* counted before filling, so sweep_free frees a partial run */
            if (build_run(p, s, &d->set, &d->rows[r], d->nseeds ? &d->seeds[k] : NULL, run))
                return -1;
            run->is_baseline = s->baseline && strcmp(d->rows[r].label, s->baseline) == 0;
        }
    return 0;
}

/* Each run's name from the template (which needs every run's config for
 * {key} placeholders): not empty, printable. */
static int name_runs(P *p, Sweep *s, const Doc *d) {
    for (int i = 0; i < s->nruns; i++) {
        SweepRun *run = &s->runs[i];
        run->name = format_name(d->tmpl, s, run);
        if (!run->name)
            return sw_oom(p);
        if (!*run->name)
            return sw_perr(p, d->tl, d->tc, "run_name", "run %d gets an empty name", i);
        char why[200], q[400];
        if (sw_name_ok(run->name, SWEEP_RUN_NAME_MAX, why, sizeof why))
            return sw_perr(p, d->tl, d->tc, "run_name", "run %d gets the name \"%s\", which %s", i,
                        sw_quote_name(run->name, q, sizeof q), why);
    }
    return 0;
}

/* No two runs with the same name, or the same configuration (run id). */
static int check_distinct(P *p, Sweep *s, const Doc *d) {
    int *order = malloc((size_t)s->nruns * sizeof *order);
    if (!order)
        return sw_oom(p);
    int rc = 0;
    cmp_runs_base = s->runs;
    for (int i = 0; i < s->nruns; i++)
        order[i] = i;
    qsort(order, (size_t)s->nruns, sizeof *order, cmp_by_name);
    for (int i = 1; i < s->nruns && rc == 0; i++) {
        const SweepRun *a = &s->runs[order[i - 1]], *b = &s->runs[order[i]];
        if (strcmp(a->name, b->name) == 0) {
            char q[300];
            config_quote(a->name, q, sizeof q);
            rc = sw_perr(p, d->tl, d->tc, "run_name",
                      "runs %d and %d are both named \"%s\" (use {label}, {seed} or {index})", a->index, b->index, q);
        }
    }
    if (rc == 0)
        qsort(order, (size_t)s->nruns, sizeof *order, cmp_by_id);
    for (int i = 1; i < s->nruns && rc == 0; i++) {
        const SweepRun *a = &s->runs[order[i - 1]], *b = &s->runs[order[i]];
        if (strcmp(a->run_id, b->run_id) == 0) {
            const Row *rb = &d->rows[b->row];
            char qa[300], qb[300];
            config_quote(a->label, qa, sizeof qa);
            config_quote(b->label, qb, sizeof qb);
            rc = sw_perr(p, rb->line, rb->col, rb->where,
                      "\"%s\" resolves to the same configuration as \"%s\" (run id %s); each configuration runs once",
                      qb, qa, a->run_id);
        }
    }
    free(order);
    return rc;
}

static int load_doc(P *p, Sweep *s, yaml_node_t *root) {
    Doc d;
    memset(&d, 0, sizeof d);
    d.root = root;
    int rc = read_top(p, &d);
    if (rc == 0)
        rc = read_kind(p, s, &d);
    if (rc == 0)
        rc = check_size(p, s, &d);
    if (rc == 0)
        rc = read_rows(p, s, &d);
    if (rc == 0)
        rc = read_seeds(p, &d);
    if (rc == 0)
        rc = read_baseline(p, s, &d);
    if (rc == 0) {
        d.tmpl = d.t.run_name ? sw_scalar(d.t.run_name) : "{sweep}-{label}-s{seed}";
        d.tl = d.t.run_name ? sw_nline(d.t.run_name) : sw_nline(root);
        d.tc = d.t.run_name ? sw_ncol(d.t.run_name) : sw_ncol(root);
        rc = check_template(p, d.tmpl, d.tl, d.tc);
    }
    if (rc == 0)
        rc = expand_runs(p, s, &d);
    if (rc == 0)
        rc = name_runs(p, s, &d);
    if (rc == 0)
        rc = check_distinct(p, s, &d);
    doc_free(&d);
    return rc ? -1 : 0;
}

int sweep_load(Sweep *s, const char *path, ConfigError *err) {
    memset(s, 0, sizeof *s);
    P p;
    memset(&p, 0, sizeof p);
    p.path = path;
    p.err = err;
    config_defaults(&p.scratch);

    yaml_document_t doc;
    if (yaml_file_load(path, "a sweep file", &doc, err))
        return -1;
    int rc = -1;
    s->path = sw_xstrdup(path);
    if (!s->path) {
        config_fail(err, "%s: error: out of memory", path);
    } else {
        p.doc = &doc;
        rc = load_doc(&p, s, yaml_document_get_root_node(&doc));
    }
    yaml_document_delete(&doc);
    if (rc)
        sweep_free(s);
    return rc;
}

void sweep_free(Sweep *s) {
    if (!s)
        return;
    for (int i = 0; s->runs && i < s->nruns; i++) {
        SweepRun *r = &s->runs[i];
        free(r->label);
        free(r->name);
        for (int k = 0; r->overrides && k < r->noverrides; k++)
            free(r->overrides[k]);
        free(r->overrides);
    }
    free(s->runs);
    free(s->path);
    free(s->name);
    free(s->base);
    free(s->baseline);
    memset(s, 0, sizeof *s);
}
