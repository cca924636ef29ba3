// Every libFuzzer harness (fuzz/) run on its seeds and on every input a fuzzer ever found
// (tests/data/fuzz/<target>/): the harness's properties (only lagom::Error for bad input, round
// trips) are checked here in every build, and each past finding stays fixed. A finding aborts
// the test with the harness's "finding: ..." line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../../fuzz/harnesses.hpp"
#include "cli_runner.hpp"

namespace lagom::test {
namespace {

namespace fs = std::filesystem;

using Harness = int (*)(const std::uint8_t*, std::size_t);

// The harnesses replayed here. tuner_plan is not: it links the plugin's source, which the test
// binary loads as a shared object instead (tests/tuner/); its seeds are the plan's.
const std::map<std::string, Harness>& harnesses() {
  static const std::map<std::string, Harness> all = {{"workload_json", fuzz::workload_json},
                                                     {"chakra", fuzz::chakra},
                                                     {"nccl_tests_log", fuzz::nccl_tests_log},
                                                     {"cluster", fuzz::cluster},
                                                     {"profile", fuzz::profile},
                                                     {"model", fuzz::model},
                                                     {"published_runs", fuzz::published_runs},
                                                     {"plan", fuzz::plan},
                                                     {"parallel_spec", fuzz::parallel_spec},
                                                     {"placement", fuzz::placement},
                                                     {"compute_spec", fuzz::compute_spec},
                                                     {"sweep", fuzz::sweep}};
  return all;
}

// fuzz/targets.txt: name -> seed directories (the dictionary column skipped).
std::map<std::string, std::vector<fs::path>> targets() {
  std::map<std::string, std::vector<fs::path>> out;
  std::ifstream in(fs::path(LAGOM_SOURCE_DIR) / "fuzz" / "targets.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream words(line);
    std::string name, dict, dir;
    words >> name >> dict;
    while (words >> dir) {
      out[name].push_back(fs::path(LAGOM_SOURCE_DIR) / dir);
    }
    out[name].push_back(fs::path(LAGOM_TEST_DATA) / "fuzz" / name);
  }
  return out;
}

TEST(FuzzReplay, EveryTargetHasAHarnessAndSeeds) {
  const auto all = targets();
  EXPECT_EQ(all.size(), harnesses().size() + 1);  // + tuner_plan
  for (const auto& [name, dirs] : all) {
    EXPECT_TRUE(name == "tuner_plan" || harnesses().contains(name)) << name;
    std::size_t files = 0;
    for (const fs::path& d : dirs) {
      if (fs::is_directory(d)) {
        files += static_cast<std::size_t>(std::distance(fs::directory_iterator(d), {}));
      }
    }
    EXPECT_GT(files, 0u) << name << " has no seeds";
  }
}

TEST(FuzzReplay, SeedsAndPastFindingsPassEveryHarness) {
  std::size_t replayed = 0;
  for (const auto& [name, dirs] : targets()) {
    const auto h = harnesses().find(name);
    if (h == harnesses().end()) {
      continue;
    }
    for (const fs::path& d : dirs) {
      if (!fs::is_directory(d)) {
        continue;
      }
      for (const fs::directory_entry& e : fs::directory_iterator(d)) {
        if (!e.is_regular_file()) {
          continue;
        }
        const std::string bytes = slurp(e.path());
        SCOPED_TRACE(name + " on " + e.path().string());
        EXPECT_EQ(h->second(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
        ++replayed;
      }
    }
  }
  EXPECT_GT(replayed, 30u);
}

}  // namespace
}  // namespace lagom::test
