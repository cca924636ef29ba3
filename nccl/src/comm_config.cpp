// Names of NCCL's algorithms, protocols, transports and collectives, and CommConfig printing.
#include "lagom/nccl/comm_config.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <optional>
#include <string>

#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "text.hpp"

namespace lagom::nccl {
namespace {

constexpr std::array<std::string_view, kAlgorithmCount> kAlgorithmNames = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::array<std::string_view, kProtocolCount> kProtocolNames = {"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, kTransportCount> kTransportNames = {"P2P/NVLink", "P2P/PCIe",
                                                                           "SHM", "NET"};
constexpr std::array<std::string_view, kCollKindCount> kCollNames = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "AllToAll", "SendRecv"};

// Lower case without '_', '-', '/' and spaces, so "all_reduce", "AllReduce" and "allreduce" meet.
std::string squash(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '_' || ch == '-' || ch == '/' || ch == ' ') {
      continue;
    }
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return out;
}

template <typename E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
  for (std::size_t i = 0; i < N; ++i) {
    if (internal::iequals(names[i], text)) {
      return static_cast<E>(i);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Algorithm a) {
  return kAlgorithmNames[static_cast<std::size_t>(a)];
}
std::string_view to_string(Protocol p) {
  return kProtocolNames[static_cast<std::size_t>(p)];
}
std::string_view to_string(Transport t) {
  return kTransportNames[static_cast<std::size_t>(t)];
}
std::string_view to_string(CollKind c) {
  return kCollNames[static_cast<std::size_t>(c)];
}

std::optional<Algorithm> parse_algorithm(std::string_view text) {
  if (auto a = find_name<Algorithm>(kAlgorithmNames, text)) {
    return a;
  }
  const std::string s = squash(text);  // the tuner CSV's "collnet_direct", "nvls_tree"
  for (std::size_t i = 0; i < kAlgorithmNames.size(); ++i) {
    if (s == squash(kAlgorithmNames[i])) {
      return static_cast<Algorithm>(i);
    }
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  return find_name<Protocol>(kProtocolNames, text);
}

std::optional<Transport> parse_transport(std::string_view text) {
  if (auto t = find_name<Transport>(kTransportNames, text)) {
    return t;
  }
  const std::string s = squash(text);
  if (s == "p2pnvlink" || s == "nvlink" || s == "nvl" || s == "p2p") {
    return Transport::kP2pNvlink;
  }
  if (s == "p2ppcie" || s == "pcie" || s == "pci") {
    return Transport::kP2pPcie;
  }
  if (s == "shm") {
    return Transport::kShm;
  }
  if (s == "net" || s == "network") {
    return Transport::kNet;
  }
  return std::nullopt;
}

std::optional<CollKind> parse_coll_kind(std::string_view text) {
  const std::string s = squash(text);
  for (std::size_t i = 0; i < kCollNames.size(); ++i) {
    if (s == squash(kCollNames[i])) {
      return static_cast<CollKind>(i);
    }
  }
  if (s == "alltoall" || s == "a2a") {
    return CollKind::kAllToAll;
  }
  return std::nullopt;
}

Algorithm algorithm_named(std::string_view text) {
  if (auto a = parse_algorithm(text)) {
    return *a;
  }
  throw Error(
      fmt::format("unknown algorithm '{}' (NCCL's: {})", text, fmt::join(kAlgorithmNames, ", ")));
}
Protocol protocol_named(std::string_view text) {
  if (auto p = parse_protocol(text)) {
    return *p;
  }
  throw Error(
      fmt::format("unknown protocol '{}' (NCCL's: {})", text, fmt::join(kProtocolNames, ", ")));
}

std::string to_string(const CommConfig& c) {
  return fmt::format("{}/{} {} nc={} nt={} chunk={}", to_string(c.algo), to_string(c.proto),
                     to_string(c.transport), c.nchannels, c.nthreads, format_bytes(c.chunk_bytes));
}

}  // namespace lagom::nccl
