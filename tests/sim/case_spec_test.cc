#include "seam/sim/model/case_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace seam {
namespace {

// --- the flag lists of a space-wide command ---------------------------------

TEST(FlagFilterSpec, NoListGivenKeepsEveryValue) {
  auto keep = buildFlagFilter({});
  ASSERT_TRUE(keep.hasValue()) << keep.status().message();
  EXPECT_TRUE(keep->a2a.empty() && keep->fusion.empty() && keep->dp_padding.empty() &&
              keep->reduction.empty() && keep->mode.empty());
}

TEST(FlagFilterSpec, EachListTakesTheSpellingsOfTheCaseOptionOfItsName) {
  FlagFilterSpec spec;
  spec.a2a = "deepep,none";
  spec.fusion = "off";
  spec.dp_padding = "sum_len";
  spec.reduction = "rs+rsv,auto,ar";
  spec.mode = "extend";
  auto keep = buildFlagFilter(spec);
  ASSERT_TRUE(keep.hasValue()) << keep.status().message();
  EXPECT_EQ(keep->a2a, (std::vector<A2aBackend>{A2aBackend::kDeepep, A2aBackend::kNone}));
  EXPECT_EQ(keep->fusion, std::vector<bool>{false});
  EXPECT_EQ(keep->dp_padding, std::vector<DpPadding>{DpPadding::kSumLen});
  EXPECT_EQ(keep->reduction, (std::vector<std::optional<BoundaryReduction>>{
                                 BoundaryReduction::kRsRsv, std::nullopt, BoundaryReduction::kAr}));
  EXPECT_EQ(keep->mode, std::vector<ForwardMode>{ForwardMode::kExtend});
}

TEST(FlagFilterSpec, AValueTheCaseOptionRefusesIsRefusedWithItsMessage) {
  // The messages `seam check` gives for the same values (buildCase).
  const std::pair<FlagFilterSpec, std::string> cases[] = {
      {{.a2a = "none,mooncake"}, "--a2a \"mooncake\" is not one of none, deepep"},
      {{.fusion = "on,maybe"}, "--fusion \"maybe\" is not one of on, off"},
      {{.dp_padding = "MAX_LEN"}, "--dp-padding \"MAX_LEN\" is not one of max_len, sum_len"},
      {{.reduction = "rs,"}, "--reduction \"\" is not one of auto, ar, rs, rsv, rs+rsv"},
      {{.mode = "prefill"}, "--mode \"prefill\" is not one of decode, extend"},
  };
  for (const auto& [spec, message] : cases) {
    auto keep = buildFlagFilter(spec);
    ASSERT_FALSE(keep.hasValue()) << message;
    EXPECT_EQ(keep.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(keep.status().message(), message);
    CaseSpec one;
    one.model = "nemotron-3-nano";
    one.a2a = spec.a2a.empty() ? "none" : spec.a2a.substr(spec.a2a.rfind(',') + 1);
    one.fusion = spec.fusion.empty() ? "on" : spec.fusion.substr(spec.fusion.rfind(',') + 1);
    one.dp_padding = spec.dp_padding.empty() ? "max_len" : spec.dp_padding;
    one.reduction = spec.reduction.empty() ? "auto" : "";
    one.mode = spec.mode.empty() ? "decode" : spec.mode;
    auto built = buildCase(one);
    ASSERT_FALSE(built.hasValue()) << message;
    EXPECT_EQ(built.status().message(), message) << "the same parser as the case option's";
  }
}

}  // namespace
}  // namespace seam
