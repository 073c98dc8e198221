#!/usr/bin/env bash
# Builds OpenWrt's package tools from ../shared/openwrt-src for this host, each by its recipe
# in tests/openwrt-real/recipes/NAME.sh, into a cache keyed by the archive's, the recipe's and
# its dependencies' SHA-256: target/openwrt-real/NAME-KEY/ (OPENWRT_REAL_CACHE to move it).
# A recipe sets deps=(NAMES) and defines build (run in the unpacked source with $prefix, $jobs
# and $dep_NAME set) and check (the installed program answers). Debian's packages only: cmake,
# pkg-config, meson, ninja-build, libssl-dev, zlib1g-dev, libjson-c-dev (installed when
# missing, as root). A component that does not build stops everything with its name and the
# build's last lines.
#
#   usage: tests/openwrt-real/build-pkgtools.sh NAME...    prints NAME=PREFIX per line
#   NAME: opkg-lede usign apk-tools libubox
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
srcdir=${OPENWRT_SRC:-$repo/../shared/openwrt-src}
cache=${OPENWRT_REAL_CACHE:-$repo/target/openwrt-real}
jobs=2
[[ $# -ge 1 ]] || { sed -n 's/^#   //p' "${BASH_SOURCE[0]}" >&2; exit 2; }

need=()
for t in cmake:cmake pkg-config:pkg-config meson:meson ninja:ninja-build cc:gcc; do
	command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
[[ -f /usr/include/openssl/evp.h ]] || need+=(libssl-dev)
[[ -f /usr/include/zlib.h ]] || need+=(zlib1g-dev)
[[ -f /usr/include/json-c/json.h ]] || need+=(libjson-c-dev)
if [[ ${#need[@]} -gt 0 ]]; then
	sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo)
	echo "build-pkgtools: installing ${need[*]}" >&2
	"${sudo[@]}" apt-get update -q >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null >&2
fi

declare -A key_of prefix_of
# component NAME: builds NAME (after its deps) unless cached; sets key_of and prefix_of.
component() {
	local name=$1 recipe=$here/recipes/$1.sh archive=$srcdir/$1.tar.gz d key dir log
	[[ -z ${prefix_of[$name]:-} ]] || return 0
	[[ -f $recipe ]] || { echo "build-pkgtools: no recipe $recipe" >&2; exit 1; }
	[[ -f $archive ]] || { echo "build-pkgtools: $name: $archive missing" >&2; exit 1; }
	local deps=()
	# shellcheck disable=SC1090 # the component's recipe
	deps=() && source "$recipe"
	local my_deps=("${deps[@]}")
	for d in "${my_deps[@]}"; do component "$d"; done
	key=$({
		sha256sum <"$archive"
		sha256sum <"$recipe"
		for d in "${my_deps[@]}"; do echo "${key_of[$d]}"; done
	} | sha256sum | cut -c1-16)
	dir=$cache/$name-$key
	key_of[$name]=$key
	prefix_of[$name]=$dir
	[[ -f $dir/.built ]] && return 0
	echo "build-pkgtools: building $name ($(basename "$archive"), key $key)" >&2
	rm -rf "$dir" "$dir.src"
	mkdir -p "$dir.src"
	tar -xzf "$archive" -C "$dir.src" --strip-components=1
	log=$dir.log
	# shellcheck disable=SC1090
	if ! (
		source "$recipe"
		prefix=$dir
		for d in "${my_deps[@]}"; do declare "dep_${d//-/_}=${prefix_of[$d]}"; done
		cd "$dir.src"
		# The recipe's build in a shell of its own, at a lower priority, with its variables.
		script="$(declare -f build)"$'\n'"$(declare -p prefix jobs)"$'\n'
		for d in "${my_deps[@]}"; do script+="$(declare -p "dep_${d//-/_}")"$'\n'; done
		nice -n 10 bash -euo pipefail -c "${script}build"
	) >"$log" 2>&1; then
		echo "build-pkgtools: FAIL: $name does not build; the last lines of $log:" >&2
		tail -n 25 "$log" >&2
		exit 1
	fi
	# shellcheck disable=SC1090
	if ! (source "$recipe" && prefix=$dir && check) >>"$log" 2>&1; then
		echo "build-pkgtools: FAIL: $name built but its check failed; see $log" >&2
		tail -n 10 "$log" >&2
		exit 1
	fi
	rm -rf "$dir.src"
	touch "$dir/.built"
}

for n in "$@"; do component "$n"; done
for n in "$@"; do echo "$n=${prefix_of[$n]}"; done
