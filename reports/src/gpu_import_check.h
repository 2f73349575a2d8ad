// What `seam db import` checks of a seam-gpu result beyond its JSON shape
// (gpu_json.h reads that): each value against what seam-gpu writes and
// against the case the file names, so that nothing seam-gpu could not have
// written is stored. Private to reports/src/gpu_import*.cc.
#pragma once

#include <string>

#include "seam/properties/gpu_json.h"
#include "seam/sim/base/status.h"

namespace seam::reports::detail {

/// The first value of `result` seam-gpu could not have written, as
/// "\"key\" value: why"; ok when none. `version` is this seam's: a result
/// of another version is refused (its fields may mean something else).
Status checkGpuResult(const properties::GpuResult& result, const std::string& version);

}  // namespace seam::reports::detail
