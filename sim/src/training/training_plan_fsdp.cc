// PrimeRL's FSDP2 schedule and activation recompute (training_plan_builder.h),
// as prime-rl's setup_fsdp and apply_ac configure PyTorch's fully_shard:
// - units: the embedding, every block, a MoE layer's router (its own fp32
//   unit when moe_router_dtype is float32) and its experts (their own unit
//   over dp_mod_ep only under EP), and [lm_head, final norm], which is not
//   resharded after forward;
// - forward: a unit's all-gather at its pre-forward hook; under EP
//   setup_fsdp sets explicit prefetches (a block gathers the next block, its
//   router and experts before it runs; the last block gathers lm_head+norm);
// - backward: a unit's pre-backward hook gathers it (unless still gathered)
//   and prefetches, explicitly under EP, else the unit that finished its
//   forward just before it (FSDP2's default); the block's forward is then
//   recomputed (checkpoint_wrapper, full, every layer), then its backward;
//   the post-backward hook reduce-scatters the gradients in reduce_dtype
//   (an all-reduce of the shard over dp_replicate under HSDP).
#include <algorithm>

#include "training/training_plan_builder.h"

namespace seam::training {

namespace {
bool isFsdpGather(const TrainingOp& op) {
  return op.kind == OpKind::kAllGather && op.reads.empty() && !op.params.empty();
}
}  // namespace

/// The elements a unit's all-gather output (shard=false) or one rank's shard
/// (shard=true) holds: every parameter's dim 0 padded to a multiple of the
/// group size (FSDP2 chunks dim 0 evenly).
std::int64_t Builder::unitElements(const FsdpUnit& u, bool shard) const {
  const std::int64_t n = static_cast<std::int64_t>(lay_.group(u.axis, 0).size());
  std::int64_t e = 0;
  for (const auto& [dim0, rest] : u.shapes) {
    const std::int64_t rows = (dim0 + n - 1) / n;
    e += (shard ? rows : rows * n) * rest;
  }
  return e;
}

int Builder::blockUnit(int layer) const {
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].layer == layer && !units_[u].nested) return static_cast<int>(u);
  }
  return -1;
}

int Builder::nestedUnit(int layer, const std::string& name) const {
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].layer == layer && units_[u].nested && units_[u].name == name)
      return static_cast<int>(u);
  }
  return -1;
}

/// One FSDP collective of unit u on rank r.
TrainingOp Builder::fsdpOp(int u, OpKind kind, Pass pass, int r, const std::string& step) const {
  const FsdpUnit& f = units_[u];
  TrainingOp op;
  op.pass = pass;
  op.layer = static_cast<std::int16_t>(f.layer);
  op.block = f.block;
  op.kind = kind;
  op.step = step;
  op.axis = kind == OpKind::kAllReduce ? TrainAxis::kDpReplicate : f.axis;
  op.ranks = lay_.group(op.axis, r);
  for (int p : f.params) op.params.push_back(static_cast<std::int16_t>(p));
  if (kind == OpKind::kAllGather) op.bytes = unitElements(f, false) * f.param_bytes;
  if (kind == OpKind::kReduceScatter) op.bytes = unitElements(f, false) * f.reduce_bytes;
  if (kind == OpKind::kAllReduce) op.bytes = unitElements(f, true) * f.reduce_bytes;
  return op;
}

/// The forward all-gathers, inserted before the op each one precedes; the
/// units' spans are moved to the new indices.
void Builder::insertForwardGathers() {
  const int n = static_cast<int>(fwd_[0].size());
  std::vector<std::vector<int>> before(n);
  std::vector<char> gathered(units_.size(), 0);
  std::vector<int> order(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) order[u] = static_cast<int>(u);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return units_[a].first < units_[b].first; });
  auto gather = [&](int anchor, int u) {
    if (u < 0 || gathered[u]) return;
    gathered[u] = 1;
    before[anchor].push_back(u);
  };
  const bool explicit_prefetch = k().ep > 1;
  for (int u : order) {
    const FsdpUnit& f = units_[u];
    gather(f.first, u);
    if (!explicit_prefetch || f.nested || f.layer >= nl_) continue;
    const int next = f.layer + 1;
    gather(f.first, blockUnit(next));  // layer nl_: lm_head+norm
    if (next < nl_) {
      gather(f.first, nestedUnit(next, "router"));
      gather(f.first, nestedUnit(next, "experts"));
    }
  }
  std::vector<int> moved(n);
  for (int r = 0; r < W(); ++r) {
    std::vector<TrainingOp> out;
    for (int i = 0; i < n; ++i) {
      for (int u : before[i]) {
        if (lay_.group(units_[u].axis, r).size() > 1)
          out.push_back(fsdpOp(u, OpKind::kAllGather, Pass::kForward, r,
                               "fsdp all-gather " + units_[u].name));
      }
      moved[i] = static_cast<int>(out.size());
      out.push_back(std::move(fwd_[r][i]));
    }
    fwd_[r] = std::move(out);
  }
  for (FsdpUnit& f : units_) {
    f.first = moved[f.first];
    f.last = moved[f.last];
  }
}

/// A unit's pre-backward hook: gathers it unless it is still gathered, then
/// prefetches (setup_fsdp's explicit lists under EP, else FSDP2's default:
/// the unit that finished its forward just before it).
void Builder::preBackward(int u, std::vector<char>& unsharded, std::vector<TrainingOp>& out,
                          int r) {
  auto gather = [&](int t, const char* why) {
    if (t < 0 || unsharded[t]) return;
    unsharded[t] = 1;
    if (lay_.group(units_[t].axis, r).size() > 1)
      out.push_back(fsdpOp(t, OpKind::kAllGather, Pass::kBackward, r,
                           "fsdp all-gather " + units_[t].name + why));
  };
  gather(u, " (backward)");
  const FsdpUnit& f = units_[u];
  if (k().ep > 1 && !f.nested) {
    if (f.layer < 0) return;
    const int prev = f.layer - 1;
    gather(blockUnit(prev), " (backward prefetch)");  // layer -1: the embedding
    if (prev >= 0 && f.layer < nl_) {
      gather(nestedUnit(prev, "experts"), " (backward prefetch)");
      gather(nestedUnit(prev, "router"), " (backward prefetch)");
    }
    return;
  }
  if (u > 0) gather(u - 1, " (backward prefetch)");
}

/// A unit's post-backward hook: the gradient reduce-scatter, then HSDP's
/// all-reduce of the shard over dp_replicate.
void Builder::postBackward(int u, std::vector<TrainingOp>& out, int r) {
  if (lay_.group(units_[u].axis, r).size() > 1)
    out.push_back(fsdpOp(u, OpKind::kReduceScatter, Pass::kBackward, r,
                         "fsdp reduce-scatter " + units_[u].name + " grads"));
  if (lay_.group(TrainAxis::kDpReplicate, r).size() > 1)
    out.push_back(fsdpOp(u, OpKind::kAllReduce, Pass::kBackward, r,
                         "hsdp all-reduce " + units_[u].name + " grads"));
}

void Builder::backwardFsdp() {
  for (int r = 0; r < W(); ++r) {
    const std::vector<TrainingOp>& f = fwd_[r];
    std::vector<int> idx;  // the forward ops backward undoes (not the FSDP gathers)
    for (int i = 0; i < static_cast<int>(f.size()); ++i) {
      if (!isFsdpGather(f[i])) idx.push_back(i);
    }
    std::vector<char> unsharded(units_.size(), 0);
    for (size_t u = 0; u < units_.size(); ++u) unsharded[u] = !units_[u].reshard;
    std::vector<TrainingOp> bwd;
    for (int hi = static_cast<int>(idx.size()) - 1; hi >= 0;) {
      const int layer = f[idx[hi]].layer;
      int lo = hi;
      while (lo > 0 && f[idx[lo - 1]].layer == layer) --lo;
      const int bu = blockUnit(layer);  // -1: the loss statistics, no unit
      if (bu >= 0) preBackward(bu, unsharded, bwd, r);
      if (k().recompute && layer >= 0 && layer < nl_) {
        for (int q = lo; q <= hi; ++q) {
          for (size_t u = 0; u < units_.size(); ++u) {
            if (units_[u].nested && units_[u].first == idx[q] && !unsharded[u]) {
              unsharded[u] = 1;  // its pre-forward hook runs again inside the recompute
              if (lay_.group(units_[u].axis, r).size() > 1)
                bwd.push_back(fsdpOp(static_cast<int>(u), OpKind::kAllGather, Pass::kBackward, r,
                                     "fsdp all-gather " + units_[u].name + " (recompute)"));
            }
          }
          TrainingOp c = f[idx[q]];
          c.recompute = true;
          c.step += " (recompute)";
          bwd.push_back(std::move(c));
        }
      }
      for (int q = hi; q >= lo; --q) {
        const int i = idx[q];
        for (size_t u = 0; u < units_.size(); ++u) {
          if (units_[u].nested && units_[u].last == i)
            preBackward(static_cast<int>(u), unsharded, bwd, r);
        }
        bool keep = false;
        TrainingOp b = conjugate(f[i], i, r, &keep);
        if (keep) bwd.push_back(std::move(b));
        for (size_t u = 0; u < units_.size(); ++u) {
          if (units_[u].nested && units_[u].first == i) postBackward(static_cast<int>(u), bwd, r);
        }
      }
      if (bu >= 0) postBackward(bu, bwd, r);
      hi = lo - 1;
    }
    fwd_[r].insert(fwd_[r].end(), std::make_move_iterator(bwd.begin()),
                   std::make_move_iterator(bwd.end()));
  }
}

}  // namespace seam::training
