/*
 * yamlfile.c — reading one YAML document from a file (yamlfile.h), with
 * bounds checked before libyaml builds it: libyaml's loader takes time
 * quadratic in the nesting depth and expands aliases without limit, so the
 * text is first walked with the event API and refused, with its place,
 * when it is too big, too deep, or its aliases cycle or expand too far;
 * and a string holding a NUL character ("\0" in a quoted scalar), which
 * every reader would cut there, is refused too.
 */
#include "run/yamlfile.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int yaml_problem(const char *path, const yaml_parser_t *p, ConfigError *err) {
    const char *problem = p->problem ? p->problem : "unknown error";
    switch (p->error) {
    case YAML_MEMORY_ERROR: return config_fail(err, "%s: error: out of memory while reading YAML", path);
    case YAML_READER_ERROR:
        return config_fail(err, "%s: error: YAML syntax: %s (at byte %zu)", path, problem, p->problem_offset);
    default:
        return config_fail(err, "%s:%zu:%zu: error: YAML syntax: %s", path, p->problem_mark.line + 1,
                    p->problem_mark.column + 1, problem);
    }
}

/* ---- bounds checked before libyaml builds a document ---- */

/* Far above any real file (the deepest shipped one nests 6 levels, the
 * largest is a few KiB); a text within them loads in milliseconds. */
enum { YAML_MAX_BYTES = 1 << 20, YAML_MAX_DEPTH = 64, YAML_MAX_NODES = 2000000 };

/* Anchors seen so far and the size of the node each names (-1 while that
 * node is still open), in an open-addressing hash table. */
typedef struct {
    char *name;
    long long size;
} Anchor;
typedef struct {
    Anchor *a;
    size_t cap, n; /* cap: a power of two */
} Anchors;

static size_t anchor_hash(const char *s) { /* FNV-1a */
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

/* The slot of name (found or empty). */
static Anchor *anchor_slot(Anchors *t, const char *name) {
    size_t i = anchor_hash(name) & (t->cap - 1);
    while (t->a[i].name && strcmp(t->a[i].name, name) != 0) i = (i + 1) & (t->cap - 1);
    return &t->a[i];
}

static Anchor *anchor_find(Anchors *t, const char *name) {
    if (!t->cap) return NULL;
    Anchor *a = anchor_slot(t, name);
    return a->name ? a : NULL;
}

/* Set name's size (a later anchor of the same name replaces it).  0 / -1
 * (out of memory). */
static int anchor_put(Anchors *t, const char *name, long long size) {
    if (2 * (t->n + 1) > t->cap) {
        Anchors g = {calloc(t->cap ? 2 * t->cap : 64, sizeof(Anchor)), t->cap ? 2 * t->cap : 64, t->n};
        if (!g.a) return -1;
        for (size_t i = 0; i < t->cap; i++)
            if (t->a[i].name) *anchor_slot(&g, t->a[i].name) = t->a[i];
        free(t->a);
        *t = g;
    }
    Anchor *a = anchor_slot(t, name);
    if (!a->name) {
        if (!(a->name = strdup(name))) return -1;
        t->n++;
    }
    a->size = size;
    return 0;
}

static void anchors_free(Anchors *t) {
    for (size_t i = 0; i < t->cap; i++) free(t->a[i].name);
    free(t->a);
}

/* Walk the events of the text: fail (with the place) on a syntax error,
 * nesting deeper than YAML_MAX_DEPTH, an alias inside the node it names (a
 * cycle) or aliases that expand the document past YAML_MAX_NODES nodes.
 * libyaml's time grows with the square of the depth, and the readers walk
 * an alias's node once per use, so these bounds keep every reader fast. */
static int yaml_bounds(const char *path, const unsigned char *text, size_t len, ConfigError *err) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return config_fail(err, "%s: error: out of memory", path);
    yaml_parser_set_input_string(&parser, text, len);
    struct {
        char *anchor; /* of the open collection, or NULL */
        long long start;
    } open[YAML_MAX_DEPTH + 1];
    int depth = 0, rc = 0;
    long long nodes = 0; /* with every alias expanded */
    Anchors anchors = {NULL, 0, 0};
    for (int done = 0; !done && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = yaml_problem(path, &parser, err);
            break;
        }
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        const yaml_char_t *anchor = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_SCALAR_EVENT:
            nodes++;
            /* "\0" in a quoted string: C strings would end there ("sw\0../x" read as "sw") */
            if (memchr(ev.data.scalar.value, 0, ev.data.scalar.length)) {
                rc = config_fail(err, "%s:%zu:%zu: error: a NUL character (\\0) in a string; no value may hold one",
                                 path, line, col);
                break;
            }
            if (ev.data.scalar.anchor && anchor_put(&anchors, (const char *)ev.data.scalar.anchor, 1))
                rc = config_fail(err, "%s: error: out of memory", path);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            anchor = ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor : ev.data.mapping_start.anchor;
            nodes++;
            if (depth == YAML_MAX_DEPTH) {
                rc = config_fail(err, "%s:%zu:%zu: error: YAML nesting depth exceeds %d levels", path, line, col,
                          YAML_MAX_DEPTH);
                break;
            }
            open[depth].anchor = NULL;
            open[depth].start = nodes;
            if (anchor) {
                if (anchor_put(&anchors, (const char *)anchor, -1) ||
                    !(open[depth].anchor = strdup((const char *)anchor))) {
                    rc = config_fail(err, "%s: error: out of memory", path);
                    break;
                }
            }
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) {
                depth--;
                if (open[depth].anchor) {
                    if (anchor_put(&anchors, open[depth].anchor, nodes - open[depth].start + 1))
                        rc = config_fail(err, "%s: error: out of memory", path);
                    free(open[depth].anchor);
                    open[depth].anchor = NULL;
                }
            }
            break;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *)ev.data.alias.anchor;
            Anchor *a = anchor_find(&anchors, name);
            char q[400];
            if (a && a->size < 0) {
                config_quote(name, q, sizeof q);
                rc = config_fail(err, "%s:%zu:%zu: error: YAML alias *%s refers to a node that contains it (a cycle)", path,
                          line, col, q);
            } else {
                nodes += a ? a->size : 1; /* an unknown anchor is libyaml's error, later */
            }
            break;
        }
        default: break;
        }
        if (rc == 0 && nodes > YAML_MAX_NODES)
            rc = config_fail(err, "%s:%zu:%zu: error: YAML aliases expand the document past %d nodes", path, line, col,
                      YAML_MAX_NODES);
        yaml_event_delete(&ev);
    }
    for (int d = 0; d < depth; d++) free(open[d].anchor);
    anchors_free(&anchors);
    yaml_parser_delete(&parser);
    return rc;
}

/* The whole of f, at most YAML_MAX_BYTES, into *text (malloc'd). */
static int read_bounded(FILE *f, const char *path, const char *kind, unsigned char **text, size_t *len,
                        ConfigError *err) {
    size_t cap = 4096, n = 0;
    unsigned char *b = malloc(cap);
    if (!b) return config_fail(err, "%s: error: out of memory", path);
    for (;;) {
        if (n == cap) {
            if (cap > YAML_MAX_BYTES) {
                free(b);
                return config_fail(err, "%s: error: larger than %d MiB (too large for %s)", path, YAML_MAX_BYTES >> 20,
                            kind);
            }
            unsigned char *g = realloc(b, 2 * cap);
            if (!g) {
                free(b);
                return config_fail(err, "%s: error: out of memory", path);
            }
            b = g;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(b);
        return config_fail(err, "%s: error: cannot read: %s", path, strerror(e));
    }
    if (n > YAML_MAX_BYTES) {
        free(b);
        return config_fail(err, "%s: error: larger than %d MiB (too large for %s)", path, YAML_MAX_BYTES >> 20, kind);
    }
    *text = b;
    *len = n;
    return 0;
}

int yaml_file_load(const char *path, const char *kind, yaml_document_t *doc, ConfigError *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return config_fail(err, "%s: error: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return config_fail(err, "%s: error: cannot open: %s", path, strerror(EISDIR));
    }
    unsigned char *text = NULL;
    size_t len = 0;
    int r = read_bounded(f, path, kind, &text, &len, err);
    fclose(f);
    if (r) return -1;
    if (yaml_bounds(path, text, len, err)) {
        free(text);
        return -1;
    }
    yaml_parser_t parser;
    int rc = -1;
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        return config_fail(err, "%s: error: out of memory", path);
    }
    yaml_parser_set_input_string(&parser, text, len);
    if (!yaml_parser_load(&parser, doc)) {
        yaml_problem(path, &parser, err);
    } else {
        /* a second document would be silently ignored: refuse it */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            yaml_problem(path, &parser, err);
        } else {
            if (yaml_document_get_root_node(&extra))
                config_fail(err, "%s:%zu:%zu: error: more than one YAML document (%s holds one)", path,
                     extra.start_mark.line + 1, extra.start_mark.column + 1, kind);
            else
                rc = 0;
            yaml_document_delete(&extra);
        }
        if (rc) yaml_document_delete(doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    return rc;
}
