#include "seam/reports/plan_view.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace seam::reports {
namespace {

using Keys = std::set<std::string>;
using nlohmann::json;

constexpr int kTokens = 3;
constexpr std::int64_t kHiddenBytes = 4096 * 2;  // one bf16 row of a 4096-wide hidden state

const Keys kTopKeys = {"model", "pattern", "policy", "config", "rank", "ops", "summary"};
const Keys kConfigKeys = {"world",     "pp",     "tp",           "attn_tp", "attn_dp", "attn_cp",
                          "moe_ep",    "moe_tp", "moe_dp",       "a2a",     "fusion",  "dp_padding",
                          "reduction", "mode",   "layernorm_sp", "capture", "tokens"};
const Keys kOpKeys = {"layer",      "stage", "phase",   "op",       "tensor", "group",
                      "group_size", "ranks", "rows_in", "rows_out", "bytes"};

Keys keysOf(const json& j) {
  Keys keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  return keys;
}

Op makeOp(int layer, Phase phase, OpKind kind, std::int8_t axis, std::uint8_t stack = 0) {
  Op op;
  op.layer = static_cast<std::int16_t>(layer);
  op.stage = static_cast<std::int16_t>(layer);
  op.stack = stack;
  op.phase = phase;
  op.kind = kind;
  op.tensor = Tensor::kHidden;
  op.axis = axis;
  op.rows_in = {RowKind::kAttention, kTokens};
  op.rows_out = {RowKind::kAttention, kTokens};
  op.bytes = kTokens * kHiddenBytes;
  return op;
}

constexpr auto kAttnTp = static_cast<std::int8_t>(Axis::kAttnTp);

// World 2, tp=2, pattern "M-/*": every rank runs the Mamba layer (add_norm,
// compute over attn_tp, ar_add_norm over attn_tp), the MLP's entry norm, and
// one MTP op. Padding was requested as sum_len but resolved to max_len.
Plan makePlan() {
  Plan plan;
  plan.policy = "declared";
  plan.source.model.name = "hand-made";
  auto pattern = parsePattern("M-/*");
  EXPECT_TRUE(pattern.hasValue());
  plan.source.model.pattern = *pattern;
  plan.source.config = ParallelConfig{.pp = 1, .tp = 2};
  plan.source.flags.dp_padding = DpPadding::kSumLen;
  plan.source.batch.tokens = {kTokens};
  plan.padding = DpPadding::kMaxLen;
  std::vector<Op> ops = {
      makeOp(0, Phase::kEntry, OpKind::kAddNorm, kNoAxis),
      makeOp(0, Phase::kCompute, OpKind::kCompute, kAttnTp),
      makeOp(0, Phase::kExit, OpKind::kArAddNorm, kAttnTp),
      makeOp(1, Phase::kEntry, OpKind::kNorm, kNoAxis),
      makeOp(0, Phase::kCompute, OpKind::kCompute, kAttnTp, /*stack=*/1),
  };
  plan.ranks = {ops, ops};
  return plan;
}

json renderJson(const Plan& plan, int rank) {
  return json::parse(renderPlan(plan, rank, Format::kJson));
}

TEST(RenderPlan, JsonHasExactlyTheKeysOfTheDesign) {
  json doc = renderJson(makePlan(), 1);
  EXPECT_EQ(keysOf(doc), kTopKeys);
  EXPECT_EQ(keysOf(doc["config"]), kConfigKeys);
  EXPECT_EQ(doc["model"], "hand-made");
  EXPECT_EQ(doc["pattern"], "M-/*");
  EXPECT_EQ(doc["policy"], "declared");
  EXPECT_EQ(doc["rank"], 1);
  EXPECT_EQ(doc["config"]["world"], 2);
  EXPECT_EQ(doc["config"]["attn_tp"], 2);
  EXPECT_EQ(doc["config"]["tokens"], json::array({kTokens}));
  EXPECT_EQ(doc["config"]["capture"], json::array());
  ASSERT_EQ(doc["ops"].size(), 5u);
  for (size_t i = 0; i + 1 < doc["ops"].size(); ++i)
    EXPECT_EQ(keysOf(doc["ops"][i]), kOpKeys) << "op " << i;
  EXPECT_EQ(doc["ops"][1]["rows_in"], json({{"layout", "attention"}, {"count", kTokens}}));
}

TEST(RenderPlan, OnlyAnOpOfTheMtpStepCarriesItsStack) {
  json doc = renderJson(makePlan(), 0);
  Keys with_stack = kOpKeys;
  with_stack.insert("stack");
  EXPECT_EQ(keysOf(doc["ops"][4]), with_stack);
  EXPECT_EQ(doc["ops"][4]["stack"], 1);
  EXPECT_FALSE(doc["ops"][0].contains("stack"));
}

TEST(RenderPlan, OpsWithoutAGroupHaveNullGroupSizeAndRanks) {
  json doc = renderJson(makePlan(), 0);
  for (int i : {0, 3}) {
    EXPECT_TRUE(doc["ops"][i]["group"].is_null()) << "op " << i;
    EXPECT_TRUE(doc["ops"][i]["group_size"].is_null()) << "op " << i;
    EXPECT_TRUE(doc["ops"][i]["ranks"].is_null()) << "op " << i;
  }
}

TEST(RenderPlan, ComputeShowsTheGroupItsWeightsAreSplitOver) {
  json doc = renderJson(makePlan(), 1);
  for (int i : {1, 2}) {
    EXPECT_EQ(doc["ops"][i]["group"], "attn_tp") << "op " << i;
    EXPECT_EQ(doc["ops"][i]["group_size"], 2) << "op " << i;
    EXPECT_EQ(doc["ops"][i]["ranks"], json::array({0, 1})) << "op " << i;
  }
}

TEST(RenderPlan, SummaryCountsOnlyTheKindsThatOccur) {
  json doc = renderJson(makePlan(), 0);
  EXPECT_EQ(doc["summary"],
            json({{"add_norm", 1}, {"ar_add_norm", 1}, {"compute", 2}, {"norm", 1}}));
}

TEST(RenderPlan, ShowsTheResolvedPaddingNotTheRequestedOne) {
  Plan plan = makePlan();
  EXPECT_EQ(renderJson(plan, 0)["config"]["dp_padding"], "max_len");
  std::string text = renderPlan(plan, 0, Format::kText);
  EXPECT_NE(text.find("padding=max_len"), std::string::npos) << text;
  EXPECT_EQ(text.find("sum_len"), std::string::npos) << text;
}

TEST(RenderPlan, JsonlIsOneSelfContainedOpPerLine) {
  Plan plan = makePlan();
  std::istringstream lines(renderPlan(plan, 1, Format::kJsonl));
  std::string line;
  size_t count = 0;
  while (std::getline(lines, line)) {
    json op = json::parse(line);  // throws, failing the test, on a bad line
    EXPECT_EQ(op["rank"], 1);
    EXPECT_EQ(op["op"], std::string(opName(plan.ranks[1][count].kind)));
    EXPECT_TRUE(op.contains("rows_out"));
    ++count;
  }
  EXPECT_EQ(count, plan.ranks[1].size());
}

TEST(RenderPlan, TextEndsWithTheCountsMostFrequentFirst) {
  std::string text = renderPlan(makePlan(), 0, Format::kText);
  const std::string summary = "5 ops: 2 compute, 1 add_norm, 1 ar_add_norm, 1 norm\n";
  ASSERT_GE(text.size(), summary.size());
  EXPECT_EQ(text.substr(text.size() - summary.size()), summary) << text;
  EXPECT_EQ(text.rfind("plan: model hand-made  policy declared  rank 0 of 2  (", 0), 0u) << text;
  EXPECT_NE(text.find("attention:3"), std::string::npos) << text;
  EXPECT_NE(text.find("mtp.0"), std::string::npos) << text;
}

TEST(RenderPlan, TextWritesAStridedGroupAsAListAndAContiguousOneAsARange) {
  Plan plan = makePlan();
  plan.source.config =
      ParallelConfig{.pp = 1, .tp = 4, .attn_dp = 2};  // attn_dp groups {0,2} and {1,3}
  plan.source.batch.tokens = {kTokens, kTokens};
  Op gather =
      makeOp(0, Phase::kExit, OpKind::kDpGatherPartial, static_cast<std::int8_t>(Axis::kAttnDp));
  Op reduce = makeOp(0, Phase::kExit, OpKind::kAllReduce, static_cast<std::int8_t>(Axis::kTp));
  plan.ranks = std::vector<std::vector<Op>>(4, {gather, reduce});
  std::string text = renderPlan(plan, 0, Format::kText);
  EXPECT_NE(text.find(" 0,2 "), std::string::npos) << text;
  EXPECT_NE(text.find(" 0-3 "), std::string::npos) << text;
}

// Under DP attention with MAX_LEN, prepare_mlp_sync_batch
// (model_executor/forward_batch_info.py @003bbaf9, _pad_inputs_to_size) pads
// a shard's inputs to local_dp_buffer_len before the forward: with attn_tp 2
// and shards of 3 and 0 tokens both run ceil_align(3, 2) = 4 rows, so the DP
// gather's lowering pads nothing. Only a plan whose attention rows are the
// bare tokens (AttentionPad::kTokens) pads 3 rows to 4 inside the gather.
TEST(RenderPlan, LowersADpGatherOnTheAttentionRowsThePlanRuns) {
  Plan plan = makePlan();
  plan.source.config = ParallelConfig{.pp = 1, .tp = 4, .attn_dp = 2};
  plan.source.batch.tokens = {3, 0};
  plan.padding = DpPadding::kMaxLen;
  Op gather =
      makeOp(0, Phase::kEntry, OpKind::kDpGatherReplicate, static_cast<std::int8_t>(Axis::kTp));
  gather.rows_in = {RowKind::kAttention, 4};
  gather.rows_out = {RowKind::kFull, 8};
  plan.ranks = std::vector<std::vector<Op>>(4, {gather});

  plan.attention_pad = AttentionPad::kDpBuffer;
  std::string text = renderPlan(plan, 0, Format::kText, /*lower_dp=*/true);
  EXPECT_NE(text.find("> reduce_scatter"), std::string::npos) << text;
  EXPECT_EQ(text.find("pad_local"), std::string::npos) << text;

  plan.attention_pad = AttentionPad::kTokens;
  text = renderPlan(plan, 0, Format::kText, /*lower_dp=*/true);
  EXPECT_NE(text.find("pad_local"), std::string::npos) << text;
}

TEST(PlanView, CheckRankRefusesARankOutsideTheWorld) {
  Plan plan = makePlan();
  plan.ranks.resize(8);
  EXPECT_TRUE(checkRank(plan, 0).isOk());
  EXPECT_TRUE(checkRank(plan, 7).isOk());
  Status high = checkRank(plan, 9);
  EXPECT_EQ(high.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(high.message(), "--rank 9 is not in 0..7 (world 8)");
  EXPECT_EQ(checkRank(plan, -1).message(), "--rank -1 is not in 0..7 (world 8)");
}

}  // namespace
}  // namespace seam::reports
