// Fuzzes the `--parallel` spec parser ("tp=8,sp,pp=4,vpp=2,dp=4,zero=1") and, for what it
// accepts, its canonical spelling, which must parse back to itself.
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/models/generator.hpp"

int lagom::fuzz::parallel_spec(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const lagom::models::Parallelism p =
        lagom::models::parse_parallelism(lagom::fuzz::text_of(data, size));
    const std::string once = lagom::models::to_string(p);
    if (once == "single GPU") {  // how to_string names tp=pp=dp=ep=1: a label, not a spec
      return;
    }
    lagom::fuzz::require(
        lagom::fuzz::reread(
            [&] { return lagom::models::to_string(lagom::models::parse_parallelism(once)); },
            "our spelling of a parallelism is refused") == once,
        "a parallelism's spelling does not parse back to itself");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::parallel_spec)
