/*
 * export.c — `gated export` (see export.h): the selected runs first, their
 * configs parsed once each (the config columns need them all before the
 * header), then one query per run (and per --key) on the store's views.
 * A config key that has no effect on a run (config_key_applies: the
 * gate's keys of an ungated run, ...) is left out of the run's config, so
 * its cell is empty.
 * Everything read from the database is untrusted: it reaches the output
 * only through csv_fput_text / json_fput_text, and the SQL binds every
 * value.
 */
#include "lab/export.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "run/config.h"
#include "util/csv.h"
#include "util/json.h"
#include "util/util.h"

const char *const export_format_names[] = {"csv", "jsonl", NULL};
const char *const export_config_names[] = {"varying", "all", "none", NULL};

/* The fixed columns, in output order; the row queries select them so. */
static const char *const FIXED[] = {"run_id", "name", "status", "seed", "sweep", "label",
                                    "key",    "context", "layer", "head", "step",  "value", "t"};
enum { NFIXED = sizeof FIXED / sizeof FIXED[0], COL_T = NFIXED - 1 };

#define ROW_COLS "run_id, name, status, seed, sweep, label, key, context, layer, head, step, value"
#define ROW_WHERE " run_id = ?1 AND (?2 IS NULL OR key = ?2)"
#define ROW_ORDER " ORDER BY key, layer, head, context, step"
/* [with a sweep][with t] */
static const char *const ROW_SQL[2][2] = {
    {"SELECT " ROW_COLS " FROM run_metrics WHERE" ROW_WHERE ROW_ORDER,
     "SELECT " ROW_COLS ", t FROM run_metrics WHERE" ROW_WHERE ROW_ORDER},
    {"SELECT " ROW_COLS " FROM sweep_metrics WHERE sweep = ?3 AND" ROW_WHERE ROW_ORDER,
     "SELECT " ROW_COLS ", t FROM sweep_metrics WHERE sweep = ?3 AND" ROW_WHERE ROW_ORDER},
};

typedef struct {
    char *id;
    Json *cfg; /* the parsed config JSON; NULL when unreadable (every key then missing) */
} XRun;

typedef struct {
    char *name;      /* the column's name */
    const char *key; /* the config key (owned by the first run's Json that has it) */
} XCol;

typedef struct {
    Store *s;
    sqlite3 *db;
    const ExportOpts *o;
    FILE *f;
    XRun *runs;
    int nruns;
    XCol *cols;
    int ncols, has_t;
    int bad_db; /* a read failed for the file's sake */
    char *err;
    size_t cap;
} X;

static int xfail(X *x, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xfail(X *x, int rc, const char *fmt, ...) {
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (x->cap) store_escape(raw, x->err, x->cap); /* SQLite's messages quote the file's text */
    return rc;
}

static int dbfail(X *x, const char *what) {
    char w[600];
    x->bad_db |= store_sql_words(x->db, w, sizeof w); /* a damaged file: export_metrics returns -2 */
    return xfail(x, -1, "%s: export: %s: %s", store_path(x->s), what, w);
}

static int oom(X *x) { return xfail(x, -1, "%s: export: out of memory", store_path(x->s)); }

/* Prepare sql and bind text parameters 1..n (NULL binds NULL). */
static int prep(X *x, sqlite3_stmt **st, const char *sql, int n, ...) {
    if (sqlite3_prepare_v2(x->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return dbfail(x, "prepare");
    }
    va_list ap;
    va_start(ap, n);
    int rc = SQLITE_OK;
    for (int i = 1; i <= n && rc == SQLITE_OK; i++) {
        const char *v = va_arg(ap, const char *);
        rc = v ? sqlite3_bind_text(*st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(*st, i);
    }
    va_end(ap);
    if (rc != SQLITE_OK) {
        dbfail(x, "bind");
        sqlite3_finalize(*st);
        *st = NULL;
        return -1;
    }
    return 0;
}

/* 1 when the one-row query sql (text parameters) gives a row, 0 when not,
 * -1 on error. */
static int exists(X *x, const char *sql, int n, const char *a, const char *b) {
    sqlite3_stmt *st;
    if (prep(x, &st, sql, n, a, b)) return -1;
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE) return dbfail(x, "read");
    return r == SQLITE_ROW;
}

/* ------------------------------------------------------------------ */
/* which runs                                                          */
/* ------------------------------------------------------------------ */

static int in_list(char **ids, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0) return 1;
    return 0;
}

/* Whether run id has a row under the key filter. */
static int has_rows(X *x, const char *id) {
    static const char q[] = "SELECT 1 FROM metrics WHERE run_id = ?1 AND (?2 IS NULL OR key = ?2) LIMIT 1";
    if (x->o->nkeys == 0) return exists(x, q, 2, id, NULL);
    for (int k = 0; k < x->o->nkeys; k++) {
        int e = exists(x, q, 2, id, x->o->keys[k]);
        if (e) return e;
    }
    return 0;
}

static int keep_run(X *x, const char *id, char **want, int nwant) {
    if (x->o->nruns && !in_list(want, nwant, id)) return 0;
    if (x->o->sweep) {
        int e = exists(x, "SELECT 1 FROM sweep_runs WHERE sweep = ?1 AND run_id = ?2", 2, x->o->sweep, id);
        if (e <= 0) return e;
    }
    return has_rows(x, id);
}

/* Drop from run r's config the keys that have no effect on the run
 * (config_key_applies: the gate's keys of an ungated run, ...), so their
 * cells are empty and grouping by them cannot merge runs they do not
 * describe.  The run's Config is its members set one by one over the
 * defaults, so a member that does not read back (a hostile string, a key
 * of another schema) leaves the others' effect known. */
static void drop_idle_keys(XRun *r) {
    Config c;
    ConfigError e;
    config_defaults(&c);
    Json *o = r->cfg;
    for (int i = 0; i < o->n; i++) {
        const char *t = json_text(o->v[i]);
        char *set = NULL;
        if (t && config_find(o->keys[i]) && asprintf(&set, "%s=%s", o->keys[i], t) >= 0) (void)config_set(&c, set, &e);
        free(set);
    }
    int k = 0;
    for (int i = 0; i < o->n; i++) {
        const ConfigKey *key = config_find(o->keys[i]);
        if (key && !config_key_applies(&c, key)) {
            free(o->keys[i]);
            json_free(o->v[i]);
            continue;
        }
        o->keys[k] = o->keys[i], o->v[k] = o->v[i], k++;
    }
    o->n = k;
}

static int add_run(X *x, const char *id, const char *config_json, int *capr) {
    if (x->nruns == *capr) {
        int nc = *capr ? 2 * *capr : 16;
        XRun *r = realloc(x->runs, sizeof *r * (size_t)nc);
        if (!r) return oom(x);
        x->runs = r, *capr = nc;
    }
    XRun *r = &x->runs[x->nruns];
    r->id = strdup(id);
    if (!r->id) return oom(x);
    x->nruns++;
    r->cfg = config_json ? json_parse(config_json, NULL, 0) : NULL;
    if (r->cfg && r->cfg->type != JSON_OBJ) json_free(r->cfg), r->cfg = NULL;
    if (r->cfg) drop_idle_keys(r);
    return 0;
}

/* The selected runs, oldest first, each with its parsed config. */
static int select_runs(X *x, char **want, int nwant) {
    sqlite3_stmt *st;
    if (prep(x, &st, "SELECT run_id, config_json FROM runs ORDER BY started_at, run_id", 0)) return -1;
    int r, rc = 0, capr = 0;
    while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (!id) continue;
        int k = keep_run(x, id, want, nwant);
        if (k < 0) rc = -1;
        if (k > 0) rc = add_run(x, id, (const char *)sqlite3_column_text(st, 1), &capr);
    }
    if (rc == 0 && r != SQLITE_DONE) rc = dbfail(x, "read runs");
    sqlite3_finalize(st);
    return rc;
}

/* The --run arguments as run ids; -2 for one that matches no run or
 * several. */
static int resolve_runs(X *x, char ***want) {
    *want = calloc((size_t)(x->o->nruns ? x->o->nruns : 1), sizeof **want);
    if (!*want) return oom(x);
    for (int i = 0; i < x->o->nruns; i++)
        if (!((*want)[i] = store_resolve_run(x->s, x->o->runs[i]))) return xfail(x, -2, "%s", store_errmsg(x->s));
    return 0;
}

/* ------------------------------------------------------------------ */
/* config columns                                                      */
/* ------------------------------------------------------------------ */

/* A config value as comparable text: a scalar's text, "" for a container,
 * NULL when missing. */
static const char *cfg_text(const XRun *r, const char *key) {
    const Json *v = json_get(r->cfg, key);
    if (!v) return NULL;
    const char *t = json_text(v);
    return t ? t : "";
}

static int is_fixed(const char *name) {
    for (int i = 0; i < NFIXED; i++)
        if (strcmp(FIXED[i], name) == 0) return 1;
    return 0;
}

static int have_col(const X *x, const char *key) {
    for (int i = 0; i < x->ncols; i++)
        if (strcmp(x->cols[i].key, key) == 0) return 1;
    return 0;
}

/* Whether key's value differs between the runs, or is missing in some. */
static int varies(const X *x, const char *key) {
    const char *first = cfg_text(&x->runs[0], key);
    for (int i = 1; i < x->nruns; i++) {
        const char *t = cfg_text(&x->runs[i], key);
        if (!first || !t || strcmp(first, t) != 0) return 1;
    }
    return !first;
}

static int config_columns(X *x) {
    if (x->o->config == EXPORT_CONFIG_NONE) return 0;
    int capc = 0;
    for (int i = 0; i < x->nruns; i++)
        for (int k = 0; x->runs[i].cfg && k < x->runs[i].cfg->n; k++) {
            const char *key = x->runs[i].cfg->keys[k];
            if (have_col(x, key) || (x->o->config == EXPORT_CONFIG_VARYING && !varies(x, key))) continue;
            if (x->ncols == capc) {
                capc = capc ? 2 * capc : 32;
                XCol *c = realloc(x->cols, sizeof *c * (size_t)capc);
                if (!c) return oom(x);
                x->cols = c;
            }
            size_t n = strlen(key) + 8;
            char *name = malloc(n);
            if (!name) return oom(x);
            snprintf(name, n, "%s%s", is_fixed(key) ? "config." : "", key);
            x->cols[x->ncols++] = (XCol){name, key};
        }
    return 0;
}

/* ------------------------------------------------------------------ */
/* writing                                                             */
/* ------------------------------------------------------------------ */

static int write_header(X *x) {
    int bad = 0, csv = x->o->format == EXPORT_CSV;
    int nf = x->has_t ? NFIXED : NFIXED - 1;
    if (!csv) return 0; /* JSON lines name every member on every line */
    for (int i = 0; i < nf + x->ncols; i++) {
        if (i) bad |= fputc(',', x->f) == EOF;
        bad |= csv_fput_text(i < nf ? FIXED[i] : x->cols[i - nf].name, x->f) != 0;
    }
    bad |= fputc('\n', x->f) == EOF;
    return bad ? -1 : 0;
}

/* Column i of st: integers as integers, reals by util_fmt_double (JSON:
 * non-finite as null), text quoted, NULL empty (JSON: null). */
static int put_col(X *x, sqlite3_stmt *st, int i) {
    FILE *f = x->f;
    char b[32];
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return x->o->format == EXPORT_CSV ? 0 : fputs("null", f) == EOF;
    case SQLITE_INTEGER: return fprintf(f, "%lld", (long long)sqlite3_column_int64(st, i)) < 0;
    case SQLITE_FLOAT:
        if (x->o->format == EXPORT_JSONL) return json_fput_num(sqlite3_column_double(st, i), f) != 0;
        return fputs(util_fmt_double(sqlite3_column_double(st, i), b, sizeof b), f) == EOF;
    default: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        if (!t) t = "";
        return x->o->format == EXPORT_CSV ? csv_fput_text(t, f) != 0 : json_fput_text(t, f) != 0;
    }
    }
}

/* A config value: JSON as json_fput_value writes it; CSV: a number as
 * written, true / false, text quoted, empty when missing (or a container). */
static int put_cfg(X *x, const XRun *r, const char *key) {
    const Json *v = json_get(r->cfg, key);
    if (x->o->format == EXPORT_JSONL) return json_fput_value(v, x->f) != 0;
    if (!v || v->type == JSON_NULL || v->type == JSON_ARR || v->type == JSON_OBJ) return 0;
    if (v->type == JSON_STR) return csv_fput_text(v->str, x->f) != 0;
    return fputs(json_text(v), x->f) == EOF; /* a number (its grammar checked by the parser) or a boolean */
}

static int write_row(X *x, sqlite3_stmt *st, const XRun *r) {
    int bad = 0, csv = x->o->format == EXPORT_CSV;
    int nf = sqlite3_column_count(st);
    if (!csv) bad |= fputc('{', x->f) == EOF;
    for (int i = 0; i < nf + x->ncols; i++) {
        if (i) bad |= fputc(',', x->f) == EOF;
        if (!csv) bad |= json_fput_text(i < nf ? FIXED[i] : x->cols[i - nf].name, x->f) != 0 || fputc(':', x->f) == EOF;
        bad |= i < nf ? put_col(x, st, i) : put_cfg(x, r, x->cols[i - nf].key);
    }
    if (!csv) bad |= fputc('}', x->f) == EOF;
    bad |= fputc('\n', x->f) == EOF;
    return bad ? -1 : 0;
}

static int write_rows(X *x, const XRun *r, const char *key, long long *rows) {
    sqlite3_stmt *st;
    const char *sql = ROW_SQL[x->o->sweep != NULL][x->has_t];
    if (prep(x, &st, sql, x->o->sweep ? 3 : 2, r->id, key, x->o->sweep)) return -1;
    int s, rc = 0;
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        if (write_row(x, st, r)) rc = xfail(x, -1, "export: write error on the output");
        (*rows)++;
    }
    if (rc == 0 && s != SQLITE_DONE) rc = dbfail(x, "read metrics");
    sqlite3_finalize(st);
    return rc;
}

/* Whether the views have the t column (the database records it). */
static int views_have_t(X *x) {
    sqlite3_stmt *st;
    if (prep(x, &st, "SELECT * FROM run_metrics LIMIT 0", 0)) return -1;
    int has = 0;
    for (int i = 0; i < sqlite3_column_count(st); i++) has |= strcmp(sqlite3_column_name(st, i), "t") == 0;
    sqlite3_finalize(st);
    return has;
}

int export_metrics(Store *s, const ExportOpts *o, FILE *f, long long *rows, char *err, size_t cap) {
    X x = {.s = s, .db = store_db(s), .o = o, .f = f, .err = err, .cap = cap};
    long long n = 0;
    char **want = NULL;
    if (err && cap) err[0] = '\0';
    int rc = 0;
    if (o->sweep) {
        int e = exists(&x, "SELECT 1 FROM sweep_runs WHERE sweep = ?1 LIMIT 1", 1, o->sweep, NULL);
        if (e == 0) {
            char q[200];
            rc = xfail(&x, -2, "%s: no sweep named '%s'", store_path(s), store_escape(o->sweep, q, sizeof q));
        } else if (e < 0) {
            rc = -1;
        }
    }
    if (rc == 0) rc = resolve_runs(&x, &want);
    if (rc == 0) rc = select_runs(&x, want, o->nruns);
    if (rc == 0) rc = config_columns(&x);
    if (rc == 0 && (x.has_t = views_have_t(&x)) < 0) rc = -1;
    if (rc == 0 && write_header(&x)) rc = xfail(&x, -1, "export: write error on the output");
    for (int i = 0; rc == 0 && i < x.nruns; i++)
        for (int k = 0; rc == 0 && k < (o->nkeys ? o->nkeys : 1); k++)
            rc = write_rows(&x, &x.runs[i], o->nkeys ? o->keys[k] : NULL, &n);
    if (rc == 0 && (fflush(f) != 0 || ferror(f))) rc = xfail(&x, -1, "export: write error on the output");
    for (int i = 0; want && i < o->nruns; i++) free(want[i]);
    free(want);
    for (int i = 0; i < x.nruns; i++) free(x.runs[i].id), json_free(x.runs[i].cfg);
    free(x.runs);
    for (int i = 0; i < x.ncols; i++) free(x.cols[i].name);
    free(x.cols);
    if (rows) *rows = n;
    return rc == -1 && x.bad_db ? -2 : rc;
}
