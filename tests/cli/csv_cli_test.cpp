// CSV outputs (simulate per op and per rank, comm, overlap, tune, compare) and the trace filters:
// the CSV holds what the JSON report holds, and the filters keep exactly the ranks and times
// asked for.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

const std::vector<std::string> kCsvStep = {"simulate", "--model",   "phi-2",     "--parallel",
                                           "fsdp=8",   "--cluster", "a40-nvlink"};

TEST(CsvCli, SimulateOpsAndRanksMatchTheJsonReport) {
  TempDir dir;
  const std::string ops = (dir.path() / "ops.csv").string();
  const std::string ranks = (dir.path() / "ranks.csv").string();
  std::vector<std::string> args = kCsvStep;
  args.insert(args.end(), {"--json", "--csv", ops, "--csv-ranks", ranks});
  const CliRun r = run_lagom(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto rows = read_csv(slurp(ops));
  ASSERT_EQ(rows.size(), j["ops"].size() + 1);
  EXPECT_EQ(rows[0][0], "op");
  EXPECT_EQ(rows[0][9], "end_us");
  double last_end = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    last_end = std::max(last_end, std::stod(rows[i][9]));
  }
  EXPECT_NEAR(last_end, j["step_time_us"].get<double>(), 1e-3);
  const auto rr = read_csv(slurp(ranks));
  std::size_t streams = 0;
  for (const auto& rank : j["ranks"]) {
    streams += rank["streams"].size();
  }
  EXPECT_EQ(rr.size(), streams + 1);
  EXPECT_EQ(rr[0],
            (std::vector<std::string>{"rank", "stream", "stream_busy_us", "stream_idle_us",
                                      "stream_comm_wait_us", "rank_busy_us", "rank_idle_us"}));
}

TEST(CsvCli, TraceFiltersKeepTheRanksAndTheWindow) {
  TempDir dir;
  const std::string trace = (dir.path() / "t.json").string();
  std::vector<std::string> args = kCsvStep;
  args.insert(args.end(),
              {"--trace", trace, "--trace-ranks", "0-1,5", "--trace-window", "1000:60000"});
  const CliRun r = run_lagom(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(slurp(trace));
  std::set<int> pids;
  std::size_t slices = 0;
  for (const auto& e : t["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "X") {
      ++slices;
      const double ts = e["ts"].get<double>();
      EXPECT_LE(ts, 60000.0);
      EXPECT_GE(ts + e["dur"].get<double>(), 1000.0);
    }
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 5}));
  EXPECT_GT(slices, 0u);
  // Bad filters name themselves.
  args = kCsvStep;
  args.insert(args.end(), {"--trace", trace, "--trace-ranks", "3-1"});
  CliRun bad = run_lagom(args);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "the range 3-1 runs backwards")) << bad.err;
  args = kCsvStep;
  args.insert(args.end(), {"--trace", trace, "--trace-ranks", "8"});
  bad = run_lagom(args);
  EXPECT_TRUE(contains(bad.err, "rank 8 is past the step's last rank 7")) << bad.err;
  args = kCsvStep;
  args.insert(args.end(), {"--trace", trace, "--trace-window", "50"});
  bad = run_lagom(args);
  EXPECT_TRUE(contains(bad.err, "expected START_US:END_US")) << bad.err;
  args = kCsvStep;
  args.insert(args.end(), {"--trace-window", "0:5"});
  bad = run_lagom(args);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "give --trace FILE too")) << bad.err;
}

TEST(CsvCli, CommOverlapTuneAndCompareRows) {
  TempDir dir;
  const std::string comm = (dir.path() / "comm.csv").string();
  CliRun r = run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "-b", "1M", "-e",
                        "16M", "--json", "--csv", comm});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto rows = read_csv(slurp(comm));
  ASSERT_EQ(rows.size(), j["rows"].size() + 1);
  EXPECT_EQ(rows[0][0], "size_bytes");
  EXPECT_EQ(rows[0][2], "time_us");
  EXPECT_DOUBLE_EQ(std::stod(rows[1][2]), j["rows"][0]["time_us"].get<double>());

  const std::string overlap = (dir.path() / "overlap.csv").string();
  r = run_lagom({"overlap", "--cluster", "a40-pcie", "--compute", "gemm:m=4096,n=4096,k=4096",
                 "--nchannels", "1,2,4", "--chunk", "1M", "--csv", overlap});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_csv(slurp(overlap)).size(), 4u);

  const std::string cmp = (dir.path() / "compare.csv").string();
  r = run_lagom({"compare", "--model", "phi-2", "--parallel", "fsdp=8", "--mbs", "2", "--gbs", "16",
                 "--cluster", "a40-nvlink", "--methods", "nccl,lagom", "--json", "--csv", cmp});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto c = nlohmann::json::parse(r.out);
  const auto crows = read_csv(slurp(cmp));
  ASSERT_EQ(crows.size(), 1 + 2 * c["rows"][0]["plan"].size());
  EXPECT_EQ(crows[0][0], "method");
  EXPECT_EQ(crows[1][0], "nccl");
  EXPECT_EQ(crows.back()[0], "lagom");
  const std::string tune = (dir.path() / "tune.csv").string();
  r = run_lagom({"tune", "--model", "phi-2", "--parallel", "fsdp=8", "--mbs", "2", "--gbs", "16",
                 "--cluster", "a40-nvlink", "--csv", tune});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_csv(slurp(tune)).size(), crows.size() / 2 + 1);
}

}  // namespace
}  // namespace lagom::test
