/* quant.c — see quant.h. */
#include "nn/quant.h"

#include <math.h>

real quant_scale(real amax, int bits) { return amax / (real)((1L << (bits - 1)) - 1); }

/* max |x| over the block; NAN when any value is not finite. */
static real block_max(const real *x, int n, int k, int ld) {
    real m = 0;
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            real a = fabs(x[(size_t)i * ld + j]);
            bad |= !isfinite(a);
            if (a > m) m = a;
        }
    return bad ? NAN : m;
}

/* Quantize-dequantize the block (n x k, stride ld) with its own scale:
 * 1 when it was left unchanged (non-finite maximum), else 0. */
static int block_quant(real *x, int n, int k, int ld, int bits) {
    real amax = block_max(x, n, k, ld);
    if (!isfinite(amax)) return 1;
    if (amax == 0) return 0;
    real s = quant_scale(amax, bits), qmax = (real)((1L << (bits - 1)) - 1);
    if (!(s > 0) || !isfinite(s)) return 1; /* a subnormal maximum: the scale underflowed */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            real *v = &x[(size_t)i * ld + j];
            real q = rint(*v / s);
            if (q > qmax) q = qmax;
            if (q < -qmax) q = -qmax;
            real y = s * q; /* s * qmax may round past amax (and past the largest float) */
            *v = y > amax ? amax : y < -amax ? -amax : y;
        }
    return 0;
}

long quant_rows(real *x, int n, int k, int ld, int bits, int group) {
    if (group <= 0 || group > k) group = k;
    long bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j += group)
            bad += block_quant(x + (size_t)i * ld + j, 1, j + group <= k ? group : k - j, ld, bits);
    return bad;
}

long quant_tensor(real *x, int n, int k, int ld, int bits) { return block_quant(x, n, k, ld, bits); }
