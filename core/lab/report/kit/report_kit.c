/*
 * report_kit.c — `gated report`'s toolkit (report_kit.h): errors, memory,
 * strings (output files: report_files.c), which every part of the report shares.  It
 * calls nothing of the report's sections or driver.
 */
#include "lab/report/kit/report_kit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 2, 3))) int rep_fail(R *r, const char *fmt, ...) {
    if (!r->failed && r->err && r->errcap) {
        char raw[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        store_escape(raw, r->err, r->errcap); /* SQLite's messages quote the file's text */
    }
    r->failed = 1;
    return -1;
}

int rep_oom(R *r) { return rep_fail(r, "out of memory"); }

int rep_grow(R *r, void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return rep_oom(r);
    *p = q;
    *cap = nc;
    return 0;
}

char *rep_dup(R *r, const char *s) {
    char *d = strdup(s ? s : "");
    if (!d) rep_oom(r);
    return d;
}

char *rep_esc(R *r, const char *s) {
    char *d = store_escape_dup(s ? s : "");
    if (!d) rep_oom(r);
    return d;
}

__attribute__((format(printf, 2, 3))) char *rep_fmt(R *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
        rep_oom(r);
    }
    va_end(ap);
    return s;
}

char *rep_safe_name(R *r, const char *s) {
    char *d = rep_dup(r, s);
    if (!d) return NULL;
    for (char *p = d; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '-' || *p == '_'))
            *p = '_';
    if (!*d || d[0] == '.') {
        char *e = rep_fmt(r, "_%s", d);
        free(d);
        if (!e) return NULL;
        d = e;
    }
    /* a name from a merged database may be longer than a file name can be
     * (with the plot suffixes and a temporary file's): its first bytes and
     * 8 hex digits of its hash, so distinct names stay distinct */
    if (strlen(d) > REP_NAME_MAX) {
        char id[17];
        store_run_id(s, id);
        char *e = rep_fmt(r, "%.*s-%.8s", REP_NAME_MAX - 9, d, id);
        free(d);
        return e;
    }
    return d;
}

