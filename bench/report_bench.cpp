// `lagom simulate --json` of GPT-3 175B (tp=8, pp=8, dp=2 on 16 dgx-h100 nodes, 1.3 M ops), with
// and without the per-op rows (issue: scale, streamed outputs). The report goes to a stream that
// counts and drops its bytes, so the figure is generation, simulation and formatting, not a disk.
#include <benchmark/benchmark.h>

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {

// Counts what is written and keeps nothing.
class CountingBuf : public std::streambuf {
 public:
  std::size_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<std::size_t>(n);
    return n;
  }
  int_type overflow(int_type c) override {
    ++bytes;
    return traits_type::not_eof(c);
  }
};

void BM_SimulateJson(benchmark::State& state) {
  std::vector<std::string> args = {"--model",   "gpt3-175b", "--parallel", "tp=8,pp=8,dp=2",
                                   "--cluster", "dgx-h100",  "--nodes",    "16",
                                   "--mbs",     "1",         "--gbs",      "64",
                                   "--seq",     "2048",      "--json"};
  if (state.range(0) == 0) {
    args.push_back("--no-op-times");
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    CountingBuf buf;
    std::ostream out(&buf);
    lagom::cli::run_simulate(args, out);
    bytes = buf.bytes;
  }
  state.counters["report_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_SimulateJson)
    ->ArgName("op_times")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
