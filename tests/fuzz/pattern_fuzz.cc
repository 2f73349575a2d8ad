// Fuzzes parsePattern (sim/pattern.h) in every alphabet and modelFromPattern
// in both families (what --pattern and --family go through). A pattern is
// refused with a one-line message or parsed; a parsed pattern's canonical
// text parses back to the same pattern.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/pattern.h"

namespace {

void checkAlphabet(std::string_view text, seam::PatternAlphabet alphabet) {
  auto parsed = seam::parsePattern(text, alphabet);
  if (!parsed) {
    seam::fuzz::requireOneLineError(parsed.status());
    return;
  }
  const seam::Pattern& p = *parsed;
  for (std::size_t i = 0; i < p.cuts.size(); ++i) {
    seam::fuzz::require(p.cuts[i] > 0 && p.cuts[i] < p.size(), "a cut outside the stack");
    seam::fuzz::require(i == 0 || p.cuts[i - 1] < p.cuts[i], "cuts not ascending");
  }
  auto again = seam::parsePattern(p.text(), alphabet);
  seam::fuzz::require(again.hasValue(),
                      "the canonical text of a parsed pattern is refused: " + p.text());
  seam::fuzz::require(*again == p, "the canonical text parses to another pattern: " + p.text());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  checkAlphabet(text, seam::PatternAlphabet::kSingleStage);
  checkAlphabet(text, seam::PatternAlphabet::kMixerOnly);
  checkAlphabet(text, seam::PatternAlphabet::kTwoStage);
  for (const seam::LayerFamily family :
       {seam::LayerFamily::kSingleStage, seam::LayerFamily::kTwoStage}) {
    auto model = seam::modelFromPattern(text, family);
    if (!model) {
      seam::fuzz::requireOneLineError(model.status());
    } else {
      seam::fuzz::require(model->pattern.size() > 0, "a model of an empty pattern");
      seam::fuzz::require(model->pattern.size() % model->stagesPerLayer() == 0,
                          "a two-stage model with half a decoder layer");
    }
  }
  return 0;
}
