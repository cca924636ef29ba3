// Matching a plan's rules to a workload's communication ops (see plan_source.hpp).
#include "lagom/search/plan_source.hpp"

#include <fmt/format.h>

#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "lagom/common/error.hpp"

namespace lagom::search {

PlanOverrides::PlanOverrides(const ConfigPlan& plan, const traces::Workload& w,
                             const sim::ModelCost& cost, std::string_view origin) {
  for (const PlanRule& r : plan.rules) {
    rules_.push_back(nccl::ConfigOverride{r.algo, r.proto, r.nchannels, r.nthreads, r.chunk_bytes});
  }
  matches_.assign(plan.rules.size(), 0);
  rule_of_op_.assign(w.op_count(), -1);
  // Every (rule, communicator, size) it meets is checked: NCCL's rules depend on all three.
  std::set<std::tuple<std::size_t, const nccl::Tables*, std::int64_t>> checked;
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    const auto kind = traces::coll_kind_of(w.kind(op));
    if (!kind || !plannable(*kind)) {
      continue;
    }
    const topologies::CommunicatorInfo& info = cost.communicator_info(op);
    const PlanRule* rule = plan.find(*kind, w.bytes(op), info.nnodes, info.nranks);
    if (rule == nullptr) {
      continue;
    }
    const auto i = static_cast<std::size_t>(rule - plan.rules.data());
    rule_of_op_[op] = static_cast<std::int32_t>(i);
    ++matches_[i];
    const nccl::Tables& tables = cost.nccl_tables(op);
    if (checked.emplace(i, &tables, w.bytes(op)).second) {
      try {
        nccl::resolve_config(tables, *kind, w.bytes(op), rules_[i]);
      } catch (const Error& e) {
        throw Error(
            fmt::format("{}: rules[{}] ({} of {}..{} bytes, nnodes {}, nranks {}) matches "
                        "{}, where NCCL would refuse it: {}",
                        origin, i, nccl::to_string(rule->coll), rule->min_bytes, rule->max_bytes,
                        rule->nnodes, rule->nranks, w.describe(op), e.what()));
      }
    }
  }
}

const nccl::ConfigOverride* PlanOverrides::override_for(traces::OpId op) const {
  const std::int32_t i = rule_of_op_[op];
  return i < 0 ? nullptr : &rules_[static_cast<std::size_t>(i)];
}

std::int64_t PlanOverrides::matched_ops() const {
  return std::accumulate(matches_.begin(), matches_.end(), 0L);
}

}  // namespace lagom::search
