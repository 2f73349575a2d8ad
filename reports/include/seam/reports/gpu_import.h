// Brings the JSON that `seam-gpu` writes on a GPU machine (which has no
// SQLite) into the store on the CPU machine: a run, its case, the
// equivalence rows (GPU vs CPU executor, GPU vs single-rank reference) and
// every op's timing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

/// What one import added.
struct GpuImport {
  std::int64_t run_id = 0;
  std::string tool;        ///< "seam-gpu run" or "seam-gpu bench-allreduce"
  int equivalences = 0;
  int timings = 0;
  std::string summary;     ///< one line for the console
};

/// One file read and checked, not yet written.
struct GpuResultFile {
  std::string path;
  std::string tool;
  RunRecord run;
  CaseRecord c;
  std::vector<EquivalenceRecord> equivalences;
  std::vector<TimingRecord> timings;
  std::string summary;
};

/// Reads and checks `path`. A file that is not seam-gpu JSON (unreadable,
/// malformed, missing fields) is refused with one line naming the file and
/// what is wrong.
Expected<GpuResultFile> readGpuJson(const std::string& path, const std::string& version);

/// Writes a checked file into `store` in one transaction.
Expected<GpuImport> writeGpuResult(Store& store, const GpuResultFile& file);

/// readGpuJson then writeGpuResult; nothing is written when the file is refused.
Expected<GpuImport> importGpuJson(Store& store, const std::string& path, const std::string& version);

}  // namespace seam::reports
