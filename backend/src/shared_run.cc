// The plan of a GPU run that every rank thread shares (rank_executor.h's
// SharedRun), decided before the threads start: the rows every buffer holds,
// the gate windows, the weights, and which ar_add_norm groups run fused.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <thread>

#include "rank_executor.h"

namespace seam::backend::detail {

int capacityRows(const SharedRun& s) {
  const Plan& plan = s.plan;
  int cap = 1;
  for (int r = 0; r < plan.world(); ++r) {
    // A half's padded rows may outnumber the batch's (each half is aligned on its own).
    for (const LaneRows& lane : s.lanes) {
      for (int k = 0; k < kRowKindCount; ++k)
        cap = std::max(cap, lane.rows.count(static_cast<RowKind>(k), r));
      cap = std::max(cap, lane.other_rows.count(RowKind::kFull, r));
    }
    for (const Op& op : plan.ranks[r]) {
      cap = std::max({cap, op.rows_in.count, op.rows_out.count});
      if (plan.local_split == LocalSplit::kPaddedEqual && op.hasGroup() &&
          (op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter)) {
        // LayerNorm SP's equal chunks: tp * ceil(M / tp) rows before the narrow, after the pad.
        const RowMap& rows = s.lanes.front().rows;
        cap = std::max(cap, s.topo.groupSize(op.groupAxis()) * rows.count(RowKind::kLocal, r));
      }
      if (op.kind != OpKind::kAllToAll || !op.hasGroup()) continue;
      const RowMap& rows =
          s.lanes[std::min<int>(static_cast<int>(op.half), static_cast<int>(s.lanes.size()) - 1)]
              .rows;
      const auto& members = s.topo.groupOf(op.groupAxis(), r);
      if (op.rows_out.kind == RowKind::kDispatched) {
        int total = 0;
        for (int m : members) total += rows.count(op.rows_in.kind, m);
        cap = std::max(cap, total);
      } else {  // the combine receives one segment from every member
        cap = std::max(cap, static_cast<int>(members.size()) * rows.count(op.rows_out.kind, r));
      }
    }
  }
  return cap;
}

std::vector<int> gateWindows(const SharedRun& s) {
  const Plan& plan = s.plan;
  std::size_t longest = 0;
  for (const auto& ops : plan.ranks) longest = std::max(longest, ops.size());
  std::vector<int> begin;
  int ops = 0, launches = 0;
  for (std::size_t i = 0; i < longest; ++i) {
    int weight = 1;
    for (const auto& rank_ops : plan.ranks) {
      if (i >= rank_ops.size()) continue;
      const Op& op = rank_ops[i];
      const bool routed = op.kind == OpKind::kCompute && s.isMoe(op.stack, op.stage);
      weight = std::max(weight, routed ? 4 + 5 * std::max(1, s.moe.experts) : kOpLaunchesBound);
    }
    if (begin.empty() || ops == kGateWindowOps ||
        (ops > 0 && launches + weight > kGateWindowLaunches)) {
      begin.push_back(static_cast<int>(i));
      ops = launches = 0;
    }
    ++ops;
    launches += weight;
  }
  return begin;
}

void buildWeights(SharedRun& s) {
  s.moe =
      numeric::moeShape(s.plan.source.model.shape, s.plan.source.config.moe_ep, s.options.shape);
  std::set<std::pair<int, int>> keys;
  for (const auto& ops : s.plan.ranks) {
    for (const Op& op : ops) {
      const bool norm =
          op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
      if ((op.kind == OpKind::kCompute && op.stage >= 0) || norm) keys.insert({op.stack, op.stage});
    }
  }
  std::vector<std::pair<int, int>> list(keys.begin(), keys.end());
  std::vector<numeric::StageWeights> built(list.size());
  std::vector<numeric::MoeWeights> built_moe(list.size());
  std::atomic<size_t> next{0};
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 8));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < list.size(); i = next++) {
        const int stack = list[i].first, stage = list[i].second;
        if (s.isMoe(stack, stage)) {
          // The shared expert is the stage's dense MLP (numeric::moeWeights).
          built_moe[i] = numeric::moeWeights(stack, stage, s.options.mode, s.options.shape, s.moe);
          built[i] = std::move(built_moe[i].shared);
        } else {
          built[i] = numeric::stageWeights(stack, stage, s.options.mode, s.options.shape);
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < list.size(); ++i) {
    if (s.isMoe(list[i].first, list[i].second))
      s.moe_weights.emplace(list[i], std::move(built_moe[i]));
    s.weights.emplace(list[i], std::move(built[i]));
  }
}

void planPeerGroups(SharedRun& s, const std::vector<DeviceInfo>& devices) {
  std::set<std::vector<int>> groups;
  for (int r = 0; r < s.plan.world(); ++r) {
    for (const Op& op : s.plan.ranks[r]) {
      if (op.kind != OpKind::kArAddNorm || !op.hasGroup() || s.topo.groupSize(op.groupAxis()) < 2)
        continue;
      groups.insert(s.topo.groupOf(op.groupAxis(), r));
    }
  }
  const std::size_t slot_elems = static_cast<std::size_t>(s.capacity_rows) * s.options.shape.hidden;
  const double slot_mib = static_cast<double>(slot_elems * sizeof(float)) / (1 << 20);
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.2f", slot_mib);
  for (const std::vector<int>& members : groups) {
    PeerGroup g;
    g.members = members;
    g.signals.assign(members.size(), nullptr);
    g.workspace.assign(members.size(), nullptr);
    std::string ranks;
    for (int m : members) ranks += (ranks.empty() ? "" : ",") + std::to_string(m);
    std::string why;
    if (!s.options.fuse_ar_add_norm)
      why = "fusion off by option";
    else if (s.one_rank_per_process)
      why = "its members are different processes; the kernel needs them in one";
    else if (static_cast<int>(members.size()) > kernels::kPeerMaxRanks)
      why = "more members than the kernel's " + std::to_string(kernels::kPeerMaxRanks);
    else if (slot_elems * sizeof(float) > kPeerMaxSlotBytes)
      why = std::string(mib) + " MiB of rows exceed the workspace slot";
    int min_sms = INT32_MAX;
    for (int a : why.empty() ? members : std::vector<int>{}) {
      min_sms = std::min(min_sms, devices[a].multiprocessors);
      for (int b : members) {
        int can = 0;
        if (a != b && why.empty() && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) {
          why =
              "GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) + "'s memory";
        }
      }
    }
    g.fused = why.empty();
    if (g.fused) {
      // Two blocks per SM: every block of the grid is resident at once (a
      // block waits for its twin on each peer), and enough loads fly for
      // large rows.
      g.blocks = std::clamp(kernels::kPeerBlocksPerSm * min_sms, 1, kernels::kPeerMaxBlocks);
      g.slot_elems = slot_elems;
      g.path = "ar_add_norm over [" + ranks +
               "]: fused one-shot all-reduce + add + RMSNorm over peer memory (grid " +
               std::to_string(g.blocks) + ", slots of " + mib + " MiB)";
    } else {
      g.path = "ar_add_norm over [" + ranks + "]: NCCL all-reduce + add+norm kernel (" + why + ")";
    }
    s.peer_groups.push_back(std::move(g));
  }
}

}  // namespace seam::backend::detail
