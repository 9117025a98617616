"""Plans checked before they run: every case's memory against what the
backend has (impossible sizes of every workload are input errors up front),
the estimated time (printed, and growing with the work; how close it comes to
a run is measured by bench/estimate_accuracy.py, never asserted: the test
machines are loaded), what it assumes of a busy host (the test hook
GPUSCALE_TEST_LOADAVG sets the load it reads), the time budget, and progress
with an ETA."""
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import h5py  # noqa: E402
from common import ENV, GPUSCALE, MPIEXEC, SMALL_CONFIG, InputErrorTest, ScratchTest, gpuscale, mpirun, s  # noqa: E402
from estimate_accuracy import seconds  # noqa: E402

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

# A size of each workload that no machine can hold, and the label its case gets.
IMPOSSIBLE = {
    "gemm": ("size = 1048576", "size=1048576"),
    "async": ("size = 1048576", "size=1048576"),
    "pipeline": ("size = 1048576", "size=1048576"),
    "copy": ("bytes = 1099511627776", "bytes=1099511627776"),
    "elementwise": ("elements = 1099511627776", "elements=1099511627776"),
    "collective": ("bytes = 1099511627776", "bytes=1099511627776"),
    "distributed_gemm": ("size = 1048576", "size=1048576"),
    "dp_step": ("hidden = 1048576", "hidden=1048576"),
}


def estimate_of(proc):
    m = re.search(r"^estimated time on (.*?): about (.+?) \(", proc.stdout, re.M | re.S)
    return m.group(1).replace("\n  ", " "), seconds(m.group(2).replace("\n  ", " "))


def with_load(load):
    """The environment of a command that reads the host's load as `load` (the test hook)."""
    return dict(ENV, GPUSCALE_TEST_LOADAVG=load)


# The line check and run print where others' work slows the job (the job's CPUs are all of this node's, or some).
BUSY = r"host busy: load 1000\.0 on \d+ cores?(, \d+ of them this job's)?; the estimate assumes it stays"


class Memory(InputErrorTest):
    def test_impossible_sizes_of_every_workload_are_input_errors_up_front(self):
        for workload, (line, label) in IMPOSSIBLE.items():
            with self.subTest(workload=workload):
                cfg = self.write(workload + ".toml", '[[experiment]]\nname = "huge"\nworkload = "%s"\n%s\n'
                                 'modes = ["parallel"]\n' % (workload, line))
                out = self.path(workload + ".h5")
                for args in (("check", cfg), ("run", cfg, "-o", out)):
                    t0 = time.monotonic()
                    p = gpuscale(*args) if args[0] == "check" else mpirun(2, "run", cfg, "-o", out)
                    took = time.monotonic() - t0
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn("gpuscale: error: case 1 of 1 (huge ", p.stderr)
                    self.assertIn(label, p.stderr)
                    self.assertIn("of memory per rank", p.stderr)
                    self.assertIn("more than the", p.stderr)
                    self.assertIn("RAM available", p.stderr)
                    self.assertFalse(os.path.exists(out), "a result file was written")
                    self.assertLess(took, 5 if args[0] == "check" else 15, args)

    def test_ranks_on_one_node_share_its_memory(self):
        with open("/proc/meminfo") as f:
            available = int(re.search(r"MemAvailable:\s+(\d+) kB", f.read()).group(1)) * 1024
        # Three fp64 buffers of half the available memory in all: fits one rank, not two.
        elements = available // 2 // 3 // 8
        cfg = self.write("half.toml", '[[experiment]]\nworkload = "elementwise"\ndtype = "fp64"\nelements = %d\n'
                         % elements)
        self.assertEqual(gpuscale("check", cfg, "--ranks", "1").returncode, 0)
        p = gpuscale("check", cfg, "--ranks", "2")
        self.assert_input_error(p, "over 2 ranks on this node")
        self.assertEqual(gpuscale("check", cfg, "--ranks", "2", "--nodes", "2").returncode, 0)


class Budget(InputErrorTest):
    def test_a_plan_over_its_time_budget_is_refused_with_its_largest_parts(self):
        cfg = os.path.join(SOURCE, "configs", "default.toml")
        out = self.path("out.h5")
        p = mpirun(2, "run", cfg, "-o", out, "--time-budget", "0.5")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("gpuscale: error: the plan is estimated at about", p.stderr)
        self.assertIn("on 2 ranks on 1 node, over the time budget of 0.5 s (--time-budget); the largest parts: "
                      "experiment 'gemm-small' about", p.stderr)
        self.assertIn("the longest, case ", p.stderr)
        self.assertFalse(os.path.exists(out), "a result file was written")
        self.assert_input_error(gpuscale("check", cfg, "--time-budget", "0.5"), "over the time budget of 0.5 s")
        self.assert_input_error(gpuscale("check", cfg, "--set", "defaults.budget_s=0.5"),
                                "over the time budget of 0.5 s (budget_s)")
        # --time-budget 0 lifts the config's budget; a budget above the estimate lets the plan run.
        self.assertEqual(gpuscale("check", cfg, "--set", "defaults.budget_s=0.5", "--time-budget", "0").returncode, 0)
        self.assertEqual(gpuscale("check", cfg, "--time-budget", "3600").returncode, 0)

    def test_without_a_budget_a_plan_over_a_day_is_refused_as_a_likely_typo(self):
        cfg = self.write("typo.toml", '[defaults]\nreps = 1000000000\n[[experiment]]\nname = "g"\n'
                         'workload = "gemm"\nsize = 64\n')
        out = self.path("out.h5")
        for p in (gpuscale("check", cfg), mpirun(2, "run", cfg, "-o", out)):
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("over 24 h 00 min, the limit where no budget is set; the largest parts: experiment 'g' "
                          "about", p.stderr)
            self.assertIn("A typo in reps, ops or a size?", p.stderr)
            self.assertFalse(os.path.exists(out), "a result file was written")

    def test_a_negative_budget_is_refused(self):
        cfg = os.path.join(SOURCE, "configs", "default.toml")
        p = gpuscale("check", cfg, "--time-budget", "-1")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--time-budget", p.stderr)
        self.assert_input_error(gpuscale("check", cfg, "--set", "defaults.budget_s=-1"),
                                "[defaults] key 'budget_s' must be at least 0, got -1")


class JobShape(InputErrorTest):
    def test_more_nodes_than_ranks_is_refused_naming_where_the_ranks_came_from(self):
        cfg = os.path.join(SOURCE, "configs", "default.toml")
        tail = "): every node runs at least one rank; see 'gpuscale check --help'"
        self.assert_input_error(gpuscale("check", cfg, "--ranks", "3", "--nodes", "5"),
                                "--nodes 5 is more than the job's 3 rank(s) (--ranks" + tail)
        outside = {k: v for k, v in ENV.items() if k != "SLURM_NTASKS"}
        for env, ranks, source in ((outside, 2, "the default; give --ranks"),
                                   (dict(outside, SLURM_NTASKS="3"), 3, "SLURM_NTASKS; give --ranks")):
            p = subprocess.run([GPUSCALE, "check", cfg, "--nodes", "4"], capture_output=True, text=True, timeout=120,
                               env=env)
            self.assert_input_error(p, f"--nodes 4 is more than the job's {ranks} rank(s) ({source}" + tail)
        self.assertEqual(gpuscale("check", cfg, "--ranks", "4", "--nodes", "4").returncode, 0)


class Estimates(ScratchTest):
    # How close the estimate comes to the run is a measurement, not a test: bench/estimate_accuracy.py.

    def test_check_prints_the_estimate_rates_and_memory_per_experiment(self):
        c = gpuscale("check", os.path.join(SOURCE, "configs", "quick.toml"), "--ranks", "8", "--nodes", "2",
                     "--cases")
        self.assertEqual(c.returncode, 0, c.stderr)
        job, estimate = estimate_of(c)
        self.assertEqual(job, "8 ranks on 2 nodes")
        self.assertGreater(estimate, 0)
        text = c.stdout.replace("\n  ", " ")  # long lines wrap at 80 columns
        self.assertIn("rates: measured on this CPU just now", text)
        # Every collective of quick.toml is of scope world, which spans both nodes: only that link prices them.
        self.assertNotIn("transfers within a node", text)
        self.assertIn("transfers between nodes: not measured, assumed 1.00 GB/s and 30.0 us per operation (MPI "
                      "defaults)", text)
        self.assertRegex(c.stdout, r"\n  gemm +4 case\(s\)  about .* memory per rank up to [\d.]+ MiB")
        self.assertRegex(text, r"memory per rank available: [\d.]+ [GM]iB \(80% of [\d.]+ GiB RAM available, over 4 "
                               r"ranks on this node\)")
        # On a loaded machine: minutes.
        self.assertRegex(c.stdout, r"\[1/26\] gemm size=2048 .* ~(\d+ h )?(\d+ min ?)?([\d.]+ s)?\n")

    def test_check_says_which_transfer_rates_it_measured_and_which_it_assumed(self):
        cfg = self.write("p2p.toml", '[defaults]\nbackend = "cpu"\n[[experiment]]\nname = "p"\nworkload = "p2p"\n'
                         'pattern = "bw"\nbytes = 1048576\nscope = ["intra-node", "inter-node"]\n'
                         'modes = ["parallel"]\n')
        one = subprocess.run([GPUSCALE, "check", cfg, "--ranks", "2"], capture_output=True, text=True, timeout=120,
                             env=with_load("0"))  # a quiet host, whatever this one's load
        self.assertEqual(one.returncode, 0, one.stderr)
        text = one.stdout.replace("\n  ", " ")
        # Within a node MPI moves a message with the host's copies, in and out of shared memory: measured here (the
        # latency too, where two threads can take turns; on a busy host it says it could not, and what it assumed).
        self.assertRegex(text, r"; transfers within a node: measured, [\d.]+ GB/s \(half the host's copy rate: a "
                               r"message is copied into shared memory and out(; [\d.]+ GB/s beyond the [\d.]+ "
                               r"[KMG]iB cache)?\)( and [\d.]+ us per operation "
                               r"\(a hand-off between two threads\)|; per operation not measured \(two threads could "
                               r"not take turns within 50 ms: a busy host, or one CPU\), assumed 2\.00 us \(MPI "
                               r"defaults\)) p +2 case")
        # The inter-node case is skipped on one node: nothing is said of the link between nodes.
        self.assertNotIn("between nodes", text)
        two = gpuscale("check", cfg, "--ranks", "4", "--nodes", "2")
        self.assertEqual(two.returncode, 0, two.stderr)
        self.assertIn("; transfers between nodes: not measured, assumed 1.00 GB/s and 30.0 us per operation (MPI "
                      "defaults) p ", two.stdout.replace("\n  ", " "))
        # On a busy host it says what the estimate leaves out: the waits of each transfer for both ranks' turns.
        note = ("note: on a busy host each transfer between ranks, and each barrier, waits until both ranks have a "
                "CPU; the estimate counts the host's share of the CPUs for the work and the data moved, not those "
                "waits: plans of many small transfers can take several times longer\n")
        self.assertNotIn("each transfer between ranks", text)
        busy = subprocess.run([GPUSCALE, "check", cfg, "--ranks", "2"], capture_output=True, text=True, timeout=120,
                              env=with_load("1000"))
        self.assertEqual(busy.returncode, 0, busy.stderr)
        self.assertRegex(busy.stdout.replace("\n  ", " "), BUSY + "\n" + re.escape(note))
        # A plan without transfers says nothing of them.
        gemm = gpuscale("check", os.path.join(SOURCE, "configs", "default.toml"))
        self.assertEqual(gemm.returncode, 0, gemm.stderr)
        self.assertNotIn("transfers", gemm.stdout)

    def test_check_says_the_estimate_leaves_out_ranks_that_set_up_gib_at_once(self):
        # Source and destination of 512 MiB, and the 64 MiB that stages them, per rank.
        cfg = self.write("big.toml", '[defaults]\nbackend = "cpu"\n[[experiment]]\nname = "c"\nworkload = "copy"\n'
                         'direction = "d2d"\nbytes = 536870912\nmodes = ["parallel"]\n')
        note = ("note: 1 case(s) set up 1 GiB or more of host memory per rank: making inputs is measured on one rank, "
                "and 2 ranks that touch fresh memory at once on one node can take several times longer (page faults "
                "do not scale across ranks): not in the estimate\n")
        # Copies of 512 MiB run past any cache this machine has; a machine whose cache is not found says nothing.
        shared = (re.escape("note: 1 case(s) stream memory past the ") + r"\S+ \S+" +
                  re.escape(" cache on 2 ranks of a node at once: the memory's rate is measured on one rank, and the "
                            "ranks of a node share its bandwidth, so their samples can take up to 2x longer: not in "
                            "the estimate\n"))
        two = gpuscale("check", cfg, "--ranks", "2")
        self.assertEqual(two.returncode, 0, two.stderr)
        text = two.stdout.replace("\n  ", " ")
        self.assertIn(note, text)
        if "beyond the" in text:  # the cache was found (rates: copies ... beyond the N MiB cache)
            self.assertRegex(text, shared)
        one = gpuscale("check", cfg, "--ranks", "1")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertNotIn("set up 1 GiB", one.stdout)
        self.assertNotIn("stream memory", one.stdout)

    def test_rates_read_with_three_significant_digits(self):
        # The CUDA backend's defaults are fixed numbers: copies of 1000 GB/s once read "1e+03 GB/s".
        c = gpuscale("check", os.path.join(SOURCE, "configs", "quick.toml"), "--set", "backend=cuda")
        self.assertEqual(c.returncode, 0, c.stderr)
        text = c.stdout.replace("\n  ", " ")
        if "rates: measured on" in text:
            self.skipTest("a GPU is usable here: check measures its rates")
        self.assertIn("rates: defaults for the CUDA backend (no GPU measured): gemm fp64 40.0 TFLOP/s, gemm fp32 "
                      "40.0 TFLOP/s, copies 1000 GB/s, making inputs 0.300 GB/s;", text)

    def test_check_marks_the_cases_this_job_skips_with_the_reason_its_run_records(self):
        cfg = self.write("skips.toml", '[defaults]\nbackend = "cpu"\nwarmup = 1\nreps = 2\n'
                         '[[experiment]]\nname = "t"\nworkload = "collective"\nop = "allreduce"\nbytes = 4096\n'
                         'iters = 1\nscope = ["world", "inter-node"]\nmodes = ["parallel"]\n'
                         '[[experiment]]\nname = "d"\nworkload = "distributed_gemm"\nsize = 32\ngroup_size = 4\n'
                         'reps = 1\nmodes = ["parallel"]\n')
        inter = "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node"
        group = "group_size = 4 needs at least 4 ranks; this job has 2"
        c = gpuscale("check", cfg, "--ranks", "2", "--cases")
        self.assertEqual(c.returncode, 0, c.stderr)
        cases = [l for l in c.stdout.splitlines() if l.startswith("  [")]
        self.assertEqual(len(cases), 3, c.stdout)
        self.assertRegex(cases[0], r"^  \[1/3\] t .*scope=world \[parallel\] .* ~[\d.]+ s$")
        self.assertTrue(cases[1].endswith("  skipped on this job: " + inter), cases[1])
        self.assertTrue(cases[2].endswith("  skipped on this job: " + group), cases[2])
        text = c.stdout.replace("\n  ", " ")
        self.assertIn("\nnote: 1 of 3 case(s) will be skipped on this job: " + inter + "\n", text)
        self.assertIn("\nnote: 1 of 3 case(s) will be skipped on this job: " + group + "\n", text)
        # The run on that job skips the same cases and records the same reasons.
        out = self.path("skips.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("\nran 1 of 3 cases (2 skipped: 1 because scope inter-node needs ranks on at least 2 nodes, 1 "
                      "because group_size = 4 needs at least 4 ranks; 0 failed verification)\n", p.stdout)
        with h5py.File(out, "r", locking=False) as f:
            reasons = [s(f["cases"][k].attrs["status_reason"]) for k in sorted(f["cases"])]
        self.assertEqual(reasons, ["", inter, group])
        # On a job of 4 ranks over 2 nodes every case runs.
        c = gpuscale("check", cfg, "--ranks", "4", "--nodes", "2")
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertNotIn("skipped", c.stdout)

    def test_check_says_when_cases_would_run_past_a_fixed_timeout(self):
        cfg = self.write("t.toml", '[defaults]\ntimeout = 0.01\n[[experiment]]\nworkload = "gemm"\nsize = 256\n')
        c = gpuscale("check", cfg)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("note: 2 case(s) are estimated to take longer than timeout = 0.01 s, which aborts the job "
                      "(exit 3)", c.stdout.replace("\n  ", " "))
        self.assertNotIn("timeout =", gpuscale("check", cfg, "--set", "defaults.timeout=600").stdout)

    def test_a_run_shows_its_estimate_and_progress_with_an_eta(self):
        p = mpirun(2, "run", os.path.join(SOURCE, "configs", "default.toml"), "-o", self.path("d.h5"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"estimated time: about (\d+ h )?(\d+ min ?)?([\d.]+ s)? \(rates measured on this "
                                   r"CPU just now\)\n")
        lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
        self.assertEqual(len(lines), 6)
        for i, line in enumerate(lines):
            self.assertTrue(line.startswith("[%d/6] " % (i + 1)), line)
            if i < 5:
                self.assertRegex(line, r"\([\d.]+ s elapsed, about [\d.]+ s left\)$")
            else:
                self.assertRegex(line, r"\([\d.]+ s elapsed\)$")


    def test_each_case_is_estimated_and_more_samples_take_longer(self):
        cfg = self.write("reps.toml", '[defaults]\nbackend = "cpu"\nwarmup = 0\n[[experiment]]\nname = "few"\n'
                         'workload = "gemm"\nsize = 128\nreps = 2\nmodes = "parallel"\n[[experiment]]\nname = "many"\n'
                         'workload = "gemm"\nsize = 128\nreps = 2000\nmodes = "parallel"\n')
        c = gpuscale("check", cfg, "--cases")
        self.assertEqual(c.returncode, 0, c.stderr)
        _, total = estimate_of(c)
        cases = re.findall(r"^  \[\d/2\] (\w+) .*  ~(.+)$", c.stdout, re.M)
        self.assertEqual([name for name, _ in cases], ["few", "many"], c.stdout)
        few, many = (seconds(t) for _, t in cases)  # "~0.0 s" where a case takes under 50 ms
        self.assertGreater(many, few)  # one check, one set of rates: the work alone tells them apart
        self.assertGreaterEqual(total, many)
        self.assertGreater(total, 0)


class BusyHost(InputErrorTest):
    def test_check_says_when_the_host_is_busy_and_the_estimate_counts_it(self):
        cfg = os.path.join(SOURCE, "configs", "default.toml")
        quiet, busy = (subprocess.run([GPUSCALE, "check", cfg], capture_output=True, text=True, timeout=120,
                                      env=with_load(load)) for load in ("0", "1000"))
        for p in (quiet, busy):
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("host busy", quiet.stdout)
        self.assertRegex(busy.stdout.replace("\n  ", " "),
                         r"\(start [\d.]+ s; --ranks and --nodes for another job\)\n" + BUSY + "\n")
        # A thousand threads beside the job's two: the estimate assumes it stays, hundreds of times longer.
        self.assertGreater(estimate_of(busy)[1], 10 * estimate_of(quiet)[1])
        # For a job of more nodes than this one, it is said and not counted.
        p = subprocess.run([GPUSCALE, "check", cfg, "--ranks", "4", "--nodes", "2"], capture_output=True, text=True,
                           timeout=120, env=with_load("1000"))
        self.assertRegex(p.stdout.replace("\n  ", " "), r"host busy: load 1000\.0 on \d+ cores?(, \d+ of them this "
                                                         r"job's)?; the estimate, for 2 nodes, does not count it\n")

    def test_a_run_says_it_beside_its_estimate_and_in_a_refusal_over_budget(self):
        cfg = self.write("small.toml", SMALL_CONFIG)
        out = self.path("busy.h5")
        mpi = [MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out]
        p = subprocess.run(mpi + ["--set", "reps=1"], capture_output=True, text=True, timeout=180,
                           env=with_load("1000"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"\nestimated time: about .*\)\n" + BUSY + "\n")
        p = subprocess.run(mpi + ["--force", "--time-budget", "1"], capture_output=True, text=True, timeout=180,
                           env=with_load("1000"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"gpuscale: error: the plan is estimated at .* over the time budget of 1\.0 s "
                                   r"\(--time-budget\); .*or raise the budget \(" + BUSY + r"\)\n")
        p = subprocess.run(mpi + ["--set", "reps=1", "--force"], capture_output=True, text=True, timeout=180,
                           env=with_load("0"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("host busy", p.stdout)

    def test_a_test_load_that_is_no_number_is_refused(self):
        cfg = os.path.join(SOURCE, "configs", "default.toml")
        message = "GPUSCALE_TEST_LOADAVG (a test hook): must be a number at least 0, got 'busy'"
        p = subprocess.run([GPUSCALE, "check", cfg], capture_output=True, text=True, timeout=120, env=with_load("busy"))
        self.assert_input_error(p, message)
        out = self.path("x.h5")
        p = subprocess.run([MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out], capture_output=True, text=True,
                           timeout=180, env=with_load("busy"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("gpuscale: error: " + message + "\n", p.stderr)
        self.assertFalse(os.path.exists(out))


class OtherMachinesRates(InputErrorTest):
    """check --rates: a plan estimated with a table of rates measured on another machine (configs/rates/)."""
    H100 = os.path.join(SOURCE, "configs", "rates", "h100.toml")
    LADDER = os.path.join(SOURCE, "configs", "kernel-ladder.toml")

    def test_the_h100_table_estimates_a_cuda_plan_here_with_its_own_rates(self):
        p = gpuscale("check", self.LADDER, "--rates", self.H100, "--ranks", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        text = " ".join(p.stdout.split())
        self.assertIn(f"backend cuda (the rates' backend ({self.H100}))", text)
        self.assertIn(f"rates: rates of NVIDIA H100 80GB HBM3 (2026-11-23, gpuscale 883e75c, 1 rank) from {self.H100}, "
                      "defaults for the CUDA backend (no GPU measured) for the rest:", text)
        for rate in ("gemm fp32 50.0 TFLOP/s", "gemm fp32/naive 5.40 TFLOP/s", "gemm bf16/tensor 18.6 TFLOP/s",
                     "gemm fp16 800 TFLOP/s"):
            self.assertIn(rate, text)
        self.assertIn("memory per rank available: 71.3 GiB device (90% of the rates' GPU's 79.2 GiB)", text)
        # A faster table, a shorter estimate of the same plan: the table's rates are the ones used.
        with open(self.H100) as f:
            slow = self.write("slow.toml", f.read().replace("bf16 = 796", "bf16 = 7.96"))
        q = gpuscale("check", self.LADDER, "--rates", slow, "--ranks", "1")
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertGreater(estimate_of(q)[1], estimate_of(p)[1])

    def test_a_table_it_cannot_take_is_one_line_naming_the_key(self):
        with open(self.H100) as f:
            base = f.read()
        cases = [
            ("[defaults]\nreps = 3\n", "not a gpuscale rates table (configs/rates/h100.toml is one): it has no key "
                                        "gpuscale_rates"),
            ("gpuscale_rates = [\n", "not a gpuscale rates table"),
            (base.replace("gpuscale_rates = 1", "gpuscale_rates = 2"), "rates table format 2; this gpuscale reads "
                                                                       "format 1"),
            (base.replace('backend = "cuda"', 'backend = "tpu"'), "'backend' is missing or not \"cuda\" or \"cpu\""),
            (base.replace("fp32 = 50", "fp32 = 0"), "'gemm.fp32' is not a number above 0"),
            (base.replace("fp64 = 63", "fp64 = -63"), "'gemm.fp64' is not a number above 0"),
            (base.replace("bf16 = 796", "bf16 = nan"), "'gemm.bf16' is not a number above 0"),
            (base.replace("tf32 = 413", "tf32 = \"fast\""), "'gemm.tf32' is not a number above 0"),
            (base.replace("fp16 = 800", "fp8 = 1600"), "'gemm.fp8': no such dtype (fp64, fp32, tf32, fp16, bf16)"),
            (base.replace("[gemm.tiled]", "[gemm.fast]"), "'gemm.fast': no such gemm implementation (vendor, naive"),
            (base.replace("device = 1500", "nvlink = 450"), "'copies.nvlink': no such kind of copy ("),
            (base.replace("call_us = 14.6", "call_us = inf"), "'gemm.call_us' is not a number above 0"),
            (base.replace("device_memory_gib = 79.2", "device_memory_gib = 0"), "'device_memory_gib' is not a number "
                                                                              "above 0"),
            (base + "\n[network]\nib = 50\n", "not a gpuscale rates table (configs/rates/h100.toml is one): unknown "
                                               "key 'network' (it holds backend, machine, measured, "
                                               "device_memory_gib, [gemm] and [copies])"),
        ]
        for text, message in cases:
            rates = self.write("rates.toml", text)
            p = gpuscale("check", self.LADDER, "--rates", rates)
            self.assert_input_error(p, rates + ": " + message)
        p = gpuscale("check", self.LADDER, "--rates", self.path("none.toml"))
        self.assert_input_error(p, self.path("none.toml") + ": not a gpuscale rates table")
        # A config that asks for the other backend than the table's.
        p = gpuscale("check", self.write("small.toml", SMALL_CONFIG), "--set", "defaults.backend=cpu", "--rates",
                     self.H100)
        self.assert_input_error(p, self.H100 + " holds rates of the cuda backend; the config asks for backend = "
                                "\"cpu\"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
