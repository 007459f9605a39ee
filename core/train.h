/*
 * train.h — one training run: data → forward → backward → AdamW, with
 * evaluations, probes and every number written to the results store.
 */
#ifndef GATED_TRAIN_H
#define GATED_TRAIN_H

#include "config.h"

typedef struct {
    const char *db_path;  /* results database */
    const char *name;     /* run name (default: the run id) */
    const char *data_dir; /* where `make data` put the corpus */
    const char *argv;     /* the command line, for provenance */
    int progress;         /* 1: redraw one progress line (a terminal); 0: plain periodic lines */
    int resume;           /* continue from the run's checkpoint, if there is one */
    const char *ckpt_dir; /* checkpoints: CKPT_DIR/RUN_ID.ckpt */
    long stop_after;      /* > 0: stop (as if killed) after this many steps, checkpointing first */
} TrainOpts;

/* Train c (resolved).  Returns the exit code: 0 finished or diverged (a
 * diverged run is a result), 1 runtime failure, 2 bad input (for example a
 * missing corpus), with the message on stderr. */
int train_run(const Config *c, const TrainOpts *o);

#endif
