// `lagom sweep SWEEP.json`: many simulate / tune / compare runs from one file, in parallel
// threads or as Slurm array shards, one tidy CSV row per point (docs/sweep.md).
//
// Rows are written in point order whatever -j is, each as one whole line, so a sweep's bytes
// depend only on its file and lagom; an interrupted sweep keeps every finished row and
// `--resume` runs the rest and rewrites the file in order, byte for byte what an uninterrupted
// run writes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/interrupt.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/common/text.hpp"
#include "lagom/common/units.hpp"
#include "step_search.hpp"
#include "workload_input.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::ordered_json;

constexpr std::string_view kCommands = "simulate, tune, compare";

enum class Command { kSimulate, kTune, kCompare };

// Options a sweep may not set: they choose outputs, not the point.
const std::set<std::string> kForbidden = {"json",        "help",        "trace",
                                          "out",         "export-env",  "export-nccl-tuner",
                                          "no-op-times", "list-models", "list-workloads"};

struct Axis {
  std::string name;    // as written in the file
  std::string option;  // the option it sets ("nccl-env"), "overrides", or "" for a bundle
  std::vector<ordered_json> values;
};

struct Sweep {
  Command command = Command::kSimulate;
  std::string command_name;
  std::vector<std::string> fixed;  // command-line arguments every point gets
  std::vector<Axis> axes;
  bool zip = false;
  std::string hash;  // of the file's content as read
  std::string origin;
};

struct Point {
  std::size_t index = 0;
  std::vector<std::string> labels;  // each axis's value, as its CSV cell
  std::vector<std::string> args;
};

std::string option_of(const std::string& name) {
  std::string o = name;
  std::replace(o.begin(), o.end(), '_', '-');
  return o;
}

// The option names a point of `command` may set.
std::set<std::string> known_options(Command command) {
  po::options_description desc;
  if (command == Command::kSimulate) {
    WorkloadInput input;
    HardwareOptions hw;
    ModelOptions mo;
    add_workload_input_options(desc, input);
    add_hardware_options(desc, hw);
    add_model_options(desc, mo);
  } else {
    TuneOptions t;
    WorkloadInput input;
    HardwareOptions hw;
    ModelOptions mo;
    po::variables_map vm;
    parse_step_options({}, desc, t, input, hw, mo, vm);
  }
  std::set<std::string> names;
  for (const auto& o : desc.options()) {
    names.insert(o->long_name());
  }
  if (command == Command::kSimulate) {
    names.insert({"no-contention", "plan"});
  } else if (command == Command::kTune) {
    names.insert("method");
  } else {
    names.insert("methods");
  }
  for (const std::string& f : kForbidden) {
    names.erase(f);
  }
  return names;
}

std::string scalar_text(const json_reader::Ctx& at, const ordered_json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.find_first_of("\n\r") != std::string::npos) {
      at.fail("a value may not hold a line break");
    }
    return s;
  }
  if (v.is_number_unsigned()) {
    return std::to_string(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) {
    return std::to_string(v.get<std::int64_t>());
  }
  if (v.is_number()) {
    return fmt::format("{}", v.get<double>());
  }
  at.fail(fmt::format("expected a string or a number, got {}", json_reader::type_of(v)));
}

// The arguments one option value stands for: true -> --name, false -> nothing, an array ->
// --name per element, anything else -> --name value. "overrides": {"PATH": VALUE, ...} -> --set
// PATH=VALUE each.
void append_args(const json_reader::Ctx& at, const std::string& option, const ordered_json& v,
                 std::vector<std::string>& args, std::string* label) {
  std::vector<std::string> parts;
  if (option == "overrides") {
    if (!v.is_object()) {
      at.fail(fmt::format("overrides are an object {{\"PATH\": VALUE, ...}}, got {}",
                          json_reader::type_of(v)));
    }
    for (const auto& [path, value] : v.items()) {
      // The value as JSON, so that --set keeps its type ("800" stays a string).
      const std::string kv = fmt::format("{}={}", path, value.dump());
      if (path.empty() || path.find('=') != std::string::npos ||
          kv.find_first_of("\n\r") != std::string::npos) {
        at.at(path).fail("an override path has no '=' and no value holds a line break");
      }
      args.insert(args.end(), {"--set", kv});
      parts.push_back(kv);
    }
  } else if (option.empty()) {  // a bundle: {"option": value, ...}
    if (!v.is_object()) {
      at.fail(fmt::format("this axis's values are objects of options, got {}",
                          json_reader::type_of(v)));
    }
    for (const auto& [name, value] : v.items()) {
      std::string sub;
      append_args(at.at(name), option_of(name), value, args, &sub);
      parts.push_back(fmt::format("{}={}", name, sub));
    }
  } else if (v.is_boolean()) {
    if (v.get<bool>()) {
      args.push_back("--" + option);
    }
    parts.push_back(v.get<bool>() ? "true" : "false");
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string s = scalar_text(at.at(i), v[i]);
      args.insert(args.end(), {"--" + option, s});
      parts.push_back(s);
    }
  } else {
    const std::string s = scalar_text(at, v);
    args.insert(args.end(), {"--" + option, s});
    parts.push_back(s);
  }
  if (label != nullptr) {
    *label = fmt::format("{}", fmt::join(parts, ";"));
  }
}

Sweep parse_sweep(std::string_view text, const std::string& path) {
  Sweep s;
  s.origin = path;
  const ordered_json doc = json_reader::parse_ordered_document(text, path, "lagom.sweep");
  s.hash = fmt::format("fnv1a64:{:016x}", fnv1a64(doc.dump()));
  const json_reader::Ctx ctx{path, ""};
  if (!doc.is_object()) {
    ctx.fail("a sweep file is a JSON object");
  }
  const std::set<std::string> keys = {"format",  "version", "description", "command",
                                      "options", "axes",    "combine"};
  for (const auto& [key, v] : doc.items()) {
    if (!keys.count(key)) {
      ctx.at(key).fail(fmt::format("unknown field (known fields: {})", fmt::join(keys, ", ")));
    }
  }
  if (!doc.contains("format") || doc["format"] != "lagom.sweep") {
    ctx.at("format").fail("must be \"lagom.sweep\"");
  }
  if (!doc.contains("version") || doc["version"] != 1) {
    ctx.at("version").fail("must be 1");
  }
  if (!doc.contains("command") || !doc["command"].is_string()) {
    ctx.at("command").fail(fmt::format("must be one of {}", kCommands));
  }
  s.command_name = doc["command"].get<std::string>();
  if (s.command_name == "simulate") {
    s.command = Command::kSimulate;
  } else if (s.command_name == "tune") {
    s.command = Command::kTune;
  } else if (s.command_name == "compare") {
    s.command = Command::kCompare;
  } else {
    ctx.at("command").fail(
        fmt::format("unknown command '{}' (known: {})", s.command_name, kCommands));
  }
  const std::set<std::string> known = known_options(s.command);
  auto check_option = [&](const json_reader::Ctx& at, const std::string& name) {
    const std::string o = option_of(name);
    if (o != "overrides" && !known.count(o)) {
      at.fail(
          fmt::format("'{}' is not an option of lagom {} that a sweep may set (known: "
                      "{}, overrides)",
                      name, s.command_name, fmt::join(known, ", ")));
    }
    return o;
  };
  if (doc.contains("options")) {
    const auto& opts = doc["options"];
    if (!opts.is_object()) {
      ctx.at("options").fail("must be an object {\"option\": value, ...}");
    }
    for (const auto& [name, v] : opts.items()) {
      const json_reader::Ctx at = ctx.at("options").at(name);
      append_args(at, check_option(at, name), v, s.fixed, nullptr);
    }
  }
  if (doc.contains("combine")) {
    const auto& c = doc["combine"];
    if (c != "product" && c != "zip") {
      ctx.at("combine").fail("must be \"product\" or \"zip\"");
    }
    s.zip = c == "zip";
  }
  if (!doc.contains("axes") || !doc["axes"].is_object() || doc["axes"].empty()) {
    ctx.at("axes").fail("must be an object with at least one axis: {\"name\": [values], ...}");
  }
  for (const auto& [name, values] : doc["axes"].items()) {
    const json_reader::Ctx at = ctx.at("axes").at(name);
    Axis a;
    a.name = name;
    // An axis of objects sets several options per value ("layout": [{"parallel": "fsdp=8",
    // "nodes": 1}, ...]) and may have any name; any other axis is an option.
    const bool bundle = values.is_array() && !values.empty() &&
                        std::all_of(values.begin(), values.end(),
                                    [](const ordered_json& v) { return v.is_object(); }) &&
                        option_of(name) != "overrides";
    if (bundle) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        for (const auto& [key, v] : values[i].items()) {
          check_option(at.at(i).at(key), key);
        }
      }
    } else {
      a.option = check_option(at, name);
    }
    if (doc.contains("options") && doc["options"].contains(name)) {
      at.fail("is both a fixed option and an axis");
    }
    if (!values.is_array() || values.empty()) {
      at.fail("an axis is a non-empty array of values");
    }
    for (const auto& v : values) {
      a.values.push_back(v);
    }
    s.axes.push_back(std::move(a));
  }
  if (s.zip) {
    for (const Axis& a : s.axes) {
      if (a.values.size() != s.axes.front().values.size()) {
        ctx.at("axes").at(a.name).fail(
            fmt::format("has {} values but '{}' has {}: zipped axes have the same length",
                        a.values.size(), s.axes.front().name, s.axes.front().values.size()));
      }
    }
  }
  return s;
}

constexpr std::size_t kMaxSweepPoints = 1000000;

// The sweep's points: the product of the axes' lengths (zipped: their common length). Counted
// before anything is expanded; lagom::Error above `max_points`.
std::size_t point_count(const Sweep& s, std::size_t max_points) {
  std::size_t n = s.zip ? s.axes.front().values.size() : 1;
  for (const Axis& a : s.axes) {
    if (s.zip || n == 0) {
      break;
    }
    if (a.values.size() > 0 && n > max_points / a.values.size()) {
      n = max_points + 1;
      break;
    }
    n *= a.values.size();
  }
  if (n > max_points) {
    throw Error(fmt::format(
        "{}: the {} of the axes has more than {} points", s.origin, s.zip ? "zip" : "product",
        max_points == kMaxSweepPoints ? "1,000,000" : std::to_string(max_points)));
  }
  return n;
}

std::vector<Point> points_of(const Sweep& s, std::size_t max_points = kMaxSweepPoints) {
  const std::size_t n = point_count(s, max_points);
  std::vector<Point> points(n);
  for (std::size_t i = 0; i < n; ++i) {
    Point& p = points[i];
    p.index = i;
    p.args = s.fixed;
    std::size_t rest = i;
    // The first axis varies slowest: index = ((v0 * n1) + v1) * n2 + v2 ...
    std::vector<std::size_t> pick(s.axes.size());
    for (std::size_t k = s.axes.size(); k-- > 0;) {
      const std::size_t m = s.axes[k].values.size();
      pick[k] = s.zip ? i : rest % m;
      rest = s.zip ? rest : rest / m;
    }
    for (std::size_t k = 0; k < s.axes.size(); ++k) {
      const Axis& a = s.axes[k];
      std::string label;
      append_args(json_reader::Ctx{s.origin, "axes." + a.name}.at(pick[k]), a.option,
                  a.values[pick[k]], p.args, &label);
      p.labels.push_back(std::move(label));
    }
  }
  return points;
}

Sweep read_sweep(const std::string& path) {
  return parse_sweep(json_reader::read_text_file(path, "sweep file"), path);
}

// ---------------------------------------------------------------------------------------------
// Rows.

std::string num(const ordered_json& v) {
  if (v.is_null()) {
    return "";
  }
  if (v.is_number_integer()) {
    return std::to_string(v.get<std::int64_t>());
  }
  return fmt::format("{}", v.get<double>());
}

// The methods a compare sweep's points name, in first-seen order: its columns (NCCL's own
// choice is the nccl_step_time_us column every row has).
std::vector<std::string> compare_methods(const std::vector<Point>& points) {
  std::vector<std::string> out;
  for (const Point& p : points) {
    std::string list = "nccl,autoccl,lagom";
    for (std::size_t i = 0; i + 1 < p.args.size(); ++i) {
      if (p.args[i] == "--methods") {
        list = p.args[i + 1];
      }
    }
    std::stringstream in(list);
    for (std::string m; std::getline(in, m, ',');) {
      m = ascii_lower(m);
      if (m != "nccl" && std::find(out.begin(), out.end(), m) == out.end()) {
        out.push_back(m);
      }
    }
  }
  return out;
}

struct Columns {
  std::vector<std::string> names;    // after point and the axes
  std::vector<std::string> methods;  // compare
};

Columns columns_of(const Sweep& s, const std::vector<Point>& all) {
  Columns c;
  switch (s.command) {
    case Command::kSimulate:
      c.names = {"step_time_us", "mfu", "exposed_comm_us", "compute_us", "memory_per_gpu_bytes"};
      break;
    case Command::kTune:
      c.names = {"step_time_us", "nccl_step_time_us", "speedup_vs_nccl", "evaluations"};
      break;
    case Command::kCompare:
      c.methods = compare_methods(all);
      c.names = {"nccl_step_time_us"};
      for (const std::string& m : c.methods) {
        c.names.push_back(m + "_step_time_us");
        c.names.push_back(m + "_speedup_vs_nccl");
        c.names.push_back(m + "_evaluations");
      }
      break;
  }
  return c;
}

std::string header_line(const Sweep& s, const Columns& c) {
  std::vector<std::string> h = {"point"};
  for (const Axis& a : s.axes) {
    h.push_back(csv_quote(a.name));
  }
  h.insert(h.end(), c.names.begin(), c.names.end());
  h.push_back("status");
  h.push_back("error");
  return fmt::format("{}\n", fmt::join(h, ","));
}

std::string comment_line(const Sweep& s, std::size_t points, const std::string& shard) {
  return fmt::format("# lagom sweep {} {} points={}{}\n", s.hash, s.command_name, points,
                     shard.empty() ? "" : " shard=" + shard);
}

struct Result {
  std::string csv;    // the whole line, with its newline
  std::string jsonl;  // the whole line, with its newline
  bool ok = false;
  double seconds = 0;
};

// nullopt when SIGINT/SIGTERM stopped the point.
std::optional<Result> run_point(const Sweep& s, const Columns& cols, const Point& p) {
  std::vector<std::string> args = p.args;
  args.push_back("--json");
  if (s.command == Command::kSimulate) {
    args.push_back("--no-op-times");
  }
  std::vector<ordered_json> values(cols.names.size());
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    std::ostringstream out;
    switch (s.command) {
      case Command::kSimulate:
        run_simulate(args, out);
        break;
      case Command::kTune:
        run_tune(args, out);
        break;
      case Command::kCompare:
        run_compare(args, out);
        break;
    }
    const ordered_json j = ordered_json::parse(out.str());
    auto take = [&](std::size_t col, const ordered_json& obj, const char* key) {
      if (obj.contains(key)) {
        values[col] = obj[key];
      }
    };
    if (s.command == Command::kCompare) {
      for (const auto& row : j["rows"]) {
        if (row["method"] == "nccl") {
          values[0] = row["step_time_us"];
          continue;
        }
        const auto at =
            std::find(cols.methods.begin(), cols.methods.end(), row["method"].get<std::string>());
        const std::size_t m = static_cast<std::size_t>(at - cols.methods.begin());
        if (at == cols.methods.end()) {
          continue;
        }
        take(1 + 3 * m, row, "step_time_us");
        take(2 + 3 * m, row, "speedup_vs_nccl");
        take(3 + 3 * m, row, "evaluations");
      }
      if (values[0].is_null() && !j["rows"].empty()) {
        const auto& r0 = j["rows"][0];
        values[0] = r0["step_time_us"].get<double>() * r0["speedup_vs_nccl"].get<double>();
      }
    } else {
      for (std::size_t c = 0; c < cols.names.size(); ++c) {
        take(c, j, cols.names[c].c_str());
      }
    }
  } catch (const Interrupted&) {
    return std::nullopt;
  } catch (const po::error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (interrupt_requested()) {  // a tune point stopped early: its numbers are not the point's
    return std::nullopt;
  }
  std::replace(error.begin(), error.end(), '\n', ' ');  // one row, one line
  Result r;
  r.ok = error.empty();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::string> cells = {std::to_string(p.index)};
  ordered_json jl;
  jl["point"] = p.index;
  for (std::size_t k = 0; k < s.axes.size(); ++k) {
    cells.push_back(csv_quote(p.labels[k]));
    jl[s.axes[k].name] = p.labels[k];
  }
  for (std::size_t c = 0; c < cols.names.size(); ++c) {
    cells.push_back(num(values[c]));
    jl[cols.names[c]] = values[c];
  }
  cells.push_back(r.ok ? "ok" : "error");
  cells.push_back(csv_quote(error));
  jl["status"] = r.ok ? "ok" : "error";
  jl["error"] = error;
  r.csv = fmt::format("{}\n", fmt::join(cells, ","));
  r.jsonl = jl.dump() + "\n";
  return r;
}

// ---------------------------------------------------------------------------------------------
// Output files.

struct CsvFile {
  std::string comment;
  std::string header;
  std::map<std::size_t, std::string> rows;  // point -> whole line
};

// The cells of one CSV line (quoted commas do not count).
std::size_t csv_cells(std::string_view line) {
  std::size_t n = 1;
  bool quoted = false;
  for (char c : line) {
    quoted = c == '"' ? !quoted : quoted;
    n += c == ',' && !quoted ? 1 : 0;
  }
  return n;
}

// Reads a sweep CSV (ours): the comment line, the header and each row by point.
CsvFile read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("cannot open sweep output '{}'", path));
  }
  CsvFile f;
  std::string line;
  if (!std::getline(in, line) || !line.starts_with("# lagom sweep ")) {
    throw Error(fmt::format("{}: not a lagom sweep output (no '# lagom sweep' first line)", path));
  }
  auto chomp = [](std::string& l) {
    if (!l.empty() && l.back() == '\r') {
      l.pop_back();
    }
  };
  chomp(line);
  f.comment = line + "\n";
  if (!std::getline(in, line) || (chomp(line), !line.starts_with("point,"))) {
    throw Error(fmt::format("{}: line 2 is not the sweep's header", path));
  }
  f.header = line + "\n";
  for (int n = 3; std::getline(in, line); ++n) {
    if (in.eof()) {
      break;  // a last line without its newline was cut off: it will be run again
    }
    chomp(line);
    std::size_t point = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), point);
    if (ec != std::errc() || end == line.data() + line.size() || *end != ',') {
      throw Error(fmt::format("{}:{}: a row starts with its point number", path, n));
    }
    f.rows[point] = line + "\n";
  }
  return f;
}

// "# lagom sweep HASH COMMAND points=N[ shard=I/N]" -> its fields.
struct Comment {
  std::string hash;
  std::string command;
  std::size_t points = 0;
  std::string shard;
};

Comment parse_comment(const std::string& path, const std::string& line) {
  std::istringstream in(line.substr(std::string("# lagom sweep ").size()));
  Comment c;
  std::string points;
  in >> c.hash >> c.command >> points >> c.shard;
  if (!points.starts_with("points=")) {
    throw Error(
        fmt::format("{}: malformed first line '{}'", path, line.substr(0, line.size() - 1)));
  }
  const std::string n = points.substr(7);
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), c.points);
  if (n.empty() || ec != std::errc() || end != n.data() + n.size() || c.points > 1000000) {
    throw Error(
        fmt::format("{}: malformed first line: points must be a count up to 1,000,000, "
                    "got '{}'",
                    path, n));
  }
  return c;
}

// "I/N" -> {I, N}; po::error unless 0 <= I < N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  std::size_t i = 0;
  std::size_t n = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  bool ok = slash != std::string::npos;
  if (ok) {
    const auto [ei, ci] = std::from_chars(b, b + slash, i);
    const auto [en, cn] = std::from_chars(b + slash + 1, e, n);
    ok = ci == std::errc() && ei == b + slash && cn == std::errc() && en == e && n >= 1 && i < n;
  }
  if (!ok) {
    throw po::error(fmt::format("--shard '{}': expected I/N with 0 <= I < N, e.g. 0/4", text));
  }
  return {i, n};
}

int merge(const std::vector<std::string>& files) {
  if (files.size() < 2) {
    throw po::error("usage: lagom sweep merge OUT.csv SHARD.csv...");
  }
  const std::string out = files[0];
  std::optional<Comment> first;
  std::string header;
  std::map<std::size_t, std::pair<std::string, std::string>> rows;  // point -> line, file
  for (std::size_t f = 1; f < files.size(); ++f) {
    const CsvFile c = read_csv(files[f]);
    const Comment m = parse_comment(files[f], c.comment);
    if (!first) {
      first = m;
      header = c.header;
    } else if (m.hash != first->hash || m.points != first->points) {
      throw Error(fmt::format("{} is from another sweep ({}, {} points) than {} ({}, {} points)",
                              files[f], m.hash, m.points, files[1], first->hash, first->points));
    } else if (c.header != header) {
      throw Error(fmt::format("{}: its header differs from {}'s", files[f], files[1]));
    }
    for (const auto& [point, line] : c.rows) {
      if (point >= m.points) {
        throw Error(
            fmt::format("{}: point {} is beyond the sweep's {} points", files[f], point, m.points));
      }
      const auto [it, added] = rows.try_emplace(point, line, files[f]);
      if (!added && it->second.first != line) {
        throw Error(
            fmt::format("point {} differs between {} and {}", point, it->second.second, files[f]));
      }
    }
  }
  std::vector<std::size_t> missing;
  for (std::size_t p = 0; p < first->points; ++p) {
    if (!rows.count(p)) {
      missing.push_back(p);
    }
  }
  if (!missing.empty()) {
    throw Error(fmt::format(
        "the shards hold {} of the sweep's {} points; missing: {}{} (run those shards, or "
        "--resume them)",
        rows.size(), first->points,
        fmt::join(missing.begin(), missing.begin() + std::min<std::size_t>(10, missing.size()),
                  ", "),
        missing.size() > 10 ? ", ..." : ""));
  }
  std::string text =
      fmt::format("# lagom sweep {} {} points={}\n", first->hash, first->command, first->points) +
      header;
  for (const auto& [point, line] : rows) {
    text += line.first;
  }
  write_file(out, text, "sweep results");
  fmt::print(stderr, "lagom sweep merge: {} points from {} files -> {}\n", rows.size(),
             files.size() - 1, out);
  return kExitOk;
}

}  // namespace

std::size_t check_sweep(std::string_view text, const std::string& origin, std::size_t max_points) {
  return points_of(parse_sweep(text, origin), max_points).size();
}

int sweep_command(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "merge") {
    if (args.size() == 2 && (args[1] == "--help" || args[1] == "-h")) {
      fmt::print(
          "Usage: lagom sweep merge OUT.csv SHARD.csv...\n\nWrites the shards' rows, "
          "checked to come from one sweep and to cover every point, in point order: the "
          "same bytes an unsharded run writes.\n");
      return kExitOk;
    }
    return merge(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  std::string file;
  std::string out_path;
  std::string jsonl_path;
  std::string shard_text;
  int jobs = 1;
  po::options_description desc(
      "Usage: lagom sweep SWEEP.json [-j N] [--out results.csv] [--jsonl FILE] [--resume]\n"
      "                  [--shard I/N] [--list]\n"
      "       lagom sweep merge OUT.csv SHARD.csv...\n\n"
      "Runs every point of a sweep file (docs/sweep.md: a command, fixed options and axes that\n"
      "combine as a product or zipped) and writes one CSV row per point: the point number, the\n"
      "axes, the results and a status. Rows come in point order for any -j; a failing point is\n"
      "a row with its error. Under a Slurm array, SLURM_ARRAY_TASK_ID/COUNT choose the shard.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")("sweep", po::value(&file), "the sweep file")(
      "jobs,j", integer_option(&jobs, "-j", 1, 1024, "threads")->default_value("1"),
      "points run at once (threads)")("out", po::value(&out_path),
                                      "write the CSV to FILE (default: stdout)")(
      "jsonl", po::value(&jsonl_path), "also write each row as a JSON line to FILE")(
      "resume", "with --out: keep the rows FILE already has, run the other points")(
      "shard", po::value(&shard_text), "run points I, I+N, I+2N, ... (0 <= I < N)")(
      "list", "print the points (number, axes, command line) without running them")(
      "quiet,q", "no progress on stderr");
  po::positional_options_description pos;
  pos.add("sweep", 1);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, &pos)) {
    return kExitOk;
  }
  if (file.empty()) {
    throw po::error("a sweep file is needed: lagom sweep SWEEP.json (docs/sweep.md)");
  }
  if (!jsonl_path.empty() && vm.count("resume")) {
    throw po::error(
        "--jsonl cannot be resumed (its rows come in completion order): resume the "
        "CSV alone");
  }
  for (const std::string& o : {out_path, jsonl_path}) {
    std::error_code ec;
    if (!o.empty() && std::filesystem::exists(o) && std::filesystem::exists(file) &&
        std::filesystem::equivalent(o, file, ec)) {
      throw po::error(fmt::format("'{}' is the sweep file: choose another output", o));
    }
  }
  if (!out_path.empty() && out_path == jsonl_path) {
    throw po::error("--out and --jsonl name the same file");
  }
  if (vm.count("resume") && out_path.empty()) {
    throw po::error("--resume needs --out FILE (the output to resume)");
  }
  std::string shard;
  std::size_t shard_i = 0;
  std::size_t shard_n = 1;
  if (!shard_text.empty()) {
    std::tie(shard_i, shard_n) = parse_shard(shard_text);
    shard = shard_text;
  } else if (const char* id = std::getenv("SLURM_ARRAY_TASK_ID")) {
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (count == nullptr) {
      throw Error("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shard I/N");
    }
    // Array indices need not start at 0 (--array=1-4): the shard is the index past the first.
    const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
    long first = 0;
    long index = -1;
    try {
      first = min == nullptr ? 0 : std::stol(min);
      index = std::stol(id);
    } catch (const std::exception&) {
      index = -1;
    }
    shard = fmt::format("{}/{}", index - first, count);
    try {
      std::tie(shard_i, shard_n) = parse_shard(shard);
    } catch (const po::error&) {
      throw Error(
          fmt::format("SLURM_ARRAY_TASK_ID={}, SLURM_ARRAY_TASK_MIN={} and "
                      "SLURM_ARRAY_TASK_COUNT={} do not make a shard I/N with 0 <= I < N "
                      "(submit a contiguous array, e.g. --array=0-3)",
                      id, min == nullptr ? "unset" : min, count));
    }
  }
  const Sweep s = read_sweep(file);
  const std::vector<Point> all = points_of(s);
  std::vector<const Point*> mine;
  for (const Point& p : all) {
    if (p.index % shard_n == shard_i) {
      mine.push_back(&p);
    }
  }
  if (vm.count("list")) {
    for (const Point* p : mine) {
      std::vector<std::string> axes;
      for (std::size_t k = 0; k < s.axes.size(); ++k) {
        axes.push_back(fmt::format("{}={}", s.axes[k].name, p->labels[k]));
      }
      fmt::print("{}\t{}\tlagom {} {}\n", p->index, fmt::join(axes, " "), s.command_name,
                 fmt::join(p->args, " "));
    }
    return kExitOk;
  }
  const Columns cols = columns_of(s, all);
  const std::string comment = comment_line(s, all.size(), shard);
  const std::string header = header_line(s, cols);

  // Resume: the rows the output has, if it is this sweep's.
  std::map<std::size_t, std::string> done;
  if (vm.count("resume") && std::filesystem::exists(out_path)) {
    CsvFile prior = read_csv(out_path);
    if (prior.comment != comment || prior.header != header) {
      throw Error(
          fmt::format("--resume: {} was written by another sweep or shard ({}), not {} "
                      "({})",
                      out_path, prior.comment.substr(0, prior.comment.size() - 1), file,
                      comment.substr(0, comment.size() - 1)));
    }
    done = std::move(prior.rows);
    // Rows that cannot be this shard's (a point past the sweep or of another shard, a wrong
    // number of cells) are run again.
    const std::size_t cells = csv_cells(header);
    std::erase_if(done, [&](const auto& row) {
      const bool bad = row.first >= all.size() || row.first % shard_n != shard_i ||
                       csv_cells(row.second) != cells;
      if (bad) {
        fmt::print(stderr, "lagom sweep: --resume: dropping the malformed row for point {}\n",
                   row.first);
      }
      return bad;
    });
    // Rewritten without a cut-off last line, so that new rows append to whole lines.
    std::string text = comment + header;
    for (const auto& [point, line] : done) {
      text += line;
    }
    write_file(out_path, text, "sweep results");
  }
  std::vector<const Point*> todo;
  for (const Point* p : mine) {
    if (!done.count(p->index)) {
      todo.push_back(p);
    }
  }

  // Output: the file's existing rows stay; new ones are appended in point order as they finish
  // (stdout: the same). A resumed file is rewritten in order at the end.
  std::ofstream file_out;
  std::ofstream jsonl_out;
  std::ostream* out = &std::cout;
  if (!out_path.empty()) {
    file_out.open(out_path, std::ios::binary | (done.empty() ? std::ios::trunc : std::ios::app));
    if (!file_out) {
      throw Error(fmt::format("cannot write '{}'", out_path));
    }
    out = &file_out;
  }
  if (!jsonl_path.empty()) {
    jsonl_out.open(jsonl_path, std::ios::binary | (done.empty() ? std::ios::trunc : std::ios::app));
    if (!jsonl_out) {
      throw Error(fmt::format("cannot write '{}'", jsonl_path));
    }
  }
  if (done.empty()) {
    *out << comment << header << std::flush;
  }

  std::vector<std::optional<Result>> results(todo.size());
  std::mutex mu;
  std::size_t next_to_write = 0;  // into todo
  std::size_t finished = 0;
  std::size_t failed = 0;
  std::atomic<std::size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  const bool tty = isatty(fileno(stderr)) != 0;
  const bool quiet = vm.count("quiet") > 0;

  auto write_ready = [&] {  // holds mu
    while (next_to_write < todo.size() && results[next_to_write]) {
      *out << results[next_to_write]->csv << std::flush;
      if (jsonl_out.is_open()) {
        jsonl_out << results[next_to_write]->jsonl << std::flush;
      }
      ++next_to_write;
    }
  };
  auto report = [&](const Point& p, const Result& r) {  // holds mu
    if (quiet) {
      return;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta =
        elapsed / static_cast<double>(finished) * static_cast<double>(todo.size() - finished);
    if (tty) {
      const int width = 30;
      const int filled = static_cast<int>(width * finished / todo.size());
      fmt::print(stderr, "\r[{:#<{}}{:<{}}] {}/{} points, {} failed, ETA {:.0f} s   ", "", filled,
                 "", width - filled, finished, todo.size(), failed, eta);
      if (finished == todo.size()) {
        fmt::print(stderr, "\n");
      }
    } else {
      fmt::print(stderr, "lagom sweep: point {} ({}/{}) {} in {:.2f} s, ETA {:.0f} s\n", p.index,
                 finished, todo.size(), r.ok ? "ok" : "failed", r.seconds, eta);
    }
  };
  auto worker = [&] {
    for (;;) {
      if (interrupt_requested()) {
        return;
      }
      const std::size_t i = next++;
      if (i >= todo.size()) {
        return;
      }
      std::optional<Result> done_point = run_point(s, cols, *todo[i]);
      if (!done_point) {  // interrupted inside the point: not a row; --resume runs it
        return;
      }
      Result r = std::move(*done_point);
      std::lock_guard lock(mu);
      ++finished;
      failed += r.ok ? 0 : 1;
      report(*todo[i], r);
      results[i] = std::move(r);
      write_ready();
    }
  };
  std::vector<std::thread> pool;
  const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(jobs), todo.size());
  for (std::size_t t = 1; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  if (threads >= 1) {
    worker();
  }
  for (std::thread& t : pool) {
    t.join();
  }
  if (interrupt_requested()) {
    // Every finished row is kept, in point order after the ones already written.
    for (std::size_t i = next_to_write; i < todo.size(); ++i) {
      if (results[i]) {
        *out << results[i]->csv;
        if (jsonl_out.is_open()) {
          jsonl_out << results[i]->jsonl;
        }
      }
    }
    out->flush();
    fmt::print(stderr,
               "lagom sweep: interrupted after {} of {} points; run again with --resume to "
               "finish\n",
               finished, todo.size());
    return kExitInterrupted;
  }
  if (!done.empty()) {  // rewrite the resumed file in point order
    file_out.close();
    const CsvFile now = read_csv(out_path);
    std::string text = comment + header;
    for (const auto& [point, line] : now.rows) {
      text += line;
    }
    write_file(out_path, text, "sweep results");
  }
  if (failed > 0) {
    fmt::print(stderr, "lagom sweep: {} of {} points failed (status \"error\" rows)\n", failed,
               todo.size());
  }
  // Failed points are results (rows with their error), also in a shard where all of them fail.
  return kExitOk;
}

}  // namespace lagom::cli
