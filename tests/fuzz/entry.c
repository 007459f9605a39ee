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

#include <ftw.h>
#include <sqlite3.h>

#include "nn/arena.h"
#include "lab/bench/bench.h"
#include "lab/export.h"
#include "lab/merge/merge.h"
#include "lab/report/report.h"
#include "run/checkpoint.h"
#include "run/eval.h"
#include "nn/model.h"
#include "nn/rope.h"
#include "run/config.h"
#include "run/store.h"
#include "lab/sweep/sweep.h"
#include "util/json.h"
#include "../../cli/store_show.h" /* gated ls / show (a CLI file, linked in) */

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

static void db_files_remove(void);
static void db_path(char *p, size_t cap, const char *name);
static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw);
static void db_template(void);

void fuzz_cleanup(void) {
    if (!dir[0] || dir_pid != getpid()) return;
    static const char *const files[] = {"experiments/in.yaml", "experiments/tiny.yaml", "experiments/quick.yaml",
                                        "bench/in.yaml", "in.ckpt", "template.db", NULL};
    char p[4200];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    db_files_remove();
    db_path(p, sizeof p, "evck");
    nftw(p, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    db_path(p, sizeof p, "foreign.ckpt");
    unlink(p);
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
        int lr = checkpoint_load(p_ckpt, json, NULL, &a, &ts, err, sizeof err);
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

/* ------------------------------------------------------------ db */

/* An input is a database for `gated merge`: the bytes of a SQLite file
 * (starting "SQLite format 3"), or lines that change a copy of a database
 * made here with the store's API (db_template: runs finished, diverged and
 * killed, metrics with NULL and infinite values, a histogram, a summary, a
 * sweep, an attestation), one change a line:
 *   u TABLE ROW COLUMN VALUE   set a column of the ROW-th row (mod rows)
 *   i TABLE ROW COLUMN VALUE   a copy of that row, with the column set
 *   d TABLE ROW                delete the row
 *   c TABLE COLUMN             drop the column;   T TABLE   drop the table
 * VALUE: null, i:INTEGER, r:REAL (strtod: inf, nan), b:HEX (a blob) or
 * t:TEXT (\n, \t, \e, \xNN, \\ decoded).  Tables and columns are picked
 * from fixed lists by name or number, every value is bound. */

static const char *const DB_TABLES[] = {"runs", "metrics", "summary", "histograms", "sweep_runs",
                                        "environments", "code_attest", "meta", NULL};
static const char *const DB_COLS[][23] = {
    {"run_id", "name", "status", "config_json", "seed", "threads", "code_version", "git_dirty", "host",
     "cpu_model", "compiler", "cflags", "openblas_version", "sqlite_version", "libyaml_version", "argv",
     "started_at", "ended_at", "heartbeat_at", "error_text", "diverged_step", "env_id", NULL},
    {"run_id", "key", "context", "step", "value", "t", NULL},
    {"run_id", "key", "context", "value", "text", NULL},
    {"run_id", "key", "context", "step", "lo", "hi", "counts", NULL},
    {"sweep", "run_id", "label", "seed", "idx", "is_baseline", NULL},
    {"env_id", "env_hash", "host", "cpu_model", "compiler", "cflags", "openblas_version", "sqlite_version",
     "libyaml_version", NULL},
    {"run_id", "code_version", "cflags", "git_dirty", "run_code_version", "run_ended_at", "verified_at",
     "steps_checked", "rows_checked", NULL},
    {"key", "value", NULL},
};

static unsigned char *db_tmpl; /* the template's bytes, made once per process */
static size_t db_ntmpl;

static void db_path(char *p, size_t cap, const char *name) { snprintf(p, cap, "%s/%s", dir, name); }

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void db_files_remove(void) {
    static const char *const dbs[] = {"in.db", "out.db", "out2.db", "template.db"};
    static const char *const sfx[] = {"", "-journal", "-wal", "-shm"};
    char p[4200];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) {
            snprintf(p, sizeof p, "%s/%s%s", dir, dbs[i], sfx[k]);
            unlink(p);
        }
    db_path(p, sizeof p, "rep");
    nftw(p, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void db_exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) die("db template: %s: %s", sql, msg ? msg : "?");
}

/* ------------------------------------------------------------ eval */

/* `gated eval` on the merged database (eval_pass): the template holds a run
 * of a real tiny config (synthetic corpus, d_model 4, 1 layer, seq_len 4),
 * finished after 3 steps, whose checkpoint of step 3 is kept by the
 * template (DIR/evck/TEMPLATE_DB_ID/RUN.ckpt): merged into the output, the
 * template is a database merged into it, so eval finds and reads it
 * (run/checkpoint.h) unless the input's changes make it another
 * database's or another step's.  DIR/foreign.ckpt, the same run written by
 * a database no input names (FOREIGN), must always be refused. */
static char ev_id[17], ev_tid[17], ev_foreign[4200];
static char *ev_json;
static const char FOREIGN[] = "feedfacefeedface";

static void ev_config(Config *c) {
    static const char *const set[] = {"data.corpus=synthetic", "model.vocab_size=257", "model.d_model=4",
                                      "model.n_layer=1", "model.n_head=1", "model.d_ff=4", "model.seq_len=4",
                                      "train.steps=3", "train.eval_every=3", "train.batch=1", NULL};
    ConfigError ce;
    config_defaults(c);
    for (int i = 0; set[i]; i++)
        if (config_set(c, set[i], &ce)) die("eval config: %s: %s", set[i], ce.msg);
    if (config_resolve(c, &ce)) die("eval config: %s", ce.msg);
}

/* The eval run's row and its rows of steps 1-3 in the template.  0 or -1. */
static int ev_run_rows(Store *s, const Provenance *pv) {
    Config c;
    ev_config(&c);
    free(ev_json);
    if (!(ev_json = store_config_json(&c, ev_id))) abort();
    int bad = store_run_begin(s, ev_id, "ev", ev_json, c.seed, 1, pv, NULL);
    for (int k = 1; k <= 3 && !bad; k++)
        bad = store_metric(s, ev_id, "train_loss", NULL, k, 5.0 - k) || store_metric(s, ev_id, "lr", NULL, k, 1e-3) ||
              store_metric(s, ev_id, "grad_norm", NULL, k, 1.0);
    return bad || store_metric(s, ev_id, "val_loss", NULL, 3, 4.5) ||
           store_summary(s, ev_id, "val_loss", NULL, 4.5, NULL) || store_summary(s, ev_id, "test_loss", NULL, 4.6, NULL) ||
           store_run_end(s, ev_id, "finished", NULL, -1);
}

/* The eval run's checkpoints: the template's (database tid), and the
 * foreign one. */
static void ev_checkpoints(const char *tid) {
    Config c;
    ev_config(&c);
    ModelCfg mc = config_model(&c);
    Model m;
    if (model_init(&m, &mc)) die("eval checkpoint: out of memory");
    model_init_params(&m, (uint64_t)c.seed);
    TrainState ts;
    memset(&ts, 0, sizeof ts);
    ts.step = 3;
    char p[4200], err[1024];
    snprintf(ev_tid, sizeof ev_tid, "%s", tid);
    db_path(p, sizeof p, "evck");
    mkdir(p, 0700);
    snprintf(p + strlen(p), sizeof p - strlen(p), "/%s", tid);
    mkdir(p, 0700);
    snprintf(p + strlen(p), sizeof p - strlen(p), "/%s.ckpt", ev_id);
    if (checkpoint_save(p, ev_json, tid, &m.p, &ts, err, sizeof err)) die("eval checkpoint: %s", err);
    db_path(ev_foreign, sizeof ev_foreign, "foreign.ckpt");
    if (checkpoint_save(ev_foreign, ev_json, FOREIGN, &m.p, &ts, err, sizeof err)) die("eval checkpoint: %s", err);
    model_free(&m);
}

/* eval of arg into db (stdout, its result lines, to /dev/null): the exit
 * code, which must be 0, 1 or 2. */
static int ev_eval(const char *db, const char *arg) {
    char ck[4200];
    db_path(ck, sizeof ck, "evck");
    int lengths[] = {4};
    EvalOpts o = {db, dir, ck, lengths, 1, ROPE_NONE, 0, 1, 1, 0, 0, NULL, 0, NULL, 0};
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    if (saved < 0 || null < 0) abort();
    dup2(null, 1);
    close(null);
    int rc = eval_run(arg, &o);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "db: eval %s: exit %d\n", arg, rc);
    if (rc < 0 || rc > 2) die("eval %s: exit %d", arg, rc);
    return rc;
}

/* Whether db may hand the eval run's checkpoint of database id to eval:
 * it is db's, or merged into db and the stored run ends at step 3. */
static int ev_owned(const char *db, const char *id) {
    Store *s;
    char err[1024];
    if (store_open_ro(&s, db, err, sizeof err)) die("eval: %s", err);
    int k = store_db_knows(s, id);
    long long last = store_run_last_step(s, ev_id);
    store_close(s);
    return k == 2 || (k == 1 && last == 3);
}

/* The eval run by name, then the foreign checkpoint as a file: what eval
 * accepts, the database owns (the one check of every reader). */
static void eval_pass(const char *db) {
    if (ev_eval(db, ev_id) == 0 && !ev_owned(db, ev_tid))
        die("eval read the checkpoint of database %s, which %s does not own", ev_tid, db);
    if (ev_eval(db, ev_foreign) == 0 && !ev_owned(db, FOREIGN))
        die("eval read the checkpoint of database %s, which %s does not own", FOREIGN, db);
}

/* The database inputs start from, into db_tmpl. */
static void db_template(void) {
    if (db_tmpl) return;
    char p[4200], err[1024];
    db_files_remove();
    db_path(p, sizeof p, "template.db");
    Store *s;
    if (store_open(&s, p, err, sizeof err)) die("db template: %s", err);
    static const char A[] = "0123456789abcdef", B[] = "fedcba9876543210", C[] = "00000000000000aa";
    Provenance pv = {"host", "cpu", "gcc", "-O2", "OpenBLAS", "3.40", "0.2.5", "unknown", -1};
    const long long counts[4] = {3, 0, 1, 7};
    int bad = store_run_begin(s, A, "sw-baseline-s1", "{\"train.steps\":3,\"model.gate.position\":\"sdpa\"}", 1, 1,
                              &pv, "gated train x.yaml") ||
              store_run_begin(s, B, "sw-G1-s1", "{\"train.steps\":3}", 1, 2, &pv, NULL) ||
              store_run_begin(s, C, "killed-run", "{}", 3, 1, &pv, NULL);
    for (int k = 1; k <= 3 && !bad; k++)
        bad |= store_metric(s, A, "train_loss", NULL, k, 3.0 / k) || store_metric(s, A, "lr", NULL, k, 1e-3 * k) ||
               store_metric(s, A, "grad_norm", NULL, k, 0.5);
    bad = bad || store_metric(s, A, "val_loss", NULL, 3, 2.5) || store_metric(s, A, "f_attn", "layer=0", 3, NAN) ||
          store_metric(s, A, "gate_mean", "layer=0,head=1", 3, 0.25) ||
          store_metric(s, A, "eval_ppl", "split=val,len=64,scaling=none,factor=1", 3, INFINITY) ||
          store_histogram(s, A, "gate", "layer=0", 3, 0, 1, counts, 4) ||
          store_summary(s, A, "val_loss", NULL, 2.5, NULL) || store_summary(s, A, "test_loss", NULL, 2.6, NULL) ||
          store_summary(s, A, "note", "layer=0", NAN, "text") || store_metric(s, B, "train_loss", NULL, 1, 9.0) ||
          store_metric(s, C, "train_loss", NULL, 1, 4.0);
    bad = bad || ev_run_rows(s, &pv);
    StoreSweepRun sw[2] = {{A, "baseline", 1, 0, 1}, {B, "G1", 1, 1, 0}};
    bad = bad || store_sweep_record(s, "sw", 2, sw, 2) || store_run_end(s, A, "finished", NULL, -1) ||
          store_run_end(s, B, "diverged", NULL, 1) || store_run_end(s, C, "killed", "stopped", -1);
    if (bad) die("db template: %s", store_errmsg(s));
    ev_checkpoints(store_db_id(s));
    store_close(s);
    sqlite3 *db;
    if (sqlite3_open(p, &db) != SQLITE_OK) die("db template: open");
    db_exec(db, "INSERT INTO code_attest SELECT run_id, '1111111111111111111111111111111111111111', '-O2', 0,"
                " code_version, ended_at, ended_at, 3, 10 FROM runs WHERE status = 'finished';"
                "PRAGMA journal_mode=DELETE");
    sqlite3_close(db);
    FILE *f = fopen(p, "rb");
    if (!f) die("db template: %s", strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    db_tmpl = malloc(n > 0 ? (size_t)n : 1);
    if (!db_tmpl || fread(db_tmpl, 1, (size_t)n, f) != (size_t)n) die("db template: read");
    fclose(f);
    db_ntmpl = (size_t)n;
}

/* Index of word in list (a name, or its number), or -1. */
static int db_pick(const char *const *list, const char *word) {
    int n = 0;
    while (list[n]) n++;
    char *end;
    long v = strtol(word, &end, 10);
    if (*word && !*end) return v >= 0 && v < n ? (int)v : -1;
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], word) == 0) return i;
    return -1;
}

/* Bind VALUE (see above) as parameter 1.  0, or -1 when it is none. */
static int db_bind_value(sqlite3_stmt *st, const char *v) {
    if (strcmp(v, "null") == 0) return sqlite3_bind_null(st, 1) == SQLITE_OK ? 0 : -1;
    if (strncmp(v, "i:", 2) == 0) return sqlite3_bind_int64(st, 1, strtoll(v + 2, NULL, 10)) == SQLITE_OK ? 0 : -1;
    if (strncmp(v, "r:", 2) == 0) return sqlite3_bind_double(st, 1, strtod(v + 2, NULL)) == SQLITE_OK ? 0 : -1;
    if (strncmp(v, "b:", 2) != 0 && strncmp(v, "t:", 2) != 0) return -1;
    size_t n = strlen(v + 2), k = 0;
    char *b = malloc(n + 1);
    if (!b) abort();
    for (const char *c = v + 2; *c; c++) {
        unsigned x;
        int used = 0; /* hex digits read: 1 or 2 (a last lone digit is 1) */
        if (v[0] == 'b') {
            if (sscanf(c, "%2x%n", &x, &used) == 1) b[k++] = (char)x, c += used - 1;
        } else if (*c == '\\' && c[1]) {
            c++;
            if (*c == 'x' && sscanf(c + 1, "%2x%n", &x, &used) == 1) b[k++] = (char)x, c += used;
            else b[k++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c == 'e' ? 27 : *c;
        } else {
            b[k++] = *c;
        }
    }
    int rc = v[0] == 'b' ? sqlite3_bind_blob(st, 1, b, (int)k, SQLITE_TRANSIENT)
                         : sqlite3_bind_text(st, 1, b, (int)k, SQLITE_TRANSIENT);
    free(b);
    return rc == SQLITE_OK ? 0 : -1;
}

/* Run sql (built from the fixed names) with VALUE as ?1 (v NULL: none) and
 * rowid as ?2 (< 0: none); a failure only means the change is not made. */
static void db_change(sqlite3 *db, const char *sql, const char *v, long long rowid) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    if ((!v || db_bind_value(st, v) == 0) && (rowid < 0 || sqlite3_bind_int64(st, 2, rowid) == SQLITE_OK))
        (void)sqlite3_step(st);
    sqlite3_finalize(st);
}

/* The rowid of table t's (n mod count)-th row, or -1. */
static long long db_row(sqlite3 *db, const char *t, long n) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT rowid FROM %s ORDER BY rowid LIMIT 1 OFFSET ?1 %% max(1, (SELECT count(*) FROM %s))",
             t, t);
    sqlite3_stmt *st;
    long long r = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int64(st, 1, n < 0 ? -n : n);
    if (sqlite3_step(st) == SQLITE_ROW) r = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return r;
}

/* One line of changes (see above) on db. */
static void db_line(sqlite3 *db, char *line) {
    char op[4], tw[32], a[32], b[32];
    int used = 0;
    if (sscanf(line, "%3s %31s %n", op, tw, &used) < 2) return;
    int t = db_pick(DB_TABLES, tw);
    if (t < 0 || strlen(op) != 1) return;
    const char *T = DB_TABLES[t], *rest = line + used;
    char sql[400];
    if (op[0] == 'T' || op[0] == 'c') {
        db_change(db, "DROP VIEW IF EXISTS run_metrics", NULL, -1);
        db_change(db, "DROP VIEW IF EXISTS sweep_metrics", NULL, -1);
        db_change(db, "DROP VIEW IF EXISTS final_metrics", NULL, -1);
        int c = op[0] == 'c' && sscanf(rest, "%31s", a) == 1 ? db_pick(DB_COLS[t], a) : -1;
        if (op[0] == 'T') snprintf(sql, sizeof sql, "DROP TABLE %s", T);
        else if (c >= 0) snprintf(sql, sizeof sql, "ALTER TABLE %s DROP COLUMN %s", T, DB_COLS[t][c]);
        else return;
        db_change(db, sql, NULL, -1);
        return;
    }
    int n2 = 0;
    if (sscanf(rest, "%31s %n", a, &n2) < 1) return;
    long long row = db_row(db, T, strtol(a, NULL, 10));
    if (row < 0) return;
    if (op[0] == 'd') {
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE rowid = ?2", T);
        db_change(db, sql, NULL, row);
        return;
    }
    int n3 = 0;
    if (sscanf(rest + n2, "%31s %n", b, &n3) < 1) return;
    int c = db_pick(DB_COLS[t], b);
    const char *v = rest + n2 + n3;
    if (c < 0) return;
    if (op[0] == 'i') { /* INSERT INTO T (c...) SELECT c..., with column c as ?1, FROM T WHERE rowid = ?2 */
        char cols[700] = "", sel[700] = "";
        for (int i = 0; DB_COLS[t][i]; i++) {
            size_t a1 = strlen(cols), a2 = strlen(sel);
            snprintf(cols + a1, sizeof cols - a1, "%s%s", i ? ", " : "", DB_COLS[t][i]);
            snprintf(sel + a2, sizeof sel - a2, "%s%s", i ? ", " : "", i == c ? "?1" : DB_COLS[t][i]);
        }
        char ins[1600];
        snprintf(ins, sizeof ins, "INSERT OR IGNORE INTO %s (%s) SELECT %s FROM %s WHERE rowid = ?2", T, cols, sel, T);
        db_change(db, ins, v, row);
        return;
    }
    if (op[0] != 'u') return;
    snprintf(sql, sizeof sql, "UPDATE %s SET %s = ?1 WHERE rowid = ?2", T, DB_COLS[t][c]);
    db_change(db, sql, v, row);
}

/* in.db from the input: its bytes, or the template with the changes. */
static void db_input(const uint8_t *data, size_t size, const char *in) {
    if (size >= 16 && memcmp(data, "SQLite format 3", 16) == 0) {
        write_file(in, data, size);
        return;
    }
    db_template();
    write_file(in, db_tmpl, db_ntmpl);
    sqlite3 *db;
    if (sqlite3_open_v2(in, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) die("db: open %s", in);
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    int nl = 0;
    for (char *line = text, *next; line && nl < 64; line = next, nl++) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        db_line(db, line);
    }
    free(text);
    sqlite3_close(db);
}

/* No byte of out[0..n) would drive a terminal: C0 but tab and line feed,
 * DEL, C1 (as UTF-8). */
static void no_controls(const char *what, const char *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        int c1 = c == 0xc2 && i + 1 < n && (unsigned char)out[i + 1] >= 0x80 && (unsigned char)out[i + 1] <= 0x9f;
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c1)
            die("%s: a raw control byte 0x%02x at %zu:\n%.*s", what, c1 ? (unsigned char)out[i + 1] : c, i,
                (int)(n < 2000 ? n : 2000), out);
    }
}

/* A text the reader wrote into a memory stream, checked, then freed. */
typedef struct {
    char *buf;
    size_t n;
    FILE *f;
} Mem;

static FILE *mem_open(Mem *m) {
    m->buf = NULL, m->n = 0;
    if (!(m->f = open_memstream(&m->buf, &m->n))) abort();
    return m->f;
}

static void mem_check(Mem *m, const char *what, int json) {
    fclose(m->f);
    no_controls(what, m->buf, m->n);
    if (json) {
        char err[256];
        for (char *line = m->buf, *next; line && *line; line = next) { /* one document a line (export: jsonl) */
            next = strchr(line, '\n');
            if (next) *next++ = '\0';
            Json *j = json_parse(line, err, sizeof err);
            if (!j) die("%s: not JSON (%s): %.300s", what, err, line);
            json_free(j);
        }
    }
    free(m->buf);
}

/* Every file under path (the report), checked. */
static int check_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)ftw;
    if (type != FTW_F || !S_ISREG(sb->st_mode)) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) die("report: %s: %s", path, strerror(errno));
    char *b = malloc((size_t)sb->st_size + 1);
    if (!b) abort();
    size_t n = fread(b, 1, (size_t)sb->st_size, f);
    fclose(f);
    no_controls(path, b, n);
    free(b);
    return 0;
}

/* ls, show, export and report on the database merge wrote: each must read
 * it (what merge accepts, the readers read), and write no control byte. */
static void db_readers(const char *out, size_t size) {
    Store *s;
    char err[1024];
    if (store_open_ro(&s, out, err, sizeof err)) die("readers: %s", err);
    Mem m;
    if (show_ls(s, mem_open(&m), err, sizeof err)) die("ls: %s", err);
    mem_check(&m, "ls", 0);
    if (show_ls_json(s, mem_open(&m), err, sizeof err)) die("ls --json: %s", err);
    mem_check(&m, "ls --json", 1);
    StoreRunList l;
    if (store_list_runs(s, &l)) die("readers: %s", store_errmsg(s));
    for (int i = 0; i < l.n && i < 8; i++) {
        if (show_run(s, l.rows[i].run_id, mem_open(&m), err, sizeof err)) die("show %s: %s", l.rows[i].run_id, err);
        mem_check(&m, "show", 0);
        if (show_run_json(s, l.rows[i].run_id, mem_open(&m), err, sizeof err)) die("show --json: %s", err);
        mem_check(&m, "show --json", 1);
    }
    store_run_list_free(&l);
    for (int k = 0; k < 2; k++) {
        ExportOpts eo = {k ? EXPORT_JSONL : EXPORT_CSV, EXPORT_CONFIG_ALL, NULL, NULL, 0, NULL, 0};
        if (export_metrics(s, &eo, mem_open(&m), NULL, err, sizeof err)) die("export: %s", err);
        mem_check(&m, k ? "export --format jsonl" : "export --format csv", k);
    }
    store_close(s);
    char rep[4200];
    db_path(rep, sizeof rep, "rep");
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w"))) abort();
    ReportOpts ro = {out, NULL, (ReportFormat)(size % 3), rep, 1, NULL, devnull, NULL, 0, NULL, NULL};
    if (report_run(&ro, err, sizeof err) != REPORT_OK) die("report: %s", err);
    nftw(rep, check_entry, 8, FTW_PHYS);
}

/* No fsync in this process: nothing the fuzzer writes must survive a crash,
 * and syncs were a good part of each input's time.  The default VFS is
 * wrapped: its files keep their own methods but for xSync. */
static sqlite3_vfs nosync_vfs;
static int (*real_open)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *);
static int nosync(sqlite3_file *f, int flags) {
    (void)f, (void)flags;
    return SQLITE_OK;
}
static int nosync_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out) {
    static const sqlite3_io_methods *orig[8];
    static sqlite3_io_methods copy[8];
    int rc = real_open(v, name, f, flags, out);
    if (rc != SQLITE_OK || !f->pMethods) return rc;
    int i = 0;
    while (i < 8 && orig[i] && orig[i] != f->pMethods) i++;
    if (i == 8) return rc; /* (never: the unix VFS has fewer kinds of files) */
    if (!orig[i]) orig[i] = f->pMethods, copy[i] = *f->pMethods, copy[i].xSync = nosync;
    f->pMethods = &copy[i];
    return rc;
}
static void db_nosync(void) {
    if (real_open) return;
    sqlite3_vfs *d = sqlite3_vfs_find(NULL);
    if (!d) return;
    nosync_vfs = *d;
    nosync_vfs.zName = "gated-fuzz-nosync";
    real_open = d->xOpen;
    nosync_vfs.xOpen = nosync_open;
    sqlite3_vfs_register(&nosync_vfs, 1);
}

/* A new output database. */
static Store *db_output(const char *path) {
    char p[4200], err[1024];
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int k = 0; k < 4; k++) snprintf(p, sizeof p, "%s%s", path, sfx[k]), unlink(p);
    Store *s;
    if (store_open(&s, path, err, sizeof err)) die("output: %s", err);
    return s;
}

int fuzz_db_one(const uint8_t *data, size_t size) {
    fuzz_init();
    db_nosync();
    char in[4200], out[4200], out2[4200], err[1024];
    db_path(in, sizeof in, "in.db");
    db_path(out, sizeof out, "out.db");
    db_path(out2, sizeof out2, "out2.db");
    db_template(); /* once per process: also the eval run's checkpoints (eval_pass) */
    db_files_remove();
    db_input(data, size, in);
    Store *o = db_output(out);
    int rc = merge_from(o, in, err, sizeof err);
    long long runs = store_count_rows(o, "runs"), metrics = store_count_rows(o, "metrics");
    store_close(o);
    if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "db: merge %d%s%s\n", rc, rc ? ": " : "", err);
    if (rc == -1) die("merge failed while copying an input it had checked: %s", err);
    if (rc == -2 && (runs != 0 || metrics != 0)) die("merge refused its input but kept %lld runs: %s", runs, err);
    if (rc == -2 && strncmp(err, in, strlen(in)) != 0) die("merge's message does not name the input: %s", err);
    if (rc == -2) no_controls("merge's message", err, strlen(err));
    if (rc != 0) return 0;
    db_readers(out, size);
    /* what merge accepted, it accepts again, and a second time changes nothing */
    o = db_output(out2);
    for (int k = 0; k < 2; k++) {
        if (merge_from(o, out, err, sizeof err)) die("merge refuses what it wrote: %s", err);
        if (store_count_rows(o, "runs") != runs || store_count_rows(o, "metrics") != metrics)
            die("merging again changed the counts (%lld runs, %lld metric rows before)", runs, metrics);
    }
    store_close(o);
    eval_pass(out);
    return 0;
}

/* ------------------------------------------------------------ lookup */

FuzzEntry fuzz_entry(const char *target) {
    if (strcmp(target, "config") == 0) return fuzz_config_one;
    if (strcmp(target, "sweep") == 0) return fuzz_sweep_one;
    if (strcmp(target, "checkpoint") == 0) return fuzz_checkpoint_one;
    if (strcmp(target, "bench") == 0) return fuzz_bench_one;
    if (strcmp(target, "db") == 0) return fuzz_db_one;
    return NULL;
}
