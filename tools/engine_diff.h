// `seam diff --engine-src PARENT --against-engine-src CHANGE`: both engine
// trees run on the CPU over the same cases (one case, or the space at one
// world), each case classified by what the change did to the engine's calls
// and outputs (recordings/engine_diff.h); a Markdown summary for a pull
// request on request.
#pragma once

#include <string>

#include "case_options.h"
#include "engine_check.h"

namespace seam::tools {

struct EngineDiffOptions {
  EngineOptions parent;  ///< --engine / --engine-src
  EngineOptions change;  ///< --against-engine / --against-engine-src
  std::string worlds;    ///< --world: one size for a space
  std::string keep;      ///< --keep-recordings DIR
  std::string summary;   ///< --summary FILE: the Markdown summary
  int jobs = 0;
  bool asked() const { return parent.asked() || change.asked(); }
};

/// Adds --against-engine, --against-engine-src, --keep-recordings and --summary.
void addEngineDiffOptions(CLI::App* sub, EngineDiffOptions& o);

/// Exit 0 when the change keeps every value the parent computed and brings
/// no new disagreement with --policy's plan; 1 otherwise; 2 on bad input.
int diffEngineTrees(const CaseOptions& c, bool one_case, const EngineDiffOptions& o);

}  // namespace seam::tools
