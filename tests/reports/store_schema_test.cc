// Schema version 3: typed configuration and flag columns, an outcome of its
// own for cases seam does not model, runs with their host and seam commit,
// GPU results with when, where and from what they ran; a version 2 store (the
// schema before) is migrated keeping every row.
#include <gtest/gtest.h>

#include <fstream>

#include "seam/properties/provenance.h"
#include "seam/reports/gpu_import.h"
#include "seam/sim/base/status.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

TEST(StoreSchema, ACaseIsStoredWithTypedConfigurationAndFlagColumns) {
  const std::string path = tempPath("typed.db");
  {
    Store store = openOrDie(path);
    RunRecord run{.command = "sweep", .args = "world=8"};
    ASSERT_TRUE(store.beginRun(run).isOk());
    CaseRecord c{.index = 0,
                 .config = "pp=1 tp=8 attn_dp=2 attn_cp=1 moe_ep=4 moe_dp=1",
                 .flags =
                     "a2a=deepep fusion=off padding=sum_len reduction=rsv mode=extend "
                     "tbo=on capture=1,26,49",
                 .outcome = CaseOutcome::kHolds};
    ASSERT_TRUE(store.addCase(run.id, c, {}).isOk());
  }
  EXPECT_EQ(rawSql(path,
                   "SELECT pp || ' ' || tp || ' ' || attn_dp || ' ' || attn_cp || ' ' || moe_ep || "
                   "' ' || moe_dp || ' ' || a2a || ' ' || fusion || ' ' || padding || ' ' || "
                   "reduction || ' ' || mode || ' ' || tbo || ' ' || ln_sp || ' ' || capture "
                   "FROM cases"),
            "1 8 2 1 4 1 deepep off sum_len rsv extend 1 0 1,26,49");
  // Filtered by tp without LIKE, as an integer.
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases WHERE tp = 8 AND attn_dp > 1"), "1");
  EXPECT_EQ(rawSql(path, "SELECT typeof(tp) FROM cases"), "integer");
}

TEST(StoreSchema, NotModelledIsAnOutcomeOfItsOwnAndReadsBackAsTheRefusalItWas) {
  const std::string path = tempPath("not_modelled.db");
  Store store = openOrDie(path);
  RunRecord run{.command = "sweep", .args = "world=2"};
  ASSERT_TRUE(store.beginRun(run).isOk());
  const std::string gap = std::string(kNotModelledPrefix) + "a gap";
  ASSERT_TRUE(
      store.addCase(run.id, {.index = 0, .outcome = CaseOutcome::kRefused, .refusal = gap}, {})
          .isOk());
  ASSERT_TRUE(
      store
          .addCase(run.id, {.index = 1, .outcome = CaseOutcome::kRefused, .refusal = "asserts"}, {})
          .isOk());
  EXPECT_EQ(rawSql(path, "SELECT group_concat(outcome, ',') FROM cases"), "not-modelled,refused");
  auto cases = store.cases(run.id);
  ASSERT_TRUE(cases.hasValue());
  EXPECT_EQ((*cases)[0].outcome, CaseOutcome::kRefused);
  EXPECT_EQ((*cases)[0].refusal, gap);
}

TEST(StoreSchema, ARunStartedHereRecordsThisHostAndCommitAndACopiedRunKeepsItsOwn) {
  const std::string path = tempPath("host.db");
  Store store = openOrDie(path);
  RunRecord here{.command = "prop", .args = "cases=1"};
  ASSERT_TRUE(store.beginRun(here).isOk());
  EXPECT_EQ(here.host, properties::thisHost());
  EXPECT_FALSE(here.host.empty());
  EXPECT_EQ(here.seam_commit, properties::seamCommit());
  RunRecord copied{.command = "prop", .args = "cases=1", .host = "", .started_ms = 5};
  ASSERT_TRUE(store.beginRun(copied).isOk());
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  EXPECT_EQ((*runs)[0].host, properties::thisHost());
  EXPECT_EQ((*runs)[1].host, "");
  EXPECT_EQ((*runs)[1].started_ms, 5);
}

TEST(StoreSchema, AVersionTwoStoreIsMigratedWithTypedColumnsAndNotModelledRows) {
  // The schema of the previous seam, with rows as it wrote them.
  const std::string path = tempPath("v2.db");
  ASSERT_TRUE(createStoreOfVersion(path, 2).isOk());
  const std::string gap = std::string(kNotModelledPrefix) + "x";
  ASSERT_EQ(
      rawSql(path,
             "INSERT INTO runs VALUES (1, 'sweep', 'world=4', 'v', '', '', '', '', 1, 2); "
             "INSERT INTO cases VALUES (1, 0, 'm', 'M-', "
             "'pp=1 tp=4 attn_dp=1 attn_cp=1 moe_ep=1 moe_dp=1', "
             "'a2a=none fusion=on padding=max_len reduction=ar mode=decode', '4', 'declared', "
             "'m', 'refused', '" +
                 gap +
                 "', 'seam check', 0); "
                 "INSERT INTO cases VALUES (1, 1, 'm', 'M-', '', '', '', 'declared', "
                 "'bench', 'violated', '', 'seam check', 7); "
                 "INSERT INTO verdicts VALUES (1, 1, 2, 0, 0, 'c', 'why'); "
                 "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
      "2");
  {
    Store store = openOrDie(path);
    auto cases = store.cases(1);
    ASSERT_TRUE(cases.hasValue()) << cases.status().message();
    ASSERT_EQ(cases->size(), 2u);
    EXPECT_EQ((*cases)[0].outcome, CaseOutcome::kRefused);
    EXPECT_EQ((*cases)[0].refusal, gap);
    EXPECT_EQ((*cases)[1].plan_hash, 7u);
    auto failures = store.firstFailures(1);
    ASSERT_TRUE(failures.hasValue());
    ASSERT_EQ(failures->size(), 1u);
    EXPECT_EQ((*failures)[0].second.text, "why");
    auto runs = store.runs();
    ASSERT_TRUE(runs.hasValue());
    EXPECT_EQ((*runs)[0].seam_commit, "");
  }
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(rawSql(path, "SELECT outcome || ' ' || tp || ' ' || mode FROM cases WHERE idx = 0"),
            "not-modelled 4 decode");
  // A row without a serving configuration (a GPU bench row) has none.
  EXPECT_EQ(rawSql(path,
                   "SELECT coalesce(tp, 'null') || coalesce(tbo, 'null') FROM cases "
                   "WHERE idx = 1"),
            "nullnull");
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  // Opened again it stays as it is.
  { Store store = openOrDie(path); }
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases"), "2");
}

TEST(StoreSchema, AGpuResultCarriesItsHostTimeAndCommitWhereItsJsonHasThem) {
  const std::string raw = std::string(SEAM_SOURCE_DIR) + "/tests/reports/data/";
  std::ifstream in(raw + "gpuperf_bench_h8b_decode.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json.empty());
  const auto brace = json.find('{');
  const std::string stamped = json.substr(0, brace + 1) +
                              "\"host\": \"gpu-node-7\", \"written_ms\": 1764500000000, "
                              "\"commit\": \"0123456789ab\", " +
                              json.substr(brace + 1);
  const std::string file = tempPath("stamped.json");
  { std::ofstream(file) << stamped; }
  auto with = readGpuJson(file, "seam 0.1.0");
  ASSERT_TRUE(with.hasValue()) << with.status().message();
  EXPECT_EQ(with->run.host, "gpu-node-7");
  EXPECT_EQ(with->run.started_ms, 1764500000000);
  EXPECT_EQ(with->run.seam_commit, "0123456789ab");
  // A file from before seam-gpu stamped it: the import time, and no host
  // rather than the importing machine's.
  auto without = readGpuJson(raw + "gpuperf_bench_h8b_decode.json", "seam 0.1.0");
  ASSERT_TRUE(without.hasValue());
  EXPECT_EQ(without->run.host, "");
  EXPECT_GT(without->run.started_ms, 1764500000000);
  const std::string path = tempPath("gpu.db");
  Store store = openOrDie(path);
  ASSERT_TRUE(writeGpuResult(store, *with).hasValue());
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  EXPECT_EQ((*runs)[0].host, "gpu-node-7");
  EXPECT_EQ((*runs)[0].started_ms, 1764500000000);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace seam::reports::store_test
