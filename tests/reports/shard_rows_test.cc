// The rows one rank of `mpirun -np N seam sweep|mutate` hands rank 0
// (reports/shard_rows.h): they are handed on in batches as they finish, a
// rank runs only its share of a campaign, they come back as they went, bytes
// that are not a whole shard are refused, and rows stored out of list order
// are put back in it.
#include "seam/reports/shard_rows.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "seam/reports/recorders.h"

namespace seam::reports {
namespace {

TEST(ShardRows, ASweepShardComesBackRowForRow) {
  SweepShardRows shard;
  shard.run_here = 2;
  shard.seconds = 0.75;
  shard.model_seconds = {0.5, 0.25};
  shard.model_run_here = {7, 3};
  CaseRecord c;
  c.index = 41;
  c.model = "nemotron-h-8b";
  c.pattern = "M-*";
  c.outcome = CaseOutcome::kViolated;
  c.reproduce = "seam check --model nemotron-h-8b --tp 2";
  c.plan_hash = 0xfedcba9876543210ULL;
  shard.cases.emplace_back(
      c, std::vector<VerdictRecord>{{3, false, "never-completed", "line\nwith newline"}});
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
  EXPECT_EQ(back->model_run_here, shard.model_run_here);
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
  MutantRows equivalent{{"decision.x", "decision", "flips x", "equivalent", "never reached", 14566},
                        std::nullopt};
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

TEST(ShardRows, ASweepBatcherHandsOnFullBatchesAsCasesFinishAndTheRestOnFlush) {
  properties::SweepSpec spec;
  spec.world = 4;
  spec.jobs = 2;
  spec.models.push_back(*properties::sweepModel("nemotron-3-nano", ""));
  std::vector<std::size_t> sizes;
  std::set<std::int64_t> indices;
  SweepBatcher batcher(spec, nullptr, [&](std::vector<CaseRows> batch) {
    sizes.push_back(batch.size());
    for (const CaseRows& row : batch) indices.insert(row.first.index);
  });
  auto result = properties::runSweep(spec, &batcher);
  ASSERT_TRUE(result.hasValue()) << result.status().message();
  const std::size_t full = sizes.size();
  batcher.flush();
  batcher.flush();  // nothing left: nothing handed on
  const auto cases = static_cast<std::size_t>(result->cases);
  ASSERT_GT(cases, 2u * SweepRecorder::kBatchCases);
  EXPECT_EQ(full, cases / SweepRecorder::kBatchCases);
  for (std::size_t i = 0; i < full; ++i)
    EXPECT_EQ(sizes[i], static_cast<std::size_t>(SweepRecorder::kBatchCases));
  EXPECT_EQ(sizes.size(), full + (cases % SweepRecorder::kBatchCases != 0 ? 1 : 0));
  EXPECT_EQ(indices.size(), cases);  // every case once
}

/// Counts what a campaign tells its listener.
class Heard : public mutants::CampaignListener {
 public:
  void onBaseline(std::int64_t, bool) override { ++baselines; }
  void onMutant(const mutants::MutantOutcome&, int done, int total) override {
    progress.emplace_back(done, total);
  }
  int baselines = 0;
  std::vector<std::pair<int, int>> progress;
};

TEST(ShardRows, ACampaignShareRunsItsOwnMutantsAndPassesTheOthersOver) {
  mutants::CampaignSpec spec;
  spec.models.push_back(*properties::sweepModel("", "M-*E-"));
  spec.worlds = {1, 2, 4};
  spec.jobs = 2;
  const auto all = mutants::registry();
  spec.mutants = {all[0], all[1], all[2]};
  const std::string mine(all[1]->id());

  Heard heard;
  std::vector<MutantRows> sunk;
  CampaignShare share(PolicyKind::kDeclared, {mine}, &heard,
                      [&](MutantRows rows) { sunk.push_back(std::move(rows)); });
  auto result = mutants::runCampaign(spec, &share);
  ASSERT_TRUE(result.hasValue()) << result.status().message();
  ASSERT_TRUE(result->baseline_holds);
  ASSERT_EQ(sunk.size(), 1u);
  EXPECT_EQ(sunk[0].mutant.id, mine);
  EXPECT_EQ(heard.baselines, 1);
  EXPECT_EQ(heard.progress, (std::vector<std::pair<int, int>>{{1, 1}}));

  // Its rows are those of the mutant run alone.
  mutants::CampaignSpec alone = spec;
  alone.mutants = {all[1]};
  auto one = mutants::runCampaign(alone);
  ASSERT_TRUE(one.hasValue());
  const MutantRows want = mutantRows(one->outcomes[0], PolicyKind::kDeclared);
  EXPECT_EQ(sunk[0].mutant.status, want.mutant.status);
  EXPECT_EQ(sunk[0].mutant.cases_run, want.mutant.cases_run);
  EXPECT_EQ(sunk[0].kill.has_value(), want.kill.has_value());
  if (want.kill) {
    EXPECT_EQ(sunk[0].kill->reproduce, want.kill->reproduce);
  }

  // An empty share still runs the baseline (rank 0 summarizes it).
  Heard none_heard;
  CampaignShare none(PolicyKind::kDeclared, {}, &none_heard,
                     [&](MutantRows) { ADD_FAILURE() << "no mutant is mine"; });
  auto baseline_only = mutants::runCampaign(spec, &none);
  ASSERT_TRUE(baseline_only.hasValue());
  EXPECT_EQ(baseline_only->cases, result->cases);
  EXPECT_EQ(none_heard.baselines, 1);
  EXPECT_TRUE(none_heard.progress.empty());
}

TEST(ShardRows, MutantRowsStoredOutOfListOrderArePutBackInItWithTheirKills) {
  const std::string path =
      ::testing::TempDir() + "seam_shard_rows_" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  auto store = Store::open(path);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  RunRecord run;
  run.command = "mutate";
  ASSERT_TRUE(store->beginRun(run));
  const auto all = mutants::registry();
  const std::vector<const mutants::Mutant*> order = {all[0], all[1], all[2]};
  auto rowsOf = [](const mutants::Mutant* m, bool killed) {
    MutantRows rows{{std::string(m->id()), "plan", "d", killed ? "killed" : "equivalent", "", 5},
                    std::nullopt};
    if (killed) rows.kill = KillRecord{std::string(m->id()), 4, 1, "c", "t", "r"};
    return rows;
  };
  // As two ranks may decide them: the third, then the first, then the second.
  ASSERT_TRUE(writeMutantRows(*store, run.id, {rowsOf(all[2], true)}));
  ASSERT_TRUE(writeMutantRows(*store, run.id, {rowsOf(all[0], true)}));
  ASSERT_TRUE(writeMutantRows(*store, run.id, {rowsOf(all[1], false)}));

  auto rows = putMutantRowsInOrder(*store, run.id, order);
  ASSERT_TRUE(rows.hasValue()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  auto stored = store->mutants(run.id);
  auto kills = store->kills(run.id);
  ASSERT_EQ(stored->size(), 3u);
  ASSERT_EQ(kills->size(), 2u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*rows)[i].mutant.id, order[i]->id());
    EXPECT_EQ((*stored)[i].id, order[i]->id());
  }
  EXPECT_FALSE((*rows)[1].kill.has_value());
  EXPECT_EQ((*kills)[0].mutant_id, order[0]->id());
  EXPECT_EQ((*kills)[1].mutant_id, order[2]->id());

  // A mutant of the list with no row is named.
  auto missing = putMutantRowsInOrder(*store, run.id, {all[0], all[1], all[2], all[3]});
  ASSERT_FALSE(missing.hasValue());
  EXPECT_NE(missing.status().message().find(std::string(all[3]->id())), std::string::npos)
      << missing.status().message();
  EXPECT_EQ(store->mutants(run.id)->size(), 3u);  // and nothing is rewritten
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

}  // namespace
}  // namespace seam::reports
