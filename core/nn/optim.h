/*
 * optim.h — AdamW with decoupled weight decay and global grad-norm clipping.
 *
 * Works on the whole parameter arena as flat arrays.  Weight decay applies
 * only to tensors marked `decay` (matrices and the embedding), never to norm
 * weights or static gate parameters; tensors marked `frozen` are skipped
 * (no update, no decay, moments kept).  The update matches torch.optim.AdamW:
 *   w *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
 */
#ifndef GATED_OPTIM_H
#define GATED_OPTIM_H

#include "nn/arena.h"

typedef struct {
    double lr, beta1, beta2, eps, weight_decay, grad_clip; /* grad_clip 0 = off */
} AdamW;

/* Global L2 norm of the gradients, summed in fixed-size blocks in a fixed
 * order (bitwise identical for any thread count). */
double grad_norm(const Arena *a);

/* One AdamW step (t counts from 1).  Clips first when grad_clip > 0.
 * Returns the pre-clip gradient norm. */
double adamw_step(Arena *a, const AdamW *o, long t);

/* Learning rate at step (0-based): linear warmup over `warmup` steps, then
 * cosine decay from lr to min_lr at `steps`. */
double lr_schedule(long step, long steps, long warmup, double lr, double min_lr);

#endif
