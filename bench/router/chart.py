#!/usr/bin/env python3
"""Modeled cycles per byte by setting, kernel module beside solowg, split by cost: an SVG chart
(standard library only) from the JSON that report.py --json writes.

usage: chart.py MODEL_JSON [MODEL_JSON ...] OUT_SVG [--title TEXT]

Several JSON files (e.g. two guest kernels) are drawn one group after the other, each labelled
with its file's "label" (report.py's --label) or its position.
"""
import json
import sys
from xml.sax.saxutils import escape

COSTS = (
    ("insns", "instructions", "#4e79a7"),
    ("stall", "pipeline stalls", "#a0cbe8"),
    ("icache", "I-cache misses", "#f28e2b"),
    ("dcache", "D-cache misses and write-backs", "#ffbe7d"),
    ("uncached", "uncached and device accesses", "#59a14f"),
    ("exceptions", "exceptions and TLB refills", "#b6992d"),
    ("dma", "NIC cache maintenance", "#e15759"),
)
IMPLS = ("kernel", "solowg")


def load(paths):
    groups = []
    for i, p in enumerate(paths):
        doc = json.load(open(p))
        rows = doc["rows"] if isinstance(doc, dict) else doc
        label = doc.get("label", f"run {i + 1}") if isinstance(doc, dict) else f"run {i + 1}"
        settings = {}
        for r in rows:
            if r.get("model"):
                settings.setdefault((r["nic"], r["topo"], r["dir"]), {})[r["impl"]] = r["model"]
        groups.append((label, settings))
    return groups


def svg(groups, title):
    bar, gap, set_gap, left, top, height = 18, 4, 22, 70, 60, 300
    n_settings = sum(len(s) for _, s in groups)
    width = left + 20 + n_settings * (2 * bar + gap + set_gap) + 20 * len(groups) + 230
    peak = max((m["total"] for _, s in groups for v in s.values() for m in v.values()), default=1)
    step = next(x for x in (5, 10, 20, 25, 50, 100, 200, 500) if peak / x <= 8)
    ymax = step * (int(peak / step) + 1)
    y = lambda v: top + height - v / ymax * height  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 110}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<text x="{left}" y="40">modeled 24K cycles per byte carried; left bar of each pair: '
           'the kernel module (k), right: solowg (s); lower is better</text>']
    for v in range(0, ymax + 1, step):
        out.append(f'<line x1="{left}" x2="{width - 240}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    x = left + 10
    for label, settings in groups:
        gx = x
        for key in sorted(settings):
            for j, impl in enumerate(IMPLS):
                m = settings[key].get(impl)
                bx = x + j * (bar + gap)
                if not m:
                    continue
                acc = 0.0
                for name, _, colour in COSTS:
                    v = max(m.get(name, 0.0), 0.0)
                    out.append(f'<rect x="{bx}" y="{y(acc + v):.1f}" width="{bar}" height="{v / ymax * height:.1f}" '
                               f'fill="{colour}"><title>{escape(impl)} {escape(" ".join(key))}: {name} {v:.1f}</title></rect>')
                    acc += v
                out.append(f'<text x="{bx + bar / 2}" y="{y(acc) - 3:.1f}" text-anchor="middle" font-size="9">{acc:.0f}</text>')
                out.append(f'<text x="{bx + bar / 2}" y="{top + height + 12}" text-anchor="middle" font-size="9">{impl[0]}</text>')
            cx = x + bar + gap / 2
            nic, topo, d = key
            out.append(f'<text x="{cx}" y="{top + height + 26}" text-anchor="middle" font-size="9">{topo[:4]} {d}</text>')
            out.append(f'<text x="{cx}" y="{top + height + 38}" text-anchor="middle" font-size="9">{nic}</text>')
            x += 2 * bar + gap + set_gap
        out.append(f'<text x="{(gx + x - set_gap) / 2}" y="{top + height + 58}" text-anchor="middle" '
                   f'font-weight="bold">{escape(label)}</text>')
        x += 20
    lx = width - 225
    for i, (_, name, colour) in enumerate(reversed(COSTS)):
        out.append(f'<rect x="{lx}" y="{top + i * 18}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 17}" y="{top + i * 18 + 10}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    title = "bench/router: modeled cycles per byte"
    if "--title" in argv:
        i = argv.index("--title")
        title = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    groups = load(argv[:-1])
    with open(argv[-1], "w") as f:
        f.write(svg(groups, title))


if __name__ == "__main__":
    main(sys.argv[1:])
