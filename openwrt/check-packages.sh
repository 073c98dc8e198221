#!/usr/bin/env bash
# Checks the OpenWrt packages that openwrt/mkpkg.py wrote, reading them by other means than the
# writer: tar and gzip open the .ipk files; the .apk files are read by `mkpkg.py --check`, whose
# reader shares no code with the writer, and also by `apk adbdump` when an apk-tools v3 binary
# is there (APK=/path/to/apk, or `apk` on PATH).
#
#   openwrt/check-packages.sh [DIST]     DIST: directory searched for *.ipk and *.apk (dist/)
#
# What it holds each package to: the file name OpenWrt gives it, its control data (version
# and release from the Makefiles, Depends, architecture, Installed-Size, the system user the
# package asks base-files to create: Require-User, or NAME.rusers in an .apk), the exact file list
# with modes and root ownership, file contents equal to the repository's files/ and luci-app/,
# conffiles, and maintainer scripts that parse and call base-files' hooks. An .apk must carry
# the same files, modes and contents as the .ipk beside it, plus its /lib/apk/packages lists.
# The packaged solowg must be an ELF for the package's architecture, and equal to
# target/openwrt/ARCH/solowg when that exists (openwrt/build's output). Set
# CHECK_ALLOW_NON_ELF=1 when the packaged solowg is a test stand-in, not a real binary.
# Prints one line per check and ends with "N passed, M failed"; exits 1 on any failure.
set -uo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
dist=${1:-$root/dist}
mkpkg=$root/openwrt/mkpkg.py
passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ok() { echo "ok   $pkg: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $pkg: $1"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...: one check, passed when the command succeeds
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}
same() { # same DESCRIPTION EXPECTED ACTUAL
	if [[ $2 == "$3" ]]; then ok "$1"; else bad "$1 (expected '$2', got '$3')"; fi
}

# Version as include/package-defaults.mk and luci.mk make it: PKG_VERSION-rPKG_RELEASE.
mkvar() { sed -n "s/^$2:=[[:space:]]*//p" "$1" | head -n1; }
solowg_version="$(mkvar "$root/openwrt/feed/net/solowg/Makefile" PKG_VERSION)-r$(mkvar "$root/openwrt/feed/net/solowg/Makefile" PKG_RELEASE)"
# USERID is set inside the Package/solowg define, hence indented.
solowg_userid=$(sed -n 's/^[[:space:]]*USERID:=[[:space:]]*//p' "$root/openwrt/feed/net/solowg/Makefile" | head -n1)
luci_pkg_version=$(mkvar "$root/luci-app/Makefile" PKG_VERSION)
luci_pkg_release=$(mkvar "$root/luci-app/Makefile" PKG_RELEASE)

# Expected contents, "MODE /path SOURCE" (SOURCE empty: checked elsewhere), sorted by path.
expected_files() {
	case $1 in
	solowg)
		printf '%s\n' "600 /etc/config/solowg $root/files/solowg.config" \
			"755 /etc/init.d/solowg $root/files/solowg.init" \
			"755 /lib/netifd/proto/solowg.sh $root/files/solowg.sh" \
			"644 /usr/share/acl.d/solowg.json $root/files/solowg.acl.json" \
			"755 /usr/sbin/solowg "
		;;
	luci-app-solowg)
		local f
		(cd "$root/luci-app/htdocs" && find . -type f -printf '%P\n') | while read -r f; do
			echo "644 /www/$f $root/luci-app/htdocs/$f"
		done
		(cd "$root/luci-app/root" && find . -type f -printf '%P\n') | while read -r f; do
			echo "644 /$f $root/luci-app/root/$f"
		done
		;;
	luci-i18n-solowg-*)
		# luci.mk's translation package: contents checked in check_ipk
		printf '%s\n' "644 /etc/uci-defaults/$1 " "644 /usr/lib/lua/luci/i18n/solowg.${1##*-}.lmo "
		;;
	esac | LC_ALL=C sort -k2,2
}

# The package's own postinst part, as package-pack.mk writes it from the Makefile's
# Package/NAME/postinst define (make turns $$ into $); empty when there is none.
expected_postinst_pkg() {
	local mk
	case $1 in
	solowg) mk=$root/openwrt/feed/net/solowg/Makefile ;;
	*) return 0 ;;
	esac
	sed -n "/^define Package\/$1\/postinst\$/,/^endef\$/p" "$mk" | sed '1d;$d' | sed 's/\$\$/$/g'
}

expected_userid() {
	case $1 in
	solowg) echo "$solowg_userid" ;;
	esac
}

expected_depends() {
	case $1 in
	solowg) echo "libc, kmod-tun" ;;
	luci-app-solowg) echo "libc, solowg, luci-lib-uqr" ;;
	luci-i18n-solowg-*) echo "libc, luci-app-solowg" ;;
	esac
}

# ELF class, byte order and machine for the package architecture (bytes 4, 5 and 18-19).
elf_matches() { # elf_matches FILE ARCH
	local head want
	head=$(od -An -tx1 -N20 "$1" | tr -d ' \n')
	[[ ${head:0:8} == 7f454c46 ]] || return 1
	case $2 in
	mips64el_*) want=0201:0800 ;;
	mips64_*) want=0202:0008 ;;
	mipsel_*) want=0101:0800 ;;
	mips_*) want=0102:0008 ;;
	aarch64_*) want=0201:b700 ;;
	arm_*) want=0101:2800 ;;
	x86_64) want=0201:3e00 ;;
	i386_*) want=0101:0300 ;;
	riscv64_*) want=0201:f300 ;;
	*) return 1 ;;
	esac
	[[ ${head:8:4}:${head:36:4} == "$want" ]]
}

# Compares a tree against the expected list: no file more or less, modes, contents.
check_tree() { # check_tree LABEL NAME DIR ARCH [IGNORED_PREFIX]
	local label=$1 name=$2 dir=$3 arch=$4 skip=${5:-} mode path src actual want have
	want=$(expected_files "$name" | awk '{print $2}')
	have=$(cd "$dir" && find . -type f -printf '/%P\n' | LC_ALL=C sort)
	[[ -n $skip ]] && have=$(grep -v "^$skip" <<<"$have")
	same "$label: file list" "$want" "$have"
	while read -r mode path src; do
		[[ -f $dir$path ]] || continue
		actual=$(stat -c %a "$dir$path")
		same "$label: mode of $path" "$mode" "$actual"
		if [[ -n $src ]]; then
			check "$label: $path equals the repository's" cmp -s "$src" "$dir$path"
		elif [[ $path == /usr/sbin/solowg ]]; then
			if [[ ${CHECK_ALLOW_NON_ELF:-0} == 1 ]]; then
				check "$label: $path is not empty" test -s "$dir$path"
			else
				check "$label: $path is an ELF binary for $arch" elf_matches "$dir$path" "$arch"
			fi
			if [[ -f $root/target/openwrt/$arch/solowg ]]; then
				check "$label: $path equals target/openwrt/$arch/solowg" \
					cmp -s "$root/target/openwrt/$arch/solowg" "$dir$path"
			fi
		fi
	done < <(expected_files "$name")
	have=$(cd "$dir" && find . -type d -printf '%m /%P\n' | grep -v '^755 ')
	same "$label: every directory is 0755" "" "$have"
}

names_in() { find "$1" -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'; }

adbdump_names() { # adbdump_names APK FILE NAME: apk-tools itself reads the package
	"$1" adbdump "$2" | grep -qx "  name: $3"
}

# Scripts must parse and call the base-files hooks that OpenWrt's packages call.
check_script() { # check_script LABEL FILE PATTERN...
	local label=$1 file=$2
	shift 2
	check "$label: parses as sh" sh -n "$file"
	local p
	for p in "$@"; do
		check "$label: has '$p'" grep -qF -- "$p" "$file"
	done
}

# Unpacks an .ipk into $work/NAME.ipk.d/{data,control}; quiet, so a check can reuse it.
unpack_ipk() {
	local d
	d=$work/$(basename "$1").d
	[[ -d $d ]] && return 0
	mkdir -p "$d/data" "$d/control"
	tar -xzOf "$1" ./control.tar.gz | tar -xzf - -C "$d/control" &&
		tar -xzOf "$1" ./data.tar.gz | tar -xzpf - -C "$d/data"
}

check_ipk() {
	local file=$1 base name version arch d members control size
	base=$(basename "$file" .ipk)
	name=${base%%_*}
	pkg=$base.ipk
	d=$work/$base.ipk.d
	if ! members=$(tar -tzf "$file" 2>/dev/null | tr '\n' ' '); then
		bad "outer archive is not a gzip'd tar"
		return
	fi
	same "outer members, in ipkg-build's order" "./debian-binary ./data.tar.gz ./control.tar.gz " "$members"
	same "debian-binary" "2.0" "$(tar -xzOf "$file" ./debian-binary)"
	if ! unpack_ipk "$file"; then
		bad "control.tar.gz and data.tar.gz unpack"
		return
	fi
	ok "control.tar.gz and data.tar.gz unpack"
	same "owners in data.tar.gz are 0/0" "" \
		"$(tar -tvzf <(tar -xzOf "$file" ./data.tar.gz) --numeric-owner | awk '$2 != "0/0"')"
	same "owners in control.tar.gz are 0/0" "" \
		"$(tar -tvzf <(tar -xzOf "$file" ./control.tar.gz) --numeric-owner | awk '$2 != "0/0"')"

	control=$d/control/control
	field() { sed -n "s/^$1: //p" "$control"; }
	version=$(field Version)
	arch=$(field Architecture)
	same "Package field" "$name" "$(field Package)"
	same "file name is Package_Version_Architecture.ipk" "${name}_${version}_${arch}" "$base"
	case $name in
	solowg)
		same "Version from openwrt/feed/net/solowg/Makefile" "$solowg_version" "$version"
		same "Section" "net" "$(field Section)"
		same "License from openwrt/feed/net/solowg/Makefile" "$(mkvar "$root/openwrt/feed/net/solowg/Makefile" PKG_LICENSE)" "$(field License)"
		same "Maintainer from openwrt/feed/net/solowg/Makefile" "$(mkvar "$root/openwrt/feed/net/solowg/Makefile" PKG_MAINTAINER)" "$(field Maintainer)"
		check "Architecture is a package architecture" test "$arch" != all
		check "Require-User asks for user and group solowg" \
			grep -qE '^Require-User: solowg=[0-9]+:solowg=[0-9]+$' "$control"
		;;
	luci-app-solowg)
		if [[ -n $luci_pkg_version ]]; then
			same "Version from luci-app/Makefile" "$luci_pkg_version-r${luci_pkg_release:-1}" "$version"
		else
			check "Version is luci.mk's YY.DDD.SSSSS~hash" grep -qE '^[0-9]{2}\.[0-9]{3}\.[0-9]{5}~[0-9a-f]+$' <<<"$version"
		fi
		same "Section" "luci" "$(field Section)"
		same "Architecture" "all" "$arch"
		;;
	luci-i18n-solowg-*)
		# PKG_PO_VERSION, which luci-app/Makefile sets to the app's version
		same "Version from luci-app/Makefile" "$luci_pkg_version-r${luci_pkg_release:-1}" "$version"
		same "Section" "luci" "$(field Section)"
		same "Architecture" "all" "$arch"
		;;
	*)
		bad "unknown package $name"
		return
		;;
	esac
	same "Depends" "$(expected_depends "$name")" "$(field Depends)"
	same "Require-User from openwrt/feed/net/solowg/Makefile's USERID" "$(expected_userid "$name")" "$(field Require-User)"
	check "SourceDateEpoch is a number" grep -qE '^SourceDateEpoch: [0-9]+$' "$control"
	check "Description follows the other fields" grep -qE '^Description:  [^ ]' "$control"
	size=$(tar -xzOf "$file" ./data.tar.gz | gzip -dc | wc -c)
	same "Installed-Size is data.tar's size" "$size" "$(field Installed-Size)"

	check_tree "data" "$name" "$d/data" "$arch"
	check_script "postinst" "$d/control/postinst" default_postinst IPKG_NO_SCRIPT /lib/functions.sh
	check_script "prerm" "$d/control/prerm" default_prerm /lib/functions.sh
	same "postinst and prerm are executable" "755 755" \
		"$(stat -c %a "$d/control/postinst" "$d/control/prerm" | tr '\n' ' ' | sed 's/ $//')"
	if [[ $name == solowg ]]; then
		same "conffiles" "/etc/config/solowg" "$(cat "$d/control/conffiles" 2>/dev/null)"
		same "control members" "conffiles control postinst postinst-pkg prerm" "$(names_in "$d/control")"
		check_script "postinst-pkg" "$d/control/postinst-pkg" IPKG_INSTROOT "killall -HUP ubusd" \
			get_proto_handlers "/etc/init.d/network restart" "exit 0"
		same "postinst-pkg is openwrt/feed/net/solowg/Makefile's Package/solowg/postinst" \
			"$(expected_postinst_pkg solowg)" "$(cat "$d/control/postinst-pkg" 2>/dev/null)"
		same "mode of postinst-pkg" "755" "$(stat -c %a "$d/control/postinst-pkg" 2>/dev/null)"
	elif [[ $name == luci-i18n-solowg-* ]]; then
		same "control members" "control postinst prerm" "$(names_in "$d/control")"
		check_i18n "$d/data" "$name"
	else
		check_script "postinst-pkg" "$d/control/postinst-pkg" luci-indexcache luci-modulecache \
			"/etc/init.d/rpcd reload" IPKG_INSTROOT
		same "control members" "control postinst postinst-pkg prerm" "$(names_in "$d/control")"
	fi
}

# A translation package's contents: the uci-defaults line luci.mk writes, and the catalogue
# equal to luci-app/po/LANG compiled again by LuCI's po2lmo (PO2LMO, or built by
# tests/openwrt/po2lmo.sh when ../shared/openwrt-src has LuCI).
check_i18n() { # check_i18n DATA NAME
	local lang=${2##*-} po2lmo
	same "uci-defaults adds the language to LuCI" \
		"uci set luci.languages.$lang='$(sed -n "s/^LUCI_LANG = {\"$lang\": \"\(.*\)\"}$/\1/p" "$mkpkg")'; uci commit luci" \
		"$(cat "$1/etc/uci-defaults/$2" 2>/dev/null)"
	po2lmo=${PO2LMO:-$(bash "$root/tests/openwrt/po2lmo.sh" 2>/dev/null || true)}
	if [[ -x $po2lmo ]]; then
		"$po2lmo" "$root/luci-app/po/$lang/solowg.po" "$work/$2.lmo"
		check "solowg.$lang.lmo is luci-app/po/$lang compiled by po2lmo" \
			cmp -s "$work/$2.lmo" "$1/usr/lib/lua/luci/i18n/solowg.$lang.lmo"
	else
		echo "NOTICE $pkg: no po2lmo; the catalogue's contents are not compared"
		check "solowg.$lang.lmo is not empty" test -s "$1/usr/lib/lua/luci/i18n/solowg.$lang.lmo"
	fi
}

check_apk() {
	local file=$1 base name version d listing arch sibling s apk_bin
	base=$(basename "$file" .apk)
	pkg=$base.apk
	d=$work/$base.apk.d
	if ! listing=$(python3 "$mkpkg" --check "$file" --extract "$d/data" 2>&1); then
		bad "mkpkg.py --check: $(tail -n1 <<<"$listing")"
		return
	fi
	ok "mkpkg.py --check reads it and every file's SHA-256 matches"
	get() { sed -n "s/^$1 //p" <<<"$listing"; }
	name=$(get name)
	version=$(get version)
	arch=$(get arch)
	same "file name is name-version.apk" "$name-$version" "$base"
	same "unsigned, deflate (apk's default)" "format apk-v3 compression=deflate signatures=0" "$(grep '^format ' <<<"$listing")"
	same "package id is the ADB block's SHA-256" "yes" "$(get id-matches)"
	same "provides" "$name-any" "$(get provides)"
	same "depends" "$(expected_depends "$name" | tr -d , | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" "$(get depends)"
	same "owners are root:root" "" "$(grep -E '^(dir|file) ' <<<"$listing" | awk '$4 != "root:root"')"
	case $name in
	solowg) same "version from openwrt/feed/net/solowg/Makefile" "$solowg_version" "$version" ;;
	luci-app-solowg | luci-i18n-solowg-*) same "arch" "noarch" "$arch" ;;
	*)
		bad "unknown package $name"
		return
		;;
	esac
	check_tree "files" "$name" "$d/data" "$arch" /lib/apk/packages/
	# The list is made after NAME.rusers is written and before the conffiles lists are.
	same "/lib/apk/packages/$name.list lists the other files" \
		"$(cd "$d/data" && find . -type f \( -not -path './lib/apk/packages/*' -o -path "./lib/apk/packages/$name.rusers" \) \
			-printf '/%P\n' | LC_ALL=C sort)" \
		"$(cat "$d/data/lib/apk/packages/$name.list" 2>/dev/null)"
	if [[ -n $(expected_userid "$name") ]]; then
		same "$name.rusers is openwrt/feed/net/solowg/Makefile's USERID" "$(expected_userid "$name")" \
			"$(cat "$d/data/lib/apk/packages/$name.rusers" 2>/dev/null)"
		same "mode of $name.rusers" "644" "$(stat -c %a "$d/data/lib/apk/packages/$name.rusers" 2>/dev/null)"
	else
		check "no $name.rusers" test ! -e "$d/data/lib/apk/packages/$name.rusers"
	fi
	if [[ $name == solowg ]]; then
		same "$name.conffiles" "/etc/config/solowg" "$(cat "$d/data/lib/apk/packages/$name.conffiles" 2>/dev/null)"
		same "$name.conffiles_static has the file's SHA-256" \
			"/etc/config/solowg $(sha256sum <"$d/data/etc/config/solowg" | cut -d' ' -f1)" \
			"$(cat "$d/data/lib/apk/packages/$name.conffiles_static" 2>/dev/null)"
	fi
	s=$d/data.scripts
	check_script "post-install" "$s/post-install" default_postinst add_group_and_user "pkgname=\"$name\"" IPKG_NO_SCRIPT
	check_script "post-upgrade" "$s/post-upgrade" default_postinst "PKG_UPGRADE=1"
	check_script "pre-deinstall" "$s/pre-deinstall" default_prerm "pkgname=\"$name\""
	[[ $name == luci-app-solowg ]] && check_script "post-install (LuCI part)" "$s/post-install" \
		luci-modulecache "/etc/init.d/rpcd reload"
	local part n
	part=$(expected_postinst_pkg "$name")
	if [[ -n $part ]]; then
		# package-pack.mk appends the part, without its #! line, to both scripts.
		part=$(sed 1d <<<"$part")
		n=$(wc -l <<<"$part")
		same "post-install ends with openwrt/feed/net/solowg/Makefile's Package/$name/postinst" "$part" \
			"$(tail -n "$n" "$s/post-install" 2>/dev/null)"
		same "post-upgrade ends with openwrt/feed/net/solowg/Makefile's Package/$name/postinst" "$part" \
			"$(tail -n "$n" "$s/post-upgrade" 2>/dev/null)"
	fi

	# The .ipk of the same build must hold the same files, modes and contents.
	sibling=$(find "$(dirname "$file")" -maxdepth 1 -name "${name}_${version}_*.ipk" | head -n1)
	if [[ -n $sibling ]]; then
		unpack_ipk "$sibling"
		rm -rf "$d/cmp" && cp -a "$d/data" "$d/cmp" && rm -rf "$d/cmp/lib/apk"
		rmdir "$d/cmp/lib" 2>/dev/null
		check "same files and contents as $(basename "$sibling")" diff -r "$d/cmp" "$work/$(basename "$sibling").d/data"
		same "same modes as $(basename "$sibling")" \
			"$(cd "$work/$(basename "$sibling").d/data" && find . -printf '%m %P\n' | LC_ALL=C sort)" \
			"$(cd "$d/cmp" && find . -printf '%m %P\n' | LC_ALL=C sort)"
		local ipk_arch
		ipk_arch=$(sed -n 's/^Architecture: //p' "$work/$(basename "$sibling").d/control/control")
		[[ $ipk_arch == all ]] && ipk_arch=noarch
		same "arch matches the .ipk's" "$ipk_arch" "$arch"
	fi

	apk_bin=${APK:-$(command -v apk || true)}
	if [[ -n $apk_bin ]] && "$apk_bin" --version 2>/dev/null | grep -q '^apk-tools 3'; then
		check "apk adbdump reads it" adbdump_names "$apk_bin" "$file" "$name"
	fi
}

mapfile -t packages < <(find "$dist" -type f \( -name '*.ipk' -o -name '*.apk' \) 2>/dev/null | LC_ALL=C sort)
if [[ ${#packages[@]} -eq 0 ]]; then
	echo "no .ipk or .apk files under $dist"
	echo "0 passed, 1 failed"
	exit 1
fi
for f in "${packages[@]}"; do
	case $f in
	*.ipk) check_ipk "$f" ;;
	*.apk) check_apk "$f" ;;
	esac
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
