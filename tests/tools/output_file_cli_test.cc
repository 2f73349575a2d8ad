// The files a command reads are never rewritten by it: an output naming an
// input (by another path, a hard link or a symbolic link), an empty or
// missing input store, an output that cannot be written are refused with one
// line and exit 2, and every file in the folder keeps its bytes (checksums
// before and after); no store, output or temporary file appears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "run_seam.h"

namespace {

namespace fs = std::filesystem;
using seam::testing::runSeam;

/// An empty folder of its own, removed afterwards.
class OutputFileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("seam_output_file_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  seam::testing::CliRun seamIn(const std::string& args) {
    return runSeam("__CD__" + dir_.string() + "__ " + args);
  }

  /// Every file of the folder (links as the link) with a checksum of its bytes.
  std::map<std::string, std::size_t> checksums() const {
    std::map<std::string, std::size_t> sums;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename();
      sums[name] = entry.is_symlink()
                       ? std::hash<std::string>{}("-> " + fs::read_symlink(entry).string())
                       : std::hash<std::string>{}(seam::testing::readText(entry.path()));
    }
    return sums;
  }

  /// `args` exits 2 with one stderr line holding `needle`, and leaves the folder as it was.
  void expectRefusedUntouched(const std::string& args, const std::string& needle) {
    const auto before = checksums();
    const auto r = seamIn(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(seam::testing::lineCount(r.err), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(checksums(), before) << args << " changed the folder";
  }

  /// A small finished store at `name`.
  void makeStore(const std::string& name) {
    ASSERT_EQ(seamIn("prop --cases 3 --db " + name).code, 0);
    for (const char* side : {"-wal", "-shm"}) fs::remove(dir_ / (name + side));
  }

  fs::path dir_;
};

TEST_F(OutputFileCli, AReportOverItsOwnStoreIsRefusedByAnyPathOrLink) {
  makeStore("s.md");
  expectRefusedUntouched("report --db s.md -o s.md", "is the same file as --db \"s.md\"");
  expectRefusedUntouched("report --db s.md -o ./s.md", "is the same file as --db");
  fs::create_hard_link(dir_ / "s.md", dir_ / "hard.html");
  fs::create_symlink("s.md", dir_ / "soft.html");
  expectRefusedUntouched("report --db s.md -o hard.html", "is the same file as --db");
  expectRefusedUntouched("report --db soft.html -o s.md", "is the same file as --db");
}

TEST_F(OutputFileCli, AReportOverAGraphItEmbedsIsRefused) {
  ASSERT_EQ(seamIn("graph --pattern M- -o g.svg").code, 0);
  makeStore("s.db");
  fs::create_symlink("g.svg", dir_ / "g.html");
  expectRefusedUntouched("report --db s.db --graph g.svg -o g.html",
                         "is the same file as --graph \"g.svg\"");
}

TEST_F(OutputFileCli, AJunitFileThatIsTheRunsStoreIsRefusedBeforeTheRun) {
  makeStore("s.db");
  expectRefusedUntouched("prop --cases 3 --db s.db --junit s.db", "is the same file as --db");
  expectRefusedUntouched("sweep --world 1 --db s.db --junit ./s.db", "is the same file as --db");
  expectRefusedUntouched("mutate --model nemotron-h-4b --world 1 --db s.db --junit s.db",
                         "is the same file as --db");
  // Neither exists yet: the same path is still one file.
  expectRefusedUntouched("prop --cases 3 --db new.db --junit ./new.db", "is the same file as --db");
}

TEST_F(OutputFileCli, AGraphOverItsOwnTraceIsRefused) {
  const auto plan = seamIn("plan --pattern M- --format jsonl --rank all > t.dot");
  ASSERT_EQ(plan.code, 0) << plan.err;
  expectRefusedUntouched("graph --pattern M- --trace t.dot -o t.dot",
                         "is the same file as --trace \"t.dot\"");
}

TEST_F(OutputFileCli, AnEmptyInputStoreIsRefusedAndNotTurnedIntoAStore) {
  { std::ofstream(dir_ / "empty.db"); }
  expectRefusedUntouched("report --db empty.db -o r.md", "--db \"empty.db\": an empty file");
  expectRefusedUntouched("db merge out.db empty.db", "input \"empty.db\": an empty file");
  fs::permissions(dir_ / "empty.db", fs::perms::owner_read);
  expectRefusedUntouched("report --db empty.db -o r.md", "an empty file, not a seam store");
}

TEST_F(OutputFileCli, AnOutputThatCannotBeWrittenLeavesNoFileBehind) {
  makeStore("s.db");
  fs::create_symlink("/dev/full", dir_ / "full.md");
  expectRefusedUntouched("report --db s.db -o full.md", "is not a regular file");
  expectRefusedUntouched("graph --model nemotron-h-4b -o /dev/full", "is not a regular file");
  expectRefusedUntouched("report --db s.db -o missing/r.md", "does not exist");
  // A write that fails part way: past the shell's file size limit of 1 KiB
  // (its signal ignored, so the write itself fails).
  const auto before = checksums();
  const auto r = runSeam("__CD__" + dir_.string() + "__ graph --model nemotron-h-4b -o g.svg",
                         std::string("trap '' XFSZ; ulimit -f 1; exec ") + SEAM_BIN);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(seam::testing::lineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("-o \"g.svg\": cannot write it"), std::string::npos) << r.err;
  EXPECT_EQ(checksums(), before);
}

TEST_F(OutputFileCli, AWrittenReportReplacesTheFileALinkNamesAndKeepsTheLink) {
  makeStore("s.db");
  { std::ofstream(dir_ / "old.md") << "old\n"; }
  fs::create_symlink("old.md", dir_ / "link.md");
  const auto r = seamIn("report --db s.db -o link.md");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.md"));
  EXPECT_NE(seam::testing::readText((dir_ / "old.md").string()).find("seam report"),
            std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(OutputFileCli, ATooLargeJobsCountLeavesAnExistingStoreWithoutARunRow) {
  makeStore("s.db");
  for (const char* command :
       {"sweep --world 1", "mutate --model nemotron-h-4b --world 1", "diff --world 1"}) {
    for (const char* jobs : {"100000", "2147483647"}) {
      expectRefusedUntouched(std::string(command) + " --db s.db --jobs " + jobs,
                             std::string("--jobs ") + jobs + " is more than");
    }
  }
}

}  // namespace
