// Human and JSON reports of a simulated step.
#include "report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <optional>
#include <ostream>

#include "lagom/common/build_info.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/text.hpp"
#include "lagom/common/units.hpp"

namespace lagom::cli {
namespace {

// Per-rank tables and overlap group lists are printed for up to this many ranks.
constexpr traces::Rank kMaxRanksListed = 8;

double us(Time t) {
  return t.us();
}

std::string pct(Time part, Time whole) {
  if (whole.count_ns() == 0) {
    return "-";
  }
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part.count_ns()) /
                                    static_cast<double>(whole.count_ns()));
}

// Only when some compute and communication ran together; the totals are sums over groups.
void print_overlap(std::ostream& out, const sim::OverlapStats& o) {
  if (o.groups.empty()) {
    return;
  }
  fmt::print(out,
             "overlap      {} group{} (compute and communication running together on a rank)\n",
             o.groups.size(), o.groups.size() == 1 ? "" : "s");
  fmt::print(out, "             X (comm) {}, Y (compute) {}, Z (span) {}\n",
             format_duration(o.comm.count_ns_double()),
             format_duration(o.compute.count_ns_double()),
             format_duration(o.makespan.count_ns_double()));
  fmt::print(
      out,
      "             compute slowdown mean {:.3f}x, max {:.3f}x; communication mean {:.3f}x\n\n",
      o.compute_slowdown_mean, o.compute_slowdown_max, o.comm_slowdown_mean);
}

nlohmann::ordered_json overlap_json(const traces::Workload& w, const sim::OverlapStats& o) {
  nlohmann::ordered_json j;
  j["groups"] = o.groups.size();
  j["X_us"] = us(o.comm);
  j["Y_us"] = us(o.compute);
  j["Z_us"] = us(o.makespan);
  j["compute_slowdown_mean"] = o.compute_slowdown_mean;
  j["compute_slowdown_max"] = o.compute_slowdown_max;
  j["comm_slowdown_mean"] = o.comm_slowdown_mean;
  if (w.rank_count() > kMaxRanksListed) {
    j["group_list_omitted"] = true;
    return j;
  }
  auto& list = j["group_list"] = nlohmann::ordered_json::array();
  for (const sim::OverlapGroup& g : o.groups) {
    nlohmann::ordered_json gj;
    gj["rank"] = g.rank;
    gj["start_us"] = us(g.start);
    gj["end_us"] = us(g.end);
    gj["X_us"] = us(g.comm);
    gj["Y_us"] = us(g.compute);
    gj["Z_us"] = us(g.makespan());
    auto& ops = gj["ops"] = nlohmann::ordered_json::array();
    for (traces::OpId op : o.ops_of(g)) {
      ops.push_back(w.name(op));
    }
    list.push_back(std::move(gj));
  }
  return j;
}

}  // namespace

nlohmann::ordered_json context_block(std::string_view command,
                                     const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json c;
  c["lagom_version"] = std::string(version());
  c["git_sha"] = std::string(git_sha());
  c["command"] = std::string(command);
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) {
      c[key] = value;
    }
  }
  return c;
}

nlohmann::ordered_json context_json(const RunContext& ctx) {
  nlohmann::ordered_json c = context_block(ctx.command);
  c["workload"] = ctx.workload_source;
  c["input_hash"] = ctx.input_hash;
  c["cost_model"] = ctx.cost_model;
  c["contention_model"] = ctx.contention_model;
  if (!ctx.generated.empty()) {
    c["generated"] = ctx.generated;
  }
  if (!ctx.plan.empty()) {
    c["plan"] = ctx.plan;
  }
  if (!ctx.overrides.empty()) {
    c["overrides"] = ctx.overrides;
  }
  return c;
}

namespace {

void flatten(const nlohmann::ordered_json& v, const std::string& key,
             std::vector<std::pair<std::string, std::string>>& cells) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) {
      flatten(child, key.empty() ? k : key + "_" + k, cells);
    }
    return;
  }
  std::string cell;
  if (v.is_string()) {
    cell = csv_quote(v.get<std::string>());
  } else if (v.is_number_integer()) {
    cell = std::to_string(v.get<std::int64_t>());
  } else if (v.is_number()) {
    cell = fmt::format("{}", v.get<double>());
  } else if (v.is_boolean()) {
    cell = v.get<bool>() ? "true" : "false";
  } else if (!v.is_null()) {
    cell = csv_quote(v.dump());
  }
  cells.emplace_back(key, std::move(cell));
}

}  // namespace

void write_rows_csv(const std::string& path, const nlohmann::ordered_json& rows) {
  write_file_with(
      path,
      [&](std::ostream& out) {
        bool header = true;
        for (const auto& row : rows) {
          std::vector<std::pair<std::string, std::string>> cells;
          flatten(row, "", cells);
          if (header) {
            for (std::size_t i = 0; i < cells.size(); ++i) {
              out << (i ? "," : "") << cells[i].first;
            }
            out << "\n";
            header = false;
          }
          for (std::size_t i = 0; i < cells.size(); ++i) {
            out << (i ? "," : "") << cells[i].second;
          }
          out << "\n";
        }
      },
      "CSV file");
}

namespace {

// What a step's time buys: tokens/s (generated steps), TFLOP/s per GPU and MFU (with hardware),
// and with --tokens the training run's time and GPU-hours. Zero where unknown.
struct Throughput {
  double gpus = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double train_seconds = 0;
  double gpu_hours = 0;
};

Throughput throughput_of(const traces::Workload& w, const sim::SimResult& r, const RunContext& ctx,
                         double flops) {
  Throughput t;
  const double step_s = r.step_time.count_ns_double() * 1e-9;
  t.gpus = static_cast<double>(w.rank_count()) * ctx.folded_replicas;
  if (step_s <= 0) {
    return t;
  }
  if (ctx.tokens_per_step) {
    t.tokens_per_s = *ctx.tokens_per_step / step_s;
  }
  if (flops > 0 && ctx.peak_flops_per_gpu > 0) {
    t.tflops_per_gpu = flops / (step_s * w.rank_count()) / 1e12;
    t.mfu = flops / (step_s * w.rank_count() * ctx.peak_flops_per_gpu);
  }
  if (ctx.train_tokens && t.tokens_per_s > 0) {
    t.train_seconds = *ctx.train_tokens / t.tokens_per_s;
    t.gpu_hours = t.train_seconds / 3600 * t.gpus;
  }
  return t;
}

// The step breakdown (sim::Breakdown), mean per GPU, with shares of the step.
// The step breakdown (sim::Breakdown), mean per GPU with shares of the step, and where ranks
// differ (pipeline stages, stragglers) the range over ranks.
void print_breakdown(std::ostream& out, const sim::StepStats& s) {
  const double step = std::max(1.0, s.step_time.count_ns_double());
  fmt::print(out, "breakdown    per GPU (mean over ranks; sums to the step time):\n");
  using Part = Time sim::Breakdown::*;
  const std::pair<const char*, Part> parts[] = {
      {"compute", &sim::Breakdown::compute},
      {"exposed communication", &sim::Breakdown::exposed_comm},
      {"pipeline bubble", &sim::Breakdown::pipeline_bubble},
      {"waiting on peers", &sim::Breakdown::peer_wait},
      {"idle", &sim::Breakdown::idle}};
  for (const auto& [name, part] : parts) {
    const Time mean = s.breakdown.*part;
    std::string range;
    if (!s.ranks.empty()) {
      const auto [lo, hi] =
          std::minmax_element(s.ranks.begin(), s.ranks.end(),
                              [part = part](const sim::RankStats& a, const sim::RankStats& b) {
                                return a.breakdown.*part < b.breakdown.*part;
                              });
      if (lo->breakdown.*part != hi->breakdown.*part) {
        range = fmt::format(
            "   ranks {} (rank {}) to {} (rank {})",
            format_duration((lo->breakdown.*part).count_ns_double()), lo - s.ranks.begin(),
            format_duration((hi->breakdown.*part).count_ns_double()), hi - s.ranks.begin());
      }
    }
    fmt::print(out, "  {:<23}{:>12} {:>6.1f}%{}\n", name, format_duration(mean.count_ns_double()),
               100.0 * mean.count_ns_double() / step, range);
  }
}

nlohmann::ordered_json breakdown_json(const sim::Breakdown& b) {
  return {{"compute_us", us(b.compute)},
          {"exposed_comm_us", us(b.exposed_comm)},
          {"pipeline_bubble_us", us(b.pipeline_bubble)},
          {"peer_wait_us", us(b.peer_wait)},
          {"idle_us", us(b.idle)}};
}

}  // namespace

void print_summary(std::ostream& out, const traces::Workload& w, const traces::ExecutionGraph& g,
                   const sim::SimResult& r, const sim::StepStats& s, const RunContext& ctx) {
  fmt::print(out, "lagom {} ({}) simulate\n", version(), git_sha());
  fmt::print(out, "workload     {}: {} ranks, {} streams, {} ops, {} communication instances\n",
             ctx.workload_source, w.rank_count(), w.streams().size(), w.op_count(),
             g.instance_count());
  fmt::print(out, "models       cost: {}; contention: {}\n\n", ctx.cost_model,
             ctx.contention_model);
  if (!ctx.generated.empty()) {
    fmt::print(out, "generated    {}\n", ctx.generated);
  }
  if (!ctx.overrides.empty()) {
    fmt::print(out, "what-if      {}\n", fmt::join(ctx.overrides, ", "));
  }
  if (!ctx.plan.empty()) {
    fmt::print(out, "plan         {}\n", ctx.plan);
  }
  if (ctx.folded_replicas > 1) {
    fmt::print(out,
               "folded       each rank stands for {} identical data-parallel replicas ({} "
               "GPUs)\n",
               ctx.folded_replicas,
               static_cast<std::int64_t>(w.rank_count()) * ctx.folded_replicas);
  }
  fmt::print(out, "step time    {}\n", format_duration(r.step_time.count_ns_double()));
  print_breakdown(out, s);
  const sim::WorkFigures& work = s.work;
  const double flops = ctx.model_flops.value_or(work.flops);
  const Throughput t = throughput_of(w, r, ctx, flops);
  if (t.tokens_per_s > 0 || t.mfu > 0) {
    std::vector<std::string> parts;
    if (t.tokens_per_s > 0) {
      parts.push_back(fmt::format("{} tokens/s", format_count(t.tokens_per_s)));
    }
    if (t.tflops_per_gpu > 0) {
      parts.push_back(fmt::format("{:.4g} TFLOP/s per GPU", t.tflops_per_gpu));
    }
    if (t.mfu > 0) {
      parts.push_back(fmt::format("MFU {:.1f}%", 100.0 * t.mfu));
    }
    fmt::print(out, "throughput   {} ({:.3g} model FLOPs per step)\n", fmt::join(parts, ", "),
               flops * ctx.folded_replicas);
  }
  if (t.train_seconds > 0) {
    fmt::print(out, "training     {:.4g} tokens: {} on {} GPUs, {} GPU-hours\n", *ctx.train_tokens,
               format_duration(t.train_seconds * 1e9), t.gpus, format_count(t.gpu_hours));
  }
  if (ctx.memory) {
    const models::MemoryEstimate& m = *ctx.memory;
    // With a pipeline, where the activations peak: stage and forward passes in flight.
    const std::string held = m.forward_passes_in_flight > 1
                                 ? fmt::format(" for {} forward passes in flight on stage {}",
                                               m.forward_passes_in_flight, m.activation_stage)
                                 : "";
    fmt::print(out,
               "memory       {:.1f} GB per GPU (weights {:.1f}, gradients {:.1f}, optimizer "
               "{:.1f}, activations {:.1f}{}, buffers {:.1f})\n",
               m.total() / 1e9, m.weights / 1e9, m.gradients / 1e9, m.optimizer / 1e9,
               m.activations / 1e9, held, m.buffers / 1e9);
  }
  fmt::print(out, "events       {}\n", r.events);
  fmt::print(out, "fingerprint  {}\n\n", hex64(r.fingerprint));
  print_overlap(out, s.overlap);

  if (w.rank_count() <= kMaxRanksListed) {
    fmt::print(out, "{:>4}  {:<16} {:>5} {:>14} {:>14} {:>7} {:>14}\n", "rank", "stream", "ops",
               "busy_us", "idle_us", "busy", "comm_wait_us");
    for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
      for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
        const sim::StreamStats& ss = s.streams[sid];
        fmt::print(out, "{:>4}  {:<16} {:>5} {:>14} {:>14} {:>7} {:>14}\n", rank,
                   w.stream(sid).name, ss.ops, format_us(ss.busy.count_ns()),
                   format_us(ss.idle.count_ns()), pct(ss.busy, s.step_time),
                   format_us(ss.comm_wait.count_ns()));
      }
      const sim::RankStats& rs = s.ranks[rank];
      fmt::print(out, "{:>4}  {:<16} {:>5} {:>14} {:>14} {:>7}\n", "", "(any stream)", "",
                 format_us(rs.busy.count_ns()), format_us(rs.idle.count_ns()),
                 pct(rs.busy, s.step_time));
    }
  } else {
    std::vector<Time> busy;
    for (const sim::RankStats& rs : s.ranks) {
      busy.push_back(rs.busy);
    }
    std::sort(busy.begin(), busy.end());
    fmt::print(out, "rank busy time (any stream): min {}, median {}, max {}\n",
               format_duration(busy.front().count_ns_double()),
               format_duration(busy[busy.size() / 2].count_ns_double()),
               format_duration(busy.back().count_ns_double()));
    fmt::print(out, "(per-rank tables are printed for up to {} ranks; use --json for all)\n",
               kMaxRanksListed);
  }
}

nlohmann::ordered_json json_report(const traces::Workload& w, const traces::ExecutionGraph& g,
                                   const sim::SimResult& r, const sim::StepStats& s,
                                   const RunContext& ctx, bool include_ops) {
  nlohmann::ordered_json j;
  j["context"] = context_json(ctx);
  j["step_time_us"] = us(r.step_time);
  j["events"] = r.events;
  j["fingerprint"] = hex64(r.fingerprint);
  j["workload"] = {{"ranks", w.rank_count()},
                   {"streams", w.streams().size()},
                   {"ops", w.op_count()},
                   {"groups", w.groups().size()},
                   {"communication_instances", g.instance_count()}};
  // What the step did (sim::WorkFigures) and, with hardware and a generated step, how well.
  const sim::WorkFigures& work = s.work;
  // With folding every simulated rank stands for `folded_replicas` GPUs.
  const double fold = ctx.folded_replicas;
  if (ctx.folded_replicas > 1) {
    j["folded_replicas"] = ctx.folded_replicas;
    j["gpus"] = static_cast<double>(w.rank_count()) * fold;
  }
  const double flops = ctx.model_flops.value_or(work.flops);
  j["flops"] = flops * fold;
  auto& bytes = j["comm_bytes"] = nlohmann::ordered_json::object();
  for (int k = 0; k < traces::kOpKindCount; ++k) {
    const auto kind = static_cast<traces::OpKind>(k);
    if (traces::is_comm(kind)) {
      bytes[std::string(traces::to_string(kind))] =
          work.comm_bytes[static_cast<std::size_t>(k)] * fold;
    }
  }
  j["compute_us"] = us(work.compute_mean);
  j["exposed_comm_us"] = us(work.exposed_comm_mean);
  j["exposed_comm_max_us"] = us(work.exposed_comm_max);
  if (ctx.peak_flops_per_gpu > 0 && r.step_time.count_ns() > 0) {
    j["mfu"] = flops / (r.step_time.us() * 1e-6 * w.rank_count() * ctx.peak_flops_per_gpu);
  }
  j["breakdown"] = breakdown_json(s.breakdown);
  const Throughput t = throughput_of(w, r, ctx, flops);
  if (t.tokens_per_s > 0 || t.tflops_per_gpu > 0) {
    nlohmann::ordered_json tj;
    if (ctx.tokens_per_step) {
      tj["tokens_per_step"] = *ctx.tokens_per_step;
      tj["tokens_per_s"] = t.tokens_per_s;
    }
    if (t.tflops_per_gpu > 0) {
      tj["tflops_per_gpu"] = t.tflops_per_gpu;
    }
    j["throughput"] = std::move(tj);
  }
  if (t.train_seconds > 0) {
    j["training"] = {{"tokens", *ctx.train_tokens},
                     {"gpus", t.gpus},
                     {"time_s", t.train_seconds},
                     {"gpu_hours", t.gpu_hours}};
  }
  if (ctx.memory) {
    j["memory_per_gpu_bytes"] = ctx.memory->total();
    j["memory"] = {{"weights_bytes", ctx.memory->weights},
                   {"gradients_bytes", ctx.memory->gradients},
                   {"optimizer_bytes", ctx.memory->optimizer},
                   {"activations_bytes", ctx.memory->activations},
                   {"buffers_bytes", ctx.memory->buffers},
                   {"activation_stage", ctx.memory->activation_stage},
                   {"forward_passes_in_flight", ctx.memory->forward_passes_in_flight}};
  }
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
    nlohmann::ordered_json rj;
    rj["rank"] = rank;
    rj["busy_us"] = us(s.ranks[rank].busy);
    rj["idle_us"] = us(s.ranks[rank].idle);
    rj["breakdown"] = breakdown_json(s.ranks[rank].breakdown);
    auto& streams = rj["streams"] = nlohmann::ordered_json::array();
    for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
      const sim::StreamStats& ss = s.streams[sid];
      streams.push_back({{"stream", w.stream(sid).name},
                         {"ops", ss.ops},
                         {"busy_us", us(ss.busy)},
                         {"idle_us", us(ss.idle)},
                         {"comm_wait_us", us(ss.comm_wait)}});
    }
    ranks.push_back(std::move(rj));
  }
  j["overlap"] = overlap_json(w, s.overlap);
  if (include_ops) {
    auto& ops = j["ops"] = nlohmann::ordered_json::array();
    for (traces::OpId op = 0; op < w.op_count(); ++op) {
      ops.push_back({{"id", w.name(op)},
                     {"rank", w.rank_of(op)},
                     {"stream", w.stream(w.stream_of(op)).name},
                     {"kind", std::string(traces::to_string(w.kind(op)))},
                     {"launch_us", us(r.ops[op].launch)},
                     {"start_us", us(r.ops[op].start)},
                     {"end_us", us(r.ops[op].end)},
                     {"standalone_us", us(r.ops[op].alone)},
                     {"alone_us", us(r.ops[op].alone)},
                     {"slowdown", sim::slowdown(r.ops[op])}});
    }
  }
  return j;
}

namespace {

// A JSON number as nlohmann's dump writes it (its own shortest round-trip digits, ".0" on whole
// numbers, null when not finite), so that the streamed report is the document's bytes.
void append_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  std::array<char, 64> buf{};
  const char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), x);
  out.append(buf.data(), static_cast<std::size_t>(end - buf.data()));
}

// A JSON string as nlohmann's dump writes it: printable ASCII without quotes or backslashes is
// written as it is; anything else goes through nlohmann (escapes, UTF-8 checks).
void append_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(
      s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += nlohmann::json(s).dump();
  }
}

}  // namespace

void write_json_report(std::ostream& out, const traces::Workload& w,
                       const traces::ExecutionGraph& g, const sim::SimResult& r,
                       const sim::StepStats& s, const RunContext& ctx, bool include_ops) {
  const std::string head = json_report(w, g, r, s, ctx, false).dump(1);
  if (!include_ops) {
    out << head << "\n";
    return;
  }
  // The document without "ops" ends in "\n}": "ops" is its last member (json_report).
  out.write(head.data(), static_cast<std::streamsize>(head.size() - 2));
  if (w.op_count() == 0) {
    out << ",\n \"ops\": []\n}\n";
    return;
  }
  out << ",\n \"ops\": [\n";
  // Stream names and kinds, escaped once.
  std::vector<std::string> stream_names(w.streams().size());
  for (std::size_t i = 0; i < stream_names.size(); ++i) {
    append_string(stream_names[i], w.streams()[i].name);
  }
  std::string buf;
  buf.reserve(std::size_t{1} << 20);
  std::string name;
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    const traces::OpTimes& t = r.ops[op];
    buf += op == 0 ? "  {\n   \"id\": " : ",\n  {\n   \"id\": ";
    name.clear();
    w.append_name(name, op);
    append_string(buf, name);
    buf += ",\n   \"rank\": ";
    std::array<char, 16> digits{};
    buf.append(digits.data(), std::to_chars(digits.begin(), digits.end(), w.rank_of(op)).ptr);
    buf += ",\n   \"stream\": ";
    buf += stream_names[w.stream_of(op)];
    buf += ",\n   \"kind\": ";
    append_string(buf, traces::to_string(w.kind(op)));
    const std::pair<const char*, double> fields[] = {
        {",\n   \"launch_us\": ", us(t.launch)}, {",\n   \"start_us\": ", us(t.start)},
        {",\n   \"end_us\": ", us(t.end)},       {",\n   \"standalone_us\": ", us(t.alone)},
        {",\n   \"alone_us\": ", us(t.alone)},   {",\n   \"slowdown\": ", sim::slowdown(t)}};
    // Neighbouring fields often hold the same number (launch and start, the two alone times, a
    // slowdown of 1): formatted once.
    std::optional<std::uint64_t> last;  // the bits of the number last formatted
    std::string last_text;
    for (const auto& [key, value] : fields) {
      buf += key;
      const auto bits = std::bit_cast<std::uint64_t>(value);
      if (last != bits) {
        last_text.clear();
        append_number(last_text, value);
        last = bits;
      }
      buf += last_text;
    }
    buf += "\n  }";
    if (buf.size() >= (std::size_t{1} << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  buf += "\n ]\n}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace lagom::cli
