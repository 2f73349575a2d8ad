// Private to mutants/: the plan-level operators (one small class each).
#pragma once

#include <string>

#include "seam/mutants/mutant.h"

namespace seam::mutants {

#define SEAM_PLAN_MUTANT(Class, Id, Description)                          \
  class Class final : public Mutant {                                     \
   public:                                                                \
    std::string_view id() const override { return Id; }                   \
    std::string_view description() const override { return Description; } \
    MutantKind kind() const override { return MutantKind::kPlan; }        \
    bool apply(Plan& plan) const override;                                \
  }

SEAM_PLAN_MUTANT(
    DropCompletingCollective, "plan.drop-completing-collective",
    "drop the first collective that completes a sum (a fused one loses its all-reduce)");
SEAM_PLAN_MUTANT(
    DuplicateCompletingCollective, "plan.duplicate-completing-collective",
    "run the first completing all-reduce twice (the producer also reduces before a fused kernel)");
SEAM_PLAN_MUTANT(ReduceScatterWithoutGather, "plan.reduce-scatter-without-gather",
                 "reduce-scatter to local rows but never all-gather back to attention rows");
SEAM_PLAN_MUTANT(SliceIndexOffByOne, "plan.slice-index-off-by-one",
                 "take the next attention-TP rank's slice instead of the rank's own");
SEAM_PLAN_MUTANT(ResidualNotSliced, "plan.residual-not-sliced",
                 "the residual stays on attention rows when the hidden state moves to local rows");
SEAM_PLAN_MUTANT(ResidualNotGathered, "plan.residual-not-gathered",
                 "the output returns to attention rows without the residual folded in");
SEAM_PLAN_MUTANT(PaddingModeMismatch, "plan.padding-mode-mismatch",
                 "scatter back from full rows in the other DP padding mode than the gather used");
SEAM_PLAN_MUTANT(IdleRankSkipsCollective, "plan.idle-rank-skips-collective",
                 "a rank with 0 tokens skips its first collective");
SEAM_PLAN_MUTANT(SwapCollectivesOnOneRank, "plan.swap-collectives-on-one-rank",
                 "one rank issues two consecutive collectives in the other order");

SEAM_PLAN_MUTANT(
    TboHalvesSwappedOnOneRank, "plan.tbo-halves-swapped-on-one-rank",
    "one rank issues a two-batch-overlap chunk of half B before the chunk of half A it follows");
SEAM_PLAN_MUTANT(TboSplitSkipsResidual, "plan.tbo-split-skips-residual",
                 "the two-batch-overlap split gives half B no residual rows");
SEAM_PLAN_MUTANT(
    TboMergeDropsHalf, "plan.tbo-merge-drops-half",
    "the two-batch-overlap merge does not copy half B's hidden rows back into the batch");

#undef SEAM_PLAN_MUTANT

/// A plan-level operator with a parameter: its id and description are given
/// where the registry instantiates it.
class ParameterizedPlanMutant : public Mutant {
 public:
  constexpr ParameterizedPlanMutant(std::string_view id, std::string_view description)
      : id_(id), description_(description) {}
  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }
  MutantKind kind() const override { return MutantKind::kPlan; }

 private:
  std::string_view id_, description_;
};

/// A fault in the implementation of the DP ops (dp_gather.h's lowering),
/// planted in every DP op whose lowering it changes.
class PlantDpFault final : public ParameterizedPlanMutant {
 public:
  constexpr PlantDpFault(std::string_view id, std::string_view description, DpFault fault)
      : ParameterizedPlanMutant(id, description), fault_(fault) {}
  bool apply(Plan& plan) const override;

 private:
  DpFault fault_;
};

/// Reduce over the wrong group: the first all-reduce over `from` runs over `to`.
class RegroupReduction final : public ParameterizedPlanMutant {
 public:
  RegroupReduction(std::string_view id, std::string_view description, Axis from, Axis to)
      : ParameterizedPlanMutant(id, description), from_(from), to_(to) {}
  bool apply(Plan& plan) const override;

 private:
  Axis from_, to_;
};

}  // namespace seam::mutants
