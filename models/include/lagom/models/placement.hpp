// Rank placement: which cluster GPU runs each position of a generated step's layout
// (docs/formats/placement.md). By default the layout is packed (position i on GPU i: tensor
// parallelism inside a node, then experts, data parallelism, pipeline stages); a placement file
// lists the nodes in the order the job fills them (a Slurm host list, a scheduler's allocation
// across racks) or every GPU.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace lagom::models {

inline constexpr std::string_view kPlacementFormat = "lagom.placement";

// Parses a placement document for a step of `world` positions on a cluster of `gpus` GPUs,
// `gpus_per_node` per node: {"format": "lagom.placement", "version": 1, "nodes": [...]} (node
// nodes[k] runs positions k * gpus_per_node ..., local GPU i position k * gpus_per_node + i) or
// "gpus": [...] (one GPU per position). Returns the GPU of each position. lagom::Error naming
// `origin` and the field for a list of the wrong length, an entry outside the cluster or one
// given twice.
std::vector<std::uint32_t> parse_placement(std::string_view text, std::string_view origin,
                                           std::int64_t world, std::int64_t gpus,
                                           int gpus_per_node);

}  // namespace lagom::models
