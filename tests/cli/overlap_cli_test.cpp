// `lagom overlap`: the paper's Figure 3 setup reproduces its qualitative findings, and bad
// requests are clear errors.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

struct Row {
  double comm_us, comm_alone_us, compute_us, compute_alone_us, makespan_us;
};

// The paper's Figure 3: a 32 MB AllReduce beside an FFN (Phi-2's 2560 -> 10240 -> 2560 on 4096
// tokens) on 8 A40 over PCIe, 128 threads per channel.
std::map<std::pair<int, std::int64_t>, Row> figure3(const std::string& tokens) {
  CliRun r = run_lagom({"overlap", "--cluster", "a40-pcie", "--coll", "allreduce", "--bytes", "32M",
                        "--compute", "ffn:tokens=" + tokens + ",hidden=2560,ffn=10240",
                        "--nthreads", "128", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::pair<int, std::int64_t>, Row> rows;
  for (const auto& row : j["rows"]) {
    rows[{row["nchannels"].get<int>(), row["chunk_bytes"].get<std::int64_t>()}] =
        Row{row["comm_us"], row["comm_alone_us"], row["compute_us"], row["compute_alone_us"],
            row["makespan_us"]};
  }
  EXPECT_EQ(rows.size(), 30u);  // 6 channel counts x 5 chunk sizes by default
  return rows;
}

TEST(OverlapCli, Figure3ComputeGrowsWithChannelsAndChunks) {
  const auto rows = figure3("4096");
  const int channels[] = {1, 2, 4, 8, 16, 32};
  const std::int64_t chunks[] = {16 << 10, 64 << 10, 256 << 10, 1 << 20, 2 << 20};
  for (std::int64_t c : chunks) {
    for (int i = 1; i < 6; ++i) {
      EXPECT_GE(rows.at({channels[i], c}).compute_us, rows.at({channels[i - 1], c}).compute_us)
          << channels[i] << " channels, chunk " << c;
    }
  }
  // Larger chunks pollute L2 more until 4 * channels * chunk fills it; beyond that the compute
  // time stays flat up to the collective finishing a little earlier (well under 0.1%).
  for (int nc : channels) {
    for (int i = 1; i < 5; ++i) {
      EXPECT_GE(rows.at({nc, chunks[i]}).compute_us,
                0.999 * rows.at({nc, chunks[i - 1]}).compute_us)
          << nc << " channels, chunk " << chunks[i];
    }
    EXPECT_GT(rows.at({nc, chunks[4]}).compute_us, rows.at({nc, chunks[0]}).compute_us) << nc;
  }
  for (const auto& [key, row] : rows) {
    EXPECT_GE(row.compute_us, row.compute_alone_us);  // overlapping never helps a side
    EXPECT_GE(row.comm_us + 1e-6, row.comm_alone_us);
    EXPECT_GE(row.makespan_us + 1e-6, std::max(row.comm_us, row.compute_us));
  }
}

TEST(OverlapCli, Figure3MoreChannelsPastEightBuyLittleCommunication) {
  // Paper: NC 16 and NC 32 give almost the same communication time; past NC ~ 8 more channels
  // buy little communication time but cost computation time.
  const auto rows = figure3("4096");
  const std::int64_t c = 16 << 10;
  EXPECT_NEAR(rows.at({16, c}).comm_us, rows.at({32, c}).comm_us, 0.02 * rows.at({16, c}).comm_us);
  EXPECT_LT(rows.at({16, c}).comm_us, 1.02 * rows.at({8, c}).comm_us);
  EXPECT_GT(rows.at({32, c}).compute_us, 1.1 * rows.at({16, c}).compute_us);
  // Going from 1 to 8 channels does buy communication time.
  EXPECT_LT(rows.at({8, c}).comm_us, 0.5 * rows.at({1, c}).comm_us);
}

TEST(OverlapCli, JsonHasTheDocumentedFields) {
  CliRun r =
      run_lagom({"overlap", "--cluster", "dgx-h100", "--compute", "gemm:m=8192,n=8192,k=8192",
                 "--nchannels", "4,8", "--chunk", "512K", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const char* key : {"nchannels", "chunk_bytes", "comm_us", "comm_alone_us", "compute_us",
                          "compute_alone_us", "makespan_us"}) {
    EXPECT_TRUE(j["rows"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["context"]["command"], "overlap");
}

struct Bad {
  std::vector<std::string> args;
  int exit_code;
  const char* expect;
};

class OverlapBad : public ::testing::TestWithParam<Bad> {};

TEST_P(OverlapBad, IsAClearError) {
  std::vector<std::string> args = {"overlap"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  CliRun r = run_lagom(args);
  EXPECT_EQ(r.exit_code, GetParam().exit_code) << r.err;
  EXPECT_TRUE(contains(r.err, GetParam().expect)) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Requests, OverlapBad,
    ::testing::Values(
        Bad{{"--cluster", "dgx-h100"}, 2, "--compute"},
        Bad{{"--cluster", "dgx-h100", "--compute", "conv:k=3"}, 1, "unknown kernel 'conv'"},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8"}, 1, "missing k="},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8,k=-1"},
            1,
            "k: expected a number from 1 to 16777216, got '-1'"},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8,k=8,q=1"},
            1,
            "unknown parameter 'q'"},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8,k=8", "--nchannels", "0"},
            1,
            "--nchannels"},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8,k=8", "--chunk", "1Q"},
            1,
            "--chunk"},
        Bad{{"--cluster", "dgx-h100", "--compute", "gemm:m=8,n=8,k=8", "--coll", "compute"},
            1,
            "not a collective"},
        Bad{{"--cluster", "a40-pcie", "--compute", "gemm:m=8,n=8,k=8", "--algo", "NVLS"},
            1,
            "NVLS"}));

}  // namespace
}  // namespace lagom::test
