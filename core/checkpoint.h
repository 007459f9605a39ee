/*
 * checkpoint.h — save and restore a training run's full state.
 *
 * A checkpoint holds everything the next step depends on — weights, AdamW
 * moments, the step counter, the data stream's RNG, the loss ring used for
 * spike detection and the counters — so a resumed run continues bitwise
 * identically to an uninterrupted one.  Files are written to a temporary
 * name and renamed, so a killed run leaves either the old or the new
 * checkpoint, never half of one.  The resolved config JSON is stored and
 * checked on load: a checkpoint of another configuration is refused.
 *
 * Layout (little-endian): "GATEDCKPT1\n", u32 sizeof(real), u64 json length,
 * json, u64 arena total, w, m, v (reals), TrainState (raw struct).
 */
#ifndef GATED_CHECKPOINT_H
#define GATED_CHECKPOINT_H

#include <stdint.h>

#include "arena.h"
#include "rng.h"

typedef struct {
    int64_t step;     /* next step to run */
    Rng data_rng;     /* training window stream */
    double ring[100]; /* last 100 training losses */
    int64_t spikes;
    double train_time; /* seconds spent in steps so far */
} TrainState;

/* 0 or -1 with a message in err. */
int checkpoint_save(const char *path, const char *config_json, const Arena *a, const TrainState *ts, char *err,
                    size_t cap);
/* Any checkpoint, whatever its configuration: the config JSON into *json
 * (malloc'd) and, when a is non-NULL, weights, AdamW moments and the
 * training state (a->total must match).  1, 0 (no file), -1 (err). */
int checkpoint_read(const char *path, char **json, Arena *a, TrainState *ts, char *err, size_t cap);
/* 1 loaded, 0 no checkpoint at path, -1 error (message in err). */
int checkpoint_load(const char *path, const char *config_json, Arena *a, TrainState *ts, char *err, size_t cap);

#endif
