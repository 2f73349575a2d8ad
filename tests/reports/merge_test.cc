#include "seam/reports/merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace seam::reports {
namespace {

namespace fs = std::filesystem;

std::string tempPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "seam_merge_" + std::to_string(::getpid()) + "_" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix);
  return path;
}

/// A store with one run of every kind of row: a case with two verdicts, a
/// mutant and its kill, an equivalence row, a timing and a baseline.
std::string storeWithOneRun(const std::string& name, const std::string& args,
                            std::int64_t started_ms) {
  const std::string path = tempPath(name);
  auto store = Store::open(path);
  EXPECT_TRUE(store) << store.status().message();
  RunRecord run;
  run.command = "sweep";
  run.args = args;
  run.version = "seam test";
  run.started_ms = started_ms;
  EXPECT_TRUE(store->beginRun(run));
  CaseRecord c;
  c.index = 7;
  c.model = "pattern";
  c.pattern = "M-";
  c.config = "tp=2";
  c.outcome = CaseOutcome::kViolated;
  c.reproduce = "seam check --pattern M- --tp 2";
  c.plan_hash = 0xfeedfacecafebeefULL;
  EXPECT_TRUE(store->addCase(
      run.id, c,
      {{3, false, "never-completed", "first"}, {5, false, "counted-k-times", "second"}}));
  EXPECT_TRUE(store->putMutant(run.id, {"plan.drop", "plan", "drops one", "killed", "", 8}));
  EXPECT_TRUE(
      store->addKill(run.id, {"plan.drop", 7, 3, "never-completed", "first", "seam check ..."}));
  EXPECT_TRUE(
      store->addEquivalence(run.id, {7, "gpu:declared", 1, "cpu:declared", 1, true, true, 0.0}));
  TimingRecord t;
  t.case_index = 7;
  t.op_kind = "all_reduce";
  t.group = "tp/2";
  t.bytes = 4096;
  t.median_us = 12.5;
  EXPECT_TRUE(store->addTiming(run.id, t));
  BaselineRecord b;
  b.space = args;
  b.version = "seam test";
  b.seam_commit = "abc123";
  b.cases = 9;
  b.kept = 1;
  b.kept_cases = std::string(1, '\x80') + std::string(1, '\0');
  b.checksum = 0x1234;
  EXPECT_TRUE(store->putBaseline(run.id, b));
  EXPECT_TRUE(store->finishRun(run.id));
  return path;
}

TEST(Merge, EveryRowOfEveryRunIsCopiedWithItsRunIdRenumbered) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string b = storeWithOneRun("b.db", "shard=1/2", 2000);
  const std::string out = tempPath("out.db");
  auto merged = mergeStores(out, {a, b});
  ASSERT_TRUE(merged) << merged.status().message();
  ASSERT_EQ(merged->size(), 2u);
  EXPECT_EQ((*merged)[1].runs_added, 1);
  EXPECT_EQ((*merged)[1].cases, 1);
  auto store = Store::open(out);
  ASSERT_TRUE(store);
  auto runs = store->runs();
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].args, "shard=1/2");
  EXPECT_EQ((*runs)[1].started_ms, 2000);
  EXPECT_NE((*runs)[1].finished_ms, 0);
  const std::int64_t id = (*runs)[1].id;
  auto verdicts = store->verdicts(id);
  ASSERT_TRUE(verdicts);
  ASSERT_EQ(verdicts->size(), 2u);
  EXPECT_EQ((*verdicts)[1].second.text, "second");
  auto cases = store->cases(id);
  ASSERT_TRUE(cases);
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].plan_hash, 0xfeedfacecafebeefULL);
  EXPECT_EQ(store->mutants(id)->size(), 1u);
  EXPECT_EQ(store->kills(id)->at(0).reproduce, "seam check ...");
  EXPECT_EQ(store->equivalences(id)->size(), 1u);
  EXPECT_EQ(store->timings(id)->at(0).median_us, 12.5);
  auto baseline = store->baseline(id);
  ASSERT_TRUE(baseline);
  ASSERT_TRUE(baseline->has_value());
  EXPECT_EQ((*baseline)->space, "shard=1/2");
  EXPECT_EQ((*baseline)->kept_cases.size(), 2u);
  EXPECT_EQ((*baseline)->checksum, 0x1234u);
}

TEST(Merge, MergingTheSameRunTwiceSkipsItTheSecondTime) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string out = tempPath("out.db");
  ASSERT_TRUE(mergeStores(out, {a}));
  auto again = mergeStores(out, {a, a});
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ((*again)[0].runs_skipped, 1);
  EXPECT_EQ((*again)[1].runs_skipped, 1);
  EXPECT_EQ(Store::open(out)->runs()->size(), 1u);
}

TEST(Merge, ARunPresentInAnotherStateIsRefusedAndNothingIsWritten) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string b = storeWithOneRun("b.db", "shard=1/2", 2000);
  const std::string out = tempPath("out.db");
  ASSERT_TRUE(mergeStores(out, {a}));
  {
    // The same run (same key), one case more.
    auto store = Store::open(a);
    auto runs = store->runs();
    CaseRecord c;
    c.index = 8;
    ASSERT_TRUE(store->addCase((*runs)[0].id, c, {}));
  }
  auto refused = mergeStores(out, {b, a});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("in another state"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(Store::open(out)->runs()->size(), 1u) << "b's run must not land either";
}

TEST(Merge, AForeignOrMissingInputWritesNothingAndCreatesNoOut) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string text = tempPath("text.db");
  std::ofstream(text) << "not a store\n";
  const std::string out = tempPath("out.db");
  auto foreign = mergeStores(out, {a, text});
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.status().message().find("not a seam store"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  auto missing = mergeStores(out, {a, tempPath("missing.db")});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("no such store"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(tempPath("missing.db")));
}

TEST(Merge, ATruncatedInputIsRefused) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string cut = tempPath("cut.db");
  fs::copy_file(a, cut);
  fs::resize_file(cut, fs::file_size(cut) - 100);
  const std::string out = tempPath("out.db");
  auto r = mergeStores(out, {a, cut});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  EXPECT_FALSE(fs::exists(out));
}

TEST(Merge, AnOutThatIsNotASeamStoreIsLeftUntouched) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  const std::string out = tempPath("notes.txt");
  std::ofstream(out) << "my notes\n";
  auto r = mergeStores(out, {a});
  ASSERT_FALSE(r);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "my notes");
  EXPECT_FALSE(fs::exists(out + "-wal"));
}

TEST(Merge, OutGivenAsAnInputIsRefused) {
  const std::string a = storeWithOneRun("a.db", "shard=0/2", 1000);
  auto r = mergeStores(a, {a});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("is OUT itself"), std::string::npos);
}

}  // namespace
}  // namespace seam::reports
