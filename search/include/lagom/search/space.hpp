// The configuration space of one collective (reference/lagom-paper.md §2): (algorithm, protocol)
// subspaces, NCCL's implementation choices, and inside each the resource grid of channels (NC),
// threads (NT) and chunk size (C) that AutoCCL and Lagom tune. Transport is the topology's (P2P
// over NVLink or PCIe, NET across nodes) and is not searched: NCCL sets it per process
// (NCCL_P2P_LEVEL, NCCL_SHM_DISABLE), and the model has no separate SHM path.
//
// Grids (docs/search.md):
//  * fine: NC 1..64 (NCCL's MAXCHANNELS); NT every multiple of 32 NCCL accepts for the
//    protocol; C 32 even steps from max/32 to max, rounded down to the protocol's grain, where max
//    is the chunk NCCL itself uses for large messages in this subspace (Ring/Simple 2 MiB,
//    Tree/Simple 512 KiB, LL 32 KiB, LL128 576,000 B: AutoCCL's maxima).
//  * coarse (for exhaustive oracles): NC powers of two 1..64, NT NCCL's, C max x {1/8, 1/4, 1/2,
//  1}.
// With Resources::kNccl only NC is searched; NT and C stay NCCL's (what stock NCCL can apply per
// call through a tuner plugin).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::search {

enum class Grid { kFine, kCoarse };
enum class Resources { kFull, kNccl };  // NC, NT, C | NC only

struct Subspace {
  nccl::Algorithm algo = nccl::Algorithm::kRing;
  nccl::Protocol proto = nccl::Protocol::kSimple;
  nccl::CommConfig nccl;  // what NCCL runs in this subspace for this size (its NC, NT, C)
  std::vector<int> channels;
  std::vector<int> threads;
  std::vector<std::int64_t> chunks;

  std::size_t size() const { return channels.size() * threads.size() * chunks.size(); }
  // Index (c, t, k) in the grid -> a full configuration.
  nccl::CommConfig at(std::size_t c, std::size_t t, std::size_t k) const;
};

struct SpaceOptions {
  Grid grid = Grid::kFine;
  Resources resources = Resources::kNccl;  // as `lagom tune` (docs/search.md §2)
};

// Every (algorithm, protocol) NCCL enables on this communicator for `coll` of `bytes` (its cost
// table entry is not disabled) and whose grid has at least one legal point, in NCCL's index
// order. AllToAll (NCCL's p2p path) has Ring with LL and Simple. Every point of every grid is
// legal (why_illegal() is nullopt).
std::vector<Subspace> subspaces(const nccl::Tables& tables, nccl::CollKind coll, std::int64_t bytes,
                                const SpaceOptions& options);

std::string_view to_string(Grid g);
std::string_view to_string(Resources r);

}  // namespace lagom::search
