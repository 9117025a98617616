// dp_step under mpiexec -n 2 and -n 4: a training step's reduced gradients
// verify in every scope this job has, overlapped or not; its phases lie inside
// their samples and, without overlap, never overlap; a transport that
// corrupts one value per bucket is caught with its count; and the allreduce
// of a bucket runs during the backward of the next layer exactly when
// overlap = true (made deterministic by a handshake, below).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/case_tables.hpp"
#include "common/forwarding_device.hpp"
#include "common/mpi_rig.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;
using testing::CommDecorator;
using testing::CorruptingComm;
using testing::Rig;

namespace {

// 4 layers of 32 x 32: 4 KiB of gradient per layer in fp32, 8 KiB in fp64, so
// buckets of 8 KiB hold 2 layers (fp32) or 1 (fp64).
Case dp_case(const std::string& keys, const std::string& mode) {
  const Config cfg = parse_config("[[experiment]]\nname = \"dp\"\nworkload = \"dp_step\"\nwarmup = 1\nreps = 3\n"
                                  "hidden = 32\nbatch = 8\nlayers = 4\nbucket_bytes = 8192\n" +
                                      keys + "\nmodes = [\"" + mode + "\"]\n",
                                  "dp.toml", {}, workload_schemas());
  return expand(cfg).at(0);
}

// Makes dp_step's overlap deterministic. The first allreduce of a sample
// (enqueued on the comm lane) waits until the next matmul enqueued after it
// has begun on the compute lane, and that matmul waits until the allreduce
// has begun. A step that reduces a bucket while the backward of the next
// layer runs passes straight through, with the allreduce inside that layer's
// compute interval whatever the scheduler does. One that reduces only after
// the whole backward has no matmul left to begin: its allreduce waits in
// vain for 2 s (`timed_out`; later ones then no longer wait).
class BucketHandshakeDevice final : public testing::HandshakingDevice {
 public:
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    if (armed_ > 0) {
      const int round = armed_;
      armed_ = 0;
      cpu_.host_task([this, round] {
        matmul_begun_ = round;
        wait_until([&] { return reduce_begun_ >= round; });
      });
    }
    cpu_.gemm(i, t, s, a, b, c);
  }
  // From the data plane, on the host thread: an allreduce is being enqueued on the current lane.
  void before_allreduce() {
    if (reduced_) return;
    reduced_ = true;
    const int round = ++rounds_;
    armed_ = round;
    cpu_.host_task([this, round] {
      reduce_begun_ = round;
      wait_until([&] { return matmul_begun_ >= round; });
    });
  }
  void after_synchronize() {  // the sample is over: the next one starts afresh
    reduced_ = false;
    armed_ = 0;
  }

 private:
  bool reduced_ = false;                              // an allreduce was enqueued since the last synchronize
  int armed_ = 0, rounds_ = 0;                        // host thread
  std::atomic<int> reduce_begun_{0}, matmul_begun_{0};  // lane workers
};

class HandshakeComm final : public CommDecorator {
 public:
  HandshakeComm(std::unique_ptr<DataComm> inner, BucketHandshakeDevice& dev)
      : CommDecorator(std::move(inner)), dev_(dev) {}
  void allreduce(const void* s, void* r, std::size_t n, DType t) override {
    dev_.before_allreduce();
    CommDecorator::allreduce(s, r, n, t);
  }
  void synchronize() override {
    CommDecorator::synchronize();
    dev_.after_synchronize();
  }

 private:
  BucketHandshakeDevice& dev_;
};

// Pairs of a compute and a transfer interval of the same rank and sample that overlap in time.
int overlapping_pairs(const testing::PhaseRows& p) {
  int n = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p.name(i) != "compute") continue;
    for (std::size_t j = 0; j < p.size(); ++j) {
      n += p.name(j) == "transfer" && p.rank[j] == p.rank[i] && p.sample[j] == p.sample[i] &&
           p.start_s[j] < p.end_s[i] && p.start_s[i] < p.end_s[j];
    }
  }
  return n;
}

}  // namespace

TEST_CASE("a training step's reduced gradients verify in scopes world and intra-node, overlapped or not",
          "[mpi][dp_step]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig<CpuDevice> rig(comm);
  const int n = comm.size(), reps = 3;
  for (const std::string dtype : {"fp32", "fp64"}) {
    for (const std::string scope : {"world", "intra-node"}) {
      for (const bool overlap : {true, false}) {
        for (const std::string mode : {"serial", "parallel"}) {
          const std::string keys = "dtype = \"" + dtype + "\"\nscope = \"" + scope +
                                   "\"\noverlap = " + (overlap ? "true" : "false");
          const CaseRecord rec = rig.runner.run(dp_case(keys, mode));
          if (comm.rank() != 0) continue;
          INFO(keys << "\nmode = " << mode);
          CHECK(rec.status == CaseStatus::ok);
          CHECK(rec.scope == parse_scope(scope));
          CHECK(rec.wrong_elements == std::vector<std::int64_t>(n, 0));
          CHECK(rec.verify_error == std::vector<double>(n, 0.0));
          const double e = dtype == "fp32" ? 4 : 8;
          CHECK(rec.flops_per_sample == 3.0 * 4 * 2 * 8 * 32 * 32);
          CHECK(rec.bytes_per_sample == 4 * 32 * 32 * e);

          const testing::PhaseRows p = testing::phase_rows(rec);
          REQUIRE(p.names == std::vector<std::string>{"compute", "transfer"});
          const int buckets = dtype == "fp32" ? 2 : 4;
          // Every rank and sample: a forward and a backward interval per layer, one transfer per bucket.
          CHECK(p.size() == static_cast<std::size_t>(n * reps * (2 * 4 + buckets)));
          for (std::size_t i = 0; i < p.size(); ++i) {
            const std::size_t at = static_cast<std::size_t>(p.rank[i] * reps + p.sample[i]);
            CHECK(p.end_s[i] >= p.start_s[i]);
            CHECK(p.start_s[i] >= rec.wall_start_s[at]);
            CHECK(p.end_s[i] <= rec.wall_end_s[at]);
          }
          if (!overlap) CHECK(overlapping_pairs(p) == 0);  // all of the backward, then every allreduce
        }
      }
    }
  }
}

TEST_CASE("a corrupted reduced gradient fails verification with its count", "[mpi][dp_step]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig<CpuDevice> rig(comm, [](MPI_Comm g, Device& d) -> std::unique_ptr<DataComm> {
    return std::make_unique<CorruptingComm>(make_mpi_data_comm(g, d), d);
  });
  const CaseRecord rec = rig.runner.run(dp_case("overlap = true", "parallel"));
  if (comm.rank() != 0) return;
  const int n = comm.size();
  CHECK(rec.status == CaseStatus::verify_failed);
  // fp32: 2 buckets, one wrong value in each, on every rank.
  CHECK(rec.wrong_elements == std::vector<std::int64_t>(n, 2));
  CHECK(rec.verify_error == std::vector<double>(n, 2.0));
}

TEST_CASE("overlap = true reduces a bucket while the backward of the next layer runs, false after the backward",
          "[mpi][dp_step]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  for (const bool overlap : {true, false}) {
    Rig<BucketHandshakeDevice> rig(comm, [](MPI_Comm g, Device& d) -> std::unique_ptr<DataComm> {
      return std::make_unique<HandshakeComm>(make_mpi_data_comm(g, d), static_cast<BucketHandshakeDevice&>(d));
    });
    const CaseRecord rec = rig.runner.run(dp_case(std::string("overlap = ") + (overlap ? "true" : "false"), "parallel"));
    CHECK(rig.dev.timed_out == !overlap);
    if (comm.rank() != 0) continue;
    INFO("overlap = " << overlap);
    CHECK(rec.status == CaseStatus::ok);
    if (overlap) {
      // The first bucket's allreduce inside the next layer's backward, on every rank and sample.
      CHECK(overlapping_pairs(testing::phase_rows(rec)) >= comm.size() * 3);
    } else {
      CHECK(overlapping_pairs(testing::phase_rows(rec)) == 0);
    }
  }
}
