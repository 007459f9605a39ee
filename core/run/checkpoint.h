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
 * step before it; an evaluation stores its results in the run's rows, so
 * the weights must be that run's.  Checkpoints are kept by database:
 * CKDIR/DB_ID/RUN_ID.ckpt (checkpoint_path), so two databases in one
 * directory never share one.  Every reader of a run's checkpoint (train
 * --resume: checkpoint_load; gated eval, infer and train.init_from by run
 * name: checkpoint_check) makes one check
 * (owner_check in checkpoint.c): a format-3 file must name the database
 * read (store_db_id), or a database `gated merge` folded into it
 * (store_db_knows) and then hold the step where the run as stored ends
 * (store_run_last_step); a format-2 file names no database, so the
 * database must hold the run's rows of every step up to the checkpoint's
 * (store_run_rows_through).  checkpoint_read checks no database: for a
 * file named by the user as train.init_from, whose rows are nowhere.
 * Files at the paths used before (CKDIR/RUN_ID.ckpt, ./checkpoints/
 * RUN_ID.ckpt) are still found (checkpoint_locate) and pass the same check.
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
/* The checkpoint of config_json for a resume into the database st: 1
 * loaded, 0 no checkpoint at path, -1 error (message in err): another
 * configuration, or not the database's (see above).  st NULL checks no
 * database (tests of the file format only). */
typedef struct Store Store;
int checkpoint_load(const char *path, const char *config_json, Store *st, Arena *a, TrainState *ts, char *err,
                    size_t cap);
/* The check above, of the whole checkpoint file at path (read through:
 * its checksum, then its step) as run run_id of the database st: 0, or -1
 * with err (no file, a corrupt one, another run's, not this database's). */
int checkpoint_check(const char *path, Store *st, const char *run_id, char *err, size_t cap);
/* CKDIR/DB_ID/RUN_ID.ckpt: where run run_id of database db_id keeps its
 * checkpoint. */
void checkpoint_path(const char *ckdir, const char *db_id, const char *run_id, char *out, size_t cap);
/* Where run run_id's checkpoint for the database st is: the first of
 * CKDIR/DB_ID/RUN_ID.ckpt, CKDIR/RUN_ID.ckpt, (legacy) ./checkpoints/
 * RUN_ID.ckpt, CKDIR/ID/RUN_ID.ckpt for the ids of databases merged into
 * st that exists, into out: 1; 0 when none does (out: the first). */
int checkpoint_locate(Store *st, const char *ckdir, int legacy, const char *run_id, char *out, size_t cap);
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
