// The options of `seam sweep` (cmd_sweep.cc), and its training family
// (sweep_training.cc), which takes the presets and leaves of them alone.
#pragma once

#include <string>

#include "case_options.h"
#include "seam/sim/model/case_spec.h"
#include "sweep_baseline.h"

namespace seam::tools {

struct SweepOptions {
  int world = 8;
  std::string model;
  std::string pattern;
  FilterOptions fixed;
  FlagFilterSpec flags;  ///< --a2a, --fusion, --dp-padding, --reduction, --mode
  int jobs = 0;
  std::string shard = "0/1";
  std::string policy = "declared";
  std::string db = "seam.db";
  bool resume = false;
  std::string junit;
  std::string format = "text";
  std::string family = "serving";
  std::string layout;
  bool verbose = false;
  BaselineOptions baseline;
};

/// `seam sweep --family training`: every training case of --world, its
/// tables printed (no store); exit 1 on a violation.
int sweepTraining(const SweepOptions& o);

}  // namespace seam::tools
