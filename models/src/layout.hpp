// Internal: where the ranks of a generated step sit in the parallel layout (Megatron's order
// tp-cp-ep-dp-pp, tensor-parallel rank fastest), the communicators that follow from it, and the
// layers of each pipeline stage.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "lagom/models/generator.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::models::internal {

// A GPU's place in the layout.
struct Coord {
  int tp, cp, ep, dp, pp;
};

// With folding, the workload holds data-parallel replica 0 only (fold_dp), or tensor-parallel
// rank 0 only (fold_tp), and workload rank r stands for the GPUs it folds; `gpu_of` still names
// every cluster GPU.
class RankLayout {
 public:
  // `placement` (TrainingConfig::placement): the cluster GPU of each layout position; empty:
  // position i is GPU i. Must outlive the layout.
  RankLayout(const Parallelism& p, bool fold_dp, bool fold_tp = false,
             const std::vector<std::uint32_t>* placement = nullptr)
      : p_(p),
        dp_fold_(fold_dp ? p.dp : 1),
        tp_fold_(fold_tp ? p.tp : 1),
        placement_(placement != nullptr && !placement->empty() ? placement : nullptr) {}
  bool placed() const { return placement_ != nullptr; }
  int fold() const { return dp_fold_ * tp_fold_; }  // GPUs each workload rank stands for
  int dp_fold() const { return dp_fold_; }
  int tp_fold() const { return tp_fold_; }
  // Whether a position is simulated (data-parallel replica 0 and tensor-parallel rank 0 of what
  // is folded).
  bool simulated(const Coord& c) const {
    return (dp_fold_ == 1 || c.dp == 0) && (tp_fold_ == 1 || c.tp == 0);
  }
  // An int: generate_step refuses a world above Parallelism::kMaxGpus (2^24).
  int rank_count() const { return static_cast<int>(p_.world() / fold()); }
  Coord coord(int rank) const;
  int gpu_of(const Coord& c) const;   // the cluster GPU
  int rank_of(const Coord& c) const;  // the workload rank of a simulated position

 private:
  Parallelism p_;
  int dp_fold_ = 1;
  int tp_fold_ = 1;
  const std::vector<std::uint32_t>* placement_ = nullptr;
};

// Per workload rank, its communicator along each axis (kNoGroup where the degree is 1).
struct Communicators {
  // dp: dense weights' gradients (cp x ep x dp); edp: experts' (cp x dp); cp: context parallel.
  std::vector<traces::GroupId> tp, cp, dp, ep, edp;
  // Folded pipelines only: the two-rank communicators that carry the GPUs of each stage
  // transfer, [from the previous stage, to the next].
  std::vector<std::array<traces::GroupId, 2>> pp_pair;
};
Communicators make_communicators(const RankLayout& layout, const Parallelism& p,
                                 traces::WorkloadBuilder& b);

// Virtual stage v of pp * vpp holds layers [first[v], first[v + 1]). Stages get the layers in
// equal parts; when they do not divide, the first and the last stage give up a layer each, as
// Llama 3 balanced them (they also hold the embedding and the output head).
std::vector<int> stage_first_layers(int layers, int stages);

}  // namespace lagom::models::internal
