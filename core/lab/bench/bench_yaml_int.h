/*
 * bench_yaml_int.h — the YAML toolkit of a benchmark suite's loader
 * (bench_yaml.c), shared by bench_suite.c's case parsers: the loader's
 * state, "FILE:LINE:COL: error: WHERE: reason" errors, typed scalars, key
 * checks, a step case's config built through run/config, new cases.
 * Internal to core/lab/bench/.
 */
#ifndef GATED_BENCH_YAML_INT_H
#define GATED_BENCH_YAML_INT_H

#include <stddef.h>
#include <yaml.h>

#include "lab/bench/bench.h"
#include "run/config.h"

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

__attribute__((format(printf, 4, 5))) int bl_berr(BL *L, const yaml_node_t *n, const char *where,
                                                  const char *fmt, ...);
const char *bl_kind_text(const yaml_node_t *n);
yaml_node_t *bl_node(BL *L, int id);
const char *bl_scalar(const yaml_node_t *n);
int bl_check_keys(BL *L, const yaml_node_t *map, const char *where, const char *const *allowed);
yaml_node_t *bl_get(BL *L, const yaml_node_t *map, const char *key);
void bl_sub(char *buf, size_t cap, const char *where, const char *key);
int bl_want_scalar(BL *L, const yaml_node_t *v, const char *where);
int bl_parse_long(BL *L, const yaml_node_t *v, const char *where, long lo, long hi, long *out);
int bl_parse_int(BL *L, const yaml_node_t *v, const char *where, int lo, int hi, int *out);
int bl_parse_num(BL *L, const yaml_node_t *v, const char *where, double lo, double hi, double *out);
int bl_parse_bool(BL *L, const yaml_node_t *v, const char *where, int *out);
int bl_parse_label(BL *L, const yaml_node_t *v, const char *where, char *out, size_t cap);
int bl_items(BL *L, yaml_node_t *v, const char *where, yaml_node_t **out, int cap, int *n);
int bl_build_config(BL *L, const yaml_node_t *model_node, const char *mname, const yaml_node_t *vset,
                    const char *extra, const char *vwhere, const yaml_node_t *at, const char *ctx, Config *c);
BenchCase *bl_new_case(BL *L, const yaml_node_t *item, int item_index, int kind);
int bl_timing(BL *L, const yaml_node_t *map, const char *where, int *reps, int *warm, long *iters,
              double *mt);
int bl_finish_item(BL *L, const yaml_node_t *item, const char *where, int first);

#endif
