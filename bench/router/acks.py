#!/usr/bin/env python3
"""Instructions per byte against the receiver's acknowledgements per data packet, over the
pairs (long and short run) of one or more bench/router raw directories.

The peer acknowledges each implementation's data at its own rate (how spread out the
datagrams reach it), and every acknowledgement costs the router work; a least-squares line
per implementation and topology tells what each would cost at the same rate.

    bench/router/acks.py [--nic plain] [--dir up] [--at 0.2 0.35]
                         [--bins 0.05 0.15 0.25 0.35] RAW_DIR...

Besides the line, the pairs are put in bins of acknowledgement rate (edges from --bins): per
bin and topology, the median of each implementation and solowg's over the module's.
"""
import argparse
import csv
import os
import sys

from report import delta, med


def pairs(raw_dir, nic, direction):
    """(impl, topology, acks per data packet, instructions per byte, raw dir) per pair."""
    runs = {}
    with open(os.path.join(raw_dir, "raw.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["nic"] != nic or r["dir"] != direction or not r["bytes"] or r["bytes"] == "0":
                continue
            runs.setdefault((r["impl"], r["topo"], r["rep"]), {})[r["kind"]] = r
    for (impl, topo, _), kinds in sorted(runs.items()):
        long, short = kinds.get("long"), kinds.get("short")
        if not long or not short:
            continue
        d_bytes = int(long["bytes"]) - int(short["bytes"])
        d_insns = int(long["insns"]) - int(short["insns"])
        moved = delta(long)
        data, acks = ("wan_tx", "wan_rx") if direction == "up" else ("wan_rx", "wan_tx")
        if data not in moved or acks not in moved:
            continue
        n_data, n_acks = moved[data], moved[acks]
        if d_bytes > 0 and n_data > 0:
            yield impl, topo, n_acks / n_data, d_insns / d_bytes, os.path.basename(raw_dir.rstrip("/")).removesuffix("-router-raw")


def fit(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    syy = sum((y - my) ** 2 for _, y in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    if sxx == 0 or syy == 0:
        return None
    slope = sxy / sxx
    return my - slope * mx, slope, sxy / (sxx * syy) ** 0.5


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nic", default="plain")
    ap.add_argument("--dir", default="up", choices=("up", "down"))
    ap.add_argument("--at", type=float, nargs="+", default=[0.2, 0.35])
    ap.add_argument("--bins", type=float, nargs="+", default=[0.05, 0.15, 0.25, 0.35])
    ap.add_argument("raw_dirs", nargs="+")
    args = ap.parse_args()
    groups = {}
    for d in args.raw_dirs:
        if not os.path.exists(os.path.join(d, "raw.tsv")):
            print(f"{d}: no raw.tsv, left out", file=sys.stderr)
            continue
        for impl, topo, acks, ipb, name in pairs(d, args.nic, args.dir):
            groups.setdefault((topo, impl), []).append((acks, ipb, name))
    at = " | ".join(f"at {a:.2f}" for a in args.at)
    print(f"{args.nic} NIC, {args.dir}: instructions per byte = a + b x (ACKs per data packet)\n")
    print(f"| topology | impl | pairs | ACKs per data packet | a | b | r | {at} |")
    print("|---|---|---:|---|---:|---:|---:|" + "---:|" * len(args.at))
    for (topo, impl), pts in sorted(groups.items()):
        xy = [(x, y) for x, y, _ in pts]
        line = fit(xy) if len(xy) >= 3 else None
        if line is None:
            print(f"| {topo} | {impl} | {len(xy)} | too few or equal points |")
            continue
        a, b, r = line
        lo, hi = min(x for x, _ in xy), max(x for x, _ in xy)
        vals = " | ".join(f"{a + b * x:.1f}" for x in args.at)
        print(f"| {topo} | {impl} | {len(xy)} | {lo:.2f}-{hi:.2f} | {a:.1f} | {b:.1f} | {r:.2f} | {vals} |")
    print("\n| topology | ACKs per data packet | module: pairs, median | solowg: pairs, median | ratio |")
    print("|---|---|---|---|---:|")
    edges = sorted(args.bins)
    for topo in sorted({t for t, _ in groups}):
        for lo, hi in zip(edges, edges[1:]):
            cells, mid = [], {}
            for impl in ("kernel", "solowg"):
                ys = [y for x, y, _ in groups.get((topo, impl), []) if lo <= x < hi]
                mid[impl] = med(ys)
                cells.append(f"{len(ys)}, {mid[impl]:.1f}" if ys else "0, -")
            ratio = f"{mid['solowg'] / mid['kernel']:.2f}" if all(mid.values()) else "-"
            print(f"| {topo} | {lo:.2f}-{hi:.2f} | {cells[0]} | {cells[1]} | {ratio} |")
    print()
    for (topo, impl), pts in sorted(groups.items()):
        print(f"{topo} {impl}: " + ", ".join(f"{x:.2f}/{y:.1f} ({n})" for x, y, n in sorted(pts)))


if __name__ == "__main__":
    main()
