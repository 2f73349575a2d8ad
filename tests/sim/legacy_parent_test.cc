// The legacy policy plans the parent a refactor is compared against: the
// scatter-mode Nemotron-H code that forks keep. Expected plans from that code,
// not from seam: haosenwang1018/sglang python/sglang/srt/models/nemotron_h.py
// @cdaef07e (NemotronHModel.forward, _capture_hidden_states,
// NemotronHMLPLikeDecoderLayer.forward) and layers/communicator.py @1a66b018
// (CommunicateSummableTensorPairFn._scatter_hidden_states,
// LayerCommunicator.should_fuse_mlp_allreduce_with_next_layer).
#include <gtest/gtest.h>

#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"

namespace seam {
namespace {

using seam::testing::expectHolds;
using seam::testing::firstViolation;
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::patternCase;

using Kinds = std::vector<OpKind>;

Flags capturing(std::vector<int> stages) {
  Flags f;
  f.capture = std::move(stages);
  return f;
}

TEST(LegacyParent, ACaptureAfterAFusedDeferralAllReducesOverTpInPlaceAndTheEntryOnlyAddsAndNorms) {
  // 'M-M-' at tp 2: the MLP (stage 1) fuses its all-reduce into the Mamba
  // layer (stage 2); the capture before stage 2 all-reduces the flagged
  // output over tp and clears the flag, then copies it and adds the residual.
  const Plan plan =
      mustBuild(patternCase("M-M-", {.tp = 2}, {4}, capturing({2})), PolicyKind::kLegacy);
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_EQ(kindsAt(plan, r, 2, Phase::kEntry),
              (Kinds{OpKind::kAllReduce, OpKind::kSnapshot, OpKind::kAdd, OpKind::kAddNorm}))
        << "rank " << r;
  }
  expectHolds(plan);
}

TEST(LegacyParent, ACaptureAfterAMixerAllReducesACopyOnlyWhenAnFfnFollowsIt) {
  // 'MM-' at tp 2: stage 1 follows a mixer but is a mixer: the Mamba layer 0
  // reduces (or fuses) its own output, so no copy is reduced; stage 2 is an
  // MLP after a mixer: the copy of the mixer's partial is all-reduced over
  // attention TP beside the MLP's own (fused) completion.
  const Plan plan =
      mustBuild(patternCase("MM-", {.tp = 2}, {4}, capturing({1, 2})), PolicyKind::kLegacy);
  int copies = 0;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind != OpKind::kAllReduce || op.tensor != Tensor::kSnapshot) continue;
    ++copies;
    EXPECT_EQ(op.stage, 2);
    EXPECT_EQ(op.axis, static_cast<std::int8_t>(Axis::kAttnTp));
  }
  EXPECT_EQ(copies, 1);
  expectHolds(plan);
}

TEST(LegacyParent, AnA2aMoeAfterAnFfnFoldsItsInputAndReduceScattersAZeroUpdate) {
  // 'E*E' at tp 2 with DeepEP: the MoE at the stack start (input_is_reduced)
  // folds the embedding into the residual; prepare_mlp (SCATTERED) then
  // reduce-scatters the zero update over attention TP and splits the residual.
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  const Plan plan =
      mustBuild(patternCase("E*E", {.tp = 2, .moe_ep = 2}, {4}, f), PolicyKind::kLegacy);
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kEntry),
            (Kinds{OpKind::kAdd, OpKind::kZeroFill, OpKind::kReduceScatter, OpKind::kSlice,
                   OpKind::kAddNorm}));
  expectHolds(plan);
}

TEST(LegacyParent, UnderDpAttentionTheReturnIgnoresTheReductionStrategy) {
  // _scatter_hidden_states: reduce_scatterv needs moe_ep == attn_dp (not
  // here); every Nemotron-H FFN allows reduce-scatter, so at MAX_LEN the FFN
  // skips its all-reduce and dp_reduce_scatter returns the rows, under ar too.
  Flags f;
  f.reduction = BoundaryReduction::kAr;
  f.dp_padding = DpPadding::kMaxLen;
  const Plan plan =
      mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 3}, f), PolicyKind::kLegacy);
  for (int r = 0; r < plan.world(); ++r)
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit), (Kinds{OpKind::kDpReduceScatter}));
  expectHolds(plan);
}

TEST(LegacyParent, AFusedDeferralAcrossAPipelineCutIsNeverCompleted) {
  // should_fuse_mlp_allreduce_with_next_layer has no pipeline clause: the
  // Mamba layer before the cut fuses into the next layer, its flag does not
  // travel in PPProxyTensors, and the receiver only adds and norms. As read,
  // a finding about the parent.
  const Plan plan =
      mustBuild(patternCase("M*|M-", {.pp = 2, .tp = 2}, {4}, {}), PolicyKind::kLegacy);
  const int receiver = 2;  // pipeline stage 1, tp rank 0
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kExit), (Kinds{OpKind::kSend, OpKind::kSend}));
  EXPECT_EQ(kindsAt(plan, receiver, 2, Phase::kEntry),
            (Kinds{OpKind::kRecv, OpKind::kRecv, OpKind::kAddNorm}));
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.stage, 2);
}

}  // namespace
}  // namespace seam
