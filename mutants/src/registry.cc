// The registry: every mutation operator, in a fixed order. Ids are stable;
// append new operators, never rename or reuse an id.
#include "plan_mutants.h"
#include "seam/mutants/mutant.h"

namespace seam::mutants {

std::string_view kindName(MutantKind kind) { return kind == MutantKind::kPlan ? "plan" : "decision"; }

namespace {

/// A planner decision flipped through the schema switch.
class DecisionMutant final : public Mutant {
 public:
  constexpr DecisionMutant(std::string_view id, std::string_view description, Decision decision)
      : id_(id), description_(description), decision_(decision) {}
  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }
  MutantKind kind() const override { return MutantKind::kDecision; }
  Schema schema() const override { return Schema::with(decision_); }

 private:
  std::string_view id_, description_;
  Decision decision_;
};

const DropCompletingCollective kDrop;
const DuplicateCompletingCollective kDuplicate;
const RegroupReduction kAttnTpToTp("plan.reduce-over-tp-not-attn-tp",
                                   "an all-reduce owed over attention TP runs over the whole TP group",
                                   Axis::kAttnTp, Axis::kTp);
const RegroupReduction kTpToAttnTp("plan.reduce-over-attn-tp-not-tp",
                                   "an all-reduce owed over TP runs over attention TP only", Axis::kTp, Axis::kAttnTp);
const RegroupReduction kTpToMoeEp("plan.reduce-over-moe-ep-not-tp",
                                  "an all-reduce owed over TP runs over the MoE expert-parallel group", Axis::kTp,
                                  Axis::kMoeEp);
const RegroupReduction kMoeToTp("plan.reduce-over-tp-not-moe-group",
                                "an all-reduce owed over the MoE output group runs over TP", Axis::kMoeTp, Axis::kTp);
const ReduceScatterWithoutGather kNoGather;
const SliceIndexOffByOne kSliceOff;
const ResidualNotSliced kResNotSliced;
const ResidualNotGathered kResNotGathered;
const PaddingModeMismatch kPadding;
const IdleRankSkipsCollective kIdleSkips;
const SwapCollectivesOnOneRank kSwap;

const DecisionMutant kMixerKeeps("decision.mixer-keeps-fused-sum",
                                 "a mixer->mixer exit reduces its sum and still hands it on as carried",
                                 Decision::kMixerKeepsFusedSum);
const DecisionMutant kResidualNotFollow("decision.residual-not-following-slice",
                                        "the planner does not move the residual to the FFN's local rows",
                                        Decision::kResidualNotSliced);
const DecisionMutant kFfnKeeps("decision.ffn-not-leaving-sum-to-mixer",
                               "an FFN exit completes its sum although the next mixer was told to complete it",
                               Decision::kFfnKeepsSumFromMixer);
const DecisionMutant kSnapshot("decision.snapshot-not-completing",
                               "an aux snapshot is taken before the carried sum is completed",
                               Decision::kSnapshotNotCompleted);
const DecisionMutant kStackStart("decision.stack-start-ffn-with-residual",
                                 "an FFN at the stack start reads a residual that does not exist yet",
                                 Decision::kStackStartFfnWithResidual);
const DecisionMutant kNeverEntered("decision.stack-never-entered",
                                   "layer 0 never sets residual := embedding", Decision::kStackNeverEntered);
const DecisionMutant kDownProj("decision.ffn-down-proj-over-attn-tp",
                               "a dense FFN's down projection reduces over attention TP only (use_dp_attention_reduce)",
                               Decision::kFfnReducesOverAttnTp);
const DecisionMutant kTerminal("decision.terminal-defers", "the terminal stage defers its sum past the final norm",
                               Decision::kTerminalDefers);
const DecisionMutant kMtp("decision.mtp-not-marked-last", "the MTP step's last layer is not marked last",
                          Decision::kMtpNotMarkedLast);
const DecisionMutant kDpResidual("decision.dp-gather-sum-residual-every-rank",
                                 "a DP gather-sum adds the residual on every attention-TP rank",
                                 Decision::kDpGatherSumResidualEveryRank);

const Mutant* const kRegistry[] = {
    &kDrop,      &kDuplicate,   &kAttnTpToTp,    &kTpToAttnTp,      &kTpToMoeEp,   &kMoeToTp,
    &kNoGather,  &kSliceOff,    &kResNotSliced,  &kResNotGathered,  &kPadding,     &kIdleSkips,
    &kSwap,      &kMixerKeeps,  &kResidualNotFollow, &kFfnKeeps,    &kSnapshot,    &kStackStart,
    &kNeverEntered, &kDownProj, &kTerminal,      &kMtp,             &kDpResidual,
};

}  // namespace

std::span<const Mutant* const> registry() { return kRegistry; }

const Mutant* findMutant(std::string_view id) {
  for (const Mutant* m : kRegistry) {
    if (m->id() == id) return m;
  }
  return nullptr;
}

}  // namespace seam::mutants
