/*
 * topk.c — the top k of one score row (sparse.h: sparse_topk_row), for the
 * indexer's and the oracle's selections in training (sparse_select.c) and
 * at decode (kvcache_sparse.c).
 *
 * The order is score descending, then position ascending: a total order,
 * so the set is the same for any method, and the two methods here give it
 * bit for bit (tests/testutil.c, check_topk_rows, against brute force in
 * both builds).  Scores are compared as unsigned keys in the same order:
 * -0 is read as +0 (the two compare equal) and NaN as the lowest of all.
 * The output lists the kept positions ascending, found by one pass that
 * keeps every key above the k-th largest, v, and the first of those equal
 * to it: no sort.
 *
 * Two ways to find v, chosen by k (measured on rows of 32 to 1,024 scores,
 * in order and with a rising trend as recent keys score higher): for k <=
 * TOPK_HEAP_MAX a heap of the k best so far (O(n log k), cheap at small k);
 * above, radix selection on the keys, one byte at a time from the most
 * significant byte on which the row's keys differ, each step keeping the
 * candidates of the byte value the k-th largest lies in, the last few
 * sorted (O(n), whatever the order of the scores).
 */
#include "nn/sparse.h"

#include <string.h>

#ifdef GATED_REAL_DOUBLE
typedef uint64_t Key;
#define KEY_INF 0x7FF0000000000000ull /* the bits of +inf */
#else
typedef uint32_t Key;
#define KEY_INF 0x7F800000u
#endif
enum { KEY_BITS = 8 * (int)sizeof(Key), TOPK_HEAP_MAX = 16, TOPK_SORT_AT = 16 };

/* score x as its key: larger score, larger key; -0 as +0, NaN lowest. */
static inline Key score_key(real x) {
    Key u, sign = (Key)1 << (KEY_BITS - 1);
    memcpy(&u, &x, sizeof u);
    Key mag = u & ~sign, k = (u & sign) ? ~u : (u | sign);
    k = mag == 0 ? sign : k;
    return mag > (Key)KEY_INF ? 0 : k;
}

/* A key and its position: "before" is key descending, then position ascending. */
typedef struct {
    Key k;
    int pos;
} Cand;

static inline int before(Cand a, Cand b) { return a.k > b.k || (a.k == b.k && a.pos < b.pos); }

/* Sift-down in a heap whose root is the candidate that would go first. */
static void heap_down(Cand *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && before(h[w], h[l])) w = l;
        if (r < n && before(h[w], h[r])) w = r;
        if (w == i) return;
        Cand t = h[i];
        h[i] = h[w], h[w] = t, i = w;
    }
}

/* The k best of row by a heap (h: k candidates); out as the file says. */
static void topk_heap(int *out, const real *row, int n, int kk, Cand *h) {
    for (int s = 0; s < kk; s++) h[s] = (Cand){score_key(row[s]), s};
    for (int i = kk / 2 - 1; i >= 0; i--) heap_down(h, kk, i);
    for (int s = kk; s < n; s++) {
        Cand c = {score_key(row[s]), s};
        if (before(c, h[0])) {
            h[0] = c;
            heap_down(h, kk, 0);
        }
    }
    Cand last = h[0]; /* the k-th best: keep it and every candidate before it */
    for (int s = 0, m = 0; s < n; s++)
        if (s == last.pos || before((Cand){score_key(row[s]), s}, last)) out[m++] = s;
}

/* The need-th largest (from 1) of the m keys of c, sorting them (m small);
 * *above: how many of them are larger. */
static Key kth_sorted(Key *c, int m, int need, int *above) {
    for (int i = 1; i < m; i++) {
        Key x = c[i];
        int j = i;
        for (; j > 0 && c[j - 1] < x; j--) c[j] = c[j - 1];
        c[j] = x;
    }
    Key v = c[need - 1];
    int a = 0;
    while (c[a] > v) a++;
    *above = a;
    return v;
}

/* The k best of row by radix selection (key, cand: n keys each). */
static void topk_radix(int *out, const real *row, int n, int kk, Key *key, Key *cand) {
    Key lo = ~(Key)0, hi = 0;
    for (int s = 0; s < n; s++) {
        Key u = score_key(row[s]);
        key[s] = u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    int shift = KEY_BITS - 8, need = kk, m = n, above_v = 0; /* need: rank of v among the candidates */
    while (shift > 0 && ((lo ^ hi) >> shift) == 0) shift -= 8; /* bytes every key shares */
    const Key *src = key;
    for (;;) {
        int hist[2][256] = {{0}}, b, hb, i = 0; /* two histograms: fewer stalls on one busy bin */
        for (; i + 1 < m; i += 2) hist[0][(src[i] >> shift) & 255]++, hist[1][(src[i + 1] >> shift) & 255]++;
        if (i < m) hist[0][(src[i] >> shift) & 255]++;
        for (b = 255; b > 0 && (hb = hist[0][b] + hist[1][b]) < need; b--) need -= hb, above_v += hb;
        int c = 0;
        for (int j = 0; j < m; j++) {
            Key u = src[j];
            cand[c] = u;
            c += (int)((u >> shift) & 255) == b;
        }
        m = c, src = cand;
        if (shift == 0 || m <= TOPK_SORT_AT) break;
        shift -= 8;
    }
    int above;
    Key v = kth_sorted(cand, m, need, &above);
    int eq = kk - above_v - above; /* keys equal to v to keep, the lowest positions */
    for (int s = 0, o = 0; s < n; s++)
        if (key[s] > v || (key[s] == v && eq-- > 0)) out[o++] = s;
}

size_t sparse_topk_scratch(int n) { return 2 * sizeof(Key) * (size_t)(n > 0 ? n : 1); }

void sparse_topk_row(int *out, const real *row, int n, int kk, void *scratch) {
    if (n <= kk) {
        for (int s = 0; s < n; s++) out[s] = s;
    } else if (kk <= TOPK_HEAP_MAX) {
        Cand h[TOPK_HEAP_MAX];
        topk_heap(out, row, n, kk, h);
    } else {
        Key *key = scratch;
        topk_radix(out, row, n, kk, key, key + n);
    }
}
