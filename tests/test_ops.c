/*
 * test_ops.c — kernels of nn/ops.h whose fast form must keep the bits of
 * the plain one: rmsnorm_forward runs several rows' sums of squares side
 * by side (issue 26); every output and rstd must equal, bit for bit, what
 * a row computed alone gives (the code it replaced, kept here as the
 * reference), for row counts around the block size, groups (the QK-norm's
 * heads), strides wider than the row, and 1 or 2 threads.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops.h"
#include "nn/rng.h"
#include "testutil.h"

/* One row (group) at a time: the arithmetic training results were made with. */
static void rmsnorm_ref(real *out, int so, real *rstd, const real *x, int s, const real *w, int n, int g, int d,
                        real eps) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < g; j++) {
            const real *xr = x + (size_t)i * s + (size_t)j * d;
            real *or_ = out + (size_t)i * so + (size_t)j * d;
            real ss = 0;
            for (int c = 0; c < d; c++) ss += xr[c] * xr[c];
            real r = 1 / sqrt(ss / d + eps);
            rstd[(size_t)i * g + j] = r;
            for (int c = 0; c < d; c++) or_[c] = xr[c] * r * w[c];
        }
}

Test(ops, rmsnorm_forward_bitwise_as_one_row_at_a_time) {
    Rng r = rng_seed(26);
    const int gs[] = {1, 3, 4}, ds[] = {5, 32, 64, 256};
    for (int th = 1; th <= 2; th++) {
        set_threads(th);
        for (int n = 1; n <= 17; n++)
            for (int gi = 0; gi < 3; gi++)
                for (int di = 0; di < 4; di++) {
                    int g = gs[gi], d = ds[di], s = g * d + 3, so = g * d + 1;
                    real *x = malloc(sizeof(real) * (size_t)n * s), *w = malloc(sizeof(real) * d);
                    real *o1 = calloc((size_t)n * so, sizeof(real)), *o2 = calloc((size_t)n * so, sizeof(real));
                    real *r1 = malloc(sizeof(real) * n * g), *r2 = malloc(sizeof(real) * n * g);
                    cr_assert(x && w && o1 && o2 && r1 && r2);
                    for (int i = 0; i < n * s; i++) x[i] = (real)(rng_normal(&r) * 3);
                    for (int c = 0; c < d; c++) w[c] = (real)(1 + 0.1 * rng_normal(&r));
                    rmsnorm_ref(o1, so, r1, x, s, w, n, g, d, (real)1e-6);
                    rmsnorm_forward(o2, so, r2, x, s, w, n, g, d, (real)1e-6);
                    cr_expect(memcmp(o1, o2, sizeof(real) * (size_t)n * so) == 0, "out: n %d g %d d %d, %d threads",
                              n, g, d, th);
                    cr_expect(memcmp(r1, r2, sizeof(real) * n * g) == 0, "rstd: n %d g %d d %d, %d threads", n, g, d,
                              th);
                    free(x), free(w), free(o1), free(o2), free(r1), free(r2);
                }
    }
    set_threads(1);
}
