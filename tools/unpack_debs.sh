#!/usr/bin/env bash
# Unpack Debian packages from the test repository into a folder the sandbox's hosts mount read-only
# (tools/sandbox.sh): the node exporter's and iperf3's programs with their libraries.
#   tools/unpack_debs.sh DIR POOL PACKAGE...
# A running host's bind mount holds on to the folder itself, not to its path: a folder removed and
# made again under the same name leaves the hosts an empty, deleted one (a second `make sandbox`
# then found no iperf3 on its hosts). So DIR is kept: nothing is done when the same packages are
# already unpacked in it (a stamp of their hashes), and otherwise it is emptied and filled in place.
set -euo pipefail
dir=$1 pool=$2
shift 2
debs=()
for p in "$@"; do
  found=("$pool/${p}"_*.deb)
  [[ -f ${found[0]} ]] || { echo "unpack_debs: no $p package in $pool" >&2; exit 1; }
  debs+=("${found[@]}")
done
stamp=$(sha256sum "${debs[@]}" | sha256sum | cut -d' ' -f1)
if [[ -f $dir/.k3-unpacked && $(cat "$dir/.k3-unpacked") == "$stamp" ]]; then
  exit 0
fi
mkdir -p "$dir"
find "$dir" -mindepth 1 -delete
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$dir"; done
echo "$stamp" >"$dir/.k3-unpacked"
echo "[debs] $dir: $* unpacked"
