/*
 * train.h — one training run: data → forward → backward → AdamW, with
 * evaluations, probes and every number written to the results store.
 */
#ifndef GATED_TRAIN_H
#define GATED_TRAIN_H

#include <stddef.h>

#include "run/config.h"

typedef struct {
    const char *db_path;  /* results database */
    const char *name;     /* run name (default: the run id) */
    const char *data_dir; /* where `make data` put the corpus */
    const char *argv;     /* the command line, for provenance */
    int progress;         /* 1: redraw one progress line (a terminal); 0: plain periodic lines */
    int resume;           /* continue from the run's checkpoint, if there is one */
    const char *ckpt_dir; /* checkpoints: CKPT_DIR/RUN_ID.ckpt */
    long stop_after;      /* > 0: stop (as if killed) after this many steps, checkpointing first */
    int force;            /* 1: start even when the memory estimate exceeds what is available */
} TrainOpts;

/* Train c (resolved).  Returns the exit code: 0 finished or diverged (a
 * diverged run is a result), 1 runtime failure (out of memory included: the
 * run is then `failed`, never `diverged`), 2 bad input (for example a
 * missing corpus, a corrupt checkpoint to resume, or a model whose memory
 * estimate (train_memory_check) exceeds what the machine has, unless
 * o->force), with the message on stderr; 128 + the signal number (130,
 * 143) when SIGINT or SIGTERM stopped it (checkpointed, its rows stored,
 * the run killed).
 *
 * Before anything is stored the run is checked: with o->resume, a run the
 * database already has as finished or diverged is left as it is (exit 0,
 * "already finished"), and the checkpoint is read and verified (see
 * checkpoint.h) before the run's row is touched, so a failed resume
 * changes no status.  Metric rows are committed before each checkpoint is
 * written, so the step a checkpoint names as done has all its rows in the
 * database: a kill at any moment and a --resume lose and duplicate
 * nothing.  A run resumed at its last step, or one of train.steps = 0, is
 * evaluated and finished.
 *
 * Tests only: GATED_TEST_KILL_AFTER_CKPT=N raises SIGKILL right after this
 * process wrote its Nth checkpoint. */
int train_run(const Config *c, const TrainOpts *o);

/* The memory check train_run makes before the model is allocated: the
 * estimate (model_memory_estimate at train.batch x model.seq_len) against
 * the least of MemAvailable (/proc/meminfo), RLIMIT_AS less the address
 * space in use, and each enclosing cgroup's memory limit less its usage.
 * Returns 1 when the run fits (or nothing says how much is available), 0
 * when it does not, -1 out of memory; msg (always NUL-terminated) gets
 * the numbers either way. */
int train_memory_check(const Config *c, char *msg, size_t cap);

#endif
