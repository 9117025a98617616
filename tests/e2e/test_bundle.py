"""scripts/bundle.sh: the build packed into one tarball, unpacked into an empty folder, and run on a machine that
lacks the libraries it packs. Those libraries (HDF5, OpenBLAS, toml++) are hidden from the loader in a mount
namespace of the test's own (/dev/null bound over each library file), where the build's own gpuscale then cannot
start; the bundle's runs configs/default.toml on 2 ranks, reports it, and runs the GPU check's machinery from the
bundle (a stand-in nvidia-smi: the steps that need no GPU).

Exits 77 (ctest: skipped) where the namespace cannot be made (not root, no unshare or mount)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ENV, GPUSCALE, MPIEXEC  # noqa: E402

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GPUSCALE_BUILD_DIR") or os.path.dirname(os.path.dirname(os.path.realpath(GPUSCALE)))
HIDDEN = ("libhdf5", "libopenblas", "libtomlplusplus")
SCRATCH = None  # the module's folder: the bundle, unpacked once


def packed_libraries():
    """The real files of the libraries the bundle must carry, as the build's gpuscale loads them."""
    out = subprocess.run(["ldd", os.path.join(BUILD, "src", "gpuscale")], capture_output=True, text=True,
                         check=True).stdout
    paths = [line.split("=>")[1].split()[0] for line in out.splitlines()
             if "=>" in line and line.strip().startswith(HIDDEN)]
    return sorted({os.path.realpath(p) for p in paths})


def hidden(cmd, cwd, timeout=240):
    """cmd (a shell line) in a mount namespace where the packed libraries read as empty files."""
    binds = "".join(f"mount --bind /dev/null {p} && " for p in packed_libraries())
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", binds + cmd],
                          capture_output=True, text=True, timeout=timeout, env=ENV, cwd=cwd)


class Bundle(unittest.TestCase):
    def test_a_packs_the_build(self):
        p = subprocess.run([os.path.join(SOURCE, "scripts", "bundle.sh"), BUILD, "-o",
                            os.path.join(SCRATCH, "gpuscale-bundle.tar.gz")],
                           capture_output=True, text=True, timeout=240, env=ENV)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("bundle.sh: wrote ", p.stdout)
        cuda = "libcudart" in subprocess.run(["ldd", os.path.join(BUILD, "src", "gpuscale")], capture_output=True,
                                             text=True).stdout
        # A build without the CUDA backend is packed all the same, and says so.
        self.assertEqual("has no CUDA backend" in p.stdout, not cuda, p.stdout)
        subprocess.run(["tar", "-C", os.path.join(SCRATCH, "unpacked"), "-xzf",
                        os.path.join(SCRATCH, "gpuscale-bundle.tar.gz")], check=True)
        libs = os.listdir(os.path.join(SCRATCH, "unpacked", "gpuscale", "lib", "gpuscale"))
        for name in HIDDEN:
            self.assertTrue(any(n.startswith(name) for n in libs), f"{name} not packed: {libs}")
        for provided in ("libc.so", "libstdc++", "libmpi", "libcudart", "libnccl"):
            self.assertFalse(any(n.startswith(provided) for n in libs), f"{provided} packed: {libs}")

    def test_b_runs_where_the_libraries_are_missing(self):
        root = os.path.join(SCRATCH, "unpacked", "gpuscale")
        work = tempfile.mkdtemp(dir=SCRATCH)  # empty: nothing of the checkout or the build to fall back on
        # Hidden for real: the build's own gpuscale cannot start.
        p = hidden(f"{os.path.join(BUILD, 'src', 'gpuscale')} --version", work)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("error while loading shared libraries", p.stderr)
        gs = os.path.join(root, "bin", "gpuscale")
        cfg = os.path.join(root, "share", "gpuscale", "configs", "default.toml")
        p = hidden(f"{MPIEXEC} -n 2 {gs} run {cfg} -o r.h5 && {gs} report r.h5", work)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("done: r.h5", p.stdout)
        self.assertIn("speedup", p.stdout)  # the report's table
        self.assertTrue(os.path.exists(os.path.join(work, "r.h5")))

    def test_c_the_gpu_check_from_the_bundle(self):
        root = os.path.join(SCRATCH, "unpacked", "gpuscale")
        work = tempfile.mkdtemp(dir=SCRATCH)
        check = os.path.join(root, "share", "gpuscale", "scripts", "gpu-check.sh")
        p = hidden(f"{check} {work}/out", work, timeout=60)
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        fake = os.path.join(work, "fake")
        os.mkdir(fake)
        with open(os.path.join(fake, "nvidia-smi"), "w") as f:
            f.write("#!/bin/sh\necho 'Stand-in GPU, 0.0, 1 MiB, 1 MHz'\n")
        os.chmod(os.path.join(fake, "nvidia-smi"), 0o755)
        p = hidden(f"PATH={fake}:$PATH {check} {work}/out --steps probe,info", work, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(work, "out", "summary.json")) as f:
            steps = {s["name"]: s for s in json.load(f)["steps"]}
        self.assertEqual(steps["info"]["outcome"], "ok", steps)
        # The probe exits 77 without a device (or is not in a build without CUDA): skipped, never ok.
        self.assertEqual(steps["probe"]["outcome"], "skipped", steps)


def main():
    global SCRATCH
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        print("skipped: needs root, unshare and mount (a mount namespace hides the packed libraries)")
        sys.exit(77)
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: cannot make a mount namespace here: {probe.stderr.strip()}")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="gpuscale-e2e-bundle-") as d:
        SCRATCH = d
        os.mkdir(os.path.join(d, "unpacked"))
        result = unittest.main(exit=False, verbosity=2).result
        sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
