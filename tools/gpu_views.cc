#include "gpu_views.h"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace seam::tools {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

void printRunHeader(const properties::GpuRunRecord& run, const std::string& decision) {
  const properties::GpuCaseRecord& c = run.c;
  std::cout << "seam-gpu run: " << c.model << " " << c.pattern << "  policy " << c.policy
            << (decision.empty() ? "" : " with --decision " + decision) << "  (" << c.config << "; "
            << c.flags << "; tokens " << c.tokens << ")\n";
  std::cout << run.numeric.mode << " mode, hidden " << run.numeric.hidden << ", inner "
            << run.numeric.inner << ", on " << run.origin.device.value_or("") << " ("
            << run.origin.versions.value_or(properties::GpuVersionsRecord{}).text << ")\n";
  for (const std::string& n : run.notes) std::cout << "note: " << n << "\n";
}

void printRunComparisons(const properties::GpuRunRecord& run) {
  std::cout << "output: gpu " << properties::hexHash(run.gpu_device_hash) << ", cpu executor "
            << properties::hexHash(run.cpu_hash) << ", reference "
            << properties::hexHash(run.reference_hash) << "\n";
  if (!run.cpu_ran) std::cout << "the CPU executor refuses the plan: " << run.cpu_failure << "\n";
  for (const properties::GpuRankRecord& r : run.ranks) {
    std::cout << "rank " << r.rank << ": vs the CPU executor "
              << (run.cpu_ran ? r.vs_cpu.describe() : "n/a") << "; vs the reference "
              << r.vs_reference.describe() << "\n";
  }
  if (run.ranks.empty()) std::cout << "no rank produced a final output\n";
  if (run.ranks_disagree) std::cout << "ranks holding the same token produced different rows\n";
  if (run.fused_vs_unfused)
    std::cout << "fused ar_add_norm vs unfused: " << run.fused_vs_unfused->describe() << "\n";
  printGraph(run.graph);
}

void printTimings(const Plan& plan, const std::vector<backend::OpTiming>& timings, int rank,
                  int iters) {
  std::cout << "timings of rank " << rank << " (median, p10, p90 of " << iters
            << " iterations, us):\n";
  std::printf("%4s  %-20s %-10s %12s %10s %10s %10s %10s %10s  %s\n", "#", "op", "group", "bytes",
              "median", "p10", "p90", "algbw", "busbw", "path");
  for (const backend::OpTiming& t : timings) {
    if (t.rank != rank) continue;
    const Op& op = plan.ranks[t.rank][t.op_index];
    const std::string group =
        op.hasGroup() ? std::string(axisName(op.groupAxis())) + "/" + std::to_string(t.group_size)
                      : "-";
    const double algbw = backend::algBandwidthGBs(t.bytes, t.median_us);
    const double factor = backend::busBandwidthFactor(t.kind, t.group_size);
    std::printf("%4d  %-20s %-10s %12lld %10.2f %10.2f %10.2f %10s %10s  %s\n", t.op_index,
                std::string(opName(t.kind)).c_str(), group.c_str(), static_cast<long long>(t.bytes),
                t.median_us, t.p10_us, t.p90_us, fixed(algbw, 2).c_str(),
                factor > 0 ? fixed(algbw * factor, 2).c_str() : "-",
                backend::arAddNormPathName(t.path));
  }
}

void printRunVerdict(const properties::GpuRunRecord& run,
                     const properties::GpuRunJudgement& judgement) {
  if (!judgement.graph_identical) std::cout << "the graph replay differs from the eager step\n";
  if (run.numeric.mode == "exact") {
    std::cout << (judgement.all_identical ? "IDENTICAL" : "DIFFERS") << "\n";
  } else {
    std::cout << (judgement.ok
                      ? "COMPLETED (real mode: " + run.vs_cpu.describe() + " vs the CPU executor)"
                      : "FAILED")
              << "\n";
  }
}

void printGraph(const std::vector<properties::GpuGraphRecord>& steps) {
  for (const properties::GpuGraphRecord& g : steps) {
    std::printf(
        "graph rank %d: %d ops; eager step %.1f us, graph replay %.1f us (%.2fx faster than "
        "eager); %d kernels sum to %.1f us (replay/sum %.3f; busy %.1f us, replay/busy %.3f); "
        "ops' event times sum to %.1f us; replay %s the eager step\n",
        g.rank, g.ops, g.eager_median_us, g.graph_median_us, g.eager_over_graph, g.kernels,
        g.kernel_sum_us, g.graph_over_kernel_sum, g.kernel_busy_us, g.graph_over_kernel_busy,
        g.op_sum_us, g.identical ? "bit-identical to" : "DIFFERS from");
  }
}

void printCollectives(const std::vector<properties::GpuCollectiveRecord>& rows, int iters,
                      const std::vector<std::string>& skipped) {
  std::cout << "collectives of the plan against bare NCCL (median of " << iters
            << " timed calls, slowest rank; bare on rotating buffers):\n";
  std::printf("  %-16s %-8s %-15s %12s %5s %10s %10s %10s %10s %7s\n", "op", "group", "nccl call",
              "bytes", "ops", "plan us", "bare us", "plan busbw", "bare busbw", "ratio");
  for (const properties::GpuCollectiveRecord& b : rows) {
    std::printf("  %-16s %-8s %-15s %12lld %5d %10.2f %10.2f %10.2f %10.2f %7.3f\n", b.op.c_str(),
                b.group.c_str(), b.nccl_call.c_str(), static_cast<long long>(b.bytes),
                b.occurrences, b.plan.median_us, b.bare.median_us, b.plan_busbw_gbs,
                b.bare_busbw_gbs, b.plan_over_bare_busbw);
  }
  for (const std::string& sk : skipped) std::cout << "  not compared: " << sk << "\n";
}

void printFused(const std::vector<properties::GpuFusedRecord>& rows, int iters) {
  std::cout << "fused all-reduce + add + RMSNorm against NCCL all-reduce + add+norm kernel (real "
               "mode, median of "
            << iters << " calls, slowest rank):\n";
  std::cout << "  (events: CUDA events around each call; kernels: CUPTI's durations of each "
               "call's kernels)\n";
  std::printf("  %6s %6s %12s %5s %10s %10s %10s %8s %10s %10s %8s %6s  %s\n", "hidden", "tokens",
              "bytes", "proto", "fused us", "unfused us", "nccl us", "speedup", "fused k",
              "unfused k", "k speedup", "sets", "checks");
  for (const properties::GpuFusedRecord& b : rows) {
    const std::string real = b.real_identical
                                 ? "identical"
                                 : "max " + fixed(b.real_max_abs, 6) + " (" +
                                       std::to_string(b.real_max_ulps_bf16) + " bf16 ulps)";
    std::printf(
        "  %6d %6d %12lld %5s %10.2f %10.2f %10.2f %8.2f %10.2f %10.2f %8.2f %6d  exact %s; real "
        "%s\n",
        b.hidden, b.tokens, static_cast<long long>(b.bytes), b.protocol.value_or("").c_str(),
        b.fused.median_us, b.unfused.median_us, b.nccl_all_reduce.median_us, b.speedup,
        b.fused_kernels.median_us, b.unfused_kernels.median_us, b.kernel_speedup, b.rotating_sets,
        b.exact_identical ? "identical" : "DIFFERS", real.c_str());
  }
}

void printAllReduce(const properties::GpuAllReduceRecord& bench) {
  std::cout << "all-reduce of " << bench.bytes << " bytes over " << bench.devices
            << " GPU(s), median of " << bench.iters << " iterations (slowest rank):\n";
  std::printf("  %-12s %12.2f us  busbw %10.2f GB/s\n", "bare NCCL", bench.bare_median_us,
              bench.bare_busbw_gbs);
  std::printf("  %-12s %12.2f us  busbw %10.2f GB/s\n", "one-op plan", bench.plan_median_us,
              bench.plan_busbw_gbs);
  if (bench.devices > 1) std::printf("  plan / bare busbw: %.3f\n", bench.plan_over_bare);
}

}  // namespace seam::tools
