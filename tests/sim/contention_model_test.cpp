// The compute model and the SM/HBM/link contention model, with expectations derived in comments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "lagom/hardware/profile.hpp"
#include "lagom/sim/compute_model.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

// The built-in H100 profile without the GEMM tile overhead and split-K, so that the closed forms
// below are the waves alone (ComputeModel.GemmTiles* test the tile model).
const hardware::HardwareProfile& h100() {
  static const hardware::HardwareProfile p = [] {
    hardware::HardwareProfile q = hardware::load_profile("h100-sxm");
    q.compute.gemm_k_overhead.value = 0;
    q.compute.gemm_split_k_depth.value = 0;
    return q;
  }();
  return p;
}

// Per-SM arithmetic rate the model uses for a GEMM: peak / SMs * efficiency (FLOP/us).
double gemm_flops_per_sm_us(const hardware::HardwareProfile& p) {
  return p.gpu.bf16_TFLOPS.value * 1e6 / p.gpu.sms.value *
         p.compute.classes[static_cast<int>(traces::ComputeClass::kGemm)].flops_efficiency.value;
}

TEST(ComputeModel, GemmTilesPayTheirOverheadInReductionDepth) {
  // 132 tiles of depth K on 132 SMs: one wave of 2 x 128^2 x (K + k0) FLOPs per SM. With
  // k0 = 128, K = 768 takes (768 + 128) / 768 of the bare time, K = 8192 (8192 + 128) / 8192.
  hardware::HardwareProfile p = h100();
  p.compute.gemm_k_overhead.value = 128;
  const ComputeModel m(p);
  const double rate = gemm_flops_per_sm_us(p);
  for (const double k : {768.0, 8192.0}) {
    traces::ComputeShape g;
    g.cls = traces::ComputeClass::kGemm;
    g.blocks = 132;
    g.blocks_per_sm = 1;
    g.flops = 132 * 2.0 * 128 * 128 * k;
    const KernelEstimate e = m.alone(g, 0);
    EXPECT_NEAR(e.time_us - p.compute.launch_us.value, 2.0 * 128 * 128 * (k + 128) / rate, 1e-9)
        << k;
  }
}

TEST(ComputeModel, GemmTilesSplitTheReductionWhenTooFewToFillTheGpu) {
  // 16 tiles of depth 16384 on 132 SMs, split depth 1024: s = min(floor(132 / 16), 16) = 8
  // parts, 128 blocks of depth 2048: one wave of 2 x 128^2 x 2048 FLOPs per SM instead of one
  // of 16384 on 16 SMs, plus 2 x 4 x 128^2 x 128 bytes of fp32 partials. Without split: 8x slower.
  hardware::HardwareProfile p = h100();
  p.compute.gemm_split_k_depth.value = 1024;
  const ComputeModel split(p);
  const ComputeModel whole(h100());
  traces::ComputeShape g;
  g.cls = traces::ComputeClass::kGemm;
  g.blocks = 16;
  g.blocks_per_sm = 1;
  g.flops = 16 * 2.0 * 128 * 128 * 16384;
  EXPECT_DOUBLE_EQ(split.blocks_of(g, 0), 128);
  EXPECT_DOUBLE_EQ(whole.blocks_of(g, 0), 16);
  const double rate = gemm_flops_per_sm_us(p);
  const KernelEstimate s = split.alone(g, 0);
  const KernelEstimate w = whole.alone(g, 0);
  EXPECT_NEAR(w.time_us - p.compute.launch_us.value, 2.0 * 128 * 128 * 16384 / rate, 1e-9);
  EXPECT_NEAR(s.compute_us, 2.0 * 128 * 128 * 2048 / rate, 1e-9);
  EXPECT_GT(s.memory_us, 0);
  EXPECT_LT(s.time_us, w.time_us / 4);
  // Enough tiles (at least half the SMs): no split.
  g.blocks = 66;
  g.flops = 66 * 2.0 * 128 * 128 * 16384;
  EXPECT_DOUBLE_EQ(split.blocks_of(g, 0), 66);
  // The split is chosen (of 1, the powers of two and the largest) for the least time alone, so it
  // never makes a kernel alone slower, memory-bound or not, with the tile overhead on.
  p.compute.gemm_k_overhead.value = 128;
  hardware::HardwareProfile no_split = p;
  no_split.compute.gemm_split_k_depth.value = 0;
  const ComputeModel with(p);
  const ComputeModel without(no_split);
  for (const double m : {16.0, 64.0, 128.0, 256.0, 1024.0}) {
    for (const double n : {128.0, 1024.0, 4096.0}) {
      for (const double k : {2047.0, 2048.0, 3072.0, 4096.0, 32768.0}) {
        const traces::ComputeShape sh = traces::gemm_shape(m, n, k);
        const double bytes = 2 * (m * k + k * n + m * n);
        EXPECT_LE(with.alone(sh, bytes).time_us, without.alone(sh, bytes).time_us + 1e-9)
            << m << "x" << n << "x" << k;
      }
    }
  }
}

TEST(ComputeModel, WavesFollowBlocksOverSmsTimesOccupancy) {
  // mu = 132 blocks, TB = 1 on 132 SMs: one wave; each SM does one block of F/132 FLOPs, so the
  // wave takes (F/132) / rate; no bytes, so no memory part.
  const ComputeModel m(h100());
  traces::ComputeShape s{132e9, 132, 1, traces::ComputeClass::kGemm};
  const double wave = (132e9 / 132) / gemm_flops_per_sm_us(h100());
  const KernelEstimate full = m.estimate(s, 0, 132, m.hbm_GBps());
  EXPECT_EQ(full.waves, 1);
  EXPECT_NEAR(full.time_us, h100().compute.launch_us.value + wave, 1e-9);
  // One SM fewer: 131 blocks, then 1: two waves of one block per SM each (Lagom eq. 5).
  const KernelEstimate less = m.estimate(s, 0, 131, m.hbm_GBps());
  EXPECT_EQ(less.waves, 2);
  EXPECT_NEAR(less.time_us, h100().compute.launch_us.value + 2 * wave, 1e-9);
  // TB = 2 on 66 SMs: 132 blocks still fit in one wave of 2 blocks per SM (twice the work per SM).
  traces::ComputeShape two = s;
  two.blocks_per_sm = 2;
  const KernelEstimate packed = m.estimate(two, 0, 66, m.hbm_GBps());
  EXPECT_EQ(packed.waves, 1);
  EXPECT_NEAR(packed.time_us, h100().compute.launch_us.value + 2 * wave, 1e-9);
}

TEST(ComputeModel, MemoryBoundKernelsFollowBandwidth) {
  // An elementwise kernel moving 1 GB with few FLOPs: memory time = bytes / (B * eff), compute
  // tiny; f = max + overlap_loss * min, one wave (no block count).
  const hardware::HardwareProfile& p = h100();
  const ComputeModel m(p);
  const auto cls = traces::ComputeClass::kElementwise;
  traces::ComputeShape s{1e6, 0, 0, cls};
  const double eff = p.compute.classes[static_cast<int>(cls)].hbm_efficiency.value;
  const double mem = 1e9 / (p.gpu.hbm_GBps.value * 1e3 * eff);
  const KernelEstimate e = m.alone(s, 1e9);
  EXPECT_NEAR(e.memory_us, mem, 1e-6);
  EXPECT_NEAR(e.time_us,
              p.compute.launch_us.value + mem + p.compute.overlap_loss.value * e.compute_us, 1e-6);
  // Half the bandwidth: the memory part doubles.
  EXPECT_NEAR(m.estimate(s, 1e9, m.sms(), m.hbm_GBps() / 2).memory_us, 2 * mem, 1e-6);
}

TEST(ComputeModel, OccupancyBesideAnNcclCtaFollowsEachLimit) {
  // An SM that runs one NCCL CTA of 544 threads and 80.3 KiB of shared memory (H100: 2048
  // threads, 228 KiB). A class's blocks are taken to fill the SM's threads at their occupancy TB
  // (min(1024, 2048 / TB) threads each):
  //  * elementwise, TB 8, no shared memory: 256-thread blocks, (2048 - 544) / 256 = 5.9 -> 5;
  //  * gemm, TB 1, 200 KiB: 1024 threads fit once (1504 / 1024), but 228 - 80.3 = 147.7 KiB
  //    holds no 200 KiB tile -> 0; with 100 KiB tiles one fits;
  //  * other, TB 2, 16 KiB: 1024-thread blocks, 1504 / 1024 -> 1 (threads bind).
  // Each limit moves with its own parameter.
  hardware::HardwareProfile p = h100();
  const auto shape = [](traces::ComputeClass c) { return traces::ComputeShape{1e9, 1000, 0, c}; };
  using C = traces::ComputeClass;
  {
    const ComputeModel m(p);
    EXPECT_EQ(m.blocks_beside_comm(shape(C::kElementwise), 544), 5);
    EXPECT_EQ(m.blocks_beside_comm(shape(C::kGemm), 544), 0);
    EXPECT_EQ(m.blocks_beside_comm(shape(C::kOther), 544), 1);
    EXPECT_EQ(m.blocks_beside_comm(shape(C::kElementwise), 1024), 4);  // 1024 / 256
  }
  p.compute.classes[static_cast<int>(C::kGemm)].smem_per_block_KiB.value = 100;
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kGemm), 544), 1);
  p.contention.comm_cta_smem_KiB.value = 140;  // 88 KiB left: no 100 KiB tile
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kGemm), 544), 0);
  p.gpu.smem_per_sm_KiB.value = 256;  // 116 KiB left
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kGemm), 544), 1);
  p.compute.classes[static_cast<int>(C::kElementwise)].smem_per_block_KiB.value = 40;
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kElementwise), 544), 2);  // 116 / 40
  p.gpu.max_threads_per_sm.value = 1024;  // 128-thread blocks at TB 8: (1024 - 544) / 128 = 3
  p.compute.classes[static_cast<int>(C::kElementwise)].smem_per_block_KiB.value = 0;
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kElementwise), 544), 3);
  p.compute.classes[static_cast<int>(C::kElementwise)].blocks_per_sm.value = 4;  // 256 threads
  EXPECT_EQ(ComputeModel(p).blocks_beside_comm(shape(C::kElementwise), 544), 1);
}

TEST(ComputeModel, BlocksPerSmIsCappedByTheGpu) {
  // An op may ask for more resident blocks than the SM holds; the GPU's max_blocks_per_sm wins.
  hardware::HardwareProfile p = h100();
  traces::ComputeShape s{1e9, 1000, 24, traces::ComputeClass::kElementwise};
  EXPECT_EQ(ComputeModel(p).blocks_per_sm(s), 24);  // H100 holds 32
  p.gpu.max_blocks_per_sm.value = 16;
  EXPECT_EQ(ComputeModel(p).blocks_per_sm(s), 16);
  // ... and so does a class default above it.
  s.blocks_per_sm = 0;
  p.compute.classes[static_cast<int>(traces::ComputeClass::kElementwise)].blocks_per_sm.value = 20;
  EXPECT_EQ(ComputeModel(p).blocks_per_sm(s), 16);
}

TEST(ComputeModel, ATensorKernelRunsAtThePeakOfItsPrecision) {
  // A compute-bound GEMM (no bytes) of one wave: its arithmetic part is F / (peak x eff), with
  // the peak of its precision: FP8 twice BF16 on an H100 (1979 vs 989.4 TFLOP/s), fp32 at the
  // CUDA-core rate. Streaming kernels run on the CUDA cores whatever they say.
  const hardware::HardwareProfile& p = h100();
  const ComputeModel m(p);
  const double eff =
      p.compute.classes[static_cast<int>(traces::ComputeClass::kGemm)].flops_efficiency.value;
  traces::ComputeShape s{132e9, 132, 1, traces::ComputeClass::kGemm};
  auto arithmetic = [&](traces::Precision pr) {
    s.precision = pr;
    return m.alone(s, 0).compute_us;
  };
  EXPECT_NEAR(arithmetic(traces::Precision::kBf16), 132e9 / (989.4e6 * eff), 1e-6);
  EXPECT_NEAR(arithmetic(traces::Precision::kFp8), 132e9 / (1979e6 * eff), 1e-6);
  EXPECT_NEAR(arithmetic(traces::Precision::kFp32), 132e9 / (66.9e6 * eff), 1e-6);
  traces::ComputeShape e{1e9, 0, 0, traces::ComputeClass::kElementwise};
  const double cuda_cores = m.alone(e, 0).compute_us;
  e.precision = traces::Precision::kFp8;
  EXPECT_EQ(m.alone(e, 0).compute_us, cuda_cores);
}

TEST(ComputeModel, AnFp8KernelOnAGpuWithoutFp8IsAnErrorNamingTheProfile) {
  const hardware::HardwareProfile a100 = hardware::load_profile("a100-sxm");
  EXPECT_EQ(a100.gpu.fp8_TFLOPS.value, 0);
  traces::ComputeShape s{1e12, 0, 0, traces::ComputeClass::kGemm, traces::Precision::kFp8};
  const std::string err = test::error_of([&] { (void)ComputeModel(a100).alone(s, 0); });
  EXPECT_NE(err.find("needs FP8 tensor cores"), std::string::npos) << err;
  EXPECT_NE(err.find("'a100-sxm'"), std::string::npos) << err;
  // A simulation refuses it before it starts, naming the op.
  const traces::Workload w = test::workload(
      R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
            {"id": "q", "kind": "compute", "flops": 1e12, "class": "gemm", "precision": "fp8"}]}]}])",
      "{}");
  const topologies::Cluster c(topologies::load_cluster_spec("dgx-a100", 1));
  const std::string sim_err = test::error_of([&] { ModelCost cost(c, a100, w); });
  EXPECT_NE(sim_err.find("op 'q'"), std::string::npos) << sim_err;
  // So is one known by its duration (contention would time its shape all the same).
  const traces::Workload timed = test::workload(
      R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
            {"id": "t", "kind": "compute", "flops": 1e12, "class": "gemm", "precision": "fp8",
             "duration_us": 5}]}]}])",
      "{}");
  EXPECT_NE(test::error_of([&] { ModelCost cost(c, a100, timed); }).find("op 't'"),
            std::string::npos);
  // With --set gpu.fp8_TFLOPS (a what-if) it runs.
  hardware::HardwareProfile what_if = a100;
  what_if.gpu.fp8_TFLOPS.value = 624;
  EXPECT_NO_THROW(ModelCost(c, what_if, w));
}

// ModelCost times a collective once per (communicator, kind, size, configuration asked for) and
// looks the rest up: a collective of the same size asking for another configuration, pinned or
// from a config source whose override changes between runs (a search's candidates), is timed
// again, never served the other's time.
TEST(ModelCost, ACollectiveIsTimedAgainWhenItAsksForAnotherConfiguration) {
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  std::string ranks;
  for (int r = 0; r < 2; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [{{"stream": "s", "ops": [
          {{"id": "a{}", "kind": "allreduce", "group": "g", "bytes": 8388608,
            "config": {{"algo": "Ring", "nchannels": 2}}}},
          {{"id": "b{}", "kind": "allreduce", "group": "g", "bytes": 8388608,
            "config": {{"algo": "Ring", "nchannels": 8}}}},
          {{"id": "c{}", "kind": "allreduce", "group": "g", "bytes": 8388608}}]}}]}})",
        r == 0 ? "" : ",", r, r, r, r);
  }
  const traces::Workload w = test::workload("[" + ranks + "]", R"({"g": [0, 1]})");
  const traces::ExecutionGraph g = traces::analyze(w, "test");
  ModelCost cost(cluster, h100(), w);
  const auto alone = [&](std::string_view id) {
    return cost.standalone_time(w, g, *w.find_op(id));
  };
  const auto fresh = [&](std::string_view id) {
    return Time::from_us(cost.estimate(*w.find_op(id)).time_us);
  };
  for (int pass = 0; pass < 2; ++pass) {  // the second pass is served from the memo
    for (const char* id : {"a0", "b0", "c0", "a1", "b1", "c1"}) {
      EXPECT_EQ(alone(id), fresh(id)) << id << " pass " << pass;
    }
  }
  EXPECT_NE(alone("a0"), alone("b0"));
  struct Source final : ConfigSource {
    nccl::ConfigOverride o;
    const nccl::ConfigOverride* override_for(traces::OpId) const override { return &o; }
  } source;
  cost.set_config_source(&source);
  Time previous;
  for (int nc : {1, 4, 1}) {
    source.o = nccl::ConfigOverride{};
    source.o.algo = nccl::Algorithm::kRing;
    source.o.nchannels = nc;
    EXPECT_EQ(alone("c0"), fresh("c0")) << nc;
    EXPECT_EQ(alone("a0"), fresh("a0")) << nc;  // the source's override beats the pinned one
    EXPECT_NE(alone("c0"), previous) << nc;
    previous = alone("c0");
  }
  // More configurations than the memo holds (a long search): each still gets its own time, the
  // first ones again after they were evicted.
  for (int round = 0; round < 2; ++round) {
    for (int nc = 1; nc <= 16; ++nc) {
      for (int nt : {256, 320, 384, 448, 512}) {
        source.o.nchannels = nc;
        source.o.nthreads = nt;
        EXPECT_EQ(alone("c1"), fresh("c1")) << nc << " channels, " << nt << " threads";
      }
    }
  }
}

// One rank with a GEMM filling exactly one wave on stream "compute", and an all-reduce on stream
// "comm" whose peer (rank 1) arrives only after the GEMM is done: the collective waits for the
// GEMM's whole life, holding its channels' SMs.
traces::Workload gemm_beside_waiting_collective(int nchannels) {
  return test::workload(
      R"([{"rank": 0, "streams": [
            {"stream": "compute", "ops": [{"id": "gemm", "kind": "compute", "flops": 132e9,
                                           "blocks": 132, "blocks_per_sm": 1, "class": "gemm"}]},
            {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g",
               "bytes": 1048576, "config": {"algo": "Ring", "proto": "Simple", "nchannels": )" +
          std::to_string(nchannels) + R"(}}]}]},
          {"rank": 1, "streams": [{"stream": "s", "ops": [
            {"id": "late", "kind": "compute", "duration_us": 100000},
            {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 1048576,
             "config": {"algo": "Ring", "proto": "Simple", "nchannels": )" +
          std::to_string(nchannels) + R"(}}]}]}])",
      R"({"g": [0, 1]})");
}

TEST(Contention, AHeldChannelCostsAFullWaveExtra) {
  // Alone the GEMM is one wave: launch + w. With 1 channel held it has 131 SMs and runs 2
  // waves: launch + 2w (the issue's invariant: exactly one extra wave). The waiting collective
  // draws no bandwidth and nothing else runs, so only the SMs matter.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const traces::Workload w = gemm_beside_waiting_collective(1);
  const ModelCost cost(cluster, h100(), w);
  ResourceContention contention(cost);
  auto s = test::simulate(w, SimOptions{&cost, &contention});
  const double wave = (132e9 / 132) / gemm_flops_per_sm_us(h100());
  const double launch = h100().compute.launch_us.value;
  const traces::OpId gemm = s.op("gemm");
  EXPECT_NEAR(s.r.ops[gemm].alone.us(), launch + wave, 1e-3);
  EXPECT_NEAR((s.r.ops[gemm].end - s.r.ops[gemm].start).us(), launch + 2 * wave, 2e-3);
}

TEST(Contention, AKernelKnownByItsDurationSlowsWithTheBlockSlotsItLoses) {
  // 100 us of compute with no shape ("other" class, TB = 2 on H100) beside an all-reduce that
  // waits 1 ms for its peer holding 32 CTAs: 100 free SMs keep 2 blocks each, the 32 shared ones
  // 1 each (a 1024-thread block fits beside 544 NCCL threads; 16 KiB of 147.7 KiB left), so it
  // runs at (100 * 2 + 32 * 1) / (132 * 2) = 232 / 264 of its speed: 100 * 264 / 232 us.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const traces::Workload w = test::workload(
      R"([{"rank": 0, "streams": [
            {"stream": "k", "ops": [{"id": "k", "kind": "compute", "duration_us": 100}]},
            {"stream": "c", "ops": [{"id": "c0", "kind": "allreduce", "group": "g",
               "bytes": 1048576, "config": {"nchannels": 32}}]}]},
          {"rank": 1, "streams": [{"stream": "c", "ops": [
            {"id": "late", "kind": "compute", "duration_us": 1000},
            {"id": "c1", "kind": "allreduce", "group": "g", "bytes": 1048576,
             "config": {"nchannels": 32}}]}]}])",
      R"({"g": [0, 1]})");
  const ModelCost cost(cluster, h100(), w);
  ResourceContention contention(cost);
  auto s = test::simulate(w, SimOptions{&cost, &contention});
  EXPECT_NEAR((s.r.ops[s.op("k")].end - s.r.ops[s.op("k")].start).us(), 100.0 * 264 / 232, 2e-3);
  // 'late' had its GPU to itself.
  EXPECT_EQ(s.end_ns("late"), test::us(1000));
}

TEST(Contention, MoreChannelsNeverSpeedAKernelUp) {
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  double prev = 0;
  for (int nc : {1, 2, 4, 8, 16, 32, 64}) {
    const traces::Workload w = gemm_beside_waiting_collective(nc);
    const ModelCost cost(cluster, h100(), w);
    ResourceContention contention(cost);
    auto s = test::simulate(w, SimOptions{&cost, &contention});
    const traces::OpId gemm = s.op("gemm");
    const double t = (s.r.ops[gemm].end - s.r.ops[gemm].start).us();
    // 132 blocks on 132 - nc SMs: ceil(132 / (132 - nc)) waves.
    const int waves = static_cast<int>(std::ceil(132.0 / (132 - nc)));
    const double wave = (132e9 / 132) / gemm_flops_per_sm_us(h100());
    EXPECT_NEAR(t, h100().compute.launch_us.value + waves * wave, 2e-3) << nc;
    EXPECT_GE(t, prev) << nc;
    prev = t;
  }
}

TEST(Contention, WithoutOverlapEveryOpTakesItsTimeAlone) {
  // Compute, then communication, then compute, all on one stream per rank: nothing overlaps, so
  // contention changes nothing.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const traces::Workload w = test::workload(
      R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
            {"id": "a", "kind": "compute", "flops": 1e12, "bytes": 1e9, "class": "gemm"},
            {"id": "r0", "kind": "allreduce", "group": "g", "bytes": 67108864},
            {"id": "b", "kind": "compute", "bytes": 4e9, "class": "elementwise"}]}]},
          {"rank": 1, "streams": [{"stream": "s", "ops": [
            {"id": "c", "kind": "compute", "flops": 1e12, "bytes": 1e9, "class": "gemm"},
            {"id": "r1", "kind": "allreduce", "group": "g", "bytes": 67108864}]}]}])",
      R"({"g": [0, 1]})");
  const ModelCost cost(cluster, h100(), w);
  ResourceContention contention(cost);
  auto s = test::simulate(w, SimOptions{&cost, &contention});
  for (const traces::OpTimes& t : s.r.ops) {
    EXPECT_EQ(t.end - t.start, t.alone);
  }
}

TEST(Contention, SlowdownIsNeverBelowOneAndBothSidesSlow) {
  // A GEMM and a memory-bound kernel on two streams beside an all-reduce on a third: every op's
  // running time is at least its time alone, and the GEMM slows (it lost SMs while the
  // collective ran).
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  std::string ranks = "[";
  for (int r = 0; r < 8; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "gemm", "ops": [{{"id": "g{}", "kind": "compute", "flops": 4e12, "bytes": 4e8,
            "blocks": 2048, "blocks_per_sm": 1, "class": "gemm"}}]}},
          {{"stream": "mem", "ops": [{{"id": "m{}", "kind": "compute", "flops": 1e9, "bytes": 8e9,
            "blocks": 100000, "class": "elementwise"}}]}},
          {{"stream": "comm", "ops": [{{"id": "ar{}", "kind": "allreduce", "group": "all",
            "bytes": 1073741824, "config": {{"algo": "Ring", "nchannels": 32}}}}]}}]}})",
        r ? "," : "", r, r, r, r);
  }
  ranks += "]";
  const traces::Workload w = test::workload(ranks, R"({"all": [0,1,2,3,4,5,6,7]})");
  const ModelCost cost(cluster, h100(), w);
  ResourceContention contention(cost);
  auto s = test::simulate(w, SimOptions{&cost, &contention});
  for (traces::OpId op = 0; op < s.w.op_count(); ++op) {
    const traces::OpTimes& t = s.r.ops[op];
    EXPECT_GE((t.end - t.start).count_ns(), t.alone.count_ns()) << s.w.name(op);
  }
  const traces::OpTimes& g0 = s.r.ops[s.op("g0")];
  EXPECT_GT((g0.end - g0.start).us(), 1.05 * g0.alone.us());
}

TEST(Contention, LargerChunksPolluteL2AndSlowKernels) {
  // Same channels, chunk 16 KiB vs 2 MiB: 4 * 32 * 2 MiB fills the 50 MiB L2 of an H100, 4 * 32 *
  // 16 KiB does not, so the kernel's HBM traffic (and its memory part) grows with the chunk.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  auto kernel_time = [&](int chunk) {
    const traces::Workload w = test::workload(
        R"([{"rank": 0, "streams": [
              {"stream": "k", "ops": [{"id": "k", "kind": "compute", "flops": 1e10,
                                       "bytes": 2e10, "class": "elementwise"}]},
              {"stream": "c", "ops": [{"id": "a0", "kind": "allgather", "group": "g",
                 "bytes": 17179869184, "config": {"algo": "Ring", "proto": "Simple",
                 "nchannels": 32, "chunk_bytes": )" +
            std::to_string(chunk) + R"(}}]}]},
            {"rank": 1, "streams": [{"stream": "c", "ops": [{"id": "a1", "kind": "allgather",
               "group": "g", "bytes": 17179869184, "config": {"algo": "Ring", "proto": "Simple",
               "nchannels": 32, "chunk_bytes": )" +
            std::to_string(chunk) + R"(}}]}]}])",
        R"({"g": [0, 1]})");
    const ModelCost cost(cluster, h100(), w);
    ResourceContention contention(cost);
    auto s = test::simulate(w, SimOptions{&cost, &contention});
    const traces::OpTimes& t = s.r.ops[s.op("k")];
    return (t.end - t.start).us();
  };
  EXPECT_GT(kernel_time(2 << 20), kernel_time(16 << 10));
}

}  // namespace
}  // namespace lagom::sim
