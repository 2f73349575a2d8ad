// The fused one-shot all-reduce + residual add + RMSNorm (peer_kernels.h).
// Pushes rather than pulls: NVLink stores are posted, loads wait a round trip,
// so each member writes its rows into its peers' memory and then reads only
// local memory. The add and the norm are the unfused kernels' arithmetic
// (norm_device.cuh), so exact mode is bit-identical to NCCL + add + norm, and
// real mode is too whenever NCCL adds the members in the same order (always
// for two members: fp32 addition commutes).
#include <algorithm>

#include "norm_device.cuh"
#include "peer_kernels.h"

namespace seam::backend::kernels {

namespace {

using device::kRowThreads;
using device::roundToBf16;
using device::RowRegs;

__device__ inline void storeRelease(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ inline unsigned loadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// ---- the LL protocol ----------------------------------------------------------------
// A line is {value0, call, value1, call}: each 8-byte half lands whole, so a
// half that carries this call's number carries this call's value.

/// Lines of one slot of the LL region.
constexpr std::size_t kLlSlotLines = kPeerLlMaxElems / 2;
/// Lines per line set of a thread: two of its RowRegs values per line.
constexpr int kLlLinesPerThread = RowRegs::kPerThread / 2;

/// Lines of one row: line m * kRowThreads + t carries thread t's RowRegs
/// values 2m and 2m + 1 (so a reader thread waits only for its own values),
/// as many line sets as a row of width h needs.
__host__ __device__ inline std::size_t llRowLines(int h) {
  return static_cast<std::size_t>(kRowThreads) * ((h + 2 * kRowThreads - 1) / (2 * kRowThreads));
}

/// Floats before the LL region: the plain slots, rounded up to 16 bytes.
__host__ __device__ inline std::size_t llOffset(int ranks, std::size_t slot_elems) {
  return (2 * static_cast<std::size_t>(ranks) * slot_elems + 3) / 4 * 4;
}

/// Member `owner`'s LL line `line` of sender `sender`'s slot in `half`.
__device__ inline uint4* llLine(const FusedArAddNormArgs& a, int owner, std::size_t half,
                                int sender, std::size_t line) {
  uint4* region = reinterpret_cast<uint4*>(a.workspace[owner] + llOffset(a.ranks, a.slot_elems));
  return region + (half * a.ranks + sender) * kLlSlotLines + line;
}

__device__ inline void storeLine(uint4* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ inline uint4 loadLine(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

/// This thread's RowRegs values of one row of `sender`'s slot (lines from
/// `first`), once every line carries `epoch`: all lines are loaded before
/// the first is checked, then only late ones are read again. (Aborted: the
/// values are meaningless and the run is reported hung.)
__device__ inline void awaitRow(const FusedArAddNormArgs& a, std::size_t half, int sender,
                                std::size_t first, unsigned epoch, RowRegs& out) {
  const uint4* base = llLine(a, a.me, half, sender, first) + threadIdx.x;
  uint4 line[kLlLinesPerThread];
#pragma unroll
  for (int m = 0; m < kLlLinesPerThread; ++m) {
    if (RowRegs::at(2 * m) < a.h) line[m] = loadLine(base + m * kRowThreads);
  }
#pragma unroll
  for (int m = 0; m < kLlLinesPerThread; ++m) {
    if (RowRegs::at(2 * m) >= a.h) {
      out.v[2 * m] = out.v[2 * m + 1] = 0.0f;
      continue;
    }
    unsigned spins = 0;
    while (line[m].y != epoch || line[m].w != epoch) {
      if ((++spins & 1023u) == 0 && a.abort && *static_cast<const volatile int*>(a.abort)) break;
      line[m] = loadLine(base + m * kRowThreads);
    }
    out.v[2 * m] = __uint_as_float(line[m].x);
    out.v[2 * m + 1] = __uint_as_float(line[m].z);
  }
}

/// Slot `p`'s copy of a row: this member's own rows are read where they are.
__device__ inline const float* slotRow(const FusedArAddNormArgs& a, std::size_t half, int p,
                                       std::size_t off) {
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

/// This call's number: the previous call finished before this one started
/// (stream order), so its count is settled; every block reads the same value.
__device__ inline unsigned callNumber(PeerSignals* mine) {
  return *static_cast<volatile unsigned*>(&mine->calls) + 1;
}

/// The last block of a call to finish advances the call count for the next.
/// Every thread of the block calls it.
__device__ inline void finishCall(PeerSignals* mine, unsigned epoch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&mine->finished, 1u) == gridDim.x - 1) {
      mine->finished = 0;
      mine->calls = epoch;
    }
  }
}

/// The member-order sum of one row in registers: add the residual, store it,
/// norm into `out` (the register path of both protocols).
__device__ inline void finishRow(const FusedArAddNormArgs& a, RowRegs& sum, float* residual,
                                 float* out, double* partial) {
  RowRegs old;
  if (a.has_residual) old.load(residual, a.h);
#pragma unroll
  for (int i = 0; i < RowRegs::kPerThread; ++i)
    sum.v[i] = addResidual(a, sum.v[i], a.has_residual ? old.v[i] : 0.0f);
  sum.store(residual, a.h);
  sum.norm(out, a.h, a.real, a.weight, partial);
}

__global__ void __launch_bounds__(kRowThreads, kPeerBlocksPerSm)
    fusedArAddNormKernel(const __grid_constant__ FusedArAddNormArgs a) {
  __shared__ double partial[kRowThreads];
  const int b = blockIdx.x;
  const int t = threadIdx.x;
  PeerSignals* mine = a.signals[a.me];
  const unsigned epoch = callNumber(mine);
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
    if (RowRegs::fits(h)) {
      // (Two named rows, no reference choosing between them: that would put
      // both in local memory.)
      RowRegs sum, v;
      if (a.me == 0) {
        sum.load(slotRow(a, half, 0, off), h);
      } else {
        sum.loadL2(slotRow(a, half, 0, off), h);
      }
      for (int p = 1; p < a.ranks; ++p) {
        if (p == a.me) {
          v.load(slotRow(a, half, p, off), h);
        } else {
          v.loadL2(slotRow(a, half, p, off), h);
        }
#pragma unroll
        for (int i = 0; i < RowRegs::kPerThread; ++i) sum.v[i] = __fadd_rn(sum.v[i], v.v[i]);
      }
      finishRow(a, sum, rr, a.out + off, partial);
      continue;
    }
    if (vec) {
      float4* r4 = reinterpret_cast<float4*>(rr);
      for (int k = t; k < h / 4; k += kRowThreads) {
        float4 s = a.me == 0
                       ? reinterpret_cast<const float4*>(slotRow(a, half, 0, off))[k]
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
        r4[k] = make_float4(addResidual(a, s.x, old.x), addResidual(a, s.y, old.y),
                            addResidual(a, s.z, old.z), addResidual(a, s.w, old.w));
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
  finishCall(mine, epoch);
}

/// The LL variant (rows of at most RowRegs::kMaxWidth): no flags, no barrier
/// between pushing and summing; each thread waits for its own lines. Same
/// arithmetic, same member order as the flag kernel.
__global__ void __launch_bounds__(kRowThreads, kPeerBlocksPerSm)
    fusedArAddNormLlKernel(const __grid_constant__ FusedArAddNormArgs a) {
  __shared__ double partial[kRowThreads];
  const std::size_t row_lines = llRowLines(a.h);
  PeerSignals* mine = a.signals[a.me];
  const unsigned epoch = callNumber(mine);
  const std::size_t half = epoch & 1u;
  const int first_row = blockIdx.x;

  // 1. Push: this thread's values of every row of this block, with the call number.
  for (int row = first_row; row < a.rows; row += gridDim.x) {
    RowRegs x;
    x.load(a.x + static_cast<std::size_t>(row) * a.h, a.h);
    for (int p = 0; p < a.ranks; ++p) {
      if (p == a.me) continue;
      uint4* base = llLine(a, p, half, a.me, row * row_lines) + threadIdx.x;
#pragma unroll
      for (int m = 0; m < kLlLinesPerThread; ++m) {
        if (RowRegs::at(2 * m) < a.h) {
          storeLine(base + m * kRowThreads, make_uint4(__float_as_uint(x.v[2 * m]), epoch,
                                                       __float_as_uint(x.v[2 * m + 1]), epoch));
        }
      }
    }
  }

  // 2. Sum in member order as the lines arrive, add the residual, norm.
  for (int row = first_row; row < a.rows; row += gridDim.x) {
    const std::size_t off = static_cast<std::size_t>(row) * a.h;
    RowRegs sum, v;
    if (a.me == 0) {
      sum.load(a.x + off, a.h);
    } else {
      awaitRow(a, half, 0, row * row_lines, epoch, sum);
    }
    for (int p = 1; p < a.ranks; ++p) {
      if (p == a.me) {
        v.load(a.x + off, a.h);
      } else {
        awaitRow(a, half, p, row * row_lines, epoch, v);
      }
#pragma unroll
      for (int i = 0; i < RowRegs::kPerThread; ++i) sum.v[i] = __fadd_rn(sum.v[i], v.v[i]);
    }
    finishRow(a, sum, a.residual + off, a.out + off, partial);
  }

  // 3. As the flag kernel: the last block to finish advances the call count.
  finishCall(mine, epoch);
}

}  // namespace

std::size_t peerWorkspaceFloats(int ranks, std::size_t slot_elems) {
  return llOffset(ranks, slot_elems) + 2 * static_cast<std::size_t>(ranks) * kLlSlotLines * 4;
}

bool llFits(int rows, int h) {
  return rows >= 0 && h > 0 && h <= RowRegs::kMaxWidth &&
         static_cast<std::size_t>(rows) * llRowLines(h) <= kLlSlotLines;
}

cudaError_t fusedArAddNorm(const FusedArAddNormArgs& args, cudaStream_t stream) {
  if (args.ranks < 1 || args.ranks > kPeerMaxRanks || args.blocks < 1 ||
      args.blocks > kPeerMaxBlocks || args.me < 0 || args.me >= args.ranks ||
      (args.ll && !llFits(args.rows, args.h))) {
    return cudaErrorInvalidValue;
  }
  const int grid =
      std::max(1, std::min(args.rows, args.blocks));  // the same on every member: equal rows
  if (args.ll) {
    fusedArAddNormLlKernel<<<grid, kRowThreads, 0, stream>>>(args);
  } else {
    fusedArAddNormKernel<<<grid, kRowThreads, 0, stream>>>(args);
  }
  return cudaGetLastError();
}

}  // namespace seam::backend::kernels
