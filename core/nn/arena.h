/*
 * arena.h — one allocation for all parameters, with named views.
 *
 * Weights, gradients and the two AdamW moments share one layout, so the
 * optimizer, clipping, checkpointing and dumps are flat loops over
 * `total` values.  Views are laid out in the order they are added with no
 * padding: views added back to back form one matrix (the fused q|k|v|gate
 * projection, the fused SwiGLU gate|up), which a single sgemm can use.
 */
#ifndef GATED_ARENA_H
#define GATED_ARENA_H

#include <stddef.h>
#include "nn/real.h"

typedef struct {
    char name[48];
    int ndim;
    int shape[3];
    size_t off; /* offset in values from the arena start */
    size_t n;   /* number of values */
    int decay;  /* 1: AdamW weight decay applies (matrices), 0: norms, static gates */
    int frozen; /* 1: adamw_step leaves it (and its moments) alone (the sparse indexer's warm-up) */
} Tensor;

typedef struct {
    Tensor *t;
    int n, cap;
    size_t total;
    real *w, *g, *m, *v; /* weights, grads, AdamW first/second moments */
    int failed;          /* an arena_add ran out of memory: arena_alloc refuses */
} Arena;

/* Declare a view; returns its index or -1 on allocation failure (which
 * also makes arena_alloc fail, so callers may check once, there). */
int arena_add(Arena *a, const char *name, int decay, int ndim, int d0, int d1, int d2);
/* Allocate w/g/m/v (zeroed) once every view is declared.  0 or -1. */
int arena_alloc(Arena *a);
void arena_free(Arena *a);
/* Index of a view by name, or -1. */
int arena_find(const Arena *a, const char *name);
#define AW(a, i) ((a)->w + (a)->t[i].off)
#define AG(a, i) ((a)->g + (a)->t[i].off)

#endif
