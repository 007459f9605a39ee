#!/bin/bash
# down.sh — stop the test cluster tests/slurm/up.sh or up2.sh started in DIR.
#
#   tests/slurm/down.sh DIR
#
# One node (up.sh): cancels its jobs and waits (up to 40 s: KillWait is
# 30 s) until none is left.  Then stops what DIR/pids names, the last
# started first (slurmd or the nodes, slurmctld, then munged: their
# authentication): SIGTERM, SIGKILL to any still there after 15 s.  A node
# of up2.sh is its `unshare --kill-child` process, which blocks SIGTERM:
# it gets SIGKILL, and its end kills the node's PID namespace, every
# process of the node with it, jobs included.
# A pid is only signalled while its start time is the one up.sh recorded,
# so a pid the system gave to something else since is left alone.  Then
# (up2.sh) deletes the network namespaces DIR/netns names, the bridge and
# veths inside them with them, after killing anything still in them.
# Idempotent: what is already gone is skipped.  DIR itself (logs, state)
# is kept.  Exit 0, or 1 when a daemon would not stop.
set -uo pipefail
me=tests/slurm/down.sh
[ $# -eq 1 ] || { echo "usage: $me DIR" >&2; exit 2; }
dir=$1
. "$(dirname "$0")/lib.sh"
export SLURM_CONF=$dir/slurm.conf

# Whether pid $1 is still the process that started at time $2.
ours() { [ "$2" != - ] && [ "$(starttime "$1")" = "$2" ]; }

ctld=$(awk '$1 == "slurmctld" { print $2, $3 }' "$dir/pids" 2>/dev/null)
if [ ! -f "$dir/netns" ] && [ -n "$ctld" ] && ours $ctld; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        [ -z "$(squeue -h -t RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null)" ] && break
        sleep 0.2
    done
fi

rc=0
while read -r name pid t; do
    ours "$pid" "$t" || continue
    case "$name" in
    node*) sig=KILL ;; # unshare blocks SIGTERM; a node is powered off
    *) sig=TERM ;;
    esac
    kill -$sig "$pid" 2>/dev/null
    for ((i = 0; i < 75; i++)); do
        ours "$pid" "$t" || break
        sleep 0.2
    done
    if ours "$pid" "$t"; then
        echo "$me: $name (pid $pid) ignored SIGTERM for 15 s: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null
        sleep 0.5
        ours "$pid" "$t" && { echo "$me: $name (pid $pid) is still running" >&2; rc=1; }
    fi
done < <(tac "$dir/pids" 2>/dev/null)

# The namespaces up2.sh made (only those: their names are in DIR/netns).
if [ -f "$dir/netns" ]; then
    while read -r ns; do
        ip netns list | grep -q "^$ns\( \|$\)" || continue
        for ((i = 0; i < 50; i++)); do
            pids=$(ip netns pids "$ns")
            [ -z "$pids" ] && break
            kill -KILL $pids 2>/dev/null
            sleep 0.1
        done
        [ -z "$pids" ] || { echo "$me: processes $pids are still in $ns" >&2; rc=1; }
        ip netns del "$ns" || rc=1
    done < <(tac "$dir/netns")
fi
exit $rc
