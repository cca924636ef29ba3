// Fuzzes the config plan reader (docs/formats/plan.md) and the writers of what it accepts: the
// plan JSON (which must read back to the same text), NCCL's example CSV and the environment.
#include <sstream>

#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/search/plan.hpp"

namespace {

std::string plan_text(const lagom::search::ConfigPlan& plan) {
  std::ostringstream out;
  lagom::search::write_plan_json(plan, out);
  return out.str();
}

}  // namespace

int lagom::fuzz::plan(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const lagom::search::ConfigPlan plan =
        lagom::search::parse_plan_json(lagom::fuzz::text_of(data, size), "fuzz");
    const std::string once = plan_text(plan);
    lagom::fuzz::require(
        lagom::fuzz::reread(
            [&] { return plan_text(lagom::search::parse_plan_json(once, "round trip")); },
            "our plan JSON is refused") == once,
        "the plan does not survive a round trip");
    std::ostringstream csv;
    lagom::search::write_nccl_example_csv(plan, csv);
    std::ostringstream env;
    lagom::search::write_nccl_env(plan, env);
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::plan)
