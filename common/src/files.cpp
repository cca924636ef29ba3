// Writing output files (see files.hpp).
#include "lagom/common/files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "lagom/common/error.hpp"

namespace lagom {
namespace {

std::string named(std::string_view what, const std::string& path) {
  return what.empty() ? fmt::format("'{}'", path) : fmt::format("{} '{}'", what, path);
}

}  // namespace

void write_file_with(const std::string& path, const std::function<void(std::ostream&)>& write,
                     std::string_view what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(fmt::format("cannot write {}: {}", named(what, path), std::strerror(errno)));
  }
  write(out);
  out.close();
  if (!out) {
    throw Error(fmt::format("error while writing {}", named(what, path)));
  }
}

void write_file(const std::string& path, std::string_view bytes, std::string_view what) {
  write_file_with(
      path,
      [&](std::ostream& out) {
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      },
      what);
}

}  // namespace lagom
