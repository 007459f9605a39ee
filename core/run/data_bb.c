/*
 * data_bb.c — the Bigram-Backcopy task (see data.h).
 *
 * The task is a table, not a corpus: training sequences are drawn afresh
 * from the run's data stream (TrainState.data_rng, which checkpoints hold),
 * and the evaluation windows from streams of the task's own seed, so every
 * training seed of one task is scored on the same windows.
 *
 * Stationary distribution: power iteration of the lazy chain (P + I) / 2,
 * which has the same stationary distribution as P and converges for any
 * irreducible P, periodic or not.
 */
#include "run/data.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Stream seeds: one per use, so that no two uses share draws. */
enum { BB_STREAM_TABLE = 0x7AB1E, BB_STREAM_VAL = 0x7A1D, BB_STREAM_TEST = 0x7E57 };

static void seterr(char *err, size_t cap, const char *fmt, ...) {
    if (!err || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

void bb_free(BBTask *t) {
    if (!t) return;
    free(t->P);
    free(t->cdf);
    free(t->pi);
    free(t->first_cdf);
    free(t->trig);
    free(t->is_trig);
    memset(t, 0, sizeof *t);
}

/* Cumulative of p[0..n) into c, exactly 1 from the last nonzero entry on,
 * so that a draw u in [0, 1) never lands on a zero-probability entry. */
static void cumulate(const double *p, int n, double *c) {
    double s = 0;
    int last = 0;
    for (int j = 0; j < n; j++) {
        s += p[j];
        c[j] = s;
        if (p[j] > 0) last = j;
    }
    for (int j = last; j < n; j++) c[j] = 1.0;
}

/* The first j with u < c[j] (c cumulative, c[n-1] = 1, u in [0, 1)). */
static int draw(const double *c, int n, double u) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (u < c[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* pi = the stationary distribution of the V x V chain P. */
static void stationary(const double *P, int V, double *pi, double *tmp) {
    for (int j = 0; j < V; j++) pi[j] = 1.0 / V;
    for (int it = 0; it < 100000; it++) {
        for (int j = 0; j < V; j++) tmp[j] = 0.5 * pi[j];
        for (int i = 0; i < V; i++)
            for (int j = 0; j < V; j++) tmp[j] += 0.5 * pi[i] * P[(size_t)i * V + j];
        double d = 0, s = 0;
        for (int j = 0; j < V; j++) d = fmax(d, fabs(tmp[j] - pi[j])), s += tmp[j];
        for (int j = 0; j < V; j++) pi[j] = tmp[j] / s;
        if (d < 1e-15) break;
    }
}

int bb_init_table(BBTask *t, const double *P, int V, int k, int first, uint64_t seed) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 256; i++) t->byte[i] = -1;
    if (!P || V < 2 || V > 65535 || k < 1 || k >= V || (first != BB_FIRST_STATIONARY && first != BB_FIRST_NON_TRIGGER))
        return -1;
    size_t vv = (size_t)V * V;
    t->V = V, t->k = k, t->bos = V, t->seed = seed;
    t->P = malloc(vv * sizeof *t->P);
    t->cdf = malloc(vv * sizeof *t->cdf);
    t->pi = malloc((size_t)V * sizeof *t->pi);
    t->first_cdf = malloc((size_t)V * sizeof *t->first_cdf);
    t->trig = malloc((size_t)k * sizeof *t->trig);
    t->is_trig = calloc((size_t)V + 1, 1);
    double *tmp = malloc((size_t)V * sizeof *tmp);
    if (!t->P || !t->cdf || !t->pi || !t->first_cdf || !t->trig || !t->is_trig || !tmp) {
        free(tmp);
        bb_free(t);
        return -1;
    }
    for (int i = 0; i < V; i++) {
        double s = 0;
        for (int j = 0; j < V; j++) {
            double p = P[(size_t)i * V + j];
            if (!(p >= 0) || !isfinite(p)) s = NAN;
            s += p;
        }
        if (!(s > 0) || !isfinite(s)) {
            free(tmp);
            bb_free(t);
            return -1;
        }
        for (int j = 0; j < V; j++) t->P[(size_t)i * V + j] = P[(size_t)i * V + j] / s;
        cumulate(t->P + (size_t)i * V, V, t->cdf + (size_t)i * V);
    }
    stationary(t->P, V, t->pi, tmp);
    /* triggers: the k largest pi, ties to the lower id (selection; k is small) */
    for (int q = 0; q < k; q++) {
        int best = -1;
        for (int j = 0; j < V; j++)
            if (!t->is_trig[j] && (best < 0 || t->pi[j] > t->pi[best])) best = j;
        t->trig[q] = best;
        t->is_trig[best] = 1;
    }
    /* the first token: pi, or pi restricted to the other tokens (k < V leaves one; pi > 0 there unless the
     * chain never reaches them, then uniform over them) */
    int other = first == BB_FIRST_NON_TRIGGER;
    double mass = 0;
    for (int j = 0; j < V; j++) mass += tmp[j] = other && t->is_trig[j] ? 0 : t->pi[j];
    for (int j = 0; j < V; j++) tmp[j] = mass > 0 ? tmp[j] / mass : (double)!t->is_trig[j] / (V - k);
    cumulate(tmp, V, t->first_cdf);
    for (int a = 0; a < V; a++)
        for (int b = 0; b < V; b++)
            if (t->is_trig[a] && t->is_trig[b]) t->lock_share += tmp[a] * t->P[(size_t)a * V + b];
    free(tmp);
    snprintf(t->source, sizeof t->source, "Bigram-Backcopy: %d tokens + BOS, %d triggers", V, k);
    return 0;
}

/* ------------------------------------------------------------ sources */

/* Gamma(a, 1) (Marsaglia and Tsang; a < 1 through Gamma(a + 1) U^(1/a)). */
static double rng_gamma(Rng *r, double a) {
    if (a < 1) {
        double u = rng_uniform(r);
        return rng_gamma(r, a + 1) * pow(u, 1 / a);
    }
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = rng_normal(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v;
    }
}

/* V x V rows from a symmetric Dirichlet(alpha) (a row whose draws all
 * underflow gets its mass on one random entry). */
static double *random_table(int V, double alpha, uint64_t seed) {
    double *P = malloc((size_t)V * V * sizeof *P);
    if (!P) return NULL;
    Rng r = rng_stream(seed, BB_STREAM_TABLE);
    for (int i = 0; i < V; i++) {
        double *row = P + (size_t)i * V, s = 0;
        for (int j = 0; j < V; j++) s += row[j] = rng_gamma(&r, alpha);
        if (!(s > 0)) row[rng_below(&r, (uint64_t)V)] = 1;
    }
    return P;
}

/* Byte bigrams of Brown's train split between its V most frequent bytes
 * (ties to the lower byte), counted within documents; byte[i] gets the byte
 * of id i.  A byte never followed by one of the V (none in Brown at any V
 * it allows) would get the unigram row of the V.  NULL with err. */
static double *brown_table(int *byte, int V, const char *data_dir, char *err, size_t errcap) {
    Corpus c;
    if (corpus_load_brown(&c, data_dir, err, errcap)) return NULL;
    double count[256] = {0};
    const TokenSplit *s = &c.train;
    for (size_t i = 0; i < s->ntok; i++)
        if (s->tok[i] < 256) count[s->tok[i]]++;
    int distinct = 0;
    for (int b = 0; b < 256; b++) distinct += count[b] > 0;
    if (V > distinct) {
        seterr(err, errcap,
               "data.bb.tokens: %d is more than the %d distinct bytes of Brown's train split (data.bb.source brown)",
               V, distinct);
        corpus_free(&c);
        return NULL;
    }
    int id[256];
    for (int b = 0; b < 256; b++) id[b] = -1;
    for (int q = 0; q < V; q++) {
        int best = -1;
        for (int b = 0; b < 256; b++)
            if (id[b] < 0 && (best < 0 || count[b] > count[best])) best = b;
        id[best] = q;
        byte[q] = best;
    }
    double *P = calloc((size_t)V * V, sizeof *P);
    if (!P) {
        seterr(err, errcap, "out of memory building the Bigram-Backcopy table");
        corpus_free(&c);
        return NULL;
    }
    for (int d = 0; d < s->ndoc; d++)
        for (size_t i = s->doc_off[d] + 1; i + 1 < s->doc_off[d + 1]; i++) {
            int a = id[s->tok[i]], b = id[s->tok[i + 1]];
            if (a >= 0 && b >= 0) P[(size_t)a * V + b]++;
        }
    corpus_free(&c);
    for (int a = 0; a < V; a++) {
        double rs = 0;
        for (int b = 0; b < V; b++) rs += P[(size_t)a * V + b];
        if (rs == 0)
            for (int b = 0; b < V; b++) P[(size_t)a * V + b] = count[byte[b]];
    }
    return P;
}

/* A token as the log shows it: its byte (printable) or \xNN, or its id. */
static void token_text(const BBTask *t, int i, char *buf, size_t cap) {
    int b = i >= 0 && i < 256 ? t->byte[i] : -1;
    if (b >= 0x20 && b < 0x7f && b != '\'' && b != '\\')
        snprintf(buf, cap, "'%c'", b);
    else if (b >= 0)
        snprintf(buf, cap, "'\\x%02x'", b);
    else
        snprintf(buf, cap, "%d", i);
}

int bb_init(BBTask *t, const BBCfg *c, const char *data_dir, char *err, size_t errcap) {
    memset(t, 0, sizeof *t);
    if (err && errcap) err[0] = '\0';
    if (c->tokens < 2 || c->tokens > 65535) {
        seterr(err, errcap, "data.bb.tokens: must be in [2, 65535], got %d", c->tokens);
        return -1;
    }
    if (c->triggers < 1 || c->triggers >= c->tokens) {
        seterr(err, errcap, "data.bb.triggers: must be in [1, data.bb.tokens - 1 = %d], got %d", c->tokens - 1,
               c->triggers);
        return -1;
    }
    if (c->source == BB_SOURCE_RANDOM && !(c->alpha > 0)) {
        seterr(err, errcap, "data.bb.alpha: must be positive, got %g", c->alpha);
        return -1;
    }
    if (!data_dir || !*data_dir) data_dir = ".";
    int bytes[256];
    for (int i = 0; i < 256; i++) bytes[i] = -1;
    double *P = c->source == BB_SOURCE_RANDOM ? random_table(c->tokens, c->alpha, c->seed)
                                              : brown_table(bytes, c->tokens, data_dir, err, errcap);
    if (!P) {
        if (err && errcap && !err[0]) seterr(err, errcap, "out of memory building the Bigram-Backcopy table");
        return -1;
    }
    int rc = bb_init_table(t, P, c->tokens, c->triggers, c->first, c->seed);
    free(P);
    if (rc) {
        seterr(err, errcap, "out of memory building the Bigram-Backcopy task");
        return -1;
    }
    memcpy(t->byte, bytes, sizeof bytes);
    size_t o = 0;
    if (c->source == BB_SOURCE_RANDOM)
        o = (size_t)snprintf(t->source, sizeof t->source,
                             "Bigram-Backcopy: random table (Dirichlet %g, seed %llu), %d tokens + BOS, triggers",
                             c->alpha, (unsigned long long)c->seed, c->tokens);
    else
        o = (size_t)snprintf(t->source, sizeof t->source,
                             "Bigram-Backcopy: byte bigrams of %s/brown's train split, %d bytes + BOS, triggers",
                             data_dir, c->tokens);
    for (int q = 0; q < t->k && o < sizeof t->source; q++) {
        char tok[16];
        token_text(t, t->trig[q], tok, sizeof tok);
        o += (size_t)snprintf(t->source + o, sizeof t->source - o, " %s (%.3f)", tok, t->pi[t->trig[q]]);
    }
    if (o < sizeof t->source)
        snprintf(t->source + o, sizeof t->source - o, "; %.1f%% of sequences start with two triggers",
                 100 * t->lock_share);
    return 0;
}

/* ---------------------------------------------------------- sequences */

void bb_sample(const BBTask *t, Rng *r, int T, int *w) {
    if (T < 0 || !w) return;
    w[0] = t->bos;
    if (T < 1) return;
    w[1] = draw(t->first_cdf, t->V, rng_uniform(r));
    for (int pos = 1; pos < T; pos++)
        w[pos + 1] = bb_backcopy_at(t->is_trig, w, pos)
                         ? w[pos - 1]
                         : draw(t->cdf + (size_t)w[pos] * t->V, t->V, rng_uniform(r));
}

int bb_windows(const BBTask *t, int split, int T, int count, int **out) {
    if (!out) return -1;
    *out = NULL;
    if (!t || !t->P || T < 1 || count < 1 || (split != 0 && split != 1)) return -1;
    size_t len = (size_t)T + 1;
    if ((size_t)count > ((size_t)-1) / sizeof(int) / len) return -1;
    int *o = malloc((size_t)count * len * sizeof *o);
    if (!o) return -1;
    Rng r = rng_stream(t->seed, split == 0 ? BB_STREAM_VAL : BB_STREAM_TEST);
    for (int i = 0; i < count; i++) bb_sample(t, &r, T, o + (size_t)i * len);
    *out = o;
    return count;
}
