// Fuzzes the hardware profile reader (docs/formats/profile.md); what it accepts must survive a
// round trip through profile_to_json.
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/hardware/profile.hpp"

int lagom::fuzz::profile(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const lagom::hardware::HardwareProfile p =
        lagom::hardware::parse_profile_json(lagom::fuzz::text_of(data, size), "fuzz");
    const std::string once = lagom::hardware::profile_to_json(p);
    lagom::fuzz::require(lagom::fuzz::reread(
                             [&] {
                               return lagom::hardware::profile_to_json(
                                   lagom::hardware::parse_profile_json(once, "round trip"));
                             },
                             "our profile JSON is refused") == once,
                         "the profile does not survive a round trip");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::profile)
