// Registration of the engine benchmarks (they need data built at start-up).
#pragma once

namespace lagom::bench {
void register_engine_benchmarks();
void register_generator_benchmarks();
// Chakra trace sets (bench/chakra_bench.cpp).
void register_chakra_benchmarks();
void register_search_benchmarks();
}  // namespace lagom::bench
