#!/usr/bin/env bash
# Builds OpenWrt's own C programs from ../shared/openwrt-src/*.tar.gz for this host (Debian,
# glibc, Debian's packages only) into a cache directory, so tests can run the real netifd,
# procd, ubusd, logd, fw4 and the LuCI runtime. Each component is a recipe,
# recipes/NAME.sh, which sets DEPS (the components it links against) and defines
# recipe_build (run in the extracted source, with the helpers below). A component is rebuilt
# only when its key changes: the SHA-256 of its archive and its recipe, and the keys of its
# dependencies (a new libubox rebuilds what links it).
#   usage: tests/openwrt-real/build.sh [COMPONENT...]   (default: every recipe)
#   env:   SOLOWG_OPENWRT_CACHE  the cache (default /var/tmp/solowg-openwrt-real); its
#                                root/ is the install prefix (bin, sbin, lib, share, include)
#          SOLOWG_OPENWRT_SRC    the archives (default ../shared/openwrt-src from the repo)
#          JOBS                  make's -j (default 2)
# Prints the prefix on its last line. A build that fails names the component and shows the
# end of its log.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
CACHE=${SOLOWG_OPENWRT_CACHE:-/var/tmp/solowg-openwrt-real}
SRC=${SOLOWG_OPENWRT_SRC:-$repo/../shared/openwrt-src}
JOBS=${JOBS:-2}
PREFIX=$CACHE/root
export CACHE PREFIX JOBS repo

[[ -d $SRC ]] || {
	echo "build.sh: no source archives in $SRC (SOLOWG_OPENWRT_SRC)" >&2
	exit 1
}
mkdir -p "$CACHE/stamps" "$CACHE/logs" "$PREFIX"
# One build at a time per cache: a second run waits, then finds everything built.
exec 9>"$CACHE/lock"
flock -w 1800 9 || {
	echo "build.sh: $CACHE is locked by another build for 30 min" >&2
	exit 1
}

# Helpers for recipes. Installed programs find the cache's libraries through their RPATH.
# In the source tree, as OpenWrt builds them: some generate headers with ./script.sh.
cmake_install() { # [cmake -D options...]
	cmake -S . -B . -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_PREFIX_PATH="$PREFIX" \
		-DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_RPATH="$PREFIX/lib" \
		-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_BUILD_TYPE=None "$@"
	nice -n 10 make -j"$JOBS"
	make install
}
export -f cmake_install
# compat_h: prints the -include flag of a header with what musl has and glibc before 2.38
# lacks (strlcpy, strlcat), written on first use. It includes nothing, so that the sources'
# own feature macros still come first.
compat_h() {
	local h=$PREFIX/include/solowg-glibc-compat.h v
	if [[ ! -f $h ]]; then
		v=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc 2\.\([0-9]*\).*/\1/p')
		if [[ -n $v && $v -lt 38 ]]; then
			cat >"$h" <<'H'
/* BSD semantics: copy at most size-1 bytes, always terminate, return strlen(src). */
static inline __SIZE_TYPE__ strlcpy(char *dst, const char *src, __SIZE_TYPE__ size)
{
	__SIZE_TYPE__ n = __builtin_strlen(src);
	if (size) {
		__SIZE_TYPE__ c = n < size - 1 ? n : size - 1;
		__builtin_memcpy(dst, src, c);
		dst[c] = 0;
	}
	return n;
}
static inline __SIZE_TYPE__ strlcat(char *dst, const char *src, __SIZE_TYPE__ size)
{
	__SIZE_TYPE__ d = 0;
	while (d < size && dst[d])
		d++;
	if (d == size)
		return size + __builtin_strlen(src);
	return d + strlcpy(dst + d, src, size - d);
}
H
		else
			: >"$h"
		fi
	fi
	echo "-include $h"
}
export -f compat_h
# The cache's headers and libraries before the system's (CMake's find_* use the prefix path;
# sources that include without it need these), and compat_h below for every component.
mkdir -p "$PREFIX/include"
CFLAGS="-I$PREFIX/include $(compat_h) ${CFLAGS:-}"
export CFLAGS LDFLAGS="-L$PREFIX/lib ${LDFLAGS:-}"

recipes() { local f; for f in "$here"/recipes/*.sh; do basename "$f" .sh; done; }
recipe_file() { echo "$here/recipes/$1.sh"; }
# deps NAME: the DEPS a recipe declares.
deps() {
	# shellcheck disable=SC1090 # recipes are found at run time
	(DEPS=; . "$(recipe_file "$1")"; echo "$DEPS")
}
# archive NAME: a recipe may build from another component's archive (ARCHIVE=), or from
# none (ARCHIVE= empty: it fetches or writes what it builds; its key is its recipe).
archive() {
	# shellcheck disable=SC1090
	(ARCHIVE=$1; . "$(recipe_file "$1")"; [[ -z $ARCHIVE ]] || echo "$SRC/$ARCHIVE.tar.gz")
}
declare -A KEY=()
# key NAME: sets KEY[NAME] (memoised, in this shell): archive + recipe + dependencies' keys.
key() {
	local n=$1 d k
	[[ -n ${KEY[$n]:-} ]] && return
	# shellcheck disable=SC2046 # no archive: no word
	k=$(sha256sum $(archive "$n") "$(recipe_file "$n")" | cut -c1-64)
	for d in $(deps "$n"); do
		key "$d"
		k+=" ${KEY[$d]}"
	done
	KEY[$n]=$(sha256sum <<<"$k" | cut -c1-64)
}

# The requested components and their dependencies, dependencies first.
declare -A seen=()
order=()
visit() {
	local d
	[[ -f $(recipe_file "$1") ]] || {
		echo "build.sh: no recipe for '$1' (have: $(recipes | tr '\n' ' '))" >&2
		exit 1
	}
	[[ -n ${seen[$1]:-} ]] && return
	seen[$1]=1
	for d in $(deps "$1"); do visit "$d"; done
	order+=("$1")
}
want=("$@")
[[ ${#want[@]} -gt 0 ]] || mapfile -t want < <(recipes)
for c in "${want[@]}"; do visit "$c"; done

total_start=$SECONDS
for c in "${order[@]}"; do
	key "$c"
	k=${KEY[$c]}
	if [[ -f $CACHE/stamps/$c && $(cat "$CACHE/stamps/$c") == "$k" ]]; then
		echo "build.sh: $c: cached"
		continue
	fi
	a=$(archive "$c")
	[[ -z $a || -f $a ]] || {
		echo "build.sh: $c: archive $a missing" >&2
		exit 1
	}
	start=$SECONDS
	work=$CACHE/work/$c
	rm -rf "$work" "$CACHE/stamps/$c"
	mkdir -p "$work"
	log=$CACHE/logs/$c.log
	echo "build.sh: $c: building (log: $log)"
	# Not in a condition: there errexit would be off inside, and a failed step pass unseen.
	set +e
	# shellcheck disable=SC1090
	(
		set -euo pipefail
		if [[ -n $a ]]; then
			tar xzf "$a" -C "$work"
			cd "$work"/*/
		else
			cd "$work"
		fi
		. "$(recipe_file "$c")"
		recipe_build
	) >"$log" 2>&1 </dev/null
	rc=$?
	set -e
	if [[ $rc -ne 0 ]]; then
		echo "build.sh: FAILED to build $c${a:+ from $a}; the end of $log:" >&2
		grep -nE 'error|Error|ERROR' "$log" | sort -u -t: -k2 | sort -n | tail -n 15 >&2 || true
		echo "--- last lines:" >&2
		tail -n 25 "$log" >&2
		exit 1
	fi
	echo "$k" >"$CACHE/stamps/$c"
	rm -rf "$work"
	echo "build.sh: $c: built in $((SECONDS - start)) s"
done
echo "build.sh: ${#order[@]} components ready in $((SECONDS - total_start)) s"
echo "$PREFIX"
