#!/usr/bin/env python3
"""Turn off a network device's TX and/or RX checksum offload, without ethtool(8).

    usage: csum-off.py IFNAME [rx|tx|both]      (default: both)

Uses the legacy ethtool ioctls (SIOCETHTOOL with ETHTOOL_STXCSUM / ETHTOOL_SRXCSUM, each
taking a struct ethtool_value {u32 cmd; u32 data}), reads the setting back with
ETHTOOL_GTXCSUM / ETHTOOL_GRXCSUM, prints it, and exits non-zero unless it is off.
Needs CAP_NET_ADMIN in the device's network namespace (run it with `ip netns exec NS`).
Python 3 standard library only.
"""

import ctypes
import fcntl
import socket
import struct
import sys

SIOCETHTOOL = 0x8946
ETHTOOL_GRXCSUM = 0x14
ETHTOOL_SRXCSUM = 0x15
ETHTOOL_GTXCSUM = 0x16
ETHTOOL_STXCSUM = 0x17
IFNAMSIZ = 16
# struct ifreq: the name, then a union whose largest member is 24 bytes (struct ifmap on
# 64-bit); ifr_data (a pointer) sits at the start of the union.
IFREQ_SIZE = 40

KINDS = {
    "tx": (ETHTOOL_STXCSUM, ETHTOOL_GTXCSUM),
    "rx": (ETHTOOL_SRXCSUM, ETHTOOL_GRXCSUM),
}


class EthtoolValue(ctypes.Structure):
    _fields_ = [("cmd", ctypes.c_uint32), ("data", ctypes.c_uint32)]


def ethtool(sock, ifname, cmd, data=0):
    """One SIOCETHTOOL call with an ethtool_value; returns the value's data afterwards."""
    val = EthtoolValue(cmd, data)
    req = struct.pack("16sP", ifname.encode(), ctypes.addressof(val))
    req = req.ljust(IFREQ_SIZE, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, req)
    return val.data


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] not in ("rx", "tx", "both")):
        sys.stderr.write("usage: csum-off.py IFNAME [rx|tx|both]\n")
        return 2
    ifname = argv[1]
    if not ifname or len(ifname.encode()) >= IFNAMSIZ:
        sys.stderr.write("csum-off.py: bad interface name %r\n" % ifname)
        return 2
    which = argv[2] if len(argv) == 3 else "both"
    kinds = ["tx", "rx"] if which == "both" else [which]
    rc = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for kind in kinds:
            set_cmd, get_cmd = KINDS[kind]
            try:
                ethtool(sock, ifname, set_cmd, 0)
                now = ethtool(sock, ifname, get_cmd)
            except OSError as e:
                sys.stderr.write("csum-off.py: %s %s checksum offload: %s\n" % (ifname, kind, e))
                rc = 1
                continue
            print("%s: %s-checksumming %s" % (ifname, kind, "on" if now else "off"))
            if now:
                rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
