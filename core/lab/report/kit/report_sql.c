/*
 * report_sql.c — `gated report`'s toolkit (report_kit.h): prepared
 * statements with bound parameters over the store, the readers of a
 * column, per-head maps, and the values of a row's finished runs (paired
 * by seed, or all; `gated eval` results by length).  It calls nothing of
 * the report's sections or driver.
 */
#include "lab/report/kit/report_kit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int rep_ll_cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static int dbfail(R *r, const char *what) {
    char w[600];
    r->bad_db |= store_sql_words(r->db, w, sizeof w); /* a damaged file: exit 2 */
    return rep_fail(r, "%s: %s: %s", r->o->db_path, what, w);
}

/* Prepare sql and bind parameters 1.. from types: 't' const char *,
 * 'i' long long. */
int rep_q_prep(R *r, sqlite3_stmt **st, const char *sql, const char *types, ...) {
    *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) != SQLITE_OK) {
        dbfail(r, "cannot read the database");
        *st = NULL;
        return -1;
    }
    va_list ap;
    va_start(ap, types);
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        if (types[i] == 't')
            rc = sqlite3_bind_text(*st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else
            rc = sqlite3_bind_int64(*st, i + 1, (sqlite3_int64)va_arg(ap, long long));
    }
    va_end(ap);
    if (rc != SQLITE_OK) {
        dbfail(r, "bind");
        sqlite3_finalize(*st);
        *st = NULL;
        return -1;
    }
    return 0;
}

/* Finish a statement after stepping: rc is the last sqlite3_step result. */
int rep_q_done(R *r, sqlite3_stmt *st, int rc, const char *what) {
    int bad = rc != SQLITE_DONE && rc != SQLITE_ROW;
    if (bad) dbfail(r, what);
    sqlite3_finalize(st);
    return bad ? -1 : 0;
}

double rep_col_real(sqlite3_stmt *st, int i) {
    int t = sqlite3_column_type(st, i); /* text or a blob is missing, never 0 (issue 39) */
    return t == SQLITE_FLOAT || t == SQLITE_INTEGER ? sqlite3_column_double(st, i) : NAN;
}

const char *rep_col_text(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

/* Step st to its end, calling fn on every row; finalizes st. */
int rep_q_rows(R *r, sqlite3_stmt *st, RepRowFn fn, void *arg) {
    int sr, rc = 0;
    while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) rc = fn(r, arg, st);
    if (rc) {
        sqlite3_finalize(st);
        return -1;
    }
    return rep_q_done(r, st, sr, "read metrics");
}

/* Rows (context, value): for every context of the run's metric `key`, its
 * value at that context's last step. */
int rep_q_each_context_last(R *r, const char *run_id, const char *key, RepRowFn fn, void *arg) {
    sqlite3_stmt *st;
    if (rep_q_prep(r, &st,
                   "SELECT m.context, m.value FROM metrics m WHERE m.run_id = ?1 AND m.key = ?2 AND"
                   " m.step = (SELECT max(x.step) FROM metrics x WHERE x.run_id = m.run_id AND"
                   " x.key = m.key AND x.context = m.context) ORDER BY m.context",
                   "tt", run_id, key))
        return -1;
    return rep_q_rows(r, st, fn, arg);
}

/* Decimal digits at *p -> their value (<= 1000000), *p past them; -1 if
 * there are none or too many. */
static long parse_index(const char **p) {
    if (**p < '0' || **p > '9') return -1;
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (errno || v > 1000000) return -1;
    *p = end;
    return v;
}

/* "layer=N" -> N with *head = -1; "layer=N,head=M" -> N with *head = M;
 * else -1. */
long rep_parse_layer_head(const char *ctx, long *head) {
    *head = -1;
    if (strncmp(ctx, "layer=", 6) != 0) return -1;
    const char *p = ctx + 6;
    long l = parse_index(&p);
    if (l < 0) return -1;
    if (strncmp(p, ",head=", 6) == 0) {
        p += 6;
        if ((*head = parse_index(&p)) < 0) return -1;
    }
    return *p ? -1 : l;
}

/* "layer=N" exactly -> N, else -1. */
long rep_parse_layer(const char *ctx) {
    long h, l = rep_parse_layer_head(ctx, &h);
    return h < 0 ? l : -1;
}

/* m[l][h] = x, growing m (new cells NAN). */
int rep_headmap_set(R *r, HeadMap *m, int l, int h, double x) {
    if (l >= m->nl || h >= m->nh) {
        int nl = l >= m->nl ? l + 1 : m->nl, nh = h >= m->nh ? h + 1 : m->nh;
        double *v = malloc(sizeof(double) * (size_t)nl * (size_t)nh);
        if (!v) return rep_oom(r);
        for (int i = 0; i < nl * nh; i++) v[i] = NAN;
        for (int i = 0; i < m->nl; i++)
            for (int j = 0; j < m->nh; j++) v[i * nh + j] = m->v[i * m->nh + j];
        free(m->v);
        *m = (HeadMap){nl, nh, v};
    }
    m->v[l * m->nh + h] = x;
    return 0;
}

double rep_headmap_argmax(const HeadMap *m, int *l, int *h) {
    double best = NAN;
    for (int i = 0; i < m->nl * m->nh; i++)
        if (!isnan(m->v[i]) && (isnan(best) || m->v[i] > best)) {
            best = m->v[i];
            *l = i / m->nh;
            *h = i % m->nh;
        }
    return best;
}

/* Field off of run u when it is finished and has one; else NAN. */
static double fin_value(const RRun *u, size_t off) {
    return strcmp(u->status, "finished") == 0 ? *(const double *)((const char *)u + off) : NAN;
}

int rep_finished_values(const RSweep *s, const RVar *v, size_t off, double *buf) {
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *u = &s->runs[v->runs[i]];
        double x = *(const double *)((const char *)u + off);
        if (strcmp(u->status, "finished") == 0 && !isnan(x)) buf[n++] = x;
    }
    return n;
}

void rep_row_stats(const RSweep *s, const RVar *v, int (*use)(const RRun *u), size_t off, int nv, double *m,
                   double *sd, double *buf) {
    for (int c = 0; c < nv; c++) {
        int n = 0;
        for (int i = 0; i < v->nruns; i++) {
            const RRun *u = &s->runs[v->runs[i]];
            double x = ((const double *)((const char *)u + off))[c];
            if (use(u) && !isnan(x)) buf[n++] = x;
        }
        stats_mean_std(buf, n, &m[c], &sd[c]);
    }
}

int rep_paired_values(const RSweep *s, const RVar *v, const RVar *w, size_t off, double *a, double *b,
                      long long *seeds) {
    const RVar *rows[2] = {v, w};
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < rows[q]->nruns; i++) {
            const RRun *x = &s->runs[rows[q]->runs[i]];
            if (isnan(fin_value(x, off))) continue;
            for (int j = i + 1; j < rows[q]->nruns; j++) {
                const RRun *y = &s->runs[rows[q]->runs[j]];
                if (y->seed == x->seed && !isnan(fin_value(y, off))) return 0;
            }
        }
    int n = 0;
    for (int i = 0; i < v->nruns; i++) {
        const RRun *x = &s->runs[v->runs[i]];
        if (isnan(fin_value(x, off))) continue;
        for (int j = 0; j < w->nruns; j++) {
            const RRun *y = &s->runs[w->runs[j]];
            if (y->seed == x->seed && !isnan(fin_value(y, off))) {
                a[n] = fin_value(x, off);
                b[n] = fin_value(y, off);
                if (seeds) seeds[n] = x->seed;
                n++;
                break;
            }
        }
    }
    return n;
}

/* The distinct lengths of series j on split sp, ascending, into lens
 * (cap >= nev); returns how many. */
int rep_eval_lens(const RSweep *s, int j, int sp, long long *lens) {
    int n = 0;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        int dup = 0;
        for (int q = 0; q < n; q++) dup |= lens[q] == p->len;
        if (p->series == j && p->split == sp && !dup) lens[n++] = p->len;
    }
    qsort(lens, (size_t)n, sizeof *lens, rep_ll_cmp);
    return n;
}

/* eval_ppl of row k in series j, split sp, at length len: mean and std
 * over the row's finished runs (buf: cap >= nev); returns how many. */
int rep_eval_stats(const RSweep *s, int k, int j, int sp, long long len, double *buf, double *m, double *sd) {
    int n = 0;
    for (int i = 0; i < s->nev; i++) {
        const EvalPt *p = &s->ev[i];
        if (p->var == k && p->series == j && p->split == sp && p->len == len) buf[n++] = p->ppl;
    }
    stats_mean_std(buf, n, m, sd);
    return n;
}
