// Helpers shared by the test suites: build workloads from inline JSON and simulate them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>
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
// (not waiting) activities on a GPU each get 1/n, and a communication instance runs at the
// smallest share any of its GPUs gives it. Counts its calls.
class FairShare final : public sim::ContentionModel {
 public:
  std::string_view name() const override { return "fair-share"; }
  void bind(const traces::Workload& w, const traces::ExecutionGraph& g) override {
    w_ = &w;
    g_ = &g;
    running_on_.assign(w.rank_count(), 0);
  }
  void waiting(traces::OpId) override {}
  void started(const sim::Activity& a) override {
    std::vector<traces::Rank>& ranks = ranks_[a.slot];
    ranks.clear();
    if (a.instance) {
      for (traces::OpId m : g_->members(a.subject)) {
        ranks.push_back(w_->rank_of(m));
      }
    } else {
      ranks.push_back(w_->rank_of(a.subject));
    }
    for (traces::Rank r : ranks) {
      ++running_on_[r];
    }
    rate_[a.slot] = 0;
  }
  void finished(const sim::Activity& a) override {
    for (traces::Rank r : ranks_[a.slot]) {
      --running_on_[r];
    }
    ranks_.erase(a.slot);
    rate_.erase(a.slot);
  }
  void rates(std::vector<sim::RateChange>& out) override {
    for (auto& [slot, rate] : rate_) {  // std::map: slot order
      double share = 1.0;
      for (traces::Rank r : ranks_[slot]) {
        share = std::min(share, 1.0 / static_cast<double>(running_on_[r]));
      }
      if (share != rate) {
        rate = share;
        out.push_back({slot, share});
      }
    }
    ++calls;
  }
  int calls = 0;

 private:
  const traces::Workload* w_ = nullptr;
  const traces::ExecutionGraph* g_ = nullptr;
  std::vector<int> running_on_;
  std::map<std::uint32_t, std::vector<traces::Rank>> ranks_;
  std::map<std::uint32_t, double> rate_;
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
