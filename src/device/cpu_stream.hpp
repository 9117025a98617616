// The CPU backend's stream: one worker thread runs enqueued work in order, so
// enqueue, complete and synchronize mean on the CPU what they mean on a GPU.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
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

}  // namespace gpuscale
