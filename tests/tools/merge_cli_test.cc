// `seam db merge`: the shards of a sweep, each run into its own store (as any
// scheduler would, on several machines), merged into one store hold the same
// case and verdict rows as one unsharded run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "run_seam.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::runSeam;

std::string tempPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "seam_merge_cli_" + std::to_string(getpid()) + "_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

/// Every case and verdict row of every run of a store, without run ids, sorted.
std::vector<std::string> contentRows(const std::string& db) {
  std::vector<std::string> rows;
  auto store = seam::reports::Store::open(db);
  EXPECT_TRUE(store) << store.status().message();
  const auto runs = store->runs();  // held: a range-for over *temporary would dangle
  for (const auto& run : *runs) {
    const auto cases = store->cases(run.id);
    for (const auto& c : *cases) {
      rows.push_back("case " + std::to_string(c.index) + "|" + c.model + "|" + c.pattern + "|" +
                     c.config + "|" + c.flags + "|" + c.batch + "|" + c.policy + "|" + c.group +
                     "|" + std::to_string(static_cast<int>(c.outcome)) + "|" + c.refusal + "|" +
                     c.reproduce + "|" + std::to_string(c.plan_hash));
    }
    const auto verdicts = store->verdicts(run.id);
    for (const auto& [idx, v] : *verdicts) {
      rows.push_back("verdict " + std::to_string(idx) + "|" + std::to_string(v.property) + "|" +
                     v.violation_class + "|" + v.text);
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST(MergeCli, TheMergedShardsOfASweepHoldTheRowsOfOneUnshardedRun) {
  const std::string whole = tempPath("whole.db"), out = tempPath("out.db");
  const std::string sweep = "sweep --world 4 --model nemotron-3-nano --jobs 2";
  // World 4 has engine findings (exit 1): their verdict rows are merged too.
  ASSERT_EQ(runSeam(sweep + " --db " + whole).code, 1);
  std::string parts;
  for (int i = 0; i < 3; ++i) {
    const std::string part = tempPath("part" + std::to_string(i) + ".db");
    const int code = runSeam(sweep + " --shard " + std::to_string(i) + "/3 --db " + part).code;
    ASSERT_TRUE(code == 0 || code == 1) << "shard " << i;
    parts += " " + part;
  }
  const auto merged = runSeam("db merge " + out + parts);
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(seam::testing::lineCount(merged.out), 3) << merged.out;
  const auto expected = contentRows(whole);
  EXPECT_GT(expected.size(), 100u);
  EXPECT_EQ(contentRows(out), expected);

  // Merging again changes nothing.
  const auto again = runSeam("db merge " + out + parts);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("1 runs already there, skipped"), std::string::npos) << again.out;
  EXPECT_EQ(contentRows(out), expected);
}

}  // namespace
