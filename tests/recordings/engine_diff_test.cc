// compareRecordings: two trees' recordings of one case, classified by what
// the change did to the calls and the outputs.
#include "seam/recordings/engine_diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace seam::recordings {
namespace {

RecordedCall call(CallKind kind, const std::string& op, std::int64_t rows, int layer,
                  const std::string& frame) {
  RecordedCall c;
  c.kind = kind;
  c.op = op;
  c.group = 0;
  c.in_rows = rows;
  c.out_rows = rows;
  c.dtype = "float32";
  c.layer = layer;
  c.stack = frame + " < model.py:10:forward";
  return c;
}

/// Two ranks of one TP group, each reducing its attention and its MLP.
Recording twoLayers() {
  Recording rec;
  rec.format = "seam-recorder";
  rec.groups = {{"tp:0", {0, 1}, false}};
  for (int r = 0; r < 2; ++r)
    rec.ranks.push_back(
        {call(CallKind::kAllReduce, "all_reduce", 4, 0, "communicator.py:120:attn"),
         call(CallKind::kAllReduce, "all_reduce", 4, 1, "communicator.py:150:mlp")});
  rec.engine.verdict = "ran";
  for (int r = 0; r < 2; ++r) rec.engine.ranks.push_back({.outcome = "ok", .output_digest = "d0"});
  return rec;
}

TEST(CompareRecordings, TheSameCallsAndOutputsAreIdentical) {
  EXPECT_EQ(compareRecordings(twoLayers(), twoLayers()).cls, TreeDiffClass::kIdentical);
}

TEST(CompareRecordings, AMovedLineIsNotADifference) {
  Recording change = twoLayers();
  for (auto& calls : change.ranks) calls[0].stack = "communicator.py:133:attn";
  EXPECT_EQ(compareRecordings(twoLayers(), change).cls, TreeDiffClass::kIdentical);
}

TEST(CompareRecordings, TheSameCallsOfEachLayerInAnotherOrderAreReordered) {
  Recording parent = twoLayers();
  for (auto& rank : parent.ranks) {
    rank[1].layer = 0;  // both of layer 0: a 2-row and a 4-row sum
    rank[1].in_rows = rank[1].out_rows = 2;
  }
  Recording change = parent;
  for (auto& rank : change.ranks) std::swap(rank[0], rank[1]);
  const TreeDiff d = compareRecordings(parent, change);
  EXPECT_EQ(d.cls, TreeDiffClass::kReordered) << d.divergence;
}

TEST(CompareRecordings, ACallIssuedByTheNextLayerIsMoved) {
  Recording change = twoLayers();
  for (auto& rank : change.ranks) rank[0].layer = 1;
  const TreeDiff d = compareRecordings(twoLayers(), change);
  EXPECT_EQ(d.cls, TreeDiffClass::kMoved);
  EXPECT_NE(d.divergence.find("parent all_reduce [0,1,]"), std::string::npos) << d.divergence;
  EXPECT_NE(d.divergence.find("(layer 0) at communicator.py:120:attn"), std::string::npos)
      << d.divergence;
  EXPECT_NE(d.divergence.find("(layer 1)"), std::string::npos) << d.divergence;
}

TEST(CompareRecordings, OtherReductionsWithTheSameOutputsAreEqualValues) {
  Recording change = twoLayers();
  for (auto& rank : change.ranks) {
    rank[1] =
        call(CallKind::kReduceScatter, "reduce_scatter_tensor", 4, 1, "communicator.py:160:rs");
    rank.push_back(
        call(CallKind::kAllGather, "all_gather_into_tensor", 4, 1, "communicator.py:170:ag"));
  }
  const TreeDiff d = compareRecordings(twoLayers(), change);
  EXPECT_EQ(d.cls, TreeDiffClass::kEqualValues);
  EXPECT_NE(d.divergence.find("rank 0, call 1"), std::string::npos) << d.divergence;
  EXPECT_NE(d.divergence.find("communicator.py:160:rs"), std::string::npos) << d.divergence;
}

TEST(CompareRecordings, ADroppedReductionWithAnotherOutputIsValuesDiffer) {
  Recording change = twoLayers();
  for (auto& rank : change.ranks) rank.pop_back();
  change.engine.ranks[1].output_digest = "d1";
  const TreeDiff d = compareRecordings(twoLayers(), change);
  EXPECT_EQ(d.cls, TreeDiffClass::kValuesDiffer);
  EXPECT_NE(d.divergence.find("change no call (its calls end at 1)"), std::string::npos)
      << d.divergence;
}

TEST(CompareRecordings, TheSameCallsWithAnotherOutputAreValuesDiffer) {
  Recording change = twoLayers();
  change.engine.ranks[1].output_digest = "d1";
  const TreeDiff d = compareRecordings(twoLayers(), change);
  EXPECT_EQ(d.cls, TreeDiffClass::kValuesDiffer);
  EXPECT_NE(d.divergence.find("rank 1's output differs"), std::string::npos) << d.divergence;
}

TEST(CompareRecordings, AChangeThatRaisesIsNamedWithWhereItRaised) {
  Recording change = twoLayers();
  change.engine.verdict = "raised";
  change.engine.ranks[0] = {.outcome = "raised",
                            .error = "AssertionError: x",
                            .where = "sglang/srt/layers/communicator.py:99:f"};
  const TreeDiff d = compareRecordings(twoLayers(), change);
  EXPECT_EQ(d.cls, TreeDiffClass::kChangeFails);
  EXPECT_EQ(d.divergence,
            "change raised at sglang/srt/layers/communicator.py:99:f: AssertionError: x");
  EXPECT_EQ(compareRecordings(change, twoLayers()).cls, TreeDiffClass::kChangeRuns);
}

TEST(CompareRecordings, TwoRefusalsAlikeAreBothFail) {
  Recording refused;
  refused.engine.verdict = "refused";
  refused.engine.failure = "AssertionError: ep must divide tp";
  const TreeDiff d = compareRecordings(refused, refused);
  EXPECT_EQ(d.cls, TreeDiffClass::kBothFail);
  EXPECT_EQ(d.divergence, "both refused: AssertionError: ep must divide tp");
  EXPECT_TRUE(keepsValues(TreeDiffClass::kBothFail));
  EXPECT_FALSE(keepsValues(TreeDiffClass::kChangeFails));
}

}  // namespace
}  // namespace seam::recordings
