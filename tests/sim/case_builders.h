// Shared by the sim tests: cases from a bare pattern, built in one line.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>
#include <vector>

#include "seam/sim/case.h"

namespace seam::testing {

/// A case of a bare pattern (shapes borrowed as modelFromPattern does).
inline Case patternCase(std::string_view pattern, ParallelConfig config, std::vector<int> tokens,
                        Flags flags = {}, LayerFamily family = LayerFamily::kSingleStage) {
  Case c;
  auto model = modelFromPattern(pattern, family);
  EXPECT_TRUE(model.hasValue()) << pattern;
  if (model) c.model = *model;
  c.config = config;
  c.batch.tokens = std::move(tokens);
  c.flags = std::move(flags);
  return c;
}

/// A case of a bare two-stage pattern (mixer then FFN per decoder layer).
inline Case twoStageCase(std::string_view pattern, ParallelConfig config, std::vector<int> tokens,
                         Flags flags = {}) {
  return patternCase(pattern, config, std::move(tokens), std::move(flags), LayerFamily::kTwoStage);
}

}  // namespace seam::testing
