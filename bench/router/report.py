#!/usr/bin/env python3
"""Tables for bench/router from its raw.tsv (standard library only).

usage: report.py RAW_TSV [--json OUT [--label TEXT]]

One row per NIC, topology, direction and implementation: medians over the long runs, and
instructions per byte from each (long, short) pair of runs; then the modeled cycles per byte
of each pair (cost.py, cpu-model.ini) split by cost, with the misses behind them; then
solowg / kernel ratios. --json writes the cycle table for chart.py.
"""
import csv
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost  # noqa: E402

NICS = ("wan", "lan")
COSTS = ("insns", "stall", "icache", "dcache", "uncached", "exceptions", "dma")


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


def model_delta(row):
    """The plugin's counters over a run (instructions as "insns"), {} for rows without them."""
    if not row.get("model_before") or not row.get("model_after"):
        return {}
    return cost.diff(cost.parse_events(row["model_after"]), cost.parse_events(row["model_before"]))


def nic_delta(row):
    d = delta(row)
    return {
        "frames": sum(d.get(f"{n}_{x}", 0) for n in NICS for x in ("rx", "tx")),
        "bytes": sum(d.get(f"{n}_{x}b", 0) for n in NICS for x in ("rx", "tx")),
    }


def per_byte_model(model, long_row, short_row):
    """Modeled cycles and events per byte of the long run minus the short one, or None."""
    ml, ms = model_delta(long_row), model_delta(short_row)
    nb = int(long_row["bytes"]) - int(short_row["bytes"])
    if not ml or not ms or nb <= 0:
        return None
    ev = cost.diff(ml, ms)
    nl, ns = nic_delta(long_row), nic_delta(short_row)
    nic = {k: nl[k] - ns[k] for k in nl}
    c = model.cycles(ev.get("insns", 0), ev, nic)
    out = {k: v / nb for k, v in c.items()}
    for k in ("imiss", "refill"):
        out["n_" + k] = ev.get(k, 0) / nb
    out["n_dmiss"] = (ev.get("dload", 0) + ev.get("dstore", 0)) / nb
    out["n_uncached"] = sum(ev.get(k, 0) for k in ("uload", "ustore", "ioload", "iostore")) / nb
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec="{:.1f}"):
    return "-" if x is None else spec.format(x)


def main(path, json_out=None, label=None):
    model = cost.Model()
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    groups = defaultdict(lambda: {"long": {}, "short": {}})
    for r in rows:
        key = (r["nic"], r["topo"], r["dir"], r["impl"])
        groups[key][r["kind"]][r["rep"]] = r

    table = {}
    for key, g in groups.items():
        mbps, retr, cpu, cs, sc, rb, ipb, cyc = [], [], [], [], [], [], [], []
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
                m = per_byte_model(model, r, s)
                if m:
                    cyc.append(m)
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
            # The pair with the median modeled cycles, so its split adds up.
            "model": sorted(cyc, key=lambda m: m["total"])[len(cyc) // 2] if cyc else None,
            "model_range": (min(m["total"] for m in cyc), max(m["total"] for m in cyc)) if cyc else None,
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
    if any(t["model"] for t in table.values()):
        print()
        print(f"Modeled 24K cycles per byte (cpu-model.ini: I-cache {model.icache}, D-cache {model.dcache},"
              f" memory {model.memory:g} cycles), median pair (range), split by cost; then events per kilobyte:")
        print()
        print("| NIC | topology | dir | impl | insn/B | cycles/B (range) | stall | I-cache | D-cache | uncached | exceptions | NIC cache ops | I-miss/KB | D-miss/KB | TLB refill/KB | uncached/KB |")
        print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key in sorted(table):
            m = table[key]["model"]
            if not m:
                continue
            lo, hi = table[key]["model_range"]
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {m['insns']:.1f} | {m['total']:.1f} ({lo:.0f}-{hi:.0f}) "
                  + " ".join(f"| {m[c]:.1f}" for c in COSTS[1:])
                  + " " + " ".join(f"| {1024 * m[c]:.1f}" for c in ("n_imiss", "n_dmiss", "n_refill", "n_uncached")) + " |")
    print()
    print("solowg / kernel (throughput: above 1 is faster; instructions and cycles per byte: below 1 is cheaper):")
    print()
    print("| NIC | topology | dir | Mbit/s ratio | insn/B ratio | modeled cycles/B ratio |")
    print("|---|---|---|---:|---:|---:|")
    for (nic, topo, d, impl) in sorted(table):
        if impl != "solowg" or (nic, topo, d, "kernel") not in table:
            continue
        s, k = table[(nic, topo, d, "solowg")], table[(nic, topo, d, "kernel")]
        mr = s["mbps"] / k["mbps"] if s["mbps"] and k["mbps"] else None
        ir = s["ipb"] / k["ipb"] if s["ipb"] and k["ipb"] else None
        cr = s["model"]["total"] / k["model"]["total"] if s["model"] and k["model"] else None
        print(f"| {nic} | {topo} | {d} | {fmt(mr, '{:.2f}')} | {fmt(ir, '{:.2f}')} | {fmt(cr, '{:.2f}')} |")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"label": label or path, "rows": [
                {"nic": k[0], "topo": k[1], "dir": k[2], "impl": k[3], "mbps": t["mbps"], "ipb": t["ipb"],
                 "model": t["model"]} for k, t in sorted(table.items())]}, f, indent=1)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("raw_tsv")
    ap.add_argument("--json")
    ap.add_argument("--label")
    a = ap.parse_args()
    main(a.raw_tsv, a.json, a.label)
