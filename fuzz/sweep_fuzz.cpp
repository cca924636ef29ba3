// Fuzzes the sweep file reader (docs/sweep.md): the document, its axes, zip and product
// expansion, overrides and the command's known options; every point's arguments are built.
#include "../cli/commands.hpp"
#include "fuzz_util.hpp"
#include "harnesses.hpp"

int lagom::fuzz::sweep(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded(
      [&] { (void)lagom::cli::check_sweep(lagom::fuzz::text_of(data, size), "fuzz.json"); });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::sweep)
