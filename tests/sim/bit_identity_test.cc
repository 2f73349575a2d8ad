#include "seam/sim/replay/bit_identity.h"

#include <gtest/gtest.h>

#include <vector>

#include "case_builders.h"
#include "replay/arithmetic_domain.h"
#include "replay/numeric_domain.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using ledger_detail::ArithmeticDomain;
using ledger_detail::ReduceCall;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::presetCase;

/// Real-mode outputs of both plans on the CPU, in one execution order.
bool cpuIdentical(const Plan& a, const Plan& b, ExecutionOrder order) {
  const numeric::Shape shape;
  const NumericRun x = runPlanNumeric(a, numeric::Mode::kReal, shape, order);
  const NumericRun y = runPlanNumeric(b, numeric::Mode::kReal, shape, order);
  EXPECT_TRUE(x.ran() && y.ran());
  return compareOutputs(x.output, y.output).identical;
}

TEST(ArithmeticDomain, AddingAnExactZeroChangesNothingAndTwoOperandsCommute) {
  ArithmeticDomain d;
  const auto a = d.embed(0, 1), b = d.embed(0, 2), c = d.embed(0, 3);
  auto x = a;
  d.add(x, d.zero());
  EXPECT_EQ(x, a);
  auto z = d.zero();
  d.add(z, a);
  EXPECT_EQ(z, a);
  auto ab = a, ba = b;
  d.add(ab, b);
  d.add(ba, a);
  EXPECT_EQ(ab, ba);
  // Not associative: (a + b) + c is another rounding than a + (b + c).
  auto bc = b;
  d.add(bc, c);
  auto left = ab, right = a;
  d.add(left, c);
  d.add(right, bc);
  EXPECT_NE(left, right);
}

TEST(ArithmeticDomain, AReductionOfTwoNonzeroOperandsIsOneAdditionWhateverTheCall) {
  ArithmeticDomain d;
  const auto a = d.embed(0, 1), b = d.embed(0, 2);
  const std::vector<std::vector<std::uint64_t>> members = {{a}, {d.zero()}, {b}, {d.zero()}};
  auto rows = [&](size_t p) -> const std::vector<std::uint64_t>& { return members[p]; };
  std::vector<std::uint64_t> all_reduce = members[0], reduce_scatter = members[0];
  d.reduceCall(all_reduce, 4, rows, ReduceCall{1, 7, 1});
  d.reduceCall(reduce_scatter, 4, rows, ReduceCall{2, 9, 4});
  auto ab = a;
  d.add(ab, b);
  EXPECT_EQ(all_reduce[0], ab);
  EXPECT_EQ(reduce_scatter[0], ab);
}

TEST(ArithmeticDomain, AReductionOfThreeOperandsDependsOnTheCallAndTheRow) {
  ArithmeticDomain d;
  const std::vector<std::vector<std::uint64_t>> members = {{d.embed(0, 1), d.embed(0, 4)},
                                                           {d.embed(0, 2), d.embed(0, 5)},
                                                           {d.embed(0, 3), d.embed(0, 6)}};
  auto rows = [&](size_t p) -> const std::vector<std::uint64_t>& { return members[p]; };
  auto reduce = [&](ReduceCall call) {
    std::vector<std::uint64_t> sum = members[0];
    d.reduceCall(sum, 3, rows, call);
    return sum;
  };
  EXPECT_EQ(reduce({1, 7, 2}), reduce({1, 7, 2}));  // the same call: the same order
  EXPECT_NE(reduce({1, 7, 2}), reduce({2, 7, 2}));  // another collective
  EXPECT_NE(reduce({1, 7, 2}), reduce({1, 7, 4}));  // another size
}

/// Eight rows of one element, reduced over four members in the call-dependent
/// order: member 0 holds 256, the others 1. In bf16, 256 + 1 rounds back to
/// 256, so a chunk started at member 0 ends at 256, one started at members
/// 1 or 2 sums the ones first and ends at 260.
std::vector<float> ringSums(OpKind kind, int communicator) {
  ledger_detail::NumericDomain d;
  d.configure(numeric::Mode::kReal, numeric::Shape{.hidden = 1, .inner = 1}, Case{});
  d.setOrder(ExecutionOrder::kCallDependent);
  std::vector<std::vector<std::vector<float>>> members(4);
  for (int p = 0; p < 4; ++p) members[p].assign(8, {p == 0 ? 256.0f : 1.0f});
  auto rows = [&](size_t p) -> const std::vector<std::vector<float>>& { return members[p]; };
  std::vector<std::vector<float>> sum = members[0];
  d.reduceCall(sum, 4, rows, ReduceCall{static_cast<int>(kind) * 16, communicator, 8});
  std::vector<float> out;
  for (const auto& row : sum) out.push_back(row[0]);
  return out;
}

TEST(CallDependentOrder, FollowsNcclsRingAndNotThePredictorsCallAndRowRule) {
  // A ring reduce-scatter: block c (rows 2c, 2c + 1) starts at member c + 1
  // and ends at member c. A ring all-reduce over two channels: element e is
  // chunk e mod 4 of its channel's half. Neither looks at the communicator.
  const std::vector<float> rs = {260, 260, 260, 260, 256, 256, 256, 256};
  const std::vector<float> ar = {260, 260, 256, 256, 260, 260, 256, 256};
  EXPECT_EQ(ringSums(OpKind::kReduceScatter, 1), rs);
  EXPECT_EQ(ringSums(OpKind::kAllReduce, 1), ar);
  EXPECT_EQ(ringSums(OpKind::kAllReduce, 5), ar);
}

TEST(BitIdentity, TheSameAllReduceMovedAcrossABoundaryIsPredictedIdentical) {
  // Legacy completes the mixer's sum at layer 1's exit, declared at layer
  // 2's entry: two different op lists whose reductions are the same calls on
  // the same partials, so every output element sees the same roundings.
  Flags f;
  f.fusion = false;
  const Case c = presetCase("nemotron-h-8b", {.tp = 2}, {4}, f);
  const Plan legacy = mustBuild(c, PolicyKind::kLegacy);
  const Plan declared = mustBuild(c);
  ASSERT_NE(legacy.ranks[0], declared.ranks[0]) << "the two plans are not two";
  const BitIdentityPrediction x = predictBitIdentity(legacy, declared);
  EXPECT_TRUE(x.identical) << x.reason;
  EXPECT_TRUE(cpuIdentical(legacy, declared, ExecutionOrder::kMemberOrder));
}

Case qwenNextDp(int tp) {
  Flags f;
  f.mode = ForwardMode::kDecode;
  return presetCase("qwen3-next-80b-a3b", {.tp = tp, .attn_dp = 2}, {2, 2}, f);
}

TEST(BitIdentity, ReduceScatterAndAllReduceOfTwoMembersAddTheSameTwoPartials) {
  // Legacy's DP return is a reduce-scatter of the MoE's partials, declared's
  // an all-reduce and a slice (seam diff: different reductions, equal ledger
  // values). Over two ranks each element is one addition of the same two
  // partials: the same bits, on any executor.
  const Case c = qwenNextDp(2);
  const Plan legacy = mustBuild(c, PolicyKind::kLegacy);
  const Plan declared = mustBuild(c);
  const BitIdentityPrediction p = predictBitIdentity(legacy, declared);
  EXPECT_TRUE(p.identical) << p.reason;
  EXPECT_TRUE(cpuIdentical(legacy, declared, ExecutionOrder::kMemberOrder));
  EXPECT_TRUE(cpuIdentical(legacy, declared, ExecutionOrder::kCallDependent));
}

TEST(BitIdentity, OverFourMembersTheTwoReductionsMayAddInAnotherOrderAndAreNotPredictedIdentical) {
  // tp = 4: four partials per element. The CPU executor adds both in member
  // order (identical there); an executor whose order follows the call, as
  // NCCL's does, gives other bits.
  const Case c = qwenNextDp(4);
  const Plan legacy = mustBuild(c, PolicyKind::kLegacy);
  const Plan declared = mustBuild(c);
  const BitIdentityPrediction p = predictBitIdentity(legacy, declared);
  EXPECT_FALSE(p.identical);
  EXPECT_NE(p.reason.find("token 0 of the main stack"), std::string::npos) << p.reason;
  EXPECT_TRUE(cpuIdentical(legacy, declared, ExecutionOrder::kMemberOrder));
  EXPECT_FALSE(cpuIdentical(legacy, declared, ExecutionOrder::kCallDependent));
}

TEST(BitIdentity, GemmsOverAnotherRowCountAreNotPredictedIdentical) {
  // MAX_LEN pads every DP shard to the longest (3 + 3 rows), SUM_LEN does
  // not (3 + 1): the MoE's GEMMs run at M = 6 and M = 4. cuBLAS picks its
  // kernel, and the order of its K sums, by the problem size.
  Flags max_len, sum_len;
  max_len.dp_padding = DpPadding::kMaxLen;
  sum_len.dp_padding = DpPadding::kSumLen;
  const Plan a =
      mustBuild(presetCase("qwen3-next-80b-a3b", {.tp = 2, .attn_dp = 2}, {3, 1}, max_len));
  const Plan b =
      mustBuild(presetCase("qwen3-next-80b-a3b", {.tp = 2, .attn_dp = 2}, {3, 1}, sum_len));
  EXPECT_FALSE(predictBitIdentity(a, b).identical);
  EXPECT_TRUE(cpuIdentical(a, b, ExecutionOrder::kMemberOrder));
  EXPECT_FALSE(cpuIdentical(a, b, ExecutionOrder::kCallDependent));
}

TEST(BitIdentity, CpReplicasReducingOverTheirOwnAttentionTpGroupsComputeTheSameRows) {
  // GQA decode under attn_cp = 2 at tp = 8: both CP replicas hold the token
  // and all-reduce it over their own four attention-TP ranks. Groups of one
  // axis run NCCL's same algorithm, so the replicas agree; naive (exit
  // all-reduces) and declared (entry all-reduces) are the same calls moved.
  Flags f;
  f.fusion = false;
  const Case c = presetCase("qwen3-next-80b-a3b", {.tp = 8, .attn_cp = 2}, {1}, f);
  const Plan declared = mustBuild(c);
  EXPECT_FALSE(arithmeticOf(declared).ranks_disagree);
  const BitIdentityPrediction p = predictBitIdentity(mustBuild(c, PolicyKind::kNaive), declared);
  EXPECT_TRUE(p.identical) << p.reason;
}

TEST(BitIdentity, APlanWithAWrongSumIsNotPredictedIdentical) {
  const Case c = patternCase("M-M*-", {.tp = 2}, {3});
  const Plan good = mustBuild(c);
  const Plan bad = mustBuild(c, PolicyKind::kDeclared, Schema::with(Decision::kMixerKeepsFusedSum));
  const BitIdentityPrediction p = predictBitIdentity(good, bad);
  EXPECT_FALSE(p.identical);
  EXPECT_NE(p.reason.find("token"), std::string::npos) << p.reason;
}

TEST(BitIdentity, APlanThatDoesNotRunIsNamed) {
  const Case c = patternCase("M-M*-", {.tp = 2}, {3});
  const Plan good = mustBuild(c);
  Plan hung = good;
  // Rank 1 skips its first collective: the ranks' calls no longer match.
  auto& ops = hung.ranks[1];
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::kArAddNorm || ops[i].kind == OpKind::kAllReduce) {
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  const BitIdentityPrediction p = predictBitIdentity(good, hung);
  EXPECT_FALSE(p.identical);
  EXPECT_EQ(p.reason.rfind("plan B does not run: ", 0), 0u) << p.reason;
}

}  // namespace
}  // namespace seam
