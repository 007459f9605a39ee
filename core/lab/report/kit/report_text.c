/*
 * report_text.c — `gated report`'s toolkit (report_kit.h): the quoting of
 * each format (Markdown code spans and text, TeX text, CSV numbers), the
 * cells (mean ± std, p-values, counts), report.md's plot entries, and the
 * text tables (Tab) that the sections write in md or TeX.  Labels are the
 * only text from the database: escaped when loaded, quoted again here for
 * the format.  It calls nothing of the report's sections or driver.
 */
#include "lab/report/kit/report_kit.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const RepStyle REP_MD_STYLE = {1, " ± ", "–"}, REP_TEX_STYLE = {0, " $\\pm$ ", "--"};

/* s as a Markdown code span (not inside a table): fenced by one backtick
 * more than its longest run of backticks, padded with a space when it
 * starts or ends with one (CommonMark), control characters as \xNN. */
void rep_md_code(FILE *f, const char *s) {
    size_t longest = 0, run = 0, n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        run = s[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    int pad = n && (s[0] == '`' || s[n - 1] == '`');
    for (size_t i = 0; i <= longest; i++) fputc('`', f);
    if (pad) fputc(' ', f);
    store_fput_escaped(f, s);
    if (pad) fputc(' ', f);
    for (size_t i = 0; i <= longest; i++) fputc('`', f);
}

/* rep_md_code's text on the heap (NULL and the error set on failure). */
char *rep_md_code_str(R *r, const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return rep_oom(r), NULL;
    rep_md_code(f, s);
    if (fclose(f) != 0) {
        free(buf);
        return rep_oom(r), NULL;
    }
    return buf;
}

/* Markdown text (a table cell, outside code spans): the characters that
 * could start markup (code, emphasis, links, HTML, strikethrough, math, the
 * cell's end) backslash-escaped, '_' unless inside a word (where it is
 * literal anyway: "seq_len" stays); control characters as \xNN. */
void rep_md_text(FILE *f, const char *s) {
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\x%02x", c);
            continue;
        }
        int in_word = c == '_' && p > s && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1]);
        if (strchr("\\`*[]<>|~$", c) || (c == '_' && !in_word)) fputc('\\', f);
        fputc(c, f);
    }
}

/* TeX text with the special characters escaped (a control character as
 * the text \xNN). */
void rep_tex_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\textbackslash{}x%02x", c);
            continue;
        }
        switch (*s) {
        case '\\': fputs("\\textbackslash{}", f); break;
        case '~': fputs("\\textasciitilde{}", f); break;
        case '^': fputs("\\textasciicircum{}", f); break;
        case '&': case '%': case '$': case '#': case '_': case '{': case '}':
            fputc('\\', f);
            fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

/* CSV field: quoted when it holds a comma, quote or newline. */
/* A number, or nothing when NAN; then the separator sep (',' or '\n'). */
void rep_csv_val(FILE *f, double v, char sep) {
    if (!isnan(v)) fprintf(f, "%.10g", v);
    fputc(sep, f);
}

void rep_fmt_p(char *buf, size_t cap, double p) {
    if (p >= 0.001)
        snprintf(buf, cap, "%.3f", p);
    else
        snprintf(buf, cap, "%.1e", p);
}

/* mean ± std with prec decimals; the mean alone when std is NAN. */
void rep_cell_ms(char *dst, size_t cap, double m, double sd, int prec, const char *pm, const char *miss) {
    if (isnan(m))
        snprintf(dst, cap, "%s", miss);
    else if (isnan(sd))
        snprintf(dst, cap, "%.*f", prec, m);
    else
        snprintf(dst, cap, "%.*f%s%.*f", prec, m, pm, prec, sd);
}

void rep_md_plot(const R *r, FILE *f, const PlotEntry *e) {
    fprintf(f, "**%s**", e->title);
    if (e->made) {
        if (r->term_svg && r->term_png)
            fprintf(f, " ([SVG](plots/%s.svg))\n\n![%s](plots/%s.png)\n\n", e->base, e->base, e->base);
        else
            fprintf(f, "\n\n![%s](plots/%s.%s)\n\n", e->base, e->base, r->term_png ? "png" : "svg");
    } else if (r->gp_ok)
        fprintf(f, ": gnuplot failed (see `plots/gnuplot.log`); data `plots/%s.dat`, script `plots/%s.gp`\n\n",
                e->base, e->base);
    else
        fprintf(f, ": not drawn; data `plots/%s.dat`, script `plots/%s.gp`\n\n", e->base, e->base);
}

int rep_tab_row(R *r, Tab *t) {
    if (rep_grow(r, (void **)&t->cell, &t->cap, (t->nrow + 1) * t->ncol, sizeof *t->cell)) return -1;
    for (int j = 0; j < t->ncol; j++) t->cell[t->nrow * t->ncol + j] = NULL;
    return t->nrow++;
}

int rep_tab_init(R *r, Tab *t, int ncol) {
    *t = (Tab){ncol, 0, 0, NULL};
    return rep_tab_row(r, t) < 0 ? -1 : 0;
}

int rep_tab_put(Tab *t, int row, int col, char *text) {
    if (!text) return -1;
    free(t->cell[row * t->ncol + col]);
    t->cell[row * t->ncol + col] = text;
    return 0;
}

void rep_tab_free(Tab *t) {
    for (int i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i]);
    free(t->cell);
}

void rep_tab_write(FILE *f, const Tab *t, const RepStyle *y) {
    if (!y->md) {
        fprintf(f, "\\begin{tabular}{l");
        for (int j = 1; j < t->ncol; j++) fputc('r', f);
        fprintf(f, "}\n\\toprule\n");
    }
    for (int i = 0; i < t->nrow; i++) {
        if (y->md) fputc('|', f);
        for (int j = 0; j < t->ncol; j++) {
            const char *c = t->cell[i * t->ncol + j];
            fputs(y->md ? " " : j ? " & " : "", f);
            if (i && j)
                fputs(c ? c : "", f);
            else if (y->md)
                rep_md_text(f, c ? c : "");
            else
                rep_tex_text(f, c ? c : "");
            if (y->md) fputs(" |", f);
        }
        fputs(y->md ? "\n" : " \\\\\n", f);
        if (i == 0 && y->md) {
            fputc('|', f);
            for (int j = 0; j < t->ncol; j++) fputs(j ? "--:|" : "---|", f);
            fputc('\n', f);
        }
        if (i == 0 && !y->md) fputs("\\midrule\n", f);
    }
    fputs(y->md ? "\n" : "\\bottomrule\n\\end{tabular}\n", f);
}

int rep_tab_done(FILE *f, Tab *t, const RepStyle *y, int rc) {
    if (rc == 0) rep_tab_write(f, t, y);
    rep_tab_free(t);
    return rc;
}

/* A label inside a caption: `code` in markdown; in a TeX comment as is,
 * but on one line (store_fput_escaped: a line break would end the comment
 * and make the rest TeX input). */
void rep_cap_label(FILE *f, int md, const char *s) {
    if (md)
        rep_md_code(f, s);
    else
        store_fput_escaped(f, s);
}

char *rep_fmt_count(R *r, double v, const char *miss) {
    static const char *const suffix[] = {"", "k", "M", "B"};
    int i = 0;
    if (isnan(v)) return rep_dup(r, miss);
    while (i < 3 && fabs(v) >= 1000) v /= 1000, i++;
    return i ? rep_fmt(r, "%.3g%s", v, suffix[i]) : rep_fmt(r, "%.0f", v);
}

char *rep_ms_cell(R *r, const RepStyle *y, double m, double sd, int prec) {
    char buf[96];
    rep_cell_ms(buf, sizeof buf, m, sd, prec, y->pm, y->miss);
    return rep_dup(r, buf);
}

void rep_csv_num(FILE *f, double v) { rep_csv_val(f, v, ','); }

void rep_csv_row_head(FILE *f, const RSweep *s, int k) {
    csv_fput_text(s->name, f);
    fputc(',', f);
    csv_fput_text(s->vars[k].label, f);
    fputc(',', f);
}
