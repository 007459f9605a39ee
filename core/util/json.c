/*
 * json.c — JSON string literals (see json.h).
 */
#include "util/json.h"

#include <string.h>

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
