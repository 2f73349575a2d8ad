// engineSpace: which cases of a sweep make one engine run, and which runs
// one recorder process runs as one server's forwards.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "seam/recordings/conformance.h"
#include "seam/sim/model/case_spec.h"

namespace seam::recordings {
namespace {

Case makeCase(int tp, int dp, const std::string& tokens, const std::string& mode,
              const std::string& padding = "max_len", bool tbo = false) {
  CaseSpec spec;
  spec.pattern = "M*-";
  spec.tp = tp;
  spec.dp = dp;
  spec.tokens = tokens;
  spec.mode = mode;
  spec.dp_padding = padding;
  spec.fusion = "off";
  spec.tbo = tbo;
  auto c = buildCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  return *c;
}

std::string describe(const Case& c) { return c.config.describe() + " " + c.batch.describe(); }

TEST(EngineSpace, CasesThatDifferOnlyInWhatTheEngineDecidesItselfShareOneRun) {
  // The DP padding is the engine's own choice, not a launch flag: one run.
  const EngineSpace space = engineSpace(
      {makeCase(4, 2, "2,1", "decode", "max_len"), makeCase(4, 2, "2,1", "decode", "sum_len")},
      describe);
  ASSERT_EQ(space.cases.size(), 2u);
  EXPECT_EQ(space.runs.size(), 1u);
  EXPECT_EQ(space.run_of, (std::vector<int>{0, 0}));
}

TEST(EngineSpace, RunsThatDifferOnlyInTheirBatchAreOneServer) {
  const EngineSpace space =
      engineSpace({makeCase(4, 2, "2,1", "decode"), makeCase(4, 2, "3,3", "decode"),
                   makeCase(4, 2, "2,1", "extend"), makeCase(4, 1, "2", "decode"),
                   makeCase(4, 2, "1,1", "decode")},
                  describe);
  ASSERT_EQ(space.runs.size(), 5u);
  // Three batches of tp 4 dp 2, one of tp 4 alone, then tp 4 dp 2 again.
  EXPECT_EQ(space.server_of, (std::vector<int>{0, 0, 0, 1, 0}));
}

TEST(EngineSpace, ALaunchFlagMakesAnotherServer) {
  const EngineSpace space = engineSpace(
      {makeCase(4, 2, "2,1", "decode"), makeCase(4, 2, "2,1", "decode", "max_len", true)},
      describe);
  ASSERT_EQ(space.runs.size(), 2u);
  EXPECT_EQ(space.server_of, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace seam::recordings
