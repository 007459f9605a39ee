/*
 * sweep_rows.c — the rows of a sweep (see sweep.c for the file format):
 * override mappings (`set`, a variant's `set`), the `variants` list, and
 * `parameters` expanded by grid or zip into rows.  Every override is
 * validated with config_set as it is read, with the file position of the
 * key at fault.
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

/* ------------------------------------------------------------------ */
/* override mappings (`set`, a variant's `set`)                        */
/* ------------------------------------------------------------------ */

/* Flatten a mapping of config keys (dotted, or nested sections as in run
 * files) into l, validating each override.  what names the mapping in
 * structural errors ("set", "variants[1].set"). */
static int walk_set(P *p, yaml_node_t *map, const char *prefix, OvList *l, const char *what) {
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = yaml_document_get_node(p->doc, pr->key);
        yaml_node_t *vn = yaml_document_get_node(p->doc, pr->value);
        if (!kn || !vn)
            return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
        if (kn->type != YAML_SCALAR_NODE)
            return PERR_NODE(p, kn, *prefix ? prefix : what, "expected a key name, got %s", sw_node_kind(kn));
        const char *name = sw_scalar(kn);
        Buf fb = {0};
        if (*prefix) {
            sw_buf_str(&fb, prefix);
            sw_buf_str(&fb, ".");
        }
        sw_buf_str(&fb, name);
        char *full = sw_buf_take(&fb);
        if (!full)
            return sw_oom(p);
        int rc = sw_dup_in_mapping(p, map, pr, name, full);
        /* the same key written twice in different forms (model.n_head and model: {n_head}) */
        for (int i = 0; rc == 0 && i < l->n; i++)
            if (strcmp(l->v[i].key, full) == 0)
                rc = PERR_NODE(p, kn, full, "duplicate key (first set at line %d)", l->v[i].kl);
        if (rc == 0) {
            if (config_find(full)) {
                if (vn->type != YAML_SCALAR_NODE)
                    rc = PERR_NODE(p, vn, full, "expected a value, got %s", sw_node_kind(vn));
                else if (sw_check_override(p, full, sw_scalar(vn), sw_nline(kn), sw_ncol(kn), sw_nline(vn), sw_ncol(vn)) ||
                         sw_ov_push(p, l, full, sw_scalar(vn), sw_nline(kn), sw_ncol(kn), sw_nline(vn), sw_ncol(vn)))
                    rc = -1;
            } else if (vn->type == YAML_MAPPING_NODE &&
                       (config_is_section(full) || vn->data.mapping.pairs.top > vn->data.mapping.pairs.start)) {
                /* a section; an unknown one fails at its first key, named in full */
                rc = walk_set(p, vn, full, l, what);
            } else if (config_is_section(full) && sw_is_null(vn)) {
                /* "model:" alone: an empty section */
            } else {
                /* unknown key or a section given a value: config_set says which */
                rc = sw_check_override(p, full, vn->type == YAML_SCALAR_NODE ? sw_scalar(vn) : "", sw_nline(kn), sw_ncol(kn),
                                    sw_nline(vn), sw_ncol(vn));
                if (rc == 0)
                    rc = PERR_NODE(p, kn, full, "unknown key");
            }
        }
        free(full);
        if (rc)
            return -1;
    }
    return 0;
}

/* `set:` value: a mapping, or null (nothing). */
int sw_parse_set_node(P *p, yaml_node_t *vn, OvList *l, const char *what) {
    if (sw_is_null(vn))
        return 0;
    if (vn->type != YAML_MAPPING_NODE)
        return PERR_NODE(p, vn, what, "expected a mapping of config keys to values, got %s", sw_node_kind(vn));
    return walk_set(p, vn, "", l, what);
}

/* ------------------------------------------------------------------ */
/* duplicates in long lists (labels, values, seeds)                    */
/* ------------------------------------------------------------------ */

static int cmp_dup(const void *a, const void *b, void *strs) {
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(((char *const *)strs)[x], ((char *const *)strs)[y]);
    return c ? c : (x > y) - (x < y);
}

int sw_first_dup(char *const *strs, int n, int *first, int *later) {
    int *ix = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix);
    if (!ix)
        return -1;
    for (int i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, (size_t)n, sizeof *ix, cmp_dup, (void *)strs);
    int found = 0;
    /* sorted by (text, index): a run of equal texts starts with its earliest
     * entry, and its second is the first that repeats it */
    for (int k = 1; k < n; k++)
        if (strcmp(strs[ix[k - 1]], strs[ix[k]]) == 0 && (k < 2 || strcmp(strs[ix[k - 2]], strs[ix[k]]) != 0) &&
            (!found || ix[k] < *later))
            *first = ix[k - 1], *later = ix[k], found = 1;
    free(ix);
    return found;
}

/* ------------------------------------------------------------------ */
/* variants                                                            */
/* ------------------------------------------------------------------ */

void sw_rows_free(Row *rows, int n) {
    for (int i = 0; rows && i < n; i++) {
        free(rows[i].label);
        sw_ov_free(&rows[i].ov);
    }
    free(rows);
}

/* v quoted for a message (config_quote), with what a terminal could take
 * for a control sequence (C1 controls, bytes that are not UTF-8) escaped
 * as well. */
char *sw_quote_name(const char *v, char *out, size_t cap) {
    char q[300];
    config_quote(v, q, sizeof q);
    return store_escape(q, out, cap);
}

/* Names and labels reach file names, plot scripts and terminals: printable
 * text only (store_name_check), else an error at node n for key. */
int sw_name_ok(const char *v, size_t max, char *why, size_t cap) {
    if (store_name_check(v, why, cap)) return -1;
    size_t n = strlen(v);
    if (n > max) {
        snprintf(why, cap, "is %zu bytes long; at most %zu (it becomes part of file names)", n, max);
        return -1;
    }
    return 0;
}

int sw_check_name(P *p, const yaml_node_t *n, const char *key, const char *v) {
    char why[200], q[400];
    if (sw_name_ok(v, SWEEP_NAME_MAX, why, sizeof why) == 0)
        return 0;
    return PERR_NODE(p, n, key, "\"%s\" %s", sw_quote_name(v, q, sizeof q), why);
}

/* No two variants with one label. */
static int variants_distinct(P *p, const Row *rows, int n) {
    char **labels = malloc((size_t)(n > 0 ? n : 1) * sizeof *labels);
    if (!labels)
        return sw_oom(p);
    for (int i = 0; i < n; i++)
        labels[i] = rows[i].label;
    int j, i, d = sw_first_dup(labels, n, &j, &i);
    free(labels);
    if (d < 0)
        return sw_oom(p);
    if (d == 0)
        return 0;
    char q[300], lwhat[64];
    config_quote(rows[i].label, q, sizeof q);
    snprintf(lwhat, sizeof lwhat, "variants[%d].label", i);
    return sw_perr(p, rows[i].ll, rows[i].lc, lwhat, "duplicate label \"%s\" (also variants[%d], line %d)", q, j,
                   rows[j].line);
}

int sw_parse_variants(P *p, yaml_node_t *seq, Row **out, int *nout) {
    static const char *const item_keys[] = {"label", "set", NULL};
    int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (n == 0)
        return PERR_NODE(p, seq, "variants", "empty list (give at least one {label: NAME, set: {...}})");
    Row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows)
        return sw_oom(p);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        yaml_node_t *it = yaml_document_get_node(p->doc, seq->data.sequence.items.start[i]);
        Row *r = &rows[i];
        char what[48], lwhat[64], swhat[64];
        snprintf(what, sizeof what, "variants[%d]", i);
        snprintf(lwhat, sizeof lwhat, "%s.label", what);
        snprintf(swhat, sizeof swhat, "%s.set", what);
        snprintf(r->where, sizeof r->where, "%s", what);
        if (!it) {
            rc = config_fail(p->err, "%s: error: YAML: malformed document", p->path);
            break;
        }
        r->line = sw_nline(it);
        r->col = sw_ncol(it);
        if (it->type != YAML_MAPPING_NODE) {
            rc = PERR_NODE(p, it, what, "expected a mapping {label: NAME, set: {...}}, got %s", sw_node_kind(it));
            break;
        }
        yaml_node_t *label = NULL;
        for (yaml_node_pair_t *pr = it->data.mapping.pairs.start; pr < it->data.mapping.pairs.top && rc == 0; pr++) {
            yaml_node_t *kn = yaml_document_get_node(p->doc, pr->key);
            yaml_node_t *vn = yaml_document_get_node(p->doc, pr->value);
            if (!kn || !vn) {
                rc = config_fail(p->err, "%s: error: YAML: malformed document", p->path);
                break;
            }
            if (kn->type != YAML_SCALAR_NODE) {
                rc = PERR_NODE(p, kn, what, "expected a key name, got %s", sw_node_kind(kn));
                break;
            }
            const char *k = sw_scalar(kn);
            char kw[128];
            snprintf(kw, sizeof kw, "%s.%s", what, k);
            if (sw_dup_in_mapping(p, it, pr, k, kw)) {
                rc = -1;
                break;
            }
            if (strcmp(k, "label") == 0) {
                const char *v = sw_scalar(vn);
                if (!v)
                    rc = PERR_NODE(p, vn, lwhat, "expected a name, got %s", sw_node_kind(vn));
                else if (sw_is_null(vn) || !*v)
                    rc = PERR_NODE(p, vn, lwhat, "must not be empty");
                else
                    rc = sw_check_name(p, vn, lwhat, v);
                label = vn;
            } else if (strcmp(k, "set") == 0) {
                rc = sw_parse_set_node(p, vn, &r->ov, swhat);
            } else {
                char why[200];
                sw_unknown_among(k, item_keys, why, sizeof why);
                rc = PERR_NODE(p, kn, kw, "%s", why);
            }
        }
        if (rc)
            break;
        if (!label) {
            rc = PERR_NODE(p, it, lwhat, "required (each variant needs a label)");
            break;
        }
        r->ll = sw_nline(label);
        r->lc = sw_ncol(label);
        r->label = sw_xstrdup(sw_scalar(label));
        if (!r->label)
            rc = sw_oom(p);
    }
    if (rc == 0)
        rc = variants_distinct(p, rows, n);
    if (rc) {
        sw_rows_free(rows, n);
        return -1;
    }
    *out = rows;
    *nout = n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* grid / zip                                                          */
/* ------------------------------------------------------------------ */

void sw_params_free(Param *ps, int n) {
    for (int i = 0; ps && i < n; i++) {
        for (int j = 0; j < ps[i].n; j++)
            free(ps[i].vals[j]);
        free(ps[i].vals);
        free(ps[i].vl);
        free(ps[i].vc);
        free(ps[i].key);
        free(ps[i].leaf);
    }
    free(ps);
}

/* One value of parameter pm, checked against the schema. */
static int param_value(P *p, Param *pm, yaml_node_t *vn, const char *what) {
    if (vn->type != YAML_SCALAR_NODE)
        return PERR_NODE(p, vn, what, "expected a value, got %s", sw_node_kind(vn));
    if (sw_check_override(p, pm->key, sw_scalar(vn), pm->kl, pm->kc, sw_nline(vn), sw_ncol(vn)))
        return -1;
    int i = pm->n;
    pm->vals[i] = sw_xstrdup(sw_scalar(vn));
    if (!pm->vals[i])
        return sw_oom(p);
    pm->vl[i] = sw_nline(vn);
    pm->vc[i] = sw_ncol(vn);
    pm->n++;
    return 0;
}

static int param_alloc(P *p, Param *pm, int n) {
    pm->vals = calloc((size_t)n, sizeof *pm->vals);
    pm->vl = calloc((size_t)n, sizeof *pm->vl);
    pm->vc = calloc((size_t)n, sizeof *pm->vc);
    if (!pm->vals || !pm->vl || !pm->vc)
        return sw_oom(p);
    return 0;
}

/* pm's spec {values: [...]} or {value: x} (vn): which of the two is given,
 * into *values or *value.  0, or -1 with the error. */
static int param_spec(P *p, const char *key, yaml_node_t *vn, yaml_node_t **values, yaml_node_t **value) {
    static const char *const spec_keys[] = {"values", "value", NULL};
    if (vn->type != YAML_MAPPING_NODE) {
        char g[310];
        return PERR_NODE(p, vn, key, "expected {values: [...]} or {value: x}, got %s", sw_got(vn, g, sizeof g));
    }
    for (yaml_node_pair_t *sp = vn->data.mapping.pairs.start; sp < vn->data.mapping.pairs.top; sp++) {
        yaml_node_t *sk = yaml_document_get_node(p->doc, sp->key);
        yaml_node_t *sv = yaml_document_get_node(p->doc, sp->value);
        char kw[400];
        if (!sk || !sv)
            return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
        if (sk->type != YAML_SCALAR_NODE)
            return PERR_NODE(p, sk, key, "expected values or value, got %s", sw_node_kind(sk));
        snprintf(kw, sizeof kw, "%s.%s", key, sw_scalar(sk));
        if (sw_dup_in_mapping(p, vn, sp, sw_scalar(sk), kw))
            return -1;
        if (strcmp(sw_scalar(sk), "values") == 0)
            *values = sv;
        else if (strcmp(sw_scalar(sk), "value") == 0)
            *value = sv;
        else {
            char why[200];
            sw_unknown_among(sw_scalar(sk), spec_keys, why, sizeof why);
            return PERR_NODE(p, sk, kw, "%s", why);
        }
    }
    if (*values && *value)
        return PERR_NODE(p, vn, key, "give values (a list to sweep) or value (a constant), not both");
    if (!*values && !*value)
        return PERR_NODE(p, vn, key, "expected {values: [...]} or {value: x}");
    return 0;
}

/* pm's `values` list: each value checked against the schema, no value
 * twice. */
static int param_values(P *p, Param *pm, yaml_node_t *values) {
    const char *key = pm->key;
    if (values->type != YAML_SEQUENCE_NODE) {
        char g[310];
        return PERR_NODE(p, values, key, "values: expected a list, got %s%s", sw_got(values, g, sizeof g),
                         values->type == YAML_SCALAR_NODE ? " (use value: for a constant)" : "");
    }
    int nv = (int)(values->data.sequence.items.top - values->data.sequence.items.start);
    if (nv == 0)
        return PERR_NODE(p, values, key, "values: empty list");
    if (param_alloc(p, pm, nv))
        return -1;
    for (int i = 0; i < nv; i++) {
        yaml_node_t *it = yaml_document_get_node(p->doc, values->data.sequence.items.start[i]);
        if (!it)
            return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
        if (param_value(p, pm, it, key))
            return -1;
    }
    int j, i, d = sw_first_dup(pm->vals, pm->n, &j, &i);
    if (d < 0)
        return sw_oom(p);
    if (d > 0) {
        char q[300];
        config_quote(pm->vals[i], q, sizeof q);
        return sw_perr(p, pm->vl[i], pm->vc[i], key, "duplicate value \"%s\" (also at line %d, column %d)", q,
                       pm->vl[j], pm->vc[j]);
    }
    return 0;
}

/* One entry (pair pr of map) of `parameters`, as ps[*np] (counted before it
 * is filled, so params_free frees a partial one). */
static int parse_param(P *p, yaml_node_t *map, yaml_node_pair_t *pr, Param *ps, int *np) {
    yaml_node_t *kn = yaml_document_get_node(p->doc, pr->key);
    yaml_node_t *vn = yaml_document_get_node(p->doc, pr->value);
    if (!kn || !vn)
        return config_fail(p->err, "%s: error: YAML: malformed document", p->path);
    if (kn->type != YAML_SCALAR_NODE)
        return PERR_NODE(p, kn, "parameters", "expected a config key, got %s", sw_node_kind(kn));
    const char *key = sw_scalar(kn);
    if (sw_dup_in_mapping(p, map, pr, key, key))
        return -1;
    if (!config_find(key)) { /* unknown key, or a section: config_set words it */
        if (sw_check_override(p, key, "", sw_nline(kn), sw_ncol(kn), sw_nline(kn), sw_ncol(kn)) == 0)
            PERR_NODE(p, kn, key, "unknown key");
        return -1;
    }
    Param *pm = &ps[(*np)++];
    pm->key = sw_xstrdup(key);
    pm->kl = sw_nline(kn);
    pm->kc = sw_ncol(kn);
    if (!pm->key)
        return sw_oom(p);
    yaml_node_t *values = NULL, *value = NULL;
    if (param_spec(p, key, vn, &values, &value))
        return -1;
    if (value) {
        pm->is_const = 1;
        return param_alloc(p, pm, 1) || param_value(p, pm, value, key) ? -1 : 0;
    }
    return param_values(p, pm, values);
}

/* Label names: each key's leaf, unless two swept keys share it. */
static int param_leaves(P *p, Param *ps, int np) {
    for (int i = 0; i < np; i++) {
        const char *d = strrchr(ps[i].key, '.');
        const char *leaf = d ? d + 1 : ps[i].key;
        int clash = 0;
        for (int j = 0; j < np; j++) {
            if (j == i || ps[j].is_const || ps[i].is_const)
                continue;
            const char *dj = strrchr(ps[j].key, '.');
            clash |= strcmp(leaf, dj ? dj + 1 : ps[j].key) == 0;
        }
        ps[i].leaf = sw_xstrdup(clash ? ps[i].key : leaf);
        if (!ps[i].leaf)
            return sw_oom(p);
    }
    return 0;
}

int sw_parse_parameters(P *p, yaml_node_t *map, Param **out, int *nout) {
    int n = (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return PERR_NODE(p, map, "parameters", "empty mapping (give config keys with {values: [...]})");
    Param *ps = calloc((size_t)n, sizeof *ps);
    if (!ps)
        return sw_oom(p);
    int rc = 0, np = 0;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top && rc == 0; pr++)
        rc = parse_param(p, map, pr, ps, &np);
    if (rc == 0)
        rc = param_leaves(p, ps, np);
    if (rc) {
        sw_params_free(ps, np);
        return -1;
    }
    *out = ps;
    *nout = np;
    return 0;
}

/* Rows of a grid (zip = 0) or zip (zip = 1) over ps.  where/line/col: the
 * parameters key, blamed for errors of whole rows. */
int sw_expand_params(P *p, Param *ps, int np, int zip, int line, int col, Row **out, int *nout) {
    long long nrows = 1;
    int first = -1;
    for (int i = 0; i < np; i++) {
        if (ps[i].is_const)
            continue;
        if (zip) {
            if (first < 0)
                first = i, nrows = ps[i].n;
            else if (ps[i].n != ps[first].n)
                return sw_perr(p, ps[i].vl[0], ps[i].vc[0], ps[i].key,
                            "zip needs lists of equal length: %d value%s here, %d for %s", ps[i].n,
                            ps[i].n == 1 ? "" : "s", ps[first].n, ps[first].key);
        } else {
            nrows *= ps[i].n;
            if (nrows > SWEEP_MAX_RUNS)
                return sw_perr(p, line, col, "parameters", "the grid has more than %d points", SWEEP_MAX_RUNS);
        }
    }
    Row *rows = calloc((size_t)nrows, sizeof *rows);
    if (!rows)
        return sw_oom(p);
    for (long long r = 0; r < nrows; r++) {
        Row *row = &rows[r];
        snprintf(row->where, sizeof row->where, "parameters");
        row->line = line;
        row->col = col;
        Buf lb = {0};
        int nswept = 0;
        /* grid: mixed radix over the swept params, the last one fastest */
        long long rest = r;
        int *pick = calloc((size_t)np, sizeof *pick);
        if (!pick) {
            sw_rows_free(rows, (int)nrows);
            return sw_oom(p);
        }
        for (int i = np - 1; i >= 0; i--) {
            if (ps[i].is_const)
                continue;
            if (zip)
                pick[i] = (int)r;
            else {
                pick[i] = (int)(rest % ps[i].n);
                rest /= ps[i].n;
            }
        }
        int rc = 0;
        for (int i = 0; i < np && rc == 0; i++) {
            int k = ps[i].is_const ? 0 : pick[i];
            rc = sw_ov_push(p, &row->ov, ps[i].key, ps[i].vals[k], ps[i].kl, ps[i].kc, ps[i].vl[k], ps[i].vc[k]);
            if (!ps[i].is_const) {
                if (nswept++)
                    sw_buf_str(&lb, ",");
                sw_buf_str(&lb, ps[i].leaf);
                sw_buf_str(&lb, "=");
                sw_buf_str(&lb, ps[i].vals[k]);
            }
        }
        free(pick);
        if (!nswept)
            sw_buf_str(&lb, "base");
        row->label = sw_buf_take(&lb);
        if (rc || !row->label) {
            sw_rows_free(rows, (int)nrows);
            return rc ? -1 : sw_oom(p);
        }
        char why[200], q[400];
        if (sw_name_ok(row->label, SWEEP_NAME_MAX, why, sizeof why)) { /* checked text, but maybe too long */
            sw_perr(p, line, col, "parameters", "row %lld gets the label \"%s\", which %s", r,
                 sw_quote_name(row->label, q, sizeof q), why);
            sw_rows_free(rows, (int)nrows);
            return -1;
        }
    }
    *out = rows;
    *nout = (int)nrows;
    return 0;
}

