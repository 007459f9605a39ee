/*
 * bench_run.c — running benchmark cases (see bench.h): FLOPs per iteration
 * and the gemm list of a training step, the state of one case (inputs
 * allocated and filled at set-up, one iteration = the timed work),
 * repetitions timed by wall and process-CPU clocks (or bracketed by
 * callgrind client requests), and the summary statistics.
 */
#include "lab/bench/bench.h"
#include "lab/stats.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/dp.h"
#include "nn/gate.h"
#include "nn/kvcache.h"
#include "nn/model.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/rng.h"
#include "nn/rope.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

/* ==================================================================== */
/* FLOPs and the step's gemms                                            */
/* ==================================================================== */

static void gemm_put(BenchGemm *out, int cap, int *n, int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc,
                     int beta) {
    if (*n < cap) out[*n] = (BenchGemm){ta, tb, M, N, K, lda, ldb, ldc, beta};
    (*n)++;
}

/* linear_forward(y, ldy, x, ldx, W, n, N, K, beta) */
static void g_fwd(BenchGemm *o, int cap, int *k, int n, int N, int K, int ldx, int ldy, int beta) {
    gemm_put(o, cap, k, 0, 1, n, N, K, ldx, K, ldy, beta);
}
/* linear_backward(dx, ldx, dW, dy, ldy, x, W, n, N, K), both outputs */
static void g_bwd(BenchGemm *o, int cap, int *k, int n, int N, int K, int ldx, int ldy) {
    gemm_put(o, cap, k, 0, 0, n, K, N, ldy, K, ldx, 1);
    gemm_put(o, cap, k, 1, 0, N, K, n, ldy, ldx, K, 1);
}

int bench_step_gemms(const Config *cfg, BenchGemm *out, int cap) {
    Model m;
    ModelCfg mc = config_model(cfg);
    if (model_layout(&m, &mc)) return -1;
    int n = cfg->batch * cfg->seq_len, C = m.C, F = m.F, V = m.V, nq = m.nq, Np = m.Np, L = m.L, k = 0;
    model_free(&m);
    /* forward, as model_forward issues them */
    for (int l = 0; l < L; l++) {
        g_fwd(out, cap, &k, n, Np, C, C, Np, 0);    /* q|k|v|gate projection */
        g_fwd(out, cap, &k, n, C, nq, nq, C, 0);    /* wo */
        g_fwd(out, cap, &k, n, 2 * F, C, C, 2 * F, 0); /* SwiGLU gate|up */
        g_fwd(out, cap, &k, n, C, F, F, C, 1);      /* w_down, added into the residual */
    }
    g_fwd(out, cap, &k, n, V, C, C, V, 0); /* tied output layer */
    /* backward, as model_backward issues them */
    g_bwd(out, cap, &k, n, V, C, C, V);
    for (int l = L - 1; l >= 0; l--) {
        g_bwd(out, cap, &k, n, C, F, F, C);
        g_bwd(out, cap, &k, n, 2 * F, C, C, 2 * F);
        g_bwd(out, cap, &k, n, C, nq, nq, C);
        g_bwd(out, cap, &k, n, Np, C, C, Np);
    }
    return k;
}

double bench_case_flops(const BenchCase *c) {
    switch (c->kind) {
    case BK_GATE: {
        GateOp g = gate_op(&c->gate, c->heads, c->width);
        double W = (double)c->heads * c->width, A = (double)g.lh * g.ld;
        return (double)c->tokens * ((W + A) + (3 * W + 2 * A));
    }
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: {
        double P = (double)c->B * c->H * c->T * (c->T + 1.0) / 2.0, f = 4.0 * c->d * P;
        return c->kind == BK_ATTN_FWD ? f : 2.5 * f;
    }
    case BK_STEP: {
        Model m;
        ModelCfg mc = config_model(&c->cfg);
        if (model_layout(&m, &mc)) return NAN;
        double f, tr;
        model_flops(&m, c->T, &f, &tr);
        model_free(&m);
        return tr * c->B * c->T;
    }
    case BK_DECODE: {
        Model m;
        ModelCfg mc = config_model(&c->cfg);
        if (model_layout(&m, &mc)) return NAN;
        double f, tr;
        model_flops(&m, 2 * c->T - 1, &f, &tr);
        model_free(&m);
        return f;
    }
    case BK_SGEMM: {
        int n = bench_step_gemms(&c->cfg, NULL, 0);
        if (n < 0) return NAN;
        BenchGemm *g = malloc(sizeof *g * (size_t)(n ? n : 1));
        if (!g) return NAN;
        bench_step_gemms(&c->cfg, g, n);
        double f = 0;
        for (int i = 0; i < n; i++) f += 2.0 * g[i].M * g[i].N * g[i].K;
        free(g);
        return f;
    }
    case BK_OP: {
        double nw = (double)c->tokens * c->width;
        switch (c->op) {
        case BOP_RMSNORM: return 10 * nw;
        case BOP_ROPE: return 6 * nw * c->heads;
        case BOP_SWIGLU: return 14 * nw;
        default: return 6 * nw;
        }
    }
    default: return NAN;
    }
}

double bench_case_tokens(const BenchCase *c) {
    return c->kind == BK_STEP ? (double)c->B * c->T : c->kind == BK_DECODE ? 1 : 0;
}

/* ==================================================================== */
/* statistics                                                            */
/* ==================================================================== */

/* The statistics are lab/stats.c's; one repetition reports a standard
 * deviation of 0 (as Google Benchmark does) where stats says NAN. */
void bench_stats(const double *x, int n, BenchStats *st) {
    double sd;
    st->median = util_median(x, n);
    stats_mean_std(x, n, &st->mean, &sd);
    st->stddev = n > 1 ? sd : 0;
    st->cv = n > 0 && st->mean != 0 ? st->stddev / st->mean : NAN;
}

void bench_result_free(BenchResult *r) {
    free(r->real);
    free(r->cpu);
    free(r->iters);
    memset(r, 0, sizeof *r);
}

double bench_gflops(const BenchSuite *s, const BenchResult *res, int i) {
    (void)s;
    const BenchResult *r = &res[i];
    if (!r->ran || !(r->rs.median > 0)) return NAN;
    return r->flops / r->rs.median * 1e-9;
}

double bench_pct_ceiling(const BenchSuite *s, const BenchResult *res, int i) {
    int j = s->c[i].ceiling;
    if (j < 0 || !res[j].ran) return NAN;
    double a = bench_gflops(s, res, i), b = bench_gflops(s, res, j);
    return b > 0 ? 100.0 * a / b : NAN;
}

/* ==================================================================== */
/* running                                                               */
/* ==================================================================== */

static double now_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

enum { MAXMEM = 24 };

typedef struct {
    const BenchCase *c;
    void *mem[MAXMEM];
    int nmem, oom;
    Rng rng;
    /* gate */
    GateOp g;
    int sl, sdl;
    real *y, *L, *out, *S, *dy, *dL, *G, *dout;
    /* attention and ops */
    real *q, *k, *v, *o, *lse, *dq, *dk, *dv, *x, *w, *dx, *dw, *rstd, *cos_t, *sin_t;
    real *z, *sink, *kstar, *dsink, *dkstar; /* the normaliser's virtual key (attn.h) */
    int *tok, *tgt;
    /* step */
    Model m;
    int have_model;
    DataParallel dp; /* the step's micro-batches, as training runs them */
    AdamW opt;
    long t;
    /* decode */
    KvCache kv;
    int have_kv;
    /* sgemm */
    BenchGemm *gm;
    int ngm;
    real *A, *B, *Cm;
} St;

static void *st_alloc(St *s, size_t bytes) {
    void *p = NULL;
    if (s->nmem < MAXMEM) p = malloc(bytes ? bytes : 1);
    if (!p) {
        s->oom = 1;
        return NULL;
    }
    s->mem[s->nmem++] = p;
    return p;
}

/* n values ~ N(0, sd^2) (sd 0: zeros). */
static real *st_real(St *s, size_t n, double sd) {
    real *p = st_alloc(s, sizeof(real) * n);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = sd > 0 ? (real)(sd * rng_normal(&s->rng)) : 0;
    return p;
}

static int *st_ints(St *s, size_t n, int below) {
    int *p = st_alloc(s, sizeof(int) * n);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = (int)rng_below(&s->rng, (uint64_t)below);
    return p;
}

static void st_free(St *s) {
    for (int i = 0; i < s->nmem; i++) free(s->mem[i]);
    if (s->have_kv) kvcache_free(&s->kv), model_free(&s->m);
    s->have_kv = 0;
    if (s->have_model) dp_free(&s->dp), model_free(&s->m);
    s->nmem = 0;
    s->have_model = 0;
}

/* The gated tensor y, the gate's input L, their gradients and the outputs. */
static void setup_gate(St *s, const BenchCase *c) {
    size_t n = (size_t)c->tokens, W = (size_t)c->heads * c->width;
    s->g = gate_op(&c->gate, c->heads, c->width);
    size_t nl = (size_t)s->g.lh * s->g.ld;
    int stat = c->gate.input == GI_STATIC;
    s->sl = stat ? 0 : (int)nl;
    s->sdl = s->sl;
    s->y = st_real(s, n * W, 1);
    s->L = st_real(s, stat ? nl : n * nl, 1);
    s->dL = st_real(s, stat ? nl : n * nl, 0);
    s->out = st_real(s, n * W, 0);
    s->S = st_real(s, n * W, 0);
    s->dy = st_real(s, n * W, 0);
    s->G = st_real(s, n * W, 0);
    s->dout = st_real(s, n * W, 1);
}

/* One attention pass with the case's normaliser, its virtual key
 * included (the logits from the parameters before the forward, their
 * gradients after the backward): what a model layer runs.  0 or -1 (out of
 * memory). */
static int attention_pass(St *s, const BenchCase *c, int kind) {
    int nq = c->H * c->d, nk = c->Hk * c->d;
    real scale = 1 / sqrt((real)c->d);
    AttnNorm an = {c->normalizer, s->z};
    if (kind == BK_ATTN_FWD) {
        attn_virtual_logits(s->z, an.kind, s->sink, s->kstar, s->q, nq, c->B, c->T, c->H, c->Hk, c->d, scale);
        return attention_forward_norm(s->o, s->lse, s->q, nq, s->k, nk, s->v, nk, c->B, c->T, c->H, c->Hk, c->d,
                                      scale, &an);
    }
    if (attention_backward_norm(s->dq, s->dk, s->dv, s->dout, s->o, s->lse, s->q, nq, s->k, nk, s->v, nk, c->B, c->T,
                                c->H, c->Hk, c->d, scale, &an))
        return -1;
    attn_virtual_backward(s->dq, s->dsink, s->dkstar, an.kind, s->z, s->lse, s->dout, s->o, s->kstar, s->q, nq, c->B,
                          c->T, c->H, c->Hk, c->d, scale);
    return 0;
}

/* q, k, v and the outputs; for the backward pass also its gradients and
 * one forward pass, whose o and lse it reads. */
static void setup_attention(St *s, const BenchCase *c) {
    size_t n = (size_t)c->B * c->T, nq = (size_t)c->H * c->d, nk = (size_t)c->Hk * c->d;
    s->q = st_real(s, n * nq, 1);
    s->k = st_real(s, n * nk, 1);
    s->v = st_real(s, n * nk, 1);
    s->o = st_real(s, n * nq, 0);
    s->lse = st_real(s, (size_t)c->B * c->H * c->T, 0);
    if (c->kind == BK_ATTN_BWD) {
        s->dq = st_real(s, n * nq, 0);
        s->dk = st_real(s, n * nk, 0);
        s->dv = st_real(s, n * nk, 0);
        s->dout = st_real(s, n * nq, 1);
    }
    /* the normaliser's, after the draws above (which stay as they were) */
    s->z = st_real(s, (size_t)c->B * c->H * c->T, 0);
    s->sink = st_real(s, (size_t)c->H, 1);
    s->kstar = st_real(s, nk, 1);
    s->dsink = st_real(s, (size_t)c->H, 0);
    s->dkstar = st_real(s, nk, 0);
    if (c->kind == BK_ATTN_BWD && !s->oom && attention_pass(s, c, BK_ATTN_FWD)) s->oom = 1;
}

/* One op's inputs, outputs and gradients. */
static void setup_op(St *s, const BenchCase *c) {
    size_t n = (size_t)c->tokens, w = (size_t)c->width, hw = (size_t)c->heads * c->width;
    switch (c->op) {
    case BOP_RMSNORM:
        s->x = st_real(s, n * w, 1);
        s->w = st_real(s, w, 1);
        s->o = st_real(s, n * w, 0);
        s->rstd = st_real(s, n, 0);
        s->dout = st_real(s, n * w, 1);
        s->dx = st_real(s, n * w, 0);
        s->dw = st_real(s, w, 0);
        break;
    case BOP_ROPE:
        s->x = st_real(s, n * hw, 1);
        s->o = st_real(s, n * hw, 0);
        s->dout = st_real(s, n * hw, 1);
        s->dx = st_real(s, n * hw, 0);
        s->cos_t = st_real(s, (size_t)c->T * (w / 2), 0);
        s->sin_t = st_real(s, (size_t)c->T * (w / 2), 0);
        if (!s->oom) {
            RopeScaling rp = rope_plain(10000.0);
            rope_tables(s->cos_t, s->sin_t, c->T, c->width, &rp);
        }
        break;
    case BOP_SWIGLU:
        s->x = st_real(s, n * 2 * w, 1);
        s->o = st_real(s, n * w, 0);
        s->dout = st_real(s, n * w, 1);
        s->dx = st_real(s, n * 2 * w, 0);
        break;
    default:
        s->x = st_real(s, n * w, 1);
        s->o = st_real(s, n * w, 0);
        s->dx = st_real(s, n * w, 0);
        s->tgt = st_ints(s, n, c->width);
        break;
    }
}

/* The model, its micro-batch workers, random tokens and targets, AdamW. */
static int setup_step(St *s, const BenchCase *c, char *err, size_t cap) {
    ModelCfg mc = config_model(&c->cfg);
    if (model_init(&s->m, &mc)) {
        snprintf(err, cap, "%s: out of memory for the model", c->name);
        return -1;
    }
    if (dp_init(&s->dp, &s->m, c->B, dp_micro_batch(c->B, c->cfg.micro_batch))) {
        snprintf(err, cap, "%s: out of memory for the micro-batch workers", c->name);
        model_free(&s->m);
        return -1;
    }
    s->have_model = 1;
    size_t n = (size_t)c->B * c->T;
    s->tok = st_ints(s, n, c->cfg.vocab_size);
    s->tgt = st_ints(s, n, c->cfg.vocab_size);
    s->opt = (AdamW){c->cfg.lr, c->cfg.beta1, c->cfg.beta2, c->cfg.adam_eps, c->cfg.weight_decay, c->cfg.grad_clip};
    return 0;
}

/* The model and a KV cache holding context - 1 positions of random keys and
 * values (what they hold does not change the work), so each iteration
 * decodes the token at position context - 1 and takes it back out. */
static int setup_decode(St *s, const BenchCase *c, char *err, size_t cap) {
    ModelCfg mc = config_model(&c->cfg);
    if (model_init(&s->m, &mc)) {
        snprintf(err, cap, "%s: out of memory for the model", c->name);
        return -1;
    }
    if (kvcache_init(&s->kv, &s->m, c->T)) {
        snprintf(err, cap, "%s: %s", c->name,
                 errno == EINVAL ? "KV-cache decoding needs model.attention.normalizer softmax"
                                 : "out of memory for the KV cache");
        model_free(&s->m);
        return -1;
    }
    s->have_kv = 1;
    size_t n = (size_t)s->m.L * c->T * s->kv.width;
    for (size_t i = 0; i < n; i++) s->kv.mem[i] = (real)(0.5 * rng_normal(&s->rng));
    size_t ni = s->kv.ikT ? (size_t)s->m.L * c->cfg.attn.idx_dim * c->T : 0; /* the indexer's keys */
    for (size_t i = 0; i < ni; i++) s->kv.ikT[i] = (real)(0.5 * rng_normal(&s->rng));
    s->kv.len = c->T - 1;
    return 0;
}

/* The step's gemm list and operands as large as its largest call needs. */
static int setup_sgemm(St *s, const BenchCase *c, char *err, size_t cap) {
    int n = bench_step_gemms(&c->cfg, NULL, 0);
    if (n <= 0) {
        snprintf(err, cap, "%s: no gemms for this model", c->name);
        return -1;
    }
    s->gm = st_alloc(s, sizeof *s->gm * (size_t)n);
    if (!s->gm) return 0;
    s->ngm = bench_step_gemms(&c->cfg, s->gm, n);
    size_t na = 0, nb = 0, nc = 0;
    for (int i = 0; i < s->ngm; i++) {
        const BenchGemm *g = &s->gm[i];
        size_t ra = (size_t)(g->ta ? g->K : g->M) * g->lda, rb = (size_t)(g->tb ? g->N : g->K) * g->ldb,
               rc = (size_t)g->M * g->ldc;
        if (ra > na) na = ra;
        if (rb > nb) nb = rb;
        if (rc > nc) nc = rc;
    }
    s->A = st_real(s, na, 0.05);
    s->B = st_real(s, nb, 0.05);
    s->Cm = st_real(s, nc, 0);
    return 0;
}

/* Set up case c: 0, or -1 with err (nothing left allocated). */
static int st_setup(St *s, const BenchCase *c, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    s->c = c;
    s->rng = rng_seed(0xBE5C4ull);
    int rc = 0;
    switch (c->kind) {
    case BK_GATE: setup_gate(s, c); break;
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: setup_attention(s, c); break;
    case BK_OP: setup_op(s, c); break;
    case BK_STEP: rc = setup_step(s, c, err, cap); break;
    case BK_SGEMM: rc = setup_sgemm(s, c, err, cap); break;
    case BK_DECODE: rc = setup_decode(s, c, err, cap); break;
    default: break;
    }
    if (rc) return -1;
    if (s->oom) {
        snprintf(err, cap, "%s: out of memory", c->name);
        st_free(s);
        return -1;
    }
    return 0;
}

static int st_iter(St *s, char *err, size_t cap) {
    const BenchCase *c = s->c;
    switch (c->kind) {
    case BK_GATE: {
        int W = c->heads * c->width;
        gate_forward(&s->g, s->out, W, s->S, s->y, W, s->L, s->sl, c->tokens);
        gate_backward(&s->g, s->dy, W, s->dL, s->sdl, s->G, s->dout, W, s->S, s->y, W, s->L, s->sl, c->tokens);
        break;
    }
    case BK_ATTN_FWD:
    case BK_ATTN_BWD: {
        if (attention_pass(s, c, c->kind)) {
            snprintf(err, cap, "%s: out of memory for the attention work area", c->name);
            return -1;
        }
        break;
    }
    case BK_OP: {
        int n = c->tokens, w = c->width, hw = c->heads * c->width;
        switch (c->op) {
        case BOP_RMSNORM:
            rmsnorm_forward(s->o, w, s->rstd, s->x, w, s->w, n, 1, w, (real)1e-6);
            rmsnorm_backward(s->dx, w, s->dw, s->dout, w, s->x, w, s->w, s->rstd, n, 1, w);
            break;
        case BOP_ROPE:
            rope_forward(s->o, s->x, hw, s->cos_t, s->sin_t, n, c->T, c->heads, w);
            rope_backward(s->dx, hw, s->dout, s->cos_t, s->sin_t, n, c->T, c->heads, w);
            break;
        case BOP_SWIGLU:
            swiglu_forward(s->o, s->x, n, w);
            swiglu_backward(s->dx, s->dout, s->x, n, w);
            break;
        default:
            crossentropy_forward(s->o, s->x, s->tgt, n, w);
            crossentropy_backward(s->dx, s->o, s->tgt, n, w, 1);
            break;
        }
        break;
    }
    case BK_STEP: {
        int bad = 0;
        errno = 0;
        double loss = dp_step(&s->dp, s->tok, s->tgt, c->T, &bad);
        if (loss != loss) {
            snprintf(err, cap, "%s: forward failed (%s)", c->name, errno == ENOMEM ? "out of memory" : "NaN loss");
            return -1;
        }
        if (bad) {
            snprintf(err, cap, "%s: backward failed (out of memory)", c->name);
            return -1;
        }
        adamw_step(&s->m.p, &s->opt, ++s->t);
        break;
    }
    case BK_DECODE:
        if (!kvcache_step(&s->kv, &s->m, 1)) {
            snprintf(err, cap, "%s: the KV cache is full", c->name);
            return -1;
        }
        s->kv.len = c->T - 1;
        break;
    case BK_SGEMM:
        for (int i = 0; i < s->ngm; i++) {
            const BenchGemm *g = &s->gm[i];
            gemm(g->ta, g->tb, g->M, g->N, g->K, 1, s->A, g->lda, s->B, g->ldb, (real)g->beta, s->Cm, g->ldc);
        }
        break;
    default: break;
    }
    return 0;
}

struct BenchRun {
    const BenchCase *c;
    St s;
    int reps, cg;
    long fixed;
    double min_time;
};

int bench_case_begin(const BenchCase *c, const BenchRunOpts *o, BenchRun **out, BenchResult *r, char *err,
                     size_t cap) {
    memset(r, 0, sizeof *r);
    *out = NULL;
    int reps = o && o->repetitions > 0 ? o->repetitions : c->repetitions;
    long fixed = c->iterations;
    int cg = o && o->callgrind;
    if (cg) {
#ifndef BENCH_HAVE_CALLGRIND
        snprintf(err, cap, "%s: built without <valgrind/callgrind.h>; --callgrind is unavailable", c->name);
        return -1;
#endif
        reps = 1;
        if (fixed < 1) fixed = 1;
    }
    BenchRun *b = calloc(1, sizeof *b);
    r->real = malloc(sizeof(double) * (size_t)reps);
    r->cpu = malloc(sizeof(double) * (size_t)reps);
    r->iters = malloc(sizeof(long) * (size_t)reps);
    if (!b || !r->real || !r->cpu || !r->iters) {
        free(b);
        bench_result_free(r);
        snprintf(err, cap, "%s: out of memory", c->name);
        return -1;
    }
    b->c = c;
    b->reps = reps;
    b->cg = cg;
    b->fixed = fixed;
    b->min_time = o && o->min_time >= 0 ? o->min_time : c->min_time;
    r->flops = bench_case_flops(c);
    r->tokens = bench_case_tokens(c);
    if (st_setup(&b->s, c, err, cap)) {
        free(b);
        bench_result_free(r);
        return -1;
    }
    if (c->kind == BK_DECODE) r->kv_bytes = (double)kvcache_bytes_per_token(&b->s.kv, &b->s.m);
    int rc = 0;
    for (int i = 0; i < c->warmup && !rc; i++) rc = st_iter(&b->s, err, cap);
    if (rc) {
        st_free(&b->s);
        free(b);
        bench_result_free(r);
        return -1;
    }
    *out = b;
    return 0;
}

int bench_case_rep(BenchRun *b, BenchResult *r, char *err, size_t cap) {
    if (r->n >= b->reps) return 1;
#ifdef BENCH_HAVE_CALLGRIND
    if (b->cg) CALLGRIND_ZERO_STATS;
#endif
    int rc = 0;
    double w0 = util_now(), c0 = now_cpu(), el = 0;
    long k = 0;
    do {
        rc = st_iter(&b->s, err, cap);
        k++;
        el = util_now() - w0;
    } while (!rc && (b->fixed > 0 ? k < b->fixed : el < b->min_time));
    double ce = now_cpu() - c0;
    if (rc) return -1;
#ifdef BENCH_HAVE_CALLGRIND
    if (b->cg) CALLGRIND_DUMP_STATS_AT(b->c->name);
#endif
    r->real[r->n] = el / k;
    r->cpu[r->n] = ce / k;
    r->iters[r->n] = k;
    r->n++;
    return 0;
}

void bench_case_end(BenchRun *b, BenchResult *r, int ok) {
    if (b) {
        st_free(&b->s);
        free(b);
    }
    if (!ok || r->n == 0) {
        bench_result_free(r);
        return;
    }
    bench_stats(r->real, r->n, &r->rs);
    bench_stats(r->cpu, r->n, &r->cs);
    r->ran = 1;
}

int bench_run_case(const BenchCase *c, const BenchRunOpts *o, BenchResult *r, char *err, size_t cap) {
    BenchRun *b;
    if (bench_case_begin(c, o, &b, r, err, cap)) return -1;
    int rc;
    while ((rc = bench_case_rep(b, r, err, cap)) == 0) {
    }
    bench_case_end(b, r, rc > 0);
    return rc > 0 ? 0 : -1;
}
