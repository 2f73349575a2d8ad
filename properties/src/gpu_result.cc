#include "seam/properties/gpu_result.h"

#include <cstdio>

namespace seam::properties {

const char* gpuToolName(const GpuResult& result) {
  // In the order of GpuResult's alternatives.
  static constexpr const char* kNames[] = {"seam-gpu run", "seam-gpu compare", "seam-gpu bench",
                                           "seam-gpu bench-allreduce"};
  return kNames[result.index()];
}

std::string hexHash(std::uint64_t hash) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace seam::properties
