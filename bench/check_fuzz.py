#!/usr/bin/env python3
"""How long `gpuscale check` takes on configs a fuzzer makes: N random
configs (a random workload per experiment, random keys of it with values
from small to the largest its schema takes, lists of a few, [defaults] keys
too), each checked with a wall-clock limit; prints the slowest and how many
went over the bound (20 s: issue 49's), and the exit codes seen. Run it with
a busy loop pinned to each core to see it under load:

    python3 bench/check_fuzz.py [--gpuscale build/src/gpuscale] [--count 300] [--seed 1] [--bound 20]

A config is kept (--keep DIR) where it went over the bound, to be run again."""
import argparse
import collections
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SIZES = [64, 256, 1000, 2, 4096, 1, 16384, 65536, 1 << 20, 2147483647]
BYTES = [8, 4096, 65536, 1 << 20, 1 << 24, 1, 1 << 30, 1 << 34, 1 << 40]
COUNTS = [1, 2, 3, 10, 100, 1000, 100000, 2147483647]
KEYS = {
    "gemm": {"size": SIZES, "m": SIZES, "n": SIZES, "k": SIZES, "dtype": ["fp32", "fp64", "fp16", "bf16", "tf32"],
             "impl": ["vendor", "naive", "tiled", "blocked", "mma"], "ops": COUNTS, "graph": [True, False]},
    "copy": {"bytes": BYTES, "direction": ["h2d", "d2h", "d2d"], "host": ["pinned", "pageable"], "ops": COUNTS},
    "async": {"size": SIZES, "dtype": ["fp32", "fp64"], "ops": COUNTS, "sync": ["end", "each"],
              "log_norm": ["none", "host", "device"]},
    "collective": {"op": ["allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv",
                          "pairs"], "dtype": ["fp32", "fp64", "fp16"], "bytes": BYTES, "inplace": [True, False],
                   "iters": COUNTS, "scope": ["world", "intra-node", "inter-node", "node-pairs"]},
    "elementwise": {"elements": BYTES, "dtype": ["fp32", "fp64"], "ops": COUNTS},
    "pipeline": {"size": SIZES, "dtype": ["fp32", "fp64"], "ops": COUNTS, "overlap": [True, False],
                 "host": ["pinned", "pageable"]},
    "distributed_gemm": {"size": SIZES, "dtype": ["fp32", "fp64"], "group_size": [0, 1, 2, 3, 4, 64],
                         "overlap": [True, False]},
    "dp_step": {"hidden": SIZES, "batch": SIZES, "layers": COUNTS, "dtype": ["fp32", "fp64"],
                "bucket_bytes": BYTES, "overlap": [True, False], "scope": ["world", "intra-node"]},
}
DEFAULTS = {"reps": [1, 2, 10, 1000, 100000], "warmup": [0, 1, 100], "warmup_s": [0, 0.1, 10, 3600],
            "threads": [1, 2, 64], "budget_s": [0, 1, 60, 86400]}


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v + '"'
    return repr(v)


def pick(rng, choices):
    """Mostly one of the first five (sizes a user gives), now and then any, to the largest the schema takes."""
    return rng.choice(choices[:5]) if rng.random() < 0.8 else rng.choice(choices)


def value(rng, choices):
    if rng.random() < 0.25:  # a list of a few
        return "[" + ", ".join(toml_value(pick(rng, choices)) for _ in range(rng.randint(1, 4))) + "]"
    return toml_value(pick(rng, choices))


def config(rng):
    lines = []
    if rng.random() < 0.5:
        lines.append("[defaults]")
        for k in rng.sample(sorted(DEFAULTS), rng.randint(1, 3)):
            lines.append(f"{k} = {value(rng, DEFAULTS[k])}")
    for i in range(rng.randint(1, 4)):
        workload = rng.choice(sorted(KEYS))
        lines += ["", "[[experiment]]", f'name = "e{i}"', f'workload = "{workload}"']
        keys = KEYS[workload]
        for k in rng.sample(sorted(keys), rng.randint(0, len(keys))):
            lines.append(f"{k} = {value(rng, keys[k])}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuscale", default=os.path.join(HERE, "..", "build", "src", "gpuscale"))
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bound", type=float, default=20.0, help="seconds a check may take (default 20)")
    ap.add_argument("--keep", help="write the configs that went over the bound here")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    times, codes, over = [], collections.Counter(), []
    with tempfile.TemporaryDirectory(prefix="gpuscale-fuzz-") as tmp:
        for i in range(a.count):
            path = os.path.join(tmp, f"f{i}.toml")
            text = config(rng)
            with open(path, "w") as f:
                f.write(text)
            t0 = time.monotonic()
            try:
                p = subprocess.run([a.gpuscale, "check", path], capture_output=True, text=True, timeout=3 * a.bound)
                code = p.returncode
            except subprocess.TimeoutExpired:
                code = "killed"
            s = time.monotonic() - t0
            times.append((s, i, text))
            codes[code] += 1
            if s > a.bound:
                over.append((s, i, text))
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    with open(os.path.join(a.keep, f"f{i}.toml"), "w") as f:
                        f.write(text)
            if (i + 1) % 50 == 0:
                print(f"{i + 1} of {a.count}: slowest so far {max(times)[0]:.1f} s", file=sys.stderr, flush=True)
    times.sort()
    median = times[len(times) // 2][0]
    print(f"{a.count} configs (seed {a.seed}): median {median:.2f} s, slowest {times[-1][0]:.1f} s (config "
          f"{times[-1][1]}), {len(over)} over {a.bound:.0f} s; exit codes {dict(codes)}; load "
          f"{os.getloadavg()[0]:.1f}")
    for s, i, text in times[-3:][::-1]:  # the slowest three, over the bound or not
        print(f"--- config {i}: {s:.1f} s\n{text}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
