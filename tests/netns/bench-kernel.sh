#!/usr/bin/env bash
# `solowg bench`'s kernel half, on a kernel that has the WireGuard module: an installed
# kernel (a /boot/vmlinuz-* whose modules include wireguard.ko), else Debian's
# linux-image-amd64 unpacked once into a cache (apt-get download, not installed), booted in
# qemu-system-x86_64 from an initramfs made here of busybox, wg, iperf3, the modules and
# the solowg under test. The guest runs the default race (kernel, then solowg) and the
# built-in stream with solowg first, then asks for the kernel without `wg`; the host checks
# the JSON (both implementations, Mbit/s above 0, the ratios, the module's version), the
# refusal naming wireguard-tools, and that the guest's root namespace has no link, socket
# or process left. The figures are an emulated CPU's and are not checked or kept.
# Skips, saying so, without qemu-system-x86_64 or without a kernel it can find or fetch.
#   usage: bench-kernel.sh      (SOLOWG_BIN: a static solowg, as .ci/build makes it;
#                                QEMU_ACCEL=kvm where nested KVM works; default tcg;
#                                SOLOWG_BENCH_KERNEL_DIR: the cache, default
#                                /var/tmp/solowg-bench-kernel)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

skip() {
	echo "SKIP bench-kernel: $*"
	echo "0 passed, 0 failed"
	exit 0
}
nt_require_tools jq cpio gzip xz ldd timeout depmod
nt_require_impl solowg
BIN=$(nt_impl_bin solowg)
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64 (Debian: qemu-system-x86)"
command -v busybox >/dev/null || skip "no busybox"
command -v modprobe >/dev/null || skip "no modprobe (kmod)"
for t in wg iperf3; do command -v "$t" >/dev/null || skip "no $t on the host to copy into the guest"; done
ldd "$BIN" 2>&1 | grep -qE 'statically linked|not a dynamic executable' || skip "$BIN is not linked statically (.ci/build makes it so)"
# A kernel with the module: KROOT/boot/vmlinuz-RELEASE, its modules in KROOT/lib/modules.
find_kernel() {
	local k r
	for k in "$1"/boot/vmlinuz-*; do
		r=${k##*/vmlinuz-}
		[[ -r $k ]] && grep -q '/wireguard\.ko' "$1/lib/modules/$r/modules.dep" 2>/dev/null &&
			kernel=$k release=$r kroot=$1
	done
	[[ -n $kernel ]]
}
# Debian's current amd64 kernel package, unpacked (never installed) with its modules' index.
fetch_kernel() {
	local dir=$1 pkg deb
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 1
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	[[ -n $pkg ]] || return 1
	mkdir -p "$dir/deb"
	(cd "$dir/deb" && timeout 300 apt-get download -q "$pkg" </dev/null) || return 1
	deb=$(find "$dir/deb" -name "${pkg}_*.deb" | head -n 1)
	[[ -n $deb ]] && dpkg-deb -x "$deb" "$dir/root" || return 1
	r=$(find "$dir/root/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n 1)
	depmod -b "$dir/root" "$r"
}
kernel='' release='' kroot=''
cache=${SOLOWG_BENCH_KERNEL_DIR:-/var/tmp/solowg-bench-kernel}
find_kernel "" || find_kernel "$cache/root" || {
	nt_info "no kernel with the WireGuard module here: fetching Debian's into $cache"
	fetch_kernel "$cache" && find_kernel "$cache/root"
} || skip "no kernel with the WireGuard module, and Debian's linux-image-amd64 could not be fetched"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/solowg-bench-kernel.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
root=$TMP/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,etc,tmp,var/run,mods}
cp "$(command -v busybox)" "$root/bin/"
for a in sh mount insmod poweroff mkdir ls cat mv ps grep; do ln -s busybox "$root/bin/$a"; done
cp "$(command -v wg)" "$(command -v iperf3)" "$root/bin/"
cp "$BIN" "$root/sbin/solowg"
cp /etc/os-release "$root/etc/"
# The libraries of the dynamic programs, at the paths their loader looks at.
for f in "$(command -v busybox)" "$(command -v wg)" "$(command -v iperf3)"; do
	ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# The modules in load order, uncompressed (busybox's insmod takes plain .ko files).
n=0
for m in wireguard veth tun; do
	modprobe ${kroot:+-d "$kroot"} --show-depends -S "$release" "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
	n=$((n + 1))
	base=$(basename "$ko")
	base=${base%.xz}
	base=${base%.zst}
	out=$root/mods/$(printf '%02d-%s' "$n" "$base")
	case $ko in
	*.xz) xz -dc "$ko" >"$out" ;;
	*.zst) zstd -qdc "$ko" >"$out" ;;
	*) cp "$ko" "$out" ;;
	esac
done
cat >"$root/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /var/run
export PATH=/sbin:/bin
for m in /mods/*.ko; do insmod "$m" || echo "insmod $m failed"; done
echo "@@MODULE $(cat /sys/module/wireguard/version)"
solowg bench --seconds 2 --json --state-file /var/run/state.json >/tmp/default.json
echo "@@RC-DEFAULT $?"
echo "@@JSON-DEFAULT $(cat /tmp/default.json)"
solowg bench --seconds 2 --tool builtin --impls solowg,kernel --json >/tmp/builtin.json
echo "@@RC-BUILTIN $?"
echo "@@JSON-BUILTIN $(cat /tmp/builtin.json)"
mv /bin/wg /bin/wg.off
solowg bench --impls kernel --seconds 1 2>/tmp/refusal.txt
echo "@@RC-REFUSAL $?"
echo "@@REFUSAL $(cat /tmp/refusal.txt)"
mv /bin/wg.off /bin/wg
echo "@@LINKS $(ls /sys/class/net)"
echo "@@SOCKETS $(ls /var/run/wireguard 2>/dev/null)"
echo "@@PROCESSES $(ps -o comm | grep -cE '^(solowg|iperf3|wg)$')"
poweroff -f
EOF
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$TMP/initrd.gz"
nt_info "booting $kernel (modules $release) in qemu (${QEMU_ACCEL:-tcg})"
t0=$SECONDS
timeout 600 qemu-system-x86_64 -accel "${QEMU_ACCEL:-tcg}" -cpu max -smp 2 -m 512 \
	-kernel "$kernel" -initrd "$TMP/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
	-nographic -no-reboot -nic none </dev/null >"$TMP/console.log" 2>&1 || true
nt_info "the guest ran $((SECONDS - t0)) s"
tr -d '\r' <"$TMP/console.log" >"$TMP/console.txt"
# A line may start after the progress line's terminal codes: everything before @@ goes.
field() { sed -n "s/.*@@$1 //p" "$TMP/console.txt" | tail -n 1; }
nt_info "module $(field MODULE)"
field JSON-DEFAULT >"$TMP/default.json"
field JSON-BUILTIN >"$TMP/builtin.json"
nt_info "$(jq -r .line "$TMP/default.json" 2>/dev/null)"
raced() { # raced FILE TOOL ORDER: both implementations ran both ways, in ORDER
	jq -e --arg tool "$2" --arg order "$3" '
		.state == "done" and .tool == $tool and .system.wireguard != null
		and ([.runs[] | .impl + "-" + .dir] | join(",")) == $order
		and all(.runs[]; .mbps > 0 and .cpu > 0 and .cpu <= 1)
		and (.ratio.up | type) == "number" and (.ratio.down | type) == "number"
		and (.line | test("solowg/kernel [0-9.]+ \\| down: "))' "$1" >/dev/null
}
nt_check "default.exit-0($(field RC-DEFAULT))" test "$(field RC-DEFAULT)" = 0 || true
nt_check default.kernel-then-solowg-iperf3 raced "$TMP/default.json" iperf3 \
	kernel-up,kernel-down,solowg-up,solowg-down || true
nt_check "builtin.exit-0($(field RC-BUILTIN))" test "$(field RC-BUILTIN)" = 0 || true
nt_check builtin.solowg-then-kernel raced "$TMP/builtin.json" builtin \
	solowg-up,solowg-down,kernel-up,kernel-down || true
nt_check "refusal.without-wg($(field REFUSAL))" test "$(field RC-REFUSAL)" = 1 -a \
	-n "$(field REFUSAL | grep 'install wireguard-tools')" || true
nt_check "nothing-left.links($(field LINKS))" test "$(field LINKS)" = lo || true
nt_check "nothing-left.sockets($(field SOCKETS))" test -z "$(field SOCKETS)" || true
nt_check "nothing-left.processes($(field PROCESSES))" test "$(field PROCESSES)" = 0 || true
if [[ $NT_FAIL -gt 0 ]]; then
	grep -v '^\[' "$TMP/console.txt" | tail -n 40
fi
nt_summary
