/*
 * test_train.c — training, probes, resume, killed runs, bad input.
 *
 * In-process runs use the synthetic corpus (hermetic); the CLI tests run
 * $GATED_BIN and are skipped when it is unset.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/model.h"
#include "nn/optim.h"
#include "run/codever.h"
#include "run/eval.h"
#include "run/probes.h"
#include "run/store.h"
#include "testutil.h"
#include "run/train.h"
#include "util/util.h"

/* ------------------------------------------------------------ helpers */



/* Values of metric key (context '') ordered by step; returns the count. */
static int metric_series(const char *db, const char *key, double *out, int cap) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT value FROM metrics WHERE key = ?1 AND context = '' ORDER BY step", -1,
                                    &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < cap) out[n++] = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

/* The distinct steps at which key has rows (any context) in table
 * (metrics or histograms), "1,2,3" (malloc'd; "" when none). */
static char *steps_of(const char *db, const char *table, const char *key) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    const char *sql = strcmp(table, "histograms") == 0
                          ? "SELECT DISTINCT step FROM histograms WHERE key = ?1 ORDER BY step"
                          : "SELECT DISTINCT step FROM metrics WHERE key = ?1 ORDER BY step";
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    char *out = calloc(4096, 1);
    cr_assert_not_null(out);
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 4000)
        n += (size_t)snprintf(out + n, 4096 - n, "%s%lld", n ? "," : "", sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

static void assert_steps(const char *db, const char *table, const char *key, const char *want, const char *what) {
    char *got = steps_of(db, table, key);
    cr_assert_str_eq(got, want, "%s: %s %s at steps %s, want %s", what, table, key, got, want);
    free(got);
}

/* The one run of db: its id (17 bytes) and runs.diverged_step (-1 NULL). */
static long long run_of(const char *db, char id[17]) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT run_id, diverged_step FROM runs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(id, 17, "%s", (const char *)sqlite3_column_text(st, 0));
    long long d = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "one run expected");
    sqlite3_finalize(st);
    sqlite3_close(h);
    return d;
}

/* The steps `gated ls` shows for db's one run, and the step its checkpoint
 * (in dir) holds. */
static void ls_and_checkpoint_steps(const Config *c, const char *db, const char *dir, long long *ls, long *ckpt) {
    Store *s;
    char err[512];
    cr_assert_eq(store_open_ro(&s, db, err, sizeof err), 0, "%s", err);
    StoreRunList l;
    cr_assert_eq(store_list_runs(s, &l), 0, "%s", store_errmsg(s));
    cr_assert_eq(l.n, 1);
    cr_assert(l.rows[0].has_steps);
    *ls = l.rows[0].steps;
    char id[17];
    snprintf(id, sizeof id, "%s", l.rows[0].run_id);
    store_run_list_free(&l);
    store_close(s);
    Model m;
    cr_assert_eq(cfg_model_init(&m, c), 0);
    cr_assert_eq(trained_load_weights(&m, c, id, db, dir, ckpt, err, sizeof err), 0, "%s", err);
    model_free(&m);
}

static int run_quiet(const Config *c, TrainOpts *o) {
    /* the run prints its id on stdout */
    int saved = quiet_begin();
    int rc = train_run(c, o);
    quiet_end(saved);
    return rc;
}

/* ------------------------------------------------------------ training */

Test(train, synthetic_corpus_loss_falls, .timeout = 120) {
    set_threads(1);
    char dir[64], db[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    Config c = synth_config(40);
    c.eval_every = 4;
    resolve_or_die(&c);
    TrainOpts o = {db, "synth", "data", "test", 0, 0, dir, 0, 0};
    cr_assert_eq(run_quiet(&c, &o), 0);
    double v[16];
    int n = metric_series(db, "val_loss", v, 16);
    cr_assert_eq(n, 10, "expected 10 evaluations, got %d", n);
    cr_assert(v[9] < v[0] - 0.5, "val loss did not fall: %.4f -> %.4f", v[0], v[9]);
    cr_assert(v[0] < log(257.0) + 0.5);
}

/* c (25 steps) run whole into DIR/a.db, and stopped after 12 steps then
 * resumed into DIR/b.db: every step's loss bitwise the same. */
static void check_resume(Config c, char *dir, size_t dcap) {
    set_threads(1);
    char a[128], b[128], cka[128], ckb[128];
    test_tmpdir(dir, dcap);
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(b, sizeof b, "%s/b.db", dir);
    snprintf(cka, sizeof cka, "%s/cka", dir);
    snprintf(ckb, sizeof ckb, "%s/ckb", dir);
    resolve_or_die(&c);
    cr_assert_eq(c.steps, 25);
    TrainOpts full = {a, "full", "data", "test", 0, 0, cka, 0, 0};
    cr_assert_eq(run_quiet(&c, &full), 0);
    TrainOpts part = {b, "part", "data", "test", 0, 0, ckb, 12, 0};
    cr_assert_eq(run_quiet(&c, &part), 0);
    double la[32], lb[32];
    cr_assert_eq(metric_series(b, "train_loss", lb, 32), 12, "the interrupted run stops after 12 steps");
    TrainOpts rest = {b, "part", "data", "test", 0, 1, ckb, 0, 0};
    cr_assert_eq(run_quiet(&c, &rest), 0);
    int na = metric_series(a, "train_loss", la, 32), nb = metric_series(b, "train_loss", lb, 32);
    cr_assert_eq(na, 25);
    cr_assert_eq(nb, 25);
    char *sa = steps_of(a, "metrics", "train_loss"), *sb = steps_of(b, "metrics", "train_loss");
    cr_assert_str_eq(sb, sa, "resumed at other steps than the uninterrupted run");
    cr_assert_str_eq(sa, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25");
    free(sa), free(sb);
    for (int i = 0; i < 25; i++)
        cr_assert(memcmp(&la[i], &lb[i], sizeof(double)) == 0, "step %d: %.17g uninterrupted vs %.17g resumed", i,
                  la[i], lb[i]);
    cr_assert_eq(metric_series(a, "val_loss", la, 32), metric_series(b, "val_loss", lb, 32));
    cr_assert(memcmp(la, lb, sizeof(double) * 3) == 0);
    assert_steps(b, "metrics", "val_loss", "10,20,25", "resumed");
}

/* Steps count optimizer updates from 1 (README, "Steps"): every kind of row
 * of a 6-step run, one stopped after 4 and resumed, and one that diverges
 * at its first update. */
Test(train, steps_count_updates_from_1_for_every_metric_kind, .timeout = 120) {
    set_threads(1);
    char dir[64], db[128], stopped[128], div[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(stopped, sizeof stopped, "%s/s.db", dir);
    snprintf(div, sizeof div, "%s/d.db", dir);
    Config c = synth_config(6);
    c.eval_every = 3;
    c.gate.position = GP_SDPA; /* gate metrics and histograms too */
    resolve_or_die(&c);
    c.spike_threshold = -1e9; /* out of the schema's range on purpose: every update after the first is a spike */
    TrainOpts o = {db, "steps", "data", "test", 0, 0, dir, 0, 0};
    cr_assert_eq(run_quiet(&c, &o), 0);

    static const char *const per_update[] = {"train_loss", "lr", "grad_norm"};
    for (int i = 0; i < 3; i++) assert_steps(db, "metrics", per_update[i], "1,2,3,4,5,6", "whole run");
    assert_steps(db, "metrics", "spike", "2,3,4,5,6", "whole run"); /* update 1 has no previous losses */
    static const char *const per_eval[] = {"val_loss", "val_ppl", "val_bpb", "f_attn", "m_act", "gate_mean",
                                           "sink_heads", "f_attn_rel", "sparsity_after_lt_1e-2"};
    for (int i = 0; i < (int)(sizeof per_eval / sizeof *per_eval); i++)
        assert_steps(db, "metrics", per_eval[i], "3,6", "whole run");
    assert_steps(db, "histograms", "gate", "3,6", "whole run");
    /* no other key, and nothing outside 1..6 */
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT count(*) FROM metrics WHERE step NOT IN (3, 6) AND key NOT IN"
                                    " ('train_loss', 'lr', 'grad_norm', 'spike')",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int64(st, 0), 0, "an evaluation row outside steps 3 and 6");
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* the values sit at their update: lr of step s is the schedule's for
     * update s (index s - 1), spike of step s is train_loss(s) less the
     * median of the losses of steps 1 .. s - 1 */
    double lr[8], loss[8], spike[8];
    cr_assert_eq(metric_series(db, "lr", lr, 8), 6);
    cr_assert_eq(metric_series(db, "train_loss", loss, 8), 6);
    cr_assert_eq(metric_series(db, "spike", spike, 8), 5);
    for (int s = 1; s <= 6; s++) {
        double want = lr_schedule(s - 1, c.steps, c.warmup, c.lr, c.min_lr);
        cr_assert(lr[s - 1] == want, "lr at step %d: %.9g, want %.9g", s, lr[s - 1], want);
    }
    for (int s = 2; s <= 6; s++) {
        double want = loss[s - 1] - util_median(loss, s - 1);
        cr_assert(spike[s - 2] == want, "spike at step %d: %.9g, want %.9g", s, spike[s - 2], want);
    }
    /* stopped after 4 updates: ls and the checkpoint say 4; the resumed run
     * goes on with step 5, losing and repeating nothing (a checkpoint's
     * config must be valid: the schema's spike threshold) */
    Config v = c;
    v.spike_threshold = 0.3;
    char ck2[128];
    snprintf(ck2, sizeof ck2, "%s/ck2", dir);
    TrainOpts part = {stopped, "steps", "data", "test", 0, 0, ck2, 4, 0};
    cr_assert_eq(run_quiet(&v, &part), 0);
    assert_steps(stopped, "metrics", "train_loss", "1,2,3,4", "stopped after 4");
    assert_steps(stopped, "metrics", "val_loss", "3", "stopped after 4");
    long long ls;
    long ck;
    ls_and_checkpoint_steps(&v, stopped, ck2, &ls, &ck);
    cr_assert_eq(ls, 4, "ls shows %lld steps for a run stopped after 4", ls);
    cr_assert_eq(ck, 4, "the checkpoint of a run stopped after 4 holds %ld updates", ck);
    TrainOpts rest = {stopped, "steps", "data", "test", 0, 1, ck2, 0, 0};
    cr_assert_eq(run_quiet(&v, &rest), 0);
    for (int i = 0; i < 3; i++) assert_steps(stopped, "metrics", per_update[i], "1,2,3,4,5,6", "resumed");
    assert_steps(stopped, "metrics", "val_loss", "3,6", "resumed");
    assert_steps(stopped, "histograms", "gate", "3,6", "resumed");
    ls_and_checkpoint_steps(&v, stopped, ck2, &ls, &ck);
    cr_assert_eq(ls, 6, "ls shows %lld steps", ls);
    cr_assert_eq(ck, 6, "the final checkpoint holds %ld updates", ck);

    /* diverging at the first update: diverged_step 1, its loss at step 1 */
    Config d = v;
    d.diverge_loss = 1;
    TrainOpts od = {div, "div", "data", "test", 0, 0, dir, 0, 0};
    cr_assert_eq(run_quiet(&d, &od), 0);
    char id[17];
    cr_assert_eq(run_of(div, id), 1);
    assert_steps(div, "metrics", "train_loss", "1", "diverged");
}

/* On a terminal the progress line shows the last validation loss once
 * there is one. */
Test(train, progress_line_shows_the_validation_loss, .timeout = 120) {
    set_threads(1);
    char dir[64], db[128], log[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(log, sizeof log, "%s/err.log", dir);
    Config c = synth_config(4);
    c.eval_every = 2;
    resolve_or_die(&c);
    TrainOpts o = {db, "tty", "data", "test", 1, 0, dir, 0, 0};
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = run_quiet(&c, &o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(rc, 0);
    char *text = test_read_file(log, NULL);
    const char *last = strstr(text, "\rstep 4/4");
    cr_assert_not_null(last, "no progress line for step 4: %s", text);
    size_t len = strcspn(last + 1, "\r\n");
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), last + 1);
    double v[4];
    cr_assert_eq(metric_series(db, "val_loss", v, 4), 2);
    char want[64];
    snprintf(want, sizeof want, "  val %.4f  ", v[1]);
    cr_assert_not_null(strstr(line, want), "progress line \"%s\" lacks \"%s\"", line, want);
    free(text);
}

Test(train, resume_is_bitwise_identical, .timeout = 120) {
    char dir[64];
    check_resume(synth_config(25), dir, sizeof dir);
}

/* "step:context:value" of every indexer_kl row of db, in step order (malloc'd). */
static char *indexer_kl_rows(const char *db) {
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT step, context, printf('%.17g', value) FROM metrics"
                                    " WHERE key = 'indexer_kl' ORDER BY step, context",
                                    -1, &st, NULL),
                 SQLITE_OK);
    char *out = calloc(8192, 1);
    cr_assert_not_null(out);
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 8000)
        n += (size_t)snprintf(out + n, 8192 - n, "%lld:%s:%s\n", sqlite3_column_int64(st, 0),
                              (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/* A top-k model with the lightning indexer, two micro-batches a step:
 * every step stores the indexer's KL (context `dense` in its 5-step warm-up,
 * `selected` after), finite and >= 0, and a run stopped after 12 steps and
 * resumed repeats the uninterrupted run's losses and KLs bit for bit. */
Test(train, indexer_kl_every_step_and_resumes, .timeout = 120) {
    Config c = synth_config(25);
    c.micro_batch = 2;
    c.attn.sparse = AS_INDEXER;
    c.attn.topk = 4;
    c.attn.idx_heads = 2;
    c.attn.idx_dim = 8;
    c.attn.idx_warmup = 5;
    char dir[64], a[128], b[128];
    check_resume(c, dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(b, sizeof b, "%s/b.db", dir);
    assert_steps(a, "metrics", "indexer_kl", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25",
                 "indexer run");
    char *ra = indexer_kl_rows(a), *rb = indexer_kl_rows(b);
    double kl1 = NAN;
    cr_assert_str_eq(rb, ra, "the resumed run's KLs differ from the uninterrupted run's");
    int rows = 0;
    for (char *line = strtok(ra, "\n"); line; line = strtok(NULL, "\n"), rows++) {
        long step;
        char ctx[16];
        double v;
        cr_assert_eq(sscanf(line, "%ld:%15[^:]:%lf", &step, ctx, &v), 3, "%s", line);
        cr_assert_str_eq(ctx, step <= 5 ? "dense" : "selected", "step %ld", step);
        cr_assert(isfinite(v) && v > 0, "step %ld: KL %g", step, v);
        if (step == 1) kl1 = v;
    }
    cr_assert_eq(rows, 25);
    free(ra), free(rb);

    /* one micro-batch of 4: step 1's KL (before any update) is the same mean
     * over the same rows, up to rounding; k >= T (the layers run dense, the
     * indexer never trains): no rows */
    for (int k = 0; k < 2; k++) {
        Config o = c;
        o.micro_batch = 4;
        if (k) o.attn.topk = o.seq_len;
        resolve_or_die(&o);
        char db[128];
        snprintf(db, sizeof db, "%s/%c.db", dir, k ? 'd' : 'c');
        TrainOpts t = {db, "one", "data", "test", 0, 0, dir, 0, 0};
        cr_assert_eq(run_quiet(&o, &t), 0);
        char *rows1 = indexer_kl_rows(db);
        if (k) {
            cr_assert_str_eq(rows1, "", "indexer_kl rows of a run whose indexer never trains:\n%s", rows1);
        } else {
            double v1;
            cr_assert_eq(sscanf(rows1, "1:dense:%lf", &v1), 1, "%s", rows1);
            cr_assert(fabs(v1 - kl1) <= 1e-5 * kl1, "step 1: KL %.9g in one micro-batch, %.9g in two", v1, kl1);
        }
        free(rows1);
    }
}

/* A Bigram-Backcopy config on the synthetic model's shape: tokens 0..62 and
 * BOS 63, a seeded random table. */
static Config bb_config(int steps) {
    Config c = synth_config(steps);
    c.corpus = CORPUS_BB;
    c.vocab_size = 64;
    c.bb_tokens = 63;
    c.bb_source = BB_SOURCE_RANDOM;
    return c;
}

/* The training stream of data.corpus bb resumes exactly (its state is the
 * checkpoint's data stream), the BB probes are stored at every evaluation
 * (per head, per layer, overall), and the validation windows are the
 * task's: other training seeds score on the same windows. */
Test(train, bigram_backcopy_resumes_and_stores_probes, .timeout = 120) {
    char dir[64], db[128];
    check_resume(bb_config(25), dir, sizeof dir);
    snprintf(db, sizeof db, "%s/a.db", dir);
    double v[8];
    static const char *const keys[] = {"bb_loss_trigger", "bb_loss_other", "bb_trigger_share",
                                       "bb_bos_attn_trigger", "bb_bos_attn_other", "bb_prev_attn_trigger",
                                       "bb_value_drain", "bb_residual_peak", "sink_formed",
                                       "bb_none_attn_trigger", "bb_none_attn_other"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        cr_assert_eq(metric_series(db, keys[k], v, 8), 3, "%s: evaluations at 10, 20, 25", keys[k]);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT count(*) FROM metrics WHERE key = 'bb_bos_attn_other' AND step = 25 AND "
                                    "context IN ('layer=0,head=3', 'layer=1,head=0', 'layer=1')",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 3);
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* the two losses weighted by their positions give the validation loss: trigger positions are the trigger
     * queries (positions 2..T-1), a share of the T-1 queries of each window, out of T loss positions */
    double lt[4], lo[4], share[4], vl[4];
    cr_assert_eq(metric_series(db, "bb_loss_trigger", lt, 4), 3);
    cr_assert_eq(metric_series(db, "bb_loss_other", lo, 4), 3);
    cr_assert_eq(metric_series(db, "bb_trigger_share", share, 4), 3);
    cr_assert_eq(metric_series(db, "val_loss", vl, 4), 3);
    int T = synth_config(1).seq_len;
    for (int e = 0; e < 3; e++) {
        double w = share[e] * (T - 1) / T, mix = w * lt[e] + (1 - w) * lo[e];
        cr_assert(share[e] > 0.02 && share[e] < 0.5, "trigger share %.4f", share[e]);
        cr_assert(fabs(mix - vl[e]) < 1e-5 * vl[e], "evaluation %d: %.7f from the split, val_loss %.7f", e, mix, vl[e]);
    }
}

/* ------------------------------------------------------------ probes */

/* One layer, one sequence of T = 4, 2 heads of width 2, G1 gate. */
static void probe_model(Model *m) {
    set_threads(1);
    Config c = tiny_config(8, 4, 1, 2, 2, 4, 4, 1);
    c.gate.position = GP_SDPA;
    c.qk_norm = 0;
    resolve_or_die(&c);
    cr_assert_eq(cfg_model_init(m, &c), 0);
    int tok[4] = {1, 2, 3, 4}, tgt[4] = {2, 3, 4, 5};
    cr_assert(isfinite(model_forward(m, tok, tgt, 1, 4)));
}

Test(probes, f_attn_uniform_attention) {
    Model m;
    probe_model(&m);
    /* q = 0: every row attends uniformly, p(i, 0) = 1/(i+1) */
    LayerActs *a = &m.la[0];
    memset(a->qr, 0, sizeof(real) * 4 * m.nq);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) a->lse[h * 4 + i] = (real)log(i + 1.0);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    probes_accumulate(&p, &m);
    double want = (1 / 2.0 + 1 / 3.0 + 1 / 4.0) / 3;
    cr_assert(fabs(probe_fattn(&p, 0) - want) < 1e-6, "F-Attn %.7f, want %.7f", probe_fattn(&p, 0), want);
    probes_free(&p);
    model_free(&m);
}

Test(probes, f_attn_hand_made_sink) {
    Model m;
    probe_model(&m);
    /* head 0: q_i · k_0 = 2, q_i · k_j = 0 otherwise -> p(i,0) = e^2 / (e^2 + i)
     * head 1: all scores 0 -> uniform.  scale = 1/sqrt(2). */
    LayerActs *a = &m.la[0];
    memset(a->qr, 0, sizeof(real) * 4 * m.nq);
    memset(a->kr, 0, sizeof(real) * 4 * m.nkv);
    double s = sqrt(2.0);
    for (int i = 0; i < 4; i++) a->qr[i * m.nq + 0] = (real)(2 * s); /* head 0, channel 0 */
    a->kr[0 * m.nkv + 0] = 1;                                          /* k_0 of kv head 0 */
    double want = 0;
    for (int i = 1; i < 4; i++) {
        double e = exp(2.0);
        a->lse[0 * 4 + i] = (real)log(e + i);
        a->lse[1 * 4 + i] = (real)log(i + 1.0);
        want += e / (e + i) + 1 / (i + 1.0);
    }
    want /= 6;
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    probes_accumulate(&p, &m);
    cr_assert(fabs(probe_fattn(&p, 0) - want) < 1e-5, "F-Attn %.7f, want %.7f", probe_fattn(&p, 0), want);
    /* per head: head 0 is the sink, head 1 uniform */
    double e = exp(2.0), h0 = (e / (e + 1) + e / (e + 2) + e / (e + 3)) / 3, u = (1 / 2.0 + 1 / 3.0 + 1 / 4.0) / 3;
    cr_assert(fabs(probe_fattn_head(&p, 0, 0) - h0) < 1e-5, "head 0 %.7f, want %.7f", probe_fattn_head(&p, 0, 0), h0);
    cr_assert(fabs(probe_fattn_head(&p, 0, 1) - u) < 1e-5, "head 1 %.7f, want %.7f", probe_fattn_head(&p, 0, 1), u);
    cr_assert(fabs(probe_uniform_fattn(4) - u) < 1e-12);
    cr_assert_eq(probe_sink_heads(&p), 1);
    /* head 0 is over 50%, but the layer mean (0.58) is only 1.6x uniform at T = 4 */
    int sl = 7, sh = 7;
    cr_assert_eq(probe_sink_formed(&p, &sl, &sh), 0);
    cr_assert_eq(sl, -1);
    cr_assert_eq(sh, -1);
    /* judged at T = 64 (uniform 0.0635) the same layer qualifies */
    p.T = 64;
    cr_assert_eq(probe_sink_formed(&p, &sl, &sh), 1);
    cr_assert_eq(sl, 0);
    cr_assert_eq(sh, 0);
    probes_free(&p);
    model_free(&m);
}

Test(probes, m_act_and_gate_statistics) {
    Model m;
    probe_model(&m);
    for (int i = 0; i < 4 * m.C; i++) m.x_out[i] = (real)(0.01 * i);
    m.x_out[2 * m.C + 3] = -42; /* position 2, channel 3 */
    LayerActs *a = &m.la[0];
    int W = m.gs.hpos * m.gs.dh; /* 4 scores per token */
    static const real S[16] = {0.005f, 0.05f, 0.5f, 0.97f, 0.005f, 0.05f, 0.5f, 0.97f,
                               0.005f, 0.05f, 0.5f, 0.97f, 0.005f, 0.05f, 0.5f, 0.97f};
    cr_assert_eq(W, 4);
    memcpy(a->S, S, sizeof S);
    static const real Y[4] = {0.005f, -0.0005f, 0.5f, 2.0f}, O[4] = {0.0001f, 0.0002f, 0.005f, 1.0f};
    for (int t = 0; t < 4; t++) memcpy(a->o + t * m.nq, Y, sizeof Y), memcpy(a->og + t * m.nq, O, sizeof O);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    probes_accumulate(&p, &m);
    cr_assert_float_eq(p.lp[0].mact, 42.0, 1e-9);
    cr_assert_eq(p.lp[0].mact_pos, 2);
    cr_assert_eq(p.lp[0].mact_chan, 3);
    cr_assert(fabs(probe_gate_mean(&p, 0) - (0.005 + 0.05 + 0.5 + 0.97) / 4) < 1e-6);
    cr_assert_float_eq(p.lp[0].gate_lt01 / p.lp[0].gate_n, 0.5, 1e-9);
    cr_assert_float_eq(p.lp[0].gate_lt001 / p.lp[0].gate_n, 0.25, 1e-9);
    /* sparsity: hand-set SDPA output (before the G1 gate) and gated output */
    cr_assert_float_eq(p.lp[0].y_small_before[0], 8, 1e-9); /* 0.005 and -0.0005 in each token */
    cr_assert_float_eq(p.lp[0].y_small_before[1], 4, 1e-9); /* -0.0005 */
    cr_assert_float_eq(p.lp[0].y_small_after[0], 12, 1e-9);
    cr_assert_float_eq(p.lp[0].y_small_after[1], 8, 1e-9);
    cr_assert_float_eq(p.lp[0].y_abs_before / p.lp[0].gate_n, (0.005 + 0.0005 + 0.5 + 2) / 4, 1e-6);
    /* 20 bins over [0, 1]: 0.005 and 0.05 -> bin 0 and 1, 0.5 -> 10, 0.97 -> 19 */
    cr_assert_eq(p.lp[0].hist[0], 4);
    cr_assert_eq(p.lp[0].hist[1], 4);
    cr_assert_eq(p.lp[0].hist[10], 4);
    cr_assert_eq(p.lp[0].hist[19], 4);
    probes_free(&p);
    model_free(&m);
}

/* Bigram-Backcopy probes on a hand-made state.  One layer, T = 6, two
 * query heads of width 2 sharing one KV head, G1 elementwise.  Task: tokens
 * 0..4, BOS 5, trigger 1; the window BOS 1 2 1 3 1 has trigger queries at 3
 * and 5, other queries at 1, 2, 4 (a trigger at position 1, which generated
 * sequences never have, has only BOS before it: an other query).  Head 0 attends uniformly (q = 0, lse = ln(i+1)).
 * Head 1's trigger queries score ln 64 on BOS, ln 8 on positions 2 and 4
 * (the previous tokens of the triggers) and 0 elsewhere: p(3, 0) = 64/74,
 * p(3, 2) = 8/74, p(5, 0) = 64/83, p(5, 4) = 8/83; its other queries are
 * uniform.  So head 1's F-Attn is over 0.5 (trigger queries on BOS) while
 * its other queries put 0.34 there: a sink by F-Attn, none by the BB test. */
static const int bb_tok[6] = {5, 1, 2, 1, 3, 1}, bb_tgt[6] = {1, 2, 1, 3, 1, 4};
static const unsigned char bb_trig[6] = {0, 1, 0, 0, 0, 0};

static void bb_probe_model(Model *m, int head1_all) {
    set_threads(1);
    Config c = tiny_config(8, 4, 1, 2, 1, 4, 6, 1);
    c.gate.position = GP_SDPA;
    c.qk_norm = 0;
    resolve_or_die(&c);
    cr_assert_eq(cfg_model_init(m, &c), 0);
    cr_assert(isfinite(model_forward(m, bb_tok, bb_tgt, 1, 6)));
    LayerActs *a = &m->la[0];
    cr_assert_eq(m->nq, 4);
    cr_assert_eq(m->nkv, 2);
    memset(a->qr, 0, sizeof(real) * 6 * m->nq);
    memset(a->kr, 0, sizeof(real) * 6 * m->nkv);
    /* k_j (channel 0; scale 1/sqrt(2)): score ln 64 on BOS, ln 8 on positions 2 and 4, for q = (1, 0) */
    const double score[6] = {log(64.0), 0, log(8.0), 0, log(8.0), 0};
    for (int j = 0; j < 6; j++) a->kr[j * m->nkv] = (real)(sqrt(2.0) * score[j]);
    for (int i = 0; i < 6; i++) {
        int trig = i == 3 || i == 5, hot = trig || (head1_all && i > 0);
        double z = 0; /* head 1's softmax denominator */
        for (int j = 0; j <= i; j++) z += hot ? exp(score[j]) : 1;
        a->lse[0 * 6 + i] = (real)log(i + 1.0);
        a->lse[1 * 6 + i] = (real)log(z);
        if (hot) a->qr[i * m->nq + 2] = 1; /* head 1, channel 0 */
        /* values (kv head 0): |v_0| = 5, |v_i| = i */
        real *v = a->P + (size_t)i * m->Np + m->nq + m->nkv;
        v[0] = i ? 0 : 3, v[1] = i ? (real)i : 4;
        /* output residual: |h_0| = 6, |h_i| = i */
        real *x = m->x_out + (size_t)i * m->C;
        memset(x, 0, sizeof(real) * m->C);
        x[i ? 0 : 3] = i ? (real)i : 6;
        /* loss at position t: t + 1 */
        m->probs[(size_t)i * m->V + bb_tgt[i]] = (real)exp(-(i + 1.0));
        /* gate scores: head 0 (0.8, 1.0) at trigger positions, (0, 0.2) at others; head 1 (0.4, 0.6) and
         * (0.5, 0.5); position 0 (excluded) 0.7 */
        static const real st[4] = {0.8f, 1.0f, 0.4f, 0.6f}, so[4] = {0, 0.2f, 0.5f, 0.5f},
                          s0[4] = {0.7f, 0.7f, 0.7f, 0.7f};
        memcpy(a->S + (size_t)i * 4, i == 0 ? s0 : trig ? st : so, sizeof st);
    }
}

Test(probes, bigram_backcopy_hand_made) {
    Model m;
    bb_probe_model(&m, 0);
    Probes p;
    cr_assert_eq(probes_init(&p, &m), 0);
    probes_accumulate(&p, &m);
    /* without the BB probes, the sink test reads F-Attn: head 1 is over 0.5 */
    double f1 = (1 / 2.0 + 1 / 3.0 + 64 / 74.0 + 1 / 5.0 + 64 / 83.0) / 5;
    cr_assert(fabs(probe_fattn_head(&p, 0, 1) - f1) < 1e-5, "F-Attn head 1 %.6f, want %.6f",
              probe_fattn_head(&p, 0, 1), f1);
    cr_assert_eq(probe_sink_heads(&p), 1);
    cr_assert(isnan(probe_bb_loss(&p, BB_OTHER)), "no BB values before probes_bb_init");
    cr_assert_eq(probes_bb_init(&p, &m, bb_trig, 6), 0);
    probes_bb_accumulate(&p, &m, bb_tok);

    cr_assert_float_eq(probe_bb_trigger_share(&p), 2 / 5.0, 1e-12);
    cr_assert_float_eq(probe_bb_loss(&p, BB_TRIGGER), (4 + 6) / 2.0, 1e-5);
    cr_assert_float_eq(probe_bb_loss(&p, BB_OTHER), (1 + 2 + 3 + 5) / 4.0, 1e-5);
    double other = (1 / 2.0 + 1 / 3.0 + 1 / 5.0) / 3, trig_u = (1 / 4.0 + 1 / 6.0) / 2;
    struct {
        double got, want;
        const char *what;
    } c[] = {
        {probe_bb_bos(&p, 0, 0, BB_OTHER), other, "head 0 BOS, other"},
        {probe_bb_bos(&p, 0, 0, BB_TRIGGER), trig_u, "head 0 BOS, trigger"},
        {probe_bb_prev(&p, 0, 0), trig_u, "head 0 previous, trigger"},
        {probe_bb_bos(&p, 0, 1, BB_OTHER), other, "head 1 BOS, other"},
        {probe_bb_bos(&p, 0, 1, BB_TRIGGER), (64 / 74.0 + 64 / 83.0) / 2, "head 1 BOS, trigger"},
        {probe_bb_prev(&p, 0, 1), (8 / 74.0 + 8 / 83.0) / 2, "head 1 previous, trigger"},
        {probe_bb_value_drain(&p, 0, 0), 5 / 3.0, "value drain head 0"},
        {probe_bb_value_drain(&p, 0, 1), 5 / 3.0, "value drain head 1 (same KV head)"},
        {probe_bb_residual_peak(&p, 0), 6 / 3.0, "residual peak"},
        {probe_bb_gate(&p, 0, 0, BB_TRIGGER), 0.9, "gate head 0, trigger"},
        {probe_bb_gate(&p, 0, 0, BB_OTHER), 0.1, "gate head 0, other"},
        {probe_bb_gate(&p, 0, 1, BB_TRIGGER), 0.5, "gate head 1, trigger"},
        {probe_bb_gate(&p, 0, 1, BB_OTHER), 0.5, "gate head 1, other"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        cr_assert(fabs(c[i].got - c[i].want) < 1e-5, "%s: %.7f, want %.7f", c[i].what, c[i].got, c[i].want);
    /* histograms by position type (20 bins over [0, 1]); position 0 (0.7 -> bin 14) is left out */
    const long long *ht = p.bb->hist[BB_TRIGGER], *ho = p.bb->hist[BB_OTHER];
    cr_assert(ht[16] == 2 && ht[19] == 2 && ht[8] == 2 && ht[12] == 2, "trigger bins %lld %lld %lld %lld", ht[16],
              ht[19], ht[8], ht[12]);
    cr_assert(ho[0] == 3 && ho[4] == 3 && ho[10] == 6, "other bins %lld %lld %lld", ho[0], ho[4], ho[10]);
    cr_assert(ht[14] == 0 && ho[14] == 0);
    /* the BB sink test reads other queries: head 1 no longer counts */
    cr_assert_eq(probe_sink_heads(&p), 0);
    p.T = 64;
    cr_assert_eq(probe_sink_formed(&p, NULL, NULL), 0);
    probes_free(&p);
    model_free(&m);

    /* head 1's other queries on BOS too: a BB sink (the layer test judged at T = 64, as above) */
    bb_probe_model(&m, 1);
    cr_assert_eq(probes_init(&p, &m), 0);
    cr_assert_eq(probes_bb_init(&p, &m, bb_trig, 6), 0);
    probes_accumulate(&p, &m);
    probes_bb_accumulate(&p, &m, bb_tok);
    double o1 = (64 / 65.0 + 64 / 73.0 + 64 / 82.0) / 3; /* i = 1, 2, 4 see BOS, ln 8 at 2 and 4 */
    cr_assert(fabs(probe_bb_bos(&p, 0, 1, BB_OTHER) - o1) < 1e-5);
    cr_assert_eq(probe_sink_heads(&p), 1);
    int sl, sh;
    cr_assert_eq(probe_sink_formed(&p, &sl, &sh), 0, "the layer mean (0.61) is under 5x uniform at T = 6");
    p.T = 64;
    cr_assert_eq(probe_sink_formed(&p, &sl, &sh), 1);
    cr_assert_eq(sl, 0);
    cr_assert_eq(sh, 1);
    probes_free(&p);
    model_free(&m);
}

/* ------------------------------------------------------------ the CLI */


/* Run a shell command; returns exit status, stderr in err. */
static int sh(const char *cmd, char *err, size_t cap) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1 >/dev/null", cmd);
    FILE *f = popen(full, "r");
    cr_assert_not_null(f);
    size_t n = fread(err, 1, cap - 1, f);
    err[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(train_cli, missing_corpus_says_how_to_get_it) {
    const char *bin = gated_bin();
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "%s train experiments/quick.yaml --data /nonexistent/dir --db /tmp/gated-nc-%d.db", bin,
             (int)getpid());
    cr_assert_eq(sh(cmd, err, sizeof err), 2, "%s", err);
    cr_assert_not_null(strstr(err, "/nonexistent/dir/brown: corpus not found; run `make data`"), "%s", err);
}

Test(train_cli, bad_config_exits_2_with_location) {
    const char *bin = gated_bin();
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "%s train experiments/quick.yaml --set train.lr=fast", bin);
    cr_assert_eq(sh(cmd, err, sizeof err), 2, "%s", err);
    cr_assert_not_null(strstr(err, "--set train.lr=fast: error: train.lr: expected number in [0, 10], got \"fast\""),
                       "%s", err);
}

/* The code version is the build's: the binary run from /tmp (no git
 * checkout there) records the commit and dirty flag it was built with. */
Test(train_cli, code_version_is_the_builds_from_any_directory, .timeout = 60) {
    const char *bin = gated_bin();
    if (strcmp(codever_commit(), "unknown") == 0) cr_skip_test("this build's source tree is not a git checkout");
    cr_assert_eq(strlen(codever_commit()), 40, "%s", codever_commit());
    char dir[64], db[128], tiny[4096], cmd[8192], err[4096];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/c.db", dir);
    cr_assert_not_null(realpath("experiments/tiny.yaml", tiny), "run the tests from the repository root");
    cr_assert_null(strchr(tiny, '\''));
    cr_assert_null(strchr(bin, '\''));
    snprintf(cmd, sizeof cmd,
             "cd /tmp && '%s' train '%s' --set model.vocab_size=257 --set data.corpus=synthetic --set train.steps=2"
             " --set threads=1 --db '%s' --ckpt '%s'",
             bin, tiny, db, dir);
    cr_assert_eq(sh(cmd, err, sizeof err), 0, "%s", err);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT code_version, git_dirty FROM runs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), codever_commit());
    cr_assert_eq(sqlite3_column_int(st, 1), codever_dirty());
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Poll db (up to a minute) until it holds a metric row; 1 then, else 0. */
static int wait_for_metrics(const char *db) {
    for (int i = 0; i < 600; i++) {
        usleep(100000);
        sqlite3 *h;
        int n = 0;
        if (access(db, F_OK) == 0 && sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(h, "SELECT count(*) FROM metrics", -1, &st, NULL) == SQLITE_OK) {
                if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
                sqlite3_finalize(st);
            }
            sqlite3_close(h);
        }
        if (n > 0) return 1;
    }
    return 0;
}

/* A long tiny run on the synthetic corpus into db (checkpoints in dir),
 * started in a child with its output to /dev/null; its pid. */
static pid_t start_long_run(const char *bin, const char *db, const char *dir) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        execl(bin, bin, "train", "experiments/tiny.yaml", "--set", "model.vocab_size=257", "--set",
              "data.corpus=synthetic", "--set", "train.steps=100000", "--set", "threads=1", "--db", db, "--ckpt", dir,
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* SIGINT: exit 130 (as a shell reports an interrupted command), with the
 * cleanup done first: the run killed, its rows and its checkpoint kept. */
Test(train_cli, sigint_exits_130_with_the_run_killed_and_kept, .timeout = 120) {
    const char *bin = gated_bin();
    char dir[64], db[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/k.db", dir);
    pid_t pid = start_long_run(bin, db, dir);
    int ok = wait_for_metrics(db);
    kill(pid, SIGINT);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert(ok, "the run never wrote a metric");
    cr_assert(WIFEXITED(ws), "gated train did not exit (wait status %d)", ws);
    cr_assert_eq(WEXITSTATUS(ws), 130);
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT run_id, status, error_text, (SELECT max(step) FROM metrics m"
                                    " WHERE m.run_id = r.run_id AND key = 'train_loss') FROM runs r",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char id[32], ckpt[160];
    snprintf(id, sizeof id, "%s", (const char *)sqlite3_column_text(st, 0));
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 1), "killed");
    cr_assert_not_null(strstr((const char *)sqlite3_column_text(st, 2), "stopped by signal 2"));
    cr_assert_eq(sqlite3_column_type(st, 3), SQLITE_INTEGER, "no train_loss rows");
    sqlite3_finalize(st);
    sqlite3_close(h);
    test_ckpt_path(db, dir, id, ckpt, sizeof ckpt);
    cr_assert_eq(access(ckpt, F_OK), 0, "no checkpoint %s", ckpt);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(train_cli, sigkill_leaves_readable_db_and_run_shows_killed, .timeout = 120) {
    const char *bin = gated_bin();
    char dir[64], db[128];
    test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/k.db", dir);
    pid_t pid = start_long_run(bin, db, dir);
    /* wait until the run has written some metrics, then kill it hard */
    int ok = wait_for_metrics(db);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert(ok, "the run never wrote a metric");
    Store *s;
    char err[512], buf[16];
    cr_assert_eq(store_open(&s, db, err, sizeof err), 0, "%s", err);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT run_id FROM runs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char id[32];
    snprintf(id, sizeof id, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* its heartbeat is fresh, but the process that holds its claim is gone (issue 29) */
    cr_assert_str_eq(store_run_status(s, id, buf, sizeof buf), "killed", "a dead process's run reads running");
    cr_assert_eq(store_debug_set_heartbeat(s, id, 1.0), 0);
    cr_assert_str_eq(store_run_status(s, id, buf, sizeof buf), "killed");
    store_close(s);
    char cmd[512], out[4096];
    snprintf(cmd, sizeof cmd, "%s ls --db %s", bin, db);
    FILE *f = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    pclose(f);
    cr_assert_not_null(strstr(out, "killed"), "%s", out);
}
