// Every flag of every subcommand refuses a value (`--no-fold=3` is not
// --no-fold): exit 2, one line naming the flag and the value, no file
// written. The flags are read from each `--help`, so a new flag, or a new
// subcommand, is covered without a change here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "help_text.h"
#include "run_seam.h"

namespace {

namespace fs = std::filesystem;
using seam::testing::parseHelp;
using seam::testing::runSeam;

/// `words` and every subcommand below it, with the flags each one's `--help` lists.
void collectFlags(const std::string& bin, const std::string& words,
                  std::vector<std::pair<std::string, std::string>>* out) {
  const auto run = runSeam(words + " --help", bin);
  ASSERT_EQ(run.code, 0) << words << " --help: " << run.err;
  const seam::testing::Help help = parseHelp(run.out);
  for (const std::string& flag : help.flags) out->emplace_back(words, flag);
  for (const std::string& sub : help.subcommands) collectFlags(bin, words + " " + sub, out);
}

/// Runs `words flag=value` for every flag of every subcommand of `bin`, in an empty folder.
void expectEveryFlagRefuses(const std::string& bin, const std::string& value) {
  const auto top = runSeam("--help", bin);
  ASSERT_EQ(top.code, 0);
  std::vector<std::pair<std::string, std::string>> flags;
  for (const std::string& sub : parseHelp(top.out).subcommands) collectFlags(bin, sub, &flags);
  // Every command has --help at least; the walk must reach the commands' own flags too.
  ASSERT_GT(flags.size(), 2 * parseHelp(top.out).subcommands.size());
  const fs::path dir = fs::path(::testing::TempDir()) / ("seam_flags_" + std::to_string(getpid()));
  for (const auto& [words, flag] : flags) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string args = words + " " + flag + "=" + value;
    const auto r = runSeam("__CD__" + dir.string() + "__ " + args, bin);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(seam::testing::lineCount(r.err), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag + " is a flag and takes no value (given \"" + value + "\")"),
              std::string::npos)
        << args << ": " << r.err;
    EXPECT_TRUE(fs::is_empty(dir)) << args << " wrote a file";
  }
  fs::remove_all(dir);
}

TEST(CliFlags, EveryFlagOfEverySeamSubcommandRefusesAValueNamingTheFlagAndTheValue) {
  expectEveryFlagRefuses(SEAM_BIN, "3");
}

TEST(CliFlags, AFlagGivenTrueOrNothingAfterItsEqualsSignIsRefusedToo) {
  // CLI11 alone would take both as the flag.
  for (const char* value : {"true", ""}) {
    const auto r = runSeam(std::string("graph --pattern M- --no-fold=") + value);
    EXPECT_EQ(r.code, 2) << value;
    EXPECT_EQ(r.err, std::string("seam: --no-fold is a flag and takes no value (given \"") + value +
                         "\")\n");
  }
}

TEST(CliFlags, AValueThatLooksLikeAFlagWithAValueIsTheOptionsValue) {
  // `--pattern` takes the next word whatever it looks like; CLI11 reads it as
  // the pattern, so it is not refused as a flag's value.
  const auto r = runSeam("plan --pattern --resume=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("is a flag"), std::string::npos) << r.err;
}

TEST(CliFlags, EveryFlagOfEverySeamGpuSubcommandRefusesAValue) {
#ifdef SEAM_GPU_BIN
  expectEveryFlagRefuses(SEAM_GPU_BIN, "3");
#else
  GTEST_SKIP() << "seam-gpu is not built (CUDA off)";
#endif
}

}  // namespace
