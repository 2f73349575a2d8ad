// The registry: every mutation operator, in a fixed order. Ids are stable;
// append new operators, never reuse an id. A decision mutant's id is
// "decision." and its decision's name (properties::decisionName): four were
// renamed to match, and their old ids stay accepted (kRenamed).
#include <utility>

#include "plan_mutants.h"
#include "seam/mutants/mutant.h"
#include "site_mutants.h"
#include "training_mutants.h"

namespace seam::mutants {

std::string_view kindName(MutantKind kind) {
  return kind == MutantKind::kPlan ? "plan" : "decision";
}

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
  bool apply(Plan&) const override { return true; }

 private:
  std::string_view id_, description_;
  Decision decision_;
};

const DropCompletingCollective kDrop;
const DuplicateCompletingCollective kDuplicate;
const RegroupReduction kAttnTpToTp(
    "plan.reduce-over-tp-not-attn-tp",
    "an all-reduce owed over attention TP runs over the whole TP group", Axis::kAttnTp, Axis::kTp);
const RegroupReduction kTpToAttnTp("plan.reduce-over-attn-tp-not-tp",
                                   "an all-reduce owed over TP runs over attention TP only",
                                   Axis::kTp, Axis::kAttnTp);
const RegroupReduction kTpToMoeEp(
    "plan.reduce-over-moe-ep-not-tp",
    "an all-reduce owed over TP runs over the MoE expert-parallel group", Axis::kTp, Axis::kMoeEp);
const RegroupReduction kMoeToTp("plan.reduce-over-tp-not-moe-group",
                                "an all-reduce owed over the MoE output group runs over TP",
                                Axis::kMoeTp, Axis::kTp);
const ReduceScatterWithoutGather kNoGather;
const SliceIndexOffByOne kSliceOff;
const ResidualNotSliced kResNotSliced;
const ResidualNotGathered kResNotGathered;
const PaddingModeMismatch kPadding;
const IdleRankSkipsCollective kIdleSkips;
const SwapCollectivesOnOneRank kSwap;

const DecisionMutant kMixerKeeps(
    "decision.mixer-keeps-fused-sum",
    "a mixer->mixer exit reduces its sum and still hands it on as carried",
    Decision::kMixerKeepsFusedSum);
const DecisionMutant kResidualNotFollow(
    "decision.residual-not-sliced",
    "the planner does not move the residual to the FFN's local rows", Decision::kResidualNotSliced);
const DecisionMutant kFfnKeeps(
    "decision.ffn-keeps-sum-from-mixer",
    "an FFN exit completes its sum although the next mixer was told to complete it",
    Decision::kFfnKeepsSumFromMixer);
const DecisionMutant kSnapshot("decision.snapshot-not-completed",
                               "an aux snapshot is taken before the carried sum is completed",
                               Decision::kSnapshotNotCompleted);
const DecisionMutant kStackStart(
    "decision.stack-start-ffn-with-residual",
    "an FFN at the stack start reads a residual that does not exist yet",
    Decision::kStackStartFfnWithResidual);
const DecisionMutant kNeverEntered("decision.stack-never-entered",
                                   "layer 0 never sets residual := embedding",
                                   Decision::kStackNeverEntered);
const DecisionMutant kDownProj(
    "decision.ffn-reduces-over-attn-tp",
    "a dense FFN's down projection reduces over attention TP only (use_dp_attention_reduce)",
    Decision::kFfnReducesOverAttnTp);
const DecisionMutant kTerminal("decision.terminal-defers",
                               "the terminal stage defers its sum past the final norm",
                               Decision::kTerminalDefers);
const DecisionMutant kMtp("decision.mtp-not-marked-last",
                          "the MTP step's last layer is not marked last",
                          Decision::kMtpNotMarkedLast);
const DecisionMutant kDpResidual("decision.dp-gather-sum-residual-every-rank",
                                 "a DP gather-sum adds the residual on every attention-TP rank",
                                 Decision::kDpGatherSumResidualEveryRank);

// Faults in the DP ops' implementation (dp_attention.py, research note A4-A5).
const PlantDpFault kDpZeroFill(
    "plan.dp-gather-skips-zero-fill",
    "a replicate DP gather (MAX_LEN, attn_tp > 1) does not zero the rows of attention-TP "
    "ranks != 0 before the attn_tp reduce-scatter",
    DpFault::kSkipZeroFill);
const PlantDpFault kDpWriters(
    "plan.dp-gather-writer-rule-swapped",
    "the all-reduce DP gather (SUM_LEN, or attn_cp > 1) swaps its writer rule: a partial "
    "gather is written by attention-TP rank 0 only, a replicate one by every rank",
    DpFault::kWriterRuleSwapped);
const PlantDpFault kDpUnaligned(
    "plan.dp-slots-unaligned",
    "DP slot offsets from the raw token counts, not the counts aligned to attn_tp",
    DpFault::kUnalignedSlots);

// Two-batch overlap (tbo.h; research note B3-B4).
const TboHalvesSwappedOnOneRank kTboSwap;
const TboSplitSkipsResidual kTboSplit;
const TboMergeDropsHalf kTboMerge;

// Decision sites of the planner's geometry and gates (case_facts.cc).
const DecisionMutant kFusionBound(
    "decision.fusion-token-bound-moved",
    "the FlashInfer fusion gate admits 2049 tokens (its bound is 2048)",
    Decision::kFusionTokenBoundMoved);
const DecisionMutant kFusionDp(
    "decision.fusion-ignores-dp-attention",
    "the fusion gate fuses under DP attention (it requires attn_dp == 1)",
    Decision::kFusionIgnoresDpAttention);
const DecisionMutant kMixerTp("decision.mixer-weights-over-tp",
                              "a mixer's row-parallel output projection owes its sum over tp, not "
                              "attention TP",
                              Decision::kMixerWeightsOverTp);
const DecisionMutant kPostExperts("decision.post-experts-not-merged",
                                  "the post-expert reduction stays on the EP group where the EP "
                                  "and MoE-TP reductions merge into tp",
                                  Decision::kPostExpertsNotMerged);

// The systematic operators: every op they apply to is a site (site_mutants.h).
const DropCollectiveAt kSiteDrop("plan.site-drop-collective",
                                 "a collective over more than one rank is not run");
const DuplicateCollectiveAt kSiteDup("plan.site-duplicate-collective",
                                     "a collective over more than one rank runs twice");
const SwapWithNextAt kSiteSwap("plan.site-swap-with-next",
                               "an op and the next op on the same buffer run in the other order");
const RegroupAt kSiteRegroup("plan.site-regroup",
                             "an all-reduce, gather, reduce-scatter or all-to-all runs over "
                             "another axis whose group has another size");
const RowsOffByOneAt kSiteRows("plan.site-rows-off-by-one",
                               "an op reads or writes one row more than its layout has (padding "
                               "geometry off by one)");
const BytesDoubledAt kSiteBytes("plan.site-bytes-doubled",
                                "a collective moves twice its bytes, on every member alike");
const SliceOtherAt kSiteSlice("plan.site-slice-other-position",
                              "a slice takes the next attention-TP (or CP) position's rows");
const ResidualAddedTwiceAt kSiteResTwice("plan.site-residual-added-twice",
                                         "a residual fold (add, add-norm) runs twice");
const ResidualNotAddedAt kSiteResNone(
    "plan.site-residual-not-added",
    "a residual fold adds nothing: an add is dropped, an add-norm only normalises");
const SnapshotDroppedAt kSiteSnapDrop("plan.site-snapshot-dropped", "a snapshot is not taken");
const SnapshotMovedAt kSiteSnapMove("plan.site-snapshot-moved",
                                    "a snapshot is taken one op earlier or later");

// Operators that need a field the engine passes (Op::chunk_shift, Op::divide_by).
const GatherRankOrderAt kSiteRankOrder(
    "plan.site-gather-rank-order",
    "a gather concatenates its members' chunks in another rank order");
const ReduceScatterOtherChunkAt kSiteOtherChunk(
    "plan.site-reduce-scatter-other-chunk",
    "a reduce-scatter leaves each member another member's chunk of the sum");
const AllToAllOtherChunkAt kSiteA2aChunk(
    "plan.site-all-to-all-other-chunk",
    "an all-to-all delivers each member's chunk to the member beside its destination");
const ReduceAveragedAt kSiteAveraged("plan.site-reduce-averaged",
                                     "a reduction averages (ncclAvg) where a sum is owed");
const ReduceScaledTwiceAt kSiteScaledTwice(
    "plan.site-reduce-scaled-twice", "a reduction averages and its result is scaled by 1/n again");
const RowsShrunkToChunkAt kSiteShrunk(
    "plan.site-rows-shrunk-to-chunk",
    "a collective's rows and bytes are its per-rank chunk's (1/n), on every member alike");

const Mutant* const kRegistry[] = {
    &kDrop,           &kDuplicate,    &kAttnTpToTp,   &kTpToAttnTp,      &kTpToMoeEp,
    &kMoeToTp,        &kNoGather,     &kSliceOff,     &kResNotSliced,    &kResNotGathered,
    &kPadding,        &kIdleSkips,    &kSwap,         &kMixerKeeps,      &kResidualNotFollow,
    &kFfnKeeps,       &kSnapshot,     &kStackStart,   &kNeverEntered,    &kDownProj,
    &kTerminal,       &kMtp,          &kDpResidual,   &kDpZeroFill,      &kDpWriters,
    &kDpUnaligned,    &kTboSwap,      &kTboSplit,     &kTboMerge,        &kFusionBound,
    &kFusionDp,       &kMixerTp,      &kPostExperts,  &kSiteDrop,        &kSiteDup,
    &kSiteSwap,       &kSiteRegroup,  &kSiteRows,     &kSiteBytes,       &kSiteSlice,
    &kSiteResTwice,   &kSiteResNone,  &kSiteSnapDrop, &kSiteSnapMove,    &kSiteRankOrder,
    &kSiteOtherChunk, &kSiteA2aChunk, &kSiteAveraged, &kSiteScaledTwice, &kSiteShrunk,
};

// The training family (reference training-layouts.md §4-§5).
const TrainingMutant kTrGradNotReduced(
    "training.grad-not-reduced",
    "a replicated weight's gradient is not reduced over a group whose ranks saw other "
    "tokens (first gradient reduction of the backward dropped)",
    &dropGradReduction);
const TrainingMutant kTrGradTwice(
    "training.grad-reduced-twice",
    "a replicated weight's gradient is reduced twice (AReno #496: gradient x group)",
    &duplicateGradReduction);
const TrainingMutant kTrLocalDocs(
    "training.local-doc-boundaries",
    "conv/SSD/attention get the local shard's document boundaries, not the global ones",
    TrainingDecision::kLocalDocBoundaries);
const TrainingMutant kTrNoDocs(
    "training.no-doc-boundaries",
    "conv/SSD run over the packed row without resets (seq_idx=None; PrimeRL #3001, SkyRL #2056)",
    TrainingDecision::kNoDocBoundaries);
const TrainingMutant kTrZigzagRedo("training.zigzag-not-restored",
                                   "the load-balance (zigzag) order is not redone after Mamba",
                                   TrainingDecision::kZigzagNotRestored);
const TrainingMutant kTrZigzagUndo(
    "training.zigzag-not-undone",
    "conv/SSD run on the zigzag order (load balancing not undone before Mamba)",
    TrainingDecision::kZigzagNotUndone);
const TrainingMutant kTrKvGrads(
    "training.kv-replica-grads-not-summed",
    "KV heads replicated for Ulysses but only one replica's gradient kept (copies not summed)",
    &kvReplicaGradsNotSummed);
const TrainingMutant kTrSwap(
    "training.backward-collectives-swapped-on-one-rank",
    "one rank issues two adjacent backward collectives in the other order (PrimeRL #3195)",
    &swapBackwardCollectivesOnOneRank);
const TrainingMutant kTrSpNorm(
    "training.sp-norm-grad-not-tp-summed",
    "an SP-replicated weight's gradient (norm, router, latent) is not all-reduced over tp "
    "(Megatron #1446, TE #435)",
    &dropSpNormGradSum);
const TrainingMutant kTrSplits(
    "training.ep-combine-splits-not-swapped",
    "the EP combine reuses the dispatch's split sizes instead of swapping them",
    &combineSplitsNotSwapped);
const TrainingMutant kTrSlice(
    "training.mamba-param-slice-other-heads",
    "A_log/D/dt_bias/conv are sliced to another rank's heads (ownership after seq->head)",
    &headSliceOffByOne);
const TrainingMutant kTrDgrad(
    "training.sp-dgrad-also-all-reduced",
    "the dgrad into a TP block is all-reduced (f) and also reduce-scattered (SP)",
    &dgradAlsoAllReduced);

const TrainingMutant kTrGatherSlices(
    "training.gather-backward-slices",
    "the backward of an SP all-gather slices the rank's rows instead of reduce-scattering "
    "the partial gradient (Automodel #1260)",
    &gatherBackwardSlices);
const TrainingMutant kTrKvTiled(
    "training.kv-repeat-tiled",
    "KV heads replicated by tiling, not repeat_interleave: q heads meet another group's KV "
    "head (GQA ratio broken, vllm-omni #5716)",
    &kvRepeatTiled);
const TrainingMutant kTrEarly(
    "training.grad-reduced-before-last-contribution",
    "a gradient is reduced before the backward kernel that adds the last contribution "
    "(a hook registered too early, gpt-neox #1259)",
    &gradReducedBeforeLastContribution);

const TrainingMutant kTrWeights(
    "training.routing-weights-applied-twice",
    "the routing weights (x routed_scaling_factor) are applied twice to the expert outputs",
    &routingWeightsTwice);

const TrainingMutant kTrRecompute(
    "training.recompute-collective-dropped-on-one-rank",
    "one rank's activation recompute skips a forward collective the others re-run",
    &recomputeCollectiveDroppedOnOneRank);

const TrainingMutant kTrPrefetch(
    "training.fsdp-prefetch-missing-on-one-rank",
    "one rank does not issue an FSDP unit's backward all-gather where its shard group does",
    &fsdpPrefetchMissingOnOneRank);

const TrainingMutant kTrRingDkv(
    "training.cp-ring-last-dkv-step-dropped",
    "the attention CP ring's backward runs cp - 1 exchanges, not cp: the last dKV never reaches "
    "its owner",
    &ringLastDkvStepDropped);

const TrainingMutant kTrRingDirection(
    "training.cp-ring-backward-toward-next-rank",
    "the attention CP ring's backward sends to the next CP rank and receives from the previous, "
    "as the forward does (TE's backward turns the ring around)",
    &ringBackwardTowardNextRank);

const Mutant* const kTrainingRegistry[] = {
    &kTrGradNotReduced, &kTrGradTwice, &kTrLocalDocs,    &kTrNoDocs,  &kTrZigzagRedo,
    &kTrZigzagUndo,     &kTrKvGrads,   &kTrSwap,         &kTrSpNorm,  &kTrSplits,
    &kTrSlice,          &kTrDgrad,     &kTrGatherSlices, &kTrKvTiled, &kTrEarly,
    &kTrWeights,        &kTrRecompute, &kTrPrefetch,     &kTrRingDkv, &kTrRingDirection,
};

/// Ids of earlier versions, which scripts and stored campaigns may still name.
constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
    {"decision.residual-not-following-slice", "decision.residual-not-sliced"},
    {"decision.ffn-not-leaving-sum-to-mixer", "decision.ffn-keeps-sum-from-mixer"},
    {"decision.snapshot-not-completing", "decision.snapshot-not-completed"},
    {"decision.ffn-down-proj-over-attn-tp", "decision.ffn-reduces-over-attn-tp"},
};

}  // namespace

std::span<const Mutant* const> registry() { return kRegistry; }
std::span<const Mutant* const> trainingRegistry() { return kTrainingRegistry; }

const Mutant* findMutant(std::string_view id) {
  for (const auto& [old_id, new_id] : kRenamed) {
    if (id == old_id) id = new_id;
  }
  for (const Mutant* m : kRegistry) {
    if (m->id() == id) return m;
  }
  for (const Mutant* m : kTrainingRegistry) {
    if (m->id() == id) return m;
  }
  return nullptr;
}

Expected<std::vector<const Mutant*>> findMutants(const std::vector<std::string>& ids,
                                                 MutantFamily family) {
  std::vector<const Mutant*> out;
  const bool training = family == MutantFamily::kTraining;
  for (const std::string& id : ids) {
    const Mutant* m = findMutant(id);
    if (m == nullptr || m->family() != family) {
      const std::string kind = training ? "training mutant id (see seam mutate --family training"
                                        : "mutant id (see seam mutate";
      return Status::invalid("--mutant \"" + id.substr(0, 64) + "\" is not a " + kind + " --list)");
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace seam::mutants
