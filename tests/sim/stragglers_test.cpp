// Straggler and failure what-ifs: a slow GPU (its compute kernels take longer, measured or
// modelled, and nothing else), a slow link (its bandwidth divided, routes unchanged) and a down
// node (the data-parallel replicas that use it dropped, the rest on the GPUs they had), each
// worked out by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lagom/common/error.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/topologies/cluster.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using test::us;
using test::workload;

topologies::Cluster slowed(std::vector<topologies::SlowGpu> gpus,
                           std::vector<topologies::SlowLink> links, int nodes = 1) {
  topologies::ClusterSpec spec = topologies::load_cluster_spec("dgx-h100", nodes);
  spec.slow_gpus = std::move(gpus);
  spec.slow_links = std::move(links);
  return topologies::Cluster(spec);
}

TEST(Stragglers, ASlowGpuStretchesItsComputeAndTheOthersWaitForIt) {
  // Two ranks: a measured 10 us kernel, then a measured 5 us all-reduce together. GPU 0 at half
  // speed: its kernel takes 20 us; rank 1 arrives at 10 and waits 10 for it (peer wait); the
  // all-reduce (communication is not slowed) runs [20, 25].
  const traces::Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "c0", "kind": "compute", "duration_us": 10},
          {"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 5}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "c1", "kind": "compute", "duration_us": 10},
          {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 5}]}]}
      ])",
                                      R"({"g": [0, 1]})");
  const topologies::Cluster cluster = slowed({{0, 2.0}}, {});
  const hardware::HardwareProfile profile =
      hardware::default_profile_for_gpu(cluster.spec().gpu_type);
  for (const bool contention : {false, true}) {
    Simulation sim(w, cluster, profile, SimulationOptions{contention, ""});
    const SimResult r = sim.run();
    EXPECT_EQ(r.step_time.count_ns(), us(25)) << contention;
    EXPECT_EQ(r.ops[*w.find_op("c0")].end.count_ns(), us(20));
    EXPECT_EQ(r.ops[*w.find_op("c1")].end.count_ns(), us(10));
    const StepStats st = summarize(w, r);
    EXPECT_EQ(st.ranks[1].breakdown.peer_wait.count_ns(), us(10));
    EXPECT_EQ(st.ranks[0].breakdown.compute.count_ns(), us(20));
  }
}

TEST(Stragglers, AModelledKernelOnASlowGpuTakesTheFactorTimesAsLong) {
  const traces::Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "k0", "kind": "compute", "flops": 1e12, "bytes": 1e8, "class": "gemm"}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "k1", "kind": "compute", "flops": 1e12, "bytes": 1e8, "class": "gemm"}]}]}
      ])");
  const topologies::Cluster cluster = slowed({{1, 1.5}}, {});
  const hardware::HardwareProfile profile =
      hardware::default_profile_for_gpu(cluster.spec().gpu_type);
  Simulation sim(w, cluster, profile);
  const SimResult r = sim.run();
  const double fast = static_cast<double>(r.ops[*w.find_op("k0")].end.count_ns());
  const double slow = static_cast<double>(r.ops[*w.find_op("k1")].end.count_ns());
  EXPECT_GT(fast, 1000);
  EXPECT_NEAR(slow / fast, 1.5, 1e-6 * 1.5 + 1.0 / fast);
  EXPECT_NEAR(sim.cost()->alone_us(*w.find_op("k1")), 1.5 * sim.cost()->alone_us(*w.find_op("k0")),
              1e-3);
}

TEST(Stragglers, ASlowLinkDividesThatLinkOnly) {
  // Two DGX H100 nodes: GPU 0 reaches GPU 8 through node0/nic0 -> leaf0 -> node1/nic0. Slowing
  // node1/nic0 - leaf0 four times makes that path's bottleneck a quarter of a NIC (400 Gb/s =
  // 50 GB/s -> 12.5); rail 1 (GPU 1 to GPU 9) keeps its 50 GB/s.
  const topologies::Cluster plain = topologies::load_cluster("dgx-h100", 2);
  const topologies::Cluster slow = slowed({}, {{"node1/nic0", "leaf0", 4.0}}, 2);
  EXPECT_DOUBLE_EQ(plain.path(0, 8).bottleneck_GBps, 50.0);
  EXPECT_DOUBLE_EQ(slow.path(0, 8).bottleneck_GBps, 12.5);
  EXPECT_DOUBLE_EQ(slow.path(8, 0).bottleneck_GBps, 12.5);  // both directions
  EXPECT_DOUBLE_EQ(slow.path(1, 9).bottleneck_GBps, 50.0);
  // Routes are unchanged: the same hops.
  ASSERT_EQ(slow.path(0, 8).hops.size(), plain.path(0, 8).hops.size());
  for (std::size_t i = 0; i < slow.path(0, 8).hops.size(); ++i) {
    EXPECT_EQ(slow.path(0, 8).hops[i].link_id, plain.path(0, 8).hops[i].link_id);
  }
}

TEST(Stragglers, MistakesAreNamed) {
  auto error_of = [](std::vector<topologies::SlowGpu> g, std::vector<topologies::SlowLink> l) {
    try {
      slowed(std::move(g), std::move(l), 2);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{16, 2.0}}, {}), "--slow-gpu 16=2: cluster 'dgx-h100' has GPUs 0..15");
  EXPECT_EQ(error_of({{3, 0.5}}, {}),
            "--slow-gpu 3=0.5: the slowdown factor must be from 1 to 1e6, got 0.5");
  EXPECT_EQ(error_of({{3, 2.0}, {3, 3.0}}, {}), "--slow-gpu 3=2: GPU 3 is slowed twice");
  EXPECT_EQ(error_of({{3, 1.0}, {3, 2.0}}, {}), "--slow-gpu 3=1: GPU 3 is slowed twice");
  // The same link twice, in either order of its ends (factors would multiply past the cap).
  EXPECT_EQ(error_of({}, {{"node0/nic0", "leaf0", 2.0}, {"leaf0", "node0/nic0", 2.0}}),
            "--slow-link node0/nic0-leaf0=2: the link between 'node0/nic0' and 'leaf0' is slowed "
            "twice");
  EXPECT_EQ(error_of({}, {{"node0/gpu1", "leaf0", 2.0}}),
            "--slow-link node0/gpu1-leaf0=2: cluster 'dgx-h100' has no link between 'node0/gpu1' "
            "and 'leaf0'; 'node0/gpu1' links to node0/nvswitch0, node0/pcie:sw1");
  EXPECT_NE(error_of({}, {{"node9/nic0", "leaf0", 2.0}}).find("'node9/nic0' is not a part of it"),
            std::string::npos);
}

TEST(Stragglers, AStepBeyondTheClockIsAnErrorNotANegativeTime) {
  // A 64 GiB all-reduce over a NIC link slowed a million times on top of a 1 MB/s NIC: centuries.
  // Before, the nanosecond clock overflowed into a negative breakdown.
  topologies::ClusterSpec spec = topologies::load_cluster_spec("dgx-h100", 2);
  spec.network.nic_speed_Gbps = 0.008;
  spec.slow_links = {{"node0/nic0", "leaf0", 1e6}};
  const topologies::Cluster cluster(spec);
  const hardware::HardwareProfile profile = hardware::default_profile_for_gpu(spec.gpu_type);
  // Ranks 0 and 8 (one per node) all-reduce; ranks 1-7 run a 1 us kernel.
  std::string ranks;
  for (int r = 0; r <= 8; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [{{"stream": "m", "ops": [{}]}}]}})", r ? "," : "", r,
        r == 0 || r == 8
            ? fmt::format(
                  R"({{"id": "a{}", "kind": "allreduce", "group": "g", "bytes": 68719476736}})", r)
            : fmt::format(R"({{"id": "c{}", "kind": "compute", "duration_us": 1}})", r));
  }
  const traces::Workload w = workload("[" + ranks + "]", R"({"g": [0, 8]})");
  for (const bool contention : {false, true}) {
    try {
      Simulation sim(w, cluster, profile, SimulationOptions{contention, ""});
      sim.run();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("over 285 years"), std::string::npos) << e.what();
    }
  }
}

TEST(Stragglers, ADownNodeDropsTheReplicasThatUseIt) {
  // tp=2, pp=2, dp=3 on 2-GPU nodes: layout position tp + 2 (dp + 3 pp), so node n holds one
  // (dp, pp) row: dp = n mod 3. Node 4 down: replica 1 is dropped; replicas 0 and 2 keep their
  // GPUs: stage 0 on GPUs 0,1 and 4,5; stage 1 on 6,7 and 10,11. Node 4 (GPUs 8, 9) and node 1
  // (2, 3: replica 1's stage 0) are idle. The global batch keeps 4 micro-batches per replica.
  models::Parallelism par = models::parse_parallelism("tp=2,pp=2,dp=3");
  models::TrainingConfig cfg;
  cfg.mbs = 1;
  cfg.gbs = 12;
  const std::vector<int> dropped = models::place_around_down_nodes(par, cfg, {4}, 2);
  EXPECT_EQ(dropped, std::vector<int>{1});
  EXPECT_EQ(par.dp, 2);
  EXPECT_EQ(cfg.gbs, 8);
  EXPECT_EQ(cfg.placement, (std::vector<std::uint32_t>{0, 1, 4, 5, 6, 7, 10, 11}));
  const models::GeneratedStep step =
      models::generate_step(models::load_model("llama3-8b"), par, cfg);
  ASSERT_EQ(step.workload.rank_count(), 8u);
  for (traces::Rank r = 0; r < 8; ++r) {
    EXPECT_EQ(step.workload.gpu_of(r), cfg.placement[r]) << r;
  }
  // Both of nodes 1 and 4 (replica 1's two stages): still one replica dropped.
  models::Parallelism p2 = models::parse_parallelism("tp=2,pp=2,dp=3");
  models::TrainingConfig c2 = models::TrainingConfig{};
  c2.gbs = 12;
  EXPECT_EQ(models::place_around_down_nodes(p2, c2, {1, 4}, 2), std::vector<int>{1});
  // Every replica touched: an error.
  models::Parallelism p3 = models::parse_parallelism("tp=2,pp=2,dp=3");
  models::TrainingConfig c3;
  c3.gbs = 12;
  EXPECT_THROW(models::place_around_down_nodes(p3, c3, {0, 1, 2}, 2), Error);
}

}  // namespace
}  // namespace lagom::sim
