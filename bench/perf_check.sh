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
# and OpenBLAS, so the counts are deterministic (to ~0.01%: a different set of
# environment variables moves them a little); OPENBLAS_CORETYPE is taken from
# the environment, never set here.
#
# The binary is a separate build (PERF_BUILD, default build-perf/) with
# -O2 -march=x86-64-v3 on x86_64 (plain -O2 elsewhere): valgrind cannot
# execute AVX-512, which -march=native would emit on this machine, and fixed
# flags keep the counts independent of the build host's -march.
#
# Counts also depend on the machine and toolchain: the CPU (through it the
# kernels OpenBLAS and libc choose under valgrind), OpenBLAS's build,
# OPENBLAS_CORETYPE, the compiler, libc and valgrind.  The baseline records
# them (context.perf_env, from `gated bench --env` run under valgrind, as
# the counted run sees them).  When this machine's differ, the check prints
# one line saying so and exits 0 without counting (PERF_FORCE=1 compares
# anyway): a CI runner unlike the machine the baseline came from cannot
# judge it.  A new machine / compiler / OpenBLAS that should be the
# reference needs a fresh baseline (make perf-baseline), committed.
#
# Environment: PERF_BUILD (build-perf), PERF_SUITE (bench/perf.yaml),
# PERF_BASELINE (bench/baseline.json), PERF_THRESHOLD (3), PERF_FORCE (0),
# PERF_HEAD_OUT (also write the counts there), PERF_ENV_FILE (tests: a file
# of "key": "value" lines taken as this machine's environment instead of
# asking the binary; the build and count then happen only if it matches).
#
# Exit: 0 ok or skipped, 1 failure to build or count, 2 no baseline, 3 regression.
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
FORCE=${PERF_FORCE:-0}
ENV_FILE=${PERF_ENV_FILE:-}
ARCH=$(uname -m)
case "$ARCH" in
x86_64) PERF_OPT="-O2 -march=x86-64-v3" ;;
*) PERF_OPT="-O2" ;;
esac

skip() { # skip "recorded" "this machine"
    echo "perf-check: baseline recorded on $1; this machine is $2: counts are not comparable, skipping; refresh with make perf-baseline" >&2
    exit 0
}

# The "key": "value" members of the perf_env object of a baseline, one a line.
baseline_env() {
    awk '/"perf_env": *\{/ { on = 1; next }
         on && /^ *\}/ { exit }
         on { sub(/^ */, ""); sub(/,$/, ""); print }' "$1"
}

# Before building anything: another architecture (the flags above would not
# even compile there) is a skip.
if [ "$update" = 0 ] && [ -f "$BASELINE" ] && [ "$FORCE" != 1 ]; then
    base_arch=$(baseline_env "$BASELINE" | sed -n 's/^"arch": "\(.*\)"$/\1/p')
    if [ -n "$base_arch" ] && [ "$base_arch" != "$ARCH" ]; then
        skip "arch=\"$base_arch\"" "arch=\"$ARCH\""
    fi
fi

ensure_valgrind() {
    if ! command -v valgrind >/dev/null 2>&1 || [ ! -f /usr/include/valgrind/callgrind.h ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "perf-check: installing valgrind" >&2
            apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >&2
        else
            echo "perf-check: valgrind is missing; as root: apt-get update && apt-get install -y valgrind (or make deps)" >&2
            exit 1
        fi
    fi
}

# The counted binary.  Objects built before valgrind/callgrind.h existed
# would lack the client requests: gated says so (exit 1) and we rebuild.
build() { make -s BUILD="$BUILD_DIR" OPT="$PERF_OPT" "$BUILD_DIR/gated" >&2; }

start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

if [ -n "$ENV_FILE" ]; then
    cp "$ENV_FILE" "$work/env.txt"
else
    ensure_valgrind
    build
    # This machine's environment, as the counted binary sees it under valgrind
    # (OpenBLAS picks its core from the CPUID valgrind shows, which can differ
    # from the one it picks natively).
    if ! valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$work/env.log" \
        "$BUILD_DIR/gated" bench --env >"$work/env.json" 2>>"$work/env.log"; then
        echo "perf-check: gated bench --env failed under valgrind:" >&2
        cat "$work/env.log" >&2
        exit 1
    fi
    {
        sed -n 's/^ *\("[a-z_]*": ".*"\),\{0,1\}$/\1/p' "$work/env.json"
        printf '"valgrind": "%s"\n' "$(valgrind --version)"
    } >"$work/env.txt"
fi

if [ "$update" = 0 ]; then
    if [ ! -f "$BASELINE" ]; then
        echo "perf-check: $BASELINE is missing; create it with make perf-baseline" >&2
        exit 2
    fi
    baseline_env "$BASELINE" >"$work/base_env.txt"
    if [ "$FORCE" != 1 ]; then
        if [ ! -s "$work/base_env.txt" ]; then
            skip "an unrecorded environment ($BASELINE has no context.perf_env)" \
                "$(awk '{ i = index($0, "\": "); printf "%s%s=%s", (NR > 1 ? ", " : ""), substr($0, 2, i - 2), substr($0, i + 3) }' "$work/env.txt")"
        fi
        # the keys whose values differ (or that only one side has), as key="value"
        diffs=$(awk '
            function kv(k, v) { return k "=" (v == "" ? "(none)" : v) }
            { i = index($0, "\": "); k = substr($0, 2, i - 2); v = substr($0, i + 3) }
            NR == FNR { base[k] = v; order[++n] = k; next }
            { head[k] = v; if (!(k in base)) order[++n] = k }
            END {
                for (i = 1; i <= n; i++) {
                    k = order[i]
                    if (base[k] != head[k]) {
                        b = b (b == "" ? "" : ", ") kv(k, base[k])
                        h = h (h == "" ? "" : ", ") kv(k, head[k])
                    }
                }
                if (b != "" || h != "") print b "\t" h
            }' "$work/base_env.txt" "$work/env.txt")
        if [ -n "$diffs" ]; then
            skip "${diffs%%$'\t'*}" "${diffs#*$'\t'}"
        fi
    fi
fi

if [ -n "$ENV_FILE" ]; then
    ensure_valgrind
    build
fi
if ! valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --combine-dumps=yes \
    --dump-line=no --log-file="$work/valgrind.log" \
    "$BUILD_DIR/gated" bench "$SUITE" --callgrind >"$work/table.txt" 2>"$work/bench.log"; then
    echo "perf-check: gated bench --callgrind failed under valgrind:" >&2
    cat "$work/bench.log" "$work/valgrind.log" >&2
    exit 1
fi

# One "desc: Trigger: Client Request: NAME" + "summary: N" pair per case.
# Case names are [A-Za-z0-9_.:+=/-] (checked when the suite is loaded), so
# they go into JSON as they are.
awk -v suite="$SUITE" -v opt="$PERF_OPT" -v envfile="$work/env.txt" '
    BEGIN { n = 0; ne = 0; while ((getline l < envfile) > 0) envl[ne++] = l }
    /^part:/ { name = "" }
    /^desc: Trigger: Client Request: / { name = $0; sub(/^desc: Trigger: Client Request: /, "", name) }
    /^summary: / { if (name != "") { names[n] = name; counts[n] = $2; n++; name = "" } }
    END {
        printf "{\n  \"context\": {\n    \"library_build_type\": \"release\",\n"
        printf "    \"gated_perf_tool\": \"valgrind --tool=callgrind\",\n    \"gated_suite\": \"%s\",\n", suite
        printf "    \"gated_cflags\": \"%s\",\n    \"perf_env\": {\n", opt
        for (i = 0; i < ne; i++) printf "      %s%s\n", envl[i], i + 1 < ne ? "," : ""
        printf "    }\n  },\n  \"benchmarks\": [\n"
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
echo "perf-check: $ncases cases counted under callgrind in $(($(date +%s) - start)) s (build included)" >&2

if [ "$update" = 1 ]; then
    cp "$work/head.json" "$BASELINE"
    echo "perf-check: wrote $BASELINE" >&2
    exit 0
fi
if [ -n "${PERF_HEAD_OUT:-}" ]; then cp "$work/head.json" "$PERF_HEAD_OUT"; fi
set +e
"$BUILD_DIR/gated" compare "$BASELINE" "$work/head.json" --metric instructions --threshold "$THRESHOLD" --fail-missing
rc=$?
set -e
if [ "$rc" = 3 ]; then
    echo "perf-check: FAILED: instruction counts grew by more than $THRESHOLD% (cases named above)." >&2
    echo "perf-check: if the extra cost is intended, refresh the baseline: make perf-baseline" >&2
fi
exit "$rc"
