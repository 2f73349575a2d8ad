#include "gpu_records.h"

namespace seam::tools {

namespace {

using properties::ratioOrZero;

properties::GpuSummaryRecord summaryRecord(const backend::TimingSummary& t) {
  return {t.median, t.p10, t.p90};
}

properties::GpuTimingRecord timingRecord(const Plan& plan, const backend::OpTiming& t) {
  const Op& op = plan.ranks[t.rank][t.op_index];
  properties::GpuTimingRecord r;
  r.rank = t.rank;
  r.op_index = t.op_index;
  r.op = std::string(opName(t.kind));
  if (op.hasGroup()) r.group = std::string(axisName(op.groupAxis()));
  r.group_size = t.group_size;
  r.layer = op.layer;
  r.stage = op.stage;
  r.stack = op.stack;
  r.phase = std::string(phaseName(op.phase));
  r.bytes = t.bytes;
  r.median_us = t.median_us;
  r.p10_us = t.p10_us;
  r.p90_us = t.p90_us;
  r.algbw_gbs = backend::algBandwidthGBs(t.bytes, t.median_us);
  r.busbw_gbs = r.algbw_gbs * backend::busBandwidthFactor(t.kind, t.group_size);
  r.path = backend::arAddNormPathName(t.path);
  r.nccl_call = t.nccl_call;
  r.nccl_count = t.nccl_count;
  return r;
}

}  // namespace

properties::GpuCaseRecord caseRecord(const Case& c, const std::string& policy,
                                     const std::string& reproduce) {
  return {.model = c.model.name,
          .pattern = c.model.pattern.text(),
          .config = c.config.describe(),
          .flags = c.flags.describe(),
          .tokens = c.batch.describe(),
          .policy = policy,
          .reproduce = reproduce};
}

properties::GpuVersionsRecord versionsRecord(const backend::RuntimeVersions& v) {
  return {v.cuda_runtime, v.cuda_driver, v.nccl, v.describe()};
}

std::vector<properties::GpuGraphRecord> graphRecords(const std::vector<backend::GraphStep>& steps) {
  std::vector<properties::GpuGraphRecord> out;
  for (const backend::GraphStep& g : steps) {
    properties::GpuGraphRecord r;
    r.rank = g.rank;
    r.ops = g.ops;
    r.replays = g.replays;
    r.eager_median_us = g.eager_median_us;
    r.eager_p10_us = g.eager_p10_us;
    r.eager_p90_us = g.eager_p90_us;
    r.graph_median_us = g.graph_median_us;
    r.graph_p10_us = g.graph_p10_us;
    r.graph_p90_us = g.graph_p90_us;
    r.kernel_sum_us = g.kernel_sum_us;
    r.kernel_busy_us = g.kernel_busy_us;
    r.kernels = g.kernels;
    r.graph_over_kernel_sum = ratioOrZero(g.graph_median_us, g.kernel_sum_us);
    r.graph_over_kernel_busy = ratioOrZero(g.graph_median_us, g.kernel_busy_us);
    r.op_sum_us = g.op_sum_us;
    r.eager_over_graph = ratioOrZero(g.eager_median_us, g.graph_median_us);
    r.identical = g.identical;
    out.push_back(r);
  }
  return out;
}

properties::GpuRunRecord runRecord(const Plan& plan, const backend::GpuRunResult& gpu,
                                   const NumericRun& cpu, const NumericOutput& reference) {
  properties::GpuRunRecord r;
  r.origin.device = gpu.device;
  r.origin.versions = versionsRecord(gpu.versions);
  r.hung = gpu.hung;
  r.notes = gpu.notes;
  r.hang_report = gpu.hang_report;
  if (gpu.hung) return r;
  // The assembled output by hash first (computed on the devices), element
  // by element where the hashes differ; then every rank's own rows.
  r.cpu_ran = cpu.ran();
  const OutputDiff not_run{.identical = false};
  r.vs_cpu = r.cpu_ran ? compareOutputs(gpu.output, cpu.output) : not_run;
  r.vs_reference = compareOutputs(gpu.output, reference);
  r.gpu_device_hash = gpu.device_hash;
  r.gpu_host_hash = gpu.output.hash();
  r.cpu_hash = cpu.output.hash();
  r.reference_hash = reference.hash();
  if (!r.cpu_ran) r.cpu_failure = describeViolation(cpu.failures.front());
  r.ranks_disagree = gpu.ranks_disagree;
  for (const backend::RankFinals& f : gpu.finals) {
    r.ranks.push_back({f.rank, r.cpu_ran ? backend::compareRankFinals(f, cpu.output) : not_run,
                       backend::compareRankFinals(f, reference)});
  }
  r.graph = graphRecords(gpu.graph);
  for (const backend::OpTiming& t : gpu.timings) r.timings.push_back(timingRecord(plan, t));
  return r;
}

std::vector<properties::GpuCollectiveRecord> collectiveRecords(
    const std::vector<backend::CollectiveBench>& rows) {
  std::vector<properties::GpuCollectiveRecord> out;
  for (const backend::CollectiveBench& b : rows) {
    out.push_back({.op = b.op,
                   .group = b.group,
                   .members = b.members,
                   .nccl_call = b.nccl_call,
                   .nccl_count = b.nccl_count,
                   .bytes = b.bytes,
                   .occurrences = b.occurrences,
                   .plan = summaryRecord(b.plan),
                   .bare = summaryRecord(b.bare),
                   .plan_algbw_gbs = b.plan_algbw,
                   .plan_busbw_gbs = b.plan_busbw,
                   .bare_algbw_gbs = b.bare_algbw,
                   .bare_busbw_gbs = b.bare_busbw,
                   .plan_over_bare_busbw = ratioOrZero(b.plan_busbw, b.bare_busbw),
                   .rotating_sets = b.rotating_sets});
  }
  return out;
}

std::vector<properties::GpuFusedRecord> fusedRecords(const std::vector<backend::FusedBench>& rows) {
  std::vector<properties::GpuFusedRecord> out;
  for (const backend::FusedBench& b : rows) {
    out.push_back({.hidden = b.hidden,
                   .tokens = b.tokens,
                   .ranks = b.ranks,
                   .bytes = b.bytes,
                   .protocol = backend::peerProtocolName(b.protocol),
                   .fused = summaryRecord(b.fused),
                   .unfused = summaryRecord(b.unfused),
                   .nccl_all_reduce = summaryRecord(b.nccl),
                   .speedup = ratioOrZero(b.unfused.median, b.fused.median),
                   .fused_kernels = summaryRecord(b.fused_kernels),
                   .unfused_kernels = summaryRecord(b.unfused_kernels),
                   .nccl_all_reduce_kernels = summaryRecord(b.nccl_kernels),
                   .kernel_speedup = ratioOrZero(b.unfused_kernels.median, b.fused_kernels.median),
                   .rotating_sets = b.rotating_sets,
                   .exact_identical = b.exact_identical,
                   .real_identical = b.real_identical,
                   .real_max_abs = b.real_max_abs,
                   .real_max_ulps_bf16 = b.real_max_ulps});
  }
  return out;
}

properties::GpuAllReduceRecord allReduceRecord(const backend::AllReduceBench& bench) {
  properties::GpuAllReduceRecord r;
  r.devices = bench.devices;
  r.bytes = bench.bytes;
  r.iters = bench.iters;
  r.bare_median_us = bench.bare_median_us;
  r.plan_median_us = bench.plan_median_us;
  r.bare_busbw_gbs = bench.bare_busbw;
  r.plan_busbw_gbs = bench.plan_busbw;
  r.plan_over_bare = ratioOrZero(bench.plan_busbw, bench.bare_busbw);
  return r;
}

}  // namespace seam::tools
