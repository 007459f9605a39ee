/*
 * json.h — the project's one JSON writer and reader.
 *
 * Writing: string literals through one escaper (json_quote / json_fput), for
 * every place that writes text into JSON (the stored config, reports,
 * records, Google-Benchmark JSON).  Escaping never shortens: '"' and '\'
 * are escaped, \n \r \t keep their short forms, every other control byte
 * (0x00-0x1f, 0x7f) is \u00XX, and all other bytes (UTF-8 included) pass
 * through unchanged.  The output is also a valid YAML double-quoted scalar.
 *
 * Reading: json_unquote decodes one string literal; json_parse reads a
 * whole text into a small DOM (objects, arrays, strings, numbers, true,
 * false, null), with every string decoded by json_unquote.
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

/* The same for text read back from a file or a database, which may hold
 * anything: a byte that starts no valid UTF-8 character is written as
 * \ufffd (the replacement character), so the output is always valid
 * UTF-8 JSON.  Valid text is written exactly as json_fput writes it, but
 * for C1 controls (U+0080-U+009F), which are escaped (\u009b) like C0 ones,
 * so no terminal control reaches a terminal the output is printed on. */
int json_fput_text(const char *s, FILE *f);

/* A number: util_fmt_double's shortest text that reads back bitwise, or
 * null when it is NaN or infinite (JSON has neither).  0, or EOF on a write error. */
int json_fput_num(double v, FILE *f);

/* Decode the JSON string literal at s (s points at its opening quote) into
 * out, NUL-terminated: \" \\ \/ \b \f \n \r \t and \uXXXX (surrogate pairs
 * give one UTF-8 sequence).  Returns the position after the closing quote,
 * or NULL when the literal is malformed (no closing quote, a raw control
 * byte, a bad escape, a lone surrogate, \u0000) or does not fit in cap. */
const char *json_unquote(const char *s, char *out, size_t cap);

/* ------------------------------------------------------------ the DOM */

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ } JsonType;

typedef struct Json Json;
struct Json {
    JsonType type;
    double num;  /* JSON_NUM: the value; JSON_BOOL: 1 (true) or 0 (false) */
    char *str;   /* JSON_STR: the decoded string (UTF-8, NUL-terminated);
                    JSON_NUM: the number as written ("1e-3", "NaN") */
    char **keys; /* JSON_OBJ: n decoded member names, in the text's order */
    Json **v;    /* JSON_ARR / JSON_OBJ: n values */
    int n;
    int cap;     /* slots allocated in v (and keys) */
};

/* Arrays and objects nest at most this deep; deeper text is refused. */
enum { JSON_MAX_DEPTH = 64 };

/* Parse text: RFC 8259 (one value, whitespace around it), plus NaN,
 * Infinity and -Infinity as numbers, since Google Benchmark (and
 * bench_write_json) write them.  Strings are decoded by json_unquote, so a
 * string holding \u0000 or a lone surrogate is refused.  Duplicate member
 * names are kept (json_get finds the first).  NULL on failure, with err
 * (when err and cap > 0) "line L col C: reason", C counting bytes from 1:
 * a syntax error, nesting deeper than JSON_MAX_DEPTH, or out of memory. */
Json *json_parse(const char *text, char *err, size_t cap);

/* The same for a whole file.  err: "PATH: cannot open: ...",
 * "PATH: not JSON (NUL byte)", "PATH: not valid JSON: line L col C: ...". */
Json *json_parse_file(const char *path, char *err, size_t cap);

/* Free a value and everything in it (NULL is fine). */
void json_free(Json *j);

/* The value of member key of object o (the first, if repeated), or NULL
 * (o NULL or not an object included). */
const Json *json_get(const Json *o, const char *key);

/* Write v compactly (no blanks): numbers as written, except that NaN and
 * infinities become null; strings and member names by json_fput_text.
 * NULL writes null.  0, or EOF on a write error. */
int json_fput_value(const Json *v, FILE *f);

/* A scalar as text: a string's decoded value, a number as written, "true",
 * "false" or "null"; NULL for an array, an object or v NULL. */
const char *json_text(const Json *v);

#endif
