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
 *
 * Steps count optimizer updates from 1: the rows of step s (train_loss, lr,
 * grad_norm, spike) are those of update s, its loss computed before it; an
 * evaluation at step s follows update s; a checkpoint at step s holds the
 * model after s updates (TrainState.step = s), so a resumed run goes on
 * with step s + 1.
 * data.corpus bb: each window is a fresh Bigram-Backcopy sequence drawn
 * from the same data stream (data.h), the evaluation windows are the
 * task's fixed ones, and the Bigram-Backcopy probes are stored too.
 */
#include "run/train.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

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
#include "nn/sparse.h"
#include "run/probes.h"
#include "run/store.h"
#include "util/sysinfo.h"
#include "util/util.h"

/* Failed writes to the store (a busy or full database): a run that lost
 * results must not end as finished.  Counted by DB(), checked at every
 * heartbeat and at the end. */
static int db_errors;
#define DB(call) (db_errors += (call) != 0)

/* Median of the previous min(n, 100) losses (ring buffer). */
static double running_median(const double *ring, long n) { return util_median(ring, n < 100 ? (int)n : 100); }

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
        if (pr) {
            probes_accumulate(pr, m);
            probes_bb_accumulate(pr, m, tok);
            if (probes_rows_accumulate(pr, m, tok)) {
                errno = ENOMEM;
                return -1;
            }
            if (sparse_selection(m, 0)) { /* a sparse forward: the same weights run dense, for the gap */
                sparse_force_dense(m, 1);
                double ld = model_forward(m, tok, tgt, nb, T);
                sparse_force_dense(m, 0);
                if (isnan(ld) && errno == ENOMEM) return -1;
                probes_sparse_gap_add(pr, l, ld, nb);
            }
        }
    }
    *loss = done ? sum / done : NAN;
    return 0;
}

/* A metric row unless the value is NAN (nothing was counted). */
static void store_finite(Store *st, const char *id, const char *key, const char *ctx, long step, double v) {
    if (!isnan(v)) DB(store_metric(st, id, key, ctx, step, v));
}

/* The Bigram-Backcopy probes (probes.h): per head, their layer's mean over
 * heads, and ('') the mean over layers; the residual peak per layer and its
 * largest; gate scores by position type and their histograms. */
static void store_bb_probes(Store *st, const char *id, const Model *m, const Probes *p, long step) {
    static const char *const gkey[2] = {"bb_gate_trigger", "bb_gate_other"};
    char ctx[64];
    store_finite(st, id, "bb_loss_trigger", "", step, probe_bb_loss(p, BB_TRIGGER));
    store_finite(st, id, "bb_loss_other", "", step, probe_bb_loss(p, BB_OTHER));
    store_finite(st, id, "bb_trigger_share", "", step, probe_bb_trigger_share(p));
    /* per-head probes: 0, 1 attention on BOS by query type, 2 previous token (trigger), 3 value drain,
     * 4, 5 mass on nothing by query type */
    static const char *const hkey[6] = {"bb_bos_attn_trigger", "bb_bos_attn_other", "bb_prev_attn_trigger",
                                        "bb_value_drain", "bb_none_attn_trigger", "bb_none_attn_other"};
    for (int q = 0; q < 6; q++) {
        double all = 0;
        for (int l = 0; l < m->L; l++) {
            double lsum = 0;
            for (int h = 0; h < m->H; h++) {
                double v = q < 2    ? probe_bb_bos(p, l, h, q)
                           : q == 2 ? probe_bb_prev(p, l, h)
                           : q == 3 ? probe_bb_value_drain(p, l, h)
                                    : probe_bb_none(p, l, h, q - 4);
                snprintf(ctx, sizeof ctx, "layer=%d,head=%d", l, h);
                store_finite(st, id, hkey[q], ctx, step, v);
                lsum += v;
            }
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            store_finite(st, id, hkey[q], ctx, step, lsum / m->H);
            all += lsum / m->H;
        }
        store_finite(st, id, hkey[q], "", step, all / m->L);
    }
    double peak = NAN;
    for (int l = 0; l < m->L; l++) {
        double v = probe_bb_residual_peak(p, l);
        snprintf(ctx, sizeof ctx, "layer=%d", l);
        store_finite(st, id, "bb_residual_peak", ctx, step, v);
        if (isnan(peak) || v > peak) peak = v;
    }
    store_finite(st, id, "bb_residual_peak", "", step, peak);
    if (m->cfg.gate.position == GP_NONE) return;
    for (int q = 0; q < 2; q++) {
        double all = 0;
        for (int l = 0; l < m->L; l++) {
            double lsum = 0;
            for (int h = 0; h < m->gs.hpos; h++) {
                double v = probe_bb_gate(p, l, h, q);
                snprintf(ctx, sizeof ctx, "layer=%d,head=%d", l, h);
                store_finite(st, id, gkey[q], ctx, step, v);
                lsum += v;
            }
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            store_finite(st, id, gkey[q], ctx, step, lsum / m->gs.hpos);
            DB(store_histogram(st, id, gkey[q], ctx, step, p->lp[l].hist_lo, p->lp[l].hist_hi,
                               p->bb->hist[q] + (size_t)l * GATE_HIST_BINS, GATE_HIST_BINS));
            all += lsum / m->gs.hpos;
        }
        store_finite(st, id, gkey[q], "", step, all / m->L);
    }
}

/* The attention-row probes (probes.h): mass on position 0 and on nothing
 * per head, their layer's mean over heads and ('') the mean over layers;
 * Sink_1^eps per layer and over all heads; residual kurtosis per layer and
 * its mean over layers.  Nothing where nothing was counted. */
static void store_row_probes(Store *st, const char *id, const Model *m, const Probes *p, long step) {
    static const char *const key[2] = {"attn_mass0", "attn_mass_none"};
    char ctx[64];
    for (int q = 0; q < 2; q++) {
        double all = 0;
        for (int l = 0; l < m->L; l++) {
            double lsum = 0;
            for (int h = 0; h < m->H; h++) {
                double v = q ? probe_mass_none(p, l, h) : probe_mass0(p, l, h);
                snprintf(ctx, sizeof ctx, "layer=%d,head=%d", l, h);
                store_finite(st, id, key[q], ctx, step, v);
                lsum += v;
            }
            snprintf(ctx, sizeof ctx, "layer=%d", l);
            store_finite(st, id, key[q], ctx, step, lsum / m->H);
            all += lsum / m->H;
        }
        store_finite(st, id, key[q], "", step, all / m->L);
    }
    double ksum = 0;
    for (int l = 0; l < m->L; l++) {
        snprintf(ctx, sizeof ctx, "layer=%d", l);
        store_finite(st, id, "sink_eps_share", ctx, step, probe_sink_eps_share(p, l));
        store_finite(st, id, "resid_kurtosis", ctx, step, probe_resid_kurtosis(p, l));
        ksum += probe_resid_kurtosis(p, l);
    }
    store_finite(st, id, "sink_eps_share", "", step, probe_sink_eps_share(p, -1));
    store_finite(st, id, "resid_kurtosis", "", step, ksum / m->L);
    /* top-k sparse attention (NAN, so nothing stored, for a dense model) */
    store_finite(st, id, "sparse_dense_gap", "", step, probe_sparse_gap(p));
    for (int l = -1; l < m->L; l++) {
        if (l < 0)
            ctx[0] = '\0';
        else
            snprintf(ctx, sizeof ctx, "layer=%d", l);
        store_finite(st, id, "sparse_recall", ctx, step, probe_sparse_recall(p, l));
        store_finite(st, id, "sparse_p0", ctx, step, probe_sparse_p0(p, l));
    }
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
    store_row_probes(st, id, m, p, step);
    if (p->bb) store_bb_probes(st, id, m, p, step);
    if (m->cfg.gate.position != GP_NONE) {
        double gs = 0;
        for (int l = 0; l < m->L; l++) gs += probe_gate_mean(p, l);
        DB(store_metric(st, id, "gate_mean", "", step, gs / m->L));
    }
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
    long n;
    if (e && util_parse_long(e, 1, 1L << 30, &n) == 0 && n == nth) raise(SIGKILL);
}

/* Validation loss and probes at step, stored (the Bigram-Backcopy probes
 * too when bb is not NULL).  0, or -1 out of memory. */
static int eval_and_store(Store *st, const char *id, Model *m, Probes *pr, const BBTask *bb, const int *val, int nval,
                          int B, int T, int *tok, int *tgt, long step, double *vl) {
    probes_free(pr);
    if (probes_init(pr, m)) return -1;
    if (bb && probes_bb_init(pr, m, bb->is_trig, bb->V + 1)) return -1;
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

/* One run, shared by its phases (as llm.c's loop): open (config, corpus,
 * model, store, resume or init_from, claim), then per step train_step,
 * train_eval, train_checkpoint, train_report, then train_finish. */
typedef struct {
    const Config *c;
    const TrainOpts *o;
    int B, T, n;         /* train.batch, model.seq_len, tokens per step */
    Corpus corp;
    BBTask bb;           /* data.corpus bb: the task (bbp points at it), else bbp is NULL */
    const BBTask *bbp;
    Model m;
    DataParallel dp;
    Probes pr;
    Store *st;
    int *tok, *tgt, *w;  /* a batch's inputs and targets; one sampled window */
    int *val, *test;     /* the fixed evaluation windows */
    int nval, ntest;
    char *json;          /* the resolved config as stored */
    char id[17];
    const char *name;
    char ckdir[4000];    /* its directory: --ckpt, else beside the database */
    char ckpt[4096];     /* this run's checkpoint file */
    char owner[160];     /* the claim's owner */
    TrainState ts;
    int resumed;
    AdamW opt;
    /* the loop's outcome */
    const char *status;  /* finished, failed, diverged or killed */
    long diverged_step;
    double t0, last_beat, last_log, last_loss, last_val;
    double load_start;   /* the 1-minute load average when the loop started (sysinfo_loadavg) */
    int ckpt_ok, nckpt, evaluated_last;
    char stop_reason[128], fail_reason[256];
    char err[1024];
} Run;

/* What an open phase returns to go on (else it returns the exit code). */
enum { GO = -1 };

/* The corpus, then the model's memory, before any of it is allocated (the
 * corpus is in what is available already). */
static int open_corpus(Run *r) {
    const Config *c = r->c;
    if (c->corpus != CORPUS_BB && c->vocab_size < DATA_VOCAB) {
        fprintf(stderr, "gated train: model.vocab_size: must be at least %d for byte tokens + BOS, got %d\n",
                DATA_VOCAB, c->vocab_size);
        return 2;
    }
    if (c->corpus == CORPUS_BB) {
        BBCfg bc = config_bb(c);
        if (bb_init(&r->bb, &bc, r->o->data_dir, r->err, sizeof r->err)) {
            fprintf(stderr, "gated train: %s\n", r->err);
            return 2;
        }
        r->bbp = &r->bb;
        if (!r->o->progress) fprintf(stderr, "%s\n", r->bb.source);
    } else if (c->corpus == CORPUS_SYNTHETIC) {
        if (corpus_synthetic(&r->corp, (uint64_t)c->seed, 200, 4000)) {
            fprintf(stderr, "gated train: out of memory building the synthetic corpus\n");
            return 1;
        }
    } else if (corpus_load_brown(&r->corp, r->o->data_dir, r->err, sizeof r->err)) {
        fprintf(stderr, "gated train: %s\n", r->err);
        return 2;
    }
    int fits = train_memory_check(c, r->err, sizeof r->err);
    if (fits < 0) {
        fprintf(stderr, "gated train: %s\n", r->err);
        return 1;
    }
    if (!fits && !r->o->force) {
        fprintf(stderr,
                "gated train: %s; use a smaller model, train.batch or model.seq_len, or pass --force to try "
                "anyway\n",
                r->err);
        return 2;
    }
    if (!fits) fprintf(stderr, "gated train: --force: %s; trying anyway\n", r->err);
    return GO;
}

/* Buffers, evaluation windows, the model with its micro-batch workers, the
 * probes. */
static int open_model(Run *r) {
    const Config *c = r->c;
    int B = c->batch, T = c->seq_len;
    r->B = B, r->T = T, r->n = B * T;
    r->tok = malloc(sizeof(int) * r->n);
    r->tgt = malloc(sizeof(int) * r->n);
    r->w = malloc(sizeof(int) * (T + 1));
    if (r->bbp) {
        r->nval = bb_windows(r->bbp, 0, T, c->eval_windows, &r->val);
        r->ntest = bb_windows(r->bbp, 1, T, c->eval_windows, &r->test);
    } else {
        r->nval = split_eval_windows(&r->corp.val, T, c->bos_start, c->eval_windows, &r->val);
        r->ntest = split_eval_windows(&r->corp.test, T, c->bos_start, c->eval_windows, &r->test);
    }
    ModelCfg mc = config_model(c);
    if (model_init(&r->m, &mc) || dp_init(&r->dp, &r->m, B, dp_micro_batch(B, c->micro_batch))) {
        fprintf(stderr, "gated train: out of memory for the model\n");
        return 1;
    }
    if (r->nval == 0 || r->ntest == 0) {
        fprintf(stderr, "gated train: model.seq_len: %d is longer than the %s split (%zu tokens) allows\n", T,
                r->nval == 0 ? "validation" : "test", r->nval == 0 ? r->corp.val.ntok : r->corp.test.ntok);
        return 2;
    }
    if (!r->tok || !r->tgt || !r->w || r->nval < 0 || r->ntest < 0 || probes_init(&r->pr, &r->m)) {
        fprintf(stderr, "gated train: out of memory\n");
        return 1;
    }
    return GO;
}

/* The results store, the run id (the hash of the stored config), its
 * checkpoint's path and the data stream's seed. */
static int open_store(Run *r) {
    const TrainOpts *o = r->o;
    int orc = store_open(&r->st, o->db_path, r->err, sizeof r->err);
    if (orc) {
        fprintf(stderr, "gated train: %s\n", r->err);
        return orc == -2 ? 2 : 1; /* the file refused: bad input; locked, disk full: a runtime failure */
    }
    r->json = store_config_json(r->c, r->id);
    if (!r->json) {
        fprintf(stderr, "gated train: out of memory\n");
        return 1;
    }
    r->name = o->name ? o->name : r->id;
    if (o->ckpt_dir)
        snprintf(r->ckdir, sizeof r->ckdir, "%s", o->ckpt_dir);
    else
        checkpoint_default_dir(o->db_path, r->ckdir, sizeof r->ckdir);
    checkpoint_path(r->ckdir, store_db_id(r->st), r->id, r->ckpt, sizeof r->ckpt);
    r->ts.data_rng = rng_stream((uint64_t)r->c->seed, 0xDA7Aull);
    return GO;
}

/* --resume, then train.init_from.  Everything that can refuse the run is
 * checked before its row is touched: a failed resume leaves the stored
 * status as it was. */
static int open_resume(Run *r) {
    const Config *c = r->c;
    const TrainOpts *o = r->o;
    if (o->resume) {
        char sbuf[16];
        const char *stored = store_run_status(r->st, r->id, sbuf, sizeof sbuf);
        if (stored && (strcmp(stored, "finished") == 0 || strcmp(stored, "diverged") == 0)) {
            fprintf(stderr, "gated train: run %s (%s) is already %s: nothing to resume; its results are unchanged\n",
                    r->id, r->name, stored);
            printf("%s\n", r->id);
            return 0;
        }
        /* its own, else where gated train put them before (checkpoint_locate) */
        char from[4096];
        int k = checkpoint_locate(r->st, r->ckdir, !o->ckpt_dir, r->id, from, sizeof from);
        if (k > 0) k = checkpoint_load(from, r->json, r->st, &r->m.p, &r->ts, r->err, sizeof r->err);
        /* a resume is exact only on top of every row before the checkpoint's
         * step: refused when the database lacks them (a format-2 checkpoint
         * names no database; a database copied and then cut, or rows deleted) */
        if (k > 0 && r->ts.step > 0) {
            char why[512];
            int has = store_run_rows_through(r->st, r->id, r->ts.step, c->eval_every, why, sizeof why);
            if (has <= 0) {
                snprintf(r->err, sizeof r->err, "%.400s: checkpoint after step %lld, but %s", from,
                         (long long)r->ts.step, has < 0 ? store_errmsg(r->st) : why);
                k = -1;
            }
        }
        if (k < 0) {
            fprintf(stderr, "gated train: %s\ngated train: nothing was resumed; run %s is %s as before (start it over "
                            "without --resume)\n",
                    r->err, r->id, stored ? stored : "not in the database");
            return 2;
        }
        if (k > 0) {
            r->resumed = 1;
            if (r->ts.step == c->steps)
                fprintf(stderr, "resuming %s after step %lld: every step is done; evaluating and finishing\n", r->id,
                        (long long)r->ts.step);
            else
                fprintf(stderr, "resuming %s after step %lld\n", r->id, (long long)r->ts.step);
        }
    }
    /* continued training: a fresh run (step 0) starts from another run's weights */
    if (r->ts.step == 0 && c->init_from[0]) {
        long parent_steps = 0;
        int k = trained_load_weights(&r->m, c, c->init_from, o->db_path, o->ckpt_dir, &parent_steps, r->err,
                                     sizeof r->err);
        if (k) {
            fprintf(stderr, "gated train: %s\n", r->err);
            return k;
        }
        if (!o->progress) fprintf(stderr, "starting from %s (%ld steps trained)\n", c->init_from, parent_steps);
    }
    return GO;
}

/* Claim the run (store.h): never start over a run another process is
 * running; a sweep passes its own claim in GATED_RUN_OWNER.  Then its row
 * (reset when it starts from step 0) and the checkpoint directory. */
static int open_claim(Run *r) {
    const Config *c = r->c;
    const TrainOpts *o = r->o;
    const char *env_owner = getenv("GATED_RUN_OWNER");
    if (env_owner && *env_owner)
        snprintf(r->owner, sizeof r->owner, "%s", env_owner);
    else
        store_owner_token(r->owner, sizeof r->owner);
    char seen[16];
    int claim = store_run_claim(r->st, r->id, r->owner, claim_always, NULL, seen, sizeof seen);
    if (claim < 0) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(r->st));
        return 1;
    }
    if (claim == STORE_CLAIM_LIVE) {
        fprintf(stderr, "gated train: run %s is running in another process (fresh heartbeat or claim); not started\n",
                r->id);
        return 1;
    }
    int threads = c->threads > 0 ? c->threads : omp_get_max_threads();
    if (store_run_begin(r->st, r->id, r->name, r->json, (long long)c->seed, threads, NULL, o->argv)) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(r->st));
        return 1;
    }
    /* starting from step 0: rows of an earlier attempt of this run go */
    if (r->ts.step == 0 && store_run_reset(r->st, r->id)) {
        fprintf(stderr, "gated train: %s: %s\n", o->db_path, store_errmsg(r->st));
        return 1;
    }
    /* a directory that cannot be made: said now; each checkpoint then fails
     * with its path, and the run goes on */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", r->ckdir, store_db_id(r->st));
    if (util_mkdir_p(dir))
        fprintf(stderr, "gated train: %s: %s (checkpoints cannot be written)\n", dir, strerror(errno));
    return GO;
}

/* Step `step`, the step-th optimizer update (steps count updates from 1;
 * README, "Steps"): a batch from the data stream, forward and backward over
 * the micro-batches, AdamW, and the step's rows, the loss being the one
 * computed before the update.  0, or 1 when the run ends here (status set:
 * failed out of memory, or diverged). */
static int train_step(Run *r, long step) {
    const Config *c = r->c;
    int T = r->T;
    long done = step - 1; /* updates made before this one */
    double tstart = util_now();
    for (int b = 0; b < r->B; b++) {
        if (r->bbp)
            bb_sample(r->bbp, &r->ts.data_rng, T, r->w);
        else
            split_sample_window(&r->corp.train, &r->ts.data_rng, T, c->bos_start, r->w);
        memcpy(r->tok + (size_t)b * T, r->w, sizeof(int) * T);
        memcpy(r->tgt + (size_t)b * T, r->w + 1, sizeof(int) * T);
    }
    errno = 0;
    int bad_backward = 0;
    sparse_set_step(r->dp.m, step); /* the random sparse control's seed, the indexer's warm-up (nn/sparse.h) */
    double loss = dp_step(&r->dp, r->tok, r->tgt, T, &bad_backward);
    if (isnan(loss) && errno == ENOMEM) {
        /* not a divergence: the step never ran */
        snprintf(r->fail_reason, sizeof r->fail_reason, "out of memory in the forward pass of step %ld", step);
        r->status = "failed";
        return 1;
    }
    r->last_loss = loss;
    if (!isfinite(loss) || loss > c->diverge_loss) {
        r->status = "diverged";
        r->diverged_step = step;
        DB(store_metric(r->st, r->id, "train_loss", "", step, isfinite(loss) ? loss : -1));
        return 1;
    }
    if (bad_backward) {
        snprintf(r->fail_reason, sizeof r->fail_reason, "out of memory in the backward pass of step %ld", step);
        r->status = "failed";
        return 1;
    }
    r->opt.lr = lr_schedule(done, c->steps, c->warmup, c->lr, c->min_lr);
    double gn = adamw_step(&r->m.p, &r->opt, step);
    r->ts.train_time += util_now() - tstart;
    if (done > 0) {
        double med = running_median(r->ts.ring, done);
        if (loss > med + c->spike_threshold) {
            r->ts.spikes++;
            DB(store_metric(r->st, r->id, "spike", "", step, loss - med));
        }
    }
    r->ts.ring[done % 100] = loss;
    DB(store_metric(r->st, r->id, "train_loss", "", step, loss));
    DB(store_metric(r->st, r->id, "lr", "", step, r->opt.lr));
    DB(store_metric(r->st, r->id, "grad_norm", "", step, gn));
    int warm;
    double kl = dp_indexer_kl(&r->dp, &warm); /* NAN: no indexer, or it did not train (k >= T) */
    if (isfinite(kl)) DB(store_metric(r->st, r->id, "indexer_kl", warm ? "dense" : "selected", step, kl));
    r->ts.step = step;
    return 0;
}

/* The evaluation after update `step`, every train.eval_every steps and at
 * the last.  0, or 1 when it ran out of memory (the run is failed). */
static int train_eval(Run *r, long step, int last) {
    const Config *c = r->c;
    if (step % c->eval_every != 0 && !last) return 0;
    double vl;
    if (eval_and_store(r->st, r->id, &r->m, &r->pr, r->bbp, r->val, r->nval, r->B, r->T, r->tok, r->tgt, step, &vl)) {
        snprintf(r->fail_reason, sizeof r->fail_reason, "out of memory evaluating at step %ld", step);
        r->status = "failed";
        return 1;
    }
    r->last_val = vl;
    r->evaluated_last = last;
    if (!r->o->progress) fprintf(stderr, "step %ld/%d  train %.4f  val %.4f\n", step, c->steps, r->last_loss, vl);
    return 0;
}

/* The checkpoint after update `step` (it holds the model after `step`
 * updates), every train.checkpoint_every steps and when the run stops.  0,
 * or 1 when a write to the store failed. */
static int train_checkpoint(Run *r, long step, int stop) {
    const Config *c = r->c;
    if (!((c->checkpoint_every > 0 && step % c->checkpoint_every == 0) || stop)) return 0;
    /* every row up to this step is committed before the checkpoint names it done */
    DB(store_flush(r->st));
    if (db_errors) return 1;
    r->ckpt_ok = checkpoint_save(r->ckpt, r->json, store_db_id(r->st), &r->m.p, &r->ts, r->err, sizeof r->err) == 0;
    if (!r->ckpt_ok) fprintf(stderr, "gated train: %s\n", r->err);
    else test_kill_after_checkpoint(++r->nckpt);
    return 0;
}

/* Heartbeat and claim every 5 s; the progress line (a terminal: with the
 * last validation loss once there is one) or a plain line every 30 s.  0,
 * or 1 when a write to the store failed. */
static int train_report(Run *r, long step, int last) {
    const Config *c = r->c;
    double tnow = util_now();
    if (tnow - r->last_beat > 5) {
        DB(store_heartbeat(r->st, r->id));
        DB(store_claim_refresh(r->st, r->owner));
        r->last_beat = tnow;
        if (db_errors) return 1;
    }
    double tps = (double)step * r->n / (r->ts.train_time > 0 ? r->ts.train_time : 1);
    if (r->o->progress && (tnow - r->last_log > 0.2 || last)) {
        double eta = (c->steps - step) * (double)r->n / tps;
        char val[32] = "";
        if (!isnan(r->last_val)) snprintf(val, sizeof val, "  val %.4f", r->last_val);
        fprintf(stderr, "\rstep %ld/%d  loss %.4f%s  %.0f tok/s  ETA %.0fs   ", step, c->steps, r->last_loss, val, tps,
                eta);
        r->last_log = tnow;
    } else if (!r->o->progress && tnow - r->last_log > 30) {
        fprintf(stderr, "step %ld/%d  loss %.4f  %.0f tok/s\n", step, c->steps, r->last_loss, tps);
        r->last_log = tnow;
    }
    return 0;
}

/* The steps after ts.step up to train.steps; r->status says how they ended. */
static void train_loop(Run *r) {
    const Config *c = r->c;
    const TrainOpts *o = r->o;
    r->opt = (AdamW){c->lr, c->beta1, c->beta2, c->adam_eps, c->weight_decay, c->grad_clip};
    r->diverged_step = -1;
    r->t0 = r->last_beat = r->last_log = util_now();
    r->load_start = sysinfo_loadavg();
    r->last_loss = r->last_val = NAN;
    db_errors = 0;
    r->status = "finished";
    stop_signal = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (long step = r->ts.step + 1; step <= c->steps; step++) {
        if (train_step(r, step)) break;
        int last = step == c->steps;
        if (train_eval(r, step, last)) break;
        int stop = stop_signal || (o->stop_after > 0 && step >= o->stop_after && !last);
        if (train_checkpoint(r, step, stop) || train_report(r, step, last)) break;
        if (stop) {
            r->status = "killed";
            if (stop_signal)
                snprintf(r->stop_reason, sizeof r->stop_reason, "stopped by signal %d at step %ld", (int)stop_signal,
                         step);
            else
                snprintf(r->stop_reason, sizeof r->stop_reason, "stopped after %ld steps (--stop-after)", step);
            break;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (o->progress) fputc('\n', stderr);
}

/* A run that lost writes to the store ends failed, never finished with
 * holes.  Returns the exit code (1). */
static int end_db_failed(Run *r) {
    snprintf(r->err, sizeof r->err, "%d writes to %s failed (last: %s); results are incomplete", db_errors,
             r->o->db_path, store_errmsg(r->st));
    fprintf(stderr, "gated train: %s\n", r->err);
    store_run_end(r->st, r->id, "failed", r->err, -1);
    return 1;
}

/* A finished run: the rows committed, the final checkpoint, the test split
 * and the summary of losses; a diverged one says where.  GO, or 1 when the
 * test split ran out of memory (the run is failed). */
static int finish_result(Run *r) {
    if (r->diverged_step >= 0) {
        fprintf(stderr, "diverged at step %ld (loss %g)\n", r->diverged_step, r->last_loss);
        return GO;
    }
    DB(store_flush(r->st));
    if (db_errors == 0) {
        if (checkpoint_save(r->ckpt, r->json, store_db_id(r->st), &r->m.p, &r->ts, r->err, sizeof r->err)) {
            /* the results are complete, but nothing can evaluate or continue
             * the run: it ends failed (finish_summary), never finished */
            snprintf(r->fail_reason, sizeof r->fail_reason, "the final checkpoint could not be written: %.200s",
                     r->err);
            fprintf(stderr, "gated train: %s\n", r->err);
        } else
            test_kill_after_checkpoint(++r->nckpt);
    }
    double tl;
    if (evaluate(&r->m, r->test, r->ntest, r->B, r->T, r->tok, r->tgt, NULL, &tl)) {
        snprintf(r->fail_reason, sizeof r->fail_reason, "out of memory evaluating the test split");
        fprintf(stderr, "gated train: %s; the run is failed (--resume finishes it)\n", r->fail_reason);
        if (store_run_end(r->st, r->id, "failed", r->fail_reason, -1))
            fprintf(stderr, "gated train: %s: %s\n", r->o->db_path, store_errmsg(r->st));
        return 1;
    }
    Store *st = r->st;
    const char *id = r->id;
    DB(store_summary(st, id, "test_loss", "", tl, NULL));
    DB(store_summary(st, id, "test_ppl", "", exp(tl), NULL));
    DB(store_summary(st, id, "test_bpb", "", tl / log(2.0), NULL));
    double vl = r->last_val; /* the last step always evaluates */
    DB(store_summary(st, id, "val_loss", "", vl, NULL));
    DB(store_summary(st, id, "val_ppl", "", exp(vl), NULL));
    DB(store_summary(st, id, "val_bpb", "", vl / log(2.0), NULL));
    if (r->c->steps == 0)
        fprintf(stderr,
                "finished: no training steps (train.steps is 0); the initial weights give val loss %.4f (ppl "
                "%.3f, %.4f bits/byte), test loss %.4f\n",
                vl, exp(vl), vl / log(2.0), tl);
    else
        fprintf(stderr, "finished: val loss %.4f (ppl %.3f, %.4f bits/byte), test loss %.4f\n", vl, exp(vl),
                vl / log(2.0), tl);
    return GO;
}

/* The cost summaries and the run's end.  Returns the exit code. */
static int finish_summary(Run *r) {
    Store *st = r->st;
    const char *id = r->id;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double tps = r->ts.train_time > 0 ? (double)r->ts.step * r->n / r->ts.train_time : 0;
    DB(store_summary(st, id, "spikes", "", (double)r->ts.spikes, NULL));
    DB(store_summary(st, id, "tokens_per_s", "", tps, NULL));
    DB(store_summary(st, id, "peak_rss_mib", "", ru.ru_maxrss / 1024.0, NULL));
    DB(store_summary(st, id, "wall_s", "", util_now() - r->t0, NULL)); /* this process only */
    /* what else ran beside it: tokens_per_s is not a benchmark (the report says so) */
    double load_end = sysinfo_loadavg();
    if (!isnan(r->load_start)) DB(store_summary(st, id, "load_start", "", r->load_start, NULL));
    if (!isnan(load_end)) DB(store_summary(st, id, "load_end", "", load_end, NULL));
    if (sysinfo_cpus() > 0) DB(store_summary(st, id, "cpus_online", "", (double)sysinfo_cpus(), NULL));
    DB(store_summary(st, id, "params", "", (double)r->m.p.total, NULL));
    DB(store_summary(st, id, "gate_params", "", (double)model_gate_params(&r->m), NULL));
    if (db_errors) return end_db_failed(r);
    if (r->fail_reason[0] && strcmp(r->status, "finished") == 0) { /* the final checkpoint */
        fprintf(stderr,
                "gated train: %s; the run is failed: its results are stored, and --resume makes it again from its "
                "last checkpoint (or from the start)\n",
                r->fail_reason);
        if (store_run_end(st, id, "failed", r->fail_reason, -1))
            fprintf(stderr, "gated train: %s: %s\n", r->o->db_path, store_errmsg(st));
        return 1;
    }
    if (store_run_end(st, id, r->status, NULL, r->diverged_step)) {
        fprintf(stderr, "gated train: %s: %s\n", r->o->db_path, store_errmsg(st));
        return 1;
    }
    printf("%s\n", id);
    return 0;
}

/* After the loop: the last evaluation when the loop did not make it
 * (train.steps = 0, or resumed from the final checkpoint), then the run's
 * end by its status.  Returns the exit code. */
static int train_finish(Run *r) {
    if (strcmp(r->status, "finished") == 0 && !db_errors && !r->evaluated_last) {
        if (eval_and_store(r->st, r->id, &r->m, &r->pr, r->bbp, r->val, r->nval, r->B, r->T, r->tok, r->tgt, (long)r->ts.step,
                           &r->last_val)) {
            snprintf(r->fail_reason, sizeof r->fail_reason, "out of memory evaluating at step %lld",
                     (long long)r->ts.step);
            r->status = "failed";
        }
    }
    if (db_errors) return end_db_failed(r);
    if (strcmp(r->status, "failed") == 0) {
        fprintf(stderr, "gated train: %s; the run is failed%s\n", r->fail_reason,
                r->ckpt_ok || r->resumed ? " (--resume continues from its last checkpoint)" : "");
        if (store_run_end(r->st, r->id, "failed", r->fail_reason, -1))
            fprintf(stderr, "gated train: %s: %s\n", r->o->db_path, store_errmsg(r->st));
        return 1;
    }
    if (strcmp(r->status, "killed") == 0) {
        if (r->ckpt_ok)
            fprintf(stderr, "%s; checkpoint %s (continue with --resume)\n", r->stop_reason, r->ckpt);
        else
            fprintf(stderr, "%s; no checkpoint could be written, a rerun starts over\n", r->stop_reason);
        store_run_end(r->st, r->id, "killed", r->stop_reason, -1);
        return stop_signal ? 128 + stop_signal : 0; /* as a shell reports a signal's kill: 130 for SIGINT */
    }
    int rc = finish_result(r);
    return rc == GO ? finish_summary(r) : rc;
}

static void run_free(Run *r) {
    free(r->json);
    store_close(r->st);
    probes_free(&r->pr);
    dp_free(&r->dp);
    model_free(&r->m);
    free(r->tok), free(r->tgt), free(r->w), free(r->val), free(r->test);
    corpus_free(&r->corp);
    bb_free(&r->bb);
}

int train_run(const Config *c, const TrainOpts *o) {
    ops_set_threads(c->threads); /* the one place thread counts are set for a run */
    Run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.o = o;
    int rc = open_corpus(&r);
    if (rc == GO) rc = open_model(&r);
    if (rc == GO) rc = open_store(&r);
    if (rc == GO) rc = open_resume(&r);
    if (rc == GO) rc = open_claim(&r);
    if (rc == GO) {
        train_loop(&r);
        rc = train_finish(&r);
    }
    run_free(&r);
    return rc;
}
