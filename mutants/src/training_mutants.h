// Private to mutants/: the training family's operators: plan-level
// edits of a built TrainingPlan and planner decisions flipped through
// TrainingDecision. Each is one small object with a stable id.
#pragma once

#include "seam/mutants/mutant.h"

namespace seam::mutants {

/// A training plan edit: finds its site and edits every rank that has it.
using TrainingEdit = bool (*)(TrainingPlan& plan);

class TrainingMutant final : public Mutant {
 public:
  constexpr TrainingMutant(std::string_view id, std::string_view description, TrainingEdit edit)
      : id_(id), description_(description), edit_(edit) {}
  constexpr TrainingMutant(std::string_view id, std::string_view description,
                           TrainingDecision decision)
      : id_(id), description_(description), decision_(decision) {}
  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }
  MutantKind kind() const override { return edit_ ? MutantKind::kPlan : MutantKind::kDecision; }
  bool apply(Plan&) const override { return false; }
  MutantFamily family() const override { return MutantFamily::kTraining; }
  TrainingDecision trainingDecision() const override { return decision_; }
  bool applyTraining(TrainingPlan& plan) const override { return edit_ ? edit_(plan) : true; }

 private:
  std::string_view id_, description_;
  TrainingEdit edit_ = nullptr;
  TrainingDecision decision_ = TrainingDecision::kNone;
};

bool dropGradReduction(TrainingPlan& plan);
bool duplicateGradReduction(TrainingPlan& plan);
bool dropSpNormGradSum(TrainingPlan& plan);
bool kvReplicaGradsNotSummed(TrainingPlan& plan);
bool swapBackwardCollectivesOnOneRank(TrainingPlan& plan);
bool combineSplitsNotSwapped(TrainingPlan& plan);
bool headSliceOffByOne(TrainingPlan& plan);
bool dgradAlsoAllReduced(TrainingPlan& plan);
bool gatherBackwardSlices(TrainingPlan& plan);
bool kvRepeatTiled(TrainingPlan& plan);
bool gradReducedBeforeLastContribution(TrainingPlan& plan);
bool routingWeightsTwice(TrainingPlan& plan);
bool recomputeCollectiveDroppedOnOneRank(TrainingPlan& plan);
bool fsdpPrefetchMissingOnOneRank(TrainingPlan& plan);
bool ringLastDkvStepDropped(TrainingPlan& plan);
bool ringBackwardTowardNextRank(TrainingPlan& plan);

}  // namespace seam::mutants
