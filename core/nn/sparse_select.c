/*
 * sparse_select.c — which keys each query of a sparse layer attends to
 * (sparse.h): the top k of a score row (indexer, oracle), the window, the
 * seeded random control.  Rows are independent, so any thread split gives
 * the same sets.
 */
#include "nn/sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/rng.h"

/* A score as an unsigned key in the same order (larger score, larger key),
 * so that the k-th largest is found a byte at a time: -0 is read as +0 (the
 * two compare equal) and NaN as the lowest of all. */
#ifdef GATED_REAL_DOUBLE
typedef uint64_t Key;
#else
typedef uint32_t Key;
#endif
enum { KEY_BITS = 8 * (int)sizeof(Key) };

static inline Key score_key(real x) {
    if (x != x) return 0;
    if (x == 0) x = 0;
    Key u;
    memcpy(&u, &x, sizeof u);
    Key sign = (Key)1 << (KEY_BITS - 1);
    return (u & sign) ? ~u : u | sign;
}

/* The top kk (0 < kk < n) of row into out, in ascending positions, under
 * the order score descending, then position ascending (a tie goes to the
 * lower position).  The kk-th largest key v is found by radix selection,
 * most significant byte first (a histogram of the keys that share the
 * bytes fixed so far, per byte: O(n) a byte, whatever the scores); then one
 * pass keeps every key above v and the first kk - #above keys equal to it.
 * Rows are made by one thread each, so the set is the same at any thread
 * count, and the same as any sort by that order would give. */
static void row_topk(int *out, const real *row, int n, int kk) {
    Key prefix = 0, mask = 0;
    int need = kk; /* how many of the keys matching prefix/mask to take, from the top */
    for (int shift = KEY_BITS - 8; shift >= 0; shift -= 8) {
        int hist[256] = {0}, b;
        for (int s = 0; s < n; s++) {
            Key u = score_key(row[s]);
            if ((u & mask) == prefix) hist[(u >> shift) & 255]++;
        }
        for (b = 255; b > 0 && hist[b] < need; b--) need -= hist[b];
        prefix |= (Key)b << shift;
        mask |= (Key)255 << shift;
    }
    int m = 0;
    for (int s = 0; s < n; s++) {
        Key u = score_key(row[s]);
        if (u > prefix || (u == prefix && need-- > 0)) out[m++] = s;
    }
}

void sparse_topk_row(int *out, const real *row, int n, int kk) {
    if (n <= kk)
        for (int s = 0; s < n; s++) out[s] = s;
    else
        row_topk(out, row, n, kk);
}

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void sparse_select_topk(int *sel, const real *score, int B, int T, int k) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        int t = r % T, nt = sparse_nsel(k, t);
        int *out = sel + (size_t)r * k;
        sparse_topk_row(out, score + (size_t)r * T, t + 1, nt);
        for (int i = nt; i < k; i++) out[i] = -1;
    }
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
