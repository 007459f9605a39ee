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
 * Layout (format 3, little-endian): "GATEDCKPT3\n", u32 sizeof(real), the
 * database id (16 hex digits: store_db_id of the database the run's rows
 * are in) and the run id (16 hex digits, store_run_id of the json), u64
 * json length, json, u64 arena total n, w, m, v (n reals each), then the
 * TrainState field by field (i64 step, u64 rng state, f64 ring[100], i64
 * spikes, f64 train_time), then a u64 checksum of every byte before it.
 * Format 2 is the same without the two ids.
 *
 * A checkpoint is tied to its database: a resume goes on from the step it
 * names, and is exact only when the database holds the run's rows of every
 * step before it.  checkpoint_load refuses a format-3 file of another
 * database; a format-2 file says nothing about its database, so
 * checkpoint_load reads it and leaves the check to the caller (gated
 * train looks for the rows themselves: run/train.c).  checkpoint_read (the
 * weights for `gated eval` and train.init_from) reads both formats and
 * checks no database: reading weights needs no rows.
 *
 * Nothing read is trusted: on load the format, the size of a real, the
 * configuration (it must parse and resolve), the file's exact size, the
 * arena size, the checksum, the step (0 .. the configuration's
 * train.steps), the spike count (0 .. step), the train time, and every
 * weight, moment and loss-history value (finite; second moments >= 0) are
 * checked, and a failure is an error that names the file and the field.
 * A format-1 checkpoint (no checksum) is refused with a message.  A state
 * that would not load (a non-finite weight, say) is not written either.
 * The file is opened without blocking and must be a regular file (a FIFO
 * in its place is refused, never waited on).
 */
#ifndef GATED_CHECKPOINT_H
#define GATED_CHECKPOINT_H

#include <stdint.h>

#include "nn/arena.h"
#include "nn/rng.h"

typedef struct {
    int64_t step;     /* updates made: the last step run (steps count from 1), 0 before any */
    Rng data_rng;     /* training window stream */
    double ring[100]; /* last 100 training losses */
    int64_t spikes;
    double train_time; /* seconds spent in steps so far */
} TrainState;

/* Write a format-3 checkpoint of the run config_json whose rows are in the
 * database db_id (store_db_id: 16 hex digits).  0 or -1 with a message in
 * err. */
int checkpoint_save(const char *path, const char *config_json, const char *db_id, const Arena *a,
                    const TrainState *ts, char *err, size_t cap);
/* Any checkpoint, whatever its configuration: the config JSON into *json
 * (malloc'd) and, when a is non-NULL, weights, AdamW moments and the
 * training state (a->total must match).  1, 0 (no file), -1 (err). */
int checkpoint_read(const char *path, char **json, Arena *a, TrainState *ts, char *err, size_t cap);
/* The checksum a checkpoint ends with, of the n bytes before it (tests
 * use it to forge files whose checksum is right and whose fields are not). */
uint64_t checkpoint_checksum(const void *data, size_t n);
/* The checkpoint of config_json for a resume into the database db_id: 1
 * loaded, 0 no checkpoint at path, -1 error (message in err): another
 * configuration, or a format-3 file of another database.  A format-2 file
 * loads whatever the database (see above). */
int checkpoint_load(const char *path, const char *config_json, const char *db_id, Arena *a, TrainState *ts,
                    char *err, size_t cap);
/* Make the format-3 checkpoint at path name the database db_id (its
 * checksum made again), in place (a temporary file renamed over it): for
 * a checkpoint written into a scratch database on behalf of a run of
 * db_id (gated sweep --verify-code keeps a whole re-execution's).  0, or
 * -1 with err (the file unchanged). */
int checkpoint_retag(const char *path, const char *db_id, char *err, size_t cap);
/* Where checkpoints of the database at db_path go unless told otherwise:
 * its directory's checkpoints/ ("checkpoints" for a bare file name). */
void checkpoint_default_dir(const char *db_path, char *out, size_t cap);

#endif
