// Resolving partially pinned NCCL configurations (see config_override.hpp).
#include "lagom/nccl/config_override.hpp"

#include <fmt/format.h>

#include "lagom/common/error.hpp"
#include "lagom/nccl/legality.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::nccl {
namespace {

constexpr Algorithm kAlgorithms[] = {
    Algorithm::kTree,         Algorithm::kRing, Algorithm::kCollNetDirect,
    Algorithm::kCollNetChain, Algorithm::kNvls, Algorithm::kNvlsTree,
    Algorithm::kPat};
constexpr Protocol kProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

}  // namespace

CommConfig resolve_config(const Tables& tables, CollKind kind, std::int64_t bytes,
                          const ConfigOverride& pin) {
  CommConfig cfg = choose(tables, kind, bytes).config;
  if (pin.algo || pin.proto) {
    if (is_tuned(kind)) {
      // The fastest (algorithm, protocol) allowed by the pin, by NCCL's cost model.
      std::optional<std::pair<Algorithm, Protocol>> best;
      double best_us = 0;
      for (Algorithm a : kAlgorithms) {
        for (Protocol p : kProtocols) {
          if ((pin.algo && a != *pin.algo) || (pin.proto && p != *pin.proto)) {
            continue;
          }
          const double t = algo_time_us(tables, kind, a, p, bytes);
          if (t >= 0 && (!best || t < best_us)) {
            best = std::make_pair(a, p);
            best_us = t;
          }
        }
      }
      if (!best) {
        // Nothing enabled: say why with the first pinned combination.
        const Algorithm a = pin.algo.value_or(cfg.algo);
        const Protocol p = pin.proto.value_or(Protocol::kSimple);
        constexpr std::int64_t kAnyGrain = 7680;  // a multiple of every protocol's grain
        auto why = why_illegal(tables, kind, CommConfig{a, p, cfg.transport, 1, 512, kAnyGrain});
        throw Error(why ? *why
                        : fmt::format("{} with {}{}{} is disabled on this communicator",
                                      to_string(kind), pin.algo ? to_string(*pin.algo) : "",
                                      pin.algo && pin.proto ? "/" : "",
                                      pin.proto ? to_string(*pin.proto) : ""));
      }
      cfg = config_for(tables, kind, best->first, best->second, bytes, pin.nchannels);
    } else {
      if (pin.algo && *pin.algo != Algorithm::kRing) {
        throw Error(
            fmt::format("{} runs on NCCL's p2p path; only Ring (the p2p schedule) "
                        "applies, not {}",
                        to_string(kind), to_string(*pin.algo)));
      }
      if (pin.proto && *pin.proto != cfg.proto) {
        if (*pin.proto == Protocol::kLL || *pin.proto == Protocol::kSimple) {
          // Its chunk is sized for the protocol (LL's buffer holds a fraction of Simple's chunk).
          cfg = p2p_config_for(tables, kind, *pin.proto, bytes);
        } else {
          cfg.proto = *pin.proto;  // LL128: the legality check below refuses it, naming why
        }
      }
    }
  }
  if (pin.nchannels > 0) {
    cfg.nchannels = pin.nchannels;
  }
  if (pin.nthreads > 0) {
    cfg.nthreads = pin.nthreads;
  }
  if (pin.chunk_bytes > 0) {
    cfg.chunk_bytes = pin.chunk_bytes;
  }
  if (auto why = why_illegal(tables, kind, cfg)) {
    throw Error(*why);
  }
  return cfg;
}

}  // namespace lagom::nccl
