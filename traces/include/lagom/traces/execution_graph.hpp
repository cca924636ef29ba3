// What a Workload means when it runs: which ops of different ranks form one collective or one
// send/recv transfer, who waits for whom, and a proof that nothing deadlocks.
//
// Matching rules (docs/formats/workload.md):
//  * Collectives: on each group, the k-th collective a rank issues (counting its ops in file
//    order: its streams in order, each stream's ops in order) matches the k-th collective of
//    every other member. All members must issue the same kind, size and root.
//  * Send/recv: the k-th send from rank a to rank b on a group (or on no group) pairs with the
//    k-th recv on b from a on that group; sizes must agree.
// Every rank of a collective must reach it: analyze() rejects programs where a member never
// does, and any cycle of waits (dependencies, stream order and collective rendezvous together),
// naming the ops on it. A workload that passes never deadlocks in the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "lagom/traces/workload.hpp"

namespace lagom::traces {

using InstanceId = std::uint32_t;
inline constexpr InstanceId kNoInstance = 0xffffffffu;

class ExecutionGraph {
 public:
  // One collective call or one send/recv transfer: the member ops, one per participating rank.
  std::uint32_t instance_count() const {
    return static_cast<std::uint32_t>(member_begin_.size()) - 1;
  }
  InstanceId instance_of(OpId op) const { return instance_of_[op]; }
  std::span<const OpId> members(InstanceId i) const {
    return {members_.data() + member_begin_[i], members_.data() + member_begin_[i + 1]};
  }
  // Ops that list `op` in their deps (stream order is implicit: op + 1 on the same stream).
  std::span<const OpId> dependents(OpId op) const {
    return {dependents_.data() + dependent_begin_[op],
            dependents_.data() + dependent_begin_[op + 1]};
  }
  std::size_t memory_bytes() const;

 private:
  friend ExecutionGraph analyze(const Workload&, std::string_view);
  std::vector<InstanceId> instance_of_;
  std::vector<std::uint64_t> member_begin_{0};
  std::vector<OpId> members_;
  std::vector<std::uint32_t> dependent_begin_;
  std::vector<OpId> dependents_;
};

// The member whose given duration (`duration_us` in a file) times instance `i`: the longest one,
// the first in member order among equals; nullopt when no member carries one and a cost model
// times the instance. One rule for everything that times an instance: the engine runs a measured
// instance for that duration, the contention model scales its flows to it, and the searches count
// that duration as its time alone (no NCCL configuration changes it, though its configuration
// still sets its SMs and traffic under contention).
std::optional<OpId> measured_member(const Workload& w, const ExecutionGraph& g, InstanceId i);

// Matches communication and checks the program for deadlocks. Throws lagom::Error whose message
// starts with `where` (e.g. the file name) and names the ranks and ops involved.
ExecutionGraph analyze(const Workload& workload, std::string_view where = {});

}  // namespace lagom::traces
