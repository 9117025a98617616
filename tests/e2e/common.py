"""Shared helpers of the end-to-end tests: they run the real gpuscale binary
(through mpirun where it matters) in a scratch directory and read what it
wrote with h5py, independently of gpuscale's own reader."""
import ctypes
import fcntl
import json
import os
import subprocess
import tempfile
import time
import unittest

GPUSCALE = os.environ.get("GPUSCALE_BIN", "gpuscale")
MPIEXEC = os.environ.get("MPIEXEC", "mpirun")

ENV = dict(os.environ)
ENV.update({
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OPENBLAS_NUM_THREADS": "1",
})


def _toml(value):
    """A Python value as TOML writes it: a string quoted, a boolean lower case, a number as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else str(value)


def preamble(backend="cpu", **defaults):
    """The head of a test's config: a newline (the configs start with one), then the [defaults] table: `backend`
    and each of `defaults` in the order given, one `key = value` line each (warmup=1, reps=3, threads=1,
    comm="auto"). The experiments that follow start with a newline: the blank line before [[experiment]]."""
    return "\n[defaults]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in {"backend": backend, **defaults}.items())


SMALL_CONFIG = preamble(warmup=1, reps=4, threads=1) + """
[[experiment]]
name = "small"
workload = "gemm"
size = 64
dtype = ["fp64", "fp32"]
ops = 20
modes = ["serial", "parallel"]
"""

# A gemm and two allreduces on 2 ranks, in a second or two: a small run of device-local work and transfers, for tests
# that then write known timings into it (set_durations).
GEMM_AND_ALLREDUCE = preamble(warmup=1, reps=4, threads=1) + """
[[experiment]]
name = "mm"
workload = "gemm"
size = 64
dtype = "fp64"
modes = ["parallel"]

[[experiment]]
name = "sum"
workload = "collective"
op = "allreduce"
bytes = [1024, 4096]
iters = 2
modes = ["parallel"]
"""


def slow_config(ops, **defaults):
    """A gemm of 512 (fp64, parallel, 3 reps, no warm-up) on the CPU backend, one case per entry of `ops`: an op
    takes milliseconds, 150 of them a second or more on 2 cores. `defaults`: more keys of [defaults]."""
    return preamble(warmup=0, reps=3, **defaults) + f"""
[[experiment]]
name = "slow"
workload = "gemm"
size = 512
ops = {list(ops)}
modes = ["parallel"]
"""


def _launcher_family():
    out = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True).stdout
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "hydra" if "HYDRA" in out else "other"


# The launcher the tests start ranks with: "openmpi" (Open MPI's mpirun), "hydra" (MPICH's mpiexec) or "other".
# Where they differ (exit codes, how a job ends), a test expects each its own.
LAUNCHER = _launcher_family()


def exits_past_a_stopped_peer(code, before_mpi=False):
    """The exit codes of a job whose live ranks exit with `code` while the launcher kills a stopped (SIGSTOP) peer.

    Open MPI reports the ranks' code. MPICH 4.0's Hydra ORs every process's status into its own, and records the
    SIGKILL it ended the stopped peer with (9) when its proxy reaps that peer before the peer's output pipes close
    (a race; later Hydras ignore the status of a process they killed), so there the job may end with 9.
    `before_mpi`: the live ranks exited inside MPI's start, with no MPI_Abort to carry their code. Hydra's proxy
    then records 1 for a rank whose PMI socket closed unfinalized, and may keep it in place of the rank's own code
    (in 1 CI run of several), so there the job may end with 1 too."""
    if LAUNCHER != "hydra":
        return (code,)
    return (code, 9, 1) if before_mpi else (code, 9)


# A rank's number as Open MPI's mpirun and MPICH's Hydra tell it to the process.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK")

# What mpirun, mpiexec and srun set in every process they start; gpuscale run tells a singleton by their absence.
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "SLURM_STEP_ID")


def no_gpu_reason(info_stdout):
    """Why no GPU is usable, as gpuscale must say it on this machine where none is: from the build (the CUDA
    runtime among the dependencies of `info`'s first line) and whether the driver library loads."""
    if "cuda@" not in info_stdout.splitlines()[0]:
        return "this gpuscale was built without CUDA (no nvcc at configure time, or GPUSCALE_CUDA=OFF)"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver found (libcuda.so.1 not loadable)"
    raise unittest.SkipTest("a driver is installed here: the reason is the CUDA runtime's own")


def run(args, timeout=120, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=cwd)


def gpuscale(*args, timeout=120, cwd=None):
    return run([GPUSCALE, *args], timeout=timeout, cwd=cwd)


def mpirun(n, *args, timeout=180, cwd=None):
    return run([MPIEXEC, "-n", str(n), GPUSCALE, *args], timeout=timeout, cwd=cwd)


class ScratchTest(unittest.TestCase):
    """Each test gets its own directory, removed afterwards."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="gpuscale-e2e-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        return p


def s(x):
    """h5py gives strings as bytes or str depending on how they were stored."""
    return x.decode() if isinstance(x, bytes) else x


class SharedRunTest(ScratchTest):
    """One `gpuscale run` of CONFIG (or of the config file CONFIG_FILE) on RANKS ranks with ARGS, shared by every
    test of the class: `proc` is the finished mpirun, `out` the result file."""
    CONFIG = ""
    CONFIG_FILE = None
    ARGS = ()
    RANKS = 2

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.out = cls.shared.path("run.h5")
        cfg = cls.CONFIG_FILE or cls.shared.write("run.toml", cls.CONFIG)
        cls.proc = mpirun(cls.RANKS, "run", cfg, "-o", cls.out, *cls.ARGS)

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()


class InputErrorTest(ScratchTest):
    """Bad input: one clear line on stderr, exit code 2, and no result file written."""

    def assert_input_error(self, proc, *fragments, out=None):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("gpuscale: error: "), lines[0])
        for frag in fragments:
            self.assertIn(frag, lines[0])
        if out:
            self.assertFalse(os.path.exists(out), "a result file was written")

    def run_config(self, text, *extra):
        cfg = self.write("bad.toml", text)
        out = self.path("out.h5")
        return cfg, out, gpuscale("run", cfg, "-o", out, *extra)


def read_until(test, proc, marker, within=60):
    """Reads proc's output (a text pipe) line by line until a line holds `marker`; fails `test` if it does not
    come within `within` seconds or the output ends first. Returns what was read. A case's progress line ends
    once the case is written: "[3/8]" shows up once cases 1 to 3 are in the file (and case 4 began, if any).
    It reads the pipe unbuffered, so a later proc.communicate() gets every byte after the marker's line."""
    raw = proc.stdout.buffer.raw
    seen = ""
    deadline = time.time() + within
    while marker not in seen and time.time() < deadline:
        line = raw.readline()
        if not line:
            break
        seen += line.decode(errors="replace")
    test.assertIn(marker, seen, seen)
    return seen


def rank_pids(marker, rank=None, watchers=False):
    """PIDs of gpuscale processes of this test (their command line holds `marker`) with the given MPI rank (any: None).
    Each rank has a watcher for the end of its run (src/app/end_watch.hpp), a fork of it named gpuscale-watch (or,
    for the moment before it names itself, a child of a rank): left out, unless `watchers`."""
    found = {}
    named_watcher = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
            parent = int(stat.rsplit(b")", 1)[1].split()[1])
            name = stat[stat.index(b"(") + 1:stat.rindex(b")")]
        except (OSError, IndexError, ValueError):
            continue
        if os.path.basename(cmd[0].decode()) != "gpuscale" or marker.encode() not in cmd:
            continue
        if rank is None or any(f"{v}={rank}".encode() in env for v in RANK_VARIABLES):
            found[int(d)] = parent
            if name == b"gpuscale-watch":
                named_watcher.add(int(d))
    return sorted(pid for pid, parent in found.items()
                  if watchers or (parent not in found and pid not in named_watcher))


def locked(path):
    """Whether a process holds a lock on the file (flock, as HDF5 takes it)."""
    try:
        with open(path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True
    return False


def wait_for_ranks(test, out, timeout=30):
    """Waits until no rank of this test's run (command line holding `out`, its result file) is left and the file is
    unlocked: mpirun can return while a rank it signalled still closes the file, whose lock it holds until then. A
    rank on its way out leaves /proc's command lines (its memory is gone) a moment before its files are closed, so
    the lock is what tells last."""
    deadline = time.time() + timeout
    while rank_pids(out, watchers=True) or locked(out):
        if time.time() > deadline:
            test.fail(f"ranks of the run writing {out} still alive, or its lock held, {timeout} s after mpirun "
                      "returned")
        time.sleep(0.05)


def digest(path, values):
    """The digest of a dataset at `path` (its name in the file) holding `values` (docs/results-format.md, "Digests")."""
    import numpy as np

    def mix64(x):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    def fnv1a(b):
        h = 0xCBF29CE484222325
        for c in b:
            h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        return h
    seed = np.uint64(fnv1a(path.encode()))
    v = np.asarray(values).ravel()
    if v.dtype.kind in "SOU":
        b = [x if isinstance(x, bytes) else x.encode() for x in v]
        w = np.array([fnv1a(x.split(b"\0")[0]) for x in b], dtype=np.uint64)
    else:
        w = v.astype("<f8" if v.dtype.kind == "f" else "<i8").view("<u8")
    keys = seed + np.arange(1, w.size + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    total = mix64(w ^ keys).sum(dtype=np.uint64)
    return int(mix64(np.array([seed ^ total], dtype=np.uint64))[0])


def rewrite_digest(dataset):
    """After an edit of `dataset` (h5py, in place) its new digest, as gpuscale writes one with values it changes: a
    file of schema 1.7 whose values changed without it reads as damaged. Files before 1.7 have none and get none."""
    import numpy as np
    if "digest" in dataset.attrs:
        dataset.attrs.modify("digest", np.uint64(digest(dataset.name, dataset[()])))


def stretch_samples(path, factor, rank=None):
    """Makes the samples of every case in the result file `path` take `factor` times as long (only `rank`'s, when
    given): wall_end moves away from wall_start, device_time scales. A file with known timings, for checking what the
    report computes from them without depending on how fast this machine ran."""
    import h5py  # imported here: e2e tests that need no h5py import common too
    with h5py.File(path, "r+") as f:
        for c in f["cases"].values():
            if "wall_start" not in c:
                continue
            start, end, dev = c["wall_start"][()], c["wall_end"][()], c["device_time"][()]
            rows = slice(None) if rank is None else rank
            end[rows] = start[rows] + factor * (end[rows] - start[rows])
            dev[rows] = factor * dev[rows]
            c["wall_end"][...] = end
            c["device_time"][...] = dev
            for name in ("wall_end", "device_time"):
                rewrite_digest(c[name])


def as_another_run(path, k):
    """Makes the result file `path`, a copy of a run, read as a run of its own: its start date k seconds later
    (gpuscale counts a run once, by its date, ranks' pids and hosts, whatever its path)."""
    import datetime
    import h5py
    import numpy as np
    with h5py.File(path, "r+") as f:
        date = datetime.datetime.strptime(s(f.attrs["date"]), "%Y-%m-%dT%H:%M:%S%z")
        later = (date + datetime.timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%S%z")
        f.attrs["date"] = np.bytes_(later)


def without_host_readings(path):
    """Removes each case's readings of what else the host did (its `host` table) from the result file `path`: with
    known timings, a file whose verdicts do not depend on how busy this machine was (the report then judges the cases
    as those of a file written before 1.8, on the job's own shape alone)."""
    import h5py
    with h5py.File(path, "r+") as f:
        for c in f["cases"].values():
            if "host" in c:
                del c["host"]


def set_durations(path, seconds_by_rank, same_start=False):
    """Gives every sample of rank r in the result file `path` the duration seconds_by_rank[r] (wall_end =
    wall_start + it, device_time = it): known timings, whatever this machine did. `same_start`: in parallel cases
    every rank's sample also starts when rank 0's did, so a makespan is exactly the longest duration. The host's
    readings go too (without_host_readings)."""
    import h5py
    import numpy as np
    with h5py.File(path, "r+") as f:
        for c in f["cases"].values():
            if "wall_start" not in c:
                continue
            start = c["wall_start"][()]
            if same_start and s(c.attrs["mode"]) == "parallel":
                start[:] = start[0]
                c["wall_start"][...] = start
            d = np.repeat(np.asarray(seconds_by_rank, dtype=float)[:, None], start.shape[1], axis=1)
            c["wall_end"][...] = start + d
            c["device_time"][...] = d
            for name in ("wall_start", "wall_end", "device_time"):
                rewrite_digest(c[name])
    without_host_readings(path)


def run_and_hit(test, cfg, out, marker, hit, timeout=60):
    """Runs the config file `cfg` on 2 ranks to `out`, calls hit(proc, output so far) once the output shows `marker`,
    waits `timeout` s at most for the end and for its ranks; returns (exit code, output). The run is killed if the
    test fails first."""
    proc = subprocess.Popen([MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = read_until(test, proc, marker)
        hit(proc, seen)
        rest, _ = proc.communicate(timeout=timeout)
        wait_for_ranks(test, out)
        return proc.returncode, seen + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
