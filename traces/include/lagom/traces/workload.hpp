// The Workload: per-rank CUDA streams of ops, their dependencies and communicator groups.
//
// Storage is column-oriented (one vector per field, ops addressed by a 32-bit OpId) so that a
// 16,384-rank step of tens of millions of ops fits in a few GB. Ops of one stream are contiguous
// and in issue order, streams of one rank are contiguous, ranks are 0..N-1.
// Build one with WorkloadBuilder; a built Workload is immutable and safe to share between
// simulations running on different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/config_override.hpp"

namespace lagom::traces {

enum class OpKind : std::uint8_t {
  kCompute,
  kMemcpy,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSend,
  kRecv,
};
inline constexpr int kOpKindCount = 10;

std::string_view to_string(OpKind kind);  // "allreduce", as in the workload format
std::optional<OpKind> parse_op_kind(std::string_view name);
// The NCCL collective an op is; Send and Recv are kSendRecv; compute and memcpy have none.
std::optional<nccl::CollKind> coll_kind_of(OpKind kind);
// "a" or "an", for messages about `word` ("an allreduce", "a send").
std::string_view article(std::string_view word);
constexpr bool is_collective(OpKind k) {
  return k >= OpKind::kAllReduce && k <= OpKind::kAllToAll;
}
constexpr bool is_p2p(OpKind k) {
  return k == OpKind::kSend || k == OpKind::kRecv;
}
constexpr bool is_comm(OpKind k) {
  return is_collective(k) || is_p2p(k);
}
constexpr bool has_root(OpKind k) {
  return k == OpKind::kBroadcast || k == OpKind::kReduce;
}

using OpId = std::uint32_t;
using StreamId = std::uint32_t;
using Rank = std::uint32_t;
using GroupId = std::int32_t;
inline constexpr GroupId kNoGroup = -1;
inline constexpr std::int32_t kNoPeer = -1;
inline constexpr std::int64_t kNoDuration = -1;

// A communicator: a named, ordered set of distinct ranks.
struct Group {
  std::string name;
  std::vector<Rank> ranks;  // in communicator order (rank i of the communicator is ranks[i])
  // The cluster GPUs the communicator spans, when they are not simply `ranks`: a folded workload
  // simulates one representative of identical data-parallel replicas, so its data-parallel
  // communicators span more GPUs than the ranks it holds (docs/formats/workload.md, "Folding").
  std::vector<std::uint32_t> gpus;
  // The GPU sets of the identical instances a folded communicator also stands for, each in
  // communicator order and as long as cluster_gpus(): the communicators of the replicas (or
  // tensor-parallel ranks) a folded workload leaves out, which run the same collectives at the
  // same times. The contention model loads the links they share with this instance
  // (docs/formats/workload.md, "Folding").
  std::vector<std::vector<std::uint32_t>> mirrors;
  // What the cost models should size the communicator by.
  std::span<const std::uint32_t> cluster_gpus() const { return gpus.empty() ? ranks : gpus; }
  // Whether it stands for GPUs it does not simulate.
  bool folded() const { return gpus.size() > ranks.size() || !mirrors.empty(); }
};

struct Stream {
  Rank rank = 0;
  std::string name;
  OpId first_op = 0;  // ops [first_op, first_op + op_count) in issue order
  OpId op_count = 0;
};

// What an op is, independent of where it sits. Used to add ops to a builder.
struct OpSpec {
  OpKind kind = OpKind::kCompute;
  std::int64_t bytes = 0;                  // collective/p2p/memcpy payload; compute: HBM traffic
  GroupId group = kNoGroup;                // collectives: required; send/recv: optional
  std::int32_t peer = kNoPeer;             // send/recv: the other rank; broadcast/reduce: root
  std::int64_t duration_ns = kNoDuration;  // fixed duration, or kNoDuration for a cost model
};

// NCCL parameters pinned on one communication op (format field "config") are an
// nccl::ConfigOverride: unset fields are left to NCCL's own choice; the collective model checks
// their legality when it times the op.

// What a compute kernel does, for the compute model (format fields "flops", "blocks",
// "blocks_per_sm", "class"; its HBM traffic is the op's "bytes"). Zero means unknown.
enum class ComputeClass : std::uint8_t {
  kOther,
  kGemm,
  kAttention,
  kElementwise,
  kNorm,
  kOptimizer
};
inline constexpr int kComputeClassCount = 6;
std::string_view to_string(ComputeClass c);  // "gemm", "attention", ...
std::optional<ComputeClass> parse_compute_class(std::string_view name);

// The number format a tensor-core kernel (gemm, attention) computes in, which picks the peak it
// runs against (hardware::GpuParams): 16-bit (bf16 or fp16, the default), fp8 (Transformer
// Engine's linear layers) or fp32 (no tensor cores: PyTorch's default for an fp32 matmul). Other
// classes run on the CUDA cores whatever it says.
enum class Precision : std::uint8_t { kBf16, kFp8, kFp32 };
std::string_view to_string(Precision p);  // "bf16", "fp8", "fp32"
// "bf16" | "fp16" (the same tensor-core rate) | "fp8" | "fp32"
std::optional<Precision> parse_precision(std::string_view name);

struct ComputeShape {
  double flops = 0;
  std::int32_t blocks = 0;         // thread blocks the kernel launches
  std::int32_t blocks_per_sm = 0;  // how many fit one SM at once (occupancy)
  ComputeClass cls = ComputeClass::kOther;
  Precision precision = Precision::kBf16;
  bool operator==(const ComputeShape&) const = default;
};

// GEMMs run as square output tiles of this many elements a side, one thread block each
// (sim/compute_model.hpp times them so).
inline constexpr int kGemmTile = 128;

// C[m, n] = A[m, k] B[k, n] as cuBLAS runs it: ceil(m / 128) x ceil(n / 128) blocks of one CTA
// per SM, doing the work of whole tiles (m and n padded to multiples of 128), which is 2 m n k
// FLOPs only when they divide; so a gemm op's FLOPs over its blocks give its reduction depth.
// Narrow GEMMs (n < 128: an MoE router) pay a whole tile, where cuBLAS has narrower ones; they
// are memory-bound or tiny. Blocks are clamped to 1e9 so that absurd shapes stay representable.
ComputeShape gemm_shape(double m, double n, double k);

class Workload {
 public:
  Workload() = default;

  std::uint32_t rank_count() const { return static_cast<std::uint32_t>(rank_streams_.size()) - 1; }
  std::uint32_t op_count() const { return static_cast<std::uint32_t>(kind_.size()); }
  std::span<const Stream> streams() const { return streams_; }
  const Stream& stream(StreamId s) const { return streams_[s]; }
  // Streams of rank r are [first, last).
  StreamId first_stream(Rank r) const { return rank_streams_[r]; }
  StreamId last_stream(Rank r) const { return rank_streams_[r + 1]; }
  std::span<const Group> groups() const { return groups_; }
  // The cluster GPU rank r runs on: its GPU in the groups that carry 'gpus' (the i-th rank of a
  // group runs on its i-th GPU), else r itself. The same in every group (checked when built).
  std::uint32_t gpu_of(Rank r) const { return rank_gpu_[r]; }
  const Group& group_info(GroupId g) const { return groups_[static_cast<std::size_t>(g)]; }
  std::optional<GroupId> find_group(std::string_view name) const;

  OpKind kind(OpId op) const { return kind_[op]; }
  StreamId stream_of(OpId op) const { return stream_[op]; }
  Rank rank_of(OpId op) const { return streams_[stream_[op]].rank; }
  GroupId group(OpId op) const { return group_[op]; }
  std::int32_t peer(OpId op) const { return peer_[op]; }
  std::int64_t bytes(OpId op) const { return bytes_[op]; }
  std::int64_t duration_ns(OpId op) const { return duration_ns_[op]; }
  std::span<const OpId> deps(OpId op) const {
    return {deps_.data() + dep_begin_[op], deps_.data() + dep_begin_[op + 1]};
  }
  std::size_t dep_count() const { return deps_.size(); }
  // Position of the op within its stream.
  OpId position(OpId op) const { return op - streams_[stream_[op]].first_op; }

  // The op's id as written in the workload file; else, for an op given a number (a Chakra
  // trace's node id), "r<rank>.n<number>"; else, for an op given a label (generated steps:
  // "L12.attn.qkv.fwd.mb3"), "r<rank>/<label>"; else "r<rank>/<stream>/<position>".
  std::string name(OpId op) const;
  // The same, appended to `out` (no allocation of its own: for writers of millions of ops).
  void append_name(std::string& out, OpId op) const;
  // The op's label (WorkloadBuilder::set_label), or empty.
  std::string label(OpId op) const;
  // The op with id `name`, if any (linear in the op count the first time; then cached? no: call
  // sparingly, e.g. for error messages and tests).
  std::optional<OpId> find_op(std::string_view name) const;
  // "op 'bwd.3' (rank 2, stream 'compute', #17)": how errors refer to an op.
  std::string describe(OpId op) const;

  // The config pinned on `op`, or nullptr (most ops have none).
  const nccl::ConfigOverride* pinned_config(OpId op) const;
  std::size_t pinned_config_count() const { return pinned_.size(); }
  // The compute shape given for `op`, or nullptr.
  const ComputeShape* compute_shape(OpId op) const;

  // Approximate heap bytes held (for the memory figures in bench/RESULTS.md).
  std::size_t memory_bytes() const;

 private:
  friend class WorkloadBuilder;

  std::vector<Group> groups_;
  std::vector<std::uint32_t> rank_gpu_;
  std::vector<Stream> streams_;
  std::vector<StreamId> rank_streams_{0};  // rank r owns streams [rank_streams_[r], [r+1])

  std::vector<OpKind> kind_;
  std::vector<StreamId> stream_;
  std::vector<GroupId> group_;
  std::vector<std::int32_t> peer_;
  std::vector<std::int64_t> bytes_;
  std::vector<std::int64_t> duration_ns_;
  std::vector<std::uint32_t> dep_begin_{0};
  std::vector<OpId> deps_;
  std::vector<std::uint64_t> name_begin_;  // empty when no op has an explicit id
  std::string names_;
  // Numbers: number_[op] names it "r<rank>.n<number>" (kNoNumber: not numbered); empty when no
  // op is numbered or every op has an explicit id.
  static constexpr std::uint64_t kNoNumber = ~std::uint64_t{0};
  std::vector<std::uint64_t> number_;
  // Labels: label_of_[op] indexes labels_ (kNoLabel: none), and label_mb_[op] is the micro-batch
  // appended as ".mb<N>" (-1: none); both empty when no op has a label.
  static constexpr std::uint32_t kNoLabel = 0xffffffffu;
  std::vector<std::uint32_t> label_of_;
  std::vector<std::int32_t> label_mb_;
  std::vector<std::string> labels_;
  std::vector<std::pair<OpId, nccl::ConfigOverride>> pinned_;  // sorted by op
  // Compute shapes: shape_of_[op] indexes shapes_ (kNoShape: none); empty when no op has one.
  static constexpr std::uint32_t kNoShape = 0xffffffffu;
  std::vector<std::uint32_t> shape_of_;
  std::vector<ComputeShape> shapes_;
};

// Accumulates groups, streams and ops in any order, then checks and freezes them.
// OpIds returned by add_op are provisional: build() renumbers ops so that each stream's ops are
// contiguous; dependencies given with provisional ids are remapped.
class WorkloadBuilder {
 public:
  explicit WorkloadBuilder(std::uint32_t rank_count);

  // Throws lagom::Error on a duplicate name or a rank outside [0, rank_count).
  // `gpus` (optional): the cluster GPUs the communicator spans, a superset of what `ranks` stand
  // for (see Group::gpus); empty means `ranks` themselves. `mirrors` (optional): see
  // Group::mirrors; each as long as the GPUs the group spans, and no GPU in two of its sets.
  GroupId add_group(std::string name, std::vector<Rank> ranks, std::vector<std::uint32_t> gpus = {},
                    std::vector<std::vector<std::uint32_t>> mirrors = {});
  StreamId add_stream(Rank rank, std::string name);
  // `id` may be empty (a generated name is used). Ids must be unique when given.
  OpId add_op(StreamId stream, const OpSpec& spec, std::string_view id = {});
  void add_dep(OpId op, OpId must_finish_first);
  // Pins NCCL parameters on a communication op (an error on compute or memcpy ops at build()).
  void pin_config(OpId op, nccl::ConfigOverride config);
  // Describes a compute op's kernel (an error on other kinds at build()).
  void set_compute_shape(OpId op, ComputeShape shape);
  // A readable label for an op without an explicit id: what it is (layer, kernel, pass) and,
  // when `micro_batch` >= 0, ".mb<micro_batch>" after it. It names the op "r<rank>/<label>" and
  // must be unique on its rank. `what` repeats across ranks and micro-batches, so each distinct
  // one is stored once (8 bytes per op).
  void set_label(OpId op, std::string_view what, std::int32_t micro_batch = -1);
  // Names an op without an explicit id "r<rank>.n<number>", as if that were its id (it must be
  // unique like one), for 8 bytes and no formatting per op: a Chakra trace's node ids. 2^64 - 1
  // is reserved (an error): give that op its id as text.
  void set_number(OpId op, std::uint64_t number);
  // Room for n ops and, when known, their dependencies and compute shapes.
  void reserve_ops(std::size_t n, std::size_t deps = 0, std::size_t shapes = 0);

  std::uint32_t rank_count() const { return rank_count_; }
  std::size_t op_count() const { return kind_.size(); }

  // Checks what can be checked op by op (groups contain the op's rank, peers exist, sizes and
  // durations are non-negative, a rank's streams have distinct names) and freezes the result.
  // Errors name the op. `where` prefixes messages (e.g. the file name).
  Workload build(std::string_view where = {}) &&;

 private:
  std::uint32_t rank_count_;
  std::vector<Group> groups_;
  std::unordered_set<std::string> group_names_;  // groups_' names: a duplicate check in O(1)
  std::vector<Rank> stream_rank_;
  std::vector<std::string> stream_name_;
  std::vector<OpKind> kind_;
  std::vector<StreamId> stream_;
  std::vector<GroupId> group_;
  std::vector<std::int32_t> peer_;
  std::vector<std::int64_t> bytes_;
  std::vector<std::int64_t> duration_ns_;
  std::vector<std::uint64_t> name_begin_;
  std::string names_;
  bool any_name_ = false;
  std::vector<std::uint64_t> number_;    // per op once some op has a number
  std::vector<std::uint32_t> label_of_;  // per op once some op has a label
  std::vector<std::int32_t> label_mb_;
  std::vector<std::string> labels_;
  struct LabelHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  std::unordered_map<std::string, std::uint32_t, LabelHash, std::equal_to<>> label_index_;
  std::vector<std::pair<OpId, OpId>> deps_;  // (op, dependency)
  std::vector<std::pair<OpId, nccl::ConfigOverride>> pinned_;
  std::vector<std::pair<OpId, ComputeShape>> shapes_;
};

}  // namespace lagom::traces
