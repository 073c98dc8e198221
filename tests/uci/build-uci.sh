#!/usr/bin/env bash
# Builds OpenWrt's `uci` command-line tool, statically linked against libuci, from the C
# sources that the crates.io crate libuci-sys ships (its uci/ and libubox/ directories).
# tests/uci.rs runs it against solowg's UCI reader (set SOLOWG_UCI_BIN=OUTDIR/uci).
#
#   tests/uci/build-uci.sh OUTDIR [LIBUCI_SYS_SOURCE_DIR]
#
# Without a source directory the crate is fetched with cargo (a throwaway manifest in a temp
# dir) and taken from cargo's registry. Needs cargo, cc and ar; no cmake, no json-c.
set -euo pipefail

crate_version=1.0.5
out=${1:?usage: $0 OUTDIR [libuci-sys source dir]}
src=${2:-}
cc=${CC:-cc}

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

if [[ -z $src ]]; then
	cargo_home=${CARGO_HOME:-$HOME/.cargo}
	mkdir -p "$work/fetch/src"
	cat >"$work/fetch/Cargo.toml" <<TOML
[package]
name = "fetch-libuci-sys"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
libuci-sys = "=$crate_version"
TOML
	: >"$work/fetch/src/lib.rs"
	# Offline first, so that a warm cache needs no network.
	(cd "$work/fetch" && { cargo fetch --offline -q 2>/dev/null || cargo fetch -q; })
	for d in "$cargo_home"/registry/src/*/"libuci-sys-$crate_version"; do
		[[ -f $d/uci/file.c ]] && src=$d
	done
	if [[ -z $src ]]; then
		# cargo fetch leaves the .crate (a gzipped tar) in the cache; unpack it ourselves.
		for f in "$cargo_home"/registry/cache/*/"libuci-sys-$crate_version.crate"; do
			[[ -f $f ]] || continue
			tar -xzf "$f" -C "$work"
			src=$work/libuci-sys-$crate_version
		done
	fi
fi
if [[ ! -f $src/uci/file.c || ! -f $src/libubox/blobmsg.c ]]; then
	echo "build-uci.sh: libuci-sys $crate_version sources not found (${src:-nothing fetched})" >&2
	exit 1
fi

# CMake would generate uci_config.h from uci_config.h.in; with its debug switches off the
# header defines nothing. The uci sources include <libubox/...>, found from the crate's root.
mkdir -p "$work/include" "$work/obj" "$out"
: >"$work/include/uci_config.h"
cflags=(-O1 -std=gnu99 -w -DUCI_PREFIX=\"/usr\" -I"$work/include" -I"$src/uci" -I"$src")
objs=()
for f in libubox/blob.c libubox/blobmsg.c uci/libuci.c uci/file.c uci/util.c uci/delta.c \
	uci/parse.c uci/blob.c; do
	o=$work/obj/${f//\//_}.o
	"$cc" "${cflags[@]}" -c "$src/$f" -o "$o"
	objs+=("$o")
done
ar rcs "$work/libuci.a" "${objs[@]}"
"$cc" "${cflags[@]}" "$src/uci/cli.c" "$work/libuci.a" -o "$out/uci.tmp"
mv -f "$out/uci.tmp" "$out/uci"
echo "built $out/uci from $src"

# jshn (libubox's JSON tool for shell scripts, which netifd's handler library uses) and its
# jshn.sh, for the protocol handler test; needs json-c (libjson-c-dev).
if [[ -f $src/libubox/jshn.c && -f /usr/include/json-c/json.h ]]; then
	"$cc" -O1 -std=gnu99 -w -I"$work/include" -I"$src" -I/usr/include/json-c -DJSONC \
		"$src/libubox/jshn.c" "$src/libubox/blobmsg_json.c" "$src/libubox/blobmsg.c" \
		"$src/libubox/blob.c" "$src/libubox/avl.c" "$src/libubox/avl-cmp.c" \
		-ljson-c -o "$out/jshn.tmp"
	mv -f "$out/jshn.tmp" "$out/jshn"
	cp "$src/libubox/sh/jshn.sh" "$out/jshn.sh"
	echo "built $out/jshn and $out/jshn.sh"
fi
