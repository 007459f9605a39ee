/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "nn/ops.h"
#include "nn/rng.h"
#include "nn/sparse.h"
#include "run/checkpoint.h"
#include "run/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>

Cmp cmp_arrays(const real *a, const real *b, size_t n, double floor) {
    Cmp c = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) d = INFINITY;
        double r = d / (fabs((double)b[i]) + floor);
        if (d > c.max_abs || i == 0) {
            c.max_abs = d;
            c.worst = i;
            c.a = a[i];
            c.b = b[i];
        }
        if (r > c.max_rel) c.max_rel = r;
    }
    return c;
}

Config tiny_config(int V, int C, int L, int H, int Hk, int F, int T, int B) {
    Config c;
    config_defaults(&c);
    c.vocab_size = V;
    c.d_model = C;
    c.n_layer = L;
    c.n_head = H;
    c.n_kv_head = Hk;
    c.d_ff = F;
    c.seq_len = T;
    c.batch = B;
    return c;
}

void resolve_or_die(Config *c) {
    ConfigError err;
    if (config_resolve(c, &err)) {
        fprintf(stderr, "resolve_or_die: %s\n", err.msg);
        abort();
    }
}

void set_threads(int n) { ops_set_threads(n); }

int cfg_model_init(Model *m, const Config *c) {
    ModelCfg mc = config_model(c);
    return model_init(m, &mc);
}

int cfg_model_layout(Model *m, const Config *c) {
    ModelCfg mc = config_model(c);
    return model_layout(m, &mc);
}

void test_tmpdir(char *buf, size_t cap) {
    snprintf(buf, cap, "/tmp/gated-test-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

Config synth_config(int steps) {
    Config c = tiny_config(257, 32, 2, 4, 2, 48, 32, 4);
    c.corpus = CORPUS_SYNTHETIC;
    c.steps = steps;
    c.warmup = 3;
    c.eval_every = 10;
    c.eval_windows = 8;
    c.lr = 1e-2;
    c.min_lr = 1e-3;
    return c;
}

char *test_read_stream(FILE *f, size_t *len) {
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    char *buf = test_read_stream(f, len);
    fclose(f);
    return buf;
}

void test_ckpt_path(const char *db, const char *ckdir, const char *run_id, char *out, size_t cap) {
    Store *s;
    char err[512];
    cr_assert_eq(store_open_ro(&s, db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(strlen(store_db_id(s)), 16, "%s has no database id", db);
    checkpoint_path(ckdir, store_db_id(s), run_id, out, cap);
    store_close(s);
}

const char *gated_bin(void) {
    const char *b = getenv("GATED_BIN");
    if (!b || access(b, X_OK) != 0) cr_skip_test("GATED_BIN not set");
    return b;
}

int quiet_begin(void) {
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 1);
        close(null);
    }
    return saved;
}

void quiet_end(int saved) {
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, 1);
        close(saved);
    }
}

int test_gated(const char *cwd, const char *const *args, const char *const *env, unsigned timeout_s, char **out) {
    const char *bin = gated_bin();
    const char *argv[64];
    int k = 0;
    argv[k++] = bin;
    for (int i = 0; args[i] && k < 63; i++) argv[k++] = args[i];
    argv[k] = NULL;
    FILE *o = tmpfile();
    cr_assert_not_null(o);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0) dup2(in, 0);
        dup2(fileno(o), 1), dup2(fileno(o), 2);
        if (cwd && chdir(cwd) != 0) _exit(126);
        for (int i = 0; env && env[i]; i++) putenv((char *)env[i]);
        alarm(timeout_s);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    *out = test_read_stream(o, NULL);
    fclose(o);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* a ranks above b: NaN below every number, equal to NaN. */
static int topk_above(real a, real b) {
    if (isnan(a)) return 0;
    return isnan(b) || a > b;
}

void brute_topk(int *out, const real *row, int n, int kk) {
    char *taken = calloc((size_t)n, 1);
    cr_assert(taken);
    for (int i = 0; i < kk; i++) {
        int best = -1;
        for (int s = 0; s < n; s++)
            if (!taken[s] && (best < 0 || topk_above(row[s], row[best]))) best = s;
        taken[best] = 1;
    }
    for (int s = 0, c = 0; s < n; s++)
        if (taken[s]) out[c++] = s;
    free(taken);
}

void check_topk_rows(unsigned seed) {
    enum { N = 300 };
    real row[N];
    int got[N], want[N];
    void *scr = malloc(sparse_topk_scratch(N));
    cr_assert(scr);
    Rng g = rng_seed(seed);
    for (int rep = 0; rep < 60; rep++) {
        for (int s = 0; s < N; s++) {
            double x = rng_normal(&g) * ldexp(1.0, (int)rng_below(&g, 300) - 160);
            switch (rng_below(&g, 10)) {
            case 0: x = rng_below(&g, 2) ? -0.0 : 0.0; break;
            case 1: x = (double)rng_below(&g, 3) - 1; break; /* ties at -1, 0, 1 */
            case 2: x = rep % 5 == 0 ? (rng_below(&g, 2) ? INFINITY : -INFINITY) : x; break;
            case 3: x = rep % 3 == 0 ? (rng_below(&g, 2) ? NAN : -NAN) : x; break;
            case 4: x = ldexp(rng_below(&g, 2) ? -1.0 : 1.0, -1074 + (int)rng_below(&g, 60)); break; /* subnormal */
            default: break;
            }
            row[s] = (real)x;
        }
        for (int s = 0; s < N && rep % 10 >= 7; s++) /* one value (NaN too), or two */
            row[s] = rep % 10 == 7 ? row[0] : rep % 10 == 8 ? (real)(s % 2) : (s % 3 ? row[0] : row[1]);
        int n = 1 + (int)rng_below(&g, N);
        for (int kk = 1; kk < n; kk += 1 + kk / 4) {
            sparse_topk_row(got, row, n, kk, scr);
            brute_topk(want, row, n, kk);
            cr_assert(memcmp(got, want, sizeof(int) * (size_t)kk) == 0, "rep %d n %d k %d differs from brute force",
                      rep, n, kk);
        }
    }
    free(scr);
}
