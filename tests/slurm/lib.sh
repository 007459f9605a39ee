# shellcheck shell=bash disable=SC2154
# lib.sh — what tests/slurm/up.sh (one node) and up2.sh (two nodes) share;
# sourced, with $me set.  setup DIR checks that Slurm can run here and
# prepares DIR (a munge key, state and log directories); start runs a
# daemon and records it in DIR/pids as "NAME PID START" (START: the
# process's start time in clock ticks since boot, which tests/slurm/down.sh
# compares before it signals the pid, so a pid reused since is left alone);
# from setup on, an exit other than 0 stops whatever was started
# (down.sh).  Exit 77 (cannot): the daemons cannot run here.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cannot() {
    echo "$me: the Slurm daemons cannot run here: $*" >&2
    for f in "$dir"/log/*.log; do
        [ -s "$f" ] || continue
        echo "--- last lines of $f:" >&2
        tail -n 15 "$f" >&2
    done
    exit 77
}

# On a failed exit: stop the daemons (and delete the namespaces) started.
teardown() {
    local rc=$?
    [ "$rc" = 0 ] || "$here/down.sh" "$dir" >&2 || true
    exit "$rc"
}

# setup DIR PROGRAM...: DIR empty, root, the programs there, DIR/{munge,
# socket,state,log} and a fresh munge key.
setup() {
    mkdir -p "$1"
    dir=$(cd "$1" && pwd)
    shift
    [ -z "$(ls -A "$dir")" ] || { echo "$me: $dir is not empty" >&2; exit 2; }
    case "$dir" in *[!A-Za-z0-9_./-]*) echo "$me: $dir: only [A-Za-z0-9_./-] in the path (it goes into slurm.conf)" >&2; exit 2 ;; esac
    # munged wants its key private and its socket's directory, and every
    # one above it, searchable by all (not so: the caller's error, exit 2).
    chmod 0755 "$dir"
    local d
    d=$(dirname "$dir")
    while :; do
        case "$(stat -c %A "$d")" in
        *[xt]) ;;
        *) echo "$me: $d is not searchable by all (mode $(stat -c %a "$d")): munged refuses a socket below it" >&2; exit 2 ;;
        esac
        [ "$d" = / ] && break
        d=$(dirname "$d")
    done
    trap teardown EXIT
    [ "$(id -u)" = 0 ] || cannot "not root (slurmd must be root to start jobs; run it as root)"
    local p
    for p in munged slurmctld slurmd sinfo sbatch "$@"; do
        command -v "$p" >/dev/null || cannot "$p is not installed (make slurm-deps, as root, installs slurm-wlm and munge)"
    done
    mkdir -p "$dir"/munge "$dir"/socket "$dir"/state "$dir"/log
    chmod 0700 "$dir"/munge
    chmod 0755 "$dir"/socket
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 0400 "$dir/munge/munge.key"
    : >"$dir/pids"
}

# The start time of pid $1 (field 22 of /proc/PID/stat), or "-" when it
# is gone (or a zombie).
starttime() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo -; return; }
    s=${s##*) }
    set -- $s # (the fields, split)
    if [ "$1" = Z ]; then echo -; else echo "${20}"; fi
}

# start NAME COMMAND...: in the background, its own session, output to
# DIR/log/NAME.out.
start() {
    local name=$1
    shift
    setsid "$@" >"$dir/log/$name.out" 2>&1 </dev/null &
    echo "$name $! $(starttime $!)" >>"$dir/pids"
}

alive() {
    local name pid
    while read -r name pid _; do
        kill -0 "$pid" 2>/dev/null || cannot "$name exited at start (its output: $dir/log/$name.out: $(tail -n 3 "$dir/log/$name.out" | tr '\n' ' '))"
    done <"$dir/pids"
}

# munged on DIR/socket/munge; returns once it answers.
munge_up() {
    start munged munged --foreground --socket="$dir/socket/munge" --key-file="$dir/munge/munge.key" \
        --log-file="$dir/log/munged.log" --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
    local i
    for ((i = 0; i < 100; i++)); do
        [ -S "$dir/socket/munge" ] && break
        alive
        sleep 0.1
    done
    munge -S "$dir/socket/munge" -n </dev/null | unmunge -S "$dir/socket/munge" >/dev/null 2>&1 ||
        cannot "munged does not answer on $dir/socket/munge"
}

# The memory `slurmd -C` reports, in MiB.
node_memory() {
    local node mem
    node=$(slurmd -C 2>/dev/null | head -n 1) || cannot "slurmd -C failed"
    mem=$(printf '%s\n' "$node" | tr ' ' '\n' | sed -n 's/^RealMemory=//p')
    case "$mem" in '' | *[!0-9]*) cannot "slurmd -C reports no RealMemory: $node" ;; esac
    echo "$mem"
}

# The slurm.conf lines both clusters share: conf_common CONTROLLER
# CRED_EXPIRE (the host "name(address)" and AuthInfo's cred_expire).
conf_common() {
    cat <<EOF
SlurmctldHost=$1
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/socket/munge,cred_expire=$2
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
ProctrackType=proctrack/pgid
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
EOF
}

# wait_idle NODES [CLIENT_PREFIX...]: up to 90 s until sinfo (run behind
# the prefix) shows every node of NODES (Slurm's syntax) idle.
wait_idle() {
    local nodes=$1 state='' i
    shift
    for ((i = 0; i < 450; i++)); do
        alive
        state=$("$@" sinfo -h -N -n "$nodes" -o %T 2>/dev/null | sort -u | tr '\n' ' ' || true)
        [ "$state" = "idle " ] && return
        sleep 0.2
    done
    cannot "nodes $nodes are '${state:-unknown}', not idle, after 90 s: $("$@" sinfo -h -N -n "$nodes" -o '%N %E' 2>/dev/null | tr '\n' ' ' || true)"
}
