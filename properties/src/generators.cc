#include "seam/properties/generators.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "seam/sim/model/model.h"
#include "seam/sim/plan/rows.h"
#include "seam/sim/policy/policy.h"

namespace seam::properties {

namespace gen = rc::gen;

// How the generators are built, and why.
//
// A case is drawn as independent *leaves* (world, pattern, config leaves, cut
// leaves, flag leaves, shard leaves), combined by a pure function. rapidcheck
// shrinks a tuple one component at a time with the others fixed, so every
// leaf keeps what it has shrunk to while another one shrinks. Chaining the
// parts with mapcat instead (pattern -> config -> flags) regenerates the later
// parts from scratch whenever an earlier one shrinks, undoing their progress:
// a planted FFN->mixer bug stayed at 'EMMM' because removing a layer brought
// back the pp = 2 that had already shrunk to 1.
//
// Leaves that choose along a list whose length depends on other parts (the
// divisors of tp, the stages of the pattern, the free cut positions) are
// positions in [0, kLeafScale], scaled to the list when the case is put
// together, so that a shrink elsewhere moves them little.

namespace {

constexpr int kLeafScale = 1000;
/// Shard leaves drawn; attention DP shards beyond them reuse them in turn.
constexpr int kShardLeaves = 16;
/// Cut leaves drawn; cuts beyond them reuse them in turn.
constexpr int kCutLeaves = 16;
constexpr int kMaxCaptures = 2;
constexpr int kMaxGeneratedTokens = 9;
constexpr int kMaxMtpLayers = 2;

// rapidcheck's inRange narrows its range with the size; these choices must be
// uniform at every size, yet still shrink towards 0 (the simplest option).
rc::Gen<int> genIndex(int n) { return gen::resize(rc::kNominalSize, gen::inRange(0, n)); }

// One of `values`, uniformly; shrinks towards the first.
template <class T>
rc::Gen<T> genOneValueOf(std::vector<T> values) {
  assert(!values.empty() && "a choice needs an option");
  const int n = static_cast<int>(values.size());
  return gen::map(genIndex(n), [values = std::move(values)](int i) { return values[i]; });
}

// One of the generators, picked with the given weights; shrinks towards the
// first alternative (rapidcheck's weightedOneOf never shrinks its choice).
template <class T>
rc::Gen<T> genWeighted(std::vector<std::pair<int, rc::Gen<T>>> alternatives) {
  int total = 0;
  for (const auto& [weight, g] : alternatives) total += weight;
  assert(total > 0 && "weights must not all be zero");
  return gen::mapcat(genIndex(total), [alternatives = std::move(alternatives)](int pick) {
    for (const auto& [weight, g] : alternatives) {
      if (pick < weight) return g;
      pick -= weight;
    }
    return alternatives.back().second;
  });
}

// A position in [0, kLeafScale]: 0 (the simple end) with weight
// `zero_weight` against 1 for a uniform position.
rc::Gen<int> genLeaf(int zero_weight = 0) {
  if (zero_weight == 0) return genIndex(kLeafScale + 1);
  return genWeighted<int>({{zero_weight, gen::just(0)}, {1, genIndex(kLeafScale + 1)}});
}

// The entry of a list of `n` (n >= 1) at position leaf / kLeafScale along it.
int scaledIndex(int leaf, int n) { return (leaf * (n - 1) + kLeafScale / 2) / kLeafScale; }

// 1..max_layers layers of `kind`, longer as the rapidcheck size grows (up to
// max_layers at the nominal size); shrinks by removing runs of layers.
rc::Gen<std::vector<LayerKind>> genStack(int max_layers, const rc::Gen<LayerKind>& kind) {
  return gen::withSize([=](int size) {
    const int bound = std::clamp(size * max_layers / rc::kNominalSize, 1, max_layers);
    return gen::nonEmpty(gen::resize(bound, gen::container<std::vector<LayerKind>>(kind)));
  });
}

bool hasMoe(const Pattern& p) {
  auto moe = [](LayerKind k) { return k == LayerKind::kMoe; };
  return std::any_of(p.layers.begin(), p.layers.end(), moe) ||
         std::any_of(p.mtp.begin(), p.mtp.end(), moe);
}

// The fit probe of a bare pattern (as the sweep builds it): shapes and layer count.
ModelPreset probeOf(const ModelRef& m) {
  ModelPreset p{};
  p.name = m.name;
  p.display_name = m.name;
  p.family = m.family;
  p.layers = m.pattern.size() / m.stagesPerLayer();
  p.shape = m.shape;
  return p;
}

// ---- config -------------------------------------------------------------------

// A config as positions along each axis' divisors; the case takes the entry
// of the ConfigSpace nearest to what they describe.
struct ConfigLeaves {
  int pp = 0;        ///< along divisors(world); 0: pp = 1
  int attn_dp = 0;   ///< along divisors(tp); 0: no DP attention
  int attn_cp = 0;   ///< along divisors(tp / attn_dp); 0: no CP
  int ep_split = 0;  ///< along divisors(tp) from the top; 0: moe_ep = tp (SGLang's EP setting)
  int moe_dp = 0;    ///< 0: moe_dp = 1; else attn_cp where ServerArgs accepts it (serverArgsMoeDp)
};

rc::Gen<ConfigLeaves> genConfigLeaves() {
  // attn_cp > 1 is refused for these layers: keep it rare.
  constexpr int kCpZeroWeight = 9;
  return gen::build<ConfigLeaves>(
      gen::set(&ConfigLeaves::pp, genLeaf(1)), gen::set(&ConfigLeaves::attn_dp, genLeaf(1)),
      gen::set(&ConfigLeaves::attn_cp, genLeaf(kCpZeroWeight)),
      gen::set(&ConfigLeaves::ep_split, genLeaf(1)), gen::set(&ConfigLeaves::moe_dp, genLeaf(1)));
}

// The divisor of n at position leaf / kLeafScale along its divisors (from
// the largest when from_top).
int divisorAt(int n, int leaf, bool from_top = false) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) d.push_back(k);
  }
  const size_t i = static_cast<size_t>(scaledIndex(leaf, static_cast<int>(d.size())));
  return from_top ? d[d.size() - 1 - i] : d[i];
}

ParallelConfig desiredConfig(const ConfigLeaves& leaves, int world) {
  ParallelConfig c;
  c.pp = divisorAt(world, leaves.pp);
  c.tp = world / c.pp;
  c.attn_dp = divisorAt(c.tp, leaves.attn_dp);
  c.attn_cp = divisorAt(c.tp / c.attn_dp, leaves.attn_cp);
  c.moe_ep = divisorAt(c.tp, leaves.ep_split, /*from_top=*/true);
  if (leaves.moe_dp != 0 && (c.tp / c.moe_ep) % c.attn_cp == 0) {
    c.moe_dp = c.attn_cp;
    if (!serverArgsMoeDp(c)) c.moe_dp = 1;
  }
  return c;
}

// How far apart two configs are, in factors of two per leaf (EP as
// tp / moe_ep, so that "EP spans TP" survives a change of tp). A step of CP
// counts double: when the wanted config does not fit the model, the nearest
// should not be a refused CP config (they come first in ConfigSpace order).
double configDistance(const ParallelConfig& a, const ParallelConfig& b) {
  constexpr double kCpStep = 2;
  auto far = [](int x, int y) { return std::abs(std::log2(static_cast<double>(x) / y)); };
  return far(a.pp, b.pp) + far(a.attn_dp, b.attn_dp) + kCpStep * far(a.attn_cp, b.attn_cp) +
         far(a.tp / a.moe_ep, b.tp / b.moe_ep) + far(a.moe_dp, b.moe_dp);
}

// The config of the space nearest to `want`; the first of equally near ones.
ParallelConfig nearestConfig(const std::vector<ParallelConfig>& configs,
                             const ParallelConfig& want) {
  const ParallelConfig* best = &configs.front();
  double best_distance = configDistance(*best, want);
  for (const ParallelConfig& c : configs) {
    const double d = configDistance(c, want);
    if (d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  return *best;
}

bool isMla(const ModelRef& model) {
  return model.family == LayerFamily::kTwoStage && model.shape.q_lora_rank > 0;
}

// MLA prefill CP as _deepseek_family_overrides runs it (serverArgsRefusal
// refuses any other ask): attn_cp = tp / attn_dp (attn_tp 1), ep = tp, moe_dp 1.
ParallelConfig asEngineRuns(const ModelRef& model, ParallelConfig c) {
  if (!isMla(model) || c.attn_cp <= 1) return c;
  c.attn_cp = c.tp / c.attn_dp;
  c.moe_ep = c.tp;
  c.moe_dp = 1;
  return c;
}

std::vector<ParallelConfig> configsFor(const ModelRef& model, int world);

// The config of the space nearest to what the leaves describe, among those
// the engine runs as asked (MLA CP only in asEngineRuns' form).
ParallelConfig configFrom(const ModelRef& model, int world, const ConfigLeaves& leaves) {
  std::vector<ParallelConfig> configs = configsFor(model, world);
  std::vector<ParallelConfig> runs;
  for (const ParallelConfig& c : configs) {
    if (isMla(model) && c.attn_cp > 1 && !(asEngineRuns(model, c) == c)) continue;
    runs.push_back(c);
  }
  return nearestConfig(runs.empty() ? configs : runs,
                       asEngineRuns(model, desiredConfig(leaves, world)));
}

// The valid configs of `world` for `model`; a broken precondition (world out
// of range, nothing fits) fails generation with the reason.
std::vector<ParallelConfig> configsFor(const ModelRef& model, int world) {
  const ModelPreset probe = probeOf(model);
  auto space = ConfigSpace::build(world, &probe);
  if (!space) throw rc::GenerationFailure(space.status().message());
  if (space->size() == 0) {
    throw rc::GenerationFailure("no parallel config of world " + std::to_string(world) +
                                " fits pattern " + model.pattern.text());
  }
  return space->all();
}

// ---- cuts, flags, batch ------------------------------------------------------------

struct CutLeaves {
  bool on = false;             ///< false: SGLang's even split
  std::vector<int> positions;  ///< kCutLeaves positions among the free cut positions
};

rc::Gen<CutLeaves> genCutLeaves() {
  return gen::build<CutLeaves>(
      gen::set(&CutLeaves::on, genOneValueOf<bool>({false, true})),
      gen::set(&CutLeaves::positions, gen::container<std::vector<int>>(kCutLeaves, genLeaf())));
}

std::vector<int> cutsFrom(const CutLeaves& leaves, int layers, int pp) {
  if (!leaves.on || pp <= 1 || layers < pp) return {};
  std::vector<int> free;
  for (int i = 1; i < layers; ++i) free.push_back(i);
  std::vector<int> out;
  for (int k = 0; k < pp - 1; ++k) {
    const int leaf = leaves.positions[k % leaves.positions.size()];
    const size_t at = static_cast<size_t>(scaledIndex(leaf, static_cast<int>(free.size())));
    out.push_back(free[at]);
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(at));
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct FlagLeaves {
  Flags flags;               ///< a2a as drawn (dropped where deepep does not apply); no capture
  std::vector<int> capture;  ///< positions along the main stack's stages
};

rc::Gen<FlagLeaves> genFlagLeaves() {
  auto flags = gen::build<Flags>(
      gen::set(&Flags::a2a, genOneValueOf<A2aBackend>({A2aBackend::kNone, A2aBackend::kDeepep})),
      gen::set(&Flags::fusion, genOneValueOf<bool>({true, false})),
      gen::set(&Flags::dp_padding,
               genOneValueOf<DpPadding>({DpPadding::kMaxLen, DpPadding::kSumLen})),
      gen::set(&Flags::reduction, genOneValueOf<BoundaryReduction>(
                                      {BoundaryReduction::kAr, BoundaryReduction::kRs,
                                       BoundaryReduction::kRsv, BoundaryReduction::kRsRsv})),
      gen::set(&Flags::mode,
               genOneValueOf<ForwardMode>({ForwardMode::kDecode, ForwardMode::kExtend})),
      gen::set(&Flags::dense_tp1, genWeighted<bool>({{3, gen::just(false)}, {1, gen::just(true)}})),
      gen::set(&Flags::input_scattered,
               genWeighted<bool>({{3, gen::just(false)}, {1, gen::just(true)}})),
      gen::set(&Flags::tbo, genWeighted<bool>({{3, gen::just(false)}, {1, gen::just(true)}})),
      gen::set(&Flags::layernorm_sp,
               genWeighted<bool>({{3, gen::just(false)}, {1, gen::just(true)}})));
  // Usually no snapshot; sometimes one or two (EAGLE3's aux hidden states).
  auto some = gen::nonEmpty(gen::resize(kMaxCaptures, gen::container<std::vector<int>>(genLeaf())));
  auto capture = genWeighted<std::vector<int>>({{4, gen::just(std::vector<int>{})}, {1, some}});
  return gen::build<FlagLeaves>(gen::set(&FlagLeaves::flags, flags),
                                gen::set(&FlagLeaves::capture, capture));
}

Flags flagsFrom(const FlagLeaves& leaves, const ModelRef& model, const ParallelConfig& config) {
  Flags f = leaves.flags;
  // SGLang runs DeepEP with ep_size = tp_size; other combinations are only refusals.
  if (!hasMoe(model.pattern) || config.moe_ep != config.tp) f.a2a = A2aBackend::kNone;
  // The two-stage variants: fully-DP dense FFNs; input-scattered attention on
  // the extend batches it runs on (tp > 1, no DP attention, a2a none).
  const bool two = model.family != LayerFamily::kSingleStage;
  f.dense_tp1 = two && f.dense_tp1;
  if (isMla(model) && config.attn_cp > 1) {
    // _deepseek_family_overrides: deepep (ep = tp: asEngineRuns) and moe_dense_tp_size 1.
    if (hasMoe(model.pattern) && config.moe_ep == config.tp) f.a2a = A2aBackend::kDeepep;
    f.dense_tp1 = true;
  }
  f.input_scattered = two && f.input_scattered && config.tp > 1 && config.attn_dp == 1 &&
                      f.a2a == A2aBackend::kNone && !f.dense_tp1;
  if (f.input_scattered) f.mode = ForwardMode::kExtend;
  // LayerNorm SP where the engine runs it and seam models it: Qwen3 dense,
  // tp > 1, no DP attention or attention CP, no MTP step or capture, extend.
  f.layernorm_sp = f.layernorm_sp && isQwen3Dense(model) && config.tp > 1 && config.attn_dp == 1 &&
                   config.attn_cp == 1 && model.pattern.mtp.empty() && !f.dense_tp1 &&
                   !f.input_scattered;
  if (f.layernorm_sp) {
    f.mode = ForwardMode::kExtend;
    f.tbo = false;
    f.capture.clear();
    return f;
  }
  // Two-batch overlap where seam models it: an a2a backend or DP attention,
  // one pipeline stage, no capture (the policy refuses the layers it does
  // not run). Under attention CP a CP-sharded batch runs whole and any other
  // splits over the CP replicas (research note B7).
  f.tbo = two && f.tbo && !f.input_scattered &&
          (f.a2a != A2aBackend::kNone || config.attn_dp > 1) && config.pp == 1;
  f.capture.clear();
  if (f.tbo) return f;
  // Captures sit before a decoder layer: stage layer * stages-per-layer.
  const int spl = model.stagesPerLayer();
  const int layers = std::max(1, model.pattern.size() / spl);
  // The engine does not run input-scattered attention with EAGLE3 captures,
  // nor speculative decoding under pp > 1 (serverArgsRefusal).
  if (f.input_scattered || config.pp > 1) return f;
  for (int leaf : leaves.capture) f.capture.push_back(scaledIndex(leaf, layers) * spl);
  std::sort(f.capture.begin(), f.capture.end());
  f.capture.erase(std::unique(f.capture.begin(), f.capture.end()), f.capture.end());
  return f;
}

// Tokens of one shard: busy (1..9) first, so that shrinking moves towards one
// token everywhere; idle (0) one time in four; one time in twenty at a token
// bound of the planner's gates (one below, at, one past: prefill CP's zigzag
// minimum, the fusion gate's 2048), which shrinks towards the bound's lower
// side, so a failure found there shrinks to the smallest failing count.
rc::Gen<std::vector<int>> genShardLeaves() {
  const auto busy = gen::map(genIndex(kMaxGeneratedTokens), [](int i) { return i + 1; });
  const auto near = [](int bound) {
    return gen::map(genIndex(3), [bound](int i) { return bound - 1 + i; });
  };
  const auto bound = gen::oneOf(near(kZigzagMinTokens), near(kFuseMaxTokens));
  const auto shard = genWeighted<int>({{14, busy}, {5, gen::just(0)}, {1, bound}});
  return gen::container<std::vector<int>>(kShardLeaves, shard);
}

Batch batchFrom(const std::vector<int>& leaves, int shards) {
  Batch b;
  for (int d = 0; d < shards; ++d) b.tokens.push_back(leaves[d % leaves.size()]);
  if (b.total() == 0) {
    // Every shard idle: the batch needs a token; take the first busy leaf.
    const auto busy = std::find_if(leaves.begin(), leaves.end(), [](int t) { return t > 0; });
    b.tokens.front() = busy != leaves.end() ? *busy : 1;
  }
  return b;
}

/// A generated stack and the family it is written in.
struct FamilyPattern {
  LayerFamily family = LayerFamily::kSingleStage;
  Pattern pattern;
};

ModelRef modelOf(const FamilyPattern& fp) {
  Expected<ModelRef> model = modelFromPattern(fp.pattern.text(), fp.family);
  if (!model)
    throw rc::GenerationFailure("generated an unparsable pattern: " + model.status().message());
  return std::move(model).value();
}

Case assembleCase(int world, const FamilyPattern& pattern, const ConfigLeaves& config_leaves,
                  const CutLeaves& cut_leaves, const FlagLeaves& flag_leaves,
                  const std::vector<int>& shard_leaves) {
  Case c;
  c.model = modelOf(pattern);
  c.config = configFrom(c.model, world, config_leaves);
  // Cuts fall between decoder layers.
  const int spl = c.model.stagesPerLayer();
  c.model.pattern.cuts = cutsFrom(cut_leaves, c.model.pattern.size() / spl, c.config.pp);
  // ServerArgs refuses speculative decoding under pp > 1 (serverArgsRefusal):
  // there the stack is served without its MTP step.
  if (c.config.pp > 1) c.model.pattern.mtp.clear();
  for (int& cut : c.model.pattern.cuts) cut *= spl;
  c.flags = flagsFrom(flag_leaves, c.model, c.config);
  c.batch = batchFrom(shard_leaves, c.config.attn_dp);
  return c;
}

}  // namespace

rc::Gen<int> genWorld() {
  return genOneValueOf(std::vector<int>(std::begin(kGeneratedWorlds), std::end(kGeneratedWorlds)));
}

rc::Gen<LayerKind> genLayerKind() {
  return genOneValueOf<LayerKind>(
      {LayerKind::kMamba, LayerKind::kDenseMlp, LayerKind::kAttention, LayerKind::kMoe});
}

rc::Gen<Pattern> genPattern(int max_layers) {
  assert(max_layers >= 1 && "a pattern has at least one layer");
  const auto ffn = genOneValueOf<LayerKind>({LayerKind::kDenseMlp, LayerKind::kMoe});
  const auto mixer = genOneValueOf<LayerKind>({LayerKind::kMamba, LayerKind::kAttention});
  const auto mtp_kind = genOneValueOf<LayerKind>({LayerKind::kAttention, LayerKind::kMoe});
  // Mixed stacks carry most of the synthetic shapes (FFN after FFN, an FFN
  // first); all-FFN and all-mixer stacks are drawn on purpose.
  auto stack = genWeighted<std::vector<LayerKind>>({{8, genStack(max_layers, genLayerKind())},
                                                    {1, genStack(max_layers, ffn)},
                                                    {1, genStack(max_layers, mixer)}});
  // One MTP depth of * and E (SGLang runs one MTP step; checkpoints use "*E").
  auto mtp = genWeighted<std::vector<LayerKind>>(
      {{9, gen::just(std::vector<LayerKind>{})}, {1, genStack(kMaxMtpLayers, mtp_kind)}});
  return gen::apply(
      [](std::vector<LayerKind> layers, std::vector<LayerKind> tail) {
        Pattern p;
        p.layers = std::move(layers);
        p.mtp = std::move(tail);
        return p;
      },
      stack, mtp);
}

rc::Gen<Pattern> genTwoStagePattern(int max_layers) {
  assert(max_layers >= 2 && "a two-stage pattern has at least one decoder layer");
  const auto mixer = genOneValueOf<LayerKind>({LayerKind::kAttention, LayerKind::kGatedDeltaNet,
                                               LayerKind::kMamba, LayerKind::kParallelMixer});
  const auto ffn = genOneValueOf<LayerKind>({LayerKind::kDenseMlp, LayerKind::kMoe});
  const auto layer = gen::apply(
      [](LayerKind m, LayerKind f) {
        return std::vector<LayerKind>{m, f};
      },
      mixer, ffn);
  const auto layers = gen::withSize([=](int size) {
    const int bound = std::clamp(size * (max_layers / 2) / rc::kNominalSize, 1, max_layers / 2);
    return gen::nonEmpty(
        gen::resize(bound, gen::container<std::vector<std::vector<LayerKind>>>(layer)));
  });
  // DeepSeek's nextn layer: attention then MoE.
  auto mtp = genWeighted<std::vector<LayerKind>>(
      {{9, gen::just(std::vector<LayerKind>{})},
       {1, gen::just(std::vector<LayerKind>{LayerKind::kAttention, LayerKind::kMoe})}});
  const auto mixed = gen::apply(
      [](const std::vector<std::vector<LayerKind>>& pairs, std::vector<LayerKind> tail) {
        Pattern p;
        for (const auto& pair : pairs) p.layers.insert(p.layers.end(), pair.begin(), pair.end());
        p.mtp = std::move(tail);
        return p;
      },
      layers, mtp);
  if (max_layers < 4) return mixed;
  // One stack in four is DeepSeek's: first-k dense attention layers, then
  // sparse ones (the two-batch-overlap range, tbo.h).
  const int most = std::max(1, max_layers / 4);
  const auto deepseek = gen::apply(
      [](int dense, int sparse, std::vector<LayerKind> tail) {
        Pattern p;
        for (int l = 0; l < dense + sparse; ++l) {
          p.layers.push_back(LayerKind::kAttention);
          p.layers.push_back(l < dense ? LayerKind::kDenseMlp : LayerKind::kMoe);
        }
        p.mtp = std::move(tail);
        return p;
      },
      gen::inRange(1, most + 1), gen::inRange(1, most + 1), mtp);
  // One in eight is Qwen3 dense (GQA attention, dense MLPs, no MTP step):
  // the one architecture SGLang runs LayerNorm SP on.
  const auto qwen3 = gen::map(gen::inRange(1, most + 1), [](int layers) {
    Pattern p;
    for (int l = 0; l < layers; ++l) {
      p.layers.push_back(LayerKind::kAttention);
      p.layers.push_back(LayerKind::kDenseMlp);
    }
    return p;
  });
  // Drawn by a number that shrinks to 0, the mixed stacks: a failure found
  // on a DeepSeek or Qwen3 stack can still shrink to a mixed one.
  return gen::mapcat(gen::inRange(0, 8), [mixed, deepseek, qwen3](int k) {
    return k >= 6 ? deepseek : k == 5 ? qwen3 : mixed;
  });
}

rc::Gen<ParallelConfig> genConfig(const ModelRef& model, int world) {
  const rc::Gen<int> worlds = world == 0 ? genWorld() : gen::just(world);
  return gen::apply(
      [model](int w, const ConfigLeaves& leaves) { return configFrom(model, w, leaves); }, worlds,
      genConfigLeaves());
}

rc::Gen<Flags> genFlags(const ModelRef& model, const ParallelConfig& config) {
  return gen::map(genFlagLeaves(), [model, config](const FlagLeaves& leaves) {
    return flagsFrom(leaves, model, config);
  });
}

rc::Gen<Batch> genBatch(const ParallelConfig& config) {
  const int shards = std::max(1, config.attn_dp);
  return gen::map(genShardLeaves(),
                  [shards](const std::vector<int>& leaves) { return batchFrom(leaves, shards); });
}

rc::Gen<std::vector<int>> genCuts(int layers, int pp) {
  return gen::map(genCutLeaves(),
                  [layers, pp](const CutLeaves& leaves) { return cutsFrom(leaves, layers, pp); });
}

rc::Gen<Case> genCase(int world, int max_layers) {
  const rc::Gen<int> worlds = world == 0 ? genWorld() : gen::just(world);
  // Single-stage stacks three times in four, two-stage stacks otherwise.
  const auto single = gen::map(genPattern(max_layers), [](Pattern p) {
    return FamilyPattern{LayerFamily::kSingleStage, std::move(p)};
  });
  const auto two = gen::map(genTwoStagePattern(std::max(2, max_layers)), [](Pattern p) {
    return FamilyPattern{LayerFamily::kTwoStage, std::move(p)};
  });
  return gen::apply(&assembleCase, worlds, genWeighted<FamilyPattern>({{3, single}, {1, two}}),
                    genConfigLeaves(), genCutLeaves(), genFlagLeaves(), genShardLeaves());
}

rc::Gen<TrainingCase> genTrainingCase(int max_world) {
  std::vector<int> worlds;
  for (int w = 1; w <= max_world; w *= 2) worlds.push_back(w);
  return rc::gen::mapcat(rc::gen::elementOf(worlds), [](int world) {
    std::vector<TrainingCase> shapes;  // every valid (preset, layout, config) of the world
    for (const ModelPreset* m : trainingPresets()) {
      for (TrainingLayout layout : {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron}) {
        for (const TrainingConfig& c : trainingConfigs(layout, world)) {
          TrainingCase tc{m, c, trainingBatches(c).front()};
          if (validateTrainingCase(tc)) shapes.push_back(std::move(tc));
        }
      }
    }
    return rc::gen::mapcat(rc::gen::elementOf(shapes), [](TrainingCase tc) {
      const TrainingConfig& k = tc.config;
      const bool megatron = k.layout == TrainingLayout::kMegatron;
      const int unit = megatron ? (k.cp > 1 ? 2 * k.cp : 1) * (k.sp ? k.tp : 1) : 1;
      auto lengths = rc::gen::mapcat(rc::gen::inRange(1, 5), [](int n) {
        return rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n),
                                                    rc::gen::inRange(1, 13));
      });
      // TE's KV all-gather and QKVO all-to-all CP take no packed (THD) row:
      // one document.
      const bool one_doc = megatron && k.cp > 1 && k.cp_comm != CpComm::kP2p;
      return rc::gen::map(lengths, [tc, unit, megatron, one_doc](std::vector<int> lengths) {
        TrainingCase out = tc;
        out.docs.clear();
        for (int n : lengths) out.docs.push_back(megatron ? n * unit : n);
        if (out.docs.empty()) out.docs.push_back(unit);
        if (one_doc) out.docs.resize(1);
        if (!megatron) {  // pad the row to a multiple of cp with a last document
          const int s = out.tokens();
          if (s % out.config.cp != 0) out.docs.push_back(out.config.cp - s % out.config.cp);
        }
        return out;
      });
    });
  });
}

}  // namespace seam::properties

namespace seam {

void showValue(const Case& c, std::ostream& os) { os << reproduceCommand(c, "declared"); }
void showValue(const Pattern& p, std::ostream& os) { os << '"' << p.text() << '"'; }
void showValue(const ParallelConfig& c, std::ostream& os) { os << c.describe(); }
void showValue(const Flags& f, std::ostream& os) { os << f.describe(); }
void showValue(const Batch& b, std::ostream& os) { os << b.describe(); }

}  // namespace seam
