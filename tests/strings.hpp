// Text helpers shared by the test suites (one definition, so that unity builds do not clash).
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::test {

inline bool contains(const std::string& s, std::string_view what) {
  return s.find(what) != std::string::npos;
}

// The lines of `text` without their line breaks; a last line without one counts too.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

}  // namespace lagom::test
