"""report --baseline on real result files: two runs of one config, verdicts from known timings (a copied file with
one case made twice as slow), --fail-on's exit codes and line, --min-effect, and the messages for bad input."""
import csv
import io
import json
import math
import shutil
import unittest

from common import (InputErrorTest, ScratchTest, as_another_run, gpuscale, mpirun, preamble, rewrite_digest,
                    set_durations, stretch_samples)

# Two cases of 9 samples each (an interval needs 7).
CONFIG = preamble(warmup=1, reps=9, threads=1) + """
[[experiment]]
name = "small"
workload = "gemm"
size = 64
dtype = "fp64"
ops = 20
modes = ["serial", "parallel"]
"""

# Every verdict a case that ran in both files may get.
VERDICTS = {"slower", "faster", "within noise", "uncertain (host busy)", "too few samples"}


def known_timings(path):
    """Every sample of every case 10 ms long on each rank, and no readings of what else the host did: a file whose
    verdicts follow from its numbers alone, however busy this machine was."""
    import h5py
    set_durations(path, [0.01, 0.01], same_start=True)
    with h5py.File(path, "r+") as f:
        for c in f["cases"].values():
            if "host" in c:
                del c["host"]


def stretch_case(path, index, factor):
    """Makes every sample of case `index` (from 0) in the result file `path` take `factor` times as long."""
    import h5py
    with h5py.File(path, "r+") as f:
        c = f["cases"][f"{index:04d}"]
        start, end, dev = c["wall_start"][()], c["wall_end"][()], c["device_time"][()]
        c["wall_end"][...] = start + factor * (end - start)
        c["device_time"][...] = factor * dev
        for name in ("wall_end", "device_time"):
            rewrite_digest(c[name])


class Runs(ScratchTest):
    """Two runs of CONFIG on 2 ranks, shared by the tests: `first` and `second`, and `known`/`slow`, copies of the
    first with known timings, in `slow` case 2 (parallel) twice as long."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cfg = cls.shared.write("small.toml", CONFIG)
        cls.first, cls.second = cls.shared.path("first.h5"), cls.shared.path("second.h5")
        cls.procs = [mpirun(2, "run", cfg, "-o", out) for out in (cls.first, cls.second)]
        cls.known, cls.slow = cls.shared.path("known.h5"), cls.shared.path("slow.h5")
        if all(p.returncode == 0 for p in cls.procs):
            shutil.copy(cls.first, cls.known)
            known_timings(cls.known)
            shutil.copy(cls.known, cls.slow)
            stretch_case(cls.slow, 1, 2.0)

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def setUp(self):
        super().setUp()
        for p in self.procs:
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_two_runs_of_one_config_get_a_verdict_per_case_and_the_rule(self):
        r = gpuscale("report", self.second, "--baseline", self.first)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = " ".join(r.stdout.split())
        self.assertIn(f"against the baseline {self.first}", text)
        self.assertIn("slower where the whole interval lies above 1.100, faster where below 0.909", text)
        rows = json.loads(gpuscale("report", self.second, "--baseline", self.first, "--format", "json").stdout)
        self.assertEqual(len(rows), 2)
        for row in rows:
            b = row["baseline"]
            self.assertIn(b["verdict"], VERDICTS)
            self.assertEqual(b["min_effect"], 0.10)
            self.assertGreaterEqual(b["effect_needed"], 0.10)
            self.assertEqual(b["case"], row["case"])
            # Two cases are too few to see how the cases scatter: the minimum effect alone applies.
            self.assertNotIn("run_scatter", b)
            self.assertEqual(b["effect_needed"], 0.10)
        self.assertIn("with an interval and a host not busy on either side, too few (5 needed)", text)
        self.assertIn("one run each: run-to-run scatter unknown, changes under 10% not called (--min-effect)", text)
        table = csv.DictReader(io.StringIO(
            gpuscale("report", self.second, "--baseline", self.first, "--format", "csv").stdout))
        for row in table:
            self.assertEqual(float(row["baseline_min_effect"]), 0.10)
            self.assertIn(row["baseline_verdict"], VERDICTS)
            self.assertIn(row["baseline_small_change"], ("true", "false"))

    def test_min_effect_takes_a_percentage_or_a_share(self):
        for value in ("10%", "0.1"):
            rows = json.loads(gpuscale("report", self.second, "--baseline", self.first, "--min-effect", value,
                                       "--format", "json").stdout)
            for row in rows:
                self.assertAlmostEqual(row["baseline"]["min_effect"], 0.1, msg=value)
        r = gpuscale("report", self.second, "--baseline", self.first, "--min-effect", "10%")
        self.assertIn("above 1.100, faster where below 0.909", " ".join(r.stdout.split()))

    def test_a_case_twice_as_slow_reads_slower_and_fails_the_run_with_fail_on_slower(self):
        r = gpuscale("report", self.slow, "--baseline", self.known, "--fail-on", "slower")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "gpuscale: 1 case(s) slower than the baseline: 2\n")
        # Everything was printed first: the file's table and the comparison.
        self.assertRegex(r.stdout,
                         r"\n1\s+(small\s+)?serial\s+\S+ ms\s+\S+ ms\s+1\.000 \(1\.000-1\.000\)\s+within noise\n")
        self.assertRegex(r.stdout, r"\n2\s+(small\s+)?parallel\s+\S+ ms\s+\S+ ms\s+2\.000 \(2\.000-2\.000\)\s+slower\n")
        rows = json.loads(gpuscale("report", self.slow, "--baseline", self.known, "--format", "json").stdout)
        self.assertEqual([row["baseline"]["verdict"] for row in rows], ["within noise", "slower"])
        self.assertAlmostEqual(rows[1]["baseline"]["ratio"], 2.0, places=9)
        # Without --fail-on, or failing on what did not happen: exit 0.
        for extra in ((), ("--fail-on", "faster")):
            r = gpuscale("report", self.slow, "--baseline", self.known, *extra)
            self.assertEqual((r.returncode, r.stderr), (0, ""), extra)
        r = gpuscale("report", self.slow, "--baseline", self.known, "--fail-on", "any")
        self.assertEqual((r.returncode, r.stderr),
                         (1, "gpuscale: 1 case(s) slower or faster than the baseline: slower 2\n"))

    def test_the_other_way_round_it_is_faster(self):
        r = gpuscale("report", self.known, "--baseline", self.slow, "--fail-on", "faster", "--format", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr, "gpuscale: 1 case(s) faster than the baseline: 2\n")
        rows = json.loads(r.stdout)  # the whole JSON, before the exit code
        self.assertEqual(rows[1]["baseline"]["verdict"], "faster")
        self.assertEqual(gpuscale("report", self.known, "--baseline", self.slow, "--fail-on", "slower").returncode, 0)

    def test_a_change_under_the_minimum_effect_is_within_noise_and_fails_nothing(self):
        args = ("report", self.slow, "--baseline", self.known, "--min-effect", "150%", "--fail-on", "any")
        r = gpuscale(*args)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertRegex(r.stdout, r"\n2\s+(small\s+)?parallel\s+\S+ ms\s+\S+ ms\s+2\.000 \(2\.000-2\.000\)\s+"
                                   r"within noise \(<150%\)\n")
        self.assertIn("note: within noise (<150%): the interval leaves out 1 but does not lie wholly beyond a change "
                      "of 150%",
                      " ".join(r.stdout.split()))
        rows = json.loads(gpuscale(*args, "--format", "json").stdout)
        self.assertEqual(rows[1]["baseline"]["verdict"], "within noise")
        self.assertIs(rows[1]["baseline"]["small_change"], True)
        self.assertIs(rows[0]["baseline"]["small_change"], False)
        self.assertEqual(rows[1]["baseline"]["effect_needed"], 1.5)

    def stretched(self, name, factor):
        """A copy of `known` (every sample 10 ms) with every sample `factor` times as long."""
        path = self.path(name)
        shutil.copy(self.known, path)
        stretch_samples(path, factor)
        self.copies = getattr(self, "copies", 0) + 1
        as_another_run(path, self.copies)  # as the copy of a run; one run twice is refused (below)
        return path

    def test_a_run_25_percent_slower_is_slower_on_every_case_against_one_run(self):
        slow = self.stretched("slow25.h5", 1.25)
        rows = json.loads(gpuscale("report", slow, "--baseline", self.known, "--format", "json").stdout)
        self.assertEqual([row["baseline"]["verdict"] for row in rows], ["slower", "slower"])
        self.assertEqual([row["baseline"]["baseline_runs"] for row in rows], [1, 1])

    def test_several_baseline_runs_call_only_changes_beyond_their_own_scatter(self):
        # Three baseline runs 13% apart either way: a run 25% slower than the middle one is within their scatter,
        # one twice as slow is not.
        bases = [self.known, self.stretched("b2.h5", 1.13), self.stretched("b3.h5", 1 / 1.13)]
        slow, slower = self.stretched("slow25.h5", 1.25), self.stretched("slow2.h5", 2.0)
        r = gpuscale("report", slow, "--baseline", *bases, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        for row in json.loads(r.stdout):
            b = row["baseline"]
            self.assertEqual((b["verdict"], b["baseline_runs"], b["file"]), ("within noise", 3, self.known))
            self.assertAlmostEqual(b["ratio"], 1.25, places=6)
            # 1.4826 x the median absolute deviation of the logs, wider here than their standard deviation
            self.assertAlmostEqual(b["runs_scatter"], math.expm1(1.4826 * math.log(1.13)), places=6)
            self.assertGreater(b["effect_needed"], 0.25)
        rows = json.loads(gpuscale("report", slower, "--baseline", *bases, "--format", "json").stdout)
        self.assertEqual([row["baseline"]["verdict"] for row in rows], ["slower", "slower"])
        text = " ".join(gpuscale("report", slow, "--baseline", *bases).stdout.split())
        self.assertIn(f"against the baseline's 3 runs ({self.known} and others; there: the run whose time is the "
                      "median)", text)
        self.assertIn("note: 3 baseline runs: a case is called only beyond twice its own scatter between them", text)
        self.assertNotIn("one run each", text)

    def test_one_run_twice_in_the_baseline_is_refused(self):
        twice = self.path("known-again.h5")
        shutil.copy(self.known, twice)
        r = gpuscale("report", self.second, "--baseline", self.known, twice)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stderr, rf"^gpuscale: error: --baseline {twice} holds the same run as {self.known} "
                                   r"\(started \S+, the same ranks' pids and hosts: one file by two paths, or a "
                                   r"copy\): each run counts once\n$")

    def test_help_says_what_fails_and_what_never_does(self):
        text = " ".join(gpuscale("report", "--help").stdout.split())
        self.assertIn("--fail-on", text)
        self.assertIn("'uncertain (host busy)' and 'within noise' never fail", text)
        self.assertIn("--min-effect", text)


class BadInput(InputErrorTest):
    """Each mistake with --min-effect and --fail-on: one line, exit 2."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.file = cls.shared.path("run.h5")
        cfg = cls.shared.write("small.toml", CONFIG)
        cls.proc = mpirun(1, "run", cfg, "-o", cls.file)
        cls.two = cls.shared.path("two.h5")  # the same config on 2 ranks
        cls.two_proc = mpirun(2, "run", cfg, "-o", cls.two)
        cls.other = cls.shared.path("other.h5")  # another config
        cls.other_proc = mpirun(1, "run", cls.shared.write("other.toml", CONFIG.replace('"small"', '"other"')), "-o",
                                cls.other)

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_a_baseline_that_shares_no_case_is_refused_naming_both(self):
        for p in (self.proc, self.two_proc, self.other_proc):
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assert_input_error(gpuscale("report", self.file, "--baseline", self.other),
                                f"--baseline {self.other} shares no case with {self.file}: it ran other experiments "
                                "or parameters (a run of ", "other.toml, this file of ",
                                "small.toml); compare runs of one config")
        self.assert_input_error(gpuscale("report", self.file, "--baseline", self.two),
                                f"--baseline {self.two} shares no case with {self.file}: the baseline ran on 2 "
                                "rank(s) on 1 node(s), this file on 1 rank(s) on 1 node(s); compare them side by "
                                f"side (gpuscale report {self.two} {self.file}), or run the same shape")

    def test_baseline_runs_of_two_configs_are_refused(self):
        for p in (self.proc, self.other_proc):
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assert_input_error(gpuscale("report", self.file, "--baseline", self.file, self.other),
                                f"--baseline {self.other} is a run of another config (", f"other.toml) than "
                                f"{self.file} (", "small.toml): the baseline's runs must be of one config")

    def test_baseline_before_the_files_leaves_none_to_report_and_says_why(self):
        self.assert_input_error(gpuscale("report", "--baseline", self.file, self.other),
                                f"no result file to report: --baseline takes every file after it ({self.file}, "
                                f"{self.other}); put the files to report first: gpuscale report NEW.h5 --baseline "
                                "OLD.h5")
        self.assert_input_error(gpuscale("report"), "files is required; see 'gpuscale report --help'")

    def test_each_mistake_is_one_line(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        f = self.file
        cases = [
            (("--baseline", f, "--fail-on", "slow"),
             ("--fail-on: must be one of slower, faster, any, got slow", "did you mean 'slower'?")),
            (("--baseline", f, "--min-effect", "5"),
             ("--min-effect: must be a share below 1 or a percentage, got 5: write 5% or 0.05",)),
            (("--baseline", f, "--min-effect", "abc"),
             ("--min-effect: must be a share from 0 to below 1 (0.05) or a percentage (5%), got abc",)),
            (("--baseline", f, "--min-effect", "-1%"),
             ("--min-effect: must be a share from 0 to below 1 (0.05) or a percentage (5%), got -1%",)),
            (("--fail-on", "slower"),
             ("--fail-on judges the verdicts against a baseline: add --baseline OLD.h5",)),
            (("--min-effect", "5%"),
             ("--min-effect judges the verdicts against a baseline: add --baseline OLD.h5",)),
        ]
        for args, fragments in cases:
            with self.subTest(args=args):
                self.assert_input_error(gpuscale("report", f, *args), *fragments)


if __name__ == "__main__":
    unittest.main()
