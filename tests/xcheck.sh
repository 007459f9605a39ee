#!/usr/bin/env bash
# xcheck.sh GATED_BIN PYTHON
#
# Cross-checks the C model against the independent float64 PyTorch reference
# (tests/torch_ref.py) on the cases `GATED_BIN xcheck --list` prints (every
# value of every gate variant list, from the C tables), then on the
# evaluation forwards of EVAL_CASES below (simulated quantization and gate
# drops, `gated xcheck --quant / --drop`): for each, `GATED_BIN xcheck`
# writes a dump (config, params, batch, C logits/loss/grads; forward only for
# the evaluation cases) and torch_ref.py recomputes and compares.  All cases
# run; the script fails at the end if any case failed.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 GATED_BIN PYTHON" >&2
    exit 2
fi
GATED_BIN=$1
PYTHON=$2

# Paths given relative to the caller's directory keep working after the cd.
case $GATED_BIN in */*) GATED_BIN=$(cd "$(dirname "$GATED_BIN")" && pwd)/$(basename "$GATED_BIN") ;; esac
case $PYTHON in */*) PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON") ;; esac
cd "$(dirname "$0")/.."

if ! "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
    echo "xcheck: '$PYTHON' cannot import torch." >&2
    echo "xcheck: install PyTorch for it, e.g. on Debian: apt-get install -y python3-torch" >&2
    exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/xcheck.XXXXXX")
trap 'rm -rf "$dir"' EXIT

echo "== torch_ref.py --self-test"
if ! "$PYTHON" tests/torch_ref.py --self-test; then
    echo "xcheck: the PyTorch reference fails its own self-test; not comparing." >&2
    exit 1
fi

# The cases come from the C tables (`gated xcheck --list`: every value of every
# gate list, controls, GQA, no QK-norm, match_params), one per line:
#   label|overrides (space-separated K=V)
# so a new position or activation is cross-checked without editing a list here.
if ! list=$("$GATED_BIN" xcheck --list); then
    echo "xcheck: '$GATED_BIN xcheck --list' failed" >&2
    exit 1
fi
mapfile -t CASES <<<"$list"
if [ "${#CASES[@]}" -lt 2 ] || [ -z "${CASES[0]}" ]; then
    echo "xcheck: '$GATED_BIN xcheck --list' listed no cases" >&2
    exit 1
fi
echo "== ${#CASES[@]} cases from '$GATED_BIN xcheck --list'"

# The evaluation forwards (core/run/infer.h): a small fixed list, not from
# the C tables, since a scheme is a string, not a table entry.  One line
# each:  label|overrides|xcheck options.  The schemes of the README's
# evaluation on a G1 elementwise model (w4g32: d_ff 48 leaves w_down's rows
# a group of 32 and one of 16), the gate drop on a G1 headwise model and
# combined with quantization, and on an elementwise one (the head's mean
# score).  Each TAU drops some but not all pairs (torch_ref.py prints the
# counts and notes a TAU that drops none or all) and lies clear of every
# pair's score (min |score - tau| >= 4e-4 here, round-off ~1e-7).
EVAL_CASES=(
    "eval-g1-w8-a8tensor|model.gate.position=sdpa|--quant w8-a8tensor"
    "eval-g1-w8-a8token|model.gate.position=sdpa|--quant w8-a8token"
    "eval-g1-w4g32|model.gate.position=sdpa|--quant w4g32"
    "eval-g1-a8token|model.gate.position=sdpa|--quant a8token"
    "eval-g1head-drop|model.gate.position=sdpa model.gate.granularity=headwise|--drop gate:0.499"
    "eval-g1head-w8-a8token-drop|model.gate.position=sdpa model.gate.granularity=headwise|--quant w8-a8token --drop gate:0.499"
    "eval-g1-w4g32-a8tensor-drop|model.gate.position=sdpa|--quant w4g32-a8tensor --drop gate:0.497"
)
echo "== ${#EVAL_CASES[@]} evaluation cases (quantized / heads dropped, forward only)"

# The front page states both counts; a new variant row must not leave them stale.
ndoc=0
want="for ${#CASES[@]} cases generated from the variant tables, plus ${#EVAL_CASES[@]} evaluation cases"
if ! tr '\n' ' ' <README.md | tr -s ' ' | grep -qF "$want"; then
    echo "xcheck: README.md does not say '$want' (update its Gradients line)" >&2
    ndoc=1
fi

labels=()
worsts=()
measures=()
results=()
nfail=0
for c in "${CASES[@]}" "${EVAL_CASES[@]}"; do
    case $c in
        *'|'*'|'*) opts=${c##*|} c=${c%|*} ;; # an evaluation case
        *'|'*) opts= ;;
        *)
            echo "xcheck: malformed case line from 'xcheck --list': $c" >&2
            exit 1
            ;;
    esac
    label=${c%%|*}
    over=${c#*|}
    args=()
    for kv in $over; do
        args+=(--set "$kv")
    done
    # shellcheck disable=SC2206 # the options are words: --quant SCHEME --drop RULE
    args+=($opts)
    out="$dir/$label.bin"
    echo "== $label: ${over:-(defaults)}${opts:+ $opts}"
    worst="-"
    measure="-"
    status=OK
    if ! "$GATED_BIN" xcheck experiments/tiny.yaml ${args[@]+"${args[@]}"} --out "$out"; then
        echo "xcheck: $label: '$GATED_BIN xcheck' failed" >&2
        status="FAIL (C side)"
    else
        rc=0
        "$PYTHON" tests/torch_ref.py --label "$label" "$out" >"$dir/$label.log" 2>&1 || rc=$?
        cat "$dir/$label.log"
        line=$(grep '^XCHECK ' "$dir/$label.log" | tail -n 1 || true)
        worst=$(awk '{print $4}' <<<"$line")
        worst=${worst:--}
        measure=$(awk '{print $3}' <<<"$line")
        measure=${measure:--}
        case $rc in
            0) status=OK ;;
            2) status="FAIL (malformed dump)" ;;
            3) status="FAIL (no torch reference for this variant)" ;;
            *) status=FAIL ;;
        esac
    fi
    [ "$status" = OK ] || nfail=$((nfail + 1))
    labels+=("$label")
    worsts+=("$worst")
    measures+=("$measure")
    results+=("$status")
done

# worst: the worst gradient's relative error (worst_grad_rel), or for an
# evaluation case the logits' (logits_rel: the C side against the reference,
# or against it with the rounding flips round-off explains, torch_ref.py)
echo
printf '%-60s %-14s %-15s %s\n' label worst of result
for i in "${!labels[@]}"; do
    printf '%-60s %-14s %-15s %s\n' "${labels[$i]}" "${worsts[$i]}" "${measures[$i]}" "${results[$i]}"
done
echo
if [ "$nfail" -ne 0 ] || [ "$ndoc" -ne 0 ]; then
    echo "xcheck: $nfail of ${#labels[@]} cases FAILED$([ "$ndoc" -eq 0 ] || echo "; README.md's case counts are stale")"
    exit 1
fi
echo "xcheck: all ${#labels[@]} cases OK"
