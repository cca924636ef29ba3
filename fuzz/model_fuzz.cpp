// Fuzzes the model reader (docs/formats/model.md).
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/models/model_spec.hpp"

int lagom::fuzz::model(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded(
      [&] { (void)lagom::models::parse_model_json(lagom::fuzz::text_of(data, size), "fuzz"); });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::model)
