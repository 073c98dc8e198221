#!/usr/bin/env python3
"""Tables for bench/router from its raw.tsv (standard library only).

usage: report.py RAW_TSV

One row per NIC, topology, direction and implementation: medians over the long runs, and
instructions per byte from each (long, short) pair of runs, then solowg / kernel ratios.
"""
import csv
import statistics
import sys
from collections import defaultdict


def kv(s):
    out = {}
    for tok in s.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = int(v)
            except ValueError:
                pass
    return out


def delta(row):
    b, a = kv(row["before"]), kv(row["after"])
    return {k: a[k] - b[k] for k in a if k in b}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec="{:.1f}"):
    return "-" if x is None else spec.format(x)


def main(path):
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    groups = defaultdict(lambda: {"long": {}, "short": {}})
    for r in rows:
        key = (r["nic"], r["topo"], r["dir"], r["impl"])
        groups[key][r["kind"]][r["rep"]] = r

    table = {}
    for key, g in groups.items():
        mbps, retr, cpu, cs, sc, rb, ipb = [], [], [], [], [], [], []
        batches = defaultdict(list)
        for rep, r in g["long"].items():
            if int(r["bytes"]) == 0:
                continue
            mbps.append(float(r["bps"]) / 1e6)
            retr.append(int(r["retrans"]) if r["retrans"] else None)
            d = delta(r)
            ticks = sum(d.get(k, 0) for k in ("user", "nice", "system", "idle", "iowait", "irq", "softirq"))
            if ticks > 0:
                cpu.append((
                    100 * (d.get("user", 0) + d.get("nice", 0)) / ticks,
                    100 * d.get("system", 0) / ticks,
                    100 * (d.get("softirq", 0) + d.get("irq", 0)) / ticks,
                    100 * (d.get("idle", 0) + d.get("iowait", 0)) / ticks,
                ))
            pkts = d.get("wan_rx", 0) + d.get("wan_tx", 0)
            if pkts:
                cs.append(d.get("ctxt", 0) / pkts)
            rb.append(d.get("udp_RcvbufErrors"))
            # The receiver's ACKs per data packet: the data leaves by the WAN going up.
            data, acks = ("wan_tx", "wan_rx") if key[2] == "up" else ("wan_rx", "wan_tx")
            if d.get(data):
                batches["ack/data"].append(d.get(acks, 0) / d[data])
            if d.get("host_tun_writes"):
                batches["peer pkt/tunwrite"].append(d.get("host_tun_tx_packets", 0) / d["host_tun_writes"])
            dg = d.get("udp_rx_datagrams", 0) + d.get("udp_tx_datagrams", 0)
            if dg:
                calls = sum(d.get(k, 0) for k in ("waits", "udp_recv_calls", "udp_send_calls", "tun_reads", "tun_writes"))
                sc.append(calls / dg)
                for name, num, den in (
                    ("dg/recv", "udp_rx_datagrams", "udp_recv_calls"),
                    ("dg/send", "udp_tx_datagrams", "udp_send_calls"),
                    ("pkt/tunread", "tun_rx_packets", "tun_reads"),
                    ("pkt/tunwrite", "tun_tx_packets", "tun_writes"),
                ):
                    if d.get(den):
                        batches[name].append(d.get(num, 0) / d[den])
            s = g["short"].get(rep)
            if s and int(s["bytes"]) and int(r["bytes"]) > int(s["bytes"]):
                ipb.append((int(r["insns"]) - int(s["insns"])) / (int(r["bytes"]) - int(s["bytes"])))
        cpu_m = tuple(med([c[i] for c in cpu]) for i in range(4)) if cpu else (None,) * 4
        table[key] = {
            "mbps": med(mbps),
            "range": (min(mbps), max(mbps)) if mbps else None,
            "retr": med(retr),
            "cpu": cpu_m,
            "cs": med(cs),
            "sc": med(sc),
            "rb": med(rb),
            "ipb": med(ipb),
            "batches": {k: med(v) for k, v in batches.items()},
        }

    print("| NIC | topology | dir | impl | Mbit/s (range) | retr | CPU user/sys/softirq/idle % | cs/pkt | insn/B | solowg sc/pkt | dg/recv | dg/send | pkt/tun write | pkt/tun read | UDP rcvbuf errors | ACK/data pkt | peer pkt/tun write |")
    print("|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(table):
        t = table[key]
        rng = "" if not t["range"] else f" ({t['range'][0]:.0f}-{t['range'][1]:.0f})"
        cpu = "/".join(fmt(x, "{:.0f}") for x in t["cpu"])
        b = t["batches"]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {fmt(t['mbps'])}{rng} | {fmt(t['retr'], '{:.0f}')} | {cpu} "
              f"| {fmt(t['cs'], '{:.2f}')} | {fmt(t['ipb'])} | {fmt(t['sc'], '{:.2f}')} | {fmt(b.get('dg/recv'), '{:.2f}')} "
              f"| {fmt(b.get('dg/send'), '{:.2f}')} | {fmt(b.get('pkt/tunwrite'), '{:.2f}')} | {fmt(b.get('pkt/tunread'), '{:.2f}')} "
              f"| {fmt(t['rb'], '{:.0f}')} | {fmt(b.get('ack/data'), '{:.2f}')} | {fmt(b.get('peer pkt/tunwrite'), '{:.2f}')} |")
    print()
    print("solowg / kernel (throughput: above 1 is faster; instructions per byte: below 1 is cheaper):")
    print()
    print("| NIC | topology | dir | Mbit/s ratio | insn/B ratio |")
    print("|---|---|---|---:|---:|")
    for (nic, topo, d, impl) in sorted(table):
        if impl != "solowg" or (nic, topo, d, "kernel") not in table:
            continue
        s, k = table[(nic, topo, d, "solowg")], table[(nic, topo, d, "kernel")]
        mr = s["mbps"] / k["mbps"] if s["mbps"] and k["mbps"] else None
        ir = s["ipb"] / k["ipb"] if s["ipb"] and k["ipb"] else None
        print(f"| {nic} | {topo} | {d} | {fmt(mr, '{:.2f}')} | {fmt(ir, '{:.2f}')} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
