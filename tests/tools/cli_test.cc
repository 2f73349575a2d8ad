// Runs the built `seam` binary and checks exit codes, stdout and the one-line
// stderr of DESIGN §9.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "seam/sim/config_space.h"
#include "seam/sim/model.h"

namespace {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun seam(const std::string& args) {
  const char* bin = SEAM_BIN;
  const std::string err_path = ::testing::TempDir() + "seam_cli_stderr.txt";
  const std::string cmd = std::string(bin) + " " + args + " 2>" + err_path;
  CliRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  return r;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, ModelsListsEveryPresetOfCheckpointsJson) {
  CliRun r = seam("models");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const seam::ModelPreset& p : seam::presets()) {
    EXPECT_NE(r.out.find(std::string(p.name)), std::string::npos) << p.name;
  }
  EXPECT_NE(r.out.find("14 models"), std::string::npos);
}

TEST(Cli, ConfigsPrintsEveryConfigurationOfWorldEightAndTheCount) {
  CliRun r = seam("configs --world 8");
  ASSERT_EQ(r.code, 0) << r.err;
  auto space = seam::ConfigSpace::build(8);
  ASSERT_TRUE(space.hasValue());
  // Header + one row per config + the count line.
  EXPECT_EQ(lines(r.out), space->size() + 2);
  EXPECT_NE(r.out.find("\n" + std::to_string(space->size()) + " configs\n"), std::string::npos);
}

TEST(Cli, ConfigsJsonIsOneDocumentWithTheCount) {
  CliRun r = seam("configs --world 4 --model nemotron-h-8b --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"count\""), std::string::npos);
  EXPECT_NE(r.out.find("\"attn_tp\""), std::string::npos);
}

struct BadArgs {
  const char* args;
  const char* needle;
};

class CliRefusal : public ::testing::TestWithParam<BadArgs> {};

TEST_P(CliRefusal, ExitsTwoWithOneLineNamingTheBadValue) {
  CliRun r = seam(GetParam().args);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CliRefusal,
    ::testing::Values(BadArgs{"configs --world 8 --tp 3", "tp=3 does not divide world=8"},
                      BadArgs{"configs --world 8 --tp 4 --dp 8", "attn_dp*attn_cp=8 does not divide tp=4"},
                      BadArgs{"configs --world 0", "world=0"},
                      BadArgs{"configs --world eight", "eight"},
                      BadArgs{"configs --model gpt-5", "unknown model \"gpt-5\""},
                      BadArgs{"configs --shard 3/3", "--shard \"3/3\""},
                      BadArgs{"configs --format xml", "--format \"xml\""},
                      BadArgs{"models --bogus", "--bogus"},
                      BadArgs{"frobnicate", "unknown command \"frobnicate\""},
                      BadArgs{"", "subcommand"}),
    [](const ::testing::TestParamInfo<BadArgs>& info) { return "case" + std::to_string(info.index); });

TEST(Cli, HelpExitsZero) {
  CliRun r = seam("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("configs"), std::string::npos);
}

}  // namespace
