// Megatron's expert tensor parallelism (etp, defaulting to tp) under the
// all-to-all dispatcher (the allgather one: training_allgather_dispatcher_test.cc): the engine's
// rules for the expert grid, plans that hold under etp = tp, etp = 1 and etp
// apart from tp, and hand-made wrong plans the training ledger catches: two
// shards computing the same slice, expert gradients also summed over their
// expert-TP group, an uneven gather declaring other split sizes; and
// Megatron's router options: moe_router_dtype, whose probs dtype the
// expert-TP reduce-scatter runs in, and the expert-bias counts' all-reduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "case_builders.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/training/training_ledger.h"

namespace seam {
namespace {

/// A Megatron case through the case options (--etp 0: the default, tp),
/// with the all-to-all dispatcher.
Expected<TrainingCase> megatronCase(int dp, int tp, int ep, int etp,
                                    std::string_view model = "nemotron-3-nano") {
  CaseSpec s = testing::megatronSpec(dp, 1, tp, ep, etp, "8,8", model);
  s.dispatcher = "alltoall";
  return buildTrainingCase(s);
}

TrainingCase megatron(int dp, int tp, int ep, int etp, std::string_view model = "nemotron-3-nano") {
  auto c = megatronCase(dp, tp, ep, etp, model);
  EXPECT_TRUE(c.hasValue()) << (c ? "" : c.status().message());
  return c ? *c : TrainingCase{};
}

TrainingPlan planOf(const TrainingCase& c) {
  auto p = buildTrainingPlan(c);
  EXPECT_TRUE(p.hasValue()) << (p ? "" : p.status().message());
  return p ? std::move(*p) : TrainingPlan{};
}

std::string firstViolation(const LedgerResult& r) {
  return r.holds() ? "holds" : describeViolation(r.violations.front());
}

bool isStep(const TrainingOp& op, std::string_view step) { return op.step == step; }

TEST(TrainingRules, MegatronExpertTpDefaultsToTpAndItsGridMustDivideTheWorld) {
  // parallel_state.py: world % (etp * ep * pp) == 0; etp is tp unless set.
  const auto tp_ep = megatronCase(1, 2, 2, 0);
  ASSERT_FALSE(tp_ep.hasValue());
  EXPECT_EQ(tp_ep.status().code(), StatusCode::kRefused);
  EXPECT_NE(tp_ep.status().message().find("etp*ep=4"), std::string::npos)
      << tp_ep.status().message();
  EXPECT_TRUE(megatronCase(1, 2, 2, 1).hasValue());
  EXPECT_EQ(megatron(2, 2, 1, 0).config.expertTp(), 2);
  EXPECT_EQ(megatron(2, 2, 1, 4).config.expertTp(), 4);
  TrainingCase prime = megatron(2, 1, 1, 2);
  prime.config.layout = TrainingLayout::kPrimeRl;
  EXPECT_EQ(validateTrainingCase(prime).code(), StatusCode::kInvalidInput);
}

TEST(TrainingPlans, ExpertTpPlansHoldWithEtpEqualToTpOneOrApartFromTp) {
  for (const TrainingCase& c :
       {megatron(2, 2, 2, 0), megatron(2, 2, 2, 1), megatron(2, 2, 1, 4), megatron(2, 1, 1, 2),
        megatron(1, 2, 2, 1, "nemotron-3-super"), megatron(2, 2, 2, 0, "nemotron-3-super")}) {
    const LedgerResult r = checkTrainingPlan(planOf(c));
    EXPECT_TRUE(r.holds()) << describeConfig(c.config) << ": " << firstViolation(r);
  }
}

TEST(TrainingPlans, ExpertTpGathersAndScattersOnlyWhenEtpExceedsOne) {
  auto etpOps = [](const TrainingPlan& plan) {
    return std::count_if(plan.ranks[0].begin(), plan.ranks[0].end(),
                         [](const TrainingOp& op) { return op.axis == TrainAxis::kExpertTp; });
  };
  // Per MoE layer: tokens and probs gathered, outputs reduce-scattered, and
  // the three conjugates in backward.
  const TrainingPlan with = planOf(megatron(1, 2, 1, 0));
  const auto moe =
      std::count(with.source.model->pattern.begin(), with.source.model->pattern.end(), 'E');
  EXPECT_EQ(etpOps(with), 6 * moe);
  EXPECT_EQ(etpOps(planOf(megatron(2, 2, 2, 1))), 0);
}

TEST(TrainingCases, MegatronsRouterDtypeDefaultsToTheInputsBf16AndFp32IsAnOption) {
  TrainingConfig c;
  c.layout = TrainingLayout::kMegatron;
  ASSERT_TRUE(applyEngineOptions(c, "on", "", "float32").isOk());
  EXPECT_EQ(c.probsBytes(), 2);
  ASSERT_TRUE(applyEngineOptions(c, "on", "float32", "float32").isOk());
  EXPECT_EQ(c.probsBytes(), 4);
  TrainingConfig prime;
  ASSERT_TRUE(applyEngineOptions(prime, "on", "", "float32").isOk());
  EXPECT_TRUE(prime.router_fp32);
  EXPECT_FALSE(prime.probs_fp32);
}

TEST(TrainingPlans, AnFp32RouterPlanHoldsUnderExpertTpAndEp) {
  for (auto [tp, ep] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{1, 2}}) {
    TrainingCase c = megatron(2, tp, ep, 0);
    c.config.probs_fp32 = true;
    const LedgerResult r = checkTrainingPlan(planOf(c));
    EXPECT_TRUE(r.holds()) << describeConfig(c.config) << ": " << firstViolation(r);
  }
}

TEST(TrainingPlans, TheExpertBiasCountsAreOneAllReduceOverEveryRankAfterTheGradients) {
  TrainingCase c = megatron(2, 2, 1, 0);
  c.config.expert_bias = true;
  const TrainingPlan plan = planOf(c);
  const auto moe = std::count(c.model->pattern.begin(), c.model->pattern.end(), 'E');
  for (const auto& ops : plan.ranks) {
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops.back().axis, TrainAxis::kTpDpCp);
    EXPECT_EQ(ops.back().ranks.size(), 4u);
    EXPECT_EQ(ops.back().bytes, moe * 128 * 4);
  }
  EXPECT_TRUE(checkTrainingPlan(plan).holds());
  TrainingCase prime = megatron(2, 1, 1, 0);
  prime.config.layout = TrainingLayout::kPrimeRl;
  prime.config.expert_bias = true;
  EXPECT_EQ(validateTrainingCase(prime).code(), StatusCode::kInvalidInput);
}

TEST(TrainingLedger, ExpertTpShardsComputingTheSameSliceLeaveAForeignMoeSum) {
  TrainingPlan plan = planOf(megatron(1, 2, 1, 0));
  for (TrainingOp& op : plan.ranks[1]) {
    if (op.kernel == Kernel::kExperts && op.pass == Pass::kForward) {
      op.shard = 0;  // rank 1 computes rank 0's column and row slices
      break;
    }
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

TEST(TrainingLedger, ExpertGradientsAlsoSummedOverTheirExpertTpGroupAreCountedTwice) {
  // The reduction seam planned before it modelled expert TP: expert
  // gradients all-reduced over every rank of their EP position, which under
  // etp = tp adds the other slice holder's tokens a second time.
  TrainingPlan plan = planOf(megatron(2, 2, 2, 0));
  std::vector<std::int16_t> experts;
  for (size_t p = 0; p < plan.tensors.size(); ++p) {
    if (plan.tensors[p].ep_sharded) experts.push_back(static_cast<std::int16_t>(p));
  }
  ASSERT_FALSE(experts.empty());
  for (auto& ops : plan.ranks) {
    const auto at = std::find_if(ops.begin(), ops.end(), [](const TrainingOp& op) {
      return isStep(op, "tp all-reduce sequence-parallel grads (coalesced)");
    });
    ASSERT_NE(at, ops.end());
    TrainingOp extra = *at;
    extra.step = "expert grads over the expert-TP pair";
    extra.params = experts;
    ops.insert(at, extra);
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kCountedTwice) << firstViolation(r);
}

TEST(TrainingLedger, AnUnevenGatherDeclaringOtherSplitSizesIsACollectiveMismatch) {
  TrainingPlan plan = planOf(megatron(1, 2, 1, 0));
  for (auto& ops : plan.ranks) {
    for (TrainingOp& op : ops) {
      if (isStep(op, "etp all-gather tokens")) {
        ASSERT_EQ(op.out_splits.size(), 2u);
        ++op.out_splits[0];
        --op.out_splits[1];
        break;
      }
    }
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kCollectiveMismatch) << firstViolation(r);
}

}  // namespace
}  // namespace seam
