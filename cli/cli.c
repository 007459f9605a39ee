/*
 * cli.c — option parsing, usage and help from a command's description,
 * the version line, the default database, a run config with --set (cli.h).
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "run/store.h"
#include "run/yamlfile.h"

/* getopt_long's val for option i of a command: above every byte, so no
 * short option and none of getopt's ':' / '?' can be taken for one. */
enum { OPT_BASE = 256, OPT_VERSION = 1 };

const char *cli_default_db(void) {
    const char *e = getenv("GATED_DB");
    return e && *e ? e : CLI_DEFAULT_DB;
}

int cli_require_db(const Command *cmd, const char *db) {
    if (access(db, F_OK) == 0) return 0;
    char *dir = cli_dir_of(db), *manifest = NULL, qdb[600];
    int parts = dir && asprintf(&manifest, "%s/db/MANIFEST.tsv", dir) >= 0 && access(manifest, F_OK) == 0;
    free(dir);
    free(manifest);
    const char *hint = parts ? "the committed results: build it with `make results-db`"
                       : strcmp(db, CLI_DEFAULT_DB) != 0
                           ? "gated train or gated sweep with this --db creates it; the committed results: "
                             "`make results-db`, then --db results/gated.db"
                           : "train a run or run a sweep first, or pass --db PATH; the committed results: "
                             "`make results-db`, then --db results/gated.db";
    fprintf(stderr, "gated %s: %s: no such database (%s)\n", cmd->name, store_escape(db, qdb, sizeof qdb), hint);
    return 1;
}

const Command *cli_find(const char *name) {
    for (int i = 0; cli_commands[i]; i++)
        if (strcmp(cli_commands[i]->name, name) == 0) return cli_commands[i];
    return NULL;
}

static int nopts(const Command *cmd) {
    int n = 0;
    while (cmd->opts && cmd->opts[n].name) n++;
    return n;
}

void cli_begin(CliArgs *a, const Command *cmd, int argc, char **argv) {
    int n = nopts(cmd);
    if (n > CLI_MAX_OPTS) { /* a programming error: raise CLI_MAX_OPTS */
        fprintf(stderr, "gated %s: %d options, more than CLI_MAX_OPTS\n", cmd->name, n);
        abort();
    }
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    for (int i = 0; i < n; i++)
        a->lo[i] = (struct option){cmd->opts[i].name, cmd->opts[i].arg ? required_argument : no_argument, NULL,
                                   OPT_BASE + i};
    a->lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    a->lo[n + 1] = (struct option){"version", no_argument, NULL, OPT_VERSION};
    optind = 0; /* glibc: start over (argv[0], the command name, is skipped) */
    opterr = 0; /* the messages are ours */
}

/* The long option getopt reported in optopt ("help", "version" or one of
 * the command's). */
static const char *opt_name(const CliArgs *a, int id) {
    if (id == 'h') return "help";
    if (id == OPT_VERSION) return "version";
    return a->cmd->opts[id - OPT_BASE].name;
}

/* An unknown or ambiguous long option: argv[optind - 1] (getopt has moved
 * past it).  The name up to any '=', quoted for the message. */
static void bad_long_option(CliArgs *a) {
    const char *arg = a->argv[optind - 1];
    char name[128], q[300], cands[512] = "";
    size_t len = strcspn(arg, "=");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), arg);
    config_quote(name, q, sizeof q);
    int k = 0;
    const char *prefix = name + 2;
    for (int i = 0; a->lo[i].name && strncmp(name, "--", 2) == 0; i++)
        if (strncmp(a->lo[i].name, prefix, strlen(prefix)) == 0) {
            size_t l = strlen(cands);
            snprintf(cands + l, sizeof cands - l, "%s--%s", k++ ? ", " : "", a->lo[i].name);
        }
    if (k > 1)
        a->status = cli_usage_error(a->cmd, "ambiguous option '%s' (%s)", q, cands);
    else
        a->status = cli_usage_error(a->cmd, "unknown option '%s'", q);
}

int cli_next(CliArgs *a, const char **val) {
    *val = NULL;
    int c = getopt_long(a->argc, a->argv, ":h", a->lo, NULL);
    if (c == -1) return CLI_END;
    if (c == 'h' || c == OPT_VERSION) {
        if (c == 'h')
            cli_help(a->cmd, stdout);
        else
            cli_version(stdout);
        a->status = fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
        return CLI_EXIT;
    }
    if (c == ':') {
        a->status = cli_usage_error(a->cmd, "--%s: missing value", opt_name(a, optopt));
        return CLI_EXIT;
    }
    if (c == '?') {
        if (optopt == 'h' || optopt == OPT_VERSION || optopt >= OPT_BASE)
            a->status = cli_usage_error(a->cmd, "--%s takes no value", opt_name(a, optopt));
        else if (optopt)
            a->status = cli_usage_error(a->cmd, "unknown option '-%c'", optopt > ' ' && optopt < 127 ? optopt : '?');
        else
            bad_long_option(a);
        return CLI_EXIT;
    }
    *val = optarg;
    if (optarg && !*optarg) {
        a->status = cli_usage_error(a->cmd, "--%s: empty value", opt_name(a, c));
        return CLI_EXIT;
    }
    return c - OPT_BASE;
}

int cli_rest(const CliArgs *a, char ***first) {
    int i = optind < a->argc ? optind : a->argc;
    *first = a->argv + i;
    return a->argc - i;
}

/* ------------------------------------------------------------------ */
/* usage and help                                                      */
/* ------------------------------------------------------------------ */

enum { WIDTH = 100 };

void cli_usage(const Command *cmd, FILE *f) {
    int indent = fprintf(f, "usage: gated %s", cmd->name), col = indent;
    if (*cmd->args) col += fprintf(f, " %s", cmd->args);
    for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
        const CliOpt *o = &cmd->opts[i];
        char item[160];
        snprintf(item, sizeof item, "%s--%s%s%s%s%s", o->required ? "" : "[", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "", o->required ? "" : "]", o->many ? "..." : "");
        int len = (int)strlen(item);
        if (col + 1 + len > WIDTH) col = fprintf(f, "\n%*s", indent, "") - 1;
        col += fprintf(f, " %s", item);
    }
    fputc('\n', f);
}

void cli_help(const Command *cmd, FILE *f) {
    cli_usage(cmd, f);
    fprintf(f, "\n%s\n\noptions:\n", cmd->summary);
    int w = 16;
    for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
        int l = 2 + (int)strlen(cmd->opts[i].name) + (cmd->opts[i].arg ? 1 + (int)strlen(cmd->opts[i].arg) : 0);
        if (l > w) w = l;
    }
    for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
        const CliOpt *o = &cmd->opts[i];
        char item[160];
        snprintf(item, sizeof item, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-*s  %s%s\n", w, item, o->help, o->many ? "; repeatable" : "");
    }
    fprintf(f, "  %-*s  %s\n  %-*s  %s\n", w, "-h, --help", "this help, on stdout", w, "--version",
            "gated and its code version");
    if (cmd->notes) fprintf(f, "\n%s", cmd->notes);
    fprintf(f, "\nExit status and output streams: gated --help.\n");
}

int cli_usage_error(const Command *cmd, const char *fmt, ...) {
    fprintf(stderr, "gated %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cli_usage(cmd, stderr);
    fprintf(stderr, "(gated %s --help explains each option)\n", cmd->name);
    return EXIT_BADINPUT;
}

void cli_version(FILE *f) {
    Provenance p;
    store_provenance_fill(&p);
    fprintf(f, "gated %s%s\n", p.code_version ? p.code_version : "unknown", p.git_dirty == 1 ? " (dirty)" : "");
}

char *cli_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* ------------------------------------------------------------------ */
/* a run config                                                        */
/* ------------------------------------------------------------------ */

/* Whether path is a sweep file: a top-level mapping with `base` and
 * `variants` or `parameters` (core/lab/sweep/sweep.c's format). */
static int is_sweep_file(const char *path) {
    yaml_document_t doc;
    ConfigError err;
    if (yaml_file_load(path, "a run file", &doc, &err)) return 0;
    int base = 0, rows = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(&doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) continue;
            const char *s = (const char *)k->data.scalar.value;
            base |= strcmp(s, "base") == 0;
            rows |= strcmp(s, "variants") == 0 || strcmp(s, "parameters") == 0;
        }
    yaml_document_delete(&doc);
    return base && rows;
}

int cli_load_config(Config *c, const char *path, char **sets, int nsets, Config *raw) {
    ConfigError err;
    config_defaults(c);
    if (config_load_file(c, path, &err)) {
        if (is_sweep_file(path))
            fprintf(stderr, "%s: error: a sweep file, not a run config: run it with gated sweep %s\n", path, path);
        else
            fprintf(stderr, "%s\n", err.msg);
        return EXIT_BADINPUT;
    }
    for (int i = 0; i < nsets; i++)
        if (config_set(c, sets[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return EXIT_BADINPUT;
        }
    if (raw) *raw = *c;
    if (config_resolve(c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return EXIT_BADINPUT;
    }
    return 0;
}
