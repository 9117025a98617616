// The p2p workload from its parameters alone: its keys, the estimate's view of
// a case (turns, wire bytes, skipped shapes), its memory, and the latency it
// adds to the report.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "core/plan.hpp"
#include "report/analysis.hpp"
#include "workloads/p2p.hpp"

using namespace gpuscale;

namespace {

Params p2p_params(const std::string& keys) {
  const Config cfg = parse_config(
      "[[experiment]]\nname = \"t\"\nworkload = \"p2p\"\n" + keys + "\nmodes = [\"serial\"]\n", "t.toml", {},
      workload_schemas());
  return expand(cfg).at(0).params;
}

}  // namespace

TEST_CASE("p2p parses its keys once, with OSU's defaults", "[p2p]") {
  const P2pParams d = P2pParams::from(p2p_params(""));
  CHECK(d.pattern == P2pPattern::latency);
  CHECK(d.bytes == 8);
  CHECK(d.iters == 100);
  CHECK(d.scope == Scope::world);
  const P2pParams b =
      P2pParams::from(p2p_params("pattern = \"bibw\"\nbytes = 1024\niters = 5\nscope = \"inter-node\""));
  CHECK(b.pattern == P2pPattern::bibw);
  CHECK(b.bytes == 1024);
  CHECK(b.iters == 5);
  CHECK(b.scope == Scope::inter_node);
  CHECK(p2p_type().scope(p2p_params("scope = \"intra-node\"")) == Scope::intra_node);
}

TEST_CASE("the estimate's p2p case: each pair a turn, its wire bytes, and the shapes a run skips", "[p2p]") {
  const WorkloadType& t = p2p_type();
  const CaseWork lat = t.work(p2p_params("bytes = 1000\niters = 10"), JobShape{4, 1, 2});
  CHECK_FALSE(lat.skipped());
  CHECK(lat.turns == 2);                            // one group of 4: two pairs
  CHECK(lat.sample.wire_bytes == 2 * 1000.0 * 10);  // a round trip carries the message twice
  CHECK(lat.sample.transfers == 20);
  const CaseWork bw = t.work(p2p_params("pattern = \"bw\"\nbytes = 1000\niters = 10"), JobShape{2, 1, 2});
  CHECK(bw.sample.wire_bytes == 1000.0 * 10);
  CHECK(bw.turns == 1);
  CHECK(t.work(p2p_params(""), JobShape{3, 1, 2}).skipped());                         // a group of 3 has no pairs
  CHECK(t.work(p2p_params("scope = \"inter-node\""), JobShape{2, 1, 2}).skipped());  // one node
  CHECK_FALSE(t.work(p2p_params("scope = \"inter-node\""), JobShape{4, 2, 2}).skipped());
  const MemoryNeed m = t.memory(p2p_params("bytes = 4096"), true);
  CHECK(m.device_bytes == 2 * 4096 + 4);
  CHECK(t.memory(p2p_params("bytes = 4096"), false).host_bytes > m.host_bytes);  // MPI stages through host memory
  CHECK(t.unsupported(p2p_params(""), RunTarget{Backend::cpu, CommKind::mpi}).empty());
}

TEST_CASE("the report gives a ping-pong's one-way latency, half its round trip, and nothing for bandwidth", "[p2p]") {
  const RowAnalysis* a = p2p_type().analysis();
  REQUIRE(a);
  CaseRecord c;
  c.params = p2p_params("");
  ReportRow r;
  r.op_time_s = 3e-6;
  a->row(RunRecord{}, c, RowSettings{}, r);
  REQUIRE(r.figure("latency_s"));
  CHECK(r.figure("latency_s")->value == Approx(1.5e-6));
  CHECK(r.figure("latency_s")->head == "latency");
  ReportRow b;
  b.op_time_s = 3e-6;
  c.params = p2p_params("pattern = \"bw\"");
  a->row(RunRecord{}, c, RowSettings{}, b);
  CHECK(b.figures.empty());
}
