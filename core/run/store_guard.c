/*
 * store_guard.c — what a database must be before the store opens or
 * writes it (docs/store.md, "What a database must be"):
 *
 *   the path (sto_check_path, before SQLite sees it): a file name, not
 *   ":memory:" or a "file:" URI (SQLite would take either as an in-memory
 *   or differently opened database, and a command would train, print a
 *   run id and keep nothing); when it exists, a regular file (or a link
 *   to one): /dev/null, a FIFO, a socket or a directory is refused, where
 *   SQLite would make /dev/null-journal or block on the FIFO;
 *
 *   the objects (sto_check_objects, a writer's open, before anything is
 *   written): only the tables, indexes and views the store defines
 *   (store.c, store_sweep.c, store_claims.c, store_attest.c,
 *   store_bench.c, store_views.c) and SQLite's own.  A trigger (which
 *   would fire on the store's own INSERTs: one rewrote val_loss to
 *   0.001), a view, table or index of another name (a UNIQUE index makes
 *   INSERT OR REPLACE delete rows) is refused: such a file was made or
 *   changed by something else;
 *
 *   a read-only open (sto_ro_uri): a WAL database needs its -shm file, so
 *   in a folder this process cannot write (a read-only mount, another
 *   user's folder) SQLite cannot read it ("attempt to write a readonly
 *   database").  There, when the file has no -wal with content (every
 *   commit is in the file itself: a copied, merged or results_db.py-built
 *   database; no -shm, no hot -journal), it is opened as immutable=1
 *   (read as it is, no locks, no side files), which reads exactly what a
 *   normal open would.
 *
 * Every refusal is bad input (store_open returns -2; commands exit 2).
 */
#include "run/store_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int sto_check_path(Store *s) {
    const char *p = s->path;
    if (strcmp(p, ":memory:") == 0 || strncasecmp(p, "file:", 5) == 0) {
        s->bad_input = 1;
        return sto_fail(s, "%s: an in-memory database or a URI, not a database file: give a file path (use "
                           "./%s for a file of that name)", p, p);
    }
    struct stat sb;
    if (stat(p, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        s->bad_input = 1;
        return sto_fail(s, "%s: %s, not a database file", p,
                        S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file (a device, FIFO or socket)");
    }
    return 0;
}

static const char *const KNOWN_TABLES[] = {"meta", "environments", "runs", "metrics", "summary", "histograms",
                                           "sweep_runs", "run_claims", "code_attest", "bench", "sqlite_sequence",
                                           "sqlite_stat1", "sqlite_stat4", NULL};
static const char *const KNOWN_INDEXES[] = {"runs_name", "metrics_run_key_step", NULL};
static const char *const KNOWN_VIEWS[] = {"run_metrics", "sweep_metrics", "final_metrics", NULL};

static int listed(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

/* Whether (type, name) is one of the store's objects or SQLite's own. */
static int known(const char *type, const char *name) {
    if (strcmp(type, "table") == 0) return listed(KNOWN_TABLES, name);
    if (strcmp(type, "view") == 0) return listed(KNOWN_VIEWS, name);
    if (strcmp(type, "index") == 0) return listed(KNOWN_INDEXES, name) || strncmp(name, "sqlite_autoindex_", 17) == 0;
    return 0; /* a trigger, or anything else */
}

int sto_check_objects(Store *s) {
    sqlite3_stmt *st;
    if (sto_prep(s, &st, "SELECT type, name FROM main.sqlite_master ORDER BY type, name")) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = sto_text_or(st, 0, ""), *name = sto_text_or(st, 1, "");
        if (known(type, name)) continue;
        char qn[160];
        store_escape(name, qn, sizeof qn);
        s->bad_input = 1;
        sto_fail(s, "%s: refused, nothing written: it holds a %s '%s' that gated does not define (%s); only "
                    "gated's own tables, indexes and views may be in a database it writes",
                 s->path, type, qn,
                 strcmp(type, "trigger") == 0 ? "a trigger would run on gated's writes" : "made by another tool?");
        (void)sqlite3_finalize(st);
        return -1;
    }
    if (rc != SQLITE_DONE) {
        sto_dbfail(s, "read the database's schema");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st);
}

/* Whether path + suffix exists with content (1), exists empty (0) or not
 * (-1). */
static int side_file(const char *path, const char *suffix) {
    size_t n = strlen(path) + strlen(suffix) + 1;
    char *p = malloc(n);
    if (!p) return 1; /* as if it were there: the normal open */
    snprintf(p, n, "%s%s", path, suffix);
    struct stat sb;
    int r = stat(p, &sb) != 0 ? -1 : sb.st_size > 0;
    free(p);
    return r;
}

char *sto_ro_uri(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    if (!dir) return NULL;
    int writable = access(dir, W_OK) == 0;
    free(dir);
    /* a -wal with commits, a -shm (a writer may be at work) or a hot
     * rollback journal: the normal open, which reads them */
    if (writable || side_file(path, "-wal") > 0 || side_file(path, "-shm") >= 0 || side_file(path, "-journal") > 0)
        return NULL;
    /* file:PATH?immutable=1, the path percent-encoded where a URI would
     * read it otherwise */
    size_t n = strlen(path);
    char *u = malloc(3 * n + 32), *o = u;
    if (!u) return NULL;
    o += sprintf(o, "file:");
    while (path[0] == '/' && path[1] == '/') path++; /* "file://" would start an authority */
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c == '?' || *c == '#' || *c == '%' || *c <= 0x20 || *c >= 0x7f)
            o += sprintf(o, "%%%02X", *c);
        else
            *o++ = (char)*c;
    strcpy(o, "?immutable=1");
    return u;
}

/* The numeric columns readers take as numbers, and what each may hold:
 * "i" an integer, "n" an integer or a real, a trailing "0" NULL as well.
 * Each is checked where a reader would otherwise take text or a blob for
 * 0 (sqlite3_column_double of 'abc'): a summary val_loss of 'abc' made
 * `report` print 0.0000 and a false significant delta.  The metrics table
 * (millions of rows) is not scanned here: its readers take a value that
 * is not a number as missing. */
static const struct {
    const char *table, *col, *kinds, *key; /* key: the column naming the row's key, or NULL */
} NUMERIC[] = {
    {"runs", "seed", "i", NULL},          {"runs", "threads", "i", NULL},
    {"runs", "started_at", "n", NULL},    {"runs", "heartbeat_at", "n", NULL},
    {"runs", "ended_at", "n0", NULL},     {"runs", "diverged_step", "i0", NULL},
    {"runs", "git_dirty", "i0", NULL},    {"runs", "env_id", "i", NULL},
    {"summary", "value", "n0", "key"},    {"histograms", "step", "i", "key"},
    {"histograms", "lo", "n", "key"},     {"histograms", "hi", "n", "key"},
    {"sweep_runs", "seed", "i", "sweep"}, {"sweep_runs", "idx", "i", "sweep"},
    {"sweep_runs", "is_baseline", "i", "sweep"},
};

int sto_check_values(Store *s) {
    for (size_t i = 0; i < sizeof NUMERIC / sizeof NUMERIC[0]; i++) {
        const char *k = NUMERIC[i].kinds;
        int has = sto_has_table(s, NUMERIC[i].table); /* a table an older file lacks has nothing to check */
        if (has < 0) return -1;
        if (!has) continue;
        char sql[400];
        /* identifiers from the table above; the allowed types bound */
        snprintf(sql, sizeof sql,
                 "SELECT run_id, %s, typeof(%s), substr(CAST(%s AS TEXT), 1, 40) FROM %s"
                 " WHERE typeof(%s) NOT IN (?1, ?2, ?3) LIMIT 1",
                 NUMERIC[i].key ? NUMERIC[i].key : "''", NUMERIC[i].col, NUMERIC[i].col, NUMERIC[i].table,
                 NUMERIC[i].col);
        sqlite3_stmt *st;
        if (sto_prep_bind(s, &st, sql, "ttt", "integer", k[0] == 'n' ? "real" : "integer",
                          strchr(k, '0') ? "null" : "integer"))
            return -1;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            char run[64], key[96], val[128];
            store_escape(sto_text_or(st, 0, ""), run, sizeof run);
            store_escape(sto_text_or(st, 1, ""), key, sizeof key);
            store_escape(sto_text_or(st, 3, ""), val, sizeof val);
            const char *type = sto_text_or(st, 2, "");
            char what[200] = "", got[200];
            if (NUMERIC[i].key) snprintf(what, sizeof what, " (%s %s)", NUMERIC[i].key, key);
            if (strcmp(type, "null") == 0)
                snprintf(got, sizeof got, "NULL");
            else
                snprintf(got, sizeof got, "%s '%s'", type, val);
            s->bad_input = 1;
            sto_fail(s, "%s: damaged: the %s row of run %s%s: %s is %s, not %s; nothing was read as 0 and the "
                        "file was not changed (fix or delete the row; gated merge refuses such rows)",
                     s->path, NUMERIC[i].table, run, what, NUMERIC[i].col, got,
                     k[0] == 'i' ? "an integer" : "a number");
            (void)sqlite3_finalize(st);
            return -1;
        }
        if (rc != SQLITE_DONE) {
            sto_dbfail(s, "check the database's values");
            (void)sqlite3_finalize(st);
            return -1;
        }
        if (sto_fin(s, st)) return -1;
    }
    return 0;
}
