// The streamed JSON report (write_json_report) is the document json_report builds, byte for
// byte: names that need escaping, ops of every kind, no ops at all, and the report without ops.
#include <gtest/gtest.h>

#include <sstream>

#include "lagom/sim/stats.hpp"
#include "report.hpp"
#include "test_util.hpp"

namespace lagom::cli {
namespace {

std::string streamed(const test::Simulated& s, const RunContext& ctx, bool ops) {
  std::ostringstream out;
  write_json_report(out, s.w, s.g, s.r, sim::summarize(s.w, s.r), ctx, ops);
  return out.str();
}

std::string document(const test::Simulated& s, const RunContext& ctx, bool ops) {
  return json_report(s.w, s.g, s.r, sim::summarize(s.w, s.r), ctx, ops).dump(1) + "\n";
}

TEST(JsonReport, TheStreamedReportIsTheDocumentsBytes) {
  // Ids with a quote, a backslash, a tab, non-ASCII UTF-8 and plain ones; durations whose
  // microseconds need many digits, a zero-length op, and a collective.
  const test::Simulated s = test::simulate(test::workload(
      R"([{"rank": 0, "streams": [
            {"stream": "comp\"ute", "ops": [
              {"id": "a \"quoted\" op", "kind": "compute", "duration_us": 1.001},
              {"id": "back\\slash\ttab", "kind": "compute", "duration_us": 0},
              {"id": "größe", "kind": "compute", "duration_us": 123456.789}]},
            {"stream": "comm", "ops": [
              {"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8, "duration_us": 3.3}]}]},
          {"rank": 1, "streams": [{"stream": "s", "ops": [
              {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
               "duration_us": 0.333}]}]}])",
      R"({"g": [0, 1]})"));
  RunContext ctx;
  ctx.command = "simulate";
  ctx.workload_source = "test";
  for (bool ops : {true, false}) {
    EXPECT_EQ(streamed(s, ctx, ops), document(s, ctx, ops)) << "ops " << ops;
  }
  EXPECT_NE(streamed(s, ctx, true).find(R"("id": "a \"quoted\" op")"), std::string::npos);
  // No ops at all.
  const test::Simulated none = test::simulate(test::workload(R"([{"rank": 0, "streams": []}])"));
  EXPECT_EQ(streamed(none, ctx, true), document(none, ctx, true));
}

}  // namespace
}  // namespace lagom::cli
