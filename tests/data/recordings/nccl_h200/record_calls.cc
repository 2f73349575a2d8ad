// Issues one of each NCCL collective seam's plans use, on one GPU (a
// communicator of one rank, and two more split from it), so that NCCL's own
// INFO log (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL) records the line
// format of each call on real hardware. Built here, run on the lent H200:
//   g++ -O1 -I/usr/local/cuda/include record_calls.cc -o record_calls \
//       -L/usr/local/cuda/lib -L/usr/local/cuda/lib64 -lnccl -lcudart
// The sizes follow a seam case: hidden 4096, 5 tokens, bf16 rows.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                    \
  do {                                                                   \
    cudaError_t e = (x);                                                 \
    if (e != cudaSuccess) {                                              \
      std::fprintf(stderr, "cuda: %s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)
#define CHECK_NCCL(x)                                                    \
  do {                                                                   \
    ncclResult_t r = (x);                                                \
    if (r != ncclSuccess) {                                              \
      std::fprintf(stderr, "nccl: %s: %s\n", #x, ncclGetErrorString(r)); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

int main() {
  const size_t hidden = 4096, tokens = 5, rows = hidden * tokens;
  int dev = 0;
  CHECK_CUDA(cudaSetDevice(dev));
  ncclComm_t world;
  CHECK_NCCL(ncclCommInitAll(&world, 1, &dev));
  // Sub-communicators as an engine makes them for its axes (tp, ep).
  ncclComm_t tp, ep;
  CHECK_NCCL(ncclCommSplit(world, 0, 0, &tp, nullptr));
  CHECK_NCCL(ncclCommSplit(world, 1, 0, &ep, nullptr));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, rows * 4));
  CHECK_CUDA(cudaMalloc(&b, rows * 4));
  CHECK_CUDA(cudaMemset(a, 0, rows * 4));
  // A decoder layer's boundary calls, in bf16 and one in fp32.
  CHECK_NCCL(ncclAllReduce(a, b, rows, ncclBfloat16, ncclSum, tp, s));
  CHECK_NCCL(ncclAllReduce(a, b, rows, ncclFloat32, ncclSum, tp, s));
  CHECK_NCCL(ncclReduceScatter(a, b, rows, ncclBfloat16, ncclSum, tp, s));
  CHECK_NCCL(ncclAllGather(a, b, rows, ncclBfloat16, tp, s));
  CHECK_NCCL(ncclAlltoAll(a, b, rows, ncclBfloat16, ep, s));
  CHECK_NCCL(ncclBroadcast(a, b, rows, ncclBfloat16, 0, world, s));
  CHECK_NCCL(ncclAllReduce(a, b, 1, ncclInt64, ncclMax, world, s));
  // An uneven exchange as grouped send/recv (to itself at one rank).
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(a, 3 * hidden, ncclBfloat16, 0, ep, s));
  CHECK_NCCL(ncclRecv(b, 3 * hidden, ncclBfloat16, 0, ep, s));
  CHECK_NCCL(ncclGroupEnd());
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_NCCL(ncclCommDestroy(ep));
  CHECK_NCCL(ncclCommDestroy(tp));
  CHECK_NCCL(ncclCommDestroy(world));
  std::printf("record_calls: done\n");
  return 0;
}
