// Shared by the sim tests: cases from a bare pattern, built in one line.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>
#include <vector>

#include "seam/sim/case.h"

namespace seam::testing {

/// A case of a bare single-stage pattern (shapes borrowed as modelFromPattern does).
inline Case patternCase(std::string_view pattern, ParallelConfig config, std::vector<int> tokens,
                        Flags flags = {}) {
  Case c;
  auto model = modelFromPattern(pattern);
  EXPECT_TRUE(model.hasValue()) << pattern;
  if (model) c.model = *model;
  c.config = config;
  c.batch.tokens = std::move(tokens);
  c.flags = std::move(flags);
  return c;
}

}  // namespace seam::testing
