#!/usr/bin/env bash
# perf_gate_test.sh — the perf gate (bench/perf_check.sh) must be able to
# fail, and must not fail on a change within its threshold (make
# perf-gate-test, run by .ci/run after make perf-check).
#
# Base: the committed HEAD; head: this working tree built with
# GATED_PERF_PLANT (core/nn/ops.c: wasted passes in rmsnorm_forward, a macro
# no other build defines), counted on the tiny cases of tests/perf_gate.yaml:
#   planted on every row: exit 3, one REGRESSION line, naming
#     op/rmsnorm/n128_w64 with both counts and the ratio;
#   planted on one row of 128 (~0.2% more instructions in that case):
#     exit 0, the case "ok" with a nonzero change.
# The wall-clock table runs too (3 rounds) and must not decide either way.
# Then the gate's generated cases (bench/perf.yaml itself: `gates: covering`,
# `variants: covering`) against GATED_PERF_PLANT_VARIANTS, which makes three
# variants that no default model runs 4x slower: the SiLU-only control
# (silu_forward, core/nn/ops.c), a tanh gate (act_tanh, core/nn/gate.c) and
# the G3 position's gate forward (core/nn/model.c):
#   exit 3, REGRESSION lines naming step/micro/control=silu,
#   step/micro/position=key and the tanh gate cases, and no other case.
# Its cases must be in the committed HEAD (the base): a base that cannot
# read them counts them as new in head, and this part fails.
# Builds go to PERF_TEST_BUILD (build-perf-test/): base, plant, noise,
# variants.
# Exit 0 when both hold, else 1 with the gate's output.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${PERF_TEST_BUILD:-build-perf-test}
mkdir -p "$dir"
fail=0
start=$(date +%s)

gate() { # gate NAME PLANT: the gate's exit status; its output in $dir/NAME.log
    PERF_BASE=HEAD PERF_SUITE=tests/perf_gate.yaml PERF_BASE_BUILD="$dir/base" PERF_BUILD="$dir/$1" \
        PERF_HEAD_CFLAGS="-DGATED_PERF_PLANT=$2" PERF_ROUNDS=3 PERF_REPS=3 bench/perf_check.sh >"$dir/$1.log" 2>&1
}
bad() { # bad WHAT LOG
    echo "perf-gate-test: FAILED: $1" >&2
    sed 's/^/  | /' "$2" >&2
    fail=1
}

gate plant 1000000
rc=$?
log=$dir/plant.log
regs=$(grep -c '^perf-check: REGRESSION ' "$log")
line=$(grep '^perf-check: REGRESSION ' "$log")
if [ "$rc" != 3 ]; then
    bad "a planted slowdown: exit $rc, expected 3" "$log"
elif [ "$regs" != 1 ] || ! [[ $line =~ ^perf-check:\ REGRESSION\ op/rmsnorm/n128_w64:\ base\ ([0-9]+),\ head\ ([0-9]+)\ instructions,\ head/base\ ([0-9.]+)\ \>\ 1.03$ ]]; then
    bad "a planted slowdown: expected one REGRESSION line naming op/rmsnorm/n128_w64, got $regs" "$log"
elif ! awk -v b="${BASH_REMATCH[1]}" -v h="${BASH_REMATCH[2]}" -v r="${BASH_REMATCH[3]}" \
    'BEGIN { exit !(h > 1.03 * b && (r - h / b) ^ 2 < 1e-8) }'; then
    bad "a planted slowdown: counts and ratio disagree: $line" "$log"
else
    echo "perf-gate-test: planted slowdown caught (exit 3): ${line#perf-check: }"
fi

gate noise 1
rc=$?
log=$dir/noise.log
row=$(grep '^op/rmsnorm/n128_w64 ' "$log" | head -n 1)
if [ "$rc" != 0 ]; then
    bad "a change within the threshold: exit $rc, expected 0" "$log"
elif ! [[ $row =~ \ \+0\.[0-9]%\ .*\ ok$ ]] || [[ $row =~ \ \+0\.0% ]]; then
    bad "a change within the threshold: expected op/rmsnorm/n128_w64 ok with a change of +0.1% to +0.9%: $row" "$log"
else
    echo "perf-gate-test: a change within the threshold passes (exit 0): $(echo "$row" | tr -s ' ')"
fi
# the generated cases: three non-default variants planted 4x slower
PERF_BASE=HEAD PERF_SUITE=bench/perf.yaml PERF_BASE_BUILD="$dir/base" PERF_BUILD="$dir/variants" \
    PERF_HEAD_CFLAGS="-DGATED_PERF_PLANT_VARIANTS" PERF_ROUNDS=0 bench/perf_check.sh >"$dir/variants.log" 2>&1
rc=$?
log=$dir/variants.log
names=$(sed -n 's/^perf-check: REGRESSION \([^:]*\): .*/\1/p' "$log" | sort)
others=$(echo "$names" | grep -v -E '^(step/micro/control=silu|step/micro/position=key|gate/[a-z_.]*\.tanh\.[a-z]*/tiny)$' || true)
if [ "$rc" != 3 ]; then
    bad "slowed variants (SiLU-only control, tanh gate, G3 position): exit $rc, expected 3" "$log"
elif ! grep -qx 'step/micro/control=silu' <<<"$names" || ! grep -qx 'step/micro/position=key' <<<"$names" ||
    ! grep -q '^gate/.*\.tanh\.' <<<"$names"; then
    bad "slowed variants: expected REGRESSION lines naming step/micro/control=silu, step/micro/position=key and a tanh gate, got: $(echo $names)" "$log"
elif [ -n "$others" ]; then
    bad "slowed variants: cases that run none of them regressed: $(echo $others)" "$log"
else
    echo "perf-gate-test: slowed variants caught (exit 3):"
    grep '^perf-check: REGRESSION ' "$log" | sed 's/^perf-check: REGRESSION /  /'
fi
echo "perf-gate-test: $(($(date +%s) - start)) s"
exit "$fail"
