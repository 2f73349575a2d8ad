// Two seam processes writing one store at once: both succeed, or
// one is refused with one line naming the reason; the store never loses or
// doubles a row.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "run_seam.h"
#include "seam/mutants/mutant.h"
#include "seam/reports/store.h"

namespace {

constexpr int kExitPropertyFailed = 1;  // a property failed (engine findings included)

using seam::testing::killWhen;
using seam::testing::lineCount;
using seam::testing::readText;
using seam::testing::spawnSeam;
using seam::testing::waitExit;

std::string tempPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "seam_concurrent_" + std::to_string(getpid()) + "_" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  return path;
}

/// The last line of a run's output.
std::string lastLine(const std::string& out) {
  const auto end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1,
                    end - (start == std::string::npos ? 0 : start + 1) + 1);
}

/// The N of a sweep's last line "N cases, K violations, R cases/s".
long long sweptCases(const std::string& out) { return std::atoll(lastLine(out).c_str()); }

TEST(ConcurrentRuns, ASweepAndACampaignStartedAtOnceOnANewStoreBothSucceedWithAllTheirRows) {
  const std::string db = tempPath("new.db");
  const std::string sweep_out = tempPath("sweep.out"), mutate_out = tempPath("mutate.out");
  const std::string sweep_err = tempPath("sweep.err"), mutate_err = tempPath("mutate.err");
  // The same sweep twice and a campaign, all creating the store at once.
  const pid_t a = spawnSeam("sweep --world 8 --jobs 1 --db " + db, sweep_out, sweep_err);
  const pid_t b =
      spawnSeam("sweep --world 8 --jobs 1 --db " + db, sweep_out + "2", sweep_err + "2");
  const pid_t c = spawnSeam("mutate --model nemotron-3-nano --world 1,2,4 --jobs 1 --db " + db,
                            mutate_out, mutate_err);
  // Each sweep ends with its verdict: world 8 has engine findings (exit 1).
  EXPECT_EQ(waitExit(a), kExitPropertyFailed) << readText(sweep_err);
  EXPECT_EQ(waitExit(b), kExitPropertyFailed) << readText(sweep_err + "2");
  EXPECT_EQ(waitExit(c), 0) << readText(mutate_err);

  auto store = seam::reports::Store::open(db);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  auto runs = store->runs();
  ASSERT_TRUE(runs.hasValue());
  ASSERT_EQ(runs->size(), 3u);
  const long long swept = sweptCases(readText(sweep_out));
  EXPECT_GT(swept, 1000);
  EXPECT_EQ(sweptCases(readText(sweep_out + "2")), swept);
  int sweeps = 0;
  for (const auto& run : *runs) {
    EXPECT_NE(run.finished_ms, 0) << run.command;
    if (run.command == "sweep") {
      ++sweeps;
      EXPECT_EQ(static_cast<long long>(store->caseIndices(run.id)->size()), swept);
    } else {
      EXPECT_EQ(run.command, "mutate");
      EXPECT_EQ(store->mutants(run.id)->size(), seam::mutants::registry().size());
    }
  }
  EXPECT_EQ(sweeps, 2);
  for (const std::string& f :
       {sweep_out, sweep_out + "2", mutate_out, sweep_err, sweep_err + "2", mutate_err}) {
    std::remove(f.c_str());
  }
}

TEST(ConcurrentRuns, TwoResumesOfOneKilledSweepAtOnceFinishItOnceAndRefuseTheOtherInOneLine) {
  const std::string args = "sweep --world 8 --jobs 2";
  const std::string db = tempPath("resume.db");
  auto stored = [&] {
    auto store = seam::reports::Store::open(db);
    if (!store) return std::size_t{0};
    auto runs = store->runs();
    if (!runs || runs->empty()) return std::size_t{0};
    auto indices = store->caseIndices(runs->back().id);
    return indices ? indices->size() : std::size_t{0};
  };
  // Killed once a part of the cases is stored; on a loaded machine the sweep
  // may finish first: then start over and kill it earlier.
  bool killed = false;
  for (std::size_t threshold : {20000u, 5000u, 1000u}) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((db + suffix).c_str());
    killed = killWhen(spawnSeam(args + " --db " + db), [&] { return stored() >= threshold; });
    if (killed) break;
  }
  ASSERT_TRUE(killed) << "the sweep finished before it could be killed, three times";

  const std::string out[2] = {tempPath("a.out"), tempPath("b.out")};
  const std::string err[2] = {tempPath("a.err"), tempPath("b.err")};
  const pid_t a = spawnSeam(args + " --db " + db + " --resume", out[0], err[0]);
  const pid_t b = spawnSeam(args + " --db " + db + " --resume", out[1], err[1]);
  const int codes[2] = {waitExit(a), waitExit(b)};
  int finished = 0;
  long long swept = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string e = readText(err[i]);
    if (codes[i] == 0 || codes[i] == 1) {  // a verdict (world 8 has engine findings)
      ++finished;
      swept = sweptCases(readText(out[i]));
    } else {
      EXPECT_EQ(codes[i], 2) << e;
      EXPECT_EQ(lineCount(e), 1) << e;
      EXPECT_NE(e.find("another seam run is writing the same run"), std::string::npos) << e;
    }
    std::remove(out[i].c_str());
    std::remove(err[i].c_str());
  }
  ASSERT_GE(finished, 1) << "both resumes failed";
  // One run, finished, every case of the space stored once.
  auto store = seam::reports::Store::open(db);
  ASSERT_TRUE(store.hasValue());
  auto runs = store->runs();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_NE(runs->front().finished_ms, 0);
  auto indices = store->caseIndices(runs->front().id);
  ASSERT_EQ(static_cast<long long>(indices->size()), swept);
  for (std::size_t i = 0; i < indices->size(); ++i)
    ASSERT_EQ((*indices)[i], static_cast<std::int64_t>(i));
}

}  // namespace
