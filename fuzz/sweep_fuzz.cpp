// Fuzzes the sweep file reader (docs/sweep.md): the document, its axes, zip and product
// expansion, overrides and the command's known options; every point's arguments are built.
#include "../cli/commands.hpp"
#include "fuzz_util.hpp"
#include "harnesses.hpp"

int lagom::fuzz::sweep(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded(
      [&] {  // At most 10,000 points: a few hundred bytes can legally ask for a million, whose
        // arguments take a gigabyte, which the fuzzer would report as a memory finding.
        (void)lagom::cli::check_sweep(lagom::fuzz::text_of(data, size), "fuzz.json", 10000);
      });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::sweep)
