// The verdicts of seam-gpu as values: property 7 (executors agree) judged on
// a GPU run, a bench's checks, and what the simulator predicts of two plans
// run on the same GPUs. seam-gpu prints and writes them; nothing here runs a GPU.
#pragma once

#include <string>

#include "seam/properties/diff.h"
#include "seam/properties/gpu_result.h"
#include "seam/sim/replay/bit_identity.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::properties {

/// A `seam-gpu run` judged.
struct GpuRunJudgement {
  /// Every comparison bit-identical: the assembled output and every rank's
  /// rows against the CPU executor and the reference, the ranks agreeing.
  bool all_identical = false;
  bool graph_identical = true;  ///< every graph replay equals its eager step
  bool ok = false;              ///< the run passes (exit 0)
  /// "identical" or "differs" (exact mode: all_identical), "completed" or
  /// "failed" (real mode: ok), "hung".
  std::string verdict;
};

/// Exact mode: every comparison must be bit-identical. Real mode (cuBLAS
/// sums in another order): the run must complete with the ranks agreeing
/// and `gpu_output` finite. Either way every graph replay must equal its
/// eager step, and in exact mode the fused and unfused ar_add_norm must agree.
GpuRunJudgement judgeGpuRun(const GpuRunRecord& run, const NumericOutput& gpu_output);

/// A `seam-gpu bench`: "completed" when every graph replay equals its eager
/// step and the fused kernel is bit-identical to NCCL + add+norm in exact
/// mode at every size, else "failed".
std::string judgeGpuBench(const GpuBenchRecord& bench);

/// What the simulator says of two plans of one case before they run.
struct GpuComparePrediction {
  CaseDiff diff;               ///< seam diff's class of the pair
  BitIdentityPrediction bits;  ///< the same roundings in the same order?
};
/// The pair's diff and bit-identity prediction; when the ledger says the
/// values differ, the reason is that, not a question of roundings.
GpuComparePrediction predictGpuCompare(const Plan& a, const Plan& b, Ledger& ledger);

}  // namespace seam::properties
