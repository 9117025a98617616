// The p2p workload from its parameters alone: its keys (the window among
// them), the estimate's view of a case (turns, wire bytes, skipped shapes),
// its memory, what one operation carries, and the report in OSU's terms
// (latency in us, bandwidth in MB/s, no bus bandwidth).
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
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

// The report's row of a p2p case of `keys` whose operation took `op_time_s` and carried `op_bytes`.
ReportRow analysed_row(const std::string& keys, double op_time_s, double op_bytes, std::size_t index = 0) {
  CaseRecord c;
  c.params = p2p_params(keys);
  ReportRow r;
  r.case_index = index;
  r.name = "p";
  r.workload = "p2p";
  r.params = c.params.without(sample_count_keys());  // as the report keeps them
  r.ranks = 2;
  r.scope = Scope::world;
  r.groups = 1;
  r.group_size = 2;
  r.comm = CommKind::mpi;
  r.op_time_s = op_time_s;
  r.algbw_gbps = op_bytes / op_time_s / 1e9;
  r.busbw_gbps = 7.77;  // not algbw: a table that shows it shows this number
  p2p_type().analysis()->row(RunRecord{}, c, RowSettings{}, r);
  return r;
}

}  // namespace

TEST_CASE("p2p parses its keys once, with OSU's defaults", "[p2p]") {
  const P2pParams d = P2pParams::from(p2p_params(""));
  CHECK(d.pattern == P2pPattern::latency);
  CHECK(d.bytes == 8);
  CHECK(d.iters == 100);
  CHECK(d.window == 1);  // a ping-pong sends one message at a time, whatever the window
  CHECK(d.scope == Scope::world);
  const P2pParams b =
      P2pParams::from(p2p_params("pattern = \"bibw\"\nbytes = 1024\niters = 5\nscope = \"inter-node\""));
  CHECK(b.pattern == P2pPattern::bibw);
  CHECK(b.bytes == 1024);
  CHECK(b.iters == 5);
  CHECK(b.window == 64);  // osu_bw's and osu_bibw's
  CHECK(b.scope == Scope::inter_node);
  CHECK(P2pParams::from(p2p_params("pattern = \"bw\"\nwindow = 8")).window == 8);
  // A file written before the window: its bw cases sent one message at a time.
  CHECK(P2pParams::from(p2p_params("pattern = \"bw\"").without({"window"})).window == 1);
  CHECK(p2p_type().scope(p2p_params("scope = \"intra-node\"")) == Scope::intra_node);
}

TEST_CASE("a window below one message or past its maximum is refused with the key and the bound", "[p2p]") {
  CHECK_THROWS_WITH(p2p_params("pattern = \"bw\"\nwindow = 0"),
                    Catch::Contains("key 'window' must be at least 1, got 0"));
  CHECK_THROWS_WITH(p2p_params("window = 1048577"),
                    Catch::Contains("key 'window' must be at most 1048576, got 1048577"));
  CHECK_THROWS_WITH(p2p_params("window = \"many\""), Catch::Contains("key 'window' must be an integer"));
}

TEST_CASE("one operation is OSU's iteration: a round trip, a window, or a window each way", "[p2p]") {
  CHECK(P2pWorkload(P2pParams::from(p2p_params("bytes = 1000"))).op_bytes() == 2 * 1000.0);
  CHECK(P2pWorkload(P2pParams::from(p2p_params("pattern = \"bw\"\nbytes = 1000"))).op_bytes() == 64 * 1000.0);
  const P2pWorkload bibw(P2pParams::from(p2p_params("pattern = \"bibw\"\nbytes = 1002\nwindow = 4\niters = 3")));
  CHECK(bibw.op_bytes() == 2 * 4 * 1000.0);  // whole 4-byte elements
  CHECK(bibw.bytes_per_sample() == 3 * 2 * 4 * 1000.0);
}

TEST_CASE("the estimate's p2p case: each pair a turn, its wire bytes, and the shapes a run skips", "[p2p]") {
  const WorkloadType& t = p2p_type();
  const CaseWork lat = t.work(p2p_params("bytes = 1000\niters = 10"), JobShape{4, 1, 2});
  CHECK_FALSE(lat.skipped());
  CHECK(lat.turns == 2);                            // one group of 4: two pairs
  CHECK(lat.sample.wire_bytes == 2 * 1000.0 * 10);  // a round trip carries the message twice
  CHECK(lat.sample.transfers == 20);
  const CaseWork bw = t.work(p2p_params("pattern = \"bw\"\nbytes = 1000\niters = 10\nwindow = 8"), JobShape{2, 1, 2});
  CHECK(bw.sample.wire_bytes == 1000.0 * 8 * 10);  // a window of 8 messages per iteration
  CHECK(bw.sample.transfers == 80);
  CHECK(bw.turns == 1);
  const CaseWork bibw = t.work(p2p_params("pattern = \"bibw\"\nbytes = 1000\niters = 10"), JobShape{2, 1, 2});
  CHECK(bibw.sample.wire_bytes == 1000.0 * 64 * 10);  // an exchange's two messages cross at once: priced as one
  CHECK(t.work(p2p_params(""), JobShape{3, 1, 2}).skipped());                         // a group of 3 has no pairs
  CHECK(t.work(p2p_params("scope = \"inter-node\""), JobShape{2, 1, 2}).skipped());  // one node
  CHECK_FALSE(t.work(p2p_params("scope = \"inter-node\""), JobShape{4, 2, 2}).skipped());
  const MemoryNeed m = t.memory(p2p_params("bytes = 4096"), true);
  CHECK(m.device_bytes == 2 * 4096 + 4);
  CHECK(t.memory(p2p_params("pattern = \"bw\"\nbytes = 4096\nwindow = 1000"), true).device_bytes == m.device_bytes);
  CHECK(t.memory(p2p_params("bytes = 4096"), false).host_bytes > m.host_bytes);  // MPI stages through host memory
  CHECK(t.unsupported(p2p_params(""), RunTarget{Backend::cpu, CommKind::mpi}).empty());
}

TEST_CASE("the report gives a ping-pong's one-way latency in us and a window's bandwidth in MB/s", "[p2p]") {
  const ReportRow lat = analysed_row("", 3e-6, 16);
  REQUIRE(lat.figure("latency_s"));
  CHECK(lat.figure("latency_s")->value == Approx(1.5e-6));
  CHECK(lat.figure("latency_s")->head == "latency");
  REQUIRE(lat.figure("latency_us"));
  CHECK(lat.figure("latency_us")->value == Approx(1.5));
  CHECK_FALSE(lat.figure("bandwidth_mbps"));
  // 64 messages of 1 MB in 5 ms: 12.8 GB/s, 12800 MB/s as OSU counts (10^6 B/s).
  const ReportRow bw = analysed_row("pattern = \"bw\"\nbytes = 1000000", 5e-3, 64e6);
  REQUIRE(bw.figure("bandwidth_mbps"));
  CHECK(bw.figure("bandwidth_mbps")->value == Approx(12800));
  CHECK(bw.figure("bandwidth_mbps")->head.empty());  // the block prints it, in OSU's column
  CHECK_FALSE(bw.figure("latency_s"));
  CHECK_FALSE(bw.figure("latency_us"));
}

TEST_CASE("the table shows p2p in OSU's columns, with no bus bandwidth, --wide too", "[p2p]") {
  std::vector<ReportRow> rows{analysed_row("bytes = 8", 0.8e-6, 16, 0),
                              analysed_row("pattern = \"bw\"\nbytes = 1048576", 4.2e-3, 64 * 1048576.0, 1),
                              analysed_row("pattern = \"bibw\"\nbytes = 1048576", 4.5e-3, 128 * 1048576.0, 2)};
  RunRecord run;
  run.nodes = 1;
  const std::string table = render_table("p.h5", run, rows);
  INFO(table);
  CHECK(table.find("#  pattern  size (B)  latency (us)  bandwidth (MB/s)  slowest   status\n") != std::string::npos);
  CHECK(table.find("1  latency         8          0.40                 -  r0 1.00x  ok\n") != std::string::npos);
  CHECK(table.find("2  bw        1048576             -          15978.30") != std::string::npos);  // 64 MiB / 4.2 ms
  CHECK(table.find("3  bibw      1048576             -          29826.16") != std::string::npos);
  CHECK(table.find("p: p2p, threads=1 iters=100 window=64 scope=world, parallel, 2 rank(s) on 1\n"
                   "  node(s), comm mpi\n") != std::string::npos);
  CHECK(table.find("MB/s = 10^6 B/s") != std::string::npos);
  CHECK(table.find("busbw") == std::string::npos);
  CHECK(table.find("7.77") == std::string::npos);
  const std::string wide = render_table("p.h5", run, rows, true);
  CHECK(wide.find("busbw") != std::string::npos);  // the column, for other transfers
  CHECK(wide.find("7.77") == std::string::npos);   // empty for p2p's rows
}

TEST_CASE("a latency experiment's line leaves out the window, which a ping-pong does not use", "[p2p]") {
  std::vector<ReportRow> rows{analysed_row("bytes = 8", 0.8e-6, 16, 0), analysed_row("bytes = 66", 0.9e-6, 128, 1)};
  const std::string table = render_table("p.h5", RunRecord{}, rows);
  INFO(table);
  CHECK(table.find("p: p2p, threads=1 pattern=latency iters=100 scope=world, parallel, 2 rank(s)") !=
        std::string::npos);
  CHECK(table.find("window") == std::string::npos);
  CHECK(table.find("bandwidth") == std::string::npos);
  CHECK(table.find("\n2        64          0.45") != std::string::npos);  // the message as sent: whole elements
}
