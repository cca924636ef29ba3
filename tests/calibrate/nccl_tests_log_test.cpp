// nccl-tests log parsing: the real logs in calibrate/data/nccl-tests/, raw output written here,
// and malformed input.
#include "lagom/calibrate/nccl_tests_log.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "lagom/common/error.hpp"
#include "strings.hpp"
#include "test_util.hpp"

namespace lagom::calibrate {
namespace {

using test::error_of;

using test::contains;

// Half a unit in the last place nccl-tests printed. Current versions (getFloatStr) write the
// value in `width` characters with 2 decimals if they fit, else 1, else 0; older ones printed
// times with 2 decimals below 100 us, 1 below 10000 us, else none. Take the coarser.
double half_ulp(double value, int width) {
  double ulp = 0.5;
  for (int decimals = 2; decimals >= 0; --decimals) {
    const std::string s = fmt::format("{:.{}f}", value, decimals);
    if (static_cast<int>(s.size()) <= width) {
      ulp = 0.5 * std::pow(10.0, -decimals);
      break;
    }
  }
  if (width == 7) {
    ulp = std::max(ulp, value >= 10000.0 ? 0.5 : value >= 100.0 ? 0.05 : 0.005);
  }
  return ulp;
}

// busbw = size / time x factor, with time and busbw as printed (rounded): the recomputed value
// may differ from the printed one by the busbw rounding plus the time rounding carried through.
void expect_busbw_consistent(const NcclTestsLog& log, const NcclTestsRow& row,
                             const NcclTestsTiming& t) {
  const NcclTestsCollective c = *log.collective;
  const double recomputed = busbw_GBps(c, log.nranks, row.size_bytes, t.time_us);
  const double tol =
      half_ulp(t.busbw_GBps, 6) + recomputed * half_ulp(t.time_us, 7) / t.time_us + 1e-9;
  EXPECT_NEAR(recomputed, t.busbw_GBps, tol) << log.source << ":" << row.line;
  const double alg = algbw_GBps(row.size_bytes, t.time_us);
  EXPECT_NEAR(alg, t.algbw_GBps,
              half_ulp(t.algbw_GBps, 6) + alg * half_ulp(t.time_us, 7) / t.time_us + 1e-9)
      << log.source << ":" << row.line;
}

struct Expected {
  const char* name;
  NcclTestsCollective collective;
  std::size_t rows;
  std::int64_t first_size;
  std::int64_t last_size;
  int nranks;
  int nodes;
  const char* nccl_version;
  const char* gpu;
  const char* type;
};

const Expected kRealLogs[] = {
    {"01-h100x8-nvswitch-allreduce-nccl2.29.txt", NcclTestsCollective::kAllReduce, 10, 32LL << 20,
     16LL << 30, 8, 1, "2.29.2", "NVIDIA H100 80GB HBM3 (SXM)", "double"},
    {"02-h100x8-nvswitch-allgather-nccl2.29.txt", NcclTestsCollective::kAllGather, 10, 32LL << 20,
     16LL << 30, 8, 1, "2.29.2", "NVIDIA H100 80GB HBM3 (SXM)", "double"},
    {"06-h100-p5-2nodes-efa-allreduce-nccl2.22.3-runA.txt", NcclTestsCollective::kAllReduce, 32, 8,
     16LL << 30, 16, 2, "2.22.3", "NVIDIA H100 80GB HBM3 (SXM)", "float"},
    {"12-a100x8-nvswitch-allreduce-1proc.txt", NcclTestsCollective::kAllReduce, 30, 8, 4LL << 30, 8,
     1, "", "NVIDIA A100-SXM4-80GB", "float"},
};

TEST(NcclTestsLog, EveryRealLogParses) {
  EXPECT_EQ(embedded_nccl_tests_logs().size(), std::size(kRealLogs));
  for (const Expected& e : kRealLogs) {
    const NcclTestsLog log = embedded_nccl_tests_log(e.name);
    SCOPED_TRACE(e.name);
    // Rows start on the line after the "---" that ends the metadata header.
    const std::string_view text = find_embedded(embedded_nccl_tests_logs(), e.name)->content;
    const std::string_view head = text.substr(0, text.find("\n---\n"));
    const int first_row_line = static_cast<int>(std::count(head.begin(), head.end(), '\n')) + 3;
    EXPECT_EQ(log.rows.front().line, first_row_line);
    EXPECT_EQ(log.source, e.name);
    ASSERT_TRUE(log.collective.has_value());
    EXPECT_EQ(*log.collective, e.collective);
    ASSERT_EQ(log.rows.size(), e.rows);
    EXPECT_EQ(log.rows.front().size_bytes, e.first_size);
    EXPECT_EQ(log.rows.back().size_bytes, e.last_size);
    EXPECT_EQ(log.nranks, e.nranks);
    EXPECT_EQ(log.nodes, e.nodes);
    EXPECT_EQ(log.nccl_version, e.nccl_version);
    EXPECT_EQ(log.gpu, e.gpu);
    // Sizes double from row to row (-f 2); count x element size is the size column for
    // all_reduce, and the per-rank share for all_gather.
    const std::int64_t elem = std::string(e.type) == "double" ? 8 : 4;
    for (std::size_t i = 0; i < log.rows.size(); ++i) {
      const NcclTestsRow& r = log.rows[i];
      EXPECT_EQ(r.type, e.type);
      EXPECT_EQ(r.root, -1);
      if (i > 0) {
        EXPECT_EQ(r.size_bytes, 2 * log.rows[i - 1].size_bytes);
      }
      const std::int64_t per_count =
          e.collective == NcclTestsCollective::kAllGather ? elem * e.nranks : elem;
      EXPECT_EQ(r.count * per_count, r.size_bytes);
      ASSERT_TRUE(r.out_of_place.has_value());
      ASSERT_TRUE(r.in_place.has_value());
      EXPECT_EQ(r.out_of_place->wrong, 0.0);
      EXPECT_EQ(r.in_place->wrong, 0.0);
    }
  }
  // Spot values, as printed.
  const NcclTestsLog h100 = embedded_nccl_tests_log("01-h100x8-nvswitch-allreduce-nccl2.29");
  EXPECT_DOUBLE_EQ(h100.rows.back().out_of_place->time_us, 62340.7);
  EXPECT_DOUBLE_EQ(h100.rows.back().out_of_place->busbw_GBps, 482.27);
  EXPECT_DOUBLE_EQ(h100.rows.back().in_place->algbw_GBps, 275.50);
  EXPECT_EQ(h100.meta("healthy"), "yes");
  const NcclTestsLog p5 =
      embedded_nccl_tests_log("06-h100-p5-2nodes-efa-allreduce-nccl2.22.3-runA");
  EXPECT_DOUBLE_EQ(p5.rows.back().out_of_place->time_us, 66108);
}

TEST(NcclTestsLog, BusBandwidthRecomputesFromTime) {
  for (const Expected& e : kRealLogs) {
    const NcclTestsLog log = embedded_nccl_tests_log(e.name);
    for (const NcclTestsRow& r : log.rows) {
      expect_busbw_consistent(log, r, *r.out_of_place);
      expect_busbw_consistent(log, r, *r.in_place);
    }
  }
}

TEST(NcclTestsLog, BusBandwidthFactors) {
  // reference/nccl.md §4.3.
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kReduceScatter, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(NcclTestsCollective::kSendRecv, 2), 1.0);
  // 1 GiB all_reduce in 4000.82 us on 8 ranks: algbw = 2^30 / 4000.82e3 = 268.38 GB/s, busbw =
  // x 1.75 = 469.67 GB/s (the 01 log's row).
  EXPECT_NEAR(algbw_GBps(1LL << 30, 4000.82), 268.38, 0.005);
  EXPECT_NEAR(busbw_GBps(NcclTestsCollective::kAllReduce, 8, 1LL << 30, 4000.82), 469.67, 0.006);
}

TEST(NcclTestsLog, CollectiveNames) {
  EXPECT_EQ(parse_nccl_tests_collective("all_reduce_perf"), NcclTestsCollective::kAllReduce);
  EXPECT_EQ(parse_nccl_tests_collective("all_gather"), NcclTestsCollective::kAllGather);
  EXPECT_EQ(parse_nccl_tests_collective("ReduceScatter"), NcclTestsCollective::kReduceScatter);
  EXPECT_EQ(parse_nccl_tests_collective("alltoall_perf"), NcclTestsCollective::kAllToAll);
  EXPECT_EQ(parse_nccl_tests_collective("sendrecv"), NcclTestsCollective::kSendRecv);
  EXPECT_EQ(parse_nccl_tests_collective("matmul"), std::nullopt);
  EXPECT_EQ(to_string(NcclTestsCollective::kReduceScatter), "reduce_scatter");
}

TEST(NcclTestsLog, FileAndEmbeddedCopiesAgree) {
  const std::string path = std::string(LAGOM_SOURCE_DIR) +
                           "/calibrate/data/nccl-tests/12-a100x8-nvswitch-allreduce-1proc.txt";
  const NcclTestsLog from_file = read_nccl_tests_log(path);
  const NcclTestsLog embedded = embedded_nccl_tests_log("12-a100x8-nvswitch-allreduce-1proc.txt");
  EXPECT_EQ(from_file.source, path);
  ASSERT_EQ(from_file.rows.size(), embedded.rows.size());
  for (std::size_t i = 0; i < embedded.rows.size(); ++i) {
    EXPECT_EQ(from_file.rows[i].size_bytes, embedded.rows[i].size_bytes);
    EXPECT_EQ(from_file.rows[i].in_place->time_us, embedded.rows[i].in_place->time_us);
  }
  EXPECT_TRUE(contains(error_of([] { read_nccl_tests_log("/nonexistent/x.txt"); }),
                       "cannot open nccl-tests log '/nonexistent/x.txt'"));
  EXPECT_TRUE(contains(error_of([] { embedded_nccl_tests_log("99-nope"); }),
                       "01-h100x8-nvswitch-allreduce-nccl2.29"));
}

// Raw nccl-tests 2.17 output of a 2-process x 2-GPU all_reduce run with MPI tags and NCCL_DEBUG
// lines mixed in, -c 0 (#wrong N/A), and values in every printed precision.
constexpr std::string_view kRawRun =
    R"(# nccl-tests version 2.17.8 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4321 on      node1 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4321 on      node1 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
[1,2]<stdout>:#  Rank  2 Group  0 Pid   7777 on      node2 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   7777 on      node2 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
node1:4321:4400 [0] NCCL INFO NCCL version 2.28.9+cuda12.9
node1:4321:4400 [0] NCCL INFO Channel 00/24 : 0 1 2 3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    20.15    0.00    0.00     N/A    19.87    0.00    0.00     N/A
     1048576        262144     float     sum      -1    52.61   19.93   29.90     N/A    53.03   19.77   29.66     N/A
[1,0]<stdout>:   134217728      33554432     float     sum      -1   1305.0  102.85  154.27     N/A   1312.3  102.28  153.42     N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 61.2069
#
# Collective test concluded: all_reduce_perf
)";

// A header's counts are bounded before they multiply: fuzzing found nThread 33554432 x nGpus
// 27814 overflowing int (tests/data/fuzz/nccl_tests_log/header-ranks-overflow.txt).
TEST(NcclTestsLog, HeaderCountsAreBoundedBeforeTheyMultiply) {
  const std::string raw(kRawRun);
  const std::string from = "# nThread 1 nGpus 2 ";
  ASSERT_NE(raw.find(from), std::string::npos);
  auto with = [&](const std::string& header) {
    std::string t = raw;
    t.replace(t.find(from), from.size(), header);
    // Without device lines the header alone gives the rank count.
    std::string out;
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) {
      if (line.find("Rank ") == std::string::npos || line.find("Pid") == std::string::npos) {
        out += line + "\n";
      }
    }
    return out;
  };
  const std::string big = error_of(
      [&] { (void)parse_nccl_tests_log(with("# nThread 33554432 nGpus 27814 "), "big.log"); });
  EXPECT_TRUE(
      contains(big, "big.log:3: '# nThread' header: nThread 33554432 is not from 0 to 1048576"))
      << big;
  const std::string many = error_of(
      [&] { (void)parse_nccl_tests_log(with("# nThread 1048576 nGpus 1048576 "), "many.log"); });
  EXPECT_TRUE(contains(many, "many.log: the log describes 1099511627776 ranks")) << many;
  EXPECT_EQ(parse_nccl_tests_log(with("# nThread 2 nGpus 4 "), "ok.log").nranks, 8);
}

TEST(NcclTestsLog, RawOutputParses) {
  const NcclTestsLog log = parse_nccl_tests_log(kRawRun, "raw.log");
  EXPECT_EQ(log.collective, NcclTestsCollective::kAllReduce);
  EXPECT_EQ(log.nranks, 4);  // four device lines: 2 processes x 1 thread x 2 GPUs
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.nccl_version, "2.28.9");  // NCCL_VERSION_CODE 22809
  EXPECT_EQ(log.nccl_tests_version, "2.17.8");
  ASSERT_TRUE(log.run.has_value());
  EXPECT_EQ(log.run->nthreads, 1);
  EXPECT_EQ(log.run->ngpus, 2);
  EXPECT_EQ(log.run->min_bytes, 8);
  EXPECT_EQ(log.run->max_bytes, 134217728);
  EXPECT_EQ(log.run->step, 2);
  EXPECT_TRUE(log.run->step_is_factor);
  EXPECT_EQ(log.run->warmup_iters, 5);
  EXPECT_EQ(log.run->iters, 20);
  EXPECT_EQ(log.run->agg_iters, 1);
  EXPECT_EQ(log.run->validation, 0);
  ASSERT_EQ(log.devices.size(), 4u);
  EXPECT_EQ(log.devices[2].rank, 2);
  EXPECT_EQ(log.devices[2].host, "node2");
  EXPECT_EQ(log.devices[3].device, 1);
  ASSERT_EQ(log.rows.size(), 3u);
  EXPECT_EQ(log.rows[0].line, 16);
  EXPECT_EQ(log.rows[0].redop, "sum");
  EXPECT_FALSE(log.rows[0].out_of_place->wrong.has_value());  // N/A
  EXPECT_DOUBLE_EQ(log.rows[2].out_of_place->time_us, 1305.0);
  EXPECT_EQ(log.rows[2].line, 18);
  EXPECT_EQ(log.avg_busbw_GBps, 61.2069);
  EXPECT_EQ(log.out_of_bounds, 0);
  for (const NcclTestsRow& r : log.rows) {
    expect_busbw_consistent(log, r, *r.out_of_place);
    expect_busbw_consistent(log, r, *r.in_place);
  }
}

TEST(NcclTestsLog, PerIterationColumnsTimestampsAndOldLayouts) {
  // -I 1: i_min i_max i_p99 i_cv% after each half; -S: a timestamp at the end.
  constexpr std::string_view kPerIter =
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 8 minBytes 1024 maxBytes 1024 step: 1048576(bytes) warmup iters: 1 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
      "        1024            32     float    none      -1    12.10    0.08    0.07       0   "
      " 11.90    12.40    12.60    1.50    12.00    0.09    0.07       0    11.80    12.20    "
      "12.50    1.20 2025-01-02 03:04:05\n";
  const NcclTestsLog a = parse_nccl_tests_log(kPerIter, "per-iter.log");
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_EQ(a.collective, NcclTestsCollective::kAllGather);
  EXPECT_EQ(a.nranks, 8);  // nThread x nGpus without device lines
  ASSERT_TRUE(a.rows[0].out_of_place->per_iter.has_value());
  EXPECT_DOUBLE_EQ(a.rows[0].out_of_place->per_iter->p99_us, 12.60);
  EXPECT_DOUBLE_EQ(a.rows[0].in_place->per_iter->cv_pct, 1.20);
  EXPECT_DOUBLE_EQ(a.rows[0].in_place->time_us, 12.00);
  EXPECT_FALSE(a.run->step_is_factor);
  EXPECT_EQ(a.run->step, 1048576);

  // Older nccl-tests: no root column, "error" in scientific notation.
  constexpr std::string_view kOld =
      "# nThread 1 nGpus 1 minBytes 32 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 20 validation: 1\n"
      "          32             8   float     sum    20.61    0.00    0.00  0e+00    20.37    0.00"
      "    0.00  0e+00\n";
  const NcclTestsLog b = parse_nccl_tests_log(kOld, "old.log");
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].root, -1);
  EXPECT_EQ(b.rows[0].in_place->wrong, 0.0);
  EXPECT_FALSE(b.collective.has_value());  // neither program name nor metadata says
}

TEST(NcclTestsLog, MalformedInputNamesTheLine) {
  EXPECT_TRUE(contains(error_of([] { parse_nccl_tests_log("hello\nworld\n", "notes.txt"); }),
                       "notes.txt: not an nccl-tests log"));
  EXPECT_TRUE(
      contains(error_of([] { parse_nccl_tests_log("", "empty.txt"); }), "not an nccl-tests log"));
  EXPECT_TRUE(contains(error_of([] {
                         parse_nccl_tests_log(
                             "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor)\n#\n",
                             "norows.log");
                       }),
                       "norows.log: no result rows"));
  // A number column that is not a number, on line 3.
  const std::string bad_time = error_of([] {
    parse_nccl_tests_log(
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor)\n#\n"
        "           8             2     float     sum      -1    fast    0.00    0.00       0    "
        "19.87    0.00    0.00       0\n",
        "bad.log");
  });
  EXPECT_TRUE(contains(bad_time, "bad.log:3: malformed nccl-tests row")) << bad_time;
  EXPECT_TRUE(contains(bad_time, "'fast'")) << bad_time;
  // A truncated row (values missing), on line 2.
  const std::string truncated = error_of([] {
    parse_nccl_tests_log(
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor)\n"
        "     1048576        262144     float     sum      -1    52.61   19.93\n",
        "cut.log");
  });
  EXPECT_TRUE(contains(truncated, "cut.log:2:")) << truncated;
  EXPECT_TRUE(contains(truncated, "found 2")) << truncated;
  // A size that is not an integer.
  EXPECT_TRUE(contains(
      error_of([] { parse_nccl_tests_log("8 2.5 float sum -1 1 1 1 0 1 1 1 0\n", "n.log"); }),
      "n.log:1: malformed nccl-tests row"));
  // Annotated header: a line that is not "key: value", and a header without "---".
  EXPECT_TRUE(contains(
      error_of([] { parse_nccl_tests_log("gpu: H100\nthis is not metadata\n---\n", "m.txt"); }),
      "m.txt:2: expected a 'key: value' line"));
  EXPECT_TRUE(contains(error_of([] { parse_nccl_tests_log("gpu: H100\nnodes: 1\n", "m2.txt"); }),
                       "m2.txt:2: the metadata header is not ended by a '---' line"));
  // Metadata but no rows.
  EXPECT_TRUE(contains(error_of([] { parse_nccl_tests_log("gpu: H100\n---\n", "m3.txt"); }),
                       "m3.txt: no result rows"));
  // A malformed nThread header value.
  EXPECT_TRUE(
      contains(error_of([] { parse_nccl_tests_log("#\n# nThread one nGpus 8\n", "h.log"); }),
               "h.log:2: '# nThread' header"));
}

}  // namespace
}  // namespace lagom::calibrate
