// Reading and writing Chakra execution traces: one protobuf stream per rank, PREFIX.<rank>.et.
//
// A trace set is the files PREFIX.0.et .. PREFIX.<N-1>.et (ASTRA-sim's naming), each a stream of
// varint32-length-prefixed messages: one GlobalMetadata, then Nodes. Files may be gzip-compressed
// (detected by their magic bytes). Collectives name their communicator by `pg_name`; the ranks
// of each come from a comm-groups JSON file {"<pg name>": [ranks...]} (ASTRA-sim's format).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/traces/workload.hpp"

namespace lagom::traces {

// Version string written in every GlobalMetadata.
inline constexpr std::string_view kChakraWriteVersion = "0.0.4";

// What read_chakra() read, for report contexts.
struct ChakraReadInfo {
  std::vector<std::string> files;  // the rank files, rank order
  std::string version;             // GlobalMetadata.version of rank 0's file
  std::uint64_t input_hash = 0;    // fnv1a64 over the bytes of every file read, in rank order
};

// The rank files of a trace set: PREFIX.0.et, PREFIX.1.et, ... Throws lagom::Error when there
// are none, or when the ranks found are not contiguous from 0 (naming the missing ones).
std::vector<std::string> chakra_rank_files(const std::string& prefix);

// Reads a trace set into a Workload (mapping in docs/formats/chakra.md). Throws lagom::Error
// naming the file, the message index or node id and what was expected, for: no files or a gap in
// the ranks, a file that is not a Chakra trace, a truncated message or length prefix, malformed
// protobuf, gzip errors, unknown node types or collective kinds, attributes of the wrong type,
// dependencies on node ids the rank's file does not hold, and a malformed comm-groups file or
// one that lacks a pg_name a collective uses.
Workload read_chakra(const std::string& prefix,
                     const std::optional<std::string>& comm_groups_file = std::nullopt,
                     ChakraReadInfo* info = nullptr);

// Writes PREFIX.<rank>.et for every rank (plain, uncompressed) and PREFIX.comm_groups.json with
// the workload's groups. Nodes are in an order compatible with their dependencies; stream order
// becomes ctrl_deps and dependencies data_deps. Returns the paths written. Throws lagom::Error for
// what Chakra cannot express (a dependency across ranks; a rank on another GPU than its number,
// as a placement or a down node makes; a folded group spanning more GPUs than ranks) or a file
// that cannot be written.
std::vector<std::string> write_chakra(const Workload& w, const std::string& prefix);

// The sidecar path write_chakra() uses: PREFIX.comm_groups.json.
std::string chakra_comm_groups_path(const std::string& prefix);

}  // namespace lagom::traces
