/*
 * sweep_int.h — what sweep.c (the document: top-level keys, seeds, runs,
 * names) and sweep_rows.c (override mappings, variants, grid and zip
 * parameters) share: the parser's state, its small helpers and the row
 * types.  Not part of the library's interface.
 */
#ifndef GATED_SWEEP_INT_H
#define GATED_SWEEP_INT_H

#include <stddef.h>
#include <yaml.h>

#include "lab/sweep/sweep.h"
#include "run/config.h"

/* Grids larger than this are refused (a typo like 1000 values per key). */
#define SWEEP_MAX_RUNS 100000

typedef struct {
    char *text; /* "key=value" */
    char *key;
    int kl, kc; /* where the key is written (1-based) */
    int vl, vc; /* where the value is written */
} Ov;

typedef struct {
    Ov *v;
    int n, cap;
} OvList;

typedef struct {
    char *label;
    char where[48]; /* "variants[2]" or "parameters" */
    int line, col;
    int ll, lc; /* where a variant's label is written */
    OvList ov;
} Row;

typedef struct {
    char *key;
    int kl, kc;
    int is_const; /* {value: x} */
    int n;        /* number of values */
    char **vals;
    int *vl, *vc;
    char *leaf; /* label name: last component, or the whole key if ambiguous */
} Param;

typedef struct {
    const char *path;
    yaml_document_t *doc;
    ConfigError *err;
    Config scratch; /* config_set target for validating single overrides */
} P;

/* Growable string. */
typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} Buf;

int sw_nline(const yaml_node_t *n);
int sw_ncol(const yaml_node_t *n);
int sw_oom(P *p);
void sw_buf_str(Buf *b, const char *s);

#define PERR_NODE(p, n, key, ...) sw_perr((p), sw_nline(n), sw_ncol(n), (key), __VA_ARGS__)

int sw_parse_set_node(P *p, yaml_node_t *vn, OvList *l, const char *what);
void sw_rows_free(Row *rows, int n);
char *sw_quote_name(const char *v, char *out, size_t cap);
int sw_check_name(P *p, const yaml_node_t *n, const char *key, const char *v);
/* store_name_check, and at most max bytes: 0, or -1 with why set. */
int sw_name_ok(const char *v, size_t max, char *why, size_t cap);
int sw_parse_variants(P *p, yaml_node_t *seq, Row **out, int *nout);
void sw_params_free(Param *ps, int n);
int sw_parse_parameters(P *p, yaml_node_t *map, Param **out, int *nout);
int sw_expand_params(P *p, Param *ps, int np, int zip, int line, int col, Row **out, int *nout);
int sw_perr(P *p, int line, int col, const char *key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The first of strs[0..n) (in order) equal to an earlier one: its index
 * into *later and that of the earliest equal one into *first.  1 found, 0
 * none, -1 out of memory.  O(n log n): a list may hold 100,000 values. */
int sw_first_dup(char *const *strs, int n, int *first, int *later);
char *sw_xstrdup(const char *s);
const char *sw_node_kind(const yaml_node_t *n);
int sw_is_null(const yaml_node_t *n);
const char *sw_scalar(const yaml_node_t *n);
const char *sw_got(const yaml_node_t *n, char *buf, size_t cap);
void sw_unknown_among(const char *key, const char *const *names, char *why, size_t cap);
char *sw_buf_take(Buf *b);
void sw_ov_free(OvList *l);
int sw_ov_push(P *p, OvList *l, const char *key, const char *val, int kl, int kc, int vl, int vc);
int sw_check_override(P *p, const char *key, const char *val, int kl, int kc, int vl, int vc);
int sw_dup_in_mapping(P *p, yaml_node_t *map, yaml_node_pair_t *pair, const char *name, const char *full);

#endif
