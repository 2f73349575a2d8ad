// Private to properties/: a sweep's case space in the pieces the streaming
// sweep walks (one configuration at a time) and enumerateCases lists whole,
// so that both give the same cases in the same order.
#pragma once

#include <vector>

#include "seam/properties/sweep.h"

namespace seam::properties {

/// The configurations of `model` a sweep visits at `world`, in sweep order
/// (ConfigSpace order; a pattern with pipeline cuts only at its pp).
std::vector<ParallelConfig> sweepConfigs(const ModelRef& model, int world,
                                         const ConfigFilter& filter);

/// One flag set of a configuration and the batches it runs, in sweep order.
struct FlagCases {
  Flags flags;
  std::vector<Batch> batches;
};
/// The flag sets of `config` that `keep` keeps, with their batches: the
/// cases of one configuration are these, flag set by flag set, batch by batch.
std::vector<FlagCases> flagCases(const ModelRef& model, const ParallelConfig& config,
                                 const FlagFilter& keep);

}  // namespace seam::properties
