// Megatron's allgather token dispatcher (moe_token_dispatcher_type's
// default, token_dispatcher.py MoEAllGatherTokenDispatcher): the option and
// its default, what it gathers over tp_ep and when, plans the training
// ledger passes under EP, expert TP, CP and the fp32 router, and hand-made
// wrong plans it catches: every rank permuting every expert's rows (experts
// computed off their owner), and the combine's reduce-scatter run as an
// all-reduce (no conjugate of its backward gather).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "case_builders.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/training/training_ledger.h"

namespace seam {
namespace {

/// A Megatron case through the case options, with the default dispatcher
/// unless one is named.
Expected<TrainingCase> megatronCase(int dp, int cp, int tp, int ep, int etp,
                                    const std::string& dispatcher = "",
                                    std::string_view model = "nemotron-3-nano") {
  CaseSpec s = testing::megatronSpec(dp, cp, tp, ep, etp, cp > 1 ? "8,16" : "8,8", model);
  s.dispatcher = dispatcher;
  return buildTrainingCase(s);
}

TrainingPlan planOf(int dp, int cp, int tp, int ep, int etp,
                    std::string_view model = "nemotron-3-nano") {
  return testing::trainingPlanOf(megatronCase(dp, cp, tp, ep, etp, "", model));
}

std::string firstViolation(const LedgerResult& r) {
  return r.holds() ? "holds" : describeViolation(r.violations.front());
}

long tpEpOps(const TrainingPlan& plan, int rank) {
  return std::count_if(plan.ranks[rank].begin(), plan.ranks[rank].end(),
                       [](const TrainingOp& op) { return op.axis == TrainAxis::kTpEp; });
}

long moeLayers(const TrainingPlan& plan) {
  const std::string_view p = plan.source.model->pattern;
  return std::count(p.begin(), p.end(), 'E');
}

TEST(TrainingCases, MegatronsDispatcherDefaultsToAllgatherAndAlltoallIsAnOption) {
  auto dflt = megatronCase(2, 1, 1, 2, 0);
  ASSERT_TRUE(dflt.hasValue()) << dflt.status().message();
  EXPECT_TRUE(dflt->config.allGatherDispatch());
  auto a2a = megatronCase(2, 1, 1, 2, 0, "alltoall");
  ASSERT_TRUE(a2a.hasValue()) << a2a.status().message();
  EXPECT_FALSE(a2a->config.allGatherDispatch());
  EXPECT_NE(reproduceTrainingCommand(*a2a).find("--dispatcher alltoall"), std::string::npos);
  auto flex = megatronCase(2, 1, 1, 2, 0, "flex");
  ASSERT_FALSE(flex.hasValue());
  EXPECT_EQ(flex.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(flex.status().message().find("\"flex\""), std::string::npos);
  TrainingConfig prime;
  EXPECT_EQ(applyDispatcher(prime, "alltoall").code(), StatusCode::kInvalidInput);
  EXPECT_FALSE(prime.allGatherDispatch());
}

TEST(TrainingPlans, AllgatherDispatcherIssuesSevenTpEpCallsPerMoeLayerOnlyWhenEtpOrEpExceedsOne) {
  // Forward: the routing map, the probs and the tokens gathered, the output
  // reduce-scattered; backward: the output gradient gathered, the tokens'
  // and the probs' gradients reduce-scattered (the map has no gradient).
  const TrainingPlan ep = planOf(2, 1, 1, 2, 0);
  EXPECT_EQ(tpEpOps(ep, 0), 7 * moeLayers(ep));
  const TrainingPlan etp = planOf(1, 1, 2, 1, 0);
  EXPECT_EQ(tpEpOps(etp, 1), 7 * moeLayers(etp));
  EXPECT_EQ(tpEpOps(planOf(1, 1, 2, 1, 1), 0), 0);
  EXPECT_EQ(tpEpOps(planOf(2, 1, 1, 1, 0), 0), 0);
  // No all-to-all and no expert-TP call anywhere.
  for (const auto& ops : ep.ranks) {
    for (const TrainingOp& op : ops) {
      EXPECT_NE(op.kind, OpKind::kAllToAll) << op.step;
      EXPECT_NE(op.axis, TrainAxis::kExpertTp) << op.step;
    }
  }
}

TEST(TrainingPlans, AllgatherDispatcherPlansHoldUnderEpExpertTpCpAndAnFp32Router) {
  struct Grid {
    int dp, cp, tp, ep, etp;
  };
  for (std::string_view model : {"nemotron-3-nano", "nemotron-3-super"}) {
    for (Grid g : {Grid{2, 1, 1, 2, 0}, Grid{1, 1, 2, 1, 0}, Grid{2, 1, 2, 2, 0},
                   Grid{2, 1, 2, 2, 1}, Grid{1, 2, 1, 2, 0}, Grid{1, 2, 2, 2, 1}}) {
      for (bool fp32 : {false, true}) {
        auto c = megatronCase(g.dp, g.cp, g.tp, g.ep, g.etp, "", model);
        ASSERT_TRUE(c.hasValue()) << c.status().message();
        c->config.probs_fp32 = fp32;
        auto p = buildTrainingPlan(*c);
        ASSERT_TRUE(p.hasValue()) << p.status().message();
        const LedgerResult r = checkTrainingPlan(*p);
        EXPECT_TRUE(r.holds()) << describeConfig(c->config) << ": " << firstViolation(r);
      }
    }
  }
}

TEST(TrainingLedger, EveryRankPermutingEveryExpertsRowsRunsExpertsOffTheirOwner) {
  // dispatch_postprocess keeps the local experts' columns of the gathered
  // routing map; a permute that keeps them all computes other ranks' experts.
  TrainingPlan plan = planOf(2, 1, 1, 2, 0);
  for (auto& ops : plan.ranks) {
    for (TrainingOp& op : ops) {
      if (op.step == "permute by local expert" && op.pass == Pass::kForward) op.unit_list.clear();
    }
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

TEST(TrainingLedger, AnAllgatherCombineThatAllReducesIsNoConjugateOfItsBackwardGather) {
  // token_combine reduce-scatters (each rank keeps its own rows) and its
  // backward all-gathers; an all-reduce in its place (every rank the whole
  // tp_ep block's rows) leaves a backward gather that undoes no forward op.
  TrainingPlan plan = planOf(2, 1, 1, 2, 0);
  for (auto& ops : plan.ranks) {
    for (TrainingOp& op : ops) {
      if (op.step == "tp_ep reduce-scatter expert outputs") op.kind = OpKind::kAllReduce;
    }
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kCollectiveMismatch) << firstViolation(r);
}

}  // namespace
}  // namespace seam
