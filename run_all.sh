#!/usr/bin/env bash
# run_all.sh — the main job: install what is missing, build, fetch the data,
# run every sweep of the paper's ablation matrix, and write the report.
#
#   ./run_all.sh            the full matrix into results/gated.db, report in results/report/
#   ./run_all.sh --smoke    the smoke sweep (synthetic corpus, seconds) into results/smoke.db
#   ./run_all.sh --jobs J   local workers per sweep (default: 2, one core each)
#
# Resumable: a second invocation skips every finished run (same run id and
# code version), resumes killed runs from their checkpoints, and reruns
# failed ones.  Each invocation appends its wall time to results/run_all.log
# (ignored by git: a run changes no tracked file but the results it makes).
set -euo pipefail
cd "$(dirname "$0")"

smoke=0
jobs=2
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) smoke=1 ;;
    --jobs) jobs="$2"; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

start=$(date +%s)
echo "== deps"
make --no-print-directory deps
# beyond what the tests need: gnuplot for the plots, npm for the corpus
extra=""
command -v gnuplot >/dev/null || extra="$extra gnuplot-nox"
[ "$smoke" = 1 ] || command -v npm >/dev/null || extra="$extra npm"
if [ -n "$extra" ]; then
    if [ "$(id -u)" = 0 ]; then
        # no recommends, as make deps: gnuplot-nox would pull ImageMagick and Ghostscript
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $extra
    else
        echo "run_all.sh: missing:$extra (as root: apt-get install -y --no-install-recommends$extra); continuing without" >&2
    fi
fi

echo "== build"
make --no-print-directory -j"$(nproc)" all

mkdir -p results
if [ "$smoke" = 1 ]; then
    db=results/smoke.db
    out=results/smoke-report
    sweeps="smoke"
else
    echo "== data"
    make --no-print-directory data
    db=results/gated.db
    out=results/report
    sweeps="table1_positions table3_nonlinearity table4_sink activations lr_stability"
    # run after these, below: long_context(_continued) with evaluations, sink_search(_long)
fi

status=0
sweep() {
    echo "== sweep $1"
    build/gated sweep "experiments/$1.yaml" --db "$db" --jobs "$jobs" --rerun-failed || status=1
}
# gated eval over a sweep's finished runs: one pass per RoPE scaling
evals() {
    local s=$1 lengths=$2; shift 2
    for k in "$@"; do
        echo "== eval $s ($k)"
        build/gated eval --sweep "$s" --db "$db" --lengths "$lengths" --rope-scaling "$k" --split both \
            --windows 8 || status=1
    done
}
for s in $sweeps; do sweep "$s"; done
if [ "$smoke" = 0 ]; then
    # long context (issue 6): train at T = 128, evaluate 1x..16x; then the
    # paper's recipe: continue at 4x with RoPE base 1M, extend with YaRN
    sweep long_context
    evals long_context 128,256,512,1024,2048 none ntk yarn
    sweep long_context_continued
    evals long_context_continued 512,1024,2048 none yarn
    # attention sink (issue 7): the search, then Table 4 where a sink forms
    sweep sink_search
    sweep sink_search_lr
    sweep sink_search_long
    sweep sink
fi

echo "== benchmarks: not part of run_all.sh yet; run make bench (see README)"

echo "== report"
build/gated report --db "$db" --out "$out" || status=1

end=$(date +%s)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# results/ is this script's own output; only changes elsewhere make the code "dirty"
dirty=$(git status --porcelain -- . ':!results' 2>/dev/null | grep -q . && echo " (uncommitted changes)" || true)
printf '%s  %s  commit %s%s  sweeps: %s  wall %ds  exit %d\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$([ "$smoke" = 1 ] && echo smoke || echo full)" "$commit" "$dirty" "$sweeps" $((end - start)) "$status" \
    >>results/run_all.log
echo "report: $out/report.md  (wall time $((end - start)) s; log: results/run_all.log)"
exit $status
