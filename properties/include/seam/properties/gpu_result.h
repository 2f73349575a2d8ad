// The records of a GPU run as seam-gpu writes them (its --json files) and
// `seam db import` reads them back on the machine that has the store: plain
// data, one record per seam-gpu command, each field named as in the file
// (the ratios a file carries too: a record is what its file says).
// gpu_json.h turns them into JSON and back; gpu_verdict.h judges them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "seam/sim/replay/numeric_executor.h"

namespace seam::properties {

/// The case a result ran ("case" in every file but bench-allreduce's).
struct GpuCaseRecord {
  std::string model;
  std::string pattern;  ///< not in compare files
  std::string config;
  std::string flags;
  std::string tokens;     ///< the batch, Batch::describe()
  std::string policy;     ///< not in compare files
  std::string reproduce;  ///< the `seam check` (compare: `seam diff`) line of the case
};

/// The numeric model of a run ("numeric").
struct GpuNumericRecord {
  std::string mode;  ///< "exact" or "real"
  int hidden = 0;
  int inner = 0;
};

/// The CUDA and NCCL a run loaded ("versions").
struct GpuVersionsRecord {
  int cuda_runtime = 0;
  int cuda_driver = 0;
  int nccl = 0;
  std::string text;  ///< "cuda 13.0, driver 13.0, nccl 2.28.3"
};

/// What every result file says of the binary and machine that wrote it.
struct GpuOrigin {
  /// "seam 0.1.0"; a file read with null here has none (the reader's own applies).
  std::optional<std::string> version;
  std::optional<std::string> command;  ///< the command line; bench-allreduce writes none
  /// "2x NVIDIA H200" (bench-allreduce writes its device count instead; a
  /// bench that found no device writes none).
  std::optional<std::string> device;
  std::optional<GpuVersionsRecord> versions;  ///< compare and bench-allreduce write none
  /// Where, when and from what it ran (provenance.h); files written before
  /// seam-gpu stamped them have none.
  std::optional<std::string> host;
  std::optional<std::int64_t> written_ms;  ///< Unix epoch ms when seam-gpu wrote it (its end)
  std::optional<std::string> commit;       ///< the git commit seam-gpu was built from
};

/// Median and percentiles of a sample, in microseconds.
struct GpuSummaryRecord {
  double median_us = 0, p10_us = 0, p90_us = 0;
};

/// One op of one rank, timed over the timed iterations (backend OpTiming).
struct GpuTimingRecord {
  int rank = 0;
  int op_index = 0;
  std::string op;                    ///< opName
  std::optional<std::string> group;  ///< the group's axis name; none for local ops
  int group_size = 1;
  int layer = 0, stage = 0, stack = 0;
  std::string phase;  ///< phaseName
  std::int64_t bytes = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  double algbw_gbs = 0, busbw_gbs = 0;
  std::string path;  ///< how an ar_add_norm ran, arAddNormPathName
  std::string nccl_call;
  std::int64_t nccl_count = 0;
};

/// One rank's step eager, replayed from a CUDA graph, and its sums (backend GraphStep).
struct GpuGraphRecord {
  int rank = 0;
  int ops = 0;
  int replays = 0;
  double eager_median_us = 0, eager_p10_us = 0, eager_p90_us = 0;
  double graph_median_us = 0, graph_p10_us = 0, graph_p90_us = 0;
  double kernel_sum_us = 0;
  double kernel_busy_us = 0;
  int kernels = 0;
  double op_sum_us = 0;
  double graph_over_kernel_sum = 0, graph_over_kernel_busy = 0, eager_over_graph = 0;
  bool identical = false;  ///< the replay's rows equal the eager step's
};

/// One rank's final rows against the CPU executor and the reference.
struct GpuRankRecord {
  int rank = 0;
  OutputDiff vs_cpu, vs_reference;
};

/// `seam-gpu run`: a plan on the GPUs against the CPU executor and the reference.
/// A diff's max_abs read from a file's null (a non-finite difference) is NaN.
struct GpuRunRecord {
  GpuOrigin origin;
  GpuCaseRecord c;
  GpuNumericRecord numeric;
  int warmup = 0, iters = 0;
  bool hung = false;
  std::vector<std::string> notes;
  std::string hang_report;  ///< a hung run ends here: no hashes, diffs or timings
  std::uint64_t gpu_device_hash = 0, gpu_host_hash = 0, cpu_hash = 0, reference_hash = 0;
  bool cpu_ran = false;
  std::string cpu_failure;  ///< why the CPU executor refused the plan
  OutputDiff vs_cpu, vs_reference;
  bool ranks_disagree = false;
  std::vector<GpuRankRecord> ranks;
  std::optional<OutputDiff> fused_vs_unfused;
  std::vector<GpuGraphRecord> graph;
  std::string verdict;  ///< judgeGpuRun's; as the file says when read
  std::vector<GpuTimingRecord> timings;
};

/// `seam-gpu compare`: two policies' plans of one case on the same GPUs.
struct GpuCompareRecord {
  GpuOrigin origin;
  GpuCaseRecord c;  ///< model, config, flags, tokens and the `seam diff` line
  GpuNumericRecord numeric;
  std::string diff_class;  ///< "class": diffClassName of the two plans
  std::string detail;
  bool predicted_identical = false;
  std::string prediction;  ///< why not identical, in words
  std::string verdict;     ///< predictionVerdictName
  OutputDiff observed;     ///< plan A's output against plan B's
  std::uint64_t hash_a = 0, hash_b = 0;
};

/// One distinct collective of a plan against the same NCCL call made bare.
struct GpuCollectiveRecord {
  std::string op;
  std::string group;  ///< "tp/2"
  std::vector<int> members;
  std::string nccl_call;
  std::int64_t nccl_count = 0;
  std::int64_t bytes = 0;
  int occurrences = 0;
  GpuSummaryRecord plan, bare;
  double plan_algbw_gbs = 0, plan_busbw_gbs = 0, bare_algbw_gbs = 0, bare_busbw_gbs = 0;
  double plan_over_bare_busbw = 0;
  int rotating_sets = 1;
};

/// The fused all-reduce + add + RMSNorm kernel against its unfused twin at one size.
struct GpuFusedRecord {
  int hidden = 0, tokens = 0, ranks = 0;
  std::int64_t bytes = 0;
  std::optional<std::string> protocol;  ///< "flag" or "ll"; benches older than it have none
  GpuSummaryRecord fused, unfused, nccl_all_reduce;  ///< CUDA events around each call
  double speedup = 0;                                ///< unfused over fused
  /// The same three as CUPTI's durations of each call's kernels.
  GpuSummaryRecord fused_kernels, unfused_kernels, nccl_all_reduce_kernels;
  double kernel_speedup = 0;
  int rotating_sets = 1;
  bool exact_identical = false, real_identical = false;
  double real_max_abs = 0;
  std::int64_t real_max_ulps_bf16 = 0;
};

/// `seam-gpu bench`: the sections it ran, each present only when it ran.
struct GpuBenchRecord {
  GpuOrigin origin;
  GpuCaseRecord c;
  GpuNumericRecord numeric;
  int iters = 0;
  bool ran_plan = false;  ///< collectives or graph: the plan ran (its notes; a hang ends here)
  std::vector<std::string> notes;
  bool hung = false;
  std::string hang_report;
  std::optional<std::vector<GpuCollectiveRecord>> collectives;
  std::vector<std::string> collectives_not_compared;
  std::optional<std::vector<GpuGraphRecord>> graph;
  std::optional<std::vector<GpuFusedRecord>> fused;
  std::optional<std::string> cupti_error;
  std::string verdict;  ///< "completed" or "failed"
};

/// `seam-gpu bench-allreduce`: bare NCCL against a one-op plan.
struct GpuAllReduceRecord {
  GpuOrigin origin;  ///< version only
  int devices = 0;
  std::int64_t bytes = 0;
  int iters = 0;
  double bare_median_us = 0, plan_median_us = 0;
  double bare_busbw_gbs = 0, plan_busbw_gbs = 0;
  double plan_over_bare = 0;  ///< of the busbw
};

/// How every ratio of the files is taken: `num / den`, 0 when `den` is not
/// positive (nothing was timed).
inline double ratioOrZero(double num, double den) { return den > 0 ? num / den : 0.0; }

/// Any result file, by the command that wrote it.
using GpuResult = std::variant<GpuRunRecord, GpuCompareRecord, GpuBenchRecord, GpuAllReduceRecord>;

/// "seam-gpu run", "seam-gpu compare", "seam-gpu bench", "seam-gpu bench-allreduce".
const char* gpuToolName(const GpuResult& result);

/// "0x%016llx", how the files and seam-gpu's console write an output hash.
std::string hexHash(std::uint64_t hash);

}  // namespace seam::properties
