// `lagom`: the command-line front end. Dispatches to subcommands; prints errors, never crashes.
#include <fmt/format.h>
#include <malloc.h>

#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/interrupt.hpp"
#include "lagom/common/memory.hpp"
#include "lagom/common/units.hpp"
#include "warnings.hpp"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Subcommand kSubcommands[] = {
    {"simulate", "replay a training step (workload JSON or Chakra ET); report step time, busy/idle",
     lagom::cli::simulate_command},
    {"comm", "time one collective over a range of sizes on a cluster (nccl-tests in silico)",
     lagom::cli::comm_command},
    {"calibrate", "fit a hardware profile to a GPU bundle or nccl-tests logs, or check one",
     lagom::cli::calibrate_command},
    {"overlap", "one collective beside compute kernels, swept over channels and chunk sizes",
     lagom::cli::overlap_command},
    {"cluster", "describe a cluster preset or file (fabric, NICs, communicator bottlenecks)",
     lagom::cli::cluster_command},
    {"export", "write a workload out as Chakra ET (one file per rank) or workload JSON",
     lagom::cli::export_command},
    {"tune", "search NCCL parameters for a step (lagom, autoccl, nccl, ...); write the plan",
     lagom::cli::tune_command},
    {"compare", "run several search methods on one step; one row per method",
     lagom::cli::compare_command},
    {"sensitivity", "rerun a comparison with each unmeasured profile number scaled",
     lagom::cli::sensitivity_command},
    {"sweep", "run a sweep file's points (threads or Slurm array shards); one CSV row each",
     lagom::cli::sweep_command},
    {"reproduce",
     "run the Lagom paper's experiments (fig3, fig5, fig7, fig8, table2) with verdicts",
     lagom::cli::reproduce_command},
    {"validate", "compare a step measured on GPUs (lagom-validate) with its simulation",
     lagom::cli::validate_command},
};

void print_help() {
  fmt::print(
      "lagom {}: discrete-event simulator and what-if analyzer for communication/computation\n"
      "overlap in distributed LLM training.\n\n"
      "Usage: lagom <command> [options]     (lagom <command> --help for its options)\n\n"
      "Commands:\n",
      lagom::version());
  for (const Subcommand& c : kSubcommands) {
    fmt::print("  {:<12}{}\n", c.name, c.summary);
  }
  fmt::print(
      "\nOptions:\n  -h, --help    show this help\n  --version     print the version\n\n"
      "Exit status: 0 success, 1 bad input or impossible request, 2 bad command line,\n"
      "130 interrupted (SIGINT/SIGTERM).\n\n"
      "Every command also takes:\n"
      "  --strict          warnings become errors\n"
      "  --max-memory SIZE the memory lagom may use (e.g. 64G, 1.5G; default: what the machine "
      "has\n"
      "                    available). Requests estimated to need more are refused up front.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Large simulations build and free arrays of millions of entries one after another (a reader's
  // columns, the builder's, the engine's). glibc maps each above 128 KiB afresh and unmaps it when
  // freed, so every one is page-faulted in again; kept in the heap, freed memory is reused.
  // Measured on a 4,096-rank Chakra trace: 1.34 s -> 1.19 s, peak RSS +3% (bench/RESULTS.md).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_help();
    return args.empty() ? lagom::cli::kExitUsage : lagom::cli::kExitOk;
  }
  if (args[0] == "--version") {
    fmt::print("lagom {} ({})\n", lagom::version(), lagom::git_sha());
    return lagom::cli::kExitOk;
  }
  const Subcommand* cmd = nullptr;
  for (const Subcommand& c : kSubcommands) {
    if (args[0] == c.name) {
      cmd = &c;
    }
  }
  if (cmd == nullptr) {
    fmt::print(stderr, "lagom: unknown command '{}'. Run 'lagom --help' for the list.\n", args[0]);
    return lagom::cli::kExitUsage;
  }
  // Accepted by every command: --strict (warnings, legal but suspicious input, become errors)
  // and --max-memory SIZE (the memory the process may use; common/memory.hpp).
  std::vector<std::string> rest;
  bool strict = false;
  bool max_memory_given = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--strict") {
      strict = true;
    } else if (args[i] == "--max-memory" || args[i].starts_with("--max-memory=")) {
      std::string value;
      if (args[i] != "--max-memory") {
        value = args[i].substr(std::strlen("--max-memory="));
      } else if (i + 1 < args.size()) {
        value = args[++i];
      }
      try {
        if (max_memory_given) {
          throw lagom::Error("--max-memory is given twice");
        }
        max_memory_given = true;
        const std::int64_t bytes = lagom::parse_bytes(value, "--max-memory");
        if (bytes < 1) {
          throw lagom::Error("--max-memory: must be at least 1 byte");
        }
        lagom::set_memory_limit(static_cast<std::uint64_t>(bytes));
      } catch (const lagom::Error& e) {
        fmt::print(stderr, "lagom {}: {}\nRun 'lagom {} --help' for the options.\n", cmd->name,
                   e.what(), cmd->name);
        return lagom::cli::kExitUsage;
      }
    } else {
      rest.push_back(args[i]);
    }
  }
  lagom::cli::set_warning_context(cmd->name, strict);
  lagom::install_interrupt_handlers();
  try {
    const int rc = cmd->run(rest);
    // A report lost to a full disk or a closed file is a failure, not a success.
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
      const int err = errno;
      fmt::print(stderr, "lagom {}: error: cannot write to standard output{}{}\n", cmd->name,
                 err != 0 ? ": " : "", err != 0 ? std::strerror(err) : "");
      return lagom::cli::kExitError;
    }
    return rc;
  } catch (const lagom::Interrupted&) {
    // Outputs are written whole or not at all (common/files.hpp); what a command keeps on an
    // interrupt it says itself before returning kExitInterrupted.
    fmt::print(stderr, "lagom {}: interrupted; nothing written\n", cmd->name);
    return lagom::cli::kExitInterrupted;
  } catch (const lagom::Error& e) {
    fmt::print(stderr, "lagom {}: error: {}\n", cmd->name, e.what());
    return lagom::cli::kExitError;
  } catch (const boost::program_options::error& e) {
    fmt::print(stderr, "lagom {}: {}\nRun 'lagom {} --help' for the options.\n", cmd->name,
               e.what(), cmd->name);
    return lagom::cli::kExitUsage;
  } catch (const std::system_error& e) {
    // The environment refused something (fmt's "cannot write to file" on a full disk): not a
    // fault of lagom's.
    fmt::print(stderr, "lagom {}: error: {}\n", cmd->name, e.what());
    return lagom::cli::kExitError;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "lagom {}: error: out of memory\n", cmd->name);
    return lagom::cli::kExitError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "lagom {}: internal error: {}\n", cmd->name, e.what());
    return lagom::cli::kExitError;
  }
}
