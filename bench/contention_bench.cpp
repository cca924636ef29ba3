// The cost of contention: engine events/s on the same workload with the contention model on and
// off (issue: overlap contention).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "lagom/hardware/profile.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "synthetic.hpp"

namespace lagom::bench {
namespace {

// 64 ranks on 8 dgx-h100 nodes (TP 8 inside a node, DP 8 across), 64 layers: every TP
// all-reduce and DP reduce-scatter overlaps compute on the other stream. With measured
// collective durations (the synthetic default, shorter than the model's) the contention model
// runs every collective as a capped flow; with model-timed collectives it runs them as the
// collective model's own flows, the case a real trace or generator step produces.
struct ContentionSetup {
  explicit ContentionSetup(bool comm_durations)
      : w(synthetic_step({64, 64, 8, 1, comm_durations})),
        cluster(topologies::load_cluster("dgx-h100", 8)),
        profile(hardware::load_profile("h100-sxm")) {}
  traces::Workload w;
  topologies::Cluster cluster;
  hardware::HardwareProfile profile;
};

const ContentionSetup& setup(bool comm_durations) {
  static const ContentionSetup measured(true);
  static const ContentionSetup modelled(false);
  return comm_durations ? measured : modelled;
}

// Arg 0: contention off/on; arg 1: collectives measured (1) or model-timed (0).
void BM_Contention(benchmark::State& state) {
  const bool measured = state.range(1) != 0;
  const ContentionSetup& s = setup(measured);
  const bool on = state.range(0) != 0;
  std::uint64_t records = 2ULL * s.w.op_count();
  sim::Simulation simulation(s.w, s.cluster, s.profile, sim::SimulationOptions{on, {}});
  for (auto _ : state) {
    const sim::SimResult r = simulation.run();
    benchmark::DoNotOptimize(r.step_time);
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["stale_events"] = static_cast<double>(r.stale_events);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(records * state.iterations()));
  state.SetLabel(std::string(on ? "contention on" : "contention off") +
                 (measured ? ", measured collectives" : ", model-timed collectives"));
}
BENCHMARK(BM_Contention)
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lagom::bench
