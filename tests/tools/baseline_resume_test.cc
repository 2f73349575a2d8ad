// `seam mutate --resume` takes the baseline the interrupted run stored when
// this seam made it over the same space, and says so; a stored baseline that
// is damaged or of another commit is checked again, and the run says why.
// Either way the resumed campaign ends as the uninterrupted one did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_seam.h"
#include "seam/properties/provenance.h"
#include "seam/reports/baseline_rows.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::runSeam;

const std::string kArgs = "mutate --pattern 'M-*E-' --world 1,2,4 --jobs 2";

std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "seam_baseline_resume_" + std::to_string(getpid()) + "_" + name;
}

void removeStore(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

/// Lines of a campaign's output but the timings and a resumed run's own lines.
std::string stable(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("took ", 0) == 0 || line.rfind("campaign took", 0) == 0 ||
        line.rfind("resumed: ", 0) == 0) {
      continue;
    }
    kept += line + "\n";
  }
  return kept;
}

/// A copy of `whole`, a finished store, with a run interrupted in it: a copy
/// of the finished run, unfinished, with its first two mutants (and their
/// kills) and its baseline row as `edit(row)` makes it.
template <class Edit>
void interruptedCopy(const std::string& whole, const std::string& cut, Edit edit) {
  removeStore(cut);
  for (const char* side : {"", "-wal"}) {
    if (std::filesystem::exists(whole + side)) std::filesystem::copy_file(whole + side, cut + side);
  }
  auto store = seam::reports::Store::open(cut);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  auto runs = store->runs();
  ASSERT_TRUE(runs.hasValue() && runs->size() == 1u);
  const std::int64_t finished = runs->front().id;
  auto mutants = store->mutants(finished);
  auto kills = store->kills(finished);
  auto baseline = store->baseline(finished);
  ASSERT_TRUE(mutants.hasValue() && kills.hasValue() && mutants->size() > 2u);
  ASSERT_TRUE(baseline.hasValue() && baseline->has_value()) << "the campaign stored no baseline";
  seam::reports::RunRecord run = runs->front();
  run.finished_ms = 0;
  ASSERT_TRUE(store->beginRun(run).isOk());
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(store->putMutant(run.id, (*mutants)[i]).isOk());
    for (const auto& k : *kills) {
      if (k.mutant_id == (*mutants)[i].id) ASSERT_TRUE(store->addKill(run.id, k).isOk());
    }
  }
  seam::reports::BaselineRecord row = **baseline;
  edit(row);
  ASSERT_TRUE(store->putBaseline(run.id, row).isOk());
}

class ResumeBaseline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    whole_db_ = tempPath("whole.db");
    removeStore(whole_db_);
    whole_ = runSeam(kArgs + " --db " + whole_db_);
  }
  static void TearDownTestSuite() { removeStore(whole_db_); }
  static std::string whole_db_;
  static seam::testing::CliRun whole_;
};
std::string ResumeBaseline::whole_db_;
seam::testing::CliRun ResumeBaseline::whole_;

TEST_F(ResumeBaseline, ACampaignResumedBySameSeamTakesItsStoredBaselineAndEndsTheSame) {
  ASSERT_EQ(whole_.code, 0) << whole_.err;
  const std::string cut = tempPath("same.db");
  interruptedCopy(whole_db_, cut, [](seam::reports::BaselineRecord&) {});
  const auto resumed = runSeam(kArgs + " --db " + cut + " --resume --format json");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto j = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(j["baseline"]["reused"], true);
  EXPECT_FALSE(j["baseline"].contains("not_reused"));
  removeStore(cut);
}

TEST_F(ResumeBaseline, ADamagedStoredBaselineIsCheckedAgainAndTheRunSaysSo) {
  ASSERT_EQ(whole_.code, 0) << whole_.err;
  const std::string cut = tempPath("damaged.db");
  interruptedCopy(whole_db_, cut, [](seam::reports::BaselineRecord& row) {
    row.kept_cases[0] ^= 1;  // one case more or less, the checksum as it was
  });
  const auto resumed = runSeam(kArgs + " --db " + cut + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("\nresumed: the baseline stored by the interrupted run was not "
                             "reused (it is damaged: its checksum does not match its fields): "
                             "checked again\n"),
            std::string::npos)
      << resumed.out;
  EXPECT_EQ(stable(resumed.out), stable(whole_.out));
  removeStore(cut);
}

TEST_F(ResumeBaseline, ABaselineStoredByAnotherCommitIsCheckedAgainAndTheRunSaysSo) {
  ASSERT_EQ(whole_.code, 0) << whole_.err;
  const std::string cut = tempPath("commit.db");
  interruptedCopy(whole_db_, cut, [](seam::reports::BaselineRecord& row) {
    row.seam_commit = "000000000000";
    row.checksum = seam::reports::baselineChecksum(row);  // intact, of another build
  });
  const auto resumed = runSeam(kArgs + " --db " + cut + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("was not reused (it was made by seam 0.1.0 at commit 000000000000, "
                             "this is seam 0.1.0 at commit " +
                             seam::properties::seamCommit() + "): checked again\n"),
            std::string::npos)
      << resumed.out;
  EXPECT_EQ(stable(resumed.out), stable(whole_.out));
  removeStore(cut);
}

}  // namespace
