// Fuzzes `lagom overlap --compute` ("gemm:m=8192,n=8192,k=8192,repeat=4", "ffn:...",
// "elementwise:elems=1e8"): shapes, products that overflow, repeat counts.
#include "../cli/overlap_bench.hpp"
#include "fuzz_util.hpp"
#include "harnesses.hpp"

int lagom::fuzz::compute_spec(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded(
      [&] { (void)lagom::cli::parse_compute(std::string(lagom::fuzz::text_of(data, size))); });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::compute_spec)
