/*
 * test_attention.c — the tiled attention kernels (float build) against a
 * plain reference computed in double, at shapes that hit every edge of the
 * tiling: T = 1, T not a multiple of the tile, d not a multiple of the
 * vector width, grouped KV heads, token-strided q/k/v inside a fused row,
 * scores large enough that the running max moves between key tiles; and
 * bitwise-identical outputs with 1 and 2 OpenMP threads.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops.h"
#include "nn/variant.h"
#include "nn/rng.h"
#include "testutil.h"

typedef struct {
    int B, T, H, Hk, d;
    int pad;      /* extra columns in the fused row: stride = (H + 2 Hk) d + pad */
    double amp;   /* input amplitude: large values make peaked, shifting softmax rows */
    double scale; /* of the scores, usually 1/sqrt(d) */
    double tol;   /* tolerance factor: float round-off grows with the scores' size */
} Shape;

/* One problem: q | k | v side by side in a fused row (as the model's fused
 * projection), gradients in a buffer of the same layout. */
typedef struct {
    Shape s;
    int st;         /* token stride of q, k, v (and dq, dk, dv) */
    size_t n, nrow; /* values in x, tokens */
    real *x;        /* (B*T, st) inputs */
    real *dx0;      /* (B*T, st) initial gradient contents (backward adds) */
    real *dout;     /* (B*T, H, d) */
} Prob;

static Prob prob_make(Shape s, unsigned seed) {
    Prob p;
    p.s = s;
    p.st = (s.H + 2 * s.Hk) * s.d + s.pad;
    p.nrow = (size_t)s.B * s.T;
    p.n = p.nrow * p.st;
    p.x = malloc(sizeof(real) * p.n);
    p.dx0 = malloc(sizeof(real) * p.n);
    p.dout = malloc(sizeof(real) * p.nrow * s.H * s.d);
    cr_assert(p.x && p.dx0 && p.dout);
    Rng r = rng_seed(seed);
    for (size_t i = 0; i < p.n; i++) p.x[i] = (real)(s.amp * rng_normal(&r));
    for (size_t i = 0; i < p.n; i++) p.dx0[i] = (real)rng_normal(&r);
    for (size_t i = 0; i < p.nrow * s.H * s.d; i++) p.dout[i] = (real)rng_normal(&r);
    return p;
}

static void prob_free(Prob *p) { free(p->x), free(p->dx0), free(p->dout); }

static const real *Q(const Prob *p) { return p->x; }
static const real *K(const Prob *p) { return p->x + p->s.H * p->s.d; }
static const real *V(const Prob *p) { return p->x + (p->s.H + p->s.Hk) * p->s.d; }

/* Fast kernels: o (B*T, H, d), lse (B, H, T), dx = dx0 + gradients. */
static void run_fast(const Prob *p, real *o, real *lse, real *dx) {
    const Shape *s = &p->s;
    int st = p->st;
    attention_forward(o, lse, Q(p), st, K(p), st, V(p), st, s->B, s->T, s->H, s->Hk, s->d, (real)s->scale);
    memcpy(dx, p->dx0, sizeof(real) * p->n);
    attention_backward(dx, dx + s->H * s->d, dx + (s->H + s->Hk) * s->d, p->dout, o, lse, Q(p), st, K(p), st, V(p),
                       st, s->B, s->T, s->H, s->Hk, s->d, (real)s->scale);
}

/* Plain reference in double: full score rows, softmax, then the textbook
 * gradients.  dx as run_fast (starts from dx0). */
static void run_ref(const Prob *p, double *o, double *lse, double *dx) {
    const Shape *s = &p->s;
    int B = s->B, T = s->T, H = s->H, Hk = s->Hk, d = s->d, st = p->st, grp = H / Hk;
    const real *q = Q(p), *k = K(p), *v = V(p);
    double *P = malloc(sizeof(double) * T), *dP = malloc(sizeof(double) * T);
    cr_assert(P && dP);
    for (size_t i = 0; i < p->n; i++) dx[i] = p->dx0[i];
    size_t qo = 0, ko = (size_t)H * d, vo = (size_t)(H + Hk) * d;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kh = h / grp;
            for (int i = 0; i < T; i++) {
                const real *qi = q + (size_t)(b * T + i) * st + (size_t)h * d;
                double mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const real *kj = k + (size_t)(b * T + j) * st + (size_t)kh * d;
                    double sc = 0;
                    for (int c = 0; c < d; c++) sc += (double)qi[c] * kj[c];
                    P[j] = s->scale * sc;
                    if (P[j] > mx) mx = P[j];
                }
                double sum = 0;
                for (int j = 0; j <= i; j++) sum += (P[j] = exp(P[j] - mx));
                for (int j = 0; j <= i; j++) P[j] /= sum;
                lse[((size_t)b * H + h) * T + i] = mx + log(sum);
                double *oi = o + ((size_t)(b * T + i) * H + h) * d;
                const real *doi = p->dout + ((size_t)(b * T + i) * H + h) * d;
                for (int c = 0; c < d; c++) {
                    double a = 0;
                    for (int j = 0; j <= i; j++) a += P[j] * v[(size_t)(b * T + j) * st + (size_t)kh * d + c];
                    oi[c] = a;
                }
                double D = 0;
                for (int j = 0; j <= i; j++) {
                    const real *vj = v + (size_t)(b * T + j) * st + (size_t)kh * d;
                    double a = 0;
                    for (int c = 0; c < d; c++) a += (double)doi[c] * vj[c];
                    dP[j] = a;
                    D += P[j] * a;
                }
                double *dqi = dx + qo + (size_t)(b * T + i) * st + (size_t)h * d;
                for (int j = 0; j <= i; j++) {
                    double ds = P[j] * (dP[j] - D) * s->scale;
                    const real *kj = k + (size_t)(b * T + j) * st + (size_t)kh * d;
                    double *dkj = dx + ko + (size_t)(b * T + j) * st + (size_t)kh * d;
                    double *dvj = dx + vo + (size_t)(b * T + j) * st + (size_t)kh * d;
                    for (int c = 0; c < d; c++) {
                        dqi[c] += ds * kj[c];
                        dkj[c] += ds * qi[c];
                        dvj[c] += P[j] * doi[c];
                    }
                }
            }
        }
    free(P), free(dP);
}

/* Largest |a - b| over n values, relative to the largest |b| (at least 1).
 * The bounds in check_shape are a few times what float round-off gives
 * (the row-wise kernel this replaced shows the same errors). */
static double rel_err(const real *a, const double *b, size_t n, size_t *worst) {
    double mx = 1, e = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
    for (size_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - b[i]);
        if (!(x <= e)) e = x, *worst = i; /* NaN counts as worst */
    }
    return e / mx;
}

static void check_shape(Shape s, unsigned seed) {
    set_threads(1);
    Prob p = prob_make(s, seed);
    size_t no = p.nrow * s.H * s.d, nl = (size_t)s.B * s.H * s.T;
    real *o = malloc(sizeof(real) * no), *lse = malloc(sizeof(real) * nl), *dx = malloc(sizeof(real) * p.n);
    double *ro = malloc(sizeof(double) * no), *rl = malloc(sizeof(double) * nl), *rdx = malloc(sizeof(double) * p.n);
    cr_assert(o && lse && dx && ro && rl && rdx);
    run_fast(&p, o, lse, dx);
    run_ref(&p, ro, rl, rdx);
    char lab[80];
    snprintf(lab, sizeof lab, "B=%d T=%d H=%d Hk=%d d=%d", s.B, s.T, s.H, s.Hk, s.d);
    size_t w = 0;
    double e, f = s.tol;
    e = rel_err(o, ro, no, &w);
    cr_assert(e < 1e-6 * f, "%s: o rel err %.3g at %zu (%g vs %g)", lab, e, w, (double)o[w], ro[w]);
    e = rel_err(lse, rl, nl, &w);
    cr_assert(e < 5e-7 * f, "%s: lse rel err %.3g at %zu (%g vs %g)", lab, e, w, (double)lse[w], rl[w]);
    e = rel_err(dx, rdx, p.n, &w);
    cr_assert(e < 3e-6 * f, "%s: dq|dk|dv rel err %.3g at %zu (%g vs %g)", lab, e, w, (double)dx[w], rdx[w]);
    /* the pad columns of the fused gradient row are not touched */
    for (size_t i = 0; i < p.nrow; i++)
        for (int c = (s.H + 2 * s.Hk) * s.d; c < p.st; c++)
            cr_assert(dx[i * p.st + c] == p.dx0[i * p.st + c], "pad column %d of row %zu written", c, i);
    free(o), free(lse), free(dx), free(ro), free(rl), free(rdx);
    prob_free(&p);
}

/* --------------------------------------------------- fast vs reference */

Test(attention, single_token) {
    check_shape((Shape){3, 1, 2, 1, 8, 0, 1, 0.35, 1}, 1);
    check_shape((Shape){1, 1, 1, 1, 1, 3, 1, 1, 1}, 2);
}

Test(attention, short_sequences_every_length) {
    for (int T = 2; T <= 9; T++) check_shape((Shape){2, T, 2, 2, 4, 0, 1, 0.5, 1}, 10 + T);
}

Test(attention, multihead_tile_multiple) { check_shape((Shape){2, 64, 4, 4, 32, 0, 1, 0.17677669529663687, 1}, 3); }

Test(attention, multihead_ragged_T) {
    check_shape((Shape){2, 33, 4, 4, 16, 0, 1, 0.25, 1}, 4);
    check_shape((Shape){1, 100, 2, 2, 32, 5, 1, 0.17677669529663687, 1}, 5);
}

Test(attention, gqa_shared_kv_heads) {
    check_shape((Shape){2, 37, 4, 2, 8, 0, 1, 0.35, 1}, 6);
    check_shape((Shape){2, 70, 6, 2, 16, 0, 1, 0.25, 1}, 7);
    check_shape((Shape){1, 129, 4, 1, 32, 0, 1, 0.17677669529663687, 1}, 8);
}

Test(attention, head_width_not_vector_multiple) {
    check_shape((Shape){2, 45, 3, 3, 5, 1, 1, 0.45, 1}, 9);
    check_shape((Shape){1, 40, 2, 1, 20, 7, 1, 0.22, 1}, 10);
    check_shape((Shape){1, 50, 2, 2, 48, 0, 1, 0.144, 1}, 11);
}

/* Large scores: rows are peaked and the running max changes from one key
 * tile to the next, so the online-softmax rescaling is exercised. */
Test(attention, peaked_rows_rescale) {
    check_shape((Shape){2, 97, 2, 1, 16, 2, 3, 0.25, 4}, 12);
    check_shape((Shape){1, 160, 2, 2, 8, 0, 4, 1.0, 8}, 13);
}

Test(attention, long_sequence) { check_shape((Shape){1, 300, 2, 1, 32, 0, 1, 0.17677669529663687, 1}, 14); }

/* The library's own materialising reference agrees with the fast forward. */
Test(attention, forward_matches_library_reference) {
    set_threads(1);
    Shape s = {2, 75, 4, 2, 16, 3, 1, 0.25, 1};
    Prob p = prob_make(s, 15);
    size_t no = p.nrow * s.H * s.d;
    real *o1 = malloc(sizeof(real) * no), *o2 = malloc(sizeof(real) * no);
    real *lse = malloc(sizeof(real) * (size_t)s.B * s.H * s.T);
    cr_assert(o1 && o2 && lse);
    attention_forward(o1, lse, Q(&p), p.st, K(&p), p.st, V(&p), p.st, s.B, s.T, s.H, s.Hk, s.d, (real)s.scale);
    attention_forward_ref(o2, NULL, Q(&p), p.st, K(&p), p.st, V(&p), p.st, s.B, s.T, s.H, s.Hk, s.d, (real)s.scale);
    Cmp c = cmp_arrays(o1, o2, no, 1.0);
    cr_assert(c.max_abs < 2e-6, "fast vs attention_forward_ref: max abs %.3g at %zu", c.max_abs, c.worst);
    free(o1), free(o2), free(lse);
    prob_free(&p);
}

/* ------------------------------------------------------- determinism */

static void check_threads(Shape s, unsigned seed) {
    Prob p = prob_make(s, seed);
    size_t no = p.nrow * s.H * s.d, nl = (size_t)s.B * s.H * s.T;
    real *o[2], *lse[2], *dx[2];
    for (int t = 0; t < 2; t++) {
        o[t] = malloc(sizeof(real) * no), lse[t] = malloc(sizeof(real) * nl), dx[t] = malloc(sizeof(real) * p.n);
        cr_assert(o[t] && lse[t] && dx[t]);
        omp_set_num_threads(t + 1);
        run_fast(&p, o[t], lse[t], dx[t]);
    }
    omp_set_num_threads(1);
    cr_assert(memcmp(o[0], o[1], sizeof(real) * no) == 0, "T=%d: o differs between 1 and 2 threads", s.T);
    cr_assert(memcmp(lse[0], lse[1], sizeof(real) * nl) == 0, "T=%d: lse differs between 1 and 2 threads", s.T);
    cr_assert(memcmp(dx[0], dx[1], sizeof(real) * p.n) == 0, "T=%d: dq|dk|dv differ between 1 and 2 threads", s.T);
    for (int t = 0; t < 2; t++) free(o[t]), free(lse[t]), free(dx[t]);
    prob_free(&p);
}

Test(attention, bitwise_equal_1_vs_2_threads) {
    check_threads((Shape){3, 77, 4, 2, 16, 3, 1, 0.25, 1}, 20);                 /* odd unit count, GQA */
    check_threads((Shape){2, 128, 4, 4, 32, 0, 1, 0.17677669529663687, 1}, 21); /* the training shape */
    check_threads((Shape){1, 45, 4, 1, 8, 0, 2, 0.35, 1}, 22);                  /* one backward unit */
    check_threads((Shape){5, 200, 2, 2, 20, 1, 1, 0.22, 1}, 23);                /* ragged d and T */
}

/* -------------------------------------------- every attention normaliser */

/* Each row of ATTN_NORMALIZERS (float kernel) against the library's
 * materialising reference, with learned-looking virtual-key logits, at a
 * shape that crosses key tiles; and 1 vs 2 threads bitwise, backward
 * included.  (Gradients: f64_attn_norm.c.) */
static void norm_run(const Prob *p, int kind, const real *z, real *o, real *lse, real *dx) {
    const Shape *s = &p->s;
    int st = p->st;
    AttnNorm an = {kind, z};
    cr_assert(attention_forward_norm(o, lse, Q(p), st, K(p), st, V(p), st, s->B, s->T, s->H, s->Hk, s->d,
                                     (real)s->scale, &an) == 0);
    memcpy(dx, p->dx0, sizeof(real) * p->n);
    cr_assert(attention_backward_norm(dx, dx + s->H * s->d, dx + (s->H + s->Hk) * s->d, p->dout, o, lse, Q(p), st,
                                      K(p), st, V(p), st, s->B, s->T, s->H, s->Hk, s->d, (real)s->scale, &an) == 0);
}

Test(attention, every_normalizer_matches_reference_and_threads) {
    Shape s = {2, 150, 4, 2, 16, 3, 2, 0.25, 1};
    Prob p = prob_make(s, 30);
    size_t no = p.nrow * s.H * s.d, nl = (size_t)s.B * s.H * s.T;
    real *o[2], *lse[2], *dx[2], *ref = malloc(sizeof(real) * no), *z = malloc(sizeof(real) * nl);
    cr_assert(ref && z);
    for (int t = 0; t < 2; t++) {
        o[t] = malloc(sizeof(real) * no), lse[t] = malloc(sizeof(real) * nl), dx[t] = malloc(sizeof(real) * p.n);
        cr_assert(o[t] && lse[t] && dx[t]);
    }
    Rng r = rng_seed(31);
    for (size_t i = 0; i < nl; i++) z[i] = (real)(1.5 * rng_normal(&r));
    for (int kind = 0; kind < AN__COUNT; kind++) {
        const char *name = attn_norms[kind].name;
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t + 1);
            norm_run(&p, kind, z, o[t], lse[t], dx[t]);
        }
        omp_set_num_threads(1);
        cr_assert(memcmp(o[0], o[1], sizeof(real) * no) == 0, "%s: o differs between 1 and 2 threads", name);
        cr_assert(memcmp(dx[0], dx[1], sizeof(real) * p.n) == 0, "%s: dq|dk|dv differ between 1 and 2 threads", name);
        AttnNorm an = {kind, z};
        cr_assert(attention_forward_ref_norm(ref, NULL, Q(&p), p.st, K(&p), p.st, V(&p), p.st, s.B, s.T, s.H, s.Hk,
                                             s.d, (real)s.scale, &an) == 0);
        Cmp c = cmp_arrays(o[0], ref, no, 1.0);
        cr_assert(c.max_abs < 2e-5, "%s: fast vs attention_forward_ref_norm: max abs %.3g at %zu", name, c.max_abs,
                  c.worst);
    }
    for (int t = 0; t < 2; t++) free(o[t]), free(lse[t]), free(dx[t]);
    free(ref), free(z);
    prob_free(&p);
}
