// Internal: the Chakra ET vocabulary the reader and the writer share: attribute names (what
// Chakra's feeder reads, and Lagom's own lossless additions), default stream names, and the
// mapping between Chakra's collective types and our op kinds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lagom/traces/et_def.pb.h"
#include "lagom/traces/workload.hpp"

namespace lagom::traces::chakra {

namespace pb = ChakraProtoMsg;

// Attribute names (ecosystem.md §B.1: what Chakra's feeder reads) and Lagom's own additions,
// which other consumers ignore and which make an export lossless.
inline constexpr std::string_view kNumOps = "num_ops";
inline constexpr std::string_view kTensorSize = "tensor_size";
inline constexpr std::string_view kIsCpuOp = "is_cpu_op";
inline constexpr std::string_view kCommType = "comm_type";
inline constexpr std::string_view kCommSize = "comm_size";
inline constexpr std::string_view kCommSrc = "comm_src";
inline constexpr std::string_view kCommDst = "comm_dst";
inline constexpr std::string_view kCommTag = "comm_tag";
inline constexpr std::string_view kPgName = "pg_name";
inline constexpr std::string_view kRoot = "root";
inline constexpr std::string_view kStream = "lagom_stream";
inline constexpr std::string_view kStreams = "lagom_streams";  // GlobalMetadata: a rank's streams
// GlobalMetadata: node names are the op ids (Lagom writes unique ones); otherwise r<rank>.n<id>.
inline constexpr std::string_view kNamesAreIds = "lagom_names_are_op_ids";
inline constexpr std::string_view kDurationNs = "lagom_duration_ns";
inline constexpr std::string_view kBlocks = "lagom_blocks";
inline constexpr std::string_view kBlocksPerSm = "lagom_blocks_per_sm";
inline constexpr std::string_view kClass = "lagom_class";
inline constexpr std::string_view kPrecision = "lagom_precision";  // absent: bf16
inline constexpr std::string_view kAlgo = "lagom_algo";
inline constexpr std::string_view kProto = "lagom_proto";
inline constexpr std::string_view kNchannels = "lagom_nchannels";
inline constexpr std::string_view kNthreads = "lagom_nthreads";
inline constexpr std::string_view kChunkBytes = "lagom_chunk_bytes";

// Streams of a rank when the trace does not say (Chakra has no streams).
inline constexpr std::string_view kComputeStream = "compute";
inline constexpr std::string_view kCommStream = "comm";
inline constexpr std::string_view kCpuStream = "cpu";
// The communicator of collectives without a pg_name.
inline constexpr std::string_view kWorldGroup = "world";

inline std::string_view node_type_name(int t) {
  return pb::NodeType_IsValid(t) ? std::string_view(pb::NodeType_Name(static_cast<pb::NodeType>(t)))
                                 : std::string_view("not a NodeType");
}

inline std::optional<OpKind> collective_kind(std::int64_t comm_type) {
  switch (comm_type) {
    case pb::ALL_REDUCE:
      return OpKind::kAllReduce;
    case pb::ALL_GATHER:
      return OpKind::kAllGather;
    case pb::REDUCE_SCATTER:
      return OpKind::kReduceScatter;
    case pb::BROADCAST:
      return OpKind::kBroadcast;
    case pb::REDUCE:
      return OpKind::kReduce;
    case pb::ALL_TO_ALL:
      return OpKind::kAllToAll;
    default:
      return std::nullopt;
  }
}

inline pb::CollectiveCommType comm_type_of(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce:
      return pb::ALL_REDUCE;
    case OpKind::kAllGather:
      return pb::ALL_GATHER;
    case OpKind::kReduceScatter:
      return pb::REDUCE_SCATTER;
    case OpKind::kBroadcast:
      return pb::BROADCAST;
    case OpKind::kReduce:
      return pb::REDUCE;
    default:
      return pb::ALL_TO_ALL;
  }
}

}  // namespace lagom::traces::chakra
