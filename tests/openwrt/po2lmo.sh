#!/usr/bin/env bash
# Builds LuCI's po2lmo (the .po to .lmo compiler luci.mk runs for luci-i18n-* packages) from
# ../shared/openwrt-src/luci.tar.gz (modules/luci-base/src), as luci-base/host builds it:
# lemon turns lib/plural_formula.y into C, then po2lmo.c, lib/lmo.c and the parser are
# linked. Cached under target/openwrt-real/ by the archive's and this script's SHA-256.
# Prints the program's path; fails with the compiler's message.
#
#   usage: tests/openwrt/po2lmo.sh
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
archive=${OPENWRT_SRC:-$repo/../shared/openwrt-src}/luci.tar.gz
cache=${OPENWRT_REAL_CACHE:-$repo/target/openwrt-real}
[[ -f $archive ]] || { echo "po2lmo: $archive missing" >&2; exit 1; }
key=$(cat "$archive" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
out=$cache/po2lmo-$key
if [[ ! -x $out/po2lmo ]]; then
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	tar -xzf "$archive" -C "$out.tmp" luci/modules/luci-base/src
	src=$out.tmp/luci/modules/luci-base/src
	if ! log=$(cd "$src" && {
		cc -std=gnu17 -o contrib/lemon contrib/lemon.c &&
			./contrib/lemon -q lib/plural_formula.y &&
			cc -O2 -DNDEBUG -o po2lmo po2lmo.c lib/lmo.c lib/plural_formula.c
	} 2>&1); then
		echo "po2lmo: the build from $archive failed:" >&2
		echo "$log" >&2
		exit 1
	fi
	cp "$src/po2lmo" "$out.tmp/po2lmo"
	rm -rf "$out.tmp/luci" "$out"
	mv "$out.tmp" "$out"
fi
echo "$out/po2lmo"
