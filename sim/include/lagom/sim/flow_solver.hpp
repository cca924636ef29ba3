// Bounded, weighted max-min fair sharing of capacitated resources among flows: the solver behind
// the contention model (docs/models.md §6). The form is SimGrid's linear max-min system
// (simgrid/simgrid src/kernel/lmm/maxmin.cpp; Bertsekas & Gallager, Data Networks §6.5):
//
//   every flow i has a rate x_i in [0, b_i] (its bound) and a weight w_i > 0;
//   at rate x_i it uses x_i * d_ij of every resource j it crosses (its demand);
//   every resource j has a capacity C_j:   sum_i d_ij x_i <= C_j.
//
// The allocation is the max-min fair one for the weighted rates x_i / w_i, found by progressive
// filling: raise every unfrozen flow's x_i = L * w_i together; when a resource fills (at the
// level L = (C_j - frozen use) / sum of unfrozen d_ij w_i) or a flow reaches its bound, freeze
// those flows; repeat. The result is unique and is characterised by a certificate that the tests
// check: every flow is at its bound, or crosses a full resource on which no flow has a larger
// x / w (its bottleneck).
//
// Incremental: only flows that the changes since the last solve can affect are re-solved. A
// resource whose demand with every flow at its bound fits its capacity can never bind, so flows
// interact only through *over-subscribed* resources; solve() re-solves the changed flows and
// everything connected to them through resources that are over-subscribed now or were before.
//
// Max-min fairness is not monotone in general (adding a flow can speed another one up when it
// slows a third flow that competed with it elsewhere); tests/sim/flow_solver_test.cpp shows the
// classic example. What always holds: no resource above capacity, no flow above its bound.
//
// Determinism: flows and resources are visited in id order, so the same sequence of calls gives
// bit-identical rates on every machine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lagom::sim {

class FlowSolver {
 public:
  using ResourceId = std::uint32_t;
  using FlowId = std::uint32_t;

  // How much of one resource a flow uses per unit of its rate.
  struct Use {
    ResourceId resource = 0;
    double demand = 0;
  };

  // A resource of capacity > 0 (finite); lagom::Error otherwise.
  ResourceId add_resource(double capacity);
  std::size_t resource_count() const { return resources_.size(); }
  double capacity(ResourceId r) const { return resources_[r].capacity; }

  // A flow crossing `uses` (demands >= 0, finite; repeated resources add up) with rate bound
  // `bound` >= 0 and weight > 0. Its rate is set by the next solve().
  FlowId add_flow(std::span<const Use> uses, double bound, double weight = 1.0);
  // Replaces a live flow's uses and bound (its id stays).
  void update_flow(FlowId f, std::span<const Use> uses, double bound);
  void set_bound(FlowId f, double bound);
  // As set_bound, and the next solve() reports the flow as changed whatever its rate (for a flow
  // the caller reuses for a new activity).
  void renew(FlowId f, double bound, double weight = 1.0);
  // As renew, with new uses too.
  void renew(FlowId f, std::span<const Use> uses, double bound, double weight = 1.0);
  // The id may be reused by a later add_flow.
  void remove_flow(FlowId f);

  // Re-solves what the changes since the last call can affect. Appends to `changed`, in
  // increasing id order, every live flow whose rate changed (flows added since the last solve
  // always count as changed).
  void solve(std::vector<FlowId>& changed);

  double rate(FlowId f) const { return flows_[f].rate; }
  double bound(FlowId f) const { return flows_[f].bound; }
  bool alive(FlowId f) const { return f < flows_.size() && flows_[f].alive; }
  std::size_t live_flows() const { return live_; }
  // sum over live flows of rate * demand (computed on call; for tests and reports).
  double usage(ResourceId r) const;
  // The flows using `r`, and each one's demand on it.
  std::vector<Use> users(ResourceId r) const;  // Use::resource holds the FlowId here

  // Work counters (for benchmarks): flows re-solved and progressive-filling rounds.
  std::uint64_t flows_solved() const { return flows_solved_; }
  std::uint64_t rounds() const { return rounds_; }

 private:
  struct Entry {
    ResourceId resource;
    double demand;
    std::uint32_t pos;  // index in the resource's users
  };
  struct Flow {
    std::vector<Entry> uses;
    double bound = 0;
    double weight = 1;
    double rate = 0;
    bool alive = false;
    bool fresh = false;    // added since the last solve
    bool touched = false;  // in the seed set of the next solve
    std::uint32_t mark = 0;
  };
  struct User {
    FlowId flow;
    std::uint32_t entry;  // index in the flow's uses
  };
  struct Resource {
    double capacity = 0;
    double at_bounds = 0;  // sum over users of demand * bound
    std::vector<User> users;
    bool over = false;   // at_bounds > capacity, as of the last solve
    bool dirty = false;  // a user was added, removed or changed its bound since
    std::uint32_t mark = 0;
    // Progressive filling scratch.
    double frozen_use = 0;
    double active_weight = 0;
    std::uint32_t slot = 0;  // index among the constraints of the current fill (or, while
                             // attaching a flow, of its entry for this resource)
    std::uint32_t merge = 0;
  };

  void attach(FlowId f, std::span<const Use> uses);
  void detach(FlowId f);
  bool redemand(FlowId f, std::span<const Use> uses, double bound);
  void touch(FlowId f);
  void fill(const std::vector<FlowId>& flows, const std::vector<ResourceId>& constraints);
  bool is_over(const Resource& r) const;
  void note(ResourceId r);

  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<Resource> resources_;
  std::vector<FlowId> seeds_;
  std::vector<ResourceId> dirty_;
  std::size_t live_ = 0;
  std::uint32_t epoch_ = 0;
  std::uint32_t merge_stamp_ = 0;
  std::uint64_t flows_solved_ = 0;
  std::uint64_t rounds_ = 0;
  // Scratch reused across solves.
  std::vector<FlowId> comp_;
  std::vector<ResourceId> comp_resources_;
  std::vector<double> old_rate_;
  std::vector<std::pair<double, FlowId>> by_bound_;
  std::vector<std::uint32_t> active_users_;
};

}  // namespace lagom::sim
