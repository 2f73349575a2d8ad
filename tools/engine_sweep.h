// `seam sweep --engine sglang`: every case of the space that the recorder
// runs, run on the engine itself once per engine-distinct case, and each
// case's plan under the declared and the legacy policy compared with what
// the engine called (recordings/engine_sweep.h); the rows go to the store,
// and the conformance table per model and configuration family is printed.
#pragma once

#include <string>

#include "case_options.h"
#include "engine_check.h"
#include "seam/sim/model/case_spec.h"
#include "sweep_baseline.h"

namespace seam::tools {

struct EngineSweepOptions {
  int world = 8;
  std::string model;
  std::string pattern;
  FilterOptions fixed;
  FlagFilterSpec flags;  ///< the flag values kept (--a2a, --fusion, ...)
  EngineOptions engine;
  std::string keep;  ///< --keep-recordings DIR: the recordings are written there and kept
  int jobs = 0;      ///< recorder processes at once (0: one per core)
  std::string shard = "0/1";
  std::string db = "seam.db";
  bool resume = false;
  bool json = false;
  BaselineOptions baseline;
};

/// Exit 0 when every case the engine ran agrees with the declared plan (with
/// --baseline: when no disagreement is new), 1 otherwise, 2 on bad input.
int sweepEngine(const EngineSweepOptions& o);

}  // namespace seam::tools
