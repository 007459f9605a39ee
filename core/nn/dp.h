/*
 * dp.h — data-parallel training step: the batch cut into micro-batches.
 *
 * A step's batch of B sequences is cut into B / mb micro-batches of mb
 * sequences, mb fixed by the config (train.micro_batch), never by the
 * thread count.  Each micro-batch has a worker: a Model that shares the
 * master's weights and owns its activations and gradient buffer.  OpenMP
 * threads take whole micro-batches, forward and backward, each entirely on
 * one thread (the kernels' own parallel loops and gemm's tiles run inside
 * with a team of one); then the gradient buffers are summed element by
 * element in micro-batch order into the master's gradients.  No value's
 * reduction order depends on how many threads there are or which thread
 * ran which micro-batch, so the step is bitwise the same for any thread
 * count, and the threads never synchronise inside a matmul.
 *
 * With one micro-batch (mb = B) the master runs the step itself, exactly
 * as model_forward + model_backward.
 */
#ifndef GATED_DP_H
#define GATED_DP_H

#include "nn/model.h"

typedef struct {
    Model *m;   /* the master: weights, the summed gradients, optimizer state */
    int B, mb;  /* sequences per step and per micro-batch (mb divides B) */
    int nmb;    /* B / mb */
    Model *w;   /* nmb workers (NULL when nmb == 1) */
    int *status;  /* per worker: 0, -1 (backward out of memory) or -2 (forward out of memory) */
    double *loss; /* per worker: its micro-batch's mean loss in the last step */
} DataParallel;

/* Workers for master m, batches of B sequences cut into mb.  0, or -1 with
 * errno (EINVAL: mb does not divide B; ENOMEM). */
int dp_init(DataParallel *d, Model *m, int B, int mb);
void dp_free(DataParallel *d);

/* One step's forward and backward over tokens/targets (B, T): the master's
 * gradients are SET to d(mean loss)/d(param) (no zeroing needed before).
 * Returns the mean loss (the micro-batches' mean losses averaged in order),
 * NAN with errno ENOMEM when a worker could not allocate; *bad_backward is
 * set when the loss was computed but a backward failed. */
double dp_step(DataParallel *d, const int *tokens, const int *targets, int T, int *bad_backward);

/* The indexer's mean KL in the last dp_step (sparse_indexer_kl): the mean
 * over the micro-batches in their order (NAN: sparse_indexer_kl's); *warm:
 * whether that step was in the indexer's dense warm-up (sparse_warm). */
double dp_indexer_kl(const DataParallel *d, int *warm);

/* The memory of a training step of cfg with batch B cut into micro-batches
 * of mb, in bytes: the master's parameters (4x: weights, gradients, AdamW
 * moments) and activations for a forward over B sequences (evaluation),
 * plus, with more than one micro-batch, each worker's gradient buffer,
 * activations and backward scratch for mb sequences.  0 or -1. */
int dp_memory_estimate(const ModelCfg *cfg, int B, int mb, int T, ModelMemory *out);

/* The micro-batch size the config asks for: train.micro_batch, or when 0,
 * the largest divisor of the batch that is at most DP_DEFAULT_MB. */
#define DP_DEFAULT_MB 4
int dp_micro_batch(int batch, int micro_batch);

#endif
