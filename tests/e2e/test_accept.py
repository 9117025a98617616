"""jobs/slurm/accept.sh, the acceptance of a fleet in one command: its mistakes (each one line, exit 2, nothing
submitted) and the shipped configs/acceptance.toml as `check` plans it, without Slurm; then on a real two-node
Slurm (slurm.py, CPU only) a tiny CPU config through the script with --wait: the run, the verdict it prints and
exits with (0 pass or warn, 1 fail, 2 none), and the files it writes (results/accept-<JOBID>.verdict and .json).

Exits 77 (ctest: skipped) with the reason where the Slurm part cannot run (not root, a tool missing, no network
namespaces), after the parts that need no Slurm passed."""
import csv
import glob
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts  # noqa: E402
import slurm  # noqa: E402
from common import GPUSCALE, preamble  # noqa: E402

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
ACCEPT = os.path.join(SOURCE, "jobs", "slurm", "accept.sh")
SHIPPED = os.path.join(SOURCE, "configs", "acceptance.toml")
GPUSCALE_ABS = os.path.realpath(GPUSCALE) if os.path.sep in GPUSCALE else shutil.which(GPUSCALE)

# The parts of configs/acceptance.toml at toy sizes, on the CPU backend.
FLEET = preamble(warmup=0, reps=3, threads=1) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = 32
modes = "parallel"

[[experiment]]
name = "host-copies"
workload = "copy"
bytes = 65536
direction = ["h2d", "d2h"]
modes = "parallel"

[[experiment]]
name = "collectives"
workload = "collective"
op = ["allreduce", "allgather"]
bytes = 4096
scope = ["intra-node", "inter-node"]
modes = "parallel"

[[experiment]]
name = "node-pairs"
workload = "collective"
op = "pairs"
scope = "node-pairs"
bytes = 4096
modes = "parallel"
"""

# Nothing of it runs on one node.
PAIRS_ONLY = preamble(warmup=0, reps=2, threads=1) + """
[[experiment]]
name = "node-pairs"
workload = "collective"
op = "pairs"
scope = "node-pairs"
bytes = 4096
modes = "parallel"
"""

CLUSTER = None  # the slurm.Cluster the Slurm tests use


class Mistakes(unittest.TestCase):
    """Bad usage, without Slurm: one line on stderr naming the mistake, exit 2, before anything is submitted."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="accept-")
        self.dir = self._tmp.name
        with open(os.path.join(self.dir, "fleet.toml"), "w") as f:
            f.write(FLEET)
        with open(os.path.join(self.dir, "notlimits.toml"), "w") as f:
            f.write("[[case]]\nexperiment = \"gemm\"\n")
        self.env = dict(os.environ, GPUSCALE=GPUSCALE_ABS)
        for k in ("SLURM_JOB_ID", "GPUSCALE_SITE"):
            self.env.pop(k, None)

    def tearDown(self):
        self._tmp.cleanup()

    def refused(self, args, message, env=None):
        p = subprocess.run([ACCEPT, *args], capture_output=True, text=True, cwd=self.dir, env=env or self.env,
                           timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("accept.sh: error: " + message, p.stderr)
        return p.stderr

    def test_each_mistake_is_one_line_and_exit_2(self):
        cfg = ["--config", "fleet.toml"]
        self.refused(cfg, "no --nodes given: how many servers to accept, e.g. --nodes 4 (see --help)")
        self.refused(["--nodes", "0", *cfg], "--nodes wants 1 to 999999 servers, got '0'")
        self.refused(["--nodes=two", *cfg], "--nodes wants 1 to 999999 servers, got 'two'")
        # A count past what bash compares is refused as a count, not by a failing comparison.
        self.refused(["-N", "99999999999999999999", *cfg], "--nodes wants 1 to 999999 servers, got '999")
        self.refused(["--nodes"], "--nodes needs a number")
        self.refused(["--nodes", "2", "--ntasks-per-node", "0", *cfg],
                     "--ntasks-per-node wants a number from 1 to 999999, got '0'")
        self.refused(["--nodes", "2", "--ntasks-per-node"], "--ntasks-per-node needs a number")
        self.refused(["--nodes", "2", "--frobnicate"], "unknown option --frobnicate (see --help)")
        self.refused(["--nodes", "2", "fleet.toml"], "unexpected argument 'fleet.toml': the config goes with "
                                                     "--config, gpuscale run options after -- (see --help)")
        self.refused(["--nodes", "2", "--config"], "--config needs a file")
        self.refused(["--nodes", "2", "--config", "missing.toml"], "config not found: missing.toml")
        self.refused(["--nodes", "2", *cfg, "--expect"],
                     "--expect needs a limits file (gpuscale baseline ... -o FILE)")
        self.refused(["--nodes", "2", *cfg, "--expect", "none.toml"], "--expect: limits file not found: none.toml")
        self.refused(["--nodes", "2", *cfg, "--expect", "notlimits.toml"],
                     "--expect: notlimits.toml is not a limits file (no gpuscale_limits line; 'gpuscale baseline "
                     "RUN.h5... -o FILE' writes one)")
        self.refused(["--nodes", "2", *cfg, "--sbatch"],
                     "--sbatch needs an sbatch option, e.g. --sbatch --partition=gpu")
        self.refused(["--nodes", "2", *cfg, "--", "-o", "x.h5"],
                     "-o: the acceptance names its result file by job id; leave -o out")
        self.refused(["--nodes", "2", *cfg], f"GPUSCALE={self.dir}/none is not an executable file",
                     env=dict(self.env, GPUSCALE=os.path.join(self.dir, "none")))
        self.refused(["--nodes", "2", *cfg], f"GPUSCALE_SITE={self.dir}/site.sh is not a file",
                     env=dict(self.env, GPUSCALE_SITE=os.path.join(self.dir, "site.sh")))
        self.refused(["--judge"], "--judge RUN_JOB [EXPECT]")
        self.refused(["--judge", "12;x"], "--judge wants a job id, got '12;x'")

    def test_no_sbatch_on_the_path(self):
        # Every tool the script uses before it submits, except sbatch.
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        for tool in ("bash", "dirname", "realpath", "grep", "sed", "cut", "head", "tr", "id"):
            os.symlink(shutil.which(tool), os.path.join(bin_dir, tool))
        self.refused(["--nodes", "2", "--config", "fleet.toml"],
                     "sbatch not found: run the acceptance on a Slurm login node", env=dict(self.env, PATH=bin_dir))

    def test_help_comes_from_the_header(self):
        p = subprocess.run([ACCEPT, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("The acceptance of a fleet in one command"), p.stdout[:200])
        self.assertIn("  jobs/slurm/accept.sh --nodes N [options] [-- gpuscale run options...]\n", p.stdout)
        self.assertIn("  --expect FILE ", p.stdout)
        self.assertFalse([line for line in p.stdout.splitlines() if line.startswith("#")], p.stdout)

    def test_the_shipped_config_is_planned_with_its_budget(self):
        p = subprocess.run([GPUSCALE, "check", SHIPPED, "--ranks", "16", "--nodes", "2", "--cases"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"{SHIPPED}: 6 experiment(s), 18 case(s); backend cuda ", p.stdout)
        self.assertIn("budget 10 min 00 s)", p.stdout)
        for name in ("gemm-bf16", "gemm-fp32", "host-copies", "device-copy", "collectives", "node-pairs"):
            self.assertRegex(p.stdout, rf"\n  {name} +\d+ case\(s\) ")
        for scope in ("intra-node", "inter-node"):
            for op in ("allreduce", "allgather"):
                self.assertEqual(len(re.findall(rf"collectives op={op} .*scope={scope} \[parallel\]", p.stdout)), 3)
        # On one server the cases between servers are skipped, and said.
        p = subprocess.run([GPUSCALE, "check", SHIPPED, "--ranks", "8", "--nodes", "1"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("collectives                12 case(s) (6 skipped)", p.stdout)
        self.assertIn("node-pairs                  1 case(s) (1 skipped)", p.stdout)


class OnSlurm(unittest.TestCase):
    """accept.sh on a two-node Slurm (no GPU resources: --cpu), submitted from a folder outside the checkout."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="submit-", dir=CLUSTER.hosts.dir)
        self.dir = self._tmp.name
        for name, text in (("fleet.toml", FLEET), ("pairs.toml", PAIRS_ONLY)):
            with open(self.path(name), "w") as f:
                f.write(text)
        self.env = CLUSTER.env(GPUSCALE=GPUSCALE_ABS)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def read(self, *parts):
        with open(self.path(*parts), errors="replace") as f:
            return f.read()

    def accept(self, *args, expect_rc=None, timeout=150):
        """accept.sh ARGS --wait; returns (exit code, stdout, run job, verdict job)."""
        p = CLUSTER.run([ACCEPT, *args, "--wait"], cwd=self.dir, env=self.env, timeout=timeout)
        logs = "".join(f"--- {f}\n{open(f, errors='replace').read()}" for f in glob.glob(self.path("*.out")))
        m = re.match(r"run:     job (\d+) on \d+ node\(s\) \(log gpuscale-\1\.out, results/\S+\)\n"
                     r"judging: job (\d+) once job \1 has ended \(log gpuscale-\2\.out, results/accept-\1\.verdict "
                     r"and \.json\)\n", p.stdout)
        self.assertTrue(m, p.stdout + p.stderr + logs)
        if expect_rc is not None:
            self.assertEqual(p.returncode, expect_rc, p.stdout + p.stderr + logs)
        return p.returncode, p.stdout, m.group(1), m.group(2)

    def verdict_files(self, run):
        text = self.read("results", f"accept-{run}.verdict")
        with open(self.path("results", f"accept-{run}.json")) as f:
            return text, json.load(f)

    def test_a_fleet_of_two_nodes_gets_a_verdict_and_its_files(self):
        rc, out, run, judge = self.accept("--nodes", "2", "--cpu", "--ntasks-per-node", "2", "--config", "fleet.toml")
        text, js = self.verdict_files(run)
        # The verdict's exit code is the one it printed: 0 pass or warn, 1 fail (a loaded machine may straggle).
        severity = js["overall"]["severity"]
        self.assertIn(severity, ("PASS", "WARN", "FAIL"))
        self.assertEqual(rc, 1 if severity == "FAIL" else 0, out)
        self.assertIn(text, out)  # printed as written
        lines = text.splitlines()
        self.assertRegex(lines[0], rf"^=== gpuscale acceptance: the run, job {run} \(ended COMPLETED, exit code "
                                   rf"0:0\), judged in job {judge} on ")
        files = glob.glob(self.path("results", f"fleet-job{run}-*.h5"))
        self.assertEqual(len(files), 1, os.listdir(self.path("results")))
        rel = os.path.relpath(files[0], self.dir)
        self.assertEqual(lines[1], f"result: {rel}")
        self.assertEqual(lines[2], "limits: the config's [experiment.expect]")
        flat = re.sub(r"\s+", " ", "\n".join(lines[3:]))  # the table wraps its lines at 80 columns
        self.assertTrue(flat.startswith(f"verdict: {severity} ({rel}: 8 case(s) ran on 2 node(s), 4 rank(s))"), text)
        self.assertEqual("no node to take out" in text, js["drain"] == [], text)
        names = CLUSTER.node_names
        self.assertEqual(js["file"], rel)
        self.assertEqual(js["cases_ran"], 8)
        self.assertEqual(sorted(n["name"] for n in js["nodes"]), sorted(names))
        self.assertEqual(sorted(g["rank"] for g in js["gpus"]), [0, 1, 2, 3])
        self.assertEqual(js["notes"], [], "every case runs on 2 nodes of 2 ranks")
        with h5py.File(files[0], "r") as f:
            self.assertEqual((int(f.attrs["nodes"]), int(f.attrs["ranks"]), int(f.attrs["complete"])), (2, 4, 1))
        # The verdict job ran once the run had ended; its log holds the same text.
        j_run, j_judge = CLUSTER.job(run), CLUSTER.job(judge)
        self.assertGreaterEqual(j_judge["StartTime"], j_run["EndTime"])
        self.assertIn(text, self.read(f"gpuscale-{judge}.out"))
        self.assert_no_leftovers()

    def test_b_limits_of_a_baseline_fail_the_run(self):
        # A run first, then the same fleet judged by a limits file whose gemm limit no CPU meets.
        rc, out, run, _ = self.accept("--nodes", "2", "--cpu", "--config", "fleet.toml")
        rows = list(csv.DictReader(io.StringIO(subprocess.run(
            [GPUSCALE, "report", "--format", "csv", *glob.glob(self.path("results", f"fleet-job{run}-*.h5"))],
            capture_output=True, text=True, check=True, timeout=60).stdout)))
        gemm = next(r for r in rows if r["name"] == "gemm")
        with open(self.path("expect.toml"), "w") as f:
            f.write(f'gpuscale_limits = 1\n\n[[case]]\nexperiment = "gemm"\nworkload = "gemm"\n'
                    f'params = "{gemm["params"]}"\nmode = "parallel"\nranks = {gemm["ranks"]}\n'
                    f'nodes = {gemm["nodes"]}\nmin_gflops_per_rank = 1e9\n')
        rc, out, run, _ = self.accept("--nodes", "2", "--cpu", "--config", "fleet.toml", "--expect", "expect.toml",
                                      expect_rc=1)
        text, js = self.verdict_files(run)
        self.assertIn(f"limits: {self.path('expect.toml')}\n", text)
        self.assertRegex(text, r"\nverdict: FAIL \(")
        self.assertRegex(re.sub(r"\s+", " ", text),
                         r" FAIL run: limit min_gflops_per_rank 1000000000 not met: measured [0-9.]+ "
                         r"(\([^)]*\) )?\(case 1\) ")
        self.assertEqual(js["overall"]["severity"], "FAIL")
        self.assertIn(text, out)

    def test_c_a_run_that_measured_nothing_gets_no_verdict(self):
        rc, out, run, judge = self.accept("--nodes", "1", "--cpu", "--config", "pairs.toml", expect_rc=2)
        text, js = self.verdict_files(run)
        self.assertRegex(text.splitlines()[0], rf"the run, job {run} \(ended FAILED, exit code [1-9]\d*:0\)")
        self.assertIn("no verdict: ", text)
        self.assertIn(f"the end of the run's log gpuscale-{run}.out:\n", text)
        self.assertIn("  ran 0 of 1 case (1 skipped: ", text)
        self.assertEqual(js["overall"]["severity"], "NONE")
        self.assertIn(text, out)
        self.assertEqual(CLUSTER.job(judge).get("ExitCode"), "2:0")

    def test_d_slurm_refuses_the_run(self):
        # 5 nodes of 2: refused at submission (EnforcePartLimits), exit 2, no job left behind.
        p = CLUSTER.run([ACCEPT, "--nodes", "5", "--cpu", "--config", "fleet.toml", "--wait"], cwd=self.dir,
                        env=self.env)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("accept.sh: error: sbatch refused the run (see above)", p.stderr)
        self.assertEqual(CLUSTER.run(["squeue", "-h"], env=self.env).stdout.strip(), "")

    def assert_no_leftovers(self):
        deadline = time.time() + 10
        while CLUSTER.leftovers() and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(CLUSTER.leftovers(), [], "processes left on the nodes after the jobs ended")


def _interrupt(signum, frame):
    # unittest records any other exception as a test error and goes on; KeyboardInterrupt stops the run, and
    # leaving the cluster's context then removes it.
    raise KeyboardInterrupt(f"signal {signum}")


def run_case(case):
    return unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromTestCase(case))


def main():
    global CLUSTER
    if not GPUSCALE_ABS or not os.access(GPUSCALE_ABS, os.X_OK):
        print(f"gpuscale binary not found: {GPUSCALE}")
        return 1
    if not run_case(Mistakes).wasSuccessful():
        return 1
    why = slurm.unavailable()
    if why:
        print(f"SKIP: test Slurm unavailable: {why}")
        return 77
    started = time.time()
    try:
        with slurm.Cluster(nodes=2, cpus=2, gpus=0) as c:
            signal.signal(signal.SIGTERM, _interrupt)
            print(f"Slurm on {c.nodes} node(s) up in {time.time() - started:.1f} s", flush=True)
            CLUSTER = c
            ok = run_case(OnSlurm).wasSuccessful()
            CLUSTER = None
    except hosts.Unavailable as e:
        print(f"SKIP: test Slurm unavailable: {e}")
        return 77
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
