// The executor's kernels (kernels.h). Arithmetic uses the explicitly rounded
// intrinsics (__fadd_rn, __fmul_rn, ...) so that nvcc cannot contract a
// multiply and an add into an FMA: each kernel performs, per element, the
// same IEEE operations as its CPU twin in numeric.cc / numeric_domain.h.
#include <algorithm>

#include "kernels.h"
#include "norm_device.cuh"
#include "seam/sim/replay/moe_routing.h"

namespace seam::backend::kernels {

namespace {

constexpr int kThreads = device::kRowThreads;
/// Grid-stride loops: enough blocks to fill an H200, no more.
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocksFor(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

using device::kRowThreads;
using device::roundToBf16;

__global__ void roundKernel(float* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = roundToBf16(p[i]);
  }
}

__global__ void topKGatesKernel(const float* scores, int rows, int experts, int k, bool real,
                                float* gates) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  int chosen[numeric::kNumericTopK];
  float g[numeric::kNumericTopK];
  numeric::topKGates(scores + static_cast<std::size_t>(row) * experts, experts, k, real, chosen, g);
  float* out = gates + static_cast<std::size_t>(row) * experts;
  for (int e = 0; e < experts; ++e) out[e] = -1.0f;
  for (int r = 0; r < k; ++r) out[chosen[r]] = g[r];
}

__global__ void gatedAccumulateKernel(float* acc, const float* y, const float* gates, int experts,
                                      int expert, std::size_t n, int h) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float g = gates[(i / h) * experts + expert];
    if (g != -1.0f) acc[i] = __fadd_rn(acc[i], __fmul_rn(g, y[i]));
  }
}

__global__ void addKernel(float* dst, const float* src, std::size_t n, bool round) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float s = __fadd_rn(dst[i], src[i]);
    dst[i] = round ? roundToBf16(s) : s;
  }
}

__global__ void reluKernel(float* p, std::size_t n, bool round) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = p[i];
    const float r = v < 0.0f ? 0.0f : v;  // std::max(v, 0.0f): keeps -0 and NaN as they are
    p[i] = round ? roundToBf16(r) : r;
  }
}

/// One block of kRowThreads per row (device::normRow).
__global__ void normKernel(const float* in, float* out, int h, bool real, const float* weight) {
  __shared__ double partial[kRowThreads];
  const std::size_t row = blockIdx.x;
  if (device::RowRegs::fits(h)) {
    device::RowRegs r;
    r.load(in + row * h, h);
    r.norm(out + row * h, h, real, weight, partial);
    return;
  }
  device::normRow(in + row * h, out + row * h, h, real, weight, partial);
}

/// One block per row: r = residual + x (x itself when there is no residual),
/// rounded as the add kernel rounds, stored as the new residual, then
/// out = norm(r). The same operations as an add followed by a norm.
__global__ void addNormKernel(const float* x, float* residual, float* out, int h, bool has_residual,
                              bool real, const float* weight) {
  __shared__ double partial[kRowThreads];
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * h;
  float* rr = residual + row * h;
  if (device::RowRegs::fits(h)) {
    device::RowRegs v, r;
    v.load(xr, h);
    if (has_residual) r.load(rr, h);
#pragma unroll
    for (int i = 0; i < device::RowRegs::kPerThread; ++i) {
      const float x_i = real ? roundToBf16(v.v[i]) : v.v[i];
      const float s = has_residual ? __fadd_rn(r.v[i], x_i) : x_i;
      v.v[i] = has_residual && real ? roundToBf16(s) : s;
    }
    v.store(rr, h);
    v.norm(out + row * h, h, real, weight, partial);
    return;
  }
  for (int k = threadIdx.x; k < h; k += kRowThreads) {
    const float v = real ? roundToBf16(xr[k]) : xr[k];
    if (has_residual) {
      const float s = __fadd_rn(rr[k], v);
      rr[k] = real ? roundToBf16(s) : s;
    } else {
      rr[k] = v;
    }
  }
  __syncthreads();
  device::normRow(rr, out + row * h, h, real, weight, partial);
}

__global__ void sumSegmentsKernel(const float* staging, int segments, std::size_t segment_elems,
                                  float* out, bool round) {
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       e < segment_elems; e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < segments; ++s) {
      acc = __fadd_rn(acc, staging[s * segment_elems + e]);
      if (round) acc = roundToBf16(acc);
    }
    out[e] = acc;
  }
}

__global__ void fillKernel(float* p, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = value;
  }
}

__global__ void waitFlagKernel(const int* flag, int target) {
  // volatile: every read goes to the host's memory, where the release lands.
  while (*static_cast<const volatile int*>(flag) < target) __nanosleep(1000);
}

__global__ void busyKernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

__global__ void fnv1aKernel(const float* values, std::size_t n, std::uint64_t* state) {
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t h = *state;
  const unsigned* words = reinterpret_cast<const unsigned*>(values);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned w = words[i];
    for (int b = 0; b < 4; ++b) {  // little-endian byte order, as the host reads the floats
      h ^= w & 0xffu;
      h *= kPrime;
      w >>= 8;
    }
  }
  *state = h;
}

}  // namespace

cudaError_t roundBf16(float* p, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  roundKernel<<<blocksFor(n), kThreads, 0, stream>>>(p, n);
  return cudaGetLastError();
}

cudaError_t topKGates(const float* scores, int rows, int experts, int k, bool real, float* gates,
                      cudaStream_t stream) {
  if (rows == 0 || experts == 0) return cudaSuccess;
  if (k < 1 || k > numeric::kNumericTopK || k > experts) return cudaErrorInvalidValue;
  topKGatesKernel<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(scores, rows, experts,
                                                                             k, real, gates);
  return cudaGetLastError();
}

cudaError_t gatedAccumulate(float* acc, const float* y, const float* gates, int experts, int expert,
                            int rows, int h, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(rows) * h;
  if (n == 0) return cudaSuccess;
  gatedAccumulateKernel<<<blocksFor(n), kThreads, 0, stream>>>(acc, y, gates, experts, expert, n,
                                                               h);
  return cudaGetLastError();
}

cudaError_t add(float* dst, const float* src, std::size_t n, bool round, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  addKernel<<<blocksFor(n), kThreads, 0, stream>>>(dst, src, n, round);
  return cudaGetLastError();
}

cudaError_t normRows(const float* in, float* out, int rows, int h, bool real, const float* weight,
                     cudaStream_t stream) {
  if (rows == 0 || h == 0) return cudaSuccess;
  normKernel<<<rows, kThreads, 0, stream>>>(in, out, h, real, weight);
  return cudaGetLastError();
}

cudaError_t addNormRows(const float* x, float* residual, float* out, int rows, int h,
                        bool has_residual, bool real, const float* weight, cudaStream_t stream) {
  if (rows == 0 || h == 0) return cudaSuccess;
  addNormKernel<<<rows, kThreads, 0, stream>>>(x, residual, out, h, has_residual, real, weight);
  return cudaGetLastError();
}

cudaError_t relu(float* p, std::size_t n, bool round, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  reluKernel<<<blocksFor(n), kThreads, 0, stream>>>(p, n, round);
  return cudaGetLastError();
}

cudaError_t sumSegments(const float* staging, int segments, std::size_t segment_elems, float* out,
                        bool round, cudaStream_t stream) {
  if (segment_elems == 0) return cudaSuccess;
  sumSegmentsKernel<<<blocksFor(segment_elems), kThreads, 0, stream>>>(staging, segments,
                                                                       segment_elems, out, round);
  return cudaGetLastError();
}

cudaError_t fill(float* p, std::size_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fillKernel<<<blocksFor(n), kThreads, 0, stream>>>(p, n, value);
  return cudaGetLastError();
}

cudaError_t waitFlag(const int* flag, int target, cudaStream_t stream) {
  waitFlagKernel<<<1, 1, 0, stream>>>(flag, target);
  return cudaGetLastError();
}

cudaError_t busy(double microseconds, int blocks, cudaStream_t stream) {
  busyKernel<<<blocks, 128, 0, stream>>>(static_cast<unsigned long long>(microseconds * 1e3));
  return cudaGetLastError();
}

cudaError_t fnv1a(const float* values, std::size_t n, std::uint64_t* state, cudaStream_t stream) {
  fnv1aKernel<<<1, 1, 0, stream>>>(values, n, state);
  return cudaGetLastError();
}

}  // namespace seam::backend::kernels
