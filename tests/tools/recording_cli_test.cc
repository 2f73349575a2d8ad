// Runs the built `seam check --recording` and `seam import --recording` on
// the built recordings of tests/data/recordings/: exit 0 when every call is
// explained, 1 on a finding or partial evidence, with the first divergence
// and the line that reproduces it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;

const std::string kCase = "--pattern '*E' --tp 4 --dp 2 --ep 4 --tokens 2,2";
const std::string kData = std::string(SEAM_SOURCE_DIR) + "/tests/data/recordings/";

CliRun check(const std::string& rel, const std::string& extra = "") {
  return seam::testing::runSeam("check " + kCase + " --recording " + kData + rel + extra);
}

TEST(RecordingCli, ACorrectRecordingHoldsWithExitZero) {
  const CliRun r = check("fr/correct");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("explained: 20 of 20 recorded calls"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RECORDING HOLDS"), std::string::npos);
  EXPECT_NE(r.out.find("plan (declared): all properties hold"), std::string::npos);
}

TEST(RecordingCli, ARecordingOfAnotherBatchSaysWhichOptionToChange) {
  // fr/correct was recorded at tokens 2,2; judged at 3,3 no size fits.
  const CliRun r = seam::testing::runSeam(
      "check --pattern '*E' --tp 4 --dp 2 --ep 4 --tokens 3,3 "
      "--recording " +
      kData + "fr/correct");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("explained: 0 of 20 recorded calls"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hint: no recorded call has a size the plan owes: is the recording of this "
                       "case's batch? Give its --tokens (per DP shard) and --mode as recorded"),
            std::string::npos)
      << r.out;
  // A recording that fits the batch gets no such hint.
  EXPECT_EQ(check("fr/wrong_group").out.find("hint:"), std::string::npos);
}

TEST(RecordingCli, APlantedBugExitsOneNamingTheFirstDivergenceAndItsReproduceLine) {
  const CliRun r = check("fr/wrong_group");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("first divergence: wrong-group on rank 0, pg 4 (attn_dp), seq 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("frame: sglang/srt/distributed/communication_op.py"), std::string::npos);
  EXPECT_NE(r.out.find("reproduce: seam check --pattern '*E' --tp 4"), std::string::npos);
  EXPECT_NE(r.out.find("--recording " + kData + "fr/wrong_group"), std::string::npos);
  EXPECT_NE(r.out.find("RECORDING VIOLATED (fr_trace's rules alone pass it)"), std::string::npos);
}

TEST(RecordingCli, TheJsonVerdictHoldsEveryFindingAndTheOutcome) {
  const CliRun r = check("fr/dropped_combine", " --format json");
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["outcome"], "violated");
  EXPECT_EQ(j["findings"].size(), 8u);
  EXPECT_EQ(j["findings"][0]["kind"], "missing-call");
  EXPECT_EQ(j["explained"], 12);
  EXPECT_EQ(j["plan_holds"], true);
}

TEST(RecordingCli, PartialEvidenceExitsOneAndSaysNotPassed) {
  const CliRun r = check("fr/missing_rank");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("partial: no dump of rank 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RECORDING PARTIAL"), std::string::npos);
}

TEST(RecordingCli, PassesRepeatThePlan) {
  EXPECT_EQ(check("nccl/correct.log", " --passes 2").code, 0);
  EXPECT_EQ(check("nccl/correct.log").code, 1);
}

TEST(RecordingCli, CustomAllReduceTakesOnOrOffAndOnlyBesideARecording) {
  EXPECT_EQ(check("fr/correct", " --custom-all-reduce off").code, 0);
  const CliRun bad = check("fr/correct", " --custom-all-reduce maybe");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "seam: --custom-all-reduce \"maybe\" is not on or off\n");
  const CliRun alone = seam::testing::runSeam("check " + kCase + " --custom-all-reduce off");
  EXPECT_EQ(alone.code, 2);
  EXPECT_EQ(alone.err, "seam: --custom-all-reduce needs --recording\n");
}

TEST(RecordingCli, DiffSaysWhichOfTwoPlansARecordingRuns) {
  // fr/correct records the declared plan; mixer-weights-over-tp plants a
  // decision that changes this case's calls.
  const CliRun one = seam::testing::runSeam(
      "diff " + kCase + " --policy declared --decision mixer-weights-over-tp --against declared " +
      "--recording " + kData + "fr/correct");
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("against declared: holds, 20 of 20 recorded calls explained"),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("against declared with --decision mixer-weights-over-tp: violated"),
            std::string::npos);
  EXPECT_NE(one.out.find("the recording runs the plan of declared, not the plan of declared with "
                         "--decision mixer-weights-over-tp\n"),
            std::string::npos);
  const CliRun both = seam::testing::runSeam("diff " + kCase + " --policy legacy --recording " +
                                             kData + "fr/correct");
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find("the recording fits both plans"), std::string::npos) << both.out;
  const CliRun neither = seam::testing::runSeam("diff " + kCase + " --policy legacy --recording " +
                                                kData + "fr/dropped_combine");
  EXPECT_EQ(neither.code, 1) << neither.err;
  EXPECT_NE(neither.out.find("first divergence: missing-call on rank 0"), std::string::npos);
  EXPECT_NE(neither.out.find("the recording runs neither plan"), std::string::npos);
  const CliRun space =
      seam::testing::runSeam("diff --pattern '*E' --recording " + kData + "fr/correct");
  EXPECT_EQ(space.code, 2);
  EXPECT_EQ(seam::testing::lineCount(space.err), 1) << space.err;
}

TEST(RecordingCli, ImportSummarisesTheCallsOfEachRank) {
  const CliRun r =
      seam::testing::runSeam("import " + kCase + " --recording " + kData + "nccl/per_rank");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nccl-log, 6 groups"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 3: 5 calls"), std::string::npos);
}

TEST(RecordingCli, AForeignRecordingIsOneLineAndExitTwo) {
  const CliRun r = check("bad/fr_unknown_op");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(seam::testing::lineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("entry 2"), std::string::npos);
}

const std::string kTraining =
    "--family training --layout primerl --model nemotron-3-nano --dp 2 --cp 2 --ep 2 --docs 8";

TEST(RecordingCli, ATrainingRecordingIsExplainedAndPartialWhereTheRoutingDecides) {
  const CliRun r =
      seam::testing::runSeam("check " + kTraining + " --recording " + kData + "training/correct");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("explained: 3904 of 4024 recorded calls tied to the plan's 3904 owed"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("outside the model: 120 recorded calls of the train step"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pg 7 (dp_shard_mod_ep) [0,2] = expert_dp"), std::string::npos);
  EXPECT_NE(r.out.find("partial: 552 calls move rows the routing decides"), std::string::npos);
  EXPECT_NE(r.out.find("RECORDING PARTIAL"), std::string::npos);
  EXPECT_NE(r.out.find("plan (training-primerl): all properties hold"), std::string::npos);
}

TEST(RecordingCli, ATrainingRecordingOfAnotherCaseNamesItsFirstDivergence) {
  // The same dumps judged as dp 4 x cp 1: cp's all-to-alls are owed by nothing.
  const CliRun r = seam::testing::runSeam(
      "check --family training --layout primerl --model nemotron-3-nano --dp 4 --cp 1 --ep 2 "
      "--docs 8 --recording " +
      kData + "training/correct");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("first divergence: extra-call on rank 0, pg 3 (cp), seq 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("reproduce: seam check --family training --layout primerl"),
            std::string::npos);
}

}  // namespace
