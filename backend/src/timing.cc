// Bandwidth and percentiles of the per-op timings (executor.h). The bus
// bandwidth factors are nccl-tests' (doc/PERFORMANCE.md there): they make a
// collective's number comparable with the hardware's peak link bandwidth
// whatever the group size.
#include <algorithm>
#include <cassert>
#include <cmath>

#include "seam/backend/executor.h"

namespace seam::backend {

double algBandwidthGBs(std::int64_t bytes, double us) {
  if (us <= 0) return 0;
  return static_cast<double>(bytes) / (us * 1e3);  // bytes / (us * 1e-6 s) / 1e9
}

double busBandwidthFactor(OpKind kind, int group_size) {
  if (group_size <= 1) return 0;
  const double n = group_size;
  switch (kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
    // The DP gathers and reduce-scatter are counted as an all-reduce of the
    // full rows (what SUM_LEN's lowering runs, rank_dp.cc).
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
    case OpKind::kDpReduceScatter:
      return 2 * (n - 1) / n;
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
    case OpKind::kAllToAll:
      return (n - 1) / n;
    case OpKind::kSend:
    case OpKind::kRecv:
      return 1;
    default:
      return 0;
  }
}

TimingSummary summarizeTimes(std::vector<double> samples) {
  assert(!samples.empty() && "summarizeTimes of no samples");
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (samples[hi] - samples[lo]) * (pos - static_cast<double>(lo));
  };
  return {.median = at(0.5), .p10 = at(0.1), .p90 = at(0.9)};
}

}  // namespace seam::backend
