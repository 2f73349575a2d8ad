// Gate windows (rank_executor.h): the ops one gate holds back must never
// fill the stream's queue of pending launches, or the host blocks in a
// launch and never opens the gate. Runs without a GPU (planning only).
#include <gtest/gtest.h>

#include <algorithm>

#include "rank_executor.h"
#include "seam/sim/model/model.h"
#include "seam/sim/policy/policy.h"

namespace seam::backend::detail {
namespace {

Case nano(ParallelConfig config, std::vector<int> tokens) {
  Case c;
  c.model = *modelFromPreset(**findPreset("nemotron-3-nano"));
  c.config = config;
  c.batch.tokens = std::move(tokens);
  return c;
}

TEST(GateWindows, ARoutedMoeStackIsSplitSoNoWindowQueuesMoreThanTheLaunchBound) {
  for (const Case& c :
       {nano({}, {3}), nano({.tp = 2, .attn_dp = 2}, {3, 2}), nano({.tp = 2, .moe_ep = 2}, {4})}) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue()) << plan.status().message();
    GpuRunOptions o;
    SharedRun s(*plan, o, plan->world());
    buildWeights(s);
    ASSERT_GT(s.moe.experts, 0);
    const std::vector<int> w = gateWindows(s);
    ASSERT_FALSE(w.empty());
    EXPECT_EQ(w.front(), 0);
    const int routed = 4 + 5 * s.moe.experts;
    const int n = static_cast<int>(plan->ranks[0].size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      const int end = k + 1 < w.size() ? w[k + 1] : n;
      ASSERT_LT(w[k], end) << "window " << k << " is empty";
      EXPECT_LE(end - w[k], kGateWindowOps);
      int launches = 0;
      for (int i = w[k]; i < end; ++i) {
        const Op& op = plan->ranks[0][i];
        launches +=
            op.kind == OpKind::kCompute && s.isMoe(op.stack, op.stage) ? routed : kOpLaunchesBound;
      }
      EXPECT_LE(launches, kGateWindowLaunches) << "window " << k;
    }
    // The 64-op windows of before would have queued several routed MoE stages at once.
    EXPECT_GT(w.size(), static_cast<std::size_t>((n + kGateWindowOps - 1) / kGateWindowOps));
  }
}

}  // namespace
}  // namespace seam::backend::detail
