/*
 * sweep.h — a sweep: one base run config, a set of override rows (named
 * variants, a grid or a zip over config keys) and a list of seeds, expanded
 * into an ordered list of fully resolved runs.
 *
 * The sweep file format is documented at the top of sweep.c.  Loading
 * validates everything up front: every override against the config schema
 * (through config_set, so values are parsed exactly as in run files and
 * --set), and every run's configuration through config_resolve, so an
 * invalid combination is an error before anything runs.  Errors are
 * "FILE:LINE:COL: error: KEY: reason" in a ConfigError, as for run configs;
 * the CLI prints them and exits 2.
 */
#ifndef GATED_SWEEP_H
#define GATED_SWEEP_H

#include "run/config.h"

typedef enum { SWEEP_VARIANTS, SWEEP_GRID, SWEEP_ZIP } SweepMethod;

/* The longest sweep name and row label, and the longest run name, in
 * bytes: each becomes part of file names (logs/NAME.log, the report's
 * SWEEP-...-LABEL.svg, a temporary file's ".NAME.tmp-XXXXXX"), which may
 * be 255 bytes; a longer one is refused when the sweep is loaded. */
#define SWEEP_NAME_MAX 64
#define SWEEP_RUN_NAME_MAX 128
extern const char *const sweep_method_names[]; /* "variants", "grid", "zip" */

typedef struct {
    int index;      /* position in the sweep (0-based): rows in order, seeds innermost */
    int row;        /* which variant / grid point / zip point (0-based) */
    char *label;    /* the row's label */
    long long seed; /* train.seed of the resolved config */
    char *name;     /* from the run_name template */
    /* "key=value" overrides applied, in this order, after loading the base
     * file: the sweep's `set`, the row's overrides, then train.seed (when
     * the sweep has `seeds`).  Exactly what `gated train BASE --set ...`
     * is given, so the child computes the same run id. */
    char **overrides;
    int noverrides;
    int is_baseline; /* the row's label is the sweep's baseline */
    Config config;   /* resolved */
    char run_id[17]; /* store_run_id(config_to_json(&config)) */
} SweepRun;

typedef struct {
    char *path; /* the sweep file, as given */
    char *name;
    char *base;     /* the base run config, as a path usable from the current directory */
    char *baseline; /* a row label, or NULL when the sweep names none */
    SweepMethod method;
    int nrows;  /* variants / grid points / zip points */
    int nseeds; /* entries of `seeds` (0: each row runs once with the base seed) */
    SweepRun *runs;
    int nruns;
} Sweep;

/* Load and expand the sweep file at path.  Returns 0, or -1 with the
 * message in err (and *s empty: sweep_free is safe either way). */
int sweep_load(Sweep *s, const char *path, ConfigError *err);

/* Free everything sweep_load allocated and zero *s.  NULL ok. */
void sweep_free(Sweep *s);

#endif
