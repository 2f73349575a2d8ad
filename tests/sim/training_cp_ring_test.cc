// Megatron's attention under context parallelism as Transformer Engine runs it
// by default (cp_comm_type p2p; context_parallel.py AttnFuncWithCPAndKVP2P),
// and its a2a and all_gather flavours: the option and its refusals, the ring's sends and receives,
// plans the training ledger passes at cp 2 and 4 with and without TP, and hand-made wrong plans it
// catches: both ends receiving first (a deadlock), a send to a rank off the ring, a receive of
// other bytes, and a backward ring stopped before the last dKV reaches its owner.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "case_builders.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/training/training_ledger.h"

namespace seam {
namespace {

Expected<TrainingCase> ringCase(int cp, int tp, const std::string& docs,
                                const std::string& comm = "") {
  CaseSpec s = testing::megatronSpec(1, cp, tp, 1, 0, docs);
  s.cp_comm_type = comm;
  return buildTrainingCase(s);
}

TrainingPlan planOf(int cp, int tp, const std::string& docs, const std::string& comm = "") {
  return testing::trainingPlanOf(ringCase(cp, tp, docs, comm));
}

std::string firstViolation(const LedgerResult& r) {
  return r.holds() ? "holds" : describeViolation(r.violations.front());
}

bool pointToPoint(const TrainingOp& op) {
  return op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
}

/// The indices of rank r's sends and receives at layer l, in order.
std::vector<size_t> ringOps(const TrainingPlan& p, int r, int l) {
  std::vector<size_t> out;
  for (size_t i = 0; i < p.ranks[r].size(); ++i) {
    if (pointToPoint(p.ranks[r][i]) && p.ranks[r][i].layer == l) out.push_back(i);
  }
  return out;
}

constexpr int kAttentionLayer = 5;  // Nano's first '*' layer

TEST(TrainingCases, MegatronsCpCommTypeDefaultsToP2pAndAllGatherTakesOneDocumentOnly) {
  auto dflt = ringCase(2, 1, "8,8");
  ASSERT_TRUE(dflt.hasValue()) << dflt.status().message();
  EXPECT_TRUE(dflt->config.p2pRing());
  auto ag = ringCase(2, 1, "16", "all_gather");
  ASSERT_TRUE(ag.hasValue()) << ag.status().message();
  EXPECT_FALSE(ag->config.p2pRing());
  EXPECT_NE(reproduceTrainingCommand(*ag).find("--cp-comm-type all_gather"), std::string::npos);
  auto packed = ringCase(2, 1, "8,8", "all_gather");
  ASSERT_FALSE(packed.hasValue());
  EXPECT_EQ(packed.status().code(), StatusCode::kRefused);
  EXPECT_NE(packed.status().message().find("THD"), std::string::npos) << packed.status().message();
  for (const char* bad : {"ring", "allgather", "p2p p2p"}) {
    auto c = ringCase(2, 1, "16", bad);
    ASSERT_FALSE(c.hasValue());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(c.status().message().find(std::string("\"") + bad + "\" is not p2p, all_gather"),
              std::string::npos)
        << c.status().message();
  }
  // Megatron's --help spells it "allgather"; its parser passes the string on
  // unchecked and TE's attn_forward_func_with_cp takes only "all_gather".
  EXPECT_NE(ringCase(2, 1, "16", "allgather")
                .status()
                .message()
                .find("Transformer Engine takes only all_gather"),
            std::string::npos);
  auto hier = ringCase(2, 1, "16", "a2a+p2p");
  ASSERT_FALSE(hier.hasValue());
  EXPECT_EQ(hier.status().code(), StatusCode::kRefused);
  EXPECT_TRUE(isNotModelled(hier.status().message())) << hier.status().message();
  // QKVO all-to-all: one document, and every tp rank's q and KV heads split over cp.
  EXPECT_TRUE(ringCase(2, 1, "16", "a2a").hasValue());
  for (auto [cp, tp, docs] :
       {std::tuple{2, 1, "8,8"}, std::tuple{4, 1, "16"}, std::tuple{2, 2, "16"}}) {
    auto c = ringCase(cp, tp, docs, "a2a");
    ASSERT_FALSE(c.hasValue()) << "cp " << cp << " tp " << tp << " docs " << docs;
    EXPECT_EQ(c.status().code(), StatusCode::kRefused) << c.status().message();
  }
  TrainingConfig prime;
  EXPECT_EQ(applyCpComm(prime, "p2p").code(), StatusCode::kInvalidInput);
}

TEST(TrainingPlans, P2pRingSendsCpMinusOneKvChunksForwardAndCpBackwardWithNoCpCollective) {
  for (int cp : {2, 4}) {
    const TrainingPlan p = planOf(cp, 1, cp == 2 ? "8,4,4" : "16,8,8");
    for (int r = 0; r < p.world(); ++r) {
      const auto ops = ringOps(p, r, kAttentionLayer);
      ASSERT_EQ(ops.size(), static_cast<size_t>(2 * (cp - 1) + 2 * cp)) << "rank " << r;
      for (const TrainingOp& op : p.ranks[r]) {
        if (op.layer == kAttentionLayer) {
          EXPECT_FALSE(op.axis == TrainAxis::kCp && !pointToPoint(op)) << op.step;
        }
      }
      // The even CP ranks send first in every exchange, the odd ones receive first.
      EXPECT_EQ(p.ranks[r][ops[0]].kind, r % 2 == 0 ? OpKind::kSend : OpKind::kRecv);
    }
    EXPECT_TRUE(checkTrainingPlan(p).holds())
        << "cp " << cp << ": " << firstViolation(checkTrainingPlan(p));
  }
}

TEST(TrainingLedger, P2pRingPlansHoldAtCp2And4WithAndWithoutTpAsDoA2aAndAllGatherPlans) {
  for (auto [cp, tp, docs] : {std::tuple{2, 1, "8,4,4"}, std::tuple{4, 1, "16,8,8"},
                              std::tuple{2, 2, "8,8"}, std::tuple{4, 2, "16,8,8"}}) {
    const TrainingPlan p = planOf(cp, tp, docs);
    EXPECT_TRUE(checkTrainingPlan(p).holds())
        << "cp " << cp << " tp " << tp << ": " << firstViolation(checkTrainingPlan(p));
  }
  for (int dp : {1, 2}) {
    CaseSpec spec = testing::megatronSpec(dp, 2, 1, 1, 0, "16");
    spec.cp_comm_type = "a2a";
    const TrainingPlan a2a = testing::trainingPlanOf(buildTrainingCase(spec));
    EXPECT_TRUE(ringOps(a2a, 0, kAttentionLayer).empty());
    EXPECT_TRUE(checkTrainingPlan(a2a).holds()) << firstViolation(checkTrainingPlan(a2a));
  }
  const TrainingPlan ag = planOf(2, 2, "16", "all_gather");
  EXPECT_TRUE(ringOps(ag, 0, kAttentionLayer).empty());
  EXPECT_TRUE(checkTrainingPlan(ag).holds()) << firstViolation(checkTrainingPlan(ag));
}

TEST(TrainingLedger, BothEndsOfACp2RingReceivingFirstDeadlock) {
  TrainingPlan p = planOf(2, 1, "8,4,4");
  const auto ops = ringOps(p, 0, kAttentionLayer);
  std::swap(p.ranks[0][ops[0]], p.ranks[0][ops[1]]);  // rank 0 now receives first, as rank 1
  const LedgerResult r = replayTraining(p);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations.front().cls, ViolationClass::kDeadlock) << firstViolation(r);
}

TEST(TrainingCollectives, ASendOffTheCpRingOrAReceiveOfOtherBytesIsACollectiveMismatch) {
  TrainingPlan off = planOf(4, 1, "16,8,8");
  const auto ops = ringOps(off, 0, kAttentionLayer);
  ASSERT_EQ(off.ranks[0][ops[0]].kind, OpKind::kSend);
  off.ranks[0][ops[0]].ranks = {0, 2};  // the next CP rank is 1
  auto v = checkTrainingCollectives(off);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.front().cls, ViolationClass::kCollectiveMismatch);
  EXPECT_NE(v.front().detail.find("not its CP ring neighbour 1"), std::string::npos)
      << v.front().detail;

  TrainingPlan bytes = planOf(2, 1, "8,4,4");
  bytes.ranks[1][ringOps(bytes, 1, kAttentionLayer)[0]].bytes /= 2;
  v = checkTrainingCollectives(bytes);
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v.front().detail.find("receives"), std::string::npos) << v.front().detail;
  const LedgerResult r = replayTraining(bytes);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations.front().cls, ViolationClass::kCollectiveMismatch) << firstViolation(r);
}

TEST(TrainingLedger, ABackwardRingStoppedBeforeTheLastDkvLeavesTheOwnersDkNeverCompleted) {
  TrainingPlan p = planOf(4, 1, "16,8,8");
  for (int r = 0; r < p.world(); ++r) {
    const auto ops = ringOps(p, r, kAttentionLayer);
    // The last two ops are the last backward exchange (dKV only).
    auto& list = p.ranks[r];
    list.erase(list.begin() + static_cast<long>(ops[ops.size() - 2]),
               list.begin() + static_cast<long>(ops.back()) + 1);
  }
  EXPECT_TRUE(checkTrainingCollectives(p).empty());
  const LedgerResult r = replayTraining(p);
  ASSERT_FALSE(r.holds());
  EXPECT_EQ(r.violations.front().cls, ViolationClass::kNeverCompleted) << firstViolation(r);
  EXPECT_NE(r.violations.front().detail.find("d:L5.k"), std::string::npos) << firstViolation(r);
}

}  // namespace
}  // namespace seam
