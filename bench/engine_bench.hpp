// Registration of the engine benchmarks (they need data built at start-up).
#pragma once

namespace lagom::bench {
void register_engine_benchmarks();
void register_generator_benchmarks();
void register_search_benchmarks();
}  // namespace lagom::bench
