#!/usr/bin/env python3
"""How near the emulated hosts of e2e.model_hosts come to their links: configs/model-transfers.toml (1, 4, 16 MiB)
run on 2, 3 and 4 emulated hosts (network namespaces, tests/e2e/hosts.py; every link limited with tc tbf), one rank
each, with the test's Open MPI settings (--mpi tuned) or Open MPI's defaults (--mpi defaults), and each case's op
time (mean over ranks of the median sample) over what the wire takes: the op's bytes on the busiest path (tuned: a
ring, nccl-tests' bus factor; defaults: the algorithm tuned's fixed rules pick) at the link's payload rate (TCP/IP
headers of the MTU taken off). 1.00 is the link's pace; more is time the link was not the bottleneck (before the test's eager
limit: a message's rendezvous answer queued behind data in tbf). Needs root, ip, unshare and tc; about a minute.

    python3 bench/testbed_wire.py [--gpuscale build/src/gpuscale] [--rate 400mbit] [--mpi tuned|defaults] [--keep DIR]

bench/README.md, "Model accuracy on rate-limited hosts", has what it printed."""
import argparse
import os
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import hosts  # noqa: E402
import test_model_hosts  # noqa: E402  (its MCA settings and rate parser)

RING = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n, "sendrecv": lambda n: 1.0}


def default_factor(op, n):
    """Bytes on the busiest path per op byte of what Open MPI 4.1's fixed rules pick at 1-16 MiB on 2-4 ranks
    (docs/model.md, "The algorithm MPI picks"): Rabenseifner, whose ranks beyond a power of two p fold (2 buffers
    more); the two-process allgather (half), Bruck and recursive doubling ((n-1)/n)."""
    if op == "allreduce":
        p = 1 << (n.bit_length() - 1)
        return 2 * (p - 1) / p + (2 if p != n else 0)
    if op == "allgather":
        return 0.5 if n == 2 else (n - 1) / n
    return 1.0


def factor(mpi, op, n):
    return RING[op](n) if mpi == "tuned" else default_factor(op, n)


def config(out):
    with open(os.path.join(HERE, "..", "configs", "model-transfers.toml")) as f:
        text = f.read()
    text = text.replace("bytes = [65536, 262144, 1048576, 4194304, 16777216]", "bytes = [1048576, 4194304, 16777216]")
    text = text.replace('\nbackend = "auto"\n', '\nbackend = "cpu"\n').replace('\ncomm = "auto"\n', '\ncomm = "mpi"\n')
    path = os.path.join(out, "model-transfers.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def wire_ratios(path, payload_rate, mpi="tuned"):
    """[(op, bytes, measured / wire)] of a result file."""
    rows = []
    with h5py.File(path, "r") as f:
        for k in sorted(f["cases"]):
            c = f["cases"][k]
            p = c["parameters"].attrs
            op, nbytes = p["op"].decode(), int(p["bytes"])
            n = c["device_time"].shape[0]
            t = float(np.mean(np.median(c["device_time"][()], axis=1)))
            rows.append((op, nbytes, t / (nbytes * factor(mpi, op, n) / payload_rate)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuscale", default=os.path.join(HERE, "..", "build", "src", "gpuscale"))
    ap.add_argument("--rate", default="400mbit", help="each link's rate, tc's units (default 400mbit)")
    ap.add_argument("--mpi", choices=sorted(test_model_hosts.MCA), default="tuned",
                    help="Open MPI's settings: tuned to move nccl-tests' bus bytes (default), or its defaults")
    ap.add_argument("--keep", help="write the result files here (default: a temporary folder, removed)")
    a = ap.parse_args()
    gpuscale = os.path.realpath(a.gpuscale)
    rate = test_model_hosts.payload_rate(a.rate)
    why = hosts.unavailable(tc=True)
    if why:
        sys.exit(f"testbed_wire.py: cannot make the hosts here: {why}")
    with tempfile.TemporaryDirectory(prefix="gpuscale-wire-") as tmp:
        out = a.keep or tmp
        os.makedirs(out, exist_ok=True)
        cfg = config(out)
        with hosts.Hosts(4, 1, rate=a.rate) as h:
            mtu = h.mtu or 1500
            payload = rate * (mtu - 52) / mtu  # IP and TCP headers (with timestamps) of each frame
            print(f"links {a.rate}, MTU {mtu}: payload {payload / 1e6:.1f} MB/s; load {os.getloadavg()[0]:.1f}")
            for nodes in (2, 3, 4):
                path = os.path.join(out, f"n{nodes}.h5")
                p = h.mpirun(nodes, [gpuscale, "run", cfg, "-o", path], extra=test_model_hosts.MCA[a.mpi], timeout=300,
                             cwd=out, nodes=nodes, slots=1)
                if p.returncode != 0:
                    sys.exit(f"testbed_wire.py: the run on {nodes} hosts failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                cells = "  ".join(f"{op} {b >> 20} MiB {r:.2f}" for op, b, r in wire_ratios(path, payload, a.mpi))
                print(f"{nodes} hosts: {cells}  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
