// Writing output files (see files.hpp): atomically, through a temporary file beside the target.
#include "lagom/common/files.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "lagom/common/error.hpp"

namespace lagom {
namespace {

std::string named(std::string_view what, const std::string& path) {
  return what.empty() ? fmt::format("'{}'", path) : fmt::format("{} '{}'", what, path);
}

// A target that exists and is not a regular file (/dev/stdout, a FIFO, a terminal) cannot be
// replaced by a rename: it is written in place.
bool written_in_place(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

// "<dir>/.<name>.lagom-tmp.<pid>.<n>": hidden, beside the target (so that rename() stays on one
// file system), unique per process and call.
std::string temporary_beside(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return fmt::format("{}.{}.lagom-tmp.{}.{}", dir, name, ::getpid(), counter++);
}

// Removes the temporary file when the write did not complete.
struct TemporaryFile {
  std::string path;
  bool kept = false;
  ~TemporaryFile() {
    if (!kept) {
      std::remove(path.c_str());
    }
  }
};

void write_stream(std::ofstream& out, const std::string& shown, std::string_view what,
                  const std::function<void(std::ostream&)>& write) {
  if (!out) {
    throw Error(fmt::format("cannot write {}: {}", named(what, shown), std::strerror(errno)));
  }
  write(out);
  out.close();
  if (!out) {
    throw Error(fmt::format("error while writing {}", named(what, shown)));
  }
}

}  // namespace

void write_file_with(const std::string& given, const std::function<void(std::ostream&)>& write,
                     std::string_view what) {
  // Through a symbolic link to the file it names, as a plain write would.
  std::error_code ec;
  const std::string path = std::filesystem::is_symlink(given, ec)
                               ? std::filesystem::weakly_canonical(given, ec).string()
                               : given;
  if (written_in_place(path)) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    write_stream(out, path, what, write);
    return;
  }
  TemporaryFile tmp{temporary_beside(path)};
  {
    std::ofstream out(tmp.path, std::ios::binary | std::ios::trunc);
    if (!out) {  // the directory is missing or not writable: name the target, not the temporary
      throw Error(fmt::format("cannot write {}: {}", named(what, path), std::strerror(errno)));
    }
    write_stream(out, path, what, write);
  }
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0) {  // a replaced file keeps its permissions
    ::chmod(tmp.path.c_str(), old.st_mode & 07777);
  }
  if (std::rename(tmp.path.c_str(), path.c_str()) != 0) {
    throw Error(fmt::format("cannot write {}: {}", named(what, path), std::strerror(errno)));
  }
  tmp.kept = true;
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
