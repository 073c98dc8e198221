#!/usr/bin/env python3
"""The cost model against published figures (standard library only).

usage: calibrate.py RAW_DIR [RAW_DIR ...]

RAW_DIR (one or more) is what `bench/router/run --calibrate` left: calib.tsv (the guest's
ChaCha20-Poly1305 sealing and loopback iperf3) and raw.tsv (the kernel module's runs, and
wireguard-go's where --impls named it). For each anchor of
anchors.tsv whose setting was run: the emulated instructions and modeled cycles per byte by
cpu-model.ini, the published cycles per byte and the error. Modeled cycles are linear in the
memory latency, the model's one free parameter; the latency that makes the first loopback
anchor (a 24KEc) exact is printed too, and the errors with it.
"""
import csv
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cost  # noqa: E402
import report  # noqa: E402


def anchors():
    with open(os.path.join(HERE, "anchors.tsv")) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def guest_settings(raw_dir, model):
    """{setting: [(insn/B, cycles/B), ...]} of calib.tsv: per run, the larger size minus the
    smaller (start-up and per-process costs cancel)."""
    out = {}
    path = os.path.join(raw_dir, "calib.tsv")
    if not os.path.exists(path):
        return out
    runs = {}
    with open(path) as f:
        calib = list(csv.DictReader(f, delimiter="\t"))
    for r in calib:
        ev = cost.diff(cost.parse_events(r["model_after"]), cost.parse_events(r["model_before"]))
        runs.setdefault((r["what"], r["rep"]), []).append((float(r["size"]), int(r["bytes"]), ev))
    for (what, _), pair in runs.items():
        if len(pair) != 2:
            continue
        (_, b0, e0), (_, b1, e1) = sorted(pair, key=lambda p: p[0])
        if b1 <= b0:
            continue
        ev = cost.diff(e1, e0)
        c = model.cycles(ev["insns"], ev)
        out.setdefault(what, []).append((ev["insns"] / (b1 - b0), c["total"] / (b1 - b0)))
    return out


def tunnel_settings(raw_dir, model):
    """{"IMPL TOPO DIR": [(insn/B, cycles/B)]} from raw.tsv's plain-NIC runs (the anchors'
    routers have no checksum offload), for the kernel module and wireguard-go."""
    out = {}
    path = os.path.join(raw_dir, "raw.tsv")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    by = {}
    for r in rows:
        if r["impl"] in ("kernel", "wireguard-go") and r["nic"] == "plain" and int(r["bytes"]) > 0:
            by.setdefault((r["impl"], r["topo"], r["dir"], r["rep"]), {})[r["kind"]] = r
    for (impl, topo, d, _), g in by.items():
        if "long" in g and "short" in g:
            m = report.per_byte_model(model, g["long"], g["short"])
            if m:
                out.setdefault(f"{impl} {topo} {d}", []).append((m["insns"], m["total"]))
    return out


def measured(raw_dirs, model):
    s = {}
    for raw_dir in raw_dirs:
        for part in (guest_settings(raw_dir, model), tunnel_settings(raw_dir, model)):
            for k, v in part.items():
                s.setdefault(k, []).extend(v)
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in s.items()}


def main(*raw_dirs):
    model = cost.Model()
    at = measured(raw_dirs, model)
    # Cycles are linear in the memory latency: at 0 and at 1 give the line.
    at0, at1 = measured(raw_dirs, cost.Model(memory=0)), measured(raw_dirs, cost.Model(memory=1))
    rows = []
    for a in anchors():
        for name in sorted(at):
            if name == a["setting"] or name.startswith(a["setting"] + " "):
                rows.append((a, name))
    if not rows:
        print("calibrate.py: no calibration settings in", " ".join(raw_dirs))
        return
    fit = None
    for a, name in rows:
        if a["setting"] == "loopback" and a["soc_core"].endswith("24KEc"):
            slope = at1[name][1] - at0[name][1]
            if slope > 0:
                fit = (float(a["cycles_per_byte"]) - at0[name][1]) / slope, a["anchor"]
            break
    print(f"Calibration: modeled 24K cycles per byte (cpu-model.ini, memory latency {model.memory:g} cycles)"
          + (f" and with the latency fitted to {fit[1]} ({fit[0]:.0f} cycles)" if fit else "")
          + ", against published figures (anchors.tsv):")
    print()
    print("| anchor | device | published cycles/B | emulated setting | insn/B | modeled cycles/B | error |"
          + (" fitted cycles/B | error |" if fit else ""))
    print("|---|---|---:|---|---:|---:|---:|" + ("---:|---:|" if fit else ""))
    for a, name in rows:
        pub = float(a["cycles_per_byte"])
        ipb, cpb = at[name]
        line = (f"| {a['anchor']} | {a['device']} ({a['soc_core']}, {a['mhz']} MHz) | {pub:.1f} | {name} "
                f"| {ipb:.1f} | {cpb:.1f} | {100 * (cpb / pub - 1):+.0f}% |")
        if fit:
            f = at0[name][1] + fit[0] * (at1[name][1] - at0[name][1])
            line += f" {f:.1f} | {100 * (f / pub - 1):+.0f}% |"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(*sys.argv[1:])
