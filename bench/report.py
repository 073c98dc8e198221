#!/usr/bin/env python3
"""Turns bench/run's raw.tsv (+ the iperf3 JSON next to it) into one markdown
table per pinning, printed and written to <prefix>-<pinning>.md.

Standard library only, so it runs on a bare Debian with python3.
usage: report.py RAW_TSV OUT_PREFIX            (bench/run)
       report.py --scale RAW_TSV OUT_MD        (bench/scale)

All arithmetic lives here, not in bash: the raw file keeps plain counter
deltas, so a changed formula can be re-run on old data.
"""
import json
import os
import statistics
import sys

COLUMNS = [
    ("impl", "implementation"),
    ("tcp_ab", "TCP A→B Mbit/s"),
    ("tcp_ba", "TCP B→A Mbit/s"),
    ("udp_mbps", "UDP recv Mbit/s"),
    ("udp_loss", "UDP loss %"),
    ("cpu_gb", "CPU s/GB"),
    ("sc_pkt", "syscalls/pkt"),
    ("sc_mb", "TCP sc/MB"),
    ("sc_tx", "TX sc/pkt"),
    ("sc_rx", "RX sc/pkt"),
    ("vcs_pkt", "vol cs/pkt"),
    ("nvcs_pkt", "invol cs/pkt"),
    ("threads", "threads"),
    ("rss", "peak RSS MiB"),
]


def read_raw(path):
    meta, rows = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "#meta":
                k, _, v = parts[1].partition("=")
                meta[k] = v
                continue
            if len(parts) < 4:
                continue
            rec = dict(p.partition("=")[::2] for p in parts[4:])
            rows.append((parts[0], parts[1], int(parts[2]), parts[3], rec))
    return meta, rows


def num(rec, key):
    try:
        return float(rec.get(key, "nan"))
    except ValueError:
        return float("nan")


def iperf(raw_dir, rec):
    """(receiver bytes, receiver Mbit/s, loss %) from one iperf3 -J file."""
    try:
        with open(os.path.join(raw_dir, rec["json"]), encoding="utf-8") as f:
            j = json.load(f)
    except (KeyError, OSError, ValueError):
        return None
    end = j.get("end", {})
    if "sum_received" in end:  # TCP; UDP in newer iperf3
        r = end["sum_received"]
        loss = r.get("lost_percent", end.get("sum", {}).get("lost_percent"))
        return r.get("bytes", 0), r.get("bits_per_second", 0) / 1e6, loss
    s = end.get("sum", {})  # UDP, iperf3 3.12: sender totals + receiver loss
    if not s:
        return None
    loss = s.get("lost_percent", 0.0)
    keep = 1 - loss / 100
    return s.get("bytes", 0) * keep, s.get("bits_per_second", 0) * keep / 1e6, loss


def median(xs):
    xs = [x for x in xs if x == x]  # drop NaN
    return statistics.median(xs) if xs else float("nan")


def ratio(a, b):
    return a / b if b and a == a and b == b else float("nan")


def summarise(raw_dir, clk, rows, impl, pin):
    """Median-of-runs metrics for one implementation and pinning."""
    mine = [(run, kind, rec) for (i, p, run, kind, rec) in rows if i == impl and p == pin]
    out = {"impl": impl}
    fail = [rec.get("reason", "?") for _, kind, rec in mine if kind == "fail"]
    if fail:
        out["fail"] = fail[0]
    runs = sorted({run for run, kind, _ in mine if kind == "tcp_ab"})
    by = {(run, kind): rec for run, kind, rec in mine}
    ab, ba, cpu, vcs, nvcs, udp, loss, thr = [], [], [], [], [], [], [], []
    for run in runs:
        a, b = by.get((run, "tcp_ab")), by.get((run, "tcp_ba"))
        ia, ib = iperf(raw_dir, a) if a else None, iperf(raw_dir, b) if b else None
        ab.append(ia[1] if ia else float("nan"))
        ba.append(ib[1] if ib else float("nan"))
        # CPU s/GB and context switches pool both TCP directions of the run:
        # both daemons' CPU over both, divided by the payload both moved.
        recs = [(r, i) for r, i in ((a, ia), (b, ib)) if r and i]
        ticks = sum(num(r, "d_ticks_a") + num(r, "d_ticks_b") for r, _ in recs)
        gbytes = sum(i[0] for _, i in recs) / 1e9
        pkts = sum(num(r, k) for r, _ in recs for k in ("d_rx_a", "d_tx_a", "d_rx_b", "d_tx_b"))
        cpu.append(ratio(ticks / clk, gbytes))
        vcs.append(ratio(sum(num(r, "d_vcs_a") + num(r, "d_vcs_b") for r, _ in recs), pkts))
        nvcs.append(ratio(sum(num(r, "d_nvcs_a") + num(r, "d_nvcs_b") for r, _ in recs), pkts))
        for r, _ in recs:
            thr.append(max(num(r, "threads_a"), num(r, "threads_b")))
        u = by.get((run, "udp"))
        iu = iperf(raw_dir, u) if u else None
        udp.append(iu[1] if iu else float("nan"))
        loss.append(iu[2] if iu and iu[2] is not None else float("nan"))
    out.update(tcp_ab=median(ab), tcp_ba=median(ba), udp_mbps=median(udp), udp_loss=median(loss),
               cpu_gb=median(cpu), vcs_pkt=median(vcs), nvcs_pkt=median(nvcs),
               threads=max(thr) if thr else float("nan"))
    out["tcp_ab_range"] = (min(ab), max(ab)) if len(ab) > 1 else None
    out["tcp_ba_range"] = (min(ba), max(ba)) if len(ba) > 1 else None
    sc = by.get((0, "sc_tcp"))
    if sc:
        # Per packet through a daemon: both daemons' syscalls over the packets
        # both moved through their TUNs (read from it + written to it).
        pk = sum(num(sc, k) for k in ("d_rx_a", "d_tx_a", "d_rx_b", "d_tx_b"))
        out["sc_pkt"] = ratio(num(sc, "sc_a") + num(sc, "sc_b"), pk)
        # With TUN offload one TUN packet can be a 64 KiB TSO/GRO super-packet, so per
        # packet stops comparing like with like; per MB of payload always does.
        if num(sc, "bytes") > 0:
            out["sc_mb"] = ratio(num(sc, "sc_a") + num(sc, "sc_b"), num(sc, "bytes") / 1e6)
    su = by.get((0, "sc_udp"))
    if su:
        # One-way UDP A->B: A's daemon only reads its TUN and sends (TX path),
        # B's only receives and writes its TUN (RX path).
        out["sc_tx"] = ratio(num(su, "sc_a"), num(su, "d_tx_a"))
        out["sc_rx"] = ratio(num(su, "sc_b"), num(su, "d_rx_b"))
    mem = by.get((0, "mem"))
    if mem:
        out["rss"] = max(num(mem, "hwm_a"), num(mem, "hwm_b")) / 1024
    return out


def fmt(key, row):
    v = row.get(key)
    if key == "impl":
        return v + (" (FAILED)" if "fail" in row else "")
    if v is None or v != v:
        return "–"
    if key in ("tcp_ab", "tcp_ba"):
        s = f"{v:.0f}"
        rng = row.get(key + "_range")
        if rng and rng[0] == rng[0] and rng[1] == rng[1]:
            s += f" ({rng[0]:.0f}–{rng[1]:.0f})"
        return s
    digits = {"udp_mbps": 0, "sc_mb": 0, "threads": 0, "rss": 2, "vcs_pkt": 3, "nvcs_pkt": 3}.get(key, 2)
    return f"{v:.{digits}f}"


def table(rows_out):
    head = "| " + " | ".join(h for _, h in COLUMNS) + " |"
    sep = "|" + "|".join("---" if k == "impl" else "---:" for k, _ in COLUMNS) + "|"
    body = ["| " + " | ".join(fmt(k, r) for k, _ in COLUMNS) + " |" for r in rows_out]
    return "\n".join([head, sep] + body)


def comparison(rows_out):
    """solowg / best other implementation, for the headline figures."""
    solo = next((r for r in rows_out if r["impl"] == "solowg" and "fail" not in r), None)
    others = [r for r in rows_out if r["impl"] != "solowg" and "fail" not in r]
    if not solo or not others:
        return []
    lines = ["", "solowg / best other implementation (best = lowest CPU, highest throughput):", ""]

    def best(key, pick):
        vals = [(r[key], r["impl"]) for r in others if r.get(key) == r.get(key) and r.get(key) is not None]
        return pick(vals) if vals else (float("nan"), "–")

    for key, label, pick, better in (
        ("cpu_gb", "CPU s/GB", min, "lower is better"),
        ("tcp_ab", "TCP A→B", max, "higher is better"),
        ("tcp_ba", "TCP B→A", max, "higher is better"),
    ):
        v, who = best(key, pick)
        lines.append(f"- {label}: solowg {solo.get(key, float('nan')):.2f} / {who} {v:.2f} = "
                     f"**{ratio(solo.get(key, float('nan')), v):.2f}** ({better})")
    if solo.get("sc_tx") is not None:
        lines.append(f"- solowg syscalls per packet: TX path (TUN read + UDP send) {solo['sc_tx']:.2f}, "
                     f"RX path (UDP receive + TUN write) {solo.get('sc_rx', float('nan')):.2f}")
    return lines


def scale_report(raw_path, out_path):
    """bench/scale: one row per phase (1 peer, N peers) of daemon A."""
    raw_dir = os.path.dirname(os.path.abspath(raw_path))
    meta, rows = {}, []
    with open(raw_path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "#meta":
                k, _, v = parts[1].partition("=")
                meta[k] = v
            elif len(parts) >= 3:
                rows.append((parts[0], int(parts[1]), parts[2],
                             dict(p.partition("=")[::2] for p in parts[3:])))
    clk = float(meta.get("clk_tck", "100"))
    phases = list(dict.fromkeys(r[0] for r in rows))
    out = []
    for ph in phases:
        mine = [(run, kind, rec) for p, run, kind, rec in rows if p == ph]
        apply_rec = next((rec for run, kind, rec in mine if kind == "apply"), {})
        after = next((rec for run, kind, rec in mine if kind == "after"), {})
        res = {"phase": ph, "peers": apply_rec.get("peers", "?"),
               "setconf": num(apply_rec, "setconf_ms"), "show": num(apply_rec, "show_ms"),
               "rss_set": num(apply_rec, "rss_kb") / 1024, "rss_after": num(after, "rss_kb") / 1024,
               "hwm": num(after, "hwm_kb") / 1024}
        for kind in ("tcp_ab", "tcp_ba"):
            mbps, cpu_a, cpu_b = [], [], []
            for run, k, rec in mine:
                if k != kind:
                    continue
                i = iperf(raw_dir, rec)
                if not i:
                    continue
                mbps.append(i[1])
                cpu_a.append(ratio(num(rec, "d_ticks_a") / clk, i[0] / 1e9))
                cpu_b.append(ratio(num(rec, "d_ticks_b") / clk, i[0] / 1e9))
            res[kind] = median(mbps)
            res[kind + "_cpu_a"] = median(cpu_a)
            res[kind + "_cpu_b"] = median(cpu_b)
        out.append(res)

    def f(v, d=1):
        return "–" if v is None or v != v else f"{v:.{d}f}"

    md = [
        f"# solowg peer scaling {meta.get('stamp', '')}",
        "",
        f"Daemon A holds the peers; B is its one real peer (the last in A's config). "
        f"Pinning `{meta.get('pinning')}`; median of {meta.get('runs')} run(s) x {meta.get('seconds')} s "
        f"per direction. CPU s/GB = that daemon's utime+stime / GB of iperf3 payload.",
        f"{meta.get('date', '')}; {meta.get('host', '')}; load average at start "
        f"{meta.get('loadavg_start', '?')}, at end {meta.get('loadavg_end', '?')}. {meta.get('version', '')}",
        "",
        "| peers on A | `wg setconf` ms | `wg show` ms | VmRSS after setconf MiB | VmRSS after traffic MiB "
        "| VmHWM MiB | TCP A→B Mbit/s | A CPU s/GB (A→B) | TCP B→A Mbit/s | A CPU s/GB (B→A) | B CPU s/GB (A→B) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in out:
        md.append(f"| {r['peers']} | {f(r['setconf'])} | {f(r['show'])} | {f(r['rss_set'], 2)} | "
                  f"{f(r['rss_after'], 2)} | {f(r['hwm'], 2)} | {f(r['tcp_ab'], 0)} | {f(r['tcp_ab_cpu_a'], 2)} | "
                  f"{f(r['tcp_ba'], 0)} | {f(r['tcp_ba_cpu_a'], 2)} | {f(r['tcp_ab_cpu_b'], 2)} |")
    if len(out) == 2:
        one, many = out
        md += ["", f"{many['peers']} peers / 1 peer: A's CPU s/GB x{f(ratio(many['tcp_ab_cpu_a'], one['tcp_ab_cpu_a']), 2)} "
                   f"(A→B, A encrypts) and x{f(ratio(many['tcp_ba_cpu_a'], one['tcp_ba_cpu_a']), 2)} (B→A, A decrypts); "
                   f"TCP A→B x{f(ratio(many['tcp_ab'], one['tcp_ab']), 2)}, B→A x{f(ratio(many['tcp_ba'], one['tcp_ba']), 2)}. "
                   f"B (1 peer throughout) is the control for machine noise: "
                   f"x{f(ratio(many['tcp_ab_cpu_b'], one['tcp_ab_cpu_b']), 2)}."]
    text = "\n".join(md) + "\n"
    print(text)
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main():
    if sys.argv[1] == "--scale":
        scale_report(sys.argv[2], sys.argv[3])
        return
    raw_path, prefix = sys.argv[1], sys.argv[2]
    raw_dir = os.path.dirname(os.path.abspath(raw_path))
    meta, rows = read_raw(raw_path)
    clk = float(meta.get("clk_tck", "100"))
    impls = meta.get("impls", "").split()
    pinnings = meta.get("pinnings", "").split()
    desc = {
        "onecpu": "everything (both daemons, iperf3 client and server) pinned to CPU 0",
        "spread": "A's daemon + iperf3 client on CPU 0, B's daemon + iperf3 server on CPU 1",
    }
    for pin in pinnings:
        rows_out = [summarise(raw_dir, clk, rows, impl, pin) for impl in impls]
        md = [
            f"# solowg benchmark {meta.get('stamp', '')}, pinning `{pin}`",
            "",
            f"{desc.get(pin, pin)}. Same implementation on both sides of a veth, MTU 1420 inner.",
            f"Median of {meta.get('runs')} run(s) x {meta.get('seconds')} s; "
            f"UDP `{meta.get('udp')}`; syscalls counted with {meta.get('sc_tool')} "
            f"in separate {meta.get('sc_seconds')} s runs.",
            f"{meta.get('date', '')}; {meta.get('host', '')}; "
            f"load average at start {meta.get('loadavg_start', '?')}, at end {meta.get('loadavg_end', '?')}.",
            "",
            table(rows_out),
        ]
        md += comparison(rows_out)
        fails = [f"- {r['impl']}: {r['fail']}" for r in rows_out if "fail" in r]
        if fails:
            md += ["", "Failed:"] + fails
        md += ["", "Versions: " + "; ".join(
            f"{i}: {meta.get('version_' + i) or '?'}" for i in impls)]
        text = "\n".join(md) + "\n"
        print(text)
        with open(f"{prefix}-{pin}.md", "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
