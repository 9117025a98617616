// NcclDataComm: the data plane as NCCL calls on the rank's CUDA stream, one
// communicator per group. synchronize() polls the streams and NCCL's async
// error so that a dead peer ends in an error instead of a hang.
#include "comm/nccl_data_comm.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cuda_errors.hpp"

namespace gpuscale {

namespace {

// ncclGetLastError ignores its argument (NCCL keeps one last message),
// so the check needs no communicator.
void nccl_check(ncclResult_t rc, const char* call, const char* file, int line) {
  if (rc == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  std::string msg = std::string(call) + " failed: " + ncclGetErrorString(rc);
  if (last != nullptr && *last != '\0') msg += " (" + std::string(last) + ")";
  throw RuntimeError(msg + " at " + file + ":" + std::to_string(line));
}

#define GPUSCALE_NCCL(call)                                    \
  do {                                                         \
    ::gpuscale::nccl_check((call), #call, __FILE__, __LINE__); \
  } while (0)

// ncclCommSplit: in the header this was built with, and in the library it runs with (NCCL_VERSION codes).
constexpr bool split_built() { return NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0); }
int runtime_version() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::fp64: return ncclFloat64;
    case DType::fp32: return ncclFloat32;
    case DType::tf32: return ncclFloat32;  // stored as fp32
    case DType::fp16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
  }
  throw RuntimeError("NCCL: unknown dtype");
}

const char* at(const void* p, std::size_t elements, DType t) {
  return static_cast<const char*>(p) + elements * dtype_size(t);
}
char* at(void* p, std::size_t elements, DType t) { return static_cast<char*>(p) + elements * dtype_size(t); }

// Every call goes to the stream of the device's current lane (Device::use_lane),
// taken at call time, not the one current when the communicator was made: a
// workload that puts its transfers on the comm lane gets them there, next to
// its compute, as the MPI data plane does. synchronize() waits for each stream
// used since the last one, and the current one (where the runner's sample ends).
class NcclDataComm final : public DataComm {
 public:
  NcclDataComm(ncclComm_t comm, Device& dev, int rank, int size) : comm_(comm), dev_(dev), rank_(rank), size_(size) {}

  // Claims the comm as abort() does, so that a late abort() leaves it alone.
  ~NcclDataComm() override {
    if (aborted_.exchange(true)) {
      // An abort may still be running on the watchdog thread; it owns the comm.
      while (!released_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return;
    }
    std::lock_guard<std::timed_mutex> lock(mu_);
    // Unfinished work may wait on a peer that is gone, and ncclCommDestroy
    // would wait with it; abort does not.
    bool idle = true;
    for (cudaStream_t s : used_) idle = idle && cuda::stream_done(s).done;
    if (errored_ || !idle) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }

  NcclDataComm(const NcclDataComm&) = delete;
  NcclDataComm& operator=(const NcclDataComm&) = delete;

  CommKind kind() const override { return CommKind::nccl; }

  bool splits() const override { return split_built() && runtime_version() >= 21800; }

  // Resources are the child's own (NCCL's default; NCCL_COMM_SPLIT_SHARE_RESOURCES=1 shares the parent's).
  std::unique_ptr<DataComm> split(int color, int key) override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    std::lock_guard<std::timed_mutex> lock(mu_);
    ensure_usable();
    ncclComm_t sub = nullptr;
    try {
      GPUSCALE_NCCL(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
    } catch (...) {
      errored_ = true;
      throw;
    }
    if (color < 0 || sub == nullptr) return nullptr;
    int rank = 0, size = 0;
    GPUSCALE_NCCL(ncclCommUserRank(sub, &rank));
    GPUSCALE_NCCL(ncclCommCount(sub, &size));
    return std::make_unique<NcclDataComm>(sub, dev_, rank, size);
#else
    return DataComm::split(color, key);
#endif
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(const void* send, void* recv, std::size_t count, DType t) override {
    enqueue([&](cudaStream_t st) {
      GPUSCALE_NCCL(ncclAllReduce(send, recv, count, nccl_type(t), ncclSum, comm_, st));
    });
  }

  void allgather(const void* send, void* recv, std::size_t send_count, DType t) override {
    enqueue([&](cudaStream_t st) { GPUSCALE_NCCL(ncclAllGather(send, recv, send_count, nccl_type(t), comm_, st)); });
  }

  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t) override {
    enqueue([&](cudaStream_t st) {
      GPUSCALE_NCCL(ncclReduceScatter(send, recv, recv_count, nccl_type(t), ncclSum, comm_, st));
    });
  }

  void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) override {
    enqueue([&](cudaStream_t st) { GPUSCALE_NCCL(ncclBroadcast(send, recv, count, nccl_type(t), root, comm_, st)); });
  }

  void reduce(const void* send, void* recv, std::size_t count, DType t, int root) override {
    enqueue([&](cudaStream_t st) {
      GPUSCALE_NCCL(ncclReduce(send, recv, count, nccl_type(t), ncclSum, root, comm_, st));
    });
  }

  // As nccl-tests does it: one send and one receive per peer in one group.
  void alltoall(const void* send, void* recv, std::size_t count, DType t) override {
    enqueue([&](cudaStream_t st) {
      grouped([&] {
        for (int p = 0; p < size_; ++p) {
          const std::size_t offset = static_cast<std::size_t>(p) * count;
          GPUSCALE_NCCL(ncclSend(at(send, offset, t), count, nccl_type(t), p, comm_, st));
          GPUSCALE_NCCL(ncclRecv(at(recv, offset, t), count, nccl_type(t), p, comm_, st));
        }
      });
    });
  }

  void sendrecv(const void* send, int to, void* recv, int from, std::size_t count, DType t) override {
    enqueue([&](cudaStream_t st) {
      grouped([&] {
        GPUSCALE_NCCL(ncclSend(send, count, nccl_type(t), to, comm_, st));
        GPUSCALE_NCCL(ncclRecv(recv, count, nccl_type(t), from, comm_, st));
      });
    });
  }

  void send(const void* send, int to, std::size_t count, DType t) override {
    enqueue([&](cudaStream_t st) { GPUSCALE_NCCL(ncclSend(send, count, nccl_type(t), to, comm_, st)); });
  }

  void recv(void* recv, int from, std::size_t count, DType t) override {
    enqueue([&](cudaStream_t st) { GPUSCALE_NCCL(ncclRecv(recv, count, nccl_type(t), from, comm_, st)); });
  }

  // Polls rather than blocks in cudaStreamSynchronize, as nccl-tests does:
  // a peer that died leaves the kernels spinning, and only the async error says so.
  void synchronize() override {
    {
      // The current lane's stream as well: a sample ends there (the runner
      // joins its lanes into it), and its compute may outlast our transfers.
      std::lock_guard<std::timed_mutex> lock(mu_);
      ensure_usable();
      use(current_stream());
    }
    for (;;) {
      {
        std::lock_guard<std::timed_mutex> lock(mu_);
        ensure_usable();
        // Streams that finished are done with; the rest are polled again.
        std::vector<cudaStream_t> busy;
        for (cudaStream_t s : used_) {
          const QueryAnswer q = cuda::stream_done(s);  // NotReady is "not yet", never left for a later launch
          if (q.done) continue;
          if (q.error != 0) {
            errored_ = true;
            cuda_check(static_cast<cudaError_t>(q.error), "cudaStreamQuery(stream)", __FILE__, __LINE__);
          }
          busy.push_back(s);
        }
        used_ = std::move(busy);
        if (used_.empty()) return;
        ncclResult_t async = ncclSuccess;
        const ncclResult_t q = ncclCommGetAsyncError(comm_, &async);
        if (q != ncclSuccess) async = q;
        if (async != ncclSuccess && async != ncclInProgress) {
          const char* last = ncclGetLastError(nullptr);
          std::string msg = "NCCL reported an asynchronous error on rank " + std::to_string(rank_) + " of " +
                            std::to_string(size_) + ": " + ncclGetErrorString(async);
          if (last != nullptr && *last != '\0') msg += " (" + std::string(last) + ")";
          abort_locked();
          throw RuntimeError(msg + "; the communicator was aborted");
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // From the watchdog thread while the main thread may be inside any call.
  // Calls in progress hold mu_ for a short while (an enqueue, one poll); if
  // one is stuck inside NCCL past the wait, abort anyway: NCCL's abort flag
  // is what ends its own blocking loops, and the job is ending.
  void abort() noexcept override {
    if (aborted_.exchange(true)) return;
    bool locked = false;
    try {
      locked = mu_.try_lock_for(std::chrono::seconds(1));
    } catch (...) {
    }
    ncclCommAbort(comm_);
    released_ = true;
    if (locked) mu_.unlock();
  }

 private:
  void ensure_usable() const {
    if (aborted_.load()) throw RuntimeError("the NCCL communicator was aborted and cannot be used");
  }

  // mu_ held.
  void abort_locked() noexcept {
    errored_ = true;
    if (aborted_.exchange(true)) return;
    ncclCommAbort(comm_);
    released_ = true;
  }

  cudaStream_t current_stream() const {
    auto* s = static_cast<cudaStream_t>(dev_.native_stream());
    if (s == nullptr) throw RuntimeError("the NCCL data plane needs the device's CUDA stream, and it has none");
    return s;
  }

  // mu_ held.
  void use(cudaStream_t s) {
    if (std::find(used_.begin(), used_.end(), s) == used_.end()) used_.push_back(s);
  }

  template <class F>
  void enqueue(F&& f) {
    std::lock_guard<std::timed_mutex> lock(mu_);
    ensure_usable();
    try {
      const cudaStream_t s = current_stream();
      use(s);
      f(s);
    } catch (...) {
      errored_ = true;
      throw;
    }
  }

  // Closes the group on every path: NCCL's group depth is per thread.
  template <class F>
  static void grouped(F&& f) {
    GPUSCALE_NCCL(ncclGroupStart());
    try {
      f();
    } catch (...) {
      ncclGroupEnd();
      throw;
    }
    GPUSCALE_NCCL(ncclGroupEnd());
  }

  ncclComm_t comm_;
  Device& dev_;  // its streams must outlive this
  std::vector<cudaStream_t> used_;  // enqueued on since the last synchronize (mu_ held)
  int rank_, size_;
  std::timed_mutex mu_;
  std::atomic<bool> aborted_{false};   // abort was started (at most once)
  std::atomic<bool> released_{false};  // ncclCommAbort has returned
  bool errored_ = false;               // a call failed: abort, do not destroy (mu_ held)
};

}  // namespace

std::unique_ptr<DataComm> make_nccl_data_comm(MPI_Comm group, Device& dev) {
  if (dev.info().kind != Backend::cuda)
    throw RuntimeError(std::string("the NCCL data plane needs a CUDA device, not a '") + backend_name(dev.info().kind) +
                       "' one");
  if (dev.native_stream() == nullptr) {
    throw RuntimeError("the NCCL data plane needs the device's CUDA stream, and it has none");
  }

  int rank = 0, size = 0;
  GPUSCALE_MPI(MPI_Comm_rank(group, &rank));
  GPUSCALE_MPI(MPI_Comm_size(group, &size));

  // The id travels with rank 0's verdict, so that its failure ends every rank
  // instead of leaving them waiting in ncclCommInitRank.
  struct IdMessage {
    ncclUniqueId id;
    char ok;
  } msg{};
  std::string why;
  if (rank == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&msg.id);
    msg.ok = rc == ncclSuccess ? 1 : 0;
    if (rc != ncclSuccess) why = ncclGetErrorString(rc);
  }
  GPUSCALE_MPI(MPI_Bcast(&msg, static_cast<int>(sizeof msg), MPI_BYTE, 0, group));
  if (msg.ok == 0) {
    throw RuntimeError("ncclGetUniqueId failed on rank 0 of the group" + (why.empty() ? "" : ": " + why));
  }

  ncclComm_t comm = nullptr;
  GPUSCALE_NCCL(ncclCommInitRank(&comm, size, msg.id, rank));
  return std::make_unique<NcclDataComm>(comm, dev, rank, size);
}

std::string nccl_version() {
  int v = 0;
  GPUSCALE_NCCL(ncclGetVersion(&v));
  // NCCL_VERSION: major*10000 + minor*100 + patch from 2.9, major*1000 + ... before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
  const int patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace gpuscale
