/* eval.c — see eval.h. */
#include "run/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "run/data.h"
#include "run/probes.h"
#include "nn/rope.h"
#include "run/store.h"
#include "util/util.h"

int trained_locate(const char *arg, const char *db_path, const char *ckpt_dir, int check_file, Config *cfg,
                   char *path, size_t pcap, char id[17], char *err, size_t cap) {
    struct stat sb;
    char *json = NULL, e[1024];
    int is_file = stat(arg, &sb) == 0 && S_ISREG(sb.st_mode), rc = 2;
    Store *st = NULL;
    if ((!is_file || check_file) && store_open_ro(&st, db_path, e, sizeof e)) {
        if (is_file)
            snprintf(err, cap, "%s", e);
        else
            snprintf(err, cap, "%s is not a checkpoint file, and %s", arg, e);
        return 2;
    }
    if (is_file) {
        snprintf(path, pcap, "%s", arg);
    } else {
        char rid[17];
        if (store_find_run(st, arg, rid, NULL)) {
            snprintf(err, cap, "%s is not a checkpoint file, and %s", arg, store_errmsg(st));
            goto out;
        }
        if (!store_run_id_valid(rid)) { /* a merged database may hold anything; this becomes a path */
            char q[64];
            snprintf(err, cap, "%s: run id \"%s\" is not 16 hex digits; no checkpoint is looked up", db_path,
                     store_escape(rid, q, sizeof q));
            goto out;
        }
        /* beside the database (where gated sweep and train put them), else
         * ./checkpoints, where gated train put them before */
        char dir[4096];
        if (ckpt_dir)
            snprintf(dir, sizeof dir, "%s", ckpt_dir);
        else
            checkpoint_default_dir(db_path, dir, sizeof dir);
        checkpoint_locate(st, dir, !ckpt_dir, rid, path, pcap);
    }
    int r = checkpoint_read(path, &json, NULL, NULL, err, cap);
    if (r == 0) snprintf(err, cap, "%s: no checkpoint (the run never finished or saved one)", path);
    if (r <= 0) goto out;
    ConfigError ce;
    config_defaults(cfg);
    if (config_from_json(cfg, json, &ce) || config_resolve(cfg, &ce)) {
        snprintf(err, cap, "%s: its configuration: %s", path, ce.msg);
        goto out;
    }
    store_run_id(json, id);
    /* the one check of every reader (checkpoint.h): this database's run */
    rc = st && checkpoint_check(path, st, id, err, cap) ? 2 : 0;
out:
    free(json);
    store_close(st);
    return rc;
}

int trained_load_weights(Model *m, const Config *cfg, const char *arg, const char *db_path, const char *ckpt_dir, long *steps, char *err,
                         size_t cap) {
    Config src;
    char path[4096], id[17], why[700], e[1024];
    int rc = trained_locate(arg, db_path, ckpt_dir, 0, &src, path, sizeof path, id, err, cap);
    if (rc) return rc;
    if (!config_same_architecture(cfg, &src, why, sizeof why)) {
        snprintf(err, cap, "train.init_from: %s: another architecture: %s", path, why);
        return 2;
    }
    TrainState ts;
    char *json = NULL;
    if (checkpoint_read(path, &json, &m->p, &ts, e, sizeof e) <= 0) {
        snprintf(err, cap, "train.init_from: %s", e);
        return 2;
    }
    free(json);
    memset(m->p.m, 0, sizeof(real) * m->p.total);
    memset(m->p.v, 0, sizeof(real) * m->p.total);
    if (steps) *steps = (long)ts.step;
    return 0;
}

/* Mean loss and F-Attn over windows (count x (T+1)), one window per forward. */
static int eval_windows(Model *m, const int *win, int count, int T, double *loss, double *fattn) {
    Probes pr;
    if (probes_init(&pr, m)) return -1;
    double sum = 0;
    for (int w = 0; w < count; w++) {
        const int *x = win + (size_t)w * (T + 1);
        double l = model_forward(m, x, x + 1, 1, T);
        if (isnan(l)) {
            probes_free(&pr);
            return -1;
        }
        sum += l;
        probes_accumulate(&pr, m);
    }
    double f = 0;
    for (int l = 0; l < m->L; l++) f += probe_fattn(&pr, l);
    probes_free(&pr);
    *loss = sum / count;
    *fattn = f / m->L;
    return 0;
}

/* The windows of split sp at length L (*win, heap): their count, or minus
 * the exit code (message printed): -1 out of memory, -2 no document that long. */
static int length_windows(const TokenSplit *sp, const char *split, int L, int windows, int **win) {
    int n = split_doc_windows(sp, L, windows, win);
    if (n < 0) fprintf(stderr, "gated eval: out of memory\n");
    if (n == 0) fprintf(stderr, "gated eval: --lengths %d: no %s document is that long\n", L, split);
    return n < 0 ? -1 : n == 0 ? -2 : n;
}

/* One split at one length L: its windows, RoPE scaled for L, loss and
 * F-Attn, stored in the run's rows and printed.  0, or the exit code. */
static int eval_length(Model *m, Store *st, const Config *cfg, const char *id, long steps, const TokenSplit *sp,
                       const char *split, int L, const EvalOpts *o) {
    int *win = NULL, Ltrain = cfg->seq_len;
    int n = length_windows(sp, split, L, o->windows, &win);
    if (n <= 0) return -n;
    RopeScaling r = rope_of_config(cfg);
    r.kind = o->scaling;
    r.train_len = Ltrain;
    r.factor = o->scaling == ROPE_NONE ? 1 : o->factor > 0 ? o->factor : L > Ltrain ? (double)L / Ltrain : 1;
    model_set_rope(m, &r);
    double t0 = util_now(), loss, fattn;
    if (o->progress)
        fprintf(stderr, "\r%s L=%d %s s=%g: %d windows ...", split, L, rope_scaling_names[r.kind], r.factor, n);
    int bad = eval_windows(m, win, n, L, &loss, &fattn);
    free(win);
    if (bad) {
        fprintf(stderr, "gated eval: out of memory at length %d\n", L);
        return 1;
    }
    if (o->progress) fprintf(stderr, "\r%*s\r", 60, "");
    char ctx[160];
    snprintf(ctx, sizeof ctx, "split=%s,len=%d,scaling=%s,factor=%g", split, L, rope_scaling_names[r.kind], r.factor);
    const char *const *k = store_eval_keys; /* eval_loss, eval_ppl, eval_f_attn, eval_windows */
    bad = store_metric(st, id, k[0], ctx, steps, loss) | store_metric(st, id, k[1], ctx, steps, exp(loss)) |
          store_metric(st, id, k[2], ctx, steps, fattn) | store_metric(st, id, k[3], ctx, steps, n) | store_flush(st);
    if (bad) {
        fprintf(stderr, "gated eval: %s: %s\n", o->db_path, store_errmsg(st));
        return 1;
    }
    printf("%s  %-5s len %6d (%5.2gx)  %-6s s=%-6g loss %.4f  ppl %9.3f  F-Attn %.4f  windows %d  %.1fs\n", id, split,
           L, (double)L / Ltrain, rope_scaling_names[r.kind], r.factor, loss, exp(loss), fattn, n, util_now() - t0);
    fflush(stdout);
    return 0;
}

/* ------------------------------------------- quantization and dropped heads */

/* The infer_* rows of one scheme (h: the drop state, NULL for a
 * quantization) and its line on stdout.  0, or 1 (store failure). */
static int infer_store(Store *st, const char *db, const char *id, long steps, const char *ctx, double loss, int n,
                       const InferHook *h, const Model *m, double total_flops) {
    int bad = store_metric(st, id, "infer_loss", ctx, steps, loss) |
              store_metric(st, id, "infer_ppl", ctx, steps, exp(loss)) |
              store_metric(st, id, "infer_windows", ctx, steps, n);
    double frac = 0;
    if (h) {
        long long d = 0, p = 0;
        for (int l = 0; l < m->L; l++) d += h->dropped[l], p += h->pairs[l];
        frac = p ? (double)d / p : 0;
        bad |= store_metric(st, id, "infer_drop", ctx, steps, frac) |
               store_metric(st, id, "infer_flops_wo", ctx, steps, h->flops_wo / total_flops) |
               store_metric(st, id, "infer_flops_attn", ctx, steps, h->flops_attn / total_flops);
    }
    if (bad | store_flush(st)) {
        fprintf(stderr, "gated eval: %s: %s\n", db, store_errmsg(st));
        return 1;
    }
    if (h)
        printf("%s  %-36s loss %.4f  ppl %9.3f  dropped %.4f  FLOPs saved %.4f (wo) %.4f (wo+attn)  windows %d\n", id,
               ctx, loss, exp(loss), frac, h->flops_wo / total_flops, h->flops_attn / total_flops, n);
    else
        printf("%s  %-36s loss %.4f  ppl %9.3f  windows %d\n", id, ctx, loss, exp(loss), n);
    fflush(stdout);
    return 0;
}

/* Reset h's counters for a new selection rule. */
static void infer_reset(InferHook *h, int L, int sel) {
    memset(h->dropped, 0, sizeof *h->dropped * (size_t)L);
    memset(h->pairs, 0, sizeof *h->pairs * (size_t)L);
    h->flops_wo = h->flops_attn = 0;
    h->sel = sel;
    h->abits = 0;
    h->measure = 0;
    memset(h->in_max, 0, sizeof h->in_max);
    memset(h->tok_sum, 0, sizeof h->tok_sum);
    memset(h->tok_n, 0, sizeof h->tok_n);
}

/* The drop=entropy control reads a softmax row (infer_attn_entropy: lse -
 * sum p s): refused, with a note, where rows do not sum to 1. */
static int no_entropy(const Model *m, const char *id) {
    const AttnNormDef *a = &attn_norms[m->cfg.attn.normalizer];
    if (a->sums_to_one) return 0;
    fprintf(stderr, "gated eval: %s: model.attention.normalizer %s: its rows do not sum to 1, so they have no "
            "attention entropy: drop=entropy skipped\n", id, a->name);
    return 1;
}

/* One split at length L under every quantization scheme and drop rule of
 * o (infer.h).  0, or the exit code. */
static int infer_length(Model *m, Store *st, const Config *cfg, const char *id, long steps, const TokenSplit *sp,
                        const char *split, int L, const EvalOpts *o) {
    int *win = NULL, rc = 0;
    int n = length_windows(sp, split, L, o->windows, &win);
    if (n <= 0) return -n;
    RopeScaling r = rope_of_config(cfg); /* as trained: no scaling */
    model_set_rope(m, &r);
    double fwd, train;
    model_flops(m, L, &fwd, &train);
    double total = fwd * L * n, loss;
    char ctx[200], name[64];
    InferHook h;
    real *w0 = NULL;
    double *frac = malloc(sizeof *frac * (size_t)m->L);
    int *counts = malloc(sizeof *counts * (size_t)n * m->L); /* the gate rule's, per (window, layer) */
    if (!frac || !counts || infer_hook_init(&h, m->L)) {
        free(frac);
        free(counts);
        free(win);
        fprintf(stderr, "gated eval: out of memory\n");
        return 1;
    }
    if (o->nquant && !(w0 = malloc(sizeof(real) * m->p.total))) rc = -1;
    if (w0) memcpy(w0, m->p.w, sizeof(real) * m->p.total);
    /* the float reference first (also for drop rules alone), then each
     * scheme from the float weights */
    for (int q = -1; q < o->nquant && rc == 0; q++) {
        const QuantSpec fl = {0}, *qs = q < 0 ? &fl : &o->quant[q];
        if (w0) memcpy(m->p.w, w0, sizeof(real) * m->p.total);
        if (infer_quant_weights(m, qs)) fprintf(stderr, "gated eval: %s: a weight block is not finite; left unquantized\n", id);
        infer_reset(&h, m->L, SEL_NONE);
        h.abits = qs->abits, h.agran = qs->agran;
        /* the float pass measures what reaches each linear layer (the hook
         * returns its input unchanged: the float forward, bit for bit) */
        h.measure = q < 0;
        quant_spec_name(qs, name, sizeof name);
        snprintf(ctx, sizeof ctx, "split=%s,len=%d,quant=%s", split, L, name);
        if (o->progress) fprintf(stderr, "\r%s ...%*s", ctx, 10, "");
        rc = infer_windows_loss(m, &h, win, n, L, &loss);
        if (o->progress) fprintf(stderr, "\r%*s\r", 60, "");
        if (h.nonfinite) fprintf(stderr, "gated eval: %s: %s: %ld activation blocks not finite, left unquantized\n", id, ctx, h.nonfinite);
        if (rc == 0) rc = infer_store(st, o->db_path, id, steps, ctx, loss, n, NULL, m, total);
        for (int k = 0; q < 0 && rc == 0 && k < LIN__COUNT; k++) {
            char sc[200];
            snprintf(sc, sizeof sc, "split=%s,len=%d,site=%s", split, L, lin_site_names[k]);
            double mean = h.tok_n[k] ? h.tok_sum[k] / (double)h.tok_n[k] : NAN;
            if (store_metric(st, id, "infer_in_max", sc, steps, h.in_max[k]) |
                store_metric(st, id, "infer_in_outlier", sc, steps, mean > 0 ? h.in_max[k] / mean : NAN) |
                store_flush(st)) {
                fprintf(stderr, "gated eval: %s: %s\n", o->db_path, store_errmsg(st));
                rc = 1;
            }
        }
        h.measure = 0;
    }
    if (w0) memcpy(m->p.w, w0, sizeof(real) * m->p.total);
    int noted = 0;
    for (int d = 0; d < o->ndrop && rc == 0; d++) {
        const DropSpec *ds = &o->drop[d];
        int gate = ds->kind == DROP_GATE;
        if (gate && !infer_has_g1_gate(m)) {
            if (!noted++) fprintf(stderr, "gated eval: %s has no multiplicative G1 gate: drop=gate rules skipped\n", id);
            continue;
        }
        for (int sel = gate ? SEL_GATE : SEL_RANDOM; sel < SEL__COUNT && rc == 0; sel++) {
            if (sel == SEL_ENTROPY && no_entropy(m, id)) continue;
            infer_reset(&h, m->L, sel);
            h.tau = ds->v;
            for (int l = 0; l < m->L; l++) frac[l] = ds->v;
            h.frac = frac;
            /* the gate rule records its count per (window, layer); its
             * matched controls drop exactly as many there */
            h.record = sel == SEL_GATE ? counts : NULL;
            h.match = gate && sel != SEL_GATE ? counts : NULL;
            char num[40];
            snprintf(ctx, sizeof ctx, "split=%s,len=%d,drop=%s,%s=%s", split, L, drop_sel_names[sel],
                     gate ? "tau" : "frac", util_fmt_double(ds->v, num, sizeof num));
            if (o->progress) fprintf(stderr, "\r%s ...%*s", ctx, 10, "");
            rc = infer_windows_loss(m, &h, win, n, L, &loss);
            if (o->progress) fprintf(stderr, "\r%*s\r", 60, "");
            if (rc == 0) rc = infer_store(st, o->db_path, id, steps, ctx, loss, n, &h, m, total);
        }
    }
    if (rc < 0) {
        if (rc == -2)
            fprintf(stderr, "gated eval: %s: %s: a logit is not finite; nothing stored for it\n", id, ctx);
        else
            fprintf(stderr, "gated eval: out of memory at length %d\n", L);
        rc = 1;
    }
    free(counts);
    infer_hook_free(&h);
    free(w0);
    free(frac);
    free(win);
    return rc;
}

int eval_run(const char *arg, const EvalOpts *o) {
    Config cfg;
    char path[4096], id[17], err[1024];
    int rc = trained_locate(arg, o->db_path, o->ckpt_dir, 1, &cfg, path, sizeof path, id, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gated eval: %s\n", err);
        return rc;
    }
    if (cfg.corpus == CORPUS_BB) {
        fprintf(stderr,
                "gated eval: %s was trained on data.corpus bb (Bigram-Backcopy); long-context evaluation needs a "
                "text corpus\n",
                arg);
        return 2;
    }
    Corpus corp;
    memset(&corp, 0, sizeof corp);
    if (cfg.corpus == CORPUS_SYNTHETIC ? corpus_synthetic(&corp, (uint64_t)cfg.seed, 200, 4000)
                                       : corpus_load_brown(&corp, o->data_dir, err, sizeof err)) {
        fprintf(stderr, "gated eval: %s\n", cfg.corpus == CORPUS_SYNTHETIC ? "out of memory" : err);
        return cfg.corpus == CORPUS_SYNTHETIC ? 1 : 2;
    }
    Model m;
    Store *st = NULL;
    ModelCfg mc = config_model(&cfg);
    if (model_init(&m, &mc)) {
        fprintf(stderr, "gated eval: out of memory for the model\n");
        corpus_free(&corp);
        return 1;
    }
    TrainState ts;
    char *json = NULL;
    char found[17];
    int got = checkpoint_read(path, &json, &m.p, &ts, err, sizeof err);
    free(json); /* NULL unless read */
    if (got <= 0) {
        fprintf(stderr, "gated eval: %s\n", err);
        rc = 2;
    } else if (store_open(&st, o->db_path, err, sizeof err)) {
        fprintf(stderr, "gated eval: %s\n", err);
        rc = 2;
    } else if (store_find_run(st, id, found, NULL)) {
        fprintf(stderr, "gated eval: %s: run %s (of %s) is not in this database; use the --db it was trained with\n",
                o->db_path, id, path);
        rc = 2;
    }
    int infer = o->nquant || o->ndrop, nl = o->nlengths ? o->nlengths : infer ? 1 : 0;
    for (int q = 0; q < 2 && rc == 0; q++) {
        if (!(q == 0 ? o->val : o->test)) continue;
        const TokenSplit *sp = q == 0 ? &corp.val : &corp.test;
        for (int i = 0; i < nl && rc == 0; i++) {
            int L = o->nlengths ? o->lengths[i] : cfg.seq_len;
            rc = infer ? infer_length(&m, st, &cfg, id, (long)ts.step, sp, q == 0 ? "val" : "test", L, o)
                       : eval_length(&m, st, &cfg, id, (long)ts.step, sp, q == 0 ? "val" : "test", L, o);
        }
    }
    store_close(st);
    model_free(&m);
    corpus_free(&corp);
    return rc;
}
