// The sweep's console view (sweep_view.h): the per-model table and the summary.
#include "seam/reports/sweep_view.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using seam::properties::ModelTally;
using seam::properties::SweepResult;
using seam::properties::SweepSpec;

/// The row of `model` in the rendered table.
std::string rowOf(const std::string& out, const std::string& model) {
  const auto at = out.find("\n" + model + " ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

TEST(SweepView, AModelsRateCountsOnlyTheCasesThisRunComputedNotThoseAResumeReadBack) {
  SweepSpec spec;
  SweepResult r;
  ModelTally m;
  m.model = "nemotron-h-8b";
  m.checked = 900;
  m.refused = 100;
  m.run_here = 20;  // 980 cases came from the interrupted run's store
  m.seconds = 0.5;
  r.per_model.push_back(m);
  r.checked = 900;
  r.refused = 100;
  r.cases = 1000;
  r.run_here = 20;
  r.seconds = 0.5;
  const std::string out = seam::reports::renderSweep(spec, r);
  const std::string row = rowOf(out, "nemotron-h-8b");
  ASSERT_FALSE(row.empty()) << out;
  EXPECT_NE(row.find(" 40 "), std::string::npos) << row;  // 20 cases in 0.5 s
  EXPECT_EQ(row.find("2000"), std::string::npos) << row;  // not 1000 cases in 0.5 s
  EXPECT_NE(out.find("(980 of them by the interrupted run resumed here)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("1000 cases, 0 violations, 40 cases/s"), std::string::npos) << out;
}

}  // namespace
