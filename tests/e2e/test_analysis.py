"""What `report` makes of real result files: a table that fits a terminal,
every number in --wide, csv and json, and a run against a baseline."""
import csv
import io
import json
import os
import re
import shutil
import unittest

from common import InputErrorTest, ScratchTest, gpuscale, mpirun, preamble, stretch_samples, without_host_readings

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

# One rank; 21 samples of about 10 ms: each median's interval then leaves
# out the 4 smallest and largest, so a few samples slowed by other work on
# the machine do not widen it.
GEMM = preamble(warmup=2, reps=21, threads=1) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = 256
dtype = "fp64"
ops = 16
modes = "parallel"
"""


class DefaultConfig(ScratchTest):
    """The default experiment on 2 ranks, as the README's first command runs it."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.out = cls.shared.path("default.h5")
        cls.proc = mpirun(2, "run", os.path.join(SOURCE, "configs", "default.toml"), "-o", cls.out,
                          "--set", "reps=8", "--set", "warmup=1")

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_the_table_fits_80_columns_and_names_what_varies(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        r = gpuscale("report", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        long = [line for line in r.stdout.splitlines() if len(line) > 80]
        self.assertEqual(long, [], r.stdout)
        self.assertIn("gemm-small: gemm, threads=1 size=64 impl=vendor ops=2000, 2 rank(s) on 1 node(s)", r.stdout)
        self.assertRegex(r.stdout, r"#\s+dtype\s+mode\s+median\s+GF/s/rank\s+speedup\s+eff")
        self.assertRegex(r.stdout, r"\n\d+\s+fp32\s+parallel\s+\S+ ms\s+\d")

    def test_wide_csv_and_json_carry_every_number(self):
        w = gpuscale("report", self.out, "--wide").stdout
        for col in ("min", "p95", "enqueue", "rate total", "slowest"):
            self.assertIn(col, w)
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        for r in rows:
            for k in ("median_s", "median_lo_s", "median_hi_s", "min_s", "p95_s", "gflops", "total_gflops"):
                self.assertIsInstance(r[k], float, k)
            self.assertLessEqual(r["median_lo_s"], r["median_s"])
            self.assertLessEqual(r["median_s"], r["median_hi_s"])
        parallel = [r for r in rows if r["mode"] == "parallel"]
        self.assertEqual(len(parallel), 3)
        for r in parallel:
            self.assertLessEqual(r["speedup_lo"], r["speedup"])
            self.assertLessEqual(r["speedup"], r["speedup_hi"])
            self.assertIsInstance(r["speedup_no_difference"], bool)
        lines = gpuscale("report", self.out, "--format", "csv").stdout.splitlines()
        head = lines[0].split(",")
        for k in ("median_lo_s", "speedup_lo", "speedup_hi", "efficiency_lo", "baseline_verdict"):
            self.assertIn(k, head)

    def test_the_file_against_itself_is_within_noise_everywhere(self):
        # Where the host was busy while a case ran, the case is uncertain instead (never slower or faster).
        r = gpuscale("report", self.out, "--baseline", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("against the baseline " + self.out, r.stdout)
        self.assertEqual(len(re.findall(r"  (within noise|uncertain \(host busy\))\n", r.stdout)), 6, r.stdout)
        rows = json.loads(gpuscale("report", self.out, "--baseline", self.out, "--format", "json").stdout)
        for row in rows:
            b = row["baseline"]
            self.assertIn(b["verdict"], ("within noise", "uncertain (host busy)"))
            self.assertEqual(b["case"], row["case"])
            self.assertEqual(b["ratio"], 1.0)
            self.assertLessEqual(b["ratio_lo"], 1.0)
            self.assertGreaterEqual(b["ratio_hi"], 1.0)


class OfVendor(ScratchTest):
    """A kernel ladder as the CPU backend has one: the naive loop next to OpenBLAS, each the other's reference."""
    LADDER = preamble(warmup=1, reps=5) + """
[[experiment]]
name = "ladder"
workload = "gemm"
impl = ["vendor", "naive"]
dtype = ["fp64", "fp32"]
size = 96
ops = 2
modes = ["parallel"]
"""

    def test_each_kernel_gets_its_share_of_the_vendor_librarys_gflops_from_the_same_run(self):
        cfg = self.write("ladder.toml", self.LADDER)
        out = self.path("ladder.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = json.loads(gpuscale("report", out, "--format", "json").stdout)
        by = {(r["params"]["dtype"], r["params"]["impl"]): r for r in rows}
        for dtype in ("fp64", "fp32"):
            vendor, naive = by[(dtype, "vendor")], by[(dtype, "naive")]
            self.assertNotIn("of_vendor", vendor)
            self.assertEqual(naive["vendor_case"], vendor["case"])
            self.assertAlmostEqual(naive["of_vendor"], naive["gflops"] / vendor["gflops"], places=12)
        table = list(csv.DictReader(io.StringIO(gpuscale("report", out, "--format", "csv").stdout)))
        at = {int(c["case"]): c for c in table}
        for r in rows:
            self.assertEqual(at[r["case"]]["vendor_case"], str(r.get("vendor_case", "")))
            if "of_vendor" in r:
                self.assertAlmostEqual(float(at[r["case"]]["of_vendor"]), r["of_vendor"], places=6)
        t = gpuscale("report", out).stdout
        self.assertRegex(t, r"#\s+dtype\s+impl\s+median\s+GF/s/rank\s+of vendor")
        for dtype in ("fp64", "fp32"):
            naive = by[(dtype, "naive")]
            pct = naive["of_vendor"] * 100  # two significant digits below 10%
            cell = "%.0f%%" % pct if pct >= 9.95 else "%.1f%%" % pct if pct >= 0.995 else "%.2g%%" % pct
            self.assertRegex(t, r"\n%d\s+%s\s+naive\s.*\s%s\s" % (naive["case"], dtype, re.escape(cell)))
        self.assertIn("note: of vendor: GFLOP/s per rank over that of impl vendor (OpenBLAS)", t)

    def test_a_share_of_the_vendor_library_is_a_limit_that_report_check_holds_each_kernel_to(self):
        # The naive loop reaches a few percent of OpenBLAS here: at least 0.1% holds, 50 times OpenBLAS cannot.
        cfg = self.write("targets.toml", self.LADDER + """
[[experiment]]
name = "holds"
workload = "gemm"
impl = "naive"
dtype = "fp64"
size = 96
modes = "parallel"
expect = {min_of_vendor = 0.001}
[[experiment]]
name = "fails"
workload = "gemm"
impl = "naive"
dtype = "fp32"
size = 96
modes = "parallel"
expect = {min_of_vendor = 50}
""")
        out = self.path("targets.h5")
        p = mpirun(1, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"{out}: check: 4 limits checked in 2 cases: 3 hold, 1 FAILED\n",  # and each verified
                      p.stdout.replace("\n    ", " "))
        rows = {r["name"]: r for r in json.loads(gpuscale("report", out, "--format", "json").stdout)}
        for name, holds in (("holds", True), ("fails", False)):
            (limit,) = rows[name]["expect"]
            self.assertEqual(limit["limit"], "min_of_vendor")
            self.assertEqual(limit["holds"], holds)
            self.assertEqual(limit["measured"], rows[name]["of_vendor"])
        without_host_readings(out)  # a busy host would add what it did to the failed limit
        r = gpuscale("report", out, "--check", "--verbose")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        pct = rows["fails"]["of_vendor"] * 100
        self.assertIn("case %d (fails threads=1 size=96 dtype=fp32 impl=naive ops=1 [parallel]):\n"
                      "  verified: holds\n"
                      "  min_of_vendor 5000.0%%: FAILED, measured %.1f%%\n" % (rows["fails"]["case"], pct),
                      r.stdout.replace("\n    ", " "))
        self.assertRegex(r.stdout, r"\n  min_of_vendor 0\.1%%: holds, measured %s%%\n"
                         % re.escape("%.1f" % (rows["holds"]["of_vendor"] * 100)))


class Baseline(ScratchTest):
    def run_gemm(self, name, config=GEMM):
        out = self.path(name)
        p = mpirun(1, "run", self.write(name + ".toml", config), "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_a_run_whose_samples_took_twice_as_long_is_slower_than_its_baseline(self):
        alone = self.run_gemm("alone.h5")
        slow = self.path("slow.h5")
        shutil.copy(alone, slow)
        stretch_samples(slow, 2.0)  # known timings: every sample twice as long
        for path in (alone, slow):  # and no readings of a busy host, which would make the verdict uncertain
            without_host_readings(path)
        r = gpuscale("report", slow, "--baseline", alone)
        self.assertEqual(r.returncode, 0, r.stderr)
        row = json.loads(gpuscale("report", slow, "--baseline", alone, "--format", "json").stdout)[0]
        self.assertEqual(row["baseline"]["verdict"], "slower", r.stdout)
        self.assertAlmostEqual(row["baseline"]["ratio"], 2.0, places=9)
        self.assertGreater(row["baseline"]["ratio_lo"], 1.0)
        self.assertRegex(r.stdout, r"\n1\s+gemm\s+parallel\s+\S+ ms\s+\S+ ms\s+2\.000 \(\d\.\d+-\d\.\d+\)\s+slower\n")
        # The other way round: faster.
        back = json.loads(gpuscale("report", alone, "--baseline", slow, "--format", "json").stdout)[0]
        self.assertEqual(back["baseline"]["verdict"], "faster")
        self.assertAlmostEqual(back["baseline"]["ratio"], 0.5, places=9)

    def test_cases_missing_from_the_baseline_say_so(self):
        # The baseline shares case 1 (size 128); case 2 (size 256) is new. (One that shares none is refused:
        # e2e.baseline.)
        a = self.run_gemm("a.h5", GEMM.replace("size = 256", "size = [128, 256]"))
        other = self.run_gemm("other.h5", GEMM.replace("size = 256", "size = 128"))
        r = gpuscale("report", a, "--baseline", other)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\n#2: gemm size=256\n2\s+parallel\s+-\s+\S+ ms\s+-\s+not in baseline\n")
        self.assertRegex(r.stdout, r"\n#1: gemm size=128\n1\s+parallel\s+\S+ ms\s+\S+ ms\s+\d\.\d+ \(")


LIMITS = preamble(warmup=1, reps=7, threads=1) + """
[[experiment]]
name = "accept"
workload = "gemm"
size = 64
dtype = "fp64"
ops = 20

[experiment.expect]
max_median_s = 10
min_gflops_per_rank = 0.001
min_efficiency = 0.01
"""


class Check(ScratchTest):
    def checked(self, text):
        """report --check's lines, unwrapped, less the verdict's line of parts that fail: a rank that straggled in
        this run (the machine's load) is named there, whatever the limits (e2e.check tests that line)."""
        lines = text.replace("\n    ", " ").splitlines()
        for line in lines:
            if line.startswith("parts that fail: "):
                self.assertRegex(line, r"^parts that fail: (node|rank) .* \(see --verdict\)$")
        return [line for line in lines if not line.startswith("parts that fail: ")]

    def run_limits(self, text, name):
        out = self.path(name)
        p = mpirun(2, "run", self.write(name + ".toml", text), "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)  # a failed limit does not fail the run
        return out, p.stdout

    def test_limits_that_hold(self):
        out, printed = self.run_limits(LIMITS, "ok")
        # Each case verified, and its limits (efficiency: parallel only).
        self.assertIn(f"{out}: check: 7 limits checked in 2 cases: all hold", printed.replace("\n    ", " "))
        # report --check: the verdict alone; --verbose: each case and its limits before it.
        r = gpuscale("report", out, "--check")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.checked(r.stdout), [f"{out}: check: 7 limits checked in 2 cases: all hold"])
        r = gpuscale("report", out, "--check", "--verbose")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = self.checked(r.stdout)
        self.assertEqual(len(lines), 10, r.stdout)
        for at, mode in ((0, "serial"), (4, "parallel")):
            self.assertEqual(lines[at], f"case {at // 4 + 1} (accept threads=1 size=64 dtype=fp64 impl=vendor ops=20 "
                                        f"[{mode}]):")
            self.assertEqual(lines[at + 1], "  verified: holds")
            self.assertRegex(lines[at + 2], r"^  max_median_s 10.0 s: holds, measured \S+ [mu]?s$")
        self.assertRegex(lines[7], r"^  min_efficiency 1\.0%: holds, measured \d+\.\d%$")
        for at in (3, 8):
            self.assertRegex(lines[at], r"^  min_gflops_per_rank 0\.00100 GF/s: holds, measured \S+ GF/s$")
        self.assertEqual(lines[9], f"{out}: check: 7 limits checked in 2 cases: all hold")
        rows = json.loads(gpuscale("report", out, "--format", "json").stdout)
        self.assertEqual([e["limit"] for e in rows[1]["expect"]],
                         ["max_median_s", "min_efficiency", "min_gflops_per_rank"])
        self.assertTrue(all(e["holds"] for row in rows for e in row["expect"]))

    def test_a_limit_that_fails_is_named_with_what_was_measured(self):
        out, printed = self.run_limits(LIMITS.replace("min_gflops_per_rank = 0.001", "min_gflops_per_rank = 1e9"),
                                       "fail")
        # The run's end: each failed limit under its case, then the count.
        lines = printed.replace("\n    ", " ").splitlines()
        at = lines.index(f"{out}: check: 7 limits checked in 2 cases: 5 hold, 2 FAILED")
        for case, mode in ((0, "serial"), (1, "parallel")):
            self.assertEqual(lines[at - 4 + 2 * case], f"case {case + 1} (accept threads=1 size=64 dtype=fp64 "
                                                       f"impl=vendor ops=20 [{mode}]):")
            # What the host did, where it was busy: "FAILED (descheduled: rank 0 waited ...), measured ...".
            self.assertRegex(lines[at - 3 + 2 * case], r"^  min_gflops_per_rank 1000000000 GF/s: FAILED(?: \((?:host "
                                                       r"busy|descheduled): [^)]*\))?, measured \d+(\.\d+)? GF/s$")
        without_host_readings(out)  # from here on, known readings: none
        r = gpuscale("report", out, "--check")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.replace("\n    ", " ").splitlines()[-1],
                         f"{out}: check: 7 limits checked in 2 cases: 5 hold, 2 FAILED")
        # report --check --verbose: every limit of each case, then the verdict.
        r = gpuscale("report", out, "--check", "--verbose")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = self.checked(r.stdout)
        self.assertEqual(len(lines), 10, r.stdout)
        for at in (3, 8):
            self.assertRegex(lines[at], r"^  min_gflops_per_rank 1000000000 GF/s: FAILED, measured \d+(\.\d+)? GF/s$")
        self.assertEqual(lines[9], f"{out}: check: 7 limits checked in 2 cases: 5 hold, 2 FAILED")
        # json and csv say it too, and --check still exits 1.
        j = gpuscale("report", out, "--check", "--format", "json")
        self.assertEqual(j.returncode, 1)
        self.assertFalse(json.loads(j.stdout)[0]["expect"][1]["holds"])

    def test_a_file_without_limits_is_an_input_error_for_check(self):
        out, _ = self.run_limits(LIMITS[:LIMITS.index("[experiment.expect]")], "none")
        r = gpuscale("report", out, "--check")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"gpuscale: error: {out}: no limits to check: its config sets no "
                                   "[experiment.expect] or [defaults.expect] (docs/config.md)\n")


class BadReportInput(InputErrorTest):
    def test_an_unknown_limit_in_the_config(self):
        cfg, out, p = self.run_config(LIMITS.replace("min_gflops_per_rank", "min_gflop_per_rank"))
        self.assert_input_error(p, cfg + ":17:1:", "unknown limit 'min_gflop_per_rank' in [experiment.expect]",
                                "did you mean 'min_gflops_per_rank'?", out=out)

    def test_a_missing_baseline_file(self):
        self.assert_input_error(gpuscale("report", os.path.join(SOURCE, "README.md"), "--baseline",
                                         self.path("gone.h5")), "gone.h5: no such file")


if __name__ == "__main__":
    unittest.main(verbosity=2)
