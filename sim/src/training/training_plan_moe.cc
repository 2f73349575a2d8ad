// The training planner's MoE layers (training_plan_builder.h): the norm,
// the router, the routed experts (PrimeRL's torch or DeepEP transport, or
// Megatron's allgather or all-to-all dispatcher), the shared expert where each
// engine runs it, and PrimeRL's FSDP units of the layer.
#include <numeric>

#include "training/training_plan_builder.h"

namespace seam::training {

/// A MoE layer: norm, router, the routed experts (dispatched and combined
/// under EP), the shared expert and the residual add. Returns its output.
int Builder::moe(int l, int h) {
  const auto& d = lay_.dims();
  MoeLayer m = moeParams(l);
  const std::string& L = m.L;
  const int tp = k().tp;
  const bool tps = tp > 1;
  const int ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, 'E', Kernel::kNorm, "pre-mlp norm", {{h}}, {ln}, {m.p_norm},
         [&](int r, int) { return localCells(r, 1); });
  // Shared expert on the full-H input (Megatron: TP column/row with SP),
  // which Megatron runs before routing (moe_layer.py MoELayer.forward).
  auto shared = [&]() {
    const int lnf = spGather(l, 'E', ln, L + "ln.full");
    const int so = tensor(L + "shared.out", Space::kHidden, 1, d.hidden * kBf16, l);
    plan_.tensors[so].shards = tps ? tp : 1;
    kernel(
        l, 'E', Kernel::kLinear, "shared expert", {{lnf, tps ? Partial::kTp : Partial::kNone}},
        {so}, {m.p_sh}, [&](int r, int) { return cpCells(r, 1); }, tps);
    return spScatter(l, 'E', so, L + "shared.sp");
  };
  int ss = megatron() ? shared() : -1;
  // Router (fp32 sigmoid, top-k): consumes ln, gives the (token, expert) choices.
  if (m.u_router >= 0) openUnit(m.u_router);
  kernel(l, 'E', Kernel::kRouter, "router top-k", {{ln}}, {}, {m.p_router},
         [&](int, int) { return 0; });
  if (m.u_router >= 0) closeUnit(m.u_router);
  // fc1 latent before the dispatch (DeepEP path; identity for Nano).
  int xl = ln;
  if (m.p_fc1 >= 0) {
    xl = tensor(L + "latent", Space::kHidden, 1, m.lat * kBf16, l);
    kernel(l, 'E', Kernel::kLinear, "fc1_latent_proj", {{ln}}, {xl}, {m.p_fc1},
           [&](int r, int) { return localCells(r, 1); });
  }
  const ExpertSplits splits = expertSplits(l);
  const int at_experts = moeDispatch(m, xl, splits);
  const int mo = moeCombine(m, at_experts, xl, splits);
  if (!megatron()) ss = shared();
  const int hn = tensor("h" + std::to_string(l + 1), Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, 'E', Kernel::kAdd, "residual add", {{h}, {mo}, {ss}}, {hn}, {},
         [&](int r, int) { return localCells(r, 1); });
  return hn;
}

/// A MoE layer's parameters (FSDP-gathered under PrimeRL, the experts over
/// expert-DP).
MoeLayer Builder::moeParams(int l) {
  const auto& d = lay_.dims();
  MoeLayer m;
  m.l = l;
  m.L = "L" + std::to_string(l) + ".";
  const std::string& L = m.L;
  const int tp = k().tp;
  const bool tps = tp > 1;
  m.lat = d.latent > 0 ? d.latent : d.hidden;
  m.p_norm = param(L + "norm", Space::kHidden, 1, d.hidden);
  m.p_router =
      param(L + "router", Space::kHidden, 1, static_cast<std::int64_t>(d.hidden) * d.experts);
  m.p_fc1 = d.latent > 0 ? param(L + "fc1_latent", Space::kHidden, 1,
                                 static_cast<std::int64_t>(d.hidden) * m.lat)
                         : -1;
  m.p_fc2 = d.latent > 0 ? param(L + "fc2_latent", Space::kHidden, 1,
                                 static_cast<std::int64_t>(d.hidden) * m.lat)
                         : -1;
  m.p_sh = param(L + "shared_expert", Space::kHidden, tps ? tp : 1,
                 static_cast<std::int64_t>(2) * d.hidden * d.shared_inter, tps);
  m.p_ex = param(L + "experts", Space::kExperts, d.experts,
                 static_cast<std::int64_t>(2) * d.experts * m.lat * d.expert_inter, false, true);
  LayerParams& lp = layer_params_[l + 1];
  for (int p : {m.p_norm, m.p_router, m.p_fc1, m.p_fc2, m.p_sh}) {
    if (p >= 0) lp.dense.push_back(p);
  }
  lp.experts.push_back(m.p_ex);
  if (tps) {
    // Norm, router and the duplicated latent projections run on SP rows: summed over tp.
    for (int p : {m.p_norm, m.p_router, m.p_fc1, m.p_fc2}) {
      if (p >= 0) lp.tp_sum.push_back(p);
    }
  }
  if (!megatron()) moeUnits(m);
  return m;
}

/// PrimeRL's FSDP units of a MoE layer (setup_fsdp): the router its own fp32
/// unit when moe_router_dtype is float32, the experts their own unit over
/// dp_mod_ep only under EP, the rest (and whatever has no unit) the block's.
void Builder::moeUnits(MoeLayer& m) {
  const auto& d = lay_.dims();
  const LayerParams& lp = layer_params_[m.l + 1];
  const std::int64_t H = d.hidden, E = d.experts, I = d.expert_inter, Lt = m.lat;
  const std::int64_t e_local = E / k().ep;
  std::vector<int> block = {m.p_norm, m.p_sh};
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {H, 1}, {d.shared_inter, H}, {H, d.shared_inter}};
  if (m.p_fc1 >= 0) {
    block.insert(block.end(), {m.p_fc1, m.p_fc2});
    shapes.insert(shapes.end(), {{Lt, H}, {H, Lt}});
  }
  if (k().router_fp32) {
    m.u_router = unit("router", m.l, 'E', {m.p_router}, {{E, H}});
    units_[m.u_router].nested = true;
    units_[m.u_router].param_bytes = 4;
    units_[m.u_router].reduce_bytes = 4;
  } else {
    block.push_back(m.p_router);
    shapes.push_back({E, H});
  }
  // w1 [E, I, L], w2 [E, L, I] (w3 is an empty placeholder), EP-sharded on dim 0.
  if (k().ep > 1) {
    m.u_experts = unit("experts", m.l, 'E', lp.experts, {{e_local, I * Lt}, {e_local, Lt * I}});
    units_[m.u_experts].nested = true;
    units_[m.u_experts].axis = TrainAxis::kExpertDp;
  } else {
    block.insert(block.end(), lp.experts.begin(), lp.experts.end());
    shapes.insert(shapes.end(), {{E, I * Lt}, {E, Lt * I}});
  }
  unit("block", m.l, 'E', block, shapes);
}

/// The (token, expert) cells each rank sends to and receives from each EP
/// member at layer l (empty without EP).
ExpertSplits Builder::expertSplits(int l) const {
  ExpertSplits s;
  s.send.resize(W());
  s.recv.resize(W());
  s.rows.resize(W());
  if (k().ep == 1) return s;
  for (int r = 0; r < W(); ++r) {
    std::vector<int>& out = s.send[r];
    out.assign(lay_.group(TrainAxis::kEp, r).size(), 0);
    s.rows[r].assign(out.size(), 0);
    for (int t : lay_.localTokens(r)) {
      std::vector<char> hit(out.size(), 0);
      for (int e : lay_.route(l, t)) {
        ++out[lay_.expertOwner(e)];
        hit[lay_.expertOwner(e)] = 1;
      }
      for (size_t m = 0; m < hit.size(); ++m) s.rows[r][m] += hit[m];
    }
  }
  for (int r = 0; r < W(); ++r) {
    for (int m : lay_.group(TrainAxis::kEp, r)) s.recv[r].push_back(s.send[m][lay_.coord(r).ep]);
  }
  return s;
}

/// The rows rank r's dispatch sends and receives: one per (token, expert)
/// with the torch backend (TorchTitan sends each top-k copy), one per
/// (token, destination rank) with DeepEP (combine reduces them back).
std::pair<std::int64_t, std::int64_t> Builder::expertRows(const ExpertSplits& s, int r) const {
  const auto& sent = k().deepep ? s.rows : s.send;
  std::int64_t out = std::accumulate(sent[r].begin(), sent[r].end(), std::int64_t{0});
  std::int64_t in = 0;
  for (int m : lay_.group(TrainAxis::kEp, r)) in += sent[m][lay_.coord(r).ep];
  return {out, in};
}

/// A rank's (token, expert) cells: its tokens times top-k.
int Builder::routedCells(int r) const {
  return static_cast<int>(lay_.localTokens(r).size()) * lay_.dims().top_k;
}

/// The permute by expert and, under EP, the dispatch to the experts' owners.
/// Returns the tensor the experts read.
int Builder::moeDispatch(MoeLayer& m, int xl, const ExpertSplits& splits) {
  if (k().allGatherDispatch()) return allGatherDispatch(m, xl);
  const int l = m.l;
  const int disp = derived(m.L + "routed", xl, lay_.dims().experts);
  plan_.tensors[disp].space = Space::kExperts;
  m.disp = disp;
  // Megatron's MoEAlltoAllTokenDispatcher.preprocess, before the permute:
  // each rank's per-expert token counts (int64) all-gathered over the
  // expert tp x ep group when ep or etp > 1 to size the exchanges;
  // integers, so no backward.
  const bool etp = megatron() && k().expertTp() > 1;
  if (megatron() && (k().ep > 1 || etp)) {
    statCollective(l, OpKind::kAllGather, TrainAxis::kTpEp, "tp_ep counts all-gather", [&](int r) {
      return static_cast<std::int64_t>(lay_.dims().experts) * 8 *
             static_cast<std::int64_t>(lay_.group(TrainAxis::kTpEp, r).size());
    });
  }
  transform(l, 'E', Transform::kPermute, "permute by expert", {xl}, disp,
            [&](int r, TrainingOp&) { cells_[disp][r] = routedCells(r); });
  // all_to_all over an EP group of one rank returns its input (mappings.py _AllToAll).
  if (k().ep == 1) return etp ? expertTpGather(m, disp, splits) : disp;
  // FSDP's pre-forward hook runs before EP's dispatch (fully_shard prepends it).
  if (m.u_experts >= 0) openUnit(m.u_experts);
  if (!megatron() && !k().deepep) {
    // TorchTitan's ExpertParallel._token_dispatch: the per-expert counts
    // (histc, float32) all-to-all'd first, under no_grad, to size the token
    // exchange; DeepEP's dispatch exchanges its layout inside the kernel.
    TrainingOp counts;
    counts.layer = static_cast<std::int16_t>(l);
    counts.block = 'E';
    counts.kind = OpKind::kAllToAll;
    counts.axis = TrainAxis::kEp;
    counts.step = "ep counts exchange";
    emit(counts, [&](int r, TrainingOp& op) {
      op.ranks = lay_.group(TrainAxis::kEp, r);
      op.bytes = static_cast<std::int64_t>(lay_.dims().experts) * 4;
    });
  }
  const int de = derived(m.L + "routed.ep", disp);
  collective(
      l, 'E', OpKind::kAllToAll, A2aMode::kToExpert, TrainAxis::kEp, "ep dispatch", disp, de,
      [&](int r) {
        const auto& rs = splits.recv[r];
        return std::accumulate(rs.begin(), rs.end(), 0);
      },
      [&](int r, TrainingOp& op) {
        op.in_splits = splits.send[r];
        op.out_splits = splits.recv[r];
        const auto [sent, received] = expertRows(splits, r);
        op.bytes = sent * m.lat * kBf16;
        op.recv_bytes = received * m.lat * kBf16;
      });
  if (megatron()) megatronProbsAllToAll(l, splits);
  return etp ? expertTpGather(m, de, splits) : de;
}

/// The (token, expert) rows rank r's experts get from its EP peers (all of
/// its own rows without EP): one member's share of output_splits_tp.
int Builder::expertTpRows(const ExpertSplits& s, int r) const {
  if (k().ep == 1) return routedCells(r);
  return std::accumulate(s.recv[r].begin(), s.recv[r].end(), 0);
}

/// output_splits_tp of rank r's dispatcher: the rows of each member of its
/// expert-TP group, in group order.
std::vector<int> Builder::expertTpSplits(const ExpertSplits& s, int r) const {
  std::vector<int> out;
  for (int m : lay_.group(TrainAxis::kExpertTp, r)) out.push_back(expertTpRows(s, m));
  return out;
}

/// Megatron's dispatch_postprocess under expert TP: the tokens, then their
/// probs, all-gathered over the expert-TP group with output_split_sizes =
/// output_splits_tp (gather_from_sequence_parallel_region: a reduce-scatter
/// with the same splits in backward). Returns the tokens every member's
/// expert shards read.
int Builder::expertTpGather(const MoeLayer& m, int at, const ExpertSplits& splits) {
  const int l = m.l;
  const std::int64_t row = static_cast<std::int64_t>(m.lat) * kBf16;
  const int g = derived(m.L + "routed.etp", at);
  collective(
      l, 'E', OpKind::kAllGather, A2aMode::kNone, TrainAxis::kExpertTp, "etp all-gather tokens", at,
      g,
      [&](int r) {
        const auto sp = expertTpSplits(splits, r);
        return std::accumulate(sp.begin(), sp.end(), 0);
      },
      [&](int r, TrainingOp& op) {
        op.out_splits = expertTpSplits(splits, r);
        op.bytes = cells_[g][r] * row;
      });
  TrainingOp probs;
  probs.layer = static_cast<std::int16_t>(l);
  probs.block = 'E';
  probs.kind = OpKind::kAllGather;
  probs.axis = TrainAxis::kExpertTp;
  probs.step = kProbsGather;
  emit(probs, [&](int r, TrainingOp& op) {
    op.ranks = lay_.group(TrainAxis::kExpertTp, r);
    op.out_splits = expertTpSplits(splits, r);
    op.bytes = cells_[g][r] * k().probsBytes();
  });
  return g;
}

/// Megatron's combine_preprocess under expert TP: each member's partial
/// expert outputs (fc2 is row-parallel over etp) reduce-scattered over the
/// expert-TP group with input_split_sizes = output_splits_tp, in the probs'
/// dtype (bf16 by default); an all-gather with the same splits in backward.
int Builder::expertTpScatter(const MoeLayer& m, int yw, const ExpertSplits& splits) {
  const int yr = derived(m.L + "experts.etp", yw);
  collective(
      m.l, 'E', OpKind::kReduceScatter, A2aMode::kNone, TrainAxis::kExpertTp,
      "etp reduce-scatter expert outputs", yw, yr, [&](int r) { return expertTpRows(splits, r); },
      [&](int r, TrainingOp& op) {
        op.in_splits = expertTpSplits(splits, r);
        op.bytes = static_cast<std::int64_t>(cells_[yw][r]) * m.lat * k().probsBytes();
      });
  return yr;
}

/// Megatron's dispatch_all_to_all: after the tokens, their routing
/// probabilities over the same splits, one value per (token, expert) row in
/// the logits' dtype: the input's (bf16) under Megatron's default
/// moe_router_dtype None, fp32 under fp32 (router.py, TopKRouter.gating).
void Builder::megatronProbsAllToAll(int l, const ExpertSplits& splits) {
  TrainingOp probs;
  probs.layer = static_cast<std::int16_t>(l);
  probs.block = 'E';
  probs.kind = OpKind::kAllToAll;
  probs.a2a = A2aMode::kToExpert;
  probs.axis = TrainAxis::kEp;
  probs.step = kProbsAllToAll;
  emit(probs, [&](int r, TrainingOp& op) {
    op.ranks = lay_.group(TrainAxis::kEp, r);
    op.in_splits = splits.send[r];
    op.out_splits = splits.recv[r];
    const auto [sent, received] = expertRows(splits, r);
    op.bytes = sent * k().probsBytes();
    op.recv_bytes = received * k().probsBytes();
  });
}

/// The grouped experts, the routing weights (x routed_scaling_factor,
/// applied once after the experts, before the combine: PR
/// distributed/deepep.py), under EP the combine, the unpermute (sum over
/// k) and the fc2 latent projection. Returns the MoE output.
int Builder::moeCombine(const MoeLayer& m, int at_experts, int xl, const ExpertSplits& splits) {
  const auto& d = lay_.dims();
  const int l = m.l;
  const std::string& L = m.L;
  const int ye = tensor(L + "experts.out", Space::kExperts, d.experts, m.lat * kBf16, l);
  // Under expert TP (Megatron) each member holds a column (fc1) and row
  // (fc2) shard of its experts: its outputs are partial sums over etp.
  const int etp = megatron() ? k().expertTp() : 1;
  plan_.tensors[ye].shards = etp;
  kernel(l, 'E', Kernel::kExperts, "grouped experts", {{at_experts, Partial::kRouted}}, {ye},
         {m.p_ex}, [&](int r, int) { return cells_[at_experts][r]; });
  for (int r = 0; r < W(); ++r) fwd_[r].back().shard = static_cast<std::int16_t>(lay_.coord(r).etp);
  const int yw = derived(L + "experts.weighted", ye);
  transform(l, 'E', Transform::kRouteWeight, "routing weights", {ye}, yw,
            [&](int r, TrainingOp&) { cells_[yw][r] = cells_[ye][r]; });
  const bool ag = k().allGatherDispatch();
  int back = etp > 1 && !ag ? expertTpScatter(m, yw, splits) : yw;
  if (k().ep > 1 && !ag) {
    const int yb = derived(L + "experts.back", back);
    collective(
        l, 'E', OpKind::kAllToAll, A2aMode::kToSource, TrainAxis::kEp, "ep combine", back, yb,
        [&](int r) { return routedCells(r); },
        [&](int r, TrainingOp& op) {
          op.reads.push_back(static_cast<std::int16_t>(m.disp));  // the order the handle restores
          op.in_splits = splits.recv[r];
          op.out_splits = splits.send[r];
          // The combine sends back what the dispatch brought.
          const auto [sent, received] = expertRows(splits, r);
          op.bytes = received * m.lat * kBf16;
          op.recv_bytes = sent * m.lat * kBf16;
        });
    back = yb;
    if (m.u_experts >= 0) closeUnit(m.u_experts);
  }
  const int ms = tensor(L + "moe.sum", Space::kHidden, 1, m.lat * kBf16, l);
  plan_.tensors[ms].routed_from = ye;
  plan_.tensors[ye].grad_value = -2;  // resolved to d:moe.sum by completeGradients
  // The allgather dispatcher unpermutes its own experts' rows onto every
  // gathered token (combine_preprocess) before reducing them.
  const int to = ag ? m.gathered : xl;
  transform(l, 'E', Transform::kSumOverK, ag ? "unpermute local experts" : "unpermute (sum over k)",
            {back, to}, ms, [&](int r, TrainingOp&) { cells_[ms][r] = cells_[to][r]; });
  moe_sums_.push_back({ye, ms});
  const int out = ag ? allGatherScatter(m, ms) : ms;
  if (m.p_fc2 < 0) return out;
  const int mo = tensor(L + "moe.out", Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, 'E', Kernel::kLinear, "fc2_latent_proj", {{out}}, {mo}, {m.p_fc2},
         [&](int r, int) { return localCells(r, 1); });
  return mo;
}

/// Megatron's MoEAllGatherTokenDispatcher (token_dispatcher.py @d98e8a6,
/// the default moe_token_dispatcher_type): when etp or ep > 1, token_dispatch
/// all-gathers over tp_ep (expert TP x EP) the routing map (bool, no_grad),
/// the [tokens, experts] probs, then the tokens; dispatch_postprocess keeps
/// the (token, expert) rows of the rank's own experts (local_map) and permutes
/// them. Returns the rows the experts read.
int Builder::allGatherDispatch(MoeLayer& m, int xl) {
  const int l = m.l;
  const std::int64_t E = lay_.dims().experts;
  int src = xl;
  if (k().ep > 1 || k().expertTp() > 1) {
    auto rows = [&](int r) {
      std::int64_t n = 0;
      for (int g : lay_.group(TrainAxis::kTpEp, r)) n += localCells(g, 1);
      return n;
    };
    statCollective(l, OpKind::kAllGather, TrainAxis::kTpEp, "tp_ep routing map all-gather",
                   [&](int r) { return rows(r) * E; });
    statCollective(l, OpKind::kAllGather, TrainAxis::kTpEp, kProbsGatherTpEp,
                   [&](int r) { return rows(r) * E * k().probsBytes(); });
    src = derived(m.L + "routed.tp_ep", xl);
    collective(l, 'E', OpKind::kAllGather, A2aMode::kNone, TrainAxis::kTpEp,
               "tp_ep all-gather tokens", xl, src,
               [&](int r) { return static_cast<int>(rows(r)); });
  }
  m.gathered = src;
  const int disp = derived(m.L + "routed", src, static_cast<int>(E));
  plan_.tensors[disp].space = Space::kExperts;
  m.disp = disp;
  transform(l, 'E', Transform::kPermute, "permute by local expert", {src}, disp,
            [&](int r, TrainingOp& op) {
              const int ep = lay_.coord(r).ep;
              for (int e = 0; e < E; ++e) {
                if (lay_.expertOwner(e) == ep) op.unit_list.push_back(e);
              }
              int n = 0;
              for (int g : lay_.group(TrainAxis::kTpEp, r)) {
                if (src == xl && g != r) continue;
                for (int t : lay_.localTokens(g)) {
                  for (int e : lay_.route(l, t)) n += lay_.expertOwner(e) == ep;
                }
              }
              cells_[disp][r] = n;
            });
  return disp;
}

/// The allgather dispatcher's token_combine: the local unpermute's partial
/// sums (over the rank's experts and expert-TP shard, on the gathered rows)
/// reduce-scattered over tp_ep in the probs' dtype (combine_preprocess casts
/// them), none when etp and ep are 1. Returns the rank's own rows.
int Builder::allGatherScatter(const MoeLayer& m, int ms) {
  if (k().ep == 1 && k().expertTp() == 1) return ms;
  const int back = derived(m.L + "moe.sum.tp_ep", ms);
  collective(
      m.l, 'E', OpKind::kReduceScatter, A2aMode::kNone, TrainAxis::kTpEp,
      "tp_ep reduce-scatter expert outputs", ms, back, [&](int r) { return localCells(r, 1); },
      [&](int r, TrainingOp& op) {
        op.bytes = static_cast<std::int64_t>(cells_[ms][r]) * m.lat * k().probsBytes();
      });
  return back;
}

}  // namespace seam::training
