/*
 * test_data_bb.c — the Bigram-Backcopy task (data_bb.c): the backcopy rule
 * at every trigger, bigram and first-token frequencies against the table,
 * the stationary distribution and the triggers on a chain whose answer is
 * known, determinism of the table, the sequences and the evaluation
 * windows (and a stream continued from a copied state, as a checkpoint
 * resumes it), bad sizes, and (after `make data`) the Brown table.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/data.h"

static void random_task(BBTask *t, int V, int k, double alpha, uint64_t seed, int first) {
    BBCfg c = {V, k, BB_SOURCE_RANDOM, alpha, seed, first};
    char err[512];
    cr_assert_eq(bb_init(t, &c, NULL, err, sizeof err), 0, "%s", err);
}

/* Every sequence: BOS first, tokens in [0, V) after it, and after every
 * trigger at position >= 2 the token two back.  data.bb.first stationary: a
 * sequence that starts with two triggers alternates them to the end, and
 * such sequences come at the rate lock_share says; non_trigger: the first
 * token is not a trigger and no two triggers stand side by side. */
Test(bb, backcopy_holds_at_every_trigger) {
    for (int first = BB_FIRST_STATIONARY; first <= BB_FIRST_NON_TRIGGER; first++) {
        BBTask t;
        random_task(&t, 20, 3, 0.3, 11, first);
        enum { T = 64, N = 2000 };
        int w[T + 1];
        Rng r = rng_seed(5);
        long copies = 0, locked = 0;
        for (int n = 0; n < N; n++) {
            bb_sample(&t, &r, T, w);
            cr_assert_eq(w[0], t.bos);
            for (int i = 1; i <= T; i++) cr_assert(w[i] >= 0 && w[i] < t.V, "token %d at %d", w[i], i);
            for (int i = 2; i < T; i++)
                if (t.is_trig[w[i]]) {
                    cr_assert_eq(w[i + 1], w[i - 1], "window %d: trigger %d at %d followed by %d, want %d", n, w[i],
                                 i, w[i + 1], w[i - 1]);
                    copies++;
                }
            if (t.is_trig[w[1]] && t.is_trig[w[2]]) {
                locked++;
                for (int i = 3; i <= T; i++) cr_assert_eq(w[i], w[i - 2], "window %d: the lock breaks at %d", n, i);
            }
            if (first == BB_FIRST_NON_TRIGGER) {
                cr_assert(!t.is_trig[w[1]], "window %d starts with trigger %d", n, w[1]);
                for (int i = 2; i <= T; i++)
                    cr_assert(!(t.is_trig[w[i]] && t.is_trig[w[i - 1]]), "window %d: triggers side by side at %d", n,
                              i);
            }
        }
        /* the triggers are 3 of 20 tokens: a good share of positions is decided by the rule */
        cr_assert_gt(copies, N * T / 50, "only %ld backcopies", copies);
        double se = sqrt(t.lock_share * (1 - t.lock_share) / N) + 3.0 / N;
        cr_assert(fabs((double)locked / N - t.lock_share) <= 5 * se, "%ld of %d locked, lock_share %.4f", locked, N,
                  t.lock_share);
        if (first == BB_FIRST_STATIONARY) cr_assert_gt(locked, 0, "the table must produce locked sequences");
        if (first == BB_FIRST_NON_TRIGGER) cr_assert_eq(t.lock_share, 0);
        bb_free(&t);
    }
}

/* Outside the rule the next token follows the bigram row: for every cell
 * (a, b) of a row a with n_a >= 100 observations of a, the observed share
 * of b is within 5 standard errors of P[a][b] (plus 3 / n_a, for cells whose
 * p is tiny and where the normal approximation is poor).  A trigger's row is
 * drawn only at position 1, so only with data.bb.first stationary.  The
 * first token against the stationary distribution (restricted to
 * non-triggers with non_trigger).  The sample is fixed (seeded), so the
 * test is deterministic; a wrong row (e.g. that of the token before) is off
 * by many standard errors. */
Test(bb, bigram_frequencies_match_the_table) {
    for (int mode = BB_FIRST_STATIONARY; mode <= BB_FIRST_NON_TRIGGER; mode++) {
        BBTask t;
        random_task(&t, 12, 2, 0.5, 3, mode);
        enum { T = 128, N = 4000, V = 12 };
        int w[T + 1];
        static double cnt[V][V], first[V];
        memset(cnt, 0, sizeof cnt), memset(first, 0, sizeof first);
        double rows[V] = {0};
        Rng r = rng_seed(99);
        for (int n = 0; n < N; n++) {
            bb_sample(&t, &r, T, w);
            first[w[1]]++;
            for (int i = 1; i < T; i++)
                if (!bb_backcopy_at(t.is_trig, w, i)) cnt[w[i]][w[i + 1]]++, rows[w[i]]++;
        }
        double worst = 0, rest = 0;
        for (int a = 0; a < V; a++) rest += mode == BB_FIRST_NON_TRIGGER && t.is_trig[a] ? 0 : t.pi[a];
        for (int a = 0; a < V; a++) {
            double p = mode == BB_FIRST_NON_TRIGGER && t.is_trig[a] ? 0 : t.pi[a] / rest, f = first[a] / N;
            double tol = 5 * sqrt(p * (1 - p) / N) + 3.0 / N;
            cr_assert(fabs(f - p) <= tol, "mode %d, first token %d: p %.5f, observed %.5f", mode, a, p, f);
            if (t.is_trig[a] && mode == BB_FIRST_NON_TRIGGER) {
                cr_assert_eq(rows[a], 0, "a trigger's own row is never drawn");
                continue;
            }
            cr_assert_gt(rows[a], t.is_trig[a] ? 100 : 1000, "mode %d: row %d observed %g times", mode, a, rows[a]);
            for (int b = 0; b < V; b++) {
                double pb = t.P[a * V + b], fb = cnt[a][b] / rows[a], se = sqrt(pb * (1 - pb) / rows[a]);
                double tb = 5 * se + 3 / rows[a];
                cr_assert(fabs(fb - pb) <= tb, "mode %d: P[%d][%d] = %.5f, observed %.5f over %g (tolerance %.5f)",
                          mode, a, b, pb, fb, rows[a], tb);
                if (se > 0 && fabs(fb - pb) / se > worst) worst = fabs(fb - pb) / se;
            }
        }
        cr_log_info("mode %d: bigram cells: largest deviation %.2f standard errors", mode, worst);
        bb_free(&t);
    }
}

/* A two-token chain with a known stationary distribution: P = [[0.9, 0.1],
 * [0.5, 0.5]] has pi = (5/6, 1/6), so token 0 is the trigger; rows are
 * renormalised; a periodic chain (0 -> 1 -> 0) still converges (1/2, 1/2). */
Test(bb, stationary_distribution_and_triggers) {
    BBTask t;
    const double P[4] = {9, 1, 5, 5}; /* rows renormalised */
    cr_assert_eq(bb_init_table(&t, P, 2, 1, BB_FIRST_STATIONARY, 0), 0);
    cr_assert_float_eq(t.P[0], 0.9, 1e-15);
    cr_assert_float_eq(t.pi[0], 5.0 / 6, 1e-12);
    cr_assert_float_eq(t.pi[1], 1.0 / 6, 1e-12);
    cr_assert_eq(t.trig[0], 0);
    cr_assert(t.is_trig[0] && !t.is_trig[1] && !t.is_trig[2], "BOS (2) is never a trigger");
    bb_free(&t);
    const double Q[4] = {0, 1, 1, 0};
    cr_assert_eq(bb_init_table(&t, Q, 2, 1, BB_FIRST_STATIONARY, 0), 0);
    cr_assert_float_eq(t.pi[0], 0.5, 1e-12);
    cr_assert_eq(t.trig[0], 0, "a tie goes to the lower id");
    bb_free(&t);
    /* 4 tokens, pi proportional to (1, 4, 2, 3) from a chain that jumps to the next token by those weights */
    const double R[16] = {1, 4, 2, 3, 1, 4, 2, 3, 1, 4, 2, 3, 1, 4, 2, 3};
    cr_assert_eq(bb_init_table(&t, R, 4, 2, BB_FIRST_STATIONARY, 0), 0);
    cr_assert_eq(t.trig[0], 1);
    cr_assert_eq(t.trig[1], 3);
    cr_assert(!t.is_trig[0] && !t.is_trig[2]);
    /* the first two tokens are both triggers with probability 0.7 x 0.7 */
    cr_assert_float_eq(t.lock_share, 0.49, 1e-12);
    bb_free(&t);
    cr_assert_eq(bb_init_table(&t, R, 4, 2, BB_FIRST_NON_TRIGGER, 0), 0);
    cr_assert_float_eq(t.lock_share, 0, 1e-15);
    cr_assert_float_eq(t.first_cdf[0], 1 / 3.0, 1e-12, "pi on non-triggers: 0.1 / 0.3");
    cr_assert_float_eq(t.first_cdf[1], 1 / 3.0, 1e-12);
    bb_free(&t);
    const double Z[4] = {0, 0, 1, 1};
    cr_assert_eq(bb_init_table(&t, Z, 2, 1, BB_FIRST_STATIONARY, 0), -1, "a row without mass is refused");
    cr_assert_eq(bb_init_table(&t, R, 4, 4, BB_FIRST_STATIONARY, 0), -1, "k must leave a non-trigger");
    cr_assert_eq(bb_init_table(&t, R, 4, 2, 2, 0), -1, "an unknown first-token rule");
}

/* Same seed, same table, sequences and windows; a stream continued from a
 * copy of its state (what a checkpoint holds) goes on exactly as the
 * uninterrupted one; the evaluation windows depend on data.bb.seed only. */
Test(bb, deterministic_and_resumable) {
    BBTask a, b, c;
    random_task(&a, 16, 3, 0.2, 7, BB_FIRST_STATIONARY);
    random_task(&b, 16, 3, 0.2, 7, BB_FIRST_STATIONARY);
    random_task(&c, 16, 3, 0.2, 8, BB_FIRST_STATIONARY);
    cr_assert_eq(memcmp(a.P, b.P, sizeof(double) * 16 * 16), 0);
    cr_assert_neq(memcmp(a.P, c.P, sizeof(double) * 16 * 16), 0, "another seed, another table");

    enum { T = 32, N = 20 };
    int wa[N][T + 1], wb[N][T + 1];
    Rng ra = rng_seed(1), rb = rng_seed(1), saved = {0};
    for (int n = 0; n < N; n++) {
        bb_sample(&a, &ra, T, wa[n]);
        if (n == N / 2 - 1) saved = ra;
    }
    for (int n = 0; n < N; n++) bb_sample(&b, &rb, T, wb[n]);
    cr_assert_eq(memcmp(wa, wb, sizeof wa), 0, "same seed, same sequences");
    Rng rr = saved; /* resume after window N/2 - 1 */
    for (int n = N / 2; n < N; n++) {
        int w[T + 1];
        bb_sample(&a, &rr, T, w);
        cr_assert_eq(memcmp(w, wa[n], sizeof w), 0, "resumed window %d differs", n);
    }

    int *va = NULL, *vb = NULL, *ta = NULL, *vc = NULL;
    cr_assert_eq(bb_windows(&a, 0, T, 8, &va), 8);
    cr_assert_eq(bb_windows(&b, 0, T, 8, &vb), 8);
    cr_assert_eq(bb_windows(&a, 1, T, 8, &ta), 8);
    cr_assert_eq(bb_windows(&c, 0, T, 8, &vc), 8);
    size_t bytes = sizeof(int) * 8 * (T + 1);
    cr_assert_eq(memcmp(va, vb, bytes), 0, "the validation windows are fixed by data.bb.seed");
    cr_assert_neq(memcmp(va, ta, bytes), 0, "validation and test windows differ");
    cr_assert_neq(memcmp(va, vc, bytes), 0);
    for (int i = 0; i < 8; i++) cr_assert_eq(va[i * (T + 1)], a.bos);
    free(vc);
    cr_assert_eq(bb_windows(&a, 2, T, 8, &vc), -1);
    cr_assert_null(vc);
    free(va), free(vb), free(ta);
    bb_free(&a), bb_free(&b), bb_free(&c);
}

Test(bb, bad_sizes_name_the_key) {
    BBTask t;
    char err[512];
    BBCfg c = {8, 8, BB_SOURCE_RANDOM, 0.1, 0, BB_FIRST_STATIONARY};
    cr_assert_eq(bb_init(&t, &c, NULL, err, sizeof err), -1);
    cr_assert_str_eq(err, "data.bb.triggers: must be in [1, data.bb.tokens - 1 = 7], got 8");
    c = (BBCfg){1, 1, BB_SOURCE_RANDOM, 0.1, 0, BB_FIRST_STATIONARY};
    cr_assert_eq(bb_init(&t, &c, NULL, err, sizeof err), -1);
    cr_assert_str_eq(err, "data.bb.tokens: must be in [2, 65535], got 1");
    c = (BBCfg){8, 2, BB_SOURCE_RANDOM, 0, 0, BB_FIRST_STATIONARY};
    cr_assert_eq(bb_init(&t, &c, NULL, err, sizeof err), -1);
    cr_assert_str_eq(err, "data.bb.alpha: must be positive, got 0");
    c = (BBCfg){8, 2, BB_SOURCE_BROWN, 0.1, 0, BB_FIRST_STATIONARY};
    cr_assert_eq(bb_init(&t, &c, "/nonexistent/gated-data", err, sizeof err), -1);
    cr_assert(strstr(err, "corpus not found; run `make data`"), "%s", err);
}

/* After `make data`: the table of Brown's 63 most frequent bytes; space is
 * the most frequent byte (id 0) and the most probable token; at most 85
 * distinct bytes. */
Test(bb, brown_table) {
    if (access("data/brown/DONE", F_OK) != 0) cr_skip_test("data/brown/DONE not found (run `make data`)");
    BBTask t;
    char err[512];
    BBCfg c = {63, 3, BB_SOURCE_BROWN, 0.1, 0, BB_FIRST_STATIONARY};
    cr_assert_eq(bb_init(&t, &c, "data", err, sizeof err), 0, "%s", err);
    cr_assert_eq(t.byte[0], ' ');
    cr_assert_eq(t.trig[0], 0);
    cr_assert_eq(t.byte[t.trig[1]], 'e');
    for (int a = 0; a < t.V; a++) {
        double s = 0;
        for (int b = 0; b < t.V; b++) s += t.P[a * t.V + b];
        cr_assert_float_eq(s, 1, 1e-12);
    }
    cr_log_info("%s", t.source);
    bb_free(&t);
    c.tokens = 200;
    cr_assert_eq(bb_init(&t, &c, "data", err, sizeof err), -1);
    cr_assert(strncmp(err, "data.bb.tokens: 200 is more than the ", 36) == 0, "%s", err);
}
