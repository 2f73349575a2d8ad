#include "seam/sim/model/model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace seam {
namespace {

TEST(Presets, EveryPatternLengthEqualsTheLayerCount) {
  ASSERT_EQ(presets().size(), 17u);
  for (const ModelPreset& p : presets()) {
    SCOPED_TRACE(std::string(p.name));
    auto parsed = p.parsedPattern();
    ASSERT_TRUE(parsed.hasValue()) << parsed.status().message();
    EXPECT_EQ(parsed->size(), p.layers * p.stagesPerLayer());
    if (p.family != LayerFamily::kSingleStage) {
      // The mixer of every decoder layer is the pattern's character for it.
      for (int i = 0; i < static_cast<int>(p.pattern.size()); ++i) {
        EXPECT_EQ(layerChar(parsed->layers[p.stagesPerLayer() * i]), p.pattern[i]) << i;
      }
    }
  }
}

TEST(Presets, NamesAreUniqueAndFoundCaseInsensitively) {
  std::set<std::string_view> names;
  for (const ModelPreset& p : presets()) EXPECT_TRUE(names.insert(p.name).second) << p.name;
  auto found = findPreset("Nemotron-H-8B");
  ASSERT_TRUE(found.hasValue());
  EXPECT_EQ((*found)->shape.hidden, 4096);
  auto missing = findPreset("nemotron-h-9b");
  ASSERT_FALSE(missing.hasValue());
  EXPECT_EQ(
      missing.status().message().rfind("unknown model \"nemotron-h-9b\" (known: nemotron-h-4b,", 0),
      0u);
}

TEST(Presets, SuperCarriesItsMtpPattern) {
  auto super = findPreset("nemotron-3-super");
  ASSERT_TRUE(super.hasValue());
  auto p = (*super)->parsedPattern();
  ASSERT_TRUE(p.hasValue());
  EXPECT_EQ(p->mtp, (std::vector<LayerKind>{LayerKind::kAttention, LayerKind::kMoe}));
  EXPECT_EQ((*super)->shape.moe_experts, 512);
  EXPECT_EQ((*super)->shape.moe_top_k, 22);
}

// The compiled table must agree with the reference it was generated from.
// The JSON sits in ../shared beside the checkout (as in CI); skip elsewhere.
TEST(Presets, AgreeFieldByFieldWithCheckpointsJson) {
  const std::filesystem::path json_path =
      std::filesystem::path(SEAM_SOURCE_DIR) / ".." / "shared" / "reference" / "checkpoints.json";
  std::ifstream in(json_path);
  if (!in) GTEST_SKIP() << "no " << json_path << " beside the checkout";
  const auto doc = nlohmann::json::parse(in);
  ASSERT_LE(doc.size(), presets().size());
  auto field = [](const nlohmann::json& e, const char* key, int shape_value) {
    if (e[key].is_null()) {
      EXPECT_TRUE(shape_value == kUnknown || shape_value == kNotApplicable) << key;
    } else {
      EXPECT_EQ(e[key].get<int>(), shape_value) << key;
    }
  };
  for (size_t i = 0; i < doc.size(); ++i) {
    const auto& e = doc[i];
    const ModelPreset& p = presets()[i];
    SCOPED_TRACE(std::string(p.name));
    EXPECT_EQ(e["name"].get<std::string>(), p.display_name);
    EXPECT_EQ(e["layers"].get<int>(), p.layers);
    if (p.family != LayerFamily::kParallelHybrid) {
      EXPECT_EQ(e["pattern"].get<std::string>(), p.pattern);
    } else {
      EXPECT_EQ(p.stages.size(), 2u * p.layers);  // P- per decoder layer
    }
    EXPECT_EQ(e["mtp_pattern"].is_null() ? std::string() : e["mtp_pattern"].get<std::string>(),
              p.mtp_pattern);
    field(e, "hidden", p.shape.hidden);
    field(e, "heads", p.shape.heads);
    field(e, "kv_heads", p.shape.kv_heads);
    field(e, "head_dim", p.shape.head_dim);
    field(e, "mamba_heads", p.shape.mamba_heads);
    field(e, "mamba_head_dim", p.shape.mamba_head_dim);
    field(e, "ssm_state", p.shape.ssm_state);
    field(e, "ffn_intermediate", p.shape.ffn_intermediate);
    field(e, "moe_experts", p.shape.moe_experts);
    field(e, "moe_top_k", p.shape.moe_top_k);
    field(e, "moe_shared_intermediate", p.shape.moe_shared_intermediate);
  }
}

// The two-stage presets the reference does not list come from
// sim/data/presets_extra.json, each with its source; the table agrees with it
// and the stage patterns follow the sparsity rules (first_k_dense_replace).
TEST(Presets, AgreeWithPresetsExtraJsonAndFollowTheSparsityRule) {
  std::ifstream in(std::filesystem::path(SEAM_SOURCE_DIR) / "sim" / "data" / "presets_extra.json");
  ASSERT_TRUE(in) << "sim/data/presets_extra.json";
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc.size(), 3u);
  for (const auto& e : doc) {
    auto p = findPreset(e["cli"].get<std::string>());
    ASSERT_TRUE(p.hasValue());
    SCOPED_TRACE(std::string((*p)->name));
    EXPECT_EQ((*p)->display_name, e["name"].get<std::string>());
    EXPECT_EQ((*p)->layers, e["layers"].get<int>());
    EXPECT_EQ((*p)->shape.hidden, e["hidden"].get<int>());
    EXPECT_EQ((*p)->shape.heads, e["heads"].get<int>());
    EXPECT_EQ((*p)->shape.kv_heads, e["kv_heads"].get<int>());
    EXPECT_EQ((*p)->allow_reduce_scatter, e["allow_reduce_scatter"].get<bool>());
    EXPECT_FALSE((*p)->source.empty());
    auto parsed = (*p)->parsedPattern();
    ASSERT_TRUE(parsed.hasValue());
    if ((*p)->family == LayerFamily::kBranchMerge) {
      // attention, the MoE branch, MLP, attention, MLP per layer.
      EXPECT_EQ(parsed->size(), 5 * (*p)->layers);
      EXPECT_EQ(parsed->layers[1], LayerKind::kMoe);
      EXPECT_EQ(parsed->layers[2], LayerKind::kDenseMlp);
      continue;
    }
    const int dense = e["first_k_dense"].get<int>();
    for (int layer = 0; layer < (*p)->layers; ++layer) {
      const bool sparse = (*p)->hasMoe() && layer >= dense;
      EXPECT_EQ(parsed->layers[2 * layer + 1], sparse ? LayerKind::kMoe : LayerKind::kDenseMlp)
          << layer;
    }
  }
  auto v3 = findPreset("deepseek-v3");
  ASSERT_TRUE(v3.hasValue());
  EXPECT_EQ((*v3)->shape.moe_experts, 256);
  EXPECT_EQ((*v3)->parsedPattern()->mtp.size(), 2u);  // one nextn decoder layer: attention then MoE
}

TEST(FitsModel, RefusesAttentionTpThatDoesNotDivideTheHeads) {
  auto falcon = findPreset("falcon-h1-3b");  // 10 heads
  ASSERT_TRUE(falcon.hasValue());
  Status st = fitsModel(**falcon, {.tp = 4});
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message(), "model falcon-h1-3b: attn_tp=4 does not divide heads=10");
  EXPECT_TRUE(fitsModel(**falcon, {.tp = 2}).isOk());
}

TEST(FitsModel, ReplicatesKvHeadsWhenAttentionTpIsAMultiple) {
  auto nano = findPreset("nemotron-3-nano");  // 32 heads, 2 KV heads
  ASSERT_TRUE(nano.hasValue());
  EXPECT_TRUE(fitsModel(**nano, {.tp = 8}).isOk());
}

TEST(FitsModel, RefusesMoeAxesOnADenseModelAndExpertsThatDoNotSplit) {
  auto h8 = findPreset("nemotron-h-8b");
  EXPECT_EQ(fitsModel(**h8, {.tp = 4, .moe_ep = 2}).message(),
            "model nemotron-h-8b: a dense model has no MoE axes (moe_ep=2 moe_dp=1)");
  auto nano = findPreset("nemotron-3-nano");  // 128 experts
  EXPECT_TRUE(fitsModel(**nano, {.tp = 8, .moe_ep = 8}).isOk());
}

}  // namespace
}  // namespace seam
