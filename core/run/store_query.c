/*
 * store_query.c — finding runs and reading them back (store.h, "Finding
 * runs" and "Reading runs back"): what `gated ls` and `gated show` print
 * (cli/store_show.c formats it), eval's look-ups, a run's code version.
 *
 * Every string handed out is the file's text as is: the caller escapes it
 * before it reaches a terminal (a merged database is untrusted).
 */
#include "run/store_impl.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* finding a run                                                       */
/* ------------------------------------------------------------------ */

/* Runs matching one query (one text parameter): count, the first id
 * (malloc'd, into *first if non-NULL and count >= 1) and a list of up to 5
 * ids appended to list. */
static int match_runs(Store *s, const char *sql, const char *arg, char **first, char *list,
                      size_t cap, long long *count) {
    sqlite3_stmt *st;
    *count = 0;
    if (sto_prep(s, &st, sql)) return -1;
    if (sto_bind(s, st, "t", arg)) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r;
    size_t len = strlen(list);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = sto_text_or(st, 0, "");
        if (*count == 0 && first) {
            *first = strdup(id);
            if (!*first) {
                (void)sqlite3_finalize(st);
                return sto_fail(s, "%s: show: out of memory", s->path);
            }
        }
        if (*count < 5 && len < cap) {
            char q[64];
            int n = snprintf(list + len, cap - len, "%s%s", *count ? ", " : "", store_escape(id, q, sizeof q));
            if (n > 0) len += (size_t)n;
            if (len >= cap) len = cap - 1;
        } else if (*count == 5 && len < cap) {
            int n = snprintf(list + len, cap - len, ", ...");
            if (n > 0) len += (size_t)n;
            if (len >= cap) len = cap - 1;
        }
        (*count)++;
    }
    if (r != SQLITE_DONE) {
        sto_dbfail(s, "show: find run");
        (void)sqlite3_finalize(st);
        if (first) free(*first), *first = NULL;
        return -1;
    }
    if (sto_fin(s, st)) {
        if (first) free(*first), *first = NULL;
        return -1;
    }
    return 0;
}

char *store_resolve_run(Store *s, const char *arg) {
    if (!arg || !*arg) {
        sto_fail(s, "%s: empty run id or name", s->path);
        return NULL;
    }
    static const char *const queries[] = {
        "SELECT run_id FROM runs WHERE run_id = ?1",
        "SELECT run_id FROM runs WHERE name = ?1 ORDER BY started_at, run_id",
        "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1 ORDER BY run_id",
    };
    static const char *const what[] = {"run id", "name", "run id prefix"};
    char shown[256];
    store_escape(arg, shown, sizeof shown);
    for (int q = 0; q < 3; q++) {
        char *id = NULL;
        char list[200] = "";
        long long n = 0;
        if (match_runs(s, queries[q], arg, &id, list, sizeof list, &n)) return NULL;
        if (n == 1) return id;
        free(id);
        if (n > 1) {
            sto_fail(s, "%s: '%s' is ambiguous: %s matches %lld runs (%s)", s->path, shown, what[q], n,
                 list);
            return NULL;
        }
    }
    sto_fail(s, "%s: no run matches '%s' (by run id, name or run id prefix)", s->path, shown);
    return NULL;
}

int store_find_run(Store *s, const char *arg, char id[17], char **config_json) {
    char *rid = store_resolve_run(s, arg);
    if (!rid) return -1;
    snprintf(id, 17, "%s", rid);
    free(rid);
    if (!config_json) return 0;
    *config_json = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT config_json FROM runs WHERE run_id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *js = (const char *)sqlite3_column_text(st, 0);
        *config_json = js ? strdup(js) : NULL;
    }
    sqlite3_finalize(st);
    if (!*config_json) return sto_fail(s, "%s: run %s: cannot read its config", s->path, id);
    return 0;
}

/* One text column of a run's row (sql selects it; "unknown" for NULL). */
static const char *run_text(Store *s, const char *sql, const char *what, const char *run_id, char *buf, size_t cap) {
    sqlite3_stmt *st;
    if (sto_run_row(s, sql, run_id, what, &st)) return NULL;
    int n = snprintf(buf, cap, "%s", sto_text_or(st, 0, "unknown"));
    if (sto_fin(s, st)) return NULL;
    if (n < 0 || (size_t)n >= cap) {
        sto_fail(s, "%s: %s: buffer too small", s->path, what);
        return NULL;
    }
    return buf;
}

const char *store_run_code_version(Store *s, const char *run_id, char *buf, size_t cap) {
    return run_text(s, "SELECT code_version FROM runs WHERE run_id = ?1", "run_code_version", run_id, buf, cap);
}

const char *store_run_cflags(Store *s, const char *run_id, char *buf, size_t cap) {
    return run_text(s, "SELECT cflags FROM runs WHERE run_id = ?1", "run_cflags", run_id, buf, cap);
}

/* ------------------------------------------------------------------ */
/* reading runs back                                                   */
/* ------------------------------------------------------------------ */

/* *out = a copy of column i's text (NULL when the text is NULL). */
static int dup_col(Store *s, sqlite3_stmt *st, int i, char **out) {
    const char *t = sto_text(st, i);
    *out = t ? strdup(t) : NULL;
    if (t && !*out) return sto_fail(s, "%s: out of memory", s->path);
    return 0;
}

/* Column i as a double, NaN when it is SQL NULL, text or a blob (a metric
 * value of 'abc' is missing, never 0; store_guard.c refuses such values in
 * the smaller tables at open). */
static double col_real(sqlite3_stmt *st, int i) {
    int t = sqlite3_column_type(st, i);
    return t == SQLITE_FLOAT || t == SQLITE_INTEGER ? sqlite3_column_double(st, i) : NAN;
}

/* Room for one more element in *rows (*cap of them, n used). */
static int grow(Store *s, void **rows, int *cap, int n, size_t size) {
    if (n < *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*rows, (size_t)nc * size);
    if (!p) return sto_fail(s, "%s: out of memory", s->path);
    *rows = p;
    *cap = nc;
    return 0;
}

/* Finish a row loop: r is the last sqlite3_step result (or -1 after a
 * failure already recorded); finalizes st.  0 or -1. */
static int end_rows(Store *s, sqlite3_stmt *st, int r, const char *what) {
    if (r != SQLITE_DONE) {
        if (r != -1) sto_dbfail(s, what);
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st);
}

static int name_width(Store *s, int *w) {
    sqlite3_stmt *st;
    if (sto_prep(s, &st, "SELECT coalesce(max(length(name)), 0) FROM runs")) return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, "ls");
        (void)sqlite3_finalize(st);
        return -1;
    }
    *w = sqlite3_column_int(st, 0);
    return sto_fin(s, st);
}

static int list_row(Store *s, sqlite3_stmt *st, double now, StoreRunRow *r) {
    memset(r, 0, sizeof *r);
    r->has_steps = sqlite3_column_type(st, 5) != SQLITE_NULL;
    r->steps = sqlite3_column_int64(st, 5);
    r->val_loss = col_real(st, 6);
    r->started_at = sqlite3_column_double(st, 4);
    r->status = strdup(sto_effective_status(sto_text(st, 2), sqlite3_column_double(st, 3), now));
    if (!r->status) return sto_fail(s, "%s: ls: out of memory", s->path);
    return dup_col(s, st, 0, &r->run_id) || dup_col(s, st, 1, &r->name) ? -1 : 0;
}

int store_list_runs(Store *s, StoreRunList *out) {
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    if (name_width(s, &out->name_width)) return -1;
    if (sto_prep_bind(s, &st,
                      "SELECT r.run_id, r.name, r.status, r.heartbeat_at, r.started_at,"
                      " (SELECT max(m.step) FROM metrics m WHERE m.run_id = r.run_id),"
                      " coalesce((SELECT u.value FROM summary u WHERE u.run_id = r.run_id"
                      "           AND u.key = ?1 AND u.context = ?2),"
                      "          (SELECT m.value FROM metrics m WHERE m.run_id = r.run_id"
                      "           AND m.key = ?1 AND m.context = ?2 ORDER BY m.step DESC LIMIT 1))"
                      " FROM runs r ORDER BY r.started_at, r.run_id",
                      "tt", "val_loss", ""))
        return -1;
    double now = sto_now();
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        if (grow(s, (void **)&out->rows, &cap, out->n, sizeof *out->rows) ||
            list_row(s, st, now, &out->rows[out->n++])) {
            r = -1;
            break;
        }
    if (end_rows(s, st, r, "ls") == 0) return 0;
    store_run_list_free(out);
    return -1;
}

void store_run_list_free(StoreRunList *l) {
    for (int i = 0; l && i < l->n; i++) free(l->rows[i].run_id), free(l->rows[i].name), free(l->rows[i].status);
    if (l) free(l->rows), memset(l, 0, sizeof *l);
}

int store_run_info(Store *s, const char *run_id, StoreRunInfo *o) {
    memset(o, 0, sizeof *o);
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT run_id, name, status, config_json, seed, threads, code_version, git_dirty,"
                      " host, cpu_model, compiler, cflags, openblas_version, sqlite_version,"
                      " libyaml_version, argv, started_at, ended_at, heartbeat_at, error_text,"
                      " diverged_step, env_id FROM runs WHERE run_id = ?1",
                      "t", run_id))
        return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, "show");
        (void)sqlite3_finalize(st);
        return -1;
    }
    /* the text columns, by column number (NULL: not text) */
    char **text[16] = {&o->run_id,   &o->name,        &o->status,           &o->config_json,    NULL,
                       NULL,         &o->code_version, NULL,                &o->host,           &o->cpu_model,
                       &o->compiler, &o->cflags,      &o->openblas_version, &o->sqlite_version, &o->libyaml_version,
                       &o->argv};
    int rc = 0;
    for (int i = 0; i < 16 && rc == 0; i++)
        if (text[i]) rc = dup_col(s, st, i, text[i]);
    if (rc == 0 && sqlite3_column_type(st, 19) != SQLITE_NULL) {
        o->error_text = strdup(sto_text_or(st, 19, ""));
        if (!o->error_text) rc = sto_fail(s, "%s: out of memory", s->path);
    }
    o->seed = sqlite3_column_int64(st, 4);
    o->threads = sqlite3_column_int(st, 5);
    o->git_dirty = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 7) != 0;
    o->started_at = sqlite3_column_double(st, 16);
    o->ended_at = col_real(st, 17);
    o->heartbeat_at = sqlite3_column_double(st, 18);
    o->has_diverged = sqlite3_column_type(st, 20) != SQLITE_NULL;
    o->diverged_step = sqlite3_column_int64(st, 20);
    o->env_id = sqlite3_column_int64(st, 21);
    o->read_at = sto_now();
    o->effective_status = sto_effective_status(o->status, o->heartbeat_at, o->read_at);
    if (rc) (void)sqlite3_finalize(st);
    if (rc || sto_fin(s, st)) {
        store_run_info_free(o);
        return -1;
    }
    return 0;
}

void store_run_info_free(StoreRunInfo *o) {
    if (!o) return;
    char *text[] = {o->run_id,   o->name,      o->status,   o->config_json,    o->code_version,
                    o->host,     o->cpu_model, o->compiler, o->cflags,         o->openblas_version,
                    o->sqlite_version, o->libyaml_version,  o->argv,           o->error_text};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) free(text[i]);
    memset(o, 0, sizeof *o);
}

int store_read_summary(Store *s, const char *run_id, StoreSummaryRow **rows, int *n) {
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT key, context, value, text FROM summary WHERE run_id = ?1"
                      " ORDER BY key, length(context), context",
                      "t", run_id))
        return -1;
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(s, (void **)rows, &cap, *n, sizeof **rows)) {
            r = -1;
            break;
        }
        StoreSummaryRow *u = &(*rows)[(*n)++];
        memset(u, 0, sizeof *u);
        u->value = col_real(st, 2);
        if (dup_col(s, st, 0, &u->key) || dup_col(s, st, 1, &u->context) || dup_col(s, st, 3, &u->text)) {
            r = -1;
            break;
        }
    }
    if (end_rows(s, st, r, "show: summary") == 0) return 0;
    store_summary_free(*rows, *n);
    *rows = NULL;
    *n = 0;
    return -1;
}

void store_summary_free(StoreSummaryRow *rows, int n) {
    for (int i = 0; rows && i < n; i++) free(rows[i].key), free(rows[i].context), free(rows[i].text);
    free(rows);
}

/* How many distinct (key, context) series the run has at a context other than ''. */
/* The one integer a prepared statement gives, into *n; the statement is
 * finalized.  0 or -1 (what names the read in the message). */
static int one_count(Store *s, sqlite3_stmt *st, const char *what, long long *n) {
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, what);
        (void)sqlite3_finalize(st);
        return -1;
    }
    *n = sqlite3_column_int64(st, 0);
    return sto_fin(s, st);
}

static int count_context_series(Store *s, const char *run_id, long long *n) {
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT count(DISTINCT key || char(31) || context) FROM metrics"
                      " WHERE run_id = ?1 AND context <> ?2",
                      "tt", run_id, ""))
        return -1;
    return one_count(s, st, "show: metrics", n);
}

int store_read_series(Store *s, const char *run_id, StoreSeries **rows, int *n, long long *n_other) {
    *rows = NULL;
    *n = 0;
    *n_other = 0;
    sqlite3_stmt *st;
    /* SQLite: with max(), bare columns come from the row holding the max. */
    if (sto_prep_bind(s, &st,
                      "SELECT key, count(*), max(step), value FROM metrics"
                      " WHERE run_id = ?1 AND context = ?2 GROUP BY key ORDER BY key",
                      "tt", run_id, ""))
        return -1;
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(s, (void **)rows, &cap, *n, sizeof **rows)) {
            r = -1;
            break;
        }
        StoreSeries *m = &(*rows)[(*n)++];
        m->points = sqlite3_column_int64(st, 1);
        m->last_step = sqlite3_column_int64(st, 2);
        m->last_value = col_real(st, 3);
        if (dup_col(s, st, 0, &m->key)) {
            r = -1;
            break;
        }
    }
    if (end_rows(s, st, r, "show: metrics") == 0 && count_context_series(s, run_id, n_other) == 0) return 0;
    store_series_free(*rows, *n);
    *rows = NULL;
    *n = 0;
    return -1;
}

void store_series_free(StoreSeries *rows, int n) {
    for (int i = 0; rows && i < n; i++) free(rows[i].key);
    free(rows);
}

/* Find or add a layer row (kept sorted by layer); NULL when out of memory. */
static StoreProbe *probe_row(StoreProbe **rows, int *n, int *cap, long long layer) {
    for (int i = 0; i < *n; i++)
        if ((*rows)[i].layer == layer) return &(*rows)[i];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        StoreProbe *p = realloc(*rows, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        *rows = p;
        *cap = nc;
    }
    int at = *n;
    while (at > 0 && (*rows)[at - 1].layer > layer) at--;
    memmove(*rows + at + 1, *rows + at, (size_t)(*n - at) * sizeof **rows);
    (*rows)[at] = (StoreProbe){.layer = layer};
    (*n)++;
    return &(*rows)[at];
}

/* 'layer=N' exactly -> N; -1 otherwise. */
static long long parse_layer(const char *ctx) {
    if (!ctx || strncmp(ctx, "layer=", 6) != 0 || ctx[6] < '0' || ctx[6] > '9') return -1;
    char *end;
    errno = 0;
    long long v = strtoll(ctx + 6, &end, 10);
    if (errno || *end) return -1;
    return v;
}

/* Rows of one probe query (k: 0 f_attn, 1 m_act, 2 resid_kurtosis) into
 * the layer table; a layer that already has the value keeps it. */
static int probe_query(Store *s, const char *sql, const char *run_id, int k, StoreProbe **rows, int *n, int *cap) {
    static const char *const keys[3] = {"f_attn", "m_act", "resid_kurtosis"};
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st, sql, "ttt", run_id, keys[k], "layer=[0-9]*")) return -1;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        long long layer = parse_layer(sto_text(st, 0));
        if (layer < 0) continue;
        StoreProbe *p = probe_row(rows, n, cap, layer);
        if (!p) {
            sto_fail(s, "%s: show: out of memory", s->path);
            r = -1;
            break;
        }
        double v = col_real(st, 1);
        if (k == 0 && !p->has_f) p->f_attn = v, p->has_f = 1;
        if (k == 1 && !p->has_m) p->m_act = v, p->has_m = 1;
        if (k == 2 && !p->has_k) p->kurt = v, p->has_k = 1;
    }
    return end_rows(s, st, r, "show: probes");
}

int store_read_probes(Store *s, const char *run_id, StoreProbe **rows, int *n) {
    /* summary first; metrics (last step per layer) fill what summary lacks. */
    static const char *const sqls[2] = {
        "SELECT context, value FROM summary WHERE run_id = ?1 AND key = ?2 AND context GLOB ?3",
        "SELECT m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key = ?2"
        " AND m.context GLOB ?3 AND m.step = (SELECT max(step) FROM metrics"
        " WHERE run_id = ?1 AND key = ?2 AND context = m.context)",
    };
    *rows = NULL;
    *n = 0;
    int cap = 0;
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < 3; k++)
            if (probe_query(s, sqls[q], run_id, k, rows, n, &cap)) {
                free(*rows);
                *rows = NULL;
                *n = 0;
                return -1;
            }
    return 0;
}

int store_parse_counts(const char *js, long long **out, int *nout) {
    *out = NULL;
    *nout = 0;
    Json *j = js ? json_parse(js, NULL, 0) : NULL;
    if (!j || j->type != JSON_ARR) {
        json_free(j);
        return -1;
    }
    long long *v = malloc((size_t)(j->n ? j->n : 1) * sizeof *v);
    int ok = v != NULL;
    for (int i = 0; ok && i < j->n; i++) {
        /* integers as written: a double would round counts past 2^53 */
        const Json *e = j->v[i];
        char *end;
        errno = 0;
        ok = e->type == JSON_NUM && e->str && (v[i] = strtoll(e->str, &end, 10), !errno && end != e->str && !*end) &&
             v[i] >= 0; /* counts */
    }
    if (ok) *out = v, *nout = j->n;
    else free(v);
    json_free(j);
    return ok ? 0 : -1;
}

int store_read_histograms(Store *s, const char *run_id, const char *key, StoreHist **rows, int *n) {
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT h.context, h.step, h.lo, h.hi, h.counts FROM histograms h"
                      " WHERE h.run_id = ?1 AND h.key = ?2 AND h.step = (SELECT max(step) FROM histograms"
                      " WHERE run_id = ?1 AND key = ?2 AND context = h.context)"
                      " ORDER BY length(h.context), h.context",
                      "tt", run_id, key))
        return -1;
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(s, (void **)rows, &cap, *n, sizeof **rows)) {
            r = -1;
            break;
        }
        StoreHist *h = &(*rows)[(*n)++];
        memset(h, 0, sizeof *h);
        h->step = sqlite3_column_int64(st, 1);
        h->lo = sqlite3_column_double(st, 2);
        h->hi = sqlite3_column_double(st, 3);
        if (store_parse_counts(sto_text(st, 4), &h->counts, &h->nbins)) h->nbins = -1;
        if (dup_col(s, st, 0, &h->context)) {
            r = -1;
            break;
        }
    }
    if (end_rows(s, st, r, "show: histograms") == 0) return 0;
    store_histograms_free(*rows, *n);
    *rows = NULL;
    *n = 0;
    return -1;
}

void store_histograms_free(StoreHist *rows, int n) {
    for (int i = 0; rows && i < n; i++) free(rows[i].context), free(rows[i].counts);
    free(rows);
}

/* ------------------------------------------------------------------ */
/* what a resume needs                                                 */
/* ------------------------------------------------------------------ */

/* Distinct steps in 1..step (multiples of every, when every > 0) with a
 * metric key at context '' of run_id, into *n.  0 or -1. */
static int count_steps(Store *s, const char *run_id, const char *key, long long step, long long every,
                       long long *n) {
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT count(DISTINCT step) FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ''"
                      " AND step BETWEEN 1 AND ?3 AND (?4 <= 0 OR step % ?4 = 0)",
                      "ttii", run_id, key, step, every))
        return -1;
    return one_count(s, st, "resume: count rows", n);
}

int store_run_rows_through(Store *s, const char *run_id, long long step, long long eval_every, char *why,
                           size_t cap) {
    static const char *const keys[] = {"train_loss", "lr", "grad_norm", "val_loss"};
    if (store_flush(s)) return -1;
    for (int k = 0; k < 4; k++) {
        long long every = k == 3 ? eval_every : 0, want = every > 0 ? step / every : step, n;
        if (k == 3 && every <= 0) continue;
        if (count_steps(s, run_id, keys[k], step, every, &n)) return -1;
        if (n != want) {
            snprintf(why, cap, "%s holds %lld of the run's %lld %s rows of steps 1-%lld%s", s->path, n, want, keys[k],
                     step, k == 3 ? " (its evaluations)" : "");
            return 0;
        }
    }
    return 1;
}

long long store_run_last_step(Store *s, const char *run_id) {
    sqlite3_stmt *st;
    long long n;
    if (store_flush(s) ||
        sto_prep_bind(s, &st,
                      "SELECT coalesce(max(step), 0) FROM metrics WHERE run_id = ?1 AND key = ?2 AND context = ''"
                      " AND typeof(step) = 'integer'",
                      "tt", run_id, "train_loss"))
        return -1;
    return one_count(s, st, "the run's last step", &n) ? -1 : n;
}

/* ------------------------------------------------------------------ */
/* which databases' checkpoints hold this one's runs                   */
/* ------------------------------------------------------------------ */

int store_db_knows(Store *s, const char *db_id) {
    if (!store_run_id_valid(db_id)) return 0;
    if (s->db_id[0] && strcmp(s->db_id, db_id) == 0) return 2;
    char key[64];
    snprintf(key, sizeof key, "%s%s", STORE_MERGED_KEY, db_id);
    int has = sto_has_table(s, "meta");
    if (has <= 0) return has;
    sqlite3_stmt *st;
    long long n;
    if (sto_prep_bind(s, &st, "SELECT count(*) FROM meta WHERE key = ?1", "t", key) ||
        one_count(s, st, "meta: merged database ids", &n))
        return -1;
    return n > 0;
}
