// See command_line.hpp.
#include "command_line.hpp"

#include <iostream>

#include "lagom/common/error.hpp"
#include "lagom/common/numbers.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

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
