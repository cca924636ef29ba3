// Helpers shared by the test suites: build workloads from inline JSON and simulate them.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <span>
#include <string>
#include <string_view>

#include "lagom/common/error.hpp"
#include "lagom/sim/contention.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"
#include "lagom/traces/workload_json.hpp"

namespace lagom::test {

// A parameterised test's name from its case's `what` (gtest allows only letters, digits and
// underscores): INSTANTIATE_TEST_SUITE_P(..., ::testing::ValuesIn(cases), case_name<Case>).
template <class Case>
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.what;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) {
      ch = '_';
    }
  }
  return n;
}

// A contention test double whose times can be derived by hand: processor sharing, n running
// (not waiting) ops on a GPU each get 1/n. Counts its calls.
class FairShare final : public sim::ContentionModel {
 public:
  std::string_view name() const override { return "fair-share"; }
  void speed_factors(const traces::Workload&, traces::Rank, std::span<const sim::ActiveOp> active,
                     std::span<double> factors) override {
    std::size_t running = 0;
    for (const sim::ActiveOp& a : active) {
      running += a.waiting ? 0 : 1;
    }
    for (double& f : factors) {
      f = running ? 1.0 / static_cast<double>(running) : 1.0;
    }
    ++calls;
  }
  int calls = 0;
};

// Wraps `ranks_json` (the value of "ranks") and `groups_json` into a v1 document and parses it.
inline traces::Workload workload(std::string_view ranks_json, std::string_view groups_json = "{}") {
  const std::string doc = std::string(R"({"format": "lagom.workload", "version": 1, "groups": )") +
                          std::string(groups_json) + R"(, "ranks": )" + std::string(ranks_json) +
                          "}";
  return traces::parse_workload_json(doc, "test.json");
}

struct Simulated {
  traces::Workload w;
  traces::ExecutionGraph g;
  sim::SimResult r;

  traces::OpId op(std::string_view id) const {
    auto found = w.find_op(id);
    EXPECT_TRUE(found.has_value()) << "no op " << id;
    return found.value_or(0);
  }
  std::int64_t launch_ns(std::string_view id) const { return r.ops[op(id)].launch.count_ns(); }
  std::int64_t start_ns(std::string_view id) const { return r.ops[op(id)].start.count_ns(); }
  std::int64_t end_ns(std::string_view id) const { return r.ops[op(id)].end.count_ns(); }
};

inline Simulated simulate(traces::Workload w, sim::SimOptions options = {}) {
  Simulated s{std::move(w), {}, {}};
  s.g = traces::analyze(s.w, "test.json");
  sim::Engine engine(s.w, s.g, options);
  s.r = engine.run();
  return s;
}

// The message of the lagom::Error that `f` throws, or "" (and a test failure) if none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a lagom::Error";
  return "";
}

constexpr std::int64_t us(double v) {
  return static_cast<std::int64_t>(v * 1000.0 + 0.5);
}

}  // namespace lagom::test
