#!/usr/bin/env bash
# `solowg bench` on a MIPS kernel: the static mipsel solowg (openwrt/build mipsel_24kc) run
# as a router owner runs it, inside the guest of image.sh (qemu-system-mipsel, Malta, one
# 24Kf CPU), against the kernel's own WireGuard module: the default race (kernel, then
# solowg, iperf3), then the built-in stream with JSON. Checks that both ran both ways with
# Mbit/s above 0, and that the guest has no link, UAPI socket or process of the bench left.
# Prints the bench's output. Its figures are an emulated CPU's, not a router's
# (docs/performance.md): they are shown, not checked. On demand; CI does not run it.
#
#   bench.sh [SECONDS]        seconds per run (default 5)
#
# Environment: SOLOWG_MIPS_DIR (image cache, as run.sh; bench/router's OpenWrt-configured
# kernel is /var/tmp/solowg-mips-system-openwrt), SOLOWG_MIPSEL_BIN (default
# target/openwrt/mipsel_24kc/solowg).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../netns/lib.sh
. "$here/../netns/lib.sh"

SECS=${1:-5}
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 1 && $SECS -le 60 ]] || nt_die "SECONDS: 1 to 60"
IMAGE_DIR=${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}
GUEST_BIN=${SOLOWG_MIPSEL_BIN:-$NT_REPO_ROOT/target/openwrt/mipsel_24kc/solowg}
nt_require_root
nt_require_tools tar jq timeout qemu-system-mipsel
[[ -f $GUEST_BIN ]] || nt_die "no mipsel solowg at $GUEST_BIN (openwrt/build mipsel_24kc)"
"$here/image.sh" "$IMAGE_DIR" || nt_die "image build failed"
# shellcheck source=/dev/null
. "$IMAGE_DIR/image.env"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/solowg-mips-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/job"
cp "$GUEST_BIN" "$TMP/job/solowg"
cat >"$TMP/job/job.sh" <<EOF
#!/bin/bash
cd /run/job || exit 1
for m in wireguard veth tun; do modprobe "\$m" || echo "modprobe \$m failed"; done
echo "@@MODULE \$(cat /sys/module/wireguard/version 2>/dev/null)"
./solowg bench --seconds $SECS </dev/null
echo "@@RC-DEFAULT \$?"
./solowg bench --seconds $SECS --tool builtin --json </dev/null >/tmp/builtin.json
echo "@@RC-BUILTIN \$?"
echo "@@JSON \$(cat /tmp/builtin.json)"
echo "@@LINKS \$(ls /sys/class/net | tr '\n' ' ')"
echo "@@SOCKETS \$(ls /var/run/wireguard 2>/dev/null | grep -c '^swb')"
echo "@@PROCESSES \$(ps -e -o comm= | grep -cE '^(solowg|iperf3|wg)\$')"
EOF
tar -C "$TMP/job" -cf "$TMP/job.tar" .
console=$TMP/console.log
nt_info "$(qemu-system-mipsel --version | head -n 1); kernel $KERNEL_RELEASE"
# Bounded by time; snapshot=on: the cached image stays as built.
timeout -k 5 900 nice qemu-system-mipsel -M malta -cpu 24Kf -smp 1 -m 256 \
	-nodefaults -no-reboot -display none -monitor none -serial "file:$console" \
	-kernel "$IMAGE_DIR/vmlinux" -initrd "$IMAGE_DIR/initrd.img" \
	-append "root=LABEL=$ROOT_LABEL ro rootfstype=ext4 console=ttyS0 init=$GUEST_INIT panic=1 swg.timeout=600" \
	-drive "if=none,id=root,file=$IMAGE_DIR/disk.ext4,format=raw,snapshot=on" \
	-device "virtio-blk-pci,drive=root" \
	-drive "if=none,id=job,file=$TMP/job.tar,format=raw,readonly=on" \
	-device "virtio-blk-pci,drive=job" </dev/null >"$TMP/qemu.log" 2>&1 || true
# The progress line's terminal codes start some lines; the bench's own output is shown.
tr -d '\r' <"$console" | sed 's/\x1b\[K/\n/g' >"$TMP/console.txt"
sed -n '/^@@MODULE/,/^@@RC-DEFAULT/p' "$TMP/console.txt" | grep -vE ' [0-9]+/[0-9]+ s$'
field() { sed -n "s/.*@@$1 //p" "$TMP/console.txt" | tail -n 1; }
field JSON >"$TMP/builtin.json"
nt_info "built-in stream: $(jq -r .line "$TMP/builtin.json" 2>/dev/null)"
nt_check "module-loaded($(field MODULE))" test -n "$(field MODULE)" || true
nt_check "default.exit-0($(field RC-DEFAULT))" test "$(field RC-DEFAULT)" = 0 || true
nt_check "builtin.exit-0($(field RC-BUILTIN))" test "$(field RC-BUILTIN)" = 0 || true
nt_check builtin.both-ran-both-ways jq -e '.state == "done" and
	([.runs[] | .impl + "-" + .dir] | join(",")) == "kernel-up,kernel-down,solowg-up,solowg-down"
	and all(.runs[]; .mbps > 0) and (.ratio.up | type) == "number"' "$TMP/builtin.json" >/dev/null || true
nt_check "nothing-left.links($(field LINKS))" test "$(field LINKS)" = "lo " || true
nt_check "nothing-left.sockets($(field SOCKETS))" test "$(field SOCKETS)" = 0 || true
nt_check "nothing-left.processes($(field PROCESSES))" test "$(field PROCESSES)" = 0 || true
nt_summary
