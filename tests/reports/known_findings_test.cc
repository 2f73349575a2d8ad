// A run's findings read back from the store with identities that outlive
// op numbers, SGLang calls and engine line numbers; a baseline read from a
// store or from the JSON --write-baseline writes; and a run judged against
// it, a changed finding at a known case counted as new.
#include "seam/reports/known_findings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "store_test_support.h"

namespace seam::reports {
namespace {

using store_test::fileDigest;
using store_test::openOrDie;
using store_test::rawSql;
using store_test::sampleCase;
using store_test::sampleRun;
using store_test::tempPath;
using store_test::writeFile;

constexpr const char* kViolation =
    "owed-once violated (counted-k-times) at layer 3 stage 3 entry add_norm (op #9), rank 1, "
    "token 2: p(s1, t2, j0) has coefficient 2";
constexpr const char* kEngineCall =
    "; engine finding: SGLang calls norm.forward_with_allreduce_fusion() at "
    "layers/communicator/ops.py (fn) @0bca4c6f";

TEST(FindingIdentity, ASweepFindingIsItsPropertyClassAndPlaceWithoutOpNumberSentenceOrCall) {
  const std::string what =
      "owed-once violated (counted-k-times) at layer 3 stage 3 entry add_norm, rank 1, token 2";
  EXPECT_EQ(sweepFindingWhat(kViolation), what);
  EXPECT_EQ(sweepFindingWhat(std::string(kViolation) + kEngineCall), what);
  // The same place with another op number (an op added earlier in the plan).
  EXPECT_EQ(sweepFindingWhat("owed-once violated (counted-k-times) at layer 3 stage 3 entry "
                             "add_norm (op #12), rank 1, token 2: other words"),
            what);
  EXPECT_EQ(sweepFindingWhat("owed-once violated (missing-output): the policy could not plan"),
            "owed-once violated (missing-output)");
}

TEST(FindingIdentity, AnEngineFindingIsItsClassAndDivergenceWithoutPythonLineNumbers) {
  EXPECT_EQ(engineFindingWhat("differs",
                              "extra-call at sglang/srt/layers/communicator.py:1263:"
                              "_gather_hidden_states_and_residual"),
            "differs: extra-call at sglang/srt/layers/communicator.py:"
            "_gather_hidden_states_and_residual");
  EXPECT_EQ(
      engineFindingWhat("engine-failed", "raised at a/b.py:7:f: AssertionError: see c.py: planted"),
      "engine-failed: raised at a/b.py:f: AssertionError: see c.py: planted");
  EXPECT_EQ(engineFindingWhat("differs", "missing-call all_reduce[tp]"),
            "differs: missing-call all_reduce[tp]");
}

Finding finding(const std::string& batch, const std::string& what) {
  return {"nemotron-h-8b", "M*M-",     "pp=1 tp=4", "a2a=none fusion=on",
          batch,           "declared", what,        "seam check --tokens " + batch};
}

TEST(Baseline, KnownFindingsAreBaselinedAndAChangedOneAtAKnownCaseIsNew) {
  Baseline b;
  b.path = "b.json";
  b.keys = {finding("1,1", "A").key(), finding("2,2", "B").key(), finding("3,3", "C").key()};
  const std::vector<Finding> run = {finding("1,1", "A"), finding("2,2", "B changed"),
                                    finding("4,4", "D")};
  const BaselineVerdict v = judgeFindings(b, run);
  EXPECT_EQ(v.findings, 3);
  EXPECT_EQ(v.known, 1);
  ASSERT_EQ(v.fresh.size(), 2u);
  EXPECT_EQ(v.fresh[0].what, "B changed");
  EXPECT_EQ(v.fresh[1].batch, "4,4");
  EXPECT_EQ(v.unmet, 2) << "B as it was and C";
  EXPECT_EQ(renderBaselineVerdict(v, 1),
            "NEW FINDING: B changed\n  seam check --tokens 2,2\n(and 1 more new findings)\n"
            "baseline \"b.json\": 3 findings, 1 baselined, 2 new; 2 findings of the baseline "
            "not found by this run\n");
  const auto doc = nlohmann::json::parse(withBaselineJson("{\"counts\": {\"cases\": 9}}", v, 20));
  EXPECT_EQ(doc["counts"]["cases"], 9);
  EXPECT_EQ(doc["counts"]["baselined"], 1);
  EXPECT_EQ(doc["counts"]["new"], 2);
  EXPECT_EQ(doc["baseline"]["file"], "b.json");
  EXPECT_EQ(doc["baseline"]["unmet"], 2);
  ASSERT_EQ(doc["baseline"]["new_findings"].size(), 2u);
  EXPECT_EQ(doc["baseline"]["new_findings"][1]["reproduce"], "seam check --tokens 4,4");
}

TEST(Baseline, TheJsonWrittenReadsBackAsTheSameIdentitiesSortedByThem) {
  const std::string path = tempPath("known.json");
  const std::vector<Finding> findings = {finding("2,2", "B"), finding("1,1", "A")};
  const std::string text = baselineJson(kSweepRun, findings, "seam 0.1.0");
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["format"], "seam baseline 1");
  EXPECT_EQ(doc["command"], "sweep");
  ASSERT_EQ(doc["findings"].size(), 2u);
  EXPECT_EQ(doc["findings"][0]["batch"], "1,1");
  EXPECT_EQ(doc["findings"][1]["what"], "B");
  writeFile(path, text);
  auto back = readBaseline(path, kSweepRun);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_EQ(back->keys, (std::set<std::string>{findings[0].key(), findings[1].key()}));
  auto other = readBaseline(path, kEngineSweepRun);
  ASSERT_FALSE(other.hasValue());
  EXPECT_EQ(other.status().message(), "--baseline \"" + path +
                                          "\": a baseline of `seam sweep`, not of `seam sweep "
                                          "--engine`");
}

TEST(Baseline, AFileThatIsNoBaselineIsOneLineNamingIt) {
  const std::string path = tempPath("bad.json");
  const std::string named = "--baseline \"" + path + "\": ";
  const std::pair<std::string, std::string> cases[] = {
      {"", "neither a seam store nor seam baseline JSON (parse error at line 1, column 1"},
      {"{\"format\": ", "neither a seam store nor seam baseline JSON (parse error"},
      {"[1, 2]", "JSON, but not a seam baseline (its \"format\" is not \"seam baseline 1\")"},
      {"{\"format\": \"seam baseline 2\"}", "JSON, but not a seam baseline"},
      {"{\"format\": \"seam baseline 1\", \"command\": \"sweep\"}",
       "a seam baseline without a \"findings\" array"},
      {"{\"format\": \"seam baseline 1\", \"findings\": []}",
       "a seam baseline without a \"command\""},
      {"{\"format\": \"seam baseline 1\", \"command\": \"sweep\", \"findings\": [{\"model\": 1}]}",
       "findings[0] has no string \"model\""},
  };
  for (const auto& [text, why] : cases) {
    writeFile(path, text);
    auto b = readBaseline(path, kSweepRun);
    ASSERT_FALSE(b.hasValue()) << text;
    EXPECT_EQ(b.status().message().rfind(named + why, 0), 0u) << b.status().message();
    EXPECT_EQ(b.status().message().find('\n'), std::string::npos);
  }
  auto missing = readBaseline(tempPath("missing.json"), kSweepRun);
  ASSERT_FALSE(missing.hasValue());
  EXPECT_NE(missing.status().message().find("missing.json\": cannot read it"), std::string::npos)
      << missing.status().message();
}

TEST(Baseline, AStoreGivesTheFindingsOfItsLatestFinishedRunOfTheCommandAndIsNotWritten) {
  const std::string path = tempPath("known.db");
  {
    Store store = openOrDie(path);
    // Run 1 (finished): one violated case with its verdict, one that holds.
    RunRecord first = sampleRun("sweep", "world=4");
    ASSERT_TRUE(store.beginRun(first).isOk());
    CaseRecord violated = sampleCase(3, CaseOutcome::kViolated);
    ASSERT_TRUE(store
                    .addCase(first.id, violated,
                             {{2, false, "counted-k-times", std::string(kViolation) + kEngineCall}})
                    .isOk());
    ASSERT_TRUE(store.addCase(first.id, sampleCase(4), {}).isOk());
    ASSERT_TRUE(store.finishRun(first.id).isOk());
    // Run 2: an engine sweep (another command); run 3: a sweep never finished.
    RunRecord engine = sampleRun("sweep --engine", "world=2");
    ASSERT_TRUE(store.beginRun(engine).isOk());
    ASSERT_TRUE(store.finishRun(engine.id).isOk());
    RunRecord unfinished = sampleRun("sweep", "world=8");
    ASSERT_TRUE(store.beginRun(unfinished).isOk());
    ASSERT_TRUE(store.addCase(unfinished.id, sampleCase(7, CaseOutcome::kViolated), {}).isOk());
  }
  const std::uint64_t before = fileDigest(path);
  auto b = readBaseline(path, kSweepRun);
  ASSERT_TRUE(b.hasValue()) << b.status().message();
  const CaseRecord c = sampleCase(3, CaseOutcome::kViolated);
  const Finding expected{c.model,
                         c.pattern,
                         c.config,
                         c.flags,
                         c.batch,
                         c.policy,
                         "owed-once violated (counted-k-times) at layer 3 stage 3 entry "
                         "add_norm, rank 1, token 2",
                         ""};
  EXPECT_EQ(b->keys, std::set<std::string>{expected.key()});
  auto engine = readBaseline(path, kEngineSweepRun);
  ASSERT_TRUE(engine.hasValue()) << engine.status().message();
  EXPECT_TRUE(engine->keys.empty());
  EXPECT_EQ(fileDigest(path), before);

  const std::string prop_only = tempPath("prop_only.db");
  {
    Store store = openOrDie(prop_only);
    RunRecord prop = sampleRun("prop", "cases=1");
    ASSERT_TRUE(store.beginRun(prop).isOk());
    ASSERT_TRUE(store.finishRun(prop.id).isOk());
  }
  auto none = readBaseline(prop_only, kSweepRun);
  ASSERT_FALSE(none.hasValue());
  EXPECT_EQ(none.status().message(), "--baseline \"" + prop_only +
                                         "\": a seam store with no finished `seam sweep` run to "
                                         "take the findings of");
}

TEST(Baseline, AnEngineRunsFindingsAreItsDeclaredCasesThatDifferOrFail) {
  const std::string path = tempPath("engine_known.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("sweep --engine", "world=2");
  ASSERT_TRUE(store.beginRun(run).isOk());
  auto row = [](std::int64_t index, const char* policy, const char* agreement) {
    EngineCaseRecord r;
    r.case_index = index;
    r.policy = policy;
    r.model = "pattern M*E";
    r.config = "pp=1 tp=2";
    r.flags = "a2a=none";
    r.batch = std::to_string(index);
    r.agreement = agreement;
    r.divergence = "extra-call at x.py:10:f";
    r.reproduce = "seam check --engine sglang";
    return r;
  };
  for (const EngineCaseRecord& r :
       {row(0, "declared", "agrees"), row(0, "legacy", "differs"), row(1, "declared", "differs"),
        row(1, "legacy", "differs"), row(2, "declared", "engine-failed"),
        row(3, "declared", "engine-refused"), row(4, "declared", "plan-refused")}) {
    ASSERT_TRUE(store.addEngineCase(run.id, r).isOk());
  }
  auto found = runFindings(store, run.id, kEngineSweepRun);
  ASSERT_TRUE(found.hasValue()) << found.status().message();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].batch, "1");
  EXPECT_EQ((*found)[0].what, "differs: extra-call at x.py:f");
  EXPECT_EQ((*found)[1].what, "engine-failed: extra-call at x.py:f");
  EXPECT_EQ((*found)[1].policy, "declared");
}

TEST(Baseline, AnSqliteFileThatIsNoSeamStoreIsRefusedNamingItAsTheBaseline) {
  const std::string path = tempPath("other_app.db");
  ASSERT_EQ(rawSql(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1); SELECT 'ok';"), "ok");
  const std::uint64_t before = fileDigest(path);
  auto b = readBaseline(path, kSweepRun);
  ASSERT_FALSE(b.hasValue());
  EXPECT_EQ(b.status().message().rfind("--baseline \"" + path + "\": not a seam store", 0), 0u)
      << b.status().message();
  EXPECT_EQ(b.status().message().find("refusing to write"), std::string::npos);
  EXPECT_EQ(fileDigest(path), before);
}

}  // namespace
}  // namespace seam::reports
