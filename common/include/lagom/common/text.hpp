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

// A CSV cell (RFC 4180): as is, or in double quotes with inner quotes doubled when it holds a
// comma, a quote or a line break.
inline std::string csv_quote(std::string_view cell) {
  if (cell.find_first_of(",\"\n\r") == std::string_view::npos) {
    return std::string(cell);
  }
  std::string q = "\"";
  for (char c : cell) {
    q += c;
    if (c == '"') {
      q += '"';
    }
  }
  return q + "\"";
}

}  // namespace lagom
