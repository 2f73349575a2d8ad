// The rows one rank of `mpirun -np N seam sweep|mutate` hands rank 0
// (reports/shard_rows.h): they come back as they went, and bytes that are
// not a whole shard are refused.
#include "seam/reports/shard_rows.h"

#include <gtest/gtest.h>

#include <string>

namespace seam::reports {
namespace {

TEST(ShardRows, ASweepShardComesBackRowForRow) {
  SweepShardRows shard;
  shard.run_here = 2;
  shard.seconds = 0.75;
  shard.model_seconds = {0.5, 0.25};
  CaseRecord c;
  c.index = 41;
  c.model = "nemotron-h-8b";
  c.pattern = "M-*";
  c.outcome = CaseOutcome::kViolated;
  c.reproduce = "seam check --model nemotron-h-8b --tp 2";
  c.plan_hash = 0xfedcba9876543210ULL;
  shard.cases.emplace_back(c, std::vector<VerdictRecord>{{3, false, "never-completed", "line\nwith newline"}});
  CaseRecord refused;
  refused.index = 42;
  refused.outcome = CaseOutcome::kRefused;
  refused.refusal = "the engine refuses";
  shard.cases.emplace_back(refused, std::vector<VerdictRecord>{});
  auto back = decodeSweepShard(encodeSweepShard(shard));
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_EQ(back->run_here, 2);
  EXPECT_EQ(back->seconds, 0.75);
  EXPECT_EQ(back->model_seconds, shard.model_seconds);
  ASSERT_EQ(back->cases.size(), 2u);
  EXPECT_EQ(back->cases[0].first.plan_hash, 0xfedcba9876543210ULL);
  EXPECT_EQ(back->cases[0].first.reproduce, c.reproduce);
  EXPECT_EQ(back->cases[0].first.outcome, CaseOutcome::kViolated);
  ASSERT_EQ(back->cases[0].second.size(), 1u);
  EXPECT_EQ(back->cases[0].second[0].text, "line\nwith newline");
  EXPECT_EQ(back->cases[1].first.refusal, "the engine refuses");
  const std::string bytes = encodeSweepShard(shard);
  EXPECT_FALSE(decodeSweepShard(bytes.substr(0, bytes.size() - 3)).hasValue());
  EXPECT_FALSE(decodeSweepShard(bytes + "!").hasValue());
}

TEST(ShardRows, ACampaignShardComesBackWithItsKills) {
  CampaignShardRows shard;
  shard.cases = 14566;
  shard.baseline_refused = 9;
  shard.baseline_holds = true;
  MutantRows killed{{"plan.drop", "plan", "drops one", "killed", "", 8},
                    KillRecord{"plan.drop", 7, 3, "never-completed", "text", "seam check ..."}};
  MutantRows equivalent{{"decision.x", "decision", "flips x", "equivalent", "never reached", 14566}, std::nullopt};
  shard.mutants = {killed, equivalent};
  auto back = decodeCampaignShard(encodeCampaignShard(shard));
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_EQ(back->cases, 14566);
  EXPECT_EQ(back->baseline_refused, 9);
  ASSERT_EQ(back->mutants.size(), 2u);
  ASSERT_TRUE(back->mutants[0].kill.has_value());
  EXPECT_EQ(back->mutants[0].kill->reproduce, "seam check ...");
  EXPECT_EQ(back->mutants[0].kill->mutant_id, "plan.drop");
  EXPECT_FALSE(back->mutants[1].kill.has_value());
  EXPECT_EQ(back->mutants[1].mutant.argument, "never reached");
  const std::string bytes = encodeCampaignShard(shard);
  EXPECT_FALSE(decodeCampaignShard(bytes.substr(0, 20)).hasValue());
}

}  // namespace
}  // namespace seam::reports
