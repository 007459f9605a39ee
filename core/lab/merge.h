/*
 * merge.h — `gated merge`: fold results databases (one per sweep worker or
 * machine) into one.  A database from elsewhere is untrusted, so this is
 * lab code: it reads the input only through SQLite, refuses names that are
 * not printable text, and copies nothing of an input it refuses.
 */
#ifndef GATED_MERGE_H
#define GATED_MERGE_H

#include <stddef.h>

#include "run/store.h"

/* Copy everything from the gated database at src_path into dst, in one
 * transaction: environments (matched by content hash), runs, metrics,
 * summary, histograms, sweep_runs and code_attest, without duplicates
 * (run_claims and bench are not results of a run, and are not copied).
 * Before anything is copied, every run id, run name, sweep name and label
 * in src must pass store_name_check, and every code_attest row must be
 * well formed (texts that pass it, code_version a commit, git_dirty 0 or
 * 1, counts and times of the right types): one that does not makes src
 * unusable (-2, a message naming the row).  An attestation is copied only
 * when it holds for the copy of its run that dst holds after the merge
 * (run/store.h, "Code attestations"); it replaces a dst row for the same
 * build only when that one no longer holds.  A run present in both keeps the row with the better
 * status (finished > diverged > failed > killed > running), then the later
 * ended_at, then the later heartbeat; on a tie dst's row stays.  The
 * winning run's metric, summary and histogram rows replace dst's on the
 * same key; the other runs' rows only fill keys dst lacks.  Merging the
 * same input twice changes nothing.  An input of schema 1 is copied as
 * run/store.c migrates one (steps of the per-update keys and diverged_step
 * + 1, metric timestamps NULL).  src is only read.  Returns 0; -2 when
 * src is not usable (missing, not a gated database, a newer schema, or dst
 * itself); -1 on a failure while copying (nothing of that input is kept).
 * The message is in err (always NUL-terminated; "" on success). */
int merge_from(Store *dst, const char *src_path, char *err, size_t cap);

#endif
