// Atomic output files (common/files.hpp): a write that fails, throws or is killed leaves the
// previous file whole and no partial target.
#include "lagom/common/files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "cli_runner.hpp"
#include "lagom/common/error.hpp"

namespace lagom::test {
namespace {

namespace fs = std::filesystem;

// The directory's entries other than `except`.
std::vector<std::string> others(const fs::path& dir, const std::string& except) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != except) {
      out.push_back(e.path().filename().string());
    }
  }
  return out;
}

TEST(AtomicWrite, ReplacesTheFileAndLeavesNoTemporary) {
  TempDir tmp;
  const std::string path = (tmp.path() / "plan.json").string();
  write_file(path, "old\n");
  write_file(path, "new\n", "plan");
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_TRUE(others(tmp.path(), "plan.json").empty());
}

TEST(AtomicWrite, AWriterThatThrowsKeepsThePreviousFile) {
  TempDir tmp;
  const std::string path = (tmp.path() / "trace.json").string();
  write_file(path, "previous\n");
  EXPECT_THROW(write_file_with(path,
                               [](std::ostream& out) {
                                 out << "half a docu";
                                 throw std::runtime_error("interrupted");
                               }),
               std::runtime_error);
  EXPECT_EQ(slurp(path), "previous\n");
  EXPECT_TRUE(others(tmp.path(), "trace.json").empty());
}

TEST(AtomicWrite, AMissingDirectoryNamesTheTarget) {
  TempDir tmp;
  const std::string path = (tmp.path() / "no-such-dir" / "out.csv").string();
  try {
    write_file(path, "x", "CSV file");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot write CSV file '" + path + "': No such file or directory");
  }
}

TEST(AtomicWrite, KeepsPermissionsAndFollowsSymlinks) {
  TempDir tmp;
  const fs::path real = tmp.path() / "real.json";
  write_file(real.string(), "one");
  ASSERT_EQ(::chmod(real.c_str(), 0600), 0);
  const fs::path link = tmp.path() / "link.json";
  fs::create_symlink(real, link);
  write_file(link.string(), "two");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "two");
  struct stat st {};
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AtomicWrite, ADanglingLinkGetsItsTargetCreated) {
  TempDir tmp;
  const fs::path link = tmp.path() / "latest.json";
  fs::create_symlink("runs/one.json", link);  // relative, resolved against the link's directory
  fs::create_directories(tmp.path() / "runs");
  write_file(link.string(), "made");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(tmp.path() / "runs" / "one.json"), "made");
}

TEST(AtomicWrite, ADeviceIsWrittenInPlace) {
  write_file("/dev/null", "discarded");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A writer killed (SIGKILL) in the middle of its document: the target still holds the previous
// file, whole; only the hidden temporary is left behind.
TEST(AtomicWrite, AWriterKilledMidwayLeavesThePreviousFileWhole) {
  TempDir tmp;
  const std::string path = (tmp.path() / "profile.json").string();
  write_file(path, "{\"previous\": true}\n");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write_file_with(path, [](std::ostream& out) {
      out << std::string(1 << 20, 'x') << std::flush;  // a megabyte on disk, then stuck
      ::pause();
    });
    ::_exit(0);
  }
  // Wait (up to 10 s) until the child's temporary file holds its megabyte, then kill it.
  bool midway = false;
  for (int i = 0; i < 1000 && !midway; ++i) {
    for (const std::string& name : others(tmp.path(), "profile.json")) {
      std::error_code ec;
      midway = midway || fs::file_size(tmp.path() / name, ec) >= (1u << 20);
    }
    if (!midway) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(midway) << "the writer never got halfway";
  EXPECT_EQ(slurp(path), "{\"previous\": true}\n");
}

}  // namespace
}  // namespace lagom::test
