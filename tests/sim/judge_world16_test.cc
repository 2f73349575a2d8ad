// The judges' groups, rows and DP lowering against the planner's copies on
// every geometry and every DP op of the world-16 sweep space (the world-8
// space is sim_test's): minutes on two cores, so `slow`.
#include <gtest/gtest.h>

#include "judge_agreement.h"

namespace seam {
namespace {

TEST(JudgeWorld16, RowsAndGroupsAgreeWithThePlannersOnEveryGeometryOfTheWorld16Sweep) {
  judge_agreement::expectRowsAgreeOverSweep(16, 1000);
}

TEST(JudgeWorld16, EveryDpOpOfTheWorld16SweepLowersAsLowerDpOpDoesUnderEveryFault) {
  judge_agreement::expectDpAgreesOverSweep(16, 10000);
}

}  // namespace
}  // namespace seam
