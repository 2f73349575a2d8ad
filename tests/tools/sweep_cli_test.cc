// What `seam sweep` shows while and after it runs: a progress line on a
// terminal only, and the ten most frequent refusal reasons (every one with
// --verbose).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;

std::string tempStore(const char* name) {
  const std::string db =
      ::testing::TempDir() + "seam_sweep_cli_" + name + "_" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
  return db;
}

/// The "  N x reason" lines under the "refused (" and "not modelled (" headings.
int reasonLines(const std::string& out) {
  static const std::regex reason("^  [0-9]+ x ");
  int n = 0;
  bool in_section = false;
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (line.rfind("refused (", 0) == 0 || line.rfind("not modelled (", 0) == 0) {
      in_section = true;
    } else if (!std::regex_search(line, reason)) {
      in_section = false;
    } else if (in_section) {
      ++n;
    }
    at = end + 1;
  }
  return n;
}

TEST(SweepCli, ListsTheTenMostFrequentRefusalReasonsAndCountsTheRestVerboseListsEvery) {
  const std::string db = tempStore("refusals");
  CliRun few = seam::testing::runSeam("sweep --world 4 --model deepseek-v3 --db " + db);
  ASSERT_NE(few.code, 2) << few.err;
  EXPECT_TRUE(few.err.empty()) << "stderr is not a terminal: no progress line\n" << few.err;
  CliRun all = seam::testing::runSeam("sweep --world 4 --model deepseek-v3 --verbose --db " + db);
  ASSERT_NE(all.code, 2) << all.err;
  const int every = reasonLines(all.out);
  ASSERT_GT(every, 10) << all.out;
  EXPECT_EQ(reasonLines(few.out), 10) << few.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(few.out, m,
                                std::regex("\\(([0-9]+) more reasons, [0-9]+ cases: "
                                           "--verbose lists them")))
      << few.out;
  EXPECT_EQ(std::stoi(m[1]), every - 10);
  EXPECT_EQ(all.out.find("more reasons"), std::string::npos);
  std::remove(db.c_str());
}

TEST(SweepCli, ShowsDoneTotalRateEtaAndTheModelOnATerminal) {
  const std::string db = tempStore("tty");
  // script(1) gives the sweep a terminal for stdout and stderr.
  CliRun r = seam::testing::runSeam("", "script -qec '" + std::string(SEAM_BIN) +
                                            " sweep --world 4 --model nemotron-3-nano --db " + db +
                                            "' /dev/null");
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("cases [0-9]+/[0-9]+, [0-9.]+/s, ETA [0-9]+[hms0-9]*, nemotron-3-nano")))
      << r.out;
  std::remove(db.c_str());
}

}  // namespace
