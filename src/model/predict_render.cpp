// gpuscale predict's table and JSON (predict_report.hpp).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/plan.hpp"
#include "core/text.hpp"
#include "model/predict_report.hpp"
#include "report/json_params.hpp"
#include "workloads/estimate.hpp"

namespace gpuscale {

namespace {

using nlohmann::json;

double measured_time(const PredictRow& r) {
  return r.p.op_time_s && r.measured->op_time_s ? *r.measured->op_time_s : r.measured->median_s;
}

// "±12%" where the interval reaches as far each way, else "-57% +130%" (an interval of factors is lopsided).
std::string interval_text(const Prediction& p) {
  const double t = predicted_time(p);
  if (!p.has_interval() || !(t > 0)) return "";
  const Interval i = predicted_interval(p);
  const std::string down = format_number("%.0f%%", 100.0 * (t - i.lo) / t);
  const std::string up = format_number("%.0f%%", 100.0 * (i.hi - t) / t);
  return up == down ? "±" + up : "-" + down + " +" + up;
}

std::vector<std::string> measured_cells(const PredictRow& r) {
  const bool ran = r.measured && r.measured->status != CaseStatus::skipped;
  return {ran ? format_seconds(measured_time(r)) : r.measured ? "skipped" : "not run",
          ran && r.measured->speedup ? format_sig3(*r.measured->speedup) + "x" : "",
          r.ratio ? ratio_text(*r.ratio) : "", r.ratio ? signed_error_text(*r.ratio) : "",
          r.inside ? (*r.inside ? "yes" : "no") : ""};
}

// A row's cells after its varying parameters.
std::vector<std::string> cells_of(const PredictRow& r, bool against) {
  std::vector<std::string> cells{mode_name(r.c.mode)};
  if (!r.p.predicted()) {
    cells.insert(cells.end(), {r.p.skip_reason.empty() ? "-" : "skipped", "", "", ""});
  } else {
    cells.push_back(format_seconds(predicted_time(r.p)));
    cells.push_back(interval_text(r.p));
    cells.push_back(r.p.busbw_gbps ? format_sig3(*r.p.busbw_gbps) : "");
    cells.push_back(r.speedup ? format_sig3(*r.speedup) + "x" : "");
  }
  if (against) {
    const auto m = measured_cells(r);
    cells.insert(cells.end(), m.begin(), m.end());
  }
  return cells;
}

// Rows as the report's block code wants them, for split_params: experiment, parameters, mode.
std::vector<ReportRow> as_report_rows(const std::vector<PredictRow>& rows) {
  std::vector<ReportRow> out;
  for (const auto& p : rows) {
    ReportRow r;
    r.name = p.c.experiment;
    r.workload = p.c.workload;
    r.mode = p.c.mode;
    r.params = p.c.params.without(sample_count_keys());
    r.case_index = static_cast<std::size_t>(&p - rows.data());  // the row's place, for block_of
    out.push_back(r);
  }
  return out;
}

std::string block_of(const std::vector<const ReportRow*>& block, const std::vector<PredictRow>& rows, bool against) {
  const ParamSplit split = split_params(block);
  std::vector<std::vector<std::string>> cells{{"case"}};
  for (const auto& [k, v] : split.varying) cells[0].push_back(k);
  for (const char* h : {"mode", "predicted", "", "busbw", "speedup"}) cells[0].push_back(h);
  if (against) cells[0].insert(cells[0].end(), {"measured", "measured speedup", "m/p", "error", "in 95%"});
  for (std::size_t i = 0; i < block.size(); ++i) {
    std::vector<std::string> line{std::to_string(rows[block[i]->case_index].number)};
    for (const auto& [k, v] : split.varying) line.push_back(v[i]);
    const auto c = cells_of(rows[block[i]->case_index], against);  // case_index: the row's place in `rows`
    line.insert(line.end(), c.begin(), c.end());
    cells.push_back(line);
  }
  const std::size_t fixed = 1 + split.varying.size();
  return block[0]->name + " (" + block[0]->workload + ")" + split.shared + "\n" +
         align_columns(cells, [&](std::size_t i) { return i > 0 && i <= fixed; });
}

// Per case: why not predicted, and the terms beyond the files' data; cases with the same note share its line.
std::string notes_of(const std::vector<PredictRow>& rows) {
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;  // text, case numbers; in order of first use
  const auto add = [&](const std::string& text, std::size_t number) {
    auto it = std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == text; });
    if (it == notes.end()) it = notes.insert(notes.end(), {text, {}});
    it->second.push_back(std::to_string(number));
  };
  for (const auto& r : rows) {
    if (!r.p.skip_reason.empty()) add("skipped on this job: " + r.p.skip_reason, r.number);
    if (!r.p.unpredictable.empty()) add("not predicted: " + r.p.unpredictable, r.number);
    if (!r.p.extrapolated.empty()) add("extrapolated: " + join(r.p.extrapolated, "; "), r.number);
    if (r.p.predicted() && !r.p.no_interval.empty()) add("no interval: " + r.p.no_interval, r.number);
    for (const auto& poor : r.p.poor_fits) add("poor fit, prediction doubtful: " + poor, r.number);
  }
  std::string out;
  for (const auto& [text, cases] : notes) {
    out += wrap((cases.size() == 1 ? "case " : "cases ") + join(cases, ", ") + ": " + text);
  }
  return out;
}

std::string summary_line(const ErrorSummary& s) {
  std::string out = s.what + ": measured/predicted median " + ratio_text(s.median);
  if (s.cases > 1) out += " (" + ratio_text(s.min) + "-" + ratio_text(s.max) + ")";
  out += " over " + std::to_string(s.cases) + " case(s)";
  if (s.with_interval > 0) {
    out += "; " + std::to_string(s.inside) + " of " + std::to_string(s.with_interval) + " inside the 95% interval";
  }
  return wrap(out);
}

std::string summary_of(const std::vector<PredictRow>& rows) {
  std::string out;
  for (const auto& s : error_summary(rows)) out += summary_line(s);
  const ErrorSummary all = total_summary(rows);
  if (all.cases == 0) return out;
  std::string total = std::to_string(all.inside) + " of " + std::to_string(all.with_interval) +
                      " measured values inside the 95% interval";
  if (all.with_interval < all.cases) {
    total += "; " + std::to_string(all.cases - all.with_interval) + " measured value(s) had no interval to fall in "
             "(the notes say why)";
  }
  return out + wrap(total);
}

}  // namespace

namespace {

// --breakdown: each predicted case's parts and, with --against, the measured ones under them.
std::string breakdown_of(const std::vector<PredictRow>& rows) {
  std::vector<BreakdownLine> lines;
  for (const auto& r : rows) {
    if (!r.p.predicted()) continue;
    const std::string label = "#" + std::to_string(r.number) + " " + r.c.experiment + " " +
                              Case{0, r.c.experiment, r.c.workload, r.c.mode, r.c.params, {}}.param_label() + " [" +
                              mode_name(r.c.mode) + "]";
    lines.push_back({label + " predicted", r.p.parts});
    if (r.measured && r.measured->breakdown) lines.push_back({label + " measured", *r.measured->breakdown});
  }
  return lines.empty() ? "" : "\nwhere the time goes:\n" + render_breakdown(lines);
}

}  // namespace

std::string render_predict_table(const PredictHeader& h, const std::vector<PredictRow>& rows, bool breakdown) {
  std::string out =
      wrap("predicted for " + job_text(h.job.shape) + ", backend " + backend_name(h.job.backend) + ", comm " +
           comm_name(h.job.comm) + ", from " + h.model_from + (h.against.empty() ? "" : "; measured: " + h.against));
  if (!h.target_noise.empty()) out += wrap(h.target_noise);
  const auto report_rows = as_report_rows(rows);
  for (const auto& block : by_experiment(report_rows)) out += "\n" + block_of(block, rows, !h.against.empty());
  out += "\n" + wrap("predicted: a transfer's op time, else the median sample (serial: the sum over turns; parallel: "
                     "one rank's sample, no waiting for others); ±: its 95% interval (none where the data cannot "
                     "support one); busbw in GB/s" +
                     std::string(h.against.empty() ? "" : "; m/p: measured / predicted; error: (measured - predicted) "
                                                          "/ predicted; in 95%: the measured value inside the "
                                                          "interval"));
  if (!h.noisy.empty()) {
    out += wrap(h.noisy_fitted ? "fitted now with noisy cases, their numbers doubtful (--include-noisy): " +
                                     join(h.noisy, "; ")
                               : "fitted now without the cases left out as noisy (--include-noisy fits them): " +
                                     join(h.noisy, "; "));
  }
  out += notes_of(rows);
  out += summary_of(rows);
  if (breakdown) out += breakdown_of(rows);
  return out;
}

namespace {

json parts_json(const Breakdown& b) { return json::parse(breakdown_json(b)); }

void prediction_json(const PredictRow& r, json& o) {
  const Prediction& p = r.p;
  o["status"] = !p.skip_reason.empty() ? "skipped" : !p.unpredictable.empty() ? "not predicted" : "predicted";
  if (!p.predicted()) {
    o["reason"] = p.skip_reason.empty() ? p.unpredictable : p.skip_reason;
    if (!p.unpredictable.empty()) o["unpredictable"] = p.unpredictable;
    return;
  }
  o["predicted_median_s"] = p.median_s;
  if (p.has_interval()) {
    o["lo"] = p.lo_s;
    o["hi"] = p.hi_s;
  } else {
    o["no_interval"] = p.no_interval;
  }
  if (p.op_time_s) {
    o["predicted_op_time_s"] = *p.op_time_s;
    if (p.has_interval()) {
      o["predicted_op_time_lo_s"] = *p.op_lo_s;
      o["predicted_op_time_hi_s"] = *p.op_hi_s;
    }
    o["predicted_busbw_gbps"] = *p.busbw_gbps;
  }
  if (!p.poor_fits.empty()) o["poor_fit"] = p.poor_fits;
  if (r.speedup) o["predicted_speedup"] = *r.speedup;
  if (r.efficiency) o["predicted_efficiency"] = *r.efficiency;
  o["extrapolated"] = p.extrapolated;
  o["breakdown"] = parts_json(p.parts);
}

void measured_json(const PredictRow& r, json& o) {
  if (!r.measured) return;
  const ReportRow& m = *r.measured;
  o["measured_status"] = status_name(m.status);
  if (m.status == CaseStatus::skipped) return;
  o["measured_median_s"] = m.median_s;
  if (m.op_time_s) o["measured_op_time_s"] = *m.op_time_s;
  if (m.busbw_gbps) o["measured_busbw_gbps"] = *m.busbw_gbps;
  if (m.speedup) o["measured_speedup"] = *m.speedup;
  if (r.ratio) {
    o["measured_over_predicted"] = *r.ratio;
    o["signed_error"] = *r.ratio - 1;
  }
  if (r.inside) o["inside_interval"] = *r.inside;
  if (m.breakdown) o["measured_breakdown"] = parts_json(*m.breakdown);
}

}  // namespace

std::string render_predict_json(const PredictHeader& h, const std::vector<PredictRow>& rows) {
  json out;
  out["model"] = h.model_from;
  out["job"] = {{"ranks", h.job.shape.ranks}, {"nodes", h.job.shape.nodes}, {"backend", backend_name(h.job.backend)},
                {"comm", comm_name(h.job.comm)}, {"cores_per_node", h.job.shape.cores_per_node}};
  if (!h.against.empty()) out["against"] = h.against;
  if (!h.target_noise.empty()) out["target_noise"] = h.target_noise;
  if (!h.noisy.empty()) out[h.noisy_fitted ? "fitted_noisy" : "left_out_noisy"] = h.noisy;
  out["cases"] = json::array();
  for (const auto& r : rows) {
    json o{{"case", r.number}, {"experiment", r.c.experiment}, {"workload", r.c.workload},
           {"mode", mode_name(r.c.mode)}, {"params", params_json<json>(r.c.params.without(sample_count_keys()))}};
    prediction_json(r, o);
    measured_json(r, o);
    out["cases"].push_back(o);
  }
  out["summary"] = json::array();
  const auto summary = [](const ErrorSummary& s) -> json {
    return {{"what", s.what}, {"cases", s.cases}, {"median_ratio", s.median}, {"min_ratio", s.min},
            {"max_ratio", s.max}, {"inside_interval", s.inside}, {"with_interval", s.with_interval}};
  };
  for (const auto& s : error_summary(rows)) out["summary"].push_back(summary(s));
  if (!h.against.empty()) out["total"] = summary(total_summary(rows));
  return out.dump(2) + "\n";
}

}  // namespace gpuscale
