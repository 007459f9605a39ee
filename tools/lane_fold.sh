#!/usr/bin/env bash
# tools/lane_fold.sh -- fold the finished runs of a lane database
# (tools/lane.sh) into a results database.
#
# Usage: tools/lane_fold.sh LANE.db OUT.db
#
# A copy of LANE.db (taken with SQLite's backup, so a lane still writing is
# read consistently) loses every run that is not finished or diverged (a run
# in flight, killed or failed is not a result: it resumes in its lane, or is
# rerun), with its rows and sweep membership; the copy is then folded into
# OUT.db with `gated merge` (which checks every row).  OUT.db is then packed
# with tools/results_db.py pack.  Prints what it kept and dropped.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 LANE.db OUT.db" >&2; exit 2; }
lane=$1 out=$2
[ -f "$lane" ] || { echo "$0: $lane: no such database" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$lane" "$tmp/lane.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
src.close()
drop = [r[0] for r in dst.execute("SELECT run_id FROM runs WHERE status NOT IN ('finished', 'diverged')")]
for rid in drop:
    for t in ('metrics', 'summary', 'histograms', 'code_attest', 'run_claims', 'sweep_runs'):
        dst.execute('DELETE FROM %s WHERE run_id = ?' % t, (rid,))
    dst.execute('DELETE FROM runs WHERE run_id = ?', (rid,))
dst.commit()
kept = dst.execute("SELECT count(*) FROM runs").fetchone()[0]
dst.execute('PRAGMA journal_mode=DELETE')
dst.close()
print('lane_fold: %s: %d runs kept, %d not finished dropped' % (sys.argv[1], kept, len(drop)))
PY
"$here/build/gated" merge "$out" "$tmp/lane.db"
