# shellcheck shell=bash
# The host's half of the router guest (guest.sh), shared by bench/router/run and bench/memory:
# the namespaces with the guest's WAN and LAN taps, the QEMU command line, the boot up to the
# guest's command server, commands over its second serial port, and the shutdown.
# Sourced after tests/netns/lib.sh and nt_setup (NT_TMP, NT_BG_PIDS, NT_NAMESPACES) and after
# the image's image.env (ROOT_LABEL, GUEST_INIT); IMAGE_DIR is the image cache.
#
# Addresses, all inside the namespaces made here: WAN 10.203.0.0/24 (host .1 on tap swgwan,
# guest .2), LAN 10.205.0.0/24 (guest .1, the LAN host .10 in its own namespace, behind tap
# swglan, a bridge and a veth).

# Variables are read by the scripts that source this file.
# shellcheck disable=SC2034
RG_WAN_MAC=52:54:00:20:30:02
RG_LAN_MAC=52:54:00:20:50:01
# Seconds a guest command (gx) may take before it counts as timed out.
RG_GX_TIMEOUT=${RG_GX_TIMEOUT:-120}
RG_QEMU=()
RG_QEMU_PID=

# rg_net NS LANNS: the namespace of the host's end (tap swgwan, 10.203.0.1/24; tap swglan on
# bridge swgbr) and the LAN host's (lan0, 10.205.0.10/24, default route via the guest).
rg_net() {
	local ns=$1 lanns=$2 d
	ip netns add "$ns" || return 1
	NT_NAMESPACES+=("$ns")
	ip netns add "$lanns" || return 1
	NT_NAMESPACES+=("$lanns")
	ip -n "$ns" link set lo up &&
		ip -n "$lanns" link set lo up &&
		ip -n "$ns" tuntap add dev swgwan mode tap &&
		ip -n "$ns" addr add 10.203.0.1/24 dev swgwan &&
		ip -n "$ns" link set swgwan up || return 1
	# The LAN: the guest's second NIC (a tap) bridged to a veth whose other end is the LAN host.
	ip -n "$ns" tuntap add dev swglan mode tap &&
		ip -n "$ns" link add swgbr type bridge &&
		ip -n "$ns" link add swglanv type veth peer name lan0 netns "$lanns" &&
		ip -n "$ns" link set swglan master swgbr &&
		ip -n "$ns" link set swglanv master swgbr || return 1
	for d in swglan swglanv swgbr; do ip -n "$ns" link set "$d" up || return 1; done
	ip -n "$lanns" addr add 10.205.0.10/24 dev lan0 &&
		ip -n "$lanns" link set lan0 up &&
		ip -n "$lanns" route add default via 10.205.0.1
}

# rg_job_env KEYFILE: guest.sh's job.env (NIC MACs and addresses, the WireGuard private key).
rg_job_env() {
	printf 'WAN_MAC=%q\nLAN_MAC=%q\nGUEST_WAN4=10.203.0.2\nGUEST_LAN4=10.205.0.1\n' "$RG_WAN_MAC" "$RG_LAN_MAC"
	printf 'GUEST_KEY=%q\n' "$(cat "$1")"
}

# rg_qemu CONSOLE JOB_TAR GUEST_TIMEOUT NIC_PROPS [KERNEL_ARGS]: RG_QEMU, the command line (one
# 24Kf, 256 MiB, the cached root disk as a throw-away snapshot, the job disk, the WAN and LAN
# NICs with NIC_PROPS appended to each, console on CONSOLE, the command port on the FIFOs
# NT_TMP/ctl.in and ctl.out); GUEST_TIMEOUT bounds the guest's job. Callers may append more.
rg_qemu() {
	# Slots: Malta routes PCI slots 0x12-0x13 to IRQ 10 and 0x14-0x15 to IRQ 11, and shares
	# each line between devices. The two NICs on one line lost interrupts under forwarding
	# load (the WAN's receive stopped for good after a second or two, whatever the tunnel),
	# so each NIC shares its line with a disk, idle while measuring.
	RG_QEMU=(
		qemu-system-mipsel -M malta -cpu 24Kf -smp 1 -m 256
		-nodefaults -no-reboot -display none -monitor none
		-serial "file:$1" -chardev "pipe,id=ctl,path=$NT_TMP/ctl" -serial chardev:ctl
		-kernel "$IMAGE_DIR/vmlinux" -initrd "$IMAGE_DIR/initrd.img"
		-append "root=LABEL=$ROOT_LABEL ro rootfstype=ext4 console=ttyS0 init=$GUEST_INIT panic=1 swg.timeout=$3${5:+ $5}"
		-drive "if=none,id=root,file=$IMAGE_DIR/disk.ext4,format=raw,snapshot=on"
		-device "virtio-blk-pci,drive=root,addr=0x12"
		-netdev "tap,id=wan,ifname=swgwan,script=no,downscript=no"
		-device "virtio-net-pci,netdev=wan,mac=$RG_WAN_MAC,romfile=,addr=0x13$4"
		-drive "if=none,id=job,file=$2,format=raw,readonly=on"
		-device "virtio-blk-pci,drive=job,addr=0x14"
		-netdev "tap,id=lan,ifname=swglan,script=no,downscript=no"
		-device "virtio-net-pci,netdev=lan,mac=$RG_LAN_MAC,romfile=,addr=0x15$4"
	)
}

# rg_start NS LOG HOST_TIMEOUT: starts RG_QEMU in NS under timeout (RG_QEMU_PID), output to LOG.
rg_start() {
	rm -f "$NT_TMP/ctl.in" "$NT_TMP/ctl.out"
	mkfifo "$NT_TMP/ctl.in" "$NT_TMP/ctl.out" || return 1
	ip netns exec "$1" timeout -k 5 "$3" "${RG_QEMU[@]}" >"$2" 2>&1 &
	RG_QEMU_PID=$!
	NT_BG_PIDS+=("$RG_QEMU_PID")
}

# rg_wait_ready: opens the command port (fds 7 and 8) and waits for guest.sh's @@READY; 1 (qemu
# stopped, the port closed) when it does not come within RG_READY_S (150) s or qemu exits first.
rg_wait_ready() {
	local line t0=$SECONDS
	# Read-write opens of a FIFO never block, whether or not qemu has opened its end yet
	# (qemu opens both read-write too).
	exec 7<>"$NT_TMP/ctl.in" 8<>"$NT_TMP/ctl.out"
	# A boot takes 15-20 s here (2-3 minutes under -icount); a guest that has not answered in
	# 150 s (600) never does.
	while ((SECONDS - t0 < ${RG_READY_S:-150})) && kill -0 "$RG_QEMU_PID" 2>/dev/null; do
		IFS= read -r -t 5 -u 8 line || continue
		[[ ${line%$'\r'} == @@READY ]] && return 0
	done
	exec 7>&- 8<&-
	nt_stop_job "$RG_QEMU_PID"
	return 1
}

# gx CMD: runs CMD (bash) in the guest, prints its output, returns its status (124: no answer
# within RG_GX_TIMEOUT seconds).
gx() {
	local line out=() rc t0=$SECONDS
	printf '@@Q %s\n' "$(printf '%s' "$1" | base64 -w0)" >&7
	while ((SECONDS - t0 < RG_GX_TIMEOUT)); do
		IFS= read -r -t 5 -u 8 line || continue
		line=${line%$'\r'}
		if [[ $line == '@@R '* ]]; then
			rc=${line#@@R }
			((${#out[@]} == 0)) || printf '%s\n' "${out[@]}"
			return "$rc"
		fi
		out+=("$line")
	done
	echo "guest command timed out: $1" >&2
	return 124
}

# rg_shutdown: ends guest.sh (the guest powers off), closes the port, waits up to 60 s for
# qemu to exit, else stops it.
rg_shutdown() {
	gx exit >/dev/null || true
	exec 7>&- 8<&-
	nt_wait_until 60 nt_pid_gone "$RG_QEMU_PID" || nt_stop_job "$RG_QEMU_PID"
}
