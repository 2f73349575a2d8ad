// A seam store damaged after it was written (a table dropped, a column
// renamed, a page overwritten) is refused before anything is written to it:
// exit 2, one line naming the damage, the file byte for byte as it was.
#include <gtest/gtest.h>

#include <string>

#include "seam/reports/store.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

/// A store with one finished run of three cases, closed.
std::string storeWithRows(const std::string& name) {
  const std::string path = tempPath(name);
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  EXPECT_TRUE(store.beginRun(run));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(store.addCase(run.id, sampleCase(i), {}));
  EXPECT_TRUE(store.finishRun(run.id));
  return path;
}

TEST(StoreDamage, AStoreWithADroppedTableIsRefusedUntouched) {
  const std::string path = storeWithRows("dropped.db");
  ASSERT_EQ(rawSql(path, "DROP TABLE kills"), "");
  ASSERT_FALSE(hasSideFiles(path));
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": a damaged seam store (table \"kills\" is missing); refusing to "
                         "write to it");
  EXPECT_EQ(Store::open(path).status().code(), StatusCode::kInvalidInput);
}

TEST(StoreDamage, AStoreWithARenamedColumnIsRefusedUntouched) {
  const std::string path = storeWithRows("renamed.db");
  ASSERT_EQ(rawSql(path, "ALTER TABLE cases RENAME COLUMN batch TO shards"), "");
  ASSERT_FALSE(hasSideFiles(path));
  EXPECT_NE(expectRefusedAndUnchanged(path).find("column \"cases.batch\" is missing"),
            std::string::npos);
}

TEST(StoreDamage, AStoreWithAnExtraColumnIsRefusedUntouched) {
  const std::string path = storeWithRows("extra.db");
  ASSERT_EQ(rawSql(path, "ALTER TABLE runs ADD COLUMN note TEXT"), "");
  ASSERT_FALSE(hasSideFiles(path));
  EXPECT_NE(expectRefusedAndUnchanged(path).find("table \"runs\" has columns seam does not know"),
            std::string::npos);
}

TEST(StoreDamage, AStoreWithAnOverwrittenPageIsRefusedUntouchedBySqlitesQuickCheck) {
  const std::string path = storeWithRows("page.db");
  const std::string root = rawSql(path, "SELECT rootpage FROM sqlite_master WHERE name = 'cases'");
  const std::string page_size = rawSql(path, "PRAGMA page_size");
  ASSERT_FALSE(hasSideFiles(path));
  std::string bytes = readFile(path);
  const std::size_t at = (std::stoul(root) - 1) * std::stoul(page_size);
  ASSERT_LT(at + 8, bytes.size());
  // A b-tree page header that claims an impossible cell count.
  bytes.replace(at, 8, std::string("\x0d\xff\xff\xff\xff\x00\x00\x00", 8));
  writeFile(path, bytes);
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_NE(message.find("a damaged seam store (SQLite's quick_check: "), std::string::npos)
      << message;
}

TEST(StoreDamage, AVersionOneStoreWithADroppedTableIsRefusedBeforeItIsMigrated) {
  // The migration alters mutants and kills: a store without them is refused
  // as damaged, left at version 1, rather than failing half-way through it.
  const std::string path = tempPath("v1_dropped.db");
  ASSERT_TRUE(createStoreOfVersion(path, 1).isOk());
  ASSERT_EQ(rawSql(path,
                   "INSERT INTO runs VALUES (1, 'sweep', 'a', 'v', '', '', '', '', 1, 2); "
                   "DROP TABLE kills"),
            "");
  ASSERT_FALSE(hasSideFiles(path));
  EXPECT_NE(expectRefusedAndUnchanged(path).find("table \"kills\" is missing"), std::string::npos);
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), "1");
}

TEST(StoreDamage, ASoundStoreWithRowsStillOpensAndKeepsThem) {
  const std::string path = storeWithRows("sound.db");
  Store store = openOrDie(path);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  ASSERT_EQ(runs->size(), 1u);
  auto cases = store.cases(runs->front().id);
  ASSERT_TRUE(cases.hasValue());
  EXPECT_EQ(cases->size(), 3u);
}

}  // namespace
}  // namespace seam::reports::store_test
