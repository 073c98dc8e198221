#!/usr/bin/env python3
"""Whole-system guest profiles for bench/router --profile.

For each long run, the plugin dumped "address instructions executions imiss dmiss uncached
stall" per translated block before and after it (prof-NAME.0, prof-NAME.1); the difference,
attributed to the symbol holding each block's start, is the run's profile, ordered by the
modeled cycles (cpu-model.ini's penalties; a block's D-cache misses charged as load misses)
with the misses that make them. Kernel and module symbols come from the guest's
/proc/kallsyms (kallsyms-NIC-IMPL.txt; Debian's System.map is a placeholder), solowg's from
its unstripped ELF (names demangled by c++filt when present). A block is charged whole to
the symbol its first instruction is in. Where the plugin also counted TLB refills by the
page pair they filled (prof-NAME.N.tlb), a line says where they went: solowg's code, its
other mappings (from maps-NIC-solowg.txt) and kernel modules (KSEG2, by kallsyms). The TLB refill handler is not a symbol: Linux copies
it to EBase, a page it allocates at boot, found here as the page-aligned kernel block that is
executed most and whose page also holds the general exception vector (EBase + 0x180), in
KSEG0.

Then the same instructions and cycles by role (`ROLES`: the cipher, copies and checksums,
system calls, the TUN device, sockets, ...), and per setting the implementations side by
side, role by role (the mean over the runs): where one spends instructions the other does not.

    profile.py --solowg ELF [--top N] RAW_DIR
"""
import argparse
import bisect
import csv
import glob
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost  # noqa: E402


def long_run_bytes(raw_dir):
    """{nic-impl-topo-dir-rep: bytes} of the long runs from raw.tsv, {} if absent."""
    path = os.path.join(raw_dir, "raw.tsv")
    if not os.path.exists(path):
        return {}
    out = {}
    for r in csv.DictReader(open(path), delimiter="\t"):
        if r.get("kind") == "long" and r.get("bytes", "").isdigit():
            out["-".join(r[k] for k in ("nic", "impl", "topo", "dir", "rep"))] = int(r["bytes"])
    return out


# The columns of a block's counts after its address.
FIELDS = ("insns", "execs", "imiss", "dmiss", "uncached", "stall")


# The space a by-symbol key's first letter stands for.
SPACES = {"k": "kernel", "m": "modules", "u": "user"}

# Roles of the code a run executes, by symbol: the first pattern that matches names the
# role. Kernel names are Linux 6.12's; "[mod]" is a module's kallsyms suffix. The cipher is
# both implementations' ChaCha20-Poly1305 (the module's MIPS assembly, solowg's own).
ROLES = [
    ("random numbers", r"chacha_permute|get_random|crng"),
    ("cipher", r"chacha|poly1305|ChaCha20|Poly1305|aead::"),
    ("copies, checksums, zeroing", r"copy_to_user|copy_from_user|csum|memcpy|memmove|copy_page"
     r"|skb_copy_bits|__bzero|memset|checksum::|copy_to_iter|copy_from_iter|check_object_size"),
    ("TLB refills, exceptions", r"^\(TLB refill|^\(general exception|^handle_|tlb"),
    ("system calls, seccomp", r"syscall|seccomp|bpf_prog_run|iovec|msghdr|fdget|__fget"
     r"|rw_verify|readv_writev|do_readv|do_writev|vfs_|recvmmsg|sendmmsg|ksys_|__sys_|^sys_|_sys_|__se_sys"),
    ("TUN device", r"\[tun\]|^tun_"),
    ("NIC driver", r"virtnet|virtqueue|virtio|vring|^vp_|\[virtio_net\]|detach_buf|sg_miter"),
    ("sockets, UDP", r"udp|^sock_|^sk_|datagram|skb_recv|skb_consume|inet_recvmsg|inet_sendmsg"
     r"|ip_make_skb|ip_append_data|getfrag|__sk_"),
    ("TCP", r"tcp"),
    ("IP, routing, netfilter", r"^ip_|^__ip|fib|^nf_|^nft_|inet_|^dst_|^rt_|icmp|neigh|^eth_"
     r"|arp|ipv4|raw_v4"),
    ("NAPI, GRO, GSO, qdisc", r"netif|napi|gro|net_rx_action|dev_|gso|skb_segment|validate_xmit"
     r"|sch_|qdisc|flow_dissect|siphash|rps|^__skb_get_hash|skb_mac"),
    ("buffers, allocation", r"skb|kmem|kmalloc|kfree|page_frag|alloc_pages|free_|__alloc|slab"
     r"|build_skb|folio|page|__kmalloc|mempool|percpu"),
    ("scheduling, wake-ups, timers", r"schedule|^ep_|epoll|wake|select|poll|enqueue|dequeue"
     r"|update_curr|pick_next|switch|finish_task|irq|softirq|timer|tick|clock|ktime|timekeeping"
     r"|sched|rcu|idle|cpu|task|mutex|lock|futex|signal|work|vruntime|entity|8259|_bh"),
]
ROLE_RES = [(name, re.compile(p)) for name, p in ROLES]


def role(space, sym):
    """The role of a symbol in a space ("kernel", "modules", "user"), by ROLES; what matches
    none is the rest of its owner: the module, solowg, another program or the kernel."""
    if space == "user" and sym == "(user)":
        return "other programs (iperf3)"
    for name, r in ROLE_RES:
        if r.search(sym):
            return name
    if space == "user":
        return "solowg, the rest"
    if "[wireguard]" in sym:
        return "module, the rest"
    return "kernel, the rest"


def read_prof(path):
    """{block address: [instructions, executions, imiss, dmiss, uncached, stall]},
    re-translations of a block summed (dumps with fewer columns read as zeros)."""
    counts = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            c = counts.setdefault(int(p[0], 16), [0] * len(FIELDS))
            for i, v in enumerate(p[1:1 + len(FIELDS)]):
                c[i] += int(v)
    return counts


def demangle_all(names):
    """Names demangled by c++filt (binutils >= 2.36 reads Rust's v0 mangling), else by
    demangle() below; crate hashes ([0123abcd...]) dropped."""
    if shutil.which("c++filt"):
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                             text=True, check=False).stdout.split("\n")
        if len(out) >= len(names):
            return [re.sub(r"\[[0-9a-f]{16}\]", "", o) for o in out[: len(names)]]
    return [demangle(n) for n in names]


def demangle(name):
    """Rust legacy mangling (_ZN<len><part>...E, a trailing hash dropped); else as is."""
    if not name.startswith("_ZN"):
        return name
    i, parts = 3, []
    while i < len(name) and name[i].isdigit():
        j = i
        while name[j].isdigit():
            j += 1
        n = int(name[i:j])
        parts.append(name[j : j + n])
        i = j + n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    s = "::".join(parts)
    for a, b in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","),
                 ("..", "::"), ("$u7b$", "{"), ("$u7d$", "}"), ("$BP$", "*")):
        s = s.replace(a, b)
    return s


def elf_functions(path):
    """(address, name) of the function symbols of a 32- or 64-bit ELF, either byte order."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF":
        raise SystemExit(f"{path}: not ELF")
    is64 = data[4] == 2
    e = "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(e + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(e + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x2E)
    secs = []
    for i in range(shnum):
        o = shoff + i * shentsize
        if is64:
            _, typ, _, _, off, size, link, _, _, entsize = struct.unpack_from(e + "IIQQQQIIQQ", data, o)
        else:
            _, typ, _, _, off, size, link, _, _, entsize = struct.unpack_from(e + "IIIIIIIIII", data, o)
        secs.append((typ, off, size, link, entsize))
    out = []
    for typ, off, size, link, entsize in secs:
        if typ != 2:  # SHT_SYMTAB
            continue
        stroff = secs[link][1]
        for k in range(size // entsize):
            o = off + k * entsize
            if is64:
                name, info, _, _, value, _ = struct.unpack_from(e + "IBBHQQ", data, o)
            else:
                name, value, _, info, _, _ = struct.unpack_from(e + "IIIBBH", data, o)
            if info & 0xF != 2 or value == 0:  # STT_FUNC
                continue
            end = data.index(b"\0", stroff + name)
            out.append((value & ~1, data[stroff + name : end].decode(errors="replace")))
    names = demangle_all([n for _, n in out])
    return [(a, n) for (a, _), n in zip(out, names)]


def text_symbols(path, pattern):
    """(address, name) from System.map or kallsyms lines matching the given type letters."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and re.fullmatch(pattern, p[1]):
                name = p[2] + (" " + p[3] if len(p) > 3 else "")
                out.append((int(p[0], 16), name))
    return out


def read_tlb(path):
    """{VPN2 address: refills} from the plugin's FILE.tlb, {} if absent."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {int(a, 16): int(n) for a, n in (line.split() for line in f)}


def refill_regions(before, after, maps_path, kern, module_code):
    """Refills between two dumps by where the page pair is: [(region, refills)], most first.
    A module page pair is named after the module whose code ran most in it (module_code:
    {VPN2: {module: instructions}}), as modules share pages."""
    maps = []
    if os.path.exists(maps_path):
        for line in open(maps_path):
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            name = f[5] if len(f) >= 6 else "anonymous"
            if name.endswith("solowg"):
                name = "solowg " + {"r-xp": "code", "r--p": "read-only data"}.get(f[1], "data")
            elif name == "[heap]" or name == "anonymous":
                name = "heap (brk and mmap)"
            maps.append((lo, hi, name))
    by = {}
    for vpn2, n in after.items():
        n -= before.get(vpn2, 0)
        if n <= 0:
            continue
        if vpn2 >= 0xC0000000:
            ran = module_code.get(vpn2)
            if ran:
                region = "module " + max(ran, key=ran.get)
            else:
                m = re.search(r"\[(\w+)\]", kern.find(vpn2))
                region = "module " + (m.group(1) if m else "?")
        else:
            # Either page of the pair; the lower when both are mapped.
            region = next((r for lo, hi, r in maps for a in (vpn2, vpn2 + 4096) if lo <= a < hi),
                          "other user")
        by[region] = by.get(region, 0) + n
    return sorted(by.items(), key=lambda kv: -kv[1])


class Symbols:
    def __init__(self, pairs, label):
        pairs = sorted(set(pairs))
        self.addrs = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]
        self.label = label

    def find(self, a):
        i = bisect.bisect_right(self.addrs, a) - 1
        return self.names[i] if i >= 0 else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solowg", required=True)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("raw_dir")
    a = ap.parse_args()
    user = Symbols(elf_functions(a.solowg), "solowg")
    run_bytes = long_run_bytes(a.raw_dir)
    # {(nic, topo, dir): {impl: [{role: [insn/B, cycles/B]} per run]}} for the side-by-side
    # tables, which give the mean over the runs.
    by_setting = {}
    for p1 in sorted(glob.glob(os.path.join(a.raw_dir, "prof-*.1"))):
        p0 = p1[:-1] + "0"
        if not os.path.exists(p0):
            continue
        name = os.path.basename(p1)[5:-2]  # nic-impl-topo-dir-rep
        nic, impl = name.split("-")[:2]
        ks_path = os.path.join(a.raw_dir, f"kallsyms-{nic}-{impl}.txt")
        kern = Symbols(text_symbols(ks_path, "[tTwW]") if os.path.exists(ks_path) else [], "kernel")
        lo = hi = 0
        maps_path = os.path.join(a.raw_dir, f"maps-{nic}-solowg.txt")
        if impl == "solowg" and os.path.exists(maps_path):
            for line in open(maps_path):
                f = line.split()
                if len(f) >= 6 and "x" in f[1] and f[5].endswith("solowg"):
                    lo, hi = (int(x, 16) for x in f[0].split("-"))
        model = cost.Model()
        pen = model.penalty

        def cycles(v):
            return v[0] + v[5] * pen["stall"] + v[2] * pen["imiss"] + v[3] * pen["dload"] + v[4] * pen["ioload"]

        before, after = read_prof(p0), read_prof(p1)
        by_sym, by_space, module_code = {}, {}, {}
        total = 0
        def execs(addr):
            return after.get(addr, (0, 0))[1] - before.get(addr, (0, 0))[1]
        zero = [0] * len(FIELDS)

        # KSEG0 only: EBase is in unmapped low memory; modules (KSEG2) hold page-aligned
        # hot code too (chacha_mips' block function was once taken for the handler).
        pages = [b for b in after if 0x80000000 <= b < 0xA0000000 and b % 4096 == 0 and b + 0x180 in after]
        ebase = max(pages, key=execs, default=None)
        refills = execs(ebase) if ebase is not None else 0
        for addr, v1 in after.items():
            v = [a1 - a0 for a1, a0 in zip(v1, before.get(addr, zero))]
            d = v[0]
            if d <= 0:
                continue
            total += d
            if ebase is not None and ebase <= addr < ebase + 0x80:
                space, sym = "kernel", "(TLB refill handler)"
            elif ebase is not None and ebase + 0x180 <= addr < ebase + 0x200:
                space, sym = "kernel", "(general exception vector)"
            elif addr >= 0xC0000000:
                space, sym = "modules", kern.find(addr)
                m = re.search(r"\[(\w+)\]", sym)
                ran = module_code.setdefault(addr & ~0x1FFF, {})
                if m:
                    ran[m.group(1)] = ran.get(m.group(1), 0) + d
            elif addr >= 0x80000000:
                space, sym = "kernel", kern.find(addr)
            elif lo <= addr < hi:
                # Another process's code at the same addresses (iperf3 when terminating)
                # would be charged here too: static solowg and iperf3 both start at 4 MiB.
                space, sym = "user", user.find(addr)
            else:
                space, sym = "user", "(user)"
            by_space[space] = by_space.get(space, 0) + d
            key = f"{space[0]} {sym}"
            acc = by_sym.setdefault(key, [0] * len(FIELDS))
            for i, x in enumerate(v):
                acc[i] += x
        if not total:
            continue
        split = ", ".join(f"{s} {100 * n / total:.1f}%" for s, n in sorted(by_space.items()))
        carried = run_bytes.get(name, 0)
        per_byte = f", {total / carried:.1f} per byte carried" if carried else ""
        print(f"### profile {name}: {total / 1e9:.2f} G instructions{per_byte} ({split}); "
              f"{refills / 1e6:.2f} M TLB refills")
        print()
        regions = refill_regions(read_tlb(p0 + ".tlb"), read_tlb(p1 + ".tlb"),
                                 maps_path if impl == "solowg" else "", kern, module_code)
        counted = sum(n for _, n in regions)
        if counted:
            print("TLB refills by page: " + ", ".join(
                f"{r} {100 * n / counted:.0f}%" for r, n in regions if n >= counted / 200))
            print()
        # Per byte carried (the long run's bytes, start-up included), so that two
        # implementations' profiles compare symbol by symbol.
        all_cycles = sum(cycles(v) for v in by_sym.values())
        print("| cycles share | cycles/B | insn/B | I-miss/KB | D-miss/KB | uncached/KB | where | symbol |")
        print("|---:|---:|---:|---:|---:|---:|---|---|")
        per = (lambda x, k=1: f"{k * x / carried:.2f}") if carried else (lambda x, k=1: "-")
        for key, v in sorted(by_sym.items(), key=lambda kv: -cycles(kv[1]))[: a.top]:
            space, sym = key.split(" ", 1)
            sym = sym.replace("|", "\\|")
            print(f"| {100 * cycles(v) / all_cycles:.1f}% | {per(cycles(v))} | {per(v[0])} | {per(v[2], 1024)} "
                  f"| {per(v[3], 1024)} | {per(v[4], 1024)} | {dict(k='kernel', m='module', u='user')[space]} | `{sym[:90]}` |")
        print()
        if carried:
            roles = {}
            for key, v in by_sym.items():
                space, sym = key.split(" ", 1)
                r = roles.setdefault(role(SPACES[space], sym), [0, 0])
                r[0] += v[0] / carried
                r[1] += cycles(v) / carried
            topo, dirn = name.split("-")[2:4]
            by_setting.setdefault((nic, topo, dirn), {}).setdefault(impl, []).append(roles)
    means = {k: {i: mean_roles(runs) for i, runs in v.items()} for k, v in by_setting.items()}
    print_roles(means)
    print_free_crossing(means)


def mean_roles(runs):
    """{role: [insn/B, cycles/B]} averaged over runs (a role missing from a run counts 0)."""
    out = {}
    for roles in runs:
        for name, (i, c) in roles.items():
            acc = out.setdefault(name, [0.0, 0.0])
            acc[0] += i / len(runs)
            acc[1] += c / len(runs)
    return out


def print_roles(by_setting):
    """Per setting, instructions (and modeled cycles) per byte carried by role, in ROLES'
    order, the implementations side by side."""
    names = [n for n, _ in ROLES] + ["module, the rest", "solowg, the rest",
                                     "other programs (iperf3)", "kernel, the rest"]
    for (nic, topo, dirn), impls in sorted(by_setting.items()):
        order = sorted(impls)
        print(f"### by role: {nic} {topo} {dirn}, instructions (cycles) per byte carried")
        print()
        print("| role | " + " | ".join(order) + " |")
        print("|---|" + "---:|" * len(order))
        for n in names:
            if all(n not in impls[i] for i in order):
                continue
            cells = [f"{impls[i].get(n, [0, 0])[0]:.2f} ({impls[i].get(n, [0, 0])[1]:.1f})"
                     for i in order]
            print(f"| {n} | " + " | ".join(cells) + " |")
        tot = [f"**{sum(v[0] for v in impls[i].values()):.2f} ({sum(v[1] for v in impls[i].values()):.1f})**"
               for i in order]
        print("| **all** | " + " | ".join(tot) + " |")
        print()


# What solowg pays because it runs in user space, in a generous reading: its system calls,
# the TUN device and its own non-cipher code whole, all of its scheduling and wake-ups (the
# receiving program's included, which any design pays), and the copies and socket work it
# does beyond the module's.
CROSSING_WHOLE = ("system calls, seccomp", "TUN device", "solowg, the rest",
                  "scheduling, wake-ups, timers")
CROSSING_BEYOND = ("copies, checksums, zeroing", "sockets, UDP")


def free_crossing(module, solowg):
    """(module, solowg, solowg with its crossing free) instructions per byte for one setting,
    from {role: [insn/B, cycles/B]}: a lower bound for a user-space design that keeps the
    kernel's packet path, since everything taken away is more than the crossing can shed."""
    m = sum(v[0] for v in module.values())
    s = sum(v[0] for v in solowg.values())
    crossing = sum(solowg.get(r, [0, 0])[0] for r in CROSSING_WHOLE)
    crossing += sum(max(0.0, solowg.get(r, [0, 0])[0] - module.get(r, [0, 0])[0])
                    for r in CROSSING_BEYOND)
    return m, s, s - crossing


def print_free_crossing(by_setting):
    """Per setting: the bar's 0.8 of the module in instructions against solowg now and with
    its crossing into user space costing nothing."""
    rows = [(k, free_crossing(v["kernel"], v["solowg"])) for k, v in sorted(by_setting.items())
            if "kernel" in v and "solowg" in v]
    if not rows:
        return
    print("### solowg with its crossing free, instructions per byte carried")
    print()
    print("| NIC | topology | dir | module | 0.8 x module | solowg | ratio | crossing free | ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (nic, topo, dirn), (m, s, f) in rows:
        print(f"| {nic} | {topo} | {dirn} | {m:.1f} | {0.8 * m:.1f} | {s:.1f} | {s / m:.2f} "
              f"| {f:.1f} | {f / m:.2f} |")
    print()


if __name__ == "__main__":
    sys.exit(main())
