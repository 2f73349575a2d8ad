// The campaign's score and what it prints: killed over killed + survived,
// with the coverage beside it; equivalent, not covered and planner errors
// outside the score; every kill with the line that replays it.
#include "seam/reports/mutate_view.h"

#include <gtest/gtest.h>

namespace seam::reports {
namespace {

TEST(Score, IsKilledOverKilledAndSurvivedWithCoverageBeside) {
  StatusCounts c;
  c.killed = 3;
  c.survived = 1;
  c.equivalent = 2;
  c.not_covered = 4;
  c.planner_errors = 1;
  EXPECT_EQ(scoreLine(c),
            "mutation score: 3/4 (75.0%), 1 survived; coverage: 7/11 reached (4 not covered), 2 "
            "equivalent, 1 planner errors");
}

TEST(Score, NotCoveredAndPlannerErrorsNeverRaiseIt) {
  StatusCounts c;
  c.killed = 1;
  c.survived = 1;
  const std::string before = scoreLine(c);
  c.not_covered = 10;
  c.planner_errors = 10;
  const std::string after = scoreLine(c);
  EXPECT_EQ(before.substr(0, before.find(';')), after.substr(0, after.find(';')));
  EXPECT_EQ(after.substr(0, after.find(';')), "mutation score: 1/2 (50.0%), 1 survived");
}

TEST(Score, WithNothingScoredSaysSoRatherThanAHundredPercent) {
  StatusCounts c;
  c.not_covered = 2;
  EXPECT_EQ(scoreLine(c).substr(0, scoreLine(c).find(';')),
            "mutation score: 0/0 (no scored mutant), 0 survived");
}

TEST(Score, CountsStatusesByTheirStoredNames) {
  StatusCounts c;
  for (const char* s : {"killed", "survived", "equivalent", "not-covered", "planner-error", "?"})
    c.add(s);
  EXPECT_EQ(c.total(), 5);
  EXPECT_EQ(c.not_covered, 1);
  EXPECT_EQ(c.planner_errors, 1);
}

}  // namespace
}  // namespace seam::reports
