#!/usr/bin/env python3
"""How close does the cost model come on this machine? Runs CONFIG on
--fit-ranks ranks, fits a model to that file (`gpuscale model`), runs CONFIG
on --ranks ranks, and prints `gpuscale predict --against` the second run:
per case the predicted and measured time (a transfer's op time, else the
median), measured / predicted and whether it fell inside the predicted 95%
interval, and for parallel cases with a serial twin the
predicted and measured speedup and their ratio; then `check --model`'s
estimate of the second run against its wall time (start-up included).
A benchmark, not a test: exits 0 whatever the errors (non-zero only when a
command fails).

    python3 bench/model_accuracy.py [--gpuscale build/src/gpuscale] [--fit-ranks 1] [--ranks 2] [--include-noisy]
                                    [CONFIG]

--include-noisy fits the cases a busy host made doubtful too (`gpuscale model` leaves them out, and fails
where nothing is left).

CONFIG defaults to a gemm of 256, 512 and 1024 (fp64, 1 thread per rank), serial and parallel.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from estimate_accuracy import estimate  # noqa: E402

GEMM = """[defaults]
backend = "cpu"
warmup = 2
reps = 15
threads = 1
[[experiment]]
name = "gemm"
workload = "gemm"
dtype = "fp64"
size = [256, 512, 1024]
modes = ["serial", "parallel"]
"""

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")


def must(args):
    p = subprocess.run(args, capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        sys.exit("%s failed (exit %d):\n%s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p


def run(gpuscale, config, ranks, out):
    t0 = time.monotonic()
    must(["mpirun", "-np", str(ranks), gpuscale, "run", config, "-o", out, "--force"])
    return time.monotonic() - t0


def label(c):
    keep = {k: v for k, v in c["params"].items() if k not in ("threads", "impl", "ops", "scope", "iters", "dtype",
                                                                "inplace")}
    return "%s %s [%s]" % (c["experiment"], " ".join("%s=%s" % kv for kv in keep.items()), c["mode"])


def print_cases(cases):
    print("%-44s %12s %12s %7s %7s" % ("case", "predicted s", "measured s", "m/p", "in 95%"))
    for c in cases:
        if c["status"] != "predicted" or "measured_over_predicted" not in c:
            print("%-44s %s" % (label(c), c.get("reason", "not measured")))
            continue
        p = c.get("predicted_op_time_s", c["predicted_median_s"])
        m = c.get("measured_op_time_s", c.get("measured_median_s"))
        inside = {True: "yes", False: "no"}.get(c.get("inside_interval"), "-")
        print("%-44s %12.4g %12.4g %6.3gx %7s" % (label(c), p, m, c["measured_over_predicted"], inside))
    print("\n%-44s %10s %10s %7s" % ("speedup (parallel over serial)", "predicted", "measured", "ratio"))
    for c in cases:
        if "predicted_speedup" in c and "measured_speedup" in c:
            print("%-44s %10.3f %10.3f %7.3f" % (label(c), c["predicted_speedup"], c["measured_speedup"],
                                                 c["predicted_speedup"] / c["measured_speedup"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpuscale", default=os.path.join(SOURCE, "build", "src", "gpuscale"))
    ap.add_argument("--fit-ranks", type=int, default=1)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--include-noisy", action="store_true")
    ap.add_argument("config", nargs="?")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = a.config or os.path.join(tmp, "gemm.toml")
        if not a.config:
            with open(config, "w") as f:
                f.write(GEMM)
        fit, target, model = (os.path.join(tmp, n) for n in ("fit.h5", "target.h5", "model.json"))
        run(a.gpuscale, config, a.fit_ranks, fit)
        must([a.gpuscale, "model", fit, "-o", model] + (["--include-noisy"] if a.include_noisy else []))
        took = run(a.gpuscale, config, a.ranks, target)
        out = json.loads(must([a.gpuscale, "predict", model, "--against", target, "--format", "json"]).stdout)
        print("fitted on %d rank(s), predicted and measured on %d\n" % (a.fit_ranks, a.ranks))
        print_cases(out["cases"])
        t = out.get("total")
        if t:
            print("\n%d of %d measured values inside the 95%% interval (%d measured)" %
                  (t["inside_interval"], t["with_interval"], t["cases"]))
        est, why = estimate(a.gpuscale, config, a.ranks, model)
        print("\ncheck --model: estimate %s, run %.1f s (start-up included), ratio %s" %
              ("%.1f s" % est if est is not None else why, took, "%.2f" % (est / took) if est else "-"))


if __name__ == "__main__":
    main()
