// The options of `seam-gpu bench` and what they ask for, checked before any
// GPU is looked for: the sections to run and the fused-kernel table's sizes.
#pragma once

#include <string>
#include <vector>

#include "case_options.h"
#include "seam/backend/executor.h"

namespace seam::tools {

/// What the command line says.
struct BenchOptions {
  CaseOptions c;
  std::string numeric = "exact";
  int hidden = 4096;
  int inner = 8192;
  int iters = 50;  ///< timed runs of the plan, and bare calls per collective
  int graph_replays = 50;
  int fused_iters = 200;
  std::string fused_hidden = "2688,4096";
  std::string fused_tokens = "1,2,4,8,16,32,64,128,256,512,1024,2048";
  std::string sections = "collectives,fused,graph";
  std::string fused_protocol = "auto";
  std::string json;
};

/// What the options ask for: the sections and the fused-kernel table's sizes.
struct BenchPlan {
  bool collectives = false, fused = false, graph = false;
  std::vector<int> fused_hidden, fused_tokens;
  backend::PeerProtocol protocol = backend::PeerProtocol::kAuto;
};

/// Binds the options to `o`.
void addBenchOptions(CLI::App* cmd, BenchOptions& o);

/// The sections (--sections), sizes and protocol; the error names the bad option.
Expected<BenchPlan> benchPlan(const BenchOptions& o);

}  // namespace seam::tools
