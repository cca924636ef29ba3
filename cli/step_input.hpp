// The step a modelling command works on and the hardware it runs on: a workload (JSON file,
// built-in, Chakra trace) or a step generated from a model (--model), shared by `lagom
// simulate`, `lagom tune` and `lagom compare`.
#pragma once

#include <boost/program_options/variables_map.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "hardware_options.hpp"
#include "lagom/models/generator.hpp"
#include "model_input.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

struct StepInput {
  LoadedWorkload in;
  std::optional<Hardware> hardware;  // with --cluster
  // A generated step's figures (--model): memory estimate, description, folded replicas and
  // model FLOPs.
  std::optional<models::MemoryEstimate> memory;
  std::string generated;
  int folded = 1;
  std::optional<double> model_flops;
  std::optional<double> tokens_per_step;  // all GPUs
};

// Checks the combination (--workload, --chakra and --model are alternatives; --model, --nodes
// and --profile need --cluster, which `need_cluster` makes mandatory) and loads the step:
// boost::program_options::error for the command line, lagom::Error for bad input.
// --fold assumes the data-parallel replicas behave alike; --slow-gpu, --slow-link and
// --placement can make them differ. Throws boost::program_options::error when `mo` asks to fold
// such a step; `instead` says what happens without --fold ("searches then run unfolded").
void refuse_fold_if_replicas_differ(const HardwareOptions& hw, const ModelOptions& mo,
                                    std::string_view instead);
// --fold on a fabric with an oversubscribed tier (topologies::oversubscribed_tier): the other
// replicas' traffic through it would be missing. Throws boost::program_options::error.
void refuse_fold_on_oversubscribed_fabric(const topologies::ClusterSpec& spec,
                                          const ModelOptions& mo);
// Why a folded workload (its groups' mirrors, traces::Group::mirrors) is not exact on `cluster`,
// or "": a mirror that shares a node with its instance where the cluster's GPUs differ
// (topologies::gpus_differ: a40-pcie's one NIC behind GPUs 0 and 1), or an instance with several
// GPUs on a node that a mirror shares (replicas interleaved on nodes: their communicators hold
// different places in the trees that span them). Mirrors only on other nodes are exact.
std::string fold_inexact(const topologies::Cluster& cluster, const traces::Workload& w);
// Warns (once per cluster) that a folded step is close, not exact, for `why` ("": nothing).
void warn_if_fold_inexact(const topologies::Cluster& cluster, const std::string& why);
// Whether the replicas may differ (the condition above, without the error).
bool replicas_may_differ(const HardwareOptions& hw, const ModelOptions& mo);

StepInput load_step_input(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
                          const boost::program_options::variables_map& vm, bool need_cluster);

}  // namespace lagom::cli
