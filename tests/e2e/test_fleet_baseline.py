"""`gpuscale baseline FILES -o expect.toml` and `report --check --expect`: limits per case derived from several runs
of one config, with known timings written into copies of real runs (so that nothing depends on how fast or busy this
machine was): a run like the baseline's passes, one 25% slower fails (runs on a busy host are
left out: tests/unit/test_fleet_baseline.cpp); bad input
is refused in one line and writes nothing."""
import os
import shutil
import sys
import unittest

from common import (GEMM_AND_ALLREDUCE, InputErrorTest, SharedRunTest, as_another_run, gpuscale, mpirun,
                    set_durations)

CONFIG = GEMM_AND_ALLREDUCE


class FleetBaseline(SharedRunTest):
    CONFIG = CONFIG

    def run_like(self, name, seconds):
        """A copy of the shared run whose every sample took `seconds` on both ranks, read as a run of its own."""
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        out = self.path(name)
        shutil.copy(self.out, out)
        set_durations(out, [seconds, seconds], same_start=True)
        self.copies = getattr(self, "copies", 0) + 1
        as_another_run(out, self.copies)
        return out

    def test_c_one_run_by_three_names_is_refused_naming_the_duplicates(self):
        a = self.run_like("a.h5", 1e-3)
        link, copy = self.path("link-to-a.h5"), self.path("copy-of-a.h5")
        os.symlink(a, link)
        shutil.copy(a, copy)
        out = self.path("expect.toml")
        p = gpuscale("baseline", a, link, copy, "-o", out)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertRegex(p.stderr, rf"^gpuscale: error: {link} holds the same run as {a} \(started \S+, the same "
                                   r"ranks' pids and hosts: one file by two paths, or a copy\): each run counts once: "
                                   r"nothing written\n$")
        self.assertFalse(os.path.exists(out))

    def baseline(self):
        runs = [self.run_like(f"b{i}.h5", t) for i, t in enumerate((1.00e-3, 1.02e-3, 0.99e-3))]
        expect = self.path("expect.toml")
        p = gpuscale("baseline", *runs, "-o", expect)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"{expect}: limits for 3 of 3 case(s) from 3 runs of ", " ".join(p.stdout.split()))
        return expect

    def test_a_the_limits_file_says_where_each_limit_came_from(self):
        with open(self.baseline()) as f:
            text = f.read()
        self.assertIn("gpuscale_limits = 1\n", text)
        self.assertEqual(text.count("[[case]]"), 3)
        self.assertIn('experiment = "mm"\nworkload = "gemm"\n', text)
        # gemm: GFLOP/s; the median of 1.00, 1.02, 0.99 ms is 1.00 ms, the limit 10% below its rate.
        gflops = 2 * 64 ** 3 / 1e-3 / 1e9
        line = next(x for x in text.splitlines() if x.startswith("min_gflops_per_rank = "))
        self.assertAlmostEqual(float(line.split()[2]), 0.9 * gflops, delta=1e-3 * gflops)
        self.assertIn("# median ", line)
        self.assertIn(" of 3 runs (", line)
        self.assertIn(": 10% below the median", line)
        self.assertEqual(sum(x.startswith("min_busbw_gbps = ") for x in text.splitlines()), 2)

    def test_b_a_run_like_the_baseline_passes_one_25_percent_slower_fails(self):
        expect = self.baseline()
        same = gpuscale("report", self.run_like("same.h5", 1.01e-3), "--check", "--expect", expect)
        self.assertEqual(same.returncode, 0, same.stdout + same.stderr)
        slow = gpuscale("report", self.run_like("slow.h5", 1.25e-3), "--check", "--expect", expect)
        self.assertEqual(slow.returncode, 1, slow.stdout + slow.stderr)
        self.assertIn("min_gflops_per_rank", slow.stdout)
        self.assertIn("FAILED", slow.stdout)


class BadInput(InputErrorTest):
    def test_a_fewer_than_3_runs_write_nothing(self):
        out = self.path("expect.toml")
        self.assert_input_error(gpuscale("baseline", self.path("a.h5"), self.path("b.h5"), "-o", out),
                                "a baseline needs at least 3 runs of one config, got 2: nothing written", out=out)

    def test_b_runs_of_different_configs_are_named(self):
        a = self.write("a.toml", CONFIG)
        b = self.write("b.toml", CONFIG.replace("size = 64", "size = 32"))
        files = []
        for i, cfg in enumerate((a, a, b)):
            files.append(self.path(f"r{i}.h5"))
            r = mpirun(2, "run", cfg, "-o", files[-1])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = self.path("expect.toml")
        self.assert_input_error(gpuscale("baseline", *files, "-o", out),
                                f"{files[2]} is a run of another config ({b}) than {files[0]} ({a}): a baseline "
                                "takes runs of one config", out=out)
        # --expect with a file that is not a limits file, or without --check.
        self.assert_input_error(gpuscale("report", files[0], "--check", "--expect", a),
                                f"{a}: not a gpuscale limits file (from 'gpuscale baseline'): it has no key "
                                "gpuscale_limits")
        self.assert_input_error(gpuscale("report", files[0], "--expect", a),
                                "--expect gives the limits --check and --verdict judge by: add one of them")
        bad = self.write("bad.toml", 'gpuscale_limits = 1\n[[case]]\nexperiment = "mm"\nworkload = "gemm"\n'
                         'params = ""\nmode = "parallel"\nranks = 2\nnodes = 1\nmin_flops = 3\n')
        self.assert_input_error(gpuscale("report", files[0], "--check", "--expect", bad),
                                f"{bad}:9: case 1: unknown key 'min_flops'")
        # A FIFO (or a device, a directory) is refused at once, as every other input file is.
        fifo = self.path("limits.fifo")
        os.mkfifo(fifo)
        for flag in ("--check", "--verdict"):
            self.assert_input_error(gpuscale("report", files[0], flag, "--expect", fifo, timeout=20),
                                    f"{fifo}: is a FIFO, not a limits file")
        other = self.write("other.toml", 'gpuscale_limits = 1\n[[case]]\nexperiment = "zz"\nworkload = "gemm"\n'
                           'params = ""\nmode = "parallel"\nranks = 2\nnodes = 1\nmax_median_s = 3\n')
        self.assert_input_error(gpuscale("report", files[0], "--check", "--expect", other),
                                f"{files[0]}: none of its cases has a limit in {other}")
        self.assertTrue(os.path.exists(files[0]))


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]] + sys.argv[1:])
