#!/usr/bin/env bash
# tools/lane.sh -- one background lane of long runs (results/budget_plan.md).
#
# Usage: OPENBLAS_CORETYPE=KERNEL tools/lane.sh CORE DB SWEEP:IDX[,IDX...] [SWEEP:IDX...]
#
# KERNEL is the OpenBLAS kernel the runs are made with: the kernel of the
# committed runs they are contrasted with (runs.openblas_version), so that
# every contrast pairs runs of one kernel.  It is required: a machine's own
# pick differs between machines (Haswell on one AMD EPYC, Cooperlake on
# another), and a lane that ran on the wrong one would not pair.
#
# Runs the listed run indices of experiments/SWEEP.yaml, one after another,
# into the lane database DB (its own file: lanes never share one), pinned to
# one core (taskset -c CORE) at the lowest priority (nice 19, and autogroup
# nice 19 so that a session's builds and tests keep the CPU).  A rerun of the
# same command resumes: finished runs are skipped, a killed run resumes from
# its checkpoint.  Each run's output goes to DB's logs/; this prints one line
# per run with its exit status.  Finished runs are folded into
# results/gated.db with `gated merge` and packed with tools/results_db.py.
set -u
[ $# -ge 3 ] || { echo "usage: $0 CORE DB SWEEP:IDX[,IDX...] ..." >&2; exit 2; }
core=$1 db=$2; shift 2
case $core in ''|*[!0-9]*) echo "$0: CORE must be a number" >&2; exit 2;; esac
case ${OPENBLAS_CORETYPE:-} in
    ''|*[!A-Za-z0-9_]*) echo "$0: set OPENBLAS_CORETYPE to the kernel of the runs this lane is contrasted with" >&2; exit 2;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
echo 19 > /proc/self/autogroup 2>/dev/null || true
for spec in "$@"; do
    sweep=${spec%%:*} list=${spec#*:}
    case $sweep in ''|*[!A-Za-z0-9_.-]*) echo "$0: bad sweep name in '$spec'" >&2; exit 2;; esac
    IFS=, read -r -a idxs <<< "$list"
    for i in "${idxs[@]}"; do
        case $i in ''|*[!0-9]*) echo "$0: bad index '$i' in '$spec'" >&2; exit 2;; esac
        echo "$(date -u +%FT%TZ) start $sweep $i (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)"
        OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c "$core" nice -n 19 \
            "$here/build/gated" sweep "$here/experiments/$sweep.yaml" --db "$db" --index "$i" --jobs 1 --rerun-failed
        echo "$(date -u +%FT%TZ) end $sweep $i exit $?"
    done
done
