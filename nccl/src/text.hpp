// Internal: the string helpers NCCL's own parsers use (case-insensitive compare, strtok split).
#pragma once

#include <cctype>
#include <string_view>
#include <vector>

namespace lagom::nccl::internal {

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// strtok-like split: empty tokens are skipped, as strtok_r does.
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find(sep, i);
    if (j == std::string_view::npos) {
      j = s.size();
    }
    if (j > i) {
      out.push_back(s.substr(i, j - i));
    }
    i = j + 1;
  }
  return out;
}

}  // namespace lagom::nccl::internal
