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

TEST_CASE("the plan's size is known from the lists before anything is expanded", "[plan][limits]") {
  std::string text = "[[experiment]]\nname = \"typo\"\nworkload = \"gemm\"\n";
  std::string list = "[";
  for (int i = 1; i <= 50; ++i) list += std::to_string(i) + (i < 50 ? "," : "]");
  for (const char* key : {"m", "n", "k", "ops"}) text += std::string(key) + " = " + list + "\n";
  const Config cfg = parse_config(text, "typo.toml", {}, workload_schemas());
  CHECK(plan_size(cfg) == 50ull * 50 * 50 * 50 * 2);  // modes: serial and parallel
  CHECK_THROWS_WITH(check_plan_size(cfg, kDefaultMaxCases),
                    "typo.toml: the plan has 12500000 cases, more than --max-cases 10000; experiment 'typo': m (50) x "
                    "n (50) x k (50) x ops (50) x modes (2) = 12500000; shorten those lists, or raise --max-cases if "
                    "you mean it");
  CHECK_NOTHROW(check_plan_size(cfg, 12500000));
  const Config one = parse_config("[[experiment]]\nworkload = \"gemm\"\nsize = [1, 2]\n", "one.toml", {},
                                  workload_schemas());
  CHECK(plan_size(one) == expand(one).size());
}
