// Reading and writing measurement bundles (see bundle.hpp and docs/formats/bundle.md).
#include "lagom/calibrate/bundle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/json_reader.hpp"

namespace lagom::calibrate {
namespace {

namespace fs = std::filesystem;
using json_reader::Ctx;

// Bounds of the whole-number columns: a GEMM dimension, a launch's grid (CUDA's x limit), the
// occupier's CTAs and its chunk.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxBlocks = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxCtas = 1 << 16;
constexpr std::int64_t kMaxChunk = std::int64_t{1} << 32;
using nlohmann::json;

// Line ends of any system (LF, CRLF or CR) as LF, and no UTF-8 byte-order mark.
std::string normalized(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);
  }
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
      }
    } else {
      out += text[i];
    }
  }
  return out;
}

// One raw/*.csv: a header row naming the columns, then rows of values. Blank lines and lines
// starting with '#' are skipped.
class Table {
 public:
  Table(std::string path, const std::string& text) : path_(std::move(path)) {
    std::istringstream in(normalized(text));
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (trim(line).empty() || line.front() == '#') {
        continue;
      }
      std::vector<std::string> cells;
      std::string cell;
      std::istringstream row(line);
      while (std::getline(row, cell, ',')) {
        cells.push_back(trim(cell));
      }
      if (line.back() == ',') {
        cells.emplace_back();
      }
      if (header_.empty()) {
        for (std::size_t i = 0; i < cells.size(); ++i) {
          if (cells[i].empty() ||
              std::find(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(i), cells[i]) !=
                  cells.begin() + static_cast<std::ptrdiff_t>(i)) {
            throw Error(fmt::format("{}:{}: the header's column {} is {}", path_, number, i + 1,
                                    cells[i].empty() ? "empty" : "'" + cells[i] + "' again"));
          }
        }
        header_ = std::move(cells);
        continue;
      }
      if (cells.size() != header_.size()) {
        throw Error(fmt::format("{}:{}: {} values, but the header names {} columns", path_, number,
                                cells.size(), header_.size()));
      }
      rows_.push_back(std::move(cells));
      lines_.push_back(number);
    }
    if (header_.empty()) {
      throw Error(fmt::format("{}: no header row (expected the column names)", path_));
    }
  }

  std::size_t rows() const { return rows_.size(); }

  // The index of column `name`; an error naming the file when there is none.
  std::size_t column(std::string_view name) const {
    for (std::size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == name) {
        return i;
      }
    }
    throw Error(fmt::format("{}: no column '{}' (the header has: {})", path_, name,
                            fmt::join(header_, ", ")));
  }

  const std::string& text(std::size_t row, std::string_view name) const {
    return rows_[row][column(name)];
  }

  // A finite number >= 0 (> 0 when `positive`), written whole.
  double number(std::size_t row, std::string_view name, bool positive = false) const {
    const std::string& s = text(row, name);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
      fail(row, fmt::format("{} '{}' is not a number", name, s));
    }
    if (!std::isfinite(v) || v < 0 || (positive && v == 0)) {
      fail(row, fmt::format("{} is {}; it must be a finite number {} 0", name, s,
                            positive ? ">" : ">="));
    }
    return v;
  }

  // A whole number in [lo, hi], written in digits.
  std::int64_t integer(std::size_t row, std::string_view name, std::int64_t lo,
                       std::int64_t hi) const {
    const std::string& s = text(row, name);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
      fail(row, fmt::format("{} is '{}'; it must be a whole number in [{}, {}], in digits", name, s,
                            lo, hi));
    }
    return v;
  }

  // One of `allowed`.
  const std::string& word(std::size_t row, std::string_view name,
                          std::initializer_list<std::string_view> allowed) const {
    const std::string& s = text(row, name);
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      fail(row, fmt::format("{} '{}' is not one of {}", name, s, fmt::join(allowed, ", ")));
    }
    return s;
  }

  [[noreturn]] void fail(std::size_t row, std::string_view what) const {
    throw Error(fmt::format("{}:{}: {}", path_, lines_[row], what));
  }

 private:
  static std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
      s.pop_back();
    }
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
    }
    return s.substr(i);
  }

  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

// raw/NAME.csv when it exists.
std::optional<Table> table(const std::string& dir, std::string_view name) {
  const fs::path p = fs::path(dir) / "raw" / (std::string(name) + ".csv");
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    return std::nullopt;
  }
  return Table(p.string(), json_reader::read_text_file(p.string(), "bundle file"));
}

std::string string_field(const Ctx& ctx, const json& obj, const char* key) {
  const json* v = json_reader::optional_field(obj, key);
  return v == nullptr ? std::string() : json_reader::get_string(ctx.at(key), *v);
}

double number_field(const Ctx& ctx, const json& obj, const char* key, bool required) {
  const json* v = json_reader::optional_field(obj, key);
  if (v == nullptr) {
    if (required) {
      ctx.fail(fmt::format("missing required field '{}'", key));
    }
    return 0;
  }
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0) {
    ctx.at(key).fail(
        fmt::format("expected a finite number >= 0, got {}", json_reader::type_of(*v)));
  }
  return v->get<double>();
}

BundleContext read_context(const std::string& dir) {
  const std::string path = (fs::path(dir) / "context.json").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(
        fmt::format("measurement bundle '{}' is not a folder (lagom-calibrate writes one: "
                    "context.json, raw/*.csv, summary.json)",
                    dir));
  }
  const std::string text = json_reader::read_text_file(path, "bundle context");
  const json doc = json_reader::parse_document(text, path, kBundleFormat);
  const Ctx ctx{path, ""};
  if (!doc.is_object()) {
    ctx.fail("expected a JSON object");
  }
  if (json_reader::get_string(ctx.at("format"), json_reader::require(ctx, doc, "format")) !=
      kBundleFormat) {
    ctx.at("format").fail(fmt::format("expected \"{}\"", kBundleFormat));
  }
  json_reader::int_field(ctx, doc, "version", kBundleVersion, kBundleVersion);
  BundleContext c;
  if (const json* s = json_reader::optional_field(doc, "synthetic")) {
    c.synthetic = json_reader::get_bool(ctx.at("synthetic"), *s);
  }
  const Ctx g = ctx.at("gpu");
  const json& gpu = json_reader::require(ctx, doc, "gpu");
  if (!gpu.is_object()) {
    g.fail("expected an object");
  }
  c.gpu.name = json_reader::get_string(g.at("name"), json_reader::require(g, gpu, "name"));
  c.gpu.sms = json_reader::int_field(g, gpu, "sms", 1, 100000);
  c.gpu.compute_capability = json_reader::int_field(g, gpu, "compute_capability", 10, 1000);
  c.gpu.memory_bytes = number_field(g, gpu, "memory_bytes", true);
  c.gpu.l2_bytes = number_field(g, gpu, "l2_bytes", true);
  c.gpu.smem_per_sm_bytes = number_field(g, gpu, "smem_per_sm_bytes", true);
  c.gpu.max_threads_per_sm = json_reader::int_field(g, gpu, "max_threads_per_sm", 32, 1 << 16);
  c.gpu.max_blocks_per_sm = json_reader::int_field(g, gpu, "max_blocks_per_sm", 1, 1024);
  c.gpu.clock_MHz = number_field(g, gpu, "clock_MHz", false);
  c.gpu.memory_clock_MHz = number_field(g, gpu, "memory_clock_MHz", false);
  c.gpu.memory_bus_bits = static_cast<int>(number_field(g, gpu, "memory_bus_bits", false));
  c.driver = string_field(ctx, doc, "driver");
  c.cuda_runtime = string_field(ctx, doc, "cuda_runtime");
  c.cublas = string_field(ctx, doc, "cublas");
  c.nccl = string_field(ctx, doc, "nccl");
  c.date = string_field(ctx, doc, "date");
  c.host = string_field(ctx, doc, "host");
  c.command_line = string_field(ctx, doc, "command_line");
  if (const json* r = json_reader::optional_field(doc, "ranks")) {
    c.ranks = json_reader::get_int(ctx.at("ranks"), *r, 1, 1 << 20);
  }
  return c;
}

template <typename T>
std::string csv(const std::vector<T>& rows, std::string_view header,
                std::string (*line)(const T&)) {
  std::string out = std::string(header) + "\n";
  for (const T& r : rows) {
    out += line(r) + "\n";
  }
  return out;
}

// Shortest decimal that reads back to the same double (so a written bundle reads back exactly).
std::string num(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

json medians_by(const std::map<std::string, std::vector<double>>& groups) {
  json out = json::object();
  for (const auto& [key, values] : groups) {
    out[key] = {{"median", median(values)}, {"samples", values.size()}};
  }
  return out;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string gpu_model_token(std::string_view name) {
  std::string up;
  for (char c : name) {
    up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  // Longest first, so that "H100" is not read inside "GH100" wrongly and "A100" before "A10".
  static constexpr std::string_view kModels[] = {"GB200", "B200", "B100", "H200", "H100", "H800",
                                                 "H20",   "A100", "A800", "A40",  "A30",  "A10",
                                                 "L40S",  "L40",  "L4",   "V100", "T4"};
  for (std::string_view m : kModels) {
    std::size_t at = up.find(m);
    while (at != std::string::npos) {
      const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(up[at - 1]));
      const std::size_t after = at + m.size();
      const bool right = after == up.size() || !std::isdigit(static_cast<unsigned char>(up[after]));
      if (left && right) {
        return std::string(m);
      }
      at = up.find(m, at + 1);
    }
  }
  return "";
}

Bundle read_bundle(const std::string& dir) {
  Bundle b;
  b.path = dir;
  b.context = read_context(dir);
  if (auto t = table(dir, "hbm")) {
    for (std::size_t r = 0; r < t->rows(); ++r) {
      b.hbm.push_back({t->word(r, "kernel", {"read", "write", "copy", "triad", "memcpy"}),
                       t->number(r, "bytes", true), t->number(r, "time_us", true)});
    }
  }
  if (auto t = table(dir, "launch")) {
    for (std::size_t r = 0; r < t->rows(); ++r) {
      b.launch.push_back(
          {t->word(r, "kind", {"back_to_back", "synchronized"}), t->number(r, "time_us", true)});
    }
  }
  if (auto t = table(dir, "gemm")) {
    for (std::size_t r = 0; r < t->rows(); ++r) {
      b.gemm.push_back({t->integer(r, "m", 1, kMaxDim), t->integer(r, "n", 1, kMaxDim),
                        t->integer(r, "k", 1, kMaxDim), t->integer(r, "blocks", 0, kMaxBlocks),
                        t->number(r, "waves"), t->number(r, "time_us", true)});
    }
  }
  if (auto t = table(dir, "stream")) {
    for (std::size_t r = 0; r < t->rows(); ++r) {
      b.stream.push_back(
          {t->word(r, "class", {"elementwise", "norm", "optimizer"}), t->number(r, "elems", true),
           t->number(r, "bytes", true), t->number(r, "flops"),
           t->integer(r, "blocks", 1, kMaxBlocks),
           static_cast<int>(t->integer(r, "blocks_per_sm", 1, b.context.gpu.max_blocks_per_sm)),
           t->number(r, "time_us", true)});
    }
  }
  if (auto t = table(dir, "contention")) {
    for (std::size_t r = 0; r < t->rows(); ++r) {
      b.contention.push_back({static_cast<int>(t->integer(r, "ctas", 1, kMaxCtas)),
                              t->integer(r, "chunk_bytes", 1, kMaxChunk), t->number(r, "rate_GBps"),
                              t->integer(r, "m", 1, kMaxDim), t->integer(r, "n", 1, kMaxDim),
                              t->integer(r, "k", 1, kMaxDim), t->number(r, "gemm_alone_us", true),
                              t->number(r, "gemm_us", true), t->number(r, "occupier_GBps")});
    }
  }
  std::error_code ec;
  const fs::path raw = fs::path(dir) / "raw";
  if (fs::is_directory(raw, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(raw, ec)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with("nccl-") && name.ends_with(".txt")) {
        b.nccl_logs.push_back(e.path().string());
      }
    }
  }
  std::sort(b.nccl_logs.begin(), b.nccl_logs.end());
  if (b.hbm.empty() && b.launch.empty() && b.gemm.empty() && b.stream.empty() &&
      b.contention.empty() && b.nccl_logs.empty()) {
    throw Error(
        fmt::format("measurement bundle '{}' has no samples: raw/ holds none of hbm.csv, "
                    "launch.csv, gemm.csv, stream.csv, contention.csv, nccl-*.txt",
                    dir));
  }
  return b;
}

void write_bundle(const Bundle& b, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "raw", ec);
  if (ec) {
    throw Error(fmt::format("cannot create bundle folder '{}': {}", dir, ec.message()));
  }
  const BundleContext& c = b.context;
  json ctx = {{"format", kBundleFormat},
              {"version", kBundleVersion},
              {"synthetic", c.synthetic},
              {"gpu",
               {{"name", c.gpu.name},
                {"sms", c.gpu.sms},
                {"compute_capability", c.gpu.compute_capability},
                {"memory_bytes", c.gpu.memory_bytes},
                {"l2_bytes", c.gpu.l2_bytes},
                {"smem_per_sm_bytes", c.gpu.smem_per_sm_bytes},
                {"max_threads_per_sm", c.gpu.max_threads_per_sm},
                {"max_blocks_per_sm", c.gpu.max_blocks_per_sm},
                {"clock_MHz", c.gpu.clock_MHz},
                {"memory_clock_MHz", c.gpu.memory_clock_MHz},
                {"memory_bus_bits", c.gpu.memory_bus_bits}}},
              {"driver", c.driver},
              {"cuda_runtime", c.cuda_runtime},
              {"cublas", c.cublas},
              {"nccl", c.nccl},
              {"date", c.date},
              {"host", c.host},
              {"command_line", c.command_line},
              {"ranks", c.ranks}};
  write_file((fs::path(dir) / "context.json").string(), ctx.dump(1) + "\n", "bundle context");
  const auto raw = [&](std::string_view name, const std::string& text) {
    write_file((fs::path(dir) / "raw" / (std::string(name) + ".csv")).string(), text,
               "bundle file");
  };
  json summary = json::object();
  if (!b.hbm.empty()) {
    raw("hbm", csv<HbmSample>(b.hbm, "kernel,bytes,time_us", [](const HbmSample& s) {
          return s.kernel + "," + num(s.bytes) + "," + num(s.time_us);
        }));
    std::map<std::string, std::vector<double>> gbps;
    for (const HbmSample& s : b.hbm) {
      gbps[s.kernel + "_GBps"].push_back(s.bytes / (s.time_us * 1e3));
    }
    summary["hbm"] = medians_by(gbps);
  }
  if (!b.launch.empty()) {
    raw("launch", csv<LaunchSample>(b.launch, "kind,time_us", [](const LaunchSample& s) {
          return s.kind + "," + num(s.time_us);
        }));
    std::map<std::string, std::vector<double>> us;
    for (const LaunchSample& s : b.launch) {
      us[s.kind + "_us"].push_back(s.time_us);
    }
    summary["launch"] = medians_by(us);
  }
  if (!b.gemm.empty()) {
    raw("gemm", csv<GemmSample>(b.gemm, "m,n,k,blocks,waves,time_us", [](const GemmSample& s) {
          return fmt::format("{},{},{},{},{},{}", s.m, s.n, s.k, s.blocks, num(s.waves),
                             num(s.time_us));
        }));
    std::map<std::string, std::vector<double>> tflops;
    for (const GemmSample& s : b.gemm) {
      tflops[fmt::format("{}x{}x{}_TFLOPS", s.m, s.n, s.k)].push_back(
          2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) /
          (s.time_us * 1e6));
    }
    summary["gemm"] = medians_by(tflops);
  }
  if (!b.stream.empty()) {
    raw("stream",
        csv<StreamSample>(b.stream, "class,elems,bytes,flops,blocks,blocks_per_sm,time_us",
                          [](const StreamSample& s) {
                            return fmt::format("{},{},{},{},{},{},{}", s.cls, num(s.elems),
                                               num(s.bytes), num(s.flops), s.blocks,
                                               s.blocks_per_sm, num(s.time_us));
                          }));
    std::map<std::string, std::vector<double>> gbps;
    for (const StreamSample& s : b.stream) {
      gbps[fmt::format("{}_{}_GBps", s.cls, num(s.elems))].push_back(s.bytes / (s.time_us * 1e3));
    }
    summary["stream"] = medians_by(gbps);
  }
  if (!b.contention.empty()) {
    raw("contention",
        csv<ContentionSample>(
            b.contention, "ctas,chunk_bytes,rate_GBps,m,n,k,gemm_alone_us,gemm_us,occupier_GBps",
            [](const ContentionSample& s) {
              return fmt::format("{},{},{},{},{},{},{},{},{}", s.ctas, s.chunk_bytes,
                                 num(s.rate_GBps), s.m, s.n, s.k, num(s.gemm_alone_us),
                                 num(s.gemm_us), num(s.occupier_GBps));
            }));
    std::map<std::string, std::vector<double>> slow;
    for (const ContentionSample& s : b.contention) {
      slow[fmt::format("ctas{}_chunk{}_rate{}_slowdown", s.ctas, s.chunk_bytes, num(s.rate_GBps))]
          .push_back(s.gemm_us / s.gemm_alone_us);
    }
    summary["contention"] = medians_by(slow);
  }
  write_file((fs::path(dir) / "summary.json").string(), summary.dump(1) + "\n", "bundle summary");
}

}  // namespace lagom::calibrate
