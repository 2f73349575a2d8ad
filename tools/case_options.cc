#include "case_options.h"

#include <charconv>

#include "seam/properties/prop.h"
#include "seam/sim/model.h"

namespace seam::tools {

Expected<std::vector<int>> parseWorlds(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string field = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int v = 0;
    auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || ptr != field.data() + field.size() || v < 1 || v > kMaxWorld) {
      return Status::invalid("--world \"" + text.substr(0, 64) + "\" is not a list of world sizes in 1.." +
                             std::to_string(kMaxWorld));
    }
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void addFilterOptions(CLI::App* sub, FilterOptions& o) {
  sub->add_option("--pp", o.pp, "fix the pipeline stages");
  sub->add_option("--tp", o.tp, "fix tp (ranks per pipeline stage)");
  sub->add_option("--dp", o.dp, "fix attention DP (attn_dp)");
  sub->add_option("--cp", o.cp, "fix attention CP (attn_cp)");
  sub->add_option("--ep", o.ep, "fix MoE expert parallel (moe_ep)");
  sub->add_option("--moe-dp", o.moe_dp, "fix MoE data parallel (moe_dp)");
}

void addCaseOptions(CLI::App* sub, CaseOptions& o) {
  sub->add_option("--model", o.model, "model preset (see `seam models`)");
  sub->add_option("--pattern", o.pattern, "a bare pattern instead of a preset, e.g. 'M-*E-'");
  sub->add_option("--family", o.family,
                  "layers of a bare --pattern: single-stage (Nemotron-H, M * - E) or two-stage "
                  "(mixer M * G P then FFN - E per decoder layer, e.g. '*-*E'); or training (a preset "
                  "under --layout primerl|megatron, forward and backward)")
      ->capture_default_str();
  sub->add_option("--layout", o.layout, "--family training: primerl|megatron")->capture_default_str();
  sub->add_option("--dp-replicate", o.dp_replicate, "--family training: PrimeRL HSDP replicas")->capture_default_str();
  sub->add_option("--docs", o.docs, "--family training: document lengths of the packed row, e.g. 5,2,9");
  sub->add_option("--pp", o.pp, "pipeline stages")->capture_default_str();
  sub->add_option("--tp", o.tp, "ranks per pipeline stage")->capture_default_str();
  sub->add_option("--dp", o.dp, "attention DP (attn_dp; DP attention when > 1)")->capture_default_str();
  sub->add_option("--cp", o.cp, "attention CP (attn_cp)")->capture_default_str();
  sub->add_option("--ep", o.ep, "MoE expert parallel (moe_ep)")->capture_default_str();
  sub->add_option("--moe-dp", o.moe_dp, "MoE data parallel (moe_dp)")->capture_default_str();
  sub->add_option("--tokens", o.tokens, "tokens per DP shard, e.g. 4,0,3 (default 4 each)");
  sub->add_option("--a2a", o.a2a, "MoE all-to-all backend: none|deepep")->capture_default_str();
  sub->add_option("--fusion", o.fusion, "fused all-reduce+add+RMSNorm available: on|off")->capture_default_str();
  sub->add_option("--dp-padding", o.dp_padding, "DP padding: max_len|sum_len")->capture_default_str();
  sub->add_option("--reduction", o.reduction, "FFN return over DP: ar|rs|rsv|rs+rsv")->capture_default_str();
  sub->add_option("--mode", o.mode, "forward mode: decode|extend")->capture_default_str();
  sub->add_flag("--ln-sp", o.ln_sp, "LayerNorm sequence parallel");
  sub->add_flag("--input-scattered", o.input_scattered,
                "input-scattered attention (enable_attn_tp_input_scattered; extend batches of MLA models)");
  sub->add_flag("--dp-gatherv", o.dp_gatherv,
                "SGLANG_DP_USE_GATHERV: DP gathers as tp all_gatherv (attn_tp 1, tp == dp, sum_len)");
  sub->add_flag("--tbo", o.tbo,
                "two-batch overlap (enable_two_batch_overlap; DeepSeek decoder layers, with --a2a deepep or --dp > 1)");
  sub->add_option("--dense-tp", o.dense_tp,
                  "dense FFN TP size of two-stage layers: tp|1 (1 = moe_dense_tp_size 1, fully DP)")
      ->capture_default_str();
  sub->add_option("--capture", o.capture, "aux hidden-state snapshots before these stages, e.g. 2,5");
  sub->add_option("--policy", o.policy, "boundary policy: declared|legacy|naive")->capture_default_str();
  sub->add_option("--decision", o.decision, "plan with this planner decision flipped (a planted bug)");
  sub->add_option("--trace", o.trace, "an engine trace (JSON lines, see README) to check instead of the policy's plan");
}


Expected<Schema> buildSchema(const CaseOptions& o) {
  if (o.decision.empty()) return Schema{};
  auto d = properties::parseDecision(o.decision);
  if (!d) return d.status();
  return Schema::with(*d);
}

Expected<Plan> buildPolicyPlan(const CaseOptions& o, const Case& c) {
  auto policy = parsePolicy(o.policy);
  if (!policy) return policy.status();
  auto schema = buildSchema(o);
  if (!schema) return schema.status();
  return buildPlan(c, *policy, *schema);
}

Expected<std::vector<int>> parseIntList(const std::string& text, const char* option) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string field = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int v = 0;
    auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || ptr != field.data() + field.size() || v < 0) {
      return Status::invalid(std::string(option) + " \"" + text.substr(0, 64) + "\" is not a list of non-negative integers");
    }
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Expected<Case> buildCase(const CaseOptions& o) {
  Case c;
  if (o.model.empty() == o.pattern.empty()) {
    return Status::invalid(o.model.empty() ? "give --model PRESET or --pattern STR"
                                           : "give --model or --pattern, not both");
  }
  if (!o.model.empty()) {
    auto preset = findPreset(o.model);
    if (!preset) return preset.status();
    auto m = modelFromPreset(**preset);
    if (!m) return m.status();
    c.model = std::move(*m);
  } else {
    auto family = parsePatternFamily(o.family);
    if (!family) return family.status();
    auto m = modelFromPattern(o.pattern, *family);
    if (!m) return m.status();
    c.model = std::move(*m);
  }
  if (!o.model.empty() && o.family != "single-stage") {
    return Status::invalid("--family \"" + o.family.substr(0, 64) + "\" applies to --pattern; a preset has its own");
  }
  c.config = ParallelConfig{.pp = o.pp, .tp = o.tp, .attn_dp = o.dp, .attn_cp = o.cp, .moe_ep = o.ep,
                            .moe_dp = o.moe_dp};
  if (Status st = validate(c.config); !st) return st;
  if (o.tokens.empty()) {
    c.batch.tokens.assign(c.config.attn_dp, kDefaultTokensPerShard);
  } else {
    auto b = parseBatch(o.tokens);
    if (!b) return b.status();
    c.batch = std::move(*b);
  }
  auto a2a = parseA2a(o.a2a);
  if (!a2a) return a2a.status();
  c.flags.a2a = *a2a;
  if (o.fusion != "on" && o.fusion != "off") {
    return Status::invalid("--fusion \"" + o.fusion.substr(0, 64) + "\" is not one of on, off");
  }
  c.flags.fusion = o.fusion == "on";
  auto pad = parsePadding(o.dp_padding);
  if (!pad) return pad.status();
  c.flags.dp_padding = *pad;
  auto red = parseReduction(o.reduction);
  if (!red) return red.status();
  c.flags.reduction = *red;
  auto mode = parseMode(o.mode);
  if (!mode) return mode.status();
  c.flags.mode = *mode;
  c.flags.layernorm_sp = o.ln_sp;
  if (o.dense_tp != "tp" && o.dense_tp != "1") {
    return Status::invalid("--dense-tp \"" + o.dense_tp.substr(0, 64) + "\" is not one of tp, 1");
  }
  c.flags.dense_tp1 = o.dense_tp == "1";
  c.flags.input_scattered = o.input_scattered;
  c.flags.dp_gatherv = o.dp_gatherv;
  c.flags.tbo = o.tbo;
  if (!o.capture.empty()) {
    auto cap = parseIntList(o.capture, "--capture");
    if (!cap) return cap.status();
    for (int s : *cap) {
      if (s >= c.model.pattern.size()) {
        return Status::invalid("--capture " + std::to_string(s) + " is not a stage of the " +
                               std::to_string(c.model.pattern.size()) + "-layer pattern");
      }
    }
    c.flags.capture = std::move(*cap);
  }
  if (Status st = validateCase(c); !st) return st;
  return c;
}

}  // namespace seam::tools

namespace seam::tools {

Expected<std::vector<const ModelPreset*>> trainingModels(const std::string& name) {
  std::vector<const ModelPreset*> all = trainingPresets();
  if (name.empty()) return all;
  auto p = findPreset(name);
  if (!p) return p.status();
  if (std::find(all.begin(), all.end(), *p) == all.end()) {
    return Status::invalid("--model \"" + name.substr(0, 64) +
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

Expected<TrainingCase> buildTrainingCase(const CaseOptions& o) {
  if (!o.pattern.empty()) return Status::invalid("--family training takes a --model preset, not a --pattern");
  if (o.model.empty()) return Status::invalid("--family training needs --model (nemotron-3-nano or nemotron-3-super)");
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
  c.config.sp = *layout == TrainingLayout::kMegatron && o.tp > 1;
  if (o.pp != 1) return Status::invalid("--pp " + std::to_string(o.pp) + ": the training layouts are modelled with pp = 1");
  if (o.moe_dp != 1) return Status::invalid("--moe-dp applies to serving; training experts' data parallel is derived");
  if (o.docs.empty()) {
    if (o.dp < 1 || o.cp < 1 || o.tp < 1) return Status::invalid("every parallel size must be >= 1");
    c.docs = trainingBatches(c.config).back();
  } else {
    auto docs = parseIntList(o.docs, "--docs");
    if (!docs) return docs.status();
    c.docs = *docs;
  }
  if (Status st = validateTrainingCase(c); !st) return st;
  return c;
}

}  // namespace seam::tools
