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

/// The sum of every thread's `ss` over the block, by one fixed tree: thread t
/// adds t + stride for stride = kRowThreads/2 ... 1 (in shared memory down to
/// a warp, then by shuffles, which pair the same lanes). Every thread gets the
/// total. `partial` is kRowThreads doubles of shared memory; ends synchronized.
__device__ inline double blockSum(double ss, double* partial) {
  static_assert(kRowThreads % 64 == 0, "the tree halves to one warp");
  const int t = threadIdx.x;
  partial[t] = ss;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride >= 32; stride /= 2) {
    if (t < stride) partial[t] = __dadd_rn(partial[t], partial[t + stride]);
    __syncthreads();
  }
  if (t < 32) {
    double v = partial[t];
    for (int stride = 16; stride > 0; stride /= 2)
      v = __dadd_rn(v, __shfl_down_sync(0xffffffffu, v, stride));
    if (t == 0) partial[0] = v;
  }
  __syncthreads();
  const double total = partial[0];
  __syncthreads();  // partial is free for the next call
  return total;
}

constexpr float kNormEps = 1e-5f;  // numeric::normRow's epsilon

/// 1 / sqrt(mean of squares + eps) of a row whose squares sum to `total`.
__device__ inline float invRms(double total, int h) {
  const float mean = __double2float_rn(__ddiv_rn(total, static_cast<double>(h)));
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, kNormEps)));
}

/// The exact-mode norm surrogate of one value and its stage's weight
/// (numeric::normRow).
__device__ inline float exactNorm(float v, float w) {
  const long long x =
      static_cast<long long>(__fmul_rn(v, w));  // truncation, as static_cast on the CPU
  return static_cast<float>(((x % 5) + 5) % 5 - 2);
}

/// out[0, h) = norm(v[0, h)) by one block of kRowThreads threads
/// (numeric::normRow). Exact mode is elementwise; real mode reduces the sum
/// of squares in double, each thread over its elements t, t + kRowThreads, ...
/// in order, then blockSum's tree (deterministic run to run; the CPU sums
/// sequentially, which agrees whenever the double sum is exact, i.e. for bf16
/// inputs of moderate dynamic range). `partial` is kRowThreads doubles of
/// shared memory. Every thread of the block must call it; `v` may equal
/// `out`, and every write to `v` by the block must precede the call behind a
/// __syncthreads(). The general path, for any width; RowRegs is the fast one.
__device__ inline void normRow(const float* v, float* out, int h, bool real, const float* weight,
                               double* partial) {
  if (!real) {
    for (int k = threadIdx.x; k < h; k += kRowThreads)
      out[k] = exactNorm(v[k], weight ? weight[k] : 1.0f);
    return;
  }
  double ss = 0;
  for (int k = threadIdx.x; k < h; k += kRowThreads) ss = __dadd_rn(ss, __dmul_rn(v[k], v[k]));
  const float inv = invRms(blockSum(ss, partial), h);
  for (int k = threadIdx.x; k < h; k += kRowThreads) {
    const float w = weight ? weight[k] : 1.0f;
    out[k] = roundToBf16(__fmul_rn(__fmul_rn(v[k], inv), w));
  }
}

/// A row of at most kRowThreads * RowRegs::kPerThread values held in
/// registers, this thread's elements k = threadIdx.x + i * kRowThreads. Rows
/// that fit go through it: every load of a pass is issued before the first is
/// used (a row kernel on a few rows is otherwise a chain of memory round
/// trips), and the norm reads no memory but its weights. The arithmetic and its
/// order are normRow's.
struct RowRegs {
  static constexpr int kPerThread = 16;
  static constexpr int kMaxWidth = kPerThread * kRowThreads;
  float v[kPerThread];

  __device__ static bool fits(int h) { return h <= kMaxWidth; }
  __device__ static int at(int i) { return static_cast<int>(threadIdx.x) + i * kRowThreads; }

  /// v = row[0, h).
  __device__ void load(const float* row, int h) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) v[i] = at(i) < h ? row[at(i)] : 0.0f;
  }
  /// v = row[0, h), read through L2 only (__ldcg): rows another GPU wrote.
  __device__ void loadL2(const float* row, int h) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) v[i] = at(i) < h ? __ldcg(row + at(i)) : 0.0f;
  }
  /// row[0, h) = v.
  __device__ void store(float* row, int h) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      if (at(i) < h) row[at(i)] = v[i];
    }
  }
  /// out[0, h) = norm(v), as normRow computes it. Every thread must call it.
  __device__ void norm(float* out, int h, bool real, const float* weight, double* partial) const {
    if (!real) {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        if (at(i) < h) out[at(i)] = exactNorm(v[i], weight ? weight[at(i)] : 1.0f);
      }
      return;
    }
    double ss = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      if (at(i) < h) ss = __dadd_rn(ss, __dmul_rn(v[i], v[i]));
    }
    const float inv = invRms(blockSum(ss, partial), h);
    float w[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) w[i] = weight && at(i) < h ? weight[at(i)] : 1.0f;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      if (at(i) < h) out[at(i)] = roundToBf16(__fmul_rn(__fmul_rn(v[i], inv), w[i]));
    }
  }
};

}  // namespace seam::backend::kernels::device
