// NCCL's configuration space for one collective: algorithm, protocol, transport, channels, threads,
// chunk size (the A, P, T, NC, NT, C of AutoCCL and Lagom), with NCCL's own names.
//
// The enumerators are in NCCL's index order (reference/nccl.md §1.1: NCCL_ALGO_* 0..6,
// NCCL_PROTO_* 0..2, ncclFunc* 0..4), so `static_cast<int>` gives NCCL's index and tables indexed
// by them line up with NCCL's `comm->bandwidths[func][algo][proto]`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lagom::nccl {

enum class Algorithm : std::uint8_t {
  kTree,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat,
};
inline constexpr int kAlgorithmCount = 7;  // NCCL_NUM_ALGORITHMS

enum class Protocol : std::uint8_t { kLL, kLL128, kSimple };
inline constexpr int kProtocolCount = 3;  // NCCL_NUM_PROTOCOLS

// How the ranks of a collective exchange data. Multi-node collectives report kNet (their slowest
// hop); a single node reports how its GPUs reach each other.
enum class Transport : std::uint8_t {
  kP2pNvlink,  // P2P transport over NVLink / NVSwitch
  kP2pPcie,    // P2P transport over PCIe (GPUDirect P2P)
  kShm,        // through host shared memory
  kNet,        // network (IB, RoCE, EFA, sockets)
};
inline constexpr int kTransportCount = 4;

// The first five are NCCL's tuned functions (ncclFuncBroadcast..ncclFuncAllReduce, same order);
// AllToAll and SendRecv go through NCCL's p2p path, outside its cost model.
enum class CollKind : std::uint8_t {
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kSendRecv,
};
inline constexpr int kCollKindCount = 7;
inline constexpr int kTunedCollCount = 5;  // NCCL_NUM_FUNCTIONS

constexpr bool is_tuned(CollKind k) {
  return k <= CollKind::kAllReduce;
}
constexpr int index_of(Algorithm a) {
  return static_cast<int>(a);
}
constexpr int index_of(Protocol p) {
  return static_cast<int>(p);
}
constexpr int index_of(CollKind c) {
  return static_cast<int>(c);
}

// NCCL's tokens: "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT";
// "LL", "LL128", "Simple"; "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
// "AllToAll", "SendRecv"; transports "P2P/NVLink", "P2P/PCIe", "SHM", "NET".
std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);
std::string_view to_string(Transport t);
std::string_view to_string(CollKind c);

// Case-insensitive. Algorithms also accept the example tuner plugin's CSV tokens
// ("collnet_direct", "collnet_chain", "nvls_tree"); transports also "nvlink", "pcie", "p2p"
// (= NVLink), "net"; collectives also the workload format's "allreduce" etc. and nccl-tests'
// "all_reduce".
std::optional<Algorithm> parse_algorithm(std::string_view text);
std::optional<Protocol> parse_protocol(std::string_view text);
std::optional<Transport> parse_transport(std::string_view text);
std::optional<CollKind> parse_coll_kind(std::string_view text);
// The same, or lagom::Error "unknown algorithm 'x' (NCCL's: Tree, Ring, CollNetDirect,
// CollNetChain, NVLS, NVLSTree, PAT)" (protocols likewise).
Algorithm algorithm_named(std::string_view text);
Protocol protocol_named(std::string_view text);

// One collective's NCCL parameters. `nchannels` is the number of CTAs (one per channel) the
// kernel launches, `nthreads` the threads per CTA (including NCCL's extra sync warps),
// `chunk_bytes` the payload bytes per chunk a channel moves per pipeline step (for LL half the
// wire bytes, for LL128 15/16 of them).
struct CommConfig {
  Algorithm algo = Algorithm::kRing;
  Protocol proto = Protocol::kSimple;
  Transport transport = Transport::kP2pNvlink;
  int nchannels = 1;
  int nthreads = 512;
  std::int64_t chunk_bytes = 0;

  bool operator==(const CommConfig&) const = default;
};

// "Ring/Simple P2P/NVLink nc=24 nt=544 chunk=2 MiB".
std::string to_string(const CommConfig& c);

}  // namespace lagom::nccl
