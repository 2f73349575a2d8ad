// Schema version 4: a campaign's baseline stored when it holds and recalled
// by the campaign resumed only when the same seam (version and commit) made
// it over the same space and the row is intact; otherwise it is checked
// again, and the run says why. A version 3 store is migrated keeping its rows.
#include "seam/reports/baseline_rows.h"

#include <gtest/gtest.h>

#include "seam/mutants/mutant.h"
#include "seam/reports/recorders.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

const SeamBuild kBuild{"seam 0.1.0", "0123456789ab"};

mutants::BaselineSummary sampleBaseline() {
  // 19 cases: the last byte of the bitmap is partly used.
  return {.space = 19, .refused = 12, .engine_findings = 1, .kept = {0, 3, 8, 9, 15, 17}};
}

TEST(BaselineRows, ARowIsStoredAndReadBackByteForByte) {
  const std::string path = tempPath("baseline_store.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("mutate", "worlds=1");
  ASSERT_TRUE(store.beginRun(run).isOk());
  auto none = store.baseline(run.id);
  ASSERT_TRUE(none.hasValue()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  const BaselineRecord row = baselineRow("worlds=1 models=m", kBuild, sampleBaseline());
  EXPECT_EQ(row.kept_cases.size(), 3u);
  EXPECT_EQ(row.kept_cases, std::string("\x09\x83\x02", 3));  // bits 0,3 | 8,9,15 | 17
  ASSERT_TRUE(store.putBaseline(run.id, row).isOk());
  auto back = store.baseline(run.id);
  ASSERT_TRUE(back.hasValue() && back->has_value());
  EXPECT_EQ((*back)->kept_cases, row.kept_cases);
  EXPECT_EQ((*back)->checksum, row.checksum);
  EXPECT_EQ((*back)->space, row.space);
  EXPECT_EQ((*back)->kept, 6);
  EXPECT_EQ(rawSql(path, "SELECT typeof(kept_cases) || ' ' || length(kept_cases) FROM baselines"),
            "blob 3");
  // Put again, it replaces the row.
  BaselineRecord other = row;
  other.version = "seam 9";
  ASSERT_TRUE(store.putBaseline(run.id, other).isOk());
  EXPECT_EQ(rawSql(path, "SELECT count(*) || ' ' || version FROM baselines"), "1 seam 9");
}

TEST(BaselineRows, AnIntactRowOfTheSameSpaceAndBuildGivesTheBaselineBack) {
  const BaselineRecord row = baselineRow("space", kBuild, sampleBaseline());
  auto back = baselineFromRow(row, "space", kBuild);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_EQ(back->kept, sampleBaseline().kept);
  EXPECT_EQ(back->space, 19);
  EXPECT_EQ(back->refused, 12);
  EXPECT_EQ(back->engine_findings, 1);
}

TEST(BaselineRows, ARowOfAnotherSpaceVersionOrCommitIsNotTaken) {
  const BaselineRecord row = baselineRow("space", kBuild, sampleBaseline());
  auto space = baselineFromRow(row, "another", kBuild);
  ASSERT_FALSE(space.hasValue());
  EXPECT_EQ(space.status().message(), "it was made over another case space");
  auto version = baselineFromRow(row, "space", {"seam 0.2.0", kBuild.commit});
  ASSERT_FALSE(version.hasValue());
  EXPECT_EQ(version.status().message(),
            "it was made by seam 0.1.0 at commit 0123456789ab, this is seam 0.2.0 at commit "
            "0123456789ab");
  auto commit = baselineFromRow(row, "space", {kBuild.version, "fedcba987654-dirty"});
  ASSERT_FALSE(commit.hasValue());
  EXPECT_NE(commit.status().message().find("this is seam 0.1.0 at commit fedcba987654-dirty"),
            std::string::npos);
  // A seam that does not know its commit cannot vouch for its planner.
  const BaselineRecord unknown = baselineRow("space", {kBuild.version, ""}, sampleBaseline());
  auto blind = baselineFromRow(unknown, "space", {kBuild.version, ""});
  ASSERT_FALSE(blind.hasValue());
  EXPECT_NE(blind.status().message().find("commit is unknown"), std::string::npos);
}

TEST(BaselineRows, ADamagedRowIsNotTakenAndSaysSo) {
  const BaselineRecord good = baselineRow("space", kBuild, sampleBaseline());
  // Any field changed behind the checksum's back.
  BaselineRecord bit = good, count = good, commit = good;
  bit.kept_cases[1] ^= 0x10;
  count.refused += 1;
  commit.seam_commit = "0123456789ac";
  for (const BaselineRecord& row : {bit, count, commit}) {
    auto r = baselineFromRow(row, "space", kBuild);
    ASSERT_FALSE(r.hasValue());
    EXPECT_EQ(r.status().message(), "it is damaged: its checksum does not match its fields");
  }
  // Fields that disagree with each other, checksum recomputed.
  auto resealed = [](BaselineRecord row) {
    row.checksum = baselineChecksum(row);
    return row;
  };
  BaselineRecord sums = good, bitmap = good, past = good, shorter = good;
  sums.refused += 1;
  bitmap.kept_cases[0] = 0x0b;
  past.kept_cases[2] = static_cast<char>(0x82);  // case 17 and "case 23", past the 19 cases
  past.kept_cases[1] = 0x03;                     // case 15 dropped: the count still holds
  shorter.kept_cases.pop_back();
  const std::vector<std::pair<BaselineRecord, std::string>> cases = {
      {resealed(sums), "its counts do not add up to its cases"},
      {resealed(bitmap), "its bitmap does not hold its kept cases"},
      {resealed(past), "its bitmap keeps a case past its cases"},
      {resealed(shorter), "its bitmap is not one bit per case"}};
  for (const auto& [row, why] : cases) {
    auto r = baselineFromRow(row, "space", kBuild);
    ASSERT_FALSE(r.hasValue()) << why;
    EXPECT_EQ(r.status().message(), "it is damaged: " + why);
  }
}

mutants::CampaignSpec smallCampaign(std::vector<int> worlds = {1, 2, 4}) {
  mutants::CampaignSpec spec;
  spec.models.push_back(*properties::sweepModel("", "M-*E-"));
  spec.worlds = std::move(worlds);
  spec.jobs = 2;
  spec.bound_cases = true;
  const auto all = mutants::registry();
  spec.mutants.assign(all.begin(), all.begin() + 3);
  return spec;
}

/// Runs `spec` into run `run_id` of `store` as `build` would (a resumed run
/// when the run has rows).
mutants::CampaignResult campaignInto(Store& store, std::int64_t run_id,
                                     const mutants::CampaignSpec& spec, const SeamBuild& build) {
  CampaignRecorder recorder(store, run_id, spec, nullptr, build);
  auto result = mutants::runCampaign(spec, &recorder);
  EXPECT_TRUE(recorder.status().isOk()) << recorder.status().message();
  EXPECT_TRUE(result.hasValue());
  return result.hasValue() ? *result : mutants::CampaignResult{};
}

/// A store with a campaign run into it once, by kBuild.
struct StoredCampaign {
  explicit StoredCampaign(const std::string& name)
      : path(tempPath(name)), store(openOrDie(path)), run(sampleRun("mutate", campaignArgs(spec))) {
    EXPECT_TRUE(store.beginRun(run).isOk());
    whole = campaignInto(store, run.id, spec, kBuild);
  }
  std::string path;
  Store store;
  mutants::CampaignSpec spec = smallCampaign();
  RunRecord run;
  mutants::CampaignResult whole;
};

TEST(BaselineRows, ACampaignStoresItsBaselineAndOnlyTheSameBuildAndSpaceTakeItBack) {
  StoredCampaign stored("baseline_recorder.db");
  const std::string& path = stored.path;
  Store& store = stored.store;
  const mutants::CampaignSpec& spec = stored.spec;
  const RunRecord& run = stored.run;
  const mutants::CampaignResult& whole = stored.whole;
  ASSERT_TRUE(whole.baseline_holds);
  EXPECT_FALSE(whole.baseline_reused);
  EXPECT_EQ(rawSql(path,
                   "SELECT kept || ' ' || refused || ' ' || engine_findings || ' ' || "
                   "(cases = kept + refused + engine_findings) || ' ' || space FROM baselines"),
            std::to_string(whole.cases) + " " + std::to_string(whole.baseline_refused) + " " +
                std::to_string(whole.baseline_engine_findings) + " 1 " + baselineSpace(spec));
  EXPECT_EQ(baselineSpace(spec),
            "worlds=1,2,4 policy=declared decision=none bounds=1 models=" + spec.models[0].name);

  // The same build over the same space: taken.
  const mutants::CampaignResult same = campaignInto(store, run.id, spec, kBuild);
  EXPECT_TRUE(same.baseline_reused);
  EXPECT_EQ(same.cases, whole.cases);
  EXPECT_EQ(same.baseline_refused, whole.baseline_refused);

  // Another commit: checked again, and stored again as this build's.
  const SeamBuild other{kBuild.version, "fedcba987654"};
  const mutants::CampaignResult rebuilt = campaignInto(store, run.id, spec, other);
  EXPECT_FALSE(rebuilt.baseline_reused);
  EXPECT_EQ(rebuilt.baseline_not_reused,
            "it was made by seam 0.1.0 at commit 0123456789ab, this is seam 0.1.0 at commit "
            "fedcba987654");
  EXPECT_EQ(rebuilt.cases, whole.cases);
  EXPECT_EQ(rawSql(path, "SELECT seam_commit FROM baselines"), "fedcba987654");
  EXPECT_TRUE(campaignInto(store, run.id, spec, other).baseline_reused);

  // Another space over the same run: checked again.
  const mutants::CampaignResult narrower =
      campaignInto(store, run.id, smallCampaign({1, 2}), other);
  EXPECT_FALSE(narrower.baseline_reused);
  EXPECT_EQ(narrower.baseline_not_reused, "it was made over another case space");
  EXPECT_LT(narrower.cases, whole.cases);
}

TEST(BaselineRows, ACampaignWhoseStoredBaselineIsDamagedChecksItAgainAndStoresItIntact) {
  StoredCampaign stored("baseline_damaged.db");
  ASSERT_EQ(rawSql(stored.path,
                   "UPDATE baselines SET kept_cases = zeroblob(length(kept_cases)); "
                   "SELECT changes()"),
            "1");
  const mutants::CampaignResult again =
      campaignInto(stored.store, stored.run.id, stored.spec, kBuild);
  EXPECT_FALSE(again.baseline_reused);
  EXPECT_EQ(again.baseline_not_reused, "it is damaged: its checksum does not match its fields");
  EXPECT_EQ(again.cases, stored.whole.cases);
  EXPECT_TRUE(campaignInto(stored.store, stored.run.id, stored.spec, kBuild).baseline_reused);
}

TEST(BaselineRows, AnIntactRowOfAnotherNumberOfCasesIsCheckedAgain) {
  // The same arguments and build enumerating another space: not taken.
  StoredCampaign stored("baseline_cases.db");
  auto row = stored.store.baseline(stored.run.id);
  ASSERT_TRUE(row.hasValue() && row->has_value());
  BaselineRecord bigger = **row;
  bigger.cases += 8;
  bigger.refused += 8;
  bigger.kept_cases += '\0';
  bigger.checksum = baselineChecksum(bigger);
  ASSERT_TRUE(stored.store.putBaseline(stored.run.id, bigger).isOk());
  const mutants::CampaignResult again =
      campaignInto(stored.store, stored.run.id, stored.spec, kBuild);
  EXPECT_FALSE(again.baseline_reused);
  EXPECT_EQ(again.baseline_not_reused, "it holds " + std::to_string(bigger.cases) +
                                           " cases and the space has " +
                                           std::to_string(bigger.cases - 8));
  EXPECT_EQ(again.cases, stored.whole.cases);
}

TEST(BaselineRows, AVersionThreeStoreIsMigratedKeepingItsCampaignWhichHasNoBaseline) {
  const std::string path = tempPath("v3.db");
  ASSERT_TRUE(createStoreOfVersion(path, 3).isOk());
  ASSERT_EQ(rawSql(path,
                   "INSERT INTO runs VALUES (1, 'mutate', 'a', 'v', '', '', '', '', 1, 0, 'c'); "
                   "INSERT INTO mutants VALUES (1, 'plan.x', 'plan', 'd', 'killed', '', 9, 1, 1, "
                   "0, 0.5); "
                   "SELECT count(*) FROM sqlite_master WHERE name = 'baselines'"),
            "0");
  {
    Store store = openOrDie(path);
    auto mutants = store.mutants(1);
    ASSERT_TRUE(mutants.hasValue()) << mutants.status().message();
    ASSERT_EQ(mutants->size(), 1u);
    EXPECT_EQ((*mutants)[0].cases_run, 9);
    auto baseline = store.baseline(1);
    ASSERT_TRUE(baseline.hasValue()) << baseline.status().message();
    EXPECT_FALSE(baseline->has_value());
  }
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(rawSql(path, "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
            std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  { Store store = openOrDie(path); }
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM mutants"), "1");
}

TEST(BaselineRows, AStoreWhoseBaselinesTableWasDroppedIsRefusedAsDamaged) {
  const std::string path = tempPath("v4_dropped.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path, "DROP TABLE baselines; SELECT 'dropped'"), "dropped");
  auto store = Store::open(path);
  ASSERT_FALSE(store.hasValue());
  EXPECT_NE(store.status().message().find("table \"baselines\" is missing"), std::string::npos)
      << store.status().message();
}

}  // namespace
}  // namespace seam::reports::store_test
