#!/usr/bin/env bash
# check_sizes.sh — files and functions stay small (docs/layout.md).
#
#   no .c or .h file under core/, cli/, tests/ or bench/ over MAX_FILE lines
#   no function (or Criterion Test) over MAX_FUNC lines, from the first line
#   of its signature to its closing brace, unless ALLOW below names it with
#   the reason it stays whole
#
# Functions are found by their braces (comments, strings and preprocessor
# lines skipped): a top-level "(...) {" that is not an initializer, struct,
# enum or union is a function.  Exit 1 naming every file and function over
# its limit (and every ALLOW entry that no longer matches a long function:
# the list stays short and true), 0 when the tree keeps the limits.
#
#   tools/check_sizes.sh [ROOT]       check ROOT (default: the repository)
#   tools/check_sizes.sh --self-test  plant violations in a scratch tree and
#                                     require that each one is refused
set -euo pipefail

MAX_FILE=1000
MAX_FUNC=100

# FILE:FUNCTION|why it stays one function.  Keep this list short: a function
# earns a place only when splitting it would make it harder to check.
ALLOW=(
    "core/nn/model.c:model_backward|the backward pass of the whole model: each step undoes one step of model_forward, in reverse order and in one place, so that it can be read against the forward line by line (the finite-difference tests pin every gradient); core/nn is not touched for size alone"
)

# The functions of the files on stdin (one path a line) as
# "FILE START END LINES NAME".
functions() {
    xargs -r awk '
    FNR == 1 { depth = 0; incom = 0; head = ""; inpp = 0; hstart = 0; infn = 0 }
    {
        line = $0
        if (inpp || (!incom && line ~ /^[ \t]*#/)) { inpp = (line ~ /\\$/); next }
        out = ""; n = length(line); i = 1
        while (i <= n) {
            c = substr(line, i, 1); c2 = substr(line, i, 2)
            if (incom) { if (c2 == "*/") { incom = 0; i += 2 } else i++; continue }
            if (c2 == "/*") { incom = 1; i += 2; continue }
            if (c2 == "//") break
            if (depth == 0 && hstart == 0 && c !~ /[ \t]/) hstart = FNR
            if (c == "\"" || c == "'"'"'") {
                q = c; i++
                while (i <= n) { d = substr(line, i, 1); if (d == "\\") { i += 2; continue } if (d == q) break; i++ }
                i++; out = out q q; continue
            }
            if (c == "{") {
                if (depth == 0) {
                    h = head out
                    infn = h ~ /\)[ \t]*$/ && h !~ /=/ && h !~ /^[ \t]*(typedef|struct|enum|union)[ \t]/
                    if (infn) {
                        start = hstart
                        if (h ~ /^[ \t]*(Test|ParameterizedTest|Theory)[ \t]*\(/) {
                            name = h; gsub(/[ \t]+/, "", name); sub(/\)[^)]*$/, ")", name)
                        } else { s = h; sub(/\(.*/, "", s); m = split(s, w, /[ \t*]+/); name = w[m] }
                    }
                }
                depth++
            } else if (c == "}") {
                depth--
                if (depth == 0) {
                    if (infn) print FILENAME, start, FNR, FNR - start + 1, name
                    infn = 0; head = ""; out = ""; hstart = 0; i++; continue
                }
            } else if (c == ";" && depth == 0) { head = ""; out = ""; hstart = 0; i++; continue }
            out = out c; i++
        }
        if (depth == 0) head = head out " "
    }'
}

check() {
    local root=$1 bad=0 f n file start end len name rel key entry used=()
    local files
    files=$(cd "$root" && find core cli tests bench -name '*.[ch]' 2>/dev/null | sort)
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        n=$(wc -l < "$root/$f")
        if [ "$n" -gt "$MAX_FILE" ]; then
            echo "$f: $n lines, more than $MAX_FILE: split it by responsibility"
            bad=1
        fi
    done <<< "$files"
    while read -r file start end len name; do
        [ "$len" -gt "$MAX_FUNC" ] || continue
        key="$file:$name"
        entry=""
        for a in "${ALLOW[@]}"; do
            [ "${a%%|*}" = "$key" ] && entry=$a
        done
        if [ -n "$entry" ]; then
            used+=("$key")
        else
            echo "$file:$start: $name: $len lines, more than $MAX_FUNC: shorten it (or add it to ALLOW in tools/check_sizes.sh with the reason it stays whole)"
            bad=1
        fi
    done < <(cd "$root" && functions <<< "$files")
    for a in "${ALLOW[@]}"; do
        key=${a%%|*}
        case " ${used[*]-} " in
        *" $key "*) ;;
        *)
            echo "tools/check_sizes.sh: ALLOW names $key, which is not a function over $MAX_FUNC lines: remove the entry"
            bad=1
            ;;
        esac
    done
    return $bad
}

# A function of n lines: a signature, n - 2 body lines with a string that
# holds braces and a comment that holds one, the closing brace.
plant_function() {
    local name=$1 n=$2 i
    printf 'static int %s(int x) {\n' "$name"
    printf '    const char *s = "{ not a block"; /* } nor this */\n'
    for ((i = 3; i < n; i++)); do printf '    x += %d;\n' "$i"; done
    printf '}\n'
}

if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/core/nn" "$tmp/core/lab" "$tmp/cli" "$tmp/tests" "$tmp/bench"
    { plant_function ok "$MAX_FUNC"; plant_function model_backward $((MAX_FUNC + 20)); } > "$tmp/core/nn/model.c"
    printf 'static const int t[] = {\n%s};\n' "$(for ((i = 0; i < MAX_FUNC + 5; i++)); do printf '    %d,\n' $i; done)" \
        > "$tmp/core/lab/table.c"
    check "$tmp" > /dev/null || { echo "check_sizes: self-test: a tree that keeps the limits was refused"; check "$tmp"; exit 1; }
    planted=0
    refuse() { # what, file: the tree with file planted must be refused
        if check "$tmp" > /dev/null; then
            echo "check_sizes: self-test: $1 was not refused"
            exit 1
        fi
        rm -f "$2"
        planted=$((planted + 1))
    }
    plant_function long $((MAX_FUNC + 1)) > "$tmp/cli/long.c"
    refuse "a function of $((MAX_FUNC + 1)) lines in cli/" "$tmp/cli/long.c"
    { printf 'Test(suite, long_test) {\n'; for ((i = 0; i < MAX_FUNC; i++)); do printf '    cr_assert(1);\n'; done; printf '}\n'; } \
        > "$tmp/tests/test_long.c"
    refuse "a Criterion test of $((MAX_FUNC + 2)) lines" "$tmp/tests/test_long.c"
    plant_function model_backward $((MAX_FUNC + 1)) > "$tmp/core/lab/other.c"
    refuse "an allowed name in another file" "$tmp/core/lab/other.c"
    for ((i = 0; i <= MAX_FILE; i++)); do printf 'int v%d;\n' "$i"; done > "$tmp/bench/big.h"
    refuse "a header of $((MAX_FILE + 1)) lines" "$tmp/bench/big.h"
    cp "$tmp/core/nn/model.c" "$tmp/model.c.keep"
    plant_function model_backward 10 > "$tmp/core/nn/model.c"
    refuse "an ALLOW entry whose function is short now" "$tmp/core/nn/model.c"
    cp "$tmp/model.c.keep" "$tmp/core/nn/model.c"
    check "$tmp" > /dev/null || { echo "check_sizes: self-test: the tree was not restored"; exit 1; }
    echo "check_sizes: self-test OK ($planted planted violations refused)"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root"; then
    echo "check_sizes: OK (files <= $MAX_FILE lines, functions <= $MAX_FUNC lines but ${#ALLOW[@]} allowed)"
else
    echo "check_sizes: the sizes above are over the limits (tools/check_sizes.sh)"
    exit 1
fi
