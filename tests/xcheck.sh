#!/usr/bin/env bash
# xcheck.sh GATED_BIN PYTHON
#
# Cross-checks the C model against the independent float64 PyTorch reference
# (tests/torch_ref.py) on every gate variant: for each case, `GATED_BIN xcheck`
# writes a dump (config, params, batch, C logits/loss/grads) and torch_ref.py
# recomputes and compares.  All cases run; the script fails at the end if any
# case failed.
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

G=model.gate
# label | overrides (space-separated K=V)
CASES=(
    "baseline|"
    "g1_elem_sigmoid|$G.position=sdpa"
    "g1_head_sigmoid|$G.position=sdpa $G.granularity=headwise"
    "g1_silu|$G.position=sdpa $G.activation=silu"
    "g1_tanh|$G.position=sdpa $G.activation=tanh"
    "g1_identity|$G.position=sdpa $G.activation=none"
    "g1_additive_silu|$G.position=sdpa $G.form=additive $G.activation=silu"
    "g1_additive_identity|$G.position=sdpa $G.form=additive $G.activation=none"
    "g1_shared|$G.position=sdpa $G.sharing=head_shared"
    "g1_head_shared_headwise|$G.position=sdpa $G.granularity=headwise $G.sharing=head_shared"
    "g1_static|$G.position=sdpa $G.input=static"
    "g1_static_headwise|$G.position=sdpa $G.input=static $G.granularity=headwise"
    "g1_ns_sigmoid|$G.position=sdpa $G.activation=ns_sigmoid"
    "g2_elem|$G.position=value"
    "g2_head|$G.position=value $G.granularity=headwise"
    "g2_shared|$G.position=value $G.sharing=head_shared"
    "g3|$G.position=key"
    "g4|$G.position=query"
    "g4_head|$G.position=query $G.granularity=headwise"
    "g5|$G.position=dense"
    "g5_static|$G.position=dense $G.input=static"
    "ctrl_silu|$G.control=silu"
    "ctrl_rmsnorm|$G.control=rmsnorm"
    "gqa_g1|model.n_kv_head=2 $G.position=sdpa"
    "gqa_g2|model.n_kv_head=2 $G.position=value"
    "gqa_g3_head|model.n_kv_head=1 $G.position=key $G.granularity=headwise"
    "noqk_g1|model.qk_norm=false $G.position=sdpa"
    "noqk_baseline|model.qk_norm=false"
    "matched_g1|model.match_params=true $G.position=sdpa"
)

labels=()
worsts=()
results=()
nfail=0
for c in "${CASES[@]}"; do
    label=${c%%|*}
    over=${c#*|}
    args=()
    for kv in $over; do
        args+=(--set "$kv")
    done
    out="$dir/$label.bin"
    echo "== $label: ${over:-(defaults)}"
    worst="-"
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
        case $rc in
            0) status=OK ;;
            2) status="FAIL (malformed dump)" ;;
            *) status=FAIL ;;
        esac
    fi
    [ "$status" = OK ] || nfail=$((nfail + 1))
    labels+=("$label")
    worsts+=("$worst")
    results+=("$status")
done

echo
printf '%-26s %-14s %s\n' label worst_grad_rel result
for i in "${!labels[@]}"; do
    printf '%-26s %-14s %s\n' "${labels[$i]}" "${worsts[$i]}" "${results[$i]}"
done
echo
if [ "$nfail" -ne 0 ]; then
    echo "xcheck: $nfail of ${#labels[@]} cases FAILED"
    exit 1
fi
echo "xcheck: all ${#labels[@]} cases OK"
