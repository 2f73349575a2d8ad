// SGLang's v-collectives in recordings: `all_gatherv` and `reduce_scatterv`
// run on its pynccl communicator (distributed/parallel_state.py @0005973a),
// which issues, per member, one ncclBroadcast (all_gatherv) or ncclReduce
// (reduce_scatterv) rooted at that member inside one NCCL group, or one
// ncclAllGather when every member gathers the same rows
// (device_communicators/pynccl.py @06c48ca8). NCCL's log shows those calls;
// the Flight Recorder, which sees only torch.distributed, does not.
// The logs here are written by hand from that code, not from seam's plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "seam/recordings/alignment.h"
#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace seam::recordings {
namespace {

constexpr std::int64_t kH = 2688;  // the bare pattern's hidden size

/// --pattern '*E' --tp 2 --dp 2 --ep 2 --dp-padding sum_len --dp-gatherv
/// --reduction rsv: attention TP 1, so the MoE layer's entry gathers the
/// two shards with one all_gatherv over tp and its exit returns them with
/// one reduce_scatterv over tp (sizes: the shards' tokens).
Plan vPlan(const std::string& tokens) {
  CaseSpec spec;
  spec.pattern = "*E";
  spec.tp = 2;
  spec.dp = 2;
  spec.ep = 2;
  spec.tokens = tokens;
  spec.dp_padding = "sum_len";
  spec.dp_gatherv = true;
  spec.reduction = "rsv";
  auto c = buildCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  EXPECT_TRUE(plan) << plan.status().message();
  return *plan;
}

/// Two ranks' NCCL INFO lines on pynccl's communicator: `calls(rank)` gives
/// each rank's (op, count, root) in order.
struct Call {
  std::string op;
  std::int64_t count;
  int root;
};
std::string writeLog(const std::string& name, const std::vector<std::vector<Call>>& calls) {
  const std::string path = ::testing::TempDir() + name;
  std::string text;
  for (int r = 0; r < 2; ++r) {
    const std::string pre =
        "node:" + std::to_string(800 + r) + ":1 [" + std::to_string(r) + "] NCCL INFO ";
    text += pre + "ncclCommInitRank comm 0xb" + std::to_string(r) + " rank " + std::to_string(r) +
            " nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x88 - Init COMPLETE\n";
    for (const Call& c : calls[r])
      text += pre + c.op + ": opCount 0 sendbuff 0x1 recvbuff 0x2 count " +
              std::to_string(c.count) + " datatype 9 op 0 root " + std::to_string(c.root) +
              " comm 0xb" + std::to_string(r) + " [nranks=2] stream 0x3\n";
  }
  std::ofstream(path) << text;
  return path;
}

/// What pynccl issues for the case on both ranks, with shards of `a` and
/// `b` tokens: the gather (broadcasts, or one all-gather when a == b), then
/// the return's reduces.
std::vector<std::vector<Call>> pyncclCalls(int a, int b) {
  std::vector<std::vector<Call>> out(2);
  for (int r = 0; r < 2; ++r) {
    if (a == b) {
      out[r].push_back({"AllGather", a * kH, 0});
    } else {
      out[r].push_back({"Broadcast", a * kH, 0});
      out[r].push_back({"Broadcast", b * kH, 1});
    }
    out[r].push_back({"Reduce", a * kH, 0});
    out[r].push_back({"Reduce", b * kH, 1});
  }
  return out;
}

TEST(RecordingVCollectives, GroupedBroadcastsAndReducesFoldIntoTheVCollectivesTheyAre) {
  auto rec = readRecording(writeLog("seam_v_uneven.log", pyncclCalls(1, 3)));
  ASSERT_TRUE(rec) << rec.status().message();
  ASSERT_EQ(rec->ranks[1].size(), 2u);
  EXPECT_EQ(rec->ranks[1][0].kind, CallKind::kAllGatherv);
  EXPECT_EQ(rec->ranks[1][0].in_elems, 3 * kH);  // rank 1's own slice
  EXPECT_EQ(rec->ranks[1][0].out_elems, 4 * kH);
  EXPECT_EQ(rec->ranks[1][1].kind, CallKind::kReduceScatterv);
  EXPECT_EQ(rec->ranks[1][1].in_elems, 4 * kH);
  EXPECT_EQ(rec->ranks[1][1].out_elems, 3 * kH);
  auto v = judgeRecording(*rec, vPlan("1,3"), 1);
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->holds()) << (v->findings.empty() ? v->partial[0].what : v->findings[0].expected);
  EXPECT_EQ(v->explained, 4);
}

TEST(RecordingVCollectives, AnAllGathervOfEqualShardsIsOnePlainAllGather) {
  auto rec = readRecording(writeLog("seam_v_even.log", pyncclCalls(2, 2)));
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeRecording(*rec, vPlan("2,2"), 1);
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->holds());
  EXPECT_EQ(v->explained, 4);
}

TEST(RecordingVCollectives, AGroupLackingOneRootIsNotFoldedAndReadsAsAFinding) {
  auto calls = pyncclCalls(1, 3);
  calls[1].erase(calls[1].begin() + 1);  // rank 1 never broadcasts its own slice
  auto rec = readRecording(writeLog("seam_v_dropped.log", calls));
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeRecording(*rec, vPlan("1,3"), 1);
  ASSERT_TRUE(v) << v.status().message();
  ASSERT_FALSE(v->findings.empty());
  EXPECT_EQ(v->findings[0].rank, 1);
}

TEST(RecordingVCollectives, ShardSizesOtherThanThePlansAreAWrongSize) {
  auto rec = readRecording(writeLog("seam_v_sizes.log", pyncclCalls(3, 1)));
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeRecording(*rec, vPlan("1,3"), 1);
  ASSERT_TRUE(v) << v.status().message();
  ASSERT_FALSE(v->findings.empty());
  EXPECT_EQ(v->findings[0].kind, FindingKind::kWrongSize);
}

TEST(RecordingVCollectives, AFlightRecorderDumpWithoutThemIsPartialEvidenceNotMissingCalls) {
  const std::string dir = ::testing::TempDir() + "seam_v_fr/";
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 2; ++r)
    std::ofstream(dir + "nccl_trace_rank_" + std::to_string(r))
        << R"({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg",)"
        << R"( "ranks": "[0, 1]"}}, "pg_status": {}, "entries": []})";
  auto rec = readRecording(dir);
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeRecording(*rec, vPlan("1,3"), 1);
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->findings.empty());
  EXPECT_EQ(v->hidden[static_cast<int>(Route::kPynccl)], 4);
  ASSERT_EQ(v->partial.size(), 1u);
  EXPECT_NE(v->partial[0].what.find("pynccl"), std::string::npos);
}

}  // namespace
}  // namespace seam::recordings
