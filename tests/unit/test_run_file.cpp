// A run's result file never loses what was finished: --force keeps the old
// file whole until the new one replaces it, a file another process writes is
// never replaced, a path that cannot take a file is refused before anything
// runs, and a full disk or a failed write leaves every case before it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "app/output_path.hpp"
#include "app/run_file.hpp"
#include "core/error.hpp"
#include "io/disk_space.hpp"
#include "io/result_reader.hpp"

using namespace gpuscale;
namespace fs = std::filesystem;

namespace {

// A fresh directory of its own for each test.
struct Scratch {
  std::string dir;
  Scratch() {
    char tmpl[] = "/tmp/gpuscale-runfile-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

RunRecord a_run(std::size_t planned) {
  RunRecord run;
  run.software_version = "0.1.0+gtest";
  run.backend = Backend::cpu;
  run.nodes = 1;
  run.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    run.ranks[static_cast<std::size_t>(r)].hostname = "node";
    run.ranks[static_cast<std::size_t>(r)].local_rank = r;
    run.ranks[static_cast<std::size_t>(r)].local_size = 2;
  }
  run.cases_planned = planned;
  for (std::size_t i = 0; i < planned; ++i) run.plan.push_back({"g size=" + std::to_string(i) + " [parallel]", {}});
  return run;
}

// Case `index` of 2 ranks and `reps` samples each.
CaseRecord a_case(std::size_t index, int reps = 3) {
  CaseRecord c;
  c.index = index;
  c.experiment = "g";
  c.workload = "gemm";
  c.mode = Mode::parallel;
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = 2;
  c.reps = reps;
  c.params.set("reps", std::int64_t{reps});
  const auto n = static_cast<std::size_t>(2 * reps);
  c.device_time_s.assign(n, 1e-3);
  c.enqueue_s.assign(n, 1e-4);
  c.wall_start_s.assign(n, 1.0);
  c.wall_end_s.assign(n, 1.5);
  c.verify_error = {0, 0};
  c.turn = {0, 0};
  c.warmup_samples = {0, 0};
  return c;
}

// What check_output says of `out` ("" when it is fine).
std::string refusal(const std::string& out, bool force = false) {
  try {
    check_output(out, force);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// What check_output says of `out` with the command's `inputs` ("" when it is fine).
std::string refusal_of(const std::string& out, bool force, const std::vector<std::string>& inputs) {
  try {
    check_output(out, force, inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("a run with --force writes beside the file it replaces, which stays whole until the run ends", "[runfile]") {
  Scratch s;
  const std::string out = s.path("r.h5");
  {
    RunFile old(check_output(out, false), a_run(1));
    REQUIRE(old.write_case(a_case(0)).empty());
    REQUIRE(old.finish("complete", a_run(1).ranks).empty());
  }
  REQUIRE(refusal(out) == out + ": the file exists; use --force to overwrite it, or choose another -o");
  const OutputTarget t = check_output(out, true);
  CHECK(t.replace);
  RunFile f(t, a_run(3));
  CHECK(f.written() == partial_path(out));
  REQUIRE(f.write_case(a_case(0)).empty());
  const RunRecord during = read_result_file(out);  // the old file, untouched
  CHECK(during.complete);
  CHECK(during.cases_planned == 1);
  REQUIRE(f.write_case(a_case(1)).empty());
  REQUIRE(f.write_case(a_case(2)).empty());
  REQUIRE(f.finish("complete", a_run(3).ranks).empty());
  CHECK(f.location() == out);
  CHECK_FALSE(fs::exists(partial_path(out)));
  const RunRecord after = read_result_file(out);
  CHECK(after.cases.size() == 3);
  CHECK(after.complete);
}

TEST_CASE("a run that ends early replaces the file too, with how it ended and its finished cases", "[runfile]") {
  Scratch s;
  const std::string out = s.path("r.h5");
  { RunFile old(check_output(out, false), a_run(1)); }
  RunFile f(check_output(out, true), a_run(3));
  REQUIRE(f.write_case(a_case(0)).empty());
  f.set_current("case 2 of 3 (g size=1 [parallel])");
  CHECK(f.end_early("aborted: SIGTERM " + during(f.current())));
  CHECK_FALSE(f.end_early("aborted: SIGTERM again"));  // the first end stands
  const RunRecord back = read_result_file(out);
  CHECK(back.status == "aborted: SIGTERM during case 2 of 3 (g size=1 [parallel])");
  CHECK_FALSE(back.complete);
  CHECK(back.cases.size() == 1);
  CHECK(f.cases_written() == 1);
}

TEST_CASE("a run that ends between two cases says it ended after the one its file holds last", "[runfile]") {
  Scratch s;
  RunFile f(check_output(s.path("r.h5"), false), a_run(3));
  CHECK(f.where() == "outside any case");
  f.set_current("case 1 of 3 (g size=1 [parallel])");
  CHECK(f.where() == "during case 1 of 3 (g size=1 [parallel])");
  REQUIRE(f.write_case(a_case(0)).empty());
  CHECK(f.where() == "after case 1 of 3 (g size=1 [parallel])");  // written; case 2 not begun
  f.set_current("case 2 of 3 (g size=1 [parallel])");
  CHECK(f.where() == "during case 2 of 3 (g size=1 [parallel])");
  CHECK(f.end_early("aborted: SIGTERM " + f.where()));
  CHECK(f.cases_written() == 1);
}

TEST_CASE("a file another process is writing is refused up front, and locked while a --force run replaces it",
          "[runfile]") {
  Scratch s;
  const std::string out = s.path("busy.h5");
  { RunFile old(check_output(out, false), a_run(1)); }
  const int held = open(out.c_str(), O_RDONLY);
  REQUIRE(held >= 0);
  REQUIRE(flock(held, LOCK_EX) == 0);  // as an HDF5 writer holds its file
  CHECK(being_written(out));
  const std::string busy = out + ": another process is writing it (a gpuscale run still going?); wait for it to end, "
                                 "or choose another -o";
  CHECK(refusal(out, true) == busy);
  flock(held, LOCK_UN);
  CHECK_FALSE(being_written(out));
  const OutputTarget target = check_output(out, true);
  {
    RunFile f(target, a_run(1));
    REQUIRE(f.write_case(a_case(0)).empty());
    CHECK(being_written(out));  // the file it replaces is held: no other writer can take it meanwhile
    CHECK(refusal(out, true) == busy);
    try {  // a second --force run that was checked before the first took the lock
      RunFile second(target, a_run(1));
      FAIL("a second run replacing the same file was let through");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()) == busy);
    }
    REQUIRE(f.finish("complete", a_run(1).ranks).empty());
    CHECK(f.kept_note().empty());
    CHECK(f.location() == out);
  }
  CHECK_FALSE(being_written(out));
  CHECK(read_result_file(out).cases.size() == 1);
  CHECK_FALSE(fs::exists(partial_path(out)));
  close(held);
}

TEST_CASE("a path that cannot take a result file is one line, before anything runs", "[runfile][errors]") {
  Scratch s;
  fs::create_directory(s.path("d"));
  CHECK(refusal(s.path("d")) == s.path("d") + ": is a directory; give a file name with -o");
  REQUIRE(mkfifo(s.path("fifo").c_str(), 0600) == 0);
  CHECK(refusal(s.path("fifo"), true) == s.path("fifo") + ": a FIFO, not a file; give a file name with -o");
  CHECK(refusal("/dev/full", true) == "/dev/full: a character device, not a file; give a file name with -o");
  fs::create_symlink(s.path("nowhere/x.h5"), s.path("link.h5"));
  CHECK(refusal(s.path("link.h5")) == s.path("link.h5") + ": a symbolic link to '" + s.path("nowhere/x.h5") +
                                          "', which does not exist; give a file name with -o");
  CHECK(refusal(s.path("missing/x.h5")) == s.path("missing/x.h5") + ": directory '" + s.path("missing") +
                                                "' does not exist");
  const std::string long_name = s.path(std::string(300, 'a') + ".h5");
  CHECK(refusal(long_name) == long_name + ": the name is too long for its file system (at most 255 bytes)");
  // A name that fits, but not with what a --force run writes beside it first.
  const std::string almost = s.path(std::string(250, 'b'));
  { RunFile old(check_output(almost, false), a_run(1)); }
  CHECK(refusal(almost, true).rfind(almost + ": the name is too long for its file system (at most 255 bytes; a "
                                             "--force run writes " + partial_path(almost) + " first)", 0) == 0);
  if (geteuid() != 0) {  // root writes anywhere; the e2e test uses a read-only mount instead
    fs::create_directory(s.path("ro"));
    chmod(s.path("ro").c_str(), 0555);
    CHECK(refusal(s.path("ro/x.h5")) == s.path("ro/x.h5") + ": cannot create a file in '" + s.path("ro") +
                                            "' (Permission denied)");
  }
  // A symbolic link to a file is followed with --force only: the file it names is the target.
  { RunFile real(check_output(s.path("real.h5"), false), a_run(1)); }
  fs::create_symlink(s.path("real.h5"), s.path("alias.h5"));
  const std::string real = fs::canonical(s.path("real.h5")).string();
  CHECK(refusal(s.path("alias.h5")) == s.path("alias.h5") + ": a symbolic link to '" + real + "'; use --force to "
                                                                "write that file, or give a file name with -o");
  const OutputTarget through = check_output(s.path("alias.h5"), true);
  CHECK(through.path == real);
  CHECK(through.link == s.path("alias.h5"));
  CHECK_FALSE(fs::exists(s.path(".gpuscale-probe-" + std::to_string(getpid()))));  // the probe is gone
}

TEST_CASE("a case whose records do not fit the free space ends the run before anything is written", "[runfile]") {
  Scratch s;
  const std::string out = s.path("full.h5");
  RunFile f(check_output(out, false), a_run(3));
  REQUIRE(f.write_case(a_case(0)).empty());
  CHECK(f.room_for(1000).empty());
  f.set_current("case 2 of 3 (g size=1 [parallel])");
  const std::string m = f.room_for(std::numeric_limits<std::uint64_t>::max() / 2);
  CHECK(m.rfind(out + ": no space left on device (", 0) == 0);
  CHECK(m.find(" bytes free) for case 2 of 3 (g size=1 [parallel]), which needs about ") != std::string::npos);
  CHECK(m.find("; the file keeps the 1 case(s) before it") != std::string::npos);
  const RunRecord back = read_result_file(out);
  CHECK(back.status.rfind("failed: no space left on device (", 0) == 0);
  CHECK(back.status.find(" bytes free) before case 2 of 3 (g size=1 [parallel])") != std::string::npos);
  CHECK(back.cases.size() == 1);
  CHECK(f.write_case(a_case(1)).empty());  // the run has ended: nothing more is written
  CHECK(read_result_file(out).cases.size() == 1);
}

TEST_CASE("a write that fails half-way leaves the file as its last flush wrote it, saying how the run ended",
          "[runfile]") {
  Scratch s;
  const std::string out = s.path("limit.h5");
  // In a child of its own: a file size limit stands in for a full disk (HDF5 then fails inside a write).
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RunFile f(check_output(out, false), a_run(3));
    if (!f.write_case(a_case(0)).empty() || !f.write_case(a_case(1)).empty()) _exit(10);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{static_cast<rlim_t>(fs::file_size(out) + 4096), RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &lim);
    f.set_current("case 3 of 3 (g size=2 [parallel])");
    const std::string m = f.write_case(a_case(2, 200000));  // 3.2 MB per sample table
    const bool said = m.rfind(out + ": cannot write (File too large) while writing case 3 of 3", 0) == 0 &&
                      m.find(" while writing case 3 of 3 (g size=2 [parallel]); the file keeps the 2 case(s) before "
                             "it") != std::string::npos &&
                      m.find("not updated") == std::string::npos;
    _exit(said ? 0 : 11);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const RunRecord back = read_result_file(out);
  CHECK(back.cases.size() == 2);
  CHECK_FALSE(back.complete);
  CHECK(back.status.rfind("failed: ", 0) == 0);
  CHECK(back.status.find(" writing case 3 of 3 (g size=2 [parallel])") != std::string::npos);
  CHECK(fs::file_size(out) < 3200000);  // what the failed write put beyond the file's end is cut off
}

TEST_CASE("an end whose status cannot grow the file still says how the run ended, in the room kept for it",
          "[runfile]") {
  Scratch s;
  const std::string out = s.path("end.h5");
  const std::string status = "aborted: SIGTERM during case 2 of 2 (" + std::string(2000, 'x') + ")";
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RunFile f(check_output(out, false), a_run(2));
    if (!f.write_case(a_case(0)).empty()) _exit(10);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{static_cast<rlim_t>(fs::file_size(out)), RLIM_INFINITY};  // not a byte more
    setrlimit(RLIMIT_FSIZE, &lim);
    _exit(f.end_early(status) ? 0 : 11);
  }
  int code = 0;
  REQUIRE(waitpid(child, &code, 0) == child);
  REQUIRE(WIFEXITED(code));
  CHECK(WEXITSTATUS(code) == 0);
  const RunRecord back = read_result_file(out);
  CHECK(back.status == status.substr(0, 1021) + "...");  // the 1 KiB the status has in place
  CHECK(back.cases.size() == 1);
  CHECK_FALSE(back.complete);
}

TEST_CASE("a full disk is told from HDF5's reasons, and said with what is free", "[runfile]") {
  CHECK(says_no_space("file write failed: time = x, errno = 28, error message = 'No space left on device'"));
  CHECK(says_no_space("errno = 122, error message = 'Disk quota exceeded'"));
  CHECK_FALSE(says_no_space("errno = 27, error message = 'File too large'"));
  CHECK(no_space_text(12288) == "no space left on device (12288 bytes free)");
  CHECK(write_failure_text("file write failed: time = Wed Nov 25 14:38:17 2026\n, filename = 'x.h5', errno = 27, "
                           "error message = 'File too large', buf = 0x1; write failed") == "File too large");
  CHECK(write_failure_text("unable to flush\nthe cache; more") == "unable to flush the cache");
  CHECK(free_bytes("/tmp") > 0);
  CHECK(free_bytes("/nonexistent/dir") == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("an output is never one of the command's inputs, however it is spelt", "[runfile][errors]") {
  Scratch s;
  const std::string in = s.path("r.h5");
  { RunFile old(check_output(in, false), a_run(1)); }
  fs::create_directory(s.path("d"));
  const std::string other_spelling = s.path("d/../r.h5");
  CHECK(refusal_of(other_spelling, true, {in}) == other_spelling + ": is the input file " + in + "; choose another -o");
  CHECK(refusal_of(in, true, {in}) == in + ": is one of this command's input files; choose another -o");
  fs::create_hard_link(in, s.path("hard.h5"));
  CHECK(refusal_of(s.path("hard.h5"), true, {in}) == s.path("hard.h5") + ": is the input file " + in +
                                                         "; choose another -o");
  CHECK(refusal_of(in, false, {s.path("gone.h5")}) == in + ": the file exists; use --force to overwrite it, or "
                                                          "choose another -o");
}

TEST_CASE("a file written beside its place: a name of its own, synced, moved in whole, else removed", "[runfile]") {
  Scratch s;
  const std::string out = s.path("m.json");
  std::ofstream(out + ".partial") << "the user's own notes";  // a name like the old fixed one: never touched
  {
    FileBeside f(check_output(out, false));
    CHECK(f.temporary() == partial_path(out));
    f.stream() << "half";
  }  // not committed: an error on the way
  CHECK_FALSE(fs::exists(partial_path(out)));
  CHECK_FALSE(fs::exists(out));
  std::ofstream(partial_path(out)) << "left by a process of the same PID";
  {
    FileBeside f(check_output(out, false));
    CHECK(f.temporary() == partial_path(out) + "-2");  // created with O_EXCL: the one there is not reused
    f.stream() << "whole";
    f.commit();
  }
  CHECK(read_text(out) == "whole");
  CHECK(read_text(out + ".partial") == "the user's own notes");
  // Checked while the name was free; a file appeared there since: without --force it stays.
  const OutputTarget late = check_output(s.path("late.json"), false);
  {
    FileBeside f(late);
    std::ofstream(s.path("late.json")) << "someone else's";
    f.stream() << "ours";
    try {
      f.commit();
      FAIL("a file that appeared meanwhile was replaced without --force");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()) == s.path("late.json") + ": a file of that name appeared meanwhile; use --force to "
                                                           "overwrite it");
    }
  }
  CHECK(read_text(s.path("late.json")) == "someone else's");
  // Replacing (--force): the old file is locked while the new one is written.
  {
    FileBeside f(check_output(out, true));
    CHECK(being_written(out));
    CHECK(refusal(out, true).find("another process is writing it") != std::string::npos);
    f.stream() << "newer";
    f.commit();
  }
  CHECK_FALSE(being_written(out));
  CHECK(read_text(out) == "newer");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(s.path("."))) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"late.json", "m.json", "m.json.partial", partial_path("m.json")});
}
