// Loading the step and the hardware of a modelling command (see step_input.hpp).
#include "step_input.hpp"

#include <boost/program_options/errors.hpp>

#include "lagom/common/hash.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

StepInput load_step_input(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
                          const po::variables_map& vm, bool need_cluster) {
  const bool from_model = model_requested(mo, vm);
  if (from_model && (!vm["workload"].defaulted() || vm.count("chakra"))) {
    throw po::error("--workload, --chakra and --model are alternatives; give one");
  }
  if (need_cluster && hw.cluster.empty()) {
    throw po::error("--cluster is required (the collectives are timed on its GPUs)");
  }
  if (from_model && hw.cluster.empty()) {
    throw po::error("--model needs --cluster (the generated step is sized to its GPUs)");
  }
  if (hw.cluster.empty() && (hw.nodes.given() || !hw.profile.empty())) {
    throw po::error("--nodes and --profile need --cluster");
  }
  StepInput s;
  if (!hw.cluster.empty()) {
    s.hardware = load_hardware(hw);
  }
  if (from_model) {
    mo.gpu_memory_bytes = s.hardware->profile.gpu.memory_GB.value * 1e9;
    models::GeneratedStep step = generate_from_options(mo, s.hardware->cluster.gpu_count(),
                                                       s.hardware->cluster.gpus_per_node());
    s.memory = step.memory;
    s.generated = step.description;
    s.folded = step.folded_replicas;
    s.model_flops = step.figures.flops;
    s.tokens_per_step = step.figures.tokens;
    s.in = LoadedWorkload{std::move(step.workload), "model:" + mo.model,
                          "fnv1a64:" + hex64(fnv1a64(s.generated))};
  } else {
    s.in = load_workload_input(input, vm);
  }
  return s;
}

}  // namespace lagom::cli
