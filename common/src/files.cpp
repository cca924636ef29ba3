// Writing output files (see files.hpp): atomically, through a temporary file beside the target.
#include "lagom/common/files.hpp"

#include <fcntl.h>
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

// The file a chain of symbolic links ends at (relative links resolved against their own
// directory), so that the rename replaces that file and keeps the links; `path` itself when it
// is not a link, and the last link when the chain is dangling or loops (at most 40 links).
std::string link_target(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  for (int i = 0; i < 40; ++i) {
    std::error_code ec;
    if (!fs::is_symlink(p, ec) || ec) {
      break;
    }
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) {
      break;
    }
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  return p.string();
}

// Creates "<dir>/.<name>.lagom-tmp.<pid>.<n>" exclusively (O_EXCL, no link followed): hidden,
// beside the target so that rename() stays on one file system, never an existing file.
std::string create_temporary_beside(const std::string& path, const std::string& given,
                                    std::string_view what) {
  static std::atomic<unsigned> counter{0};
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  for (;;) {
    std::string tmp = fmt::format("{}.{}.lagom-tmp.{}.{}", dir, name, ::getpid(), counter++);
    const int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return tmp;
    }
    if (errno != EEXIST) {  // a missing or read-only directory: name the target
      throw Error(fmt::format("cannot write {}: {}", named(what, given), std::strerror(errno)));
    }
  }
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
  // /dev/stdout, /dev/fd/N, /proc/self/fd/N (a pipe, a terminal, or a file the shell opened,
  // perhaps for appending) and anything else that is not a regular file: written in place.
  if (given.starts_with("/dev/") || given.starts_with("/proc/") || written_in_place(given)) {
    std::ofstream out(given, std::ios::binary | std::ios::trunc);
    write_stream(out, given, what, write);
    return;
  }
  const std::string path = link_target(given);
  TemporaryFile tmp{create_temporary_beside(path, given, what)};
  {
    std::ofstream out(tmp.path, std::ios::binary | std::ios::trunc);
    write_stream(out, given, what, write);
  }
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0) {  // a replaced file keeps its permissions
    ::chmod(tmp.path.c_str(), old.st_mode & 07777);
  }
  if (std::rename(tmp.path.c_str(), path.c_str()) != 0) {
    throw Error(fmt::format("cannot write {}: {}", named(what, given), std::strerror(errno)));
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
