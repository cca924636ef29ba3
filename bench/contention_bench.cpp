// The cost of contention: engine events/s on the same workload with the contention model on and
// off (issue: overlap contention).
#include <benchmark/benchmark.h>

#include <memory>

#include "lagom/calibrate/hardware_profile.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "synthetic.hpp"

namespace lagom::bench {
namespace {

// 64 ranks on 8 dgx-h100 nodes (TP 8 inside a node, DP 8 across), 64 layers: every TP
// all-reduce and DP reduce-scatter overlaps compute on the other stream.
struct Setup {
  traces::Workload w = synthetic_step({64, 64, 8, 1});
  traces::ExecutionGraph g = traces::analyze(w);
  topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 8);
  calibrate::HardwareProfile profile = calibrate::load_profile("h100-sxm");
  sim::ModelCost cost{cluster, profile, w};
};

const Setup& setup() {
  static const Setup s;
  return s;
}

void BM_Contention(benchmark::State& state) {
  const Setup& s = setup();
  const bool on = state.range(0) != 0;
  std::uint64_t records = 2ULL * s.w.op_count();
  for (auto _ : state) {
    std::unique_ptr<sim::ResourceContention> model;
    if (on) {
      model = std::make_unique<sim::ResourceContention>(s.cost);
    }
    sim::Engine engine(s.w, s.g, sim::SimOptions{&s.cost, model.get()});
    const sim::SimResult r = engine.run();
    benchmark::DoNotOptimize(r.step_time);
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["stale_events"] = static_cast<double>(r.stale_events);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(records * state.iterations()));
  state.SetLabel(on ? "contention on" : "contention off");
}
BENCHMARK(BM_Contention)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lagom::bench
