/*
 * merge.h — `gated merge`: fold results databases (one per sweep worker or
 * machine) into one.  A database from elsewhere is untrusted, so this is
 * lab code: it reads the input only through SQLite, checks every row of it
 * first, and copies nothing of an input it refuses.
 */
#ifndef GATED_MERGE_H
#define GATED_MERGE_H

#include <stddef.h>

#include "run/store.h"

/* Copy everything from the gated database at src_path into dst, in one
 * transaction: environments (matched by content hash), runs, metrics,
 * summary, histograms, sweep_runs and code_attest, without duplicates
 * (run_claims and bench are not results of a run, and are not copied).
 * Before anything is copied, src must pass SQLite's integrity_check and every
 * row of every table copied must be what gated's writer stores
 * (merge_check.c): run ids 16 lowercase hex digits; run names, sweep
 * names, labels, metric keys and contexts printable text
 * (store_name_check); integers, times (finite reals >= 0) and values
 * (reals or NULL) of their types; a known status, a config that is a JSON
 * object, histogram counts a JSON array of integers >= 0 with lo < hi both
 * finite; a running run without ended_at and every other with one, a
 * diverged_step only on a diverged run; no metric, summary or histogram row
 * of a run src does not hold, a run's environment present; a finished run
 * with metric rows and its summary val_loss and test_loss; code_attest
 * rows with a commit, flags and counts of the right types.  One row that
 * is not makes src unusable (-2, a message naming src, the table, the row
 * (rowid and run id) and the rule; nothing of src is copied).  An
 * attestation is copied only
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
 * src is not usable (missing, not a regular file, not a gated database,
 * damaged, a newer schema, a row as above, or dst itself), the message
 * naming src; -1 on a failure while copying (nothing of that input is
 * kept).
 * The message is in err (always NUL-terminated; "" on success). */
int merge_from(Store *dst, const char *src_path, char *err, size_t cap);

#endif
