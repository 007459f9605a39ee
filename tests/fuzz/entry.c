/* entry.c — see entry.h.  Compiled into the libFuzzer harnesses (clang) and
 * into build/test_f32 for the replay (gcc; see the fuzz section of the
 * Makefile). */
#include "entry.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/arena.h"
#include "lab/bench.h"
#include "run/checkpoint.h"
#include "run/config.h"
#include "run/store.h"
#include "lab/sweep.h"

/* ------------------------------------------------------------ helpers */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: invariant broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* Copies of experiments/tiny.yaml and quick.yaml (the bases the sweeps in
 * experiments/ name), so a sweep's `base:` and a bench suite's `config:`
 * can resolve without the repository. */
static const char TINY_YAML[] = "model:\n  vocab_size: 64\n  d_model: 32\n  n_layer: 2\n  n_head: 4\n"
                                "  d_ff: 48\n  seq_len: 16\n  gate:\n    position: none\n"
                                "train:\n  batch: 2\n  steps: 20\n  warmup: 5\n  seed: 7\n";
static const char QUICK_YAML[] = "model:\n  vocab_size: 257\n  d_model: 128\n  n_layer: 4\n  n_head: 4\n"
                                 "  n_kv_head: 2\n  d_head: 32\n  seq_len: 128\n"
                                 "train:\n  batch: 16\n  steps: 100\n  warmup: 10\n  lr: 3.0e-3\n"
                                 "  min_lr: 3.0e-4\n  eval_every: 25\n  eval_windows: 32\n"
                                 "data:\n  corpus: brown\n  bos_start: true\n";

static char dir[4096];      /* this process's directory, "" until made */
static pid_t dir_pid;       /* the process that made it (a fork child must not remove it) */
static char p_run[4200];    /* DIR/experiments/in.yaml: run configs and sweeps */
static char p_bench[4200];  /* DIR/bench/in.yaml */
static char p_ckpt[4200];   /* DIR/in.ckpt */

static void write_file(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
            exit(1);
        }
        p += w, n -= (size_t)w;
    }
    close(fd);
}

void fuzz_cleanup(void) {
    if (!dir[0] || dir_pid != getpid()) return;
    static const char *const files[] = {"experiments/in.yaml", "experiments/tiny.yaml", "experiments/quick.yaml",
                                        "bench/in.yaml", "in.ckpt", NULL};
    char p[4200];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/experiments", dir);
    rmdir(p);
    snprintf(p, sizeof p, "%s/bench", dir);
    rmdir(p);
    rmdir(dir);
    dir[0] = '\0';
}

void fuzz_init(void) {
    if (dir[0]) return; /* made here, or by the parent of this fork child (which removes it) */
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gated-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "fuzz: mkdtemp %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    dir_pid = getpid();
    static int registered;
    if (!registered) atexit(fuzz_cleanup), registered = 1;
    char p[4200];
    snprintf(p, sizeof p, "%s/experiments", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/bench", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/experiments/tiny.yaml", dir);
    write_file(p, TINY_YAML, sizeof TINY_YAML - 1);
    snprintf(p, sizeof p, "%s/experiments/quick.yaml", dir);
    write_file(p, QUICK_YAML, sizeof QUICK_YAML - 1);
    snprintf(p_run, sizeof p_run, "%s/experiments/in.yaml", dir);
    snprintf(p_bench, sizeof p_bench, "%s/bench/in.yaml", dir);
    snprintf(p_ckpt, sizeof p_ckpt, "%s/in.ckpt", dir);
}

/* config_to_json into a fresh buffer. */
static char *to_json(const Config *c) {
    int n = config_to_json(c, NULL, 0);
    if (n < 0) die("config_to_json returned %d", n);
    char *j = malloc((size_t)n + 1);
    if (!j) abort();
    int m = config_to_json(c, j, (size_t)n + 1);
    if (m != n) die("config_to_json: %d characters, then %d", n, m);
    return j;
}

/* ------------------------------------------------------------ config */

int fuzz_config_one(const uint8_t *data, size_t size) {
    fuzz_init();
    write_file(p_run, data, size);
    Config c;
    ConfigError err;
    config_defaults(&c);
    config_load_file(&c, p_run, &err); /* on failure c keeps the defaults */

    /* every line with '=' as a --set */
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    int nset = 0;
    for (char *line = text, *next; line && nset < 64; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (strchr(line, '=')) {
            config_set(&c, line, &err);
            nset++;
        }
    }
    free(text);

    if (config_resolve(&c, &err) != 0) return 0;
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    if (devnull) config_print(&c, devnull);

    /* the JSON round trip (what the store and checkpoints rely on) */
    char *j1 = to_json(&c);
    Config d;
    config_defaults(&d);
    if (config_from_json(&d, j1, &err) != 0) die("config_from_json refuses config_to_json's output: %s\n%s", err.msg, j1);
    if (config_resolve(&d, &err) != 0) die("the JSON of a resolved config does not resolve: %s\n%s", err.msg, j1);
    char *j2 = to_json(&d);
    if (strcmp(j1, j2) != 0) die("config JSON round trip differs:\n%s\n%s", j1, j2);
    char why[256];
    if (!config_same_architecture(&c, &d, why, sizeof why)) die("round trip changed the architecture: %s", why);
    free(j1);
    free(j2);
    return 0;
}

/* ------------------------------------------------------------ sweep */

int fuzz_sweep_one(const uint8_t *data, size_t size) {
    fuzz_init();
    write_file(p_run, data, size);
    Sweep s;
    ConfigError err;
    if (sweep_load(&s, p_run, &err) != 0) {
        sweep_free(&s);
        return 0;
    }
    int per = s.nseeds ? s.nseeds : 1;
    if (s.nrows < 1 || s.nruns != s.nrows * per)
        die("sweep: %d rows x %d seeds but %d runs", s.nrows, s.nseeds, s.nruns);
    for (int i = 0; i < s.nruns; i++) {
        const SweepRun *r = &s.runs[i];
        if (r->index != i || r->row != i / per || !r->label || !r->name || !r->config.resolved)
            die("sweep: run %d: index %d row %d label %p name %p resolved %d", i, r->index, r->row,
                (void *)r->label, (void *)r->name, r->config.resolved);
    }
    /* the child of `gated sweep` gets BASE --set ...: the same run id */
    for (int i = 0; i < s.nruns && i < 4; i++) {
        const SweepRun *r = &s.runs[i];
        Config c;
        config_defaults(&c);
        if (config_load_file(&c, s.base, &err) != 0) die("sweep run %d: base %s: %s", i, s.base, err.msg);
        for (int k = 0; k < r->noverrides; k++)
            if (config_set(&c, r->overrides[k], &err) != 0) die("sweep run %d: --set %s: %s", i, r->overrides[k], err.msg);
        if (config_resolve(&c, &err) != 0) die("sweep run %d: does not resolve as a child: %s", i, err.msg);
        char *j = to_json(&c);
        char id[17];
        store_run_id(j, id);
        if (strcmp(id, r->run_id) != 0) die("sweep run %d: id %s, but its child computes %s\n%s", i, r->run_id, id, j);
        if (c.seed != r->seed) die("sweep run %d: seed %lld, child %lld", i, r->seed, (long long)c.seed);
        free(j);
    }
    sweep_free(&s);
    return 0;
}

/* ------------------------------------------------------------ checkpoint */

/* The arena size a format-3 (or 2) file declares (after magic, u32, in
 * format 3 two 16-byte ids, u64 json length, json), or 0.  Only to size
 * the arena; the reader checks it. */
static uint64_t declared_total(const uint8_t *d, size_t n) {
    const size_t head = 11 + 4 + (n >= 11 && memcmp(d, "GATEDCKPT3\n", 11) == 0 ? 32 : 0);
    uint64_t jl, total;
    if (n < head + 8) return 0;
    memcpy(&jl, d + head, 8);
    if (jl > n - head - 8 || n - head - 8 - jl < 8) return 0;
    memcpy(&total, d + head + 8 + jl, 8);
    return total;
}

static void checkpoint_pass(const uint8_t *data, size_t size) {
    write_file(p_ckpt, data, size);
    char err[1024], *json = NULL;
    TrainState ts;
    int rc = checkpoint_read(p_ckpt, &json, NULL, &ts, err, sizeof err);
    if (rc == 1 && !json) die("checkpoint_read: 1 without the configuration");
    if (rc != 1 && json) die("checkpoint_read: %d with a configuration", rc);
    free(json);
    if (rc != 1) return;

    uint64_t n = declared_total(data, size);
    if (n == 0 || n > size) return; /* cannot hold n reals: the reader refuses it */
    Arena a;
    memset(&a, 0, sizeof a);
    if (arena_add(&a, "all", 0, 1, (int)n, 0, 0) < 0 || arena_alloc(&a) != 0) {
        arena_free(&a);
        return;
    }
    json = NULL;
    rc = checkpoint_read(p_ckpt, &json, &a, &ts, err, sizeof err);
    if (rc == 1) {
        if (!json) die("checkpoint_read with an arena: 1 without the configuration");
        if (ts.step < 0 || ts.spikes < 0 || ts.spikes > ts.step || !(ts.train_time >= 0))
            die("checkpoint_read accepted a bad state: step %lld spikes %lld time %g", (long long)ts.step,
                (long long)ts.spikes, ts.train_time);
        for (size_t i = 0; i < a.total; i++)
            if (!isfinite(a.w[i]) || !isfinite(a.m[i]) || !isfinite(a.v[i]) || a.v[i] < 0)
                die("checkpoint_read accepted value %zu: w %g m %g v %g", i, (double)a.w[i], (double)a.m[i],
                    (double)a.v[i]);
        /* the database it names (format 3), or any (format 2: it names none) */
        char dbid[17] = "0123456789abcdef";
        if (size >= 31 && memcmp(data, "GATEDCKPT3\n", 11) == 0) memcpy(dbid, data + 15, 16);
        int lr = checkpoint_load(p_ckpt, json, dbid, &a, &ts, err, sizeof err);
        if (lr != 1) die("checkpoint_load refuses what checkpoint_read accepted: %s", err);
    }
    free(json);
    arena_free(&a);
}

int fuzz_checkpoint_one(const uint8_t *data, size_t size) {
    fuzz_init();
    checkpoint_pass(data, size);
    if (size >= 8) {
        uint8_t *fixed = malloc(size);
        if (!fixed) abort();
        memcpy(fixed, data, size);
        uint64_t sum = checkpoint_checksum(fixed, size - 8);
        memcpy(fixed + size - 8, &sum, 8);
        if (memcmp(fixed, data, size) != 0) checkpoint_pass(fixed, size);
        free(fixed);
    }
    return 0;
}

/* ------------------------------------------------------------ bench */

int fuzz_bench_one(const uint8_t *data, size_t size) {
    fuzz_init();
    write_file(p_bench, data, size);
    BenchSuite s;
    char err[1024];
    if (bench_load_file(&s, p_bench, err, sizeof err) != 0) {
        bench_suite_free(&s);
        return 0;
    }
    for (int i = 0; i < s.n; i++) {
        const BenchCase *c = &s.c[i];
        if (bench_find(&s, c->name) != i) die("bench: case %d name %s is also case %d", i, c->name, bench_find(&s, c->name));
        if (c->ceiling < -1 || c->ceiling >= s.n) die("bench: case %s: ceiling %d of %d cases", c->name, c->ceiling, s.n);
        double f = bench_case_flops(c), t = bench_case_tokens(c);
        if (!isfinite(f) || f < 0 || !isfinite(t) || t < 0) die("bench: case %s: flops %g tokens %g", c->name, f, t);
        if (c->kind == BK_STEP || c->kind == BK_SGEMM) {
            BenchGemm g[64];
            bench_step_gemms(&c->cfg, g, 64);
        }
    }
    bench_suite_free(&s);
    return 0;
}

/* ------------------------------------------------------------ lookup */

FuzzEntry fuzz_entry(const char *target) {
    if (strcmp(target, "config") == 0) return fuzz_config_one;
    if (strcmp(target, "sweep") == 0) return fuzz_sweep_one;
    if (strcmp(target, "checkpoint") == 0) return fuzz_checkpoint_one;
    if (strcmp(target, "bench") == 0) return fuzz_bench_one;
    return NULL;
}
