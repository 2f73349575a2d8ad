// Proves that the ledger (sim/src/replay/ledger.cc) catches each violation class of
// DESIGN §3/§4 on hand-made wrong plans (a correct plan with one op erased,
// duplicated or changed, or a planner decision flipped through the schema
// switch), that the fast fingerprint domain and the exact domain agree, and
// that every planner-decision mutant of policy.h is killed by checkPlan.
#include "seam/sim/replay/ledger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "case_builders.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"

namespace seam {
namespace {

using seam::testing::mustBuild;
using seam::testing::patternCase;

// ---- helpers ---------------------------------------------------------------

Flags fusionOff() {
  Flags f;
  f.fusion = false;
  return f;
}

Flags deepep() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  return f;
}

/// Index of the first op of `rank` at (stage, phase) of `kind`; -1 if none.
int findOp(const Plan& plan, int rank, int stage, Phase phase, OpKind kind) {
  const auto& ops = plan.ranks[rank];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[i].stack == 0 && ops[i].stage == stage && ops[i].phase == phase && ops[i].kind == kind)
      return i;
  }
  return -1;
}

struct Replays {
  LedgerResult exact;
  LedgerResult fast;
};

Replays replayBoth(const Plan& plan) {
  Ledger ledger;
  Replays r;
  r.exact = ledger.replay(plan, LedgerOptions{.exact = true});
  r.fast = ledger.replay(plan, LedgerOptions{});
  return r;
}

std::string describe(const Violation& v) {
  std::string s =
      std::string(propertyName(v.property)) + " " + std::string(violationClassName(v.cls));
  s.append(" rank ")
      .append(std::to_string(v.rank))
      .append(" stage ")
      .append(std::to_string(v.stage));
  s.append(" ").append(phaseName(v.phase)).append(" ").append(opName(v.op));
  s.append(" token ").append(std::to_string(v.token)).append(" term ").append(v.term);
  s.append(": ").append(v.detail);
  return s;
}

/// Both domains find a violation, the same first one (class and location).
void expectSameFirstViolation(const Replays& r) {
  ASSERT_FALSE(r.exact.holds()) << "the exact ledger finds nothing";
  ASSERT_FALSE(r.fast.holds()) << "the fast ledger finds nothing";
  const Violation& e = r.exact.violations.front();
  const Violation& f = r.fast.violations.front();
  EXPECT_EQ(f.cls, e.cls) << describe(f) << "\nvs\n" << describe(e);
  EXPECT_EQ(f.property, e.property);
  EXPECT_EQ(f.rank, e.rank);
  EXPECT_EQ(f.op_index, e.op_index);
  EXPECT_EQ(f.stack, e.stack);
  EXPECT_EQ(f.stage, e.stage);
  EXPECT_EQ(f.phase, e.phase);
  EXPECT_EQ(f.op, e.op);
  EXPECT_EQ(f.token, e.token);
  EXPECT_EQ(f.term, e.term);
  // The fast replay's violation is explained by the traced domain: the same
  // sentence as the exact domain's from the start.
  EXPECT_EQ(f.coefficient, e.coefficient);
  EXPECT_EQ(f.detail, e.detail);
  EXPECT_TRUE(r.exact.used_exact);
  EXPECT_TRUE(r.fast.used_exact);
}

/// The located first violation a test expects; unset fields are not checked.
struct Want {
  Property property;
  ViolationClass cls;
  int rank;
  int stage = -2;
  Phase phase = Phase::kEntry;
  OpKind op = OpKind::kNorm;
  bool check_op = false;
  int token = -2;
  std::string term;
  std::int64_t coefficient = -99;
};

void expectViolation(const Violation& v, const Want& w) {
  SCOPED_TRACE(describe(v));
  EXPECT_EQ(v.property, w.property);
  EXPECT_EQ(v.cls, w.cls);
  EXPECT_EQ(v.rank, w.rank);
  if (w.stage != -2) {
    EXPECT_EQ(v.stage, w.stage);
    EXPECT_EQ(v.phase, w.phase);
  }
  if (w.check_op) {
    EXPECT_EQ(v.op, w.op);
  }
  if (w.token != -2) {
    EXPECT_EQ(v.token, w.token);
  }
  if (!w.term.empty()) {
    EXPECT_EQ(v.term, w.term);
  }
  if (w.coefficient != -99) {
    EXPECT_EQ(v.coefficient, w.coefficient);
  }
}

// A correct plan replays clean in both domains: the baseline every edit below
// starts from.
void expectClean(const Plan& plan) {
  const Replays r = replayBoth(plan);
  EXPECT_TRUE(r.exact.holds()) << describe(r.exact.violations.front());
  EXPECT_TRUE(r.fast.holds()) << describe(r.fast.violations.front());
}

// ---- 4. one hand-made wrong plan per violation class -------------------------------

TEST(LedgerViolation, DroppingTheConsumersAllReduceLeavesTheMixerPartialNeverCompleted) {
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 2}, {4}, fusionOff()));
  expectClean(plan);
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kEntry, OpKind::kAllReduce);
    ASSERT_GE(i, 0);
    plan.ranks[r].erase(plan.ranks[r].begin() + i);
  }
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  // Rank 0 holds only its own shard j0 of the Mamba output: j1 is missing.
  expectViolation(r.exact.violations.front(), {.property = Property::kOwedOnce,
                                               .cls = ViolationClass::kNeverCompleted,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true,
                                               .token = 0,
                                               .term = "p(s0, t0, j1)",
                                               .coefficient = 0});
}

TEST(LedgerViolation, AFusedAllReduceTurnedIntoAPlainAddNormNeverCompletesTheSum) {
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 2}, {4}));
  expectClean(plan);
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kEntry, OpKind::kArAddNorm);
    ASSERT_GE(i, 0);
    plan.ranks[r][i].kind = OpKind::kAddNorm;
    plan.ranks[r][i].axis = kNoAxis;
  }
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(r.exact.violations.front(), {.property = Property::kOwedOnce,
                                               .cls = ViolationClass::kNeverCompleted,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true,
                                               .token = 0,
                                               .term = "p(s0, t0, j1)",
                                               .coefficient = 0});
}

TEST(LedgerViolation, AnAllReduceDuplicatedOnEveryMemberCountsTheSumTwice) {
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 2}, {4}, fusionOff()));
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kEntry, OpKind::kAllReduce);
    ASSERT_GE(i, 0);
    const Op dup = plan.ranks[r][i];
    plan.ranks[r].insert(plan.ranks[r].begin() + i, dup);
  }
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(r.exact.violations.front(), {.property = Property::kOwedOnce,
                                               .cls = ViolationClass::kCountedTwice,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true,
                                               .token = 0,
                                               .term = "p(s0, t0, j0)",
                                               .coefficient = 2});
}

// attn_dp=2 with equal shards: an attn_tp all-reduce regrouped over tp moves
// the same bytes, so the collectives still match, but it adds the other DP
// shard's rows (token 2 sits in row 0 of shard 1).
TEST(LedgerViolation, AnAttnTpAllReduceRegroupedOverTpMixesInTheOtherShardsTokens) {
  Plan plan = mustBuild(patternCase("M-", {.tp = 4, .attn_dp = 2}, {2, 2}));
  expectClean(plan);
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kEntry, OpKind::kAllReduce);
    ASSERT_GE(i, 0);
    ASSERT_EQ(plan.ranks[r][i].groupAxis(), Axis::kAttnTp);
    plan.ranks[r][i].axis = static_cast<std::int8_t>(Axis::kTp);
  }
  EXPECT_TRUE(properties::checkCollectiveSequences(plan).empty());
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(r.exact.violations.front(), {.property = Property::kOwedOnce,
                                               .cls = ViolationClass::kForeignTerm,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true,
                                               .token = 0,
                                               .term = "p(s0, t2, j0)"});
  EXPECT_NE(r.exact.violations.front().detail.find("of token 2"), std::string::npos)
      << r.exact.violations.front().detail;
}

// tp=2 attn_dp=2, tokens {1,3}, MAX_LEN: full rows [t0, pad, pad, t1, t2, t3].
// Rank 1 (shard 1) scatters as if the buffer were SUM_LEN ([t0, t1, t2, t3]):
// it reads rows 1..3, two padding rows first.
TEST(LedgerViolation, AScatterThatAssumesSumLenSlotsOnAMaxLenBufferLeaksPadding) {
  Plan plan = mustBuild(patternCase("M-M", {.tp = 2, .attn_dp = 2}, {1, 3}));
  ASSERT_EQ(plan.padding, DpPadding::kMaxLen);
  expectClean(plan);
  const int rank = 1;
  const int i = findOp(plan, rank, 2, Phase::kEntry, OpKind::kDpScatter);
  ASSERT_GE(i, 0);
  Op& scatter = plan.ranks[rank][i];
  ASSERT_EQ(scatter.rows_in.kind, RowKind::kFull);
  ASSERT_EQ(scatter.rows_in.count, 6);  // 2 shards * max 3 tokens
  const std::int64_t row_bytes = scatter.bytes / scatter.rows_in.count;
  scatter.rows_in.count = 4;  // SUM_LEN: 1 + 3
  scatter.bytes = row_bytes * 4;
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  const Violation& v = r.exact.violations.front();
  expectViolation(v, {.property = Property::kOwedOnce,
                      .cls = ViolationClass::kPaddingLeak,
                      .rank = 1,
                      .stage = 2,
                      .phase = Phase::kEntry,
                      .op = OpKind::kAddNorm,
                      .check_op = true,
                      .token = 1});
  EXPECT_EQ(v.term.rfind("junk#", 0), 0u) << v.term;
}

// DeepEP at tp=2 (moe_ep=2): the attention partial is reduce-scattered to
// local rows; a residual left on attention rows does not follow the hidden state.
TEST(LedgerViolation, AResidualNotSlicedToLocalRowsIsALayoutMismatch) {
  const Case c = patternCase("*E", {.tp = 2, .moe_ep = 2}, {4}, deepep());
  expectClean(mustBuild(c));
  const Plan plan = mustBuild(c, PolicyKind::kDeclared, Schema::with(Decision::kResidualNotSliced));
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(r.exact.violations.front(), {.property = Property::kResidualFollows,
                                               .cls = ViolationClass::kLayoutMismatch,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true});
}

TEST(LedgerViolation, OneRankAllReducingADifferentByteCountIsACollectiveMismatch) {
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 2}, {4}));
  const int rank = 1;
  const int i = findOp(plan, rank, 4, Phase::kExit, OpKind::kAllReduce);
  ASSERT_GE(i, 0);
  plan.ranks[rank][i].bytes += 2;
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  const Want want{.property = Property::kCollectivesMatch,
                  .cls = ViolationClass::kCollectiveMismatch,
                  .rank = 1,
                  .stage = 4,
                  .phase = Phase::kExit,
                  .op = OpKind::kAllReduce,
                  .check_op = true};
  expectViolation(r.exact.violations.front(), want);
  // The static sequence check sees it too, at the same op.
  const auto seq = properties::checkCollectiveSequences(plan);
  ASSERT_EQ(seq.size(), 1u);
  expectViolation(seq.front(), want);
  EXPECT_EQ(seq.front().op_index, i);
}

// tp=4 attn_dp=2: rank 0 enters the tp gather before the attn_tp all-reduce
// its partner waits in. Each communicator still sees the same sequence, so
// only the replay can tell.
TEST(LedgerViolation, OneRankIssuingTwoCollectivesOnDifferentGroupsInTheOtherOrderDeadlocks) {
  Plan plan = mustBuild(patternCase("M-", {.tp = 4, .attn_dp = 2}, {2, 2}));
  const int rank = 0;
  const int ar = findOp(plan, rank, 1, Phase::kEntry, OpKind::kAllReduce);
  const int gather = findOp(plan, rank, 1, Phase::kEntry, OpKind::kDpGatherReplicate);
  ASSERT_GE(ar, 0);
  ASSERT_GE(gather, 0);
  ASSERT_EQ(plan.ranks[rank][ar].groupAxis(), Axis::kAttnTp);
  ASSERT_EQ(plan.ranks[rank][gather].groupAxis(), Axis::kTp);
  std::swap(plan.ranks[rank][ar], plan.ranks[rank][gather]);
  // The gather's lowering starts with a reduce-scatter over attn_tp
  // (dp_gather.h), so property 4 sees the attn_tp calls in the other order.
  const auto mismatch = properties::checkCollectiveSequences(plan);
  ASSERT_FALSE(mismatch.empty());
  const std::string& detail = mismatch.front().detail;
  EXPECT_NE(detail.find("on attn_tp: rank 0 issues reduce_scatter of"), std::string::npos)
      << detail;
  EXPECT_NE(detail.find("(of dp_gather_replicate), rank 1 issues all_reduce"), std::string::npos)
      << detail;
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  const Violation& v = r.exact.violations.front();
  expectViolation(v, {.property = Property::kCollectivesMatch,
                      .cls = ViolationClass::kDeadlock,
                      .rank = 0,
                      .stage = 1,
                      .phase = Phase::kEntry,
                      .op = OpKind::kDpGatherReplicate,
                      .check_op = true});
  EXPECT_NE(v.detail.find("rank 1 waits in all_reduce on attn_tp"), std::string::npos) << v.detail;
}

TEST(LedgerViolation, ARankThatSkipsTheFinalNormProducesNoOutput) {
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 2}, {4}));
  const int rank = 1;
  ASSERT_EQ(plan.ranks[rank].back().kind, OpKind::kAddNorm);
  ASSERT_EQ(plan.ranks[rank].back().stage, 5);  // the final norm after 5 layers
  plan.ranks[rank].pop_back();
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(
      r.exact.violations.front(),
      {.property = Property::kOutputComplete, .cls = ViolationClass::kMissingOutput, .rank = 1});
}

// A mixer -> mixer exit that reduces *and* hands the sum on as carried: the
// exit side says nothing is owed, the entry side expects a carried TP sum.
TEST(LedgerViolation, AMixerThatKeepsTheFusedSumMakesItsBoundaryDisagree) {
  const Case c = patternCase("MM", {.tp = 2}, {4});
  EXPECT_TRUE(properties::checkBoundariesAgree(mustBuild(c)).empty());
  const Plan plan =
      mustBuild(c, PolicyKind::kDeclared, Schema::with(Decision::kMixerKeepsFusedSum));
  const auto disagreements = properties::checkBoundariesAgree(plan);
  ASSERT_EQ(disagreements.size(), 1u);
  expectViolation(disagreements.front(), {.property = Property::kBoundariesAgree,
                                          .cls = ViolationClass::kBoundaryDisagrees,
                                          .rank = -1,
                                          .stage = 1,
                                          .phase = Phase::kEntry});
  EXPECT_EQ(disagreements.front().stack, 0);
  // The replay of the same plan sees the double reduction the disagreement causes.
  const Replays r = replayBoth(plan);
  expectSameFirstViolation(r);
  expectViolation(r.exact.violations.front(), {.property = Property::kOwedOnce,
                                               .cls = ViolationClass::kCountedTwice,
                                               .rank = 0,
                                               .stage = 1,
                                               .phase = Phase::kEntry,
                                               .op = OpKind::kAddNorm,
                                               .check_op = true,
                                               .token = 0,
                                               .coefficient = 2});
  // checkPlan reports the type-level disagreement first.
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  ASSERT_FALSE(verdict.holds());
  ASSERT_TRUE(verdict.firstViolation().has_value());
  EXPECT_EQ(verdict.firstViolation()->cls, ViolationClass::kBoundaryDisagrees);
}

// ---- 6. fast and exact agree ---------------------------------------------------------

struct SweepCounts {
  int cases = 0;
  int plans = 0;
  int violated = 0;
  int engine_findings = 0;  ///< clean cases SGLang itself gets wrong
};

// Token lists per DP size: all shards equal, and one with an idle shard
// and uneven attn_tp splits.
std::vector<std::vector<int>> tokenLists(int dp) {
  if (dp == 1) return {{4}, {3}};
  std::vector<int> even(dp, 2);
  std::vector<int> idle(dp);
  for (int d = 0; d < dp; ++d) idle[d] = d == 1 ? 0 : d + 1;
  return {even, idle};
}

TEST(LedgerAgreement, FastAndExactAgreeOnEveryCaseAndEveryDecisionAndCleanCasesHold) {
  const auto start = std::chrono::steady_clock::now();
  const char* patterns[] = {"M", "-", "M-", "*E", "--", "-M", "EE", "M*-E", "ME*E-"};
  Ledger ledger;
  SweepCounts n;
  for (const char* pattern : patterns) {
    auto model = modelFromPattern(pattern);
    ASSERT_TRUE(model.hasValue());
    bool has_moe = false;
    for (LayerKind k : model->pattern.layers) has_moe = has_moe || k == LayerKind::kMoe;
    for (int tp : {1, 2, 4}) {
      for (int dp = 1; dp <= tp; dp *= 2) {
        for (A2aBackend a2a : {A2aBackend::kNone, A2aBackend::kDeepep}) {
          if (a2a == A2aBackend::kDeepep && !has_moe) continue;
          std::vector<int> eps = {a2a == A2aBackend::kDeepep ? tp : 1};
          if (a2a == A2aBackend::kNone && has_moe && dp > 1)
            eps.push_back(dp);  // reduce_scatterv applies
          for (int ep : eps) {
            for (bool fusion : {true, false}) {
              if (dp > 1 && !fusion) continue;  // the fusion gate is closed under DP anyway
              for (BoundaryReduction red : {BoundaryReduction::kAr, BoundaryReduction::kRs,
                                            BoundaryReduction::kRsv, BoundaryReduction::kRsRsv}) {
                if (dp == 1 && red != BoundaryReduction::kAr)
                  continue;  // only the DP return reads it
                for (const auto& tokens : tokenLists(dp)) {
                  Case c;
                  c.model = *model;
                  c.config = {.tp = tp, .attn_dp = dp, .moe_ep = ep};
                  c.batch.tokens = tokens;
                  c.flags.a2a = a2a;
                  c.flags.fusion = fusion;
                  c.flags.reduction = red;
                  if (!validateCase(c)) continue;
                  ++n.cases;
                  for (int d = -1; d < kDecisionCount; ++d) {
                    const Schema schema = d < 0 ? Schema{} : Schema::with(static_cast<Decision>(d));
                    auto plan = buildPlan(c, PolicyKind::kDeclared, schema);
                    if (!plan) {
                      ASSERT_EQ(plan.status().code(), StatusCode::kRefused)
                          << reproduceCommand(c, "declared") << ": " << plan.status().message();
                      break;  // the engine refuses the case, whatever the decision
                    }
                    ++n.plans;
                    const LedgerResult exact = ledger.replay(*plan, LedgerOptions{.exact = true});
                    const LedgerResult fast = ledger.replay(*plan, LedgerOptions{});
                    const std::string where =
                        reproduceCommand(c, "declared") + " decision " + std::to_string(d);
                    ASSERT_EQ(fast.holds(), exact.holds()) << where;
                    if (!exact.holds()) {
                      ++n.violated;
                      EXPECT_EQ(fast.violations.front().cls, exact.violations.front().cls) << where;
                    }
                    if (d < 0) {
                      // A clean case holds, unless it is an engine finding: the
                      // violating op is one SGLang issues (engine_findings_test.cc).
                      const auto verdict = properties::checkPlan(*plan, ledger);
                      const bool finding =
                          !verdict.holds() &&
                          !properties::engineFindingSite(*plan, *verdict.firstViolation()).empty();
                      n.engine_findings += finding ? 1 : 0;
                      if (finding) continue;
                      ASSERT_TRUE(exact.holds())
                          << where << ": " << describe(exact.violations.front());
                      ASSERT_TRUE(verdict.holds())
                          << where << ": " << describe(*verdict.firstViolation());
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fast/exact agreement: %d cases, %d plans, %d violated, %d engine findings, %.2f s\n",
              n.cases, n.plans, n.violated, n.engine_findings, seconds);
  EXPECT_GE(n.cases, 200);
  EXPECT_GT(n.violated, 0);
}

}  // namespace
}  // namespace seam
