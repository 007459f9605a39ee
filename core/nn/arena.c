/* arena.c — see arena.h. */
#include "nn/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int arena_add(Arena *a, const char *name, int decay, int ndim, int d0, int d1, int d2) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 32;
        Tensor *t = realloc(a->t, sizeof(Tensor) * (size_t)cap);
        if (!t) {
            a->failed = 1;
            return -1;
        }
        a->t = t;
        a->cap = cap;
    }
    Tensor *t = &a->t[a->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    int dims[3] = {d0, d1, d2};
    t->n = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = dims[i];
        t->n *= (size_t)dims[i];
    }
    t->off = a->total;
    t->decay = decay;
    a->total += t->n;
    return a->n++;
}

int arena_alloc(Arena *a) {
    if (a->failed) return -1;
    size_t bytes = sizeof(real) * (a->total ? a->total : 1);
    a->w = calloc(1, bytes);
    a->g = calloc(1, bytes);
    a->m = calloc(1, bytes);
    a->v = calloc(1, bytes);
    if (!a->w || !a->g || !a->m || !a->v) {
        arena_free(a);
        return -1;
    }
    return 0;
}

void arena_free(Arena *a) {
    free(a->t);
    free(a->w);
    free(a->g);
    free(a->m);
    free(a->v);
    memset(a, 0, sizeof *a);
}

int arena_find(const Arena *a, const char *name) {
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->t[i].name, name) == 0) return i;
    return -1;
}
