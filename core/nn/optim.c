/* optim.c — see optim.h. */
#include "nn/optim.h"

#include <math.h>
#include <stdlib.h>

enum { NORM_BLOCK = 1 << 14 };

double grad_norm(const Arena *a) {
    size_t nb = (a->total + NORM_BLOCK - 1) / NORM_BLOCK;
    double total = 0;
    /* blocks are summed in parallel, then added in block order; a block's
     * result does not depend on which thread computed it */
    double part[64];
    for (size_t b0 = 0; b0 < nb; b0 += 64) {
        size_t bn = nb - b0 < 64 ? nb - b0 : 64;
#pragma omp parallel for schedule(static)
        for (size_t b = 0; b < bn; b++) {
            size_t lo = (b0 + b) * NORM_BLOCK, hi = lo + NORM_BLOCK;
            if (hi > a->total) hi = a->total;
            double s = 0;
            for (size_t i = lo; i < hi; i++) s += (double)a->g[i] * a->g[i];
            part[b] = s;
        }
        for (size_t b = 0; b < bn; b++) total += part[b];
    }
    return sqrt(total);
}

double adamw_step(Arena *a, const AdamW *o, long t) {
    double norm = grad_norm(a);
    real gscale = 1;
    if (o->grad_clip > 0 && norm > o->grad_clip) gscale = (real)(o->grad_clip / (norm + 1e-6));
    real b1 = (real)o->beta1, b2 = (real)o->beta2, lr = (real)o->lr, eps = (real)o->eps;
    real bc1 = (real)(1 - pow(o->beta1, (double)t)), bc2 = (real)(1 - pow(o->beta2, (double)t));
    for (int k = 0; k < a->n; k++) {
        const Tensor *tn = &a->t[k];
        if (tn->frozen) continue;
        real decay = tn->decay ? (real)(1 - o->lr * o->weight_decay) : 1;
        real *w = a->w + tn->off, *g = a->g + tn->off, *m = a->m + tn->off, *v = a->v + tn->off;
        long n = (long)tn->n;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            real gi = g[i] * gscale;
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            w[i] = w[i] * decay - lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + eps);
        }
    }
    return norm;
}

double lr_schedule(long step, long steps, long warmup, double lr, double min_lr) {
    if (warmup > 0 && step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (steps <= warmup) return lr;
    double p = (double)(step - warmup) / (double)(steps - warmup);
    if (p > 1) p = 1;
    return min_lr + 0.5 * (lr - min_lr) * (1 + cos(M_PI * p));
}
