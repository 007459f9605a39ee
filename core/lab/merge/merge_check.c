/*
 * merge_check.c — the checks `gated merge` makes on an input before it
 * copies anything (merge.h): a database from elsewhere is untrusted, and
 * what merge copies is then shown by ls, show, report and export, trusted
 * by sweeps (which runs are done) and by resumes.
 *
 * The input is attached as merge_src.  It must be a gated database of a
 * schema this build reads, pass SQLite's integrity_check (a truncated or
 * damaged file is refused here, named, rather than failing half-way
 * through the copy; not quick_check, which skips comparing each index
 * with its table: a stale index entry let the checks below read one
 * value and the copy another, found by the db fuzz target), and every row of every table merge copies must be
 * what gated's own writer stores: each column's type and range (a table,
 * COLS below, one rule per column), a few rules across a row (a running
 * run has no end, only a diverged run has a diverged step, a histogram's
 * lo < hi), and across tables (no metric, summary or histogram row of a
 * run the input does not hold, a run's environment exists, a finished run
 * has metric rows and its final val_loss and test_loss).  The first
 * fault refuses the whole input, with a message naming the input, the
 * table, the row (rowid and run id) and the rule.
 */
#include "lab/merge/merge_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/codever.h"
#include "util/json.h"

/* A failure reading the attached input: every read error is the input's
 * (the output is only written, later), so the message names it.  -2. */
static int src_fail(Merge *s, const char *src) {
    int code = sqlite3_errcode(s->db) & 0xff;
    if (code == SQLITE_NOTADB) return mg_fail(s, "%s: not a gated database (%s)", src, sqlite3_errmsg(s->db)), -2;
    return mg_fail(s, "%s: cannot read (%s)", src, sqlite3_errmsg(s->db)), -2;
}

/* 1 if merge_src has a table called name, 0 if not, -1 on error. */
static int src_has_table(Merge *s, const char *name) {
    sqlite3_stmt *st;
    if (mg_prep(s, &st, "SELECT count(*) FROM merge_src.sqlite_master WHERE type = ?1 AND name = ?2")) return -1;
    if (mg_bind(s, st, "tt", "table", name) || sqlite3_step(st) != SQLITE_ROW) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int n = sqlite3_column_int(st, 0) > 0;
    return mg_fin(s, st) ? -1 : n;
}

/* meta.schema_version of merge_src into *v: 1 found, 0 absent or not a
 * number, -1 read error. */
static int src_version(Merge *s, long long *v) {
    sqlite3_stmt *st;
    if (mg_prep(s, &st, "SELECT value FROM merge_src.meta WHERE key = ?1")) return -1;
    if (mg_bind(s, st, "t", "schema_version")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int found = 0, r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const char *t = mg_text(st, 0);
        char *end;
        if (t && *t) {
            errno = 0;
            *v = strtoll(t, &end, 10);
            found = !errno && *end == '\0';
        }
    }
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    return mg_fin(s, st) ? -1 : found;
}

/* A gated database this build can read: its tables and schema version. */
static int check_schema(Merge *s, const char *src, MergeSrc *in) {
    int meta = src_has_table(s, "meta");
    if (meta < 0) return src_fail(s, src);
    if (!meta) return mg_fail(s, "%s: not a gated database (no meta table)", src), -2;
    long long v = 0;
    int found = src_version(s, &v);
    if (found < 0) return src_fail(s, src);
    if (!found) return mg_fail(s, "%s: not a gated database (no schema_version in meta)", src), -2;
    if (v > STORE_SCHEMA_VERSION)
        return mg_fail(s, "%s: schema version %lld is newer than this build supports (%d); use a newer gated", src, v,
                       STORE_SCHEMA_VERSION),
               -2;
    if (v < 1) return mg_fail(s, "%s: not a gated database (schema_version %lld)", src, v), -2;
    static const char *const need[] = {"environments", "runs", "metrics", "summary", "histograms"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        int h = src_has_table(s, need[i]);
        if (h < 0) return src_fail(s, src);
        if (!h) return mg_fail(s, "%s: not a gated database (no %s table)", src, need[i]), -2;
    }
    if ((in->has_sweeps = src_has_table(s, "sweep_runs")) < 0 || (in->has_attest = src_has_table(s, "code_attest")) < 0)
        return src_fail(s, src);
    in->version = (int)v;
    return 0;
}

/* SQLite's own check of the file's structure (every page and b-tree, and
 * every index entry against its row): a truncated or damaged input is
 * refused before anything is copied. */
static int check_structure(Merge *s, const char *src) {
    sqlite3_stmt *st;
    if (mg_prep(s, &st, "PRAGMA merge_src.integrity_check(1)")) return src_fail(s, src);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        src_fail(s, src);
        (void)sqlite3_finalize(st);
        return -2;
    }
    const char *t = mg_text_or(st, 0, "?");
    int rc = 0;
    if (strcmp(t, "ok") != 0) {
        char q[300];
        mg_fail(s, "%s: refused, nothing merged: the file is damaged (SQLite integrity_check: %s)", src,
                store_escape(t, q, sizeof q));
        rc = -2;
    }
    (void)sqlite3_finalize(st);
    return rc;
}

/* ------------------------------------------------------------------ */
/* one rule per column                                                 */
/* ------------------------------------------------------------------ */

typedef enum {
    R_ID,         /* a run id: text, 16 lowercase hex digits */
    R_NAME,       /* text that passes store_name_check: names, labels */
    R_KEY,        /* the same, not empty: a metric or summary key */
    R_CONTEXT,    /* the same, may be empty: a context */
    R_COMMIT,     /* text, a commit (40 lowercase hex digits) */
    R_TEXT,       /* text (escaped wherever it is shown) */
    R_TEXT_NULL,  /* text or NULL */
    R_INT,        /* an integer */
    R_COUNT,      /* an integer >= 0 */
    R_COUNT_NULL, /* the same or NULL */
    R_POSITIVE,   /* an integer >= 1 */
    R_FLAG,       /* 0 or 1 */
    R_FLAG_NULL,  /* 0, 1 or NULL */
    R_TIME,       /* a real >= 0, finite: unix seconds */
    R_TIME_NULL,  /* the same or NULL */
    R_VALUE,      /* a real or NULL: NaN is stored as NULL, infinities as such */
    R_FINITE,     /* a finite real */
    R_STATUS,     /* running, finished, failed, diverged or killed */
    R_CONFIG,     /* text holding a JSON object (a resolved config) */
    R_COUNTS,     /* text holding a JSON array of 1 or more integers >= 0 */
} Rule;

static const char *const rule_words[] = {
    [R_ID] = "a run id (16 lowercase hex digits)", [R_NAME] = "printable text", [R_KEY] = "a key (printable text)",
    [R_CONTEXT] = "printable text", [R_COMMIT] = "a commit (40 lowercase hex digits)", [R_TEXT] = "text",
    [R_TEXT_NULL] = "text or NULL", [R_INT] = "an integer", [R_COUNT] = "a count", [R_COUNT_NULL] = "a count or NULL",
    [R_POSITIVE] = "a positive count", [R_FLAG] = "0 or 1", [R_FLAG_NULL] = "0, 1 or NULL", [R_TIME] = "a time",
    [R_TIME_NULL] = "a time or NULL", [R_VALUE] = "a number or NULL", [R_FINITE] = "a finite number",
    [R_STATUS] = "a run status", [R_CONFIG] = "a config (a JSON object)",
    [R_COUNTS] = "histogram counts (a JSON array of integers >= 0)",
};

typedef struct {
    const char *col;
    Rule rule;
} Col;

/* The value of column i, for a message: "NULL", "the integer 5", "the text
 * \"nan\"" (escaped, cut), "the real inf", "a blob of 3 bytes". */
static const char *describe(sqlite3_stmt *st, int i, char *out, size_t cap) {
    char q[80];
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: snprintf(out, cap, "NULL"); break;
    case SQLITE_INTEGER: snprintf(out, cap, "the integer %lld", (long long)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: snprintf(out, cap, "the real %.17g", sqlite3_column_double(st, i)); break;
    case SQLITE_BLOB: {
        int n = sqlite3_column_bytes(st, i);
        snprintf(out, cap, "a blob of %d byte%s", n, n == 1 ? "" : "s");
        break;
    }
    default: snprintf(out, cap, "the text \"%s\"", store_escape(mg_text_or(st, i, ""), q, sizeof q)); break;
    }
    return out;
}

/* Whether column i (type t, already known) holds what rule r allows. */
static int rule_holds(sqlite3_stmt *st, int i, int t, Rule r, char *why, size_t cap) {
    long long n = sqlite3_column_int64(st, i);
    double x = sqlite3_column_double(st, i);
    const char *v = t == SQLITE_TEXT ? mg_text(st, i) : NULL;
    switch (r) {
    case R_ID: return v && store_run_id_valid(v);
    case R_NAME:
    case R_CONTEXT: return v && store_name_check(v, why, cap) == 0;
    case R_KEY: return v && *v && store_name_check(v, why, cap) == 0;
    case R_COMMIT: return v && codever_is_commit(v);
    case R_TEXT: return v != NULL;
    case R_TEXT_NULL: return v || t == SQLITE_NULL;
    case R_INT: return t == SQLITE_INTEGER;
    case R_COUNT: return t == SQLITE_INTEGER && n >= 0;
    case R_COUNT_NULL: return t == SQLITE_NULL || (t == SQLITE_INTEGER && n >= 0);
    case R_POSITIVE: return t == SQLITE_INTEGER && n >= 1;
    case R_FLAG: return t == SQLITE_INTEGER && (n == 0 || n == 1);
    case R_FLAG_NULL: return t == SQLITE_NULL || (t == SQLITE_INTEGER && (n == 0 || n == 1));
    case R_TIME: return t == SQLITE_FLOAT && isfinite(x) && x >= 0;
    case R_TIME_NULL: return t == SQLITE_NULL || (t == SQLITE_FLOAT && isfinite(x) && x >= 0);
    case R_VALUE: return t == SQLITE_NULL || (t == SQLITE_FLOAT && !isnan(x));
    case R_FINITE: return t == SQLITE_FLOAT && isfinite(x);
    case R_STATUS: {
        static const char *const ok[] = {"running", "finished", "failed", "diverged", "killed"};
        for (int k = 0; v && k < 5; k++)
            if (strcmp(v, ok[k]) == 0) return 1;
        return 0;
    }
    case R_CONFIG: {
        Json *j = v ? json_parse(v, NULL, 0) : NULL;
        int ok = j && j->type == JSON_OBJ;
        json_free(j);
        return ok;
    }
    case R_COUNTS: {
        long long *c = NULL;
        int nb = 0, ok = v && store_parse_counts(v, &c, &nb) == 0 && nb >= 1;
        free(c);
        return ok;
    }
    }
    return 0;
}

/* The fault of column i of st under rule r into why; NULL when it holds. */
static const char *col_fault(sqlite3_stmt *st, int i, const Col *c, char *why, size_t cap) {
    int t = sqlite3_column_type(st, i); /* before any conversion */
    char w[200] = "", d[200], q[120];
    if (rule_holds(st, i, t, c->rule, w, sizeof w)) return NULL;
    if (*w) /* a name check's reason */
        snprintf(why, cap, "%s \"%s\" %s", c->col, store_escape(mg_text_or(st, i, ""), q, sizeof q), w);
    else
        snprintf(why, cap, "%s is not %s (%s)", c->col, rule_words[c->rule], describe(st, i, d, sizeof d));
    return why;
}

/* ------------------------------------------------------------------ */
/* the tables                                                          */
/* ------------------------------------------------------------------ */

static const Col RUNS[] = {
    {"run_id", R_ID},         {"name", R_NAME},          {"status", R_STATUS},          {"config_json", R_CONFIG},
    {"seed", R_INT},          {"threads", R_POSITIVE},   {"code_version", R_TEXT},      {"git_dirty", R_FLAG_NULL},
    {"host", R_TEXT},         {"cpu_model", R_TEXT},     {"compiler", R_TEXT},          {"cflags", R_TEXT},
    {"openblas_version", R_TEXT}, {"sqlite_version", R_TEXT}, {"libyaml_version", R_TEXT}, {"argv", R_TEXT_NULL},
    {"started_at", R_TIME},   {"ended_at", R_TIME_NULL}, {"heartbeat_at", R_TIME},      {"error_text", R_TEXT_NULL},
    {"diverged_step", R_COUNT_NULL}, {"env_id", R_INT},
};
enum { RUN_STATUS = 2, RUN_ENDED = 17, RUN_DIVERGED = 20 };
static const Col ENVS[] = {{"env_id", R_INT},         {"env_hash", R_TEXT},         {"host", R_TEXT},
                           {"cpu_model", R_TEXT},     {"compiler", R_TEXT},         {"cflags", R_TEXT},
                           {"openblas_version", R_TEXT}, {"sqlite_version", R_TEXT}, {"libyaml_version", R_TEXT}};
static const Col METRICS[] = {{"run_id", R_ID},  {"key", R_KEY},     {"context", R_CONTEXT},
                              {"step", R_COUNT}, {"value", R_VALUE}, {"t", R_TIME_NULL}};
static const Col SUMMARY[] = {
    {"run_id", R_ID}, {"key", R_KEY}, {"context", R_CONTEXT}, {"value", R_VALUE}, {"text", R_TEXT_NULL}};
static const Col HISTS[] = {{"run_id", R_ID},   {"key", R_KEY},   {"context", R_CONTEXT}, {"step", R_COUNT},
                            {"lo", R_FINITE},   {"hi", R_FINITE}, {"counts", R_COUNTS}};
enum { HIST_LO = 4, HIST_HI = 5 };
static const Col SWEEPS[] = {{"sweep", R_NAME}, {"run_id", R_ID}, {"label", R_NAME},
                             {"seed", R_INT},   {"idx", R_COUNT}, {"is_baseline", R_FLAG}};
static const Col ATTESTS[] = {{"run_id", R_ID},          {"code_version", R_COMMIT},  {"cflags", R_NAME},
                              {"git_dirty", R_FLAG},     {"run_code_version", R_NAME}, {"run_ended_at", R_TIME},
                              {"verified_at", R_TIME},   {"steps_checked", R_COUNT}, {"rows_checked", R_POSITIVE}};

#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))

typedef struct {
    const char *table;
    const Col *cols;
    int ncols; /* the columns read: metrics of schema 1 have no t */
    int run;   /* the column holding the row's run id, for messages; -1 none */
} Table;

/* A fault across the columns of one row (as the table's select has them,
 * rowid at 0), into why; NULL when none. */
static const char *row_fault(const Table *tb, sqlite3_stmt *st, char *why, size_t cap) {
    if (tb->cols == RUNS) {
        const char *status = mg_text_or(st, 1 + RUN_STATUS, "");
        int running = strcmp(status, "running") == 0, diverged = strcmp(status, "diverged") == 0;
        int ended = sqlite3_column_type(st, 1 + RUN_ENDED) != SQLITE_NULL;
        int dstep = sqlite3_column_type(st, 1 + RUN_DIVERGED) != SQLITE_NULL;
        if (running == ended)
            return snprintf(why, cap, running ? "a running run has an ended_at" : "a %s run has no ended_at", status),
                   why;
        if (diverged != dstep)
            return snprintf(why, cap, diverged ? "a diverged run has no diverged_step" : "a %s run has a diverged_step",
                            status),
                   why;
    }
    if (tb->cols == HISTS && !(sqlite3_column_double(st, 1 + HIST_LO) < sqlite3_column_double(st, 1 + HIST_HI)))
        return snprintf(why, cap, "lo is not below hi (%.17g, %.17g)", sqlite3_column_double(st, 1 + HIST_LO),
                        sqlite3_column_double(st, 1 + HIST_HI)),
               why;
    return NULL;
}

/* "SRC: refused, nothing merged: TABLE row N (run ID): WHY" (without the
 * run when has_run is 0); -2. */
static int refuse_row(Merge *s, const char *src, const char *table, long long rowid, int has_run, const char *run,
                      const char *why) {
    char q[64], r[96] = "";
    if (has_run) snprintf(r, sizeof r, " (run %s)", store_escape(run ? run : "NULL", q, sizeof q));
    return mg_fail(s, "%s: refused, nothing merged: %s row %lld%s: %s", src, table, rowid, r, why), -2;
}

/* Every row of one table, column by column, then across the row. */
static int check_table(Merge *s, const char *src, const Table *tb) {
    char sql[600];
    int n = snprintf(sql, sizeof sql, "SELECT rowid");
    for (int i = 0; i < tb->ncols; i++) n += snprintf(sql + n, sizeof sql - (size_t)n, ", %s", tb->cols[i].col);
    snprintf(sql + n, sizeof sql - (size_t)n, " FROM merge_src.%s", tb->table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) /* a column missing, say */
        return mg_fail(s, "%s: refused, nothing merged: table %s: %s", src, tb->table, sqlite3_errmsg(s->db)), -2;
    int r, rc = 0;
    while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
        char why[600];
        const char *f = NULL;
        for (int i = 0; i < tb->ncols && !f; i++) f = col_fault(st, 1 + i, &tb->cols[i], why, sizeof why);
        if (!f) f = row_fault(tb, st, why, sizeof why);
        if (f)
            rc = refuse_row(s, src, tb->table, sqlite3_column_int64(st, 0), tb->run >= 0,
                            tb->run >= 0 ? mg_text(st, 1 + tb->run) : NULL, f);
    }
    if (rc == 0 && r != SQLITE_DONE) rc = src_fail(s, src);
    (void)sqlite3_finalize(st);
    return rc;
}

/* ------------------------------------------------------------------ */
/* across tables                                                       */
/* ------------------------------------------------------------------ */

/* One query over merge_src giving (rowid, run id) of a row at fault, or
 * none; the rule's words for the message.  Parameters: none, or ?1
 * 'finished' and, when key is not NULL, ?2 key. */
typedef struct {
    const char *table, *sql, *why;
    int finished;
    const char *key;
} Cross;

static const Cross CROSS[] = {
    {"metrics", "SELECT rowid, run_id FROM merge_src.metrics WHERE run_id NOT IN (SELECT run_id FROM merge_src.runs)",
     "a metric row of a run that its runs table does not hold", 0, NULL},
    {"summary", "SELECT rowid, run_id FROM merge_src.summary WHERE run_id NOT IN (SELECT run_id FROM merge_src.runs)",
     "a summary row of a run that its runs table does not hold", 0, NULL},
    {"histograms",
     "SELECT rowid, run_id FROM merge_src.histograms WHERE run_id NOT IN (SELECT run_id FROM merge_src.runs)",
     "a histogram row of a run that its runs table does not hold", 0, NULL},
    {"runs",
     "SELECT rowid, run_id FROM merge_src.runs WHERE env_id NOT IN (SELECT env_id FROM merge_src.environments)",
     "its env_id names no row of the environments table", 0, NULL},
    {"runs",
     "SELECT rowid, run_id FROM merge_src.runs WHERE status = ?1 AND run_id NOT IN"
     " (SELECT run_id FROM merge_src.metrics)",
     "a finished run without metric rows", 1, NULL},
    {"runs",
     "SELECT rowid, run_id FROM merge_src.runs WHERE status = ?1 AND run_id NOT IN"
     " (SELECT run_id FROM merge_src.summary WHERE key = ?2 AND context = '')",
     "a finished run without its final val_loss (summary)", 1, "val_loss"},
    {"runs",
     "SELECT rowid, run_id FROM merge_src.runs WHERE status = ?1 AND run_id NOT IN"
     " (SELECT run_id FROM merge_src.summary WHERE key = ?2 AND context = '')",
     "a finished run without its test_loss (summary)", 1, "test_loss"},
};

static int check_cross(Merge *s, const char *src) {
    for (size_t i = 0; i < sizeof CROSS / sizeof CROSS[0]; i++) {
        const Cross *c = &CROSS[i];
        sqlite3_stmt *st;
        if (mg_prep(s, &st, c->sql)) return src_fail(s, src);
        int bad = c->key ? mg_bind(s, st, "tt", "finished", c->key) : c->finished ? mg_bind(s, st, "t", "finished") : 0;
        int r = bad ? SQLITE_ERROR : sqlite3_step(st), rc = 0;
        if (r == SQLITE_ROW)
            rc = refuse_row(s, src, c->table, sqlite3_column_int64(st, 0), 1, mg_text(st, 1), c->why);
        else if (r != SQLITE_DONE)
            rc = src_fail(s, src);
        (void)sqlite3_finalize(st);
        if (rc) return rc;
    }
    return 0;
}

int merge_check_input(Merge *s, const char *src, MergeSrc *in) {
    int rc = check_schema(s, src, in);
    if (rc == 0) rc = check_structure(s, src);
    const Table tables[] = {
        {"runs", RUNS, NCOLS(RUNS), 0},
        {"environments", ENVS, NCOLS(ENVS), -1},
        {"metrics", METRICS, NCOLS(METRICS) - (in->version == 1), 0}, /* schema 1: no t */
        {"summary", SUMMARY, NCOLS(SUMMARY), 0},
        {"histograms", HISTS, NCOLS(HISTS), 0},
        {"sweep_runs", SWEEPS, NCOLS(SWEEPS), 1},
        {"code_attest", ATTESTS, NCOLS(ATTESTS), 0},
    };
    for (size_t i = 0; rc == 0 && i < sizeof tables / sizeof tables[0]; i++) {
        if ((tables[i].cols == SWEEPS && !in->has_sweeps) || (tables[i].cols == ATTESTS && !in->has_attest)) continue;
        rc = check_table(s, src, &tables[i]);
    }
    if (rc == 0) rc = check_cross(s, src);
    return rc;
}
