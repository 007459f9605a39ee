/*
 * sparse_select.c — which keys each query of a sparse layer attends to
 * (sparse.h): the top k of each score row (indexer, oracle; a row's top k
 * is topk.c's), the window, the seeded random control.  Rows are
 * independent, so any thread split gives the same sets.
 */
#include "nn/sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/rng.h"

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int sparse_select_topk(int *sel, const real *score, int B, int T, int k) {
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        void *scr = malloc(sparse_topk_scratch(T));
        if (!scr) fail = 1;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            if (!scr) continue;
            int t = r % T, nt = sparse_nsel(k, t);
            int *out = sel + (size_t)r * k;
            sparse_topk_row(out, score + (size_t)r * T, t + 1, nt, scr);
            for (int i = nt; i < k; i++) out[i] = -1;
        }
        free(scr);
    }
    return fail ? -1 : 0;
}

void sparse_select_window(int *sel, int B, int T, int k) {
    for (int r = 0; r < B * T; r++) {
        int t = r % T, nt = sparse_nsel(k, t);
        for (int i = 0; i < k; i++) sel[(size_t)r * k + i] = i < nt ? t - nt + 1 + i : -1;
    }
}

void sparse_random_row(int *out, int t, int k, uint64_t seed, long step, int layer) {
    int nt = sparse_nsel(k, t);
    if (nt == t + 1) {
        for (int s = 0; s <= t; s++) out[s] = s;
    } else {
        /* Floyd: for j = n-k .. n-1, draw r in [0, j]; take r, or j if r is taken */
        uint64_t lt = (uint64_t)layer << 32 | (uint32_t)t;
        uint64_t tag = rng_mix64(rng_mix64((uint64_t)step ^ 0x5A17E5E1ECull) ^ lt);
        Rng g = rng_stream(seed, tag);
        int c = 0;
        for (int j = t + 1 - nt; j <= t; j++) {
            int r = (int)rng_below(&g, (uint64_t)j + 1), taken = 0;
            for (int i = 0; i < c && !taken; i++) taken = out[i] == r;
            out[c++] = taken ? j : r;
        }
        qsort(out, (size_t)nt, sizeof *out, int_cmp);
    }
    for (int i = nt; i < k; i++) out[i] = -1;
}

void sparse_select_random(int *sel, int B, int T, int k, uint64_t seed, long step, int layer) {
    for (int t = 0; t < T; t++) {
        int *out = sel + (size_t)t * k;
        sparse_random_row(out, t, k, seed, step, layer);
        for (int b = 1; b < B; b++) memcpy(sel + ((size_t)b * T + t) * k, out, sizeof(int) * (size_t)k);
    }
}

void sparse_oracle_row(real *out, const real *qt, const real *k, size_t ldk, int t, int H, int Hk, int d, real scale,
                       real *p) {
    int grp = H / Hk;
    for (int s = 0; s <= t; s++) out[s] = 0;
    for (int h = 0; h < H; h++) {
        const real *qh = qt + (size_t)h * d;
        real mx = -INFINITY, sum = 0;
        for (int s = 0; s <= t; s++) {
            const real *ks = k + (size_t)s * ldk + (size_t)(h / grp) * d;
            real acc = 0;
            for (int c = 0; c < d; c++) acc += qh[c] * ks[c];
            p[s] = scale * acc;
            mx = p[s] > mx ? p[s] : mx;
        }
        for (int s = 0; s <= t; s++) sum += (p[s] = exp(p[s] - mx));
        for (int s = 0; s <= t; s++) out[s] += p[s] / sum;
    }
}

int sparse_oracle_scores(real *score, const real *q, int sq, const real *k, int sk, int B, int T, int H, int Hk,
                         int d, real scale) {
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        real *p = malloc(sizeof(real) * (size_t)T);
        if (!p) fail = 1;
#pragma omp for schedule(static)
        for (int r = 0; r < B * T; r++) {
            if (!p) continue;
            int b = r / T, t = r % T;
            real *out = score + (size_t)r * T;
            memset(out, 0, sizeof(real) * (size_t)T);
            sparse_oracle_row(out, q + (size_t)r * sq, k + (size_t)b * T * sk, (size_t)sk, t, H, Hk, d, scale, p);
        }
        free(p);
    }
    return fail ? -1 : 0;
}
