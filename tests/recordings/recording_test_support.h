// What the recordings tests share: the built recordings' folder, the case
// every serving recording under it runs, and reading one that must read.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace seam::recordings::test_support {

inline const std::string kData = std::string(SEAM_SOURCE_DIR) + "/tests/data/recordings/";

/// The case every built serving recording runs: --pattern '*E' --tp 4 --dp 2
/// --ep 4 --tokens 2,2 (make_recordings.py).
inline Plan dpCasePlan() {
  CaseSpec spec;
  spec.pattern = "*E";
  spec.tp = 4;
  spec.dp = 2;
  spec.ep = 4;
  spec.tokens = "2,2";
  auto c = buildCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  EXPECT_TRUE(plan) << plan.status().message();
  return *plan;
}

/// The recording at `rel` under kData; an empty one (and a failure) when refused.
inline Recording mustRead(const std::string& rel) {
  auto rec = readRecording(kData + rel);
  EXPECT_TRUE(rec) << rec.status().message();
  return rec ? *rec : Recording{};
}

}  // namespace seam::recordings::test_support
