#include "app/run_file.hpp"

#include <chrono>

#include "io/disk_space.hpp"
#include "io/hdf5_handle.hpp"

namespace gpuscale {

RunFile::RunFile(const OutputTarget& target, const RunRecord& run)
    : target_(target.path), written_(target.replace ? partial_path(target.path) : target.path) {
  // Held until the file replaces it: a second --force run on the same file is refused, not both done.
  if (target.replace) {
    lock_ = std::make_unique<TargetLock>(target.path, target.link.empty() ? target.path : target.link);
  }
  writer_ = std::make_unique<ResultWriter>(written_, run);
}

void RunFile::set_current(const std::string& what) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  current_ = what;
  if (!what.empty()) last_written_.clear();
}

std::string RunFile::where() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return current_.empty() && !last_written_.empty() ? "after " + last_written_ : during(current_);
}

std::string RunFile::current() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return current_;
}

std::size_t RunFile::cases_written() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return writer_ ? writer_->cases_written() : cases_at_end_;
}

std::string RunFile::kept_note() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return kept_note_;
}

std::string RunFile::location() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return ended_ && kept_note_.empty() ? target_ : written_;
}

std::string RunFile::room_for(std::uint64_t bytes) {
  const std::uint64_t need = bytes + kEndReserveBytes, left = free_bytes(written_);
  if (left >= need) return "";
  const std::string what = current();
  const bool marked = end_early("failed: " + no_space_text(left) + " before " + what);
  return location() + ": " + no_space_text(left) + " for " + what + ", which needs about " + std::to_string(need) +
         " bytes; the file keeps the " + std::to_string(cases_written()) + " case(s) before it" +
         (marked ? "" : " (its status not updated)");
}

std::string RunFile::failed(const std::exception& e, const std::string& writing) {
  std::string why = e.what();
  if (const auto* full = dynamic_cast<const NoSpaceError*>(&e)) {
    why = no_space_text(full->free_bytes());
  } else if (const auto* h5 = dynamic_cast<const Hdf5Error*>(&e)) {
    const std::string& r = h5->reasons();
    why = says_no_space(r) ? no_space_text(free_bytes(written_)) : "cannot write (" + write_failure_text(r) + ")";
  }
  const std::size_t kept = cases_at_end_ = writer_->cases_written();
  const bool marked = writer_->end_after_failure("failed: " + why + " writing " + writing);
  ended_ = true;
  writer_.reset();
  const std::string note = settle(written_, target_, lock_ != nullptr);
  lock_.reset();
  kept_note_ = note;
  return (note.empty() ? target_ : written_) + ": " + why + " while writing " + writing + "; the file keeps the " +
         std::to_string(kept) + " case(s) before it" + (marked ? "" : " (its status not updated)") +
         (note.empty() ? "" : "; " + note);
}

template <class Write>
std::string RunFile::written_or_ended(Write&& write, const std::string& writing) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (ended_) return "";
  try {
    write(*writer_);
    return "";
  } catch (const std::exception& e) {
    return failed(e, writing.empty() ? current_ : writing);
  }
}

// Once written, the case is no longer the one running: a run that ends before the next begins ends after it.
std::string RunFile::write_case(const CaseRecord& rec) {
  return written_or_ended(
      [&](ResultWriter& w) {
        w.write_case(rec);
        last_written_ = current_;
        current_.clear();
      },
      "");
}

std::string RunFile::add_warning(const std::string& line) {
  return written_or_ended([&](ResultWriter& w) { w.add_warning(line); }, "a warning");
}

std::string RunFile::write_data_plane(int communicators, double setup_s) {
  return written_or_ended([&](ResultWriter& w) { w.write_data_plane(communicators, setup_s); }, "the data plane's set-up");
}

std::string RunFile::finish(const std::string& status, const std::vector<RankRecord>& ranks) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (ended_) return "";
  try {
    writer_->finish(true, status, ranks);
    writer_->close();
  } catch (const std::exception& e) {
    return failed(e, "the end of the run");
  }
  close_and_settle();
  return "";
}

bool RunFile::end_early(const std::string& status) noexcept {
  std::unique_lock<std::timed_mutex> lock(mu_, std::chrono::seconds(5));
  if (!lock.owns_lock() || ended_) return false;
  bool marked = true;
  try {
    writer_->mark_ended(status);
    writer_->close();
  } catch (...) {
    // The status itself failed to be written (a full disk): it goes in place of the old one, which takes no space.
    marked = writer_->end_after_failure(status);
  }
  close_and_settle();
  return marked;
}

void RunFile::close_and_settle() noexcept {
  ended_ = true;
  cases_at_end_ = writer_->cases_written();
  writer_.reset();  // closed already (or left as its last flush wrote it): the destructor writes nothing more
  try {
    kept_note_ = settle(written_, target_, lock_ != nullptr);
  } catch (...) {
    kept_note_ = "this run's file stays " + written_;
  }
  lock_.reset();
}

std::string during(const std::string& current) {
  return current.empty() ? "outside any case" : "during " + current;
}

}  // namespace gpuscale
