#!/usr/bin/env python3
"""How close is the time `gpuscale check` estimates to the time a run takes?

For each shipped config (configs/*.toml, or the ones named) that this
machine's backend can run, prints the estimate of `gpuscale check --ranks N`
and the wall time of `mpirun -np N gpuscale run` (start-up included), and
their ratio. Configs the backend cannot run (backend = "cuda" on a machine
without a GPU) are listed as skipped. A benchmark, not a test: exits 0
whatever the ratios (non-zero only when a command fails); tests/e2e/test_estimate.py
checks the factor of 2 on the quicker configs.

    python3 bench/estimate_accuracy.py [--gpuscale build/src/gpuscale] [--ranks 2] [--model M] [CONFIG ...]

--model M: `check --model M` (the sample times of the cases the fitted model covers come from it).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def seconds(text):
    """format_duration's text back to seconds: "8.5 s", "42 s", "3 min 20 s", "2 h 05 min"."""
    m = re.fullmatch(r"(?:(\d+) h )?(?:(\d+) min)? ?(?:([\d.]+) s)?", text.strip())
    if not m or not any(m.groups()):
        raise ValueError("not a duration: %r" % text)
    h, mins, s = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(s or 0)


def estimate(gpuscale, config, ranks, model=None):
    """(estimated seconds, None) or (None, why not) when check refuses the config."""
    p = subprocess.run([gpuscale, "check", config, "--ranks", str(ranks)] + (["--model", model] if model else []),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    if re.search(r"^\S+: .*backend cuda \(backend \"cuda\" cannot run", p.stdout, re.M):
        return None, "needs the CUDA backend"
    m = re.search(r"^estimated time on .*?: about (.+?) \(", p.stdout, re.M | re.S)
    return seconds(m.group(1).replace("\n", " ").replace("  ", " ")), None


def run_time(gpuscale, config, ranks, out):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")
    t0 = time.monotonic()
    p = subprocess.run(["mpirun", "-np", str(ranks), gpuscale, "run", config, "-o", out, "--force"],
                       capture_output=True, text=True, env=env)
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s: run failed (exit %d):\n%s" % (config, p.returncode, p.stderr[-2000:]))
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpuscale", default=os.path.join(SOURCE, "build", "src", "gpuscale"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--model", help="a fitted model for check --model")
    ap.add_argument("configs", nargs="*")
    a = ap.parse_args()
    configs = a.configs or sorted(glob.glob(os.path.join(SOURCE, "configs", "*.toml")))
    print("%-28s %12s %12s %8s" % ("config", "estimate s", "run s", "ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        for c in configs:
            name = os.path.basename(c)
            est, why = estimate(a.gpuscale, c, a.ranks, a.model)
            if est is None:
                print("%-28s skipped: %s" % (name, why))
                continue
            took = run_time(a.gpuscale, c, a.ranks, os.path.join(tmp, "r.h5"))
            print("%-28s %12.1f %12.1f %8.2f" % (name, est, took, est / took), flush=True)


if __name__ == "__main__":
    main()
