/*
 * cli.h — what every `gated` command shares: its description (Command: the
 * name, synopsis, one-line summary, options and notes that main.c's command
 * table, `gated help CMD`, `-h` / `--help` and the usage after a usage error
 * are all printed from), option parsing over that description with glibc's
 * getopt_long, the exit statuses, and the default database.
 *
 * A command's run function gets argv with argv[0] = the command name and
 * parses it with cli_next(), which adds -h / --help and --version to every
 * command and turns getopt's errors into one message each:
 *   gated train: --db: missing value
 *   gated train: unknown option '--bogus'
 * followed by the command's short usage, exit 2.  GNU getopt permutes argv
 * (options may follow the positional arguments; "--" ends the options) and
 * accepts a unique prefix of a long option (--dry for --dry-run).
 */
#ifndef GATED_CLI_H
#define GATED_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "run/config.h"

/* Exit statuses (docs/cli.md, "Exit status and output streams"); a command
 * stopped by SIGINT or SIGTERM after its cleanup exits 128 + the signal
 * number (130, 143), as a shell reports a process the signal killed. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_BADINPUT = 2, EXIT_REGRESSION = 3, EXIT_SIGNAL_BASE = 128 };
/* The exit status of a failed store_open / store_open_ro: -2 (the path or
 * the file refused) EXIT_BADINPUT, else (locked, disk full, I/O)
 * EXIT_RUNTIME. */
static inline int cli_store_exit(int rc) { return rc == -2 ? EXIT_BADINPUT : EXIT_RUNTIME; }

/* The database a command uses without --db: $GATED_DB when set and not
 * empty, else this path under the current directory (git ignores .gated/,
 * and `gated train` / `gated sweep` create the directory). */
#define CLI_DEFAULT_DB ".gated/gated.db"
/* The committed results (`make results-db`), relative to the repository root. */
#define CLI_MATRIX_DB "results/gated.db"
#define CLI_DB_HELP "results database (default: $GATED_DB, else " CLI_DEFAULT_DB ")"
const char *cli_default_db(void);

/* One long option of a command. */
typedef struct {
    const char *name; /* without the dashes; NULL ends a table */
    const char *arg;  /* the value's placeholder in the usage ("PATH"); NULL: a flag */
    const char *help; /* one line for --help */
    int many;         /* may be given more than once ("[--set KEY=VALUE]...") */
    int required;     /* shown without brackets in the usage */
} CliOpt;

typedef struct Command {
    const char *name;
    const char *args;    /* positional arguments in the synopsis ("CONFIG.yaml"); "" for none */
    const char *summary; /* one line, for the table of commands */
    const CliOpt *opts;  /* indexed by the command's own enum; NULL for none */
    const char *notes;   /* text after the options in --help (defaults, what is printed), or NULL */
    int (*run)(int argc, char **argv);
} Command;

/* The command table (main.c), in the order `gated help` lists it. */
extern const Command *const cli_commands[];
const Command *cli_find(const char *name);

/* 0 when the database db exists; else 1, having said so on stderr with
 * what makes one: `make results-db` where the committed parts lie beside
 * it (DIR/db/MANIFEST.tsv), else how to create one, and (db is not --db's
 * or $GATED_DB's choice) that --db names another. */
int cli_require_db(const Command *cmd, const char *db);

/* getopt_long over a command's options; see cli_next. */
enum { CLI_MAX_OPTS = 24 };
typedef struct {
    const Command *cmd;
    int argc;
    char **argv;
    struct option lo[CLI_MAX_OPTS + 3];
    int status; /* after CLI_EXIT: the exit status */
} CliArgs;

enum { CLI_END = -1, CLI_EXIT = -2 };

/* Start parsing argv (argv[0] = the command name) for cmd. */
void cli_begin(CliArgs *a, const Command *cmd, int argc, char **argv);
/* The next option: its index in cmd->opts, with its value in *val (NULL for
 * a flag); CLI_END when the options are done (then cli_rest gives the
 * positional arguments); or CLI_EXIT, with a->status 0 after -h / --help or
 * --version (printed on stdout) or 2 after a usage error (the message and
 * the short usage on stderr).  An empty value is a usage error. */
int cli_next(CliArgs *a, const char **val);
/* The positional arguments, after CLI_END: their count, and *first. */
int cli_rest(const CliArgs *a, char ***first);

/* "gated CMD: MESSAGE" and the command's short usage on stderr; returns
 * EXIT_BADINPUT. */
int cli_usage_error(const Command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The synopsis ("usage: gated CMD ARGS [--opt VALUE]...") on f. */
void cli_usage(const Command *cmd, FILE *f);
/* The whole help of a command (synopsis, summary, options, notes) on f. */
void cli_help(const Command *cmd, FILE *f);
/* "gated VERSION" (the code version the provenance records). */
void cli_version(FILE *f);

/* The directory part of path ("." when none), malloc'd; NULL when out of
 * memory. */
char *cli_dir_of(const char *path);

/* Load the run config at path, then the --set assignments sets[0..nsets-1]
 * in order, then resolve it; *raw (may be NULL) gets the config before
 * config_resolve.  A sweep file is named as one ("use gated sweep").
 * 0, or EXIT_BADINPUT with the message printed. */
int cli_load_config(Config *c, const char *path, char **sets, int nsets, Config *raw);

#endif
