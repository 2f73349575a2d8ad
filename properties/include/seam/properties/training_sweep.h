// Sweeps of the training family: every training preset x layout x config of
// a world x packed batches, planned and checked (the static collectives
// property, then the training ledger) on several threads, in a fixed order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "seam/sim/training.h"

namespace seam::properties {

struct TrainingSweepSpec {
  std::vector<const ModelPreset*> models;  ///< empty: trainingPresets()
  std::vector<TrainingLayout> layouts = {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron};
  int world = 8;
  int jobs = 1;
  int max_failures = 20;
};

/// Totals of one (model, layout).
struct TrainingTally {
  std::string model;
  TrainingLayout layout = TrainingLayout::kPrimeRl;
  std::int64_t checked = 0, refused = 0, not_modelled = 0, violated = 0;
  double seconds = 0;  ///< worker time
};

struct TrainingSweepResult {
  std::int64_t cases = 0, checked = 0, refused = 0, not_modelled = 0, violated = 0;
  double seconds = 0;  ///< wall time
  std::vector<TrainingTally> per_model;
  std::vector<std::pair<std::string, std::string>> failures;  ///< (violation, reproduce line), case order
  std::vector<std::pair<std::string, std::int64_t>> refusals;  ///< reasons, most frequent first
};

/// The cases of a training sweep, in order (refused ones included).
std::vector<TrainingCase> trainingSweepCases(const TrainingSweepSpec& spec, std::vector<int>* tally_of = nullptr);

Expected<TrainingSweepResult> runTrainingSweep(const TrainingSweepSpec& spec);

}  // namespace seam::properties
