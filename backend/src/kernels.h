// Private to backend/: launchers of the executor's CUDA kernels (kernels.cu).
// Each kernel is the device twin of one numeric.h / numeric_domain.h step and
// performs the same IEEE operations in the same order per element, so that
// the GPU and the CPU executor agree bit for bit wherever the summation
// order is the same. Launchers enqueue on `stream` and return the launch
// error (cudaSuccess when enqueued).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace seam::backend::kernels {

/// p[i] = roundBf16(p[i]) (numeric::roundBf16: round to nearest even).
cudaError_t roundBf16(float* p, std::size_t n, cudaStream_t stream);

/// dst[i] = dst[i] + src[i], then roundBf16 when `round` (NumericDomain::add).
cudaError_t add(float* dst, const float* src, std::size_t n, bool round, cudaStream_t stream);

/// out = norm(in) row by row (numeric::normRow): exact mode maps each element
/// to ((v mod 5) + 5) mod 5 - 2; real mode RMSNorm with `weight` (h floats),
/// rounded to bf16. `in` may equal `out`.
cudaError_t normRows(const float* in, float* out, int rows, int h, bool real, const float* weight,
                     cudaStream_t stream);

/// Per row: r = residual + roundIfReal(x) rounded when real (r = roundIfReal(x)
/// when !has_residual), stored into `residual`, then out = norm(r) as normRows
/// computes it: the add and norm kernels' operations in one launch (the
/// residual add + RMSNorm after an all-reduce). `x` may equal `out`.
cudaError_t addNormRows(const float* x, float* residual, float* out, int rows, int h,
                        bool has_residual, bool real, const float* weight, cudaStream_t stream);

/// p[i] = relu(p[i]) as std::max(p, 0.0f) computes it, then roundBf16 when `round`.
cudaError_t relu(float* p, std::size_t n, bool round, cudaStream_t stream);

/// Per row of `scores` (rows x experts): numeric::topKGates, written as
/// dense gates (rows x experts): the chosen experts' gates, -1 elsewhere.
cudaError_t topKGates(const float* scores, int rows, int experts, int k, bool real, float* gates,
                      cudaStream_t stream);

/// acc[r][c] = acc[r][c] + gates[r][expert] * y[r][c] (one rounded multiply,
/// one rounded add, as numeric::moeShard) on the rows whose gate for
/// `expert` is not -1 (the rows routed to it); acc and y are rows x h.
cudaError_t gatedAccumulate(float* acc, const float* y, const float* gates, int experts, int expert,
                            int rows, int h, cudaStream_t stream);

/// out[e] = (((0 + seg_0[e]) + seg_1[e]) + ...) over `segments` consecutive
/// segments of `segment_elems` floats in `staging`, rounding after every add
/// when `round` (the all-to-all combine, in member order).
cudaError_t sumSegments(const float* staging, int segments, std::size_t segment_elems, float* out,
                        bool round, cudaStream_t stream);

/// p[0, n) = value (a DP gather's pad rows: numeric::kPaddingValue).
cudaError_t fill(float* p, std::size_t n, float value, cudaStream_t stream);

/// Holds the stream until *flag (pinned host memory) >= target: the gate that
/// lets the host enqueue a window of ops before the device runs any of them.
cudaError_t waitFlag(const int* flag, int target, cudaStream_t stream);

/// Keeps `blocks` blocks of the device busy for `microseconds`: run before a
/// timed batch so that the clocks have left their idle state (an idle H200
/// sits far below its boost clock, and a batch of short calls ends before
/// the clocks rise).
cudaError_t busy(double microseconds, int blocks, cudaStream_t stream);
/// Blocks kernels::busy is given: one per SM of an H200.
constexpr int kBusyBlocks = 132;

/// *state = FNV-1a 64 of the bytes of values[0, n), continuing from *state
/// (one thread: FNV is a sequential fold).
cudaError_t fnv1a(const float* values, std::size_t n, std::uint64_t* state, cudaStream_t stream);

}  // namespace seam::backend::kernels
