#include "device/ops/sum_squares.hpp"

#include <vector>

#include "core/error.hpp"
#include "device/cpu_stream.hpp"

namespace gpuscale {

void sum_squares(Device& dev, DType t, const DeviceBuffer& x, std::size_t count, DeviceBuffer& acc, bool accumulate) {
  if (x.bytes() < count * dtype_size(t) || acc.bytes() < sizeof(double)) {
    throw RuntimeError("sum_squares: a buffer is smaller than the count");
  }
  SumSquaresOp op;
  op.t = t;
  op.x = x.data();
  op.count = count;
  op.acc = static_cast<double*>(acc.data());
  op.accumulate = accumulate;
  dev.run(op);
}

void SumSquaresOp::on_cpu(const CpuLane& lane) const {
  lane.stream.enqueue([t = t, px = x, count = count, out = acc, accumulate = accumulate] {
    std::vector<double> v(count);
    decode(px, count, t, v.data());
    double s = accumulate ? *out : 0.0;
    for (double e : v) s += e * e;
    *out = s;
  });
}

}  // namespace gpuscale
