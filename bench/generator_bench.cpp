// Generating and simulating whole training steps from models (issue: training steps): GPT-3
// 175B on 128 GPUs and Llama 3.1 405B on 16,384 GPUs (rail-optimized, and on a 3-tier
// fat-tree), with the collective, compute and contention models. LAGOM_BENCH_SCALE=1 adds the 405B
// run without folding (minutes, ~10 GB).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>

#include "lagom/hardware/profile.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"

namespace lagom::bench {
namespace {

double peak_rss_GB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / 1e9;
}

struct Case {
  const char* model;
  const char* parallel;
  int nodes;
  int mbs, gbs, seq;
  bool recompute, fold;
  bool contention = true;
  const char* cluster = "dgx-h100";
};

void run_case(benchmark::State& state, Case c) {
  const topologies::Cluster cluster = topologies::load_cluster(c.cluster, c.nodes);
  const hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  const models::ModelSpec model = models::load_model(c.model);
  models::TrainingConfig cfg;
  cfg.mbs = c.mbs;
  cfg.gbs = c.gbs;
  cfg.seq = c.seq;
  cfg.recompute = c.recompute;
  cfg.fold_dp = c.fold;
  const models::Parallelism par = models::parse_parallelism(c.parallel);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    models::GeneratedStep step =
        models::generate_step(model, par, cfg, profile.gpu.memory_GB.value * 1e9);
    const auto t1 = std::chrono::steady_clock::now();
    sim::Simulation simulation(step.workload, cluster, profile,
                               sim::SimulationOptions{c.contention, {}});
    const sim::SimResult r = simulation.run();
    const auto t2 = std::chrono::steady_clock::now();
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    state.counters["ranks"] = static_cast<double>(step.workload.rank_count());
    state.counters["ops"] = static_cast<double>(step.workload.op_count());
    state.counters["generate_s"] = secs(t0, t1);
    state.counters["simulate_s"] = secs(t1, t2);
    state.counters["step_s"] = r.step_time.us() / 1e6;
    state.counters["peak_rss_GB"] = peak_rss_GB();
  }
}

}  // namespace

void register_generator_benchmarks() {
  // GPT-3 175B, tp=8 pp=8 dp=2 on 16 DGX H100 nodes, 32 micro-batches of 2048 tokens.
  benchmark::RegisterBenchmark("BM_Step/gpt3-175b/128gpu", run_case,
                               Case{"gpt3-175b", "tp=8,pp=8,dp=2", 16, 1, 64, 2048, false, false})
      ->Unit(benchmark::kSecond)
      ->Iterations(1);
  // The same without contention: the cost of the contention model is the ratio of the two.
  benchmark::RegisterBenchmark(
      "BM_Step/gpt3-175b/128gpu/no-contention", run_case,
      Case{"gpt3-175b", "tp=8,pp=8,dp=2", 16, 1, 64, 2048, false, false, false})
      ->Unit(benchmark::kSecond)
      ->Iterations(1);
  // Llama 3.1 405B as Meta trained it: tp=8 (sequence parallel) pp=16 dp=128 on 2,048 nodes,
  // 16 micro-batches of 8K tokens per pipeline, full recompute, data-parallel replicas folded.
  benchmark::RegisterBenchmark(
      "BM_Step/llama3.1-405b/16384gpu/folded", run_case,
      Case{"llama3.1-405b", "tp=8,sp,pp=16,dp=128", 2048, 1, 2048, 8192, true, true})
      ->Unit(benchmark::kSecond)
      ->Iterations(1);
  // The same on the 3-tier SuperPOD-style fat-tree (ECMP over 32 spines per pod and 256 cores).
  benchmark::RegisterBenchmark("BM_Step/llama3.1-405b/16384gpu/folded/fat-tree-3tier", run_case,
                               Case{"llama3.1-405b", "tp=8,sp,pp=16,dp=128", 2048, 1, 2048, 8192,
                                    true, true, true, "superpod-h100-16k"})
      ->Unit(benchmark::kSecond)
      ->Iterations(1);
  if (const char* env = std::getenv("LAGOM_BENCH_SCALE"); env != nullptr && env[0] == '1') {
    benchmark::RegisterBenchmark(
        "BM_Step/llama3.1-405b/16384gpu/unfolded", run_case,
        Case{"llama3.1-405b", "tp=8,sp,pp=16,dp=128", 2048, 1, 2048, 8192, true, false})
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  }
}

}  // namespace lagom::bench
