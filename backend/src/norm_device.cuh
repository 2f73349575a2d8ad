// Private to backend/: the device arithmetic that several kernels share
// (kernels.cu, peer_kernels.cu), written once so that the fused
// all-reduce + add + norm kernel and the unfused add and norm kernels perform
// the same IEEE operations in the same order and agree bit for bit.
#pragma once

#include <cuda_runtime.h>

namespace seam::backend::kernels::device {

/// Threads of every row kernel: the norm's reduction tree depends on it.
constexpr int kRowThreads = 256;

/// numeric::roundBf16, bit for bit.
__device__ inline float roundToBf16(float v) {
  unsigned bits = __float_as_uint(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf / nan unchanged
  const unsigned lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  bits &= 0xffff0000u;
  return __uint_as_float(bits);
}

/// out[0, h) = norm(v[0, h)) by one block of kRowThreads threads
/// (numeric::normRow). Exact mode is elementwise; real mode reduces the sum
/// of squares in double over a fixed tree (deterministic run to run; the CPU
/// sums sequentially, which agrees whenever the double sum is exact, i.e. for
/// bf16 inputs of moderate dynamic range). `partial` is kRowThreads doubles of
/// shared memory. Every thread of the block must call it; `v` may equal
/// `out`, and every write to `v` by the block must precede the call behind a
/// __syncthreads(). Ends with the block synchronized (partial reusable).
__device__ inline void normRow(const float* v, float* out, int h, bool real, const float* weight, double* partial) {
  if (!real) {
    for (int k = threadIdx.x; k < h; k += kRowThreads) {
      const long long x = static_cast<long long>(v[k]);  // truncation, as static_cast on the CPU
      out[k] = static_cast<float>(((x % 5) + 5) % 5 - 2);
    }
    return;
  }
  double ss = 0;
  for (int k = threadIdx.x; k < h; k += kRowThreads) ss = __dadd_rn(ss, __dmul_rn(v[k], v[k]));
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      partial[threadIdx.x] = __dadd_rn(partial[threadIdx.x], partial[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  constexpr float kEps = 1e-5f;  // numeric::normRow's epsilon
  const float mean = __double2float_rn(__ddiv_rn(partial[0], static_cast<double>(h)));
  const float inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, kEps)));
  for (int k = threadIdx.x; k < h; k += kRowThreads) {
    const float w = weight ? weight[k] : 1.0f;
    out[k] = roundToBf16(__fmul_rn(__fmul_rn(v[k], inv), w));
  }
  __syncthreads();  // partial[0] is read above: the next row's writes wait
}

}  // namespace seam::backend::kernels::device
