// What the case options of seam's commands say, as the strings and numbers
// the command line holds, and the one place they become a Case or a
// TrainingCase, validated once (tools/ only binds the options to a CaseSpec).
// Also the lists the space-wide commands take: worlds, and the training space.
#pragma once

#include <string>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"
#include "seam/sim/training/training_case.h"

namespace seam {

/// The case options, unparsed. Each error of buildCase or buildTrainingCase
/// names the option and its value.
struct CaseSpec {
  std::string model;                    ///< --model PRESET
  std::string pattern;                  ///< --pattern, instead of a preset
  std::string family = "single-stage";  ///< of a bare pattern: single-stage|two-stage; or training
  int pp = 1, tp = 1, dp = 1, cp = 1, ep = 1, moe_dp = 1;
  std::string tokens;  ///< per DP shard, "4,0,3"; empty: kDefaultTokensPerShard each
  std::string a2a = "none";
  std::string fusion = "on";
  std::string dp_padding = "max_len";
  std::string reduction = "auto";  ///< auto: engineDefaultReduction of the model
  std::string mode = "decode";
  bool ln_sp = false;
  bool input_scattered = false;
  bool dp_gatherv = false;
  bool tbo = false;
  std::string dense_tp = "tp";     ///< "1": fully-DP dense FFNs (two-stage layers)
  std::string capture;             ///< "2,5"
  std::string layout = "primerl";  ///< --family training: primerl|megatron
  int dp_replicate = 1;            ///< --family training: PrimeRL HSDP replicas
  /// --family training: document lengths of the packed row (default: the
  /// sweep's uneven batch).
  std::string docs;
  std::string ac = "on";  ///< --family training: PrimeRL activation checkpointing
  /// --family training: moe_router_dtype (empty: the layout's default,
  /// PrimeRL float32, Megatron bfloat16)
  std::string router_dtype;
  std::string reduce_dtype = "float32";  ///< --family training: PrimeRL FSDP reduce_dtype
  std::string ep_backend = "torch";      ///< --family training: PrimeRL ep_comm_backend
  /// --family training: Megatron expert_tensor_parallel_size (0: tp, the engine's default)
  int etp = 0;
  /// --family training: Megatron moe_router_enable_expert_bias on|off
  std::string expert_bias = "off";
  /// --family training: Megatron moe_token_dispatcher_type allgather|alltoall
  /// (empty: allgather, the engine's default)
  std::string dispatcher;
  /// --family training: Megatron cp_comm_type p2p|all_gather|a2a (empty: p2p,
  /// the engine's default)
  std::string cp_comm_type;
};

/// Tokens per DP shard when --tokens is not given.
inline constexpr int kDefaultTokensPerShard = 4;

/// True when the spec asks for the training family.
inline bool isTraining(const CaseSpec& s) { return s.family == "training"; }

/// The serving case the spec describes, checked as validateCase checks
/// (the config before the flags are parsed, so that its error comes first).
Expected<Case> buildCase(const CaseSpec& spec);

/// The training case the spec describes, checked as validateTrainingCase checks.
Expected<TrainingCase> buildTrainingCase(const CaseSpec& spec);

/// The training presets (nemotron-3-nano, nemotron-3-super), or one by name.
Expected<std::vector<const ModelPreset*>> trainingModels(const std::string& name);

/// The models and layouts a training sweep or campaign covers.
struct TrainingSpace {
  std::vector<const ModelPreset*> models;
  std::vector<TrainingLayout> layouts = {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron};
};
/// From --model and --layout (empty: all); the error names the bad value.
Expected<TrainingSpace> trainingSpace(const std::string& model, const std::string& layout);

/// The flag lists a space-wide command narrows its space by (`seam sweep
/// --reduction rs,rsv`) as given: values separated by commas, each spelled
/// as the case option of that name takes it; empty: not given.
struct FlagFilterSpec {
  std::string a2a, fusion, dp_padding, reduction, mode;
};
/// Each list parsed by the case options' own parsers (parseA2a,
/// parseFusion, parsePadding, parseReductionOption, parseMode); the error
/// names the option and the value.
Expected<FlagFilter> buildFlagFilter(const FlagFilterSpec& spec);

/// Parses "--world 2,4,8": world sizes in 1..kMaxWorld; the error names the text.
Expected<std::vector<int>> parseWorlds(const std::string& text);

/// Parses "2,5" (non-negative integers); the error names `option` and the text.
Expected<std::vector<int>> parseIntList(const std::string& text, const char* option);

}  // namespace seam
