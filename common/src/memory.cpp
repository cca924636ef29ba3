// Host memory: what the machine has available, the --max-memory limit, the check.
#include "lagom/common/memory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <string>

#include "lagom/common/error.hpp"

namespace lagom {

namespace {

// 0: no limit set (the machine's available memory applies).
std::atomic<std::uint64_t> g_memory_limit{0};

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size()) {
    return std::nullopt;  // "max": no limit
  }
  return v;
}

// The cgroup v2 room left: memory.max - memory.current of this process's cgroup.
std::optional<std::uint64_t> cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("0::")) {
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      const auto max = read_number(dir + "/memory.max");
      const auto cur = read_number(dir + "/memory.current");
      if (max && cur) {
        return *max > *cur ? *max - *cur : 0;
      }
    }
  }
  return std::nullopt;
}

// A size for messages, from bytes held as a double (estimates may exceed 2^63).
std::string size_text(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, kUnits[u]);
}

}  // namespace

std::optional<std::uint64_t> available_memory_bytes() {
  std::optional<std::uint64_t> avail;
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") {
      avail = kib * 1024;
      break;
    }
  }
  if (const auto room = cgroup_room(); room && (!avail || *room < *avail)) {
    avail = room;
  }
  return avail;
}

std::uint64_t resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(in >> size >> resident)) {
    return 0;
  }
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

void set_memory_limit(std::optional<std::uint64_t> bytes) {
  g_memory_limit.store(bytes.value_or(0));
}

std::optional<std::uint64_t> memory_limit() {
  const std::uint64_t v = g_memory_limit.load();
  return v == 0 ? std::nullopt : std::optional<std::uint64_t>(v);
}

void check_memory(double estimate_bytes, std::string_view what, std::string_view how,
                  std::string_view remedy) {
  double room = 0;
  std::string limit_text;
  if (const auto limit = memory_limit()) {
    const double held = static_cast<double>(resident_memory_bytes());
    room = static_cast<double>(*limit) - held;
    limit_text = fmt::format("the {} that --max-memory allows ({} already in use)",
                             size_text(static_cast<double>(*limit)), size_text(held));
  } else if (const auto avail = available_memory_bytes()) {
    room = static_cast<double>(*avail);
    limit_text = fmt::format("the {} this machine has available", size_text(room));
  } else {
    return;  // nothing known to compare with
  }
  if (!(estimate_bytes > room)) {
    return;
  }
  throw Error(fmt::format(
      "{} would need about {} of memory ({}), more than {}; {}, or raise the limit with "
      "--max-memory SIZE",
      what, size_text(estimate_bytes), how, limit_text, remedy));
}

}  // namespace lagom
