/*
 * bench.h — benchmark suites: cases declared in YAML, run with warm-up and
 * repetitions, FLOPs counted analytically, results as a table, Google-
 * Benchmark JSON and store rows; and the comparison of two such JSON files.
 *
 * Implemented in three files: bench_suite.c (loading and validating a
 * suite), bench_run.c (FLOPs, the step's gemms, set-up, iterations, timing,
 * statistics) and bench_json.c (the perf environment, JSON out, compare).
 * JSON is read and escaped by util/json.h, the project's one JSON code.
 *
 * A suite file (bench/default.yaml is the reference; bench/perf.yaml the
 * callgrind set) is a mapping:
 *
 *   name: default                     # optional; default: the file's base name
 *   defaults:                         # optional; every case may override these
 *     repetitions: 5                  #   timed repetitions (median/mean/stddev/cv over them)
 *     min_time: 0.2                   #   seconds: a repetition repeats the case until this long
 *     iterations: 0                   #   > 0: exactly this many per repetition (min_time unused)
 *     warmup: 1                       #   untimed iterations first
 *   models:                           # named run configs, for step cases
 *     quick: {config: ../experiments/quick.yaml}   # relative to the suite file
 *     ref:   {set: {model.d_model: 256, train.batch: 16}}   # dotted keys or sections
 *   cases:                            # required, non-empty; each item one `kind`
 *     - kind: gate                    # gate_forward + gate_backward via gate_op
 *       gates:                        #   label + model.gate keys (position defaults to sdpa),
 *         - {label: G1-headwise, granularity: headwise}   # or `covering` / `all`: the
 *                                     #   variant tables' gate_covering() / gate_enumerate()
 *       shapes:                       #   n tokens x heads x width of the gated tensor
 *         - {label: quick, tokens: 2048, heads: 4, width: 32}
 *     - kind: attention               # attention_forward / attention_backward
 *       pass: [forward, backward]
 *       T: [128, 256, 512]            #   an integer or a list
 *       n_head: 4
 *       n_kv_head: 4                  #   default n_head
 *       d_head: 32
 *       batch: 1                      #   sequences at T = batch_T; elsewhere
 *       batch_T: 512                  #   batch * (batch_T / T)^2, so every T does equal work
 *       normalizer: all               #   model.attention.normalizer names (one or a list), or
 *                                     #   all (every row of attn_norms[]); default softmax, unnamed
 *     - kind: step                    # forward, backward, AdamW on random tokens
 *       model: ref                    #   a name under models (train.batch x model.seq_len tokens)
 *       variants:                     #   default: one variant, label baseline; or
 *         - {label: baseline}         #   `covering` (bench_step_covering: every position
 *                                     #   and control of the variant tables, each alone)
 *         - {label: G1-headwise, set: {model.gate.position: sdpa, model.gate.granularity: headwise}}
 *       ceiling: true                 #   also time cblas_gemm at this step's own shapes (default true)
 *     - kind: decode                  # one token decoded from a KV cache of context - 1
 *       model: ref                    #   tokens (kvcache.h), as step: a model and variants
 *       variants: [...]               #   (model.attention.kv latent decodes by the absorbed path)
 *       context: [512, 2048, 8192]    #   required: an integer or a list
 *     - kind: op                      # one op's forward + backward
 *       op: [rmsnorm, rope, swiglu, crossentropy]
 *       tokens: 256
 *       width: 64                     #   d_model / d_head / d_ff / vocab, by op
 *       heads: 4                      #   rope only (default 1)
 *       T: 32                         #   rope only: positions (default tokens)
 *
 * Each case item may also set repetitions, min_time, iterations, warmup, and
 * `ceiling: NAME` (gate / attention / op cases): the case whose GFLOP/s is
 * this case's 100% (a step's ceiling is its own sgemm case).
 *
 * Case names (what --filter matches and JSON / the store key on):
 *   gate/LABEL/SHAPE           SHAPE = the shape's label, else nN_hH_dD
 *   attention/PASS/T<T>        with `label: X`: attention/X/PASS/T<T>; with
 *                              normalizer: attention/[X/]NORM/PASS/T<T>
 *   step/MODEL/LABEL  and  sgemm/MODEL/LABEL
 *   decode/MODEL/LABEL/ctx<N>
 *   op/OP/nN_wW
 * Two cases with one name are an error.
 *
 * FLOPs per iteration, counted analytically (bench_case_flops):
 *   gate       n (W + A) forward + n (3W + 2A) backward, W = heads x width,
 *              A = activation evaluations per token (an activation = 1 FLOP)
 *   attention  forward 4 d P, P = B H T(T+1)/2 (causal pairs: QK^T and PV);
 *              backward 2.5x forward (recomputed QK^T, dV, dP, dQ, dK)
 *   step       model_flops() training FLOPs per token x B x T
 *   sgemm      sum of 2 M N K over the step's gemm calls
 *   decode     model_flops() forward FLOPs per token at length 2N - 1 (the
 *              weights, and attention over N keys; nominal for latent KV)
 *   op         nominal: rmsnorm 3+7, rope 3+3 per value, swiglu 5+9 per
 *              output, crossentropy 4+2 per logit (forward+backward)
 *
 * Errors read "FILE:LINE:COL: error: WHERE: reason" (WHERE like
 * cases[2].T); the CLI exits 2 on them.
 */
#ifndef GATED_BENCH_H
#define GATED_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "run/config.h"

typedef enum { BK_GATE, BK_ATTN_FWD, BK_ATTN_BWD, BK_STEP, BK_SGEMM, BK_OP, BK_DECODE, BK__COUNT } BenchKind;
extern const char *const bench_kind_names[]; /* "gate", "attention_forward", ... */

typedef enum { BOP_RMSNORM, BOP_ROPE, BOP_SWIGLU, BOP_CROSSENTROPY, BOP__COUNT } BenchOp;
extern const char *const bench_op_names[]; /* NULL-terminated */

typedef struct {
    char name[192];
    int kind;             /* BenchKind */
    int line, col;        /* where the case item starts in the suite file */
    int repetitions, warmup;
    long iterations;      /* > 0: fixed count per repetition */
    double min_time;      /* seconds per repetition otherwise */
    int ceiling;          /* index of the ceiling case, or -1 */
    /* gate */
    GateCfg gate;
    int tokens, heads, width;
    /* attention (B, T, H, Hk, d); rope uses T, heads, width */
    int B, T, H, Hk, d;
    int normalizer;       /* attention: AttnNormalizer (0 = softmax) */
    /* op */
    int op;
    /* step / sgemm: a resolved config (train.batch x model.seq_len tokens) */
    Config cfg;
} BenchCase;

typedef struct {
    char name[128];
    char path[1024];
    BenchCase *c;
    int n, cap;
} BenchSuite;

/* A step case's `variants: covering` (bench_cover.c): the baseline, then
 * each value but the default of each axis of the variant tables that a
 * whole step runs (gate position, no-gate control), alone: label
 * "position=key", set "model.gate.position=key" ("" for the baseline).
 * Writes up to cap, returns the total count. */
typedef struct {
    char label[48];
    char set[160]; /* "key=value", then the axis's needed keys after ';' */
} BenchStepVariant;
int bench_step_covering(BenchStepVariant *out, int cap);

/* Parse and validate a suite file.  0, or -1 with err
 * ("FILE:LINE:COL: error: ...", always NUL-terminated). */
int bench_load_file(BenchSuite *s, const char *path, char *err, size_t cap);
void bench_suite_free(BenchSuite *s);
/* Index of a case by exact name, or -1. */
int bench_find(const BenchSuite *s, const char *name);

/* FLOPs of one iteration of c (see the table above). */
double bench_case_flops(const BenchCase *c);
/* Tokens one iteration processes (steps), else 0. */
double bench_case_tokens(const BenchCase *c);

/* One gemm call, as cblas_gemm(RowMajor, ta, tb, M, N, K, 1, A, lda, B, ldb, beta, C, ldc). */
typedef struct {
    int ta, tb; /* 0 NoTrans, 1 Trans */
    int M, N, K, lda, ldb, ldc;
    int beta;   /* 0 or 1 */
} BenchGemm;
/* Every gemm a training step of cfg (resolved) issues through
 * linear_forward / linear_backward, in call order (forward, then
 * backward).  Writes up to cap, returns the count (-1 if cfg has no valid
 * layout). */
int bench_step_gemms(const Config *cfg, BenchGemm *out, int cap);

/* Summary statistics: median, mean, sample stddev (0 for n < 2), cv =
 * stddev / mean. */
typedef struct {
    double median, mean, stddev, cv;
} BenchStats;
void bench_stats(const double *x, int n, BenchStats *st);

/* The result of one case: per repetition, seconds per iteration (wall and
 * process CPU) and iterations run. */
typedef struct {
    int n;              /* repetitions done */
    double *real, *cpu; /* n each */
    long *iters;
    BenchStats rs, cs;  /* over real, cpu */
    double flops, tokens;
    double kv_bytes; /* decode: bytes of KV cache per token, all layers */
    int ran;
} BenchResult;
void bench_result_free(BenchResult *r);

typedef struct {
    int repetitions;    /* > 0 overrides every case */
    double min_time;    /* >= 0 overrides every case (< 0: keep) */
    int callgrind;      /* 1: warm-up, then `iterations` (>= 1) iterations between
                           CALLGRIND_ZERO_STATS and CALLGRIND_DUMP_STATS_AT(name); one repetition */
    int interleave;     /* (cmd_bench) repetitions round-robin over the selected cases;
                           bench_run_case ignores it */
} BenchRunOpts;

/* Run one case: set-up, warm-up, every repetition.  0, or -1 with err
 * (allocation failure, model error). */
int bench_run_case(const BenchCase *c, const BenchRunOpts *o, BenchResult *r, char *err, size_t cap);

/* The same in steps, so that several cases can run their repetitions in
 * turn (`gated bench --interleave`: a drifting machine load then hits every
 * case alike).  begin: set-up and warm-up (0 or -1); rep: one repetition
 * (0, 1 when all are done, -1 on error); end: statistics (ok = 1) or
 * discard, and free the case's state. */
typedef struct BenchRun BenchRun;
int bench_case_begin(const BenchCase *c, const BenchRunOpts *o, BenchRun **b, BenchResult *r, char *err, size_t cap);
int bench_case_rep(BenchRun *b, BenchResult *r, char *err, size_t cap);
void bench_case_end(BenchRun *b, BenchResult *r, int ok);

/* ------------------------------------------------ the perf environment */

/* What an instruction count depends on besides our code: the CPU (and
 * through it the kernels OpenBLAS and libc pick), OpenBLAS's build and the
 * core it runs, OPENBLAS_CORETYPE, the compiler and the C library.
 * bench/perf_check.sh prints it beside its counts, which it takes for the
 * base and the head on the same machine, so both sides share it.
 * Keys, in order: arch (uname -m), cpu (/proc/cpuinfo model name),
 * cpu_id ("GenuineIntel family 6 model 207 stepping 2": virtual machines
 * often show a generic name), openblas_core (openblas_get_corename()),
 * openblas_config (openblas_get_config()), openblas_coretype (the
 * variable, "(unset)" when unset), compiler (__VERSION__ of the compiler
 * that built this), libc.  Run under valgrind, OpenBLAS may pick another
 * core than natively (it sees valgrind's CPUID): perf_check.sh asks
 * `gated bench --env` under valgrind --tool=none. */
enum { BENCH_ENV_N = 8 };
typedef struct {
    const char *key[BENCH_ENV_N];
    char val[BENCH_ENV_N][256];
} BenchEnv;
void bench_env_fill(BenchEnv *e);
/* As a JSON object, one "key": "value" member a line (`gated bench --env`). */
void bench_env_write_json(FILE *f, const BenchEnv *e);

/* Run context, for the JSON "context" object. */
typedef struct {
    const char *executable, *suite_path, *code_version, *cflags, *openblas;
    int threads, git_dirty;
    int interleaved; /* --interleave: repetition k of every case ran in round k (side by side) */
} BenchContext;

/* Google-Benchmark JSON: {"context": {...}, "benchmarks": [...]}, for every
 * case i with res[i].ran: one "iteration" row per repetition, then
 * "aggregate" rows median, mean, stddev, cv (name NAME_median, ...).
 * real_time / cpu_time per iteration in time_unit; items_per_second =
 * tokens/s for steps and decode cases (one token an iteration); counters
 * gflops (GFLOP/s), pct_of_ceiling, and kv_bytes_per_token for decode. */
int bench_write_json(FILE *f, const BenchSuite *s, const BenchResult *res, const BenchContext *ctx);

/* GFLOP/s of case i's median, and its % of its ceiling case (NAN if none). */
double bench_gflops(const BenchSuite *s, const BenchResult *res, int i);
double bench_pct_ceiling(const BenchSuite *s, const BenchResult *res, int i);

/* ------------------------------------------------------------ compare */

typedef struct {
    double threshold;    /* percent: head > base by more than this is a regression */
    const char *metric;  /* "real_time" (default), "cpu_time", or a counter name */
    int fail_missing;    /* a case in base but not in head counts as a regression */
    double alpha;        /* significance level of the U test; <= 0: 0.05 */
} BenchCompareOpts;

/* Compare two Google-Benchmark JSON files (read by util/json.h's
 * json_parse_file) by name: a case's value is its "median" aggregate's
 * metric (times converted from time_unit to seconds), else the median over
 * its iteration rows; change = (head - base) / base.  Times are tested, as
 * Google Benchmark's compare.py does: a two-sided Mann-Whitney U test
 * (stats.h) of the base's iteration rows (repetitions) against the head's;
 * a time is a regression when the change is over the threshold AND p <
 * alpha, "faster" when under -threshold and p < alpha, "not significant"
 * when beyond the threshold with p >= alpha.  When the repetitions are too
 * few for any result to reach p < alpha (stats_mann_whitney_min_p >=
 * alpha: 3 against 3 gives at best 0.1; a side with a median aggregate
 * alone has none) the case is "not tested" and never a regression.
 * A rate (items_per_second, or any metric named *_per_second) is tested
 * the same way with the sign turned: a fall by more than the threshold is
 * the regression.  Counters (any other metric: callgrind's exact
 * instruction counts) are compared by the threshold alone.  Prints one
 * line per case to out (base, head, change, p, noise, verdict; names
 * escaped as store_escape does; noise, for times and rates: the larger
 * side's half inter-quartile range over its median, in percent) and names
 * regressions, untested and missing cases.
 * Returns 0 (no regression), 3 (a regression, or with fail_missing a
 * missing case) or 2 (a file is unreadable or not benchmark JSON, out of
 * memory; message to errf). */
int bench_compare_files(const char *base, const char *head, const BenchCompareOpts *o, FILE *out, FILE *errf);

#endif
