#!/usr/bin/env bash
# perf_check.sh — the instruction-count perf gate (make perf-check / perf-baseline).
#
#   bench/perf_check.sh            count, compare with bench/baseline.json: exit 3 naming
#                                  every case that grew by more than PERF_THRESHOLD (3) percent
#   bench/perf_check.sh --update   count, and write the counts to bench/baseline.json
#
# What it counts: `gated bench bench/perf.yaml --callgrind` under
# valgrind --tool=callgrind runs each case of bench/perf.yaml (tiny shapes) a
# fixed number of iterations between CALLGRIND_ZERO_STATS and
# CALLGRIND_DUMP_STATS_AT(case name); the instructions of each dump (our code,
# OpenBLAS, libm, libgomp) are the case's count.  One thread each for OpenMP
# and OpenBLAS, so the counts are deterministic; OPENBLAS_CORETYPE is taken
# from the environment, never set here.
#
# The binary is a separate build (PERF_BUILD, default build-perf/) with
# -O2 -march=x86-64-v3: valgrind cannot execute AVX-512, which
# -march=native would emit on this machine, and fixed flags keep the counts
# independent of the build host's -march.  Counts still depend on the
# toolchain, OpenBLAS and the CPU valgrind reports: a new machine or
# compiler needs a fresh baseline (make perf-baseline), committed with the
# change that explains it.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
case "${1:-}" in
--update) update=1 ;;
"") ;;
*) echo "usage: bench/perf_check.sh [--update]" >&2; exit 2 ;;
esac

BUILD_DIR=${PERF_BUILD:-build-perf}
SUITE=${PERF_SUITE:-bench/perf.yaml}
BASELINE=${PERF_BASELINE:-bench/baseline.json}
THRESHOLD=${PERF_THRESHOLD:-3}

if ! command -v valgrind >/dev/null 2>&1 || [ ! -f /usr/include/valgrind/callgrind.h ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "perf-check: installing valgrind" >&2
        apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >&2
    else
        echo "perf-check: valgrind is missing; as root: apt-get install -y valgrind" >&2
        exit 1
    fi
fi

# The counted binary.  Objects built before valgrind/callgrind.h existed
# would lack the client requests: gated says so (exit 1) and we rebuild.
make -s BUILD="$BUILD_DIR" OPT="-O2 -march=x86-64-v3" "$BUILD_DIR/gated" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# gated re-executes itself once to set OMP_WAIT_POLICY; valgrind would not
# follow that exec, so set it here.
export OMP_WAIT_POLICY=passive GATED_NO_REEXEC=1

start=$(date +%s)
if ! valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --combine-dumps=yes --dump-line=no \
    --log-file="$work/valgrind.log" "$BUILD_DIR/gated" bench "$SUITE" --callgrind >"$work/table.txt" 2>"$work/bench.log"; then
    echo "perf-check: gated bench --callgrind failed under valgrind:" >&2
    cat "$work/bench.log" "$work/valgrind.log" >&2
    exit 1
fi

# One "desc: Trigger: Client Request: NAME" + "summary: N" pair per case.
# Case names are [A-Za-z0-9_.:+=/-] (checked when the suite is loaded), so
# they go into JSON as they are.
awk -v suite="$SUITE" '
    BEGIN { n = 0 }
    /^part:/ { name = "" }
    /^desc: Trigger: Client Request: / { name = $0; sub(/^desc: Trigger: Client Request: /, "", name) }
    /^summary: / { if (name != "") { names[n] = name; counts[n] = $2; n++; name = "" } }
    END {
        printf "{\n  \"context\": {\n    \"library_build_type\": \"release\",\n"
        printf "    \"gated_perf_tool\": \"valgrind --tool=callgrind\",\n    \"gated_suite\": \"%s\"\n  },\n", suite
        printf "  \"benchmarks\": [\n"
        for (i = 0; i < n; i++) {
            printf "    {\n      \"name\": \"%s\",\n      \"run_name\": \"%s\",\n", names[i], names[i]
            printf "      \"run_type\": \"iteration\",\n      \"repetitions\": 1,\n      \"repetition_index\": 0,\n"
            printf "      \"threads\": 1,\n      \"iterations\": 1,\n      \"real_time\": 0,\n      \"cpu_time\": 0,\n"
            printf "      \"time_unit\": \"ns\",\n      \"instructions\": %s\n    }%s\n", counts[i], i + 1 < n ? "," : ""
        }
        printf "  ]\n}\n"
    }' "$work/cg.out" >"$work/head.json"

ncases=$(grep -c '"instructions"' "$work/head.json" || true)
expected=$("$BUILD_DIR/gated" bench "$SUITE" --list | wc -l)
if [ "$ncases" != "$expected" ]; then
    echo "perf-check: callgrind produced $ncases case counts, the suite has $expected" >&2
    cat "$work/bench.log" >&2
    exit 1
fi
echo "perf-check: $ncases cases counted under callgrind in $(($(date +%s) - start)) s" >&2

if [ "$update" = 1 ]; then
    cp "$work/head.json" "$BASELINE"
    echo "perf-check: wrote $BASELINE" >&2
    exit 0
fi
if [ ! -f "$BASELINE" ]; then
    echo "perf-check: $BASELINE is missing; create it with make perf-baseline" >&2
    exit 2
fi
set +e
"$BUILD_DIR/gated" compare "$BASELINE" "$work/head.json" --metric instructions --threshold "$THRESHOLD" --fail-missing
rc=$?
set -e
if [ "$rc" = 3 ]; then
    echo "perf-check: FAILED: instruction counts grew by more than $THRESHOLD% (cases named above)." >&2
    echo "perf-check: if the extra cost is intended, refresh the baseline: make perf-baseline" >&2
fi
exit "$rc"
