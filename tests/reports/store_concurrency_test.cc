#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "seam/reports/store.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

TEST(StoreConcurrency, TwoStoresOnOneFileWriteAlternatelyAndSeeEachOthersRows) {
  const std::string path = tempPath("alternate.db");
  Store a = openOrDie(path);
  Store b = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(a.beginRun(run));
  for (int round = 0; round < 10; ++round) {
    Store& writer = round % 2 == 0 ? a : b;
    ASSERT_TRUE(writer.beginBatch());
    for (int i = 0; i < 10; ++i)
      ASSERT_TRUE(writer.addCase(run.id, sampleCase(round * 10 + i), {}));
    ASSERT_TRUE(writer.commitBatch());
    // Outside a batch each write commits on its own.
    ASSERT_TRUE(
        writer.putMutant(run.id, MutantRecord{.id = "m" + std::to_string(round), .kind = "plan"}));
    EXPECT_EQ(a.caseIndices(run.id)->size(), static_cast<std::size_t>(round * 10 + 10));
    EXPECT_EQ(b.caseIndices(run.id)->size(), static_cast<std::size_t>(round * 10 + 10));
    EXPECT_EQ(b.mutants(run.id)->size(), static_cast<std::size_t>(round + 1));
  }
  // A reader does not block a writer: b reads while a's batch is open.
  ASSERT_TRUE(a.beginBatch());
  ASSERT_TRUE(a.addCase(run.id, sampleCase(100), {}));
  EXPECT_EQ(b.caseIndices(run.id)->size(), 100u);  // a's batch is not visible yet
  ASSERT_TRUE(a.commitBatch());
  EXPECT_EQ(b.caseIndices(run.id)->size(), 101u);
}

TEST(StoreConcurrency, AForkedChildAndTheParentWriteOneStoreAtOnce) {
  const std::string path = tempPath("fork.db");
  std::int64_t run_id = 0;
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
    run_id = run.id;
  }  // no connection crosses the fork (SQLite forbids it)
  constexpr int kPerProcess = 2000;
  constexpr int kBatch = 50;
  auto writeCases = [&](int first) -> bool {
    auto store = Store::open(path);
    if (!store) return false;
    for (int i = 0; i < kPerProcess; ++i) {
      if (i % kBatch == 0 && !store->beginBatch()) return false;
      if (!store->addCase(run_id, sampleCase(first + i), {})) return false;
      if (i % kBatch == kBatch - 1 && !store->commitBatch()) return false;
    }
    return true;
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(writeCases(kPerProcess) ? 0 : 1);
  const bool parent_ok = writeCases(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(parent_ok);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Store store = openOrDie(path);
  auto indices = store.caseIndices(run_id);
  ASSERT_TRUE(indices.hasValue());
  ASSERT_EQ(indices->size(), 2u * kPerProcess);
  for (int i = 0; i < 2 * kPerProcess; ++i) ASSERT_EQ((*indices)[i], i);
}

TEST(StoreConcurrency, ReportsBusyWhenAnotherRunHoldsTheWriteLockPastTheTimeout) {
  const std::string path = tempPath("busy.db");
  Store holder = openOrDie(path);
  Store waiter = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(holder.beginRun(run));
  ASSERT_TRUE(holder.beginBatch());
  const Status busy = waiter.addCase(run.id, sampleCase(0), {});  // waits the 5 s timeout
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.code(), StatusCode::kInternal);
  EXPECT_EQ(busy.message().find("--db \"" + path + "\" is busy: another seam run holds it"), 0u)
      << busy.message();
  ASSERT_TRUE(holder.commitBatch());
  EXPECT_TRUE(waiter.addCase(run.id, sampleCase(0), {}));  // free again
}

TEST(StoreConcurrency, AWriterThatRollsBackAFailedBatchFreesTheStoreForTheOthersAtOnce) {
  const std::string path = tempPath("rollback_frees.db");
  Store failing = openOrDie(path);
  Store other = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(failing.beginRun(run));
  ASSERT_TRUE(failing.addCase(run.id, sampleCase(0), {}));
  ASSERT_TRUE(failing.beginBatch());
  ASSERT_TRUE(failing.addCase(run.id, sampleCase(1), {}));
  ASSERT_FALSE(failing.addCase(run.id, sampleCase(0), {}));  // already stored
  ASSERT_TRUE(failing.rollbackBatch());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(other.addCase(run.id, sampleCase(2), {}));  // no wait for a busy timeout
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(*other.caseIndices(run.id), (std::vector<std::int64_t>{0, 2}));  // case 1 rolled back
}
}  // namespace
}  // namespace seam::reports::store_test
