"""The router cost model's arithmetic (standard library only): cpu-model.ini's penalties
applied to what cpu-model.c counted.

    model = Model()                     # bench/router/cpu-model.ini, or Model(path)
    model.cycles(insns, events, nic)    # -> {"total": ..., "insns": ..., "memory": ..., ...}
    Model(memory=30, prefetch=True)     # a variant: another memory latency, I-cache misses
                                        # counted with sequential-line prefetch (imiss_pf)
    Model(plain=True)                   # a variant: cycles = instructions

VARIANTS: the model variants a reviewer would call plausible (sensitivity.py, calibrate.py).

events: the plugin's NAME=COUNT deltas; nic: {"frames": ..., "bytes": ...} the NICs moved
(both directions, both NICs), for the cache maintenance a non-coherent NIC costs.
"""
import configparser
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# Events by the cost they are shown under.
GROUPS = {
    "stall": ("stall",),
    "icache": ("imiss",),
    "dcache": ("dload", "dstore", "wback"),
    "uncached": ("uload", "ustore", "ioload", "iostore"),
    "exceptions": ("refill", "exc"),
}


class Model:
    def __init__(self, path=os.path.join(HERE, "cpu-model.ini"), prefetch=False, plain=False, **override):
        cp = configparser.ConfigParser(inline_comment_prefixes=("#",))
        cp.read(path)
        self.prefetch = prefetch
        self.plain = plain
        raw = dict(cp["penalty"])
        raw.update({k: str(v) for k, v in override.items()})
        self.memory = float(raw.pop("memory"))
        self.penalty = {}
        for name, expr in raw.items():
            # Values are numbers or "memory", "memory / 2": nothing else is accepted.
            parts = expr.replace(" ", "").split("/")
            base = self.memory if parts[0] == "memory" else float(parts[0])
            self.penalty[name] = base / float(parts[1]) if len(parts) == 2 else base
        self.dma_line = float(cp["dma"]["line"])
        self.icache = cp["geometry"]["icache"]
        self.dcache = cp["geometry"]["dcache"]
        self.line = int(self.dcache.split(":")[2])

    def cycles(self, insns, events, nic=None):
        out = {"insns": float(insns)}
        for group, names in GROUPS.items():
            if self.plain:
                out[group] = 0.0
            elif group == "icache" and self.prefetch:
                # Runs made before the plugin counted imiss_pf have none: no credit rather
                # than a made-up one.
                out[group] = events.get("imiss_pf", events.get("imiss", 0)) * self.penalty["imiss"]
            else:
                out[group] = sum(events.get(n, 0) * self.penalty[n] for n in names)
        nic = nic or {}
        lines = nic.get("bytes", 0) / self.line + nic.get("frames", 0)
        out["dma"] = 0.0 if self.plain else lines * self.dma_line
        out["total"] = sum(out.values())
        return out


# name -> Model keyword arguments: the memory latency (every miss and uncached load) from 20
# to 100 cycles (calibrate.py fits about 100), with and without sequential-line I-cache prefetch, and instructions alone.
VARIANTS = {}
for _m in (20, 35, 50, 70, 100):
    VARIANTS[f"mem {_m}"] = {"memory": _m}
    VARIANTS[f"mem {_m} +pf"] = {"memory": _m, "prefetch": True}
VARIANTS["insns only"] = {"plain": True}


def parse_events(s):
    """The plugin's line ("INSNS NAME=COUNT ...") or a saved NAME=COUNT list -> dict."""
    out = {}
    for i, tok in enumerate(s.split()):
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = int(v)
        elif i == 0 and tok.isdigit():
            out["insns"] = int(tok)
    return out


def diff(after, before):
    return {k: after[k] - before.get(k, 0) for k in after}
