// The rapidcheck generators: every generated value is valid input, and the
// synthetic shapes (FFN after FFN, an FFN first, all-FFN, all-mixer, MTP
// tails, idle DP shards) turn up at useful rates. Rates are measured on a
// fixed seed so that they do not flake.
#include "seam/properties/generators.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "seam/sim/plan/rows.h"
#include "seam/sim/policy/policy.h"

namespace seam::properties {
namespace {

bool anyOf(const std::vector<LayerKind>& layers, bool (*pred)(LayerKind)) {
  return std::any_of(layers.begin(), layers.end(), pred);
}
bool hasKind(const Pattern& p, LayerKind k) {
  return std::find(p.layers.begin(), p.layers.end(), k) != p.layers.end() ||
         std::find(p.mtp.begin(), p.mtp.end(), k) != p.mtp.end();
}

// Draws n values of `g` from one fixed seed, over every size 0..100 in turn
// (as rapidcheck's own runs do).
template <class T>
std::vector<T> sample(const rc::Gen<T>& g, int n, std::uint64_t seed = 1) {
  rc::Random random(seed);
  std::vector<T> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(g(random.split(), i % (rc::kNominalSize + 1)).value());
  return out;
}

constexpr int kSamples = 2000;

// ---- properties of single values --------------------------------------------

RC_GTEST_PROP(Generators, EveryGeneratedCaseIsValidInput, ()) {
  const Case c = *genCase(0);
  if (const Status st = validateCase(c); !st) RC_FAIL(st.message());
  RC_ASSERT(static_cast<int>(c.batch.tokens.size()) == c.config.attn_dp);
  // Input-scattered batches round one shard up to a multiple of tp; a shard
  // at a gate's bound has at most one token past the fusion gate's.
  const int most = (c.flags.input_scattered ? c.config.tp : 0) + kFuseMaxTokens + 1;
  for (int t : c.batch.tokens) RC_ASSERT(t >= 0 && t <= most);
  for (int s : c.flags.capture) RC_ASSERT(s >= 0 && s < c.model.pattern.size());
  if (c.flags.layernorm_sp) {
    // Only where SGLang runs it (validate_layernorm_sp) and seam models it.
    RC_ASSERT(isQwen3Dense(c.model));
    RC_ASSERT(c.config.tp > 1 && c.config.attn_dp == 1 && c.config.attn_cp == 1);
    RC_ASSERT(c.flags.mode == ForwardMode::kExtend && c.flags.capture.empty() && !c.flags.tbo);
  }
  // The printed reproduce line parses back to the same pattern.
  auto again = modelFromPattern(c.model.pattern.text(), c.model.family);
  RC_ASSERT(again.hasValue());
  RC_ASSERT(again->pattern == c.model.pattern);
}

RC_GTEST_PROP(Generators, GeneratedPatternsHaveOneToMaxLayersAndParseBack, ()) {
  const int max_layers = *rc::gen::inRange(1, kDefaultMaxLayers + 1);
  const Pattern p = *genPattern(max_layers);
  RC_ASSERT(p.size() >= 1);
  RC_ASSERT(p.size() <= max_layers);
  RC_ASSERT(p.mtp.size() <= 2u);
  RC_ASSERT(p.cuts.empty());
  auto parsed = parsePattern(p.text());
  RC_ASSERT(parsed.hasValue());
  RC_ASSERT(*parsed == p);
}

RC_GTEST_PROP(Generators, AFixedWorldIsKeptAndItsConfigIsValid, ()) {
  const int world = *rc::gen::element(1, 2, 3, 6, 8, 12, 64);
  const Case c = *genCase(world, 16);
  RC_ASSERT(c.config.world() == world);
  if (const Status st = validateCase(c); !st) RC_FAIL(st.message());
}

RC_GTEST_PROP(Generators, DeepepIsOnlyGeneratedForAMoeModelWithEpSpanningTp, ()) {
  const Case c = *genCase(0, 16);
  if (c.flags.a2a == A2aBackend::kDeepep) {
    RC_ASSERT(hasKind(c.model.pattern, LayerKind::kMoe));
    RC_ASSERT(c.config.moe_ep == c.config.tp);
  }
}

RC_GTEST_PROP(Generators, PipelineCutsMatchPpWhenPresent, ()) {
  const Case c = *genCase(*rc::gen::element(2, 4, 8), 16);
  const auto& cuts = c.model.pattern.cuts;
  if (!cuts.empty()) {
    RC_ASSERT(static_cast<int>(cuts.size()) + 1 == c.config.pp);
    RC_ASSERT(std::is_sorted(cuts.begin(), cuts.end()));
    RC_ASSERT(std::adjacent_find(cuts.begin(), cuts.end()) == cuts.end());
    RC_ASSERT(cuts.front() >= 1 && cuts.back() < c.model.pattern.size());
  }
}

// ---- rates over a fixed seed -------------------------------------------------

TEST(Generators, PatternsIncludeSyntheticShapesAtAUsefulRate) {
  int ffn_after_ffn = 0, ffn_first = 0, all_ffn = 0, all_mixer = 0, mtp = 0,
      mtp_starting_with_e = 0;
  for (const Pattern& p : sample(genPattern(), kSamples)) {
    for (int i = 1; i < p.size(); ++i) {
      if (isFfn(p.layers[i - 1]) && isFfn(p.layers[i])) {
        ++ffn_after_ffn;
        break;
      }
    }
    ffn_first += isFfn(p.layers.front());
    all_ffn += p.size() > 1 && !anyOf(p.layers, isMixer);
    all_mixer += p.size() > 1 && !anyOf(p.layers, isFfn);
    mtp += !p.mtp.empty();
    mtp_starting_with_e += !p.mtp.empty() && p.mtp.front() == LayerKind::kMoe;
  }
  // Real checkpoints never have these; the generator must draw them often.
  EXPECT_GT(ffn_after_ffn, kSamples / 5) << "FFN after FFN";
  EXPECT_GT(ffn_first, kSamples / 4) << "an FFN at the stack start";
  EXPECT_GT(all_ffn, kSamples / 40) << "all-FFN stacks of 2+ layers";
  EXPECT_GT(all_mixer, kSamples / 40) << "all-mixer stacks of 2+ layers";
  EXPECT_GT(mtp, kSamples / 30) << "MTP tails";
  EXPECT_LT(mtp, kSamples / 4) << "MTP tails are the exception";
  EXPECT_GT(mtp_starting_with_e, 0) << "an MTP step that starts with its MoE layer";
}

TEST(Generators, PatternsGrowWithTheSizeUpToMaxLayers) {
  int longest = 0, one_layer = 0;
  for (const Pattern& p : sample(genPattern(kDefaultMaxLayers), kSamples)) {
    longest = std::max(longest, p.size());
    one_layer += p.size() == 1;
    ASSERT_LE(p.size(), kDefaultMaxLayers);
  }
  EXPECT_GT(longest, kDefaultMaxLayers / 2);
  EXPECT_GT(one_layer, 0);
}

TEST(Generators, IdleShardsAreLikelyWithDpAttention) {
  int dp_cases = 0, with_idle = 0, uneven = 0;
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    if (c.config.attn_dp < 2) {
      EXPECT_FALSE(c.batch.hasIdleShard()) << c.batch.describe();
      continue;
    }
    ++dp_cases;
    with_idle += c.batch.hasIdleShard();
    const auto [lo, hi] = std::minmax_element(c.batch.tokens.begin(), c.batch.tokens.end());
    uneven += *lo != *hi;
  }
  ASSERT_GT(dp_cases, kSamples / 10) << "DP attention must be common";
  EXPECT_GT(with_idle, dp_cases / 4);
  EXPECT_GT(uneven, dp_cases / 2);
}

TEST(Generators, CasesTheEngineRefusesAreAMinority) {
  int refused = 0, cp = 0, deepep = 0, pp = 0, worlds_seen = 0;
  bool world_seen[17] = {};
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    if (!plan) {
      EXPECT_EQ(plan.status().code(), StatusCode::kRefused) << plan.status().message();
      ++refused;
    }
    cp += c.config.attn_cp > 1;
    deepep += c.flags.a2a == A2aBackend::kDeepep;
    pp += c.config.pp > 1;
    if (!world_seen[c.config.world()]) ++worlds_seen;
    world_seen[c.config.world()] = true;
  }
  EXPECT_LT(refused, kSamples / 10);
  EXPECT_GT(cp, 0) << "attention CP (refused) is still drawn now and then";
  EXPECT_GT(deepep, kSamples / 20);
  EXPECT_GT(pp, kSamples / 10);
  EXPECT_EQ(worlds_seen, 5) << "every world of kGeneratedWorlds";
}

TEST(Generators, TwoStageStacksAreDrawnWithTheirVariantsAndCutsBetweenDecoderLayers) {
  int two = 0, dense_tp1 = 0, scattered = 0, planned_scattered = 0, padded_scattered = 0;
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    if (c.model.family == LayerFamily::kSingleStage) {
      EXPECT_FALSE(c.flags.dense_tp1 || c.flags.input_scattered);
      continue;
    }
    ++two;
    EXPECT_EQ(c.model.pattern.size() % 2, 0);
    for (int cut : c.model.pattern.cuts) EXPECT_EQ(cut % 2, 0) << reproduceCommand(c, "declared");
    for (int s : c.flags.capture) EXPECT_EQ(s % 2, 0);
    dense_tp1 += c.flags.dense_tp1;
    if (c.flags.input_scattered) {
      ++scattered;
      // The engine pads an input-scattered batch to tp: any total is drawn.
      const bool planned = buildPlan(c, PolicyKind::kDeclared).hasValue();
      planned_scattered += planned;
      padded_scattered += planned && c.batch.total() % c.config.tp != 0;
    }
  }
  EXPECT_GT(two, kSamples / 6);
  EXPECT_LT(two, kSamples / 3);
  EXPECT_GT(dense_tp1, two / 8);
  EXPECT_GT(scattered, 0);
  EXPECT_GT(planned_scattered, 0)
      << "some input-scattered cases reach an MLA-shaped model (an E borrows DeepSeek's)";
  EXPECT_GT(padded_scattered, 0) << "no planned input-scattered batch that tp does not divide";
}

TEST(Generators, DrawMlaPrefillCpOnlyAsTheEngineRunsItAndSomeOfItPlans) {
  int mla_cp = 0, planned = 0;
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    if (c.model.family != LayerFamily::kTwoStage || c.model.shape.q_lora_rank <= 0 ||
        c.config.attn_cp <= 1)
      continue;
    ++mla_cp;
    // _deepseek_family_overrides' configuration: never its refusal.
    EXPECT_EQ(serverArgsRefusal(c).message().find("_deepseek_family_overrides"), std::string::npos)
        << reproduceCommand(c, "declared");
    planned += buildPlan(c, PolicyKind::kDeclared).hasValue();
  }
  EXPECT_GT(mla_cp, 0);
  EXPECT_GT(planned, 0);
}

TEST(Generators, DrawTwoBatchOverlapCasesSomeOfWhichRunSplit) {
  int tbo = 0, split = 0;
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    if (!c.flags.tbo) continue;
    ++tbo;
    EXPECT_NE(c.model.family, LayerFamily::kSingleStage);
    EXPECT_TRUE(c.flags.capture.empty());
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    // seam prop fails on a case the policy cannot plan: only engine refusals may be drawn.
    if (!plan) {
      EXPECT_EQ(plan.status().code(), StatusCode::kRefused) << plan.status().message();
    }
    split += plan.hasValue() && !plan->tbo_split.empty();
  }
  EXPECT_GT(tbo, 0);
  EXPECT_GT(split, 0)
      << "some TBO cases reach DeepSeek-like layers (attention mixers, an E) with a range to split";
}

TEST(Generators, DrawLayerNormSpCasesOnQwen3DenseStacksThatPlan) {
  int sp = 0, planned = 0;
  for (const Case& c : sample(genCase(0, 16), kSamples)) {
    if (!c.flags.layernorm_sp) continue;
    ++sp;
    EXPECT_TRUE(isQwen3Dense(c.model)) << reproduceCommand(c, "declared");
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    planned += plan.hasValue();
  }
  EXPECT_GT(sp, 0);
  EXPECT_EQ(planned, sp) << "every drawn LayerNorm SP case is one the engine runs and seam models";
}

int mostTokens(const Case& c) {
  return *std::max_element(c.batch.tokens.begin(), c.batch.tokens.end());
}

TEST(Generators, TokenCountsReachEveryGateBoundOnBothSides) {
  // One below, at and one past: prefill CP's zigzag minimum (128) and the
  // fusion gate's bound (2048).
  std::map<int, int> seen;
  for (const Case& c : sample(genCase(0), kSamples)) {
    for (int t : c.batch.tokens) ++seen[t];
  }
  for (int bound : {kZigzagMinTokens, kFuseMaxTokens}) {
    for (int t : {bound - 1, bound, bound + 1}) EXPECT_GT(seen[t], 0) << t;
  }
}

TEST(Generators, AFailureAboveTheFusionBoundShrinksToTheSmallestFailingCount) {
  // A planted failure at more than 2048 tokens in a shard: rapidcheck's
  // shrinks of a case drawn there end at 2049, the smallest count that fails.
  rc::Random random(11);
  std::optional<rc::Shrinkable<Case>> failing;
  for (int i = 0; i < 4 * kSamples && !failing; ++i) {
    auto s = genCase(0)(random.split(), i % (rc::kNominalSize + 1));
    if (mostTokens(s.value()) > kFuseMaxTokens) failing = s;
  }
  ASSERT_TRUE(failing.has_value());
  rc::Shrinkable<Case> now = *failing;
  for (bool moved = true; moved;) {
    moved = false;
    auto shrinks = now.shrinks();
    while (auto next = shrinks.next()) {
      if (mostTokens(next->value()) > kFuseMaxTokens) {
        now = *next;
        moved = true;
        break;
      }
    }
  }
  EXPECT_EQ(mostTokens(now.value()), kFuseMaxTokens + 1);
}

TEST(Generators, ShowValuePrintsTheReproduceCommand) {
  const Case c = sample(genCase(2, 4), 1).front();
  std::ostringstream os;
  showValue(c, os);
  EXPECT_EQ(os.str(), reproduceCommand(c, "declared"));
  EXPECT_EQ(rc::toString(c), os.str()) << "rapidcheck finds showValue by ADL";
}

}  // namespace
}  // namespace seam::properties
