"""Unit tests of bench/router's cost arithmetic (cost.py, report.py's per-byte model and
calibrate.py's fit) on synthetic counters whose answer is known."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "router"))
import calibrate  # noqa: E402
import cost  # noqa: E402
import profile as guest_profile  # noqa: E402  (bench/router/profile.py, not the stdlib's)
import report  # noqa: E402


def line(insns, **ev):
    return " ".join([str(insns)] + [f"{k}={v}" for k, v in ev.items()])


class CostTest(unittest.TestCase):
    def test_penalties_follow_memory(self):
        m = cost.Model(memory=100)
        self.assertEqual(m.penalty["dload"], 100)
        self.assertEqual(m.penalty["dstore"], 50)
        self.assertEqual(m.penalty["imiss"], 100)
        self.assertEqual(m.penalty["stall"], 1)

    def test_cycles_add_up(self):
        m = cost.Model(memory=10)
        c = m.cycles(1000, {"stall": 5, "imiss": 2, "dload": 1, "dstore": 2, "refill": 1}, {"frames": 1, "bytes": 64})
        self.assertEqual(c["insns"], 1000)
        self.assertEqual(c["icache"], 20)
        self.assertEqual(c["dcache"], 10 + 2 * 5)
        self.assertEqual(c["exceptions"], m.penalty["refill"])
        self.assertEqual(c["dma"], (64 / 32 + 1) * m.dma_line)
        self.assertAlmostEqual(c["total"], sum(v for k, v in c.items() if k != "total"))

    def test_parse_and_diff(self):
        a = cost.parse_events(line(100, stall=3, imiss=1))
        b = cost.parse_events(line(40, stall=1, imiss=1))
        self.assertEqual(cost.diff(a, b), {"insns": 60, "stall": 2, "imiss": 0})

    def test_per_byte_model_subtracts_the_short_run(self):
        m = cost.Model(memory=10)
        snap = "wan_rx={} wan_tx=0 wan_rxb={} wan_txb=0"
        long_row = {"bytes": "3000", "before": snap.format(0, 0), "after": snap.format(3, 3000),
                    "model_before": line(0, imiss=0), "model_after": line(9000, imiss=30)}
        short_row = {"bytes": "1000", "before": snap.format(0, 0), "after": snap.format(1, 1000),
                     "model_before": line(0, imiss=0), "model_after": line(3000, imiss=10)}
        r = report.per_byte_model(m, long_row, short_row)
        # 6,000 instructions, 20 misses x 10 and 2 frames over 2,000 bytes (64 lines + 2) x 4.
        self.assertAlmostEqual(r["insns"], 3.0)
        self.assertAlmostEqual(r["icache"], 0.1)
        self.assertAlmostEqual(r["dma"], (2000 / 32 + 2) * m.dma_line / 2000)
        self.assertAlmostEqual(r["n_imiss"], 0.01)


class FitTest(unittest.TestCase):
    def test_fit_recovers_the_latency_behind_an_anchor(self):
        # A loopback whose extra bytes cost 2 instructions and 0.1 load misses each: at a
        # latency L the model gives 2 + 0.1 L cycles per byte; the R6120 anchor (14.06)
        # is met at L = 120.6.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "calib.tsv"), "w") as f:
                f.write("what\trep\tsize\tbytes\tmodel_before\tmodel_after\n")
                f.write(f"loopback\t1\t3\t1000\t{line(0, dload=0)}\t{line(2000, dload=100)}\n")
                f.write(f"loopback\t1\t8\t3000\t{line(0, dload=0)}\t{line(6000, dload=300)}\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                calibrate.main(d)
            text = out.getvalue()
        # The grid is in whole cycles: 121 for 120.6.
        self.assertIn("fitted to the `fit` anchors: 121 cycles at 580 MHz", text)
        self.assertIn("| self-r6120 | fit |", text)
        self.assertIn("| 2.0 | 14.1 | +0% | -86% |", text)
        # The 74Kc's loopback is held out, compared at the same latency in nanoseconds: 121 x
        # 720 / 580 = 150 of its cycles, 2 + 15.0 = 17.0 against 12.97 (+31%).
        self.assertIn("| self-wr1043 | held out |", text)
        self.assertIn("| 17.0 | +31% |", text)
        self.assertIn("| as counted | 121 | 1 | 31% | 31% |", text)


class VariantTest(unittest.TestCase):
    def test_prefetch_counts_imiss_pf(self):
        ev = {"imiss": 10, "imiss_pf": 4}
        self.assertEqual(cost.Model(memory=10).cycles(0, ev)["icache"], 100)
        self.assertEqual(cost.Model(memory=10, prefetch=True).cycles(0, ev)["icache"], 40)
        # Counts from before imiss_pf existed: no credit.
        self.assertEqual(cost.Model(memory=10, prefetch=True).cycles(0, {"imiss": 10})["icache"], 100)

    def test_plain_is_instructions(self):
        c = cost.Model(plain=True).cycles(500, {"imiss": 10, "dload": 3, "stall": 7}, {"frames": 2, "bytes": 64})
        self.assertEqual(c["total"], 500)

    def test_variants_span_the_latencies(self):
        mems = {kw.get("memory") for kw in cost.VARIANTS.values() if "memory" in kw}
        self.assertEqual((min(mems), max(mems)), (20, 100))
        self.assertTrue(any(kw.get("prefetch") for kw in cost.VARIANTS.values()))
        self.assertTrue(any(kw.get("plain") for kw in cost.VARIANTS.values()))


class SensitivityTest(unittest.TestCase):
    def test_worst_ratio_over_variants(self):
        import sensitivity
        snap = "wan_rx={} wan_tx=0 wan_rxb={} wan_txb=0"
        head = "nic\timpl\ttopo\tdir\trep\tkind\tsecs\tbytes\tbps\tretrans\tinsns\tbefore\tafter\tmodel_before\tmodel_after\n"

        def row(impl, kind, nbytes, insns, imiss):
            return "\t".join(["ag71xx", impl, "forward", "up", "1", kind, "1", str(nbytes), "0", "", "0",
                              snap.format(0, 0), snap.format(0, 0), line(0, imiss=0), line(insns, imiss=imiss)]) + "\n"

        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "raw.tsv"), "w") as f:
                f.write(head)
                # Per byte: the module 100 instructions and 1 miss, solowg 50 and 0.1.
                f.write(row("kernel", "long", 2000, 200000, 2000) + row("kernel", "short", 1000, 100000, 1000))
                f.write(row("solowg", "long", 2000, 100000, 200) + row("solowg", "short", 1000, 50000, 100))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                sensitivity.main([d, "--bar", "0.6"])
            text = out.getvalue()
        # Instructions alone: 0.50; at 70 cycles a miss: (50 + 7) / (100 + 70) = 0.34.
        self.assertIn("| ag71xx | forward | up |", text)
        self.assertIn("| 0.50 | 0.50 | yes |", text)
        self.assertIn("0.34", text)
        self.assertIn("holds in every setting", text)


class RoleTest(unittest.TestCase):
    def test_symbols_fall_into_their_roles(self):
        role = guest_profile.role
        cases = [
            ("modules", "chacha_crypt_arch [chacha_mips]", "cipher"),
            ("user", "<solowg::crypto::chacha20::ChaCha20>::xor_words", "cipher"),
            ("user", "solowg_poly1305_blocks_mips", "cipher"),
            ("kernel", "chacha_permute", "random numbers"),
            ("kernel", "__csum_partial_copy_to_user", "copies, checksums, zeroing"),
            ("kernel", "(TLB refill handler)", "TLB refills, exceptions"),
            ("kernel", "___bpf_prog_run", "system calls, seccomp"),
            ("modules", "tun_get_user [tun]", "TUN device"),
            ("modules", "virtnet_poll [virtio_net]", "NIC driver"),
            ("kernel", "udp_recvmsg", "sockets, UDP"),
            ("kernel", "tcp_v4_rcv", "TCP"),
            ("kernel", "ip_forward", "IP, routing, netfilter"),
            ("kernel", "skb_segment", "NAPI, GRO, GSO, qdisc"),
            ("kernel", "kmem_cache_alloc_node_noprof", "buffers, allocation"),
            ("kernel", "__schedule", "scheduling, wake-ups, timers"),
            ("modules", "wg_packet_receive [wireguard]", "module, the rest"),
            ("user", "<solowg::proto::device::Device>::decapsulate", "solowg, the rest"),
            ("user", "(user)", "other programs (iperf3)"),
            ("kernel", "some_unlisted_function", "kernel, the rest"),
        ]
        for space, sym, want in cases:
            self.assertEqual(role(space, sym), want, sym)

    def test_free_crossing_takes_only_what_user_space_adds(self):
        module = {"cipher": [25, 0], "copies, checksums, zeroing": [3, 0],
                  "sockets, UDP": [1, 0], "scheduling, wake-ups, timers": [5, 0], "TCP": [2, 0]}
        solowg = {"cipher": [24, 0], "copies, checksums, zeroing": [4.5, 0],
                  "sockets, UDP": [0.5, 0], "scheduling, wake-ups, timers": [2, 0],
                  "system calls, seccomp": [1.5, 0], "TUN device": [0.25, 0],
                  "solowg, the rest": [1.25, 0], "TCP": [1, 0]}
        m, s, free = guest_profile.free_crossing(module, solowg)
        self.assertEqual((m, s), (36, 35))
        # whole: 1.5 + 0.25 + 1.25 + 2; beyond the module's: copies 1.5, sockets none
        self.assertAlmostEqual(free, 35 - 6.5)


if __name__ == "__main__":
    unittest.main()
