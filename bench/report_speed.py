#!/usr/bin/env python3
"""How fast is `gpuscale report` on a big result file, against a plain
h5py + numpy reader computing the same statistics from the same file?

Makes a real result file (`mpirun -np 2 gpuscale run configs/default.toml`:
6 cases x 2 ranks), grows it with h5py to REPS samples per rank and case
(default 10^6: 1.2e7 samples), stored as gpuscale stores a dataset that size
(chunks of 1 MiB, a Fletcher32 checksum each), then times, in the same run,
`gpuscale report BIG` (the table), `gpuscale report BIG --format json` and the h5py + numpy reader (each a
process of its own, median of --runs) and prints both times, their ratio and
the peak resident memory of each. A benchmark, not a test: exits 0 whatever
the ratio (non-zero only when something fails).

    python3 bench/report_speed.py [--gpuscale build/src/gpuscale] [--reps 1000000] [--runs 3] [--keep DIR]
"""
import argparse
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
from common import rewrite_digest  # noqa: E402  (the digest gpuscale writes, docs/results-format.md)
SAMPLES = ("device_time", "enqueue_time", "wall_start", "wall_end", "core_wait")  # [ranks][reps]; core_wait from 1.9
CHUNK_BYTES = 1 << 20  # as gpuscale's writer (src/io/hdf5_io.cpp)


def text(x):
    """h5py gives strings as bytes (fixed-length, schema 1.4 on) or str (variable-length, before)."""
    return x.decode() if isinstance(x, bytes) else str(x)


def make_small(gpuscale, mpiexec, out):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([mpiexec, "-n", "2", gpuscale, "run", os.path.join(SOURCE, "configs", "default.toml"),
                        "-o", out, "--force"], capture_output=True, text=True, env=env)  # --keep DIR again
    if p.returncode != 0:
        sys.exit(f"gpuscale run failed ({p.returncode}):\n{p.stdout}{p.stderr}")


def grow(small, big, reps):
    """Copies `small` to `big` with every case's samples repeated to `reps` per rank: the wall times of
    repetition k move k sweeps later, so serial turns and parallel makespans stay what they were. The new
    datasets are stored as the file's gpuscale would have: schema 1.4 on, chunks with a checksum each in
    the HDF5 1.8 format; before, contiguous."""
    shutil.copyfile(small, big)
    with h5py.File(small, "r") as f:
        schema = tuple(int(x) for x in text(f.attrs["schemaVersion"]).split("."))
    checksums = schema >= (1, 4)
    with h5py.File(big, "r+", libver=("v108", "v108") if checksums else None) as f:
        for g in f["cases"].values():
            if "wall_start" not in g:  # skipped: no samples
                continue
            ranks, have = g["wall_start"].shape
            idx = np.arange(reps) % have
            sweep = (g["wall_end"][()].max() - g["wall_start"][()].min()) * 1.01
            shift = (np.arange(reps) // have) * sweep
            for name in (n for n in SAMPLES if n in g):
                old = g[name]
                v = old[()][:, idx]
                if name.startswith("wall_"):
                    v = v + shift
                attrs = [(k, old.attrs[k], old.attrs.get_id(k).dtype) for k in old.attrs]
                del g[name]
                if checksums:
                    d = g.create_dataset(name, data=v, chunks=(1, min(reps, CHUNK_BYTES // 8)), fletcher32=True)
                else:
                    d = g.create_dataset(name, data=v)
                for k, val, dt in attrs:
                    d.attrs.create(k, val, dtype=dt)
                rewrite_digest(d)  # schema 1.7 on: the digest of the values it now holds
            g.attrs.modify("reps", np.int64(reps))
            g["parameters"].attrs.modify("reps", np.int64(reps))


def numpy_report(path):
    """The report's statistics with h5py + numpy: per case the median, min and p95 of the serial
    turn totals or parallel makespans, each rank's median duration, the device-time and enqueue medians."""
    rows = []
    with h5py.File(path, "r") as f:
        for name, g in f["cases"].items():
            if text(g.attrs["status"]) == "skipped":
                rows.append({"case": int(g.attrs["index"]) + 1, "status": "skipped"})
                continue
            start, end = g["wall_start"][()], g["wall_end"][()]
            device, enqueue = g["device_time"][()], g["enqueue_time"][()]
            ranks = start.shape[0]
            turn = g["turn"][()] if "turn" in g else np.arange(ranks)
            if text(g.attrs["mode"]) == "serial":
                sample = np.zeros(start.shape[1])
                for t in np.unique(turn):
                    sel = turn == t
                    sample += end[sel].max(axis=0) - start[sel].min(axis=0)
            else:
                sample = end.max(axis=0) - start.min(axis=0)
            rank_medians = np.median(end - start, axis=1)
            rows.append({"case": int(g.attrs["index"]) + 1, "status": text(g.attrs["status"]),
                         "median_s": float(np.median(sample)), "min_s": float(sample.min()),
                         "p95_s": float(np.percentile(sample, 95)),
                         # the slowest rank over the median of the other ranks (docs/metrics.md)
                         "slowest_ratio": float(rank_medians.max() /
                                                np.median(np.delete(rank_medians, rank_medians.argmax()))),
                         "device_median_s": float(np.median(device)),
                         "enqueue_median_s": float(np.median(enqueue))})
    return rows


def run_child(argv):
    """Runs argv to the end; returns (exit code, stdout, stderr, peak RSS in MiB) from its own rusage."""
    r, w = os.pipe()
    re_, we = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        os.dup2(we, 2)
        for fd in (r, w, re_, we):
            os.close(fd)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(w)
    os.close(we)
    chunks, errs = [], []
    sel = selectors.DefaultSelector()
    sel.register(r, selectors.EVENT_READ, chunks)
    sel.register(re_, selectors.EVENT_READ, errs)
    open_fds = 2
    while open_fds:
        for key, _ in sel.select():
            data = os.read(key.fd, 1 << 16)
            if data:
                key.data.append(data)
            else:
                sel.unregister(key.fd)
                os.close(key.fd)
                open_fds -= 1
    _, status, usage = os.wait4(pid, 0)
    return (os.waitstatus_to_exitcode(status), b"".join(chunks), b"".join(errs), usage.ru_maxrss / 1024,
            usage.ru_utime + usage.ru_stime)


def measure(commands, runs):
    """Runs each command `runs` times, interleaved (a busy machine slows both sides alike); per command the
    median wall time, the largest peak RSS (MiB), the last output and the median CPU time (user + system, all
    threads: gpuscale reads a case while a second thread computes the one before)."""
    times = [[] for _ in commands]
    cpus = [[] for _ in commands]
    rss = [0.0 for _ in commands]
    outs = [b"" for _ in commands]
    for _ in range(runs):
        for i, argv in enumerate(commands):
            t0 = time.perf_counter()
            rc, out, err, peak, cpu = run_child(argv)
            times[i].append(time.perf_counter() - t0)
            cpus[i].append(cpu)
            if rc != 0:
                sys.exit(f"{' '.join(argv)} failed ({rc}):\n{err.decode(errors='replace')}")
            rss[i] = max(rss[i], peak)
            outs[i] = out
    return [(statistics.median(t), r, o, statistics.median(c)) for t, r, o, c in zip(times, rss, outs, cpus)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuscale", default=os.path.join(SOURCE, "build", "src", "gpuscale"))
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--reps", type=int, default=1_000_000, help="samples per rank and case (default 10^6)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each reader; the median is quoted")
    ap.add_argument("--file", help="a result file to grow instead of making one (any schema)")
    ap.add_argument("--keep", help="leave the files in this directory")
    ap.add_argument("--numpy-reader", metavar="FILE", help=argparse.SUPPRESS)  # the h5py + numpy side
    a = ap.parse_args()
    if a.numpy_reader:
        json.dump(numpy_report(a.numpy_reader), sys.stdout)
        return 0

    work = a.keep or tempfile.mkdtemp(prefix="gpuscale-report-speed-")
    os.makedirs(work, exist_ok=True)
    try:
        small, big = os.path.join(work, "small.h5"), os.path.join(work, "big.h5")
        if a.file:
            shutil.copyfile(a.file, small)
        else:
            make_small(a.gpuscale, a.mpiexec, small)
        t0 = time.perf_counter()
        grow(small, big, a.reps)
        with h5py.File(big, "r") as f:
            cases = [g for g in f["cases"].values() if "wall_start" in g]
            samples = sum(g["wall_start"].size for g in cases)
            ranks = cases[0]["wall_start"].shape[0] if cases else 0
            schema = text(f.attrs["schemaVersion"])
        print(f"file: {big}, schema {schema}, {os.path.getsize(big) / 2**20:.0f} MiB, {len(cases)} cases x "
              f"{ranks} ranks x {a.reps} reps = {samples:.3g} samples (grown in {time.perf_counter() - t0:.1f} s)")

        # The table (the default view: no breakdown) and JSON (every number of every row, the breakdown too).
        (t_time, t_rss, _, t_cpu), (g_time, g_rss, g_out, g_cpu), (n_time, n_rss, n_out, n_cpu) = measure(
            [[a.gpuscale, "report", big],
             [a.gpuscale, "report", big, "--format", "json"],
             [sys.executable, os.path.abspath(__file__), "--numpy-reader", big]], a.runs)

        # The same numbers on both sides, or the comparison means nothing.
        ours = {r["case"]: r for r in json.loads(g_out)}
        agree = all(abs(ours[r["case"]][k] - r[k]) <= 1e-9 * abs(r[k])
                    for r in json.loads(n_out) if r["status"] != "skipped"
                    for k in ("median_s", "min_s", "p95_s", "slowest_ratio", "enqueue_median_s"))
        for name, t, cpu, rss in (("gpuscale report (table):      ", t_time, t_cpu, t_rss),
                                  ("gpuscale report --format json:", g_time, g_cpu, g_rss),
                                  ("h5py + numpy:                 ", n_time, n_cpu, n_rss)):
            print(f"{name} {t:.3f} s, CPU {cpu:.3f} s, peak RSS {rss:.0f} MiB (medians of {a.runs})")
        g_mb = max(g_rss, t_rss) * 1.048576  # MiB to MB
        print(f"report / h5py+numpy time: table {t_time / n_time:.2f} (target <= 0.5), json {g_time / n_time:.2f} "
              f"(it also computes each case's breakdown; target <= 1); report RSS "
              f"{'under' if g_mb < 300 else 'over'} 300 MB target: {g_mb:.0f} MB; "
              f"statistics {'agree' if agree else 'DIFFER'}")
        print(f"report / h5py+numpy CPU time: table {t_cpu / n_cpu:.2f}, json {g_cpu / n_cpu:.2f}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
