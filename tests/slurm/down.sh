#!/bin/bash
# down.sh — stop the test cluster tests/slurm/up.sh started in DIR.
#
#   tests/slurm/down.sh DIR
#
# Cancels its jobs and waits (up to 40 s: KillWait is 30 s) until none is
# left, then stops slurmd, slurmctld and munged: SIGTERM to the pids
# up.sh wrote to DIR/pids, SIGKILL to any still there after 15 s.  A pid
# is only signalled while /proc shows it running the program up.sh
# started under it, so a pid the system gave to something else since is
# left alone.  Idempotent: a daemon already gone is skipped.  DIR itself
# (logs, state) is kept.  Exit 0, or 1 when a daemon would not stop.
set -uo pipefail
me=tests/slurm/down.sh
[ $# -eq 1 ] || { echo "usage: $me DIR" >&2; exit 2; }
dir=$1
[ -f "$dir/pids" ] || exit 0
export SLURM_CONF=$dir/slurm.conf

# Whether pid still runs the program named name.
ours() { [ "$(cat "/proc/$2/comm" 2>/dev/null)" = "$1" ]; }

if grep -q '^slurmctld ' "$dir/pids" && ours slurmctld "$(awk '$1 == "slurmctld" { print $2 }' "$dir/pids")"; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        [ -z "$(squeue -h -t RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null)" ] && break
        sleep 0.2
    done
fi

# slurmd and slurmctld first, munged (their authentication) last.
rc=0
for name in slurmd slurmctld munged; do
    pid=$(awk -v n="$name" '$1 == n { print $2 }' "$dir/pids")
    if [ -z "$pid" ] || ! ours "$name" "$pid"; then continue; fi
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 75; i++)); do
        ours "$name" "$pid" || break
        sleep 0.2
    done
    if ours "$name" "$pid"; then
        echo "$me: $name (pid $pid) ignored SIGTERM for 15 s: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null
        sleep 0.5
        ours "$name" "$pid" && { echo "$me: $name (pid $pid) is still running" >&2; rc=1; }
    fi
done
exit $rc
