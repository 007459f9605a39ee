#!/usr/bin/env bash
# run_all.sh — the main job: install what is missing, build, fetch the data,
# run the experiments of a tier, and write the report.
#
#   ./run_all.sh              the quick tier into results/gated.db, report in results/report/
#                             (results/gated.db is made from, and packed back into, the
#                             committed parts in results/db/: tools/results_db.py)
#   ./run_all.sh --standard   the quick tier, then the standard tier (hours: budgets where the
#                             curves flatten, the standard profile, the LR stress test, the
#                             3-layer Bigram-Backcopy sweep, the long sink searches)
#   ./run_all.sh --smoke      the smoke sweep (synthetic corpus, seconds) into results/smoke.db
#   ./run_all.sh --rows 1,18  only the runs that rows 1 and 18 of the verdict table rest on
#                             (remedies, sparse: the tables beside it; all: every row and both),
#                             then those rows from --db, each below the same row from
#                             results/gated.db (tools/rerun_rows.py: what, how long)
#   ./run_all.sh --jobs J     local workers per sweep (default: 2, one core each)
#   ./run_all.sh --shard i/N  only the runs of every sweep whose index % N == i (0 <= i < N)
#   ./run_all.sh --db PATH    the results database (default: results/gated.db; report beside it)
#
# Resumable: a second invocation skips every finished run (same run id and
# code version), resumes killed runs from their checkpoints, and reruns
# failed ones.  Shards may run at once on one database (runs are claimed
# atomically) or on separate machines with their own --db, folded together
# with `build/gated merge`; continued-training runs (train.init_from) whose
# parent is in another shard fail until it is there, and the next invocation
# reruns them.  Each invocation appends its wall time to results/run_all.log
# (ignored by git: a run changes no tracked file but the results it makes).
set -euo pipefail
cd "$(dirname "$0")"

smoke=0
standard=0
rows=""
jobs=2
shard=""
db=""
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) smoke=1 ;;
    --standard) standard=1 ;;
    --rows) rows="${2:?--rows needs a list of verdict rows (1,18 or all)}"; shift ;;
    --jobs) jobs="${2:?--jobs needs a value}"; shift ;;
    --shard) shard="${2:?--shard needs i/N}"; shift ;;
    --db) db="${2:?--db needs a path}"; shift ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$shard" ] && ! [[ "$shard" =~ ^[0-9]+/[0-9]+$ ]]; then
    echo "run_all.sh: --shard $shard: expected i/N, 0 <= i < N" >&2
    exit 2
fi
if [ -n "$rows" ] && ! [[ "$rows" =~ ^(all|([0-9]+|remedies|sparse)(,([0-9]+|remedies|sparse))*)$ ]]; then
    echo "run_all.sh: --rows $rows: expected row numbers of the verdict table (1,18), remedies, sparse, or all" >&2
    exit 2
fi
if [ -n "$rows" ] && { [ "$smoke$standard" != 00 ] || [ -n "$shard" ]; }; then
    echo "run_all.sh: --rows runs what verdict rows rest on: not with --smoke, --standard or --shard" >&2
    exit 2
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "run_all.sh: --jobs $jobs: expected a positive integer" >&2
    exit 2
fi

start=$(date +%s)
echo "== deps"
make --no-print-directory deps
# a row the verdict table lacks is refused before anything is built or run
if [ -n "$rows" ]; then /usr/bin/python3 tools/rerun_rows.py "$rows" --check || exit 2; fi
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
    tier=smoke
    db=${db:-results/smoke.db}
    out=$(dirname "$db")/smoke-report
else
    tier=$([ "$standard" = 1 ] && echo standard || { [ -n "$rows" ] && echo "rows-$rows"; } || echo quick)
    echo "== data"
    make --no-print-directory data
    db=${db:-results/gated.db}
    out=$(dirname "$db")/report
fi
mkdir -p "$(dirname "$db")"
# results/gated.db is not committed as such: the repository holds it as
# results/db/ (one xz-compressed database per sweep, tools/results_db.py).
# The committed parts are folded into it first (made when missing; merge is
# idempotent and keeps the better copy of a run), so that committed runs are
# skipped, not rerun, and a stale local database cannot be packed over newer
# parts; packed back into them at the end.
packed=0
if [ "$db" = results/gated.db ] && [ "$smoke" = 0 ]; then
    packed=1
    if [ -f results/db/MANIFEST.tsv ]; then
        echo "== results/gated.db with the committed parts of results/db/"
        /usr/bin/python3 tools/results_db.py unpack --db "$db" --dir results/db --gated build/gated
    fi
fi

status=0
done_sweeps=""
sweep() {
    echo "== sweep $1"
    done_sweeps="$done_sweeps $1"
    # --verify-code: a result recorded by other code is re-executed for its
    # first steps and kept when they are bitwise equal (docs/sweeps.md, "Verifying
    # results of other code"), instead of being rerun whole
    build/gated sweep "experiments/$1.yaml" --db "$db" --jobs "$jobs" --rerun-failed --verify-code \
        ${shard:+--shard "$shard"} "${@:2}" || status=1
}
# the gated eval passes of the tiers, by name: `eval_pass PASS SWEEP [RUN_ID...]` evaluates the
# runs named, else every finished run of SWEEP (run_all.sh --rows names the runs that lack the
# pass: tools/rerun_rows.py --evals).
#   evals   perplexity beyond the training length, one pass per RoPE scaling (issue 6)
#   infer   issue 17, what the gate buys at inference: perplexity under simulated W8A8 (per-tensor,
#           per-token) and W4 (groups of 32) quantization, and with (token, head) outputs dropped
#           by the G1 gate score (with random and entropy controls matched per layer) or at fixed
#           fractions; one thread: a window is one small forward
#   quant   the quantization alone (as the sink remedies were evaluated)
eval_pass() {
    local kind=$1 s=$2 sel=(--sweep "$2") lengths scalings k
    shift 2
    if [ $# -gt 0 ]; then sel=("$@"); fi
    case "$kind:$s" in
    evals:long_context) lengths=128,256,512,1024,2048 scalings="none ntk yarn" ;;
    evals:long_context_continued) lengths=512,1024,2048 scalings="none yarn" ;;
    infer:* | quant:*)
        local drop=(--drop gate:0.05,gate:0.1,gate:0.2,gate:0.3,gate:0.5,frac:0.1,frac:0.25,frac:0.5)
        if [ "$kind" = quant ]; then drop=(); fi
        echo "== eval $s (quantization${drop[*]:+, dropped heads})"
        OMP_NUM_THREADS=1 build/gated eval "${sel[@]}" --db "$db" --windows 64 \
            --quant w8-a8tensor,w8-a8token,w4g32 "${drop[@]}" || status=1
        return ;;
    *) echo "run_all.sh: no gated eval pass '$kind' for sweep '$s'" >&2; status=1; return ;;
    esac
    for k in $scalings; do
        echo "== eval $s ($k)"
        build/gated eval "${sel[@]}" --db "$db" --lengths "$lengths" --rope-scaling "$k" --split both \
            --windows 8 || status=1
    done
}
if [ "$smoke" = 1 ]; then
    sweep smoke
elif [ -n "$rows" ]; then
    # what the verdict rows read (recorded while the committed table computes them,
    # so the list cannot drift from it): each sweep's run indices
    [ -f results/gated.db ] || make --no-print-directory results-db
    plan=$(/usr/bin/python3 tools/rerun_rows.py "$rows" --indices --db results/gated.db) || exit 2
    while read -r what s idx; do
        if [ "$what" = sweep ]; then sweep "$s" --index "$idx" </dev/null; fi
    done <<<"$plan"
    # then the gated eval passes the rows need, on the runs of $db that lack their metrics
    plan=$(/usr/bin/python3 tools/rerun_rows.py "$rows" --db results/gated.db --evals "$db") || exit 2
    while read -r what kind s ids; do
        # shellcheck disable=SC2086 # run ids: 16 hex digits each (checked by gated eval)
        if [ "$what" = eval ]; then eval_pass "$kind" "$s" $ids </dev/null; fi
    done <<<"$plan"
else
    # the quick tier: the paper's ablation matrix at the quick profile (100
    # steps, 205k tokens: early training, see results/README.md), long
    # context, Table 4 where a Brown sink forms, and the 1-layer
    # Bigram-Backcopy sink sweep
    for s in table1_positions table3_nonlinearity table4_sink activations lr_stability; do sweep "$s"; done
    # long context (issue 6): train at T = 128, evaluate 1x..16x; then the
    # paper's recipe: continue at 4x with RoPE base 1M, extend with YaRN
    sweep long_context
    eval_pass evals long_context
    sweep long_context_continued
    eval_pass evals long_context_continued
    sweep sink
    eval_pass infer sink
    sweep bb_sink
    if [ "$standard" = 1 ]; then
        # the standard tier (issue 14): the effect against complete-schedule
        # budgets, the standard profile and its 6-seed mechanism contrasts,
        # the LR stress test; the 3-layer Bigram-Backcopy sweep and its search;
        # the Brown sink searches (issue 7; the long ones ~30 min a run)
        for s in budget_0.5M budget_1M budget_2M budget_4M budget_8M standard standard_mech lr_stress \
            bb_search bb_sink_3l sink_search sink_search_lr sink_search_long; do
            sweep "$s"
        done
        eval_pass infer standard
    fi
fi

echo "== benchmarks: run apart from the results (make bench, make bench-peer, make perf-check: docs/performance.md)"

echo "== report"
build/gated report --db "$db" --out "$out" || status=1
if [ -n "$rows" ] && [ "$db" != results/gated.db ]; then
    echo "== verdict rows $rows from $db, each below the same row from results/gated.db (tools/rerun_rows.py --compare)"
    /usr/bin/python3 tools/rerun_rows.py "$rows" --db results/gated.db --compare "$db" || {
        rc=$?; [ "$rc" = 1 ] && echo "(words differ: see above)" || status=1; }
fi
if [ "$packed" = 1 ]; then
    echo "== results/db/ from results/gated.db"
    /usr/bin/python3 tools/results_db.py pack --db "$db" --dir results/db || status=1
fi

end=$(date +%s)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# results/ is this script's own output; only changes elsewhere make the code "dirty"
dirty=$(git status --porcelain -- . ':!results' 2>/dev/null | grep -q . && echo " (uncommitted changes)" || true)
printf '%s  %s  commit %s%s  shard %s  sweeps:%s  wall %ds  exit %d\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$tier" "$commit" "$dirty" "${shard:-all}" "$done_sweeps" $((end - start)) "$status" >>results/run_all.log
echo "report: $out/report.md  (wall time $((end - start)) s; log: results/run_all.log)"
exit $status
