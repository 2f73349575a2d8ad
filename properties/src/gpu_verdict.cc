#include "seam/properties/gpu_verdict.h"

#include <cmath>

namespace seam::properties {

namespace {

bool finite(const NumericOutput& output) {
  for (const auto& stack : output.rows) {
    for (float v : stack) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

}  // namespace

GpuRunJudgement judgeGpuRun(const GpuRunRecord& run, const NumericOutput& gpu_output) {
  GpuRunJudgement j;
  if (run.hung) {
    j.verdict = "hung";
    return j;
  }
  const bool exact = run.numeric.mode == "exact";
  j.all_identical = run.cpu_ran && run.vs_cpu.identical && run.vs_reference.identical &&
                    !run.ranks_disagree && !run.ranks.empty();
  for (const GpuRankRecord& r : run.ranks) {
    j.all_identical = j.all_identical && r.vs_cpu.identical && r.vs_reference.identical;
  }
  for (const GpuGraphRecord& g : run.graph) j.graph_identical = j.graph_identical && g.identical;
  // Real mode reports the fused kernel against the unfused one (within bf16
  // rounding when NCCL adds in another order); exact mode requires the bits.
  const bool unfused_ok = !run.fused_vs_unfused || !exact || run.fused_vs_unfused->identical;
  const bool completed = !run.ranks_disagree && finite(gpu_output) && !run.ranks.empty();
  j.ok = j.graph_identical && unfused_ok && (exact ? j.all_identical : completed);
  j.verdict = exact ? (j.all_identical ? "identical" : "differs") : (j.ok ? "completed" : "failed");
  return j;
}

std::string judgeGpuBench(const GpuBenchRecord& bench) {
  bool ok = true;
  if (bench.graph) {
    for (const GpuGraphRecord& g : *bench.graph) ok = ok && g.identical;
  }
  if (bench.fused) {
    for (const GpuFusedRecord& f : *bench.fused) ok = ok && f.exact_identical;
  }
  return ok ? "completed" : "failed";
}

GpuComparePrediction predictGpuCompare(const Plan& a, const Plan& b, Ledger& ledger) {
  GpuComparePrediction p{diffPlans(a, b, ledger), predictBitIdentity(a, b)};
  if (p.diff.cls == DiffClass::kValuesDiffer)
    p.bits.reason = "the values differ (the ledger's violation above)";
  return p;
}

}  // namespace seam::properties
