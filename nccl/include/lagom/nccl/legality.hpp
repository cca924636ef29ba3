// Whether NCCL would run a configuration: the rules of reference/nccl.md §1.1-1.5 (algorithm
// and protocol availability, channel and thread limits, chunk grain and buffer size).
#pragma once

#include <optional>
#include <string>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/comm_info.hpp"

namespace lagom::nccl {

// Why NCCL would refuse (or silently corrupt data with) `config` for `coll` on this
// communicator, naming the rule (reference/nccl.md §1.1-1.5); nullopt when it is legal.
std::optional<std::string> why_illegal(const CommInfo& info, CollKind coll,
                                       const CommConfig& config);

}  // namespace lagom::nccl
