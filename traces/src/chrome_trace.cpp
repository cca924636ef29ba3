// Chrome trace event format writer (JSON object form with "traceEvents").
#include "lagom/traces/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "lagom/common/units.hpp"

namespace lagom::traces {

void write_chrome_trace(const Workload& w, std::span<const OpTimes> t, std::ostream& out,
                        const ChromeTraceOptions& options) {
  const LabelledTimeline one{"", t, {}};
  write_chrome_trace(w, std::span<const LabelledTimeline>(&one, 1), out, options);
}

void write_chrome_trace(const Workload& w, std::span<const LabelledTimeline> timelines,
                        std::ostream& out, const ChromeTraceOptions& options) {
  auto q = [](std::string_view s) { return nlohmann::json(s).dump(); };
  fmt::memory_buffer buf;
  auto flush = [&] {
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  };
  fmt::format_to(std::back_inserter(buf), "{{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  bool first = true;
  auto sep = [&] {
    if (!first) {
      fmt::format_to(std::back_inserter(buf), ",\n");
    }
    first = false;
  };
  std::uint64_t flow_id = 0;
  for (std::size_t i = 0; i < timelines.size(); ++i) {
    const std::span<const OpTimes> t = timelines[i].times;
    const std::vector<bool>& present = timelines[i].present;
    const auto rank_shown = [&](Rank r) { return options.ranks.empty() || options.ranks[r]; };
    const auto shown = [&](OpId op) {
      return (present.empty() || present[op]) && rank_shown(w.rank_of(op)) &&
             (options.window_end_ns == 0 || (t[op].end.count_ns() >= options.window_begin_ns &&
                                             t[op].launch.count_ns() <= options.window_end_ns));
    };
    const Rank base = static_cast<Rank>(i * w.rank_count());
    const std::string prefix = timelines[i].label.empty() ? "" : timelines[i].label + " ";
    for (Rank r = 0; r < w.rank_count(); ++r) {
      if (!rank_shown(r)) {
        continue;
      }
      sep();
      fmt::format_to(
          std::back_inserter(buf),
          R"({{"ph": "M", "name": "process_name", "pid": {0}, "args": {{"name": "{1}rank {2}"}}}},)"
          "\n"
          R"({{"ph": "M", "name": "process_sort_index", "pid": {0}, "args": {{"sort_index": {0}}}}})",
          base + r, prefix, r);
      for (StreamId s = w.first_stream(r); s < w.last_stream(r); ++s) {
        fmt::format_to(
            std::back_inserter(buf),
            ",\n"
            R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
            base + r, s - w.first_stream(r), q(w.stream(s).name));
      }
    }
    for (OpId op = 0; op < w.op_count(); ++op) {
      if (!shown(op)) {
        continue;
      }
      const Rank r = base + w.rank_of(op);
      const StreamId tid = w.stream_of(op) - w.first_stream(w.rank_of(op));
      const OpKind k = w.kind(op);
      const std::string name = q(w.name(op));
      if (t[op].start.count_ns() > t[op].launch.count_ns()) {
        sep();
        fmt::format_to(
            std::back_inserter(buf),
            R"({{"ph": "X", "cat": "wait", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"waiting_for": "peers"}}}})",
            q(fmt::format("wait {}", w.name(op))), r, tid, format_us(t[op].launch.count_ns()),
            format_us(t[op].start.count_ns() - t[op].launch.count_ns()));
      }
      sep();
      fmt::format_to(
          std::back_inserter(buf),
          R"({{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"kind": "{}")",
          is_comm(k) ? "comm" : "compute", name, r, tid, format_us(t[op].start.count_ns()),
          format_us(t[op].end.count_ns() - t[op].start.count_ns()), to_string(k));
      if (w.bytes(op) != 0 || is_comm(k)) {
        fmt::format_to(std::back_inserter(buf), R"(, "bytes": {})", w.bytes(op));
      }
      if (w.group(op) != kNoGroup) {
        fmt::format_to(std::back_inserter(buf), R"(, "group": {})",
                       q(w.group_info(w.group(op)).name));
      }
      if (is_p2p(k)) {
        fmt::format_to(std::back_inserter(buf), R"(, "peer": {})", w.peer(op));
      } else if (has_root(k)) {
        fmt::format_to(std::back_inserter(buf), R"(, "root": {})", w.peer(op));
      }
      if (options.extra_args) {
        std::string extra = options.extra_args(op);
        if (!extra.empty()) {
          fmt::format_to(std::back_inserter(buf), ", {}", extra);
        }
      }
      fmt::format_to(std::back_inserter(buf), "}}}}");
      if (buf.size() > (1 << 20)) {
        flush();
      }
    }
    if (options.dependency_flows) {
      for (OpId op = 0; op < w.op_count(); ++op) {
        if (!shown(op)) {
          continue;
        }
        for (OpId d : w.deps(op)) {
          if (!shown(d)) {
            continue;
          }
          // The arrow leaves from inside the dependency's last slice and lands in the op's first.
          const std::int64_t from = std::max(t[d].start.count_ns(), t[d].end.count_ns() - 1);
          const Rank rd = w.rank_of(d);
          const Rank r = w.rank_of(op);
          sep();
          fmt::format_to(
              std::back_inserter(buf),
              R"({{"ph": "s", "cat": "dep", "name": "dep", "id": {}, "pid": {}, "tid": {}, "ts": {}}},)"
              "\n"
              R"({{"ph": "f", "bp": "e", "cat": "dep", "name": "dep", "id": {}, "pid": {}, "tid": {}, "ts": {}}})",
              flow_id, base + rd, w.stream_of(d) - w.first_stream(rd), format_us(from), flow_id,
              base + r, w.stream_of(op) - w.first_stream(r), format_us(t[op].launch.count_ns()));
          ++flow_id;
        }
        if (buf.size() > (1 << 20)) {
          flush();
        }
      }
    }
  }
  fmt::format_to(std::back_inserter(buf), "\n]}}\n");
  flush();
}

}  // namespace lagom::traces
