/*
 * config.c — the run configuration: schema table, YAML loading, --set
 * overrides, resolution of automatic values, printing (see config.h).
 *
 * Everything walks config_schema[] (config_schema.c): one row per key.  Values are parsed by
 * one function (parse_value) for defaults, YAML and --set alike, so the
 * default texts in the table are checked by the same code as user input.
 *
 * Origins.  To point cross-key errors found by config_resolve at the place
 * the user wrote the key, this file keeps one piece of global mutable state:
 * origins[], indexed like config_schema[], holding where each key was last
 * set (schema default, FILE:LINE:COL, or a --set assignment).  It is reset by
 * config_defaults and updated by config_load_file / config_set.  Limitation:
 * it describes the most recently built configuration only — a program that
 * builds two Configs at once (or from two threads) gets the locations of the
 * last one in config_resolve's messages.  The values themselves always live
 * in the Config, so only error locations can be affected.
 *
 * config_resolve marks the Config resolved and returns at once when called
 * again, so model.match_params shrinks d_ff exactly once; a config read
 * back from its stored (resolved) JSON is marked d_ff_matched, so resolving
 * it does not shrink d_ff a second time.
 */
#include "run/config.h"
#include "util/json.h"
#include "util/util.h"
#include "nn/variant.h"
#include "run/yamlfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "nn/rope.h"

/* ------------------------------------------------------------------ */
/* Schema (config_schema.c holds the table)                            */
/* ------------------------------------------------------------------ */

#define NKEYS (sizeof config_schema / sizeof config_schema[0])

const ConfigKey *config_find(const char *key) {
    if (!key) return NULL;
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(config_schema[i].key, key) == 0) return &config_schema[i];
    return NULL;
}

static int key_index(const char *key) {
    const ConfigKey *k = config_find(key);
    return k ? (int)(k - config_schema) : 0;
}

/* CT_INT rows are int fields except train.seed, an int64_t (config.h fixes
 * the struct; ConfigKey has no width, so decide by field offset). */
static int int_is_64(const ConfigKey *k) { return k->offset == offsetof(Config, seed); }

/* True when some schema key lives under "name." (model, model.gate, train). */
int config_is_section(const char *name) {
    size_t n = strlen(name);
    if (n == 0) return 0;
    for (size_t i = 0; i < NKEYS; i++)
        if (strncmp(config_schema[i].key, name, n) == 0 && config_schema[i].key[n] == '.') return 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Origins (see the header comment)                                    */
/* ------------------------------------------------------------------ */

typedef enum { ORIGIN_DEFAULT, ORIGIN_FILE, ORIGIN_SET } OriginKind;
typedef struct {
    OriginKind kind;
    int line, col;  /* 1-based, ORIGIN_FILE only */
    char src[512];  /* file path, or the --set assignment */
} Origin;
static Origin origins[NKEYS];

static void origin_set(int idx, OriginKind kind, const char *src, int line, int col) {
    origins[idx].kind = kind;
    origins[idx].line = line;
    origins[idx].col = col;
    snprintf(origins[idx].src, sizeof origins[idx].src, "%s", src ? src : "");
}

/* "FILE:LINE:COL", "--set KEY=VALUE" or "config". */
static void origin_text(int idx, char *buf, size_t cap) {
    const Origin *o = &origins[idx];
    switch (o->kind) {
    case ORIGIN_FILE: snprintf(buf, cap, "%s:%d:%d", o->src, o->line, o->col); break;
    case ORIGIN_SET: snprintf(buf, cap, "--set %s", o->src); break;
    default: snprintf(buf, cap, "config"); break;
    }
}

/* The key to blame for a rule over two keys: the first one the user set,
 * else a. */
static int blame(int a, int b) {
    if (origins[a].kind != ORIGIN_DEFAULT) return a;
    if (origins[b].kind != ORIGIN_DEFAULT) return b;
    return a;
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

int config_fail(ConfigError *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* "LOC: error: KEY: reason" with LOC the origin of schema key idx. */
static int fail_key(ConfigError *err, int idx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_key(ConfigError *err, int idx, const char *fmt, ...) {
    if (err) {
        char loc[600], why[600];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        origin_text(idx, loc, sizeof loc);
        config_fail(err, "%s: error: %s: %s", loc, config_schema[idx].key, why);
    }
    return -1;
}

/* The n bytes at s as they go in a message: control bytes as \xNN, '"' and
 * '\' escaped when quote is set, at most keep bytes of s (a cut backs off
 * to the start of a UTF-8 sequence) and then "...". */
static void clip(const char *s, size_t n, size_t keep, int quote, char *out, size_t cap) {
    size_t o = 0, end = n;
    if (cap == 0) return;
    if (end > keep) {
        end = keep;
        while (end > 0 && ((unsigned char)s[end] & 0xc0) == 0x80) end--;
    }
    size_t i = 0;
    unsigned cp;
    int k;
    for (; i < end && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (quote && (ch == '"' || ch == '\\')) {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
        } else if (ch >= 0x80 && (k = util_utf8_char((const unsigned char *)s + i, &cp)) > 0 && i + (size_t)k <= end &&
                   util_cp_unsafe(cp)) { /* C1, a bidi override, U+2028/9: each byte as \xNN */
            for (int b = 0; b < k && o + 5 < cap; b++)
                o += (size_t)snprintf(out + o, cap - o, "\\x%02x", (unsigned char)s[i + (size_t)b]);
            i += (size_t)k - 1;
        } else {
            out[o++] = (char)ch;
        }
    }
    if (i < n && o + 4 <= cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* s as it goes between double quotes in a message: '"' and '\' escaped,
 * control bytes as \xNN, long text cut with "...".  Not JSON (json.h). */
void config_quote(const char *s, char *out, size_t cap) { clip(s, strlen(s), 64, 1, out, cap); }

/* An assignment as messages show it: "KEY=VALUE" with each side cut at 64
 * bytes, so that a long value cannot push the reason out of the message. */
static void assignment_label(const char *a, char *out, size_t cap) {
    const char *eq = strchr(a, '=');
    if (!eq) {
        clip(a, strlen(a), 64, 0, out, cap);
        return;
    }
    char k[300], v[300];
    clip(a, (size_t)(eq - a), 64, 0, k, sizeof k);
    clip(eq + 1, strlen(eq + 1), 64, 0, v, sizeof v);
    snprintf(out, cap, "%s=%s", k, v);
}

/* "expected ..., got "TEXT"" for key k. */
static void expected(const ConfigKey *k, const char *text, char *why, size_t cap) {
    char q[400];
    config_quote(text, q, sizeof q);
    switch (k->type) {
    case CT_INT: snprintf(why, cap, "expected integer in [%.0f, %.0f], got \"%s\"", k->min, k->max, q); break;
    case CT_FLOAT: snprintf(why, cap, "expected number in [%g, %g], got \"%s\"", k->min, k->max, q); break;
    case CT_BOOL: snprintf(why, cap, "expected true or false, got \"%s\"", q); break;
    case CT_STRING:
        snprintf(why, cap, "expected text of at most %.0f bytes without control characters, got \"%s\"", k->max, q);
        break;
    case CT_ENUM: {
        size_t o = (size_t)snprintf(why, cap, "expected one of ");
        for (int i = 0; k->names[i] && o < cap; i++) {
            const char *a = k->alias ? k->alias(i) : NULL;
            o += (size_t)snprintf(why + o, cap - o, "%s%s%s%s%s", i ? ", " : "", k->names[i], a ? " (" : "",
                                  a ? a : "", a ? ")" : "");
        }
        if (o < cap) snprintf(why + o, cap - o, ", got \"%s\"", q);
        break;
    }
    }
}

/* Levenshtein distance; long strings count as far apart. */
int config_edit_distance(const char *a, const char *b) {
    enum { MAXLEN = 255 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXLEN || lb > MAXLEN) return 1 << 20;
    int prev[MAXLEN + 1], cur[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

static const char *leaf(const char *key) {
    const char *d = strrchr(key, '.');
    return d ? d + 1 : key;
}

/* The schema key nearest to an unknown one: within 3 edits, else one with
 * the same last component; NULL when nothing is close. */
static const char *suggest(const char *key) {
    int best = -1, bestd = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        int d = config_edit_distance(key, config_schema[i].key);
        if (best < 0 || d < bestd) best = (int)i, bestd = d;
    }
    if (best >= 0 && bestd <= 3) return config_schema[best].key;
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(leaf(key), leaf(config_schema[i].key)) == 0) return config_schema[i].key;
    return NULL;
}

/* "unknown key" or "unknown key (did you mean X?)". */
static void unknown_key(const char *key, char *why, size_t cap) {
    const char *s = suggest(key);
    if (s)
        snprintf(why, cap, "unknown key (did you mean %s?)", s);
    else
        snprintf(why, cap, "unknown key");
}

/* ------------------------------------------------------------------ */
/* Values                                                              */
/* ------------------------------------------------------------------ */

/* Parse text as key k's value and store it in c.  On failure c is
 * untouched and why holds the reason ("expected ..., got ..."). */
static int parse_value(const ConfigKey *k, const char *text, Config *c, char *why, size_t cap) {
    char *field = (char *)c + k->offset;
    char *end = NULL;
    const char *note = ""; /* why the text is out of range, after the "got" */
    /* No leading blanks (strtol/strtod would skip them) and no empty text. */
    int blank = text[0] == '\0' || text[0] == ' ' || text[0] == '\t' || text[0] == '\n' || text[0] == '\r' ||
                text[0] == '\f' || text[0] == '\v';
    switch (k->type) {
    case CT_INT: {
        if (blank) break;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno == ERANGE && !*end) note = " (out of the range of a 64-bit integer)";
        if (errno || *end || v < (long long)k->min || v > (long long)k->max) break;
        if (int_is_64(k))
            *(int64_t *)(void *)field = (int64_t)v;
        else
            *(int *)(void *)field = (int)v;
        return 0;
    }
    case CT_FLOAT: {
        if (blank) break;
        errno = 0;
        double v = strtod(text, &end);
        /* ERANGE: overflow (inf) or underflow (0 or a subnormal, not what
         * was written) */
        if (errno == ERANGE && !*end) {
            note = fabs(v) > 1 ? " (out of the range of a double: overflow)"
                               : " (out of the range of a double: underflow)";
            break;
        }
        if (*end || !(v >= k->min && v <= k->max)) break; /* also rejects NaN */
        *(double *)(void *)field = v;
        return 0;
    }
    case CT_BOOL:
        if (strcmp(text, "true") == 0) {
            *(int *)(void *)field = 1;
            return 0;
        }
        if (strcmp(text, "false") == 0) {
            *(int *)(void *)field = 0;
            return 0;
        }
        break;
    case CT_ENUM: {
        int i = name_index(k->names, text);
        for (int j = 0; i < 0 && k->alias && k->names[j]; j++)
            if (k->alias(j) && strcasecmp(k->alias(j), text) == 0) i = j;
        if (i < 0) break;
        *(int *)(void *)field = i;
        return 0;
    }
    case CT_STRING: {
        size_t n = strlen(text);
        int ctl = 0;
        for (size_t i = 0; i < n; i++) ctl |= (unsigned char)text[i] < 0x20 || text[i] == 0x7f;
        if (n > (size_t)k->max || ctl) break;
        memcpy(field, text, n + 1);
        return 0;
    }
    }
    expected(k, text, why, cap);
    if (*note) {
        size_t n = strlen(why);
        snprintf(why + n, cap - n, "%s", note);
    }
    return -1;
}

/* %g when that reads back as v, else the shortest %.Ng that does (N <= 17,
 * which always does). */
static void format_double(double v, char *buf, size_t cap, int json) {
    if (!isfinite(v)) {
        snprintf(buf, cap, "%s", json ? "null" : isnan(v) ? ".nan" : v > 0 ? ".inf" : "-.inf");
        return;
    }
    for (int p = 6; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Room for any value as text: a CT_STRING of 255 bytes, each escaped as
 * \u00XX, between quotes. */
enum { VALUE_CAP = 2 + 6 * 255 + 1 + 64 };

/* Key k's value in c as text (YAML and JSON share it, except that JSON
 * quotes enum names). */
static void format_value(const ConfigKey *k, const Config *c, char *buf, size_t cap, int json) {
    const char *field = (const char *)c + k->offset;
    switch (k->type) {
    case CT_INT:
        if (int_is_64(k))
            snprintf(buf, cap, "%lld", (long long)*(const int64_t *)(const void *)field);
        else
            snprintf(buf, cap, "%d", *(const int *)(const void *)field);
        break;
    case CT_FLOAT: format_double(*(const double *)(const void *)field, buf, cap, json); break;
    case CT_BOOL: snprintf(buf, cap, "%s", *(const int *)(const void *)field ? "true" : "false"); break;
    case CT_STRING: {
        /* JSON, and YAML wherever a plain scalar could be misread: quoted
         * (json_quote's escapes are YAML's too), never cut */
        size_t n = strlen(field);
        int plain = !json && n && !strpbrk(field, ":#'\"{}[],&*!|>%@`?\\") && field[0] != '-' && field[0] != ' ' &&
                    field[n - 1] != ' ';
        for (size_t i = 0; plain && i < n; i++) plain = (unsigned char)field[i] >= 0x20 && field[i] != 0x7f;
        if (plain)
            snprintf(buf, cap, "%s", field);
        else
            json_quote(field, buf, cap);
        break;
    }
    case CT_ENUM: {
        int v = *(const int *)(const void *)field, n = 0;
        while (k->names[n]) n++;
        if (v >= 0 && v < n)
            snprintf(buf, cap, json ? "\"%s\"" : "%s", k->names[v]);
        else
            snprintf(buf, cap, "%d", v); /* not a valid value; show what is there */
        break;
    }
    }
}

void config_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS; i++) {
        char why[512];
        if (parse_value(&config_schema[i], config_schema[i].def, c, why, sizeof why) != 0) {
            fprintf(stderr, "config.c: bad schema default: %s: %s\n", config_schema[i].key, why);
            abort();
        }
        origin_set((int)i, ORIGIN_DEFAULT, NULL, 0, 0);
    }
}

/* 1 when key k of c holds its schema default (compared as stored JSON
 * text, so 0.1 and 1e-1 agree). */
static int at_default(const ConfigKey *k, const Config *c) {
    Config d;
    char why[512], def[VALUE_CAP], cur[VALUE_CAP];
    memset(&d, 0, sizeof d);
    parse_value(k, k->def, &d, why, sizeof why);
    format_value(k, &d, def, sizeof def, 1);
    format_value(k, c, cur, sizeof cur, 1);
    return strcmp(def, cur) == 0;
}

/* ------------------------------------------------------------------ */
/* YAML                                                                */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *path;
    yaml_document_t *doc;
    Config *c;          /* staging copy, committed on success */
    int line[NKEYS];    /* 1-based line where each key was set in this file; 0 = not set */
    int col[NKEYS];
    ConfigError *err;
} Loader;

static const char *node_kind(const yaml_node_t *n) {
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a sequence" : "a value";
}

/* A YAML null written as a scalar: empty, ~ or null (plain style). */
static int is_null_scalar(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = (const char *)n->data.scalar.value;
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

static int fail_node(Loader *L, const yaml_node_t *n, const char *key, const char *why) {
    if (key && *key)
        return config_fail(L->err, "%s:%zu:%zu: error: %s: %s", L->path, n->start_mark.line + 1, n->start_mark.column + 1,
                    key, why);
    return config_fail(L->err, "%s:%zu:%zu: error: %s", L->path, n->start_mark.line + 1, n->start_mark.column + 1, why);
}

static int walk_mapping(Loader *L, yaml_node_t *map, const char *prefix) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
        char why[800], q[400], full[512];
        if (!kn || !vn) return config_fail(L->err, "%s: error: YAML: malformed document", L->path);
        if (kn->type != YAML_SCALAR_NODE) {
            snprintf(why, sizeof why, "expected a key name, got %s", node_kind(kn));
            return fail_node(L, kn, *prefix ? prefix : NULL, why);
        }
        const char *name = (const char *)kn->data.scalar.value;
        int n = *prefix ? snprintf(full, sizeof full, "%s.%s", prefix, name) : snprintf(full, sizeof full, "%s", name);
        if (n < 0 || (size_t)n >= sizeof full) {
            config_quote(name, q, sizeof q);
            snprintf(why, sizeof why, "key too long: \"%s\"", q);
            return fail_node(L, kn, NULL, why);
        }
        /* The same name twice in one mapping (a section or a key). */
        for (yaml_node_pair_t *e = map->data.mapping.pairs.start; e < p; e++) {
            yaml_node_t *ek = yaml_document_get_node(L->doc, e->key);
            if (ek && ek->type == YAML_SCALAR_NODE && strcmp((const char *)ek->data.scalar.value, name) == 0) {
                snprintf(why, sizeof why, "duplicate key (first set at line %zu)", ek->start_mark.line + 1);
                return fail_node(L, kn, full, why);
            }
        }
        const ConfigKey *k = config_find(full);
        if (k) {
            int idx = (int)(k - config_schema);
            if (L->line[idx]) { /* e.g. model.n_head: and model: {n_head:} */
                snprintf(why, sizeof why, "duplicate key (first set at line %d)", L->line[idx]);
                return fail_node(L, kn, full, why);
            }
            if (vn->type != YAML_SCALAR_NODE) {
                snprintf(why, sizeof why, "expected a value, got %s", node_kind(vn));
                return fail_node(L, vn, full, why);
            }
            const char *text = (const char *)vn->data.scalar.value;
            if (strlen(text) != vn->data.scalar.length) { /* an embedded NUL */
                expected(k, text, why, sizeof why);
                return fail_node(L, vn, full, why);
            }
            if (parse_value(k, text, L->c, why, sizeof why) != 0) return fail_node(L, vn, full, why);
            L->line[idx] = (int)kn->start_mark.line + 1;
            L->col[idx] = (int)kn->start_mark.column + 1;
        } else if (config_is_section(full)) {
            if (vn->type == YAML_MAPPING_NODE) {
                if (walk_mapping(L, vn, full) != 0) return -1;
            } else if (!is_null_scalar(vn)) { /* "model:" alone is an empty section */
                if (vn->type == YAML_SCALAR_NODE) {
                    config_quote((const char *)vn->data.scalar.value, q, sizeof q);
                    snprintf(why, sizeof why, "expected a mapping (section), got \"%s\"", q);
                } else {
                    snprintf(why, sizeof why, "expected a mapping (section), got %s", node_kind(vn));
                }
                return fail_node(L, vn, full, why);
            }
        } else if (vn->type == YAML_MAPPING_NODE && vn->data.mapping.pairs.top > vn->data.mapping.pairs.start) {
            /* An unknown section: name its first key in full, for a better
             * suggestion (modle: {n_head: 4} -> model.n_head). */
            if (walk_mapping(L, vn, full) != 0) return -1;
            return config_fail(L->err, "%s: error: internal: unknown section %s accepted", L->path, full);
        } else {
            unknown_key(full, why, sizeof why);
            return fail_node(L, kn, full, why);
        }
    }
    return 0;
}

int config_load_file(Config *c, const char *path, ConfigError *err) {
    yaml_document_t doc;
    if (yaml_file_load(path, "a run file", &doc, err)) return -1;
    Loader *L = calloc(1, sizeof *L);
    Config *stage = malloc(sizeof *stage);
    if (!L || !stage) {
        free(L);
        free(stage);
        yaml_document_delete(&doc);
        return config_fail(err, "%s: error: out of memory", path);
    }
    *stage = *c;
    L->path = path;
    L->c = stage;
    L->err = err;
    L->doc = &doc;

    int rc = -1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || is_null_scalar(root)) {
        rc = 0; /* empty file: nothing set */
    } else if (root->type != YAML_MAPPING_NODE) {
        char why[600], q[400];
        if (root->type == YAML_SCALAR_NODE) {
            config_quote((const char *)root->data.scalar.value, q, sizeof q);
            snprintf(why, sizeof why, "expected a mapping of keys at the top level, got \"%s\"", q);
        } else {
            snprintf(why, sizeof why, "expected a mapping of keys at the top level, got %s", node_kind(root));
        }
        fail_node(L, root, NULL, why);
    } else {
        rc = walk_mapping(L, root, "");
    }
    yaml_document_delete(&doc);
    if (rc == 0) {
        *c = *stage;
        for (size_t i = 0; i < NKEYS; i++)
            if (L->line[i]) origin_set((int)i, ORIGIN_FILE, path, L->line[i], L->col[i]);
    }
    free(stage);
    free(L);
    return rc;
}

/* ------------------------------------------------------------------ */
/* --set                                                               */
/* ------------------------------------------------------------------ */

/* Set key to val as --set does; label is the assignment as messages show
 * it (assignment_label) and becomes the key's origin. */
static int set_pair(Config *c, const char *key, const char *val, const char *label, ConfigError *err) {
    char why[800], kq[300];
    const ConfigKey *k = config_find(key);
    if (!k) {
        clip(key, strlen(key), 64, 0, kq, sizeof kq);
        if (config_is_section(key)) {
            const char *eg = "";
            for (size_t i = 0; i < NKEYS && !*eg; i++)
                if (strncmp(config_schema[i].key, key, strlen(key)) == 0) eg = config_schema[i].key;
            snprintf(why, sizeof why, "is a section, not a key (set one of its keys, e.g. %s)", eg);
        } else
            unknown_key(key, why, sizeof why);
        return config_fail(err, "--set %s: error: %s: %s", label, kq, why);
    }
    if (parse_value(k, val, c, why, sizeof why) != 0) return config_fail(err, "--set %s: error: %s: %s", label, key, why);
    origin_set((int)(k - config_schema), ORIGIN_SET, label, 0, 0);
    return 0;
}

int config_set(Config *c, const char *assignment, ConfigError *err) {
    const char *eq = strchr(assignment, '=');
    char key[256], label[700];
    assignment_label(assignment, label, sizeof label);
    if (!eq) return config_fail(err, "--set %s: error: expected key=value", label);
    const char *ks = assignment, *ke = eq, *vs = eq + 1, *ve = eq + strlen(eq);
    while (ks < ke && (*ks == ' ' || *ks == '\t')) ks++;
    while (ke > ks && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
    while (vs < ve && (*vs == ' ' || *vs == '\t')) vs++;
    while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    if (ke == ks) return config_fail(err, "--set %s: error: expected key=value", label);
    if ((size_t)(ke - ks) >= sizeof key) { /* longer than any key */
        char kq[300];
        clip(ks, (size_t)(ke - ks), 64, 0, kq, sizeof kq);
        return config_fail(err, "--set %s: error: %s: unknown key", label, kq);
    }
    memcpy(key, ks, (size_t)(ke - ks));
    key[ke - ks] = '\0';
    char *val = malloc((size_t)(ve - vs) + 1);
    if (!val) return config_fail(err, "--set %s: error: out of memory", label);
    memcpy(val, vs, (size_t)(ve - vs));
    val[ve - vs] = '\0';
    int rc = set_pair(c, key, val, label, err);
    free(val);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Resolution                                                          */
/* ------------------------------------------------------------------ */

/* Every value in range, also for a Config filled in by code rather than
 * by config_load_file / config_set: print it and parse it back. */
static int check_ranges(const Config *r, ConfigError *err) {
    for (size_t i = 0; i < NKEYS; i++) {
        char text[64], why[800];
        Config scratch = *r;
        if (config_schema[i].type == CT_STRING) {
            const char *v = (const char *)r + config_schema[i].offset;
            if (parse_value(&config_schema[i], v, &scratch, why, sizeof why) != 0) return fail_key(err, (int)i, "%s", why);
            continue;
        }
        format_value(&config_schema[i], r, text, sizeof text, 0);
        if (parse_value(&config_schema[i], text, &scratch, why, sizeof why) != 0)
            return fail_key(err, (int)i, "%s", why);
    }
    if (!(r->yarn_alpha < r->yarn_beta)) {
        char a[32], b[32];
        format_double(r->yarn_alpha, a, sizeof a, 0);
        format_double(r->yarn_beta, b, sizeof b, 0);
        return fail_key(err, blame(key_index("model.yarn_alpha"), key_index("model.yarn_beta")),
                        "model.yarn_alpha must be below model.yarn_beta (alpha %s, beta %s)", a, b);
    }
    return 0;
}

/* The attention shape: n_kv_head, d_head and d_ff from their defaults (0),
 * and the checks that the model can be built from it. */
static int resolve_shape(Config *r, ConfigError *err) {
    const int i_d_model = key_index("model.d_model"), i_n_head = key_index("model.n_head");
    const int i_n_kv = key_index("model.n_kv_head"), i_d_head = key_index("model.d_head");
    if (r->n_kv_head == 0) r->n_kv_head = r->n_head;
    if (r->d_head == 0) {
        if (r->d_model % r->n_head != 0)
            return fail_key(err, blame(i_n_head, i_d_model),
                            "model.d_model (%d) is not divisible by model.n_head (%d); "
                            "change one of them or set model.d_head",
                            r->d_model, r->n_head);
        r->d_head = r->d_model / r->n_head;
        if (r->d_head % 2 != 0)
            return fail_key(err, blame(i_n_head, i_d_model),
                            "model.d_head = model.d_model / model.n_head = %d / %d = %d must be even "
                            "(RoPE rotates pairs of dimensions)",
                            r->d_model, r->n_head, r->d_head);
    }
    if (r->d_ff == 0) r->d_ff = (r->d_model + 2) / 3 * 8; /* ceil(8/3 d_model / 8) * 8 */

    if (r->n_kv_head < 1 || r->n_head % r->n_kv_head != 0)
        return fail_key(err, i_n_kv, "must divide model.n_head (n_head %d, n_kv_head %d)", r->n_head, r->n_kv_head);
    if (r->d_head % 2 != 0)
        return fail_key(err, i_d_head, "must be even (RoPE rotates pairs of dimensions), got %d", r->d_head);
    /* token counts are ints in the model: B*T, and B*T times the widest
     * per-token row (logits, SwiGLU, the fused projection), must fit */
    long long bt = (long long)r->batch * r->seq_len, wide = r->vocab_size;
    long long proj = (long long)(r->n_head + 2 * r->n_kv_head) * r->d_head + (long long)r->n_head * r->d_head;
    if (2LL * r->d_ff > wide) wide = 2LL * r->d_ff;
    if (proj > wide) wide = proj;
    if (r->d_model > wide) wide = r->d_model;
    if (bt * wide > INT_MAX)
        return fail_key(err, key_index("train.batch"),
                        "train.batch x model.seq_len = %lld tokens is too many for one step at this width "
                        "(at most %lld)",
                        bt, (long long)INT_MAX / wide);
    return 0;
}

/* data.bb.*: only with data.corpus bb (elsewhere a value would change the
 * run id and nothing else), and consistent there. */
static int check_bb(const Config *r, ConfigError *err) {
    const int i_corpus = key_index("data.corpus");
    if (r->corpus == CORPUS_BB) {
        const int i_bbv = key_index("data.bb.tokens");
        if (r->bb_triggers >= r->bb_tokens)
            return fail_key(err, blame(key_index("data.bb.triggers"), i_bbv),
                            "data.bb.triggers must be below data.bb.tokens (triggers %d, tokens %d)", r->bb_triggers,
                            r->bb_tokens);
        if (r->vocab_size < r->bb_tokens + 1)
            return fail_key(err, blame(key_index("model.vocab_size"), i_bbv),
                            "model.vocab_size (%d) must be at least data.bb.tokens + 1 = %d (the Bigram-Backcopy "
                            "tokens and BOS)",
                            r->vocab_size, r->bb_tokens + 1);
        if (!r->bos_start)
            return fail_key(err, blame(key_index("data.bos_start"), i_corpus),
                            "must be true with data.corpus bb (every Bigram-Backcopy sequence starts with BOS)");
        return 0;
    }
    for (size_t i = 0; i < NKEYS; i++)
        if (strncmp(config_schema[i].key, "data.bb.", 8) == 0 && !at_default(&config_schema[i], r))
            return fail_key(err, (int)i, "only used with data.corpus bb (data.corpus is %s)", corpus_names[r->corpus]);
    return 0;
}

/* model.match_params: the SwiGLU units the gate's parameters buy back,
 * taken from d_ff once (d_ff_matched). */
static int match_params(Config *r, ConfigError *err) {
    if (r->match_params && !r->d_ff_matched) {
        GateShape s = gate_shape(&r->gate, r->d_model, r->n_head, r->n_kv_head, r->d_head);
        /* Each SwiGLU unit holds 3 d_model weights (gate, up and down rows). */
        long cut = lround((double)s.wg_params / (3.0 * r->d_model));
        if ((long)r->d_ff - cut < 1)
            return fail_key(err, blame(key_index("model.match_params"), key_index("model.d_ff")),
                            "the gate adds %ld parameters per layer, more than model.d_ff (%d) can give back "
                            "(%ld SwiGLU units)",
                            s.wg_params, r->d_ff, cut);
        r->d_ff -= (int)cut;
    }
    r->d_ff_matched = r->match_params;
    return 0;
}

int config_resolve(Config *c, ConfigError *err) {
    if (c->resolved) return 0;
    Config r = *c; /* committed only on success */
    if (check_ranges(&r, err) || resolve_shape(&r, err) || check_bb(&r, err)) return -1;
    if (r.micro_batch > 0 && (r.micro_batch > r.batch || r.batch % r.micro_batch))
        return fail_key(err, key_index("train.micro_batch"), "must divide train.batch (batch %d, micro_batch %d)",
                        r.batch, r.micro_batch);

    const char *gkey = NULL;
    const char *gmsg = gate_validate(&r.gate, &gkey);
    if (gmsg) {
        const ConfigKey *gk = config_find(gkey);
        int gi = gk ? (int)(gk - config_schema) : key_index("model.gate.position");
        return fail_key(err, gi, "%s", gmsg);
    }

    const char *amsg = attn_validate(&r.attn, &r.gate, &gkey);
    if (amsg) {
        const ConfigKey *ak = config_find(gkey);
        return fail_key(err, ak ? (int)(ak - config_schema) : key_index("model.attention.normalizer"), "%s", amsg);
    }
    attn_kv_resolve(&r.attn, r.d_head);
    amsg = attn_kv_validate(&r.attn, &r.gate, r.n_head, r.n_kv_head, r.d_head, r.qk_norm, &gkey);
    if (amsg) {
        const ConfigKey *ak = config_find(gkey);
        int kv = key_index("model.attention.kv"); /* where the key at fault is a default: the kv line */
        return fail_key(err, blame(ak ? (int)(ak - config_schema) : kv, kv), "%s", amsg);
    }

    if (!(r.min_lr <= r.lr)) {
        char a[32], b[32];
        format_double(r.min_lr, a, sizeof a, 0);
        format_double(r.lr, b, sizeof b, 0);
        return fail_key(err, blame(key_index("train.min_lr"), key_index("train.lr")),
                        "train.min_lr must not exceed train.lr (min_lr %s, lr %s)", a, b);
    }
    if (match_params(&r, err)) return -1;
    r.resolved = 1;
    *c = r;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* Split a dotted key into its components (at most 8). */
static int split_key(const char *key, char parts[8][64]) {
    int n = 0;
    const char *s = key;
    for (;;) {
        const char *d = strchr(s, '.');
        size_t len = d ? (size_t)(d - s) : strlen(s);
        if (n < 8) snprintf(parts[n++], 64, "%.*s", (int)len, s);
        if (!d) break;
        s = d + 1;
    }
    return n;
}

void config_print(const Config *c, FILE *f) {
    char prev[8][64], cur[8][64], val[VALUE_CAP];
    int nprev = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        int n = split_key(config_schema[i].key, cur);
        int same = 0; /* leading sections shared with the previous key */
        while (same < n - 1 && same < nprev - 1 && strcmp(prev[same], cur[same]) == 0) same++;
        for (int j = same; j < n - 1; j++) fprintf(f, "%*s%s:\n", 2 * j, "", cur[j]);
        format_value(&config_schema[i], c, val, sizeof val, 0);
        fprintf(f, "%*s%s: %s\n", 2 * (n - 1), "", cur[n - 1], val);
        memcpy(prev, cur, sizeof prev);
        nprev = n;
    }
}

typedef struct {
    char *buf;
    size_t cap, len;
} Out;

static void out_str(Out *o, const char *s) {
    size_t n = strlen(s);
    if (o->cap > 0 && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

/* config_to_json and config_to_json_full: omit says whether omit_default
 * keys at their default are left out. */
static int to_json(const Config *c, char *buf, size_t cap, int omit) {
    Out o = {buf, cap, 0};
    char val[VALUE_CAP];
    int first = 1;
    out_str(&o, "{");
    for (size_t i = 0; i < NKEYS; i++) {
        if (omit && config_schema[i].omit_default && at_default(&config_schema[i], c)) continue;
        if (!first) out_str(&o, ",");
        first = 0;
        out_str(&o, "\"");
        out_str(&o, config_schema[i].key);
        out_str(&o, "\":");
        format_value(&config_schema[i], c, val, sizeof val, 1);
        out_str(&o, val);
    }
    out_str(&o, "}");
    if (cap > 0) buf[o.len < cap ? o.len : cap - 1] = '\0';
    return (int)o.len;
}

int config_to_json(const Config *c, char *buf, size_t cap) { return to_json(c, buf, cap, 1); }
int config_to_json_full(const Config *c, char *buf, size_t cap) { return to_json(c, buf, cap, 0); }

int config_from_json(Config *c, const char *json, ConfigError *err) {
    const char *s = json;
    while (*s == ' ') s++;
    if (*s++ != '{') return config_fail(err, "config JSON: expected '{'");
    while (*s && *s != '}') {
        char key[256], val[VALUE_CAP], label[700];
        if (*s == ',') s++;
        const char *at = s;
        if (!(s = json_unquote(s, key, sizeof key)) || *s++ != ':')
            return config_fail(err, "config JSON: expected \"key\": near offset %ld", (long)(at - json));
        if (*s == '"') {
            if (!(s = json_unquote(s, val, sizeof val)))
                return config_fail(err, "config JSON: %s: bad or too long string", key);
        } else {
            size_t n = strcspn(s, ",}");
            if (n >= sizeof val) return config_fail(err, "config JSON: %s: value too long", key);
            memcpy(val, s, n);
            val[n] = 0;
            s += n;
        }
        char kq[300], vq[300];
        clip(key, strlen(key), 64, 0, kq, sizeof kq);
        clip(val, strlen(val), 64, 0, vq, sizeof vq);
        snprintf(label, sizeof label, "%s=%s", kq, vq);
        if (set_pair(c, key, val, label, err)) return -1;
    }
    if (*s != '}') return config_fail(err, "config JSON: missing '}'");
    c->d_ff_matched = c->match_params; /* stored JSON is resolved: its d_ff is already cut */
    return 0;
}

int config_same_architecture(const Config *a, const Config *b, char *why, size_t cap) {
    /* keys that may differ between a checkpoint and the run continuing it */
    static const char *const free_keys[] = {"model.seq_len", "model.rope_base", "model.rope_scaling",
                                             "model.rope_factor", "model.rope_train_len", "model.yarn_alpha",
                                             "model.yarn_beta", NULL};
    for (size_t i = 0; i < NKEYS; i++) {
        const ConfigKey *k = &config_schema[i];
        if (strncmp(k->key, "model.", 6) != 0 || name_index(free_keys, k->key) >= 0) continue;
        char va[VALUE_CAP], vb[VALUE_CAP];
        format_value(k, a, va, sizeof va, 0);
        format_value(k, b, vb, sizeof vb, 0);
        if (strcmp(va, vb) != 0) {
            snprintf(why, cap, "%s differs (%s vs %s)", k->key, va, vb);
            return 0;
        }
    }
    return 1;
}

RopeScaling rope_of_config(const Config *c) {
    RopeScaling r = {c->rope_scaling, c->rope_base, c->rope_factor, c->rope_train_len > 0 ? c->rope_train_len : c->seq_len,
                     c->yarn_alpha, c->yarn_beta};
    return r;
}

BBCfg config_bb(const Config *c) {
    BBCfg b = {c->bb_tokens, c->bb_triggers, c->bb_source, c->bb_alpha, (uint64_t)c->bb_seed, c->bb_first};
    return b;
}

ModelCfg config_model(const Config *c) {
    ModelCfg m = {c->vocab_size, c->d_model, c->n_layer, c->n_head, c->n_kv_head, c->d_head, c->d_ff,
                  c->seq_len, c->qk_norm, c->norm_eps, c->init_std, c->seed, c->gate, rope_of_config(c), c->attn};
    return m;
}
