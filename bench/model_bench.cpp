// Collective model evaluations per second (issue 3 target: >= 1 million/s for one collective),
// and NCCL's default choice per call, for comparison.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"

namespace lagom::bench {
namespace {

struct Setup {
  topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 2);
  hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  topologies::CommunicatorInfo info;
  nccl::Tables tables;
  Setup() {
    std::vector<int> ranks(16);
    std::iota(ranks.begin(), ranks.end(), 0);
    info = topologies::describe_communicator(cluster, ranks);
    tables = nccl::tune_model(topologies::nccl_comm_info(cluster, info));
  }
};

const Setup& setup() {
  static const Setup s;
  return s;
}

// One AllReduce estimate with a fixed configuration, sizes cycling over 8 B .. 1 GiB.
void BM_CollectiveModelEstimate(benchmark::State& state) {
  const Setup& s = setup();
  const sim::CollectiveModel model(s.profile, s.info);
  const nccl::CommConfig cfg{
      nccl::Algorithm::kRing, nccl::Protocol::kSimple, nccl::Transport::kNet, 16, 544, 1 << 21};
  std::int64_t bytes = 8;
  double sink = 0;
  for (auto _ : state) {
    sink += model.estimate(nccl::CollKind::kAllReduce, bytes, cfg).time_us;
    bytes = bytes >= (std::int64_t{1} << 30) ? 8 : bytes * 2;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CollectiveModelEstimate);

// NCCL's choice (algorithm, protocol, channels, threads, chunk) plus the model's estimate.
void BM_NcclChoiceAndEstimate(benchmark::State& state) {
  const Setup& s = setup();
  const sim::CollectiveModel model(s.profile, s.info);
  std::int64_t bytes = 8;
  double sink = 0;
  for (auto _ : state) {
    const nccl::CommConfig cfg = nccl::choose(s.tables, nccl::CollKind::kAllReduce, bytes).config;
    sink += model.estimate(nccl::CollKind::kAllReduce, bytes, cfg).time_us;
    bytes = bytes >= (std::int64_t{1} << 30) ? 8 : bytes * 2;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NcclChoiceAndEstimate);

}  // namespace
}  // namespace lagom::bench
