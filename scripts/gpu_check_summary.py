#!/usr/bin/env python3
"""The summary of scripts/gpu-check.sh, and gpuscale beside PyTorch on the same work.

    gpu_check_summary.py WORK_DIR OUT_DIR           the check's summary: OUT_DIR/summary.txt and summary.json
    gpu_check_summary.py --ratios ANCHOR.json TORCH.json
                                                    gpuscale (report --format json of configs/torch-anchor.toml)
                                                    beside PyTorch (scripts/torch_anchor.py), figure by figure

WORK_DIR holds steps.tsv (one line a step: name, time box s, outcome, seconds, exit status, report JSON or -, the
step's note) and what the steps wrote. A step's figures: for a gpuscale run, its cases (ran, ok, each case's rate or
median) and, where h5py is there, how many cases hold telemetry; for the anchor, each figure's gpuscale / PyTorch.
Uses the standard library only (h5py where present)."""
import json
import os
import sys

# configs/torch-anchor.toml's cases -> scripts/torch_anchor.py's keys: (the key, "rate" or "time")
def anchor_key(row):
    p = row.get("params", {})
    name = row.get("name")
    if name == "anchor-gemm":
        return f"gemm_4096_{p.get('dtype')}_tflops", "rate"
    if name == "anchor-pinned":
        return f"{p.get('direction')}_pinned_1GiB_gbs", "rate"
    if name == "anchor-d2d":
        return "d2d_1GiB_gbs", "rate"
    if name == "anchor-matmul-100":
        return f"matmul_100_x20000_{'graph' if p.get('graph') in (True, 1, 'true') else 'eager'}_s", "time"
    if name == "anchor-elementwise":
        return "elementwise_1e8_fp32_gbs", "rate"
    return None, None


def gpuscale_value(row, kind, key):
    """The row's figure in the anchor's units: TFLOP/s, GB/s or seconds of one sample."""
    if kind == "time":
        return row.get("median_s")
    if key.startswith("gemm_"):
        return row["gflops"] / 1e3 if row.get("gflops") is not None else None
    return row.get("gbps")


def ratios(anchor_rows, torch_figures):
    """[(key, gpuscale, torch, ratio)]: ratio > 1 where gpuscale is faster (rates: g / t; times: t / g)."""
    out = []
    for row in anchor_rows:
        key, kind = anchor_key(row)
        if key is None or row.get("status") != "ok":
            continue
        g, t = gpuscale_value(row, kind, key), torch_figures.get(key)
        if g is None or t is None or g <= 0 or t <= 0:
            out.append((key, g, t, None))
            continue
        out.append((key, g, t, g / t if kind == "rate" else t / g))
    return out


def ratio_lines(rs):
    lines = ["gpuscale beside PyTorch, same GPU, same call (ratio > 1: gpuscale faster)"]
    for key, g, t, r in rs:
        gs = "-" if g is None else f"{g:.4g}"
        ts = "-" if t is None else f"{t:.4g}"
        lines.append(f"  {key:34s} gpuscale {gs:>10s}  PyTorch {ts:>10s}  ratio {'-' if r is None else f'{r:.2f}'}")
    return lines


def run_figures(report_json, h5_path):
    """A gpuscale run's figures: cases, how many ran ok, each case's headline figure, telemetry where readable."""
    with open(report_json) as f:
        rows = json.load(f)
    fig = {"cases": len(rows), "ok": sum(r.get("status") == "ok" for r in rows)}
    for r in rows:
        label = " ".join([r.get("name", "?")] + [f"{k}={v}" for k, v in sorted(r.get("params", {}).items())
                                                if k != "threads"] + [r.get("mode", "")])
        for k in ("gflops", "busbw_gbps", "gbps", "median_s"):
            if r.get(k) is not None:
                fig[label] = {k: r[k]}
                break
    try:
        import h5py
    except ImportError:
        fig["telemetry"] = "not checked (no h5py)"
        return fig
    with h5py.File(h5_path, "r") as f:
        cases = f["cases"]
        fig["cases with telemetry"] = sum("telemetry" in cases[k] for k in cases)
    return fig


def read_steps(work):
    steps = []
    with open(os.path.join(work, "steps.tsv")) as f:
        for line in f:
            name, box, outcome, secs, rc, report, note = line.rstrip("\n").split("\t")
            s = {"name": name, "box_s": int(box), "outcome": outcome, "seconds": int(secs), "exit": int(rc),
                 "note": note}
            if report != "-" and os.path.exists(report):
                try:
                    s["figures"] = run_figures(report, report[:-len(".json")] + ".h5")
                except (OSError, ValueError, KeyError) as e:
                    s["figures"] = {"error": f"unreadable: {e}"}
            steps.append(s)
    return steps


def summary(work, out):
    steps = read_steps(work)
    doc = {"gpu": open(os.path.join(work, "gpu.txt")).read().strip(), "steps": steps}
    lines = [f"GPU: {doc['gpu']}"]
    for s in steps:
        extra = ""
        fig = s.get("figures", {})
        if "cases" in fig:
            extra = f"  {fig['ok']} of {fig['cases']} case(s) ok"
            if isinstance(fig.get("cases with telemetry"), int):
                extra += f", {fig['cases with telemetry']} with telemetry"
        lines.append(f"{s['name']:28s} {s['outcome']:10s} {s['seconds']:4d} s of {s['box_s']:3d}{extra}"
                     f"{'  ' + s['note'] if s['note'] else ''}")
    anchor, torch = os.path.join(work, "anchor.json"), os.path.join(work, "torch.json")
    if os.path.exists(anchor) and os.path.exists(torch):
        with open(anchor) as a, open(torch) as t:
            rs = ratios(json.load(a), json.load(t))
        doc["gpuscale_over_pytorch"] = {k: {"gpuscale": g, "pytorch": t, "ratio": r} for k, g, t, r in rs}
        lines += [""] + ratio_lines(rs)
    total = sum(s["seconds"] for s in steps)
    failed = [s["name"] for s in steps if s["outcome"] in ("failed", "timed out")]
    not_run = [s["name"] for s in steps if s["outcome"] == "not run"]
    doc["total_s"], doc["failed"], doc["not_run"] = total, failed, not_run
    verdict = f"failed or timed out: {', '.join(failed)}" if failed else "none failed"
    if not_run:
        verdict += f"; not run: {', '.join(not_run)}"
    lines.append(f"total {total} s; {verdict}")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--ratios":
        with open(argv[2]) as a, open(argv[3]) as t:
            print("\n".join(ratio_lines(ratios(json.load(a), json.load(t)))))
        return 0
    if len(argv) == 3 and not argv[1].startswith("-"):
        return summary(argv[1], argv[2])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
