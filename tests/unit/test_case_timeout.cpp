// The bound a case's stages get before the job is aborted.
#include <catch2/catch.hpp>

#include "runner/case_timeout.hpp"

using namespace gpuscale;

TEST_CASE("a fixed timeout bounds every stage alike", "[timeout]") {
  const CaseTimeout t{45.0};
  CHECK_FALSE(t.automatic());
  CHECK(t.start_s(0.5) == 45.0);
  CHECK(t.timed_s(10, 2.0, 0.5) == 45.0);
}

TEST_CASE("auto: setup and warm-up get a floor that grows with warmup_s", "[timeout]") {
  const CaseTimeout t;
  CHECK(t.automatic());
  CHECK(t.start_s(0.0) == 60.0);
  CHECK(t.start_s(0.5) == 61.0);
  CHECK(t.start_s(30.0) == 120.0);
}

TEST_CASE("auto: timed samples get ten times what warm-up predicts, at least 30 s", "[timeout]") {
  const CaseTimeout t;
  CHECK(t.timed_s(10, 0.001, 0.0) == 30.0);   // a quick case: a dead peer ends it in 30 s
  CHECK(t.timed_s(10, 2.0, 0.0) == 200.0);    // 10 samples of 2 s: 200 s
  CHECK(t.timed_s(100, 0.5, 0.5) == 500.0);
  CHECK(t.timed_s(10, 0.0, 0.5) == 61.0);     // no warm-up sample: nothing to go by
}
