"""Damaged result files are caught, never reported as if whole: a real file
(2 ranks: gemm serial and parallel, a collective, a pipeline with phases)
damaged about 300 ways (seeded: flipped bytes, runs of bytes zeroed or
randomized, truncations) and foreign files. `gpuscale report` (table and
JSON) on each either prints exactly what it prints for the whole file (the
damage hit bytes nothing reads) or exits 2 with one line
`gpuscale: error: PATH: damaged result file: ...` (or: not an HDF5 / not a
gpuscale result file); never a signal, never exit 1, never a hang, never
other numbers.
A file in the format of schema 1.3 (variable-length strings, no checksums),
made from the real one with h5py, reports the same numbers; damaged, it may
report others (it has no checksums) but still never crashes, hangs or exits
1; and a global heap object of it zeroed (on which HDF5 1.10 loops forever)
is one line and exit 2 at once.

Where the seeded damage lands depends on the run's bytes (host names, the
environment, timings differ from machine to machine), so every outcome that
is not a bug is accepted: the verdicts above and, for the old format, the
major version of its schemaVersion changed (the one-line "not readable by
this gpuscale") and table and JSON judged apart (nothing checksummed
guarantees two reads of a damaged old file alike). The zeroed heap object is
found by its signature, whatever the run wrote."""
import concurrent.futures
import json
import os
import random
import re
import subprocess
import unittest

import h5py
import numpy as np

from common import ENV, GPUSCALE, ScratchTest, mpirun

CONFIG = """
[defaults]
backend = "cpu"
warmup = 1
reps = 4
threads = 1

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
ONE_LINE = re.compile(r"^gpuscale: error: (?P<path>.+?): (damaged result file: .+|not an HDF5 file|"
                      r"not a gpuscale result file \(no software = \"gpuscale\" attribute\))$")
# An old file's schemaVersion is not checksummed: damage can change its major version.
OLD_SCHEMA = re.compile(r"^gpuscale: error: (?P<path>.+?): schemaVersion .+ is not readable by this gpuscale "
                        r"\(reads \d+\.\d+\)$")
# Past reading's own bound on a stalled read (60 s).
HANG_S = 120


def report(path, *args):
    """`gpuscale report PATH ARGS`: (exit code, stdout, stderr), bytes decoded leniently (a damaged old file may
    hold any bytes in its strings); exit code None when it has not ended in HANG_S seconds (it is killed)."""
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
    """`src` (schema 1.4) rewritten as schema 1.3 stored it: variable-length strings, contiguous datasets,
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


class Damaged(ScratchTest):
    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.base = cls.shared.path("d/base.h5")  # as long as the damaged ones' names: the table wraps alike
        os.makedirs(os.path.dirname(cls.base))
        cls.proc = mpirun(2, "run", cls.shared.write("run.toml", CONFIG), "-o", cls.base)
        cls.refs = {fmt: report(cls.base, *fmt) for fmt in ((), ("--format", "json"))}

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def judge(self, path, expect_same=True):
        """Reports `path` as a table and as JSON: 'same' (exit 0, the whole file's output), 'exit2' (one line),
        'other' (exit 0 with other output; only allowed when not expect_same: an old file) or a failure message."""
        verdicts = []
        for fmt, (ref_rc, ref_out, ref_err) in self.refs.items():
            rc, out, err = report(path, *fmt)
            lines = err.strip("\n").split("\n")
            if rc is None:
                return f"hangs ({' '.join(fmt) or 'table'}): {err}"
            if rc == 0:
                same = out.replace(path, self.base) == ref_out and err == ref_err
                if same or not expect_same:
                    verdicts.append("same" if same else "other")
                    continue
                return f"exit 0 with another report ({' '.join(fmt) or 'table'})"
            if rc != 2:
                return f"exit {rc} ({'signal ' + str(-rc) if rc < 0 else 'not 2'}): {err.strip()[:300]}"
            m = ONE_LINE.match(lines[0]) or (None if expect_same else OLD_SCHEMA.match(lines[0]))
            if len(lines) != 1 or not m or m.group("path") != path or out:
                return f"exit 2 but not one line of the expected form: {err[:300]!r} (stdout {out[:100]!r})"
            if re.search(r"HDF5 call|\.c(pp)?:\d|H5[A-Z][A-Za-z_]*\(", lines[0]):
                return f"internal detail in the message: {lines[0]}"
            verdicts.append("exit2")
        if not expect_same:  # each read of an old file judged on its own
            return "exit2" if "exit2" in verdicts else "other" if "other" in verdicts else "same"
        if len(set(verdicts)) != 1:
            return f"table and JSON differ: {verdicts}, {[report(path, *fmt)[::2] for fmt in self.refs]}"
        return verdicts[0]

    def run_all(self, files, expect_same=True):
        """Judges every (name, path) in a pool of 2; returns {verdict: count}; fails on any failure message."""
        counts, failures = {}, []
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for (name, path), v in zip(files, pool.map(lambda f: self.judge(f[1], expect_same), files)):
                if v in ("same", "exit2", "other"):
                    counts[v] = counts.get(v, 0) + 1
                else:
                    failures.append(f"{name}: {v}")
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
        with h5py.File(self.path("bare.h5"), "w") as f:  # says gpuscale, holds nothing
            f.attrs["software"] = "gpuscale"
            f.attrs["schemaVersion"] = "1.4"
        files.append(("bare.h5", self.path("bare.h5")))
        self.assertEqual(self.run_all(files), {"exit2": len(files)})
        rc, _, err = report(self.path("bare.h5"))
        self.assertIn("damaged result file: attribute 'softwareVersion' of / missing", err)

    def test_a_schema_1_3_file_reports_the_same_numbers_and_survives_damage(self):
        old = self.path("d/old0.h5")
        os.makedirs(os.path.dirname(old), exist_ok=True)
        to_old_format(self.base, old)
        with h5py.File(old, "r") as f:
            self.assertIsInstance(f.attrs["backend"], str)  # variable-length, as 1.3 wrote
            self.assertIsNone(f["cases/0000/wall_start"].chunks)
        rc, out, err = report(old, "--format", "json")
        self.assertEqual(rc, 0, err)
        want = json.loads(self.refs[("--format", "json")][1])
        got = json.loads(out)
        for r in want + got:
            r.pop("file")
        self.assertEqual(got, want)
        with open(old, "rb") as f:
            data = f.read()
        rng = random.Random(SEED + 1)
        files = []
        for i in range(60):
            name, b = damage(data, rng, i)
            path = self.path(f"d/o{i:03d}.h5")
            with open(path, "wb") as f:
                f.write(b)
            files.append((name, path))
        self.run_all(files, expect_same=False)

    def test_an_old_file_whose_global_heap_object_is_zeroed_is_one_line_not_a_hang(self):
        old = self.path("d/oldz.h5")
        os.makedirs(os.path.dirname(old), exist_ok=True)
        to_old_format(self.base, old)
        with open(old, "rb") as f:
            data = bytearray(f.read())
        heap = data.find(b"GCOL\x01\x00\x00\x00")  # the first global heap collection: the root's strings
        self.assertGreater(heap, 0)
        obj = heap + 16  # its first object's header (index, references, size), after the collection's
        self.assertNotEqual(data[obj:obj + 2], b"\x00\x00")
        data[obj:obj + 16] = bytes(16)  # index 0 and size 0: HDF5 1.10's walk over the collection stands still
        with open(old, "wb") as f:
            f.write(data)
        for fmt in ((), ("--format", "json")):
            rc, out, err = report(old, *fmt)
            self.assertEqual((rc, out), (2, ""), err)
            self.assertEqual(err, f"gpuscale: error: {old}: damaged result file: global heap at byte {heap}: the "
                                  f"object at byte {obj} has size 0\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
