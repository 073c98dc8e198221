#!/bin/bash
# PID 1 of the MIPS test guest (kernel argument init=): runs the one job found on the job
# disk, prints its output on the console between markers, then powers the machine off.
# No service manager: nothing runs that the job did not start, and boot stays short.
#
# The job disk is a raw tar archive (written by run.sh) on any disk: found by the tar magic
# rather than by device name, so the probe order of the disks does not matter.
# Kernel arguments read here: swg.timeout=SECONDS bounds the job (default 900).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# PID 1 must never exit (that panics the kernel): every step tolerates failure.
set +e

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mountpoint -q /run || mount -t tmpfs -o mode=0755,nosuid tmpfs /run
mkdir -p /dev/pts /dev/shm
mountpoint -q /dev/pts || mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp
# The host opens the root disk as a throw-away snapshot, so writing to it is harmless.
mount -o remount,rw / 2>/dev/null
exec </dev/console >/dev/console 2>&1
# Kernel messages would interleave with the job's output on the same console.
dmesg -n 1
hostname mips-guest
ip link set lo up

power_off() {
	sync
	echo o >/proc/sysrq-trigger
	# Not reached when power-off works; qemu is started with -no-reboot as a fallback.
	sleep 30
	echo b >/proc/sysrq-trigger
	while :; do sleep 3600; done
}

timeout_s=900
read -r -a args </proc/cmdline
for arg in "${args[@]}"; do
	case $arg in
	swg.timeout=*) timeout_s=${arg#swg.timeout=} ;;
	esac
done
[[ $timeout_s =~ ^[0-9]+$ ]] || timeout_s=900

# Bytes 257..261 of a tar archive are "ustar".
job_disk() {
	local b dev
	for b in /sys/class/block/*; do
		[[ -e $b/partition ]] && continue
		dev=/dev/${b##*/}
		[[ -b $dev ]] || continue
		if [[ $(dd if="$dev" bs=1 skip=257 count=5 2>/dev/null | tr -d '\0') == ustar ]]; then
			printf '%s\n' "$dev"
			return 0
		fi
	done
	return 1
}

disk=
for ((i = 0; i < 100; i++)); do
	disk=$(job_disk) && break
	sleep 0.2
done

echo "@@SWG-JOB-BEGIN uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)@@"
rc=NOJOB
# A tmpfs of its own: the initrd mounted /run noexec, and the job ships programs.
if [[ -n $disk ]] && mkdir -p /run/job && mount -t tmpfs -o mode=0755 jobfs /run/job &&
	tar -xf "$disk" -C /run/job && [[ -f /run/job/job.sh ]]; then
	cd /run/job || power_off
	timeout -k 5 "$timeout_s" bash ./job.sh
	rc=$?
	cd /
else
	echo "no job disk with job.sh found"
fi
echo "@@SWG-JOB-END rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)@@"
power_off
