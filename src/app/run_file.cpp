#include "app/run_file.hpp"

#include <chrono>

namespace gpuscale {

void RunFile::set_current(const std::string& what) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  current_ = what;
}

std::string RunFile::current() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return current_;
}

void RunFile::write_case(const CaseRecord& rec) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (!ended_) writer_->write_case(rec);
}

void RunFile::add_warning(const std::string& line) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (!ended_) writer_->add_warning(line);
}

void RunFile::finish(const std::string& status, const std::vector<RankRecord>& ranks) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (ended_) return;
  writer_->finish(true, status, ranks);
  ended_ = true;
}

bool RunFile::end_early(const std::string& status) noexcept {
  std::unique_lock<std::timed_mutex> lock(mu_, std::chrono::seconds(5));
  if (!lock.owns_lock() || ended_) return false;
  try {
    writer_->mark_ended(status);
    ended_ = true;
    return true;
  } catch (...) {
    return false;
  }
}

std::string during(const std::string& current) {
  return current.empty() ? "outside any case" : "during " + current;
}

}  // namespace gpuscale
