// What the backend can see of the machine: CUDA devices, the CUDA runtime and
// driver versions and the NCCL version that runs are recorded with every GPU
// run (DESIGN §8 runs table).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::backend {

/// One visible CUDA device.
struct DeviceInfo {
  int index = 0;                 ///< CUDA device ordinal
  std::string name;              ///< e.g. "NVIDIA H200"
  int sm_major = 0;              ///< compute capability major (9 on Hopper)
  int sm_minor = 0;              ///< compute capability minor
  std::size_t memory_bytes = 0;  ///< total global memory
  int multiprocessors = 0;       ///< SM count
};

/// Versions of the foreign libraries as loaded at run time.
struct RuntimeVersions {
  int cuda_runtime = 0;  ///< cudaRuntimeGetVersion, e.g. 13000
  int cuda_driver = 0;   ///< cudaDriverGetVersion; 0 when no driver is installed
  int nccl = 0;          ///< ncclGetVersion, e.g. 22800
  /// "cuda 13.0, driver 13.0, nccl 2.28.3"
  std::string describe() const;
};

/// Versions of CUDA and NCCL; never fails for want of a GPU.
Expected<RuntimeVersions> runtimeVersions();

/// The visible devices. An empty list (no driver, no device) is not an error:
/// callers decide whether a GPU is required.
Expected<std::vector<DeviceInfo>> listDevices();

}  // namespace seam::backend
