// Internal: NCCL_ALGO / NCCL_PROTO list parsing, as tuning.cc's parseList reads them.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <string_view>

#include "lagom/common/error.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "text.hpp"

namespace lagom::nccl::internal {

// parseList (tuning.cc): "[func:]elem,elem;func:^elem,...". Writes list[func][elem] = 1 (set) or
// 0 (unset), starting from `list`'s current values (1/2 defaults). Throws like NCCL's
// ncclInvalidUsage.
template <std::size_t N>
void parse_list(std::string_view str, std::string_view what, const std::string_view (&elems)[N],
                std::array<std::array<int, N>, kTunedCollCount>& list) {
  const auto entries = split(str, ';');
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const auto parts = split(entries[k], ':');
    std::string_view prefix;
    std::string_view elem_list;
    if (parts.size() >= 2) {
      prefix = parts[0];
      elem_list = parts[1];
    } else {
      if (k != 0 || parts.empty()) {
        throw Error(fmt::format(
            "{}=\"{}\": all entries except the first must have a function prefix", what, str));
      }
      elem_list = parts[0];
    }
    int set = 1;
    int unset = 0;
    if (!elem_list.empty() && elem_list.front() == '^') {
      set = 0;
      unset = 1;
      elem_list.remove_prefix(1);
    }
    bool found_prefix = false;
    for (int f = 0; f < kTunedCollCount; ++f) {
      if (!prefix.empty() && !iequals(prefix, to_string(static_cast<CollKind>(f)))) {
        continue;
      }
      found_prefix = true;
      for (std::size_t e = 0; e < N; ++e) {
        list[f][e] = unset;
      }
      for (std::string_view token : split(elem_list, ',')) {
        std::size_t e = 0;
        while (e < N && !iequals(token, elems[e])) {
          ++e;
        }
        if (e == N) {
          throw Error(
              fmt::format("{}=\"{}\": unrecognized element token \"{}\"", what, str, token));
        }
        list[f][e] = set;
      }
    }
    if (!found_prefix) {
      throw Error(fmt::format("{}=\"{}\": unrecognized function prefix \"{}\"", what, str, prefix));
    }
  }
}

}  // namespace lagom::nccl::internal
