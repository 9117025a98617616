#include "workloads/gemv_op.hpp"

#include <cblas.h>

#include "core/error.hpp"
#include "device/cpu_stream.hpp"

namespace gpuscale {

std::string gemv_unsupported(Backend backend, DType t) {
  if (t == DType::fp32 || t == DType::fp64) return "";
  if (t == DType::bf16 && backend == Backend::cuda) return "";
  return std::string("gemv in ") + dtype_name(t) + " needs the CUDA backend (cuBLAS); the CPU backend has fp32 and "
         "fp64";
}

void gemv(Device& dev, DType t, int m, int n, const DeviceBuffer& a, const DeviceBuffer& x, DeviceBuffer& y) {
  const std::size_t e = dtype_size(t);
  if (a.bytes() < e * m * n || x.bytes() < e * n || y.bytes() < e * m) {
    throw RuntimeError("gemv: a buffer is smaller than the shape");
  }
  GemvOp op;
  op.t = t;
  op.m = m;
  op.n = n;
  op.a = a.data();
  op.x = x.data();
  op.y = y.data();
  dev.run(op);
}

void GemvOp::on_cpu(const CpuLane& lane) const {
  if (!gemv_unsupported(Backend::cpu, t).empty()) DeviceOp::on_cpu(lane);  // says it is unsupported
  if (t == DType::fp64) {
    lane.stream.enqueue([m = m, n = n, pa = static_cast<const double*>(a), px = static_cast<const double*>(x),
                         py = static_cast<double*>(y)] {
      cblas_dgemv(CblasRowMajor, CblasNoTrans, m, n, 1.0, pa, n, px, 1, 0.0, py, 1);
    });
  } else {
    lane.stream.enqueue([m = m, n = n, pa = static_cast<const float*>(a), px = static_cast<const float*>(x),
                         py = static_cast<float*>(y)] {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, m, n, 1.0f, pa, n, px, 1, 0.0f, py, 1);
    });
  }
}

}  // namespace gpuscale
