// The subcommands of `lagom`. Each takes its own arguments (after the subcommand name) and
// returns the process exit code; lagom::Error escapes to main(), which prints it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::cli {

// Exit codes: 0 success, 1 bad input or impossible request, 2 bad command line.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
// SIGINT/SIGTERM stopped the command (128 + SIGINT, as shells report it); what was kept is on
// stderr.
inline constexpr int kExitInterrupted = 130;

int simulate_command(const std::vector<std::string>& args);
int comm_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int overlap_command(const std::vector<std::string>& args);
int cluster_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);
int tune_command(const std::vector<std::string>& args);
int compare_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
// `lagom validate --published ...`: published training runs against their simulation.
int validate_published_command(const std::vector<std::string>& args);
int sensitivity_command(const std::vector<std::string>& args);
int reproduce_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);

// simulate, tune and compare with their --json report written to `json_out` (the text reports
// still go to stdout): what `lagom sweep` runs for each point, on its own thread.
int run_simulate(const std::vector<std::string>& args, std::ostream& json_out);
int run_tune(const std::vector<std::string>& args, std::ostream& json_out);
// Reads a sweep file's text and expands its points (docs/sweep.md); returns how many. lagom::Error
// for anything `lagom sweep` would refuse before running a point (fuzz/sweep_fuzz.cpp).
// `max_points` caps the expansion (the fuzzer keeps each input small).
std::size_t check_sweep(std::string_view text, const std::string& origin,
                        std::size_t max_points = 1000000);
int run_compare(const std::vector<std::string>& args, std::ostream& json_out);

}  // namespace lagom::cli
