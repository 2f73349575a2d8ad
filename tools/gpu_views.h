// What seam-gpu prints: the lines and tables of each command, from the
// records it writes (gpu_records.h) and, for the per-op table, the backend's
// timings of the plan.
#pragma once

#include <string>
#include <vector>

#include "seam/backend/executor.h"
#include "seam/properties/gpu_result.h"
#include "seam/properties/gpu_verdict.h"

namespace seam::tools {

/// `v` with `digits` decimals.
std::string fixed(double v, int digits);

/// What ran where: the case (with the planted --decision), the numeric
/// model, the machine, the run's notes.
void printRunHeader(const properties::GpuRunRecord& run, const std::string& decision);
/// The hashes, every rank's comparisons, the fused kernel against the
/// unfused one and the graph steps.
void printRunComparisons(const properties::GpuRunRecord& run);
/// Rank `rank`'s ops: median, p10, p90 of `iters` timed runs, bandwidths, path.
void printTimings(const Plan& plan, const std::vector<backend::OpTiming>& timings, int rank,
                  int iters);
/// The last lines: a graph replay that differs, and the verdict.
void printRunVerdict(const properties::GpuRunRecord& run,
                     const properties::GpuRunJudgement& judgement);

/// One line per rank: the step eager, replayed, and the sum of its kernels.
void printGraph(const std::vector<properties::GpuGraphRecord>& steps);
/// The plan's collectives against bare NCCL, and those not compared.
void printCollectives(const std::vector<properties::GpuCollectiveRecord>& rows, int iters,
                      const std::vector<std::string>& skipped);
/// The fused kernel against NCCL all-reduce + add+norm, one row per size.
void printFused(const std::vector<properties::GpuFusedRecord>& rows, int iters);
/// `seam-gpu bench-allreduce`'s table.
void printAllReduce(const properties::GpuAllReduceRecord& bench);

}  // namespace seam::tools
