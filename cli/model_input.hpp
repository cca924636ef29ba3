// Generated workloads on the command line: --model, --parallel, --mbs, --gbs, --seq,
// --precision, --overlap (shared by `lagom simulate` and `lagom export`).
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "lagom/models/generator.hpp"

namespace lagom::cli {

struct ModelOptions {
  std::string model;  // zoo name or JSON file
  std::string parallel;
  int mbs = 1;
  int gbs = 0;
  int seq = 0;
  std::string precision = "bf16";
  bool fp8_param_gather = false;  // --fp8-param-gather
  std::string overlap = "none";
  // --recompute [full|selective|none]: "" (not given) is none; the bare flag is full.
  std::string recompute;
  bool fold = false;
  // A search folded the step by its own choice (the user did not pass --fold): where folding
  // would not be exact (an oversubscribed fabric), load_step_input runs it unfolded instead of
  // refusing.
  bool fold_by_default = false;
  // Fold tensor-parallel ranks too where that is exact (models::TrainingConfig::fold_tp): the
  // searches' choice, not an option.
  bool fold_tp = false;
  // The cluster's GPUs all see the hardware alike (topologies::gpus_differ is ""): set by
  // load_step_input once the cluster is loaded (models::TrainingConfig::gpus_alike).
  bool gpus_alike = false;
  double gpu_memory_bytes = 0;  // > 0: refuse steps that do not fit
  std::vector<int> down_nodes;  // --down-node: replicas using these nodes are dropped
  std::string placement;        // --placement FILE (docs/formats/placement.md); empty: packed
};

void add_model_options(boost::program_options::options_description& desc, ModelOptions& opts);

// Loads the model and generates the step. `gpus` > 0: the step must use exactly that many GPUs
// (the cluster's); lagom::Error otherwise, saying which --nodes would fit.
// With down_nodes, the replicas that use them are dropped (models::place_around_down_nodes) and
// the description says which.
models::GeneratedStep generate_from_options(const ModelOptions& opts, int gpus, int gpus_per_node);

// The per-GPU memory estimate of the step the options describe, without generating it.
models::MemoryEstimate memory_from_options(const ModelOptions& opts);

// Whether the command line asked for a generated step; boost::program_options::error when an
// option that only makes sense with one (--parallel, --gbs, --seq, ...) comes without --model.
bool model_requested(const ModelOptions& opts, const boost::program_options::variables_map& vm);

}  // namespace lagom::cli
