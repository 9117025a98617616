// The bound a case's stages get before the job is aborted.
#include <catch2/catch.hpp>

#include "runner/case_timeout.hpp"

using namespace gpuscale;

TEST_CASE("a fixed timeout bounds every stage alike", "[timeout]") {
  const CaseTimeout t{45.0};
  CHECK_FALSE(t.automatic());
  CHECK(t.start_s(0.5) == 45.0);
  CHECK(t.timed_s(2.0, 0.5) == 45.0);
}

TEST_CASE("auto: setup and warm-up get a floor that grows with warmup_s", "[timeout]") {
  const CaseTimeout t;
  CHECK(t.automatic());
  CHECK(t.start_s(0.0) == 60.0);
  CHECK(t.start_s(0.5) == 61.0);
  CHECK(t.start_s(30.0) == 120.0);
}

TEST_CASE("auto: from the last sample, ten times the slowest sample yet, at least 30 s", "[timeout]") {
  const CaseTimeout t;
  CHECK(t.timed_s(0.001, 0.0) == 30.0);  // quick samples: a dead peer ends the case 30 s after the last one
  CHECK(t.timed_s(20.0, 0.0) == 200.0);  // samples of 20 s: 200 s
  CHECK(t.timed_s(0.0, 0.5) == 61.0);    // no sample to go by
}

TEST_CASE("auto: a rank waiting for another turn gives it ten times its samples at the slowest rate",
          "[timeout]") {
  const CaseTimeout t;
  CHECK(t.waiting_s(10, 20.0, 0.0) == 2000.0);
  CHECK(t.waiting_s(10, 0.001, 0.0) == 300.0);  // at least 10 x the floor
  CHECK(t.waiting_s(10, 0.0, 0.5) == 610.0);
  CHECK(CaseTimeout{45.0}.waiting_s(10, 2.0, 0.0) == 45.0);
}

TEST_CASE("rank 0 writing a case gets the case's bound (fixed, or the setup floor) plus 1 s per 10 MB", "[timeout]") {
  CHECK(CaseTimeout{10.0}.write_s(0.0) == 10.0);
  CHECK(CaseTimeout{10.0}.write_s(72e6) == Approx(17.2));
  CHECK(CaseTimeout{}.write_s(5e6) == Approx(60.5));
  CHECK(CaseTimeout{}.write_s(-1.0) == 60.0);
}

TEST_CASE("each edge of a run: 120 s on auto, else the timeout, at least 30 s", "[timeout]") {
  CHECK(CaseTimeout{}.edge_s() == kRunEdgeTimeoutS);
  CHECK(kRunEdgeTimeoutS == 120.0);
  CHECK(CaseTimeout{5.0}.edge_s() == 30.0);
  CHECK(CaseTimeout{0.5}.edge_s() == 30.0);
  CHECK(CaseTimeout{45.0}.edge_s() == 45.0);
  CHECK(CaseTimeout{600.0}.edge_s() == 600.0);
}
