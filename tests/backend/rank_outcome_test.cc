// What a process sends rank 0 when each rank of a GPU run is its own process
// (backend/src/rank_outcome.h): every field comes back as it went, floats
// bit for bit, and bytes that are not a whole report are refused. Runs
// everywhere (no GPU).
#include "rank_outcome.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace seam::backend::detail {
namespace {

ProcessReport sample() {
  ProcessReport p;
  p.end = RankEnd::kDone;
  p.code = StatusCode::kOk;
  p.message = "line one; \"quoted\"";
  p.position = {.rank = 1, .op_index = 7, .iteration = 3, .setting_up = false, .finished = true};
  p.idle_seconds = 1.25;
  RankOutcome& o = p.outcome;
  o.rank = 1;
  o.final_done = {1, 0};
  o.final_kind = {static_cast<std::int64_t>(RowKind::kAttention), 0};
  o.final_rows = {2, 0};
  o.final_host = {{1.0f, -0.0f, 3.5e-38f, 7.25f}, {}};
  o.snapshots.push_back({0, 2, RowKind::kFull, 1, {0.5f, 0.25f}});
  OpTiming t;
  t.rank = 1;
  t.op_index = 4;
  t.kind = OpKind::kAllReduce;
  t.axis = static_cast<std::int8_t>(Axis::kTp);
  t.group_size = 2;
  t.bytes = 65536;
  t.median_us = 12.5;
  t.p10_us = 11.0;
  t.p90_us = 14.75;
  t.path = ArAddNormPath::kNccl;
  t.nccl_call = "all_reduce";
  t.nccl_count = 16384;
  o.timings.push_back(t);
  o.graph = {.rank = 1,
             .eager_median_us = 100,
             .graph_median_us = 90,
             .kernel_sum_us = 88,
             .kernels = 12,
             .op_sum_us = 95,
             .ops = 10,
             .replays = 5,
             .identical = true};
  o.notes = {"ar_add_norm over [0,1]: NCCL all-reduce + add+norm kernel", ""};
  return p;
}

TEST(RankOutcomeBytes, AReportComesBackFieldForFieldAndFloatsBitForBit) {
  const ProcessReport p = sample();
  auto back = decodeReport(encodeReport(p));
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_EQ(back->end, p.end);
  EXPECT_EQ(back->message, p.message);
  EXPECT_EQ(back->position.op_index, 7);
  EXPECT_TRUE(back->position.finished);
  EXPECT_EQ(back->idle_seconds, 1.25);
  const RankOutcome& o = back->outcome;
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.final_done, p.outcome.final_done);
  EXPECT_EQ(o.final_kind, p.outcome.final_kind);
  EXPECT_EQ(o.final_rows, p.outcome.final_rows);
  ASSERT_EQ(o.final_host.size(), 2u);
  ASSERT_EQ(o.final_host[0].size(), 4u);
  EXPECT_EQ(std::memcmp(o.final_host[0].data(), p.outcome.final_host[0].data(), 4 * sizeof(float)),
            0);
  ASSERT_EQ(o.snapshots.size(), 1u);
  EXPECT_EQ(o.snapshots[0].stage, 2);
  EXPECT_EQ(o.snapshots[0].kind, RowKind::kFull);
  EXPECT_EQ(o.snapshots[0].values, p.outcome.snapshots[0].values);
  ASSERT_EQ(o.timings.size(), 1u);
  EXPECT_EQ(o.timings[0].kind, OpKind::kAllReduce);
  EXPECT_EQ(o.timings[0].axis, static_cast<std::int8_t>(Axis::kTp));
  EXPECT_EQ(o.timings[0].bytes, 65536);
  EXPECT_EQ(o.timings[0].p90_us, 14.75);
  EXPECT_EQ(o.timings[0].path, ArAddNormPath::kNccl);
  EXPECT_EQ(o.timings[0].nccl_call, "all_reduce");
  EXPECT_EQ(o.timings[0].nccl_count, 16384);
  EXPECT_EQ(o.graph.kernels, 12);
  EXPECT_EQ(o.graph.kernel_sum_us, 88);
  EXPECT_TRUE(o.graph.identical);
  EXPECT_EQ(o.notes, p.outcome.notes);
}

TEST(RankOutcomeBytes, AFailureKeepsItsCodeAndMessage) {
  ProcessReport p;
  p.end = RankEnd::kFailed;
  p.code = StatusCode::kInvalidInput;
  p.message = "world 2 needs 2 GPUs";
  auto back = decodeReport(encodeReport(p));
  ASSERT_TRUE(back.hasValue());
  const Status st = statusOf(back->code, back->message);
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(st.message(), "world 2 needs 2 GPUs");
}

TEST(RankOutcomeBytes, BytesThatAreNotAWholeReportAreRefused) {
  const std::string bytes = encodeReport(sample());
  for (std::size_t cut : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_FALSE(decodeReport(bytes.substr(0, cut)).hasValue()) << "cut at " << cut;
  }
  EXPECT_FALSE(decodeReport(bytes + "x").hasValue());
}

}  // namespace
}  // namespace seam::backend::detail
