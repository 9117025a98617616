"""`report --check` on a run of the quick tier (configs/quick.toml, shrunk with --set): its limits give a verdict out
of the box. The samples' times are then set in the file, so that each limit holds or fails by construction, whatever
this machine did: the exact lines and the exit code of the check."""
import os
import shutil
import socket
import unittest

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, rewrite_digest, set_durations

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
QUICK = os.path.join(SOURCE, "configs", "quick.toml")

# The quick tier in a second: every experiment, smaller, with the shipped limits.
SHRUNK = ["--set", "size=128", "--set", "copies.bytes=1048576", "--set", "elements=1048576",
          "--set", "collectives.bytes=1024", "--set", "reps=3"]

# Each case of the shrunk run, and whether it has an efficiency (gemm, parallel).
CASES = [(f"gemm threads=1 size=128 dtype={dtype} impl=vendor ops=1 [{mode}]", mode == "parallel")
         for dtype in ("fp64", "fp32") for mode in ("serial", "parallel")]
CASES += [(f"copies threads=1 bytes=1048576 direction={d} host=pinned ops=1 [parallel]", False)
          for d in ("h2d", "d2h", "d2d")]
CASES += [("memory threads=1 elements=1048576 dtype=fp32 ops=10 [parallel]", False)]
CASES += [(f"collectives threads=1 op={op} dtype=fp32 bytes=1024 inplace=false iters=5 scope=world [parallel]", False)
          for op in ("allreduce", "allgather", "sendrecv")]


def listing(ratio, efficiency, verified=lambda case: "holds"):
    """The lines report --check prints for every case of CASES, before its verdict: `ratio` and `efficiency` what
    the straggler and efficiency limits came to, `verified(case)` what verification did."""
    lines = []
    for i, (label, parallel_gemm) in enumerate(CASES, 1):
        lines += [f"case {i} ({label}):", f"  verified: {verified(i)}", f"  max_slowest_ratio 1.50x: {ratio}"]
        if parallel_gemm:
            lines.append(f"  min_efficiency 80.0%: {efficiency}")
    return lines


def failed_only(lines):
    """What report --check prints without --verbose, of a --verbose listing: each limit that failed, under its
    case."""
    out, case = [], None
    for line in lines:
        if not line.startswith("  "):
            case = line
        elif ": FAILED" in line:
            if case:
                out.append(case)
                case = None
            out.append(line)
    return out


class QuickTier(SharedRunTest):
    """One run of the quick tier on 2 ranks; each test sets the times of a copy of its file."""
    CONFIG_FILE = QUICK
    ARGS = SHRUNK

    def copy_with(self, name, seconds_by_rank):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        out = self.path(name)
        shutil.copy(self.out, out)
        set_durations(out, seconds_by_rank, same_start=True)
        return out

    def check(self, out, code, *options):
        r = gpuscale("report", out, "--check", *options)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout.replace("\n    ", " ").splitlines()  # a long line goes on four spaces in

    def verbose_and_brief(self, out, code, listing, verdict, failing_rank=None):
        """report --check --verbose prints `listing` then `verdict`; report --check the failed limits of it, then
        the same verdict; before it, where a rank fails (report --verdict), the line naming it."""
        parts = [] if failing_rank is None else [
            f"parts that fail: rank {failing_rank} ({socket.gethostname()}) (see --verdict)"]
        self.assertEqual(self.check(out, code, "--verbose"), listing + parts + [f"{out}: check: {verdict}"])
        self.assertEqual(self.check(out, code), failed_only(listing) + parts + [f"{out}: check: {verdict}"])

    def test_the_shipped_limits_hold_on_ranks_that_take_as_long_as_each_other(self):
        out = self.copy_with("even.h5", [1.0, 1.0])
        # Serial: 2 s a sample, parallel 1 s: efficiency 2 / 1 / 2 ranks.
        self.verbose_and_brief(out, 0, listing("holds, measured 1.00x", "holds, measured 100.0%"),
                               "24 limits checked in 11 cases: all hold")

    def test_a_rank_four_times_as_slow_fails_the_straggler_and_efficiency_limits(self):
        out = self.copy_with("slow.h5", [1.0, 4.0])
        # Rank 1's median over the other rank's: 4 / 1; efficiency: 5 s serial over 4 s parallel, / 2 ranks.
        self.verbose_and_brief(out, 1, listing("FAILED, measured 4.00x", "FAILED, measured 62.5%"),
                               "24 limits checked in 11 cases: 11 hold, 13 FAILED", failing_rank=1)

    def test_efficiency_is_not_applicable_where_the_ranks_outnumber_the_cores_and_the_check_says_so(self):
        import h5py
        out = self.copy_with("crowded.h5", [1.0, 1.0])
        with h5py.File(out, "r+") as f:
            f["ranks/node_cores"][...] = 1  # the node had one core for its two ranks
        self.assertEqual(self.check(out, 0, "--verbose"),
                         listing("holds, measured 1.00x", "not applicable: 2 ranks on 1 core") +
                         [f"{out}: check: 24 limits checked in 11 cases: 22 hold, 2 not applicable"])
        # Without --verbose, a line for the limit and its reason.
        self.assertEqual(self.check(out, 0),
                         ["not applicable: min_efficiency 80.0% in cases 2, 4: 2 ranks on 1 core",
                          f"{out}: check: 24 limits checked in 11 cases: 22 hold, 2 not applicable"])
        # A straggler still fails where efficiency does not apply.
        set_durations(out, [1.0, 4.0], same_start=True)
        listed = listing("FAILED (oversubscribed: 2 ranks on 1 core of node 0), measured 4.00x",
                         "not applicable: 2 ranks on 1 core")
        verdict = f"{out}: check: 24 limits checked in 11 cases: 11 hold, 11 FAILED, 2 not applicable"
        self.assertEqual(self.check(out, 1, "--verbose"), listed + [verdict])
        self.assertEqual(self.check(out, 1), failed_only(listed) +
                         ["not applicable: min_efficiency 80.0% in cases 2, 4: 2 ranks on 1 core", verdict])

    def test_a_transfer_whose_result_was_wrong_fails_the_check(self):
        import h5py
        import numpy as np
        out = self.copy_with("wrong.h5", [1.0, 1.0])
        with h5py.File(out, "r+") as f:
            c = f["cases/0009"]  # case 10: allgather
            c.attrs["status"] = np.bytes_("verify-failed")  # fixed-length, as gpuscale writes
            c["wrong_elements"][...] = [0, 7]
            rewrite_digest(c["wrong_elements"])
        expected = listing("holds, measured 1.00x", "holds, measured 100.0%",
                           lambda case: "FAILED; the case failed verification: 7 wrong element(s) on a rank"
                           if case == 10 else "holds")
        at = expected.index("  max_slowest_ratio 1.50x: holds, measured 1.00x",
                            expected.index(f"case 10 ({CASES[9][0]}):"))
        expected[at] = "  max_slowest_ratio 1.50x: FAILED, measured 1.00x; the case failed verification"
        self.verbose_and_brief(out, 1, expected, "24 limits checked in 11 cases: 22 hold, 2 FAILED", failing_rank=1)

    def test_the_run_says_the_verdict_at_its_end(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        # What ran, then the file, then the limits.
        self.assertIn("\nran 11 of 11 cases (0 skipped; 0 failed verification)\ndone: " + self.out, self.proc.stdout)
        # Its count, whatever this machine's times made of the limits, then how to get the exit code.
        self.assertRegex(self.proc.stdout.replace("\n    ", " "),
                         rf"\n{self.out}: check: 24 limits checked in 11 cases: (all hold|\d+ holds?(, \d+ FAILED)?"
                         r"(, \d+ not applicable)?)\n\(gpuscale report --check")
        self.assertIn("(gpuscale report --check " + self.out + " exits 1 when a limit fails)", self.proc.stdout)

    def test_check_prints_each_experiments_limits(self):
        p = gpuscale("check", QUICK)
        self.assertEqual(p.returncode, 0, p.stderr)
        for name, limits in (("gemm", "max_slowest_ratio=1.5 min_efficiency=0.8"), ("copies", "max_slowest_ratio=1.5"),
                             ("memory", "max_slowest_ratio=1.5"), ("collectives", "max_slowest_ratio=1.5")):
            self.assertIn(f"limits of '{name}' (report --check): {limits}\n", p.stdout)

    def test_verbose_belongs_to_check(self):
        r = gpuscale("report", self.out, "--verbose")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "gpuscale: error: --verbose requires --check; see 'gpuscale report --help'\n")


class PlanSummary(unittest.TestCase):
    def test_check_summarises_the_plan_and_lists_each_case_with_cases(self):
        collectives = os.path.join(SOURCE, "configs", "collectives.toml")
        p = gpuscale("check", collectives)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertLessEqual(len(lines), 40, p.stdout)
        self.assertRegex(p.stdout, r"\n  collectives +224 case\(s\)  about ")
        self.assertEqual(lines[-1], "(--cases: a line for each of the 224 case(s))")
        self.assertFalse([l for l in lines if l.startswith("  [")], p.stdout)
        p = gpuscale("check", collectives, "--cases")
        self.assertEqual(p.returncode, 0, p.stderr)
        cases = [l for l in p.stdout.splitlines() if l.startswith("  [")]
        self.assertEqual(len(cases), 224)
        self.assertRegex(cases[0], r"^  \[1/224\] collectives op=allreduce dtype=fp32 bytes=8 .* ~[\d.]+ s$")

    def test_an_experiment_says_how_many_of_its_cases_this_job_skips(self):
        p = gpuscale("check", os.path.join(SOURCE, "configs", "p2p.toml"), "--ranks", "2", "--nodes", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\n  p2p-latency +12 case\(s\) \(6 skipped\)  about ")
        self.assertIn("note: 12 of 24 case(s) will be skipped on this job: scope inter-node needs ranks on at least 2 "
                      "nodes; this job runs on 1 node", p.stdout.replace("\n  ", " "))


class BadLimits(InputErrorTest):
    CONFIG = preamble() + """
[defaults.expect]
max_slowest_ratio = 1.5
{limit}

[[experiment]]
name = "copies"
workload = "copy"
modes = "parallel"
"""

    def test_a_run_wide_limit_no_experiment_can_measure_names_its_line(self):
        cfg, out, p = self.run_config(self.CONFIG.format(limit="min_efficiency = 0.8"))
        self.assert_input_error(p, f"{cfg}:7:1: [defaults.expect] min_efficiency cannot be measured by any "
                                   "experiment: experiment 'copies': efficiency needs modes serial and parallel "
                                   "(speedup of parallel over serial / turns)", out=out)

    def test_a_straggler_limit_below_1_could_never_hold(self):
        cfg, out, p = self.run_config(self.CONFIG.format(limit="").replace("= 1.5", "= 0.5"))
        self.assert_input_error(p, f"{cfg}:6:21: [defaults.expect] max_slowest_ratio is the slowest rank's median "
                                   "over the other ranks' median, 1 or more: at least 1 (e.g. 1.5), got number 0.5", out=out)

    def test_an_unknown_limit_in_the_run_wide_table(self):
        cfg, out, p = self.run_config(self.CONFIG.format(limit="max_slowest_ration = 2"))
        self.assert_input_error(p, f"{cfg}:7:1: unknown limit 'max_slowest_ration' in [defaults.expect] (did you mean "
                                   "'max_slowest_ratio'?); valid limits: max_median_s, min_gflops_per_rank, "
                                   "min_gbps_per_rank, min_busbw_gbps, min_efficiency, min_of_vendor, "
                                   "max_slowest_ratio", out=out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
