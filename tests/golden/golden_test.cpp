// Golden scenarios, in the style of SimGrid's .tesh files: each tests/golden/*.tesh holds comment
// lines (#), one command line ($ lagom ...), the exact standard output it prints and, after a
// "--- stderr" line, the exact standard error. A behaviour change of any kind (a number, a
// warning, a column) shows up as a diff here. Two things that differ between builds are masked
// before comparing: the git revision (banner and JSON context) and the wall time a search
// reports.
//
// LAGOM_UPDATE_GOLDEN=1 rewrites the files from what the binary prints (review the diff).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace lagom::test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStderrMarker = "--- stderr\n";

struct Scenario {
  fs::path file;
  std::vector<std::string> comments;
  std::string command;  // after "$ lagom "
  std::string expected_out;
  std::string expected_err;
};

fs::path golden_dir() {
  return fs::path(LAGOM_SOURCE_DIR) / "tests" / "golden";
}

std::vector<fs::path> scenario_files() {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(golden_dir())) {
    if (e.path().extension() == ".tesh") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

Scenario read_scenario(const fs::path& file) {
  Scenario s{file, {}, {}, {}, {}};
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line) && !line.starts_with("$ ")) {
    s.comments.push_back(line);
  }
  if (!line.starts_with("$ lagom ")) {
    ADD_FAILURE() << file << ": no '$ lagom ...' command line";
    return s;
  }
  s.command = line.substr(8);
  std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t marker = rest.find(kStderrMarker);
  s.expected_out = rest.substr(0, marker);
  if (marker != std::string::npos) {
    s.expected_err = rest.substr(marker + kStderrMarker.size());
  }
  return s;
}

// Whitespace-separated words; the scenarios quote nothing.
std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  for (std::string w; in >> w;) {
    words.push_back(w);
  }
  return words;
}

// Replaces, in every occurrence of `before` in `text`, the characters that follow it up to
// (not including) the first one `stop` accepts, when `is_masked` accepts that stretch.
template <typename Stop, typename Check>
std::string mask_after(const std::string& text, std::string_view before, std::string_view with,
                       Stop stop, Check is_masked) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit = text.find(before); hit != std::string::npos;
       hit = text.find(before, hit + 1)) {
    const std::size_t from = hit + before.size();
    std::size_t to = from;
    while (to < text.size() && !stop(text[to])) {
      ++to;
    }
    if (to < text.size() && is_masked(std::string_view(text).substr(from, to - from))) {
      out.append(text, at, from - at);
      out += with;
      at = to;
    }
  }
  out.append(text, at, std::string::npos);
  return out;
}

bool is_revision(std::string_view s) {  // 12 hex digits, "-dirty" after them, or "unknown"
  if (s == "unknown") {
    return true;
  }
  if (s.ends_with("-dirty")) {
    s.remove_suffix(6);
  }
  return s.size() == 12 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The banner's revision ("lagom 0.1.0 (6c1aa388292e-dirty) simulate"), the JSON context's
// "git_sha" and a search's wall time ("17 evaluations in 51 ms") change from build to build;
// nothing else may. (Hand-written rather than std::regex, which GCC 12 warns about under the
// sanitizers.)
std::string mask(const std::string& text) {
  std::string out = mask_after(
      text, " (", "<git>", [](char c) { return c == ')' || c == '\n'; }, is_revision);
  out = mask_after(
      out, "\"git_sha\": \"", "<git>", [](char c) { return c == '"' || c == '\n'; },
      [](std::string_view) { return true; });
  return mask_after(
      out, "evaluations in ", "<wall>", [](char c) { return c == '\n'; },
      [](std::string_view s) {
        const std::size_t space = s.find(' ');
        const std::string_view number = s.substr(0, space);
        const std::string_view unit = space == std::string_view::npos ? "" : s.substr(space + 1);
        return !number.empty() && (unit == "ms" || unit == "s") &&
               std::all_of(number.begin(), number.end(),
                           [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
      });
}

class Golden : public ::testing::TestWithParam<fs::path> {};

TEST_P(Golden, OutputIsUnchanged) {
  const Scenario s = read_scenario(GetParam());
  ASSERT_FALSE(s.command.empty());
  const CliRun run = run_lagom(split_words(s.command));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string out = mask(run.out);
  const std::string err = mask(run.err);
  if (std::getenv("LAGOM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream f(s.file, std::ios::binary);
    for (const std::string& c : s.comments) {
      f << c << '\n';
    }
    f << "$ lagom " << s.command << '\n' << out;
    if (!err.empty()) {
      f << kStderrMarker << err;
    }
    GTEST_SKIP() << "rewrote " << s.file;
  }
  EXPECT_EQ(out, s.expected_out) << "stdout of: lagom " << s.command;
  EXPECT_EQ(err, s.expected_err) << "stderr of: lagom " << s.command;
}

std::string scenario_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string n = info.param.stem().string();
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(scenario_files()), scenario_name);

TEST(GoldenMask, HidesOnlyTheRevisionAndWallTime) {
  EXPECT_EQ(mask("lagom 0.1.0 (6c1aa388292e-dirty) tune\n"), "lagom 0.1.0 (<git>) tune\n");
  EXPECT_EQ(mask("lagom 0.1.0 (unknown) tune\n"), "lagom 0.1.0 (<git>) tune\n");
  EXPECT_EQ(mask("17 evaluations in 51 ms\n"), "17 evaluations in <wall>\n");
  EXPECT_EQ(mask("17 evaluations in 1.5 s\n"), "17 evaluations in <wall>\n");
  EXPECT_EQ(mask("note (see above) here\n"), "note (see above) here\n");
  EXPECT_EQ(mask(R"( "git_sha": "6c1aa388292e",)"), R"( "git_sha": "<git>",)");
  EXPECT_EQ(mask("step time 12.5 ms\n"), "step time 12.5 ms\n");
}

}  // namespace
}  // namespace lagom::test
