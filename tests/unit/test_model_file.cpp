// The model file read as a config is: hand-edited model files (a negative
// rate, a wrong type, an unknown mode, a case's parameter out of its range,
// JSON of another kind) each give one line naming the file and the key, and
// predict stays linear in the model's cases.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "model/model_check.hpp"
#include "model/model_file.hpp"
#include "model/predict_report.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

// A model as `gpuscale model` writes one: a gemm curve, a copy fit, an allreduce fitted inside a node, two cases.
const char* const kModel = R"({
  "format": "gpuscale-model", "format_version": 2, "software_version": "0.1.0",
  "files": [{"path": "one.h5", "date": "2026-11-27T00:00:00+0000", "backend": "cpu", "comm": "mpi",
             "device": "test cpu", "ranks": 2, "nodes": 1, "node_cores": 4}],
  "node_cores": 4, "sample_overhead_s": 1e-05,
  "gemm": [{"backend": "cpu", "device": "test cpu", "dtype": "fp64", "impl": "vendor", "points": [
    {"flops_per_call": 524288.0, "gflops_per_core": 30.0, "rel_ci": 0.01, "cases": 2},
    {"flops_per_call": 4194304.0, "gflops_per_core": 50.0, "rel_ci": 0.0, "cases": 2}],
    "fit_error": {"cases": 4, "terms": 2, "files": 2, "rel_rms": 0.05, "log_se": 0.07, "poor": null,
                  "worst": [{"from": "one.h5 case 1", "ratio": 1.05}]}}],
  "copies": [{"backend": "cpu", "kind": "host-pinned", "latency_s": 5e-06, "gbps": 40.0, "min_bytes": 65536.0,
              "max_bytes": 1048576.0, "cov_unscaled": [[1e-10, 0.0], [0.0, 1e-20]],
              "fit_error": {"cases": 4, "terms": 2, "files": 1, "rel_rms": 0.1, "log_se": 0.14, "poor": null,
                            "worst": []}}],
  "transfers": [{"backend": "cpu", "comm": "mpi", "op": "allreduce", "alpha_intra_s": 2e-06, "alpha_inter_s": null,
    "busbw_intra_gbps": 10.0, "busbw_inter_gbps": null,
    "fit_error": {"cases": 3, "terms": 2, "files": 1, "rel_rms": 0.01, "log_se": 0.02, "poor": null, "worst": []},
    "terms": ["alpha_intra_s", "alpha_inter_s", "s_per_byte_intra", "s_per_byte_inter"],
    "coef": [2e-06, 0.0, 1e-10, 0.0], "fitted": [true, false, true, false],
    "cov": [[1e-12, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1e-22, 0.0], [0.0, 0.0, 0.0, 0.0]],
    "cov_unscaled": [[1e-10, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1e-20, 0.0], [0.0, 0.0, 0.0, 0.0]],
    "points": [{"ranks": 2, "nodes": 1, "bytes": 65536.0, "op_time_s": 1.5e-05, "from": "one.h5 case 5"},
               {"ranks": 2, "nodes": 1, "bytes": 1048576.0, "op_time_s": 1.1e-04, "from": "one.h5 case 6"},
               {"ranks": 2, "nodes": 1, "bytes": 4194304.0, "op_time_s": 4.2e-04, "from": "one.h5 case 7"}]}],
  "notes": [],
  "cases": [
    {"experiment": "gemm", "workload": "gemm", "mode": "parallel",
     "params": {"warmup": 1, "reps": 3, "threads": 1, "size": 64, "dtype": "fp64", "impl": "vendor", "ops": 2}},
    {"experiment": "coll", "workload": "collective", "mode": "parallel",
     "params": {"warmup": 1, "reps": 3, "threads": 1, "op": "allreduce", "dtype": "fp32", "bytes": 65536,
                "inplace": false, "iters": 1, "scope": "world"}}]
})";

// kModel with the value at a JSON pointer set to `value` (JSON text), or removed where `value` is empty.
std::string edited(const std::string& pointer, const std::string& value) {
  ModelJson o = ModelJson::parse(kModel);
  const ModelJson::json_pointer at(pointer);
  if (value.empty()) {
    o[at.parent_pointer()].erase(at.back());
  } else {
    o[at] = ModelJson::parse(value);
  }
  return o.dump(2);
}

// The one line read_model_json refuses `text` with ("" where it reads it).
std::string refusal(const std::string& text) {
  try {
    read_model_json(text, "model.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a model file as gpuscale model writes it reads back and predicts", "[model]") {
  const Model m = read_model_json(kModel, "model.json");
  REQUIRE(m.transfers.size() == 1);
  CHECK(m.transfers[0].coef[kSecPerByteIntra] == 1e-10);
  CHECK(m.copies[0].bytes_s == 40e9);
  // A curve per device, as fit keys them (files from nodes of two kinds).
  ModelJson other = ModelJson::parse(kModel)["gemm"][0];
  other["device"] = "other cpu";
  CHECK(read_model_json(edited("/gemm/1", other.dump()), "model.json").gemm.size() == 2);
  const auto rows = predict_rows(m, m.cases, predict_job(m, 2, 1));
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) {
    CHECK(r.p.predicted());
    CHECK(r.p.median_s > 0);
  }
}

TEST_CASE("a case of a workload this version does not know is kept, and not predicted", "[model]") {
  const Model m = read_model_json(edited("/cases/0/workload", "\"gemmm\""), "model.json");
  const Prediction p = predict_case(m, m.cases[0], predict_job(m, 2, 1));
  CHECK(p.unpredictable == "workload 'gemmm' is not one this version knows");
}

TEST_CASE("a case's parameter left out takes its default, as in a config", "[model]") {
  const Model m = read_model_json(edited("/cases/0/params/ops", ""), "model.json");
  CHECK(m.cases[0].params.get_int("ops") == 1);
  CHECK(m.cases[0].params.get_int("size") == 64);
}

TEST_CASE("every workload's cases as a config makes them read back from a model file", "[model]") {
  Model m = read_model_json(kModel, "model.json");
  m.cases.clear();
  for (const auto& w : workload_schemas()) {
    for (const auto& c : expand(parse_config("[[experiment]]\nworkload = \"" + w.name + "\"\n", "m.toml", {},
                                             workload_schemas()))) {
      m.cases.push_back({c.experiment, c.workload, c.mode, c.params});
    }
  }
  const Model back = read_model_json(model_json(m), "model.json");
  REQUIRE(back.cases.size() == m.cases.size());
  for (std::size_t i = 0; i < m.cases.size(); ++i) {
    INFO(m.cases[i].workload);
    CHECK(back.cases[i].params == m.cases[i].params);
  }
}

TEST_CASE("each hand-edited value of a model file is refused on one line naming the key", "[model]") {
  struct Edit {
    const char* pointer;
    std::string value;  // JSON; "" removes the key
    const char* message;
  };
  const std::string gemm = ModelJson::parse(kModel)["gemm"][0].dump();
  std::string kinds;  // the built-in kinds of memory traffic, then the workloads' own
  for (const auto& k : stream_kinds()) kinds += (kinds.empty() ? "" : ", ") + k.name;
  const std::string bad_kind = "copies[0].kind: must be one of " + kinds + "; got \"pinned\"";
  const std::vector<Edit> edits{
      {"/sample_overhead_s", "-1", "sample_overhead_s: must be a number from 0 to 2592000, got -1"},
      {"/gemm/0/points/1/gflops_per_core", "-2", "gemm[0].points[1].gflops_per_core: must be a number above 0, got -2"},
      {"/gemm/0/points/1/flops_per_call", "1000", "gemm[0].points[1].flops_per_call: must be above the point "
                                                 "before's 524288 (points go by size, one per size), got 1000"},
      {"/gemm/0/dtype", "\"fp8\"", "gemm[0].dtype: must be one of fp64, fp32, tf32, fp16, bf16; got \"fp8\""},
      {"/gemm/0/points", "[]", "gemm[0].points: must be a list of at least 1, got an empty list"},
      {"/gemm/1", gemm, "gemm[1]: a second fit of gemm fp64 (vendor) on cpu test cpu; predict would use only the "
                        "first"},
      {"/copies/0/gbps", "0", "copies[0].gbps: must be a number above 0, got 0"},
      {"/copies/0/gbps", "1e305", "copies[0].gbps: must be a number above 0 and below 1e299, got 1e+305"},
      {"/copies/0/latency_s", "-5e-06", "copies[0].latency_s: must be a number from 0 to 2592000, got -5e-06"},
      {"/copies/0/kind", "\"pinned\"", bad_kind.c_str()},
      {"/copies/0/max_bytes", "10", "copies[0].max_bytes: must be a number of at least 65536, got 10"},
      {"/copies/0/fit_error/cases", "2.5", "copies[0].fit_error.cases: must be an integer from 1 to 2147483647, got "
                                          "2.5"},
      {"/copies/0/fit_error/terms", "5", "copies[0].fit_error.terms: must be at most the fit's cases, 4, got 5"},
      {"/copies/0/fit_error/files", "0", "copies[0].fit_error.files: must be an integer from 1 to 2147483647, got 0"},
      {"/copies/0/fit_error/files", "7", "copies[0].fit_error.files: must be at most the fit's cases, 4, got 7"},
      {"/copies/0/fit_error/log_se", "-0.1", "copies[0].fit_error.log_se: must be a number of at least 0, got -0.1"},
      {"/copies/0/fit_error", "", "copies[0].fit_error: missing"},
      {"/copies/0/cov_unscaled/1/1", "-1", "copies[0].cov_unscaled[1][1]: must be a number of at least 0, got -1"},
      {"/copies/0/cov_unscaled", "[[0, 0]]", "copies[0].cov_unscaled: must be a list of 2, got a list of 1"},
      {"/gemm/0/fit_error/worst/0/ratio", "0", "gemm[0].fit_error.worst[0].ratio: must be a number above 0, got 0"},
      {"/gemm/0/fit_error/poor", "7", "gemm[0].fit_error.poor: must be a string, got 7"},
      {"/gemm/0/points/0/cases", "0", "gemm[0].points[0].cases: must be an integer from 1 to 2147483647, got 0"},
      {"/transfers/0/cov_unscaled/0/0", "-1e-10", "transfers[0].cov_unscaled[0][0]: must be a number of at least 0, "
                                                  "got -1e-10"},
      {"/transfers/0/busbw_intra_gbps", "-3", "transfers[0].busbw_intra_gbps: must be a number above 0, got -3"},
      {"/transfers/0/busbw_intra_gbps", "20", "transfers[0].busbw_intra_gbps: 20 does not match coef[2] (10 GB/s); "
                                              "predict reads coef[2]: change both, or fit again"},
      {"/transfers/0/alpha_inter_s", "1e-06", "transfers[0].alpha_inter_s: must be null (fitted[1] is false), got "
                                              "1e-06"},
      {"/transfers/0/coef/0", "-2e-06", "transfers[0].coef[0]: must be a number from 0 to 2592000, got -2e-06"},
      {"/transfers/0/coef/2", "\"fast\"", "transfers[0].coef[2]: must be a number of at least 0, got \"fast\""},
      {"/transfers/0/coef", "[2e-06, 0.0, 1e-10]", "transfers[0].coef: must be a list of 4, got a list of 3"},
      {"/transfers/0/coef", "", "transfers[0].coef: missing"},
      {"/transfers/0/fitted/1", "\"no\"", "transfers[0].fitted[1]: must be true or false, got \"no\""},
      {"/transfers/0/cov/2/2", "-1e-22", "transfers[0].cov[2][2]: must be a number of at least 0, got -1e-22"},
      {"/transfers/0/cov/1", "{}", "transfers[0].cov[1]: must be a list, got an object"},
      {"/transfers/0/terms/0", "\"latency\"", "transfers[0].terms[0]: must be \"alpha_intra_s\" (the order of coef), "
                                              "got \"latency\""},
      {"/transfers/0/points/0/nodes", "3", "transfers[0].points[0].nodes: must be at most the point's ranks, 2, got 3"},
      {"/transfers/0/comm", "\"auto\"", "transfers[0].comm: must be one of mpi, nccl; got \"auto\""},
      {"/transfers/1", R"({"backend": "cpu", "comm": "mpi", "op": "allreduce", "alpha_intra_s": null,
        "alpha_inter_s": null, "busbw_intra_gbps": null, "busbw_inter_gbps": null,
        "fit_error": {"cases": 1, "terms": 1, "files": 1, "rel_rms": 0, "log_se": 0, "poor": null, "worst": []},
        "terms": ["alpha_intra_s", "alpha_inter_s", "s_per_byte_intra", "s_per_byte_inter"],
        "coef": [0, 0, 0, 0], "fitted": [false, false, false, false],
        "cov": [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        "cov_unscaled": [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], "points": []})",
       "transfers[1]: a second fit of allreduce over mpi on cpu; predict would use only the first"},
      {"/files", "[]", "files: must be a list of at least 1, got an empty list"},
      {"/files/0/ranks", "0", "files[0].ranks: must be an integer from 1 to 2147483647, got 0"},
      {"/files/0/backend", "\"gpu\"", "files[0].backend: must be one of cpu, cuda; got \"gpu\""},
      {"/node_cores", "2.5", "node_cores: must be an integer from 1 to 2147483647, got 2.5"},
      {"/notes", "\"none\"", "notes: must be a list, got \"none\""},
      {"/cases/0/mode", "\"sideways\"", "cases[0].mode: must be one of serial, parallel; got \"sideways\""},
      {"/cases/0/experiment", "\"a\\u001b[31m\"", "cases[0].experiment: must be text, got \"a\\x1b[31m\": a control "
                                                   "character (U+001B) at byte 2"},
      {"/cases/0/params/size", "-64", "cases[0].params.size: must be at least 1, got -64"},
      {"/cases/0/params/size", "64.5", "cases[0].params.size: must be an integer, got 64.5"},
      {"/cases/0/params/size", "\"64\"", "cases[0].params.size: must be an integer, got \"64\""},
      {"/cases/0/params/threads", "0", "cases[0].params.threads: must be at least 1, got 0"},
      {"/cases/0/params/sise", "64", "cases[0].params: unknown key \"sise\" for workload gemm (did you mean 'size'?)"},
      {"/cases/1/params/op", "\"allreduc\"", "cases[1].params.op: must be one of allreduce, allgather"},
      {"/cases/1/params/inplace", "0", "cases[1].params.inplace: must be true or false, got 0"},
      {"/cases/1/params", "[]", "cases[1].params: must be an object, got an empty list"},
      {"/cases/1/workload", "7", "cases[1].workload: must be a string, got 7"},
      {"/format_version", "\"2\"", "format_version: must be an integer (this gpuscale reads 2), got \"2\""},
      {"/format_version", "1", "model format version 1, this gpuscale reads 2; fit it again with 'gpuscale model'"},
      {"/format_version", "3", "model format version 3 (written by gpuscale 0.1.0) is newer than this gpuscale reads "
                               "(2); predict with that gpuscale or a newer one, or fit it again with this one"},
      {"/format_version", "", "format_version: missing"},
      {"/format", "\"gpuscale-modle\"", "not a gpuscale model file: its \"format\" is \"gpuscale-modle\", not "
                                        "\"gpuscale-model\" (make one with 'gpuscale model FILES... -o model.json')"},
      {"/format", "", "not a gpuscale model file: it lacks \"format\": \"gpuscale-model\""},
  };
  for (const auto& e : edits) {
    INFO(e.pointer << " = " << e.value);
    const std::string why = refusal(edited(e.pointer, e.value));
    CHECK_THAT(why, Catch::StartsWith(std::string("model.json: ") + e.message));
    CHECK(why.find('\n') == std::string::npos);
    CHECK(why.find("json.exception") == std::string::npos);
  }
}

TEST_CASE("a file that is no model says what it is, on one line", "[model]") {
  const std::string make = " (make one with 'gpuscale model FILES... -o model.json')";
  std::string huge = edited("/copies/0/gbps", "12345.5");
  huge.replace(huge.find("12345.5"), 7, "1e999");  // no JSON value: a number a double cannot hold
  const std::vector<std::pair<std::string, std::string>> texts{
      {"", "the file is empty, not a model" + make},
      {" \n\t", "the file is empty, not a model" + make},
      {"[1, 2]", "not a gpuscale model file: JSON, but a list" + make},
      {"\"gpuscale-model\"", "not a gpuscale model file: JSON, but \"gpuscale-model\"" + make},
      {R"({"traceEvents": []})", "not a gpuscale model file (it looks like report --format trace output): a model is "
                                 "what 'gpuscale model RESULT_FILES... -o MODEL.json' writes"},
      {R"({"runs": [], "cases": []})", "not a gpuscale model file (it looks like report --format json-full output)"},
      {R"([{"workload": "gemm", "median_s": 1}])", "not a gpuscale model file (it looks like report --format json "
                                                  "output)"},
      {R"({"model": "m.json", "job": {}, "cases": []})", "not a gpuscale model file (it looks like predict --format "
                                                        "json output)"},
      {huge, "copies[0].gbps: must be a number a double holds (at most about 1.8e308), got 1e999"},
      {"{not json", "not a gpuscale model file: not JSON (at line 1, column 3: syntax error while parsing object key"},
  };
  for (const auto& [text, message] : texts) {
    INFO(text.substr(0, 40));
    const std::string why = refusal(text);
    CHECK_THAT(why, Catch::StartsWith("model.json: " + message));
    CHECK(why.find('\n') == std::string::npos);
    CHECK(why.find("json.exception") == std::string::npos);
  }
}

TEST_CASE("a JSON file where a result file was wanted says what it looks like", "[model]") {
  const std::string path = "test_model_file_results.json";
  const auto refusal_of = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      refuse_json_for_results(path, "give a result file");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal_of(R"([{"workload": "gemm", "case": 1}])") ==
        path + ": not a gpuscale result file (it looks like report --format json output); give a result file");
  CHECK(refusal_of(kModel) == path + ": not a gpuscale result file (it looks like a gpuscale model file); give a "
                                     "result file");
  CHECK(refusal_of("{\"a\": 1}") == path + ": not a gpuscale result file (it looks like JSON); give a result file");
  CHECK(refusal_of("") == path + ": not a gpuscale result file (it looks like an empty file); give a result file");
  CHECK(refusal_of("\x89HDF\r\n").empty());  // HDF5: the result reader's to judge
  std::remove(path.c_str());
}

TEST_CASE("a fit's error, its worst cases and why it is poor read back as written", "[model]") {
  Model m = read_model_json(kModel, "model.json");
  m.transfers[0].error.poor = "one case far off: one.h5 case 7 measured 3.1x the fit";
  m.transfers[0].error.worst = {{"one.h5 case 7", 3.1}};
  const Model back = read_model_json(model_json(m), "model.json");
  CHECK(back.transfers[0].error.poor == m.transfers[0].error.poor);
  REQUIRE(back.transfers[0].error.worst.size() == 1);
  CHECK(back.transfers[0].error.worst[0].ratio == 3.1);
  CHECK(back.transfers[0].cov_unscaled == m.transfers[0].cov_unscaled);
  CHECK(back.copies[0].cov_unscaled == m.copies[0].cov_unscaled);
  CHECK(back.gemm[0].error.log_se == 0.07);
  CHECK(back.gemm[0].points[0].cases == 2);
  // predict repeats the warning of the file's fit.
  const Prediction p = predict_case(back, back.cases[1], predict_job(back, 2, 1));
  REQUIRE(p.poor_fits.size() == 1);
  CHECK(p.poor_fits[0] == "allreduce over mpi (cpu): fit error 1.0% rms over 3 case(s), worst: one.h5 case 7 "
                          "(measured 3.10x the fit); one case far off: one.h5 case 7 measured 3.1x the fit");
}

TEST_CASE("predict takes an empty file for a model, so that it says it is empty", "[model]") {
  const std::string path = "test_model_file_empty.json";
  std::ofstream(path).close();
  CHECK(looks_like_json(path));
  CHECK_THROWS_WITH(read_model_file(path), Catch::StartsWith(path + ": the file is empty, not a model"));
  std::ofstream(path) << "\x89HDF\r\n";
  CHECK_FALSE(looks_like_json(path));
  std::ofstream(path) << "  [1]";
  CHECK(looks_like_json(path));
  std::remove(path.c_str());
  CHECK_FALSE(looks_like_json(path));  // the result reader says it cannot be read
}

TEST_CASE("predict relates the serial and parallel twins of many cases in one pass", "[model]") {
  // 20,000 pairs of one experiment: matching every parallel row with every serial row took minutes.
  Model m = read_model_json(kModel, "model.json");
  const ModelCase gemm = m.cases[0];
  m.cases.clear();
  for (std::int64_t ops = 1; ops <= 20000; ++ops) {
    for (const char* mode : {"serial", "parallel"}) {
      ModelCase c = gemm;
      c.mode = *parse_mode(mode);
      c.params.set("ops", ops);
      m.cases.push_back(c);
    }
  }
  const auto rows = predict_rows(m, m.cases, predict_job(m, 2, 1));
  for (const auto& r : rows) {
    if (r.c.mode != Mode::parallel) continue;
    REQUIRE(r.speedup);
    CHECK(*r.speedup == Approx(2.0));  // 2 ranks, a core each: the serial median is 2 turns of the same sample
  }
}
