/*
 * report_load.c — `gated report`: the store into RSweep (report_int.h), with
 * every statistic of the tables.
 *
 * A sweep's membership comes from sweep_runs, LEFT JOINed to runs
 * (membership is recorded before a run exists: such a run is "pending").  A
 * 'running' run whose heartbeat is older than STORE_STALE_SECONDS counts as
 * killed, as in `gated ls`.  From a run's config (flat JSON, key "train.lr"
 * and so on) the query takes train.lr, model.seq_len, train.steps and
 * train.batch when they are JSON numbers (json_extract), the config
 * without train.lr, train.min_lr and train.seed (json_remove, compact) as
 * the key that says whether two runs differ only in those, and the config
 * without train.seed, train.steps, train.eval_every and
 * train.checkpoint_every as the key of budget series (report_budget.c); a
 * config that is not JSON has no numbers and is its own key.
 *
 * Per variant row (runs of one label, rows in order of their first idx):
 *   n            finished runs; every mean and std below is over them
 *   div          diverged runs
 *   val loss/PPL summary val_loss / val_ppl: mean ± sample std (n - 1)
 *   ref          the row Δ is against: the baseline row; when the rows differ
 *                in train.lr (as the lr plot decides) and the baseline row
 *                has one lr and one config, the row whose config equals the
 *                baseline's but for train.lr, train.min_lr, train.seed at
 *                this row's lr (the baseline first), such rows being
 *                references themselves, else the baseline row (fallback)
 *   Δ loss       paired by seed when the row and ref have >= 2 seeds with
 *                finished runs in common (no seed twice among either's
 *                finished runs): mean of the per-seed differences, 95% CI
 *                mean ± t(0.975, k - 1)·sd/sqrt(k), two-sided paired t p;
 *                else mean(row) - mean(ref) with Welch's test (CI with the
 *                Welch–Satterthwaite df; needs n >= 2 in both rows); p from
 *                the Student-t CDF (stats.h)
 *   p (Holm)     Holm–Bonferroni over the family of the sweep's group, and
 *                p (TOST) (report_family.c: they span sweeps)
 *   div/total, p (div)    lr rule only: diverged / (finished + diverged),
 *                Fisher's exact two-sided p against ref's counts
 *   F-Attn, M-Act, gate   metrics f_attn / m_act / gate_mean, context '',
 *                at each run's last step, mean ± std over runs
 *   spikes, tok/s         summary spikes / tokens_per_s, mean (tok/s: with its spread and the
 *                         runs' load, summary load_start / load_end: report_rank.c)
 *   +params      summary gate_params (the first run that has it)
 * (The paper's columns are looked up when the table is written.)
 *
 * Finished runs also bring, when they have them, what report_sections.c
 * writes:
 *   sink probes (metric sink_formed, context ''): per run the first step
 *     with sink_formed = 1, sink_head_share and f_attn_rel (context '') at
 *     the last step, and f_attn per head (context layer=L,head=H) at the
 *     last step (bb_bos_attn_other for a Bigram-Backcopy run, whose sink
 *     test reads it), with the largest head and where it is; per row their
 *     means and the most common place of the largest head;
 *   Bigram-Backcopy probes (bb_* metrics, last step): read and summarised
 *     per row by report_bb.c;
 *   `gated eval --quant / --drop` results (infer_* metrics): read and
 *     summarised by report_infer.c;
 *   `gated eval` results (metric eval_ppl, context
 *     split=S,len=L,scaling=K,factor=F): a series is a scaling K with its
 *     automatic factor (F = max(1, L / model.seq_len), or the only F used
 *     at that (L, K)); another F at the same (L, K) makes a series "K F=F".
 */
#include "lab/report/report_int.h"
#include "run/probes.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* ================================================================== */
/* SQL helpers                                                         */
/* ================================================================== */

/* summary value (context '') or NAN. */
static int q_summary(R *r, const char *run_id, const char *key, double *v) {
    sqlite3_stmt *st;
    *v = NAN;
    if (rep_q_prep(r, &st, "SELECT value FROM summary WHERE run_id = ?1 AND key = ?2 AND context = ?3", "ttt", run_id,
                   key, ""))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = rep_col_real(st, 0);
    return rep_q_done(r, st, rc, "read summary");
}

/* The metric's value at its last step (context '') or NAN. */
static int q_last_metric(R *r, const char *run_id, const char *key, double *v) {
    sqlite3_stmt *st;
    *v = NAN;
    if (rep_q_prep(r, &st,
                   "SELECT value FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ?3"
                   " ORDER BY step DESC LIMIT 1",
                   "ttt", run_id, key, ""))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = rep_col_real(st, 0);
    return rep_q_done(r, st, rc, "read metrics");
}

/* The run's sink_formed metric: how many evaluations have it, and the
 * first step at which it was set (-1: never). */
static int q_first_formed(R *r, const char *run_id, long long *n, long long *first) {
    sqlite3_stmt *st;
    *n = 0;
    *first = -1;
    if (rep_q_prep(r, &st,
                   "SELECT count(*), min(CASE WHEN value > ?4 THEN step END) FROM metrics"
                   " WHERE run_id = ?1 AND key = ?2 AND context = ?3",
                   "ttti", run_id, "sink_formed", "", 0LL))
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *n = sqlite3_column_int64(st, 0);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) *first = sqlite3_column_int64(st, 1);
    }
    return rep_q_done(r, st, rc, "read metrics");
}

/* ------------------------------------------------------------------ */
/* metric contexts                                                     */
/* ------------------------------------------------------------------ */

/* "split=S,len=L,scaling=K,factor=F" (S val or test, L > 0, F > 0) into
 * p's split, len, scaling and factor; -1 if it is not one. */
static int parse_eval_context(const char *ctx, EvalPt *p) {
    char split[8];
    int end = -1;
    if (sscanf(ctx, "split=%7[^,],len=%lld,scaling=%15[^,],factor=%lf%n", split, &p->len, p->scaling, &p->factor,
               &end) != 4 ||
        end < 0 || ctx[end] || p->len <= 0 || !(p->factor > 0) || !isfinite(p->factor))
        return -1;
    /* the scaling names a series in every output: a plain word only */
    if (strspn(p->scaling, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(p->scaling))
        return -1;
    p->split = strcmp(split, "val") == 0 ? 0 : strcmp(split, "test") == 0 ? 1 : -1;
    return p->split < 0 ? -1 : 0;
}

/* ================================================================== */
/* loading                                                             */
/* ================================================================== */

/* Every sweep name in the database, sorted. */
int rep_list_sweeps(R *r, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    int cap = 0;
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st, "SELECT sweep FROM sweep_runs GROUP BY sweep ORDER BY sweep", "")) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rep_grow(r, (void **)names, &cap, *n + 1, sizeof **names)) break;
        char *s = rep_dup(r, rep_col_text(st, 0));
        if (!s) break;
        (*names)[(*n)++] = s;
    }
    if (r->failed) {
        sqlite3_finalize(st);
        return -1;
    }
    return rep_q_done(r, st, rc, "read sweep_runs");
}

/* The row of label, or NULL. */
static RVar *find_var(RSweep *s, const char *label) {
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].label, label) == 0) return &s->vars[i];
    return NULL;
}

/* The mean of field off over the finished runs of v that have it; NAN if
 * none does. */
static double mean_of(const RSweep *s, const RVar *v, size_t off) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        double x = *(const double *)((const char *)u + off);
        if (strcmp(u->status, "finished") == 0 && !isnan(x)) sum += x, n++;
    }
    return n ? sum / n : NAN;
}

/* Each row's lr, config key and budget key (see RVar), from the runs that
 * have a config. */
static int row_configs(R *r, RSweep *s) {
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        int any = 0, same_lr = 1, same_key = 1, same_bkey = 1;
        v->lr = NAN;
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            if (!u->cfg_key) continue;
            if (!any) {
                v->lr = u->lr;
                if (!(v->key = rep_dup(r, u->cfg_key)) || !(v->bkey = rep_dup(r, u->bkey))) return -1;
                any = 1;
                continue;
            }
            if (!(u->lr == v->lr)) same_lr = 0; /* NAN never equals */
            if (strcmp(u->cfg_key, v->key) != 0) same_key = 0;
            if (strcmp(u->bkey, v->bkey) != 0) same_bkey = 0;
        }
        if (!same_lr) v->lr = NAN;
        if (!same_key) {
            free(v->key);
            v->key = NULL;
        }
        if (!same_bkey) {
            free(v->bkey);
            v->bkey = NULL;
            v->bkey_mixed = 1;
        }
    }
    return 0;
}

/* Each row's reference row (RVar.ref, is_ref, rule) and the sweep's rule. */
static void choose_refs(RSweep *s) {
    for (int k = 0; k < s->nvars; k++) {
        s->vars[k].ref = -1;
        s->vars[k].rule = RULE_NONE;
    }
    if (s->base < 0) return;
    const RVar *bv = &s->vars[s->base];
    s->lr_rule = s->lr_plot && bv->key && !isnan(bv->lr);
    s->vars[s->base].is_ref = 1;
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        if (k == s->base) continue;
        if (!s->lr_rule) {
            v->ref = s->base;
            v->rule = RULE_BASE;
            continue;
        }
        /* the baseline's line at this row's lr: the baseline itself first */
        int j = -1;
        if (!isnan(v->lr)) {
            if (bv->lr == v->lr) j = s->base;
            for (int i = 0; i < s->nvars && j < 0; i++)
                if (s->vars[i].key && strcmp(s->vars[i].key, bv->key) == 0 && s->vars[i].lr == v->lr) j = i;
        }
        if (j == k)
            v->is_ref = 1;
        else if (j >= 0) {
            v->ref = j;
            v->rule = RULE_LR;
        } else {
            v->ref = s->base;
            v->rule = RULE_FALLBACK;
            s->n_fallback++;
        }
    }
}

/* ------------------------------------------------------------------ */
/* sink probes                                                         */
/* ------------------------------------------------------------------ */

/* RepRowFn on (context, value): a context layer=L,head=H into the HeadMap arg. */
static int add_head_cell(R *r, void *arg, sqlite3_stmt *st) {
    long h, l = rep_parse_layer_head(rep_col_text(st, 0), &h);
    if (l < 0 || h < 0 || l >= HEADMAP_MAX || h >= HEADMAP_MAX) return 0;
    return rep_headmap_set(r, arg, (int)l, (int)h, rep_col_real(st, 1));
}

/* A finished run's sink probes (RRun.has_sink and what follows it). */
static int load_run_sink(R *r, RRun *u) {
    long long n;
    u->sink_eps = u->mass_none = NAN;
    if (q_first_formed(r, u->run_id, &n, &u->sink_step)) return -1;
    if (!(u->has_sink = n > 0)) return 0;
    /* a Bigram-Backcopy run's (rep_bb_load_run, called first) sink test reads the attention on BOS from
     * other queries (probes.h), per head and, for the layer ratio, its mean over layers and heads */
    const char *key = u->has_bb ? "bb_bos_attn_other" : "f_attn";
    if (q_last_metric(r, u->run_id, "sink_head_share", &u->sink_share) ||
        q_last_metric(r, u->run_id, "f_attn_rel", &u->f_attn_rel) ||
        q_last_metric(r, u->run_id, "sink_eps_share", &u->sink_eps) ||
        q_last_metric(r, u->run_id, "attn_mass_none", &u->mass_none) ||
        rep_q_each_context_last(r, u->run_id, key, add_head_cell, &u->heads))
        return -1;
    if (u->has_bb) u->f_attn_rel = u->seq_len >= 2 ? u->bbv[BB_BOS_O] / probe_uniform_fattn((int)u->seq_len) : NAN;
    u->head_max = rep_headmap_argmax(&u->heads, &u->max_l, &u->max_h);
    return 0;
}

/* The row's sink statistics (RVar.n_sink ... heads) from its runs'. */
static int row_sink(R *r, const RSweep *s, RVar *v, double *buf) {
    int nl = 0, nh = 0, best = 0;
    v->where = -1;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!u->has_sink) continue;
        v->n_sink++;
        v->n_formed += u->sink_step >= 0;
        if (u->heads.nl > nl) nl = u->heads.nl;
        if (u->heads.nh > nh) nh = u->heads.nh;
        if (isnan(u->head_max)) continue;
        int same = 0; /* runs with the largest head at the same place: the most common place wins, the first on ties */
        for (int j = 0; j < v->nruns; j++) {
            const RRun *w = &s->runs[v->runs[j]];
            same += w->has_sink && !isnan(w->head_max) && w->max_l == u->max_l && w->max_h == u->max_h;
        }
        if (same > best) best = same, v->where = v->runs[i];
    }
    int n = rep_finished_values(s, v, offsetof(RRun, sink_share), buf);
    stats_mean_std(buf, n, &v->sink_share, &v->sink_share_std);
    n = rep_finished_values(s, v, offsetof(RRun, f_attn_rel), buf);
    stats_mean_std(buf, n, &v->f_attn_rel, &v->f_attn_rel_std);
    n = rep_finished_values(s, v, offsetof(RRun, head_max), buf);
    stats_mean_std(buf, n, &v->head_max, &v->head_max_std);
    n = rep_finished_values(s, v, offsetof(RRun, sink_eps), buf);
    stats_mean_std(buf, n, &v->sink_eps, &v->sink_eps_std);
    n = rep_finished_values(s, v, offsetof(RRun, mass_none), buf);
    stats_mean_std(buf, n, &v->mass_none, &v->mass_none_std);
    if (!nl || !nh) return 0;
    /* the per-head mean: each cell over the runs that have it */
    for (int c = 0; c < nl * nh; c++) {
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < v->nruns; i++) {
            const HeadMap *m = &s->runs[v->runs[i]].heads;
            int l = c / nh, h = c % nh;
            if (l < m->nl && h < m->nh && !isnan(m->v[l * m->nh + h])) sum += m->v[l * m->nh + h], cnt++;
        }
        if (cnt && rep_headmap_set(r, &v->heads, c / nh, c % nh, sum / cnt)) return -1;
    }
    return 0;
}

/* RSweep.seeds: the distinct seeds of the runs with sink probes. */
static int sweep_seeds(R *r, RSweep *s) {
    s->seeds = malloc(sizeof *s->seeds * (size_t)(s->nruns + 1));
    if (!s->seeds) return rep_oom(r);
    for (int i = 0; i < s->nruns; i++) {
        if (!s->runs[i].has_sink) continue;
        int dup = 0;
        for (int j = 0; j < s->nseeds; j++) dup |= s->seeds[j] == s->runs[i].seed;
        if (!dup) s->seeds[s->nseeds++] = s->runs[i].seed;
    }
    qsort(s->seeds, (size_t)s->nseeds, sizeof *s->seeds, rep_ll_cmp);
    return 0;
}

/* ------------------------------------------------------------------ */
/* `gated eval` results                                                */
/* ------------------------------------------------------------------ */

typedef struct {
    RSweep *s;
    int var;
    double train_len;
} EvalLoad;

/* RepRowFn on (context, value): one eval_ppl result into the sweep's points. */
static int add_eval_pt(R *r, void *arg, sqlite3_stmt *st) {
    EvalLoad *e = arg;
    EvalPt p = {.var = e->var, .train_len = e->train_len, .ppl = rep_col_real(st, 1)};
    if (isnan(p.ppl) || parse_eval_context(rep_col_text(st, 0), &p)) return 0;
    if (rep_grow(r, (void **)&e->s->ev, &e->s->ev_cap, e->s->nev + 1, sizeof *e->s->ev)) return -1;
    e->s->ev[e->s->nev++] = p;
    return 0;
}

/* Whether p's factor is the automatic one: L / model.seq_len (at least 1;
 * the context prints it with %g, 6 significant digits), or the only factor
 * the sweep used at p's length and scaling. */
static int is_auto_factor(const RSweep *s, const EvalPt *p) {
    double want = p->train_len > 0 ? fmax(1.0, (double)p->len / p->train_len) : NAN;
    if (fabs(p->factor - want) <= 1e-5 * want) return 1;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *q = &s->ev[i];
        if (q->len == p->len && strcmp(q->scaling, p->scaling) == 0 && q->factor != p->factor) return 0;
    }
    return 1;
}

static int scaling_rank(const char *k) {
    static const char *const order[] = {"none", "linear", "ntk", "yarn"};
    for (int i = 0; i < 4; i++)
        if (strcmp(k, order[i]) == 0) return i;
    return 4;
}

/* Table order: scalings as scaling_rank, then by name; the automatic
 * factor first, then ascending factors. */
static int series_cmp(const void *a, const void *b) {
    const EvalSeries *x = a, *y = b;
    int c = scaling_rank(x->scaling) - scaling_rank(y->scaling);
    if (!c) c = strcmp(x->scaling, y->scaling);
    if (!c) c = isnan(y->factor) - isnan(x->factor);
    if (!c && !isnan(x->factor)) c = (x->factor > y->factor) - (x->factor < y->factor);
    return c;
}

static int find_series(const RSweep *s, const EvalPt *p) {
    double f = p->automatic ? NAN : p->factor;
    for (int j = 0; j < s->neser; j++) {
        const EvalSeries *e = &s->eser[j];
        if (strcmp(e->scaling, p->scaling) == 0 && (isnan(f) ? isnan(e->factor) : e->factor == f)) return j;
    }
    return -1;
}

/* Each point's series (RSweep.eser, sorted) and the sweep's train_len. */
static int eval_series(R *r, RSweep *s) {
    for (int i = 0; i < s->nev; i++) s->ev[i].automatic = is_auto_factor(s, &s->ev[i]);
    s->train_len = s->nev ? s->ev[0].train_len : NAN;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        if (!(p->train_len == s->train_len)) s->train_len = NAN;
        if (find_series(s, p) >= 0) continue;
        if (rep_grow(r, (void **)&s->eser, &s->eser_cap, s->neser + 1, sizeof *s->eser)) return -1;
        EvalSeries *e = &s->eser[s->neser++];
        snprintf(e->scaling, sizeof e->scaling, "%s", p->scaling);
        e->factor = p->automatic ? NAN : p->factor;
        if (p->automatic)
            snprintf(e->name, sizeof e->name, "%s", p->scaling);
        else
            snprintf(e->name, sizeof e->name, "%s F=%g", p->scaling, p->factor);
    }
    if (s->neser) qsort(s->eser, (size_t)s->neser, sizeof *s->eser, series_cmp);
    for (int i = 0; i < s->nev; i++) s->ev[i].series = find_series(s, &s->ev[i]);
    return 0;
}

/* A finished run's sink probes, Bigram-Backcopy probes, top-k selection probes and `gated eval` results (context
 * length, quantization, dropped heads); var: its row. */
static int load_run_probes(R *r, RSweep *s, int var, RRun *u) {
    if (rep_bb_load_run(r, u) || load_run_sink(r, u) || rep_sparse_load_run(r, u) ||
        rep_infer_load_run(r, s, var, (int)(u - s->runs)))
        return -1;
    s->has_sink |= u->has_sink;
    s->has_bb |= u->has_bb;
    s->has_sparse |= u->has_sparse;
    s->sink_bb |= u->has_sink && u->has_bb;
    s->sink_fattn |= u->has_sink && !u->has_bb;
    EvalLoad e = {s, var, u->seq_len};
    return rep_q_each_context_last(r, u->run_id, "eval_ppl", add_eval_pt, &e);
}

/* A JSON number of the run's config at path P (a parameter), NULL when the
 * config is missing or not JSON or the value is not a number.  CASE
 * evaluates only the branch it takes: json_type would fail on text that is
 * not JSON. */
#define CFG_NUM(P)                                                                                               \
    "CASE WHEN json_valid(r.config_json) THEN CASE json_type(r.config_json, " P ") WHEN 'integer' THEN "     \
    "json_extract(r.config_json, " P ") WHEN 'real' THEN json_extract(r.config_json, " P ") END END"

/* A sweep's runs: ?1 the sweep; ?2 .. ?4 the paths of the keys the config
 * key leaves out (?2: train.lr, ?4: train.seed), ?5 .. ?7 those of
 * model.seq_len, train.steps, train.batch; ?8, ?9 those of
 * train.eval_every and train.checkpoint_every, which the budget key leaves
 * out with train.seed and train.steps.  Columns: run_id, label, seed, idx,
 * is_baseline, status, heartbeat_at, the config key, lr, seq_len, steps,
 * batch, the budget key, openblas_version, threads. */
static const char RUNS_SQL[] =
    "SELECT sr.run_id, sr.label, sr.seed, sr.idx, sr.is_baseline, r.status, r.heartbeat_at,"
    " CASE WHEN json_valid(r.config_json) THEN json_remove(r.config_json, ?2, ?3, ?4) ELSE r.config_json END,"
    " " CFG_NUM("?2") ", " CFG_NUM("?5") ", " CFG_NUM("?6") ", " CFG_NUM("?7") ","
    " CASE WHEN json_valid(r.config_json) THEN json_remove(r.config_json, ?4, ?6, ?8, ?9) ELSE r.config_json END,"
    " r.openblas_version, r.threads"
    " FROM sweep_runs sr LEFT JOIN runs r ON r.run_id = sr.run_id WHERE sr.sweep = ?1 ORDER BY sr.idx, sr.run_id";

/* The OpenBLAS core named in a run's openblas_version (openblas_get_config():
 * "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"):
 * the word before MAX_THREADS=, else the last word; "" when none is stored
 * or that word is a version number (no core named), "?" when it is not a
 * plain name (a database is untrusted input). */
static void kernel_of(const char *version, char *out, size_t cap) {
    out[0] = '\0';
    if (!version || !*version) return;
    const char *end = strstr(version, " MAX_THREADS=");
    if (!end) end = version + strlen(version);
    while (end > version && end[-1] == ' ') end--;
    const char *b = end;
    while (b > version && b[-1] != ' ') b--;
    size_t n = (size_t)(end - b);
    if (n == 0 || (*b >= '0' && *b <= '9')) return;
    int plain = n > 0 && n < cap;
    for (size_t i = 0; plain && i < n; i++)
        plain = (b[i] >= 'A' && b[i] <= 'Z') || (b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') ||
                b[i] == '_';
    snprintf(out, cap, "%.*s", plain ? (int)n : 1, plain ? b : "?");
}

/* One line of RUNS_SQL into u (zeroed); now: the time, for stale runs. */
static int load_run(R *r, sqlite3_stmt *st, double now, RRun *u) {
    const char *status = "pending";
    if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
        status = rep_col_text(st, 5);
        if (strcmp(status, "running") == 0 && now - sqlite3_column_double(st, 6) > STORE_STALE_SECONDS)
            status = "killed";
    }
    u->run_id = rep_dup(r, rep_col_text(st, 0)); /* for queries; escaped where it is written */
    u->label = rep_esc(r, rep_col_text(st, 1));
    u->status = rep_dup(r, status);
    u->cfg_key = sqlite3_column_type(st, 7) == SQLITE_NULL ? NULL : rep_dup(r, rep_col_text(st, 7));
    u->bkey = u->cfg_key ? rep_dup(r, rep_col_text(st, 12)) : NULL;
    u->seed = sqlite3_column_int64(st, 2);
    u->idx = sqlite3_column_int(st, 3);
    u->is_baseline = sqlite3_column_int(st, 4) != 0;
    if (r->failed) return -1;
    u->lr = rep_col_real(st, 8);
    u->seq_len = rep_col_real(st, 9);
    u->steps = rep_col_real(st, 10);
    u->tokens = u->steps * rep_col_real(st, 11) * u->seq_len;
    u->test_loss = u->q_drop = u->gap = u->min_rise = u->params = NAN;
    u->q_last = u->min_step = -1;
    u->sink_step = -1;
    u->sink_share = u->f_attn_rel = u->head_max = NAN;
    u->bb_l = u->bb_h = -1;
    for (int i = 0; i < BB_NV; i++) u->bbv[i] = NAN;
    for (int i = 0; i < SP_NV; i++) u->spv[i] = NAN;
    u->inf_len = -1;
    u->inf_float = NAN;
    kernel_of(sqlite3_column_type(st, 13) == SQLITE_TEXT ? rep_col_text(st, 13) : NULL, u->kernel, sizeof u->kernel);
    u->threads = sqlite3_column_int(st, 14);
    return 0;
}

/* The sweep's runs (RSweep.runs) from sweep_runs and runs. */
static int load_runs(R *r, RSweep *s) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st, RUNS_SQL, "ttttttttt", s->raw, "$.\"train.lr\"", "$.\"train.min_lr\"",
                   "$.\"train.seed\"", "$.\"model.seq_len\"", "$.\"train.steps\"", "$.\"train.batch\"",
                   "$.\"train.eval_every\"", "$.\"train.checkpoint_every\""))
        return -1;
    double now = (double)time(NULL);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rep_grow(r, (void **)&s->runs, &s->runs_cap, s->nruns + 1, sizeof *s->runs)) break;
        RRun *u = &s->runs[s->nruns];
        memset(u, 0, sizeof *u);
        s->nruns++;
        if (load_run(r, st, now, u)) break;
    }
    if (r->failed) {
        sqlite3_finalize(st);
        return -1;
    }
    return rep_q_done(r, st, rc, "read sweep_runs");
}

/* v's kernels (RVar.kernels): its finished and diverged runs' kernels in
 * the order first met, with a count each when there are two or more. */
static void row_kernels(const RSweep *s, RVar *v) {
    const char *k[8];
    int cnt[8], nk = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        if (!u->kernel[0] || (strcmp(u->status, "finished") != 0 && strcmp(u->status, "diverged") != 0)) continue;
        int j = 0;
        while (j < nk && strcmp(k[j], u->kernel) != 0) j++;
        if (j == nk && nk == 8) continue; /* more than 8 kernels in one row: the first 8 */
        if (j == nk) k[nk] = u->kernel, cnt[nk++] = 0;
        cnt[j]++;
    }
    size_t o = 0;
    v->kernels[0] = '\0';
    for (int j = 0; j < nk && o < sizeof v->kernels; j++) {
        int w = nk == 1 ? snprintf(v->kernels + o, sizeof v->kernels - o, "%s", k[j])
                        : snprintf(v->kernels + o, sizeof v->kernels - o, "%s%s %d", j ? ", " : "", k[j], cnt[j]);
        if (w < 0) break;
        o += (size_t)w;
    }
}

/* Each run's summaries and last-step probes, and the rows (RSweep.vars,
 * base) they make. */
static int load_rows(R *r, RSweep *s) {
    s->base = -1;
    for (int i = 0; i < s->nruns; i++) {
        RRun *u = &s->runs[i];
        if (q_summary(r, u->run_id, "val_loss", &u->val_loss) || q_summary(r, u->run_id, "val_ppl", &u->val_ppl) ||
            q_summary(r, u->run_id, "test_loss", &u->test_loss) ||
            q_summary(r, u->run_id, "spikes", &u->spikes) ||
            q_summary(r, u->run_id, "gate_params", &u->gate_params) ||
            q_summary(r, u->run_id, "tokens_per_s", &u->tokens_per_s) ||
            q_summary(r, u->run_id, "load_start", &u->load_start) || q_summary(r, u->run_id, "load_end", &u->load_end) ||
            q_last_metric(r, u->run_id, "f_attn", &u->f_attn) || q_last_metric(r, u->run_id, "m_act", &u->m_act) ||
            q_last_metric(r, u->run_id, "gate_mean", &u->gate_mean))
            return -1;
        RVar *v = find_var(s, u->label);
        if (!v) {
            if (rep_grow(r, (void **)&s->vars, &s->vars_cap, s->nvars + 1, sizeof *s->vars)) return -1;
            v = &s->vars[s->nvars++];
            memset(v, 0, sizeof *v);
            if (!(v->label = rep_dup(r, u->label))) return -1;
        }
        if (rep_grow(r, (void **)&v->runs, &v->cap, v->nruns + 1, sizeof *v->runs)) return -1;
        v->runs[v->nruns++] = i;
        if (rep_is_finished(u) && load_run_probes(r, s, (int)(v - s->vars), u)) return -1;
        if (u->is_baseline) v->is_baseline = 1;
        if (strcmp(u->status, "finished") == 0) v->n_fin++;
        if (strcmp(u->status, "diverged") == 0) v->n_div++;
    }
    for (int k = 0; k < s->nvars; k++) row_kernels(s, &s->vars[k]);
    for (int k = 0; k < s->nvars; k++)
        if (s->vars[k].is_baseline && s->base < 0) s->base = k;
    s->own_base = s->base;
    for (int k = 0; r->ref && k < s->nvars; k++)
        if (strcmp(s->vars[k].label, r->ref) == 0) s->base = k;
    return 0;
}

/* Whether the sweep's finished and diverged runs have more than one
 * train.lr (RSweep.lr_plot). */
static int varies_lr(const RSweep *s) {
    double lr0 = NAN;
    for (int i = 0; i < s->nruns; i++) {
        const RRun *u = &s->runs[i];
        if (isnan(u->lr) || (strcmp(u->status, "finished") != 0 && strcmp(u->status, "diverged") != 0)) continue;
        if (isnan(lr0))
            lr0 = u->lr;
        else if (u->lr != lr0)
            return 1;
    }
    return 0;
}

/* Each row's means and stds over its finished runs, and its sink
 * statistics (buf: cap >= nruns). */
static int row_means(R *r, RSweep *s, double *buf) {
    for (int k = 0; k < s->nvars; k++) {
        RVar *v = &s->vars[k];
        int n = rep_finished_values(s, v, offsetof(RRun, val_loss), buf);
        stats_mean_std(buf, n, &v->loss_mean, &v->loss_std);
        n = rep_finished_values(s, v, offsetof(RRun, val_ppl), buf);
        stats_mean_std(buf, n, &v->ppl_mean, &v->ppl_std);
        n = rep_finished_values(s, v, offsetof(RRun, f_attn), buf);
        stats_mean_std(buf, n, &v->f_attn, &v->f_attn_std);
        n = rep_finished_values(s, v, offsetof(RRun, m_act), buf);
        stats_mean_std(buf, n, &v->m_act, &v->m_act_std);
        n = rep_finished_values(s, v, offsetof(RRun, gate_mean), buf);
        stats_mean_std(buf, n, &v->gate_mean, &v->gate_std);
        v->spikes = mean_of(s, v, offsetof(RRun, spikes));
        v->tokens_per_s = mean_of(s, v, offsetof(RRun, tokens_per_s));
        v->gate_params = v->tokens = v->seq_len = NAN;
        for (int i = 0; i < v->nruns && isnan(v->gate_params); i++) v->gate_params = s->runs[v->runs[i]].gate_params;
        for (int i = 0; i < v->nruns && isnan(v->tokens); i++) {
            v->tokens = s->runs[v->runs[i]].tokens;
            v->seq_len = s->runs[v->runs[i]].seq_len;
        }
        if (row_sink(r, s, v, buf)) return -1;
        rep_bb_row(s, v, buf);
        rep_sparse_row(s, v, buf);
    }
    return 0;
}

/* Row k's Δ against its reference and its test (paired by seed, else
 * Welch), and under the lr rule Fisher's test of the divergence counts
 * (a, b: cap >= nruns). */
static void row_test(RSweep *s, int k, double *a, double *b) {
    RVar *v = &s->vars[k];
    v->p_holm = v->p_tost = v->div_p = v->sd_d = NAN;
    if (v->ref < 0) return;
    const RVar *w = &s->vars[v->ref];
    if (s->lr_rule) v->div_p = stats_fisher_exact(v->n_div, v->n_fin, w->n_div, w->n_fin);
    int n = rep_paired_values(s, v, w, offsetof(RRun, val_loss), a, b, NULL);
    if (n >= 2) {
        stats_paired(a, b, n, &v->t);
        v->have_delta = v->have_test = v->paired = 1;
        v->n_pairs = n;
        v->delta = v->t.diff;
        v->sd_d = v->t.se * sqrt(n);
    } else {
        int na = rep_finished_values(s, v, offsetof(RRun, val_loss), a);
        int nb = rep_finished_values(s, w, offsetof(RRun, val_loss), b);
        if (na >= 1 && nb >= 1) {
            v->have_delta = 1;
            v->delta = v->loss_mean - w->loss_mean;
            v->have_test = stats_welch(a, na, b, nb, &v->t) == 0;
        }
    }
}

/* The rows' statistics: means, sink statistics, the sweep's seeds and
 * eval series, each row's test (Holm comes later, over the sweep's group:
 * report_family.c). */
static int sweep_stats(R *r, RSweep *s) {
    size_t cap = (size_t)s->nruns + 1;
    double *a = malloc(sizeof(double) * cap), *b = malloc(sizeof(double) * cap);
    int rc = !a || !b ? rep_oom(r) : 0;
    if (rc == 0 && (row_means(r, s, a) || sweep_seeds(r, s) || eval_series(r, s) || rep_infer_finish(r, s))) rc = -1;
    for (int k = 0; rc == 0 && k < s->nvars; k++) {
        row_test(s, k, a, b);
        s->n_tests += s->vars[k].have_test;
    }
    free(a);
    free(b);
    return rc;
}

int rep_load_sweep(R *r, RSweep *s) {
    if (load_runs(r, s) || load_rows(r, s)) return -1;
    s->lr_plot = varies_lr(s);
    if (row_configs(r, s)) return -1;
    choose_refs(s);
    return sweep_stats(r, s);
}

void rep_free_sweep(RSweep *s) {
    for (int i = 0; i < s->nruns; i++) {
        free(s->runs[i].heads.v);
        free(s->runs[i].run_id);
        free(s->runs[i].label);
        free(s->runs[i].status);
        free(s->runs[i].cfg_key);
        free(s->runs[i].bkey);
        free(s->runs[i].skey);
    }
    for (int k = 0; k < s->nvars; k++) {
        free(s->vars[k].label);
        free(s->vars[k].key);
        free(s->vars[k].bkey);
        free(s->vars[k].runs);
        free(s->vars[k].heads.v);
    }
    for (int k = 0; k < s->nplots; k++) {
        free(s->plots[k].title);
        free(s->plots[k].base);
    }
    free(s->runs);
    free(s->vars);
    free(s->order);
    free(s->pairs);
    free(s->plots);
    free(s->seeds);
    free(s->ev);
    free(s->eser);
    free(s->inf);
    free(s->qs);
    free(s->taus);
    free(s->fracs);
    free(s->raw);
    free(s->name);
    free(s->fname);
}
