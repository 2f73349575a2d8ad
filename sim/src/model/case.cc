#include "seam/sim/model/case.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

#include "case_checks.h"
#include "seam/sim/base/decimal.h"

namespace seam {

namespace {

// User text echoed in a message stays one short printable line whatever
// arrives on the command line.
constexpr size_t kMaxEchoedChars = 64;

std::string echoed(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (char c : text.substr(0, kMaxEchoedChars)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      out += "\\x";
      out += kHex[(u >> 4) & 0xf];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string quotedOption(std::string_view option, std::string_view text) {
  return std::string(option) + " \"" + echoed(text) + "\"";
}

// One table per enum: the names in enum order, so name and parse cannot drift.
constexpr std::string_view kA2aNames[] = {"none", "deepep"};
constexpr std::string_view kPaddingNames[] = {"max_len", "sum_len"};
constexpr std::string_view kReductionNames[] = {"ar", "rs", "rsv", "rs+rsv"};
constexpr std::string_view kModeNames[] = {"decode", "extend"};
// --reduction as the case options take it: "auto", then kReductionNames in order.
constexpr std::string_view kReductionOptionNames[] = {"auto", "ar", "rs", "rsv", "rs+rsv"};
static_assert(std::size(kReductionOptionNames) == std::size(kReductionNames) + 1);

template <class E, size_t N>
Expected<E> parseNamed(std::string_view option, std::string_view text,
                       const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  std::string accepted;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) accepted += ", ";
    accepted += names[i];
  }
  return Status::invalid(quotedOption(option, text) + " is not one of " + accepted);
}

std::string joined(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool containsKind(const std::vector<LayerKind>& layers, LayerKind kind) {
  return std::find(layers.begin(), layers.end(), kind) != layers.end();
}

// fitsModel speaks ModelPreset; a case's model may be a bare pattern, so a
// temporary preset carries its name, family, layer count and shapes.
Status fitsCaseModel(const ModelRef& model, const ParallelConfig& config) {
  ModelPreset preset{};
  preset.name = model.name;
  preset.display_name = model.name;
  preset.family = model.family;
  preset.layers = model.pattern.size() / model.stagesPerLayer();
  preset.shape = model.shape;
  return fitsModel(preset, config);
}

}  // namespace

std::string_view a2aName(A2aBackend v) { return kA2aNames[static_cast<int>(v)]; }
std::string_view paddingName(DpPadding v) { return kPaddingNames[static_cast<int>(v)]; }
std::string_view reductionName(BoundaryReduction v) { return kReductionNames[static_cast<int>(v)]; }
std::string_view modeName(ForwardMode v) { return kModeNames[static_cast<int>(v)]; }

Expected<A2aBackend> parseA2a(std::string_view text) {
  return parseNamed<A2aBackend>("--a2a", text, kA2aNames);
}
Expected<DpPadding> parsePadding(std::string_view text) {
  return parseNamed<DpPadding>("--dp-padding", text, kPaddingNames);
}
Expected<BoundaryReduction> parseReduction(std::string_view text) {
  return parseNamed<BoundaryReduction>("--reduction", text, kReductionNames);
}
Expected<ForwardMode> parseMode(std::string_view text) {
  return parseNamed<ForwardMode>("--mode", text, kModeNames);
}
Expected<bool> parseFusion(std::string_view text) {
  if (text == "on") return true;
  if (text == "off") return false;
  return Status::invalid(quotedOption("--fusion", text) + " is not one of on, off");
}
Expected<std::optional<BoundaryReduction>> parseReductionOption(std::string_view text) {
  auto index = parseNamed<int>("--reduction", text, kReductionOptionNames);
  if (!index) return index.status();
  if (*index == 0) return std::optional<BoundaryReduction>();
  return std::optional<BoundaryReduction>(static_cast<BoundaryReduction>(*index - 1));
}

namespace {

template <class T>
bool listKeeps(const std::vector<T>& list, const T& value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
}

template <class T, class Name>
std::string listed(const char* key, const std::vector<T>& list, Name name) {
  if (list.empty()) return "";
  std::string out = std::string(" ") + key + "=";
  for (size_t i = 0; i < list.size(); ++i) out += (i > 0 ? "," : "") + std::string(name(list[i]));
  return out;
}

}  // namespace

bool FlagFilter::keeps(const ModelRef& model, const Flags& f) const {
  if (!listKeeps(a2a, f.a2a) || !listKeeps(fusion, static_cast<bool>(f.fusion)) ||
      !listKeeps(dp_padding, f.dp_padding) || !listKeeps(mode, f.mode)) {
    return false;
  }
  if (reduction.empty()) return true;
  return std::any_of(reduction.begin(), reduction.end(), [&](std::optional<BoundaryReduction> r) {
    return r.value_or(engineDefaultReduction(model)) == f.reduction;
  });
}

std::string FlagFilter::describe() const {
  return listed("a2a", a2a, a2aName) +
         listed("fusion", fusion, [](bool on) { return on ? "on" : "off"; }) +
         listed("padding", dp_padding, paddingName) +
         listed("reduction", reduction,
                [](std::optional<BoundaryReduction> r) {
                  return r ? reductionName(*r) : std::string_view("auto");
                }) +
         listed("mode", mode, modeName);
}

std::string Flags::describe() const {
  std::string out = "a2a=" + std::string(a2aName(a2a)) + " fusion=" + (fusion ? "on" : "off") +
                    " padding=" + std::string(paddingName(dp_padding)) +
                    " reduction=" + std::string(reductionName(reduction)) +
                    " mode=" + std::string(modeName(mode));
  if (layernorm_sp) out += " ln_sp=on";
  if (dense_tp1) out += " dense_tp=1";
  if (input_scattered) out += " input_scattered=on";
  if (dp_gatherv) out += " dp_gatherv=on";
  if (tbo) out += " tbo=on";
  if (!capture.empty()) out += " capture=" + joined(capture);
  return out;
}

int Batch::total() const {
  int sum = 0;
  for (int t : tokens) sum += t;
  return sum;
}

int Batch::maxShard() const {
  return tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end());
}

bool Batch::hasIdleShard() const {
  return std::find(tokens.begin(), tokens.end(), 0) != tokens.end();
}

std::string Batch::describe() const { return joined(tokens); }

Expected<Batch> parseBatch(std::string_view text) {
  const std::string what = quotedOption("--tokens", text);
  if (text.empty())
    return Status::invalid(what + ": no entries (expected token counts per DP shard, e.g. 4,0,3)");
  Batch batch;
  std::int64_t total = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view field = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::string shard = "shard " + std::to_string(batch.tokens.size());
    if (field.empty()) return Status::invalid(what + ": " + shard + " is empty");
    // Digits only: no signs, spaces or hex.
    const bool digits =
        std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      return Status::invalid(what + ": " + shard + " \"" + echoed(field) +
                             "\" is not a token count (a non-negative integer)");
    }
    const std::optional<std::int64_t> parsed = parseDecimal(field, 0, kMaxTokensPerShard);
    const std::int64_t value = parsed.value_or(0);
    if (!parsed) {
      return Status::invalid(what + ": " + shard + " \"" + echoed(field) + "\" exceeds " +
                             std::to_string(kMaxTokensPerShard) + " tokens per shard");
    }
    total += value;
    if (total > INT_MAX) {
      return Status::invalid(what + ": more than " + std::to_string(INT_MAX) + " tokens in all");
    }
    batch.tokens.push_back(static_cast<int>(value));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (total == 0) return Status::invalid(what + ": no tokens in the batch");
  return batch;
}

Expected<ModelRef> modelFromPreset(const ModelPreset& preset) {
  const std::string name(preset.name);
  Expected<Pattern> pattern = preset.parsedPattern();
  if (!pattern) return pattern.status();
  return ModelRef{name,
                  preset.family,
                  std::move(pattern).value(),
                  preset.shape,
                  preset.allow_reduce_scatter,
                  std::string(preset.architecture)};
}

Expected<ModelRef> modelFromPattern(std::string_view text, LayerFamily family) {
  const bool two = family != LayerFamily::kSingleStage;
  Expected<Pattern> pattern =
      parsePattern(text, two ? PatternAlphabet::kTwoStage : PatternAlphabet::kSingleStage);
  if (!pattern) return pattern.status();
  const bool moe =
      containsKind(pattern->layers, LayerKind::kMoe) || containsKind(pattern->mtp, LayerKind::kMoe);
  const char* donor_name =
      two ? (moe ? "deepseek-v3" : "qwen3-8b") : (moe ? "nemotron-3-nano" : "nemotron-h-8b");
  Expected<const ModelPreset*> donor = findPreset(donor_name);
  assert(donor.hasValue() && "the shape donor presets are compiled in");
  ModelShape shape = (*donor)->shape;
  // A parallel mixer (P) reads Mamba-2 shapes too: borrow Falcon-H1-7B's.
  if (containsKind(pattern->layers, LayerKind::kParallelMixer)) {
    Expected<const ModelPreset*> falcon = findPreset("falcon-h1-7b");
    assert(falcon.hasValue() && "the shape donor presets are compiled in");
    shape.mamba_heads = (*falcon)->shape.mamba_heads;
    shape.mamba_head_dim = (*falcon)->shape.mamba_head_dim;
    shape.mamba_groups = (*falcon)->shape.mamba_groups;
    shape.ssm_state = (*falcon)->shape.ssm_state;
  }
  return ModelRef{"pattern",
                  two ? LayerFamily::kTwoStage : LayerFamily::kSingleStage,
                  std::move(pattern).value(),
                  shape,
                  (*donor)->allow_reduce_scatter,
                  std::string((*donor)->architecture)};
}

Expected<LayerFamily> parsePatternFamily(std::string_view text) {
  if (text == "single-stage") return LayerFamily::kSingleStage;
  if (text == "two-stage") return LayerFamily::kTwoStage;
  return Status::invalid("--family \"" + std::string(text.substr(0, 64)) +
                         "\" is not one of single-stage, two-stage");
}

Status validateCase(const Case& c) {
  if (Status s = validate(c.config); !s) return s;
  return validateCaseAgainstConfig(c);
}

Status validateCaseAgainstConfig(const Case& c) {
  // Built only on the error paths: validation runs once per planned case.
  auto tokensText = [&] { return "--tokens \"" + c.batch.describe() + "\""; };
  if (static_cast<int>(c.batch.tokens.size()) != c.config.attn_dp) {
    const std::string tokens = tokensText();
    return Status::invalid(tokens + " has " + plural(c.batch.tokens.size(), "entry", "entries") +
                           " but attn_dp=" + std::to_string(c.config.attn_dp) +
                           " (one per DP shard)");
  }
  // A programmatic batch skips parseBatch, so its range is checked here too.
  std::int64_t total = 0;
  for (size_t d = 0; d < c.batch.tokens.size(); ++d) {
    const int t = c.batch.tokens[d];
    if (t < 0 || t > kMaxTokensPerShard) {
      return Status::invalid(tokensText() + ": shard " + std::to_string(d) + " has " +
                             std::to_string(t) + " tokens (0.." +
                             std::to_string(kMaxTokensPerShard) + ")");
    }
    total += t;
  }
  if (total == 0) return Status::invalid(tokensText() + ": no tokens in the batch");
  if (total > INT_MAX)
    return Status::invalid(tokensText() + ": more than " + std::to_string(INT_MAX) +
                           " tokens in all");
  // fitsModel also refuses pp above the number of layers.
  if (Status s = fitsCaseModel(c.model, c.config); !s) return s;
  const std::vector<int>& cuts = c.model.pattern.cuts;
  if (!cuts.empty() && static_cast<int>(cuts.size()) + 1 != c.config.pp) {
    return Status::invalid("pattern has " + plural(cuts.size(), "pipeline cut", "pipeline cuts") +
                           " but pp=" + std::to_string(c.config.pp));
  }
  return Status::ok();
}

BoundaryReduction engineDefaultReduction(const ModelRef& model) {
  // seam's presets have one architecture each of _RSV_ARCHITECTURES and
  // _AR_ARCHITECTURES; the rest fall through to the catch-all.
  if (model.architecture == "LongcatFlashForCausalLM") return BoundaryReduction::kRsv;
  if (model.architecture == "Qwen3ForCausalLM") return BoundaryReduction::kAr;
  return BoundaryReduction::kRsRsv;
}

bool isQwen3Dense(const ModelRef& model) {
  if (model.family != LayerFamily::kTwoStage || model.shape.q_lora_rank > 0) return false;
  for (LayerKind k : model.pattern.layers) {
    if (k != LayerKind::kAttention && k != LayerKind::kDenseMlp) return false;
  }
  return true;
}

/// _deepseek_family_overrides (arg_groups/overrides.py, the MLA prefill CP
/// block; server_args.py @001067fffe33 delegates to it): --enable-prefill-cp on
/// an MLA DeepSeek-family model (seam's MLA presets, deepseek-v3 and
/// longcat-flash; attn_cp > 1 is that flag) silently sets moe_a2a_backend
/// deepep, ep_size = tp, moe_dense_tp_size 1 and attn_cp_size = tp // dp (so
/// attn_tp 1), whatever was asked, for every batch: a start-up rewrite. seam
/// refuses the asked configuration and names the one the engine runs.
Status mlaCpOverride(const Case& c) {
  const ParallelConfig& p = c.config;
  if (c.model.family != LayerFamily::kTwoStage || c.model.shape.q_lora_rank <= 0 ||
      p.attn_cp <= 1) {
    return Status::ok();
  }
  bool moe = false, dense = false;
  for (const auto* layers : {&c.model.pattern.layers, &c.model.pattern.mtp}) {
    for (LayerKind k : *layers) {
      moe = moe || k == LayerKind::kMoe;
      dense = dense || k == LayerKind::kDenseMlp;
    }
  }
  const bool a2a_ok = !moe || (c.flags.a2a == A2aBackend::kDeepep && p.moe_ep == p.tp);
  const bool dense_ok = !dense || c.flags.dense_tp1;
  if (a2a_ok && dense_ok && p.attn_cp == p.tp / p.attn_dp) return Status::ok();
  return Status::refused(
      "SGLang's _deepseek_family_overrides runs MLA prefill CP only with --moe-a2a-backend deepep, "
      "ep_size = tp, moe_dense_tp_size = 1 and attn_cp_size = tp // dp = " +
      std::to_string(p.tp / p.attn_dp) + " (asked: a2a " + std::string(a2aName(c.flags.a2a)) +
      ", ep " + std::to_string(p.moe_ep) + ", dense tp " + (c.flags.dense_tp1 ? "1" : "tp") +
      ", attn_cp " + std::to_string(p.attn_cp) + ")");
}

Status serverArgsRefusal(const Case& c) {
  if (Status st = mlaCpOverride(c); !st) return st;
  if (Status st = serverArgsMoeDp(c.config); !st) return st;
  const bool mtp = !c.model.pattern.mtp.empty();
  if (c.config.pp > 1 && (mtp || !c.flags.capture.empty())) {
    // An MTP step runs as the speculative draft (NEXTN/EAGLE), a capture
    // feeds an EAGLE3 draft: either way speculative_algorithm is set.
    return Status::refused(
        "Pipeline parallelism is not compatible with overlap schedule, speculative decoding "
        "(AssertionError in ServerArgs.check_server_args; pp=" +
        std::to_string(c.config.pp) +
        (mtp ? " with the model's MTP step" : " with EAGLE3 aux capture") + ")");
  }
  if (c.flags.tbo && c.flags.a2a == A2aBackend::kNone && c.config.attn_dp == 1) {
    // cp_tbo (the exemption) needs ROCm and DSA round-robin CP: not seam's.
    return Status::refused(
        "When enabling two batch overlap without an EP a2a backend (moe_a2a_backend='none'), "
        "--enable-dp-attention is required (DeepSeek-V4 non-EP DP TBO path). (ValueError in "
        "ServerArgs._check_two_batch_overlap; attn_dp=1)");
  }
  return Status::ok();
}

std::string reproduceCommand(const Case& c, std::string_view policy) {
  std::string out = "seam check";
  if (findPreset(c.model.name).hasValue()) {
    out += " --model " + c.model.name;
  } else {
    // Pattern text is M * G P - E | / only, so single quotes are enough for a shell.
    out += " --pattern '" + c.model.pattern.text() + "'";
    if (c.model.family != LayerFamily::kSingleStage) out += " --family two-stage";
  }
  const ParallelConfig& p = c.config;
  out += " --tp " + std::to_string(p.tp) + " --pp " + std::to_string(p.pp) + " --dp " +
         std::to_string(p.attn_dp) + " --cp " + std::to_string(p.attn_cp) + " --ep " +
         std::to_string(p.moe_ep) + " --moe-dp " + std::to_string(p.moe_dp);
  out += " --tokens " + c.batch.describe();
  const Flags& f = c.flags;
  out += " --a2a " + std::string(a2aName(f.a2a)) + " --fusion " + (f.fusion ? "on" : "off") +
         " --dp-padding " + std::string(paddingName(f.dp_padding)) + " --reduction " +
         std::string(reductionName(f.reduction)) + " --mode " + std::string(modeName(f.mode));
  out += " --policy " + std::string(policy);
  if (f.layernorm_sp) out += " --ln-sp";
  if (f.dense_tp1) out += " --dense-tp 1";
  if (f.input_scattered) out += " --input-scattered";
  if (f.dp_gatherv) out += " --dp-gatherv";
  if (f.tbo) out += " --tbo";
  if (!f.capture.empty()) out += " --capture " + joined(f.capture);
  return out;
}

}  // namespace seam
