/*
 * train.c — the training loop (see train.h).
 *
 * Per step: B windows of T+1 tokens from the training split at random
 * offsets (with data.bos_start the window's first token is always BOS,
 * followed by T tokens of text; a stream seeded from train.seed), forward, backward, global-norm clip, AdamW with
 * linear warmup and cosine decay.  Every step's loss, learning rate and
 * gradient norm go to the store; a loss above the median of the previous
 * 100 steps by more than train.spike_threshold counts as a spike; a NaN/inf
 * loss or one above train.diverge_loss ends the run as `diverged`.
 *
 * Every train.eval_every steps and at the end: the same fixed validation
 * windows give val loss / perplexity / bits per byte and the probes
 * (probes.h).  At the end the test split is evaluated once.
 */
#include "run/train.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <cblas.h>
#include <omp.h>
#include <signal.h>

#include "run/checkpoint.h"
#include "run/data.h"
#include "nn/dp.h"
#include "run/eval.h"
#include "nn/model.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "run/probes.h"
#include "run/store.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Failed writes to the store (a busy or full database): a run that lost
 * results must not end as finished.  Counted by DB(), checked at every
 * heartbeat and at the end. */
static int db_errors;
#define DB(call) (db_errors += (call) != 0)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the previous min(n, 100) losses (ring buffer). */
static double running_median(const double *ring, long n) {
    double tmp[100];
    int k = n < 100 ? (int)n : 100;
    memcpy(tmp, ring, sizeof(double) * k);
    qsort(tmp, k, sizeof(double), cmp_double);
    return k % 2 ? tmp[k / 2] : 0.5 * (tmp[k / 2 - 1] + tmp[k / 2]);
}

typedef struct {
    double loss;
    Probes probes;
} Eval;

/* Mean loss over fixed windows (count of them, each T+1 tokens), in
 * batches of B, into *loss; probes accumulated when pr is non-NULL.  0, or
 * -1 when a forward pass ran out of memory (errno ENOMEM). */
static int evaluate(Model *m, const int *win, int count, int B, int T, int *tok, int *tgt, Probes *pr,
                    double *loss) {
    double sum = 0;
    int done = 0;
    for (int w0 = 0; w0 < count; w0 += B) {
        int nb = count - w0 < B ? count - w0 : B;
        for (int b = 0; b < nb; b++) {
            const int *w = win + (size_t)(w0 + b) * (T + 1);
            memcpy(tok + (size_t)b * T, w, sizeof(int) * T);
            memcpy(tgt + (size_t)b * T, w + 1, sizeof(int) * T);
        }
        errno = 0;
        double l = model_forward(m, tok, tgt, nb, T);
        if (isnan(l) && errno == ENOMEM) return -1;
        sum += l * nb;
        done += nb;
        if (pr) probes_accumulate(pr, m);
    }
    *loss = done ? sum / done : NAN;
    return 0;
}

static void store_probes(Store *st, const char *id, const Model *m, const Probes *p, long step) {
    char ctx[64];
    double fsum = 0, msum = 0;
    for (int l = 0; l < m->L; l++) {
        snprintf(ctx, sizeof ctx, "layer=%d", l);
        double f = probe_fattn(p, l);
        fsum += f;
        msum += p->lp[l].mact;
        DB(store_metric(st, id, "f_attn", ctx, step, f));
        DB(store_metric(st, id, "m_act", ctx, step, p->lp[l].mact));
        DB(store_metric(st, id, "m_act_pos", ctx, step, (double)p->lp[l].mact_pos));
        DB(store_metric(st, id, "m_act_chan", ctx, step, (double)p->lp[l].mact_chan));
        if (m->cfg.gate.position != GP_NONE) {
            const LayerProbe *lp = &p->lp[l];
            DB(store_metric(st, id, "gate_mean", ctx, step, probe_gate_mean(p, l)));
            DB(store_metric(st, id, "gate_frac_lt_0.1", ctx, step, lp->gate_lt01 / lp->gate_n));
            DB(store_metric(st, id, "gate_frac_lt_0.01", ctx, step, lp->gate_lt001 / lp->gate_n));
            DB(store_metric(st, id, "y_abs_before_gate", ctx, step, lp->y_abs_before / lp->gate_n));
            DB(store_metric(st, id, "y_abs_after_gate", ctx, step, lp->y_abs_after / lp->gate_n));
            DB(store_metric(st, id, "sparsity_before_lt_1e-2", ctx, step, lp->y_small_before[0] / lp->gate_n));
            DB(store_metric(st, id, "sparsity_before_lt_1e-3", ctx, step, lp->y_small_before[1] / lp->gate_n));
            DB(store_metric(st, id, "sparsity_after_lt_1e-2", ctx, step, lp->y_small_after[0] / lp->gate_n));
            DB(store_metric(st, id, "sparsity_after_lt_1e-3", ctx, step, lp->y_small_after[1] / lp->gate_n));
            for (int h = 0; h < m->gs.hpos; h++) {
                char hc[64];
                snprintf(hc, sizeof hc, "layer=%d,head=%d", l, h);
                /* head_sum adds each token's mean over the head's channels */
                double tokens = lp->gate_n / ((double)m->gs.hpos * m->gs.dh);
                DB(store_metric(st, id, "gate_mean", hc, step, lp->head_sum[h] / tokens));
            }
            DB(store_histogram(st, id, "gate", ctx, step, lp->hist_lo, lp->hist_hi, lp->hist, GATE_HIST_BINS));
        }
    }
    /* per-head F-Attn and the sink test (probes.h) */
    double u = probe_uniform_fattn(p->T);
    for (int l = 0; l < m->L; l++) {
        snprintf(ctx, sizeof ctx, "layer=%d", l);
        DB(store_metric(st, id, "f_attn_rel", ctx, step, probe_fattn(p, l) / u));
        for (int h = 0; h < m->H; h++) {
            char hc[64];
            snprintf(hc, sizeof hc, "layer=%d,head=%d", l, h);
            DB(store_metric(st, id, "f_attn", hc, step, probe_fattn_head(p, l, h)));
        }
    }
    int sl, sh, formed = probe_sink_formed(p, &sl, &sh), heads = probe_sink_heads(p);
    DB(store_metric(st, id, "f_attn_rel", "", step, fsum / m->L / u));
    DB(store_metric(st, id, "sink_heads", "", step, heads));
    DB(store_metric(st, id, "sink_head_share", "", step, heads / (double)(m->L * m->H)));
    DB(store_metric(st, id, "sink_formed", "", step, formed));
    if (formed) {
        DB(store_metric(st, id, "sink_layer", "", step, sl));
        DB(store_metric(st, id, "sink_head", "", step, sh));
    }
    DB(store_metric(st, id, "f_attn", "", step, fsum / m->L));
    DB(store_metric(st, id, "m_act", "", step, msum / m->L));
    if (m->cfg.gate.position != GP_NONE) {
        double gs = 0;
        for (int l = 0; l < m->L; l++) gs += probe_gate_mean(p, l);
        DB(store_metric(st, id, "gate_mean", "", step, gs / m->L));
    }
}

/* mkdir -p; errors are not reported here: they surface, with the path,
 * when the checkpoint is written. */
static void mkdir_p(const char *dir) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0777);
            *p = '/';
        }
    mkdir(buf, 0777);
}

/* ------------------------------------------------------------ memory */

/* The "KEY: N kB" field of a /proc file in bytes, or -1. */
static long long kb_field(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    char line[256];
    size_t kl = strlen(key);
    long long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            long long kb;
            if (sscanf(line + kl + 1, "%lld", &kb) == 1 && kb >= 0 && kb < INT64_MAX / 1024) v = kb * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* A file holding one non-negative integer (a cgroup limit or usage), or -1
 * (absent, "max", anything else). */
static long long file_number(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[64];
    long long v = -1;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        errno = 0;
        long long x = strtoll(buf, &end, 10);
        if (end != buf && errno == 0 && x >= 0 && (*end == '\n' || *end == 0)) v = x;
    }
    fclose(f);
    return v;
}

/* Least room under the memory limits of the cgroup at rel (inside base)
 * and of every group above it: limit - usage.  Limits of 2^60 bytes or
 * more mean none.  -1 when no limit is set. */
static long long cgroup_room(const char *base, const char *rel, const char *limit_file, const char *usage_file) {
    char dir[4096], path[4200];
    long long best = -1;
    snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") == 0 ? "" : rel);
    size_t blen = strlen(base);
    for (;;) {
        snprintf(path, sizeof path, "%s/%s", dir, limit_file);
        long long lim = file_number(path);
        if (lim >= 0 && lim < (1LL << 60)) {
            snprintf(path, sizeof path, "%s/%s", dir, usage_file);
            long long use = file_number(path);
            long long room = use >= 0 && use < lim ? lim - use : use >= 0 ? 0 : lim;
            if (best < 0 || room < best) best = room;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < blen) break;
        *slash = 0;
    }
    return best;
}

/* Bytes this process may still allocate (see train_memory_check), or -1
 * when nothing says; src gets what binds. */
static long long mem_available(char *src, size_t cap) {
    long long best = kb_field("/proc/meminfo", "MemAvailable");
    snprintf(src, cap, "%s", best >= 0 ? "MemAvailable in /proc/meminfo" : "unknown");
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long long used = kb_field("/proc/self/status", "VmSize");
        long long room = (long long)rl.rlim_cur - (used > 0 ? used : 0);
        if (room < 0) room = 0;
        if (best < 0 || room < best) {
            best = room;
            snprintf(src, cap, "RLIMIT_AS (ulimit -v) less the %.2f GiB in use", used / 1073741824.0);
        }
    }
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2 || c2[1] != '/') continue;
            *c2 = 0;
            const char *ctrl = c1 + 1, *rel = c2 + 1;
            long long room = -1;
            if (strcmp(line, "0") == 0 && *ctrl == 0)
                room = cgroup_room("/sys/fs/cgroup", rel, "memory.max", "memory.current");
            else {
                /* v1: the memory controller, alone or in a comma list */
                char list[256];
                snprintf(list, sizeof list, ",%s,", ctrl);
                if (strstr(list, ",memory,"))
                    room = cgroup_room("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes", "memory.usage_in_bytes");
            }
            if (room >= 0 && (best < 0 || room < best)) {
                best = room;
                snprintf(src, cap, "the cgroup memory limit less its usage");
            }
        }
        fclose(f);
    }
    return best;
}

int train_memory_check(const Config *c, char *msg, size_t cap) {
    ModelMemory mm;
    ModelCfg mcfg = config_model(c);
    if (dp_memory_estimate(&mcfg, c->batch, dp_micro_batch(c->batch, c->micro_batch), c->seq_len, &mm)) {
        snprintf(msg, cap, "out of memory estimating the model's memory");
        return -1;
    }
    char src[128];
    long long avail = mem_available(src, sizeof src);
    const double G = 1073741824.0;
    int n = snprintf(msg, cap,
                     "this run needs about %.2f GiB (%.1fM parameters with their gradients and AdamW moments %.2f "
                     "GiB, activations of train.batch %d x model.seq_len %d %.2f GiB, backward scratch and micro-batch "
                     "gradients %.2f GiB); ",
                     mm.total / G, mm.nparams / 1e6, mm.params / G, c->batch, c->seq_len, mm.activations / G,
                     mm.scratch / G);
    if (n >= 0 && (size_t)n < cap) {
        if (avail < 0)
            snprintf(msg + n, cap - n, "how much memory is available is unknown");
        else
            snprintf(msg + n, cap - n, "%s%.2f GiB is available (%s)", (double)mm.total > (double)avail ? "only " : "",
                     avail / G, src);
    }
    return avail < 0 || (double)mm.total <= (double)avail;
}

/* ------------------------------------------------------------ the run */

/* Tests only: GATED_TEST_KILL_AFTER_CKPT=N kills this process right after
 * its Nth checkpoint (a kill at the worst moment, reproducibly). */
static void test_kill_after_checkpoint(int nth) {
    const char *e = getenv("GATED_TEST_KILL_AFTER_CKPT");
    if (e && atoi(e) == nth) raise(SIGKILL);
}

/* Validation loss and probes at step, stored.  0, or -1 out of memory. */
static int eval_and_store(Store *st, const char *id, Model *m, Probes *pr, const int *val, int nval, int B, int T,
                          int *tok, int *tgt, long step, double *vl) {
    probes_free(pr);
    if (probes_init(pr, m)) return -1;
    if (evaluate(m, val, nval, B, T, tok, tgt, pr, vl)) return -1;
    DB(store_metric(st, id, "val_loss", "", step, *vl));
    DB(store_metric(st, id, "val_ppl", "", step, exp(*vl)));
    DB(store_metric(st, id, "val_bpb", "", step, *vl / log(2.0)));
    store_probes(st, id, m, pr, step);
    return 0;
}

/* A plain `gated train` may start any run that is not live (rerunning a
 * finished one is what the user asked for). */
static int claim_always(void *ctx, const StoreRunState *state) {
    (void)ctx, (void)state;
    return 1;
}

/* SIGINT/SIGTERM end the run cleanly: checkpoint, status killed. */
static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

int train_run(const Config *c, const TrainOpts *o) {
    char err[1024];
    ops_set_threads(c->threads); /* the one place thread counts are set for a run */
    if (c->vocab_size < DATA_VOCAB) {
        fprintf(stderr, "gated train: model.vocab_size: must be at least %d for byte tokens + BOS, got %d\n",
                DATA_VOCAB, c->vocab_size);
        return 2;
    }
    Corpus corp;
    memset(&corp, 0, sizeof corp);
    if (c->corpus == CORPUS_SYNTHETIC) {
        if (corpus_synthetic(&corp, (uint64_t)c->seed, 200, 4000)) {
            fprintf(stderr, "gated train: out of memory building the synthetic corpus\n");
            return 1;
        }
    } else if (corpus_load_brown(&corp, o->data_dir, err, sizeof err)) {
        fprintf(stderr, "gated train: %s\n", err);
        return 2;
    }
    /* the model's memory, before any of it is allocated (the corpus is in
     * what is available already) */
    int fits = train_memory_check(c, err, sizeof err);
    if (fits < 0) {
        fprintf(stderr, "gated train: %s\n", err);
        corpus_free(&corp);
        return 1;
    }
    if (!fits && !o->force) {
        fprintf(stderr,
                "gated train: %s; use a smaller model, train.batch or model.seq_len, or pass --force to try "
                "anyway\n",
                err);
        corpus_free(&corp);
        return 2;
    }
    if (!fits) fprintf(stderr, "gated train: --force: %s; trying anyway\n", err);
    int B = c->batch, T = c->seq_len, n = B * T, rc = 1;
    Model m;
    Store *st = NULL;
    Probes pr;
    memset(&pr, 0, sizeof pr);
    int *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n), *w = malloc(sizeof(int) * (T + 1));
    int *val = NULL, *test = NULL;
    int nval = split_eval_windows(&corp.val, T, c->bos_start, c->eval_windows, &val);
    int ntest = split_eval_windows(&corp.test, T, c->bos_start, c->eval_windows, &test);
    DataParallel dp;
    memset(&dp, 0, sizeof dp);
    ModelCfg mc = config_model(c);
    if (model_init(&m, &mc) || dp_init(&dp, &m, B, dp_micro_batch(B, c->micro_batch))) {
        model_free(&m);
        fprintf(stderr, "gated train: out of memory for the model\n");
        free(tok), free(tgt), free(w), free(val), free(test);
        corpus_free(&corp);
        return 1;
    }
    char *json = NULL;
    if (nval == 0 || ntest == 0) {
        fprintf(stderr, "gated train: model.seq_len: %d is longer than the %s split (%zu tokens) allows\n", T,
                nval == 0 ? "validation" : "test", nval == 0 ? corp.val.ntok : corp.test.ntok);
        rc = 2;
        goto out;
    }
    if (!tok || !tgt || !w || nval < 0 || ntest < 0 || probes_init(&pr, &m)) {
        fprintf(stderr, "gated train: out of memory\n");
        goto out;
    }
    if (store_open(&st, o->db_path, err, sizeof err)) {
        fprintf(stderr, "gated train: %s\n", err);
        rc = 2;
        goto out;
    }
    char id[17];
    json = store_config_json(c, id);
    if (!json) {
        fprintf(stderr, "gated train: out of memory\n");
        goto out;
    }
    const char *name = o->name ? o->name : id;

    /* Everything that can refuse the run is checked before its row is
     * touched: a failed resume leaves the stored status as it was. */
    char ckpt[4096];
    snprintf(ckpt, sizeof ckpt, "%s/%s.ckpt", o->ckpt_dir ? o->ckpt_dir : "checkpoints", id);
    TrainState ts;
    memset(&ts, 0, sizeof ts);
    ts.data_rng = rng_seed((uint64_t)c->seed ^ 0xDA7Aull);
    int resumed = 0;
    if (o->resume) {
        char sbuf[16];
        const char *stored = store_run_status(st, id, sbuf, sizeof sbuf);
        if (stored && (strcmp(stored, "finished") == 0 || strcmp(stored, "diverged") == 0)) {
            fprintf(stderr, "gated train: run %s (%s) is already %s: nothing to resume; its results are unchanged\n",
                    id, name, stored);
            printf("%s\n", id);
            rc = 0;
            goto out;
        }
        int r = checkpoint_load(ckpt, json, &m.p, &ts, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "gated train: %s\ngated train: nothing was resumed; run %s is %s as before (start it over "
                            "without --resume)\n",
                    err, id, stored ? stored : "not in the database");
            rc = 2;
            goto out;
        }
        if (r > 0) {
            resumed = 1;
            if (ts.step == c->steps)
                fprintf(stderr, "resuming %s at step %lld: every step is done; evaluating and finishing\n", id,
                        (long long)ts.step);
            else
                fprintf(stderr, "resuming %s at step %lld\n", id, (long long)ts.step);
        }
    }
    /* continued training: a fresh run (step 0) starts from another run's weights */
    if (ts.step == 0 && c->init_from[0]) {
        long parent_steps = 0;
        int r = trained_load_weights(&m, c, c->init_from, o->db_path, o->ckpt_dir, &parent_steps, err, sizeof err);
        if (r) {
            fprintf(stderr, "gated train: %s\n", err);
            rc = r;
            goto out;
        }
        if (!o->progress) fprintf(stderr, "starting from %s (%ld steps trained)\n", c->init_from, parent_steps);
    }
    /* claim the run (store.h): never start over a run another process is
     * running; a sweep passes its own claim in GATED_RUN_OWNER */
    char owner[160], seen[16];
    const char *env_owner = getenv("GATED_RUN_OWNER");
    if (env_owner && *env_owner)
        snprintf(owner, sizeof owner, "%s", env_owner);
    else
        store_owner_token(owner, sizeof owner);
    int claim = store_run_claim(st, id, owner, claim_always, NULL, seen, sizeof seen);
    if (claim < 0) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
        goto out;
    }
    if (claim == STORE_CLAIM_LIVE) {
        fprintf(stderr, "gated train: run %s is running in another process (fresh heartbeat or claim); not started\n",
                id);
        goto out;
    }
    int threads = c->threads > 0 ? c->threads : omp_get_max_threads();
    if (store_run_begin(st, id, name, json, (long long)c->seed, threads, NULL, o->argv)) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
        goto out;
    }
    /* starting from step 0: rows of an earlier attempt of this run go */
    if (ts.step == 0 && store_run_reset(st, id)) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
        goto out;
    }
    mkdir_p(o->ckpt_dir ? o->ckpt_dir : "checkpoints");

    AdamW opt = {c->lr, c->beta1, c->beta2, c->adam_eps, c->weight_decay, c->grad_clip};
    long diverged_step = -1;
    double t0 = now(), last_beat = t0, last_log = t0, last_loss = NAN, last_val = NAN;
    db_errors = 0;
    int ckpt_ok = 0, nckpt = 0, evaluated_last = 0;
    const char *status = "finished";
    char stop_reason[128] = "", fail_reason[256] = "";
    stop_signal = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (long step = ts.step; step < c->steps; step++) {
        double tstart = now();
        for (int b = 0; b < B; b++) {
            split_sample_window(&corp.train, &ts.data_rng, T, c->bos_start, w);
            memcpy(tok + (size_t)b * T, w, sizeof(int) * T);
            memcpy(tgt + (size_t)b * T, w + 1, sizeof(int) * T);
        }
        errno = 0;
        int bad_backward = 0;
        double loss = dp_step(&dp, tok, tgt, T, &bad_backward);
        if (isnan(loss) && errno == ENOMEM) {
            /* not a divergence: the step never ran */
            snprintf(fail_reason, sizeof fail_reason, "out of memory in the forward pass of step %ld", step);
            status = "failed";
            break;
        }
        last_loss = loss;
        if (!isfinite(loss) || loss > c->diverge_loss) {
            status = "diverged";
            diverged_step = step;
            DB(store_metric(st, id, "train_loss", "", step, isfinite(loss) ? loss : -1));
            break;
        }
        if (bad_backward) {
            snprintf(fail_reason, sizeof fail_reason, "out of memory in the backward pass of step %ld", step);
            status = "failed";
            break;
        }
        opt.lr = lr_schedule(step, c->steps, c->warmup, c->lr, c->min_lr);
        double gn = adamw_step(&m.p, &opt, step + 1);
        ts.train_time += now() - tstart;
        if (step > 0) {
            double med = running_median(ts.ring, step);
            if (loss > med + c->spike_threshold) {
                ts.spikes++;
                DB(store_metric(st, id, "spike", "", step, loss - med));
            }
        }
        ts.ring[step % 100] = loss;
        DB(store_metric(st, id, "train_loss", "", step, loss));
        DB(store_metric(st, id, "lr", "", step, opt.lr));
        DB(store_metric(st, id, "grad_norm", "", step, gn));
        ts.step = step + 1;

        int last = step + 1 == c->steps;
        if ((step + 1) % c->eval_every == 0 || last) {
            double vl;
            if (eval_and_store(st, id, &m, &pr, val, nval, B, T, tok, tgt, step + 1, &vl)) {
                snprintf(fail_reason, sizeof fail_reason, "out of memory evaluating at step %ld", step + 1);
                status = "failed";
                break;
            }
            last_val = vl;
            evaluated_last = last;
            if (!o->progress)
                fprintf(stderr, "step %ld/%d  train %.4f  val %.4f\n", step + 1, c->steps, loss, vl);
        }
        int stop = stop_signal || (o->stop_after > 0 && step + 1 >= o->stop_after && !last);
        if ((c->checkpoint_every > 0 && (step + 1) % c->checkpoint_every == 0) || stop) {
            /* every row up to this step is committed before the checkpoint names it done */
            DB(store_flush(st));
            if (db_errors) break;
            ckpt_ok = checkpoint_save(ckpt, json, &m.p, &ts, err, sizeof err) == 0;
            if (!ckpt_ok) fprintf(stderr, "gated train: %s\n", err);
            else test_kill_after_checkpoint(++nckpt);
        }
        double tnow = now();
        if (tnow - last_beat > 5) {
            DB(store_heartbeat(st, id));
            DB(store_claim_refresh(st, owner));
            last_beat = tnow;
            if (db_errors) break;
        }
        double tps = (double)(step + 1) * n / (ts.train_time > 0 ? ts.train_time : 1);
        if (o->progress && (tnow - last_log > 0.2 || last)) {
            double eta = (c->steps - step - 1) * (double)n / tps;
            fprintf(stderr, "\rstep %ld/%d  loss %.4f  %.0f tok/s  ETA %.0fs   ", step + 1, c->steps, loss, tps, eta);
            last_log = tnow;
        } else if (!o->progress && tnow - last_log > 30) {
            fprintf(stderr, "step %ld/%d  loss %.4f  %.0f tok/s\n", step + 1, c->steps, loss, tps);
            last_log = tnow;
        }
        if (stop) {
            status = "killed";
            if (stop_signal)
                snprintf(stop_reason, sizeof stop_reason, "stopped by signal %d at step %ld", (int)stop_signal, step + 1);
            else
                snprintf(stop_reason, sizeof stop_reason, "stopped after %ld steps (--stop-after)", step + 1);
            break;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (o->progress) fputc('\n', stderr);

    /* the last evaluation: done in the loop unless nothing was left to
     * train (train.steps = 0, or resumed from the final checkpoint) */
    if (strcmp(status, "finished") == 0 && !db_errors && !evaluated_last) {
        if (eval_and_store(st, id, &m, &pr, val, nval, B, T, tok, tgt, (long)ts.step, &last_val)) {
            snprintf(fail_reason, sizeof fail_reason, "out of memory evaluating at step %lld", (long long)ts.step);
            status = "failed";
        }
    }
    if (db_errors) {
        snprintf(err, sizeof err, "%d writes to %s failed (last: %s); results are incomplete", db_errors,
                 o->db_path, store_errmsg(st));
        fprintf(stderr, "gated train: %s\n", err);
        store_run_end(st, id, "failed", err, -1);
        goto out;
    }
    if (strcmp(status, "failed") == 0) {
        fprintf(stderr, "gated train: %s; the run is failed%s\n", fail_reason,
                ckpt_ok || resumed ? " (--resume continues from its last checkpoint)" : "");
        if (store_run_end(st, id, "failed", fail_reason, -1))
            fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
        goto out;
    }
    if (strcmp(status, "killed") == 0) {
        if (ckpt_ok)
            fprintf(stderr, "%s; checkpoint %s (continue with --resume)\n", stop_reason, ckpt);
        else
            fprintf(stderr, "%s; no checkpoint could be written, a rerun starts over\n", stop_reason);
        store_run_end(st, id, "killed", stop_reason, -1);
        rc = stop_signal ? 1 : 0;
        goto out;
    }
    if (diverged_step < 0) {
        DB(store_flush(st));
        if (db_errors == 0) {
            if (checkpoint_save(ckpt, json, &m.p, &ts, err, sizeof err))
                fprintf(stderr, "gated train: %s\n", err);
            else
                test_kill_after_checkpoint(++nckpt);
        }
        double tl;
        if (evaluate(&m, test, ntest, B, T, tok, tgt, NULL, &tl)) {
            snprintf(fail_reason, sizeof fail_reason, "out of memory evaluating the test split");
            fprintf(stderr, "gated train: %s; the run is failed (--resume finishes it)\n", fail_reason);
            if (store_run_end(st, id, "failed", fail_reason, -1))
                fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
            goto out;
        }
        DB(store_summary(st, id, "test_loss", "", tl, NULL));
        DB(store_summary(st, id, "test_ppl", "", exp(tl), NULL));
        DB(store_summary(st, id, "test_bpb", "", tl / log(2.0), NULL));
        double vl = last_val; /* the last step always evaluates */
        DB(store_summary(st, id, "val_loss", "", vl, NULL));
        DB(store_summary(st, id, "val_ppl", "", exp(vl), NULL));
        DB(store_summary(st, id, "val_bpb", "", vl / log(2.0), NULL));
        if (c->steps == 0)
            fprintf(stderr,
                    "finished: no training steps (train.steps is 0); the initial weights give val loss %.4f (ppl "
                    "%.3f, %.4f bits/byte), test loss %.4f\n",
                    vl, exp(vl), vl / log(2.0), tl);
        else
            fprintf(stderr, "finished: val loss %.4f (ppl %.3f, %.4f bits/byte), test loss %.4f\n", vl, exp(vl),
                    vl / log(2.0), tl);
    } else {
        fprintf(stderr, "diverged at step %ld (loss %g)\n", diverged_step, last_loss);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    DB(store_summary(st, id, "spikes", "", (double)ts.spikes, NULL));
    DB(store_summary(st, id, "tokens_per_s", "", ts.train_time > 0 ? (double)ts.step * n / ts.train_time : 0, NULL));
    DB(store_summary(st, id, "peak_rss_mib", "", ru.ru_maxrss / 1024.0, NULL));
    DB(store_summary(st, id, "wall_s", "", now() - t0, NULL)); /* this process only */
    DB(store_summary(st, id, "params", "", (double)m.p.total, NULL));
    DB(store_summary(st, id, "gate_params", "", (double)model_gate_params(&m), NULL));
    if (db_errors) {
        snprintf(err, sizeof err, "%d writes to %s failed (last: %s); results are incomplete", db_errors,
                 o->db_path, store_errmsg(st));
        fprintf(stderr, "gated train: %s\n", err);
        store_run_end(st, id, "failed", err, -1);
        goto out;
    }
    if (store_run_end(st, id, status, NULL, diverged_step)) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(st));
        goto out;
    }
    printf("%s\n", id);
    rc = 0;
out:
    free(json);
    store_close(st);
    probes_free(&pr);
    dp_free(&dp);
    model_free(&m);
    free(tok), free(tgt), free(w), free(val), free(test);
    corpus_free(&corp);
    return rc;
}
