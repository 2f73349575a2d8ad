// The recorder's recordings (format seam-recorder) read and judged: two runs
// of SGLang 0.5.20's own Nemotron-H layers on the CPU, written by
// recorder/ (tests/data/recordings/seam_recorder/README.md), and malformed
// lines refused with the line's number.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "recording_test_support.h"
#include "seam/recordings/alignment.h"
#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace seam::recordings {
namespace {

using test_support::kData;
using test_support::mustRead;

Plan planOf(const std::string& pattern, int tp, int dp, const std::string& tokens,
            PolicyKind policy) {
  CaseSpec spec;
  spec.pattern = pattern;
  spec.tp = tp;
  spec.dp = dp;
  spec.tokens = tokens;
  spec.fusion = "off";
  auto c = buildCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  auto plan = buildPlan(*c, policy);
  EXPECT_TRUE(plan) << plan.status().message();
  return *plan;
}

TEST(RecorderLines, ARecordingNamesTheEngineItsLaunchFlagsAndHowTheRunEnded) {
  const Recording rec = mustRead("seam_recorder/nemotron_h_tp4_dp2.jsonl");
  EXPECT_EQ(rec.format, "seam-recorder");
  EXPECT_EQ(rec.engine.engine, "sglang");
  EXPECT_EQ(rec.engine.version, "0.5.20");
  EXPECT_EQ(rec.engine.generation, "single-file");
  EXPECT_EQ(rec.engine.verdict, "ran");
  const std::vector<std::string> flags = {"--tp-size", "4", "--dp-size", "2",
                                          "--enable-dp-attention"};
  EXPECT_EQ(rec.engine.launch_flags, flags);
  ASSERT_EQ(rec.engine.ranks.size(), 4u);
  for (const RankEnd& r : rec.engine.ranks) {
    EXPECT_EQ(r.outcome, "ok");
    EXPECT_EQ(r.dp_padding, "MAX_LEN");
  }
}

TEST(RecorderLines, EachCallKeepsItsGroupRowsLayerAndTheEnginesFrames) {
  const Recording rec = mustRead("seam_recorder/nemotron_h_tp4_dp2.jsonl");
  ASSERT_EQ(rec.ranks.size(), 4u);
  const RecordedCall& first = rec.ranks[0][0];  // the embedding's attention-TP sum
  EXPECT_EQ(first.kind, CallKind::kAllReduce);
  EXPECT_EQ(rec.groups[first.group].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(first.in_rows, 4);  // 3 tokens padded to a multiple of attn_tp, then to the max
  EXPECT_EQ(first.layer, -1);
  EXPECT_EQ(first.frame, "sglang/srt/layers/dp_attention.py:1039:attn_tp_all_reduce");
  EXPECT_NE(first.stack.find("vocab_parallel_embedding.py"), std::string::npos);
}

TEST(RecorderLines, RowsScaleToTheCasesWidth) {
  Recording rec = mustRead("seam_recorder/nemotron_h_tp2.jsonl");
  EXPECT_EQ(rec.row_width, 64);
  scaleRows(&rec, 4096);
  EXPECT_EQ(rec.ranks[0][0].in_elems, 4 * 4096);
  EXPECT_EQ(rec.ranks[0][0].out_elems, 4 * 4096);
}

TEST(RecorderLines, TheLegacyPlanExplainsEveryCallOfPlainTensorParallel) {
  Recording rec = mustRead("seam_recorder/nemotron_h_tp2.jsonl");
  const Plan plan = planOf("M-*E", 2, 1, "4", PolicyKind::kLegacy);
  scaleRows(&rec, plan.source.model.shape.hidden);
  auto v = judgeRecording(rec, plan, 1, {.custom_all_reduce = false});
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->holds());
  // Every call but the embedding's sum (one a rank, before the first layer).
  EXPECT_EQ(v->outside, 2);
  EXPECT_EQ(v->explained + v->outside, v->calls);
}

TEST(RecorderLines, TheLegacyPlanExplainsEveryCallUnderDpAttention) {
  const Recording rec = mustRead("seam_recorder/nemotron_h_tp4_dp2.jsonl");
  auto v = judgeRecording(rec, planOf("M-M*-E", 4, 2, "3,2", PolicyKind::kLegacy), 1,
                          {.custom_all_reduce = false});
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->holds());
  EXPECT_EQ(v->explained + v->outside, v->calls);
}

// The declared policy models another generation of the communicator (the
// package of the declarations refactor), which gathers the MoE layer's
// input as a partial; 0.5.20 all-reduces it over attention TP first.
TEST(RecorderLines, AnAttentionTpSumTheDeclaredPlanLacksIsAnExtraCallWithItsFrame) {
  Recording rec = mustRead("seam_recorder/nemotron_h_tp4_dp2.jsonl");
  const Plan plan = planOf("M-M*-E", 4, 2, "3,2", PolicyKind::kDeclared);
  scaleRows(&rec, plan.source.model.shape.hidden);
  auto v = judgeRecording(rec, plan, 1, {.custom_all_reduce = false});
  ASSERT_TRUE(v) << v.status().message();
  ASSERT_FALSE(v->findings.empty());
  EXPECT_EQ(v->findings[0].kind, FindingKind::kExtra);
  EXPECT_EQ(v->findings[0].frame.rfind(
                "sglang/srt/layers/communicator.py:1263:_gather_hidden_states_and_residual", 0),
            0u);
}

std::string writeTemp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(RecorderLines, MalformedLinesAreRefusedWithTheirNumber) {
  const std::string header = R"({"format":"seam-recorder","world":2,"hidden":64,"engine":"sglang"})"
                             "\n";
  struct Bad {
    std::string text, says;
  };
  const Bad cases[] = {
      {header + "not json\n", "line 2: not a JSON object"},
      {header + R"({"op":"all_reduce","rank":5,"ranks":[0,1]})"
                "\n",
       "rank 5 is not a rank"},
      {header + R"({"op":"all_reduce","rank":0,"ranks":[1]})"
                "\n",
       "not in its call's group"},
      {header + R"({"op":"all_reduce","rank":0,"ranks":[0,1],"in_shape":[-1]})"
                "\n",
       "\"in_shape\" holds -1"},
      {header, "no verdict line"},
      {header + R"({"verdict":"ran"})"
                "\n{\"verdict\":\"ran\"}\n",
       "line 3: a line after the verdict"},
  };
  for (const Bad& b : cases) {
    auto rec = readRecording(writeTemp("seam_recorder_bad.jsonl", b.text));
    ASSERT_FALSE(rec) << b.says;
    EXPECT_NE(rec.status().message().find(b.says), std::string::npos) << rec.status().message();
    EXPECT_EQ(rec.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace seam::recordings
