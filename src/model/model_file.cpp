#include "model/model_file.hpp"

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/json_params.hpp"

namespace gpuscale {

namespace {

using json = nlohmann::ordered_json;  // keys in the order written: a case's parameters keep theirs

constexpr const char* kFormat = "gpuscale-model";
constexpr int kFormatVersion = 1;

Params params_of(const json& o) {
  Params p;
  for (const auto& [k, v] : o.items()) {
    if (v.is_boolean()) p.set(k, v.get<bool>());
    else if (v.is_number_integer()) p.set(k, v.get<std::int64_t>());
    else if (v.is_number()) p.set(k, v.get<double>());
    else p.set(k, v.get<std::string>());
  }
  return p;
}

json gemm_json(const GemmCurve& g) {
  json points = json::array();
  for (const auto& p : g.points) points.push_back({{"flops_per_call", p.flops}, {"gflops_per_core", p.core_flops_s / 1e9}, {"rel_ci", p.rel_ci}});
  return {{"backend", g.backend}, {"device", g.device}, {"dtype", g.dtype}, {"impl", g.impl}, {"points", points}};
}

json copy_json(const CopyFit& c) {
  return {{"backend", c.backend}, {"kind", c.kind}, {"latency_s", c.latency_s}, {"gbps", c.bytes_s / 1e9},
          {"min_bytes", c.min_bytes}, {"max_bytes", c.max_bytes}, {"rel_rms", c.rel_rms}, {"cases", c.points}};
}

// Terms as a reader wants them: latencies in seconds, bandwidths in GB/s (null where not fitted).
json transfer_json(const TransferFit& t) {
  const auto term = [&](int j, bool bandwidth) -> json {
    if (!t.fitted[j]) return nullptr;
    return bandwidth ? json(t.coef[j] > 0 ? 1e-9 / t.coef[j] : 0.0) : json(t.coef[j]);
  };
  json points = json::array();
  for (const auto& p : t.points) {
    points.push_back({{"ranks", p.ranks}, {"nodes", p.nodes}, {"bytes", p.bytes}, {"op_time_s", p.op_s},
                      {"from", p.from}});
  }
  json cov = json::array();
  for (const auto& row : t.cov) cov.push_back(row);
  return {{"backend", t.backend}, {"comm", t.comm}, {"op", t.op}, {"alpha_intra_s", term(kAlphaIntra, false)},
          {"alpha_inter_s", term(kAlphaInter, false)}, {"busbw_intra_gbps", term(kSecPerByteIntra, true)},
          {"busbw_inter_gbps", term(kSecPerByteInter, true)}, {"rel_rms", t.rel_rms},
          {"terms", {"alpha_intra_s", "alpha_inter_s", "s_per_byte_intra", "s_per_byte_inter"}},
          {"coef", t.coef}, {"fitted", t.fitted}, {"cov", cov}, {"points", points}};
}

json sources_json(const Model& m) {
  json files = json::array();
  for (const auto& s : m.sources) {
    files.push_back({{"path", s.path}, {"date", s.date}, {"backend", s.backend}, {"comm", s.comm},
                     {"device", s.device}, {"ranks", s.ranks}, {"nodes", s.nodes}, {"node_cores", s.node_cores}});
  }
  return files;
}

json cases_json(const Model& m) {
  json cases = json::array();
  for (const auto& c : m.cases) {
    cases.push_back({{"experiment", c.experiment}, {"workload", c.workload}, {"mode", c.mode},
                     {"params", params_json<json>(c.params)}});
  }
  return cases;
}

}  // namespace

std::string model_json(const Model& m) {
  json o;
  o["format"] = kFormat;
  o["format_version"] = kFormatVersion;
  o["software_version"] = m.software_version;
  o["files"] = sources_json(m);
  o["node_cores"] = m.node_cores;
  o["sample_overhead_s"] = m.sample_overhead_s;
  o["gemm"] = json::array();
  for (const auto& g : m.gemm) o["gemm"].push_back(gemm_json(g));
  o["copies"] = json::array();
  for (const auto& c : m.copies) o["copies"].push_back(copy_json(c));
  o["transfers"] = json::array();
  for (const auto& t : m.transfers) o["transfers"].push_back(transfer_json(t));
  o["notes"] = m.notes;
  o["cases"] = cases_json(m);
  return o.dump(2) + "\n";
}

namespace {

GemmCurve gemm_of(const json& g) {
  GemmCurve c{g.at("backend"), g.at("device"), g.at("dtype"), g.at("impl"), {}};
  for (const auto& p : g.at("points")) {
    c.points.push_back({p.at("flops_per_call").get<double>(), p.at("gflops_per_core").get<double>() * 1e9,
                        p.at("rel_ci").get<double>()});
  }
  return c;
}

CopyFit copy_of(const json& c) {
  return {c.at("backend"), c.at("kind"), c.at("latency_s").get<double>(), c.at("gbps").get<double>() * 1e9,
          c.at("min_bytes").get<double>(), c.at("max_bytes").get<double>(), c.at("rel_rms").get<double>(),
          c.at("cases").get<int>()};
}

TransferFit transfer_of(const json& t) {
  TransferFit f{t.at("backend"), t.at("comm"), t.at("op"), {}, {}, {}, t.at("rel_rms").get<double>(), {}};
  f.coef = t.at("coef").get<std::array<double, kTransferTerms>>();
  f.fitted = t.at("fitted").get<std::array<bool, kTransferTerms>>();
  const auto& cov = t.at("cov");
  for (int j = 0; j < kTransferTerms; ++j) f.cov[j] = cov.at(j).get<std::array<double, kTransferTerms>>();
  for (const auto& p : t.at("points")) {
    f.points.push_back({p.at("ranks").get<int>(), p.at("nodes").get<int>(), p.at("bytes").get<double>(),
                        p.at("op_time_s").get<double>(), p.at("from").get<std::string>()});
  }
  return f;
}

Model model_of(const json& o) {
  Model m;
  m.software_version = o.at("software_version");
  for (const auto& s : o.at("files")) {
    m.sources.push_back({s.at("path"), s.at("date"), s.at("backend"), s.at("comm"), s.at("device"),
                         s.at("ranks").get<int>(), s.at("nodes").get<int>(), s.at("node_cores").get<int>()});
  }
  m.node_cores = o.at("node_cores").get<int>();
  m.sample_overhead_s = o.at("sample_overhead_s").get<double>();
  for (const auto& g : o.at("gemm")) m.gemm.push_back(gemm_of(g));
  for (const auto& c : o.at("copies")) m.copies.push_back(copy_of(c));
  for (const auto& t : o.at("transfers")) m.transfers.push_back(transfer_of(t));
  m.notes = o.at("notes").get<std::vector<std::string>>();
  for (const auto& c : o.at("cases")) {
    m.cases.push_back({c.at("experiment"), c.at("workload"), c.at("mode"), params_of(c.at("params"))});
  }
  return m;
}

}  // namespace

bool looks_like_json(const std::string& path) {
  std::ifstream in(path);
  char ch = 0;
  while (in.get(ch) && std::isspace(static_cast<unsigned char>(ch))) {
  }
  return in && ch == '{';
}

Model read_model_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot be read (no such file, or no permission)");
  json o;
  try {
    o = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path + ": not a model file: not JSON (" + e.what() + ")");
  }
  if (!o.is_object() || o.value("format", "") != kFormat) {
    throw InputError(path + ": not a model file: it lacks \"format\": \"" + kFormat + "\" (make one with "
                     "'gpuscale model FILES... -o " + path + "')");
  }
  if (o.value("format_version", 0) != kFormatVersion) {
    throw InputError(path + ": model format version " + o.value("format_version", json(0)).dump() +
                     ", this gpuscale reads " + std::to_string(kFormatVersion) + "; fit it again with 'gpuscale model'");
  }
  try {
    return model_of(o);
  } catch (const json::exception& e) {
    throw InputError(path + ": damaged model file: " + e.what());
  }
}

}  // namespace gpuscale
