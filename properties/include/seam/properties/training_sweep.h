// Sweeps of the training family: every training preset x layout x config of
// a world x packed batches, planned and checked (the static collectives
// property, then the training ledger) on several threads, in a fixed order.
#pragma once

#include <vector>

#include "seam/properties/sweep.h"
#include "seam/sim/training/training_case.h"

namespace seam::properties {

/// What a training sweep covers. A spec of its own (training presets and
/// layouts at one world: no patterns, filter, policy, shards or resume); its
/// result is the serving SweepResult, with a tally per (model, layout).
struct TrainingSweepSpec {
  std::vector<const ModelPreset*> models;  ///< empty: trainingPresets()
  std::vector<TrainingLayout> layouts = {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron};
  int world = 8;
  int jobs = 1;
  int max_failures = 20;
};

/// The cases of a training sweep, in order (refused ones included); with
/// `tally_of`, each case's index into the result's per_model.
std::vector<TrainingCase> trainingSweepCases(const TrainingSweepSpec& spec,
                                             std::vector<int>* tally_of = nullptr);

/// Runs the training sweep. Fails only on bad input (a world or jobs out of range).
Expected<SweepResult> runTrainingSweep(const TrainingSweepSpec& spec);

}  // namespace seam::properties
