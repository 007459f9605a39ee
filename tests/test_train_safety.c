/*
 * test_train_safety.c — what a run survives: out of memory (failed, never
 * diverged), a kill right after a checkpoint (resume loses and duplicates
 * no row), untrusted checkpoints (every field checked, a checksum), a
 * failed resume (the stored status stays), a model too big for the
 * machine (refused before anything is allocated), train.steps = 0 and the
 * resume of a finished run (no "nan"), a run live elsewhere (not started
 * over).
 *
 * In-process runs use the synthetic corpus; the CLI tests run $GATED_BIN
 * and are skipped when it is unset.  Out-of-memory is made real with
 * RLIMIT_AS in the child (or, under AddressSanitizer, which cannot run
 * under RLIMIT_AS, with its max_allocation_size_mb).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "nn/model.h"
#include "run/store.h"
#include "testutil.h"
#include "run/train.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* ------------------------------------------------------------ helpers */

static int claim_yes(void *ctx, const StoreRunState *state) {
    (void)ctx, (void)state;
    return 1;
}



/* One integer from a query with up to one text parameter (NULL: none). */
static long long q_int(const char *db, const char *sql, const char *arg) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    long long v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* One text value (or "(null)" / "(none)") into out. */
static char *q_text(const char *db, const char *sql, const char *arg, char *out, size_t cap) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    snprintf(out, cap, "(none)");
    if (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out, cap, "%s", t ? (const char *)t : "(null)");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/* train_run with stdout silenced and stderr into err. */
static int run_capture(const Config *c, TrainOpts *o, char *err, size_t cap) {
    char path[] = "/tmp/gated-safe-err-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    fflush(stderr);
    int saved_err = dup(2);
    dup2(fd, 2);
    int saved = quiet_begin();
    int rc = train_run(c, o);
    quiet_end(saved);
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, err, cap - 1);
    err[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return rc;
}

static void spit(const char *path, const char *b, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* Offsets into a format-3 checkpoint held in b. */
typedef struct {
    size_t db_id, run_id, jl, json, n_at, w, m, v, step, rng, ring, spikes, ttime, sum;
    uint64_t n;
} Layout;

static Layout layout_of(const char *b, size_t len) {
    Layout L;
    uint64_t jl;
    cr_assert(len > 55);
    cr_assert(memcmp(b, "GATEDCKPT3\n", 11) == 0, "not format 3");
    L.db_id = 15;
    L.run_id = 31;
    L.jl = 47;
    memcpy(&jl, b + L.jl, 8);
    L.json = 55;
    L.n_at = 55 + jl;
    memcpy(&L.n, b + L.n_at, 8);
    L.w = L.n_at + 8;
    L.m = L.w + L.n * sizeof(real);
    L.v = L.m + L.n * sizeof(real);
    L.step = L.v + L.n * sizeof(real);
    L.rng = L.step + 8;
    L.ring = L.rng + 8;
    L.spikes = L.ring + 800;
    L.ttime = L.spikes + 8;
    L.sum = L.ttime + 8;
    cr_assert_eq(L.sum + 8, len, "layout: %zu + 8 != %zu", L.sum, len);
    return L;
}

/* Make the checksum right again after a forged field. */
static void reseal(char *b, size_t len) {
    uint64_t s = checkpoint_checksum(b, len - 8);
    memcpy(b + len - 8, &s, 8);
}


/* Run $GATED_BIN with args (NULL-terminated) in a child: address space
 * limited to as_mib MiB when > 0 (under ASan: allocations over that size
 * fail instead), env "K=V" added when non-NULL.  Returns the exit status,
 * or 128 + the signal; stderr (and stdout) into out. */
static int run_bin(const char *const *args, long as_mib, const char *env, char *out, size_t cap) {
    char path[] = "/tmp/gated-safe-out-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *bin = gated_bin();
    const char *argv[64];
    int k = 0;
    argv[k++] = bin;
    for (int i = 0; args[i] && k < 63; i++) argv[k++] = args[i];
    argv[k] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fd, 1), dup2(fd, 2);
        setenv("OMP_NUM_THREADS", "1", 1);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        if (env) putenv((char *)env);
        if (as_mib > 0) {
            if (UNDER_ASAN) {
                char a[512];
                const char *old = getenv("ASAN_OPTIONS");
                snprintf(a, sizeof a, "%s%sallocator_may_return_null=1:max_allocation_size_mb=%ld", old ? old : "",
                         old && *old ? ":" : "", as_mib);
                setenv("ASAN_OPTIONS", a, 1);
            } else {
                struct rlimit rl = {(rlim_t)as_mib << 20, (rlim_t)as_mib << 20};
                if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(126);
            }
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* ------------------------------------------------------------ out of memory */

/* One layer, d_ff 16384: per token, the forward saves ~200 KB, the
 * backward needs ~790 KB of scratch on top.  At batch 256 x 64 the
 * forward's 3.3 GB cannot be had inside 2 GiB; at batch 64 the forward's
 * 0.8 GB can and the backward's 3.2 GB cannot. */
static int oom_run(const char *batch, const char *db, const char *dir, char *out, size_t cap) {
    char bs[64], mb[64];
    snprintf(bs, sizeof bs, "train.batch=%s", batch);
    snprintf(mb, sizeof mb, "train.micro_batch=%s", batch); /* one micro-batch: forward, then backward */
    const char *args[] = {"train", "experiments/tiny.yaml", "--set", "model.vocab_size=257", "--set",
                          "data.corpus=synthetic", "--set", "model.n_layer=1", "--set", "model.d_ff=16384", "--set",
                          "model.seq_len=64", "--set", bs, "--set", mb, "--set", "train.steps=2", "--set", "threads=1", "--db", db,
                          "--ckpt", dir, "--force", NULL};
    return run_bin(args, 2048, NULL, out, cap);
}

Test(train_safety, out_of_memory_in_forward_is_failed_not_diverged, .timeout = 120) {
    char dir[64], db[128], out[8192], buf[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/f.db", dir);
    int rc = oom_run("256", db, dir, out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "out of memory in the forward pass of step 1"), "%s", out);
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "failed");
    cr_assert_not_null(strstr(q_text(db, "SELECT error_text FROM runs", NULL, buf, sizeof buf), "out of memory"), "%s",
                       buf);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE diverged_step IS NOT NULL", NULL), 0);
}

Test(train_safety, out_of_memory_in_backward_is_failed, .timeout = 180) {
    char dir[64], db[128], out[8192], buf[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/b.db", dir);
    int rc = oom_run("64", db, dir, out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "out of memory in the backward pass of step 1"), "%s", out);
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "failed");
    /* the step that could not finish is not recorded as done */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE key = 'train_loss'", NULL), 0);
}

/* ------------------------------------------------------------ memory check */

Test(train_safety, memory_estimate_is_what_a_step_allocates) {
    set_threads(1);
    Config c = synth_config(1);
    c.gate.position = GP_SDPA;
    resolve_or_die(&c);
    ModelMemory mm;
    ModelCfg mc = config_model(&c);
    cr_assert_eq(model_memory_estimate(&mc, c.batch, c.seq_len, &mm), 0);
    Model m;
    cr_assert_eq(cfg_model_init(&m, &c), 0);
    int n = c.batch * c.seq_len;
    int *tok = calloc((size_t)n, sizeof *tok);
    cr_assert_not_null(tok);
    for (int i = 0; i < n; i++) tok[i] = i % 257;
    cr_assert(isfinite(model_forward(&m, tok, tok, c.batch, c.seq_len)));
    model_zero_grad(&m);
    cr_assert_eq(model_backward(&m, tok), 0);
    cr_assert_eq(mm.nparams, (long long)m.p.total);
    cr_assert_eq(mm.params, 4 * sizeof(real) * m.p.total);
    cr_assert_eq(mm.activations, sizeof(real) * (m.actlen + (size_t)c.seq_len * m.dh) + sizeof(int) * n);
    cr_assert_eq(mm.scratch, sizeof(real) * m.gradlen);
    cr_assert_eq(mm.total, mm.params + mm.activations + mm.scratch);
    free(tok);
    model_free(&m);
}

/* ~0.5 T parameters: no machine this runs on has 8 TB */
Test(train_safety, a_model_bigger_than_the_machine_is_refused_with_exit_2, .timeout = 60) {
    char dir[64], db[128], out[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/m.db", dir);
    const char *args[] = {"train", "experiments/tiny.yaml", "--set", "model.vocab_size=257", "--set",
                          "data.corpus=synthetic", "--set", "model.d_model=8192", "--set", "model.n_layer=256",
                          "--set", "model.d_ff=65536", "--set", "threads=1", "--db", db, "--ckpt", dir, NULL};
    int rc = run_bin(args, 0, NULL, out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "gated train: this run needs about "), "%s", out);
    cr_assert_not_null(strstr(out, "GiB is available ("), "%s", out);
    cr_assert_not_null(strstr(out, "pass --force to try anyway"), "%s", out);
    /* refused before the run was recorded */
    cr_assert(access(db, F_OK) != 0 || q_int(db, "SELECT count(*) FROM runs", NULL) == 0);
}

/* the case: quick.yaml at d_model 2048, 8 layers, inside 3 GiB.
 * Not built under AddressSanitizer, which cannot run under RLIMIT_AS (and
 * Criterion's skip leaks in its runner, which LeakSanitizer reports). */
#if !UNDER_ASAN
Test(train_safety, rlimit_as_bounds_the_memory_check, .timeout = 120) {
    char dir[64], db[128], out[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/q.db", dir);
    const char *args[] = {"train", "experiments/quick.yaml", "--set", "data.corpus=synthetic", "--set",
                          "model.d_model=2048", "--set", "model.n_layer=8", "--set", "threads=1", "--db", db,
                          "--ckpt", dir, NULL};
    int rc = run_bin(args, 3072, NULL, out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "GiB is available (RLIMIT_AS (ulimit -v) less the "), "%s", out);
    cr_assert(access(db, F_OK) != 0 || q_int(db, "SELECT count(*) FROM runs", NULL) == 0);
    /* --force tries: the model cannot be allocated, and no run is left running */
    const char *forced[] = {"train", "experiments/quick.yaml", "--set", "data.corpus=synthetic", "--set",
                            "model.d_model=2048", "--set", "model.n_layer=8", "--set", "threads=1", "--db", db,
                            "--ckpt", dir, "--force", NULL};
    rc = run_bin(forced, 3072, NULL, out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "--force: this run needs about"), "%s", out);
    cr_assert_not_null(strstr(out, "out of memory for the model"), "%s", out);
    cr_assert(access(db, F_OK) != 0 || q_int(db, "SELECT count(*) FROM runs WHERE status = 'running'", NULL) == 0);
}
#endif

/* ------------------------------------------------------------ kill after a checkpoint */

/* Every step's rows exactly once: train_loss, lr, grad_norm at 1..steps,
 * val_loss at each evaluation. */
static void assert_complete(const char *db, int steps, int evals, const char *what) {
    static const char *const keys[] = {"train_loss", "lr", "grad_norm"};
    for (int k = 0; k < 3; k++) {
        long long n = q_int(db, "SELECT count(*) FROM metrics WHERE key = ?1 AND context = ''", keys[k]);
        long long d = q_int(db, "SELECT count(DISTINCT step) FROM metrics WHERE key = ?1 AND context = ''", keys[k]);
        long long lo = q_int(db, "SELECT min(step) FROM metrics WHERE key = ?1", keys[k]);
        long long hi = q_int(db, "SELECT max(step) FROM metrics WHERE key = ?1", keys[k]);
        cr_assert(n == steps && d == steps && lo == 1 && hi == steps,
                  "%s: %s: %lld rows, %lld steps, %lld..%lld; want %d rows 1..%d", what, keys[k], n, d, lo, hi, steps,
                  steps);
    }
    long long v = q_int(db, "SELECT count(*) FROM metrics WHERE key = 'val_loss' AND value IS NOT NULL", NULL);
    cr_assert_eq(v, evals, "%s: %lld val_loss rows, want %d", what, v, evals);
    char buf[64];
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "finished", "%s", what);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM summary WHERE key = 'val_loss' AND value IS NOT NULL", NULL), 1,
                 "%s: no final val loss", what);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM summary WHERE key = 'test_loss' AND value IS NOT NULL", NULL), 1,
                 "%s: no test loss", what);
}

Test(train_safety, kill_right_after_a_checkpoint_then_resume_loses_nothing, .timeout = 240) {
    char dir[64], ref[128], out[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(ref, sizeof ref, "%s/ref.db", dir);
    /* 40 steps, checkpoints at 10, 20, 30, 40 and the final one (the 5th) */
    const char *base[] = {"train", "experiments/tiny.yaml", "--set", "model.vocab_size=257", "--set",
                          "data.corpus=synthetic", "--set", "train.steps=40", "--set", "train.checkpoint_every=10",
                          "--set", "train.eval_every=20", "--set", "threads=1", "--db", NULL, "--ckpt", NULL, NULL, NULL};
    const int idb = 15, ick = 17, iextra = 18;
    char ckref[160];
    snprintf(ckref, sizeof ckref, "%s/ckref", dir);
    base[idb] = ref, base[ick] = ckref;
    cr_assert_eq(run_bin(base, 0, NULL, out, sizeof out), 0, "%s", out);
    assert_complete(ref, 40, 2, "uninterrupted");
    static const int kills[] = {1, 3, 4, 5};
    for (int i = 0; i < 4; i++) {
        char db[160], ck[160], env[64], what[64];
        snprintf(db, sizeof db, "%s/k%d.db", dir, kills[i]);
        snprintf(ck, sizeof ck, "%s/ck%d", dir, kills[i]);
        snprintf(env, sizeof env, "GATED_TEST_KILL_AFTER_CKPT=%d", kills[i]);
        snprintf(what, sizeof what, "killed after checkpoint %d", kills[i]);
        base[idb] = db, base[ick] = ck, base[iextra] = NULL;
        int rc = run_bin(base, 0, env, out, sizeof out);
        cr_assert_eq(rc, 128 + SIGKILL, "%s: exit %d: %s", what, rc, out);
        base[iextra] = "--resume";
        rc = run_bin(base, 0, NULL, out, sizeof out);
        cr_assert_eq(rc, 0, "%s: resume: exit %d: %s", what, rc, out);
        cr_assert_null(strstr(out, "nan"), "%s: %s", what, out);
        assert_complete(db, 40, 2, what);
        /* and the same numbers as the run that was never killed */
        sqlite3 *h;
        cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        char attach[256];
        snprintf(attach, sizeof attach, "ATTACH DATABASE 'file:%s?mode=ro' AS r", ref);
        cr_assert_eq(sqlite3_exec(h, attach, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(h,
                                        "SELECT count(*) FROM metrics a JOIN r.metrics b USING (key, context, step)"
                                        " WHERE a.value IS NOT b.value",
                                        -1, &st, NULL),
                     SQLITE_OK, "%s", sqlite3_errmsg(h));
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        long long diff = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        cr_assert_eq(sqlite3_prepare_v2(h, "SELECT (SELECT count(*) FROM metrics) - (SELECT count(*) FROM r.metrics)",
                                        -1, &st, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        long long extra = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(h);
        cr_assert_eq(diff, 0, "%s: %lld metric values differ from the uninterrupted run", what, diff);
        cr_assert_eq(extra, 0, "%s: %lld more metric rows than the uninterrupted run", what, extra);
    }
}

/* ------------------------------------------------------------ untrusted checkpoints */

/* A run stopped (status killed) at step 10 of 20 with its checkpoint;
 * *good (malloc'd) is that checkpoint's bytes. */
typedef struct {
    char dir[64], db[128], ck[160];
    Config c;
    char *good;
    size_t len;
    Layout L;
} Stopped;

static void stopped_run(Stopped *s) {
    set_threads(1);
    test_tmpdir(s->dir, sizeof s->dir);
    snprintf(s->db, sizeof s->db, "%s/s.db", s->dir);
    s->c = synth_config(20);
    s->c.checkpoint_every = 5;
    resolve_or_die(&s->c);
    char err[8192], id[17];
    char *json = store_config_json(&s->c, id);
    cr_assert_not_null(json);
    free(json);
    TrainOpts o = {s->db, "s", "data", "test", 0, 0, s->dir, 10, 0};
    cr_assert_eq(run_capture(&s->c, &o, err, sizeof err), 0, "%s", err);
    test_ckpt_path(s->db, s->dir, id, s->ck, sizeof s->ck);
    s->good = test_read_file(s->ck, &s->len);
    s->L = layout_of(s->good, s->len);
}

/* Resume from bytes b: expect exit 2, a message containing want, and the
 * run still killed with its rows as they were. */
static void resume_refused(Stopped *s, const char *b, size_t len, const char *want, const char *what) {
    spit(s->ck, b, len);
    long long rows = q_int(s->db, "SELECT count(*) FROM metrics", NULL);
    char err[8192], buf[64];
    TrainOpts o = {s->db, "s", "data", "test", 0, 1, s->dir, 0, 0};
    int rc = run_capture(&s->c, &o, err, sizeof err);
    cr_assert_eq(rc, 2, "%s: exit %d: %s", what, rc, err);
    cr_assert_not_null(strstr(err, want), "%s: want \"%s\" in: %s", what, want, err);
    cr_assert_not_null(strstr(err, "nothing was resumed; run "), "%s: %s", what, err);
    cr_assert_str_eq(q_text(s->db, "SELECT status FROM runs", NULL, buf, sizeof buf), "killed", "%s", what);
    cr_assert_eq(q_int(s->db, "SELECT count(*) FROM metrics", NULL), rows, "%s", what);
}

/* A copy of the good checkpoint with v (n bytes) at off, resealed or not. */
static char *forged(const Stopped *s, size_t off, const void *v, size_t n, int reseal_it) {
    char *b = malloc(s->len);
    cr_assert_not_null(b);
    memcpy(b, s->good, s->len);
    memcpy(b + off, v, n);
    if (reseal_it) reseal(b, s->len);
    return b;
}

Test(ckpt, every_field_is_checked_and_a_failed_resume_changes_nothing, .timeout = 120) {
    Stopped s;
    stopped_run(&s);
    const Layout *L = &s.L;
    int64_t i64;
    double d;
    real r;
    char *b;
    struct {
        size_t off;
        int kind; /* 0 i64, 1 f64, 2 real */
        double val;
        const char *want, *what;
    } cases[] = {
        {L->step, 0, -999, "corrupt checkpoint (step -999 of a 20-step run)", "step -999"},
        {L->step, 0, 4611686018427387904.0, "corrupt checkpoint (step 4611686018427387904 of a 20-step run)",
         "step 2^62"},
        {L->step, 0, 21, "(step 21 of a 20-step run)", "step past the end"},
        {L->spikes, 0, 11, "bad training state (step 10, spikes 11", "more spikes than steps"},
        {L->ttime, 1, NAN, "bad training state", "NaN train time"},
        {L->ring + 8 * 3, 1, INFINITY, "loss history entry 3 is inf", "inf loss history"},
        {L->w + sizeof(real) * 5, 2, NAN, "weight 5 of", "NaN weight"},
        {L->m + sizeof(real) * 7, 2, INFINITY, "AdamW first moment 7 of", "inf moment"},
        {L->v, 2, -1, "AdamW second moment 0 of", "negative second moment"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const void *p;
        size_t n;
        if (cases[i].kind == 0) i64 = (int64_t)cases[i].val, p = &i64, n = 8;
        else if (cases[i].kind == 1) d = cases[i].val, p = &d, n = 8;
        else r = (real)cases[i].val, p = &r, n = sizeof r;
        /* with the checksum made right: the field check refuses it */
        b = forged(&s, cases[i].off, p, n, 1);
        resume_refused(&s, b, s.len, cases[i].want, cases[i].what);
        free(b);
        /* as a corrupted file: the checksum refuses it */
        b = forged(&s, cases[i].off, p, n, 0);
        resume_refused(&s, b, s.len, "checksum mismatch: the checkpoint is corrupt", cases[i].what);
        free(b);
    }
    /* one flipped bit of one weight */
    b = forged(&s, 0, s.good, 0, 0);
    b[L->w + 4 * 100 + 2] ^= 0x10;
    resume_refused(&s, b, s.len, "checksum mismatch", "flipped weight bit");
    free(b);
    /* the parameter count, the real size, the JSON length: header fields */
    uint64_t big = s.L.n + 1;
    b = forged(&s, L->n_at, &big, 8, 1);
    resume_refused(&s, b, s.len, "truncated or corrupt checkpoint (", "parameter count");
    free(b);
    uint32_t rs = 8;
    b = forged(&s, 11, &rs, 4, 1);
    resume_refused(&s, b, s.len, "written by a build with 8-byte reals", "real size");
    free(b);
    uint64_t jl = (uint64_t)1 << 40;
    b = forged(&s, L->jl, &jl, 8, 1);
    resume_refused(&s, b, s.len, "corrupt checkpoint (configuration length", "json length");
    free(b);
    /* truncated, extended, an old format, not a checkpoint at all */
    resume_refused(&s, s.good, s.len - 100, "truncated or corrupt checkpoint", "truncated");
    b = malloc(s.len + 5);
    cr_assert_not_null(b);
    memcpy(b, s.good, s.len);
    memcpy(b + s.len, "extra", 5);
    resume_refused(&s, b, s.len + 5, "truncated or corrupt checkpoint", "trailing bytes");
    free(b);
    b = forged(&s, 0, "GATEDCKPT1\n", 11, 0);
    resume_refused(&s, b, s.len, "checkpoint format 1 (no checksum) is no longer read", "format 1");
    free(b);
    resume_refused(&s, "hello\n", 6, "not a gated checkpoint", "text file");
    /* the good one still resumes and finishes */
    spit(s.ck, s.good, s.len);
    char err[8192], buf[64];
    TrainOpts o = {s.db, "s", "data", "test", 0, 1, s.dir, 0, 0};
    cr_assert_eq(run_capture(&s.c, &o, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(strstr(err, "resuming "), "%s", err);
    cr_assert_str_eq(q_text(s.db, "SELECT status FROM runs", NULL, buf, sizeof buf), "finished");
    free(s.good);
}

Test(ckpt, a_state_that_would_not_load_is_not_written) {
    set_threads(1);
    Config c = synth_config(5);
    resolve_or_die(&c);
    Model m;
    cr_assert_eq(cfg_model_init(&m, &c), 0);
    TrainState ts;
    memset(&ts, 0, sizeof ts);
    ts.step = 3;
    char dir[64], path[128], err[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.ckpt", dir);
    m.p.w[9] = (real)NAN;
    cr_assert_eq(checkpoint_save(path, "{}", "0123456789abcdef", &m.p, &ts, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "not writing a checkpoint at step 3: "), "%s", err);
    cr_assert_not_null(strstr(err, "weight 9 of"), "%s", err);
    cr_assert_neq(access(path, F_OK), 0, "nothing is written");
    model_free(&m);
}

/* ------------------------------------------------------------ finished runs stay finished */

Test(ckpt, resume_of_a_finished_run_changes_nothing, .timeout = 120) {
    set_threads(1);
    char dir[64], db[128], ck[160], err[8192], buf[64], id[17];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/f.db", dir);
    Config c = synth_config(12);
    resolve_or_die(&c);
    free(store_config_json(&c, id));
    TrainOpts o = {db, "f", "data", "test", 0, 0, dir, 0, 0};
    cr_assert_eq(run_capture(&c, &o, err, sizeof err), 0, "%s", err);
    test_ckpt_path(db, dir, id, ck, sizeof ck);
    long long rows = q_int(db, "SELECT count(*) FROM metrics", NULL);
    long long sums = q_int(db, "SELECT count(*) FROM summary", NULL);
    char ended[64];
    q_text(db, "SELECT ended_at FROM runs", NULL, ended, sizeof ended);
    o.resume = 1;
    /* with its checkpoint intact, and then cut short */
    for (int cut = 0; cut < 2; cut++) {
        if (cut) cr_assert_eq(truncate(ck, 200), 0);
        int rc = run_capture(&c, &o, err, sizeof err);
        cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
        cr_assert_not_null(strstr(err, "is already finished: nothing to resume; its results are unchanged"), "%s",
                           err);
        cr_assert_null(strstr(err, "nan"), "%s", err);
        cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "finished");
        cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), rows);
        cr_assert_eq(q_int(db, "SELECT count(*) FROM summary", NULL), sums);
        cr_assert_str_eq(q_text(db, "SELECT ended_at FROM runs", NULL, buf, sizeof buf), ended);
    }
}

Test(train_safety, zero_steps_evaluates_the_initial_weights, .timeout = 60) {
    set_threads(1);
    char dir[64], db[128], err[8192], buf[64];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/z.db", dir);
    Config c = synth_config(0);
    resolve_or_die(&c);
    TrainOpts o = {db, "z", "data", "test", 0, 0, dir, 0, 0};
    cr_assert_eq(run_capture(&c, &o, err, sizeof err), 0, "%s", err);
    cr_assert_null(strstr(err, "nan"), "%s", err);
    cr_assert_not_null(strstr(err, "finished: no training steps (train.steps is 0); the initial weights give val loss "),
                       "%s", err);
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "finished");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM summary WHERE key = 'val_loss' AND value > 0", NULL), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics WHERE key = 'val_loss' AND step = 0 AND value > 0", NULL), 1);
    /* an untrained byte model: about ln 257 */
    double v = (double)q_int(db, "SELECT CAST(value * 1000 AS INTEGER) FROM summary WHERE key = 'val_loss'", NULL) /
               1000;
    cr_assert(fabs(v - log(257.0)) < 0.5, "val loss %g", v);
}

/* ------------------------------------------------------------ claims */

/* A plain `gated train` of a run another process is running (a fresh claim
 * by another owner) starts nothing and leaves its rows alone; once the
 * claim is released it may run again. */
Test(train_safety, a_live_run_is_not_started_over, .timeout = 120) {
    char dir[64], db[128], ck[160], out[8192], id[64] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/live.db", dir);
    snprintf(ck, sizeof ck, "%s/ck", dir);
    const char *args[] = {"train", "experiments/tiny.yaml", "--set", "model.vocab_size=257", "--set",
                          "data.corpus=synthetic", "--set", "train.steps=6", "--set", "threads=1", "--db", db,
                          "--ckpt", ck, NULL};
    cr_assert_eq(run_bin(args, 0, NULL, out, sizeof out), 0, "%s", out);
    char buf[64];
    snprintf(id, sizeof id, "%s", q_text(db, "SELECT run_id FROM runs", NULL, buf, sizeof buf));
    long long rows = q_int(db, "SELECT count(*) FROM metrics", NULL);
    char ended[64];
    q_text(db, "SELECT ended_at FROM runs", NULL, ended, sizeof ended);

    Store *st;
    char err[512], seen[16];
    cr_assert_eq(store_open(&st, db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_run_claim(st, id, "elsewhere:1", claim_yes, NULL, seen, sizeof seen), STORE_CLAIMED);
    store_close(st);

    int rc = run_bin(args, 0, NULL, out, sizeof out);
    cr_assert_neq(rc, 0, "a live run was started over: %s", out);
    cr_assert_not_null(strstr(out, "is running in another process"), "%s", out);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM metrics", NULL), rows, "rows changed");
    cr_assert_str_eq(q_text(db, "SELECT ended_at FROM runs", NULL, buf, sizeof buf), ended);
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "finished");

    cr_assert_eq(store_open(&st, db, err, sizeof err), 0, "%s", err);
    cr_assert_geq(store_run_release(st, id, "elsewhere:1", "failed", "test"), 0);
    store_close(st);
    cr_assert_eq(run_bin(args, 0, NULL, out, sizeof out), 0, "after release: %s", out);
}

/* ------------------------------------------------------------ a checkpoint belongs to its database */

/* `gated train experiments/tiny.yaml` on the synthetic corpus, 12 steps
 * (evaluations at 4, 8, 12), in directory dir, with extra arguments (up
 * to 8, NULL-terminated); stdout + stderr into *out; the exit status. */
static int tiny_train(const char *dir, const char *const *extra, char **out) {
    char cfg[4096];
    cr_assert_not_null(realpath("experiments/tiny.yaml", cfg), "run from the repository root");
    const char *args[32] = {"train", cfg, "--set", "model.vocab_size=257", "--set", "data.corpus=synthetic", "--set",
                            "train.steps=12", "--set", "train.eval_every=4", "--set", "threads=1"};
    int k = 12;
    for (int i = 0; extra[i] && k < 31; i++) args[k++] = extra[i];
    args[k] = NULL;
    return test_gated(dir, args, NULL, 60, out);
}

/* The one run's id in db into id. */
static void the_run(const char *db, char id[64]) {
    q_text(db, "SELECT run_id FROM runs", NULL, id, 64);
    cr_assert_eq(strlen(id), 16, "%s", id);
}

/* A checkpoint in the place of RUN.ckpt that is a FIFO is refused at once
 * (exit 2, the run as it was), never waited on. */
Test(ckpt, a_fifo_checkpoint_is_refused_not_waited_on, .timeout = 120) {
    char dir[64], db[128], ck[256], id[64], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/f.db", dir);
    const char *stop[] = {"--db", db, "--ckpt", "ck", "--stop-after", "2", NULL};
    cr_assert_eq(tiny_train(dir, stop, &out), 0, "%s", out);
    free(out);
    the_run(db, id);
    char ckdir[128];
    snprintf(ckdir, sizeof ckdir, "%s/ck", dir);
    test_ckpt_path(db, ckdir, id, ck, sizeof ck);
    cr_assert_eq(unlink(ck), 0, "%s: %s", ck, strerror(errno));
    cr_assert_eq(mkfifo(ck, 0600), 0);
    const char *resume[] = {"--db", db, "--ckpt", "ck", "--resume", NULL};
    int rc = tiny_train(dir, resume, &out);
    cr_assert_eq(rc, 2, "exit %d (142: it waited on the FIFO): %s", rc, out);
    cr_assert(strstr(out, ": not a regular file\n"), "%s", out);
    char buf[64];
    cr_assert_str_eq(q_text(db, "SELECT status FROM runs", NULL, buf, sizeof buf), "killed");
    free(out);
}

/* Format 2 of the checkpoint in b (format 3) into *len bytes (malloc'd):
 * without the two ids, resealed. */
static char *as_format2(const char *b, size_t n, size_t *len) {
    cr_assert(n > 55 && memcmp(b, "GATEDCKPT3\n", 11) == 0);
    char *o = malloc(n - 32);
    cr_assert_not_null(o);
    memcpy(o, "GATEDCKPT2\n", 11);
    memcpy(o + 11, b + 11, 4);
    memcpy(o + 15, b + 47, n - 47);
    *len = n - 32;
    reseal(o, *len);
    return o;
}

/* The case: a run stopped in sub/a.db leaves its checkpoint beside
 * that database, kept by it (sub/checkpoints/A_ID/RUN.ckpt, not
 * ./checkpoints).  A resume of the same config into another database,
 * sub/b.db, does not find it there; a copy of it where checkpoints were
 * kept before (sub/checkpoints/RUN.ckpt) is found and refused (another
 * database), as a resume into a copy of a.db whose rows were cut and an
 * old format-2 checkpoint (which names no database; in ./checkpoints,
 * where it was written before) into b.db, which holds none of the run's
 * rows; into a.db that one still resumes, and the run ends with every
 * row. */
Test(ckpt, a_checkpoint_of_another_database_is_not_resumed, .timeout = 180) {
    char dir[64], a[128], b[128], c[128], ck[256], id[64], cmd[1024], buf[64], ckdir[128], oldck[256], *out;
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/sub/a.db", dir);
    snprintf(b, sizeof b, "%s/sub/b.db", dir);
    snprintf(c, sizeof c, "%s/sub/c.db", dir);
    const char *stop[] = {"--db", "sub/a.db", "--stop-after", "6", NULL};
    cr_assert_eq(tiny_train(dir, stop, &out), 0, "%s", out);
    free(out);
    the_run(a, id);
    snprintf(ckdir, sizeof ckdir, "%s/sub/checkpoints", dir);
    test_ckpt_path(a, ckdir, id, ck, sizeof ck);
    cr_assert_eq(access(ck, F_OK), 0, "no checkpoint beside the database (%s)", ck);
    snprintf(cmd, sizeof cmd, "%s/checkpoints", dir);
    cr_assert_neq(access(cmd, F_OK), 0, "a checkpoint directory in the working directory");

    /* a.db's checkpoint where checkpoints were kept before */
    snprintf(oldck, sizeof oldck, "%s/%s.ckpt", ckdir, id);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", ck, oldck);
    cr_assert_eq(system(cmd), 0);
    const char *into_b[] = {"--db", "sub/b.db", "--resume", NULL};
    int rc = tiny_train(dir, into_b, &out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "written by another database (id "), "%s", out);
    cr_assert(strstr(out, "nothing was resumed; run "), "%s", out);
    free(out);
    cr_assert_eq(q_int(b, "SELECT count(*) FROM runs", NULL), 0);
    cr_assert_eq(q_int(b, "SELECT count(*) FROM metrics", NULL), 0);
    cr_assert_eq(unlink(oldck), 0);

    /* a copy of a.db (the same database id) that lost rows */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && sqlite3 '%s' \"DELETE FROM metrics WHERE key = 'lr' AND step = 3\"",
             a, c, c);
    cr_assert_eq(system(cmd), 0);
    const char *into_c[] = {"--db", "sub/c.db", "--resume", NULL};
    rc = tiny_train(dir, into_c, &out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "holds 5 of the run's 6 lr rows of steps 1-6"), "%s", out);
    free(out);
    cr_assert_str_eq(q_text(c, "SELECT status FROM runs", NULL, buf, sizeof buf), "killed");

    /* format 2, where gated train put checkpoints before (./checkpoints):
     * found there, but it names no database, so the rows decide */
    size_t n, n2;
    char *v3 = test_read_file(ck, &n), *v2 = as_format2(v3, n, &n2), old[256];
    cr_assert_eq(unlink(ck), 0);
    snprintf(old, sizeof old, "%s/checkpoints", dir);
    cr_assert_eq(mkdir(old, 0700), 0);
    snprintf(old, sizeof old, "%s/checkpoints/%s.ckpt", dir, id);
    spit(old, v2, n2);
    rc = tiny_train(dir, into_b, &out);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "holds 0 of the run's 6 train_loss rows of steps 1-6"), "%s", out);
    free(out);
    cr_assert_eq(q_int(b, "SELECT count(*) FROM runs", NULL), 0);
    const char *into_a[] = {"--db", "sub/a.db", "--resume", NULL};
    rc = tiny_train(dir, into_a, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "resuming "), "%s", out);
    free(out);
    assert_complete(a, 12, 3, "resumed from format 2");
    free(v3);
    free(v2);
}
