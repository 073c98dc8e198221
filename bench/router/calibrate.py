#!/usr/bin/env python3
"""The cost model against published figures, fitted on some and checked on the others
(standard library only).

usage: calibrate.py RAW_DIR [RAW_DIR ...]

RAW_DIR (one or more) is what `bench/router/run` left: calib.tsv (--calibrate's settings in the
guest: ChaCha20-Poly1305 sealing, loopback iperf3, openssl speed, the two-namespace WireGuard
tunnel) and raw.tsv (tunnel and forwarding runs: the kernel module, nat, fastd-*,
wireguard-go). For each model family (cost.VARIANTS without their memory latency: I-cache
misses as counted, or with sequential-line prefetch), the memory latency is fitted to the
anchors of anchors.tsv whose role is `fit` (least squares of the log error, 5-200 cycles at
580 MHz, the same time in nanoseconds at each anchor's clock), and every anchor's error is
printed with it; the `check` anchors are held out of the fit. Then
the errors of instructions alone, and a summary of the held-out errors per family.
"""
import csv
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cost  # noqa: E402
import report  # noqa: E402

FAMILIES = {"as counted": {}, "with prefetch": {"prefetch": True}}


def anchors():
    with open(os.path.join(HERE, "anchors.tsv")) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def guest_settings(raw_dir, model):
    """{("-", setting): [(insn/B, cycles/B), ...]} of calib.tsv: per run, the larger size minus
    the smaller (start-up and per-process costs cancel)."""
    out = {}
    path = os.path.join(raw_dir, "calib.tsv")
    if not os.path.exists(path):
        return out
    runs = {}
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
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
        out.setdefault(("-", what), []).append((ev["insns"] / (b1 - b0), c["total"] / (b1 - b0)))
    return out


def tunnel_settings(raw_dir, model):
    """{(nic, "IMPL TOPO DIR"): [(insn/B, cycles/B)]} from raw.tsv, for the implementations an
    anchor may name (not solowg: nothing published to check it by)."""
    out = {}
    path = os.path.join(raw_dir, "raw.tsv")
    if not os.path.exists(path):
        return out
    by = {}
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["impl"] != "solowg" and int(r["bytes"]) > 0:
                by.setdefault((r["nic"], r["impl"], r["topo"], r["dir"], r["rep"]), {})[r["kind"]] = r
    for (nic, impl, topo, d, _), g in by.items():
        if "long" in g and "short" in g:
            m = report.per_byte_model(model, g["long"], g["short"])
            if m:
                out.setdefault((nic, f"{impl} {topo} {d}"), []).append((m["insns"], m["total"]))
    return out


def measured(raw_dirs, model):
    s = {}
    for raw_dir in raw_dirs:
        for part in (guest_settings(raw_dir, model), tunnel_settings(raw_dir, model)):
            for k, v in part.items():
                s.setdefault(k, []).extend(v)
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in s.items()}


def matches(anchor, at):
    """The measured settings an anchor is compared with."""
    nic, setting = anchor["nic"], anchor["setting"]
    return sorted(k for k in at if k[0] == nic and (k[1] == setting or k[1].startswith(setting + " ")))


def clock(anchor):
    """The anchor's clock in MHz (the middle of a range such as 550-650)."""
    lo, _, hi = anchor["mhz"].partition("-")
    return (float(lo) + float(hi or lo)) / 2


def latency(m, anchor):
    """The memory latency in the anchor's core cycles for m cycles at 580 MHz: the DRAM behind
    these SoCs answers in about the same time whatever the core's clock, so a 400 MHz core
    waits fewer of its cycles than a 720 MHz one."""
    return m * clock(anchor) / 580


def modeled(m, anchor, key, at0, at1):
    return at0[key][1] + latency(m, anchor) * (at1[key][1] - at0[key][1])


def fit_memory(fit_rows, at0, at1):
    """The latency (cycles at 580 MHz) minimising the squared log error over the fit anchors
    (each the median of its settings), by a 1-cycle grid; None without fit anchors."""
    if not fit_rows:
        return None

    def err(m):
        e = 0.0
        for a, keys in fit_rows:
            v = statistics.median(modeled(m, a, k, at0, at1) for k in keys)
            e += math.log(v / float(a["cycles_per_byte"])) ** 2
        return e

    return min(range(5, 201), key=err)


def main(*raw_dirs):
    plain = measured(raw_dirs, cost.Model(plain=True))
    rows = [(a, matches(a, plain)) for a in anchors()]
    rows = [(a, keys) for a, keys in rows if keys]
    if not rows:
        print("calibrate.py: no calibration settings in", " ".join(raw_dirs))
        return
    summary = []
    for fam, kw in FAMILIES.items():
        at0 = measured(raw_dirs, cost.Model(memory=0, **kw))
        at1 = measured(raw_dirs, cost.Model(memory=1, **kw))
        m = fit_memory([(a, k) for a, k in rows if a["role"] == "fit"], at0, at1)
        if m is None:
            print(f"calibrate.py: no `fit` anchor was run; {fam}: not fitted")
            continue
        print(f"Model {fam}: memory latency fitted to the `fit` anchors: {m} cycles at 580 MHz "
              f"({1000 * m / 580:.0f} ns, the same time at each anchor's clock). Modeled 24K cycles "
              "per byte against the published:")
        print()
        print("| anchor | role | device (core, MHz) | published c/B | emulated setting | insn/B | modeled c/B | error | insns alone: error |")
        print("|---|---|---|---:|---|---:|---:|---:|---:|")
        held = []
        for a, keys in rows:
            pub = float(a["cycles_per_byte"])
            for k in keys:
                v = modeled(m, a, k, at0, at1)
                ipb = plain[k][0]
                err = 100 * (v / pub - 1)
                if a["role"] == "check":
                    held.append((a["anchor"], err))
                where = k[1] if k[0] == "-" else f"{k[1]}, {k[0]}"
                print(f"| {a['anchor']} | {'fit' if a['role'] == 'fit' else 'held out'} | {a['device']} "
                      f"({a['soc_core']}, {a['mhz']}) | {pub:.1f} | {where} | {ipb:.1f} | {v:.1f} | {err:+.0f}% "
                      f"| {100 * (ipb / pub - 1):+.0f}% |")
        print()
        if held:
            # One error per anchor: the setting nearest to the published figure (the anchors do not
            # say which direction or topology they used).
            best = {}
            for name, e in held:
                best[name] = e if name not in best or abs(e) < abs(best[name]) else best[name]
            absb = sorted(abs(e) for e in best.values())
            summary.append((fam, m, len(best), statistics.median(absb), absb[-1]))
    if summary:
        print("Held-out anchors, per anchor the setting nearest its figure:")
        print()
        print("| model | memory latency | anchors | median abs error | worst abs error |")
        print("|---|---:|---:|---:|---:|")
        for fam, m, n, med, worst in summary:
            print(f"| {fam} | {m} | {n} | {med:.0f}% | {worst:.0f}% |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(*sys.argv[1:])
