#include "device/cpu_stream.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace gpuscale {

namespace {

// A thread's own schedstat, open for as long as the thread lives (a /proc/thread-self path names the thread that
// opens it, and only that thread reads it here).
class OwnSchedstat {
 public:
  OwnSchedstat() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) {  // kernels before 3.17 have no /proc/thread-self
      const std::string path = "/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/schedstat";
      fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
  }
  ~OwnSchedstat() {
    if (fd_ >= 0) close(fd_);
  }
  OwnSchedstat(const OwnSchedstat&) = delete;
  OwnSchedstat& operator=(const OwnSchedstat&) = delete;

  // The second field, in seconds (NaN: unreadable).
  double wait_s() const {
    if (fd_ < 0) return NAN;
    char buf[96];
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return NAN;
    buf[n] = '\0';
    char* end = nullptr;
    std::strtoull(buf, &end, 10);  // time on a core
    if (end == buf) return NAN;
    char* after = nullptr;
    const unsigned long long wait_ns = std::strtoull(end, &after, 10);
    return after == end ? NAN : 1e-9 * static_cast<double>(wait_ns);
  }

 private:
  int fd_;
};

}  // namespace

double thread_wait_s() {
  thread_local const OwnSchedstat own;
  return own.wait_s();
}

double schedstat_wait_s(const std::string& path) {
  std::ifstream in(path);
  unsigned long long run_ns = 0, wait_ns = 0;
  if (!(in >> run_ns >> wait_ns)) return NAN;
  return 1e-9 * static_cast<double>(wait_ns);
}

CpuStream::CpuStream() : worker_([this] { loop(); }) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  has_work_.notify_all();
  worker_.join();
}

// Held work wakes nobody: the worker could not run it, and a woken worker that
// goes back to sleep costs two context switches on the enqueuing thread's core
// (where the scheduler lets it preempt that thread, once per task: a sample of
// 10 windows of 64 8-byte messages then started 90 us late on one rank).
void CpuStream::enqueue(std::function<void()> work) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    wake = !held_;
  }
  if (wake) has_work_.notify_one();
}

void CpuStream::hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void CpuStream::release() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = held_ && !queue_.empty();  // otherwise the worker has nothing to wake for (synchronize releases each time)
    held_ = false;
  }
  if (wake) has_work_.notify_one();
}

void CpuStream::synchronize() {
  release();  // waiting for held work would wait forever
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

// Takes everything queued at once and runs it unlocked: a sample's back-to-back
// transfers then cost a call each, not a lock, an unlock and a free each (about
// 35 ns an operation, an eighth of an 8-byte MPI_Allreduce between two ranks
// here). The tasks are destroyed after the last of them has run, so after a
// sample's end event, and before synchronize() returns.
void CpuStream::loop() {
  std::deque<std::function<void()>> batch;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    has_work_.wait(lock, [this] { return stop_ || (!queue_.empty() && !held_); });
    if (queue_.empty()) return;  // stop_ and drained
    batch.swap(queue_);
    busy_ = true;
    lock.unlock();
    for (auto& work : batch) {
      try {
        work();
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
    batch.clear();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace gpuscale
