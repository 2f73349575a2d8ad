// The training planner's forward (training_plan_builder.h): each layer kind
// as PrimeRL or Megatron runs it (training-layouts §1, §2), the embedding and
// the loss. Every tensor is made and every op emitted in the engine's order:
// tensor ids and op order are the plan.
#include <algorithm>
#include <numeric>

#include "training/training_plan_builder.h"

namespace seam::training {

/// The embedding (vocab-parallel under Megatron TP) and its SP scatter: h0.
void Builder::embed() {
  const auto& d = lay_.dims();
  const bool tpv = k().tp > 1;
  const int pe = param("embed", Space::kHidden, tpv ? k().tp : 1, 0, tpv);
  layer_params_[0].dense.push_back(pe);
  if (!megatron()) paramGather(-1, ' ', {pe}, TrainAxis::kFsdp);
  const int e = tensor("h0.embed", Space::kHidden, 1, d.hidden * kBf16, -1);
  // Megatron's vocab-parallel embedding leaves a partial over tp (reduce-scattered under SP).
  plan_.tensors[e].shards = tpv ? k().tp : 1;
  kernel(
      -1, ' ', Kernel::kLinear, "embedding", {}, {e}, {pe},
      [&](int r, int) { return tpv ? cpCells(r, 1) : localCells(r, 1); }, tpv);
  h0_ = spScatter(-1, ' ', e, "h0.sp");
}

/// A Mamba layer: in_proj, the head-parallel conv/SSD (Ulysses all-to-alls
/// under CP), out_proj and the residual add. Returns the layer's output.
int Builder::mamba(int l, int h) {
  const MambaLayer m = mambaParams(l);
  const std::vector<int> outs = mambaInProj(m, h);
  const std::vector<int> heads = mambaToHeads(m, outs);
  const int y = mambaScan(m, heads);
  return mambaOut(m, h, y);
}

/// A Mamba layer's geometry and parameters (FSDP-gathered under PrimeRL).
MambaLayer Builder::mambaParams(int l) {
  const auto& d = lay_.dims();
  MambaLayer m;
  m.l = l;
  m.L = "L" + std::to_string(l) + ".";
  const int tp = k().tp;
  m.nb = lay_.headBlocks();
  m.G = lay_.groupUnits();
  m.units_local = m.nb / tp;
  m.groups_local = m.G / tp;
  m.head_bytes = static_cast<std::int64_t>(d.mamba_heads / m.nb) * d.mamba_head_dim * kBf16;
  m.group_bytes = static_cast<std::int64_t>(d.state) * kBf16;
  m.dt_bytes = static_cast<std::int64_t>(d.mamba_heads / m.nb) * kBf16;
  const int d_in = d.mamba_heads * d.mamba_head_dim;
  const bool tps = tp > 1;
  const std::string& L = m.L;
  m.p_norm = param(L + "norm", Space::kHidden, 1, d.hidden, false, false, tps ? tp : 1);
  m.p_in = param(
      L + "in_proj", Space::kHidden, tps ? tp : 1,
      static_cast<std::int64_t>(d.hidden) * (2 * d_in + 2 * m.G * d.state + d.mamba_heads), tps);
  m.p_convx = param(L + "conv1d.x", Space::kHeads, m.nb, static_cast<std::int64_t>(d_in) * 4, tps);
  m.p_convbc = param(L + "conv1d.BC", Space::kGroups, m.G,
                     static_cast<std::int64_t>(2 * m.G * d.state) * 4, tps);
  m.p_alog = param(L + "A_log", Space::kHeads, m.nb, d.mamba_heads, tps);
  m.p_d = param(L + "D", Space::kHeads, m.nb, d.mamba_heads, tps);
  m.p_dtb = param(L + "dt_bias", Space::kHeads, m.nb, d.mamba_heads, tps);
  m.p_gn = param(L + "norm.gated", Space::kHeads, m.nb, d_in, tps);
  m.p_out = param(L + "out_proj", Space::kHidden, tps ? tp : 1,
                  static_cast<std::int64_t>(d_in) * d.hidden, tps);
  LayerParams& lp = layer_params_[l + 1];
  for (int p : {m.p_norm, m.p_in, m.p_convx, m.p_convbc, m.p_alog, m.p_d, m.p_dtb, m.p_gn, m.p_out})
    lp.dense.push_back(p);
  if (tps) lp.tp_sum.push_back(m.p_norm);
  if (!megatron()) paramGather(l, 'M', lp.dense, TrainAxis::kFsdp);
  return m;
}

/// The norm and in_proj: z, x, dt (head blocks) and B, C (groups) on the
/// rank's tp shard of units.
std::vector<int> Builder::mambaInProj(const MambaLayer& m, int h) {
  const auto& d = lay_.dims();
  const int l = m.l;
  const std::string& L = m.L;
  const bool tps = k().tp > 1;
  const int hin = spGather(l, 'M', h, L + "h.full");
  const int z = tensor(L + "z", Space::kHeads, m.nb, m.head_bytes, l, true);
  const int x = tensor(L + "x", Space::kHeads, m.nb, m.head_bytes, l, true);
  const int dt = tensor(L + "dt", Space::kHeads, m.nb, m.dt_bytes, l, true);
  const int B = tensor(L + "B", Space::kGroups, m.G, m.group_bytes, l, true);
  const int C = tensor(L + "C", Space::kGroups, m.G, m.group_bytes, l, true);
  // PrimeRL: RMSNorm then in_proj; Megatron: the LayerNorm fused into the
  // column-parallel in_proj (TELayerNormColumnParallelLinear), on SP-gathered rows.
  int ln = hin;
  if (!megatron()) {
    ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
    kernel(l, 'M', Kernel::kNorm, "norm", {{hin}}, {ln}, {m.p_norm},
           [&](int r, int) { return localCells(r, 1); });
  }
  const std::vector<int> outs = {z, x, dt, B, C};
  kernel(
      l, 'M', Kernel::kLinear, megatron() ? "norm+in_proj" : "in_proj",
      {{ln, tps ? Partial::kTp : Partial::kNone}}, outs,
      megatron() ? std::vector<int>{m.p_norm, m.p_in} : std::vector<int>{m.p_in},
      [&](int r, int w) { return cpCells(r, w >= 3 ? m.groups_local : m.units_local); }, tps);
  return outs;
}

/// Under CP: B/C groups repeated when fewer than cp per tp rank (Megatron
/// group_repeat_count), the five seq->head all-to-alls (cp_mamba.py
/// L129-143), and under Megatron the load-balancing order undone before
/// conv/SSD (CP L359-395). The tensors conv/SSD read, in the order of `outs`.
std::vector<int> Builder::mambaToHeads(const MambaLayer& m, const std::vector<int>& outs) {
  const int l = m.l, cp = k().cp;
  std::vector<int> cur = outs;
  if (cp > 1 && m.groups_local < cp) {
    const int reps = cp / m.groups_local;
    for (int i : {3, 4}) {
      const int rep = derived(plan_.tensors[cur[i]].name + ".rep", cur[i], m.G * reps);
      plan_.tensors[rep].reps = reps;
      const int src = cur[i];
      transform(l, 'M', Transform::kRepeat, "repeat groups", {src}, rep,
                [&](int r, TrainingOp& op) {
                  op.reps = reps;
                  cells_[rep][r] = cells_[src][r] * reps;
                });
      cur[i] = rep;
    }
  }
  if (cp == 1) return cur;
  for (int i = 0; i < 5; ++i) {
    const int hh = derived(plan_.tensors[cur[i]].name + ".h", cur[i]);
    const int src = cur[i];
    collective(l, 'M', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp,
               "a2a seq->head " + plan_.tensors[outs[i]].name.substr(m.L.size()), src, hh,
               [&](int r) { return cells_[src][r]; });
    cur[i] = hh;
  }
  if (megatron() && d_ != TrainingDecision::kZigzagNotUndone) {
    for (int i = 0; i < 5; ++i) {
      const int u = derived(plan_.tensors[cur[i]].name + ".seq", cur[i]);
      const int src = cur[i];
      transform(l, 'M', Transform::kReorder, "undo load balancing", {src}, u,
                [&](int r, TrainingOp& op) {
                  op.perm = undoPerm(r, static_cast<int>(cells_[src][r] / lay_.tokens()));
                  cells_[u][r] = cells_[src][r];
                });
      cur[i] = u;
    }
  }
  return cur;
}

/// The head-parallel part: per-head parameters sliced to the rank's heads,
/// causal conv1d, the SSD scan, and PrimeRL's gated norm on the slice.
/// Returns the scan's (normed) output.
int Builder::mambaScan(const MambaLayer& m, const std::vector<int>& in) {
  const int l = m.l, cp = k().cp;
  const std::string& L = m.L;
  // Per-head parameters sliced to the rank's heads (cp_mamba.py L148-179;
  // Megatron: CP-local slices of the TP-local tensors).
  transform(
      l, 'M', Transform::kSliceParam, "slice head params", {}, -1, [&](int r, TrainingOp& op) {
        const training::Coord& c = lay_.coord(r);
        op.params = {static_cast<std::int16_t>(m.p_convx), static_cast<std::int16_t>(m.p_alog),
                     static_cast<std::int16_t>(m.p_d), static_cast<std::int16_t>(m.p_dtb)};
        // PrimeRL's gated norm runs head-parallel on the slice; Megatron's grouped
        // norm runs after the head->seq all-to-all on every TP-local head.
        if (!megatron()) op.params.push_back(static_cast<std::int16_t>(m.p_gn));
        op.unit_list = {c.tp * cp + c.cp};
      });
  transform(l, 'M', Transform::kSliceParam, "slice group params", {}, -1,
            [&](int r, TrainingOp& op) {
              const training::Coord& c = lay_.coord(r);
              op.params = {static_cast<std::int16_t>(m.p_convbc)};
              op.unit_list = lay_.groupsOfBlock(c.tp * cp + c.cp);
            });
  // A replicated group's conv rows get one contribution per replica (each
  // replica's heads), summed by the data-parallel reduction.
  const bool replicated = cp > 1 && m.groups_local < cp;
  if (replicated) plan_.tensors[m.p_convbc].shards = cp / m.groups_local;
  const int xc = tensor(L + "x.conv", Space::kHeads, m.nb, m.head_bytes, l);
  const int bc = tensor(L + "B.conv", Space::kGroups, m.G, m.group_bytes, l);
  const int cc = tensor(L + "C.conv", Space::kGroups, m.G, m.group_bytes, l);
  const Partial rp = replicated ? Partial::kReps : Partial::kNone;
  const int xin = in[1], bin = in[3], cin = in[4], dtin = in[2], zin = in[0];
  kernel(
      l, 'M', Kernel::kConv, "causal conv1d", {{xin}, {bin, rp}, {cin, rp}}, {xc, bc, cc},
      {m.p_convx, m.p_convbc},
      [&](int r, int w) {
        return cells_[w == 0 ? xin : w == 1 ? bin : cin][r];
      },
      false, true);
  const int y = tensor(L + "y", Space::kHeads, m.nb, m.head_bytes, l);
  std::vector<Read> ssd_reads = {{xc}, {bc}, {cc}, {dtin}};
  if (megatron()) ssd_reads.push_back({zin});  // z-gating inside mamba_split_conv1d_scan_combined
  kernel(
      l, 'M', Kernel::kSsd, "ssd scan", ssd_reads, {y}, {m.p_alog, m.p_d, m.p_dtb},
      [&](int r, int) { return cells_[xin][r]; }, false, true);
  if (megatron()) return y;
  const int yn = tensor(L + "y.norm", Space::kHeads, m.nb, m.head_bytes, l);
  kernel(l, 'M', Kernel::kGatedNorm, "gated rmsnorm", {{y}, {zin}}, {yn}, {m.p_gn},
         [&](int r, int) { return cells_[xin][r]; });
  return yn;
}

/// Back to sequence parallel: under Megatron CP the load-balancing order
/// redone, the head->seq all-to-all, Megatron's grouped norm, out_proj (a
/// partial over tp, reduce-scattered under SP) and the residual add.
int Builder::mambaOut(const MambaLayer& m, int h, int y) {
  const int l = m.l;
  const std::string& L = m.L;
  int yv = y;
  if (k().cp > 1) {
    if (megatron() && d_ != TrainingDecision::kZigzagNotRestored &&
        d_ != TrainingDecision::kZigzagNotUndone) {
      const int rd = derived(L + "y.lb", yv);
      const int src = yv;
      transform(l, 'M', Transform::kReorder, "redo load balancing", {src}, rd,
                [&](int r, TrainingOp& op) {
                  op.perm = redoPerm(r, static_cast<int>(cells_[src][r] / lay_.tokens()));
                  cells_[rd][r] = cells_[src][r];
                });
      yv = rd;
    }
    const int ys = derived(L + "y.seq", yv);
    const int src = yv;
    collective(l, 'M', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, "a2a head->seq y",
               src, ys, [&](int r) { return cells_[src][r]; });
    yv = ys;
  }
  if (megatron()) {
    const int yn = tensor(L + "y.norm", Space::kHeads, m.nb, m.head_bytes, l, true);
    kernel(l, 'M', Kernel::kGatedNorm, "grouped rmsnorm", {{yv}}, {yn}, {m.p_gn},
           [&](int r, int) { return cells_[yv][r]; });
    yv = yn;
  }
  return projectAndAdd(l, 'M', "out_proj", yv, m.p_out, h);
}

/// A mixer's row-parallel output projection (a partial over tp,
/// reduce-scattered under SP) and the residual add onto `h`: the layer's output.
int Builder::projectAndAdd(int l, char block, const std::string& step, int in, int p_out, int h) {
  const auto& d = lay_.dims();
  const std::string L = "L" + std::to_string(l) + ".";
  const int tp = k().tp;
  const bool tps = tp > 1;
  const int o = tensor(L + "out", Space::kHidden, 1, d.hidden * kBf16, l);
  plan_.tensors[o].shards = tps ? tp : 1;
  kernel(
      l, block, Kernel::kLinear, step, {{in}}, {o}, {p_out},
      [&](int r, int) { return cpCells(r, 1); }, tps);
  const int os = spScatter(l, block, o, L + "out.sp");
  const int hn = tensor("h" + std::to_string(l + 1), Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, block, Kernel::kAdd, "residual add", {{h}, {os}}, {hn}, {},
         [&](int r, int) { return localCells(r, 1); });
  return hn;
}

/// The token order after a seq->head all-to-all over cp: members' cp-local
/// tokens, rank-major.
std::vector<int> Builder::cpOrder(int r) const {
  std::vector<int> order;
  for (int m : lay_.group(TrainAxis::kCp, r)) {
    const auto& t = lay_.cpTokens(m);
    order.insert(order.end(), t.begin(), t.end());
  }
  return order;
}

/// The permutation that sorts cpOrder's tokens into global order (each
/// token's `units` cells kept together).
std::vector<int> Builder::undoPerm(int r, int units) const {
  const std::vector<int> in = cpOrder(r);
  std::vector<int> idx(in.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return in[a] < in[b]; });
  std::vector<int> perm;
  for (int a : idx) {
    for (int v = 0; v < units; ++v) perm.push_back(a * units + v);
  }
  return perm;
}

/// The inverse of undoPerm: global order back to the load-balancing order.
std::vector<int> Builder::redoPerm(int r, int units) const {
  const std::vector<int> undo = undoPerm(r, units);
  std::vector<int> inv(undo.size());
  for (size_t i = 0; i < undo.size(); ++i) inv[undo[i]] = static_cast<int>(i);
  return inv;
}

/// An attention layer: qkv, under CP PrimeRL's Ulysses all-to-alls (KV heads
/// repeated when fewer than cp) or Megatron's KV all-gather, the varlen
/// kernel, o_proj and the residual add. Returns the layer's output.
int Builder::attention(int l, int h) {
  const auto& d = lay_.dims();
  const std::string L = "L" + std::to_string(l) + ".";
  const int tp = k().tp, cp = k().cp;
  const bool tps = tp > 1;
  const std::int64_t hb = static_cast<std::int64_t>(d.head_dim) * kBf16;
  LayerParams& lp = layer_params_[l + 1];
  const int p_norm = param(L + "norm", Space::kHidden, 1, d.hidden, false, false, tps ? tp : 1);
  const int p_qkv =
      param(L + "qkv", Space::kHidden, tps ? tp : 1,
            static_cast<std::int64_t>(d.hidden) * (d.q_heads + 2 * d.kv_heads) * d.head_dim, tps);
  const int p_o = param(L + "o_proj", Space::kHidden, tps ? tp : 1,
                        static_cast<std::int64_t>(d.q_heads) * d.head_dim * d.hidden, tps);
  for (int p : {p_norm, p_qkv, p_o}) lp.dense.push_back(p);
  if (tps) lp.tp_sum.push_back(p_norm);
  if (!megatron()) paramGather(l, '*', lp.dense, TrainAxis::kFsdp);
  const int hin = spGather(l, '*', h, L + "h.full");
  int ln = hin;
  if (!megatron()) {
    ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
    kernel(l, '*', Kernel::kNorm, "norm", {{hin}}, {ln}, {p_norm},
           [&](int r, int) { return localCells(r, 1); });
  }
  const int q = tensor(L + "q", Space::kQHeads, d.q_heads, hb, l, true);
  const int kv = tensor(L + "kv", Space::kKvHeads, d.kv_heads, 2 * hb, l, true);
  kernel(
      l, '*', Kernel::kLinear, megatron() ? "norm+qkv" : "qkv",
      {{ln, tps ? Partial::kTp : Partial::kNone}}, {q, kv},
      megatron() ? std::vector<int>{p_norm, p_qkv} : std::vector<int>{p_qkv},
      [&](int r, int w) { return cpCells(r, (w == 0 ? d.q_heads : d.kv_heads) / tp); }, tps);
  int qa = q, kva = kv;
  Partial kvp = Partial::kNone;
  if (cp > 1 && !megatron()) {
    // Ulysses (layers/ulysses_attn.py): KV heads replicated when fewer than cp.
    if (d.kv_heads < cp) {
      const int reps = cp / d.kv_heads;
      const int rep = derived(L + "kv.rep", kv, d.kv_heads * reps);
      plan_.tensors[rep].reps = reps;
      transform(l, '*', Transform::kRepeat, "repeat kv heads", {kv}, rep,
                [&](int r, TrainingOp& op) {
                  op.reps = reps;
                  cells_[rep][r] = cells_[kv][r] * reps;
                });
      kva = rep;
      kvp = Partial::kReps;
    }
    const int qh = derived(L + "q.h", q);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp, "a2a seq->head q", q,
               qh, [&](int r) { return cells_[q][r]; });
    const int kvh = derived(L + "kv.h", kva);
    const int src = kva;
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp, "a2a seq->head kv",
               src, kvh, [&](int r) { return cells_[src][r]; });
    qa = qh;
    kva = kvh;
  } else if (cp > 1) {
    // Megatron attention CP, all-gather flavour (the logical content of p2p too):
    // K/V gathered over cp, dK/dV reduce-scattered back.
    const int kvall = derived(L + "kv.all", kv);
    collective(l, '*', OpKind::kAllGather, A2aMode::kNone, TrainAxis::kCp, "cp all-gather kv", kv,
               kvall, [&](int r) { return cells_[kv][r] * cp; });
    kva = kvall;
    kvp = Partial::kCp;
  }
  const int ao = tensor(L + "attn", Space::kQHeads, d.q_heads, hb, l, true);
  kernel(
      l, '*', Kernel::kAttention, "flash attention varlen", {{qa}, {kva, kvp}}, {ao}, {},
      [&](int r, int) { return cells_[qa][r]; }, false, true);
  int av = ao;
  if (cp > 1 && !megatron()) {
    const int as = derived(L + "attn.seq", ao);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, "a2a head->seq attn",
               ao, as, [&](int r) { return cells_[ao][r]; });
    av = as;
  }
  return projectAndAdd(l, '*', "o_proj", av, p_o, h);
}

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
  // Router (fp32 sigmoid, top-k): consumes ln, gives the (token, expert) choices.
  kernel(l, 'E', Kernel::kRouter, "router top-k", {{ln}}, {}, {m.p_router},
         [&](int, int) { return 0; });
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
  // Shared expert on the full-H input (Megatron: TP column/row with SP).
  const int lnf = spGather(l, 'E', ln, L + "ln.full");
  const int so = tensor(L + "shared.out", Space::kHidden, 1, d.hidden * kBf16, l);
  plan_.tensors[so].shards = tps ? tp : 1;
  kernel(
      l, 'E', Kernel::kLinear, "shared expert", {{lnf, tps ? Partial::kTp : Partial::kNone}}, {so},
      {m.p_sh}, [&](int r, int) { return cpCells(r, 1); }, tps);
  const int ss = spScatter(l, 'E', so, L + "shared.sp");
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
  if (!megatron()) {
    paramGather(l, 'E', lp.dense, TrainAxis::kFsdp);
    if (lay_.group(TrainAxis::kExpertDp, 0).size() > 1)
      paramGather(l, 'E', lp.experts, TrainAxis::kExpertDp);
  }
  return m;
}

/// The (token, expert) cells each rank sends to and receives from each EP
/// member at layer l (empty without EP).
ExpertSplits Builder::expertSplits(int l) const {
  ExpertSplits s;
  s.send.resize(W());
  s.recv.resize(W());
  if (k().ep == 1) return s;
  for (int r = 0; r < W(); ++r) {
    std::vector<int>& out = s.send[r];
    out.assign(lay_.group(TrainAxis::kEp, r).size(), 0);
    for (int t : lay_.localTokens(r)) {
      for (int e : lay_.route(l, t)) ++out[lay_.expertOwner(e)];
    }
  }
  for (int r = 0; r < W(); ++r) {
    for (int m : lay_.group(TrainAxis::kEp, r)) s.recv[r].push_back(s.send[m][lay_.coord(r).ep]);
  }
  return s;
}

/// A rank's (token, expert) cells: its tokens times top-k.
int Builder::routedCells(int r) const {
  return static_cast<int>(lay_.localTokens(r).size()) * lay_.dims().top_k;
}

/// The permute by expert and, under EP, the dispatch to the experts' owners.
/// Returns the tensor the experts read.
int Builder::moeDispatch(MoeLayer& m, int xl, const ExpertSplits& splits) {
  const int l = m.l;
  const int disp = derived(m.L + "routed", xl, lay_.dims().experts);
  plan_.tensors[disp].space = Space::kExperts;
  m.disp = disp;
  transform(l, 'E', Transform::kPermute, "permute by expert", {xl}, disp,
            [&](int r, TrainingOp&) { cells_[disp][r] = routedCells(r); });
  if (k().ep == 1) return disp;
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
        std::int64_t n = std::accumulate(op.in_splits.begin(), op.in_splits.end(), 0);
        op.bytes = n * m.lat * kBf16;
      });
  return de;
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
  kernel(l, 'E', Kernel::kExperts, "grouped experts", {{at_experts, Partial::kRouted}}, {ye},
         {m.p_ex}, [&](int r, int) { return cells_[at_experts][r]; });
  const int yw = derived(L + "experts.weighted", ye);
  transform(l, 'E', Transform::kRouteWeight, "routing weights", {ye}, yw,
            [&](int r, TrainingOp&) { cells_[yw][r] = cells_[ye][r]; });
  int back = yw;
  if (k().ep > 1) {
    const int yb = derived(L + "experts.back", yw);
    collective(
        l, 'E', OpKind::kAllToAll, A2aMode::kToSource, TrainAxis::kEp, "ep combine", yw, yb,
        [&](int r) { return routedCells(r); },
        [&](int r, TrainingOp& op) {
          op.reads.push_back(static_cast<std::int16_t>(m.disp));  // the order the handle restores
          op.in_splits = splits.recv[r];
          op.out_splits = splits.send[r];
          std::int64_t n = std::accumulate(op.in_splits.begin(), op.in_splits.end(), 0);
          op.bytes = n * m.lat * kBf16;
        });
    back = yb;
  }
  const int ms = tensor(L + "moe.sum", Space::kHidden, 1, m.lat * kBf16, l);
  plan_.tensors[ms].routed_from = ye;
  plan_.tensors[ye].grad_value = -2;  // resolved to d:moe.sum by completeGradients
  transform(l, 'E', Transform::kSumOverK, "unpermute (sum over k)", {back, xl}, ms,
            [&](int r, TrainingOp&) { cells_[ms][r] = localCells(r, 1); });
  moe_sums_.push_back({ye, ms});
  if (m.p_fc2 < 0) return ms;
  const int mo = tensor(L + "moe.out", Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, 'E', Kernel::kLinear, "fc2_latent_proj", {{ms}}, {mo}, {m.p_fc2},
         [&](int r, int) { return localCells(r, 1); });
  return mo;
}

/// The final norm, lm_head and loss, where the backward starts.
void Builder::loss(int h) {
  const auto& d = lay_.dims();
  const bool tps = k().tp > 1;
  const int p_fn = param("final_norm", Space::kHidden, 1, d.hidden);
  const int p_head = param("lm_head", Space::kHidden, tps ? k().tp : 1, 0, tps);
  LayerParams& lp = layer_params_[nl_ + 1];
  lp.dense.push_back(p_fn);
  lp.dense.push_back(p_head);
  if (tps) lp.tp_sum.push_back(p_fn);
  if (!megatron()) paramGather(nl_, ' ', {p_fn, p_head}, TrainAxis::kFsdp);
  const int hf = tensor("final.ln", Space::kHidden, 1, d.hidden * kBf16, nl_);
  kernel(nl_, ' ', Kernel::kNorm, "final norm", {{h}}, {hf}, {p_fn},
         [&](int r, int) { return localCells(r, 1); });
  const int hff = spGather(nl_, ' ', hf, "final.ln.full");
  kernel(
      nl_, ' ', Kernel::kLoss, "lm_head + loss", {{hff, tps ? Partial::kTp : Partial::kNone}}, {},
      {p_head}, [&](int, int) { return 0; }, tps);
}

}  // namespace seam::training
