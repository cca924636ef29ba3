// Runs the `lagom` binary in a test and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lagom::test {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory under the test's temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lagom-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return q + "'";
}

inline CliRun run_lagom(const std::vector<std::string>& args) {
  TempDir tmp;
  std::string cmd = shell_quote(LAGOM_CLI_PATH);
  for (const std::string& a : args) {
    cmd += " " + shell_quote(a);
  }
  cmd += " >" + shell_quote((tmp.path() / "out").string()) + " 2>" +
         shell_quote((tmp.path() / "err").string());
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(tmp.path() / "out");
  r.err = slurp(tmp.path() / "err");
  return r;
}

// (Built as a path: gcc 12's -Warray-bounds misfires on `std::string(...) + "/" + rel` once a
// unity build inlines it.)
inline std::string data_path(const std::string& rel) {
  return (std::filesystem::path(LAGOM_TEST_DATA) / rel).string();
}

}  // namespace lagom::test
