// seam/reports/output_file.h: outputs are checked before a run and written
// whole through a temporary file, or not at all.
#include "seam/reports/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using seam::reports::checkOutputFile;
using seam::reports::writeOutputFile;

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("seam_output_file_unit_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

TEST_F(OutputFile, AnOutputNamingAnInputByAnyPathIsRefused) {
  { std::ofstream(at("in.db")) << "x"; }
  fs::create_hard_link(at("in.db"), at("hard"));
  EXPECT_FALSE(checkOutputFile("-o", at("hard"), {{"--db", at("in.db")}}));
  EXPECT_FALSE(checkOutputFile("-o", at("new"), {{"--db", (dir_ / "." / "new").string()}}));
  EXPECT_TRUE(checkOutputFile("-o", at("new"), {{"--db", at("in.db")}}));
  EXPECT_TRUE(checkOutputFile("-o", at("new"), {{"--trace", ""}}));
}

TEST_F(OutputFile, AnOutputWhereNoFileCanBeWrittenIsRefusedNamingTheOption) {
  const auto empty = checkOutputFile("--junit", "");
  EXPECT_NE(empty.message().find("--junit \"\""), std::string::npos) << empty.message();
  EXPECT_FALSE(checkOutputFile("-o", at("none/r.md")));
  EXPECT_FALSE(checkOutputFile("-o", dir_.string()));
  EXPECT_FALSE(checkOutputFile("-o", "/dev/full"));
}

TEST_F(OutputFile, AWrittenFileHoldsAllItsBytesAndNoTemporaryFileRemains) {
  { std::ofstream(at("r.md")) << "old"; }
  ASSERT_TRUE(writeOutputFile("-o", at("r.md"), "new bytes\n"));
  EXPECT_EQ(read(at("r.md")), "new bytes\n");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.exists() ? 1 : 0;
  EXPECT_EQ(files, 1);
  EXPECT_FALSE(writeOutputFile("-o", at("none/r.md"), "x"));
}

}  // namespace
