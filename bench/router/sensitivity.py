#!/usr/bin/env python3
"""solowg / kernel module under every model variant (standard library only).

usage: sensitivity.py RAW_DIR [RAW_DIR ...] [--bar 0.8] [--json OUT]

For each NIC, topology and direction measured with both implementations in RAW_DIR's raw.tsv:
the ratio of the medians of modeled cycles per byte (solowg / module) under each variant of
cost.VARIANTS (memory latency 20-70 cycles, with and without sequential-line I-cache prefetch,
instructions alone), and the worst of them. A claim holds where the worst ratio is under the
bar. Exit status 0 either way: this reports, it does not judge a build.
"""
import csv
import json
import os
import statistics
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cost  # noqa: E402
import report  # noqa: E402


def pairs(raw_dirs):
    """{(nic, topo, dir, impl): [(long_row, short_row)]} over the raw directories."""
    out = defaultdict(list)
    for d in raw_dirs:
        path = os.path.join(d, "raw.tsv")
        if not os.path.exists(path):
            continue
        g = defaultdict(dict)
        with open(path) as f:
            for r in csv.DictReader(f, delimiter="\t"):
                g[(r["nic"], r["topo"], r["dir"], r["impl"], r["rep"])][r["kind"]] = r
        for (nic, topo, d_, impl, _), kinds in g.items():
            if "long" in kinds and "short" in kinds:
                out[(nic, topo, d_, impl)].append((kinds["long"], kinds["short"]))
    return out


def medians(prs, model):
    out = {}
    for key, lst in prs.items():
        vals = [m["total"] for m in (report.per_byte_model(model, lo, sh) for lo, sh in lst) if m]
        if vals:
            out[key] = (statistics.median(vals), min(vals), max(vals))
    return out


def main(argv):
    bar, json_out, dirs = 0.8, None, []
    it = iter(argv)
    for a in it:
        if a == "--bar":
            bar = float(next(it))
        elif a == "--json":
            json_out = next(it)
        else:
            dirs.append(a)
    if not dirs:
        sys.exit(__doc__)
    prs = pairs(dirs)
    per_variant = {name: medians(prs, cost.Model(**kw)) for name, kw in cost.VARIANTS.items()}
    settings = sorted({k[:3] for k in prs if k[3] == "solowg" and (*k[:3], "kernel") in prs})
    if not settings:
        print("sensitivity.py: no setting with both the module and solowg in", " ".join(dirs))
        return
    names = list(cost.VARIANTS)
    print(f"solowg / module, modeled cycles per byte (medians of the runs), by model variant; bar {bar:g}:")
    print()
    print("| NIC | topology | dir | " + " | ".join(names) + " | worst | holds |")
    print("|---|---|---|" + "---:|" * (len(names) + 1) + "---|")
    rows, holds_all = [], True
    for s in settings:
        ratios = {}
        for n in names:
            m = per_variant[n]
            if (*s, "solowg") in m and (*s, "kernel") in m:
                ratios[n] = m[(*s, "solowg")][0] / m[(*s, "kernel")][0]
        worst = max(ratios.values()) if ratios else None
        holds = worst is not None and worst <= bar
        holds_all &= holds
        cells = " | ".join(f"{ratios[n]:.2f}" if n in ratios else "-" for n in names)
        print(f"| {s[0]} | {s[1]} | {s[2]} | {cells} | {worst:.2f} | {'yes' if holds else 'no'} |")
        rows.append({"nic": s[0], "topo": s[1], "dir": s[2], "ratios": ratios, "worst": worst})
    print()
    print(f"Bar {bar:g} {'holds in every setting under every variant' if holds_all else 'does not hold everywhere'}"
          f" ({sum(1 for r in rows if r['worst'] is not None and r['worst'] <= bar)} of {len(rows)} settings).")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"bar": bar, "variants": cost.VARIANTS, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
