#include "seam/sim/model/model.h"

#include <cctype>
#include <string>

#include "model/presets_data.h"

namespace seam {

std::string_view familyName(LayerFamily family) {
  switch (family) {
    case LayerFamily::kSingleStage:
      return "single-stage";
    case LayerFamily::kTwoStage:
      return "two-stage";
    case LayerFamily::kParallelHybrid:
      return "parallel-hybrid";
    case LayerFamily::kBranchMerge:
      return "branch-merge";
  }
  return "?";
}

std::span<const ModelPreset> presets() { return {kPresets, static_cast<size_t>(kPresetCount)}; }

Expected<Pattern> ModelPreset::parsedPattern() const {
  if (family == LayerFamily::kBranchMerge) {
    // Written stage by stage in the single-stage alphabet, five per layer:
    // attention, the MoE branch, MLP, attention, MLP. After '/', the MTP
    // layer, which is an ordinary two-stage layer (LongcatFlashModelNextN's
    // dense decoder layer: attention, then one MLP), in that alphabet.
    const std::string_view text(stages);
    const size_t slash = text.find('/');
    Expected<Pattern> p = parsePattern(text.substr(0, slash), PatternAlphabet::kSingleStage);
    if (!p) return p;
    for (int i = 0; i < p->size(); ++i) {
      const LayerKind k = p->layers[i];
      const int role = i % 5;
      const bool ok = role == 0 || role == 3 ? isMixer(k)
                      : role == 1            ? k == LayerKind::kMoe
                                             : k == LayerKind::kDenseMlp;
      if (!ok || p->size() % 5 != 0 || !p->mtp.empty()) {
        return Status::invalid(
            "model " + std::string(name) + ": stage " + std::to_string(i) +
            " does not fit the branch-merge layer (mixer, MoE branch, MLP, mixer, MLP)");
      }
    }
    if (slash != std::string_view::npos) {
      // Parsed behind a placeholder main layer, so the MTP part follows the two-stage rules.
      Expected<Pattern> mtp =
          parsePattern("*-" + std::string(text.substr(slash)), PatternAlphabet::kTwoStage);
      if (!mtp)
        return Status::invalid("model " + std::string(name) + ": " + mtp.status().message());
      p->mtp = mtp->mtp;
    }
    return p;
  }
  if (family != LayerFamily::kSingleStage) return parsePattern(stages, PatternAlphabet::kTwoStage);
  if (pattern.empty()) {
    return Status::invalid("model " + std::string(name) + " (" + std::string(familyName(family)) +
                           ") has no layer pattern");
  }
  std::string text(pattern);
  if (!mtp_pattern.empty()) text += "/" + std::string(mtp_pattern);
  return parsePattern(text, PatternAlphabet::kSingleStage);
}

namespace {
bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}
}  // namespace

Expected<const ModelPreset*> findPreset(std::string_view name) {
  for (const ModelPreset& p : presets()) {
    if (equalsIgnoreCase(p.name, name)) return &p;
  }
  std::string names;
  for (const ModelPreset& p : presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  std::string shown(name.substr(0, 64));
  return Status::invalid("unknown model \"" + shown + "\" (known: " + names + ")");
}

namespace {
std::string str(int v) { return std::to_string(v); }
}  // namespace

Status fitsModel(const ModelPreset& model, const ParallelConfig& c) {
  const ModelShape& s = model.shape;
  const int atp = c.attnTp();
  const std::string who = "model " + std::string(model.name) + ": ";
  if (s.heads > 0 && s.heads % atp != 0) {
    return Status::invalid(who + "attn_tp=" + str(atp) + " does not divide heads=" + str(s.heads));
  }
  // KV heads are sharded when divisible, replicated when attn_tp is a multiple.
  if (s.kv_heads > 0 && s.kv_heads % atp != 0 && atp % s.kv_heads != 0) {
    return Status::invalid(who + "kv_heads=" + str(s.kv_heads) +
                           " neither divides nor is a multiple of attn_tp=" + str(atp));
  }
  // Mamba-2 heads and groups shard over attention TP (mamba2_cache_params).
  if (s.mamba_heads > 0 && s.mamba_heads % atp != 0) {
    return Status::invalid(who + "attn_tp=" + str(atp) +
                           " does not divide mamba_heads=" + str(s.mamba_heads));
  }
  if (s.mamba_groups > 1 && s.mamba_groups % atp != 0) {
    return Status::invalid(who + "attn_tp=" + str(atp) +
                           " does not divide mamba n_groups=" + str(s.mamba_groups));
  }
  if (!model.hasMoe()) {
    if (c.moe_ep != 1 || c.moe_dp != 1) {
      return Status::invalid(who + "a dense model has no MoE axes (moe_ep=" + str(c.moe_ep) +
                             " moe_dp=" + str(c.moe_dp) + ")");
    }
  } else if (s.moe_experts % c.moe_ep != 0) {
    return Status::invalid(who + "moe_ep=" + str(c.moe_ep) +
                           " does not divide experts=" + str(s.moe_experts));
  }
  if (c.pp > model.layers) {
    return Status::invalid(who + "pp=" + str(c.pp) + " exceeds layers=" + str(model.layers));
  }
  return Status::ok();
}

}  // namespace seam
