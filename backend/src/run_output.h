// Private to backend/: the output of a GPU run, assembled from its ranks'
// outcomes (rank_outcome.h) exactly as runPlanNumeric assembles the CPU's;
// its hash folded on the devices; and, one process per rank, rank 0's join
// of every process's report into the run's result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rank_executor.h"
#include "rank_outcome.h"
#include "seam/backend/executor.h"
#include "seam/sim/base/status.h"

namespace seam::backend::detail {

/// Assembles the output exactly as runPlanNumeric does: each token's row from
/// the first rank (in rank order) that produced it, producers counted.
/// `outcomes` holds every rank of the plan, in rank order.
void assembleOutput(const SharedRun& s, const std::vector<RankOutcome>& outcomes,
                    GpuRunResult* out);

/// Every rank's timings (rank-major), graph steps and new notes into `out`.
void collectOutcomes(const SharedRun& s, const std::vector<RankOutcome>& outcomes,
                     GpuRunResult* out);

/// The output's FNV-1a hash folded on the devices: for each stack, each DP
/// shard's rows are hashed on the first rank that produced them, carrying the
/// state from device to device in token order. A shard no rank holds in order
/// (or one with no producer) is folded on the host from the assembled rows.
Expected<std::uint64_t> deviceHash(const SharedRun& s,
                                   const std::vector<std::unique_ptr<RankExecutor>>& ranks,
                                   const NumericOutput& output, std::vector<std::string>* notes);

/// Under one process per rank: rank 0 turns every process's report into the
/// run's result and tells the other processes the verdict (failed, hung or
/// done), so that each returns alike. `mine` is this process's report.
Expected<GpuRunResult> joinProcesses(const SharedRun& shared, ProcessGroup& processes,
                                     const ProcessReport& mine, GpuRunResult result);

}  // namespace seam::backend::detail
