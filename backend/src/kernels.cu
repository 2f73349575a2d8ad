// The executor's kernels (kernels.h). Arithmetic uses the explicitly rounded
// intrinsics (__fadd_rn, __fmul_rn, ...) so that nvcc cannot contract a
// multiply and an add into an FMA: each kernel performs, per element, the
// same IEEE operations as its CPU twin in numeric.cc / numeric_domain.h.
#include "kernels.h"

#include <algorithm>

namespace seam::backend::kernels {

namespace {

constexpr int kThreads = 256;
/// Grid-stride loops: enough blocks to fill an H200, no more.
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocksFor(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

/// numeric::roundBf16, bit for bit.
__device__ inline float roundToBf16(float v) {
  unsigned bits = __float_as_uint(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf / nan unchanged
  const unsigned lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  bits &= 0xffff0000u;
  return __uint_as_float(bits);
}

__global__ void roundKernel(float* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = roundToBf16(p[i]);
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

/// One block per row. Exact mode is elementwise; real mode reduces the sum
/// of squares in double over a fixed tree (deterministic run to run; the CPU
/// sums sequentially, which agrees whenever the double sum is exact, i.e. for
/// bf16 inputs of moderate dynamic range).
__global__ void normKernel(const float* in, float* out, int h, bool real, const float* weight) {
  const std::size_t row = blockIdx.x;
  const float* v = in + row * h;
  float* o = out + row * h;
  if (!real) {
    for (int k = threadIdx.x; k < h; k += blockDim.x) {
      const long long x = static_cast<long long>(v[k]);  // truncation, as static_cast on the CPU
      o[k] = static_cast<float>(((x % 5) + 5) % 5 - 2);
    }
    return;
  }
  __shared__ double partial[kThreads];
  double ss = 0;
  for (int k = threadIdx.x; k < h; k += blockDim.x) ss = __dadd_rn(ss, __dmul_rn(v[k], v[k]));
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] = __dadd_rn(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  constexpr float kEps = 1e-5f;  // numeric::normRow's epsilon
  const float mean = __double2float_rn(__ddiv_rn(partial[0], static_cast<double>(h)));
  const float inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, kEps)));
  for (int k = threadIdx.x; k < h; k += blockDim.x) {
    const float w = weight ? weight[k] : 1.0f;
    o[k] = roundToBf16(__fmul_rn(__fmul_rn(v[k], inv), w));
  }
}

__global__ void sumSegmentsKernel(const float* staging, int segments, std::size_t segment_elems, float* out,
                                  bool round) {
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < segment_elems;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < segments; ++s) {
      acc = __fadd_rn(acc, staging[s * segment_elems + e]);
      if (round) acc = roundToBf16(acc);
    }
    out[e] = acc;
  }
}

__global__ void fillRowsKernel(float* buf, const int* row_index, int count, int h, float value) {
  const std::size_t n = static_cast<std::size_t>(count) * h;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    buf[static_cast<std::size_t>(row_index[i / h]) * h + i % h] = value;
  }
}

__global__ void waitFlagKernel(const int* flag, int target) {
  // volatile: every read goes to the host's memory, where the release lands.
  while (*static_cast<const volatile int*>(flag) < target) __nanosleep(1000);
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

cudaError_t relu(float* p, std::size_t n, bool round, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  reluKernel<<<blocksFor(n), kThreads, 0, stream>>>(p, n, round);
  return cudaGetLastError();
}

cudaError_t sumSegments(const float* staging, int segments, std::size_t segment_elems, float* out, bool round,
                        cudaStream_t stream) {
  if (segment_elems == 0) return cudaSuccess;
  sumSegmentsKernel<<<blocksFor(segment_elems), kThreads, 0, stream>>>(staging, segments, segment_elems, out, round);
  return cudaGetLastError();
}

cudaError_t fillRows(float* buf, const int* row_index, int count, int h, float value, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(count) * h;
  if (n == 0) return cudaSuccess;
  fillRowsKernel<<<blocksFor(n), kThreads, 0, stream>>>(buf, row_index, count, h, value);
  return cudaGetLastError();
}

cudaError_t waitFlag(const int* flag, int target, cudaStream_t stream) {
  waitFlagKernel<<<1, 1, 0, stream>>>(flag, target);
  return cudaGetLastError();
}

cudaError_t fnv1a(const float* values, std::size_t n, std::uint64_t* state, cudaStream_t stream) {
  fnv1aKernel<<<1, 1, 0, stream>>>(values, n, state);
  return cudaGetLastError();
}

}  // namespace seam::backend::kernels
