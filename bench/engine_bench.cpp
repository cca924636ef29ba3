// Engine throughput (events/s) on synthetic steps from 1 to 16,384 ranks, against a bare
// std::priority_queue processing the same number of same-sized events at the same heap size.
//
// An "event" is one record of the event stream the fingerprint hashes: an op starting or an op
// ending (2 per op). The engine keeps only completions of running activities in its heap (one
// per compute op, one per collective or send/recv instance however many ranks it spans), and
// starts ops synchronously; the "completions" counter is that heap traffic.
#include "engine_bench.hpp"

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <queue>
#include <random>
#include <string>

#include "lagom/sim/engine.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "synthetic.hpp"

namespace lagom::bench {
namespace {

struct Prepared {
  traces::Workload w;
  traces::ExecutionGraph g;
  std::uint64_t records = 0;  // 2 per op: start and end
};

// The same 24-byte event the engine queues, ordered the same way.
struct HeapEvent {
  std::int64_t time;
  std::uint64_t seq;
  std::uint32_t slot;
  std::uint32_t version;
};
struct Later {
  bool operator()(const HeapEvent& a, const HeapEvent& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

void engine_run(benchmark::State& state, const Prepared* p) {
  std::uint64_t completions = 0;
  for (auto _ : state) {
    sim::Engine engine(p->w, p->g);
    sim::SimResult r = engine.run();
    completions = r.events;
    benchmark::DoNotOptimize(r.step_time);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(p->records * state.iterations()));
  state.counters["events"] = static_cast<double>(p->records);
  state.counters["completions"] = static_cast<double>(completions);
  state.counters["completions_per_s"] =
      benchmark::Counter(static_cast<double>(completions) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

// Hold model: a heap of `live` events; each step pops the earliest and pushes a successor at a
// random later time, `total` times.
void heap_baseline(benchmark::State& state, std::size_t live, std::uint64_t total) {
  for (auto _ : state) {
    state.PauseTiming();
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<std::int64_t> dt(10'000, 400'000);
    std::vector<HeapEvent> init;
    init.reserve(live);
    std::uint64_t seq = 0;
    for (std::size_t i = 0; i < live; ++i) {
      init.push_back({dt(rng), seq++, static_cast<std::uint32_t>(i), 0});
    }
    std::priority_queue<HeapEvent, std::vector<HeapEvent>, Later> heap(Later(), std::move(init));
    state.ResumeTiming();
    for (std::uint64_t i = 0; i < total; ++i) {
      HeapEvent e = heap.top();
      heap.pop();
      e.time += dt(rng);
      e.seq = seq++;
      heap.push(e);
    }
    benchmark::DoNotOptimize(heap.top());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(total * state.iterations()));
}

std::int64_t peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// The scale target: 16,384 ranks, ~50 million ops, built, analysed and simulated once.
void scale_run(benchmark::State& state, std::uint32_t ranks, std::uint32_t layers) {
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    traces::Workload w = synthetic_step({ranks, layers, 8, 1});
    const auto t1 = std::chrono::steady_clock::now();
    traces::ExecutionGraph g = traces::analyze(w);
    const auto t2 = std::chrono::steady_clock::now();
    sim::Engine engine(w, g);
    sim::SimResult r = engine.run();
    const auto t3 = std::chrono::steady_clock::now();
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    state.counters["ops"] = static_cast<double>(w.op_count());
    state.counters["events"] = 2.0 * static_cast<double>(w.op_count());
    state.counters["completions"] = static_cast<double>(r.events);
    state.counters["build_s"] = secs(t0, t1);
    state.counters["analyze_s"] = secs(t1, t2);
    state.counters["simulate_s"] = secs(t2, t3);
    state.counters["events_per_s"] = 2.0 * static_cast<double>(w.op_count()) / secs(t2, t3);
    state.counters["workload_GB"] = static_cast<double>(w.memory_bytes()) / 1e9;
    state.counters["graph_GB"] = static_cast<double>(g.memory_bytes()) / 1e9;
    state.counters["peak_rss_GB"] = static_cast<double>(peak_rss_kib()) * 1024.0 / 1e9;
  }
}

}  // namespace

void register_engine_benchmarks() {
  // 1 to 16,384 ranks; ~256 ops per rank, except the largest sizes which keep the total near
  // two million ops so that `make bench` stays quick.
  for (std::uint32_t ranks : {1u, 8u, 64u, 1024u, 16384u}) {
    const std::uint32_t layers = ranks >= 1024 ? std::max(1u, 2'000'000u / (ranks * 4)) : 64;
    // Leaked on purpose: registered benchmarks keep a pointer until the process exits.
    auto* p = new Prepared{synthetic_step({ranks, layers, 8, 1}), {}, 0};
    p->g = traces::analyze(p->w);
    p->records = 2ULL * p->w.op_count();
    const std::string tag = "/ranks:" + std::to_string(ranks);
    benchmark::RegisterBenchmark(("BM_Engine" + tag).c_str(), engine_run, p)
        ->Unit(benchmark::kMillisecond);
    // Same event count, heap as full as the engine's (one live event per stream).
    benchmark::RegisterBenchmark(("BM_HeapBaseline" + tag).c_str(), heap_baseline,
                                 p->w.streams().size(), p->records)
        ->Unit(benchmark::kMillisecond);
  }
  if (const char* env = std::getenv("LAGOM_BENCH_SCALE"); env != nullptr && env[0] == '1') {
    // 16,384 ranks x 763 layers x 4 ops = 50,003,968 ops.
    benchmark::RegisterBenchmark("BM_Scale/ranks:16384/ops:50M", scale_run, 16384u, 763u)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  }
}

}  // namespace lagom::bench
