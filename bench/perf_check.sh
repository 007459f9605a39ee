#!/usr/bin/env bash
# perf_check.sh — the perf gate (make perf-check, run by .ci/run): the head
# (this working tree) against a base revision, both built here with the same
# flags and measured on this machine, side by side.  Nothing recorded
# elsewhere decides anything, so the gate judges every machine alike.
#
#   1. builds the base revision (PERF_BASE, default HEAD~1: on a linear main
#      the previous head) from a `git worktree` into its own build folder,
#      and the head into PERF_BUILD, both with -O2 -march=x86-64-v3 on
#      x86_64 (plain -O2 elsewhere): valgrind cannot execute AVX-512, which
#      -march=native would emit, and fixed flags keep both sides alike;
#   2. the gate: counts the instructions of each case of PERF_SUITE under
#      valgrind --tool=callgrind (`gated bench SUITE --callgrind`: a case's
#      fixed iterations between CALLGRIND_ZERO_STATS and
#      CALLGRIND_DUMP_STATS_AT(case); our code, OpenBLAS, libm, libgomp),
#      base and head at once, and fails (exit 3) when head / base exceeds
#      1 + PERF_THRESHOLD/100 (3%) in any case, naming the case, both counts
#      and the ratio.  One thread each for OpenMP and OpenBLAS: the counts
#      are exact and repeatable (a different set of environment variables
#      moves them by ~0.01%, identical for both sides here);
#   3. advisory: wall-clock items/s per case (bench/perf_wall.py), base and
#      head alternated process by process over PERF_ROUNDS rounds, medians,
#      Mann-Whitney U and noise as `gated compare --metric items_per_second`
#      prints them.  Never fails the gate: times on a shared machine are
#      noise-bound, counts are not.
#
# The suite is the head's, run by both binaries.  A base whose binary cannot
# read it (a suite that uses what the base lacks) runs the base revision's
# own suite instead: cases of the same name are compared, the head's others
# are reported as "new in head", never a failure.  The base's build is
# kept (PERF_BASE_BUILD, stamped with the commit and flags) and reused while
# the base revision is the same; the worktree it was built from is removed
# on every exit.
#
# Skips (exit 0, saying so) only when there is no base revision: the first
# commit, or not a git checkout.  A base missing from a shallow clone is
# fetched (git fetch --deepen=1), else an error.
#
# Environment: PERF_BASE (HEAD~1), PERF_BUILD (build-perf),
# PERF_BASE_BUILD ($PERF_BUILD-base), PERF_SUITE (bench/perf.yaml),
# PERF_THRESHOLD (3, percent of instructions), PERF_ROUNDS (9) and
# PERF_REPS (5) of the wall-clock table (0 rounds: none), PERF_OUT (a folder
# that keeps the counts and the wall-clock JSON), PERF_HEAD_CFLAGS (added
# to the head's flags only: the gate's own test plants a slowdown with it,
# tests/perf_gate_test.sh), PYTHON (/usr/bin/python3).
#
# Exit: 0 ok or skipped, 1 failure to build or count, 2 bad PERF_* value,
# 3 a case's instruction count grew by more than the threshold.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

BASE_REV=${PERF_BASE:-HEAD~1}
HEAD_BUILD=${PERF_BUILD:-build-perf}
BASE_BUILD=${PERF_BASE_BUILD:-$HEAD_BUILD-base}
SUITE=${PERF_SUITE:-bench/perf.yaml}
THRESHOLD=${PERF_THRESHOLD:-3}
ROUNDS=${PERF_ROUNDS:-9}
REPS=${PERF_REPS:-5}
EXTRA=${PERF_HEAD_CFLAGS:-}
PYTHON=${PYTHON:-/usr/bin/python3}
case "$(uname -m)" in
x86_64) PERF_OPT="-O2 -march=x86-64-v3" ;;
*) PERF_OPT="-O2" ;;
esac
if ! [[ $THRESHOLD =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    echo "perf-check: PERF_THRESHOLD=\"$THRESHOLD\": expected a percentage >= 0" >&2
    exit 2
fi
if ! [[ $ROUNDS =~ ^[0-9]{1,4}$ ]]; then
    echo "perf-check: PERF_ROUNDS=\"$ROUNDS\": expected an integer >= 0" >&2
    exit 2
fi
if ! [[ $REPS =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "perf-check: PERF_REPS=\"$REPS\": expected an integer >= 1" >&2
    exit 2
fi
if [ ! -f "$SUITE" ]; then
    echo "perf-check: PERF_SUITE=\"$SUITE\": no such file" >&2
    exit 2
fi
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$root" "$1" ;; esac; }
HEAD_BUILD=$(abs "$HEAD_BUILD")
BASE_BUILD=$(abs "$BASE_BUILD")
say() { echo "perf-check: $*" >&2; }

# ---- the base revision
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    say "not a git checkout: there is no base revision to compare with; skipping"
    exit 0
fi
base=$(git rev-parse --verify -q "$BASE_REV^{commit}" || true)
if [ -z "$base" ] && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    say "$BASE_REV is not in this shallow clone; fetching one more commit of history"
    git fetch -q --deepen=1 >&2 || true
    base=$(git rev-parse --verify -q "$BASE_REV^{commit}" || true)
    if [ -z "$base" ]; then
        say "$BASE_REV is not in this shallow clone and could not be fetched: clone with --depth 2 or more, or set PERF_BASE"
        exit 1
    fi
fi
if [ -z "$base" ]; then
    if [ -n "${PERF_BASE:-}" ]; then
        say "PERF_BASE=\"$PERF_BASE\": no such revision"
        exit 2
    fi
    say "no base revision: HEAD~1 does not exist (HEAD $(git rev-parse --short HEAD) is the first commit); nothing to compare, skipping"
    exit 0
fi
short=$(git rev-parse --short "$base")

ensure_valgrind() {
    if ! command -v valgrind >/dev/null 2>&1 || [ ! -f /usr/include/valgrind/callgrind.h ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            say "installing valgrind"
            apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >&2
        else
            say "valgrind is missing; as root: apt-get update && apt-get install -y valgrind (or make deps)"
            exit 1
        fi
    fi
}
ensure_valgrind

start=$(date +%s)
work=$(mktemp -d)
src="$work/perf-base-src"
# Only our own worktree is removed; a global prune (which would also drop
# other checkouts' stale entries) is the fallback when that fails.
cleanup() {
    if [ -d "$src" ] && ! git worktree remove --force "$src" >/dev/null 2>&1; then
        rm -rf "$src"
        git worktree prune >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# The base revision's files (once): a detached worktree under $work.
base_src() {
    [ -d "$src" ] || git worktree add -q --detach "$src" "$base" >&2
}

# build TREE DIR STAMP OPT: DIR/gated from TREE, rebuilt from scratch when
# DIR's stamp differs (make does not track flags; a base build also depends
# on its commit).
build() {
    local tree=$1 dir=$2 stamp=$3 opt=$4
    if [ "$(cat "$dir/.perf_stamp" 2>/dev/null)" != "$stamp" ]; then rm -rf "$dir"; fi
    # a make of its own: not the calling make's flags, variables or jobserver
    if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$tree" -j"$(nproc)" BUILD="$dir" OPT="$opt" "$dir/gated" \
        >"$work/build.log" 2>&1; then
        cat "$work/build.log" >&2
        say "building $dir/gated from $tree failed"
        exit 1
    fi
    printf '%s\n' "$stamp" >"$dir/.perf_stamp"
}

head_opt="$PERF_OPT${EXTRA:+ $EXTRA}"
if [ "$(cat "$BASE_BUILD/.perf_stamp" 2>/dev/null)" = "$base $PERF_OPT" ] && [ -x "$BASE_BUILD/gated" ]; then
    say "base $short ($BASE_REV): reusing $BASE_BUILD/gated"
else
    say "base $short ($BASE_REV): building in $BASE_BUILD ($PERF_OPT)"
    base_src
    build "$src" "$BASE_BUILD" "$base $PERF_OPT" "$PERF_OPT"
fi
say "head (this working tree): building in $HEAD_BUILD ($head_opt)"
build "$root" "$HEAD_BUILD" "head $head_opt" "$head_opt"
say "built in $(($(date +%s) - start)) s"
HB=$HEAD_BUILD/gated
BB=$BASE_BUILD/gated
# what the counts depend on, as the counted binaries see it (under valgrind,
# whose CPUID can make OpenBLAS pick another core than natively)
valgrind -q --tool=none "$HB" bench --env | sed -n 's/^ *"\([a-z_]*\)": "\(.*\)",\{0,1\}$/\1=\2/p' | paste -sd ';' | sed 's/;/; /g; s/^/perf-check: this machine: /' >&2

# ---- the suite each side runs
base_suite=$SUITE
if ! "$BB" bench "$SUITE" --list >/dev/null 2>"$work/base_list.err"; then
    say "the base binary cannot read $SUITE ($(head -n 1 "$work/base_list.err")); the base runs its own $SUITE: cases of the same name are compared, the others are new in head"
    base_src
    rel=$(realpath -m --relative-to="$root" "$SUITE")
    base_suite=$src/$rel
    if [ "${rel#../}" != "$rel" ] || [ ! -f "$base_suite" ] || ! "$BB" bench "$base_suite" --list >/dev/null 2>&1; then
        say "base $short has no $SUITE it can run: every case is new in head; nothing to compare"
        base_suite=
    fi
fi

# count BIN SUITE SIDE: DIR/SIDE.json, one instructions row per case.
count() {
    local bin=$1 suite=$2 side=$3
    if ! valgrind --tool=callgrind --callgrind-out-file="$work/$side.cg" --combine-dumps=yes --dump-line=no \
        --log-file="$work/$side.vg.log" "$bin" bench "$suite" --callgrind >/dev/null 2>"$work/$side.bench.log"; then
        echo "perf-check: $side: gated bench --callgrind failed under valgrind:" >&2
        cat "$work/$side.bench.log" "$work/$side.vg.log" >&2
        return 1
    fi
    # One "desc: Trigger: Client Request: NAME" + "summary: N" pair per
    # case.  Case names are [A-Za-z0-9_.:+=/-] (checked when the suite is
    # loaded), so they go into JSON as they are.
    awk -v side="$side" '
        BEGIN { n = 0 }
        /^part:/ { name = "" }
        /^desc: Trigger: Client Request: / { name = $0; sub(/^desc: Trigger: Client Request: /, "", name) }
        /^summary: / { if (name != "") { names[n] = name; counts[n] = $2; n++; name = "" } }
        END {
            printf "{\n  \"context\": {\"gated_perf_tool\": \"valgrind --tool=callgrind\", \"side\": \"%s\"},\n", side
            printf "  \"benchmarks\": [\n"
            for (i = 0; i < n; i++)
                printf "    {\"name\": \"%s\", \"run_name\": \"%s\", \"run_type\": \"iteration\", \"iterations\": 1, " \
                       "\"real_time\": 0, \"cpu_time\": 0, \"time_unit\": \"ns\", \"instructions\": %s}%s\n",
                       names[i], names[i], counts[i], i + 1 < n ? "," : ""
            printf "  ]\n}\n"
        }' "$work/$side.cg" >"$work/$side.json"
    local got want
    got=$(grep -c '"instructions"' "$work/$side.json" || true)
    want=$("$bin" bench "$suite" --list | wc -l)
    if [ "$got" != "$want" ]; then
        echo "perf-check: $side: callgrind produced $got case counts, the suite has $want" >&2
        cat "$work/$side.bench.log" >&2
        return 1
    fi
}

t0=$(date +%s)
count "$HB" "$SUITE" head &
hp=$!
bp=
if [ -n "$base_suite" ]; then
    count "$BB" "$base_suite" base &
    bp=$!
fi
ok=1
wait "$hp" || ok=0
if [ -n "$bp" ]; then wait "$bp" || ok=0; fi
[ "$ok" = 1 ] || exit 1
say "instructions counted under callgrind in $(($(date +%s) - t0)) s ($(valgrind --version), base and head at once)"
if [ -n "${PERF_OUT:-}" ]; then mkdir -p "$PERF_OUT" && cp "$work/head.json" "$PERF_OUT/instructions-head.json"; fi
if [ -z "$base_suite" ]; then
    say "no case to compare (base $short runs none); the gate passes"
    exit 0
fi
if [ -n "${PERF_OUT:-}" ]; then cp "$work/base.json" "$PERF_OUT/instructions-base.json"; fi

echo "== instruction counts (the gate): base $short ($BASE_REV) vs head, callgrind, threshold +$THRESHOLD%"
set +e
"$HB" compare "$work/base.json" "$work/head.json" --metric instructions --threshold "$THRESHOLD" >"$work/cmp.txt" 2>&1
rc=$?
set -e
cat "$work/cmp.txt"
if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    say "gated compare failed (exit $rc)"
    exit 1
fi

# ---- advisory: wall-clock items/s, alternated
if [ "$ROUNDS" -gt 0 ]; then
    mkdir -p "$work/wall"
    t0=$(date +%s)
    if "$PYTHON" bench/perf_wall.py --base "$BB" --head "$HB" --suite "$SUITE" ${base_suite:+--base-suite "$base_suite"} \
        --rounds "$ROUNDS" --reps "$REPS" --out "$work/wall"; then
        echo
        echo "== wall-clock items/s (advisory, never fails the gate): medians of $ROUNDS alternating rounds" \
            "(one process per side a round; a process's median of $REPS repetitions), 1 thread;" \
            "p: Mann-Whitney U over the rounds, each case alone (with 16 cases at 0.05, about one false" \
            "REGRESSION a run when nothing changed); noise: half the rounds' inter-quartile range, the larger side's"
        "$HB" compare "$work/wall/base.json" "$work/wall/head.json" --metric items_per_second --threshold 5 || true
        if [ -n "${PERF_OUT:-}" ]; then cp "$work/wall/base.json" "$PERF_OUT/wall-base.json" && cp "$work/wall/head.json" "$PERF_OUT/wall-head.json"; fi
    else
        say "the wall-clock table failed (advisory; the gate's verdict stands)"
    fi
fi

echo
say "done in $(($(date +%s) - start)) s (builds included)"
if [ "$rc" = 3 ]; then
    thr=$(awk -v t="$THRESHOLD" 'BEGIN { printf "%.4g", 1 + t / 100 }')
    awk -v thr="$thr" '$NF == "REGRESSION" {
        printf "perf-check: REGRESSION %s: base %s, head %s instructions, head/base %.4f > %s\n", $1, $2, $3, $3 / $2, thr
    }' "$work/cmp.txt" >&2
    say "FAILED: base $short ($BASE_REV) vs head: instruction counts grew by more than $THRESHOLD% (cases above)"
    exit 3
fi
say "ok: no case's instruction count grew by more than $THRESHOLD% over base $short ($BASE_REV)"
