"""The router cost model's arithmetic (standard library only): cpu-model.ini's penalties
applied to what cpu-model.c counted.

    model = Model()                     # bench/router/cpu-model.ini, or Model(path)
    model.cycles(insns, events, nic)    # -> {"total": ..., "insns": ..., "memory": ..., ...}

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
    def __init__(self, path=os.path.join(HERE, "cpu-model.ini"), **override):
        cp = configparser.ConfigParser(inline_comment_prefixes=("#",))
        cp.read(path)
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
            out[group] = sum(events.get(n, 0) * self.penalty[n] for n in names)
        nic = nic or {}
        lines = nic.get("bytes", 0) / self.line + nic.get("frames", 0)
        out["dma"] = lines * self.dma_line
        out["total"] = sum(out.values())
        return out


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
