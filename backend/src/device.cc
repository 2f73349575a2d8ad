#include "seam/backend/device.h"

#include <string>

#include "seam/backend/check.h"

namespace seam::backend {

Status cudaStatus(cudaError_t err, const char* call, const char* file, int line) {
  return Status::internal(std::string(call) + " failed: " + cudaGetErrorString(err) + " (" + file +
                          ":" + std::to_string(line) + ")");
}

Status ncclStatus(ncclResult_t res, const char* call, const char* file, int line) {
  return Status::internal(std::string(call) + " failed: " + ncclGetErrorString(res) + " (" + file +
                          ":" + std::to_string(line) + ")");
}

namespace {
std::string dotted(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}
}  // namespace

std::string RuntimeVersions::describe() const {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  std::string out = "cuda " + dotted(cuda_runtime, 1000, 10, 100);
  out += cuda_driver ? ", driver " + dotted(cuda_driver, 1000, 10, 100) : ", no driver";
  out += ", nccl " + dotted(nccl, 10000, 100, 100) + "." + std::to_string(nccl % 100);
  return out;
}

Expected<RuntimeVersions> runtimeVersions() {
  RuntimeVersions v;
  SEAM_CUDA_CHECK(cudaRuntimeGetVersion(&v.cuda_runtime));
  // Without a driver this reports 0 and succeeds.
  if (cudaDriverGetVersion(&v.cuda_driver) != cudaSuccess) v.cuda_driver = 0;
  SEAM_NCCL_CHECK(ncclGetVersion(&v.nccl));
  return v;
}

Expected<std::vector<DeviceInfo>> listDevices() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return std::vector<DeviceInfo>{};
  }
  SEAM_CUDA_CHECK(err);
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    SEAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    devices.push_back(DeviceInfo{.index = i,
                                 .name = prop.name,
                                 .sm_major = prop.major,
                                 .sm_minor = prop.minor,
                                 .memory_bytes = prop.totalGlobalMem,
                                 .multiprocessors = prop.multiProcessorCount});
  }
  return devices;
}

}  // namespace seam::backend
