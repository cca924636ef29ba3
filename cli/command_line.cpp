// See command_line.hpp.
#include "command_line.hpp"

#include <iostream>

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
    std::cout << desc << "\n";
    return false;
  }
  return true;
}

}  // namespace lagom::cli
