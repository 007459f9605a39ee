/*
 * json.h — JSON string literals: one escaper and its decoder, for every
 * place that writes text into JSON (the stored config, reports, records).
 *
 * Escaping never shortens: '"' and '\' are escaped, \n \r \t keep their
 * short forms, every other control byte (0x00-0x1f, 0x7f) is \u00XX, and
 * all other bytes (UTF-8 included) pass through unchanged.  The output is
 * also a valid YAML double-quoted scalar.
 */
#ifndef GATED_JSON_H
#define GATED_JSON_H

#include <stddef.h>
#include <stdio.h>

/* s as a JSON string literal, quotes included, into out.  Like snprintf:
 * returns the length of the full literal whatever cap is (out, when cap > 0,
 * is always terminated; a cut literal is only a prefix, so size out with
 * json_quote(s, NULL, 0) + 1 to keep all of it). */
size_t json_quote(const char *s, char *out, size_t cap);

/* The same literal written to f.  0, or EOF on a write error. */
int json_fput(const char *s, FILE *f);

/* Decode the JSON string literal at s (s points at its opening quote) into
 * out, NUL-terminated: \" \\ \/ \b \f \n \r \t and \uXXXX (surrogate pairs
 * give one UTF-8 sequence).  Returns the position after the closing quote,
 * or NULL when the literal is malformed (no closing quote, a raw control
 * byte, a bad escape, a lone surrogate, \u0000) or does not fit in cap. */
const char *json_unquote(const char *s, char *out, size_t cap);

#endif
