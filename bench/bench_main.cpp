// Entry point of lagom_bench. Benchmarks that need prepared data register here, before running.
// LAGOM_BENCH_SCALE=1 adds the 16,384-rank, 50-million-op scale run (about a minute).
#include <benchmark/benchmark.h>

#include "engine_bench.hpp"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  lagom::bench::register_engine_benchmarks();
  lagom::bench::register_generator_benchmarks();
  lagom::bench::register_search_benchmarks();
  lagom::bench::register_chakra_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
