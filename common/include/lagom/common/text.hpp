// Small text helpers shared by the readers and the command line.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace lagom {

// `text` in ASCII lower case (names are matched case-insensitively: "AutoCCL", "FIXED-NC:4").
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

}  // namespace lagom
