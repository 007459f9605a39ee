/*
 * indexer_kl.c — the lightning indexer's training loss (DeepSeek-V3.2-Exp;
 * sparse.h): per query row t and a key set U_t,
 *
 *   p_t(s) = (1/H) sum_h softmax_{U_t}(scale q_{t,h}.k_s)   (the layer's attention, heads summed, L1-normalised)
 *   r_t(s) = softmax_{U_t}(I(t, s))
 *   KL_t   = sum_{s in U_t} p_t(s) (log p_t(s) - log r_t(s)),   dKL_t/dI(t, s) = r_t(s) - p_t(s),
 *
 * with U_t every key s <= t in the dense warm-up and the selection S_t in
 * sparse training.  p_t is a constant target (no gradient reaches q or k).
 * Rows are independent; the per-row sums are added in row order.
 */
#include "nn/sparse.h"

#include "nn/dots_t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Softmax of x[0..n) in place. */
static void softmax_inplace(real *x, int n) {
    real mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) sum += (x[i] = exp(x[i] - mx));
    for (int i = 0; i < n; i++) x[i] /= sum;
}

/* One row: the set U (n keys), the target p, the indexer's r; dI's row
 * (zeroed, then r - p times g on U); returns KL_t.  The scores are dot8()'s
 * (dots_t.h), as the sparse attention's. */
static double kl_row(real *dI_row, const real *isc_row, const int *U, int n, const real *q_t, int sq_h,
                     const real *k, int sk, size_t kbase, int H, int grp, int d, real scale, real g, real *p,
                     real *sc) {
    for (int i = 0; i < n; i++) p[i] = 0;
    for (int h = 0; h < H; h++) {
        const real *qh = q_t + (size_t)h * sq_h;
        size_t off = (size_t)(h / grp) * d;
        for (int i = 0; i < n; i++) sc[i] = scale * dot8(qh, k + (kbase + (size_t)U[i]) * sk + off, d);
        softmax_inplace(sc, n);
        for (int i = 0; i < n; i++) p[i] += sc[i] / H;
    }
    for (int i = 0; i < n; i++) sc[i] = isc_row[U[i]];
    softmax_inplace(sc, n);
    double kl = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] > 0) kl += (double)p[i] * (log((double)p[i]) - log((double)sc[i]));
        dI_row[U[i]] = g * (sc[i] - p[i]);
    }
    return kl;
}

double indexer_kl(real *dI, const real *isc, const real *q, int sq, const real *k, int sk, const int *sel, int kk,
                  int B, int T, int H, int Hk, int d, real scale, real g) {
    int grp = H / Hk, fail = 0;
    double *rows = malloc(sizeof(double) * (size_t)B * T);
    if (!rows) return NAN;
#pragma omp parallel reduction(| : fail)
    {
        real *p = malloc(sizeof(real) * (size_t)T), *sc = malloc(sizeof(real) * (size_t)T);
        int *all = malloc(sizeof(int) * (size_t)T);
        if (!p || !sc || !all) fail = 1;
        if (all)
            for (int s = 0; s < T; s++) all[s] = s;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            if (!p || !sc || !all) continue;
            int b = r / T, t = r % T;
            const int *U = sel ? sel + (size_t)r * kk : all;
            int n = sel ? sparse_nsel(kk, t) : t + 1;
            real *dI_row = dI + (size_t)r * T;
            memset(dI_row, 0, sizeof(real) * (size_t)T);
            rows[r] = kl_row(dI_row, isc + (size_t)r * T, U, n, q + (size_t)r * sq, d, k, sk, (size_t)b * T, H, grp, d,
                             scale, g, p, sc);
        }
        free(p), free(sc), free(all);
    }
    double total = 0;
    for (int r = 0; r < B * T; r++) total += rows[r];
    free(rows);
    return fail ? NAN : total;
}
