#!/usr/bin/env bash
# check_layers.sh — the include rule of the core's layers (docs/layout.md).
#
#   util (0) < nn (1) < run (2) < lab (3) < cli, tests (anything)
#
# A file under core/L may include "M/x.h" only when M's rank <= L's rank, and
# must name project headers by their folder ("nn/model.h", never "model.h"),
# so the rule can be read off the include line.
#
# Inside lab, its rooms: core/lab/report/, sweep/, bench/, merge/ (a folder
# under core/lab is a room).  A room's files may include their own room's
# headers and the shared ones at core/lab/ (stats.h, paper.h, export.h),
# never another room's; the shared files include no room.  Inside report/,
# the toolkit (report/kit/) sits below the sections: it may include its own
# headers and the public lab/report/report.h, never report_int.h (the
# sections') or any other header of report/.
#
# Exit 1 naming every violation (file:line: the include and why), 0 when the
# tree keeps the rules.
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

# lab_room_check FILE ROOT INC LINE: the rooms of lab (above); 1 naming the
# violation, else 0.
lab_room_check() {
    local f=$1 root=$2 inc=$3 ln=$4 rel room irel iroom
    rel=${f#"$root"/core/}
    [ "${rel%%/*}" = lab ] || return 0
    case "$inc" in lab/*) ;; *) return 0 ;; esac
    rel=${rel#lab/}
    irel=${inc#lab/}
    room=root iroom=root
    case "$rel" in */*) room=${rel%%/*} ;; esac
    case "$irel" in */*) iroom=${irel%%/*} ;; esac
    if [ "$iroom" != root ] && [ "$iroom" != "$room" ]; then
        if [ "$room" = root ]; then
            echo "$f:$ln: #include \"$inc\": the shared files of lab include no room ($iroom)"
        else
            echo "$f:$ln: #include \"$inc\": lab room $room may not include room $iroom"
        fi
        return 1
    fi
    case "$rel" in
    report/kit/*)
        case "$irel" in
        report/kit/* | report/report.h) ;;
        report/*)
            echo "$f:$ln: #include \"$inc\": the report's toolkit (report/kit) may not include the sections' headers"
            return 1
            ;;
        esac
        ;;
    esac
    return 0
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
                lab_room_check "$f" "$root" "$inc" "${line%%:*}" || bad=1
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
    printf '#include "nn/ok.h"\n#include "run/x.h"\n#include "lab/stats.h"\n' > "$tmp/core/lab/ok.c"
    mkdir -p "$tmp/core/lab/report/kit" "$tmp/core/lab/sweep"
    printf '#include "lab/stats.h"\n#include "lab/report/kit/k.h"\n#include "lab/report/report_int.h"\n' \
        > "$tmp/core/lab/report/ok.c"
    printf '#include "lab/report/kit/k.h"\n#include "lab/report/report.h"\n#include "lab/paper.h"\n' \
        > "$tmp/core/lab/report/kit/ok.c"
    check "$tmp" > /dev/null || { echo "check_layers: self-test: a tree that keeps the rule was refused"; exit 1; }
    for v in 'nn/up.c:#include "run/config.h"' 'util/up.c:#include "nn/model.h"' \
             'run/up.c:#include "lab/store.h"' 'nn/flat.c:#include "model.h"' 'nn/odd.c:#include "misc/x.h"' \
             'lab/sweep/across.c:#include "lab/report/report.h"' 'lab/shared.c:#include "lab/bench/bench.h"' \
             'lab/report/kit/up.c:#include "lab/report/report_int.h"'; do
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
    echo "check_layers: self-test OK (9 planted violations refused)"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root"; then
    echo "check_layers: OK ($(find "$root/core" -name '*.[ch]' | wc -l) files keep util < nn < run < lab, lab's rooms apart, report's kit below its sections)"
else
    echo "check_layers: the layers above are broken (docs/layout.md)"
    exit 1
fi
