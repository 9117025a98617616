#include "device/device.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"

namespace gpuscale {

GemmImpl parse_gemm_impl(const std::string& s) {
  if (s == "vendor") return GemmImpl::vendor;
  if (s == "naive") return GemmImpl::naive;
  if (s == "tiled") return GemmImpl::tiled;
  if (s == "blocked") return GemmImpl::blocked;
  if (s == "tensor") return GemmImpl::tensor;
  if (s == "mma") return GemmImpl::mma;
  if (s == "mma_async") return GemmImpl::mma_async;
  throw std::invalid_argument("unknown gemm impl '" + s + "'");
}

const char* gemm_impl_name(GemmImpl i) {
  switch (i) {
    case GemmImpl::vendor: return "vendor";
    case GemmImpl::naive: return "naive";
    case GemmImpl::tiled: return "tiled";
    case GemmImpl::blocked: return "blocked";
    case GemmImpl::tensor: return "tensor";
    case GemmImpl::mma: return "mma";
    case GemmImpl::mma_async: return "mma_async";
  }
  return "?";
}

const std::vector<std::string>& gemm_impl_names() {
  static const std::vector<std::string> v{"vendor", "naive", "tiled", "blocked", "tensor", "mma", "mma_async"};
  return v;
}

const char* lane_name(Lane l) {
  switch (l) {
    case Lane::compute: return "compute";
    case Lane::copy: return "copy";
    case Lane::comm: return "comm";
  }
  return "?";
}

const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

std::optional<Backend> parse_backend(const std::string& s) {
  for (Backend b : {Backend::cpu, Backend::cuda}) {
    if (s == backend_name(b)) return b;
  }
  return std::nullopt;
}

std::string op_unsupported(const std::string& op, Backend backend) {
  return op + " is unsupported on the " + backend_name(backend) + " backend";
}

void DeviceOp::on_cpu(const CpuLane&) const { throw RuntimeError(op_unsupported(name(), Backend::cpu)); }

void DeviceOp::on_cuda(const CudaLane&) const { throw RuntimeError(op_unsupported(name(), Backend::cuda)); }

double Device::waited_s(const DeviceEvent&, const DeviceEvent&) const { return NAN; }

void Device::join_lanes() {
  wait(Lane::compute, Lane::copy);
  wait(Lane::compute, Lane::comm);
}

std::unique_ptr<DeviceGraph> Device::capture(const std::function<void()>&) {
  throw RuntimeError(std::string("the ") + backend_name(info().kind) +
                     " backend cannot record work into a graph (CUDA graphs need the CUDA backend)");
}

void Device::copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes) {
  if (dst.bytes() < bytes) throw RuntimeError("copy_to_device: buffer smaller than the copy");
  copy_async(dst.data(), src, bytes, CopyKind::h2d);
  synchronize();
}

void Device::copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes) {
  if (src.bytes() < bytes) throw RuntimeError("copy_to_host: buffer smaller than the copy");
  copy_async(dst, src.data(), bytes, CopyKind::d2h);
  synchronize();
}

void Device::poison(void* dst, std::size_t bytes) {
  const std::vector<unsigned char> chunk(std::min(bytes, kPoisonChunkBytes), 0xff);
  for (std::size_t at = 0; at < bytes; at += chunk.size()) {
    copy_async(static_cast<char*>(dst) + at, chunk.data(), std::min(chunk.size(), bytes - at), CopyKind::h2d);
  }
  synchronize();
}

}  // namespace gpuscale
