#!/usr/bin/env python3
"""Writes the committed seed corpus, fuzz/seeds/<target>/<name>. Run from anywhere; the
files are small and deterministic, so rerunning changes nothing unless this script changed.
The datagram seeds are programs for fuzz_targets/datagram.rs (see its `step`); check what a
seed reaches with SOLOWG_FUZZ_TRACE=1 cargo +nightly fuzz run datagram <seed>."""
import base64
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- datagram: opcodes of World::step -------------------------------------------------
def b_sends(size=10, flags=0):
    return [0, size, flags]


def c_sends(size=10, flags=0):
    return [1, size, flags]


def a_sends(size=10, dst=0, extra=0):
    return [3, size, dst, extra]


def deliver(k, roam=0):
    return [4, k, roam]


def advance(kind, n):
    return [8, kind, n & 0xFF, n >> 8]


def reconf(what, *args):
    return [10, what, *args]


def mutated(k, muts, fix):
    out = [6, k, len(muts) - 1]
    for m in muts:
        out += m
    return out + [1 if fix else 0]


handshake_b = b_sends() + deliver(0) + deliver(1) + deliver(2)
datagram = {
    # B initiates, A answers, B's staged packet confirms, data both ways, a replay, rekey.
    "handshake-b": handshake_b + a_sends(10, 0) + deliver(3) + deliver(2)
    + b_sends(50, 1) + deliver(4) + advance(2, 130) + b_sends(5) + deliver(5) + deliver(6)
    + deliver(7) + deliver(8),
    # C (PSK, no endpoint on A) roams in, then moves to IPv6 and a second IPv4 address.
    "roam-c": c_sends() + deliver(0) + deliver(1) + deliver(2) + a_sends(10, 1)
    + deliver(3) + c_sends(20, 0) + deliver(4, 200) + c_sends(20, 1) + deliver(5, 202)
    + a_sends(10, 2, 3) + deliver(6),
    # A under load: cookie reply, B retries with mac2 after REKEY_TIMEOUT.
    "cookie": reconf(5, 0) + b_sends() + deliver(0) + deliver(1) + advance(1, 5500)
    + deliver(2) + deliver(3) + deliver(4) + deliver(5),
    # Mutated handshake messages with a fresh mac1 (they reach the Noise code).
    "mutate-init": b_sends() + mutated(0, [[0, 50, 0, 3]], True)
    + mutated(0, [[4, 4, 0x44, 0x33, 0x22, 0x11]], True) + deliver(0)
    + mutated(1, [[0, 30, 0, 1]], True) + mutated(1, [[1, 60, 0]], False) + deliver(1)
    + deliver(2) + mutated(2, [[5, 0x10, 0, 0, 0, 2]], False)
    + mutated(2, [[0, 40, 0, 7]], False),
    # Timers: keepalives, session expiry, key erasure, retries without answers.
    "timers": handshake_b + reconf(0, 5) + advance(2, 12) + advance(2, 30) + deliver(3)
    + advance(3, 200) + advance(3, 600) + b_sends() + advance(1, 5200) + advance(2, 100)
    + [9],
    # Configuration changes under way: C removed and re-added, same key, replace peers.
    "reconfig": handshake_b + c_sends() + deliver(3) + reconf(1) + deliver(4)
    + reconf(2) + reconf(7) + b_sends() + deliver(5) + reconf(6) + b_sends() + deliver(6)
    + reconf(8, 0) + a_sends(10, 1) + reconf(3, 1, 9) + reconf(4, 1),
    # Raw datagrams of every type, sized or not.
    "raw": [7, 1, 0, 0x81, 148] + [0] * 148 + [7, 0, 0, 0xC2, 92] + [1] * 92
    + [7, 2, 1, 0x83, 64] + [2] * 64 + [7, 1, 2, 0x84, 32] + [3] * 32 + [7, 0, 0, 0, 3, 1, 2, 3],
}
for name, prog in datagram.items():
    write("datagram", name, bytes(prog))

# ---- uapi ------------------------------------------------------------------------------
k = lambda b: bytes([b] * 32).hex()
write("uapi", "get", "get=1\n\n")
write(
    "uapi",
    "set-full",
    f"set=1\nprivate_key={k(0x41)}\nlisten_port=51820\nfwmark=0x51\nreplace_peers=true\n"
    f"public_key={k(0x42)}\npreshared_key={k(0x43)}\nprotocol_version=1\n"
    "endpoint=192.0.2.1:51820\npersistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
    "allowed_ip=10.0.0.2/32\nallowed_ip=fd00::2/128\n"
    f"public_key={k(0x44)}\nendpoint=[2001:db8::1%3]:4500\nallowed_ip=10.0.3.0/24\n"
    "allowed_ip=0.0.0.0/0\n\nget=1\n\n",
)
write(
    "uapi",
    "set-edit",
    f"set=1\npublic_key={k(0x42)}\nupdate_only=true\nallowed_ip=-10.0.0.2/32\n"
    f"preshared_key={'0' * 64}\n\nset=1\npublic_key={k(0x44)}\nremove=true\n\n"
    f"set=1\nprivate_key={'0' * 64}\nlisten_port=0\nfwmark=0\n\nget=1\n\n",
)
write("uapi", "errors", "set=1\nbogus=1\n\nget=1\nx=1\n\nGET / HTTP/1.1\r\n\r\n")

# ---- uci -------------------------------------------------------------------------------
key = lambda b: base64.b64encode(bytes([b] * 32)).decode()
write(
    "uci",
    "network",
    "config interface 'loopback'\n\toption device 'lo'\n\toption proto 'static'\n\n"
    "config interface 'wg0'\n\toption proto 'solowg'\n"
    f"\toption private_key '{key(0x41)}'\n\toption listen_port '51820'\n"
    "\tlist addresses '10.9.0.1/24'\n\tlist addresses 'fd00:9::1'\n\toption mtu '1420'\n"
    "\toption fwmark '0x51'\n\toption nohostroute '1'\n\n"
    "config solowg_wg0 'laptop'\n\toption description 'laptop'\n"
    f"\toption public_key '{key(0x42)}'\n\toption preshared_key '{key(0x43)}'\n"
    "\tlist allowed_ips '10.9.0.2/32'\n\tlist allowed_ips 'fd00:9::2'\n"
    "\toption route_allowed_ips '1'\n\toption endpoint_host 'vpn.example.org'\n"
    "\toption endpoint_port '4500'\n\toption persistent_keepalive '25'\n\n"
    f"config wireguard_wg0\n\toption public_key '{key(0x44)}'\n"
    "\toption allowed_ips '10.9.0.3 10.9.0.4/32'\n\toption endpoint_host '[2001:db8::1]'\n"
    "\toption disabled '0'\n",
)
write(
    "uci",
    "quirks",
    "package network\n# comment\nconfig interface \"wg1\"; option proto solowg; "
    "option private_key generate\n\toption description 'multi\nline' # c\n"
    "\toption x abc\\\ndef\nconfig solowg_wg1\n\toption public_key 'nope'\n"
    "\tlist allowed_ips '10.0.0.0/33'\n\toption persistent_keepalive '65536'\n"
    "option before 1\nconfig\nconfig a\x01b\n\toption '' 1\n\toption u 'unterminated\n",
)
write("uci", "crlf", "config interface 'wg0'\r\n\toption proto 'solowg'\r\n\toption mtu '1420'\r\n")

# ---- ubus ------------------------------------------------------------------------------
OBJ = 0x01020304


def blob(id_, payload, extended=False):
    n = 4 + len(payload)
    word = (0x80000000 if extended else 0) | (id_ << 24) | n
    out = struct.pack(">I", word) + payload
    return out + b"\0" * (-len(out) % 4)


def named(ty, name, payload):
    nb = name.encode()
    head = struct.pack(">H", len(nb)) + nb + b"\0"
    head += b"\0" * (-(4 + len(head)) % 4)
    return blob(ty, head + payload, True)


def frame(ty, seq, peer, body):
    return bytes([0, ty]) + struct.pack(">HI", seq, peer) + struct.pack(">I", 4 + len(body)) + body


def invoke(seq, method, data=b"", obj=OBJ, no_reply=False):
    body = blob(3, struct.pack(">I", obj)) + blob(4, method.encode() + b"\0")
    if data is not None:
        body += blob(7, data)
    if no_reply:
        body += blob(10, b"\1")
    return frame(5, seq, 0xABC, body)


s = lambda name, v: named(3, name, v.encode() + b"\0")
all_args = (
    named(1, "a", named(3, "", b"x\0") + named(5, "", struct.pack(">i", 7)))
    + named(2, "t", s("k", "v") + named(7, "z", b"\1"))
    + named(5, "i", struct.pack(">i", -5)) + named(4, "l", struct.pack(">q", 1 << 40))
    + named(6, "h", struct.pack(">h", 3)) + named(7, "b", b"\1")
    + named(8, "d", struct.pack(">d", 1.5)) + s("ubus_rpc_session", "x")
)
# Byte 0 is the split seed (0x80: one chunk), the rest the stream after registration.
write("ubus", "calls", bytes([0x80]) + invoke(1, "status") + invoke(2, "up", s("interface", "wg0"))
      + invoke(3, "pubkey", s("private_key", key(0x41))) + invoke(4, "all", all_args)
      + invoke(5, "nope") + invoke(6, "status", None, obj=7) + invoke(7, "down", named(5, "interface", b"\0\0\0\1"))
      + invoke(8, "genkey", b"\0\0", no_reply=True) + frame(3, 0, 0, b"") + frame(2, 9, 0, blob(7, b"")))
write("ubus", "split", bytes([0x17]) + invoke(1, "all", all_args) + invoke(2, "genpsk"))
# Seed byte bit 6: the connection has its own notify_proto call out (LOOKUP seq 2); the
# broker finds the object, the object answers the INVOKE (seq 3), a call arrives meanwhile.
status = lambda seq, st: frame(1, seq, 0, blob(1, struct.pack(">I", st)))
write("ubus", "own-call", bytes([0xC0]) + frame(2, 2, 0, blob(3, struct.pack(">I", 0x77)))
      + status(2, 0) + invoke(1, "status") + frame(2, 3, 0x77, b"") + status(3, 0))
write("ubus", "own-call-missing", bytes([0xC5]) + status(2, 0) + invoke(1, "status"))
write("ubus", "bad-frame", bytes([0x80]) + invoke(1, "status") + b"\x01\x05\0\0\0\0\0\0\0\0\0\x04")

# ---- allowedips: opcodes of the allowedips target ---------------------------------------
def ins(v6, addr, cidr, peer):
    return [(0x80 if v6 else 0) | 0] + addr + [cidr, peer]


def look(v6, addr):
    return [(0x80 if v6 else 0) | 100, 0] + addr


v6a = lambda a, b, c, d: [1, a, b, c, d]  # compact IPv6 form
ops = (ins(False, [10, 0, 0, 0], 8, 1) + ins(False, [10, 1, 0, 0], 16, 2)
       + ins(False, [10, 1, 2, 3], 32, 3) + ins(False, [0, 0, 0, 0], 0, 4)
       + ins(False, [10, 1, 2, 0], 24, 1) + ins(False, [1, 2, 3, 4], 0xF9, 2)
       + look(False, [10, 1, 2, 3]) + look(False, [10, 1, 2, 4]) + look(False, [10, 2, 0, 0])
       + look(False, [11, 0, 0, 0])
       + ins(True, v6a(0, 0, 0, 0), 0, 1) + ins(True, v6a(0xDB, 8, 0, 1), 128, 2)
       + ins(True, v6a(0xDB, 8, 0, 0), 32, 3) + look(True, v6a(0xDB, 8, 0, 1))
       + look(True, v6a(0xDB, 8, 0, 2)) + look(True, v6a(0xDC, 0, 0, 0))
       + [40, 0, 10, 1, 0, 0, 16, 2] + look(False, [10, 1, 2, 5]) + [60, 1]
       + look(False, [10, 1, 2, 3]) + [65, 2] + [65 | 0x80, 3] + [71, 1])
write("allowedips", "mixed", bytes(ops))
write("allowedips", "nested", bytes(sum((ins(False, [10, 0, 0, 0], c, c % 5) for c in range(33)), [])
                                    + sum((look(False, [10, 0, 0, i]) for i in range(0, 256, 17)), [])))

# ---- dns: replies; the target puts in the query's id and, when byte 2's bit 0 is set, its
# question after the 12-byte header (see fuzz_targets/dns.rs) ------------------------------
def rr(rtype, data, name=b"\xc0\x0c"):
    return name + struct.pack(">HHIH", rtype, 1, 300, len(data)) + data


def reply(flags, an, records):
    return struct.pack(">HHHHHH", 0, flags, 1, an, 0, 0) + records


write("dns", "a", reply(0x8180, 2, rr(1, bytes([192, 0, 2, 7])) + rr(1, bytes([198, 51, 100, 9]))))
write("dns", "aaaa-in-a-reply", reply(0x8180, 1, rr(28, bytes(15) + b"\x01")))
write("dns", "cname-chain", reply(0x8180, 2, rr(5, b"\x03cdn\x07example\x00") + rr(1, bytes([203, 0, 113, 5]), b"\x03cdn\x07example\x00")))
write("dns", "nxdomain", reply(0x8183, 0, b""))
write("dns", "truncated", reply(0x8380, 1, rr(1, bytes([192, 0, 2, 8]))[:9]))
write("dns", "pointer-loop", reply(0x8180, 1, rr(1, bytes([192, 0, 2, 9]), b"\xc0\x2a")))
