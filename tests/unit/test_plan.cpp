// Expanding experiments into cases: the cartesian product of list-valued keys.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "core/plan.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

TEST_CASE("list-valued keys expand into their cartesian product with modes innermost", "[plan]") {
  const Config cfg = parse_config(
      "[[experiment]]\nname = \"s\"\nworkload = \"gemm\"\nsize = [64, 128, 256]\ndtype = [\"fp64\", \"fp32\"]\n"
      "[[experiment]]\nname = \"t\"\nworkload = \"gemm\"\nmodes = [\"parallel\"]\n",
      "p.toml", {}, workload_schemas());
  const auto plan = expand(cfg);
  REQUIRE(plan.size() == 3 * 2 * 2 + 1);
  for (std::size_t i = 0; i < plan.size(); ++i) CHECK(plan[i].index == i);
  CHECK(plan[0].label() == "s size=64 dtype=fp64 impl=vendor ops=1 [serial]");
  CHECK(plan[1].label() == "s size=64 dtype=fp64 impl=vendor ops=1 [parallel]");
  CHECK(plan[2].label() == "s size=64 dtype=fp32 impl=vendor ops=1 [serial]");
  CHECK(plan[4].label() == "s size=128 dtype=fp64 impl=vendor ops=1 [serial]");
  CHECK(plan[11].label() == "s size=256 dtype=fp32 impl=vendor ops=1 [parallel]");
  CHECK(plan[12].label() == "t size=512 dtype=fp64 impl=vendor ops=1 [parallel]");
  CHECK(plan[12].params.get_int("reps") == 10);
  CHECK(plan[12].params.get_int("threads") == 1);
}

TEST_CASE("runner keys can be swept like any other", "[plan]") {
  const Config cfg = parse_config("[[experiment]]\nworkload = \"gemm\"\nthreads = [1, 2]\nmodes = \"serial\"\n",
                                  "p.toml", {}, workload_schemas());
  const auto plan = expand(cfg);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].params.get_int("threads") == 1);
  CHECK(plan[1].params.get_int("threads") == 2);
  CHECK(plan[0].param_label() == "size=512 dtype=fp64 impl=vendor ops=1");  // runner keys are not workload parameters
}
