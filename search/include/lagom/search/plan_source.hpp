// Replaying a plan in the simulator: every communication op that a rule of the plan matches
// (its collective, bytes, and its communicator's nodes and ranks; first match wins) runs with
// the rule's configuration, what the rule leaves unset being NCCL's choice. Used by `lagom
// simulate --plan`.
#pragma once

#include <vector>

#include "lagom/search/plan.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::search {

class PlanOverrides final : public sim::ConfigSource {
 public:
  // Matches every op now and checks each rule against each communicator it matched on: a rule
  // NCCL would refuse there is a lagom::Error naming the rule (by index and what it matches),
  // an op it matched and the NCCL rule broken. `origin` names the plan in messages.
  PlanOverrides(const ConfigPlan& plan, const traces::Workload& w, const sim::ModelCost& cost,
                std::string_view origin);

  const nccl::ConfigOverride* override_for(traces::OpId op) const override;

  // Communication ops each rule matched (by rule index), and in all.
  const std::vector<std::int64_t>& matches() const { return matches_; }
  std::int64_t matched_ops() const;

 private:
  std::vector<nccl::ConfigOverride> rules_;
  std::vector<std::int32_t> rule_of_op_;  // -1: none
  std::vector<std::int64_t> matches_;
};

}  // namespace lagom::search
