#include "seam/sim/model/pattern.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace seam {
namespace {

TEST(Pattern, ParsesTheFourLayerKinds) {
  auto p = parsePattern("M-*E");
  ASSERT_TRUE(p.hasValue());
  EXPECT_EQ(p->layers, (std::vector<LayerKind>{LayerKind::kMamba, LayerKind::kDenseMlp,
                                               LayerKind::kAttention, LayerKind::kMoe}));
  EXPECT_TRUE(isMixer(LayerKind::kMamba));
  EXPECT_TRUE(isMixer(LayerKind::kAttention));
  EXPECT_TRUE(isFfn(LayerKind::kDenseMlp));
  EXPECT_TRUE(isFfn(LayerKind::kMoe));
}

TEST(Pattern, ParsesPipelineCutsAndAnMtpPatternAndPrintsThemBack) {
  auto p = parsePattern("M-|M*E|-/*E");
  ASSERT_TRUE(p.hasValue());
  EXPECT_EQ(p->size(), 6);
  EXPECT_EQ(p->cuts, (std::vector<int>{2, 5}));
  EXPECT_EQ(p->mtp, (std::vector<LayerKind>{LayerKind::kAttention, LayerKind::kMoe}));
  EXPECT_EQ(p->text(), "M-|M*E|-/*E");
}

struct BadPattern {
  const char* text;
  const char* message;
};

class PatternRefusal : public ::testing::TestWithParam<BadPattern> {};

TEST_P(PatternRefusal, NamesThePositionAndTheCharacter) {
  auto p = parsePattern(GetParam().text);
  ASSERT_FALSE(p.hasValue());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(p.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Bad, PatternRefusal,
    ::testing::Values(
        BadPattern{"", "pattern is empty"},
        BadPattern{"M-x*",
                   "pattern \"M-x*\": 'x' at position 2 is not a layer (M * - E), '|' or '/'"},
        BadPattern{"M-G",
                   "pattern \"M-G\": 'G' at position 2 is not a layer (M * - E), '|' or '/'"},
        BadPattern{"|M-",
                   "pattern \"|M-\": '|' at position 0: a pipeline cut before the first layer"},
        BadPattern{
            "M-||M",
            "pattern \"M-||M\": '|' at position 3: two pipeline cuts with no layer between them"},
        BadPattern{"M-|", "pattern \"M-|\": a pipeline cut after the last layer"},
        BadPattern{
            "M-/*M",
            "pattern \"M-/*M\": 'M' at position 4 is not allowed in an MTP pattern (only * and E)"},
        BadPattern{"M-/*E/E",
                   "pattern \"M-/*E/E\": '/' at position 5: a second MTP depth (SGLang runs one "
                   "MTP step)"},
        BadPattern{"M-/", "pattern \"M-/\": '/' with no MTP layer after it"},
        BadPattern{"/*E", "pattern \"/*E\": '/' at position 0: an MTP pattern with no main stack"},
        BadPattern{"M-/*|E",
                   "pattern \"M-/*|E\": '|' at position 4: a pipeline cut inside the MTP pattern"},
        BadPattern{
            "M\xff",
            "pattern \"M\\xff\": byte 0xff at position 1 is not a layer (M * - E), '|' or '/'"}),
    [](const ::testing::TestParamInfo<BadPattern>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(Pattern, MixerOnlyAlphabetAcceptsGatedDeltaNetAndAttention) {
  auto p = parsePattern("GGG*", PatternAlphabet::kMixerOnly);
  ASSERT_TRUE(p.hasValue());
  EXPECT_EQ(p->layers[0], LayerKind::kGatedDeltaNet);
  EXPECT_FALSE(parsePattern("GG-", PatternAlphabet::kMixerOnly).hasValue());
}

TEST(Pattern, TwoStageAlphabetReadsOneMixerThenOneFfnPerDecoderLayer) {
  auto p = parsePattern("*-GE|P-*E/*E", PatternAlphabet::kTwoStage);
  ASSERT_TRUE(p.hasValue()) << p.status().message();
  EXPECT_EQ(p->size(), 8);
  EXPECT_EQ(p->layers[2], LayerKind::kGatedDeltaNet);
  EXPECT_EQ(p->layers[4], LayerKind::kParallelMixer);
  EXPECT_EQ(p->cuts, std::vector<int>{4});
  EXPECT_EQ(p->mtp.size(), 2u);
  EXPECT_EQ(p->text(), "*-GE|P-*E/*E");
}

TEST(Pattern, TwoStageAlphabetRefusesStagesOutOfPlaceWithThePosition) {
  const std::pair<const char*, const char*> bad[] = {
      {"-*", "pattern \"-*\": '-' at position 0 is an FFN where a layer's mixer (M * G P) belongs"},
      {"**", "pattern \"**\": '*' at position 1 is a mixer where the layer's FFN (- E) belongs"},
      {"*-*", "pattern \"*-*\": the last decoder layer has a mixer but no FFN"},
      {"*|-",
       "pattern \"*|-\": '|' at position 1: a pipeline cut inside a decoder layer (between its "
       "mixer and FFN)"},
      {"*-/*E*E",
       "pattern \"*-/*E*E\": '*' at position 5: a second MTP layer (SGLang runs one nextn decoder "
       "layer)"},
      {"*-x",
       "pattern \"*-x\": 'x' at position 2 is not a stage (mixer M * G P, FFN - E), '|' or '/'"},
  };
  for (const auto& [text, message] : bad) {
    auto p = parsePattern(text, PatternAlphabet::kTwoStage);
    ASSERT_FALSE(p.hasValue()) << text;
    EXPECT_EQ(p.status().message(), message);
  }
}

TEST(Pattern, RefusesAHugePattern) {
  auto p = parsePattern(std::string(5000, 'M'));
  ASSERT_FALSE(p.hasValue());
  EXPECT_NE(p.status().message().find("5000"), std::string::npos);
}

}  // namespace
}  // namespace seam
