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
here=$(cd "$(dirname "$0")" && pwd)

[ $# -eq 1 ] || { echo "usage: $me DIR" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
[ -z "$(ls -A "$dir")" ] || { echo "$me: $dir is not empty" >&2; exit 2; }
case "$dir" in *[!A-Za-z0-9_./-]*) echo "$me: $dir: only [A-Za-z0-9_./-] in the path (it goes into slurm.conf)" >&2; exit 2 ;; esac

cannot() {
    echo "$me: the Slurm daemons cannot run here: $*" >&2
    for f in "$dir"/log/*.log; do
        [ -s "$f" ] || continue
        echo "--- last lines of $f:" >&2
        tail -n 15 "$f" >&2
    done
    [ ! -f "$dir/pids" ] || "$here/down.sh" "$dir" >&2 || true
    exit 77
}

[ "$(id -u)" = 0 ] || cannot "not root (slurmd must be root to start jobs; run make test-slurm as root)"
for p in munged slurmctld slurmd sinfo sbatch; do
    command -v "$p" >/dev/null || cannot "$p is not installed (make slurm-deps, as root, installs slurm-wlm and munge)"
done

# munged wants its key private and its socket's directory, and every one
# above it, searchable by all (not so: the caller's error, exit 2).
chmod 0755 "$dir"
d=$(dirname "$dir")
while :; do
    case "$(stat -c %A "$d")" in
    *[xt]) ;;
    *) echo "$me: $d is not searchable by all (mode $(stat -c %a "$d")): munged refuses a socket below it" >&2; exit 2 ;;
    esac
    [ "$d" = / ] && break
    d=$(dirname "$d")
done
mkdir -p "$dir"/munge "$dir"/socket "$dir"/state "$dir"/spool "$dir"/log
chmod 0700 "$dir"/munge
chmod 0755 "$dir"/socket
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 0400 "$dir/munge/munge.key"

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
node=$(slurmd -C 2>/dev/null | head -n 1) || cannot "slurmd -C failed"
mem=$(printf '%s\n' "$node" | tr ' ' '\n' | sed -n 's/^RealMemory=//p')
case "$mem" in '' | *[!0-9]*) cannot "slurmd -C reports no RealMemory: $node" ;; esac
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) # (nproc obeys both)

cat >"$dir/slurm.conf" <<EOF
# written by $me for a test cluster on $host
ClusterName=gatedtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/socket/munge,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
KillWait=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
export SLURM_CONF=$dir/slurm.conf

# name pid, one per line, for down.sh (munged first: it is stopped last).
: >"$dir/pids"
start() {
    local name=$1
    shift
    setsid "$@" >"$dir/log/$name.out" 2>&1 </dev/null &
    echo "$name $!" >>"$dir/pids"
}
alive() {
    local name pid
    while read -r name pid; do
        kill -0 "$pid" 2>/dev/null || cannot "$name exited at start (its output: $dir/log/$name.out: $(tail -n 3 "$dir/log/$name.out" | tr '\n' ' '))"
    done <"$dir/pids"
}

start munged munged --foreground --socket="$dir/socket/munge" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
for ((i = 0; i < 100; i++)); do
    [ -S "$dir/socket/munge" ] && break
    alive
    sleep 0.1
done
munge -S "$dir/socket/munge" -n </dev/null | unmunge -S "$dir/socket/munge" >/dev/null 2>&1 ||
    cannot "munged does not answer on $dir/socket/munge"

start slurmctld slurmctld -D -f "$dir/slurm.conf"
start slurmd slurmd -D -f "$dir/slurm.conf"

# Up to 90 s (slurmd registers within seconds; the CPU may be busy).
state=
for ((i = 0; i < 450; i++)); do
    alive
    state=$(sinfo -h -N -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
done
[ "$state" = idle ] || cannot "node $host is '${state:-unknown}', not idle, after 90 s: $(sinfo -h -N -n "$host" -o %E 2>/dev/null || true)"
echo "$me: node $host idle ($cpus CPUs, ${mem} MiB), SLURM_CONF=$dir/slurm.conf, ports $ctld_port/$d_port"
