// Brings the JSON that `seam-gpu` writes on a GPU machine (which has no
// SQLite) into the store on the CPU machine, read with the codec it was
// written with (properties/gpu_json.h): a run, its case, its equivalence and
// timing rows; a `bench` becomes one case per compared row (kBench*).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

/// What one import added.
struct GpuImport {
  std::int64_t run_id = 0;
  std::string
      tool;  ///< "seam-gpu run", "seam-gpu compare", "seam-gpu bench", "seam-gpu bench-allreduce"
  int equivalences = 0;
  int timings = 0;
  std::string summary;  ///< one line for the console
};

/// One case of a result file with its rows (their case indices set).
struct GpuResultCase {
  CaseRecord c;
  std::vector<EquivalenceRecord> equivalences;
  std::vector<TimingRecord> timings;
};

/// One file read and checked, not yet written.
struct GpuResultFile {
  std::string path;
  std::string tool;
  RunRecord run;
  std::vector<GpuResultCase> cases;
  std::string summary;
};

/// The case group of `seam-gpu bench` rows: "bench:collectives" (timings: 0
/// bare NCCL, 1 inside the plan), "bench:fused" (0 NCCL all-reduce + add+norm,
/// 1 the fused kernel, 2 NCCL all-reduce alone, timed with events; 3, 4, 5 the
/// same as CUPTI's kernel durations; equivalences exact and real),
/// "bench:graph" (per rank: 0 eager step, 1 graph replay, 2 sum of the
/// kernels of one replay, 3 sum of the ops' event times).
inline constexpr const char* kBenchCollectives = "bench:collectives";
inline constexpr const char* kBenchFused = "bench:fused";
inline constexpr const char* kBenchGraph = "bench:graph";

/// Reads and checks `path`. A file that is not seam-gpu JSON (unreadable,
/// malformed, missing fields) is refused with one line naming the file and
/// what is wrong.
Expected<GpuResultFile> readGpuJson(const std::string& path, const std::string& version);

/// The run of `store` that `file` was imported as before (0: none): a
/// finished run of the same command, arguments, seam version, GPU and CUDA
/// whose equivalence and timing rows are those the file gives, value for
/// value (two real GPU runs never time alike).
Expected<std::int64_t> importedAs(Store& store, const GpuResultFile& file);

/// Whether two files are one result (importedAs's comparison between files).
bool sameGpuResult(const GpuResultFile& a, const GpuResultFile& b);

/// Writes a checked file into `store` in one transaction.
Expected<GpuImport> writeGpuResult(Store& store, const GpuResultFile& file);

/// readGpuJson then writeGpuResult; nothing is written when the file is refused.
Expected<GpuImport> importGpuJson(Store& store, const std::string& path,
                                  const std::string& version);

}  // namespace seam::reports
