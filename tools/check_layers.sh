#!/usr/bin/env bash
# check_layers.sh — the include rule of the core's layers (docs/layout.md).
#
#   util (0) < nn (1) < run (2) < lab (3) < cli, tests (anything)
#
# A file under core/L may include "M/x.h" only when M's rank <= L's rank, and
# must name project headers by their folder ("nn/model.h", never "model.h"),
# so the rule can be read off the include line.  Exit 1 naming every
# violation (file:line: the include and why), 0 when the tree keeps the rule.
#
#   tools/check_layers.sh [ROOT]      check ROOT (default: the repository)
#   tools/check_layers.sh --self-test plant violations in a scratch tree and
#                                     require that each one is refused
set -euo pipefail

rank() {
    case "$1" in
    util) echo 0 ;; nn) echo 1 ;; run) echo 2 ;; lab) echo 3 ;; *) echo -1 ;;
    esac
}

check() {
    local root=$1 bad=0 f layer r line inc dir
    while IFS= read -r f; do
        layer=${f#"$root"/core/}
        layer=${layer%%/*}
        r=$(rank "$layer")
        if [ "$r" -lt 0 ]; then
            echo "$f: not in a layer folder (core/util, core/nn, core/run, core/lab)"
            bad=1
            continue
        fi
        while IFS= read -r line; do
            inc=${line#*:}
            inc=${inc#*\"}
            inc=${inc%%\"*}
            case "$inc" in
            */*)
                dir=${inc%%/*}
                if [ "$(rank "$dir")" -lt 0 ]; then
                    echo "$f:${line%%:*}: #include \"$inc\": no such layer ($dir)"
                    bad=1
                elif [ "$(rank "$dir")" -gt "$r" ]; then
                    echo "$f:${line%%:*}: #include \"$inc\": $layer (layer $r) may not include $dir (layer $(rank "$dir"))"
                    bad=1
                fi
                ;;
            *)
                echo "$f:${line%%:*}: #include \"$inc\": name project headers by their layer folder (e.g. \"nn/$inc\")"
                bad=1
                ;;
            esac
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
    done < <(find "$root/core" -name '*.[ch]' | sort)
    return $bad
}

if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/core/util" "$tmp/core/nn" "$tmp/core/run" "$tmp/core/lab"
    printf '#include "util/a.h"\n' > "$tmp/core/nn/ok.c"
    printf '#include "nn/ok.h"\n#include "run/x.h"\n' > "$tmp/core/lab/ok.c"
    check "$tmp" > /dev/null || { echo "check_layers: self-test: a tree that keeps the rule was refused"; exit 1; }
    for v in 'nn/up.c:#include "run/config.h"' 'util/up.c:#include "nn/model.h"' \
             'run/up.c:#include "lab/store.h"' 'nn/flat.c:#include "model.h"' 'nn/odd.c:#include "misc/x.h"'; do
        f=${v%%:*}
        printf '%s\n' "${v#*:}" > "$tmp/core/$f"
        if check "$tmp" > /dev/null; then
            echo "check_layers: self-test: core/$f with ${v#*:} was not refused"
            exit 1
        fi
        rm "$tmp/core/$f"
    done
    mkdir -p "$tmp/core/stray"
    printf 'int x;\n' > "$tmp/core/stray/s.c"
    if check "$tmp" > /dev/null; then echo "check_layers: self-test: a file outside the layer folders was not refused"; exit 1; fi
    echo "check_layers: self-test OK (6 planted violations refused)"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root"; then
    echo "check_layers: OK ($(find "$root/core" -name '*.[ch]' | wc -l) files keep util < nn < run < lab)"
else
    echo "check_layers: the layers above are broken (docs/layout.md)"
    exit 1
fi
