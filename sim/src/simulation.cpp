// The one simulation pipeline (see simulation.hpp).
#include "lagom/sim/simulation.hpp"

#include <fmt/format.h>

#include "lagom/common/error.hpp"
#include "lagom/sim/resource_contention.hpp"

namespace lagom::sim {
namespace {

// Runs `f`, prefixing a lagom::Error's message with the workload's name when there is one.
template <typename F>
auto named(const std::string& source, F&& f) {
  if (source.empty()) {
    return f();
  }
  try {
    return f();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
}

}  // namespace

Simulation::Simulation(const traces::Workload& w, SimulationOptions options)
    : w_(w),
      options_(std::move(options)),
      graph_(std::make_shared<const traces::ExecutionGraph>(traces::analyze(w, options_.source))) {}

Simulation::Simulation(const Simulation& base, Share)
    : w_(base.w_),
      options_(base.options_),
      graph_(base.graph_),
      cost_(base.cost_ ? base.cost_->sibling() : nullptr) {}

std::unique_ptr<Simulation> Simulation::sibling() const {
  return std::unique_ptr<Simulation>(new Simulation(*this, Share{}));
}

Simulation::Simulation(const traces::Workload& w, const topologies::Cluster& cluster,
                       const hardware::HardwareProfile& profile, SimulationOptions options)
    : Simulation(w, std::move(options)) {
  cost_ = named(options_.source, [&] { return std::make_unique<ModelCost>(cluster, profile, w_); });
}

Simulation::~Simulation() = default;

void Simulation::set_config_source(const ConfigSource* source) {
  if (!cost_) {
    throw Error("a configuration plan needs a cluster (it sets NCCL parameters the models time)");
  }
  cost_->set_config_source(source);
}

SimResult Simulation::run() {
  return run(options_.contention);
}

SimResult Simulation::run(bool contend) {
  std::unique_ptr<ResourceContention> contention;
  if (cost_ && contend) {
    contention = std::make_unique<ResourceContention>(*cost_);
  }
  Engine engine(w_, *graph_, SimOptions{cost_.get(), contention.get()});
  for (SimObserver* o : observers_) {
    engine.add_observer(o);
  }
  SimResult result = named(options_.source, [&] { return engine.run(); });
  warnings_.clear();
  warning_count_ = 0;
  if (contention) {
    warnings_ = contention->warnings();
    warning_count_ = contention->warning_count();
  }
  return result;
}

std::string Simulation::cost_model_name() const {
  return cost_ ? std::string(cost_->name()) : std::string("fixed (duration_us)");
}

std::string Simulation::contention_model_name() const {
  if (!cost_ || !options_.contention) {
    return "none";
  }
  return std::string(ResourceContention::kName);
}

}  // namespace lagom::sim
