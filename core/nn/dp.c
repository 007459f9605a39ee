/*
 * dp.c — data-parallel training step (see dp.h for the design and its
 * determinism argument).
 */
#include "nn/dp.h"
#include "nn/ops.h"
#include "nn/sparse.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

int dp_micro_batch(int batch, int micro_batch) {
    if (micro_batch > 0) return micro_batch;
    int mb = batch < DP_DEFAULT_MB ? batch : DP_DEFAULT_MB;
    while (mb > 1 && batch % mb) mb--;
    return mb > 0 ? mb : 1;
}

/* A worker: the master's layout and weights, its own gradients (the only
 * arena array it allocates) and, on first use, its own activations. */
static int worker_init(Model *w, const Model *m) {
    if (model_layout(w, &m->cfg)) return -1;
    w->rope = m->rope;
    w->p.g = calloc(w->p.total ? w->p.total : 1, sizeof(real));
    if (!w->p.g) {
        model_free(w);
        return -1;
    }
    w->p.w = m->p.w;
    return 0;
}

static void worker_free(Model *w) {
    w->p.w = NULL; /* the master's */
    model_free(w);
}

int dp_init(DataParallel *d, Model *m, int B, int mb) {
    memset(d, 0, sizeof *d);
    if (mb <= 0 || B <= 0 || B % mb) {
        errno = EINVAL;
        return -1;
    }
    d->m = m;
    d->B = B;
    d->mb = mb;
    d->nmb = B / mb;
    if (d->nmb == 1) return 0;
    d->w = calloc((size_t)d->nmb, sizeof *d->w);
    d->status = calloc((size_t)d->nmb, sizeof *d->status);
    d->loss = calloc((size_t)d->nmb, sizeof *d->loss);
    if (!d->w || !d->status || !d->loss) goto oom;
    for (int i = 0; i < d->nmb; i++)
        if (worker_init(&d->w[i], m)) {
            for (int j = 0; j < i; j++) worker_free(&d->w[j]);
            free(d->w);
            d->w = NULL;
            goto oom;
        }
    return 0;
oom:
    free(d->w);
    free(d->status);
    free(d->loss);
    memset(d, 0, sizeof *d);
    errno = ENOMEM;
    return -1;
}

void dp_free(DataParallel *d) {
    if (d->w)
        for (int i = 0; i < d->nmb; i++) worker_free(&d->w[i]);
    free(d->w);
    free(d->status);
    free(d->loss);
    memset(d, 0, sizeof *d);
}

double dp_step(DataParallel *d, const int *tokens, const int *targets, int T, int *bad_backward) {
    *bad_backward = 0;
    Model *m = d->m;
    if (d->nmb == 1) {
        errno = 0;
        double loss = model_forward(m, tokens, targets, d->B, T);
        if (isnan(loss) && errno == ENOMEM) return NAN;
        model_zero_grad(m);
        if (model_backward(m, tokens)) *bad_backward = 1;
        return loss;
    }
    int nmb = d->nmb;
    size_t ntok = (size_t)d->mb * T;
    double *loss = d->loss;
    ops_blas_single(); /* before the region: inside it the workers' gemms must not set it */
    omp_set_max_active_levels(1); /* the kernels' own regions run with a team of one in a worker */
    /* one micro-batch per iteration, forward and backward on one thread;
     * nested regions inside the kernels run with a team of one */
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < nmb; i++) {
        Model *w = &d->w[i];
        w->step = m->step;
        errno = 0; /* thread-local */
        loss[i] = model_forward(w, tokens + (size_t)i * ntok, targets + (size_t)i * ntok, d->mb, T);
        d->status[i] = 0;
        if (isnan(loss[i]) && errno == ENOMEM) {
            d->status[i] = -2;
            continue;
        }
        model_zero_grad(w);
        if (model_backward(w, tokens + (size_t)i * ntok)) d->status[i] = -1;
    }
    double sum = 0;
    for (int i = 0; i < nmb; i++) {
        if (d->status[i] == -2) {
            errno = ENOMEM;
            return NAN;
        }
        if (d->status[i]) *bad_backward = 1;
        sum += loss[i];
    }
    /* gradients: each element summed in micro-batch order, then scaled to
     * the mean over micro-batches (their losses are means already) */
    real scale = (real)1 / (real)nmb, *g = m->p.g;
    size_t total = m->p.total;
    enum { CH = 4096 };
    size_t nch = (total + CH - 1) / CH;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nch; c++) {
        size_t lo = c * CH, hi = lo + CH < total ? lo + CH : total;
        memcpy(g + lo, d->w[0].p.g + lo, sizeof(real) * (hi - lo));
        for (int i = 1; i < nmb; i++) {
            const real *gi = d->w[i].p.g;
            for (size_t j = lo; j < hi; j++) g[j] += gi[j];
        }
        for (size_t j = lo; j < hi; j++) g[j] *= scale;
    }
    return sum / nmb;
}

double dp_indexer_kl(const DataParallel *d, int *warm) {
    *warm = sparse_warm(d->nmb == 1 ? d->m : &d->w[0]);
    if (d->nmb == 1) return sparse_indexer_kl(d->m);
    double sum = 0;
    for (int i = 0; i < d->nmb; i++) sum += sparse_indexer_kl(&d->w[i]);
    return sum / d->nmb;
}

int dp_memory_estimate(const ModelCfg *cfg, int B, int mb, int T, ModelMemory *out) {
    if (model_memory_estimate(cfg, B, T, out)) return -1;
    if (mb <= 0 || mb >= B) return 0;
    ModelMemory w;
    if (model_memory_estimate(cfg, mb, T, &w)) return -1;
    size_t nmb = (size_t)(B / mb), grads = sizeof(real) * (size_t)w.nparams;
    out->activations += nmb * w.activations;
    out->scratch = nmb * (w.scratch + grads); /* the master never runs a backward */
    out->total = out->params + out->activations + out->scratch;
    return 0;
}
