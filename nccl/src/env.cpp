// NCCL environment variables for what-ifs (see env.hpp): each known
// variable sets the CommInfo field NCCL's init would read it into.
#include "lagom/nccl/env.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <string_view>

#include "lagom/common/error.hpp"

namespace lagom::nccl {
namespace {

// NCCL reads its integer parameters with strtoll; we accept plain decimal integers only, so
// that "8x" or "" is an error rather than NCCL's silent 8 or 0.
std::int64_t integer(std::string_view name, std::string_view value, std::int64_t lo,
                     std::int64_t hi) {
  std::int64_t v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end || value.empty()) {
    throw Error(fmt::format("{}={}: expected an integer", name, value));
  }
  if (v < lo || v > hi) {
    throw Error(fmt::format("{}={}: must be in {}..{}", name, value, lo, hi));
  }
  return v;
}

struct Channels {
  int min_ctas = 1, max_ctas = 64;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS
  int min_nch = 0, max_nch = 64;    // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (deprecated)
};

using Setter =
    std::function<void(std::string_view name, std::string_view value, CommInfo&, Channels&)>;

Setter bytes_into(std::int64_t Env::*field, std::int64_t lo) {
  return [field, lo](std::string_view n, std::string_view v, CommInfo& c, Channels&) {
    c.env.*field = integer(n, v, lo, std::int64_t{1} << 40);
  };
}

Setter threads_into(int Env::*field) {
  return [field](std::string_view n, std::string_view v, CommInfo& c, Channels&) {
    c.env.*field = static_cast<int>(integer(n, v, 1, 1024));
  };
}

const std::vector<std::pair<std::string_view, Setter>>& setters() {
  static const std::vector<std::pair<std::string_view, Setter>> table = {
      {"NCCL_ALGO", [](auto, auto v, CommInfo& c, Channels&) { c.env.algo = v; }},
      {"NCCL_PROTO", [](auto, auto v, CommInfo& c, Channels&) { c.env.proto = v; }},
      {"NCCL_MIN_CTAS", [](auto n, auto v, CommInfo&,
                           Channels& ch) { ch.min_ctas = static_cast<int>(integer(n, v, 1, 64)); }},
      {"NCCL_MAX_CTAS", [](auto n, auto v, CommInfo&,
                           Channels& ch) { ch.max_ctas = static_cast<int>(integer(n, v, 1, 64)); }},
      {"NCCL_MIN_NCHANNELS",
       [](auto n, auto v, CommInfo&, Channels& ch) {
         ch.min_nch = static_cast<int>(integer(n, v, 0, 64));
       }},
      {"NCCL_MAX_NCHANNELS",
       [](auto n, auto v, CommInfo&, Channels& ch) {
         ch.max_nch = std::max(1, static_cast<int>(integer(n, v, 0, 64)));
       }},
      {"NCCL_NTHREADS", threads_into(&Env::nthreads)},
      {"NCCL_LL128_NTHREADS", threads_into(&Env::ll128_nthreads)},
      {"NCCL_BUFFSIZE", bytes_into(&Env::buffsize_bytes, 1)},
      {"NCCL_LL_BUFFSIZE", bytes_into(&Env::ll_buffsize_bytes, 1)},
      {"NCCL_LL128_BUFFSIZE", bytes_into(&Env::ll128_buffsize_bytes, 1)},
      {"NCCL_NVLS_CHUNKSIZE", bytes_into(&Env::nvls_chunk_bytes, 1)},
      {"NCCL_P2P_NVL_CHUNKSIZE", bytes_into(&Env::p2p_nvl_chunk_bytes, 1)},
      {"NCCL_P2P_PCI_CHUNKSIZE", bytes_into(&Env::p2p_pci_chunk_bytes, 1)},
      {"NCCL_P2P_NET_CHUNKSIZE", bytes_into(&Env::p2p_net_chunk_bytes, 1)},
      {"NCCL_P2P_LL_THRESHOLD", bytes_into(&Env::p2p_ll_threshold_bytes, 0)},
      {"NCCL_CHUNK_SIZE", bytes_into(&Env::chunk_size_bytes, 0)},
      {"NCCL_PAT_ENABLE",
       [](auto n, auto v, CommInfo& c, Channels&) {
         c.env.pat_enable = static_cast<int>(integer(n, v, 0, 2));
       }},
      {"NCCL_LL128_C2C",
       [](auto n, auto v, CommInfo& c, Channels&) { c.env.ll128_c2c = integer(n, v, 0, 1) != 0; }},
      // Read by the traffic footprints (topologies/traffic.hpp: PXN); validated here.
      {"NCCL_PXN_DISABLE", [](auto n, auto v, CommInfo&, Channels&) { (void)integer(n, v, 0, 1); }},
      {"NCCL_NET_OVERHEAD",
       [](auto n, auto v, CommInfo& c, Channels&) {
         c.env.net_overhead_us = static_cast<double>(integer(n, v, 0, 1000000)) * 1e-3;
       }},
  };
  return table;
}

}  // namespace

void apply_env(const std::map<std::string, std::string>& vars, CommInfo& info) {
  if (vars.empty()) {
    return;
  }
  Channels ch;
  ch.min_ctas = info.min_ctas;
  ch.max_ctas = info.max_ctas;
  for (const auto& var : vars) {
    const auto& [name, value] = var;
    const auto& table = setters();
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const auto& entry) { return entry.first == var.first; });
    if (it == table.end()) {
      std::string known;
      for (const auto& entry : table) {
        known += known.empty() ? "" : ", ";
        known += entry.first;
      }
      throw Error(fmt::format(
          "unknown NCCL environment variable '{}' (the NCCL emulation reads: {})", name, known));
    }
    if (info.version == Version::k2_18 &&
        (name == "NCCL_PAT_ENABLE" || name == "NCCL_LL128_C2C" || name == "NCCL_NVLS_CHUNKSIZE")) {
      throw Error(fmt::format(
          "{} does not exist in NCCL 2.18 (it came later; the emulation is at --nccl-version 2.18)",
          name));
    }
    it->second(name, value, info, ch);
  }
  // connect.cc: channels are capped by min(NCCL_MAX_NCHANNELS, maxCTAs) and then copied up to
  // max(NCCL_MIN_NCHANNELS, minCTAs); parseCommConfig makes min = max when min > max.
  info.max_ctas = std::min(ch.max_ctas, ch.max_nch);
  info.min_ctas = std::max(ch.min_ctas, ch.min_nch);
}

}  // namespace lagom::nccl
