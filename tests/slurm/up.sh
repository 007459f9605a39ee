#!/bin/bash
# up.sh — a private single-node Slurm cluster for tests (make test-slurm).
#
#   tests/slurm/up.sh DIR
#
# DIR must be an empty (or missing) directory; everything the cluster
# needs lives in it and nothing system-wide is touched or read: a fresh
# munge key and munged on its own socket (DIR/munge), slurm.conf written
# for this host (its name, `nproc` CPUs and the memory `slurmd -C`
# reports, one partition "test"), slurmctld and slurmd on two free TCP
# ports, their state, spool and logs under DIR.  The daemons run in the
# foreground of background processes (no systemd here); their pids go to
# DIR/pids, which tests/slurm/down.sh reads to stop exactly them.  Clients
# find the cluster through SLURM_CONF=DIR/slurm.conf (DIR/env has the line
# to source).  Returns once `sinfo` shows the node idle.
#
# Containers forbid most of what cgroups need, and a test needs no
# resource enforcement, so no cgroup plugin is used: processes are tracked
# through /proc (proctrack/pgid, which finds every descendant of a
# job's slurmstepd) and tasks are pinned to their CPUs with
# sched_setaffinity (task/affinity), as a cluster's task/cgroup would, so
# `gated sweep` in a one-CPU task runs one thread.  AuthInfo's
# cred_expire is 10 s rather than 120 s: Slurm holds a requeued job back
# until then.
#
# Exit status: 0 the node is idle; 77 the daemons cannot run here (not
# root, a program missing, a daemon that exits or a node that never turns
# idle): the reason and the daemons' last log lines are on stderr, and
# whatever was started is stopped again; 2 bad usage.
set -euo pipefail
me=tests/slurm/up.sh
[ $# -eq 1 ] || { echo "usage: $me DIR" >&2; exit 2; }
. "$(dirname "$0")/lib.sh"
setup "$1"

# A TCP port nobody listens on (state 0A in /proc/net/tcp*), from $1 up.
free_port() {
    local p=$1
    while [ "$p" -lt 65000 ]; do
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
            awk -v port="$(printf %04X "$p")" '$4 == "0A" && substr($2, index($2, ":") + 1) == port { f = 1 } END { exit !f }'; then
            echo "$p"
            return
        fi
        p=$((p + 1))
    done
    cannot "no free TCP port above $1"
}
ctld_port=$(free_port 16817)
d_port=$(free_port $((ctld_port + 1)))

host=$(hostname -s)
mem=$(node_memory)
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) # (nproc obeys both)

{
    echo "# written by $me for a test cluster on $host"
    echo "ClusterName=gatedtest"
    conf_common "$host(127.0.0.1)" 10
    cat <<EOF
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/log/slurmd.log
TaskPlugin=task/affinity
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
} >"$dir/slurm.conf"
echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
export SLURM_CONF=$dir/slurm.conf

munge_up
start slurmctld slurmctld -D -f "$dir/slurm.conf"
start slurmd slurmd -D -f "$dir/slurm.conf"

wait_idle "$host"
echo "$me: node $host idle ($cpus CPUs, ${mem} MiB), SLURM_CONF=$dir/slurm.conf, ports $ctld_port/$d_port"
