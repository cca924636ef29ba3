// Synthetic TP x DP training-step generator.
#include "synthetic.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace lagom::bench {

using traces::OpKind;
using traces::OpSpec;

traces::Workload synthetic_step(const SyntheticSpec& spec) {
  const std::uint32_t tp = std::max(1u, std::min(spec.tp, spec.ranks));
  const std::uint32_t dp = spec.ranks / tp;
  traces::WorkloadBuilder b(spec.ranks);
  b.reserve_ops(std::size_t{spec.ranks} * spec.layers * 4);
  std::vector<traces::GroupId> tp_group(spec.ranks, traces::kNoGroup);
  std::vector<traces::GroupId> dp_group(spec.ranks, traces::kNoGroup);
  if (tp > 1) {
    for (std::uint32_t g = 0; g < dp; ++g) {
      std::vector<traces::Rank> members(tp);
      for (std::uint32_t i = 0; i < tp; ++i) {
        members[i] = g * tp + i;
      }
      const traces::GroupId id = b.add_group("tp" + std::to_string(g), members);
      for (traces::Rank r : members) {
        tp_group[r] = id;
      }
    }
  }
  if (dp > 1) {
    for (std::uint32_t g = 0; g < tp; ++g) {
      std::vector<traces::Rank> members(dp);
      for (std::uint32_t i = 0; i < dp; ++i) {
        members[i] = i * tp + g;
      }
      const traces::GroupId id = b.add_group("dp" + std::to_string(g), members);
      for (traces::Rank r : members) {
        dp_group[r] = id;
      }
    }
  }
  // Layer durations shared by all ranks (same model), jittered per rank below.
  std::mt19937_64 rng(spec.seed);
  std::uniform_int_distribution<std::int64_t> fwd_ns(50'000, 400'000);
  std::uniform_int_distribution<std::int64_t> comm_ns(10'000, 150'000);
  std::vector<std::int64_t> fwd(spec.layers), ar(spec.layers), rs(spec.layers);
  for (std::uint32_t l = 0; l < spec.layers; ++l) {
    fwd[l] = fwd_ns(rng);
    ar[l] = comm_ns(rng);
    rs[l] = comm_ns(rng);
  }
  auto comm_duration = [&](std::int64_t ns) {
    return spec.comm_durations ? ns : traces::kNoDuration;
  };
  for (traces::Rank r = 0; r < spec.ranks; ++r) {
    const traces::StreamId compute = b.add_stream(r, "compute");
    const traces::StreamId comm = b.add_stream(r, "comm");
    // Up to +3% per rank, deterministic.
    const std::int64_t jitter_permille = static_cast<std::int64_t>((r * 2654435761u) % 31u);
    auto jit = [&](std::int64_t ns) { return ns + ns * jitter_permille / 1000; };
    // Forward: fwd(l) on compute; TP all-reduce on comm after it; fwd(l+1) waits for it.
    traces::OpId prev_ar = 0;
    bool have_ar = false;
    for (std::uint32_t l = 0; l < spec.layers; ++l) {
      const traces::OpId f = b.add_op(
          compute, OpSpec{OpKind::kCompute, 0, traces::kNoGroup, traces::kNoPeer, jit(fwd[l])});
      if (have_ar) {
        b.add_dep(f, prev_ar);
      }
      if (tp > 1) {
        prev_ar = b.add_op(comm, OpSpec{OpKind::kAllReduce, 1 << 24, tp_group[r], traces::kNoPeer,
                                        comm_duration(ar[l])});
        b.add_dep(prev_ar, f);
        have_ar = true;
      }
    }
    // Backward: bwd(l) (2x forward), then a DP reduce-scatter of its gradients, overlapped.
    for (std::uint32_t l = spec.layers; l-- > 0;) {
      const traces::OpId bw = b.add_op(
          compute, OpSpec{OpKind::kCompute, 0, traces::kNoGroup, traces::kNoPeer, jit(2 * fwd[l])});
      if (dp > 1) {
        const traces::OpId red = b.add_op(comm, OpSpec{OpKind::kReduceScatter, 1 << 26, dp_group[r],
                                                       traces::kNoPeer, comm_duration(rs[l])});
        b.add_dep(red, bw);
      } else {
        b.add_op(compute, OpSpec{OpKind::kCompute, 0, traces::kNoGroup, traces::kNoPeer, rs[l]});
      }
    }
  }
  return std::move(b).build("synthetic");
}

}  // namespace lagom::bench
