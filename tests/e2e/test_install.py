"""`cmake --install` into a temporary prefix, then the installed copy used with no checkout: the files are where
the docs say (and no test or benchmark binary), the installed jobs/local/mpirun.sh, run from an empty directory
with no gpuscale on PATH and GPUSCALE unset, runs the installed binary on the installed configs/default.toml and
writes its result file there, the installed `gpuscale report` reads it, and the installed gpuscale-plot draws it
(skipped, saying why, where matplotlib, h5py, numpy or pandas is missing)."""
import glob
import os
import shutil
import subprocess
import sys
import unittest

from common import ENV, LAUNCHER, MPIEXEC, SMALL_CONFIG, ScratchTest

BUILD = os.environ["GPUSCALE_BUILD_DIR"]
CMAKE = os.environ.get("GPUSCALE_CMAKE", "cmake")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# What the prefix must hold (relative paths); executables marked.
EXPECTED = {
    "bin/gpuscale": True,
    "bin/gpuscale-plot": True,
    "share/gpuscale/configs/default.toml": False,
    "share/gpuscale/configs/cross-server.toml": False,
    "share/gpuscale/jobs/README.md": False,
    "share/gpuscale/jobs/lib.sh": False,
    "share/gpuscale/jobs/installed.sh": False,
    "share/gpuscale/jobs/local/mpirun.sh": True,
    "share/gpuscale/jobs/slurm/single-node.sbatch": True,
    "share/gpuscale/jobs/slurm/multi-node.sbatch": True,
    "share/gpuscale/jobs/slurm/study.sh": True,
    "share/gpuscale/jobs/slurm/accept.sh": True,
    "share/gpuscale/tools/README.md": False,
    "share/gpuscale/tools/gpuscale_data.py": False,
    "share/gpuscale/tools/gpuscale-plot": True,
    "share/gpuscale/docs/metrics.md": False,
    "share/gpuscale/docs/img/scaling.png": False,
}


def plain_env():
    """The tests' environment with no way to a gpuscale binary but the scripts' own: GPUSCALE unset, and no folder
    on PATH that holds a gpuscale."""
    env = {k: v for k, v in ENV.items() if k not in ("GPUSCALE", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and not os.path.exists(os.path.join(d, "gpuscale")))
    return env


def missing_plot_module():
    for name in ("h5py", "matplotlib", "numpy", "pandas"):
        try:
            __import__(name)
        except ImportError:
            return name
    return None


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = ScratchTest()
        cls.scratch.setUp()
        cls.prefix = cls.scratch.path("prefix")
        cls.install = subprocess.run([CMAKE, "--install", BUILD, "--prefix", cls.prefix],
                                     capture_output=True, text=True, timeout=120)
        cls.work = cls.scratch.path("work")  # the empty directory the job runs in
        os.mkdir(cls.work)
        cls.job = None
        if cls.install.returncode == 0:
            share = os.path.join(cls.prefix, "share", "gpuscale")
            cls.job = subprocess.run(
                [os.path.join(share, "jobs", "local", "mpirun.sh"), "-n", "2",
                 os.path.join(share, "configs", "default.toml")],
                capture_output=True, text=True, timeout=240, cwd=cls.work, env=plain_env())

    @classmethod
    def tearDownClass(cls):
        cls.scratch.tearDown()

    def p(self, rel):
        return os.path.join(self.prefix, rel)

    def setUp(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)

    def result_file(self):
        self.assertEqual(self.job.returncode, 0, self.job.stdout + self.job.stderr)
        files = glob.glob(os.path.join(self.work, "results", "default-*.h5"))
        self.assertEqual(len(files), 1, os.listdir(self.work))
        return files[0]

    def test_files_are_installed(self):
        for rel, executable in EXPECTED.items():
            self.assertTrue(os.path.isfile(self.p(rel)), rel)
            self.assertEqual(os.access(self.p(rel), os.X_OK), executable, rel)
        self.assertEqual(sorted(os.listdir(self.p("bin"))), ["gpuscale", "gpuscale-plot"])
        # gpuscale-plot is a relative link to the tool beside its loader: the prefix can be moved.
        link = self.p("bin/gpuscale-plot")
        self.assertTrue(os.path.islink(link))
        self.assertFalse(os.path.isabs(os.readlink(link)), os.readlink(link))
        self.assertEqual(os.path.realpath(link), os.path.realpath(self.p("share/gpuscale/tools/gpuscale-plot")))
        with open(self.p("share/gpuscale/jobs/installed.sh")) as f:
            self.assertIn("installed_bindir=../../bin\n", f.read())

    def test_no_test_or_benchmark_binaries(self):
        installed = []
        for root, _, files in os.walk(self.prefix):
            installed += [os.path.relpath(os.path.join(root, f), self.prefix) for f in files]
        for name in installed:
            base = os.path.basename(name)
            self.assertFalse(base.endswith("_tests") or base.startswith(("gpu_", "bench", "unit_"))
                             or name.startswith(("tests/", "share/gpuscale/tests", "share/gpuscale/bench")), name)
        # Every file in the prefix comes from an install rule: the manifest lists them all.
        with open(os.path.join(BUILD, "install_manifest.txt")) as f:
            manifest = {os.path.relpath(line.strip(), self.prefix) for line in f if line.strip()}
        self.assertEqual(set(installed), manifest)

    def test_job_script_runs_the_installed_binary_from_an_empty_directory(self):
        out = self.result_file()
        self.assertIn(f"binary: {os.path.realpath(self.p('bin/gpuscale'))} ", self.job.stdout)
        self.assertIn("=== gpuscale job (no job): exit 0", self.job.stdout)
        # The launcher of the MPI the binary was built with (its --version), told apart by its own --version.
        self.assertIn(f"launcher: {os.path.realpath(MPIEXEC)} ({LAUNCHER})\n", self.job.stdout)
        self.assertLessEqual(set(os.listdir(self.work)), {"results", "plots"})  # plots/: the figures' test
        report = subprocess.run([self.p("bin/gpuscale"), "report", out], capture_output=True, text=True,
                                timeout=60, env=plain_env(), cwd=self.work)
        self.assertEqual(report.returncode, 0, report.stdout + report.stderr)
        for name in ("gemm-512", "gemm-small"):
            self.assertIn(name, report.stdout)

    def test_job_script_without_its_binary_says_where_it_looked(self):
        # A copy of the installed share/ with no bin/ beside it: exit 2 naming PREFIX/bin/gpuscale.
        other = self.scratch.path("nobin")
        shutil.copytree(self.p("share"), os.path.join(other, "share"), symlinks=True)
        empty = self.scratch.path("empty")
        os.mkdir(empty)
        proc = subprocess.run([os.path.join(other, "share/gpuscale/jobs/local/mpirun.sh"), "-n", "2",
                               os.path.join(other, "share/gpuscale/configs/default.toml")],
                              capture_output=True, text=True, timeout=60, cwd=empty, env=plain_env())
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("mpirun.sh: error: gpuscale binary not found", proc.stderr)
        self.assertIn(os.path.join(other, "share/gpuscale/../../bin/gpuscale"), proc.stderr)
        self.assertEqual(os.listdir(empty), [])

    def run_script_with(self, mpirun):
        """The installed mpirun.sh -n 2 on a small config from an empty directory, with MPIRUN=`mpirun`."""
        work = self.scratch.path("launcher")
        os.makedirs(work, exist_ok=True)
        cfg = os.path.join(work, "small.toml")
        with open(cfg, "w") as f:
            f.write(SMALL_CONFIG)
        return subprocess.run([self.p("share/gpuscale/jobs/local/mpirun.sh"), "-n", "2", cfg, "-o",
                               os.path.join(work, "small.h5")], capture_output=True, text=True, timeout=120,
                              cwd=work, env=dict(plain_env(), MPIRUN=mpirun))

    def test_a_launcher_named_by_mpirun_that_is_missing_stops_at_once(self):
        proc = self.run_script_with("/no/such/mpiexec")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("mpirun.sh: error: MPIRUN=/no/such/mpiexec is not a command (unset it to use the launcher "
                      "gpuscale was built with)", proc.stderr)

    def test_a_launcher_of_another_kind_gets_only_the_ranks_and_a_warning(self):
        # A wrapper that answers --version as neither Open MPI nor Hydra, and otherwise is the tests' launcher.
        wrapper = self.scratch.path("other-mpiexec")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "other launcher 1.0"; exit 0; }}\nexec {MPIEXEC} "$@"\n')
        os.chmod(wrapper, 0o755)
        proc = self.run_script_with(wrapper)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(f"mpirun.sh: warning: {wrapper} is neither Open MPI's mpirun nor a Hydra mpiexec: only -n is "
                      "set; add its options with MPIRUN_ARGS", proc.stderr)
        self.assertIn(f"launcher: {wrapper} (other)\n", proc.stdout)
        self.assertTrue(os.path.exists(os.path.join(self.scratch.path("launcher"), "small.h5")))

    def test_gpuscale_plot_draws_from_the_prefix(self):
        missing = missing_plot_module()
        if missing:
            self.skipTest(f"the Python module {missing} is missing: gpuscale-plot cannot draw here (run "
                          "scripts/install-deps.sh: python3-h5py, python3-numpy, python3-pandas, python3-matplotlib)")
        out = self.result_file()
        proc = subprocess.run([self.p("bin/gpuscale-plot"), "all", out, "-o", "plots/"], capture_output=True,
                              text=True, timeout=120, env=plain_env(), cwd=self.work)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        pngs = glob.glob(os.path.join(self.work, "plots", "*.png"))
        self.assertTrue(pngs, proc.stdout + proc.stderr)
        for png in pngs:
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), PNG_SIGNATURE, png)
        # The loader on its own, as tools/README.md says: PYTHONPATH=PREFIX/share/gpuscale/tools.
        env = dict(plain_env(), PYTHONPATH=self.p("share/gpuscale/tools"))
        code = "import sys, gpuscale_data; r = gpuscale_data.load(sys.argv[1]); print(gpuscale_data.__file__, len(r.cases))"
        proc = subprocess.run([sys.executable, "-c", code, out], capture_output=True, text=True, timeout=60,
                              env=env, cwd=self.work)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(proc.stdout.startswith(self.p("share/gpuscale/tools/gpuscale_data.py")), proc.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
