// The fused one-shot all-reduce + residual add + RMSNorm (peer_kernels.h).
// Pushes rather than pulls: NVLink stores are posted, loads wait a round trip,
// so each member writes its rows into its peers' memory and then reads only
// local memory. The add and the norm are the unfused kernels' arithmetic
// (norm_device.cuh), so exact mode is bit-identical to NCCL + add + norm, and
// real mode is too whenever NCCL adds the members in the same order (always
// for two members: fp32 addition commutes).
#include "peer_kernels.h"

#include <algorithm>

#include "norm_device.cuh"

namespace seam::backend::kernels {

namespace {

using device::kRowThreads;
using device::roundToBf16;

__device__ inline void storeRelease(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ inline unsigned loadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/// Slot `p`'s copy of a row: this member's own rows are read where they are.
__device__ inline const float* slotRow(const FusedArAddNormArgs& a, std::size_t half, int p, std::size_t off) {
  if (p == a.me) return a.x + off;
  return a.workspace[a.me] + (half * a.ranks + p) * a.slot_elems + off;
}

/// The sum of one element over the members, the residual add, rounded as the
/// unfused ops round (NCCL's sum rounded once, then the add kernel's rounding).
__device__ inline float addResidual(const FusedArAddNormArgs& a, float sum, float residual) {
  if (a.real) sum = roundToBf16(sum);
  if (!a.has_residual) return sum;
  const float r = __fadd_rn(residual, sum);
  return a.real ? roundToBf16(r) : r;
}

__global__ void __launch_bounds__(kRowThreads) fusedArAddNormKernel(const __grid_constant__ FusedArAddNormArgs a) {
  __shared__ double partial[kRowThreads];
  const int b = blockIdx.x;
  const int t = threadIdx.x;
  PeerSignals* mine = a.signals[a.me];
  // The previous call finished before this one started (stream order), so
  // its count is settled; every block reads the same value.
  const unsigned epoch = *static_cast<volatile unsigned*>(&mine->calls) + 1;
  const std::size_t half = epoch & 1u;
  const int h = a.h;
  const bool vec = h % 4 == 0;  // rows start 16-byte aligned: float4 moves

  // 1. Push this member's rows into its slot of every peer's workspace half.
  for (int row = b; row < a.rows; row += gridDim.x) {
    const std::size_t off = static_cast<std::size_t>(row) * h;
    const float* src = a.x + off;
    for (int p = 0; p < a.ranks; ++p) {
      if (p == a.me) continue;
      float* dst = a.workspace[p] + (half * a.ranks + a.me) * a.slot_elems + off;
      if (vec) {
        const float4* s4 = reinterpret_cast<const float4*>(src);
        float4* d4 = reinterpret_cast<float4*>(dst);
        for (int k = t; k < h / 4; k += kRowThreads) d4[k] = s4[k];
      } else {
        for (int k = t; k < h; k += kRowThreads) dst[k] = src[k];
      }
    }
  }

  // 2. Exchange flags with block b of every peer: thread p signals and waits
  // for member p. The barrier before the release orders the whole block's
  // pushes before it; the barrier after the acquire orders every thread's
  // reads after it.
  __syncthreads();
  if (t < a.ranks && t != a.me) {
    storeRelease(&a.signals[t]->flags[b][a.me], epoch);
    const unsigned* flag = &mine->flags[b][t];
    unsigned spins = 0;
    // Wrap-safe "flag < epoch"; a peer is at most one call ahead.
    while (static_cast<int>(loadAcquire(flag) - epoch) < 0) {
      if ((++spins & 1023u) == 0 && a.abort && *static_cast<const volatile int*>(a.abort)) break;
    }
  }
  __syncthreads();

  // 3. Sum in member order, add the residual, norm. Peers' rows are read
  // through L2 (__ldcg): they were written by another GPU.
  for (int row = b; row < a.rows; row += gridDim.x) {
    const std::size_t off = static_cast<std::size_t>(row) * h;
    float* rr = a.residual + off;
    if (vec) {
      float4* r4 = reinterpret_cast<float4*>(rr);
      for (int k = t; k < h / 4; k += kRowThreads) {
        float4 s = a.me == 0 ? reinterpret_cast<const float4*>(slotRow(a, half, 0, off))[k]
                             : __ldcg(reinterpret_cast<const float4*>(slotRow(a, half, 0, off)) + k);
        for (int p = 1; p < a.ranks; ++p) {
          const float4* src = reinterpret_cast<const float4*>(slotRow(a, half, p, off)) + k;
          const float4 v = p == a.me ? *src : __ldcg(src);
          s.x = __fadd_rn(s.x, v.x);
          s.y = __fadd_rn(s.y, v.y);
          s.z = __fadd_rn(s.z, v.z);
          s.w = __fadd_rn(s.w, v.w);
        }
        const float4 old = a.has_residual ? r4[k] : make_float4(0, 0, 0, 0);
        r4[k] = make_float4(addResidual(a, s.x, old.x), addResidual(a, s.y, old.y), addResidual(a, s.z, old.z),
                            addResidual(a, s.w, old.w));
      }
    } else {
      for (int k = t; k < h; k += kRowThreads) {
        float s = a.me == 0 ? slotRow(a, half, 0, off)[k] : __ldcg(slotRow(a, half, 0, off) + k);
        for (int p = 1; p < a.ranks; ++p) {
          const float* src = slotRow(a, half, p, off) + k;
          s = __fadd_rn(s, p == a.me ? *src : __ldcg(src));
        }
        rr[k] = addResidual(a, s, a.has_residual ? rr[k] : 0.0f);
      }
    }
    __syncthreads();
    device::normRow(rr, a.out + off, h, a.real, a.weight, partial);
  }

  // 4. The last block to finish advances the call count for the next call.
  __syncthreads();
  if (t == 0) {
    __threadfence();
    if (atomicAdd(&mine->finished, 1u) == gridDim.x - 1) {
      mine->finished = 0;
      mine->calls = epoch;
    }
  }
}

}  // namespace

cudaError_t fusedArAddNorm(const FusedArAddNormArgs& args, cudaStream_t stream) {
  if (args.ranks < 1 || args.ranks > kPeerMaxRanks || args.blocks < 1 || args.blocks > kPeerMaxBlocks ||
      args.me < 0 || args.me >= args.ranks) {
    return cudaErrorInvalidValue;
  }
  const int grid = std::max(1, std::min(args.rows, args.blocks));  // the same on every member: equal rows
  fusedArAddNormKernel<<<grid, kRowThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace seam::backend::kernels
