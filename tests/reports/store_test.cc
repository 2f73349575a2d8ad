#include "seam/reports/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "seam/reports/shard_rows.h"
#include "seam/sim/base/status.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

// Every field of a record, to compare a record read back with the one written.
auto fields(const RunRecord& r) {
  return std::tie(r.id, r.command, r.args, r.version, r.host, r.gpu, r.cuda, r.nccl, r.started_ms,
                  r.finished_ms);
}
auto fields(const CaseRecord& c) {
  return std::tie(c.index, c.model, c.pattern, c.config, c.flags, c.batch, c.policy, c.group,
                  c.outcome, c.refusal, c.reproduce, c.plan_hash);
}
auto fields(const MutantRecord& m) {
  return std::tie(m.id, m.kind, m.description, m.status, m.argument, m.cases_run);
}
auto fields(const KillRecord& k) {
  return std::tie(k.mutant_id, k.case_index, k.property, k.violation_class, k.text, k.reproduce);
}

TEST(Store, ReadsBackEveryFieldOfARunExactly) {
  const std::string path = tempPath("runs.db");
  Store store = openOrDie(path);
  RunRecord first = sampleRun("prop", "--seed 7 " + kAwkward);
  RunRecord second = sampleRun("mutate", "");
  second.gpu = second.cuda = second.nccl = "";
  second.finished_ms = 1700000009999;
  ASSERT_TRUE(store.beginRun(first));
  ASSERT_TRUE(store.beginRun(second));
  EXPECT_GT(first.id, 0);
  EXPECT_GT(second.id, first.id);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ(fields((*runs)[0]), fields(first));
  EXPECT_EQ(fields((*runs)[1]), fields(second));
}

TEST(Store, CaseBatchesStoreEveryOutcomeAndLeaveTheStoreAsItWas) {
  // writeCaseRows runs its batches as case batches (SQLite skips the outcome
  // CHECK, addCase tests it): rows of all four outcomes over more than one
  // batch land with their outcomes, and a case batch rolled back leaves
  // nothing and the store open to the next batch.
  const std::string path = tempPath("case_batches.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  std::vector<CaseRows> rows;
  const std::int64_t n = 600;  // three batches of kBatchCases (256)
  for (std::int64_t i = 0; i < n; ++i) {
    CaseRecord c = sampleCase(i, i % 3 == 0   ? CaseOutcome::kHolds
                                 : i % 3 == 1 ? CaseOutcome::kViolated
                                              : CaseOutcome::kRefused);
    if (i % 6 == 5) c.refusal = std::string(kNotModelledPrefix) + "a gap";
    if (i % 5 == 0) {  // another configuration between runs of one: its own typed columns
      c.config = "pp=2 tp=4 attn_dp=1";
      c.flags = "a2a=deepep tbo=on";
    }
    rows.emplace_back(c, std::vector<VerdictRecord>{});
  }
  ASSERT_TRUE(writeCaseRows(store, run.id, rows));
  EXPECT_EQ(rawSql(path,
                   "SELECT group_concat(outcome || '=' || k) FROM (SELECT outcome, "
                   "count(*) AS k FROM cases GROUP BY outcome ORDER BY outcome)"),
            "holds=200,not-modelled=100,refused=100,violated=200");
  EXPECT_EQ(rawSql(path,
                   "SELECT group_concat(v || '=' || k) FROM (SELECT pp || ' ' || tp || ' ' || "
                   "coalesce(a2a, '-') || ' ' || tbo AS v, count(*) AS k FROM cases "
                   "GROUP BY v ORDER BY v)"),
            "1 2 - 0=480,2 4 deepep 1=120");
  ASSERT_TRUE(store.beginCaseBatch());
  ASSERT_TRUE(store.addCase(run.id, sampleCase(n), {}));
  ASSERT_TRUE(store.rollbackBatch());
  ASSERT_TRUE(store.beginBatch());
  ASSERT_TRUE(store.addCase(run.id, sampleCase(n + 1), {}));
  ASSERT_TRUE(store.commitBatch());
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases"), std::to_string(n + 1));
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases WHERE idx = " + std::to_string(n)), "0");
}

TEST(Store, ReadsBackEveryFieldOfACaseExactlyInIndexOrder) {
  const std::string path = tempPath("cases.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  std::vector<CaseRecord> written;
  CaseRecord awkward = sampleCase(5, CaseOutcome::kViolated);
  awkward.model = "pattern";
  awkward.pattern = kAwkward;
  awkward.config = kAwkward + "config";
  awkward.flags = "";
  awkward.batch = std::string("embedded\0nul", 12);
  awkward.policy = "declared 'quoted'";
  awkward.group = "\xE6\xA8\xA1\xE5\x9E\x8B";  // non-ASCII
  awkward.reproduce = "seam check --pattern '" + kAwkward + "'";
  awkward.plan_hash = 0xFFFFFFFFFFFFFFFFull;  // above INT64_MAX: stored as its bits
  CaseRecord refused = sampleCase(2, CaseOutcome::kRefused);
  refused.plan_hash = 0;
  // Written out of order; read back by index.
  for (const CaseRecord& c : {awkward, refused, sampleCase(0), sampleCase(9)}) {
    ASSERT_TRUE(store.addCase(run.id, c, {}));
    written.push_back(c);
  }
  auto cases = store.cases(run.id);
  ASSERT_TRUE(cases.hasValue()) << cases.status().message();
  ASSERT_EQ(cases->size(), 4u);
  std::sort(written.begin(), written.end(),
            [](const CaseRecord& a, const CaseRecord& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(fields((*cases)[i]), fields(written[i]));
  }
  EXPECT_EQ(*store.caseIndices(run.id), (std::vector<std::int64_t>{0, 2, 5, 9}));
  // Another run's cases are its own.
  RunRecord other = sampleRun();
  ASSERT_TRUE(store.beginRun(other));
  EXPECT_TRUE(store.cases(other.id)->empty());
  EXPECT_TRUE(store.caseIndices(other.id)->empty());
}

TEST(Store, GivesTheFirstFailingVerdictOfEachViolatedCaseByIndex) {
  const std::string path = tempPath("verdicts.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  const VerdictRecord counted{.property = 3,
                              .holds = false,
                              .violation_class = "counted-k-times",
                              .text = "row 4 of " + kAwkward + " is summed twice"};
  const VerdictRecord missing{.property = 1,
                              .holds = false,
                              .violation_class = "never-reduced",
                              .text = "sum owed by stage 2 never completes"};
  const VerdictRecord held{.property = 2, .holds = true, .violation_class = "", .text = ""};
  ASSERT_TRUE(
      store.addCase(run.id, sampleCase(7, CaseOutcome::kViolated), {held, counted, missing}));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(1, CaseOutcome::kViolated), {missing}));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(3), {}));
  auto failures = store.firstFailures(run.id);
  ASSERT_TRUE(failures.hasValue()) << failures.status().message();
  ASSERT_EQ(failures->size(), 2u);
  EXPECT_EQ((*failures)[0].first, 1);
  EXPECT_EQ((*failures)[0].second.property, 1);
  EXPECT_EQ((*failures)[1].first, 7);
  // The first failing one in the order given, not the lowest property.
  const VerdictRecord& got = (*failures)[1].second;
  EXPECT_EQ(got.property, counted.property);
  EXPECT_FALSE(got.holds);
  EXPECT_EQ(got.violation_class, counted.violation_class);
  EXPECT_EQ(got.text, counted.text);
}

TEST(Store, PutMutantReplacesTheRowInPlaceAndAddKillKeepsTheFirstKill) {
  const std::string path = tempPath("mutants.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("mutate", "--budget 100");
  ASSERT_TRUE(store.beginRun(run));
  MutantRecord drop{.id = "plan.drop-completing-collective",
                    .kind = "plan",
                    .description = "drops the all-reduce that completes a sum",
                    .status = "survived",
                    .argument = "",
                    .cases_run = 0};
  MutantRecord swap{.id = "decision.swap-" + kAwkward,
                    .kind = "decision",
                    .description = "swaps \"scatter\" and 'gather'",
                    .status = "equivalent",
                    .argument = "both orders reduce the same rows\nproof: " + kAwkward,
                    .cases_run = 42};
  ASSERT_TRUE(store.putMutant(run.id, drop));
  ASSERT_TRUE(store.putMutant(run.id, swap));
  drop.status = "killed";
  drop.cases_run = 3;
  ASSERT_TRUE(store.putMutant(run.id, drop));

  auto mutants = store.mutants(run.id);
  ASSERT_TRUE(mutants.hasValue()) << mutants.status().message();
  ASSERT_EQ(mutants->size(), 2u);
  EXPECT_EQ(fields((*mutants)[0]), fields(drop));
  EXPECT_EQ(fields((*mutants)[1]), fields(swap));

  const KillRecord first{.mutant_id = drop.id,
                         .case_index = 2,
                         .property = 1,
                         .violation_class = "never-reduced",
                         .text = "stage 2: " + kAwkward,
                         .reproduce = "seam check --tp 2 --mutant '" + drop.id + "'"};
  KillRecord later = first;
  later.case_index = 3;
  ASSERT_TRUE(store.addKill(run.id, first));
  ASSERT_TRUE(store.addKill(run.id, later));
  auto kills = store.kills(run.id);
  ASSERT_TRUE(kills.hasValue()) << kills.status().message();
  ASSERT_EQ(kills->size(), 1u);
  EXPECT_EQ(fields((*kills)[0]), fields(first));
}

TEST(Store, ClearMutantsDeletesTheMutantAndKillRowsOfThatRunOnly) {
  const std::string path = tempPath("clear_mutants.db");
  Store store = openOrDie(path);
  RunRecord a = sampleRun("mutate", "--world 2");
  RunRecord b = sampleRun("mutate", "--world 4");
  ASSERT_TRUE(store.beginRun(a));
  ASSERT_TRUE(store.beginRun(b));
  const MutantRecord m{.id = "plan.drop",
                       .kind = "plan",
                       .description = "d",
                       .status = "killed",
                       .argument = "",
                       .cases_run = 3};
  const KillRecord k{.mutant_id = "plan.drop",
                     .case_index = 2,
                     .property = 1,
                     .violation_class = "c",
                     .text = "t",
                     .reproduce = "r"};
  for (const RunRecord& run : {a, b}) {
    ASSERT_TRUE(store.putMutant(run.id, m));
    ASSERT_TRUE(store.addKill(run.id, k));
  }
  ASSERT_TRUE(store.clearMutants(a.id));
  EXPECT_TRUE(store.mutants(a.id)->empty());
  EXPECT_TRUE(store.kills(a.id)->empty());
  EXPECT_EQ(store.mutants(b.id)->size(), 1u);
  EXPECT_EQ(store.kills(b.id)->size(), 1u);
  // Put again, a row reads back after those put before it.
  const MutantRecord later{.id = "plan.swap",
                           .kind = "plan",
                           .description = "s",
                           .status = "survived",
                           .argument = "",
                           .cases_run = 9};
  ASSERT_TRUE(store.putMutant(a.id, later));
  ASSERT_TRUE(store.putMutant(a.id, m));
  ASSERT_EQ(store.mutants(a.id)->size(), 2u);
  EXPECT_EQ((*store.mutants(a.id))[0].id, "plan.swap");
  EXPECT_EQ((*store.mutants(a.id))[1].id, "plan.drop");
}

TEST(Store, FindsTheLatestUnfinishedRunWithTheSameCommandAndArgs) {
  const std::string path = tempPath("resume.db");
  Store store = openOrDie(path);
  RunRecord older = sampleRun("sweep", "--world 8");
  RunRecord newer = sampleRun("sweep", "--world 8");
  RunRecord other_args = sampleRun("sweep", "--world 16");
  RunRecord other_command = sampleRun("prop", "--world 8");
  for (RunRecord* run : {&older, &newer, &other_args, &other_command}) {
    ASSERT_TRUE(store.beginRun(*run));
  }
  auto found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, newer.id);

  ASSERT_TRUE(store.finishRun(newer.id));
  found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue() && found->has_value());
  EXPECT_EQ((*found)->id, older.id);

  ASSERT_TRUE(store.finishRun(older.id));
  found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue());
  EXPECT_FALSE(found->has_value());
  EXPECT_FALSE(store.findUnfinished("sweep", "--world 4")->has_value());
}

TEST(Store, FinishRunRecordsTheTimeAndRefusesAnUnknownRun) {
  const std::string path = tempPath("finish.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  run.started_ms = 0;  // filled with the current time
  ASSERT_TRUE(store.beginRun(run));
  EXPECT_GT(run.started_ms, 1600000000000);
  ASSERT_TRUE(store.finishRun(run.id));
  const RunRecord stored = store.runs()->at(0);
  EXPECT_GE(stored.finished_ms, run.started_ms);
  const Status unknown = store.finishRun(run.id + 100);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(unknown.message(),
            "--db \"" + path + "\": no run with id " + std::to_string(run.id + 100));
}

TEST(Store, RefusesAStoredCaseIndexTwiceSayingAnotherRunWritesTheSameRun) {
  const std::string path = tempPath("duplicate.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(4), {}));
  const Status again = store.addCase(run.id, sampleCase(4), {});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.code(), StatusCode::kRefused);
  EXPECT_EQ(again.message(),
            "--db \"" + path + "\": case 4 of run " + std::to_string(run.id) +
                " is already stored: another seam run is writing the same run (two --resume at "
                "once?); this one stops");
  // The failed case left nothing behind, and the store still works.
  EXPECT_EQ(*store.caseIndices(run.id), std::vector<std::int64_t>{4});
  EXPECT_TRUE(store.addCase(run.id, sampleCase(5), {}));
}

TEST(Store, InsertsTwentyThousandCasesInBatchesOfAThousandAndReadsThemBack) {
  const std::string path = tempPath("bulk.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  constexpr int kCases = 20000;
  constexpr int kBatch = 1000;
  const VerdictRecord failing{
      .property = 4, .holds = false, .violation_class = "counted-k-times", .text = "summed twice"};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCases; ++i) {
    if (i % kBatch == 0) {
      ASSERT_TRUE(store.beginBatch());
    }
    const bool violated = i % 97 == 0;
    ASSERT_TRUE(store.addCase(
        run.id, sampleCase(i, violated ? CaseOutcome::kViolated : CaseOutcome::kHolds),
        violated ? std::vector<VerdictRecord>{failing} : std::vector<VerdictRecord>{}));
    if (i % kBatch == kBatch - 1) {
      ASSERT_TRUE(store.commitBatch());
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ::testing::Test::RecordProperty(
      "insert_ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  auto indices = store.caseIndices(run.id);
  ASSERT_TRUE(indices.hasValue());
  ASSERT_EQ(indices->size(), static_cast<std::size_t>(kCases));
  for (int i = 0; i < kCases; ++i) ASSERT_EQ((*indices)[i], i);
  auto cases = store.cases(run.id);
  ASSERT_TRUE(cases.hasValue());
  ASSERT_EQ(cases->size(), static_cast<std::size_t>(kCases));
  EXPECT_EQ(cases->back().plan_hash, sampleCase(kCases - 1).plan_hash);
  EXPECT_EQ(store.firstFailures(run.id)->size(), static_cast<std::size_t>((kCases + 96) / 97));
}

TEST(Store, MovesWithoutLosingTheConnection) {
  const std::string path = tempPath("move.db");
  Store first = openOrDie(path);
  Store second = std::move(first);
  RunRecord run = sampleRun();
  ASSERT_TRUE(second.beginRun(run));
  Store third = openOrDie(tempPath("move_other.db"));
  third = std::move(second);
  EXPECT_EQ(third.path(), path);
  EXPECT_EQ(third.runs()->size(), 1u);
}
}  // namespace
}  // namespace seam::reports::store_test
