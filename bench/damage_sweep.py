#!/usr/bin/env python3
"""Whether the HDF5 library, reading a damaged result file, ever crashes or loops: COUNT seeded damages (bytes
flipped, runs zeroed or randomized, truncations: tests/e2e/test_damaged.py's) of a real 2-rank file, each read by
`gpuscale report --format json` and by gpuscale_data.load (in a child interpreter that reads many files: one that
dies names the file). Prints what each reader did; exit 1 where either crashed, hung or raised anything other than
its one-line refusal. Nothing in the readers guards against a crash or a loop (docs/results-format.md, "Reading"):
this is what says none is needed.

    python3 bench/damage_sweep.py [--gpuscale build/src/gpuscale] [--count 1000] [--seed 1]"""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
os.environ.setdefault("GPUSCALE_SOURCE_DIR", SOURCE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
HANG_S = 60

# Loads each file named after the first argument (the tools' directory); a JSON line per file.
LOAD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import gpuscale_data
for path in sys.argv[2:]:
    try:
        gpuscale_data.load(path).metrics()
        out = "ok"
    except gpuscale_data.ResultError:
        out = "refused"
    except BaseException as e:
        out = "raised " + type(e).__name__
    print(json.dumps(out), flush=True)
"""


def report(gpuscale, path):
    try:
        p = subprocess.run([gpuscale, "report", path, "--format", "json"], capture_output=True, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        return "hung"
    return {0: "read", 2: "refused"}.get(p.returncode, f"exit {p.returncode}")


def load_all(paths):
    """load's outcome per path, a child interpreter at a time; one that dies (or hangs) on a file names it."""
    out, i = [], 0
    while i < len(paths):
        try:
            p = subprocess.run([sys.executable, "-c", LOAD, os.path.join(SOURCE, "tools"), *paths[i:]],
                               capture_output=True, text=True, timeout=HANG_S * (len(paths) - i))
            lines, rc = p.stdout.splitlines(), p.returncode
        except subprocess.TimeoutExpired as e:
            lines, rc = (e.stdout or b"").decode().splitlines(), "hung"
        out += [json.loads(line) for line in lines]
        i += len(lines)
        if rc != 0 and i < len(paths):
            out.append("hung" if rc == "hung" else f"died ({rc})")
            i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuscale", default=os.path.join(SOURCE, "build", "src", "gpuscale"))
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.environ["GPUSCALE_BIN"] = os.path.abspath(args.gpuscale)
    from common import mpirun
    from test_damaged import CONFIG, damage
    with tempfile.TemporaryDirectory() as d:
        base, cfg = os.path.join(d, "base.h5"), os.path.join(d, "run.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        p = mpirun(2, "run", cfg, "-o", base)
        if p.returncode != 0:
            sys.exit(f"damage_sweep: the run that makes the file failed: {p.stderr[-2000:]}")
        with open(base, "rb") as f:
            data = f.read()
        paths, names = [], []
        for i in range(args.count):
            name, b = damage(data, random.Random(args.seed * 1_000_003 + i), i)
            paths.append(os.path.join(d, f"{i:05d}.h5"))
            names.append(name)
            with open(paths[-1], "wb") as f:
                f.write(b)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            by_report = list(pool.map(lambda x: report(args.gpuscale, x), paths))
        by_load = load_all(paths)
    print(f"{args.count} damaged files (seed {args.seed}, {len(data)} bytes each before damage)")
    print("report:", dict(collections.Counter(by_report)))
    print("load:  ", dict(collections.Counter(by_load)))
    bad = [(n, r, l) for n, r, l in zip(names, by_report, by_load)
           if r not in ("read", "refused") or l not in ("ok", "refused")]
    for n, r, l in bad[:20]:
        print(f"  {n}: report {r}, load {l}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
