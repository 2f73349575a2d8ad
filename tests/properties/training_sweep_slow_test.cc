// The training sweeps at worlds 8 and 16 hold (0 violations); minutes on 2
// cores, so labelled `slow` (SEAM_SLOW=1 tools/test.sh).
#include <gtest/gtest.h>

#include "seam/properties/training_sweep.h"

namespace seam::properties {
namespace {

TEST(TrainingSweepSlow, AtWorldsEightAndSixteenNoCaseIsViolated) {
  for (int world : {8, 16}) {
    TrainingSweepSpec spec;
    spec.world = world;
    spec.jobs = 2;
    auto r = runTrainingSweep(spec);
    ASSERT_TRUE(r.hasValue());
    EXPECT_EQ(r->violated, 0) << world;
    EXPECT_GT(r->checked, 100) << world;
  }
}

}  // namespace
}  // namespace seam::properties
