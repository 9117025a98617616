// Benchmark (not a test): the tiles our register-blocked and cp.async
// tensor-core kernels are built with (kernels/gemm_kernels.hpp: BlockedTile,
// MmaTile; tile 0 of each is the one impl = "blocked" and "mma_async" run),
// each against cuBLAS on the same operands, square at --size: blocked in fp32
// (and fp64), mma_async in bf16 and fp16. The median of --reps timed launches
// of each (cudaEvent), in --rounds interleaved rounds after a warm-up, as
// TFLOP/s and as a share of cuBLAS's. Every element of each tile's C is held
// to cuBLAS's, as gpu.cuda_backend does for the shipped kernels. It is how a
// tile is chosen on a GPU (kernels/README.md): ship the fastest that agrees.
// Exits 77 where no CUDA device is usable, 1 when a launch fails or a result
// disagrees.
// Run: build/bench/gemm_tiles [--size 4096] [--dtypes fp32,bf16,fp16] [--reps 20] [--rounds 3]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "common/gemm_agreement.hpp"
#include "core/stats.hpp"
#include "device/backend.hpp"
#include "device/cuda_status.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"
#include "gemm_kernels.hpp"
#include "workloads/gemm_operands.hpp"

using namespace gpuscale;

namespace {

struct Candidate {
  std::string name;
  int tile;  // -1: cuBLAS
  std::vector<double> seconds;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool tensor_cores(DType t) { return t == DType::fp16 || t == DType::bf16; }

int tile_count(DType t) {
  return tensor_cores(t) ? kernels::gemm_mma_tile_count() : kernels::gemm_blocked_tile_count();
}

std::string tile_name(DType t, int i) {
  char s[80];
  if (tensor_cores(t)) {
    const kernels::MmaTile m = kernels::gemm_mma_tile(i);
    std::snprintf(s, sizeof s, "mma_async %dx%dx%d, warps %dx%d, %d stages", m.bm, m.bn, m.bk, m.warps_m, m.warps_n,
                  m.stages);
  } else {
    const kernels::BlockedTile b = kernels::gemm_blocked_tile(i);
    std::snprintf(s, sizeof s, "blocked %dx%dx%d", b.bm, b.bn, b.bk);
  }
  return std::string(s) + (i == 0 ? " (shipped)" : "");
}

int run(int argc, char** argv) {
  int size = 4096, reps = 20, rounds = 3;
  std::string dtypes = "fp32,bf16,fp16";
  CLI::App app{"Each tile of our blocked and mma_async gemm kernels against cuBLAS, every element checked"};
  app.add_option("--size", size, "m = n = k; a multiple of 8")->check(CLI::Range(8, 1 << 15));
  app.add_option("--dtypes", dtypes, "comma-separated: fp32, fp64 (blocked), bf16, fp16 (mma_async)");
  app.add_option("--reps", reps, "timed launches per candidate and round")->check(CLI::Range(1, 10000));
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  if (size % 8 != 0) {
    std::fprintf(stderr, "gemm_tiles: --size must be a multiple of 8 (the tiles load rows 16 bytes at a time)\n");
    return 2;
  }
  std::vector<DType> types;
  for (const std::string& name : split_commas(dtypes)) {
    DType t{};
    try {
      t = parse_dtype(name);
    } catch (const std::exception&) {
      t = DType::tf32;
    }
    if (t == DType::tf32) {
      std::fprintf(stderr, "gemm_tiles: no tiles for '%s': blocked takes fp32 and fp64, mma_async bf16 and fp16\n",
                   name.c_str());
      return 2;
    }
    types.push_back(t);
  }
  const CudaStatus status = probe_cuda();
  if (!status.usable) {
    std::printf("skipped: %s\n", status.reason.c_str());
    return 77;
  }
  auto dev = make_device(choose_backend("cuda", status), 0);
  std::printf("device: %s; %d x %d x %d, %d round(s) of %d launch(es) each\n", dev->info().name.c_str(), size, size,
              size, rounds, reps);
  const GemmShape shape{size, size, size};
  int failures = 0;

  for (const DType t : types) {
    const std::string name = dtype_name(t);
    // Seeded inputs exact in every dtype, and cuBLAS's C as the reference, as gpu.cuda_backend has them.
    GemmOperands ops;
    ops.setup(*dev, GemmProblem{GemmImpl::vendor, t, shape}, 42);
    ops.multiply(*dev);
    const std::vector<double> want = testing::download_c(*dev, ops);
    DeviceBuffer c = dev->alloc(ops.c().bytes());

    std::vector<Candidate> cands{{"cuBLAS", -1, {}}};
    for (int i = 0; i < tile_count(t); ++i) cands.push_back({tile_name(t, i), i, {}});
    const auto launch = [&](const Candidate& cand) {
      if (cand.tile < 0) {
        ops.multiply_into(*dev, c);
        return 0;
      }
      const auto launch_tile = tensor_cores(t) ? kernels::launch_gemm_mma_tile : kernels::launch_gemm_blocked_tile;
      return launch_tile(cand.tile, t, size, size, size, ops.a().data(), ops.b().data(), c.data(),
                         dev->native_stream());
    };
    for (auto& cand : cands) {  // each result checked once, element by element; the launch warms up too
      dev->poison(c.data(), c.bytes());  // NaN: an element the kernel leaves unwritten disagrees
      if (const int err = launch(cand); err != 0) {
        std::printf("FAIL %s %s: launch error %d\n", name.c_str(), cand.name.c_str(), err);
        ++failures;
        cand.tile = -2;
        continue;
      }
      dev->synchronize();
      const testing::Agreement r = testing::agree(ops, testing::download(*dev, c, ops.c_count(), t), want);
      if (r.wrong) {
        std::printf("FAIL %s %s: %lld element(s) disagree with cuBLAS (first: row %lld, column %lld)\n", name.c_str(),
                    cand.name.c_str(), static_cast<long long>(r.wrong), static_cast<long long>(r.first_row),
                    static_cast<long long>(r.first_column));
        ++failures;
        cand.tile = -2;
      }
    }
    auto e0 = dev->create_event(), e1 = dev->create_event();
    for (int r = 0; r < rounds; ++r) {
      for (auto& cand : cands) {
        if (cand.tile == -2) continue;
        int err = 0;
        for (int i = 0; i < 3; ++i) err |= launch(cand);  // warm-up after the other candidates ran
        for (int i = 0; i < reps; ++i) {
          e0->record();
          err |= launch(cand);
          e1->record();
          dev->synchronize();
          cand.seconds.push_back(dev->elapsed_s(*e0, *e1));
        }
        if (err != 0) {
          std::printf("FAIL %s %s: launch error %d while timed\n", name.c_str(), cand.name.c_str(), err);
          ++failures;
          cand.tile = -2;
        }
      }
    }
    std::printf("\n%-5s %-50s %10s %8s %9s\n", name.c_str(), "tile", "median", "TFLOP/s", "of cuBLAS");
    double vendor = 0;
    for (auto& cand : cands) {
      if (cand.tile == -2) {
        std::printf("      %-50s %10s\n", cand.name.c_str(), "failed");
        continue;
      }
      const double m = median(cand.seconds), tflops = ops.problem().flops() / m / 1e12;
      if (cand.tile == -1) vendor = tflops;
      std::printf("      %-50s %8.1f us %8.1f %9.3f\n", cand.name.c_str(), m * 1e6, tflops, tflops / vendor);
    }
  }
  std::printf("\n%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a CUDA or cuBLAS error, named by the device layer
    std::fprintf(stderr, "gemm_tiles: %s\n", e.what());
    return 1;
  }
}
