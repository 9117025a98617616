#include "report/verdict.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "core/text.hpp"
#include "report/expectations.hpp"
#include "report/report_notes.hpp"

namespace gpuscale {

namespace {

// One part of the machine while the rows are folded: each reason with the cases (numbered from 1) it came from.
struct Part {
  SubjectVerdict v;
  std::vector<std::pair<std::string, std::vector<std::size_t>>> reasons;

  void raise(Severity s, const std::string& reason, std::size_t case_number) {
    v.severity = std::max(v.severity, s);
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == reason; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {reason, {}});
    if (case_number > 0 && std::find(it->second.begin(), it->second.end(), case_number) == it->second.end()) {
      it->second.push_back(case_number);
    }
  }
};

// "case 3", "cases 1-4, 7, 8": the report's notes' list of cases (report_notes.hpp).
std::string cases_text(const std::vector<std::size_t>& n) { return (n.size() == 1 ? "case " : "cases ") + case_list(n); }

SubjectVerdict finished(Part p) {
  for (auto& [reason, cases] : p.reasons) {
    p.v.reasons.push_back(cases.empty() ? reason : reason + " (" + cases_text(cases) + ")");
  }
  return std::move(p.v);
}

struct Board {
  std::vector<Part> nodes, gpus, links;
  Part overall;
  std::map<std::string, std::vector<std::size_t>> skipped;  // reason -> cases

  Part& node(const std::string& host) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const Part& p) { return p.v.name == host; });
    if (it != nodes.end()) return *it;
    nodes.push_back({});
    nodes.back().v.name = nodes.back().v.host = host;
    return nodes.back();
  }
  Part* gpu(int rank) {
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const Part& p) { return p.v.rank == rank; });
    return it == gpus.end() ? nullptr : &*it;
  }
  Part& link(const std::string& a, const std::string& b) {
    const std::string name = a + "-" + b;
    auto it = std::find_if(links.begin(), links.end(), [&](const Part& p) { return p.v.name == name; });
    if (it != links.end()) return *it;
    links.push_back({});
    links.back().v.name = name;
    links.back().v.host_a = a;
    links.back().v.host_b = b;
    return links.back();
  }
};

std::string host_of(const RunRecord& run, std::size_t rank) {
  if (rank >= run.ranks.size()) return "node 0";
  const RankRecord& r = run.ranks[rank];
  // A name from a file, shown escaped in every view (a control character would split a line, or a node in two).
  return r.hostname.empty() ? "node " + std::to_string(r.node_index) : printable(r.hostname);
}

// Every node and GPU of the job, PASS until a row says otherwise.
Board board_of(const RunRecord& run) {
  Board b;
  for (std::size_t k = 0; k < std::max<std::size_t>(1, run.ranks.size()); ++k) {
    const std::string host = host_of(run, k);
    b.node(host);
    Part g;
    g.v.rank = static_cast<int>(k);
    g.v.host = host;
    g.v.gpu = k < run.ranks.size() ? run.ranks[k].gpu_index : -1;
    if (g.v.gpu < 0 && k < run.ranks.size() && run.ranks[k].device_kind == "cuda") g.v.gpu = run.ranks[k].local_rank;
    g.v.name = "rank " + std::to_string(k) + " (" + host + (g.v.gpu >= 0 ? ", GPU " + std::to_string(g.v.gpu) : "") +
               ")";
    b.gpus.push_back(std::move(g));
  }
  return b;
}

// A case measured while the host was busy or a rank descheduled cannot fail a part: what it found is a warning
// that says why it cannot judge (the host's share, not the part's, may have made it slow).
void fold_findings(const ReportRow& r, Board& b) {
  const std::size_t number = r.case_index + 1;
  const std::string noise = !r.host.busy.empty() ? "host busy" : !r.host.descheduled.empty() ? "descheduled" : "";
  for (const Finding& f : r.findings) {
    Severity s = f.severity;
    std::string reason = f.reason;
    if (s == Severity::fail && !noise.empty()) {
      s = Severity::warn;
      reason = "cannot judge (" + noise + " while measured): " + reason;
    }
    if (f.kind == SubjectKind::node) b.node(f.subject).raise(s, reason, number);
    if (f.kind == SubjectKind::link) b.link(f.host_a, f.host_b).raise(s, reason, number);
    if (f.kind == SubjectKind::gpu) {
      if (Part* g = b.gpu(f.rank)) g->raise(s, reason, number);
    }
  }
}

// What the host did beside a case: a busy node or a descheduled rank makes its numbers doubtful (warn).
void fold_host(const RunRecord& run, const ReportRow& r, Board& b) {
  const std::size_t number = r.case_index + 1;
  if (!r.host.busy.empty() && r.host.others_node >= 0) {
    for (std::size_t k = 0; k < run.ranks.size(); ++k) {
      if (run.ranks[k].node_index != r.host.others_node) continue;
      b.node(host_of(run, k)).raise(Severity::warn, "host busy: other work took its CPUs, so numbers are doubtful",
                                    number);
      break;
    }
  }
  if (!r.host.descheduled.empty() && r.host.wait_rank >= 0) {
    if (Part* g = b.gpu(r.host.wait_rank)) {
      g->raise(Severity::warn, "descheduled: its rank waited for a CPU, so numbers are doubtful", number);
    }
  }
  if (!r.host.oversubscribed.empty()) b.overall.raise(Severity::warn, "oversubscribed: " + r.host.oversubscribed, 0);
}

// Ranks and nodes named as stragglers: fail where that happened in at least kStragglerFailShare of the cases
// of several ranks (and twice or more) on a quiet host; warn otherwise.
struct Straggles {
  int count = 0, doubtful = 0;
  double worst = 1.0;
  std::vector<std::size_t> cases;
};

void judge_straggles(const std::map<std::string, Straggles>& s, int cases, std::map<std::string, Part*> parts) {
  for (const auto& [name, st] : s) {
    Part* p = parts[name];
    if (!p) continue;
    const int quiet = st.count - st.doubtful;
    const bool fails = quiet >= 2 && quiet >= kStragglerFailShare * cases;
    std::string reason = "straggling: up to " + format_number("%.2fx", st.worst) + " the others' median in " +
                         std::to_string(st.count) + " of " + std::to_string(cases) + " cases of several ranks";
    if (st.doubtful > 0) reason += " (" + std::to_string(st.doubtful) + " of them on a busy host)";
    for (std::size_t n : st.cases) p->raise(fails ? Severity::fail : Severity::warn, reason, n);
  }
}

void fold_stragglers(const RunRecord& run, const std::vector<ReportRow>& rows, Board& b) {
  std::map<std::string, Straggles> ranks, nodes;
  int cases = 0;
  for (const auto& r : rows) {
    if (r.status == CaseStatus::skipped || r.ranks < 2) continue;
    ++cases;
    const bool doubtful = r.host.doubtful();
    const auto note = [&](Straggles& s, double ratio) {
      s.count += 1;
      s.doubtful += doubtful ? 1 : 0;
      s.worst = std::max(s.worst, ratio);
      s.cases.push_back(r.case_index + 1);
    };
    for (const auto& s : r.stragglers.ranks) note(ranks[std::to_string(s.rank)], s.ratio);
    for (const auto& s : r.stragglers.nodes) {
      note(nodes[s.host.empty() && !s.ranks.empty() ? host_of(run, static_cast<std::size_t>(s.ranks[0])) : s.host],
           s.ratio);
    }
  }
  std::map<std::string, Part*> gpu_parts, node_parts;
  for (auto& g : b.gpus) gpu_parts[std::to_string(g.v.rank)] = &g;
  for (const auto& [host, st] : nodes) node_parts[host] = &b.node(host);
  judge_straggles(ranks, cases, gpu_parts);
  judge_straggles(nodes, cases, node_parts);
}

// Limits that failed: on a one-rank job its GPU's; otherwise the run's (a case on several ranks cannot tell which
// part was short). A limit that failed on a busy host says so, and blames no GPU.
void fold_limits(const std::vector<ReportRow>& rows, Board& b) {
  for (const LimitCheck& c : check_expectations(rows)) {
    if (c.holds || !c.not_applicable.empty()) continue;
    std::string reason = "limit " + c.limit + " " + format_sig3(c.expected) + " not met: " +
                         (c.measured ? "measured " + format_sig3(*c.measured) : c.why);
    // What the host did is the node's or rank's warning; here only that it was so ("host busy", "descheduled").
    if (!c.host.empty()) reason += " (" + c.host.substr(0, c.host.find(':')) + ")";
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const ReportRow& r) {
      return r.case_index == c.case_index;
    });
    const bool one_rank = row != rows.end() && row->ranks == 1 && b.gpus.size() == 1;
    Part& part = one_rank && c.host.empty() ? b.gpus.front() : b.overall;
    part.raise(Severity::fail, reason, c.case_index + 1);
  }
}

void finish(Board& b, Verdict& v) {
  for (auto& p : b.nodes) v.nodes.push_back(finished(std::move(p)));
  for (auto& p : b.gpus) v.gpus.push_back(finished(std::move(p)));
  for (auto& p : b.links) v.links.push_back(finished(std::move(p)));
  SubjectVerdict overall = finished(std::move(b.overall));
  v.reasons = overall.reasons;
  v.overall = overall.severity;
  for (const auto* parts : {&v.nodes, &v.gpus, &v.links}) {
    for (const auto& p : *parts) v.overall = std::max(v.overall, p.severity);
  }
  for (const auto& [reason, cases] : b.skipped) {
    v.notes.push_back(std::to_string(cases.size()) + " case(s) skipped, not judged: " + reason + " (" +
                      cases_text(cases) + ")");
  }
}

}  // namespace

Verdict judge_run(const std::string& path, const RunRecord& run, const std::vector<ReportRow>& rows) {
  Verdict v;
  v.file = path;
  Board b = board_of(run);
  for (const auto& r : rows) {
    if (r.status == CaseStatus::skipped) {
      b.skipped[r.status_reason].push_back(r.case_index + 1);
      continue;
    }
    ++v.cases_ran;
    fold_findings(r, b);
    fold_host(run, r, b);
  }
  fold_stragglers(run, rows, b);
  fold_limits(rows, b);
  finish(b, v);
  if (!run.complete) {
    v.possible = false;
    v.why_not = "the run did not complete (status: " + run.status + "): " + std::to_string(rows.size()) + " of " +
                std::to_string(run.cases_planned) + " case(s) are in the file, so the others were not judged";
  } else if (v.cases_ran == 0) {
    v.possible = false;
    v.why_not = "no case ran (" + std::to_string(rows.size()) + " skipped), so nothing was measured to judge";
  }
  return v;
}

const char* severity_name(Severity s) {
  return s == Severity::fail ? "FAIL" : s == Severity::warn ? "WARN" : "PASS";
}

int verdict_exit_code(const Verdict& v) { return !v.possible ? 2 : v.overall == Severity::fail ? 1 : 0; }

std::vector<std::string> nodes_to_drain(const Verdict& v) {
  std::vector<std::string> out;
  for (const auto& n : v.nodes) {
    const bool gpu_fails = std::any_of(v.gpus.begin(), v.gpus.end(), [&](const SubjectVerdict& g) {
      return g.host == n.host && g.severity == Severity::fail;
    });
    if (n.severity == Severity::fail || gpu_fails) out.push_back(n.name);
  }
  return out;
}

namespace {

// A hostname as a prefix and the number it ends in ("" and -1 where it ends in none, or one too long).
struct NumberedHost {
  std::string prefix, digits;
};
NumberedHost split_host(const std::string& h) {
  std::size_t at = h.size();
  while (at > 0 && std::isdigit(static_cast<unsigned char>(h[at - 1]))) --at;
  if (at == h.size() || h.size() - at > 18) return {h, ""};
  return {h.substr(0, at), h.substr(at)};
}

// "01-02,10": sorted, runs of consecutive numbers as ranges, each written `width` wide (0: as it is).
std::string number_list(std::vector<long long> numbers, std::size_t width) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  const auto num = [&](long long x) {
    std::string s = std::to_string(x);
    return width > s.size() ? std::string(width - s.size(), '0') + s : s;
  };
  std::string list;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    list += (list.empty() ? "" : ",") + num(numbers[i]) + (j > i ? "-" + num(numbers[j]) : "");
    i = j + 1;
  }
  return numbers.size() == 1 ? list : "[" + list + "]";
}

}  // namespace

std::string slurm_hostlist(const std::vector<std::string>& hosts) {
  // Zero-padded numbers keep their width; a number of that width without a leading zero joins them (gpu[01-10]).
  std::map<std::string, std::size_t> padded;
  for (const auto& h : hosts) {
    const NumberedHost n = split_host(h);
    if (n.digits.size() > 1 && n.digits[0] == '0') padded[n.prefix] = n.digits.size();
  }
  std::vector<std::pair<std::pair<std::string, std::size_t>, std::vector<long long>>> groups;
  std::string out;
  std::set<std::string> listed;  // names without a number, each once by its exact name
  for (const auto& h : hosts) {
    const NumberedHost n = split_host(h);
    if (n.digits.empty()) {
      if (listed.insert(h).second) out += (out.empty() ? "" : ",") + h;
      continue;
    }
    const auto pad = padded.find(n.prefix);
    const bool fits = pad != padded.end() && (n.digits[0] == '0' || n.digits.size() == pad->second);
    const std::pair<std::string, std::size_t> key{n.prefix, fits ? pad->second : 0};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(std::stoll(n.digits));
  }
  for (const auto& [key, numbers] : groups) {
    out += (out.empty() ? "" : ",") + key.first + number_list(numbers, key.second);
  }
  return out;
}

}  // namespace gpuscale
