// What `seam diff` prints for a space: the count of cases per class with
// the smallest example of each, which planned pairs may give other bits on
// GPUs, and the last line "N cases, K with values that differ".
#pragma once

#include <string>

#include "seam/properties/diff.h"

namespace seam::reports {

/// `worlds` as the command line gave it.
std::string renderDiff(const properties::DiffSpec& spec, const properties::DiffResult& result,
                       const std::string& worlds);

}  // namespace seam::reports
