// Foreign-call checks of the CUDA/NCCL backend (STYLE 7): a failing CUDA or
// NCCL call becomes a Status with the call, the error string and file:line,
// returned up to tools/. Only backend/ includes this.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "seam/sim/base/status.h"

namespace seam::backend {

Status cudaStatus(cudaError_t err, const char* call, const char* file, int line);
Status ncclStatus(ncclResult_t res, const char* call, const char* file, int line);

}  // namespace seam::backend

/// Evaluates a CUDA runtime call; on failure returns a Status from the
/// enclosing function (which must return Status or Expected<T>).
#define SEAM_CUDA_CHECK(call)                                                        \
  do {                                                                               \
    const cudaError_t seam_cuda_err_ = (call);                                       \
    if (seam_cuda_err_ != cudaSuccess)                                               \
      return ::seam::backend::cudaStatus(seam_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

/// Evaluates an NCCL call; on failure returns a Status from the enclosing function.
#define SEAM_NCCL_CHECK(call)                                                        \
  do {                                                                               \
    const ncclResult_t seam_nccl_res_ = (call);                                      \
    if (seam_nccl_res_ != ncclSuccess)                                               \
      return ::seam::backend::ncclStatus(seam_nccl_res_, #call, __FILE__, __LINE__); \
  } while (0)
