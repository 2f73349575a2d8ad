#include "seam/reports/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "../sim/case_builders.h"
#include "seam/reports/input_file.h"
#include "seam/reports/plan_view.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam::reports {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "seam_trace_" + std::to_string(getpid()) + "_" + name;
}

Plan declared(const Case& c) {
  auto p = buildPlan(c, PolicyKind::kDeclared);
  EXPECT_TRUE(p.hasValue()) << p.status().message();
  return *p;
}

/// The trace `seam plan --format jsonl --rank all` writes.
std::string traceOf(const Plan& plan) {
  std::string out;
  for (int r = 0; r < plan.world(); ++r) out += renderPlan(plan, r, Format::kJsonl);
  return out;
}

TEST(Trace, APlanWrittenAsJsonLinesAndImportedBackIsTheSamePlan) {
  for (const Case& c : {seam::testing::patternCase("M-*E-/*E", {.tp = 2}, {4}),
                        seam::testing::patternCase("M-M*E", {.tp = 4, .attn_dp = 2}, {3, 0}),
                        seam::testing::patternCase("M-|*E", {.pp = 2, .tp = 2}, {2})}) {
    const Plan plan = declared(c);
    const std::string path = temp("roundtrip.jsonl");
    std::ofstream(path) << traceOf(plan);
    auto back = importTrace(path, plan);
    ASSERT_TRUE(back.hasValue()) << back.status().message();
    // A trace holds what ran, not which engine call seam names for an op.
    std::vector<std::vector<Op>> ran = plan.ranks;
    for (auto& ops : ran)
      for (Op& op : ops) op.site = EngineSite::kUnnamed;
    EXPECT_TRUE(back->ranks == ran) << c.model.pattern.text();
    EXPECT_TRUE(replayPlan(*back).holds());
    std::remove(path.c_str());
  }
}

TEST(Trace, RefusesACaseThatRunsTwoBatchOverlapNamingTheFlag) {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  f.tbo = true;
  const Plan plan = declared(seam::testing::twoStageCase("*-*E*E", {.tp = 2, .moe_ep = 2}, {4}, f));
  ASSERT_FALSE(plan.tbo_split.empty());
  const std::string path = temp("tbo.jsonl");
  std::ofstream(path) << traceOf(plan);
  auto back = importTrace(path, plan);
  ASSERT_FALSE(back.hasValue());
  EXPECT_NE(back.status().message().find("--tbo"), std::string::npos) << back.status().message();
  std::remove(path.c_str());
}

TEST(Trace, ATraceWithOneReductionRemovedFailsWithASumNeverCompleted) {
  const Case c = seam::testing::patternCase("M-M*-", {.tp = 2}, {4}, [] {
    Flags f;
    f.fusion = false;
    return f;
  }());
  const Plan plan = declared(c);
  // Remove the first all_reduce on every rank: the engine "forgot" it.
  std::istringstream in(traceOf(plan));
  std::string line, edited;
  std::vector<bool> dropped(plan.world(), false);
  while (std::getline(in, line)) {
    const auto rank_at = line.find("\"rank\":");
    const int rank = std::stoi(line.substr(rank_at + 7));
    if (!dropped[rank] && line.find("\"op\":\"all_reduce\"") != std::string::npos) {
      dropped[rank] = true;
      continue;
    }
    edited += line + "\n";
  }
  const std::string path = temp("edited.jsonl");
  std::ofstream(path) << edited;
  auto back = importTrace(path, plan);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  const LedgerResult r = replayPlan(*back);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kNeverCompleted);
  std::remove(path.c_str());
}

TEST(Trace, RefusesBadLinesNamingTheLine) {
  const Plan plan = declared(seam::testing::patternCase("M-", {.tp = 2}, {4}));
  const std::string good = traceOf(plan);
  const std::string first = good.substr(0, good.find('\n'));
  const std::pair<std::string, std::string> bad[] = {
      {first + "\n" + first.substr(0, 40) + "\n",
       "line 2: not a JSON object (truncated or malformed)"},
      {"[1,2]\n", "line 1: not a JSON object"},
      {"{\"rank\": 9}\n", "line 1: \"rank\" 9 is out of range (0..1)"},
      {std::string(first).replace(first.find("add_norm"), 8, "frobnify") + "\n",
       "\"op\" \"frobnify\" is not an op kind"},
      {"", "no calls in it"},
      {"\xff\xfe\n", "line 1: not a JSON object"},
  };
  for (const auto& [text, needle] : bad) {
    const std::string path = temp("bad.jsonl");
    std::ofstream(path) << text;
    auto r = importTrace(path, plan);
    ASSERT_FALSE(r.hasValue()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    std::remove(path.c_str());
  }
  EXPECT_FALSE(importTrace(temp("missing.jsonl"), plan).hasValue());
}

TEST(Trace, RefusesAGroupThatIsNotSeamsGroupForTheConfig) {
  const Plan plan = declared(seam::testing::patternCase("M-", {.tp = 2}, {4}));
  std::string t = traceOf(plan);
  const auto at = t.find("\"ranks\":[0,1]");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 13, "\"ranks\":[0,2]");
  const std::string path = temp("group.jsonl");
  std::ofstream(path) << t;
  auto r = importTrace(path, plan);
  ASSERT_FALSE(r.hasValue());
  EXPECT_NE(r.status().message().find("not the group seam's topology gives"), std::string::npos);
  std::remove(path.c_str());
}

/// `trace` with the first line that holds `from` changed to hold `to`.
std::string edited(const std::string& trace, const std::string& from, const std::string& to) {
  std::string out = trace;
  const auto at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

TEST(Trace, RefusesAnOpAtAStageTheCaseDoesNotHaveInsteadOfReplayingIt) {
  // Found by tests/fuzz/trace_fuzz.cc: a trace with "stage": 32767 was
  // imported and the ledger read past the end of its per-stage tables.
  const Plan plain = declared(seam::testing::patternCase("M-|*E", {.pp = 2, .tp = 2}, {2}));
  const Plan mtp = declared(seam::testing::patternCase("M-*E-/*E", {.tp = 2}, {4}));
  const std::string plain_trace = traceOf(plain), mtp_trace = traceOf(mtp);
  struct Bad {
    const Plan* plan;
    std::string text, needle;
  };
  const Bad bad[] = {
      {&plain, edited(plain_trace, "\"stage\":1,", "\"stage\":32767,"),
       "\"stage\" 32767 of stack 0 is not a stage of the case (-1..4)"},
      {&plain, edited(plain_trace, "\"stage\":1,", "\"stage\":-1,"),
       "stage -1 is the MTP input projection"},
      {&plain, edited(plain_trace, "\"stage\":1,", "\"stage\":1,\"stack\":1,"),
       "\"stack\" 1, but the case has no MTP step"},
      {&plain,
       edited(plain_trace, "\"stage\":1,\"phase\":\"compute\",\"op\":\"compute\"",
              "\"stage\":4,\"phase\":\"compute\",\"op\":\"compute\""),
       "is the final norm: no stage computes there"},
      {&mtp,
       edited(mtp_trace, "\"stage\":2,\"stack\":1,\"phase\":\"entry\",\"op\":\"add_norm\"",
              "\"stage\":-1,\"stack\":1,\"phase\":\"entry\",\"op\":\"add_norm\""),
       "stage -1 is the MTP input projection (stack 1, no norm)"},
  };
  for (const Bad& b : bad) {
    const std::string path = temp("stage.jsonl");
    std::ofstream(path) << b.text;
    auto r = importTrace(path, *b.plan);
    ASSERT_FALSE(r.hasValue()) << b.needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(b.needle), std::string::npos) << r.status().message();
    std::remove(path.c_str());
  }
  // The stages a real plan uses are all accepted: -1 of the MTP stack, the final norms.
  for (const Plan* p : {&plain, &mtp}) {
    const std::string path = temp("stage_ok.jsonl");
    std::ofstream(path) << traceOf(*p);
    EXPECT_TRUE(importTrace(path, *p).hasValue());
    std::remove(path.c_str());
  }
}

TEST(Trace, RefusesEveryKeyOutsideTheSchemaOrTheCaseNamingTheKey) {
  // A 2-layer case: a line naming layer 99 records a layer it does not have.
  const Plan plan = declared(seam::testing::patternCase("M-", {.tp = 2}, {4}));
  const std::string t = traceOf(plan);
  const std::pair<std::string, std::string> bad[] = {
      {edited(t, "\"layer\":0,", "\"layer\":99,"),
       "\"layer\" 99 is not the layer of stage 0 of stack 0 (0)"},
      {edited(t, "\"op\":\"add_norm\",", ""), "line 1: \"op\" is missing"},
      {edited(t, "\"op\":\"add_norm\",", "\"op\":7,"), "\"op\" is not a string"},
      {edited(t, "\"layer\":0,", ""), "\"layer\" is missing"},
      {edited(t, "\"bytes\":", "\"bytes\":-"), "\"bytes\" -"},
      {edited(t, "\"layer\":0,", "\"layer\":0,\"lyaer\":0,"),
       "\"lyaer\" is not a key of a trace line"},
      {edited(t, ",\"count\":4}", "}"), "\"rows_in.count\" is missing"},
      {edited(t, "\"count\":4}", "\"count\":4,\"x\":1}"), "\"rows_in.x\" is not a key of rows"},
      {edited(t, "\"count\":4}", "\"count\":-4}"), "\"rows_in.count\" -4 is out of range"},
      {edited(t, "\"group_size\":null", "\"group_size\":2"),
       "\"group_size\" is given for an op without a group"},
      {edited(t, "\"phase\":\"entry\"", "\"phase\":\"later\""),
       "\"phase\" \"later\" is not one of entry, compute, exit"},
      {edited(t, "\"tensor\":\"hidden\"", "\"tensor\":\"weights\""), "\"tensor\" \"weights\""},
  };
  for (const auto& [text, needle] : bad) {
    const std::string path = temp("schema.jsonl");
    std::ofstream(path) << text;
    auto r = importTrace(path, plan);
    ASSERT_FALSE(r.hasValue()) << needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    std::remove(path.c_str());
  }
}

TEST(Trace, ALineOrAFileOverItsCapIsRefusedWithoutReadingThemWhole) {
  const Plan plan = declared(seam::testing::patternCase("M-", {.tp = 2}, {4}));
  const std::string path = temp("long.jsonl");
  std::ofstream(path) << std::string(kMaxTraceLineBytes + 1, ' ') << "\n";
  auto r = importTrace(path, plan);
  ASSERT_FALSE(r.hasValue());
  EXPECT_NE(r.status().message().find("line 1: longer than 1 MiB"), std::string::npos)
      << r.status().message();
  // An endless file of one line: refused at the line cap, not read on.
  auto zero = importTrace("/dev/zero", plan);
  ASSERT_FALSE(zero.hasValue());
  EXPECT_NE(zero.status().message().find("longer than 1 MiB"), std::string::npos);
  // A file over the file cap is refused from its size, before a line is read.
  ASSERT_EQ(::truncate(path.c_str(), kMaxTraceFileBytes + 1), 0);
  auto big = importTrace(path, plan);
  ASSERT_FALSE(big.hasValue());
  EXPECT_NE(big.status().message().find("larger than 256 MiB"), std::string::npos)
      << big.status().message();
  // A directory is one line naming it, not a stream library's error.
  auto dir = importTrace(::testing::TempDir(), plan);
  ASSERT_FALSE(dir.hasValue());
  EXPECT_NE(dir.status().message().find("a directory, not a file"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace seam::reports
