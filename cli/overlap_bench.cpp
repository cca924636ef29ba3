// The overlap microbenchmark (overlap_bench.hpp).
#include "overlap_bench.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <sstream>

#include "lagom/common/error.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/sim/simulation.hpp"

namespace lagom::cli {

using models::Kernel;

namespace {

constexpr int kBf16 = 2;  // bytes per element

// An activation over `elems` bf16 values (read once, written once), a handful of operations
// each, as the step generators emit it.
Kernel activation(double elems) {
  return models::stream(traces::ComputeClass::kElementwise, elems, 8, 1, 1, kBf16);
}

// "gemm:m=8192,n=8192,k=8192" | "ffn:tokens=4096,hidden=2560,ffn=10240" |
// "elementwise:elems=1e8"; any of them with ",repeat=N".
}  // namespace

std::vector<Kernel> parse_compute(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  std::map<std::string, double> args;
  if (colon != std::string::npos) {
    std::stringstream in(spec.substr(colon + 1));
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) {
        throw Error(fmt::format("--compute '{}': '{}' is not key=value", spec, item));
      }
      const std::string key = item.substr(0, eq);
      const std::string val = item.substr(eq + 1);
      // Shapes up to 2^24 per dimension, element counts up to 1e13, repeats up to 1000; the
      // total work is bounded below.
      const double limit = key == "elems" ? 1e13 : key == "repeat" ? 1000 : 16777216;
      // The spec is named only when a value is refused: formatting it per item made a long spec
      // quadratic to parse (the fuzzer's 16 KB specs ran at 930/s).
      try {
        args[key] = key == "repeat" ? static_cast<double>(parse_integer(val, key, 1, 1000))
                                    : parse_real(val, key, 1, limit);
      } catch (const Error& e) {
        throw Error(fmt::format("--compute '{}': {}", spec, e.what()));
      }
    }
  }
  auto need = [&](const char* key) {
    auto it = args.find(key);
    if (it == args.end()) {
      throw Error(fmt::format("--compute '{}': missing {}=", spec, key));
    }
    const double v = it->second;
    args.erase(it);
    return v;
  };
  double repeat = 1;
  if (auto it = args.find("repeat"); it != args.end()) {
    repeat = it->second;
    args.erase(it);
  }
  std::vector<Kernel> one;
  if (kind == "gemm") {
    const double m = need("m");
    const double n = need("n");
    const double k = need("k");
    one.push_back(models::gemm(m, n, k, kBf16));
  } else if (kind == "ffn") {
    // A transformer MLP block: up-projection, activation, down-projection.
    const double tokens = need("tokens");
    const double hidden = need("hidden");
    const double ffn = need("ffn");
    one.push_back(models::gemm(tokens, ffn, hidden, kBf16));
    one.push_back(activation(tokens * ffn));
    one.push_back(models::gemm(tokens, hidden, ffn, kBf16));
  } else if (kind == "elementwise") {
    one.push_back(activation(need("elems")));
  } else {
    throw Error(
        fmt::format("--compute '{}': unknown kernel '{}' (gemm, ffn, elementwise)", spec, kind));
  }
  if (!args.empty()) {
    throw Error(fmt::format("--compute '{}': unknown parameter '{}'", spec, args.begin()->first));
  }
  // The work in all, so that no kernel time can overflow the engine's nanoseconds (1e18 FLOPs
  // is hours on any GPU).
  double flops = 0;
  double bytes = 0;
  for (const Kernel& k : one) {
    flops += k.shape.flops * repeat;
    bytes += k.bytes * repeat;
  }
  if (flops > 1e18 || bytes > 1e18) {
    throw Error(
        fmt::format("--compute '{}': {:.3g} FLOPs and {:.3g} bytes in all; at most 1e18 "
                    "of each",
                    spec, flops, bytes));
  }
  std::vector<Kernel> out;
  for (int r = 0; r < static_cast<int>(repeat); ++r) {
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

traces::Workload overlap_workload(int nranks, std::span<const OverlapComm> comms,
                                  std::span<const Kernel> kernels, bool with_comm,
                                  bool with_compute) {
  traces::WorkloadBuilder b(static_cast<std::uint32_t>(nranks));
  std::vector<traces::Rank> all(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    all[static_cast<std::size_t>(r)] = static_cast<traces::Rank>(r);
  }
  const traces::GroupId g = b.add_group("all", all);
  for (int r = 0; r < nranks; ++r) {
    const auto rank = static_cast<traces::Rank>(r);
    if (with_compute) {
      const traces::StreamId s = b.add_stream(rank, "compute");
      for (const Kernel& k : kernels) {
        const traces::OpId op =
            b.add_op(s, traces::OpSpec{traces::OpKind::kCompute, static_cast<std::int64_t>(k.bytes),
                                       traces::kNoGroup, traces::kNoPeer, traces::kNoDuration});
        b.set_compute_shape(op, k.shape);
      }
    }
    if (with_comm) {
      const traces::StreamId s = b.add_stream(rank, "comm");
      for (const OverlapComm& c : comms) {
        const traces::OpId op =
            b.add_op(s, traces::OpSpec{c.kind, c.bytes, g, traces::kNoPeer, traces::kNoDuration});
        if (!c.pin.empty()) {
          b.pin_config(op, c.pin);
        }
      }
    }
  }
  return std::move(b).build("lagom overlap");
}

OverlapTimes run_overlap(const Hardware& h, int nranks, std::span<const OverlapComm> comms,
                         std::span<const Kernel> kernels, bool with_comm, bool with_compute) {
  const traces::Workload w = overlap_workload(nranks, comms, kernels, with_comm, with_compute);
  sim::Simulation simulation(w, h.cluster, h.profile);
  const sim::SimResult r = simulation.run();
  OverlapTimes t;
  t.makespan_us = r.step_time.us();
  for (traces::StreamId s = w.first_stream(0); s < w.last_stream(0); ++s) {
    const traces::Stream& st = w.stream(s);
    if (st.op_count == 0) {
      continue;
    }
    const Time begin = r.ops[st.first_op].start;
    const Time end = r.ops[st.first_op + st.op_count - 1].end;
    if (st.name == "comm") {
      t.comm_span_us = (end - begin).us();
      for (std::uint32_t i = 0; i < st.op_count; ++i) {
        t.comm_us.push_back((r.ops[st.first_op + i].end - r.ops[st.first_op + i].start).us());
      }
    } else {
      t.compute_us = (end - begin).us();
    }
  }
  return t;
}

}  // namespace lagom::cli
