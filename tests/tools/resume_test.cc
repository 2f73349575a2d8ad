// A campaign (and a sweep) killed with SIGKILL halfway and resumed with
// --resume ends with the same table as an uninterrupted run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "run_seam.h"
#include "seam/mutants/mutant.h"
#include "store_counts.h"

namespace {

using seam::testing::killWhen;
using seam::testing::runSeam;
using seam::testing::spawnSeam;
using seam::testing::storedCases;
using seam::testing::storedMutants;

std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "seam_resume_" + std::to_string(getpid()) + "_" + name;
}

void removeStore(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

/// Lines of `out` without those that differ between runs by nature (timings).
std::string stable(const std::string& out, const char* timing_prefix) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    // Per-mutant wall times ("took ...") differ between runs too.
    if (line.rfind(timing_prefix, 0) == 0 || line.rfind("took ", 0) == 0) continue;
    kept += line + "\n";
  }
  return kept;
}

TEST(Resume, ACampaignKilledHalfwayAndResumedEndsWithTheSameTable) {
  const std::string args = "mutate --world 1,2,4,8 --jobs 2";
  const std::string whole_db = tempPath("whole.db"), cut_db = tempPath("cut.db");
  removeStore(whole_db);
  removeStore(cut_db);
  const auto whole = runSeam(args + " --db " + whole_db);
  ASSERT_EQ(whole.code, 0) << whole.err;

  bool killed = false;
  for (std::int64_t threshold : {8, 4, 1}) {
    removeStore(cut_db);
    const pid_t pid = spawnSeam(args + " --db " + cut_db);
    killed = killWhen(pid, [&] { return storedMutants(cut_db) >= threshold; });
    if (killed) break;
  }
  ASSERT_TRUE(killed) << "the campaign finished before it could be killed, three times";
  const std::int64_t before = storedMutants(cut_db);
  EXPECT_GE(before, 1);
  EXPECT_LT(before, static_cast<std::int64_t>(seam::mutants::registry().size()));

  const auto resumed = runSeam(args + " --db " + cut_db + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(stable(resumed.out, "campaign took"), stable(whole.out, "campaign took"));
  removeStore(whole_db);
  removeStore(cut_db);
}

TEST(Resume, ASweepKilledHalfwayAndResumedCountsEveryCaseOnce) {
  const std::string args = "sweep --world 8 --jobs 2";
  const std::string whole_db = tempPath("sweep_whole.db"), cut_db = tempPath("sweep_cut.db");
  removeStore(whole_db);
  removeStore(cut_db);
  const auto whole = runSeam(args + " --db " + whole_db);
  // A verdict: 0, or 1 for the engine findings of world 8 (docs/engine-findings.md).
  ASSERT_TRUE(whole.code == 0 || whole.code == 1) << whole.err;

  // Kill it once a good part of the cases is stored; on a loaded machine the
  // sweep may finish first: then start over and kill it earlier.
  bool killed = false;
  for (std::int64_t threshold : {20000, 6000, 1000}) {
    removeStore(cut_db);
    const pid_t pid = spawnSeam(args + " --db " + cut_db);
    killed = killWhen(pid, [&] { return storedCases(cut_db) >= threshold; });
    if (killed) break;
  }
  ASSERT_TRUE(killed) << "the sweep finished before it could be killed, three times";
  const std::int64_t stored_before = storedCases(cut_db);
  ASSERT_GT(stored_before, 0);

  const auto resumed = runSeam(args + " --db " + cut_db + " --resume");
  ASSERT_EQ(resumed.code, whole.code) << resumed.err;
  // Everything but the timing lines is the same, case counts included.
  // Rates are timings: drop the per-model cases/s column and the last line's rate.
  const auto drop = [](const std::string& out) {
    std::istringstream in(stable(out, "checked "));
    std::string line, kept;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::vector<std::string> w{std::istream_iterator<std::string>(words),
                                 std::istream_iterator<std::string>()};
      const auto number = [](const std::string& x) {
        return !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
      };
      if (w.size() >= 5 && number(w[1]) && number(w[2]) && number(w[3])) {
        line = w[0] + " " + w[1] + " " + w[2] + " " + w[3];
      } else if (line.find(" cases/s") != std::string::npos) {
        line = line.substr(0, line.rfind(", "));
        // The header: the rate column widens with its widest rate (a model
        // with a few cases rerun shows a huge one), so spacing is no part of it.
        std::string words;
        for (const std::string& word : w) words += (words.empty() ? "" : " ") + word;
        if (line.rfind("model ", 0) == 0) line = words;
      }
      kept += line + "\n";
    }
    return kept;
  };
  EXPECT_EQ(drop(resumed.out), drop(whole.out));
  // A resume that recomputed everything would end with the same table: the
  // resumed process must have taken exactly the stored cases from the store
  // and run only the others.
  const std::string marker = " of them by the interrupted run resumed here";
  const size_t at = resumed.out.find(marker);
  ASSERT_NE(at, std::string::npos) << resumed.out;
  const size_t open = resumed.out.rfind('(', at);
  ASSERT_NE(open, std::string::npos);
  EXPECT_EQ(std::stoll(resumed.out.substr(open + 1, at - open - 1)), stored_before)
      << "the resumed run did not skip exactly the cases the killed run stored";
  const std::string ran = "this process ran ";
  const size_t r = resumed.out.find(ran, at);
  ASSERT_NE(r, std::string::npos) << resumed.out;
  const std::int64_t ran_here = std::stoll(resumed.out.substr(r + ran.size()));
  EXPECT_EQ(ran_here + stored_before, storedCases(cut_db))
      << "every case once, the stored ones not again";
  removeStore(whole_db);
  removeStore(cut_db);
}

TEST(Resume, RefusesWhenThereIsNothingToResume) {
  const std::string db = tempPath("empty.db");
  removeStore(db);
  const auto r = runSeam("sweep --world 2 --db " + db + " --resume");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no unfinished sweep"), std::string::npos) << r.err;
  removeStore(db);
}

}  // namespace
