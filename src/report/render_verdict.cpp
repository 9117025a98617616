// The views of report --verdict (report/verdict.hpp): table, JSON, Slurm and hosts.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"
#include "report/verdict.hpp"

#include <nlohmann/json.hpp>

namespace gpuscale {

namespace {

std::string counts_line(const Verdict& v) {
  std::string s = std::to_string(v.cases_ran) + " case(s) ran on " + std::to_string(v.nodes.size()) + " node(s), " +
                  std::to_string(v.gpus.size()) + " rank(s)";
  if (!v.links.empty()) s += ", " + std::to_string(v.links.size()) + " node pair(s) judged";
  return s;
}

// The parts that warn or fail, one line per reason; the passing ones of each kind in one line.
std::string parts_text(const char* kind, const std::vector<SubjectVerdict>& parts, bool hostlist) {
  std::string out;
  std::vector<std::string> passed;
  for (const auto& p : parts) {
    if (p.severity == Severity::pass) {
      passed.push_back(p.name);
      continue;
    }
    for (const auto& reason : p.reasons) {
      const std::string subject = std::string(kind) == "rank" ? p.name : std::string(kind) + " " + p.name;
      out += wrap(std::string(severity_name(p.severity)) + " " + subject + ": " + reason, 80, "     ");
    }
  }
  if (passed.empty()) return out;
  std::string names = hostlist ? slurm_hostlist(passed) : passed.size() == parts.size()
                                                               ? "all " + std::to_string(parts.size())
                                                               : std::to_string(passed.size()) + " of " +
                                                                     std::to_string(parts.size());
  return out + wrap(std::string("PASS ") + kind + (parts.size() > 1 ? "s: " : ": ") + names, 80, "     ");
}

nlohmann::json parts_json(const std::vector<SubjectVerdict>& parts, SubjectKind kind) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : parts) {
    nlohmann::json j{{"name", p.name}, {"severity", severity_name(p.severity)}, {"reasons", p.reasons}};
    if (kind == SubjectKind::gpu) {
      j["rank"] = p.rank;
      j["host"] = p.host;
      j["gpu"] = p.gpu >= 0 ? nlohmann::json(p.gpu) : nlohmann::json(nullptr);
    }
    if (kind == SubjectKind::link) {
      j["host_a"] = p.host_a;
      j["host_b"] = p.host_b;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// A reason as Slurm keeps it: one line, no double quotes, short.
std::string drain_reason(const Verdict& v, const std::string& host) {
  std::string reason;
  for (const auto& n : v.nodes) {
    if (n.name == host && n.severity == Severity::fail && !n.reasons.empty()) reason = n.reasons.front();
  }
  for (const auto& g : v.gpus) {
    if (reason.empty() && g.host == host && g.severity == Severity::fail && !g.reasons.empty()) {
      reason = g.name + ": " + g.reasons.front();
    }
  }
  if (reason.size() > 200) reason = reason.substr(0, 197) + "...";
  return "gpuscale: " + reason;
}

// Nodes go into a command only by a valid host name: one that is not (a name from a file: it may hold ';', '$(...)'
// or a line break) is refused, naming the file and a rank on it, rather than printed into a line an operator pastes.
void check_host_names(const Verdict& v, const std::vector<std::string>& hosts, const char* format) {
  for (const auto& host : hosts) {
    if (is_host_name(host)) continue;
    std::string rank;
    for (const auto& g : v.gpus) {
      if (g.host == host && rank.empty()) rank = "rank " + std::to_string(g.rank) + " ran on ";
    }
    throw InputError(v.file + ": " + rank + "a node whose name, " + shell_quoted(host) + ", is not a host name "
                     "(RFC 1123: letters, digits, '-' and '.'): --format " + format + " prints no command or list "
                     "with it; 'report --verdict' (table or json) shows the verdict");
  }
}

}  // namespace

std::string render_verdict_table(const Verdict& v) {
  if (!v.possible) return wrap("verdict: none possible for " + v.file + ": " + v.why_not);
  std::string out = wrap(std::string("verdict: ") + severity_name(v.overall) + " (" + v.file + ": " +
                         counts_line(v) + ")");
  for (const auto& reason : v.reasons) {
    out += wrap(std::string(severity_name(v.overall == Severity::pass ? Severity::warn : v.overall)) +
                    " run: " + reason, 80, "     ");
  }
  out += parts_text("node", v.nodes, true);
  out += parts_text("rank", v.gpus, false);
  if (!v.links.empty()) out += parts_text("link", v.links, false);
  for (const auto& n : v.notes) out += wrap("note: " + n);
  const auto drain = nodes_to_drain(v);
  if (!drain.empty()) {
    out += wrap("to take out: " + slurm_hostlist(drain) + " ('--verdict --format slurm' for the drain command, "
                "'--format hosts' for a list)");
  }
  return out;
}

std::string verdict_line(const Verdict& v) {
  if (!v.possible) return "";
  std::string fail;
  const auto add = [&](const char* kind, const std::vector<SubjectVerdict>& parts) {
    for (const auto& p : parts) {
      if (p.severity == Severity::fail) fail += (fail.empty() ? "" : ", ") + std::string(kind) + p.name;
    }
  };
  add("node ", v.nodes);
  add("", v.gpus);
  add("link ", v.links);
  return fail.empty() ? "" : wrap("parts that fail: " + fail + " (see --verdict)");
}

std::string render_verdict_json(const Verdict& v) {
  nlohmann::json j{{"file", v.file},
                   {"overall",
                    {{"severity", v.possible ? severity_name(v.overall) : "NONE"},
                     {"reasons", v.possible ? v.reasons : std::vector<std::string>{v.why_not}}}},
                   {"notes", v.notes},
                   {"cases_ran", v.cases_ran},
                   {"nodes", parts_json(v.nodes, SubjectKind::node)},
                   {"gpus", parts_json(v.gpus, SubjectKind::gpu)},
                   {"links", parts_json(v.links, SubjectKind::link)},
                   {"drain", nodes_to_drain(v)}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Where no node is to be taken out, one comment line that says so and why (a script cannot tell an empty output
// from a failure of its own).
std::string nothing_to_drain(const Verdict& v) {
  if (!v.possible) return "# nothing to drain: no verdict (" + v.why_not + ")\n";
  return std::string("# nothing to drain: overall ") + severity_name(v.overall) +
         (v.overall == Severity::fail ? ", with no node to blame (see report --verdict)" : "") + "\n";
}

std::string render_verdict_slurm(const Verdict& v) {
  const auto drain = nodes_to_drain(v);
  if (drain.empty()) return nothing_to_drain(v);
  check_host_names(v, drain, "slurm");
  std::string out = slurm_hostlist(drain) + "\n";
  for (const auto& host : drain) {
    out += "scontrol update nodename=" + host + " state=drain reason=" + shell_quoted(drain_reason(v, host)) + "\n";
  }
  return out;
}

std::string render_verdict_hosts(const Verdict& v) {
  const auto drain = nodes_to_drain(v);
  check_host_names(v, drain, "hosts");
  std::string out;
  for (const auto& host : drain) out += host + "\n";
  return out.empty() ? nothing_to_drain(v) : out;
}

}  // namespace gpuscale
