// Runs the built `seam prop`: exit 0 when every generated case holds, 1 with
// the violation, the RC_PARAMS line and the `seam check` command of the shrunk
// case under a planner mutant, 2 with one stderr line on bad options; and the
// printed RC_PARAMS, set in the environment, replays the same failure.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

using seam::testing::ownDb;

constexpr int kExitOk = 0;
constexpr int kExitPropertyFailed = 1;
constexpr int kExitBadInput = 2;

// The line of `text` that starts with `prefix` ("" when none does).
std::string lineStartingWith(const std::string& text, const std::string& prefix) {
  size_t at = text.rfind("\n" + prefix);
  if (text.rfind(prefix, 0) == 0)
    at = 0;
  else if (at == std::string::npos)
    return "";
  else
    ++at;
  return text.substr(at, text.find('\n', at) - at);
}

// World 2: no engine finding fits there (each needs tp >= 4).
TEST(PropCli, TwoHundredCasesWithSeedOnePassAndSaySo) {
  CliRun r = seam("prop --cases 200 --seed 1 --world 2" + ownDb("prop_cli_test1"));
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("seam prop: 200 cases, seed 1", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n200 cases passed (seed 1)\n"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(PropCli, AFlippedDecisionFailsWithRcParamsAndASeamCheckLine) {
  CliRun r = seam("prop --cases 500 --seed 7 --decision ffn-keeps-sum-from-mixer" +
                  ownDb("prop_cli_test2"));
  EXPECT_EQ(r.code, kExitPropertyFailed) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED after "), std::string::npos) << r.out;
  EXPECT_EQ(lineStartingWith(r.out, "RC_PARAMS="),
            "RC_PARAMS=\"seed=7 max_success=500 max_size=100\"")
      << r.out;
  const std::string check = lineStartingWith(r.out, "seam check ");
  EXPECT_NE(check.find("--pattern '"), std::string::npos) << r.out;
  EXPECT_NE(check.find("--policy declared --decision ffn-keeps-sum-from-mixer"), std::string::npos)
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(PropCli, ThePrintedRcParamsReplayTheSameFailure) {
  const std::string args = "prop --cases 500 --seed 7 --decision ffn_keeps_sum_from_mixer";
  CliRun first = seam(args);
  ASSERT_EQ(first.code, kExitPropertyFailed) << first.out << first.err;
  std::string rc_params = lineStartingWith(first.out, "RC_PARAMS=\"");
  ASSERT_FALSE(rc_params.empty()) << first.out;
  rc_params = rc_params.substr(std::string("RC_PARAMS=\"").size());
  rc_params.pop_back();  // the closing quote
  // Another seed and count on the command line: RC_PARAMS wins, as in rapidcheck.
  ASSERT_EQ(setenv("RC_PARAMS", rc_params.c_str(), 1), 0);
  CliRun replay = seam("prop --cases 50 --seed 99 --decision ffn_keeps_sum_from_mixer" +
                       ownDb("prop_cli_test3"));
  unsetenv("RC_PARAMS");
  EXPECT_EQ(replay.code, kExitPropertyFailed) << replay.out << replay.err;
  EXPECT_EQ(lineStartingWith(replay.out, "seam check "),
            lineStartingWith(first.out, "seam check "));
  EXPECT_EQ(lineStartingWith(replay.out, "FAILED"), lineStartingWith(first.out, "FAILED"));
}

struct BadArgs {
  const char* args;
  const char* needle;
};
void PrintTo(const BadArgs& b, std::ostream* os) { *os << b.args; }

class PropCliRefusal : public ::testing::TestWithParam<BadArgs> {};

TEST_P(PropCliRefusal, ExitsTwoWithOneStderrLineNamingTheProblem) {
  CliRun r = seam(GetParam().args);
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_EQ(seam::testing::lineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, PropCliRefusal,
    ::testing::Values(BadArgs{"prop --cases 0", "--cases 0"},
                      BadArgs{"prop --cases -5", "--cases -5"},
                      BadArgs{"prop --world 4097", "--world 4097"},
                      BadArgs{"prop --world -1", "--world -1"},
                      BadArgs{"prop --max-layers 0", "--max-layers: Value 0 not in range"},
                      BadArgs{"prop --seed -1", "--seed"},
                      BadArgs{"prop --decision no_such_decision", "no_such_decision"},
                      BadArgs{"prop --cases many", "--cases"}));

}  // namespace
