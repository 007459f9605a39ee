/* rope.c — see rope.h. */
#include "nn/rope.h"

#include <math.h>

const char *const rope_scaling_names[] = {"none", "linear", "ntk", "yarn", NULL};

RopeScaling rope_plain(double base) {
    RopeScaling r = {ROPE_NONE, base, 1.0, 0, 1.0, 32.0};
    return r;
}

double rope_yarn_ramp(double r, double alpha, double beta) {
    if (r < alpha) return 0;
    if (r > beta) return 1;
    return (r - alpha) / (beta - alpha);
}

void rope_inv_freq(const RopeScaling *r, int d, double *inv) {
    double s = r->factor > 1 ? r->factor : 1, base = r->base;
    if (r->kind == ROPE_NTK) base *= pow(s, (double)d / (d - 2));
    for (int k = 0; k < d / 2; k++) {
        double th = pow(base, -2.0 * k / d);
        switch (r->kind) {
        case ROPE_LINEAR: th /= s; break;
        case ROPE_YARN: {
            double lambda = 2 * M_PI / th, g = rope_yarn_ramp(r->train_len / lambda, r->alpha, r->beta);
            th = (1 - g) * th / s + g * th;
            break;
        }
        default: break;
        }
        inv[k] = th;
    }
}

double rope_mscale(const RopeScaling *r) { return r->kind == ROPE_YARN && r->factor > 1 ? 0.1 * log(r->factor) + 1 : 1; }

int rope_tables(real *cos_t, real *sin_t, int T, int d, const RopeScaling *r) {
    double inv[4096];
    int half = d / 2;
    if (half > 4096) return -1;
    rope_inv_freq(r, d, inv);
    double m = rope_mscale(r);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < half; k++) {
            double a = t * inv[k];
            cos_t[(size_t)t * half + k] = (real)(m * cos(a));
            sin_t[(size_t)t * half + k] = (real)(m * sin(a));
        }
    return 0;
}
