"""One file, every view, the same numbers: the progress line of `gpuscale run`, the table (nccl-tests' blocks for
collectives, the generic blocks, --wide), JSON, json-full, CSV, side by side, --baseline, the Python loader and the
ranks figure of tools/gpuscale-plot give each case the same op time, busbw and slowest-rank ratio, within the
rounding of each view, as recomputed here from the raw samples with h5py. And a straggler made with known timings
reads the same ratio in the slowest column, its note, JSON and CSV."""
import csv
import io
import json
import os
import re
import shutil
import sys
import unittest

import h5py
import numpy as np

from common import SharedRunTest, gpuscale, mpirun, preamble, run, s, set_durations

TOOLS = os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "tools")
sys.path.insert(0, TOOLS)
import gpuscale_data  # noqa: E402

CONFIG = preamble(warmup=1, reps=8, threads=1) + """
[[experiment]]
name = "coll"
workload = "collective"
op = ["allreduce", "broadcast"]
bytes = [1024, 65536]
inplace = [false, true]
iters = 5
modes = ["parallel"]

[[experiment]]
name = "mm"
workload = "gemm"
size = 128
ops = 4
modes = ["serial", "parallel"]
"""
TRANSFERS = range(1, 9)  # cases 1-8 are the collective's, 9 and 10 the gemm's
UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(number, unit):
    return float(number) * UNIT[unit]


def expected(path):
    """{case: (op time s, busbw GB/s, slowest rank, slowest ratio)} recomputed from the raw samples: op time as
    nccl-tests (device time / iters, mean over ranks, median over samples), the slowest rank's median sample over
    the median of the other ranks' medians."""
    out = {}
    with h5py.File(path, "r") as f:
        for name in sorted(f["cases"]):
            g = f["cases"][name]
            case = int(g.attrs["index"]) + 1
            d = g["wall_end"][()] - g["wall_start"][()]
            med = np.median(d, axis=1)
            slow = int(np.argmax(med))
            ratio = med[slow] / np.median(np.delete(med, slow))
            op = busbw = None
            if s(g.attrs["workload"]) == "collective":
                iters = int(g["parameters"].attrs["iters"])
                op = float(np.median(np.mean(g["device_time"][()] / iters, axis=0)))
                busbw = np.mean(g["op_bytes"][()]) / op / 1e9 * np.mean(g["bus_factor"][()])
            out[case] = (op, busbw, slow, ratio)
    return out


class OneFileEveryView(SharedRunTest):
    CONFIG = CONFIG

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.want = expected(cls.out) if cls.proc.returncode == 0 else {}

    def setUp(self):
        super().setUp()
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def report(self, *args):
        proc = gpuscale("report", *args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout

    def assert_rounded(self, printed, exact, what):
        """`printed` is `exact` to the 3 significant digits (or 2 decimals) a view prints."""
        self.assertLessEqual(abs(printed - exact), max(0.006 * abs(exact), 0.006), f"{what}: {printed} vs {exact}")

    def test_the_progress_line_gives_op_time_busbw_and_the_slowest_rank(self):
        seen = set()
        for line in self.proc.stdout.splitlines():
            m = re.match(r"\[(\d+)/10\] .*? \.\.\. (?:op time ([\d.]+) (us|ms|s), algbw [\d.]+ GB/s, busbw ([\d.]+) "
                         r"GB/s|median .*?), slowest rank (\d+) ([\d.]+)x", line)
            if not m:
                continue
            case = int(m.group(1))
            op, busbw, slow, ratio = self.want[case]
            if case in TRANSFERS:
                self.assert_rounded(seconds(m.group(2), m.group(3)), op, f"case {case} op time")
                self.assert_rounded(float(m.group(4)), busbw, f"case {case} busbw")
            self.assertEqual(int(m.group(5)), slow, line)
            self.assertAlmostEqual(float(m.group(6)), ratio, delta=0.006, msg=line)
            seen.add(case)
        self.assertEqual(seen, set(range(1, 11)), self.proc.stdout)

    def test_the_collective_table_gives_op_time_and_busbw_as_nccl_tests_prints_them(self):
        table = self.report(self.out)
        rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+fp32\s+(sum|none)\s+(-1|0)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)"
                          r"\s+(\d+)\s+([\d.]+)$", table, re.M)
        self.assertEqual(sorted(int(r[0]) for r in rows), list(TRANSFERS), table)
        for r in rows:
            op, busbw, _, _ = self.want[int(r[0])]
            self.assert_rounded(float(r[5]) * 1e-6, op, f"case {r[0]} time")
            self.assert_rounded(float(r[6]), busbw, f"case {r[0]} busbw")
            self.assertEqual(r[7], "0")
            self.assertGreaterEqual(float(r[8]), float(r[5]) - 0.01)  # the slowest rank's time is no less
        self.assertEqual(table.count("# Avg bus bandwidth"), 2, table)
        self.assertTrue(all(len(line) <= 80 for line in table.splitlines()), table)
        # The gemm block: the slowest column.
        for case in (9, 10):
            _, _, slow, ratio = self.want[case]
            m = re.search(rf"^\s*{case}\s.*\br(\d) ([\d.]+)x", table, re.M)
            self.assertIsNotNone(m, table)
            self.assertEqual(int(m.group(1)), slow)
            self.assertAlmostEqual(float(m.group(2)), ratio, delta=0.006)

    def test_the_wide_table_gives_op_time_its_fastest_and_slowest_rank_and_busbw(self):
        table = self.report(self.out, "--wide")
        rows = json.loads(self.report(self.out, "--format", "json"))
        for line in table.splitlines():
            m = re.match(r"\s*(\d+)\s", line)
            if not m or int(m.group(1)) not in TRANSFERS:
                continue
            case = int(m.group(1))
            op, busbw, slow, ratio = self.want[case]
            t = re.search(r"([\d.]+) (us|ms) \(([\d.]+) (us|ms)-([\d.]+) (us|ms)\)", line)
            self.assertIsNotNone(t, line)
            self.assert_rounded(seconds(t.group(1), t.group(2)), op, f"case {case} op time")
            self.assert_rounded(seconds(t.group(3), t.group(4)), rows[case - 1]["op_time_min_s"], "fastest")
            self.assert_rounded(seconds(t.group(5), t.group(6)), rows[case - 1]["op_time_max_s"], "slowest")
            self.assertIn(f"r{slow} {ratio:.2f}x", line)
            b = re.findall(r"([\d.]+) GB/s", line)
            self.assert_rounded(float(b[-1]), busbw, f"case {case} busbw")

    def test_json_json_full_and_csv_hold_the_same_numbers(self):
        rows = json.loads(self.report(self.out, "--format", "json"))
        full = json.loads(self.report(self.out, "--format", "json-full"))
        self.assertEqual(full["cases"], rows)
        table = list(csv.DictReader(io.StringIO(self.report(self.out, "--format", "csv"))))
        for row, line in zip(rows, table):
            op, busbw, slow, ratio = self.want[row["case"]]
            self.assertAlmostEqual(row["slowest_ratio"], ratio, delta=1e-9 * ratio)
            self.assertEqual(row["slowest_rank"], slow)
            self.assertAlmostEqual(float(line["slowest_ratio"]), ratio, delta=1e-7 * ratio)
            if op is None:
                self.assertNotIn("op_time_s", row)
                self.assertEqual(line["op_time_s"], "")
                continue
            self.assertAlmostEqual(row["op_time_s"], op, delta=1e-9 * op)
            self.assertAlmostEqual(row["busbw_gbps"], busbw, delta=1e-9 * busbw)
            self.assertAlmostEqual(float(line["op_time_s"]), op, delta=1e-7 * op)
            self.assertAlmostEqual(float(line["busbw_gbps"]), busbw, delta=1e-7 * busbw)
            self.assertLessEqual(row["op_time_min_s"], row["op_time_s"])
            self.assertLessEqual(row["op_time_s"], row["op_time_max_s"])
            self.assertEqual(float(line["op_time_max_s"]), float(f"{row['op_time_max_s']:.9g}"))

    def test_json_full_keeps_the_run_and_csv_has_a_column_per_parameter(self):
        full = json.loads(self.report(self.out, "--format", "json-full"))
        (run,) = full["runs"]
        self.assertEqual((run["file"], run["ranks"], run["nodes"], run["backend"], run["comm"]),
                         (self.out, 2, 1, "cpu", "mpi"))
        self.assertTrue(run["complete"])
        self.assertEqual((run["cases"], run["cases_planned"]), (10, 10))
        self.assertIsInstance(run["warnings"], list)
        self.assertEqual([r["rank"] for r in run["rank_table"]], [0, 1])
        table = list(csv.DictReader(io.StringIO(self.report(self.out, "--format", "csv"))))
        self.assertEqual([r["param.op"] for r in table], ["allreduce"] * 4 + ["broadcast"] * 4 + ["", ""])
        self.assertEqual([r["param.inplace"] for r in table[:4]], ["false", "true", "false", "true"])
        self.assertEqual([r["param.size"] for r in table[8:]], ["128", "128"])
        self.assertEqual(table[0]["param.bytes"], "1024")
        for view in (self.report(self.out), self.report(self.out, "--wide"), self.proc.stdout):
            self.assertNotIn("inplace=0", view)
            self.assertNotIn("inplace=1", view)

    def test_a_baseline_of_another_shape_is_refused_naming_the_view_that_compares_them(self):
        other = os.path.join(self.dir, "three.h5")
        proc = mpirun(3, "run", self.write("three.toml", CONFIG), "-o", other)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        refused = gpuscale("report", other, "--baseline", self.out)
        self.assertEqual(refused.returncode, 2, refused.stdout + refused.stderr)
        self.assertEqual(refused.stderr, f"gpuscale: error: --baseline {self.out} shares no case with {other}: the "
                                         "baseline ran on 2 rank(s) on 1 node(s), this file on 3 rank(s) on 1 "
                                         f"node(s); compare them side by side (gpuscale report {self.out} {other}), "
                                         "or run the same shape\n")
        rows = json.loads(self.report(other, "--format", "json"))
        # The run's warnings (here, on 2 cores, that 3 ranks share them) go with every case in JSON and CSV.
        (run3,) = json.loads(self.report(other, "--format", "json-full"))["runs"]
        table = list(csv.DictReader(io.StringIO(self.report(other, "--format", "csv"))))
        for row, line in zip(rows, table):
            self.assertEqual(row.get("run_warnings", []), run3["warnings"])
            self.assertEqual(line["run_warnings"], "; ".join(run3["warnings"]))

    def test_side_by_side_and_the_baseline_compare_op_times(self):
        text = self.report(self.out, self.out)
        block = text[text.index("\ncoll: ", text.index("side by side")):]
        cells = [re.findall(r"([\d.]+) (us|ms|s)\b", line) for line in block.strip().splitlines()[2:10]]
        for case, pair in zip(TRANSFERS, cells):
            self.assertEqual(len(pair), 2, block)
            for number, unit in pair:
                self.assert_rounded(seconds(number, unit), self.want[case][0], f"case {case} side by side")
        text = self.report(self.out, "--baseline", self.out)
        self.assertIn("ratio = time here / time there (transfers: op time;", " ".join(text.split()))
        for case in TRANSFERS:
            m = re.search(rf"^\s*{case}\s+parallel\s+([\d.]+) (us|ms)\s+([\d.]+) (us|ms)\s+1\.000 ", text, re.M)
            self.assertIsNotNone(m, text)
            self.assert_rounded(seconds(m.group(3), m.group(4)), self.want[case][0], f"case {case} baseline")
        rows = json.loads(self.report(self.out, "--baseline", self.out, "--format", "json"))
        self.assertEqual(rows[0]["baseline"]["compared"], "op_time_s")
        self.assertEqual(rows[9]["baseline"]["compared"], "median_s")

    def test_the_loader_and_the_ranks_figure_compute_the_same(self):
        rows = {r["case"]: r for r in json.loads(self.report(self.out, "--format", "json"))}
        m = gpuscale_data.load(self.out).metrics()
        for case, (op, busbw, slow, ratio) in self.want.items():
            self.assertEqual(m.at[case, "slowest_rank"], slow)
            self.assertAlmostEqual(m.at[case, "slowest_ratio"], ratio, delta=1e-9 * ratio)
            if op is not None:
                for k in ("op_time_s", "busbw_gbps", "op_time_min_s", "op_time_max_s"):
                    self.assertAlmostEqual(m.at[case, k], rows[case][k], delta=1e-9 * rows[case][k], msg=k)
        data = os.path.join(self.dir, "data.json")
        proc = run([sys.executable, os.path.join(TOOLS, "gpuscale-plot"), "ranks", self.out, "--case", "3",
                    "-o", self.dir, "--data", data])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(data) as f:
            (fig,) = json.load(f)["figures"]
        (bars,) = fig["panels"][0]["series"]
        with h5py.File(self.out, "r") as f:
            g = f["cases/0002"]
            per_rank = np.median(g["device_time"][()] / 5, axis=1)
            np.testing.assert_allclose(bars["y"], g["op_bytes"][()] / per_rank / 1e9, rtol=1e-12)
        self.assertIn("algbw per rank", fig["panels"][0]["ylabel"])

    def test_a_straggler_gives_one_ratio_in_the_slowest_column_its_note_json_and_csv(self):
        path = os.path.join(self.dir, "slow.h5")
        shutil.copy(self.out, path)
        set_durations(path, [0.010, 0.015])  # known timings: rank 1 takes 1.5x as long as rank 0
        table = gpuscale("report", path).stdout
        self.assertIn("  r1 1.50x  ", table)
        self.assertIn("median 1.50x the other ranks'", " ".join(table.split()))  # as the note wraps
        rows = json.loads(gpuscale("report", path, "--format", "json").stdout)
        for row in rows:
            self.assertAlmostEqual(row["slowest_ratio"], 1.5, places=9)
            self.assertAlmostEqual(row["stragglers"]["ranks"][0]["ratio"], 1.5, places=9)
        lines = list(csv.DictReader(io.StringIO(gpuscale("report", path, "--format", "csv").stdout)))
        self.assertEqual({float(x["slowest_ratio"]) for x in lines}, {1.5})


if __name__ == "__main__":
    unittest.main()
