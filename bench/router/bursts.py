#!/usr/bin/env python3
"""How the router's datagrams reach the peer: for each capture bench/router/run --capture
made (cap-*.pcap, the host's side of the WAN), the datagrams from the guest (IPv4 length
over 1,000 bytes), the gaps between them, the bursts they come in (gaps under 30 us: QEMU
writes what the guest queued since its last flush back to back) and the peer's datagrams
per data datagram (its acknowledgements, one datagram each).

    bench/router/bursts.py bench/results/<stamp>-router-raw/cap-*.pcap
"""
import statistics
import struct
import sys

GUEST = bytes([10, 203, 0, 2])
BURST_GAP_US = 30


def packets(path):
    """(time, from the guest, IPv4 total length) of each IPv4 packet in a pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        order = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        scale = 1e9 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 1e6
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack(order + "IIII", rec)
            frame = f.read(incl)
            if len(frame) < 34 or frame[12:14] != b"\x08\x00":
                continue
            yield sec + frac / scale, frame[26:30] == GUEST, struct.unpack(">H", frame[16:18])[0]


def main(paths):
    for path in paths:
        pkts = list(packets(path))
        data = [t for t, guest, n in pkts if guest and n > 1000]
        peer = sum(1 for _, guest, _ in pkts if not guest)
        gaps = [(b - a) * 1e6 for a, b in zip(data, data[1:])]
        name = path.rsplit("/", 1)[-1]
        if len(gaps) < 10:
            print(f"{name}: too few datagrams from the guest ({len(data)})")
            continue
        bursts, run = [], 1
        for g in gaps:
            if g < BURST_GAP_US:
                run += 1
            else:
                bursts.append(run)
                run = 1
        bursts.append(run)
        q = statistics.quantiles(gaps, n=10)
        print(
            f"{name}: {len(data)} datagrams, peer {peer / len(data):.2f} per datagram; "
            f"gap p10/p50/p90 {q[0]:.1f}/{q[4]:.1f}/{q[8]:.1f} us; "
            f"bursts mean {statistics.mean(bursts):.2f}, max {max(bursts)}"
        )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
