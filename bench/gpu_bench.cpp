// Benchmark (not a test): does the harness cost anything on a GPU? For each
// configuration, the harness's gemm or copy case (Runner on a CudaDevice,
// serial mode, one rank) against a bare loop of the same cuBLAS calls or
// copies on a stream of its own in the same process: interleaved rounds
// (bare, harness, bare, ...), medians of cudaEvent time, and the ratio
// harness / bare throughput (target >= 0.98). Exits 77 where no CUDA device
// is usable, 1 when a call fails or a result does not verify.
// Run: mpirun -np 1 build/bench/gpu_bench [--size 4096] [--dtypes bf16,fp16,tf32,fp32] [--copies h2d,d2h,d2d]
//      [--bytes 268435456] [--pageable h2d] [--pageable-bytes 67108864] [--ops 4] [--warmup-s 0.25]
//      [--reps 10] [--rounds 3]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cuda_handles.hpp"
#include "device/cuda_device.hpp"
#include "device/cuda_status.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"
#include "runner/runner.hpp"
#include "workloads/gemm_operands.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

constexpr double kTarget = 0.98;
// The harness seeds a case with seed + 1000003 * rank + case index: rank 0,
// case 0. The bare side uses the same seed, so both move the same bytes and
// multiply the same values (a GPU's power draw, and so its clock, depends on them).
constexpr std::uint64_t kSeed = 42;

// The harness's warm-up rule (runner.cpp), which the bare side follows: untimed
// samples until there have been `warmup` of them and `warmup_s` seconds
// (clocks leave idle, kernels load). warmup_s is half the harness's default
// of 0.5 s: warm-up is a third of the bench's time, and 0.25 s should do for
// a GPU that is idle only during the setup between rounds.
struct Settings {
  int size = 4096, ops = 4, warmup = 2, reps = 10, rounds = 3;
  double warmup_s = 0.25;
};

using namespace gpuscale::cuda;  // owning handles and the workspace size, as CudaDevice has them

// Memory as the CudaDevice allocates it (device.hpp's Buffer frees it).
Buffer device_memory(std::size_t bytes) {
  void* p = nullptr;
  GPUSCALE_CUDA(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return Buffer(p, bytes, [](void* q) noexcept { cudaFree(q); });
}

Buffer host_memory(std::size_t bytes, bool pinned) {
  if (pinned) {
    void* p = nullptr;
    GPUSCALE_CUDA(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
    return Buffer(p, bytes, [](void* q) noexcept { cudaFreeHost(q); });
  }
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return Buffer(p, bytes, [](void* q) noexcept { std::free(q); });
}

// The bare side's stream (non-blocking), cuBLAS handle on it with a workspace
// of its own, and timing events: set up as the CudaDevice sets up its own,
// and kept for the whole bench as the device keeps its own.
class BareGpu {
 public:
  BareGpu() {
    cudaStream_t s = nullptr;
    GPUSCALE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    stream_.reset(s);
    cublasHandle_t h = nullptr;
    GPUSCALE_CUBLAS(cublasCreate(&h));
    blas_.reset(h);
    GPUSCALE_CUBLAS(cublasSetStream(h, s));
    workspace_ = device_memory(kCublasWorkspaceBytes);  // after cublasSetStream, which resets the workspace
    GPUSCALE_CUBLAS(cublasSetWorkspace(h, workspace_.data(), workspace_.bytes()));
    cudaEvent_t e = nullptr;
    GPUSCALE_CUDA(cudaEventCreate(&e));
    start_.reset(e);
    GPUSCALE_CUDA(cudaEventCreate(&e));
    stop_.reset(e);
  }

  cudaStream_t stream() const { return stream_.get(); }
  cublasHandle_t blas() const { return blas_.get(); }

  // Device seconds of each of s.reps samples, after the warm-up the harness
  // runs (see Settings); `enqueue` enqueues one sample's work on stream().
  std::vector<double> time(const Settings& s, const std::function<void()>& enqueue) {
    const double t0 = clock_now();
    for (int done = 0; done < s.warmup || clock_now() - t0 < s.warmup_s; ++done) sample(enqueue);
    std::vector<double> t(s.reps);
    for (auto& x : t) x = sample(enqueue);
    return t;
  }

  // Blocking copies in the stream's order, as Device::copy_to_device/host.
  void copy(void* dst, const void* src, std::size_t bytes) {
    GPUSCALE_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()));
    GPUSCALE_CUDA(cudaStreamSynchronize(stream()));
  }

 private:
  double sample(const std::function<void()>& enqueue) {
    GPUSCALE_CUDA(cudaEventRecord(start_.get(), stream()));
    enqueue();
    GPUSCALE_CUDA(cudaEventRecord(stop_.get(), stream()));
    GPUSCALE_CUDA(cudaStreamSynchronize(stream()));
    float ms = 0.0f;
    GPUSCALE_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
    return ms * 1e-3;
  }

  StreamPtr stream_;
  Buffer workspace_;  // declared before the handle, so it outlives it
  CublasPtr blas_;
  EventPtr start_, stop_;
};

// ---- gemm: row-major C = A * B, m = n = k = size, `ops` multiplications per sample.

// The harness's inputs (gemm_operands.cpp): multiples of 1/256 in [-1, 1),
// A then B from one generator; as values, and in the dtype's storage.
// Generated once per dtype: unlike the device memory, their generation is
// host work that no sample sees, and it takes seconds.
struct GemmInputs {
  DType t = DType::fp32;
  std::vector<double> a, b;
  std::vector<unsigned char> a_bytes, b_bytes;
};

std::vector<double> random_matrix(std::size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-256, 255);
  std::vector<double> v(count);
  for (auto& x : v) x = d(rng) / 256.0;
  return v;
}

std::vector<unsigned char> encoded(const std::vector<double>& v, DType t) {
  std::vector<unsigned char> bytes(v.size() * dtype_size(t));
  encode(v.data(), v.size(), t, bytes.data());
  return bytes;
}

GemmInputs gemm_inputs(int n, DType t) {
  const auto count = static_cast<std::size_t>(n) * n;
  std::mt19937_64 rng(kSeed);
  GemmInputs in;
  in.t = t;
  in.a = random_matrix(count, rng);
  in.b = random_matrix(count, rng);
  in.a_bytes = encoded(in.a, t);
  in.b_bytes = encoded(in.b, t);
  return in;
}

Buffer upload(BareGpu& g, const std::vector<unsigned char>& bytes) {
  Buffer b = device_memory(bytes.size());
  g.copy(b.data(), bytes.data(), bytes.size());
  return b;
}

// The largest error |c - ref| / sum |a b| over sampled entries of C (n x n,
// in the dtype's storage), as the harness measures it.
double gemm_error(const GemmInputs& in, int n, const std::vector<unsigned char>& c_bytes) {
  const auto count = static_cast<std::size_t>(n) * n;
  std::vector<double> c(count);
  decode(c_bytes.data(), count, in.t, c.data());
  std::mt19937_64 pick(12345);
  double worst = 0.0;
  for (int e = 0; e < 16; ++e) {
    const std::size_t i = pick() % n, j = pick() % n;
    long double ref = 0.0L, mag = 0.0L;
    for (std::size_t q = 0; q < static_cast<std::size_t>(n); ++q) {
      const long double p = static_cast<long double>(in.a[i * n + q]) * in.b[q * n + j];
      ref += p;
      mag += std::fabs(p);
    }
    const double err = static_cast<double>(std::fabs(c[i * n + j] - ref) / (mag > 0 ? mag : 1.0L));
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
  }
  return worst;
}

// One round: fresh device operands (the harness's case sets up its own each
// run), warm-up, samples, then a check of sampled entries of C against the
// harness's tolerance.
std::vector<double> bare_gemm(BareGpu& g, const Settings& s, const GemmInputs& in, bool& verified) {
  const int n = s.size;
  const DType t = in.t;
  const auto count = static_cast<std::size_t>(n) * n;
  const Buffer a = upload(g, in.a_bytes), b = upload(g, in.b_bytes);
  const Buffer c = device_memory(count * dtype_size(t));
  GPUSCALE_CUDA(cudaMemsetAsync(c.data(), 0xFF, c.bytes(), g.stream()));  // NaN until written

  // The types of CudaDevice's vendor_gemm: C in the inputs' type; fp32
  // accumulation (TF32 tensor cores for tf32) except fp64.
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (t == DType::fp64) {
    type = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
  }
  if (t == DType::tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (t == DType::fp16) type = CUDA_R_16F;
  if (t == DType::bf16) type = CUDA_R_16BF;
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  const void* one = t == DType::fp64 ? static_cast<const void*>(&one64) : &one32;
  const void* zero = t == DType::fp64 ? static_cast<const void*>(&zero64) : &zero32;

  // Row-major C = A * B is column-major C^T = B^T * A^T: cuBLAS gets B first.
  const auto times = g.time(s, [&] {
    for (int i = 0; i < s.ops; ++i) {
      GPUSCALE_CUBLAS(cublasGemmEx(g.blas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, one, b.data(), type, n, a.data(), type,
                                   n, zero, c.data(), type, n, compute, CUBLAS_GEMM_DEFAULT));
    }
  });

  std::vector<unsigned char> c_bytes(c.bytes());
  g.copy(c_bytes.data(), c.data(), c_bytes.size());
  verified = gemm_error(in, n, c_bytes) <= gemm_tolerance(t, n);
  return times;
}

// ---- copies: `ops` copies of `bytes` per sample.

struct CopySpec {
  CopyKind kind = CopyKind::h2d;
  bool pinned = true;
  std::size_t bytes = 0;
};

const char* direction_name(CopyKind k) {
  switch (k) {
    case CopyKind::h2d: return "h2d";
    case CopyKind::d2h: return "d2h";
    case CopyKind::d2d: return "d2d";
  }
  return "";
}

CopyKind parse_direction(const std::string& s) {
  if (s == "h2d") return CopyKind::h2d;
  if (s == "d2h") return CopyKind::d2h;
  return CopyKind::d2d;
}

cudaMemcpyKind memcpy_kind(CopyKind k) {
  switch (k) {
    case CopyKind::h2d: return cudaMemcpyHostToDevice;
    case CopyKind::d2h: return cudaMemcpyDeviceToHost;
    case CopyKind::d2d: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

// The source bytes of copy.cpp's setup with the same seed.
std::vector<unsigned char> copy_pattern(std::size_t bytes) {
  std::vector<unsigned char> p(bytes);
  std::mt19937_64 rng(kSeed);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(p.data() + i, &r, std::min<std::size_t>(8, bytes - i));
  }
  return p;
}

// One round, buffers allocated and filled as copy.cpp does each run: the
// source holds the pattern and the destination its complement, host memory
// written by the CPU before any copy (pageable memory never written maps the
// zero page, which a copy reads faster than real data). Then warm-up,
// samples, and a check of every byte of the destination.
std::vector<double> bare_copy(BareGpu& g, const Settings& s, const CopySpec& c,
                              const std::vector<unsigned char>& pattern, const std::vector<unsigned char>& poison,
                              bool& verified) {
  const bool src_host = c.kind == CopyKind::h2d, dst_host = c.kind == CopyKind::d2h;
  const Buffer src = src_host ? host_memory(c.bytes, c.pinned) : device_memory(c.bytes);
  const Buffer dst = dst_host ? host_memory(c.bytes, c.pinned) : device_memory(c.bytes);
  if (src_host) {
    std::memcpy(src.data(), pattern.data(), c.bytes);
  } else {
    g.copy(src.data(), pattern.data(), c.bytes);
  }
  if (dst_host) {
    std::memcpy(dst.data(), poison.data(), c.bytes);
  } else {
    g.copy(dst.data(), poison.data(), c.bytes);
  }

  const cudaMemcpyKind kind = memcpy_kind(c.kind);
  const auto times = g.time(s, [&] {
    for (int i = 0; i < s.ops; ++i) GPUSCALE_CUDA(cudaMemcpyAsync(dst.data(), src.data(), c.bytes, kind, g.stream()));
  });

  if (dst_host) {
    verified = std::memcmp(dst.data(), pattern.data(), c.bytes) == 0;
  } else {
    std::vector<unsigned char> got(c.bytes);
    g.copy(got.data(), dst.data(), c.bytes);
    verified = std::memcmp(got.data(), pattern.data(), c.bytes) == 0;
  }
  return times;
}

// ---- the comparison

Case make_case(const std::string& workload_keys, const Settings& s) {
  const std::string toml = "[[experiment]]\nname = \"bench\"\n" + workload_keys + "ops = " + std::to_string(s.ops) +
                           "\nwarmup = " + std::to_string(s.warmup) +
                           "\nwarmup_s = " + std::to_string(s.warmup_s) + "\nreps = " + std::to_string(s.reps) +
                           "\nmodes = [\"serial\"]\n";
  return expand(parse_config(toml, "gpu_bench", {}, workload_schemas())).at(0);
}

std::string format_g(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

std::string size_label(std::size_t b) {
  if (b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

struct Row {
  std::string what;
  double bare = 0.0, harness = 0.0;  // throughput, in the row's unit
};

// Interleaved rounds of the bare loop and the harness case; throughput =
// work per sample / median device time of a sample, as the report computes
// it. `work` is flops (TFLOP/s) or bytes (GB/s) per sample. False when
// either side does not verify.
bool compare(Runner& runner, const Case& c, const std::string& what, double work, bool flops, int rounds,
             const std::function<std::vector<double>(bool&)>& bare_round, Row& row) {
  std::vector<double> bare, harness;
  for (int r = 0; r < rounds; ++r) {
    bool verified = false;
    const auto b = bare_round(verified);
    if (!verified) {
      std::fprintf(stderr, "gpu_bench: %s: the bare loop's result does not verify\n", what.c_str());
      return false;
    }
    bare.insert(bare.end(), b.begin(), b.end());
    const CaseRecord rec = runner.run(c);
    if (rec.status != CaseStatus::ok) {
      std::fprintf(stderr, "gpu_bench: %s: harness case %s (error %.3g, tolerance %.3g)\n", what.c_str(),
                   status_name(rec.status), rec.verify_error.empty() ? NAN : rec.verify_error[0], rec.verify_tolerance);
      return false;
    }
    const double rec_work = flops ? rec.flops_per_sample : rec.bytes_per_sample;
    if (std::fabs(rec_work - work) > 1e-9 * work) {  // not the same work: the ratio would mean nothing
      throw RuntimeError(what + ": the harness counts " + std::to_string(rec_work) + " per sample, the bare loop " +
                         std::to_string(work));
    }
    harness.insert(harness.end(), rec.device_time_s.begin(), rec.device_time_s.end());
  }
  const double unit = flops ? 1e12 : 1e9;
  row = {what, work / median(bare) / unit, work / median(harness) / unit};
  return true;
}

void print_row(const Row& r, const char* unit) {
  const double ratio = r.harness / r.bare;
  std::printf("%-26s %10.2f %-7s %10.2f %-7s %12.3f%s\n", r.what.c_str(), r.bare, unit, r.harness, unit, ratio,
              ratio < kTarget ? "  below target" : "");
  std::fflush(stdout);
}

// "none" leaves a group of configurations out.
void drop_none(std::vector<std::string>& v) { v.erase(std::remove(v.begin(), v.end(), "none"), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuscale GPU benchmark: harness gemm and copy cases vs bare cuBLAS and cudaMemcpyAsync loops"};
  Settings s;
  std::vector<std::string> dtypes{"bf16", "fp16", "tf32", "fp32"}, copies{"h2d", "d2h", "d2d"}, pageable{"h2d"};
  long long bytes = 256LL << 20, pageable_bytes = 64LL << 20;
  std::vector<std::string> dtype_choices = dtype_names();
  dtype_choices.push_back("none");
  app.add_option("--size", s.size, "gemm matrix size (m = n = k)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--dtypes", dtypes, "gemm dtypes (none: no gemm)")
      ->delimiter(',')
      ->check(CLI::IsMember(dtype_choices));
  app.add_option("--copies", copies, "copy directions with pinned host memory (none: no such copies)")
      ->delimiter(',')
      ->check(CLI::IsMember({"h2d", "d2h", "d2d", "none"}));
  app.add_option("--bytes", bytes, "bytes of one copy with pinned host memory, and of d2d")->check(CLI::PositiveNumber);
  app.add_option("--pageable", pageable, "copy directions with pageable host memory (none: no such copies)")
      ->delimiter(',')
      ->check(CLI::IsMember({"h2d", "d2h", "none"}));
  app.add_option("--pageable-bytes", pageable_bytes, "bytes of one copy with pageable host memory")
      ->check(CLI::PositiveNumber);
  app.add_option("--ops", s.ops, "matmuls or copies per sample")->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed samples per round, at least, both sides")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-s", s.warmup_s, "seconds of untimed samples per round, at least, both sides")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--reps", s.reps, "timed samples per round, both sides")->check(CLI::PositiveNumber);
  app.add_option("--rounds", s.rounds, "interleaved rounds of bare and harness")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  drop_none(dtypes);
  drop_none(copies);
  drop_none(pageable);

  // Before MPI or any allocation: without a usable device there is nothing to measure.
  const CudaStatus cuda = probe_cuda();
  if (!cuda.usable) {
    std::printf("gpu_bench: skipped: %s\n", cuda.reason.c_str());
    return 77;
  }

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "gpu_bench: MPI provides thread level %d, needs MPI_THREAD_SERIALIZED\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int status = 0;
  try {
    MpiCommunicator world(MPI_COMM_WORLD);
    if (world.rank() == 0) {
      // Rank 0 alone on device 0; any other rank waits without spinning.
      MpiCommunicator self(MPI_COMM_SELF);
      CommonClock clock(self);
      const std::unique_ptr<Device> dev = make_cuda_device(0);
      Runner runner(self, *dev, nullptr, clock, Backend::cuda, kSeed);
      BareGpu bare;

      std::printf("gpu_bench: %s (%s), CUDA runtime %s%s\n", dev->info().name.c_str(), dev->info().uuid.c_str(),
                  cuda.runtime_version.c_str(), world.size() > 1 ? "; rank 0 alone measures" : "");
      std::printf("%d ops/sample; %d samples per side in %d interleaved rounds (bare, harness, ...), each after "
                  ">= %d warm-up samples and >= %s s; throughput = work / median cudaEvent time of a sample\n",
                  s.ops, s.reps * s.rounds, s.rounds, s.warmup, format_g(s.warmup_s).c_str());
      std::printf("%-26s %18s %18s %12s\n", "what", "bare", "harness", "harness/bare");
      std::fflush(stdout);

      std::vector<Row> rows;
      auto add = [&](bool ok, const Row& r, const char* unit) {
        if (!ok) {
          status = 1;
          return;
        }
        print_row(r, unit);
        rows.push_back(r);
      };

      for (const std::string& name : dtypes) {
        const DType t = parse_dtype(name);
        const Case c = make_case("workload = \"gemm\"\nsize = " + std::to_string(s.size) + "\ndtype = \"" + name +
                                     "\"\nimpl = \"vendor\"\n",
                                 s);
        const std::string what = "gemm " + std::to_string(s.size) + " " + name;
        const double flops = gemm_flops(s.size, s.size, s.size) * s.ops;
        const GemmInputs inputs = gemm_inputs(s.size, t);
        Row r;
        const bool ok = compare(runner, c, what, flops, true, s.rounds,
                                [&](bool& verified) { return bare_gemm(bare, s, inputs, verified); }, r);
        add(ok, r, "TFLOP/s");
      }

      std::vector<CopySpec> specs;
      for (const auto& d : copies) specs.push_back({parse_direction(d), true, static_cast<std::size_t>(bytes)});
      for (const auto& d : pageable) {
        specs.push_back({parse_direction(d), false, static_cast<std::size_t>(pageable_bytes)});
      }
      for (const CopySpec& spec : specs) {
        const std::string dir = direction_name(spec.kind), host = spec.pinned ? "pinned" : "pageable";
        const Case c = make_case("workload = \"copy\"\nbytes = " + std::to_string(spec.bytes) + "\ndirection = \"" +
                                     dir + "\"\nhost = \"" + host + "\"\n",
                                 s);
        const std::string what =
            "copy " + dir + (spec.kind == CopyKind::d2d ? std::string() : " " + host) + " " + size_label(spec.bytes);
        const std::vector<unsigned char> pattern = copy_pattern(spec.bytes);
        std::vector<unsigned char> poison(spec.bytes);
        for (std::size_t i = 0; i < spec.bytes; ++i) poison[i] = static_cast<unsigned char>(~pattern[i]);
        Row r;
        const bool ok =
            compare(runner, c, what, static_cast<double>(spec.bytes) * s.ops, false, s.rounds,
                    [&](bool& verified) { return bare_copy(bare, s, spec, pattern, poison, verified); }, r);
        add(ok, r, "GB/s");
      }

      if (!rows.empty()) {
        const auto low = std::min_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
          return a.harness / a.bare < b.harness / b.bare;
        });
        const double ratio = low->harness / low->bare;
        std::printf("lowest harness/bare: %.3f (%s); target %.2f %s\n", ratio, low->what.c_str(), kTarget,
                    ratio >= kTarget ? "met" : "NOT met");
      }
      if (status != 0) std::printf("gpu_bench: some results did not verify (see above)\n");
      std::fflush(stdout);
    }
    world.idle_barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // other ranks wait in a barrier
  }
  MPI_Finalize();
  return status;
}
