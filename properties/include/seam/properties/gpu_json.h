// The one codec of seam-gpu's result files: the JSON each record is written
// as (--json) and its reading back (`seam db import`), so that the layout is
// defined once for the writer on the GPU machine and the reader beside the store.
#pragma once

#include <string>
#include <string_view>

#include "seam/properties/gpu_result.h"
#include "seam/sim/base/status.h"

namespace seam::properties {

/// The file seam-gpu writes for a record: one JSON object, two-space
/// indented, with a final newline. Run, bench and bench-allreduce files keep
/// their fields in the order written; a compare file's are sorted.
std::string gpuResultJson(const GpuRunRecord& run);
std::string gpuResultJson(const GpuCompareRecord& compare);
std::string gpuResultJson(const GpuBenchRecord& bench);
std::string gpuResultJson(const GpuAllReduceRecord& bench);

/// Reads a result file's text. The fields the store's rows are made of must
/// be present (a null one reads as its default) and of their type; the others
/// are taken when present with their type, so that a file trimmed to what is
/// imported reads too, and a file gpuResultJson wrote reads back into the
/// record it was written from. Refusals are one line: "not JSON (...)" or
/// "not a seam-gpu result (...)" naming the tool or the first bad field.
Expected<GpuResult> parseGpuResult(std::string_view text);

}  // namespace seam::properties
