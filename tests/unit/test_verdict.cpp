// report --verdict (report/verdict.hpp): the judgments of made-up rows folded onto nodes, ranks and links, the exit
// codes, and Slurm's hostlist.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"
#include "io/result_model.hpp"
#include "report/report.hpp"
#include "report/verdict.hpp"

using namespace gpuscale;

namespace {

// A complete run of `ranks` ranks, `per_node` on each node, on hosts n1, n2, ...
RunRecord job(int ranks, int per_node) {
  RunRecord run;
  run.complete = true;
  run.status = "complete";
  for (int r = 0; r < ranks; ++r) {
    RankRecord rec;
    rec.node_index = r / per_node;
    rec.hostname = "n" + std::to_string(rec.node_index + 1);
    rec.local_rank = r % per_node;
    run.ranks.push_back(rec);
  }
  return run;
}

ReportRow row(std::size_t index, int ranks) {
  ReportRow r;
  r.case_index = index;
  r.ranks = ranks;
  r.status = CaseStatus::ok;
  return r;
}

// Rank `rank` straggles in row `r` (ratio x the others).
void straggle(ReportRow& r, int rank, double ratio) {
  Straggler s;
  s.rank = rank;
  s.ratio = ratio;
  r.stragglers.ranks.push_back(s);
}

const SubjectVerdict& gpu(const Verdict& v, int rank) { return v.gpus.at(static_cast<std::size_t>(rank)); }

}  // namespace

TEST_CASE("verdict: a quiet run with nothing found passes every part", "[verdict]") {
  const Verdict v = judge_run("f.h5", job(4, 2), {row(0, 4), row(1, 4)});
  CHECK(v.possible);
  CHECK(v.overall == Severity::pass);
  CHECK(v.cases_ran == 2);
  REQUIRE(v.nodes.size() == 2);
  CHECK(v.nodes[0].name == "n1");
  CHECK(v.nodes[1].name == "n2");
  REQUIRE(v.gpus.size() == 4);
  CHECK(gpu(v, 3).name == "rank 3 (n2)");
  CHECK(verdict_exit_code(v) == 0);
  CHECK(nodes_to_drain(v).empty());
  CHECK(render_verdict_slurm(v) == "# nothing to drain: overall PASS\n");
  CHECK(render_verdict_hosts(v) == "# nothing to drain: overall PASS\n");
}

TEST_CASE("verdict: a rank straggling in half the cases or more fails, in fewer warns", "[verdict]") {
  std::vector<ReportRow> rows{row(0, 4), row(1, 4), row(2, 4), row(3, 4)};
  straggle(rows[0], 2, 1.5);
  straggle(rows[2], 2, 1.8);
  straggle(rows[1], 1, 1.3);
  const Verdict v = judge_run("f.h5", job(4, 2), rows);
  CHECK(gpu(v, 2).severity == Severity::fail);
  REQUIRE(gpu(v, 2).reasons.size() == 1);
  CHECK(gpu(v, 2).reasons[0] == "straggling: up to 1.80x the others' median in 2 of 4 cases of several ranks "
                                "(cases 1, 3)");
  CHECK(gpu(v, 1).severity == Severity::warn);
  CHECK(gpu(v, 0).severity == Severity::pass);
  CHECK(v.overall == Severity::fail);
  CHECK(verdict_exit_code(v) == 1);
  CHECK(nodes_to_drain(v) == std::vector<std::string>{"n2"});  // rank 2 is on n2
  CHECK(render_verdict_hosts(v) == "n2\n");
}

TEST_CASE("verdict: straggling only on a busy host warns, and says so", "[verdict]") {
  std::vector<ReportRow> rows{row(0, 2), row(1, 2)};
  for (auto& r : rows) {
    straggle(r, 1, 2.0);
    r.host.busy = "others used 60% of node 0's 2 CPUs";
    r.host.others_node = 0;
  }
  const Verdict v = judge_run("f.h5", job(2, 2), rows);
  CHECK(gpu(v, 1).severity == Severity::warn);
  CHECK(gpu(v, 1).reasons[0] == "straggling: up to 2.00x the others' median in 2 of 2 cases of several ranks (2 of "
                                "them on a busy host) (cases 1, 2)");
  CHECK(v.nodes[0].severity == Severity::warn);
  CHECK(v.nodes[0].reasons[0] == "host busy: other work took its CPUs, so numbers are doubtful (cases 1, 2)");
  CHECK(verdict_exit_code(v) == 0);
}

TEST_CASE("verdict: findings of rows land on their node, rank or link, each reason once with its cases", "[verdict]") {
  std::vector<ReportRow> rows{row(0, 4), row(1, 4)};
  for (auto& r : rows) {
    r.findings.push_back({SubjectKind::link, "n1-n2", -1, "n1", "n2", Severity::fail, "node pair at 1 GB/s"});
    r.findings.push_back({SubjectKind::node, "n2", -1, "", "", Severity::fail, "its link is slow"});
  }
  rows[1].findings.push_back({SubjectKind::gpu, "", 3, "", "", Severity::fail, "wrong results: 7 element(s)"});
  rows[1].findings.push_back({SubjectKind::gpu, "", 9, "", "", Severity::fail, "a rank the job does not have"});
  const Verdict v = judge_run("f.h5", job(4, 2), rows);
  REQUIRE(v.links.size() == 1);
  CHECK(v.links[0].name == "n1-n2");
  CHECK(v.links[0].reasons == std::vector<std::string>{"node pair at 1 GB/s (cases 1, 2)"});
  CHECK(v.nodes[1].reasons == std::vector<std::string>{"its link is slow (cases 1, 2)"});
  CHECK(v.nodes[0].severity == Severity::pass);
  CHECK(gpu(v, 3).reasons == std::vector<std::string>{"wrong results: 7 element(s) (case 2)"});
  CHECK(nodes_to_drain(v) == std::vector<std::string>{"n2"});
  const std::string slurm = render_verdict_slurm(v);
  CHECK(slurm == "n2\nscontrol update nodename=n2 state=drain reason='gpuscale: its link is slow (cases 1, 2)'\n");
}

TEST_CASE("verdict: what a case found on a busy host or a descheduled rank warns that it cannot judge, and drains "
          "nothing", "[verdict]") {
  for (const bool busy : {true, false}) {
    std::vector<ReportRow> rows{row(0, 4)};
    rows[0].findings.push_back({SubjectKind::link, "n1-n2", -1, "n1", "n2", Severity::fail, "node pair at 1 GB/s"});
    rows[0].findings.push_back({SubjectKind::node, "n2", -1, "", "", Severity::fail, "its link is slow"});
    rows[0].findings.push_back({SubjectKind::gpu, "", 1, "", "", Severity::warn, "slow clocks"});
    (busy ? rows[0].host.busy : rows[0].host.descheduled) = "made up";
    rows[0].host.wait_rank = rows[0].host.others_node = -1;
    const Verdict v = judge_run("f.h5", job(4, 2), rows);
    const std::string noise = busy ? "host busy" : "descheduled";
    INFO(noise);
    CHECK(v.links[0].severity == Severity::warn);
    CHECK(v.links[0].reasons ==
          std::vector<std::string>{"cannot judge (" + noise + " while measured): node pair at 1 GB/s (case 1)"});
    CHECK(v.nodes[1].severity == Severity::warn);
    CHECK(v.nodes[1].reasons ==
          std::vector<std::string>{"cannot judge (" + noise + " while measured): its link is slow (case 1)"});
    CHECK(gpu(v, 1).reasons == std::vector<std::string>{"slow clocks (case 1)"});  // a warning stays as it was
    CHECK(v.overall == Severity::warn);
    CHECK(nodes_to_drain(v).empty());
    CHECK(render_verdict_slurm(v) == "# nothing to drain: overall WARN\n");
  }
}

TEST_CASE("verdict: skipped cases are noted, not judged, none that ran or an incomplete run gives none",
          "[verdict]") {
  ReportRow skipped = row(1, 2);
  skipped.status = CaseStatus::skipped;
  skipped.status_reason = "scope inter-node needs 2 nodes";
  Verdict v = judge_run("f.h5", job(2, 2), {row(0, 2), skipped});
  CHECK(v.possible);
  CHECK(v.overall == Severity::pass);
  CHECK(v.notes == std::vector<std::string>{"1 case(s) skipped, not judged: scope inter-node needs 2 nodes (case 2)"});
  v = judge_run("f.h5", job(2, 2), {skipped});
  CHECK_FALSE(v.possible);
  CHECK(v.why_not == "no case ran (1 skipped), so nothing was measured to judge");
  CHECK(verdict_exit_code(v) == 2);
  RunRecord cut = job(2, 2);
  cut.complete = false;
  cut.status = "failed: rank 1 died";
  cut.cases_planned = 5;
  v = judge_run("f.h5", cut, {row(0, 2)});
  CHECK(v.why_not == "the run did not complete (status: failed: rank 1 died): 1 of 5 case(s) are in the file, so "
                     "the others were not judged");
  CHECK(verdict_exit_code(v) == 2);
  CHECK(render_verdict_table(v).find("verdict: none possible for f.h5") == 0);
}

TEST_CASE("verdict: a failed limit blames the GPU of a one-rank job, else the run, on a busy host no GPU",
          "[verdict]") {
  ReportRow r = row(0, 1);
  r.median_s = 2.0;
  r.expect = {{"max_median_s", 1.0}};
  Verdict v = judge_run("f.h5", job(1, 1), {r});
  CHECK(gpu(v, 0).severity == Severity::fail);
  CHECK(gpu(v, 0).reasons == std::vector<std::string>{"limit max_median_s 1.00 not met: measured 2.00 (case 1)"});
  r.host.busy = "others used 70% of node 0's 2 CPUs";
  r.host.others_node = 0;
  v = judge_run("f.h5", job(1, 1), {r});
  CHECK(gpu(v, 0).severity == Severity::pass);
  REQUIRE(v.reasons.size() == 1);
  CHECK(v.reasons[0] == "limit max_median_s 1.00 not met: measured 2.00 (host busy) (case 1)");
  CHECK(v.overall == Severity::fail);
  CHECK(nodes_to_drain(v).empty());
}

TEST_CASE("verdict: Slurm's hostlist of node names", "[verdict]") {
  CHECK(slurm_hostlist({}).empty());
  CHECK(slurm_hostlist({"node3"}) == "node3");
  CHECK(slurm_hostlist({"node7", "node3"}) == "node[3,7]");
  CHECK(slurm_hostlist({"node1", "node2", "node3", "node5", "node10"}) == "node[1-3,5,10]");
  CHECK(slurm_hostlist({"gpu01", "gpu02", "gpu10"}) == "gpu[01-02,10]");
  CHECK(slurm_hostlist({"gpu10", "gpu9", "gpu08"}) == "gpu[08,10],gpu9");
  CHECK(slurm_hostlist({"login", "a1", "b2", "a2"}) == "login,a[1-2],b2");
  CHECK(slurm_hostlist({"n1", "n1"}) == "n1");
  // Names that share a prefix or a tail are each kept, by their exact name.
  CHECK(slurm_hostlist({"gpu-node-a", "node-a"}) == "gpu-node-a,node-a");
  CHECK(slurm_hostlist({"node-a", "gpu-node-a", "node1", "node10"}) == "node-a,gpu-node-a,node[1,10]");
}

TEST_CASE("verdict: a node whose name is not a host name gets no command, and a reason is one shell word",
          "[verdict]") {
  for (const std::string evil : {"n1;touch x", "n1$(touch x)", "n1`touch x`", "n1\ntouch x", "n1\rx", "n'1", "-n1",
                                 "n1 x", ""}) {
    CHECK_FALSE(is_host_name(evil));
  }
  for (const std::string fine : {"n1", "gpu-node-a", "node01.cluster.example", "A1"}) CHECK(is_host_name(fine));
  RunRecord run = job(2, 1);
  run.ranks[1].hostname = "n2;touch x\n";
  std::vector<ReportRow> rows{row(0, 2), row(1, 2)};
  for (auto& r : rows) straggle(r, 1, 2.0);
  const Verdict v = judge_run("f.h5", run, rows);
  // Shown escaped wherever it is named, so that a line break in it splits no line.
  CHECK(nodes_to_drain(v) == std::vector<std::string>{"n2;touch x\\x0a"});
  for (const auto& render : {render_verdict_slurm, render_verdict_hosts}) {
    try {
      render(v);
      FAIL("printed a command with the name");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("f.h5: rank 1 ran on a node whose name, 'n2;touch x\\x0a', is not a "
                                             "host name (RFC 1123: letters, digits, '-' and '.'): --format "));
    }
  }
  CHECK(render_verdict_table(v).find("n2;touch x\\x0a") != std::string::npos);
  // The reason is data in single quotes, its own quotes escaped: "the others' median" -> 'the others'\'' median'.
  CHECK(shell_quoted("it's \"x\" $(y)\n") == "'it'\\''s \"x\" $(y)\\x0a'");
}
