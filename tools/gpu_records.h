// seam-gpu's results as the records of properties/gpu_result.h: what the
// backend measured, put in the shape the files have (the comparisons with
// the CPU executor and the reference made here, judged by gpu_verdict.h).
#pragma once

#include <string>
#include <vector>

#include "seam/backend/bench.h"
#include "seam/backend/executor.h"
#include "seam/properties/gpu_result.h"
#include "seam/sim/model/case.h"

namespace seam::tools {

/// The case of a run or bench with its policy and reproduce line.
properties::GpuCaseRecord caseRecord(const Case& c, const std::string& policy,
                                     const std::string& reproduce);
properties::GpuVersionsRecord versionsRecord(const backend::RuntimeVersions& v);
std::vector<properties::GpuGraphRecord> graphRecords(const std::vector<backend::GraphStep>& steps);

/// A run of `plan` on the GPUs against the CPU executor's run and the
/// reference: the machine, notes and hang, and unless it hung the hashes,
/// the diffs (the assembled output and every rank's rows), the graph steps
/// and every op's timing. The case, numeric model, origin and verdict are the caller's.
properties::GpuRunRecord runRecord(const Plan& plan, const backend::GpuRunResult& gpu,
                                   const NumericRun& cpu, const NumericOutput& reference);

std::vector<properties::GpuCollectiveRecord> collectiveRecords(
    const std::vector<backend::CollectiveBench>& rows);
std::vector<properties::GpuFusedRecord> fusedRecords(const std::vector<backend::FusedBench>& rows);
properties::GpuAllReduceRecord allReduceRecord(const backend::AllReduceBench& bench);

}  // namespace seam::tools
