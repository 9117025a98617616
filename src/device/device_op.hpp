// A compute op beyond the device's own calls (copies and gemm): one object
// that says what the op does on each backend. A new op is its own files, e.g.
// device/ops/<op>.hpp with <op>.cpp (checks, CPU) and <op>.cu (CUDA), or a
// workload's <name>_op.* beside it: Device and its implementations do not
// change, and test doubles forward Device::run as a whole.
#pragma once

#include <string>

namespace gpuscale {

class CpuStream;

// What an op's CPU code gets: the current lane's stream, on which it enqueues
// its work, and the threads Device::set_threads allows.
struct CpuLane {
  CpuStream& stream;
  int threads = 1;
};

// What an op's CUDA code gets: the current lane's cudaStream_t and its
// cublasHandle_t (void* here, so that no CUDA header is needed).
struct CudaLane {
  void* stream = nullptr;
  void* blas = nullptr;
};

class DeviceOp {
 public:
  virtual ~DeviceOp() = default;
  virtual std::string name() const = 0;
  // Each enqueues the op on the lane and returns. A backend the op does not
  // override throws RuntimeError ("gemv is unsupported on the cpu backend");
  // a workload's unsupported() says so before a case runs.
  virtual void on_cpu(const CpuLane& lane) const;
  virtual void on_cuda(const CudaLane& lane) const;
};

// "<op> is unsupported on the <backend> backend"
enum class Backend;
std::string op_unsupported(const std::string& op, Backend backend);

}  // namespace gpuscale
