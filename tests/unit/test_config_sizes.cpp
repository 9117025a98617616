// Sizes as people write them ("16M", "1G", as nccl-tests' -b 16M) in every key that counts bytes, and every
// mistake of a config reported at once, a line each.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config_text.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

using testing::error_of;
using testing::parse;

// The values of `key` in the config's first experiment.
std::vector<Value> values(const Config& c, const std::string& key) {
  for (const auto& [k, v] : c.experiments.at(0).params) {
    if (k == key) return v;
  }
  return {};
}

std::vector<Value> ints(const std::vector<std::int64_t>& xs) { return {xs.begin(), xs.end()}; }

const std::string kCopy = "[[experiment]]\nname = \"c\"\nworkload = \"copy\"\n";

std::int64_t bytes_of(const std::string& text) {
  const ParsedSize s = parse_size(text);
  REQUIRE(s.problem == SizeProblem::none);
  return s.bytes;
}

SizeProblem problem_of(const std::string& text) { return parse_size(text).problem; }

}  // namespace

TEST_CASE("a size is a number and a unit of powers of 1024, in any case, as nccl-tests reads -b", "[config][sizes]") {
  CHECK(bytes_of("4096") == 4096);
  CHECK(bytes_of("64K") == 65536);
  CHECK(bytes_of("64k") == 65536);
  CHECK(bytes_of("16M") == 16777216);
  CHECK(bytes_of("16m") == 16777216);
  CHECK(bytes_of("1G") == 1073741824);
  CHECK(bytes_of("1g") == 1073741824);
  CHECK(bytes_of("1T") == 1099511627776);
  CHECK(bytes_of("16MiB") == 16777216);
  CHECK(bytes_of("16 mib") == 16777216);
  CHECK(bytes_of(" 1 GiB ") == 1073741824);
  CHECK(bytes_of("1KiB") == 1024);
  CHECK(bytes_of("007K") == 7168);
  CHECK(bytes_of("0") == 0);  // a size; the key's minimum refuses it
}

TEST_CASE("a decimal size is taken where it is a whole number of bytes, exactly", "[config][sizes]") {
  CHECK(bytes_of("1.5M") == 1572864);
  CHECK(bytes_of("1.5K") == 1536);
  CHECK(bytes_of("2.0") == 2);
  CHECK(bytes_of("0.25K") == 256);
  CHECK(bytes_of("0.0009765625K") == 1);                      // 2^-10 K
  CHECK(bytes_of("0.000000000931322574615478515625G") == 1);  // 2^-30 G: 30 digits after the point
  for (const char* s : {"0.3K", "1.5", "0.1M", "1.0000000000000000000001K", "0.5"}) {
    INFO(s);
    CHECK(problem_of(s) == SizeProblem::not_whole);
  }
  CHECK(parse_size("0.3K").approx == Approx(307.2));
  CHECK(parse_size("1.5").approx == Approx(1.5));
}

TEST_CASE("what is not a size says why", "[config][sizes]") {
  for (const char* s : {"16X", "", " ", "K", ".5K", "1.K", "1e3", "+1K", "0x10", "16 M B", "1P", "16KiBB", "1,5M"}) {
    INFO('"' << s << '"');
    CHECK(problem_of(s) == SizeProblem::not_a_size);
  }
  CHECK(problem_of("-16M") == SizeProblem::negative);
  CHECK(problem_of("16MB") == SizeProblem::decimal_unit);
  CHECK(problem_of("16kb") == SizeProblem::decimal_unit);
  CHECK(problem_of("1 TB") == SizeProblem::decimal_unit);
}

TEST_CASE("a size past a 64-bit integer is too large, never wrapped", "[config][sizes]") {
  CHECK(bytes_of("9223372036854775807") == INT64_MAX);
  CHECK(bytes_of("8388607T") == INT64_MAX - (std::int64_t{1} << 40) + 1);
  CHECK(problem_of("9223372036854775808") == SizeProblem::too_large);
  CHECK(problem_of("8388608T") == SizeProblem::too_large);  // 2^63
  CHECK(problem_of("8388608.5T") == SizeProblem::too_large);
  CHECK(bytes_of("8388607.5T") == INT64_MAX - (std::int64_t{1} << 39) + 1);
  CHECK(problem_of(std::string(400, '9') + "K") == SizeProblem::too_large);
}

TEST_CASE("a key counts bytes where it is named bytes or ends in _bytes, and each such key of the workloads does",
          "[config][sizes]") {
  CHECK(is_size({"bytes", ParamType::Int}));
  CHECK(is_size({"bucket_bytes", ParamType::Int}));
  CHECK_FALSE(is_size({"bytes", ParamType::String}));
  CHECK_FALSE(is_size({"_bytes", ParamType::Int}));
  CHECK_FALSE(is_size({"bytesize", ParamType::Int}));
  CHECK_FALSE(is_size({"size", ParamType::Int}));  // a matrix dimension, not bytes
  std::vector<std::string> sizes;
  for (const auto& w : workload_schemas()) {
    for (const auto& p : w.params) {
      if (is_size(p)) sizes.push_back(w.name + "." + p.key);
    }
  }
  for (const char* k : {"copy.bytes", "collective.bytes", "p2p.bytes", "dp_step.bucket_bytes"}) {
    INFO(k);
    CHECK(std::find(sizes.begin(), sizes.end(), k) != sizes.end());
  }
}

TEST_CASE("bytes = \"16M\" runs as 16777216, in a value, a list, a range and --set", "[config][sizes]") {
  CHECK(values(parse(kCopy + "bytes = \"16M\"\n"), "bytes") == ints({16777216}));
  CHECK(values(parse(kCopy + "bytes = [\"1K\", 4096, \"1.5M\"]\n"), "bytes") == ints({1024, 4096, 1572864}));
  CHECK(values(parse(kCopy + "bytes = {from = \"1K\", to = \"1M\", factor = 4}\n"), "bytes") ==
        ints({1024, 4096, 16384, 65536, 262144, 1048576}));
  CHECK(values(parse(kCopy + "bytes = {from = \"1K\", to = 4096, step = \"1K\"}\n"), "bytes") ==
        ints({1024, 2048, 3072, 4096}));
  CHECK(values(parse(kCopy, {"bytes=16M"}), "bytes") == ints({16777216}));
  CHECK(values(parse(kCopy, {"c.bytes=64k"}), "bytes") == ints({65536}));
  CHECK(values(parse(kCopy, {"bytes={from=\"1K\",to=\"16K\",factor=4}"}), "bytes") == ints({1024, 4096, 16384}));
  CHECK(values(parse(kCopy, {"bytes=[\"1K\", \"2K\"]"}), "bytes") == ints({1024, 2048}));
  const Config dp = parse("[[experiment]]\nworkload = \"dp_step\"\nbucket_bytes = \"25M\"\n");
  CHECK(values(dp, "bucket_bytes") == ints({26214400}));
  const Config coll = parse("[[experiment]]\nworkload = \"collective\"\nbytes = \"1G\"\n");
  CHECK(values(coll, "bytes") == ints({1073741824}));
}

TEST_CASE("a size that cannot be taken is one line naming the file, line, key and value", "[config][sizes][errors]") {
  CHECK(error_of(kCopy + "bytes = \"16X\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes' must be a size in bytes: an integer, or a string such as \"64K\", "
        "\"16M\", \"1G\" (K, M, G, T: powers of 1024); got string \"16X\"");
  CHECK(error_of(kCopy + "bytes = \"0.3K\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes': \"0.3K\" is not a whole number of bytes (307.2)");
  CHECK(error_of(kCopy + "bytes = \"-16M\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes': \"-16M\" is negative; a size counts bytes");
  CHECK(error_of(kCopy + "bytes = \"2T\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes' must be at most 1099511627776, got 2199023255552 (\"2T\")");
  CHECK(error_of(kCopy + "bytes = \"99999999999T\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes' must be at most 1099511627776, got \"99999999999T\"");
  CHECK(error_of(kCopy + "bytes = \"16MB\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes': \"16MB\" could mean powers of 1000 or of 1024; write \"16M\" or "
        "\"16MiB\" (powers of 1024)");
  CHECK(error_of(kCopy + "bytes = 1.5\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes' must be a size in bytes: an integer, or a string such as \"64K\", "
        "\"16M\", \"1G\" (K, M, G, T: powers of 1024); got number 1.5");
  const std::string in_list = error_of(kCopy + "bytes = [\"1K\", \"1X\"]\n");
  CHECK(in_list.rfind("exp.toml:4:16: experiment 'c': key 'bytes' must be a size", 0) == 0);
  CHECK(error_of(kCopy + "bytes = \"0\"\n") ==
        "exp.toml:4:9: experiment 'c': key 'bytes' must be at least 1, got 0 (\"0\")");
  CHECK(error_of(kCopy + "bytes = {from = \"1K\", to = \"1X\", factor = 2}\n")
            .rfind("exp.toml:4:28: experiment 'c': key 'bytes' must be a size in bytes", 0) == 0);
  CHECK(error_of(kCopy + "bytes = {from = \"1K\", to = \"4K\", step = \"0.5\"}\n") ==
        "exp.toml:4:41: experiment 'c': key 'bytes' range 'step': \"0.5\" is not a whole number of bytes (0.5)");
  CHECK(error_of(kCopy + "bytes = {from = \"4K\", to = \"1K\", factor = 2}\n") ==
        "exp.toml:4:28: experiment 'c': key 'bytes': range 'to' (1024) is below 'from' (4096)");
  CHECK(error_of(kCopy + "bytes = {from = true, to = \"1K\", factor = 2}\n") ==
        "exp.toml:4:17: experiment 'c': key 'bytes': range key 'from' must be an integer or a size such as \"64K\"");
}

TEST_CASE("a --set of sizes names the override, and one unquoted in a list says to quote them",
          "[config][sizes][set]") {
  CHECK(error_of(kCopy, {"bytes=16X"}).rfind("--set bytes=16X: experiment 'c': key 'bytes' must be a size", 0) == 0);
  CHECK(error_of(kCopy, {"bytes=[1K,4K]"}) ==
        "--set bytes=[1K,4K]: experiment 'c': key 'bytes' must be a size in bytes: an integer, or a string such as "
        "\"64K\", \"16M\", \"1G\" (K, M, G, T: powers of 1024); got string \"[1K,4K]\" (in a list or range, quote each "
        "size: [\"1K\", \"4K\"])");
}

TEST_CASE("only keys that count bytes take sizes", "[config][sizes][errors]") {
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nsize = \"1K\"\n") ==
        "exp.toml:3:8: experiment #1: key 'size' must be an integer, got string \"1K\"");
  CHECK(error_of("[defaults]\nreps = \"1K\"\n[[experiment]]\nworkload = \"gemm\"\n") ==
        "exp.toml:2:8: [defaults] key 'reps' must be an integer, got string \"1K\"");
}

TEST_CASE("every mistake of a config is reported at once, a line each in the file's order", "[config][errors]") {
  const std::string text = "[defaults]\nrepz = 3\n"
                           "[[experiment]]\nname = \"a\"\nworkload = \"copy\"\nbytez = 4096\n"
                           "[[experiment]]\nname = \"b\"\nworkload = \"copy\"\nbytes = \"16X\"\nops = 0\n"
                           "[[experiment]]\nname = \"c\"\nworkload = \"copy\"\nbytes = \"16M\"\n";
  CHECK(error_of(text) ==
        "exp.toml:2:1: unknown key 'repz' in [defaults] (did you mean 'reps'?); valid keys: backend, comm, warmup, "
        "warmup_s, reps, threads, timeout, seed, share_devices, budget_s, and the table [defaults.expect]\n"
        "exp.toml:6:1: experiment 'a': unknown key 'bytez' (did you mean 'bytes'?); valid keys: name, workload, modes, "
        "expect, warmup, warmup_s, reps, threads, bytes, direction, host, ops\n"
        "exp.toml:10:9: experiment 'b': key 'bytes' must be a size in bytes: an integer, or a string such as \"64K\", "
        "\"16M\", \"1G\" (K, M, G, T: powers of 1024); got string \"16X\"\n"
        "exp.toml:11:7: experiment 'b': key 'ops' must be at least 1, got 0");
  // The overrides' mistakes first, then the file's.
  const std::string e = error_of(text, {"szie=3"});
  CHECK(e.rfind("--set szie=3: unknown key 'szie'", 0) == 0);
  CHECK(e.find("\nexp.toml:2:1: unknown key 'repz'") != std::string::npos);
}

TEST_CASE("an experiment's modes, values and limits are each reported", "[config][errors]") {
  const std::string e = error_of(kCopy + "modes = [\"serial\", \"serial\"]\nops = -1\n"
                                         "[experiment.expect]\nmax_median = 1\n");
  CHECK(e == "exp.toml:4:9: experiment 'c': mode \"serial\" is listed twice\n"
             "exp.toml:5:7: experiment 'c': key 'ops' must be at least 1, got -1\n"
             "exp.toml:7:1: experiment 'c': unknown limit 'max_median' in [experiment.expect] (did you mean "
             "'max_median_s'?); valid limits: max_median_s, min_gflops_per_rank, min_gbps_per_rank, min_busbw_gbps, "
             "min_efficiency, min_of_vendor, max_slowest_ratio");
}

TEST_CASE("run-wide limits are not judged against an experiment that could not be read", "[config][errors]") {
  // Experiment 'b' (both modes) alone could measure min_efficiency: with its mistake, only that mistake is reported.
  const std::string text = "[defaults.expect]\nmin_efficiency = 0.5\n"
                           "[[experiment]]\nname = \"a\"\nworkload = \"gemm\"\nmodes = \"parallel\"\n"
                           "[[experiment]]\nname = \"b\"\nworkload = \"gemm\"\nsize = 0\n";
  CHECK(error_of(text) == "exp.toml:10:8: experiment 'b': key 'size' must be at least 1, got 0");
  CHECK(error_of("[defaults.expect]\nmin_efficiency = 5\n[[experiment]]\nworkload = \"gemm\"\nsize = 0\n") ==
        "exp.toml:2:18: [defaults.expect] min_efficiency is a share of perfect scaling: above 0 and at most 1 (e.g. "
        "0.8), got integer 5\n"
        "exp.toml:5:8: experiment #1: key 'size' must be at least 1, got 0");
}

TEST_CASE("mistakes that leave nothing to read stop at once, many are cut short", "[config][errors]") {
  CHECK(error_of("[defaults]\nrepz = 3\n[[experiment]\n").rfind("exp.toml:3:", 0) == 0);  // a syntax error alone
  CHECK(error_of("[defaults]\nrepz = 3\n") ==
        "exp.toml:2:1: unknown key 'repz' in [defaults] (did you mean 'reps'?); valid keys: backend, comm, warmup, "
        "warmup_s, reps, threads, timeout, seed, share_devices, budget_s, and the table [defaults.expect]\n"
        "exp.toml: no experiments: add at least one [[experiment]] table");
  std::string many;
  for (int i = 0; i < 25; ++i) many += "[[experiment]]\nworkload = \"gemm\"\nsize = 0\n";
  const std::string e = error_of(many);
  CHECK(std::count(e.begin(), e.end(), '\n') == 20);
  CHECK(e.rfind("exp.toml:3:8: experiment #1: key 'size' must be at least 1, got 0\n", 0) == 0);
  CHECK(e.substr(e.rfind('\n') + 1) == "exp.toml: 5 more mistake(s) not shown");
}

TEST_CASE("a mistake's control characters are escaped, so a line break only parts two mistakes", "[config][errors]") {
  const std::string e = error_of("[[experiment]]\nworkload = \"gemm\"\n\"a\\nb\" = 1\nsize = 0\n");
  CHECK(e.rfind("exp.toml:3:1: experiment #1: unknown key 'a\\x0ab'", 0) == 0);
  CHECK(std::count(e.begin(), e.end(), '\n') == 1);
}
