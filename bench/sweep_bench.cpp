// `lagom sweep` (issue: capacity planning): a 200-point simulate sweep of generated steps on 8 to
// 128 H100s at -j 1 and -j 2, against the same points run one after another without the sweep
// (the sum of its points), so its overhead and its scaling with threads are measured.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {

// 2 models x 10 layouts x 2 micro-batch sizes x 5 NIC speeds = 200 points.
const char* kSweep = R"({
  "format": "lagom.sweep", "version": 1, "command": "simulate",
  "options": {"cluster": "dgx-h100", "gbs": 256, "fold": true},
  "axes": {
    "model": ["gpt3-1.3b", "llama3-8b"],
    "layout": [
      {"parallel": "fsdp=8", "nodes": 1}, {"parallel": "fsdp=16", "nodes": 2},
      {"parallel": "fsdp=32", "nodes": 4}, {"parallel": "fsdp=64", "nodes": 8},
      {"parallel": "fsdp=128", "nodes": 16}, {"parallel": "tp=8", "nodes": 1},
      {"parallel": "tp=8,dp=2", "nodes": 2}, {"parallel": "tp=8,dp=4", "nodes": 4},
      {"parallel": "tp=4,pp=2,dp=8,zero=1", "nodes": 8},
      {"parallel": "tp=8,pp=2,dp=8,zero=1", "nodes": 16}
    ],
    "mbs": [1, 2],
    "overrides": [{"network.nic_speed_Gbps": 100}, {"network.nic_speed_Gbps": 200},
                  {"network.nic_speed_Gbps": 400}, {"network.nic_speed_Gbps": 800},
                  {"network.nic_speed_Gbps": 1600}]
  }
})";

std::filesystem::path sweep_file() {
  const auto path = std::filesystem::temp_directory_path() / "lagom-bench-sweep.json";
  std::ofstream(path) << kSweep;
  return path;
}

void BM_Sweep200(benchmark::State& state) {
  const auto file = sweep_file();
  const auto out = std::filesystem::temp_directory_path() / "lagom-bench-sweep.csv";
  for (auto _ : state) {
    lagom::cli::sweep_command(
        {file.string(), "-j", std::to_string(state.range(0)), "--quiet", "--out", out.string()});
  }
  state.counters["points"] = 200;
}
BENCHMARK(BM_Sweep200)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// The same 200 points as separate simulate runs in one process: what the sweep adds is the
// difference.
void BM_Sweep200PointsAlone(benchmark::State& state) {
  const auto file = sweep_file();
  std::vector<std::vector<std::string>> points;
  const std::string models[] = {"gpt3-1.3b", "llama3-8b"};
  const std::pair<const char*, const char*> layouts[] = {{"fsdp=8", "1"},
                                                         {"fsdp=16", "2"},
                                                         {"fsdp=32", "4"},
                                                         {"fsdp=64", "8"},
                                                         {"fsdp=128", "16"},
                                                         {"tp=8", "1"},
                                                         {"tp=8,dp=2", "2"},
                                                         {"tp=8,dp=4", "4"},
                                                         {"tp=4,pp=2,dp=8,zero=1", "8"},
                                                         {"tp=8,pp=2,dp=8,zero=1", "16"}};
  for (const std::string& m : models) {
    for (const auto& [par, nodes] : layouts) {
      for (const char* mbs : {"1", "2"}) {
        for (const char* nic : {"100", "200", "400", "800", "1600"}) {
          points.push_back({"--cluster", "dgx-h100", "--gbs", "256", "--fold", "--model", m,
                            "--parallel", par, "--nodes", nodes, "--mbs", mbs, "--set",
                            fmt::format("network.nic_speed_Gbps={}", nic), "--json",
                            "--no-op-times"});
        }
      }
    }
  }
  for (auto _ : state) {
    for (const auto& args : points) {
      std::ostringstream out;
      try {
        lagom::cli::run_simulate(args, out);
      } catch (const std::exception&) {
        // as the sweep does: a failing point costs what it costs
      }
      benchmark::DoNotOptimize(out.str().size());
    }
  }
  state.counters["points"] = static_cast<double>(points.size());
}
BENCHMARK(BM_Sweep200PointsAlone)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
