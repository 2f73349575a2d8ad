// `seam-gpu bench` (DESIGN §10): in one process and on the same
// GPUs, a plan's collectives against the same NCCL calls made bare, the fused
// all-reduce + add + RMSNorm kernel against NCCL all-reduce plus an add+norm
// kernel, and (through runPlanOnGpus' graph steps) a captured decode step
// against eager launches and the sum of its ops. Measured as nccl-tests
// measures: warm-up, CUDA events around every call, all calls of a sample
// queued before the device starts them, medians, the slowest rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/backend/executor.h"
#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::backend {

/// Untimed calls before the timed ones (nccl-tests' default warm-up is 5).
inline constexpr int kBenchWarmup = 5;
/// Rotating inputs: enough buffer sets that one pass over them is at least
/// this many times the L2 cache (capped by the number of timed calls).
inline constexpr int kRotateL2Multiple = 2;

/// One distinct collective of a plan (op kind, group, NCCL call, size): its
/// time inside the plan against the same NCCL call made bare.
struct CollectiveBench {
  std::string op;            ///< the op kind, e.g. "all_reduce"
  std::string group;         ///< "tp/2"
  std::vector<int> members;  ///< the group's ranks
  std::string nccl_call;     ///< "all_reduce", "reduce_scatter", "all_gather"
  std::int64_t nccl_count = 0;
  std::int64_t bytes = 0;    ///< the size nccl-tests reports (OpTiming::bytes)
  int occurrences = 0;       ///< ops of the plan (per rank) it stands for
  TimingSummary plan, bare;  ///< slowest rank; plan: over the occurrences' medians
  double plan_algbw = 0, plan_busbw = 0, bare_algbw = 0, bare_busbw = 0;  ///< GB/s
  int rotating_sets = 1;  ///< bare buffer sets cycled through
};

/// Times, bare, each distinct NCCL call the plan's collectives ran as (the
/// timings of `run`, a run of `plan`), `iters` calls each. Ops that ran as
/// several calls, grouped broadcasts or send/recv are listed in `skipped`.
Expected<std::vector<CollectiveBench>> benchPlanCollectives(const Plan& plan,
                                                            const GpuRunResult& run, int iters,
                                                            std::vector<std::string>* skipped);

/// The fused kernel against its unfused twin at one size.
struct FusedBench {
  int hidden = 0, tokens = 0, ranks = 0;
  std::int64_t bytes = 0;                       ///< one member's rows, fp32
  PeerProtocol protocol = PeerProtocol::kFlag;  ///< how the fused kernel sent them (kFlag or kLl)
  TimingSummary fused;                          ///< the one-shot kernel
  TimingSummary unfused;                        ///< ncclAllReduce + the add+norm kernel
  TimingSummary nccl;                           ///< ncclAllReduce alone
  /// The same three as CUPTI sees them: per call, the summed durations of its
  /// kernels (no launch gaps or event overhead; 0 when CUPTI cannot trace).
  TimingSummary fused_kernels, unfused_kernels, nccl_kernels;
  int rotating_sets = 1;
  std::string trace_error;  ///< why CUPTI could not trace, when it could not
  /// The two paths on the same random inputs, one call each: exact mode
  /// (integer grid) must be bit-identical; real mode (bf16) max difference.
  bool exact_identical = false;
  bool real_identical = false;
  double real_max_abs = 0;
  std::int64_t real_max_ulps = 0;  ///< in bf16 units (values are bf16)
};

/// Calls traced with CUPTI per variant and size (after the timed ones).
inline constexpr int kTracedCalls = 50;

/// Every visible GPU as one group: for each hidden size and token count, the
/// fused kernel (real mode) against ncclAllReduce + add+norm and against
/// ncclAllReduce alone, `iters` calls each timed with events and
/// kTracedCalls traced with CUPTI, plus the two correctness checks. The
/// fused kernel sends as `protocol` chooses for each size (fusedSendsLl).
/// Refused (invalid input) with fewer than two GPUs or without peer access.
Expected<std::vector<FusedBench>> benchFusedArAddNorm(const std::vector<int>& hidden,
                                                      const std::vector<int>& tokens, int iters,
                                                      PeerProtocol protocol = PeerProtocol::kAuto);

}  // namespace seam::backend
