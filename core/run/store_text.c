/*
 * store_text.c — untrusted text (see store.h): names and labels must be
 * printable UTF-8, and anything read back from a database is escaped
 * (\xNN per refused byte) before it reaches a terminal or a text file.
 */
#include "run/store.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The next character of p: its length in bytes (1 for a byte that starts
 * no valid character), and in *ok whether it may appear in a name. */
static int next_char(const unsigned char *p, int *ok) {
    unsigned cp;
    int n = util_utf8_char(p, &cp);
    if (!n) return *ok = 0, 1;
    *ok = !util_cp_unsafe(cp);
    return n;
}

int store_run_id_valid(const char *s) {
    size_t n = 0;
    for (; s && s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n == 16;
}

int store_name_check(const char *s, char *why, size_t cap) {
    if (why && cap) why[0] = '\0';
    if (!s) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int ok, n = next_char(p, &ok);
        if (!ok) {
            unsigned cp;
            int valid = util_utf8_char(p, &cp) > 0;
            if (why && cap) {
                char b[24];
                int bl = 0;
                for (int i = 0; i < (valid ? n : 1); i++) bl += snprintf(b + bl, sizeof b - (size_t)bl, "\\x%02x", p[i]);
                snprintf(why, cap, "%s (%s at byte %zu); names and labels must be printable text",
                         valid ? "contains a control character" : "is not valid UTF-8", b,
                         (size_t)(p - (const unsigned char *)s) + 1);
            }
            return -1;
        }
        p += n;
    }
    return 0;
}

/* Escape s into out when out is non-NULL (cap bytes, NUL included);
 * returns the length the whole escaped text needs, NUL excluded. */
static size_t escape_into(const char *s, char *out, size_t cap) {
    size_t need = 0, o = 0;
    int full = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int ok, n = next_char(p, &ok);
        char b[32];
        size_t bl = 0;
        if (ok)
            memcpy(b, p, (size_t)n), bl = (size_t)n;
        else
            for (int i = 0; i < n; i++) bl += (size_t)snprintf(b + bl, sizeof b - bl, "\\x%02x", p[i]);
        need += bl;
        if (out && !full) {
            if (o + bl < cap)
                memcpy(out + o, b, bl), o += bl;
            else
                full = 1; /* cut at a character boundary */
        }
        p += n;
    }
    if (out && cap) out[o] = '\0';
    return need;
}

char *store_escape(const char *s, char *out, size_t cap) {
    if (cap) escape_into(s, out, cap);
    return out;
}

char *store_escape_dup(const char *s) {
    size_t n = escape_into(s, NULL, 0) + 1;
    char *d = malloc(n);
    if (d) escape_into(s, d, n);
    return d;
}

void store_fput_escaped(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int ok, n = next_char(p, &ok);
        if (ok)
            fwrite(p, 1, (size_t)n, f);
        else
            for (int i = 0; i < n; i++) fprintf(f, "\\x%02x", p[i]);
        p += n;
    }
}

