// The progress line of `seam mutate` (its baseline included), `seam diff`
// and `seam prop`: on a terminal one line of done/total, rate and ETA,
// rewritten in place and cleared; nothing at all when stderr is not one.
#include <gtest/gtest.h>

#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;

std::string db(const std::string& name) {
  return ::testing::TempDir() + "progress_cli_" + std::to_string(getpid()) + "_" + name + ".db";
}

const char* const kRuns[] = {
    "mutate --world 4 --model nemotron-3-nano --jobs 1 --mutant plan.site-drop-collective",
    "diff --world 4 --model nemotron-3-nano --jobs 1",
    "prop --cases 200 --seed 3 --world 2",
};

TEST(ProgressCli, NothingOfItWhenStderrIsNotATerminal) {
  for (const char* args : kRuns) {
    CliRun r = seam::testing::runSeam(std::string(args) + " --db " + db("plain"));
    EXPECT_NE(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, "") << args;
  }
}

// script(1) (util-linux) runs the command on a pseudo-terminal and copies
// what it wrote there, stderr included, to its own stdout.
CliRun onATerminal(const std::string& args) {
  const std::string inner =
      std::string(SEAM_BIN) + " " + args + " --db " + db("tty") + " >/dev/null";
  return seam::testing::runSeam("-qc '" + inner + "' /dev/null", "script");
}

TEST(ProgressCli, OnATerminalOneLineOfDoneTotalRateAndEtaClearedAtTheEnd) {
  const struct {
    const char* args;
    const char* expect;
  } runs[] = {{kRuns[0], "  baseline: cases 3963/3963, "},
              {kRuns[1], "  cases 3961/3961, "},
              {kRuns[0], "  mutants 1/1"}};
  for (const auto& run : runs) {
    CliRun r = onATerminal(run.args);
    EXPECT_NE(r.code, 2) << run.args << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(std::string("\r\033[K") + run.expect), std::string::npos)
        << run.args << "\n"
        << r.out;
    EXPECT_NE(r.out.find("/s, ETA "), std::string::npos) << r.out;
    // One line rewritten in place (stdout went to /dev/null): no newline,
    // and the line cleared at the end.
    EXPECT_EQ(r.out.find('\n'), std::string::npos) << r.out;
    EXPECT_TRUE(r.out.ends_with("\r\033[K")) << r.out;
  }
}

}  // namespace
