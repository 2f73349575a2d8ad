// The bad-input corpus (tests/tools/bad_inputs.txt): every wrong input exits
// 2 with exactly one line on stderr naming the problem, and writes no file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_seam.h"

namespace {

struct BadInput {
  std::string args;
  std::string needle;
};

std::vector<BadInput> corpus() {
  std::ifstream in(std::string(SEAM_SOURCE_DIR) + "/tests/tools/bad_inputs.txt");
  std::vector<BadInput> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto arrow = line.find(" => ");
    if (arrow == std::string::npos) continue;
    out.push_back({line.substr(0, arrow), line.substr(arrow + 4)});
  }
  return out;
}

TEST(BadInputs, TheCorpusHoldsAtLeastAHundredEntries) { EXPECT_GE(corpus().size(), 100u); }

TEST(BadInputs, EachExitsTwoWithOneStderrLineNamingTheProblemAndWritesNoFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("seam_bad_" + std::to_string(getpid()));
  for (const BadInput& b : corpus()) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    // bash for $'...' quoting; run inside the empty folder.
    // "seam-gpu ARGS" entries run seam-gpu, built where CUDA and NCCL are.
    std::string args = b.args, bin = SEAM_BIN;
    if (args.rfind("seam-gpu ", 0) == 0) {
#ifdef SEAM_GPU_BIN
      args = args.substr(9);
      bin = SEAM_GPU_BIN;
#else
      continue;
#endif
    }
    const auto r = seam::testing::runSeam("__CD__" + dir.string() + "__ " + args, bin);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.err;
    EXPECT_EQ(seam::testing::lineCount(r.err), 1) << b.args << "\n" << r.err;
    EXPECT_NE(r.err.find(b.needle), std::string::npos) << b.args << ": " << r.err;
    EXPECT_TRUE(fs::is_empty(dir)) << b.args << " wrote " << fs::directory_iterator(dir)->path();
  }
  fs::remove_all(dir);
}

}  // namespace
