// See command_line.hpp.
#include "command_line.hpp"

#include <fmt/format.h>

#include <boost/any.hpp>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>
#include <vector>

#include "lagom/common/error.hpp"
#include "lagom/common/numbers.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

// Two outputs of one command written to the same file: the second would replace the first
// (`tune --out plan.json --csv plan.json` left the CSV), so the command line is refused.
void refuse_shared_outputs(const po::variables_map& vm) {
  static constexpr const char* kOutputs[] = {
      "out", "csv", "csv-ranks", "trace", "export-env", "export-nccl-tuner", "jsonl", "output"};
  std::vector<std::pair<std::string, std::filesystem::path>> seen;
  for (const char* name : kOutputs) {
    const auto it = vm.find(name);
    if (it == vm.end() || it->second.empty() || it->second.defaulted()) {
      continue;
    }
    const auto* text = boost::any_cast<std::string>(&it->second.value());
    if (text != nullptr && text->empty()) {
      throw po::error(fmt::format("--{}: an empty file name (it would write nothing)", name));
    }
    if (text == nullptr || *text == "-") {
      continue;
    }
    std::error_code ec;
    std::filesystem::path path = std::filesystem::weakly_canonical(*text, ec);
    if (ec) {
      path = std::filesystem::absolute(*text).lexically_normal();
    }
    for (const auto& [other, other_path] : seen) {
      if (other_path == path) {
        throw po::error(
            fmt::format("--{} and --{} name the same file '{}': each output needs a "
                        "file of its own",
                        other, name, *text));
      }
    }
    seen.emplace_back(name, std::move(path));
  }
}

}  // namespace

bool parse_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                        po::variables_map& vm,
                        const po::positional_options_description* positional) {
  po::command_line_parser parser(args);
  parser.options(desc);
  if (positional != nullptr) {
    parser.positional(*positional);
  }
  po::store(parser.run(), vm);
  po::notify(vm);
  refuse_shared_outputs(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n"
              << "Every command also takes:\n"
                 "  --strict              warnings become errors\n"
                 "  --max-memory SIZE     the memory lagom may use (e.g. 64G, 1.5G; default: what "
                 "the\n"
                 "                        machine has available); requests estimated to need "
                 "more are\n"
                 "                        refused before allocating\n";
    return false;
  }
  return true;
}

template <class Int>
po::typed_value<std::string>* integer_option(Int* target, std::string name, std::int64_t min,
                                             std::int64_t max, std::string unit) {
  return po::value<std::string>()->notifier(
      [target, name = std::move(name), min, max, unit = std::move(unit)](const std::string& text) {
        try {
          *target = static_cast<Int>(parse_integer(text, name, min, max, unit));
        } catch (const Error& e) {
          throw po::error(e.what());
        }
      });
}

template po::typed_value<std::string>* integer_option<int>(int*, std::string, std::int64_t,
                                                           std::int64_t, std::string);
template po::typed_value<std::string>* integer_option<std::int64_t>(std::int64_t*, std::string,
                                                                    std::int64_t, std::int64_t,
                                                                    std::string);
template po::typed_value<std::string>* integer_option<std::uint64_t>(std::uint64_t*, std::string,
                                                                     std::int64_t, std::int64_t,
                                                                     std::string);

po::typed_value<std::string>* real_option(double* target, std::string name, double min, double max,
                                          std::string unit) {
  return po::value<std::string>()->notifier(
      [target, name = std::move(name), min, max, unit = std::move(unit)](const std::string& text) {
        try {
          *target = parse_real(text, name, min, max, unit);
        } catch (const Error& e) {
          throw po::error(e.what());
        }
      });
}

}  // namespace lagom::cli
