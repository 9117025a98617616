// The CUDA runtime's last-error rule (device/call_errors.hpp) against a test double that keeps one last error as
// the runtime does: a query of busy work sets NotReady, a failing launch sets its error, take_last returns and
// clears. Runs without a GPU: it tests the rule, not the device.
#include <catch2/catch.hpp>

#include "device/call_errors.hpp"

namespace {

struct FakeRuntime {
  static constexpr int success = 0;
  static constexpr int not_ready = 600;  // cudaErrorNotReady's value
  static inline int last = 0;
  static int take_last() {
    const int e = last;
    last = 0;
    return e;
  }
  // A call that fails sets the last error, as every CUDA runtime call does.
  static int call(int rc) {
    if (rc != success) last = rc;
    return rc;
  }
};

int busy_query() { return FakeRuntime::call(FakeRuntime::not_ready); }
int idle_query() { return FakeRuntime::call(FakeRuntime::success); }
void good_launch() {}
void bad_launch() { FakeRuntime::call(98); }  // cudaErrorInvalidDeviceFunction: no kernel image for this device

}  // namespace

TEST_CASE("the double is faithful: a bare launch check after a NotReady poll reports the poll") {
  FakeRuntime::last = 0;
  busy_query();
  good_launch();
  CHECK(FakeRuntime::take_last() == FakeRuntime::not_ready);  // the defect the rule exists for
}

TEST_CASE("a NotReady poll means not yet, and the next launch succeeds") {
  FakeRuntime::last = 0;
  const gpuscale::QueryAnswer q = gpuscale::query_done<FakeRuntime>(busy_query);
  CHECK_FALSE(q.done);
  CHECK(q.error == 0);
  CHECK(gpuscale::launch_checked<FakeRuntime>(good_launch) == 0);
}

TEST_CASE("a launch after an earlier, handled error is checked by its own launch alone") {
  FakeRuntime::last = 0;
  busy_query();  // a query made without the rule: its NotReady is still there
  CHECK(gpuscale::launch_checked<FakeRuntime>(good_launch) == 0);
  FakeRuntime::call(2);  // cudaErrorMemoryAllocation, reported by its own check
  CHECK(gpuscale::launch_checked<FakeRuntime>(good_launch) == 0);
}

TEST_CASE("a launch that fails reports its own error, and leaves none behind") {
  FakeRuntime::last = 0;
  CHECK(gpuscale::launch_checked<FakeRuntime>(bad_launch) == 98);
  CHECK(FakeRuntime::last == 0);
}

TEST_CASE("a query that is done, and one that fails, answer so") {
  FakeRuntime::last = 0;
  CHECK(gpuscale::query_done<FakeRuntime>(idle_query).done);
  const gpuscale::QueryAnswer q = gpuscale::query_done<FakeRuntime>([] { return FakeRuntime::call(700); });
  CHECK_FALSE(q.done);
  CHECK(q.error == 700);  // cudaErrorIllegalAddress: the caller's to report
  CHECK(FakeRuntime::last == 0);
}
