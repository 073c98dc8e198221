#!/usr/bin/env bash
# The feed openwrt/feed/ as OpenWrt's build system reads it, without an OpenWrt build tree:
#
#   1. scan: what include/scan.mk does for `scripts/feeds update` (find -L, depth 5, the
#      Makefiles that call BuildPackage, the directory below the feed for each);
#   2. install: what `scripts/feeds install` does (package/feeds/solowg/<dir> links);
#   3. metadata: each package directory's `make DUMP=1` output, read by the rules of
#      scripts/metadata.pm (Source-Makefile, Package, Version, Depends, ...);
#   4. Build/Prepare through package/feeds/solowg/<dir>, as the build runs it, and the
#      install recipes, compared with what openwrt/mkpkg.py packages.
#
# OpenWrt's own rules.mk and include/package.mk need a configured build tree and its host
# tools, so a small stand-in of them is written here: the variables and macros these
# Makefiles use (TOPDIR, INCLUDE_DIR, BUILD_DIR, PKG_BUILD_DIR, PKG_INSTALL_DIR, CP, INSTALL_*,
# Package/Default, BuildPackage with the DUMP output of package-dumpinfo.mk) and the rust
# feed's RUST_ARCH_DEPENDS and RustBinPackage. LuCI's real luci.mk is taken from
# ../shared/openwrt-src/luci.tar.gz. With OPENWRT_TREE=DIR (an openwrt/openwrt checkout),
# the metadata is read by its scripts/metadata.pm itself (perl) as well.
# po2lmo (for the translation package's install recipe) is built from the same archive
# by tests/openwrt/po2lmo.sh.
#
#   usage: tests/openwrt/feed.sh          prints PASS/FAIL lines, ends with "N passed, M failed"
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
shared=${OPENWRT_SRC:-$repo/../shared/openwrt-src}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/openwrt/check.sh
. "$here/check.sh"

# ---- a build tree: TOPDIR with the stand-in includes, feeds/solowg linked (src-link)
top=$work/openwrt
mkdir -p "$top/include" "$top/feeds/packages/lang/rust" "$top/feeds/luci" "$top/build_dir" "$top/tmp"
ln -s "$repo/openwrt/feed" "$top/feeds/solowg"

cat >"$top/rules.mk" <<'EOF'
# Stand-in of OpenWrt's rules.mk: the names the package Makefiles use.
INCLUDE_DIR:=$(TOPDIR)/include
BUILD_DIR:=$(TOPDIR)/build_dir
STAGING_DIR_HOSTPKG:=$(TOPDIR)/staging_dir/hostpkg
CP:=cp -fpR
FIND:=find
SED:=sed -i -e
XARGS:=xargs -r
INSTALL_BIN:=install -m0755
INSTALL_DIR:=install -d -m0755
INSTALL_DATA:=install -m0644
INSTALL_CONF:=install -m0600
EOF

cat >"$top/include/package.mk" <<'EOF'
# Stand-in of include/package.mk, package-defaults.mk and package-dumpinfo.mk: the package
# fields with OpenWrt's defaults, `make DUMP=1` printing them as the scan reads them, and the
# steps a build takes (prepare: Build/Prepare into a fresh PKG_BUILD_DIR; install-NAME:
# Package/NAME/install into DEST).
PKG_BUILD_DIR ?= $(BUILD_DIR)/$(PKG_NAME)-$(PKG_VERSION)
PKG_INSTALL_DIR ?= $(PKG_BUILD_DIR)/ipkg-install
all: $(if $(DUMP),dumpinfo,prepare)

define Package/Default
  SECTION:=opt
  CATEGORY:=Extra packages
  DEPENDS:=
  PROVIDES:=
  MAINTAINER:=$(PKG_MAINTAINER)
  VERSION:=$(PKG_VERSION)$(if $(PKG_RELEASE),-r$(PKG_RELEASE))
  DEFAULT:=
  MENU:=
  SUBMENU:=
  TITLE:=
  HIDDEN:=
  URL:=
  PKGARCH:=
endef

define Build/Prepare/Default
endef

define Stub/Dump
dumpinfo: dumpinfo-$(1)
dumpinfo-$(1):
	@echo "Package: $(1)"
	@$(if $(SUBMENU),echo "Submenu: $(SUBMENU)")
	@$(if $(DEFAULT),echo "Default: $(DEFAULT)")
	@echo "Version: $(VERSION)"
	@echo "Depends: $(DEPENDS)"
	@echo "Provides: $(PROVIDES)"
	@echo "Build-Depends: $(PKG_BUILD_DEPENDS)"
	@echo "Section: $(SECTION)"
	@echo "Category: $(CATEGORY)"
	@echo "Title: $(TITLE)"
	@echo "Maintainer: $(MAINTAINER)"
	@$(if $(HIDDEN),echo "Hidden: 1")
	@echo "Description: $$$$(echo '$(subst ',,$(subst $(newline), ,$(Package/$(1)/description)))' | tr -s ' ')"
	@echo "@@"
endef

define Stub/Install
install-$(1):
	$(call Package/$(1)/install,$$(DEST))
endef

empty:=
define newline


endef

# As Build/DefaultTargets: written once, through eval, so a recipe is expanded twice.
define Stub/Prepare
prepare:
	rm -rf $(PKG_BUILD_DIR)
	mkdir -p $(PKG_BUILD_DIR)
	$(Build/Prepare)
endef

define BuildPackage
  $(eval $(Package/Default))
  $(eval $(Package/$(1)))
  $(foreach f,TITLE CATEGORY SECTION VERSION,$(if $($(f)),,$(error Package/$(1) is missing the $(f) field)))
  $(eval $(call Stub/Dump,$(1)))
  $(eval $(call Stub/Install,$(1)))
  $(if $(stub_prepared),,$(eval $(Stub/Prepare))$(eval stub_prepared:=1))
endef
EOF

cat >"$top/feeds/packages/lang/rust/rust-package.mk" <<'EOF'
# Stand-in of the packages feed's rust-package.mk: the architecture condition and the
# compile step's hook, which this test does not run.
RUST_ARCH_DEPENDS:=@(aarch64||arm||i386||i686||loongarch64||mips||mipsel||mips64||mips64el||mipsel||powerpc64||riscv64||x86_64)
define RustBinPackage
endef
EOF

luci=
if [[ -f $shared/luci.tar.gz ]]; then
	tar -xzf "$shared/luci.tar.gz" -C "$work" luci/luci.mk
	cp "$work/luci/luci.mk" "$top/feeds/luci/luci.mk"
	luci=1
else
	echo "NOTICE: $shared/luci.tar.gz missing: the LuCI app's checks are skipped"
fi

# ---- 1. scan (include/scan.mk, as scripts/feeds update runs it: SCAN_DIR=feeds/solowg,
# SCAN_DEPTH=5)
scan=$(cd "$top" && find -L feeds/solowg -mindepth 1 -maxdepth 5 -name Makefile -print0 |
	xargs -0 grep -aHE 'call (Build/DefaultTargets|BuildPackage|KernelPackage)' |
	sed -e 's#^feeds/solowg/##' -e 's#/Makefile:.*##' | LC_ALL=C sort -u)
want_dirs="net/solowg"
[[ -z $luci ]] || want_dirs="luci/luci-app-solowg
net/solowg"
check scan.package-dirs "$want_dirs" "$scan"
# A Makefile at the feed's top would come out as "Makefile:..." (no directory): none there.
check scan.no-makefile-at-top "" "$(find "$repo/openwrt/feed" -maxdepth 1 -name Makefile)"

# ---- 2. metadata: make DUMP=1 in each directory, as scan.mk's PackageDir does
: >"$work/packageinfo"
for d in $scan; do
	{
		echo "Source-Makefile: feeds/solowg/$d/Makefile"
		if ! make --no-print-directory -r DUMP=1 FEED=solowg TOPDIR="$top" -C "$top/feeds/solowg/$d" 2>"$work/dump.err"; then
			echo "DUMP-FAILED"
			sed 's/^/  /' "$work/dump.err" >&2
		fi
		echo
	} >>"$work/packageinfo"
done
check dump.no-failure "" "$(grep DUMP-FAILED "$work/packageinfo" || true)"

# scripts/metadata.pm's reading of the scan's output, field by field (its regular
# expressions; a Source-Makefile needs a directory above the package's, which is where a
# Makefile at the feed's top failed).
python3 - "$work/packageinfo" >"$work/meta" <<'EOF'
import re, sys
src = makefile = None
pkg = None
out = []
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
i = 0
while i < len(lines):
    line = lines[i]
    i += 1
    m = re.match(r"^Source-Makefile: \s*((.+/)([^/]+)/Makefile)\s*$", line)
    if m:
        makefile, src, pkg = m.group(1), m.group(3), None
        continue
    if not src:
        continue
    m = re.match(r"^Package:\s*(.+?)\s*$", line)
    if m:
        pkg = m.group(1)
        out.append("%s src %s" % (pkg, src))
        out.append("%s makefile %s" % (pkg, makefile))
        continue
    if not pkg:
        continue
    for field in ("Version", "Title", "Submenu", "Section", "Category", "Default", "Maintainer"):
        m = re.match(r"^%s: \s*(.+)\s*$" % field, line)
        if m:
            out.append("%s %s %s" % (pkg, field.lower(), m.group(1).rstrip()))
    for field in ("Depends", "Build-Depends", "Provides"):
        m = re.match(r"^%s: \s*(.+)\s*$" % field, line)
        if m:
            out.append("%s %s %s" % (pkg, field.lower(), " ".join(m.group(1).split())))
    if re.match(r"^Hidden: \s*(.+)\s*$", line):
        out.append("%s hidden 1" % pkg)
    if re.match(r"^Description: \s*(.*)\s*$", line):
        desc = [line.split(":", 1)[1].strip()]
        while i < len(lines) and not lines[i].startswith("@@"):
            desc.append(lines[i].strip())
            i += 1
        out.append("%s description %s" % (pkg, " ".join(" ".join(desc).split())))
print("\n".join(out))
EOF
meta() { sed -n "s/^$1 $2 //p" "$work/meta"; }
check meta.solowg.src "solowg" "$(meta solowg src)"
check meta.solowg.makefile "feeds/solowg/net/solowg/Makefile" "$(meta solowg makefile)"
check meta.solowg.version "0.1.0-r1" "$(meta solowg version)"
check meta.solowg.depends "@(aarch64||arm||i386||i686||loongarch64||mips||mipsel||mips64||mips64el||mipsel||powerpc64||riscv64||x86_64) +kmod-tun" "$(meta solowg depends)"
check meta.solowg.build-depends "rust/host" "$(meta solowg build-depends)"
check meta.solowg.menu "Network VPN net" "$(meta solowg category) $(meta solowg submenu) $(meta solowg section)"
check meta.solowg.title-set "yes" "$([[ -n $(meta solowg title) ]] && echo yes)"
check meta.solowg.description-names-wg "yes" "$(meta solowg description | grep -q 'without userspace support' && echo yes)"
if [[ -n $luci ]]; then
	check meta.luci.src "luci-app-solowg" "$(meta luci-app-solowg src)"
	check meta.luci.version "0.1.0-r1" "$(meta luci-app-solowg version)"
	check meta.luci.depends "+solowg +luci-lib-uqr" "$(meta luci-app-solowg depends)"
	check meta.luci.section "luci LuCI 3. Applications" \
		"$(meta luci-app-solowg section) $(meta luci-app-solowg category) $(meta luci-app-solowg submenu)"
	# luci.mk's translation package, one per po/<lang>; at DUMP time its version is 'x'
	# unless the Makefile sets PKG_PO_VERSION, as ours does.
	check meta.i18n.packages "luci-app-solowg luci-i18n-solowg-de" \
		"$(sed -n 's/^\([^ ]*\) src luci-app-solowg$/\1/p' "$work/meta" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
	check meta.i18n.version "0.1.0-r1" "$(meta luci-i18n-solowg-de version)"
	check meta.i18n.depends "luci-app-solowg" "$(meta luci-i18n-solowg-de depends)"
	check meta.i18n.default "LUCI_LANG_de||(ALL&&m)" "$(meta luci-i18n-solowg-de default)"
	check meta.i18n.hidden "1" "$(meta luci-i18n-solowg-de hidden)"
fi
if [[ -n ${OPENWRT_TREE:-} && -f $OPENWRT_TREE/scripts/metadata.pm ]]; then
	perl_meta=$(perl -I"$OPENWRT_TREE/scripts" -Mmetadata -e '
		parse_package_metadata($ARGV[0]) or die;
		for my $n (sort keys %package) { my $p = $package{$n}; next unless $p->{src};
			print "$n $p->{src} $p->{version}\n"; }' "$work/packageinfo")
	check metadata.pm.packages "$(for p in luci-app-solowg luci-i18n-solowg-de solowg; do
		echo "$p $(meta "$p" src) $(meta "$p" version)"; done | grep -v '^[^ ]*  $')" "$perl_meta"
else
	echo "NOTICE: OPENWRT_TREE not set: scripts/metadata.pm itself not run (its rules are, above)"
fi

# ---- 3. scripts/feeds install: package/feeds/solowg/<dir name> -> ../../../feeds/solowg/<dir>
mkdir -p "$top/package/feeds/solowg"
for d in $scan; do
	ln -sf "../../../feeds/solowg/$d" "$top/package/feeds/solowg/"
done
check install.links "$(for d in $scan; do basename "$d"; done | LC_ALL=C sort | tr '\n' ' ')" \
	"$(cd "$top/package/feeds/solowg" && for l in *; do [[ -f $l/Makefile ]] && echo "$l"; done | LC_ALL=C sort | tr '\n' ' ')"

# ---- 4. Build/Prepare as the build runs it: make -C package/feeds/solowg/solowg
bdir=$top/build_dir/solowg-0.1.0
if (cd "$top" && make --no-print-directory -r TOPDIR="$top" -C package/feeds/solowg/solowg prepare) >"$work/prepare.log" 2>&1; then
	check prepare.solowg.runs 0 0
else
	check prepare.solowg.runs 0 1
	cat "$work/prepare.log"
fi
check prepare.solowg.cargo "same same" \
	"$(cmp -s "$repo/Cargo.toml" "$bdir/Cargo.toml" && echo same) $(cmp -s "$repo/Cargo.lock" "$bdir/Cargo.lock" && echo same)"
check prepare.solowg.src "" "$(diff -r "$repo/src" "$bdir/src" 2>&1 | head -3)"
check prepare.solowg.bench-tools "" "$(diff -r "$repo/bench/tools" "$bdir/bench/tools" 2>&1 | head -3)"
check prepare.solowg.nothing-of-topdir "" "$(find "$bdir" -maxdepth 1 \( -name rules.mk -o -name include -o -name feeds -o -name build_dir \))"
# The build tree's cargo can read the workspace copied there (members, lock file).
if command -v cargo >/dev/null; then
	check prepare.solowg.cargo-metadata 0 \
		"$(cd "$bdir" && cargo metadata --locked --offline --no-deps --format-version 1 >/dev/null 2>"$work/cm.err"; echo $?)"
fi
# A copy of the feed without the repository around it stops with a message, not a wrong tree.
cp -rL "$repo/openwrt/feed/net" "$work/copied"
check prepare.copied-feed-fails "2 SOLOWG_SRC" \
	"$(make --no-print-directory -r TOPDIR="$top" -C "$work/copied/solowg" prepare >"$work/copy.log" 2>&1; echo "$? $(grep -o 'SOLOWG_SRC' "$work/copy.log" | head -1)")"

# The install recipe against mkpkg.py's package (which interprets the same recipe): the same
# files and modes.
mkdir -p "$bdir/ipkg-install/bin"
echo "daemon" >"$bdir/ipkg-install/bin/solowg"
# tree_of DIR [FORMAT]: its files and directories, "mode path" by default. paths_of gives the
# paths alone, sorted by path (sorted with modes, a directory whose mode differs moves in the
# list: a tree extracted from `git archive` has 0775 directories).
tree_of() { (cd "$1" && find . -mindepth 1 \( -type f -o -type d \) -printf "${2:-%m %P}\n" | LC_ALL=C sort); }
paths_of() { tree_of "$1" %P; }
make --no-print-directory -r TOPDIR="$top" -C "$top/package/feeds/solowg/solowg" install-solowg DEST="$work/inst-solowg" >/dev/null 2>&1 || true
python3 "$repo/openwrt/mkpkg.py" solowg --arch mips_24kc --binary "$bdir/ipkg-install/bin/solowg" \
	--allow-non-elf --format ipk --out "$work/pkg" >/dev/null
mkdir -p "$work/ipk-solowg"
tar -xzOf "$work"/pkg/solowg_*.ipk ./data.tar.gz | tar -xzf - -C "$work/ipk-solowg"
check install.solowg.same-as-mkpkg "$(tree_of "$work/ipk-solowg")" "$(tree_of "$work/inst-solowg")"

if [[ -n $luci ]]; then
	ldir=$top/build_dir/luci-app-solowg
	(cd "$top" && make --no-print-directory -r TOPDIR="$top" -C package/feeds/solowg/luci-app-solowg prepare) >"$work/lprep.log" 2>&1 ||
		cat "$work/lprep.log"
	check prepare.luci.htdocs "" "$(diff -r "$repo/luci-app/htdocs" "$ldir/htdocs" 2>&1 | head -3)"
	check prepare.luci.root "" "$(diff -r "$repo/luci-app/root" "$ldir/root" 2>&1 | head -3)"
	make --no-print-directory -r TOPDIR="$top" -C "$top/package/feeds/solowg/luci-app-solowg" \
		install-luci-app-solowg DEST="$work/inst-luci" >/dev/null 2>&1 || true
	python3 "$repo/openwrt/mkpkg.py" luci-app-solowg --format ipk --out "$work/lpkg" >/dev/null
	mkdir -p "$work/ipk-luci"
	tar -xzOf "$work"/lpkg/luci-app-solowg_*.ipk ./data.tar.gz | tar -xzf - -C "$work/ipk-luci"
	# luci.mk copies with cp -p: modes as checked out; mkpkg.py uses git's two modes.
	check install.luci.same-files-as-mkpkg "$(paths_of "$work/ipk-luci")" "$(paths_of "$work/inst-luci")"
	po2lmo=$(bash "$here/po2lmo.sh" 2>"$work/po2lmo.err") || po2lmo=
	if [[ -n $po2lmo ]]; then
		PATH=$(dirname "$po2lmo"):$PATH make --no-print-directory -r TOPDIR="$top" \
			-C "$top/package/feeds/solowg/luci-app-solowg" install-luci-i18n-solowg-de DEST="$work/inst-de" >/dev/null 2>&1 || true
		python3 "$repo/openwrt/mkpkg.py" luci-i18n-solowg-de --po2lmo "$po2lmo" --format ipk --out "$work/dpkg" >/dev/null
		mkdir -p "$work/ipk-de"
		tar -xzOf "$work"/dpkg/luci-i18n-solowg-de_*.ipk ./data.tar.gz | tar -xzf - -C "$work/ipk-de"
		check install.i18n.files "$(paths_of "$work/ipk-de")" "$(paths_of "$work/inst-de")"
		check install.i18n.lmo-same "same" \
			"$(cmp -s "$work/ipk-de/usr/lib/lua/luci/i18n/solowg.de.lmo" "$work/inst-de/usr/lib/lua/luci/i18n/solowg.de.lmo" && echo same)"
		check install.i18n.uci-defaults-same "same" \
			"$(cmp -s "$work/ipk-de/etc/uci-defaults/luci-i18n-solowg-de" "$work/inst-de/etc/uci-defaults/luci-i18n-solowg-de" && echo same)"
	else
		check install.i18n.po2lmo-builds "built" "$(cat "$work/po2lmo.err")"
	fi
fi

checks_done
