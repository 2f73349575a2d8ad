// The case options shared by `seam plan`, `seam check` and (partly) `seam
// sweep`: --model/--pattern, the parallel leaves, the flags and the batch,
// parsed into a seam::Case by library functions.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "seam/sim/case.h"
#include "seam/sim/config_space.h"
#include "seam/sim/policy.h"
#include "seam/sim/training.h"

namespace seam::tools {

struct CaseOptions {
  std::string model;
  std::string pattern;
  std::string family = "single-stage";  // of a bare --pattern
  int pp = 1, tp = 1, dp = 1, cp = 1, ep = 1, moe_dp = 1;
  std::string tokens;  // default: 4 per DP shard
  std::string a2a = "none";
  std::string fusion = "on";
  std::string dp_padding = "max_len";
  std::string reduction = "ar";
  std::string mode = "decode";
  bool ln_sp = false;
  bool input_scattered = false;
  bool dp_gatherv = false;
  bool tbo = false;
  std::string dense_tp = "tp";  // "1": fully-DP dense FFNs (two-stage layers)
  std::string capture;  // "2,5"
  std::string policy = "declared";
  std::string decision;  // a planner decision to flip (what `seam prop --decision` planted)
  std::string trace;     // an engine trace (JSON lines) to use instead of the policy's ops
  // --family training:
  std::string layout = "primerl";  // primerl|megatron
  int dp_replicate = 1;            // PrimeRL HSDP replicas
  std::string docs;                // document lengths of the packed row (default: the sweep's uneven batch)
};

/// True when the options ask for the training family.
inline bool isTraining(const CaseOptions& o) { return o.family == "training"; }
/// The training case the options describe; the error names the bad value.
Expected<TrainingCase> buildTrainingCase(const CaseOptions& o);
/// The training presets (nemotron-3-nano, nemotron-3-super), or one by name.
Expected<std::vector<const ModelPreset*>> trainingModels(const std::string& name);

/// The models and layouts a training sweep or campaign covers (--model,
/// --layout; empty: all), or the error naming the bad value.
struct TrainingSpace {
  std::vector<const ModelPreset*> models;
  std::vector<TrainingLayout> layouts = {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron};
};
Expected<TrainingSpace> trainingSpace(const std::string& model, const std::string& layout);

/// The plan the options ask for: the policy's plan of the case, or, with
/// --trace, the trace's ops on that case's stages.
Expected<Plan> buildCasePlan(const CaseOptions& o, const Case& c);

/// The schema the options ask for (--decision), or an error naming the value.
Expected<Schema> buildSchema(const CaseOptions& o);

/// The policy's plan of the case (--policy, --decision); no trace.
Expected<Plan> buildPolicyPlan(const CaseOptions& o, const Case& c);

/// Parallel leaves a space-wide command fixes (`seam configs`, `seam sweep`).
struct FilterOptions {
  std::optional<int> pp, tp, dp, cp, ep, moe_dp;
  ConfigFilter filter() const {
    return {.pp = pp, .tp = tp, .attn_dp = dp, .attn_cp = cp, .moe_ep = ep, .moe_dp = moe_dp};
  }
};
/// Parses "--world 2,4,8": world sizes in 1..kMaxWorld; the error names the text.
Expected<std::vector<int>> parseWorlds(const std::string& text);

/// Parses "2,5" (non-negative integers); the error names `option` and the text.
Expected<std::vector<int>> parseIntList(const std::string& text, const char* option);

/// Adds --pp --tp --dp --cp --ep --moe-dp as optional fixed leaves.
void addFilterOptions(CLI::App* sub, FilterOptions& o);

/// Adds the case options to a subcommand.
void addCaseOptions(CLI::App* sub, CaseOptions& o);

/// The case the options describe; the error names the bad option value.
Expected<Case> buildCase(const CaseOptions& o);

/// Tokens per DP shard when --tokens is not given.
inline constexpr int kDefaultTokensPerShard = 4;

}  // namespace seam::tools
