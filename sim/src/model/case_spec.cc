#include "seam/sim/model/case_spec.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "case_checks.h"
#include "seam/sim/base/decimal.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"

namespace seam {

namespace {

/// "a,b,c" as integers in lo..hi; none when a field is empty, not a decimal
/// integer or out of range.
std::optional<std::vector<int>> parseInts(const std::string& text, int lo, int hi) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string field =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::optional<std::int64_t> v = parseDecimal(field, lo, hi);
    if (!v) return std::nullopt;
    out.push_back(static_cast<int>(*v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

namespace {

/// Each value of the comma-separated `text` parsed by `parse` into `out`.
template <class T, class Parse>
Status parseEach(const std::string& text, Parse parse, std::vector<T>& out) {
  if (text.empty()) return Status::ok();
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    auto value = parse(
        std::string_view(text).substr(start, comma == std::string::npos ? comma : comma - start));
    if (!value) return value.status();
    out.push_back(*value);
    if (comma == std::string::npos) return Status::ok();
    start = comma + 1;
  }
}

}  // namespace

Expected<FlagFilter> buildFlagFilter(const FlagFilterSpec& spec) {
  FlagFilter f;
  Status s = parseEach(spec.a2a, parseA2a, f.a2a);
  if (s) s = parseEach(spec.fusion, parseFusion, f.fusion);
  if (s) s = parseEach(spec.dp_padding, parsePadding, f.dp_padding);
  if (s) s = parseEach(spec.reduction, parseReductionOption, f.reduction);
  if (s) s = parseEach(spec.mode, parseMode, f.mode);
  if (!s) return s;
  return f;
}

Expected<std::vector<int>> parseWorlds(const std::string& text) {
  auto worlds = parseInts(text, 1, kMaxWorld);
  if (!worlds) {
    return Status::invalid("--world \"" + text.substr(0, 64) +
                           "\" is not a list of world sizes in 1.." + std::to_string(kMaxWorld));
  }
  return std::move(*worlds);
}

Expected<std::vector<int>> parseIntList(const std::string& text, const char* option) {
  auto values = parseInts(text, 0, std::numeric_limits<int>::max());
  if (!values) {
    return Status::invalid(std::string(option) + " \"" + text.substr(0, 64) +
                           "\" is not a list of non-negative integers");
  }
  return std::move(*values);
}

namespace {

/// --model or --pattern (with its --family).
Expected<ModelRef> caseModel(const CaseSpec& o) {
  if (o.model.empty() == o.pattern.empty()) {
    return Status::invalid(o.model.empty() ? "give --model PRESET or --pattern STR"
                                           : "give --model or --pattern, not both");
  }
  if (o.model.empty()) {
    auto family = parsePatternFamily(o.family);
    if (!family) return family.status();
    return modelFromPattern(o.pattern, *family);
  }
  auto preset = findPreset(o.model);
  if (!preset) return preset.status();
  auto m = modelFromPreset(**preset);
  if (m && o.family != "single-stage") {
    return Status::invalid("--family \"" + o.family.substr(0, 64) +
                           "\" applies to --pattern; a preset has its own");
  }
  return m;
}

/// --tokens, or kDefaultTokensPerShard on each DP shard of `config`.
Expected<Batch> caseBatch(const CaseSpec& o, const ParallelConfig& config) {
  if (!o.tokens.empty()) return parseBatch(o.tokens);
  Batch b;
  b.tokens.assign(config.attn_dp, kDefaultTokensPerShard);
  return b;
}

/// --reduction: "auto" is the engine's default for the model
/// (resolve_boundary_reduction with boundary_reduction auto), said in the
/// case's notes where the reduction can change a plan (attention DP or CP).
Expected<BoundaryReduction> caseReduction(const CaseSpec& o, Case& c) {
  auto asked = parseReductionOption(o.reduction);
  if (!asked) return asked.status();
  if (*asked) return **asked;
  const BoundaryReduction r = engineDefaultReduction(c.model);
  if (c.config.attn_dp > 1 || c.config.attn_cp > 1) {
    const std::string arch =
        c.model.architecture.empty() ? "a checkpoint of no SGLang class" : c.model.architecture;
    c.engine_notes.push_back("default: reduction " + std::string(reductionName(r)) +
                             ": SGLang's model_boundary_reduction for " + arch);
  }
  return r;
}

/// --a2a .. --capture; a capture names a stage of the `stages`-stage pattern.
Expected<Flags> caseFlags(const CaseSpec& o, Case& c) {
  const int stages = c.model.pattern.size();
  Flags f;
  auto a2a = parseA2a(o.a2a);
  if (!a2a) return a2a.status();
  f.a2a = *a2a;
  auto fusion = parseFusion(o.fusion);
  if (!fusion) return fusion.status();
  f.fusion = *fusion;
  auto pad = parsePadding(o.dp_padding);
  if (!pad) return pad.status();
  f.dp_padding = *pad;
  auto red = caseReduction(o, c);
  if (!red) return red.status();
  f.reduction = *red;
  auto mode = parseMode(o.mode);
  if (!mode) return mode.status();
  f.mode = *mode;
  f.layernorm_sp = o.ln_sp;
  if (o.dense_tp != "tp" && o.dense_tp != "1") {
    return Status::invalid("--dense-tp \"" + o.dense_tp.substr(0, 64) + "\" is not one of tp, 1");
  }
  f.dense_tp1 = o.dense_tp == "1";
  f.input_scattered = o.input_scattered;
  f.dp_gatherv = o.dp_gatherv;
  f.tbo = o.tbo;
  if (o.capture.empty()) return f;
  auto cap = parseIntList(o.capture, "--capture");
  if (!cap) return cap.status();
  for (int s : *cap) {
    if (s >= stages) {
      return Status::invalid("--capture " + std::to_string(s) + " is not a stage of the " +
                             std::to_string(stages) + "-layer pattern");
    }
  }
  f.capture = std::move(*cap);
  return f;
}

/// arg_groups/overrides.py (_a2a_ep_size): with an all-to-all MoE backend
/// SGLang sets ep_size to tp_size, logs it and runs; seam applies it the same
/// way (moe_dp > 1 is left to the config's checks, which refuse it).
void applyA2aEpSize(const CaseSpec& o, Case& c) {
  auto a2a = parseA2a(o.a2a);
  if (!a2a || *a2a == A2aBackend::kNone || o.ep == o.tp || o.moe_dp != 1) return;
  c.config.moe_ep = o.tp;
  c.engine_notes.push_back("override: moe_ep " + std::to_string(o.ep) + " -> " +
                           std::to_string(o.tp) +
                           ": SGLang's _a2a_ep_size sets ep_size = tp_size for --a2a " + o.a2a);
}

}  // namespace

Expected<Case> buildCase(const CaseSpec& o) {
  Case c;
  auto model = caseModel(o);
  if (!model) return model.status();
  c.model = std::move(*model);
  c.config = ParallelConfig{
      .pp = o.pp, .tp = o.tp, .attn_dp = o.dp, .attn_cp = o.cp, .moe_ep = o.ep, .moe_dp = o.moe_dp};
  applyA2aEpSize(o, c);
  if (Status st = validate(c.config); !st) return st;
  auto batch = caseBatch(o, c.config);
  if (!batch) return batch.status();
  c.batch = std::move(*batch);
  auto flags = caseFlags(o, c);
  if (!flags) return flags.status();
  c.flags = std::move(*flags);
  // The config is valid: the rest of validateCase.
  if (Status st = validateCaseAgainstConfig(c); !st) return st;
  return c;
}

Expected<std::vector<const ModelPreset*>> trainingModels(const std::string& name) {
  std::vector<const ModelPreset*> all = trainingPresets();
  if (name.empty()) return all;
  auto p = findPreset(name);
  if (!p) return p.status();
  if (std::find(all.begin(), all.end(), *p) == all.end()) {
    return Status::invalid(
        "--model \"" + name.substr(0, 64) +
        "\" has no training layouts (the training family has nemotron-3-nano, nemotron-3-super)");
  }
  return std::vector<const ModelPreset*>{*p};
}

Expected<TrainingSpace> trainingSpace(const std::string& model, const std::string& layout) {
  TrainingSpace out;
  auto models = trainingModels(model);
  if (!models) return models.status();
  out.models = std::move(*models);
  if (!layout.empty()) {
    auto l = parseTrainingLayout(layout);
    if (!l) return l.status();
    out.layouts = {*l};
  }
  return out;
}

Expected<TrainingCase> buildTrainingCase(const CaseSpec& o) {
  if (!o.pattern.empty())
    return Status::invalid("--family training takes a --model preset, not a --pattern");
  if (o.model.empty())
    return Status::invalid("--family training needs --model (nemotron-3-nano or nemotron-3-super)");
  auto models = trainingModels(o.model);
  if (!models) return models.status();
  auto layout = parseTrainingLayout(o.layout);
  if (!layout) return layout.status();
  TrainingCase c;
  c.model = models->front();
  c.config.layout = *layout;
  c.config.dp_replicate = o.dp_replicate;
  c.config.dp = o.dp;
  c.config.cp = o.cp;
  c.config.tp = o.tp;
  c.config.ep = o.ep;
  c.config.etp = o.etp;
  if (o.expert_bias != "on" && o.expert_bias != "off")
    return Status::invalid("--expert-bias \"" + o.expert_bias.substr(0, 64) +
                           "\" is not on or off");
  c.config.expert_bias = o.expert_bias == "on";
  c.config.sp = *layout == TrainingLayout::kMegatron && o.tp > 1;
  if (Status st = applyEngineOptions(c.config, o.ac, o.router_dtype, o.reduce_dtype, o.ep_backend);
      !st)
    return st;
  if (Status st = applyDispatcher(c.config, o.dispatcher); !st) return st;
  if (Status st = applyCpComm(c.config, o.cp_comm_type); !st) return st;
  if (o.pp != 1)
    return Status::invalid("--pp " + std::to_string(o.pp) +
                           ": the training layouts are modelled with pp = 1");
  if (o.moe_dp != 1)
    return Status::invalid(
        "--moe-dp applies to serving; training experts' data parallel is derived");
  if (o.docs.empty()) {
    if (o.dp < 1 || o.cp < 1 || o.tp < 1)
      return Status::invalid("every parallel size must be >= 1");
    c.docs = trainingBatches(c.config).back();
  } else {
    auto docs = parseIntList(o.docs, "--docs");
    if (!docs) return docs.status();
    c.docs = *docs;
  }
  if (Status st = validateTrainingCase(c); !st) return st;
  return c;
}

}  // namespace seam
