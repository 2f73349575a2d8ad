// The training family (sim/include/seam/sim/training/): the engines' rules,
// the shape of PrimeRL's and Megatron's plans (the all-to-alls of Ulysses
// Mamba and attention, KV replication, SP pairs, zigzag undo/redo, EP), the
// backward as conjugates, and hand-made wrong plans each caught by the
// training ledger with the right class.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "seam/sim/training/training_ledger.h"

namespace seam {
namespace {

const ModelPreset* preset(std::string_view name) {
  auto p = findPreset(name);
  EXPECT_TRUE(p.hasValue()) << name;
  return *p;
}

TrainingCase primeRl(int dp, int cp, int ep, std::vector<int> docs, int dp_replicate = 1,
                     std::string_view model = "nemotron-3-super") {
  TrainingCase c;
  c.model = preset(model);
  c.config.layout = TrainingLayout::kPrimeRl;
  c.config.dp_replicate = dp_replicate;
  c.config.dp = dp;
  c.config.cp = cp;
  c.config.ep = ep;
  c.docs = std::move(docs);
  return c;
}

TrainingCase megatron(int dp, int cp, int tp, int ep, std::vector<int> docs,
                      std::string_view model = "nemotron-3-super") {
  TrainingCase c;
  c.model = preset(model);
  c.config.layout = TrainingLayout::kMegatron;
  c.config.dp = dp;
  c.config.cp = cp;
  c.config.tp = tp;
  c.config.ep = ep;
  c.config.sp = tp > 1;
  c.docs = std::move(docs);
  return c;
}

TrainingPlan planOf(const TrainingCase& c, TrainingDecision d = TrainingDecision::kNone) {
  auto p = buildTrainingPlan(c, d);
  EXPECT_TRUE(p.hasValue()) << (p ? "" : p.status().message());
  return p ? std::move(*p) : TrainingPlan{};
}

std::string firstViolation(const LedgerResult& r) {
  return r.holds() ? "holds" : describeViolation(r.violations.front());
}

/// Ops of a pass (recomputed forward ops counted apart: `recompute`).
int count(const TrainingPlan& plan, int rank, int layer, Pass pass, OpKind kind,
          bool recompute = false) {
  return static_cast<int>(
      std::count_if(plan.ranks[rank].begin(), plan.ranks[rank].end(), [&](const TrainingOp& op) {
        return op.layer == layer && op.pass == pass && op.kind == kind && op.recompute == recompute;
      }));
}

/// The plan's decoder layers (lm_head and the loss carry this layer).
size_t dimsLayers(const TrainingPlan& plan) {
  return static_cast<size_t>(plan.source.model->layers);
}

/// Edits every rank's first op matching `pred` (the same slot everywhere).
void editFirst(TrainingPlan& plan, const std::function<bool(const TrainingOp&)>& pred,
               const std::function<void(std::vector<TrainingOp>&, int)>& edit) {
  for (auto& ops : plan.ranks) {
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (pred(ops[i])) {
        edit(ops, i);
        break;
      }
    }
  }
}

// ---- the engines' rules -----------------------------------------------------

TEST(TrainingRules, PrimeRlHasNoTensorParallelism) {
  TrainingCase c = primeRl(1, 1, 1, {8});
  c.config.tp = 2;
  const Status st = validateTrainingCase(c);
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("no tensor parallelism"), std::string::npos) << st.message();
}

TEST(TrainingRules, PrimeRlRefusesACpThatDoesNotDivideTheMambaGroups) {
  const Status st = validateTrainingCase(primeRl(1, 16, 16, std::vector<int>{64}));
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("n_groups=8"), std::string::npos) << st.message();
}

TEST(TrainingRules, PrimeRlNeedsEpAMultipleOfCpDividingDpShardTimesCp) {
  EXPECT_NE(validateTrainingCase(primeRl(4, 2, 1 * 4, {8})).code(), StatusCode::kRefused);
  EXPECT_EQ(validateTrainingCase(primeRl(1, 4, 2, {8})).code(), StatusCode::kRefused);
  EXPECT_EQ(validateTrainingCase(primeRl(1, 2, 4, {8})).code(), StatusCode::kRefused);
}

TEST(TrainingRules, PrimeRlNeedsTheRowLengthDivisibleByCp) {
  const Status st = validateTrainingCase(primeRl(1, 4, 1, {5, 2}));
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("uneven shards deadlock"), std::string::npos) << st.message();
}

TEST(TrainingRules, MegatronNeedsTpToDivideTheKvHeads) {
  const Status st = validateTrainingCase(megatron(1, 1, 4, 1, {8}));
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("num_query_groups=2"), std::string::npos) << st.message();
}

TEST(TrainingRules, MegatronNeedsEveryDocumentDivisibleByTwiceCp) {
  const Status st = validateTrainingCase(megatron(1, 2, 1, 1, {8, 6}));
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("2cp=4"), std::string::npos) << st.message();
}

TEST(TrainingRules, NanoUnderCpUsesTheEightMambaGroupsItsProviderInherits) {
  // Megatron-Bridge's Nemotron3NanoProvider keeps NemotronHModelProvider's
  // mamba_num_groups = 8: cp = 2 plans, cp = 16 does not divide the groups.
  EXPECT_TRUE(validateTrainingCase(primeRl(1, 2, 1, {8}, 1, "nemotron-3-nano")).isOk());
  const Status st = validateTrainingCase(primeRl(1, 16, 16, {32}, 1, "nemotron-3-nano"));
  EXPECT_EQ(st.code(), StatusCode::kRefused);
  EXPECT_NE(st.message().find("does not divide n_groups=8"), std::string::npos) << st.message();
}

TEST(TrainingRules, MegatronTpWithoutSequenceParallelismIsNotModelled) {
  TrainingCase c = megatron(1, 1, 2, 1, {8});
  c.config.sp = false;
  EXPECT_TRUE(isNotModelled(validateTrainingCase(c).message()));
}

TEST(TrainingRules, OnlyTheNemotron3PresetsHaveTrainingLayouts) {
  const auto p = trainingPresets();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0]->name, "nemotron-3-nano");
  EXPECT_EQ(p[1]->name, "nemotron-3-super");
}

// ---- the plans --------------------------------------------------------------

TEST(TrainingPlans, APrimeRlMambaLayerUnderUlyssesIssuesSixAllToAllsEachWayAndSixRecomputed) {
  TrainingCase c = primeRl(1, 4, 4, {5, 2, 9});
  const TrainingPlan plan = planOf(c);
  EXPECT_EQ(count(plan, 0, 0, Pass::kForward, OpKind::kAllToAll), 6);
  EXPECT_EQ(count(plan, 0, 0, Pass::kForward, OpKind::kAllToAll, true), 6);
  EXPECT_EQ(count(plan, 0, 0, Pass::kBackward, OpKind::kAllToAll), 6);
  c.config.recompute = false;
  const TrainingPlan off = planOf(c);
  EXPECT_EQ(count(off, 0, 0, Pass::kForward, OpKind::kAllToAll, true), 0);
  EXPECT_EQ(count(off, 0, 0, Pass::kBackward, OpKind::kAllToAll), 6);
}

TEST(TrainingPlans, APrimeRlMoeLayerHasItsFp32RouterAsAThirdUnitUnderEp) {
  TrainingCase c = primeRl(4, 1, 2, {5, 2, 9});
  const TrainingPlan plan = planOf(c);
  // Block, router (fp32) and experts (over dp_mod_ep): three all-gathers forward.
  EXPECT_EQ(count(plan, 0, 1, Pass::kForward, OpKind::kAllGather), 3);
  c.config.router_fp32 = false;
  EXPECT_EQ(count(planOf(c), 0, 1, Pass::kForward, OpKind::kAllGather), 2);
}

TEST(TrainingPlans, DeepEpSendsOneRowPerTokenAndDestinationNotPerExpert) {
  TrainingCase c = primeRl(2, 1, 2, {8}, 1, "nemotron-3-nano");
  auto dispatchBytes = [](const TrainingPlan& p) {
    for (const TrainingOp& op : p.ranks[0])
      if (op.a2a == A2aMode::kToExpert) return op.bytes;
    return std::int64_t{-1};
  };
  const std::int64_t torch = dispatchBytes(planOf(c));
  c.config.deepep = true;
  const std::int64_t deepep = dispatchBytes(planOf(c));
  // 8 tokens x top-6 rows of 2688 bf16 with torch; at most 2 ranks per token with DeepEP.
  EXPECT_EQ(torch, 8 * 6 * 2688 * 2);
  EXPECT_GT(deepep, 0);
  EXPECT_LE(deepep, 8 * 2 * 2688 * 2);
}

TEST(TrainingCases, AnEngineOptionWithABadValueOrUnderMegatronIsRefusedByName) {
  TrainingConfig c;
  EXPECT_NE(applyEngineOptions(c, "sometimes", "float32", "float32").message().find("--ac"),
            std::string::npos);
  EXPECT_NE(applyEngineOptions(c, "on", "fp16", "float32").message().find("fp16"),
            std::string::npos);
  EXPECT_NE(applyEngineOptions(c, "on", "float32", "float32", "nccl").message().find("nccl"),
            std::string::npos);
  EXPECT_TRUE(applyEngineOptions(c, "off", "bfloat16", "bfloat16", "deepep").isOk());
  EXPECT_FALSE(c.recompute || c.router_fp32 || c.reduce_fp32 || !c.deepep);
  c = TrainingConfig{};
  c.layout = TrainingLayout::kMegatron;
  EXPECT_FALSE(applyEngineOptions(c, "off", "float32", "float32").isOk());
}

TEST(TrainingPlans, PrimeRlLmHeadIsNotGatheredAgainInBackward) {
  const TrainingPlan plan = planOf(primeRl(1, 2, 1, {5, 2, 9}));
  const int head = static_cast<int>(dimsLayers(plan));
  EXPECT_EQ(count(plan, 0, head, Pass::kForward, OpKind::kAllGather), 1);
  EXPECT_EQ(count(plan, 0, head, Pass::kBackward, OpKind::kAllGather), 0);
  EXPECT_EQ(count(plan, 0, head, Pass::kBackward, OpKind::kReduceScatter), 1);
}

TEST(TrainingPlans, KvHeadsAreReplicatedWhenFewerThanCpAndTheirGradientsSummedBack) {
  const TrainingPlan plan = planOf(primeRl(1, 4, 1, {5, 2, 9}));
  const auto& ops = plan.ranks[0];
  const bool repeat = std::any_of(ops.begin(), ops.end(), [](const TrainingOp& op) {
    return op.pass == Pass::kForward && op.transform == Transform::kRepeat && op.reps == 2;
  });
  const bool sum = std::any_of(ops.begin(), ops.end(), [](const TrainingOp& op) {
    return op.pass == Pass::kBackward && op.transform == Transform::kSumRepeats;
  });
  EXPECT_TRUE(repeat);
  EXPECT_TRUE(sum);
}

TEST(TrainingPlans, EveryBackwardCollectiveNamesItsForwardConjugate) {
  const TrainingPlan plan = planOf(megatron(1, 2, 2, 2, {16, 8}));
  EXPECT_TRUE(checkTrainingCollectives(plan).empty());
  for (const TrainingOp& op : plan.ranks[1]) {
    // The attention's p2p ring in backward is a ring of its own, not the
    // conjugate of one forward op (training_cp_ring_test.cc).
    const bool ring = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
    if (op.pass == Pass::kBackward && op.hasGroup() && !op.reads.empty() && !ring) {
      EXPECT_GE(op.conj_of, 0) << op.step;
    }
  }
}

TEST(TrainingPlans, PrimeRlFsdpUlyssesEpPlanOfSuperHoldsForwardAndBackward) {
  EXPECT_EQ(firstViolation(checkTrainingPlan(planOf(primeRl(1, 8, 8, {9, 2, 21})))), "holds");
}

TEST(TrainingPlans, PrimeRlHsdpPlanHolds) {
  EXPECT_EQ(firstViolation(checkTrainingPlan(planOf(primeRl(2, 2, 4, {5, 2, 9}, 2)))), "holds");
}

TEST(TrainingPlans, MegatronTpSpZigzagCpEpPlanOfSuperHolds) {
  EXPECT_EQ(firstViolation(checkTrainingPlan(planOf(megatron(1, 2, 2, 2, {16, 8, 24})))), "holds");
}

TEST(TrainingPlans, MegatronWithMambaGroupsRepeatedOverCpHolds) {
  // n_groups / tp = 4 < cp = 8: B and C are repeated before the all-to-all.
  EXPECT_EQ(firstViolation(checkTrainingPlan(planOf(megatron(1, 8, 1, 1, {16, 32})))), "holds");
}

TEST(TrainingPlans, NanoUnderPrimeRlFsdpAndEpHolds) {
  EXPECT_EQ(
      firstViolation(checkTrainingPlan(planOf(primeRl(4, 1, 4, {3, 2, 3}, 1, "nemotron-3-nano")))),
      "holds");
}

// ---- hand-made wrong plans, each caught with its class ------------------------

TEST(TrainingLedger, AGradientReductionDroppedLeavesTheGradientIncomplete) {
  TrainingPlan plan = planOf(primeRl(1, 2, 1, {8}));
  editFirst(
      plan,
      [](const TrainingOp& op) {
        return op.pass == Pass::kBackward && op.hasGroup() && op.reads.empty() &&
               !op.params.empty() && op.kind != OpKind::kAllGather;
      },
      [](auto& ops, int i) { ops.erase(ops.begin() + i); });
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kNeverCompleted) << firstViolation(r);
}

TEST(TrainingLedger, AGradientReducedTwiceIsCountedTwice) {
  TrainingPlan plan = planOf(primeRl(1, 2, 1, {8}));
  editFirst(
      plan,
      [](const TrainingOp& op) {
        return op.pass == Pass::kBackward && op.hasGroup() && op.reads.empty() &&
               !op.params.empty() && op.kind != OpKind::kAllGather;
      },
      [](auto& ops, int i) { ops.insert(ops.begin() + i, ops[i]); });
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kCountedTwice) << firstViolation(r);
  EXPECT_EQ(r.violations[0].coefficient, 2);
}

TEST(TrainingLedger, DocumentBoundariesOfTheLocalShardLeakState) {
  const LedgerResult r =
      checkTrainingPlan(planOf(primeRl(1, 4, 1, {5, 2, 9}), TrainingDecision::kLocalDocBoundaries));
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kResetLeak) << firstViolation(r);
}

TEST(TrainingLedger, NoDocumentBoundariesLeakStateAcrossDocuments) {
  const LedgerResult r =
      checkTrainingPlan(planOf(primeRl(1, 2, 1, {3, 5}), TrainingDecision::kNoDocBoundaries));
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kResetLeak) << firstViolation(r);
}

TEST(TrainingLedger, ZigzagNotRedoneAfterMambaIsALayoutMismatch) {
  const LedgerResult r =
      checkTrainingPlan(planOf(megatron(1, 2, 1, 1, {8, 4}), TrainingDecision::kZigzagNotRestored));
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kLayoutMismatch) << firstViolation(r);
}

TEST(TrainingLedger, ConvOnTheZigzagOrderIsALayoutMismatch) {
  const LedgerResult r =
      checkTrainingPlan(planOf(megatron(1, 2, 1, 1, {8, 4}), TrainingDecision::kZigzagNotUndone));
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kLayoutMismatch) << firstViolation(r);
}

TEST(TrainingLedger, KvReplicaGradientsNotSummedLeaveTheKvGradientIncomplete) {
  TrainingPlan plan = planOf(primeRl(1, 4, 1, {8}));
  editFirst(
      plan, [](const TrainingOp& op) { return op.transform == Transform::kSumRepeats; },
      [](auto& ops, int i) { ops[i].perm = {0}; });
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kNeverCompleted) << firstViolation(r);
}

TEST(TrainingLedger, EqualSizedBackwardAllToAllsSwappedOnOneRankMixTheirTensors) {
  // Same kind, group and size: NCCL matches them silently and the data of
  // one tensor lands in the other's buffer on every peer.
  TrainingPlan plan = planOf(primeRl(1, 2, 1, {8}));
  auto& ops = plan.ranks[1];
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].pass == Pass::kBackward && ops[i].kind == OpKind::kAllToAll &&
        ops[i + 1].kind == OpKind::kAllToAll) {
      std::swap(ops[i], ops[i + 1]);
      break;
    }
  }
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

TEST(TrainingLedger, GradientReductionsOnTwoGroupsSwappedOnOneRankCountAGradientTwice) {
  // HSDP: the FSDP reduce-scatter and the replica all-reduce in the other
  // order on the last rank (PrimeRL #3195's shape: two groups, one rank).
  // No cycle, so no deadlock: the replica all-reduce meets a peer that has
  // already summed its shard group, and a peer's gradient is counted twice.
  TrainingPlan plan = planOf(primeRl(1, 2, 1, {8}, 2));
  auto& ops = plan.ranks.back();
  bool swapped = false;
  for (size_t i = 0; i + 1 < ops.size() && !swapped; ++i) {
    if (ops[i].pass == Pass::kBackward && ops[i].hasGroup() && ops[i + 1].hasGroup() &&
        ops[i].ranks != ops[i + 1].ranks) {
      std::swap(ops[i], ops[i + 1]);
      swapped = true;
    }
  }
  ASSERT_TRUE(swapped);
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kCountedTwice) << firstViolation(r);
}

TEST(TrainingLedger, ABackwardAllToAllOnAnotherGroupIsNotTheConjugate) {
  TrainingPlan plan = planOf(primeRl(2, 2, 1, {8}));
  for (auto& ops : plan.ranks) {
    for (TrainingOp& op : ops) {
      if (op.pass == Pass::kBackward && op.kind == OpKind::kAllToAll) {
        op.axis = TrainAxis::kFsdp;
        break;
      }
    }
  }
  const auto v = checkTrainingCollectives(plan);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].cls, ViolationClass::kCollectiveMismatch);
}

TEST(TrainingLedger, ASeqToHeadAllToAllThatKeepsTheWrongChunkGivesForeignHeads) {
  // Rank 0 takes the head chunk of x meant for rank 1 (a different tensor's
  // chunk order): x and dt then hold other heads than the rank's own.
  TrainingPlan plan = planOf(primeRl(1, 2, 1, {8}));
  editFirst(
      plan, [](const TrainingOp& op) { return op.step == "slice head params"; },
      [](auto& ops, int i) { ops[i].unit_list = {ops[i].unit_list[0] ^ 1}; });
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

TEST(TrainingLedger, AnExpertTokenOnARankThatDoesNotOwnTheExpertIsForeign) {
  // The dispatch replaced by a plain all-gather: every rank sees every
  // (token, expert) cell, including experts it does not own.
  TrainingPlan plan = planOf(primeRl(2, 1, 2, {8}));
  for (auto& ops : plan.ranks) {
    for (TrainingOp& op : ops) {
      if (op.a2a == A2aMode::kToExpert) {
        op.kind = OpKind::kAllGather;
        op.a2a = A2aMode::kNone;
        op.in_splits.clear();
        op.out_splits.clear();
        op.bytes = 0;
        break;
      }
    }
  }
  const LedgerResult r = replayTraining(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

TEST(TrainingLedger, RoutingWeightsAppliedTwiceLeaveAForeignMoeSum) {
  TrainingPlan plan = planOf(primeRl(2, 1, 2, {8}));
  editFirst(
      plan,
      [](const TrainingOp& op) {
        return op.pass == Pass::kForward && op.transform == Transform::kRouteWeight;
      },
      [](auto& ops, int i) {
        TrainingOp again = ops[i];
        again.reads = again.writes;
        ops.insert(ops.begin() + i + 1, again);
        for (TrainingOp& op : ops) {
          if (op.conj_of > i) ++op.conj_of;
        }
      });
  const LedgerResult r = checkTrainingPlan(plan);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations[0].cls, ViolationClass::kForeignTerm) << firstViolation(r);
}

}  // namespace
}  // namespace seam
