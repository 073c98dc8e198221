#!/usr/bin/env bash
# The solowg .apk with the real apk-tools 3.0.6 (OpenWrt 25.12's package manager, built from
# ../shared/openwrt-src by tests/openwrt-real/build.sh): a local repository whose
# packages.adb is signed with an ECDSA key (apk mkndx --sign-key, as OpenWrt signs its
# feeds), the public key in the root's /etc/apk/keys; then update, add, upgrade to the next
# build (another daemon binary, the next release, a changed default /etc/config/solowg),
# del, add again; and an index changed after signing refused. The root is offline, as in an
# image build: IPKG_INSTROOT is set and passed to the scripts (--preserve-env), which run
# without chroot (--force-no-chroot; the root has no shell of its own), so they take
# base-files' offline branch. base-files' /lib/functions.sh is tests/openwrt/base-files-standin.sh
# (base-files is not among the shared sources). libc and kmod-tun are empty packages made
# by `apk mkpkg`.
# The live router's side of an apk upgrade (no pre-deinstall, then post-upgrade, which
# restarts the running daemon) is checked by tests/openwrt/upgrade.sh's live part.
#
#   usage: tests/openwrt/upgrade-apk.sh   ARCH=mipsel_24kc; APK=/path/to/apk for another apk
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
arch=${ARCH:-mipsel_24kc}
if [[ -z ${APK:-} ]]; then
	prefix=$(bash "$repo/tests/openwrt-real/build.sh" apk-tools | tail -n 1) ||
		{ echo "FAIL: apk-tools does not build (above)"; exit 1; }
	APK=$prefix/bin/apk
fi
work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
# shellcheck source=tests/openwrt/check.sh
. "$here/check.sh"
sha() { sha256sum <"$1" | cut -d' ' -f1; }

# ---- two builds: the second with another daemon binary, release and default config
binary=$repo/target/openwrt/$arch/solowg
args=(solowg --arch "$arch" --format apk)
if [[ ! -f $binary ]]; then
	echo "NOTICE: $binary not built; packaging a stand-in file as /usr/sbin/solowg"
	binary=$work/solowg
	echo "not a binary" >"$binary"
	args+=(--allow-non-elf)
fi
cp "$binary" "$work/solowg.v2"
printf '\n' >>"$work/solowg.v2"
release=$(sed -n 's/^PKG_RELEASE:=[[:space:]]*//p' "$repo/openwrt/feed/net/solowg/Makefile")
mkdir -p "$work/src2"
cp -a "$repo/files" "$work/src2/"
printf '\n# shipped with release %s\n' "$((release + 1))" >>"$work/src2/files/solowg.config"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/key.pem" 2>/dev/null
openssl ec -in "$work/key.pem" -pubout -out "$work/key.pub.pem" 2>/dev/null
for v in 1 2; do
	d=$work/feed$v
	mkdir -p "$d"
	"$APK" mkpkg -I name:libc -I version:1 -I arch:noarch -o "$d/libc-1.apk"
	"$APK" mkpkg -I name:kmod-tun -I version:1 -I arch:noarch -o "$d/kmod-tun-1.apk"
done
python3 "$repo/openwrt/mkpkg.py" "${args[@]}" --binary "$binary" --out "$work/feed1" >/dev/null
python3 "$repo/openwrt/mkpkg.py" "${args[@]}" --binary "$work/solowg.v2" --out "$work/feed2" \
	--release "$((release + 1))" --src "$work/src2" >/dev/null
for v in 1 2; do
	# The packages are unsigned, as OpenWrt's are: the signed index carries their hashes.
	"$APK" mkndx --allow-untrusted --sign-key "$work/key.pem" -o "$work/feed$v/packages.adb" \
		"$work/feed$v"/*.apk >/dev/null
	python3 "$repo/openwrt/mkpkg.py" --check "$work"/feed$v/solowg-*.apk --extract "$work/v$v.d" >/dev/null
done

# ---- the offline root
root=$work/root
mkdir -p "$root"/{etc/apk/keys,etc/config,etc/rc.d,lib,tmp,var/lock}
cp "$work/key.pub.pem" "$root/etc/apk/keys/solowg-test.pem"
echo "$arch" >"$root/etc/apk/arch"
cp "$here/base-files-standin.sh" "$root/lib/functions.sh"
printf 'root:x:0:0:root:/root:/bin/ash\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'root:::0:99999:7:::\n' >"$root/etc/shadow"
printf "config interface 'loopback'\n\toption device 'lo'\n" >"$root/etc/config/network"
network_sha=$(sha "$root/etc/config/network")
repo_of() { echo "file://$work/feed$1/packages.adb" >"$root/etc/apk/repositories"; }
run_apk() { # run_apk ARGS...: apk on the root, output in apk.out (and printed on failure)
	if ! IPKG_INSTROOT=$root "$APK" --root "$root" --force-no-chroot --preserve-env --no-progress \
		--no-interactive "$@" >"$work/apk.out" 2>&1; then
		check "apk $* exits 0" 0 1
		cat "$work/apk.out"
	fi
}
files_of() { (cd "$work/$1.d" && find . -type f -not -path './lib/apk/*' -printf '/%P\n' | LC_ALL=C sort); }
present() { local f; for f in $(files_of "$1"); do [[ -e $root$f ]] && echo "$f"; done; }
links() { (cd "$root/etc/rc.d" && find . -name '*solowg' -printf '%P -> %l\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'); }
want_links="K90solowg -> ../init.d/solowg S19solowg -> ../init.d/solowg"
installed() { # installed STEP v1|v2
	check "$1.files" "$(files_of "$2")" "$(present "$2")"
	check "$1.version" "$(sed -n 's/^version //p' <(python3 "$repo/openwrt/mkpkg.py" --check "$work"/feed"${2#v}"/solowg-*.apk))" \
		"$(awk '/^P:solowg$/ {p = 1} p && /^V:/ {print substr($0, 3); exit}' "$root/lib/apk/db/installed")"
	check "$1.daemon-is-$2's" "$(sha "$work/$2.d/usr/sbin/solowg")" "$(sha "$root/usr/sbin/solowg")"
	check "$1.rc.d" "$want_links" "$(links)"
	check "$1.user-once" "1 1" "$(grep -c '^solowg:' "$root/etc/passwd") $(grep -c '^solowg:' "$root/etc/group")"
	check "$1.network-untouched" "$network_sha" "$(sha "$root/etc/config/network")"
}

repo_of 1
run_apk add --initdb solowg
check add.signed-index "yes" "$(grep -q 'OK: ' "$work/apk.out" && ! grep -qi untrusted "$work/apk.out" && echo yes)"
installed add v1
check add.post-install-ran "yes" "$(grep -q 'Executing solowg-.*post-install' "$work/apk.out" && echo yes)"

# An edited /etc/config/solowg survives the upgrade; apk writes the new default beside it.
sed -i "s/option log_level 'info'/option log_level 'verbose'/" "$root/etc/config/solowg"
cp "$root/etc/config/solowg" "$work/edited"
repo_of 2
run_apk update
run_apk upgrade
installed upgrade v2
check upgrade.post-upgrade-ran "yes" "$(grep -q 'Executing solowg-.*post-upgrade' "$work/apk.out" && echo yes)"
check upgrade.no-pre-deinstall "" "$(grep 'pre-deinstall' "$work/apk.out" || true)"
check upgrade.config-kept "$(sha "$work/edited")" "$(sha "$root/etc/config/solowg")"
check upgrade.new-config-beside "$(sha "$work/v2.d/etc/config/solowg")" "$(sha "$root/etc/config/solowg.apk-new" 2>/dev/null || echo none)"

run_apk del solowg
check del.rc.d "" "$(links)"
check del.files "/etc/config/solowg" "$(present v2)"
check del.user-kept "1" "$(grep -c '^solowg:' "$root/etc/passwd")"
run_apk add solowg
installed readd v2

# An index changed after it was signed is refused (its signature, or its structure, fails),
# and so is one signed with a key the root does not hold.
refused() { # refused DIR: apk update's warning for DIR's index
	echo "file://$1/packages.adb" >"$root/etc/apk/repositories"
	IPKG_INSTROOT=$root "$APK" --root "$root" --force-no-chroot --no-progress update >"$work/apk.out" 2>&1 || true
	# "WARNING: opening <url>: <reason>": a bad signature, or a structure that no longer parses
	sed -n "s|^WARNING: opening file://$1/packages.adb: ||p" "$work/apk.out" | head -n1
}
cp -r "$work/feed2" "$work/feed3"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xFF; open(p, "wb").write(b)' "$work/feed3/packages.adb"
check tampered.refused "yes" "$([[ -n $(refused "$work/feed3") ]] && echo yes)"
cp -r "$work/feed2" "$work/feed4"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/other.pem" 2>/dev/null
"$APK" mkndx --allow-untrusted --sign-key "$work/other.pem" -o "$work/feed4/packages.adb" "$work/feed4"/*.apk >/dev/null
check other-key.refused "UNTRUSTED signature" "$(refused "$work/feed4")"

checks_done
