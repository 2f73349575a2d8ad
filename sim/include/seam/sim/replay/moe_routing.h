// The MoE router's top-k and gates, one definition for the CPU
// numeric model (numeric.cc) and the CUDA executor's top-k kernel
// (backend/src/kernels.cu): plain inline code, callable from host and device,
// that includes no CUDA header.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define SEAM_HOST_DEVICE __host__ __device__
#else
#define SEAM_HOST_DEVICE
#endif

namespace seam::numeric {

/// The most experts a token is routed to in the numeric model.
inline constexpr int kNumericTopK = 4;

/// Picks the `k` highest of `scores[0, experts)` (ties to the lower expert
/// index) into `chosen[0, k)` in rank order, and their gates into `gates`:
/// exact mode the small integers k - rank (sums stay exact in fp32 and a
/// swapped gate shows), real mode the softmax over the k chosen scores, in
/// fp32 (Qwen3-Next's softmax with norm_topk_prob; see numeric.h).
/// Requires k <= kNumericTopK and k <= experts.
SEAM_HOST_DEVICE inline void topKGates(const float* scores, int experts, int k, bool real,
                                       int* chosen, float* gates) {
  for (int r = 0; r < k; ++r) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int q = 0; q < r; ++q) taken = taken || chosen[q] == e;
      // Strictly greater: an equal score keeps the lower index found first.
      if (!taken && (best < 0 || scores[e] > scores[best])) best = e;
    }
    chosen[r] = best;
  }
  if (!real) {
    for (int r = 0; r < k; ++r) gates[r] = static_cast<float>(k - r);
    return;
  }
  // Softmax over the chosen scores, shifted by the largest (rank 0); the sum
  // in rank order.
  const float top = scores[chosen[0]];
  float sum = 0.0f;
  for (int r = 0; r < k; ++r) {
    gates[r] = expf(scores[chosen[r]] - top);
    sum = sum + gates[r];
  }
  for (int r = 0; r < k; ++r) gates[r] = gates[r] / sum;
}

}  // namespace seam::numeric
