// Strings of a result file made printable for the terminal (report/terminal_text.hpp).
#include "report/terminal_text.hpp"

#include "core/text.hpp"

namespace gpuscale {

namespace {

void escape(std::string& s) { s = printable(s); }

void escape(std::vector<std::string>& v) {
  for (auto& s : v) escape(s);
}

void escape(Params& p) {
  Params out;
  for (const auto& [key, value] : p.items()) {
    const auto* s = std::get_if<std::string>(&value);
    out.set(printable(key), s ? Value{printable(*s)} : value);
  }
  p = std::move(out);
}

void escape(Stragglers& s) {
  for (auto& r : s.ranks) {
    escape(r.host);
    escape(r.device_name);
    escape(r.device_pci_bus_id);
  }
  for (auto& n : s.nodes) escape(n.host);
}

}  // namespace

std::vector<ReportRow> for_terminal(std::vector<ReportRow> rows) {
  for (auto& r : rows) {
    for (auto* s : {&r.file, &r.name, &r.workload, &r.status_reason, &r.params_label, &r.note}) {
      escape(*s);
    }
    escape(r.params);
    escape(r.flags);
    for (auto& phase : r.phase_s) escape(phase.first);
    for (auto& limit : r.expect) escape(limit.first);
    escape(r.stragglers);
    escape(r.notes);
    escape(r.section_lines);
    if (r.baseline) {
      escape(r.baseline->file);
      escape(r.baseline->verdict);
    }
  }
  return rows;
}

RunRecord for_terminal(RunRecord run) {
  for (auto* s : {&run.software_version, &run.date, &run.status, &run.last_update}) escape(*s);
  escape(run.warnings);
  return run;
}

}  // namespace gpuscale
