#!/usr/bin/env bash
# The big-endian OpenWrt binary end to end: the static mips_24kc solowg (openwrt/build
# mips_24kc; built here when missing or older than the sources) runs under qemu-user
# (`qemu-mips -cpu 24Kc`) in the netns interop checks against wireguard-go, in both roles:
# tests/netns/interop.sh solowg wireguard-go, then wireguard-go solowg (handshake, ping over
# IPv4 and IPv6, `wg show`, iperf3 over IPv4 and IPv6 both ways, a 1400-byte outer MTU,
# roaming, exit on SIGTERM and after `ip link del`). The checks are interop.sh's, unchanged;
# only the command that starts solowg differs (SOLOWG_EMULATOR, see tests/netns/lib.sh).
#
# qemu-user hands every call to the host kernel, converting arguments and results between
# the guest's byte order and the host's, with two gaps that concern the daemon:
#  - setsockopt(SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF) is not translated: ENOPROTOOPT. The
#    daemon logs it and keeps one UDP socket per family, as on a kernel without it.
#  - control messages of level SOL_UDP are copied unconverted. The UDP_SEGMENT (GSO) size
#    reaches the host kernel byte-swapped: a train is refused (EMSGSIZE) or, if it is short,
#    leaves as one datagram no peer can decrypt, and nothing tells the daemon. So the first
#    sendmsg(2), the daemon's first GSO train, fails with EIO here (strace's fault
#    injection, as in tests/netns/gso-fallback.sh), and the daemon sends its datagrams
#    without GSO from then on (sendmmsg, which qemu-user carries out as one host sendmsg per
#    datagram: hence only the first call is failed): what it does on ath79 routers, whose NIC
#    makes UDP GSO fail with EIO. (A UDP_GRO size received would be byte-swapped as well; wireguard-go
#    sends no GSO trains, so none arrive.)
# The TUN's virtio-net header is little-endian at the daemon's request (TUNSETVNETLE), so the
# TUN offload path (TSO super-packets cut in userspace, GSO writes) runs as on a router.
#
#   run.sh
#
# Environment:
#   SOLOWG_BIN       the mips_24kc binary (default target/openwrt/mips_24kc/solowg, built or
#                    rebuilt first when needed; a binary named here is used as it is)
#   MIPS_USER_CPU    qemu -cpu model (default 24Kc: the FPU-less core of ath79 routers)
#   IPERF_SIZE       size of interop.sh's IPv4 iperf3 run (default 50M)
#   ENTRY_TIMEOUT_S  bound for each interop.sh run in seconds (default 300)
# Prints interop.sh's PASS/FAIL lines, one line per run with its time and iperf3 rate, and
# ends with "N passed, M failed"; exit status 0 only without failures.
set -euo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
ENTRY_TIMEOUT_S=${ENTRY_TIMEOUT_S:-300}
BUILD_TIMEOUT_S=1800
cpu=${MIPS_USER_CPU:-24Kc}
start=$SECONDS

[[ $(id -u) -eq 0 ]] || { echo "ERROR: must run as root (namespaces, TUN devices)" >&2; exit 2; }
for t in qemu-mips strace wireguard-go file; do
	command -v "$t" >/dev/null || { echo "ERROR: missing tool: $t (qemu-user; .ci/install)" >&2; exit 2; }
done

# --- The binary: openwrt/build when it is missing or any source is newer.
if [[ -n ${SOLOWG_BIN:-} ]]; then
	bin=$SOLOWG_BIN
else
	bin=$root/target/openwrt/mips_24kc/solowg
	if [[ ! -x $bin ]] || [[ -n $(find src build.rs Cargo.toml Cargo.lock -newer "$bin" -print -quit) ]]; then
		echo "=== openwrt/build mips_24kc"
		timeout -k 30 "$BUILD_TIMEOUT_S" openwrt/build mips_24kc </dev/null
	fi
fi
[[ -x $bin ]] || { echo "ERROR: no binary at $bin" >&2; exit 2; }
desc=$(file -b "$bin")
echo "# $bin: $desc"
echo "# $(qemu-mips --version | head -1), -cpu $cpu; wireguard-go $(wireguard-go --version 2>&1 | head -1 | awk '{ print $NF }')"

total_pass=0
total_fail=0
# Under test must be the big-endian MIPS32r2 build, or the rest proves nothing.
if [[ $desc == *"ELF 32-bit MSB"*"MIPS32 rel2"*"statically linked"* ]]; then
	echo "PASS binary.big-endian-mips32r2-static"
	total_pass=$((total_pass + 1))
else
	echo "FAIL binary.big-endian-mips32r2-static ($desc)"
	total_fail=$((total_fail + 1))
fi

export SOLOWG_BIN=$bin IPERF_SIZE=${IPERF_SIZE:-50M}
export SOLOWG_EMULATOR="strace -f -qq --seccomp-bpf -o /dev/null -e trace=sendmsg -e inject=sendmsg:error=EIO:when=1 qemu-mips -cpu $cpu"

out_dir=$(mktemp -d "${TMPDIR:-/tmp}/solowg-mips-user.XXXXXX")
trap 'rm -rf "$out_dir"' EXIT
results=()
i=0
for pair in "solowg wireguard-go" "wireguard-go solowg"; do
	i=$((i + 1))
	read -r a b <<<"$pair"
	out=$out_dir/$i.out
	echo "=== [$i/2] $a <-> $b (solowg big-endian under qemu-mips)"
	t0=$SECONDS
	set +e
	timeout -k 30 "$ENTRY_TIMEOUT_S" tests/netns/interop.sh "$a" "$b" </dev/null 2>&1 |
		tee "$out" | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	set -e
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)
	p=0 f=0
	[[ -z $summary ]] || read -r p _ f _ <<<"$summary"
	# A crash, a timeout or a missing summary counts as one failure.
	[[ $rc -eq 0 || $f -ne 0 ]] || f=1
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	rate=$(grep -oE 'iperf3-[0-9]+[KMG]?\.A-to-B \([0-9.]+ Mbit/s' "$out" | grep -oE '[0-9.]+ Mbit/s' | head -1 || true)
	results+=("$(printf '%-26s %3d passed %3d failed  rc=%-3d %4ds  %s' "$a <-> $b" "$p" "$f" "$rc" $((SECONDS - t0)) "${rate:+iperf3 $rate}")")
done

echo
echo "=== mips_24kc under qemu-mips -cpu $cpu vs wireguard-go ($((SECONDS - start)) s)"
printf '  %s\n' "${results[@]}"
printf '%d passed, %d failed\n' "$total_pass" "$total_fail"
[[ $total_fail -eq 0 ]]
