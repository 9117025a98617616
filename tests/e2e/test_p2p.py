"""The p2p workload end to end on the CPU backend through mpirun: OSU's
latency, bw and bibw (a window of 64 messages) between rank pairs, read back
with h5py; the report's op time, bandwidth and latency recomputed here from
the raw samples, and shown in OSU's units (us, MB/s) with no bus bandwidth; a
group without pairs skipped with the reason; bad input."""
import csv
import io
import json
import os
import sys
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s  # noqa: E402
from p2p_vs_osu import osu_table, verdict  # noqa: E402

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "p2p"
workload = "p2p"
pattern = ["latency", "bw", "bibw"]
bytes = [8, 65536]
iters = 10
scope = ["world", "inter-node"]
modes = ["parallel"]
"""


class Pairs:
    CONFIG = CONFIG

    def test_every_pattern_verifies_and_inter_node_is_skipped_with_the_reason(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        with h5py.File(self.out, "r") as f:
            cases = [f["cases"][k] for k in sorted(f["cases"])]
            self.assertEqual(len(cases), 12)
            for c in cases:
                scope = s(c.attrs["scope"])
                if scope == "inter-node":
                    self.assertEqual(s(c.attrs["status"]), "skipped")
                    self.assertIn("needs ranks on at least 2 nodes", s(c.attrs["status_reason"]))
                else:
                    self.assertEqual(s(c.attrs["status"]), "ok")
                    self.assertEqual(list(c["wrong_elements"][()]), [0] * self.RANKS)

    def test_op_bytes_count_what_one_operation_carries(self):
        with h5py.File(self.out, "r") as f:
            for k in f["cases"]:
                c = f["cases"][k]
                if s(c.attrs["status"]) != "ok":
                    continue
                p = c["parameters"].attrs
                nbytes, window = int(p["bytes"]), int(p["window"])
                self.assertEqual(window, 64)  # osu_bw's
                # A round trip carries the message twice; a window `window` messages, bibw's each way.
                want = {"latency": 2 * nbytes, "bw": window * nbytes, "bibw": 2 * window * nbytes}[s(p["pattern"])]
                self.assertEqual(list(c["op_bytes"][()]), [want] * self.RANKS)

    def test_latency_and_bandwidth_follow_from_the_raw_samples(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        with h5py.File(self.out, "r") as f:
            for row in rows:
                if row["status"] != "ok":
                    continue
                c = f["cases"]["%04d" % (row["case"] - 1)]
                iters = int(c["parameters"].attrs["iters"])
                # One operation: mean over ranks of device time / iters, median over samples (nccl-tests, OSU).
                op = float(np.median(c["device_time"][()].mean(axis=0) / iters))
                self.assertAlmostEqual(row["op_time_s"], op, delta=op * 1e-9)
                self.assertAlmostEqual(row["algbw_gbps"], c["op_bytes"][0] / op / 1e9, delta=1e-9 * row["algbw_gbps"])
                if row["params"]["pattern"] == "latency":
                    self.assertAlmostEqual(row["latency_s"], op / 2, delta=op * 1e-9)
                    self.assertAlmostEqual(row["latency_us"], op / 2 * 1e6, delta=op * 1e-3)
                    self.assertNotIn("bandwidth_mbps", row)
                else:
                    self.assertNotIn("latency_s", row)
                    # OSU's MB/s: 10^6 bytes per second.
                    self.assertAlmostEqual(row["bandwidth_mbps"], row["algbw_gbps"] * 1e3,
                                           delta=1e-9 * row["bandwidth_mbps"])

    def test_the_table_shows_osus_columns_and_the_csv_both_units(self):
        table = gpuscale("report", self.out).stdout
        self.assertIn("  size (B)  latency (us)  bandwidth (MB/s)", table)
        self.assertNotIn("busbw", table)  # OSU prints none
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        bw = [r for r in rows if r["status"] == "ok" and r["params"]["pattern"] == "bw"]
        for r in bw:  # each row's MB/s as OSU prints it, two decimals
            cells = (r["case"], r["params"]["bytes"], r["bandwidth_mbps"])
            self.assertRegex(table, r"\n *%d +bw +world +%d +- +%.2f +" % cells)
        out = gpuscale("report", self.out, "--format", "csv").stdout
        rows = list(csv.DictReader(io.StringIO(out)))
        for key in ("latency_s", "latency_us", "bandwidth_mbps", "algbw_gbps", "busbw_gbps"):
            self.assertIn(key, rows[0])
        lat = [r for r in rows if "pattern=latency" in r["params"] and r["status"] == "ok"]
        self.assertTrue(lat and all(float(r["latency_us"]) > 0 for r in lat))


class TwoRanks(Pairs, SharedRunTest):
    RANKS = 2


class FourRanks(Pairs, SharedRunTest):
    RANKS = 4


class ThreeRanks(SharedRunTest):
    CONFIG = CONFIG
    RANKS = 3

    def test_a_group_of_odd_size_is_skipped_with_the_reason(self):
        # Every case skipped (odd world, one node): a run where nothing ran exits 1, its file complete.
        self.assertEqual(self.proc.returncode, 1, self.proc.stdout + self.proc.stderr)
        self.assertRegex(self.proc.stdout, r"\nran 0 of \d+ cases \(\d+ skipped: ")
        with h5py.File(self.out, "r") as f:
            world = [f["cases"][k] for k in f["cases"] if s(f["cases"][k].attrs["scope"]) == "world"]
            self.assertEqual(len(world), 6)
            for c in world:
                self.assertEqual(s(c.attrs["status"]), "skipped")
                self.assertEqual(s(c.attrs["status_reason"]),
                                 "p2p needs groups of an even size; group 0 of scope world has 3 rank(s)")


class BadInput(InputErrorTest):
    def test_a_message_below_one_element(self):
        cfg, out, p = self.run_config('[[experiment]]\nname = "p"\nworkload = "p2p"\nbytes = 2\n')
        self.assert_input_error(p, "bytes", "at least 4", out=out)

    def test_a_window_of_no_message(self):
        cfg, out, p = self.run_config('[[experiment]]\nname = "p"\nworkload = "p2p"\npattern = "bw"\nwindow = 0\n')
        self.assert_input_error(p, "key 'window' must be at least 1, got 0", out=out)

    def test_a_window_past_its_maximum(self):
        cfg, out, p = self.run_config('[[experiment]]\nname = "p"\nworkload = "p2p"\nwindow = 2000000\n')
        self.assert_input_error(p, "key 'window' must be at most 1048576, got 2000000", out=out)

    def test_an_unknown_pattern(self):
        cfg, out, p = self.run_config('[[experiment]]\nname = "p"\nworkload = "p2p"\npattern = "ping"\n')
        self.assert_input_error(p, "pattern", "latency, bw, bibw", out=out)


class AgainstOsu(unittest.TestCase):
    """bench/p2p_vs_osu.py's reading of OSU's output and its verdict on a ratio, from known text and numbers (the
    benchmark itself needs OSU built; it is no test)."""

    OSU_LATENCY = """
# OSU MPI Latency Test v7.4
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)
8                       0.14
16                      0.13
1024                    0.27
1048576                74.14
"""

    def test_osu_rows_are_read_by_size_and_a_missing_size_is_named(self):
        self.assertEqual(osu_table(self.OSU_LATENCY), {8: 0.14, 1024: 0.27, 1048576: 74.14})
        with self.assertRaisesRegex(ValueError, "OSU printed no row for 1048576 B"):
            osu_table(self.OSU_LATENCY.replace("1048576                74.14", ""))

    def test_both_bounds_are_judged_whichever_way_the_figure_runs(self):
        self.assertEqual(verdict("latency", 1.05), "within 10%")
        self.assertEqual(verdict("latency", 1.2), "gpuscale slower by more than 10%")
        self.assertIn("gpuscale FASTER by more than 10%: one of them measures something else", verdict("latency", 0.8))
        # bandwidth: above 1 is gpuscale faster
        self.assertIn("gpuscale FASTER", verdict("bw", 1.2))
        self.assertEqual(verdict("bibw", 0.8), "gpuscale slower by more than 10%")
        self.assertEqual(verdict("bw", 0.95), "within 10%")


if __name__ == "__main__":
    unittest.main()
