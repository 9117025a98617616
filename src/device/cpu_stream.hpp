// The CPU backend's stream: one worker thread runs enqueued work in order, so
// enqueue, complete and synchronize mean on the CPU what they mean on a GPU.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpuscale {

class CpuStream {
 public:
  CpuStream();
  ~CpuStream();  // drains the queue, then joins
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  void enqueue(std::function<void()> work);
  // Work enqueued after hold() waits until release() or synchronize(), so
  // that the worker then runs it back to back instead of waking per task.
  void hold();
  void release();
  // Waits until everything enqueued so far has run; rethrows the first
  // exception a task threw since the last synchronize.
  void synchronize();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable has_work_, idle_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stop_ = false, held_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

// Seconds the calling thread has been runnable but waiting on a run queue for a core since it started: the second
// field of its schedstat (/proc/thread-self/schedstat), read with one pread of a file each thread keeps open (under a
// microsecond here). NaN where the kernel does not give it. The CPU backend's events read it on the stream's thread
// (Device::waited_s); the runner's host readings and the benchmarks read it too.
double thread_wait_s();
// The same field of a schedstat file (any thread's: /proc/self/task/<tid>/schedstat), in seconds; NaN: unreadable.
double schedstat_wait_s(const std::string& path);

}  // namespace gpuscale
