// What NCCL's INFO log shows of calls captured in a CUDA graph and replayed,
// on one GPU (a one-rank communicator): an eager all-reduce, then an
// all-reduce and an all-gather captured once and the graph launched three
// times. Built here, run on the lent H200 under NCCL_DEBUG=INFO with
// NCCL_DEBUG_SUBSYS=INIT,COLL and again with ALL:
//   g++ -O1 -I/usr/local/cuda/include record_graph.cc -o record_graph \
//       -L/usr/local/cuda/lib -L/usr/local/cuda/lib64 -lnccl -lcudart
// Prints a marker line before each phase so the log shows which lines each
// phase wrote. The sizes follow a seam case: hidden 4096, 5 tokens, bf16.
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

void mark(const char* phase) {
  std::fflush(stdout);
  std::fprintf(stderr, "record_graph: %s\n", phase);
  std::fflush(stderr);
}

int main() {
  const size_t rows = 4096 * 5;
  int dev = 0;
  CHECK_CUDA(cudaSetDevice(dev));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitAll(&comm, 1, &dev));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, rows * 2));
  CHECK_CUDA(cudaMalloc(&b, rows * 2));
  CHECK_CUDA(cudaMemset(a, 0, rows * 2));
  mark("eager all-reduce");
  CHECK_NCCL(ncclAllReduce(a, b, rows, ncclBfloat16, ncclSum, comm, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  mark("capture begins");
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK_NCCL(ncclAllReduce(a, b, rows, ncclBfloat16, ncclSum, comm, s));
  CHECK_NCCL(ncclAllGather(a, b, rows, ncclBfloat16, comm, s));
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  mark("capture ended");
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) {
    mark(i == 0 ? "replay 1" : i == 1 ? "replay 2" : "replay 3");
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  mark("eager all-reduce after the replays");
  CHECK_NCCL(ncclAllReduce(a, b, rows, ncclBfloat16, ncclSum, comm, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("record_graph: done\n");
  return 0;
}
