#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "seam/reports/store.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

namespace fs = std::filesystem;

TEST(StoreDurability, ACrashInsideABatchLosesOnlyThatBatch) {
  const std::string path = tempPath("crash.db");
  std::int64_t run_id = 0;
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
    run_id = run.id;
    for (int batch = 0; batch < 3; ++batch) {
      ASSERT_TRUE(store.beginBatch());
      for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(store.addCase(run_id, sampleCase(batch * 10 + i), {}));
      ASSERT_TRUE(store.commitBatch());
    }
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Enough uncommitted rows that SQLite spills pages into the WAL before the
    // "crash": they must be ignored on recovery, having no commit frame.
    auto store = Store::open(path);
    if (!store || !store->beginBatch()) ::_exit(1);
    CaseRecord big = sampleCase(0);
    big.pattern = std::string(2000, 'M');
    for (int i = 0; i < 5000; ++i) {
      big.index = 1000 + i;
      if (!store->addCase(run_id, big, {})) ::_exit(1);
    }
    ::_exit(0);  // no commit, no destructors: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // The crashed writer left its WAL behind, with the spilled, uncommitted pages.
  ASSERT_TRUE(exists(path + "-wal"));
  EXPECT_GT(fs::file_size(path + "-wal"), std::uintmax_t{1} << 20);
  {
    Store store = openOrDie(path);
    auto indices = store.caseIndices(run_id);
    ASSERT_TRUE(indices.hasValue());
    ASSERT_EQ(indices->size(), 30u);
    EXPECT_EQ(indices->back(), 29);
    // Still a store that takes writes.
    ASSERT_TRUE(store.addCase(run_id, sampleCase(30), {}));
  }
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases"), "31");
}

TEST(StoreDurability, ClosingAStoreWithAnOpenBatchCommitsNothingOfIt) {
  const std::string path = tempPath("close_open_batch.db");
  RunRecord run = sampleRun();
  {
    Store store = openOrDie(path);
    ASSERT_TRUE(store.beginRun(run));
    ASSERT_TRUE(store.addCase(run.id, sampleCase(0), {}));
    ASSERT_TRUE(store.beginBatch());
    ASSERT_TRUE(store.addCase(run.id, sampleCase(1), {}));
  }
  Store store = openOrDie(path);
  EXPECT_EQ(*store.caseIndices(run.id), std::vector<std::int64_t>{0});
}

TEST(StoreDurability, ARunKilledWhileItCreatedTheStoreLeavesAFileTheNextRunMakesAStore) {
  // What a run killed inside the commit of the schema leaves: every page of
  // the new schema written, and the journal that says the file had no pages
  // (SQLite deletes it to commit). It used to be refused as an internal
  // error ("attempt to write a readonly database") forever after.
  const std::string path = tempPath("killed_creating.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path, "PRAGMA journal_mode = DELETE"), "delete");  // as before the switch to WAL
  std::string journal(512, '\0');
  const unsigned char header[] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7,  // magic
                                  0,    0,    0,    0,                             // page records
                                  0x85, 0xc0, 0x44, 0x53,                          // checksum seed
                                  0,    0,    0,    0,   // pages before: none
                                  0,    0,    2,    0,   // sector size
                                  0,    0,    0x10, 0};  // page size
  std::copy(std::begin(header), std::end(header), journal.begin());
  writeFile(path + "-journal", journal);

  Store store = openOrDie(path);
  EXPECT_FALSE(exists(path + "-journal"));
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue()) << runs.status().message();
  EXPECT_TRUE(runs->empty());
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(0), {}));
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawSql(path, "PRAGMA journal_mode"), "wal");
}

TEST(StoreDurability, AStoreWhoseWriterDiedOutsideWalModeIsRolledBackToItsLastCommit) {
  const std::string path = tempPath("rollback_crash.db");
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
  }
  ASSERT_EQ(rawSql(path, "PRAGMA journal_mode = DELETE"), "delete");
  crashInsideARollbackTransaction(
      path, "",
      "INSERT INTO runs(command, args, version, host, gpu, cuda, nccl, started_ms, "
      "finished_ms) VALUES ('sweep', printf('%.2000c', 'x'), 'v', 'h', '', '', '', 1, 0)",
      400);
  Store store = openOrDie(path);
  EXPECT_FALSE(exists(path + "-journal"));
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue()) << runs.status().message();
  EXPECT_EQ(runs->size(), 1u);  // the dead writer's 400 runs are rolled back
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
}
}  // namespace
}  // namespace seam::reports::store_test
