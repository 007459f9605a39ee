/*
 * quant.h — simulated ("fake") integer quantization: symmetric
 * round-to-nearest quantize-then-dequantize of real tensors, the way
 * evaluation applies it to weights and to the inputs of linear layers
 * (run/infer.h).  Nothing here is used in training.
 *
 * One block of values x with b bits:
 *
 *     qmax = 2^(b-1) - 1,   s = max|x| / qmax,
 *     x -> s * clamp(rint(x / s), -qmax, qmax)
 *
 * rint rounds half to even (the default rounding mode; torch.round does
 * the same), so the result is a fixed function of the block, clamped to
 * [-max|x|, max|x|].  A block of zeros stays zero; a block whose maximum is
 * not finite, or so small that its scale underflows, is left unchanged and
 * counted (the return value).  Error bound per element: |x - q(x)| <=
 * s / 2 (up to float round-off in x / s and s * q).
 *
 * Blocks:
 *   quant_rows    each of n rows (width k, stride ld) in groups of `group`
 *                 consecutive columns (group <= 0 or >= k: the whole row):
 *                 per output channel of a weight (W is N x K, a row per
 *                 output), per group along the input, per token of an
 *                 activation;
 *   quant_tensor  one scale for all n x k values (per-tensor, dynamic: the
 *                 maximum of this tensor, no calibration set).
 */
#ifndef GATED_QUANT_H
#define GATED_QUANT_H

#include "nn/real.h"

#define QUANT_MIN_BITS 2
#define QUANT_MAX_BITS 16

/* In place.  bits in [QUANT_MIN_BITS, QUANT_MAX_BITS].  Returns the number
 * of blocks left unchanged because their maximum was not finite. */
long quant_rows(real *x, int n, int k, int ld, int bits, int group);
long quant_tensor(real *x, int n, int k, int ld, int bits);

/* The scale of one block of values with maximum magnitude amax. */
real quant_scale(real amax, int bits);

#endif
