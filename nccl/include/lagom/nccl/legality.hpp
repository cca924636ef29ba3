// Whether NCCL would run a configuration: the rules of reference/nccl.md §1.1-1.5 (algorithm
// and protocol availability, channel and thread limits, chunk grain and buffer size).
#pragma once

#include <optional>
#include <string>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/comm_info.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::nccl {

// Why NCCL would refuse (or silently corrupt data with) `config` for `coll` on this
// communicator, naming the rule (reference/nccl.md §1.1-1.5); nullopt when it is legal.
std::optional<std::string> why_illegal(const CommInfo& info, CollKind coll,
                                       const CommConfig& config);
// The same on a communicator whose tables are at hand (tune_model(info)): what a simulation
// checking every call's configuration uses, without rebuilding the tables.
std::optional<std::string> why_illegal(const Tables& tables, CollKind coll,
                                       const CommConfig& config);

}  // namespace lagom::nccl
