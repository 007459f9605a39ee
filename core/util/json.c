/*
 * json.c — JSON (see json.h): the string escaper and its decoder, then the
 * reader, a recursive descent over the text that builds the DOM.  The
 * reader checks a string literal in full (control bytes, escapes,
 * surrogates) before json_unquote decodes it, so that an error names the
 * offending byte; nesting is bounded by JSON_MAX_DEPTH, so recursion is too.
 */
#include "util/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The escape for byte ch into e (at most 7 bytes with the NUL), or NULL
 * when ch goes through as it is. */
static const char *escape_of(unsigned char ch, char e[8]) {
    static const char hex[] = "0123456789abcdef";
    switch (ch) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    if (ch >= 0x20 && ch != 0x7f) return NULL;
    memcpy(e, "\\u00", 4);
    e[4] = hex[ch >> 4];
    e[5] = hex[ch & 15];
    e[6] = '\0';
    return e;
}

size_t json_quote(const char *s, char *out, size_t cap) {
    size_t n = 0;
#define PUT(c)                                                                                                         \
    do {                                                                                                               \
        if (n + 1 < cap) out[n] = (c);                                                                                 \
        n++;                                                                                                           \
    } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8];
        const char *esc = escape_of(*p, e);
        if (!esc) {
            PUT((char)*p);
            continue;
        }
        for (; *esc; esc++) PUT(*esc);
    }
    PUT('"');
#undef PUT
    if (cap > 0) out[n < cap ? n : cap - 1] = '\0';
    return n;
}

int json_fput(const char *s, FILE *f) {
    if (fputc('"', f) == EOF) return EOF;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8];
        const char *esc = escape_of(*p, e);
        if (esc ? fputs(esc, f) == EOF : fputc(*p, f) == EOF) return EOF;
    }
    return fputc('"', f) == EOF ? EOF : 0;
}

int json_fput_text(const char *s, FILE *f) {
    if (fputc('"', f) == EOF) return EOF;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned cp;
        int n = util_utf8_char(p, &cp);
        char e[8];
        const char *esc = n == 1 ? escape_of(*p, e) : NULL;
        if (n == 0) /* no character starts here: the replacement character, one per byte */
            esc = "\\ufffd", n = 1;
        if (n > 1 && util_cp_unsafe(cp)) /* C1, bidi overrides, U+2028/9: escaped as C0 ones are */
            snprintf(e, sizeof e, "\\u%04x", cp), esc = e;
        if (esc ? fputs(esc, f) == EOF : fwrite(p, 1, (size_t)n, f) != (size_t)n) return EOF;
        p += n;
    }
    return fputc('"', f) == EOF ? EOF : 0;
}

int json_fput_num(double v, FILE *f) {
    char b[32];
    return fputs(isfinite(v) ? util_fmt_double(v, b, sizeof b) : "null", f) == EOF ? EOF : 0;
}

int json_fput_value(const Json *v, FILE *f) {
    int bad = 0;
    switch (v ? v->type : JSON_NULL) {
    case JSON_NULL: return fputs("null", f) == EOF ? EOF : 0;
    case JSON_BOOL: return fputs(v->num != 0 ? "true" : "false", f) == EOF ? EOF : 0;
    case JSON_NUM: /* as written when finite (the reader checked its grammar) */
        return fputs(isfinite(v->num) && v->str ? v->str : "null", f) == EOF ? EOF : 0;
    case JSON_STR: return json_fput_text(v->str, f);
    case JSON_ARR:
    case JSON_OBJ:
        bad |= fputc(v->type == JSON_ARR ? '[' : '{', f) == EOF;
        for (int i = 0; i < v->n && !bad; i++) {
            if (i) bad |= fputc(',', f) == EOF;
            if (v->type == JSON_OBJ) bad |= json_fput_text(v->keys[i], f) != 0 || fputc(':', f) == EOF;
            bad |= json_fput_value(v->v[i], f) != 0;
        }
        bad |= fputc(v->type == JSON_ARR ? ']' : '}', f) == EOF;
        return bad ? EOF : 0;
    }
    return EOF;
}

/* Four hex digits at s, or -1. */
static long hex4(const char *s) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

const char *json_unquote(const char *s, char *out, size_t cap) {
    size_t o = 0;
    if (cap == 0 || *s != '"') return NULL;
    for (s++; *s != '"'; s++) {
        unsigned char ch = (unsigned char)*s;
        char buf[4];
        size_t len = 1;
        if (ch == '\0' || ch < 0x20) return NULL; /* unterminated, or a raw control byte */
        buf[0] = (char)ch;
        if (ch == '\\') {
            s++;
            switch (*s) {
            case '"': buf[0] = '"'; break;
            case '\\': buf[0] = '\\'; break;
            case '/': buf[0] = '/'; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                long cp = hex4(s + 1);
                if (cp <= 0) return NULL; /* bad digits, or \u0000 (text is NUL-terminated) */
                s += 4;
                if (cp >= 0xdc00 && cp <= 0xdfff) return NULL; /* a lone low surrogate */
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    long lo = s[1] == '\\' && s[2] == 'u' ? hex4(s + 3) : -1;
                    if (lo < 0xdc00 || lo > 0xdfff) return NULL;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    s += 6;
                }
                if (cp < 0x80) {
                    buf[0] = (char)cp;
                } else if (cp < 0x800) {
                    buf[0] = (char)(0xc0 | (cp >> 6));
                    buf[1] = (char)(0x80 | (cp & 0x3f));
                    len = 2;
                } else if (cp < 0x10000) {
                    buf[0] = (char)(0xe0 | (cp >> 12));
                    buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                    buf[2] = (char)(0x80 | (cp & 0x3f));
                    len = 3;
                } else {
                    buf[0] = (char)(0xf0 | (cp >> 18));
                    buf[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                    buf[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                    buf[3] = (char)(0x80 | (cp & 0x3f));
                    len = 4;
                }
                break;
            }
            default: return NULL; /* includes the NUL after a trailing backslash */
            }
        }
        if (o + len >= cap) return NULL;
        memcpy(out + o, buf, len);
        o += len;
    }
    out[o] = '\0';
    return s + 1;
}

/* ==================================================================== */
/* the reader                                                            */
/* ==================================================================== */

typedef struct {
    const char *text, *p; /* the whole text; the next byte to read */
    char *err;            /* NULL: no message wanted */
    size_t cap;
    int depth;            /* arrays and objects open around p */
} Reader;

/* Record the first error, at byte `at`, as "line L col C: reason"; NULL. */
__attribute__((format(printf, 3, 4))) static Json *fail(Reader *r, const char *at, const char *fmt, ...) {
    if (!r->err || r->err[0]) return NULL; /* no message wanted, or keep the first */
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int line = 1, col = 1;
    for (const char *q = r->text; q < at; q++) {
        if (*q == '\n')
            line++, col = 1;
        else
            col++;
    }
    snprintf(r->err, r->cap, "line %d col %d: %s", line, col, why);
    return NULL;
}

static void skip_ws(Reader *r) {
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') r->p++;
}

static Json *new_value(Reader *r, JsonType t) {
    Json *v = calloc(1, sizeof *v);
    if (!v) return fail(r, r->p, "out of memory");
    v->type = t;
    return v;
}

/* How many bytes the escape whose letter is at q spans after its
 * backslash (1, 5, or 11 for a surrogate pair), or 0 with *why when it
 * is one json_unquote refuses. */
static int escape_len(const char *q, const char **why) {
    if (*q != 'u') {
        if (*q && strchr("\"\\/bfnrt", *q)) return 1;
        *why = "bad escape";
        return 0;
    }
    long cp = hex4(q + 1), lo = -1;
    if (cp < 0) return *why = "bad \\u escape", 0;
    if (cp == 0) return *why = "\\u0000 in a string", 0;
    if (cp >= 0xdc00 && cp <= 0xdfff) return *why = "lone surrogate in a string", 0;
    if (cp < 0xd800 || cp > 0xdbff) return 5;
    if (q[5] == '\\' && q[6] == 'u') lo = hex4(q + 7);
    if (lo < 0xdc00 || lo > 0xdfff) return *why = "lone surrogate in a string", 0;
    return 11;
}

/* The string literal at r->p (its opening quote), decoded into a new
 * buffer; r->p moves past the closing quote.  NULL on error. */
static char *read_string(Reader *r) {
    const char *open = r->p, *end = open + 1;
    while (*end && *end != '"') end += *end == '\\' && end[1] ? 2 : 1;
    if (*end != '"') return (char *)fail(r, open + 1, "unterminated string");
    for (const char *q = open + 1; q < end; q++) {
        const char *why = NULL;
        if ((unsigned char)*q < 0x20) return (char *)fail(r, q, "control character in string");
        if (*q != '\\') continue;
        int len = escape_len(q + 1, &why);
        if (!len && q[1] != 'u') return (char *)fail(r, q + 1, "%s \\%c", why, q[1]);
        if (!len) return (char *)fail(r, q + 1, "%s", why);
        q += len;
    }
    /* decoding never lengthens a literal: its bytes between the quotes suffice */
    size_t cap = (size_t)(end - open);
    char *out = malloc(cap);
    if (!out) return (char *)fail(r, open, "out of memory");
    if (json_unquote(open, out, cap) != end + 1) {
        free(out);
        return (char *)fail(r, open, "invalid string"); /* not reached: checked above */
    }
    r->p = end + 1;
    return out;
}

/* A number (RFC 8259 grammar, then strtod), or NaN / Infinity /
 * -Infinity.  Its text is kept in str. */
static Json *read_number(Reader *r) {
    const char *q = r->p;
    static const char *const special[] = {"NaN", "Infinity", "-Infinity"};
    int sp = -1;
    for (int i = 0; i < 3 && sp < 0; i++)
        if (strncmp(q, special[i], strlen(special[i])) == 0) sp = i;
    if (sp >= 0) {
        q += strlen(special[sp]);
    } else {
        if (*q == '-') q++;
        if (*q == '0')
            q++;
        else if (*q >= '1' && *q <= '9')
            while (*q >= '0' && *q <= '9') q++;
        else
            return fail(r, r->p, "bad number");
        if (*q == '.') {
            if (!(*++q >= '0' && *q <= '9')) return fail(r, r->p, "bad number");
            while (*q >= '0' && *q <= '9') q++;
        }
        if (*q == 'e' || *q == 'E') {
            if (*++q == '+' || *q == '-') q++;
            if (!(*q >= '0' && *q <= '9')) return fail(r, r->p, "bad number");
            while (*q >= '0' && *q <= '9') q++;
        }
    }
    Json *v = new_value(r, JSON_NUM);
    if (!v) return NULL;
    if (!(v->str = strndup(r->p, (size_t)(q - r->p)))) {
        free(v);
        return fail(r, r->p, "out of memory");
    }
    v->num = sp == 0 ? NAN : sp == 1 ? INFINITY : sp == 2 ? -INFINITY : strtod(v->str, NULL);
    r->p = q;
    return v;
}

/* Append v (and, in an object, its name key) to a; both are a's or freed. */
static int push(Reader *r, Json *a, char *key, Json *v) {
    if (a->n == a->cap) {
        int nc = a->cap ? 2 * a->cap : 4;
        Json **nv = a->cap <= INT_MAX / 2 ? realloc(a->v, sizeof *nv * (size_t)nc) : NULL;
        if (nv) a->v = nv;
        char **nk = nv && a->type == JSON_OBJ ? realloc(a->keys, sizeof *nk * (size_t)nc) : NULL;
        if (nk) a->keys = nk;
        if (!nv || (a->type == JSON_OBJ && !nk)) {
            free(key);
            json_free(v);
            fail(r, r->p, "out of memory");
            return -1;
        }
        a->cap = nc;
    }
    if (a->type == JSON_OBJ) a->keys[a->n] = key;
    a->v[a->n++] = v;
    return 0;
}

static Json *read_value(Reader *r);

/* One element of array a, or one "name": value member of object a. */
static int read_member(Reader *r, Json *a) {
    char *key = NULL;
    skip_ws(r);
    if (a->type == JSON_OBJ) {
        if (*r->p != '"') {
            fail(r, r->p, "expected a member name");
            return -1;
        }
        if (!(key = read_string(r))) return -1;
        skip_ws(r);
        if (*r->p != ':') {
            free(key);
            fail(r, r->p, "expected ':'");
            return -1;
        }
        r->p++;
    }
    Json *v = read_value(r);
    if (!v) {
        free(key);
        return -1;
    }
    return push(r, a, key, v);
}

/* The array or object at r->p. */
static Json *read_container(Reader *r) {
    int obj = *r->p == '{';
    char close = obj ? '}' : ']';
    if (r->depth >= JSON_MAX_DEPTH) return fail(r, r->p, "nested too deeply");
    Json *v = new_value(r, obj ? JSON_OBJ : JSON_ARR);
    if (!v) return NULL;
    r->p++;
    skip_ws(r);
    if (*r->p == close) {
        r->p++;
        return v;
    }
    r->depth++;
    for (;;) {
        if (read_member(r, v)) break;
        skip_ws(r);
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        if (*r->p == close) {
            r->p++;
            r->depth--;
            return v;
        }
        fail(r, r->p, "expected ',' or '%c'", close);
        break;
    }
    json_free(v);
    return NULL;
}

static Json *read_value(Reader *r) {
    skip_ws(r);
    const char *p = r->p;
    Json *v = NULL;
    if (*p == '{' || *p == '[') return read_container(r);
    if (*p == '"') {
        if (!(v = new_value(r, JSON_STR))) return NULL;
        if (!(v->str = read_string(r))) free(v), v = NULL;
        return v;
    }
    int t = strncmp(p, "true", 4) == 0, f = strncmp(p, "false", 5) == 0;
    if (t || f || strncmp(p, "null", 4) == 0) {
        if (!(v = new_value(r, t || f ? JSON_BOOL : JSON_NULL))) return NULL;
        v->num = t;
        r->p += f ? 5 : 4;
        return v;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9') || strncmp(p, "NaN", 3) == 0 || strncmp(p, "Infinity", 8) == 0)
        return read_number(r);
    if (!*p) return fail(r, p, "unexpected end of input");
    if (*p > 0x20 && *p < 0x7f) return fail(r, p, "unexpected character '%c'", *p);
    return fail(r, p, "unexpected byte 0x%02x", (unsigned char)*p);
}

Json *json_parse(const char *text, char *err, size_t cap) {
    Reader r = {text ? text : "", text ? text : "", err && cap ? err : NULL, cap, 0};
    if (r.err) r.err[0] = '\0';
    Json *v = read_value(&r);
    if (!v) {
        if (r.err && !r.err[0]) snprintf(r.err, r.cap, "invalid JSON");
        return NULL;
    }
    skip_ws(&r);
    if (*r.p) {
        json_free(v);
        return fail(&r, r.p, "trailing characters after the value");
    }
    return v;
}

/* The whole file, NUL-terminated, in *out (its length in *n).  0, or -1 with err. */
static int read_all(const char *path, char **out, size_t *n, char *err, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t len = 0, c = 1 << 16;
    char *buf = malloc(c);
    while (buf) {
        len += fread(buf + len, 1, c - len - 1, f);
        if (len < c - 1) break;
        char *nb = c <= SIZE_MAX / 2 ? realloc(buf, c * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        c *= 2;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        snprintf(err, cap, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *out = buf;
    *n = len;
    return 0;
}

Json *json_parse_file(const char *path, char *err, size_t cap) {
    char dummy[8], *buf;
    size_t n;
    if (!err || !cap) err = dummy, cap = sizeof dummy;
    err[0] = '\0';
    if (read_all(path, &buf, &n, err, cap)) return NULL;
    if (strlen(buf) != n) {
        free(buf);
        snprintf(err, cap, "%s: not JSON (NUL byte)", path);
        return NULL;
    }
    char why[400];
    Json *v = json_parse(buf, why, sizeof why);
    free(buf);
    if (!v) snprintf(err, cap, "%s: not valid JSON: %s", path, why);
    return v;
}

void json_free(Json *j) {
    if (!j) return;
    for (int i = 0; i < j->n; i++) {
        json_free(j->v[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->v);
    free(j->keys);
    free(j->str);
    free(j);
}

const Json *json_get(const Json *o, const char *key) {
    if (!o || o->type != JSON_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0) return o->v[i];
    return NULL;
}

const char *json_text(const Json *v) {
    if (!v) return NULL;
    switch (v->type) {
    case JSON_STR:
    case JSON_NUM: return v->str;
    case JSON_BOOL: return v->num ? "true" : "false";
    case JSON_NULL: return "null";
    default: return NULL;
    }
}
