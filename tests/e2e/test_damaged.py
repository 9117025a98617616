"""Damaged result files are caught, never reported as if whole: a real file
(2 ranks: gemm serial and parallel, a collective, a pipeline with phases)
damaged about 300 ways (seeded: flipped bytes, runs of bytes zeroed or
randomized, truncations) and foreign files. `gpuscale report` (table and
JSON) on each either prints exactly what it prints for the whole file (the
damage hit bytes nothing reads) or exits 2 with one line
`gpuscale: error: PATH: damaged result file: ...` (or: not an HDF5 / not a
gpuscale result file); never a signal, never exit 1, never a hang, never
other numbers.
A file before schema 1.7 (the real one relabelled 1.6, or rewritten with
h5py in the format of 1.3: variable-length strings, no checksums) is one
line naming the gpuscale that reads it; one in that old format is refused
before the HDF5 library reads it, at once also where its global heap object
is zeroed (on which HDF5 1.10 loops forever).

The Python tools read as strictly: gpuscale_data.load on every one of these
files raises ResultError (one line, `PATH: damaged result file: ...`, and
no other exception) where report exits 2, and loads (to the whole file's
numbers where report prints them) where report reads it; gpuscale-plot on a
few says the same line as `gpuscale-plot: error: ...` and exits 2. Files
edited with h5py the way an attacker would (wall_end before wall_start, a
NaN time, indices out of range, `ranks` or `reps` of 2^31 - 1, another
major schema version) are refused alike, in the same words, and load
allocates nothing for a count it has not checked (it runs under a limit on
its address space). A FIFO is refused at once, and a damaged file that a
run holds the lock of is read again for about 3 s before load believes the
damage, as report does.

Where the seeded damage lands depends on the run's bytes (host names, the
environment, timings differ from machine to machine), so every outcome that
is not a bug is accepted: the verdicts above. The zeroed heap object is
found by its signature, whatever the run wrote."""
import concurrent.futures
import fcntl
import json
import os
import random
import re
import stat
import subprocess
import sys
import time
import traceback
import unittest

import h5py
import numpy as np

from common import ENV, GPUSCALE, ScratchTest, mpirun, preamble

TOOLS = os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "tools")
PLOT = os.path.join(TOOLS, "gpuscale-plot")
sys.path.insert(0, TOOLS)
import gpuscale_data  # noqa: E402

CONFIG = preamble(warmup=1, reps=4, threads=1) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = 32
dtype = "fp64"
ops = 4
modes = ["serial", "parallel"]

[[experiment]]
name = "allreduce"
workload = "collective"
op = "allreduce"
bytes = 4096
iters = 2
modes = ["parallel"]

[[experiment]]
name = "pipeline"
workload = "pipeline"
size = 32
dtype = "fp64"
ops = 2
overlap = true
modes = ["parallel"]
"""

SEED = 20261122
EARLIEST = (r"not a result file this gpuscale reads: superblock version [01], HDF5's earliest file format \(another "
            r"program's file, a gpuscale file before schema 1\.4, which gpuscale up to commit \w+ reads, or a damaged "
            r"one\)")
ONE_LINE = re.compile(r"^gpuscale: error: (?P<path>.+?): (damaged result file: .+|not an HDF5 file|"
                      r"not a gpuscale result file \(no software = \"gpuscale\" attribute\)|" + EARLIEST + ")$")
# Past reading's own bound on a stalled read (60 s).
HANG_S = 120
# gpuscale_data.load's words for what report refuses (after "gpuscale: error: " there).
LOAD_LINE = re.compile(r"^(?P<path>.+?): (damaged result file: .+|not an HDF5 file|"
                       r"not a gpuscale result file \(no software = \"gpuscale\" attribute\)|" + EARLIEST + "|"
                       r"schemaVersion .+ is not readable by this gpuscale \(reads \d+\.\d+\))$")

# Loads each file named after the first two arguments (the address space allowed beyond what the interpreter
# holds now, and the tools' directory) and prints a JSON line per file: {"ok": true}, {"error": ResultError's
# message} or {"other": a traceback}. Under the limit, a loader that allocated what an unchecked count asks for
# fails instead of taking the machine's memory.
LOAD_DRIVER = """
import json, resource, sys, traceback
sys.path.insert(0, sys.argv[2])
import gpuscale_data
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[1]), vm + int(sys.argv[1])))
for path in sys.argv[3:]:
    try:
        gpuscale_data.load(path).metrics()
        out = {"ok": True}
    except gpuscale_data.ResultError as e:
        out = {"error": str(e)}
    except BaseException:
        out = {"other": traceback.format_exc()}
    print(json.dumps(out), flush=True)
"""
LOAD_MEMORY = 2 << 30
# What a file before schema 1.7 is (after "PATH: ").
OLDER = "is older than this gpuscale reads (1.7 on); gpuscale up to commit ef8f806 reads it"
# ... and one in HDF5's earliest format, as files before schema 1.4 are.
EARLIEST_OLD = ("not a result file this gpuscale reads: superblock version 0, HDF5's earliest file format (another "
                "program's file, a gpuscale file before schema 1.4, which gpuscale up to commit ef8f806 reads, or a "
                "damaged one)")


def report(path, *args):
    """`gpuscale report PATH ARGS`: (exit code, stdout, stderr), bytes decoded leniently; exit code None when it
    has not ended in HANG_S seconds (it is killed)."""
    try:
        p = subprocess.run([GPUSCALE, "report", path, *args], capture_output=True, timeout=HANG_S, env=ENV)
    except subprocess.TimeoutExpired:
        return None, "", f"no exit in {HANG_S} s"
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def damage(data, rng, i):
    """The i-th damage of `data`: (name, damaged bytes)."""
    b = bytearray(data)
    kind = i % 10
    if kind < 5:  # one byte flipped
        at = rng.randrange(len(b))
        b[at] ^= rng.randrange(1, 256)
        return f"byte {at} flipped", bytes(b)
    if kind < 6:  # a byte of the first 2 KiB (superblock, root group) flipped
        at = rng.randrange(min(2048, len(b)))
        b[at] ^= rng.randrange(1, 256)
        return f"byte {at} flipped", bytes(b)
    if kind < 8:  # a run of bytes zeroed or randomized
        at, n = rng.randrange(len(b)), rng.randrange(1, 65)
        zero = kind == 6
        for k in range(at, min(len(b), at + n)):
            b[k] = 0 if zero else rng.randrange(256)
        return f"bytes {at}..{at + n} {'zeroed' if zero else 'randomized'}", bytes(b)
    n = rng.randrange(1, len(b))  # truncated
    return f"truncated to {n} bytes", bytes(b[:n])


def to_old_format(src, dst):
    """`src` rewritten as schema 1.3 stored it: variable-length strings, contiguous datasets,
    the HDF5 1.6 file format, attributes and members in their creation order."""
    def strings(v):
        if isinstance(v, (bytes, np.bytes_)):
            return v.decode()
        if isinstance(v, np.ndarray) and v.dtype.kind == "S":
            return np.array([x.decode() for x in v], dtype=h5py.string_dtype())
        return v

    def copy_attrs(a, b):
        for k in a.attrs:
            b.attrs[k] = strings(a.attrs[k])

    def copy_group(a, b):
        copy_attrs(a, b)
        for k, v in a.items():
            if isinstance(v, h5py.Group):
                copy_group(v, b.create_group(k, track_order=True))
            else:
                data = strings(v[()])
                d = b.create_dataset(k, data=data, dtype=h5py.string_dtype() if v.dtype.kind == "S" else v.dtype)
                copy_attrs(v, d)

    with h5py.File(src, "r") as f, h5py.File(dst, "w", track_order=True) as g:
        copy_group(f, g)
        g.attrs["schemaVersion"] = "1.3"


def end_before_start(f):
    c = f["cases/0001"]
    end = c["wall_end"][()]
    end[1, 2] = c["wall_start"][1, 2] - 1.39e-3
    c["wall_end"][...] = end


def huge_samples(f):
    """reps of 2^31 - 1 and device_time of that shape, declared only (no chunk written)."""
    c = f["cases/0000"]
    c.attrs["reps"] = np.int64(2 ** 31 - 1)
    del c["device_time"]
    c.create_dataset("device_time", shape=(2, 2 ** 31 - 1), dtype="f8", chunks=(1, 1 << 17), fletcher32=True)


def swap_device_times(f):
    """Case 1's device times for case 2's and back: whole and in range, only a digest tells (1.7 on)."""
    a, b = f["cases/0000/device_time"][()], f["cases/0001/device_time"][()]
    f["cases/0000/device_time"][...] = b
    f["cases/0001/device_time"][...] = a


def link_elsewhere(f):
    del f["cases/0000/wall_start"]
    f["cases/0000/wall_start"] = h5py.ExternalLink("other.h5", "/wall_start")


def set_value(dataset, at, value):
    def edit(f):
        v = f[dataset][()]
        v[at] = value
        f[dataset][...] = v
    return edit


def set_attr(obj, name, value):
    def edit(f):
        f[obj].attrs[name] = value
    return edit


def vlen_hostnames(f):
    """/ranks/hostname as variable-length strings, their values in a global heap."""
    hosts = [h.decode() for h in f["ranks/hostname"][()]]
    del f["ranks/hostname"]
    f["ranks"].create_dataset("hostname", data=hosts, dtype=h5py.string_dtype())


def remove(name):
    def edit(f):
        del f[name]
    return edit


# Files edited as an attacker would (h5py keeps the checksums right): name, edit, what report and load both say
# (and, for some, the schema version from which the file has what finds the edit).
EDITS = (
    ("wall_end before wall_start", end_before_start, "/cases/0001/wall_end[6] is before its wall_start"),
    ("ranks = 2^31-1", set_attr("/", "ranks", np.int64(2 ** 31 - 1)),
     "/: attribute 'ranks' is 2147483647, outside 2..2"),
    ("a case's ranks = 2^31-1", set_attr("cases/0000", "ranks", np.int64(2 ** 31 - 1)),
     "/cases/0000: attribute 'ranks' is 2147483647, outside 1..2"),
    ("reps and device_time of 2^31-1", huge_samples,
     "/cases/0000/device_time claims 4294967294 values, more than the file can hold"),
    ("a NaN wall_start", set_value("cases/0000/wall_start", (0, 1), np.nan), "/cases/0000/wall_start[1] is not finite"),
    ("a negative device_time", set_value("cases/0002/device_time", (1, 0), -1.0),
     "/cases/0002/device_time[4] is negative"),
    ("a phase index out of range", set_value("cases/0003/phases/phase", 5, 7),
     "/cases/0003/phases/phase[5] is 7, outside 0..1"),
    ("a turn out of range", set_value("cases/0000/turn", 1, 7), "/cases/0000/turn[1] is 7, outside 0..1"),
    ("a group out of range", set_value("cases/0002/group", 0, 3), "/cases/0002/group[0] is 3, outside -1..0"),
    ("schemaVersion 2.0", set_attr("/", "schemaVersion", np.bytes_("2.0")),
     "schemaVersion 2.0 is not readable by this gpuscale"),
    ("mode unknown", set_attr("cases/0001", "mode", np.bytes_("both")),
     "/cases/0001: attribute 'mode' is 'both', neither serial nor parallel"),
    ("backend unknown", set_attr("/", "backend", np.bytes_("rocm")),
     "/: attribute 'backend' is 'rocm', neither cpu nor cuda"),
    ("a case's backend unknown", set_attr("cases/0001", "backend", np.bytes_("tpu")),
     "/cases/0001: attribute 'backend' is 'tpu', neither cpu nor cuda"),
    ("a case's comm unknown", set_attr("cases/0002", "comm", np.bytes_("gloo")),
     "/cases/0002: attribute 'comm' is 'gloo', neither mpi nor nccl"),
    ("no /ranks/hostname", remove("ranks/hostname"), "/ranks/hostname"),
    ("a variable-length string attribute", set_attr("/", "backend", "cpu"),  # h5py writes a str so
     "attribute 'backend' of / is a variable-length string, which gpuscale does not write"),
    ("variable-length strings", vlen_hostnames,
     "/ranks/hostname holds variable-length strings, which gpuscale does not write"),
    ("no /environment", remove("environment"), "/environment"),
    ("an external link", link_elsewhere, "external link to other.h5"),
    ("device times swapped between cases", swap_device_times,
     "/cases/0000/device_time does not hold what was written for it", (1, 7)),
)


class Damaged(ScratchTest):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.base = cls.shared.path("d/base.h5")  # as long as the damaged ones' names: the table wraps alike
        os.makedirs(os.path.dirname(cls.base))
        cls.proc = mpirun(2, "run", cls.shared.write("run.toml", CONFIG), "-o", cls.base)
        cls.refs = {fmt: report(cls.base, *fmt) for fmt in ((), ("--format", "json"))}
        cls.metrics = gpuscale_data.load(cls.base).metrics() if cls.proc.returncode == 0 else None

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def judge(self, path):
        """Reports `path` as a table and as JSON: 'same' (exit 0, the whole file's output), 'exit2' (one line) or a
        failure message."""
        verdicts = []
        for fmt, (ref_rc, ref_out, ref_err) in self.refs.items():
            rc, out, err = report(path, *fmt)
            lines = err.strip("\n").split("\n")
            if rc is None:
                return f"hangs ({' '.join(fmt) or 'table'}): {err}"
            if rc == 0:
                if out.replace(path, self.base) == ref_out and err == ref_err:
                    verdicts.append("same")
                    continue
                return f"exit 0 with another report ({' '.join(fmt) or 'table'})"
            if rc != 2:
                return f"exit {rc} ({'signal ' + str(-rc) if rc < 0 else 'not 2'}): {err.strip()[:300]}"
            m = ONE_LINE.match(lines[0])
            if len(lines) != 1 or not m or m.group("path") != path or out:
                return f"exit 2 but not one line of the expected form: {err[:300]!r} (stdout {out[:100]!r})"
            if re.search(r"HDF5 call|\.c(pp)?:\d|H5[A-Z][A-Za-z_]*\(", lines[0]):
                return f"internal detail in the message: {lines[0]}"
            verdicts.append("exit2")
        if len(set(verdicts)) != 1:
            return f"table and JSON differ: {verdicts}, {[report(path, *fmt)[::2] for fmt in self.refs]}"
        return verdicts[0]

    def judge_load(self, path, verdict):
        """What is wrong with gpuscale_data.load on `path`, given report's verdict on it, or None: a file report
        refuses raises ResultError, one line "PATH: ..."; one it reads loads, to the whole file's numbers."""
        try:
            m = gpuscale_data.load(path).metrics()
        except gpuscale_data.ResultError as e:
            m = LOAD_LINE.match(str(e))
            if not m or m.group("path") != path:
                return f"load's message is not one line of the expected form: {str(e)!r}"
            if verdict != "exit2":
                return f"report reads it ({verdict}), load raises: {e}"
            return None
        except Exception:  # noqa: BLE001 (what the test is about)
            return "load raises another exception than ResultError: " + traceback.format_exc()
        if verdict == "exit2":
            again = [report(path, *fmt) for fmt in self.refs]
            return f"report refuses it ({' / '.join(err.strip() for _, _, err in again)}), load reads it"
        if verdict == "same" and not m.equals(self.metrics):
            return f"load reads other numbers than the whole file's:\n{m}"
        return None

    def run_all(self, files):
        """Judges every (name, path) by report in a pool of 2, then by gpuscale_data.load (the same verdict);
        returns {verdict: count}; fails on any failure message."""
        counts, failures = {}, []
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            verdicts = list(pool.map(lambda f: self.judge(f[1]), files))
        for (name, path), v in zip(files, verdicts):  # after the pool: load forks, no other thread about
            why = self.judge_load(path, v) if v in ("same", "exit2") else v
            if why:
                failures.append(f"{name}: {why}")
            else:
                counts[v] = counts.get(v, 0) + 1
        self.assertEqual(failures, [], f"{len(failures)} of {len(files)} damaged files")
        print(f"\n{len(files)} files: {counts}", flush=True)
        return counts

    def test_the_whole_file_reports(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        for rc, out, err in self.refs.values():
            self.assertEqual((rc, err), (0, ""), err)
        self.assertEqual(len(json.loads(self.refs[("--format", "json")][1])), 4)

    def test_damaged_files_are_caught(self):
        with open(self.base, "rb") as f:
            data = f.read()
        rng = random.Random(SEED)
        files = []
        for i in range(300):
            name, b = damage(data, rng, i)
            path = self.path(f"d/{i:04d}.h5")  # as long as d/base.h5
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(b)
            files.append((name, path))
        counts = self.run_all(files)
        self.assertGreater(counts.get("exit2", 0), 200)  # most damage is found, the rest changes nothing read
        refused = {}  # the first three that load refuses, and its messages
        for _, path in files:
            try:
                gpuscale_data.load(path)
            except gpuscale_data.ResultError as e:
                refused[path] = str(e)
            if len(refused) == 3:
                break
        self.assert_plot_refuses(list(refused), list(refused.values()))

    def load_error(self, path):
        """The message of the ResultError that gpuscale_data.load raises on `path`."""
        with self.assertRaises(gpuscale_data.ResultError) as e:
            gpuscale_data.load(path)
        return str(e.exception)

    def assert_plot_refuses(self, paths, messages):
        """gpuscale-plot on each of `paths` says load's message (the same one) in its one line and exits 2."""
        for path, message in zip(paths, messages):
            p = subprocess.run([sys.executable, PLOT, "timeline", path, "--case", "1", "-o", self.path("png")],
                               capture_output=True, text=True, env=ENV, timeout=HANG_S)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (2, "", f"gpuscale-plot: error: {message}\n"))

    def test_files_edited_as_an_attacker_would_are_refused_alike(self):
        with h5py.File(self.base, "r") as f:
            version = tuple(int(x) for x in f.attrs["schemaVersion"].decode().split("."))
        edits = [e for e in EDITS if e[3:] <= (version,)]
        paths = []
        for i, (name, edit, *_) in enumerate(edits):
            paths.append(self.path(f"e{i:02d}.h5"))
            with open(self.base, "rb") as src, open(paths[-1], "wb") as dst:
                dst.write(src.read())
            with h5py.File(paths[-1], "r+") as f:
                edit(f)
        p = subprocess.run([sys.executable, "-c", LOAD_DRIVER, str(LOAD_MEMORY), TOOLS, *paths], capture_output=True,
                           text=True, env=ENV, timeout=HANG_S)
        self.assertEqual(p.returncode, 0, p.stderr)
        loaded = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertEqual(len(loaded), len(edits), p.stdout + p.stderr)
        failures = []
        for (name, _, says, *_), path, got in zip(edits, paths, loaded):
            rc, out, err = report(path)
            if (rc, out) != (2, "") or says not in err:
                failures.append(f"{name}: report exits {rc}: {err.strip()}")
            elif got != {"error": err[len("gpuscale: error: "):-1]}:  # the same line
                failures.append(f"{name}: load gives {got}, report {err.strip()}")
        self.assertEqual(failures, [], f"{len(failures)} of {len(edits)} edited files")
        self.assert_plot_refuses(paths[:4], [got["error"] for got in loaded[:4]])

    def test_a_damaged_file_that_a_run_holds_is_read_again_before_it_is_believed(self):
        path = self.path("live.h5")
        with open(self.base, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
        with open(path, "rb") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # as the run writing it holds it
            start = time.monotonic()
            message = self.load_error(path)
            rc, out, err = report(path)
        self.assertEqual((rc, out, err), (2, "", f"gpuscale: error: {message}\n"))
        self.assertEqual(message, f"{path}: damaged result file: truncated (file is {len(data) // 2} bytes, expected "
                                  f"{len(data)}) (read while a run was writing it)")
        self.assertGreater(time.monotonic() - start, 3)  # pauses of 0.1 s doubling, 5 of them

    def test_what_is_no_file_is_refused_at_once(self):
        fifo = self.path("fifo.h5")
        os.mkfifo(fifo)  # opening it would wait for a writer: load looks first
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
        for path, says in ((fifo, "is a FIFO, not a result file"), (self.dir, "is a directory, not a result file"),
                           (self.path("none.h5"), "no such file")):
            self.assertEqual(self.load_error(path), f"{path}: {says}")
            self.assertEqual(report(path), (2, "", f"gpuscale: error: {path}: {says}\n"))
        self.assert_plot_refuses([fifo], [f"{fifo}: is a FIFO, not a result file"])

    def test_foreign_files_are_one_line_and_exit_2(self):
        foreign = {"empty.h5": b"", "text.h5": b"hello, not a result\n", "zeros.h5": bytes(4096),
                   "noise.h5": bytes(random.Random(SEED).randrange(256) for _ in range(5000))}
        files = []
        for name, b in foreign.items():
            with open(self.path(name), "wb") as f:
                f.write(b)
            files.append((name, self.path(name)))
        with h5py.File(self.path("other.h5"), "w") as f:  # HDF5, not from gpuscale
            f["x"] = np.arange(10)
            f.attrs["software"] = "something else"
        files.append(("other.h5", self.path("other.h5")))
        with h5py.File(self.path("bare.h5"), "w", libver="latest") as f:  # says gpuscale, holds nothing
            f.attrs["software"] = np.bytes_("gpuscale")  # fixed-length, as gpuscale writes
            f.attrs["schemaVersion"] = np.bytes_("1.10")
        files.append(("bare.h5", self.path("bare.h5")))
        self.assertEqual(self.run_all(files), {"exit2": len(files)})
        rc, _, err = report(self.path("bare.h5"))
        self.assertIn("damaged result file: attribute 'softwareVersion' of / missing", err)
        self.assertEqual(self.load_error(self.path("bare.h5")), err[len("gpuscale: error: "):-1])

    def test_a_file_before_schema_1_7_is_one_line_naming_the_gpuscale_that_reads_it(self):
        relabelled, old = self.path("old6.h5"), self.path("old3.h5")
        with open(self.base, "rb") as src, open(relabelled, "wb") as dst:
            dst.write(src.read())
        with h5py.File(relabelled, "r+") as f:
            f.attrs["schemaVersion"] = np.bytes_("1.6")
        to_old_format(self.base, old)
        with h5py.File(old, "r") as f:
            self.assertIsInstance(f.attrs["backend"], str)  # variable-length, as 1.3 wrote
            self.assertIsNone(f["cases/0000/wall_start"].chunks)
        for path, line in ((relabelled, f"{relabelled}: schemaVersion 1.6 {OLDER}"), (old, f"{old}: {EARLIEST_OLD}")):
            for fmt in ((), ("--format", "json")):
                self.assertEqual(report(path, *fmt), (2, "", f"gpuscale: error: {line}\n"))
            self.assertEqual(self.load_error(path), line)

    def test_an_old_file_whose_heap_would_loop_is_refused_at_once(self):
        old = self.path("oldz.h5")
        to_old_format(self.base, old)
        with open(old, "r+b") as f:
            data = f.read()
            heap = data.find(b"GCOL\x01\x00\x00\x00")  # the first global heap collection: the root's strings
            self.assertGreater(heap, 0)
            f.seek(heap + 16)  # its first object's header (index, references, size), after the collection's
            f.write(bytes(16))  # index 0 and size 0: HDF5 1.10's walk over the collection stands still
        start = time.monotonic()
        self.assertEqual(report(old), (2, "", f"gpuscale: error: {old}: {EARLIEST_OLD}\n"))
        self.assertEqual(self.load_error(old), f"{old}: {EARLIEST_OLD}")
        self.assertLess(time.monotonic() - start, 10)

if __name__ == "__main__":
    unittest.main(verbosity=2)
