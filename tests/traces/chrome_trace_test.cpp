// The Chrome/Perfetto trace writer: valid JSON with the documented structure.
#include "lagom/traces/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.hpp"

namespace lagom::traces {
namespace {

TEST(ChromeTrace, HasProcessesThreadsSlicesWaitsAndFlows) {
  auto s = test::simulate(test::workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "c", "kind": "compute", "duration_us": 10}]},
          {"stream": "comm", "ops": [
              {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8, "duration_us": 5,
               "deps": ["c"]}]}]},
      {"rank": 1, "streams": [{"stream": "comm", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 8, "duration_us": 5}]}]}])",
                                         R"({"g": [0, 1]})"));
  std::ostringstream out;
  write_chrome_trace(s.w, s.r.ops, out);
  const auto doc = nlohmann::json::parse(out.str());
  int process_names = 0, thread_names = 0, slices = 0, waits = 0, flow_starts = 0, flow_ends = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") {
      ++process_names;
    } else if (ph == "M" && e["name"] == "thread_name") {
      ++thread_names;
    } else if (ph == "X" && e["cat"] == "wait") {
      ++waits;
      // Rank 1 arrives at 0 and waits until rank 0's all-reduce is launched at 10 us.
      EXPECT_EQ(e["pid"], 1);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.0);
    } else if (ph == "X") {
      ++slices;
      if (e["name"] == "a0") {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 10.0);
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 5.0);
        EXPECT_EQ(e["args"]["group"], "g");
        EXPECT_EQ(e["args"]["bytes"], 8);
        EXPECT_EQ(e["tid"], 1);
      }
    } else if (ph == "s") {
      ++flow_starts;
    } else if (ph == "f") {
      ++flow_ends;
      EXPECT_EQ(e["bp"], "e");
    }
  }
  EXPECT_EQ(process_names, 2);
  EXPECT_EQ(thread_names, 3);
  EXPECT_EQ(slices, 3);
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(flow_starts, 1);  // one dependency: c -> a0
  EXPECT_EQ(flow_ends, 1);
}

TEST(ChromeTrace, ExtraArgsAreMerged) {
  auto s = test::simulate(test::workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "c", "kind": "compute", "duration_us": 1}]}]}])"));
  std::ostringstream out;
  ChromeTraceOptions opt;
  opt.extra_args = [](OpId) { return std::string(R"("slowdown": 1.5)"); };
  write_chrome_trace(s.w, s.r.ops, out, opt);
  const auto doc = nlohmann::json::parse(out.str());
  bool found = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_DOUBLE_EQ(e["args"]["slowdown"].get<double>(), 1.5);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lagom::traces
