#include "seam/properties/provenance.h"

#include <unistd.h>

#include <chrono>

#include "seam/properties/gpu_result.h"

#ifndef SEAM_COMMIT
#define SEAM_COMMIT ""
#endif

namespace seam::properties {

std::string thisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string seamCommit() { return SEAM_COMMIT; }

std::int64_t epochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void stampOrigin(GpuOrigin* origin) {
  origin->host = thisHost();
  origin->written_ms = epochMs();
  const std::string commit = seamCommit();
  if (!commit.empty()) origin->commit = commit;
}

}  // namespace seam::properties
