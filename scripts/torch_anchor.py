#!/usr/bin/env python3
"""The work of configs/torch-anchor.toml done by PyTorch on the same GPU, for gpuscale's figures to be set beside
(scripts/gpu-check.sh runs both in one call; scripts/gpu_check_summary.py --ratios prints gpuscale / PyTorch):

- cuBLAS gemm 4096 in bf16, fp16, tf32, fp32, fp64: 5 products a sample, TFLOP/s of the median sample;
- pinned host <-> device and device to device copies of 1 GiB: GB/s of the median copy;
- 20000 matmuls of 100x100 fp32, eager and replayed as a CUDA graph: seconds of the median run, synchronized;
- r += a*b over 10^8 fp32 values (addcmul_, one fused pass: 16 bytes moved per element): GB/s.

Times are CUDA events around the work on the current stream, medians of `reps` after warm-up, as gpuscale's device
times are. Writes the figures as JSON to OUT (one key per figure) and prints them.

    python3 scripts/torch_anchor.py OUT.json

Exit status: 0 written; 77 where PyTorch or a CUDA device is not there (nothing measured); 2 bad usage."""
import json
import statistics
import sys
import time


def event_time(torch, fn, warm, reps):
    """The median over `reps` of the seconds fn() takes on the GPU, after `warm` untimed calls."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def gemm(torch, res):
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32,
              "fp64": torch.float64}
    n = 4096
    for name, dt in dtypes.items():
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        a = torch.rand(n, n, device="cuda", dtype=dt)
        b = torch.rand(n, n, device="cuda", dtype=dt)
        c = torch.empty_like(a)
        t = event_time(torch, lambda: [torch.mm(a, b, out=c) for _ in range(5)], 3, 10)
        res[f"gemm_4096_{name}_tflops"] = 5 * 2 * n ** 3 / t / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False


def copies(torch, res):
    nbytes = 1 << 30
    n = nbytes // 4
    d, d2 = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    host = torch.ones(n, pin_memory=True)  # written: never-written memory would read the zero page
    res["h2d_pinned_1GiB_gbs"] = nbytes / event_time(torch, lambda: d.copy_(host, non_blocking=True), 2, 10) / 1e9
    res["d2h_pinned_1GiB_gbs"] = nbytes / event_time(torch, lambda: host.copy_(d, non_blocking=True), 2, 10) / 1e9
    res["d2d_1GiB_gbs"] = nbytes / event_time(torch, lambda: d2.copy_(d), 2, 10) / 1e9


def matmuls(torch, res):
    x = torch.rand(100, 100, device="cuda")
    y = torch.empty_like(x)

    def run():
        for _ in range(20000):
            torch.mm(x, x, out=y)
    res["matmul_100_x20000_eager_s"] = event_time(torch, run, 1, 5)
    graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(side):
        run()  # warm-up on a side stream before capture, as PyTorch asks
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            run()
    torch.cuda.synchronize()
    res["matmul_100_x20000_graph_s"] = event_time(torch, graph.replay, 1, 5)


def elementwise(torch, res):
    n = 100_000_000
    a, b = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    r = torch.zeros(n, device="cuda")
    res["elementwise_1e8_fp32_gbs"] = 16 * n / event_time(torch, lambda: r.addcmul_(a, b), 3, 10) / 1e9


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: torch_anchor.py OUT.json", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"torch_anchor.py: no PyTorch here ({e}): nothing measured")
        return 77
    if not torch.cuda.is_available():
        print("torch_anchor.py: PyTorch sees no CUDA device: nothing measured")
        return 77
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    t0 = time.perf_counter()
    for part in (gemm, copies, matmuls, elementwise):
        part(torch, res)
        print(f"{part.__name__} done ({time.perf_counter() - t0:.1f} s)", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)
    for k, v in res.items():
        print(k, v if isinstance(v, str) else f"{v:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
