// What every libFuzzer harness shares: the input as text, and the rule that a reader may answer
// bad input only with lagom::Error. Any other exception, a crash, a leak or undefined behaviour
// is a finding (docs/RELIABILITY.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "lagom/common/error.hpp"

namespace lagom::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property every accepted input must have; a violation aborts as a finding.
inline void require(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "finding: %s\n", what);
    std::abort();
  }
}

// Reads back what Lagom itself wrote for an accepted input: a lagom::Error here is a finding
// (the writer produced text the reader refuses), not bad input.
template <class Read>
auto reread(Read read, const char* what) {
  try {
    return read();
  } catch (const lagom::Error& e) {
    std::fprintf(stderr, "finding: %s: %s\n", what, e.what());
    std::abort();
  }
}

// Runs `read` on one input: lagom::Error is the expected answer to bad input; anything else
// that escapes aborts, so that libFuzzer records the input.
template <class Read>
int guarded(Read read) {
  try {
    read();
  } catch (const lagom::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: a reader let a %s escape: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}

// Every harness is a function `int <name>(const std::uint8_t*, std::size_t)` declared in
// harnesses.hpp. The fuzz build (LAGOM_FUZZ_MAIN) makes it the executable's libFuzzer entry
// point; the test suite calls it on every seed and every past finding (tests/fuzz/).
#ifdef LAGOM_FUZZ_MAIN
#define LAGOM_FUZZ_ENTRY(harness)                                                     \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return harness(data, size);                                                       \
  }
#else
#define LAGOM_FUZZ_ENTRY(harness)
#endif

}  // namespace lagom::fuzz
