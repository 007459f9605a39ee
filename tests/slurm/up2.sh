#!/bin/bash
# up2.sh — a private two-node Slurm cluster on this machine, for tests
# (make test-slurm-2).
#
#   tests/slurm/up2.sh DIR
#
# Three hosts, each in network namespaces of its own, made here and named
# in DIR/netns (gated-PID-head, -node1, -node2): "head" 10.239.39.1
# (slurmctld; sbatch, squeue and the rest run there too, as on a login
# node) and "node1", "node2" 10.239.39.11 and .12 (one slurmd each).  The
# head's namespace holds a bridge, and a veth pair links each node to it;
# no interface or address is made outside these namespaces.  Each node is
# also a UTS namespace (its own hostname, which is its Slurm NodeName) and
# a PID namespace with its own /proc (a mount namespace), so that it sees
# only its own processes and a node can be powered off at once: DIR/pids
# names each node's `unshare --kill-child` process, and SIGKILL to it
# ends the node's PID namespace, every process of the node with it.  Each
# node is pinned to one CPU (taskset; node k to CPU k-1 modulo nproc;
# task/none: Slurm binds nothing further) and has CPUs=1: one task at a
# time.  Its spool, pid file and log are its own (%n in slurm.conf: DIR/
# node1/...).  One munged serves all three hosts through its socket in
# DIR (a real cluster runs one per node, all with one key).  Everything
# else is shared, as a cluster file system would be: it is the same
# directory tree of this one machine.  SlurmdTimeout is 10 s: a node that
# stops answering is marked down (about 30 s later, measured) and its
# batch jobs are requeued (JobRequeue=1); cred_expire is 60 s, so a requeued job
# starts no sooner than 61 s later, by when the heartbeat of a run killed
# with its node is stale (STORE_STALE_SECONDS, 60 s) and the run resumes.
#
# Clients: `nsenter --net=/run/netns/$(sed -n 1p DIR/netns) sinfo`, with
# SLURM_CONF=DIR/slurm.conf.  Returns once both nodes are idle.  Exit status: 0 up;
# 77 the daemons or the namespaces cannot run here (not root, a program
# missing, no network namespaces, a daemon that exits, nodes never idle):
# the reason is on stderr and whatever was started is stopped and deleted
# again (tests/slurm/down.sh, which also stops it after use); 2 bad usage.
set -euo pipefail
me=tests/slurm/up2.sh
[ $# -eq 1 ] || { echo "usage: $me DIR" >&2; exit 2; }
. "$(dirname "$0")/lib.sh"
setup "$1" ip nsenter unshare taskset

net=10.239.39
tag=gated-$$
head=$tag-head
printf '%s\n' "$head" "$tag-node1" "$tag-node2" >"$dir/netns"
err=$(ip netns add "$head" 2>&1) || cannot "ip netns add: $err"
in_head() { ip -n "$head" "$@"; }
in_head link set lo up
in_head link add br0 type bridge
in_head addr add "$net.1/24" dev br0
in_head link set br0 up
for k in 1 2; do
    ns=$tag-node$k
    ip netns add "$ns"
    in_head link add "veth$k" type veth peer name eth0 netns "$ns"
    in_head link set "veth$k" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$net.1$k/24" dev eth0
    ip -n "$ns" link set eth0 up
done

mem=$(node_memory)
cat >"$dir/slurm.conf" <<EOF
# written by $me: a two-node test cluster in network namespaces
ClusterName=gatedtest2
$(conf_common "head($net.1)" 60)
SlurmdSpoolDir=$dir/%n/spool
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdTimeout=10
JobRequeue=1
TaskPlugin=task/none
NodeName=node1 NodeAddr=$net.11 CPUs=1 RealMemory=$mem State=UNKNOWN
NodeName=node2 NodeAddr=$net.12 CPUs=1 RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf

munge_up
# nsenter --net runs the command in the namespace (no fork; unlike `ip
# netns exec` it leaves /sys, and so cgroup and hwloc, as they are);
# unshare --uts gives it a hostname, and for a node --pid --fork
# --kill-child a PID namespace whose first process dies with the
# recorded unshare: sh, which reaps (wait) the orphans a node's init
# inherits, slurmstepd's.
start slurmctld nsenter --net="/run/netns/$head" unshare --uts \
    sh -c 'hostname head && exec slurmctld -D -f "$0"' "$SLURM_CONF"
ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
for k in 1 2; do
    mkdir -p "$dir/node$k/spool"
    start "node$k" nsenter --net="/run/netns/$tag-node$k" unshare --uts --pid --mount-proc --fork --kill-child \
        taskset -c $(((k - 1) % ncpu)) sh -c 'hostname "$1" && slurmd -D -f "$0" & wait' "$SLURM_CONF" "node$k"
done

wait_idle 'node[1-2]' nsenter --net="/run/netns/$head"
echo "$me: nodes node1 ($net.11, CPU 0) and node2 ($net.12, CPU $((1 % ncpu))) idle, head $net.1," \
    "namespaces $tag-*, SLURM_CONF=$SLURM_CONF"
