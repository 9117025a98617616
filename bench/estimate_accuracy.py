#!/usr/bin/env python3
"""How close is the time `gpuscale check` estimates to the time a run takes?

For each shipped config (configs/*.toml, or the ones named) that this
machine's backend can run, prints the estimate of `gpuscale check --ranks N`,
the wall time of `mpirun -np N gpuscale run` (start-up included), and their
ratio; beside them the host's 1-minute load average when check ran and
when the run ended, and what check estimates with the load taken as 0 (the test hook
GPUSCALE_TEST_LOADAVG=0) and its ratio. The estimate counts other work on a
busy host as staying for the whole run ("host busy: load 6.2 on 2 cores;
the estimate assumes it stays"), so on a loaded machine the two estimates
differ, and the load may change before the run ends. Configs the backend cannot run (backend = "cuda" on a
machine without a GPU) and those of which this job runs no case (every case
skipped on N ranks of one node) are listed as skipped.

A benchmark, not a test: it exits 0 whatever the ratios (non-zero only when a
command fails). No test checks an estimate's accuracy (the test machines are
loaded and noisy); this is where it is measured.

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


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def estimate(gpuscale, config, ranks, model=None, env=None):
    """(estimated seconds, None) or (None, why not) when check refuses the config."""
    p = subprocess.run([gpuscale, "check", config, "--ranks", str(ranks)] + (["--model", model] if model else []),
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    if re.search(r"^\S+: .*backend cuda \(backend \"cuda\" cannot run", p.stdout, re.M):
        return None, "needs the CUDA backend"
    m = re.search(r"^estimated time on .*?: about (.+?) \(", p.stdout, re.M | re.S)
    return seconds(m.group(1).replace("\n", " ").replace("  ", " ")), None


def run_time(gpuscale, config, ranks, out):
    """(wall seconds, None) or (None, why not) where no case of the config runs on this job."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")
    t0 = time.monotonic()
    p = subprocess.run(["mpirun", "-np", str(ranks), gpuscale, "run", config, "-o", out, "--force"],
                       capture_output=True, text=True, env=env)
    took = time.monotonic() - t0
    if p.returncode == 1 and "gpuscale: error: no case ran" in p.stderr:
        ran = re.search(r"^ran 0 of \d+ cases? \(.*\)$", p.stdout, re.M)
        return None, "no case runs on %d rank(s) of one node: %s" % (ranks, ran.group(0) if ran else "")
    if p.returncode != 0:
        sys.exit("%s: run failed (exit %d):\n%s" % (config, p.returncode, p.stderr[-2000:]))
    return took, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpuscale", default=os.path.join(SOURCE, "build", "src", "gpuscale"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--model", help="a fitted model for check --model")
    ap.add_argument("configs", nargs="*")
    a = ap.parse_args()
    configs = a.configs or sorted(glob.glob(os.path.join(SOURCE, "configs", "*.toml")))
    idle = dict(os.environ, GPUSCALE_TEST_LOADAVG="0")
    print("%-28s %12s %12s %8s %6s %6s %12s %8s" % ("config", "estimate s", "run s", "ratio", "load", "end",
                                                     "if idle s", "ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        for c in configs:
            name = os.path.basename(c)
            load = load1()
            est, why = estimate(a.gpuscale, c, a.ranks, a.model)
            if est is None:
                print("%-28s skipped: %s" % (name, why))
                continue
            quiet, _ = estimate(a.gpuscale, c, a.ranks, a.model, env=idle)
            took, why = run_time(a.gpuscale, c, a.ranks, os.path.join(tmp, "r.h5"))
            if took is None:
                print("%-28s skipped: %s" % (name, why))
                continue
            print("%-28s %12.1f %12.1f %8.2f %6.1f %6.1f %12.1f %8.2f" % (name, est, took, est / took, load, load1(),
                                                                         quiet, quiet / took), flush=True)


if __name__ == "__main__":
    main()
