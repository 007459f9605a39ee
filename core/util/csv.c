/*
 * csv.c — CSV cells (see csv.h).
 */
#include "util/csv.h"

#include <string.h>

#include "util/util.h"

int csv_is_formula(const char *s) { return s && *s && strchr("=+-@\t\r", *s) != NULL; }

/* Whether s needs quotes: a separator, a quote or a line break. */
static int needs_quotes(const char *s) { return strpbrk(s, ",\"\r\n") != NULL; }

/* Whether the character at p (n bytes, code point cp) must not reach a
 * terminal: util_cp_unsafe's, but tab and line feed (CSV quotes them). */
static int is_control(const unsigned char *p, int n, unsigned cp) {
    if (n == 1 && (*p == '\t' || *p == '\n')) return 0;
    return util_cp_unsafe(cp);
}

int csv_fput_text(const char *s, FILE *f) {
    if (!s) return 0;
    int formula = csv_is_formula(s), quoted = formula || needs_quotes(s), bad = 0;
    if (quoted) bad |= fputc('"', f) == EOF;
    if (formula) bad |= fputc('\'', f) == EOF;
    for (const unsigned char *p = (const unsigned char *)s; *p && !bad;) {
        unsigned cp;
        int n = util_utf8_char(p, &cp);
        if (n == 0) { /* one U+FFFD per byte that starts no character */
            bad |= fputs("\xef\xbf\xbd", f) == EOF;
            p++;
            continue;
        }
        if (is_control(p, n, cp)) { /* visibly, byte by byte, as ls and show write it */
            for (int i = 0; i < n; i++) bad |= fprintf(f, "\\x%02x", p[i]) < 0;
            p += n;
            continue;
        }
        if (*p == '"') bad |= fputc('"', f) == EOF;
        bad |= fwrite(p, 1, (size_t)n, f) != (size_t)n;
        p += n;
    }
    if (quoted) bad |= fputc('"', f) == EOF;
    return bad ? EOF : 0;
}
