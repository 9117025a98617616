#include "model/model_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"
#include "model/model_check.hpp"
#include "report/json_params.hpp"
#include "workloads/work.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

using json = ModelJson;

constexpr const char* kFormat = "gpuscale-model";
constexpr int kFormatVersion = 2;
constexpr const char* kNotModel = ": not a gpuscale model file";

json fit_error_json(const FitError& e) {
  json worst = json::array();
  for (const auto& r : e.worst) worst.push_back({{"from", r.from}, {"ratio", r.ratio}});
  return {{"cases", e.cases}, {"terms", e.terms}, {"files", e.files}, {"rel_rms", e.rel_rms}, {"log_se", e.log_se},
          {"worst", worst}, {"poor", e.poor.empty() ? json(nullptr) : json(e.poor)}};
}

template <std::size_t N>
json matrix_json(const Unscaled<N>& a) {
  json rows = json::array();
  for (const auto& row : a) rows.push_back(row);
  return rows;
}

json gemm_json(const GemmCurve& g) {
  json points = json::array();
  for (const auto& p : g.points) {
    points.push_back({{"flops_per_call", p.flops}, {"gflops_per_core", p.core_flops_s / 1e9}, {"rel_ci", p.rel_ci},
                      {"cases", p.cases}});
  }
  return {{"backend", backend_name(g.backend)}, {"device", g.device}, {"dtype", g.dtype}, {"impl", g.impl},
          {"points", points}, {"fit_error", fit_error_json(g.error)}};
}

json copy_json(const CopyFit& c) {
  return {{"backend", backend_name(c.backend)}, {"kind", c.kind}, {"latency_s", c.latency_s}, {"gbps", c.bytes_s / 1e9},
          {"min_bytes", c.min_bytes}, {"max_bytes", c.max_bytes}, {"fit_error", fit_error_json(c.error)},
          {"cov_unscaled", matrix_json(c.cov_unscaled)}};
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
                      {"from", p.from}, {"algorithm", p.algorithm},
                      {"protocol", p.protocol}});
  }
  const json cov = matrix_json(t.cov);
  return {{"backend", backend_name(t.backend)}, {"comm", comm_name(t.comm)}, {"op", t.op},
          {"alpha_intra_s", term(kAlphaIntra, false)}, {"alpha_inter_s", term(kAlphaInter, false)},
          {"busbw_intra_gbps", term(kSecPerByteIntra, true)},
          {"busbw_inter_gbps", term(kSecPerByteInter, true)}, {"fit_error", fit_error_json(t.error)},
          {"terms", {"alpha_intra_s", "alpha_inter_s", "s_per_byte_intra", "s_per_byte_inter"}},
          {"coef", t.coef}, {"fitted", t.fitted}, {"cov", cov}, {"cov_unscaled", matrix_json(t.cov_unscaled)},
          {"points", points}};
}

json sources_json(const Model& m) {
  json files = json::array();
  for (const auto& s : m.sources) {
    json settings = json::object();
    for (const auto& [k, v] : s.mpi_settings) settings[k] = v;
    files.push_back({{"path", s.path}, {"date", s.date}, {"backend", backend_name(s.backend)},
                     {"comm", comm_name(s.comm)}, {"device", s.device}, {"ranks", s.ranks}, {"nodes", s.nodes},
                     {"node_cores", s.node_cores}, {"mpi_library", s.mpi_library}, {"mpi_settings", settings}});
  }
  return files;
}

json cases_json(const Model& m) {
  json cases = json::array();
  for (const auto& c : m.cases) {
    cases.push_back({{"experiment", c.experiment}, {"workload", c.workload}, {"mode", mode_name(c.mode)},
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

// The backends and data planes a run resolves to ("auto" is a config's word, never a run's).
std::vector<std::string> but_auto(const std::vector<std::string>& all) {
  std::vector<std::string> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [](const std::string& w) { return w != "auto"; });
  return out;
}
const std::vector<std::string>& backends() {
  static const auto v = but_auto(backend_choices());
  return v;
}
const std::vector<std::string>& comms() {
  static const auto v = but_auto(comm_choices());
  return v;
}

// The kinds of memory traffic the model prices, as the work of a sample names them (built-in and workloads' own).
const std::vector<std::string>& copy_kinds() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> out;
    for (const auto& k : stream_kinds()) out.push_back(k.name);
    return out;
  }();
  return v;
}

// A second fit of one kind would never be used (predict takes the first): said, not ignored.
void check_once(std::set<std::string>& seen, const std::string& what, const ModelField& f) {
  if (!seen.insert(what).second) f.fail("a second fit of " + what + "; predict would use only the first");
}

FitError fit_error_of(const ModelField& f) {
  FitError e;
  e.cases = f["cases"].whole(1);
  e.terms = f["terms"].whole(1);
  if (e.terms > e.cases) {
    f["terms"].fail("must be at most the fit's cases, " + std::to_string(e.cases) + ", got " + std::to_string(e.terms));
  }
  e.files = f["files"].whole(1);
  if (e.files > e.cases) {
    f["files"].fail("must be at most the fit's cases, " + std::to_string(e.cases) + ", got " + std::to_string(e.files));
  }
  e.rel_rms = f["rel_rms"].at_least(0);
  e.log_se = f["log_se"].at_least(0);
  for (const auto& r : f["worst"].list()) e.worst.push_back({r["from"].text(), r["ratio"].above(0)});
  if (!f["poor"].null()) e.poor = f["poor"].text();
  return e;
}

// A matrix of N x N numbers whose diagonal (variances) is 0 or more.
template <std::size_t N>
Unscaled<N> matrix_of(const ModelField& m) {
  Unscaled<N> out{};
  const auto rows = m.list(N);
  for (std::size_t j = 0; j < N; ++j) {
    const auto row = rows[j].list(N);
    for (std::size_t k = 0; k < N; ++k) out[j][k] = j == k ? row[k].at_least(0) : row[k].number();
  }
  return out;
}

GemmCurve gemm_of(const ModelField& g) {
  GemmCurve c{*parse_backend(g["backend"].word(backends())), g["device"].str(), g["dtype"].word(dtype_names()),
              g["impl"].word(gemm_impl_names()), {}, {}};
  for (const auto& p : g["points"].list(0, 1)) {
    const double flops = p["flops_per_call"].above(0);
    // Interpolation looks the size up among the points in order (one per size).
    if (!c.points.empty() && !(flops > c.points.back().flops)) {
      p["flops_per_call"].fail("must be above the point before's " + format_number("%.15g", c.points.back().flops) +
                               " (points go by size, one per size), got " + format_number("%.15g", flops));
    }
    c.points.push_back({flops, p["gflops_per_core"].giga(), p["rel_ci"].at_least(0), p["cases"].whole(1)});
  }
  c.error = fit_error_of(g["fit_error"]);
  return c;
}

CopyFit copy_of(const ModelField& c) {
  CopyFit f{*parse_backend(c["backend"].word(backends())), c["kind"].word(copy_kinds()), c["latency_s"].seconds(),
            c["gbps"].giga(), c["min_bytes"].above(0), 0, {}, {}};
  f.max_bytes = c["max_bytes"].at_least(f.min_bytes);
  f.error = fit_error_of(c["fit_error"]);
  f.cov_unscaled = matrix_of<2>(c["cov_unscaled"]);
  return f;
}

constexpr std::array<const char*, kTransferTerms> kTermKeys{"alpha_intra_s", "alpha_inter_s", "s_per_byte_intra",
                                                           "s_per_byte_inter"};
constexpr std::array<const char*, kTransferTerms> kShownKeys{"alpha_intra_s", "alpha_inter_s", "busbw_intra_gbps",
                                                            "busbw_inter_gbps"};

// The terms as written for a reader must say what coef says: predict reads coef, so an edit of one alone would
// change nothing, or not what it seems to.
void check_shown_terms(const ModelField& t, const TransferFit& f) {
  for (int j = 0; j < kTransferTerms; ++j) {
    const ModelField v = t[kShownKeys[j]];
    const std::string coef = "coef[" + std::to_string(j) + "]";
    if (!f.fitted[j]) {
      if (!v.null()) {
        v.fail("must be null (fitted[" + std::to_string(j) + "] is false), got " + json_value_text(v.json()));
      }
      continue;
    }
    const bool bandwidth = j >= kSecPerByteIntra;
    const double x = !bandwidth ? v.seconds() : f.coef[j] > 0 ? v.above(0) : v.at_least(0);
    const double want = !bandwidth ? f.coef[j] : f.coef[j] > 0 ? 1e-9 / f.coef[j] : 0.0;
    if (std::fabs(x - want) > 1e-9 * std::fabs(want)) {
      v.fail(json_value_text(v.json()) + " does not match " + coef + " (" + format_number("%.6g", want) +
             (bandwidth ? " GB/s" : " s") + "); predict reads " + coef + ": change both, or fit again");
    }
  }
}

void read_terms(const ModelField& t, TransferFit& f) {
  const auto names = t["terms"].list(kTransferTerms);
  for (int j = 0; j < kTransferTerms; ++j) {
    if (names[j].json() != kTermKeys[j]) {
      names[j].fail(std::string("must be \"") + kTermKeys[j] + "\" (the order of coef), got " +
                    json_value_text(names[j].json()));
    }
  }
  const auto coef = t["coef"].list(kTransferTerms), fitted = t["fitted"].list(kTransferTerms);
  for (int j = 0; j < kTransferTerms; ++j) {
    f.coef[j] = j == kAlphaIntra || j == kAlphaInter ? coef[j].seconds() : coef[j].at_least(0);
    f.fitted[j] = fitted[j].flag();
  }
  f.cov = matrix_of<kTransferTerms>(t["cov"]);
  f.cov_unscaled = matrix_of<kTransferTerms>(t["cov_unscaled"]);
  check_shown_terms(t, f);
}

TransferPoint point_of(const ModelField& p) {
  TransferPoint x{p["ranks"].whole(1), 1, 0, 0, "", "", ""};
  x.nodes = p["nodes"].whole(1);
  if (x.nodes > x.ranks) p["nodes"].fail("must be at most the point's ranks, " + std::to_string(x.ranks) + ", got " +
                                        std::to_string(x.nodes));
  x.bytes = p["bytes"].at_least(0);
  x.op_s = p["op_time_s"].seconds();
  x.from = p["from"].str();
  if (p.has("algorithm") && !p["algorithm"].str().empty()) x.algorithm = p["algorithm"].word(mpi_algorithm_names());
  if (p.has("protocol") && !p["protocol"].str().empty()) x.protocol = p["protocol"].word({"eager", "rendezvous"});
  return x;
}

TransferFit transfer_of(const ModelField& t) {
  TransferFit f{*parse_backend(t["backend"].word(backends())), *parse_comm(t["comm"].word(comms())), t["op"].text(),
                {}, {}, {}, {}, {}, {}};
  if (f.op.empty()) t["op"].fail("must be an operation's name, got \"\"");
  read_terms(t, f);
  f.error = fit_error_of(t["fit_error"]);
  for (const auto& p : t["points"].list()) f.points.push_back(point_of(p));
  return f;
}

ModelSource source_of(const ModelField& s) {
  ModelSource m{s["path"].str(), s["date"].str(), *parse_backend(s["backend"].word(backends())),
                parse_comm(s["comm"].word(comms())),
                s["device"].str(), s["ranks"].whole(1), 1, 0, "", {}};
  m.nodes = s["nodes"].whole(1);
  if (m.nodes > m.ranks) s["nodes"].fail("must be at most the file's ranks, " + std::to_string(m.ranks) + ", got " +
                                        std::to_string(m.nodes));
  m.node_cores = s["node_cores"].whole(1);
  if (s.has("mpi_library")) m.mpi_library = s["mpi_library"].str();
  if (s.has("mpi_settings")) {
    for (const auto& [k, v] : s["mpi_settings"].entries()) m.mpi_settings.emplace_back(k, v.text());
  }
  return m;
}

ModelCase case_of(const ModelField& c) {
  ModelCase k{c["experiment"].text(), case_workload(c["workload"]), *parse_mode(c["mode"].word(mode_choices())), {}};
  if (k.experiment.empty()) c["experiment"].fail("must be an experiment's name, got \"\"");
  k.params = case_params(c["params"], k.workload);
  return k;
}

void read_fits(const ModelField& o, Model& m) {
  std::set<std::string> seen;
  for (const auto& g : o["gemm"].list()) {
    m.gemm.push_back(gemm_of(g));
    const GemmCurve& c = m.gemm.back();
    // As fit keys it.
    check_once(seen, "gemm " + c.dtype + " (" + c.impl + ") on " + backend_name(c.backend) + " " + c.device, g);
  }
  for (const auto& c : o["copies"].list()) {
    m.copies.push_back(copy_of(c));
    check_once(seen, "copies " + m.copies.back().kind + " on " + backend_name(m.copies.back().backend), c);
  }
  for (const auto& t : o["transfers"].list()) {
    m.transfers.push_back(transfer_of(t));
    const TransferFit& f = m.transfers.back();
    check_once(seen, f.op + " over " + comm_name(f.comm) + " on " + backend_name(f.backend), t);
  }
}

Model model_of(const ModelField& o) {
  Model m;
  m.software_version = o["software_version"].str();
  for (const auto& s : o["files"].list(0, 1)) m.sources.push_back(source_of(s));
  m.node_cores = o["node_cores"].whole(1);
  m.sample_overhead_s = o["sample_overhead_s"].seconds();
  read_fits(o, m);
  for (const auto& n : o["notes"].list()) m.notes.push_back(n.str());
  const auto cases = o["cases"].list();
  m.cases.reserve(cases.size());
  for (const auto& c : cases) m.cases.push_back(case_of(c));
  return m;
}

// Walks the text as the parser does, keeping the key path, to name the key of a number too large for a double
// (1e999: JSON has no infinity), where the parser only says it could not hold it. Not the parser's callback: its
// DOM builder goes through the enclosing list at each object's end, quadratic in the cases.
class KeyPathSax : public nlohmann::json_sax<ModelJson> {
 public:
  std::string text() const {
    std::string out;
    for (const auto& l : levels_) {
      out += l.list ? "[" + std::to_string(l.index) + "]" : (out.empty() ? "" : ".") + printable(l.key);
    }
    return out;
  }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return start(false); }
  bool key(string_t& k) override {
    levels_.back().key = k;
    return true;
  }
  bool end_object() override { return end(); }
  bool start_array(std::size_t) override { return start(true); }
  bool end_array() override { return end(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Level {
    bool list = false;
    std::size_t index = 0;  // of the element being read, in a list
    std::string key;        // of the value being read, in an object
  };
  bool value() {
    if (!levels_.empty() && levels_.back().list) ++levels_.back().index;
    return true;
  }
  bool start(bool list) {
    levels_.push_back({list, 0, ""});
    return true;
  }
  bool end() {
    levels_.pop_back();
    return value();
  }
  std::vector<Level> levels_;
};

// The JSON library's message without its "[json.exception.parse_error.101] parse error " prefix.
std::string json_error_text(const std::exception& e) {
  std::string s = e.what();
  if (const auto i = s.find("] "); s.rfind("[json.exception.", 0) == 0 && i != std::string::npos) s.erase(0, i + 2);
  if (s.rfind("parse error ", 0) == 0) s.erase(0, 12);
  return printable(s);
}

ModelJson parse_model(const std::string& text, const std::string& path) {
  try {
    return ModelJson::parse(text);
  } catch (const ModelJson::out_of_range& e) {  // a number beyond a double's range: "... parsing '1e999'"
    KeyPathSax where;
    ModelJson::sax_parse(text, &where);
    const std::string what = e.what();
    const auto a = what.find('\''), b = what.rfind('\'');
    throw InputError(path + ": " + (where.text().empty() ? "" : where.text() + ": ") + "must be a number a double "
                     "holds (at most about 1.8e308), got " + (a < b ? printable(what.substr(a + 1, b - a - 1)) :
                     json_error_text(e)));
  } catch (const ModelJson::exception& e) {
    throw InputError(path + kNotModel + ": not JSON (" + json_error_text(e) + ")");
  }
}

// Which other gpuscale output a JSON value looks like, by its keys ("report --format json"); "" none.
std::string output_kind(const ModelJson& o) {
  if (o.is_array() && !o.empty() && o[0].is_object() && o[0].contains("workload")) {
    return "report --format json";
  }
  if (!o.is_object()) return "";
  if (o.contains("traceEvents")) return "report --format trace";
  if (o.contains("runs") && o.contains("cases")) return "report --format json-full";
  if (o.contains("model") && o.contains("job") && o.contains("cases")) return "predict --format json";
  return "";
}


// "written by gpuscale 0.9.0" where the file says so in a form fit to print, else "".
std::string written_by(const ModelJson& o) {
  const auto it = o.find("software_version");
  if (it == o.end() || !it->is_string() || !text_problem(it->get<std::string>()).empty()) return "";
  return " (written by gpuscale " + it->get<std::string>() + ")";
}

void check_version(const ModelJson& o, const std::string& path) {
  const ModelField version = ModelField(o, path, "")["format_version"];
  if (!version.json().is_number_integer()) {
    version.fail("must be an integer (this gpuscale reads " + std::to_string(kFormatVersion) + "), got " +
                 json_value_text(version.json()));
  }
  if (version.json() > kFormatVersion) {
    throw InputError(path + ": model format version " + version.json().dump() + written_by(o) + " is newer than this "
                     "gpuscale reads (" + std::to_string(kFormatVersion) + "); predict with that gpuscale or a newer "
                     "one, or fit it again with this one ('gpuscale model')");
  }
  if (version.json() != kFormatVersion) {
    throw InputError(path + ": model format version " + version.json().dump() + ", this gpuscale reads " +
                     std::to_string(kFormatVersion) + "; fit it again with 'gpuscale model'");
  }
}

// The format word and version first: a file of another kind or version says so, not what its keys lack.
void check_format(const ModelJson& o, const std::string& path) {
  const std::string make = " (make one with 'gpuscale model FILES... -o " + path + "')";
  if (const std::string kind = output_kind(o); !kind.empty()) {
    // Another gpuscale output: not to be overwritten by a model.
    throw InputError(path + kNotModel + " (it looks like " + kind + " output): a model is what 'gpuscale model "
                     "RESULT_FILES... -o MODEL.json' writes");
  }
  if (!o.is_object()) throw InputError(path + kNotModel + ": JSON, but " + json_value_text(o) + make);
  if (!o.contains("format")) {
    throw InputError(path + kNotModel + ": it lacks \"format\": \"" + kFormat + "\"" + make);
  }
  if (o["format"] != kFormat) {
    throw InputError(path + kNotModel + ": its \"format\" is " + json_value_text(o["format"]) + ", not \"" + kFormat +
                     "\"" + make);
  }
  check_version(o, path);
}

bool blank(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

}  // namespace

bool looks_like_json(const std::string& path) {
  std::ifstream in(path);
  char ch = 0;
  while (in.get(ch) && std::isspace(static_cast<unsigned char>(ch))) {
  }
  // A file of nothing but blanks too: the model reader then says it is empty (the HDF5 reader: "not HDF5").
  return in ? ch == '{' || ch == '[' : in.eof();
}

void refuse_json_for_results(const std::string& path, const std::string& use) {
  if (!looks_like_json(path)) return;
  std::ifstream in(path);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::string kind = "JSON";
  if (blank(text)) {
    kind = "an empty file";
  } else {
    try {
      const ModelJson o = ModelJson::parse(text);
      kind = o.is_object() && o.contains("format") && o["format"] == kFormat ? "a gpuscale model file"
             : !output_kind(o).empty()                                       ? output_kind(o) + " output"
                                                                             : kind;
    } catch (const ModelJson::exception&) {  // JSON in part: still no result file
    }
  }
  throw InputError(path + ": not a gpuscale result file (it looks like " + kind + "); " + use);
}

Model read_model_json(const std::string& text, const std::string& path) {
  if (blank(text)) {
    throw InputError(path + ": the file is empty, not a model (make one with 'gpuscale model FILES... -o " + path +
                     "')");
  }
  const ModelJson o = parse_model(text, path);
  check_format(o, path);
  try {
    return model_of(ModelField(o, path, ""));
  } catch (const ModelJson::exception& e) {  // not reached: each read checks the type first; no library text then
    throw InputError(path + ": damaged model file: " + json_error_text(e));
  }
}

Model read_model_file(const std::string& path) {
  check_input_file(path, "model file");  // before it is opened: a FIFO would wait for a writer
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot be read (no such file, or no permission)");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return read_model_json(text, path);
}

}  // namespace gpuscale
