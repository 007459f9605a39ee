/*
 * csv.h — CSV cells (RFC 4180), for every CSV file gated writes (reports,
 * `gated export`).
 *
 * Text cells are quoted only when they must be: a cell holding a comma, a
 * double quote, CR or LF goes between double quotes, each double quote
 * doubled.  A text cell that starts with = + - @, a tab or CR, which a
 * spreadsheet would run as a formula (CSV injection), is written with a
 * single quote ' in front, between double quotes: "'=1+2" reads back as
 * '=1+2 (strip one leading ' from such a cell to get the text).  Numbers
 * are written by the caller's format and never neutralised, so -0.5 stays
 * a number.  A byte that starts no valid UTF-8 character becomes U+FFFD,
 * so the file is always valid UTF-8.  A control character other than tab
 * and line feed (C0, DEL, C1: what could drive a terminal the file is
 * printed on) is written visibly, each of its bytes as \xNN, as `gated ls`
 * and `show` write them.
 */
#ifndef GATED_CSV_H
#define GATED_CSV_H

#include <stdio.h>

/* One text cell (no separator).  NULL is an empty cell.  0, or EOF on a
 * write error. */
int csv_fput_text(const char *s, FILE *f);

/* Whether csv_fput_text puts a ' in front of s. */
int csv_is_formula(const char *s);

#endif
