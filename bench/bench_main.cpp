// Entry point of lagom_bench; the benchmarks register themselves in their own files.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
