// Bounded weighted max-min fairness by progressive filling, solved incrementally over the flows
// connected through over-subscribed resources (see flow_solver.hpp).
#include "lagom/sim/flow_solver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lagom/common/error.hpp"

namespace lagom::sim {
namespace {

constexpr double kOverTolerance = 1e-9;  // relative: demand at bounds this far above capacity
constexpr double kLevelTolerance = 1e-12;

inline void check_number(double v, const char* what, bool positive) {
  if (v >= 0 && v < std::numeric_limits<double>::infinity() && !(positive && v == 0)) {
    return;
  }
  {
    throw Error(fmt::format("flow solver: {} must be {} and finite, got {}", what,
                            positive ? "> 0" : ">= 0", v));
  }
}

}  // namespace

FlowSolver::ResourceId FlowSolver::add_resource(double capacity) {
  check_number(capacity, "a resource's capacity", true);
  resources_.emplace_back();
  resources_.back().capacity = capacity;
  return static_cast<ResourceId>(resources_.size() - 1);
}

bool FlowSolver::is_over(const Resource& r) const {
  return r.at_bounds > r.capacity * (1.0 + kOverTolerance);
}

// A resource whose demand at bounds changed needs the next solve's attention only if it could
// bind: it did at the last solve, or does now. One that fits before and after binds nobody.
void FlowSolver::note(ResourceId id) {
  Resource& r = resources_[id];
  if (!r.dirty && (r.over || is_over(r))) {
    r.dirty = true;
    dirty_.push_back(id);
  }
}

void FlowSolver::touch(FlowId f) {
  Flow& fl = flows_[f];
  if (!fl.touched) {
    fl.touched = true;
    seeds_.push_back(f);
  }
}

void FlowSolver::attach(FlowId f, std::span<const Use> uses) {
  Flow& fl = flows_[f];
  fl.uses.clear();
  for (const Use& u : uses) {
    if (!(u.demand >= 0 && u.demand < std::numeric_limits<double>::infinity())) {
      check_number(u.demand, "a flow's demand", false);
    }
    if (u.resource >= resources_.size()) {
      throw Error(fmt::format("flow solver: resource {} does not exist ({} resources)", u.resource,
                              resources_.size()));
    }
    if (u.demand == 0) {
      continue;
    }
    // Merge repeated resources: one entry per resource keeps the resource's user list short.
    // A resource's `slot` remembers where this flow's entry for it is, stamped by `merge_`.
    Resource& r = resources_[u.resource];
    if (r.merge == merge_stamp_ + 1) {
      fl.uses[r.slot].demand += u.demand;
      continue;
    }
    r.merge = merge_stamp_ + 1;
    r.slot = static_cast<std::uint32_t>(fl.uses.size());
    fl.uses.push_back(Entry{u.resource, u.demand, 0});
  }
  ++merge_stamp_;
  for (std::uint32_t i = 0; i < fl.uses.size(); ++i) {
    Entry& e = fl.uses[i];
    Resource& r = resources_[e.resource];
    e.pos = static_cast<std::uint32_t>(r.users.size());
    r.users.push_back(User{f, i});
    r.at_bounds += e.demand * fl.bound;
    note(e.resource);
  }
}

void FlowSolver::detach(FlowId f) {
  Flow& fl = flows_[f];
  for (const Entry& e : fl.uses) {
    Resource& r = resources_[e.resource];
    // Swap-remove this flow from the resource's users and fix the moved user's back index.
    const User moved = r.users.back();
    r.users[e.pos] = moved;
    flows_[moved.flow].uses[moved.entry].pos = e.pos;
    r.users.pop_back();
    r.at_bounds = r.users.empty() ? 0.0 : r.at_bounds - e.demand * fl.bound;
    note(e.resource);
  }
  fl.uses.clear();
}

FlowSolver::FlowId FlowSolver::add_flow(std::span<const Use> uses, double bound, double weight) {
  check_number(bound, "a flow's bound", false);
  check_number(weight, "a flow's weight", true);
  FlowId f = 0;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    flows_.emplace_back();
    f = static_cast<FlowId>(flows_.size() - 1);
  }
  Flow& fl = flows_[f];
  fl.bound = bound;
  fl.weight = weight;
  fl.rate = 0;
  fl.alive = true;
  fl.fresh = true;
  fl.touched = false;
  attach(f, uses);
  touch(f);
  ++live_;
  return f;
}

void FlowSolver::update_flow(FlowId f, std::span<const Use> uses, double bound) {
  check_number(bound, "a flow's bound", false);
  if (!redemand(f, uses, bound)) {
    detach(f);
    flows_[f].bound = bound;
    attach(f, uses);
  }
  touch(f);
}

// The common update keeps the resources and changes the demands: done in place, without
// unlinking the flow from its resources' user lists.
bool FlowSolver::redemand(FlowId f, std::span<const Use> uses, double bound) {
  Flow& fl = flows_[f];
  if (uses.size() != fl.uses.size()) {
    return false;
  }
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const Use& u = uses[i];
    if (u.resource != fl.uses[i].resource ||
        !(u.demand > 0 && u.demand < std::numeric_limits<double>::infinity())) {
      return false;  // another resource, a zero demand to drop, or a bad number to report
    }
  }
  for (std::size_t i = 0; i < uses.size(); ++i) {
    Entry& e = fl.uses[i];
    Resource& r = resources_[e.resource];
    r.at_bounds += uses[i].demand * bound - e.demand * fl.bound;
    e.demand = uses[i].demand;
    note(e.resource);
  }
  fl.bound = bound;
  return true;
}

void FlowSolver::set_bound(FlowId f, double bound) {
  check_number(bound, "a flow's bound", false);
  Flow& fl = flows_[f];
  if (bound == fl.bound) {
    return;
  }
  for (const Entry& e : fl.uses) {
    Resource& r = resources_[e.resource];
    r.at_bounds += e.demand * (bound - fl.bound);
    note(e.resource);
  }
  fl.bound = bound;
  touch(f);
}

void FlowSolver::renew(FlowId f, double bound, double weight) {
  check_number(weight, "a flow's weight", true);
  flows_[f].weight = weight;
  set_bound(f, bound);
  flows_[f].fresh = true;
  touch(f);
}

void FlowSolver::renew(FlowId f, std::span<const Use> uses, double bound, double weight) {
  check_number(weight, "a flow's weight", true);
  flows_[f].weight = weight;
  update_flow(f, uses, bound);
  flows_[f].fresh = true;
}

void FlowSolver::remove_flow(FlowId f) {
  detach(f);
  Flow& fl = flows_[f];
  fl.alive = false;
  fl.fresh = false;
  fl.rate = 0;
  free_.push_back(f);
  --live_;
}

double FlowSolver::usage(ResourceId r) const {
  double u = 0;
  for (const User& user : resources_[r].users) {
    u += flows_[user.flow].rate * flows_[user.flow].uses[user.entry].demand;
  }
  return u;
}

std::vector<FlowSolver::Use> FlowSolver::users(ResourceId r) const {
  std::vector<Use> out;
  for (const User& user : resources_[r].users) {
    out.push_back(Use{user.flow, flows_[user.flow].uses[user.entry].demand});
  }
  std::sort(out.begin(), out.end(),
            [](const Use& a, const Use& b) { return a.resource < b.resource; });
  return out;
}

void FlowSolver::solve(std::vector<FlowId>& changed) {
  if (seeds_.empty() && dirty_.empty()) {
    return;
  }
  ++epoch_;
  comp_.clear();
  comp_resources_.clear();
  const auto enlist = [&](FlowId f) {
    Flow& fl = flows_[f];
    if (fl.alive && fl.mark != epoch_) {
      fl.mark = epoch_;
      comp_.push_back(f);
    }
  };
  // Resources whose users changed: if they bind now or did before, all of their flows may move.
  for (ResourceId id : dirty_) {
    Resource& r = resources_[id];
    r.dirty = false;
    const bool over = is_over(r);
    if (over || r.over) {
      for (const User& u : r.users) {
        enlist(u.flow);
      }
    }
    r.over = over;
  }
  dirty_.clear();
  for (FlowId f : seeds_) {
    flows_[f].touched = false;
    enlist(f);
  }
  seeds_.clear();
  // Close the set over the resources that can bind.
  for (std::size_t i = 0; i < comp_.size(); ++i) {
    for (const Entry& e : flows_[comp_[i]].uses) {
      Resource& r = resources_[e.resource];
      if (r.over && r.mark != epoch_) {
        r.mark = epoch_;
        comp_resources_.push_back(e.resource);
        for (const User& u : r.users) {
          enlist(u.flow);
        }
      }
    }
  }
  std::sort(comp_.begin(), comp_.end());
  old_rate_.resize(comp_.size());
  for (std::size_t i = 0; i < comp_.size(); ++i) {
    old_rate_[i] = flows_[comp_[i]].rate;
  }
  if (comp_resources_.empty()) {
    // Nothing binds: every flow runs at its bound.
    for (FlowId f : comp_) {
      flows_[f].rate = flows_[f].bound;
    }
    ++epoch_;  // as fill() does
  } else {
    std::sort(comp_resources_.begin(), comp_resources_.end());
    fill(comp_, comp_resources_);
  }
  flows_solved_ += comp_.size();
  for (std::size_t i = 0; i < comp_.size(); ++i) {
    Flow& fl = flows_[comp_[i]];
    if (fl.fresh || fl.rate != old_rate_[i]) {
      changed.push_back(comp_[i]);
    }
    fl.fresh = false;
  }
}

void FlowSolver::fill(const std::vector<FlowId>& flows, const std::vector<ResourceId>& constraints) {
  // Scratch per flow: `mark` already equals epoch_ for every flow of the set; frozen flows get
  // mark = epoch_ + 1 for the duration of the fill (the next solve increments the epoch by 2).
  const std::uint32_t frozen_mark = epoch_ + 1;
  for (ResourceId id : constraints) {
    Resource& r = resources_[id];
    r.frozen_use = 0;
    r.active_weight = 0;
  }
  by_bound_.clear();
  for (FlowId f : flows) {
    Flow& fl = flows_[f];
    fl.rate = 0;
    for (const Entry& e : fl.uses) {
      Resource& r = resources_[e.resource];
      if (r.mark == epoch_) {
        r.active_weight += e.demand * fl.weight;
      }
    }
    by_bound_.emplace_back(fl.bound / fl.weight, f);
  }
  std::sort(by_bound_.begin(), by_bound_.end());
  std::vector<std::uint32_t>& active_users = active_users_;
  active_users.assign(constraints.size(), 0);
  for (std::size_t k = 0; k < constraints.size(); ++k) {
    active_users[k] = static_cast<std::uint32_t>(resources_[constraints[k]].users.size());
  }
  // Index of each constraint in `constraints`, through the resource's scratch slot.
  for (std::size_t k = 0; k < constraints.size(); ++k) {
    resources_[constraints[k]].slot = static_cast<std::uint32_t>(k);
  }

  std::size_t active = flows.size();
  std::size_t next_bound = 0;
  double level = 0;
  const auto freeze = [&](FlowId f, double rate) {
    Flow& fl = flows_[f];
    fl.mark = frozen_mark;
    fl.rate = std::min(rate, fl.bound);
    for (const Entry& e : fl.uses) {
      Resource& r = resources_[e.resource];
      if (r.mark == epoch_) {
        r.frozen_use += e.demand * fl.rate;
        r.active_weight -= e.demand * fl.weight;
        --active_users[r.slot];
      }
    }
    --active;
  };
  while (active > 0) {
    ++rounds_;
    const std::size_t active_before = active;
    double next = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < constraints.size(); ++k) {
      const Resource& r = resources_[constraints[k]];
      if (active_users[k] > 0 && r.active_weight > 0) {
        next = std::min(next, (r.capacity - r.frozen_use) / r.active_weight);
      }
    }
    while (next_bound < by_bound_.size() && flows_[by_bound_[next_bound].second].mark != epoch_) {
      ++next_bound;  // frozen at a resource already
    }
    if (next_bound < by_bound_.size()) {
      next = std::min(next, by_bound_[next_bound].first);
    }
    level = std::max(level, next);
    const double reach = level * (1.0 + kLevelTolerance);
    while (next_bound < by_bound_.size() && by_bound_[next_bound].first <= reach) {
      const FlowId f = by_bound_[next_bound].second;
      if (flows_[f].mark == epoch_) {
        freeze(f, flows_[f].bound);
      }
      ++next_bound;
    }
    for (std::size_t k = 0; k < constraints.size(); ++k) {
      Resource& r = resources_[constraints[k]];
      if (active_users[k] == 0) {
        continue;
      }
      const double left = r.capacity - r.frozen_use - level * r.active_weight;
      if (left <= r.capacity * kLevelTolerance * 16) {
        for (const User& u : r.users) {
          if (flows_[u.flow].mark == epoch_) {
            freeze(u.flow, level * flows_[u.flow].weight);
          }
        }
      }
    }
    if (active == active_before) {
      // Rounding left nothing to freeze at this level: settle everyone still active here.
      for (FlowId f : flows) {
        if (flows_[f].mark == epoch_) {
          freeze(f, level * flows_[f].weight);
        }
      }
    }
  }
  // Leave every flow of the set marked as "seen this epoch" for solve()'s bookkeeping.
  for (FlowId f : flows) {
    flows_[f].mark = epoch_;
  }
  ++epoch_;  // frozen_mark must not collide with the next solve's epoch
}

}  // namespace lagom::sim
