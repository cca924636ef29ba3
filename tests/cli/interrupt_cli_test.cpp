// SIGINT and SIGTERM (common/interrupt.hpp): a long command stops, exits 130, says on stderr what
// it kept, and writes only whole files. Real signals, delivered by timeout(1) after a few
// seconds; excluded under the sanitizers with the other slow CLI tests.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "cli_runner.hpp"
#include "lagom/search/plan.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

struct Stopped {
  int exit_code = -1;
  std::string err;
};

// Runs `lagom args...` and sends it `signal` after `seconds`.
Stopped stop_after(const TempDir& dir, const char* signal, int seconds,
                   const std::vector<std::string>& args) {
  std::string cmd = "timeout --preserve-status -s " + std::string(signal) + " " +
                    std::to_string(seconds) + " " + shell_quote(LAGOM_CLI_PATH);
  for (const std::string& a : args) {
    cmd += " " + shell_quote(a);
  }
  const std::string err = (dir.path() / "stderr").string();
  cmd += " >/dev/null 2>" + shell_quote(err);
  const int status = std::system(cmd.c_str());
  Stopped s;
  s.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  s.err = slurp(err);
  return s;
}

// A random search far longer than the test: stopped after 6 s (long past NCCL's evaluation),
// it writes the fastest plan evaluated so far and says so, on one thread or three (-j).
TEST(InterruptSlow, TuneWritesTheBestPlanSoFar) {
  for (const char* jobs : {"1", "3"}) {
    SCOPED_TRACE(jobs);
    TempDir dir;
    const std::string plan = (dir.path() / "plan.json").string();
    const Stopped s = stop_after(dir, "INT", 6,
                                 {"tune", "--model", "phi-2", "--parallel", "fsdp=8", "--cluster",
                                  "a40-nvlink", "--seq", "512", "--gbs", "8", "--method", "random",
                                  "--budget", "100000000", "-j", jobs, "--out", plan});
    EXPECT_EQ(s.exit_code, 130) << s.err;
    EXPECT_TRUE(contains(s.err, "lagom tune: interrupted after ")) << s.err;
    EXPECT_TRUE(contains(s.err, "the best plan so far")) << s.err;
    EXPECT_TRUE(contains(s.err, "written to " + plan)) << s.err;
    const search::ConfigPlan p = search::load_plan_file(plan);
    EXPECT_EQ(p.context.method, "random");
    EXPECT_GE(p.context.evaluations, 2);
    EXPECT_LE(p.context.step_time_us, p.context.nccl_step_time_us);
  }
}

// A simulation stopped by SIGTERM (Slurm's scancel) exits 130 and leaves no output file.
TEST(InterruptSlow, SimulateStopsAndWritesNothing) {
  TempDir dir;
  const std::string csv = (dir.path() / "ops.csv").string();
  const Stopped s =
      stop_after(dir, "TERM", 2,
                 {"simulate", "--model", "gpt3-175b", "--parallel", "tp=8,pp=8,dp=2", "--cluster",
                  "dgx-h100", "--nodes", "16", "--gbs", "1024", "--csv", csv});
  if (s.exit_code == 0) {
    GTEST_SKIP() << "the simulation finished before the signal";
  }
  EXPECT_EQ(s.exit_code, 130) << s.err;
  EXPECT_TRUE(contains(s.err, "lagom simulate: interrupted; nothing written")) << s.err;
  EXPECT_FALSE(std::filesystem::exists(csv));
}

}  // namespace
}  // namespace lagom::test
