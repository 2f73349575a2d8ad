// The training planner's forward (training_plan_builder.h): the Mamba and
// attention layers as PrimeRL or Megatron runs them (training-layouts §1,
// §2), the embedding and the loss (MoE layers: training_plan_moe.cc). Every tensor is made and
// every op emitted in the engine's order: tensor ids and op order are the plan.
#include <algorithm>
#include <numeric>

#include "training/training_plan_builder.h"

namespace seam::training {

/// The embedding (vocab-parallel under Megatron TP) and its SP scatter: h0.
void Builder::embed() {
  const auto& d = lay_.dims();
  const bool tpv = k().tp > 1;
  // PrimeRL's train step: the loss components' token counts (3 x int64)
  // summed over dp x cp before the forward (rl/train.py).
  if (!megatron())
    statCollective(-1, OpKind::kAllReduce, TrainAxis::kDpCp, "token counts all-reduce",
                   [](int) { return std::int64_t{24}; });
  const int pe = param("embed", Space::kHidden, tpv ? k().tp : 1,
                       static_cast<std::int64_t>(d.vocab) * d.hidden, tpv);
  layer_params_[0].dense.push_back(pe);
  // Its own unit: Nemotron-3 does not tie the embedding to lm_head (setup_fsdp).
  const int u = megatron() ? -1 : unit("embedding", -1, ' ', {pe}, {{d.vocab, d.hidden}});
  if (u >= 0) openUnit(u);
  const int e = tensor("h0.embed", Space::kHidden, 1, d.hidden * kBf16, -1);
  // Megatron's vocab-parallel embedding leaves a partial over tp (reduce-scattered under SP).
  plan_.tensors[e].shards = tpv ? k().tp : 1;
  kernel(
      -1, ' ', Kernel::kLinear, "embedding", {}, {e}, {pe},
      [&](int r, int) { return tpv ? cpCells(r, 1) : localCells(r, 1); }, tpv);
  if (u >= 0) closeUnit(u);
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
  // conv1d weight [conv_dim, 1, kernel] and its bias [conv_dim].
  const int K = d.conv_kernel;
  m.p_convx =
      param(L + "conv1d.x", Space::kHeads, m.nb, static_cast<std::int64_t>(d_in) * (K + 1), tps);
  m.p_convbc = param(L + "conv1d.BC", Space::kGroups, m.G,
                     static_cast<std::int64_t>(2 * m.G * d.state) * (K + 1), tps);
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
  if (!megatron()) {
    const std::int64_t H = d.hidden, nh = d.mamba_heads, gn = std::int64_t{d.groups} * d.state;
    const std::int64_t conv_dim = d_in + 2 * gn;
    unit("block", l, 'M', lp.dense,
         {{H, 1},
          {2 * d_in + 2 * gn + nh, H},
          {conv_dim, K},
          {conv_dim, 1},
          {nh, 1},
          {nh, 1},
          {nh, 1},
          {d_in, 1},
          {H, d_in}});
  }
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
  // The engines' order of the five all-to-alls (outs is z, x, dt, B, C):
  // PrimeRL z, dt, x, B, C (cp_mamba.py mamba_cp_forward); Megatron z, x, B,
  // C, dt (mamba_context_parallel.py pre_conv_ssm).
  const std::vector<int> order =
      megatron() ? std::vector<int>{0, 1, 3, 4, 2} : std::vector<int>{0, 2, 1, 3, 4};
  for (int i : order) {
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
/// repeated when fewer than cp) or Megatron's KV ring or all-gather, the varlen
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
  if (!megatron()) {
    const std::int64_t H = d.hidden, q = std::int64_t{d.q_heads} * d.head_dim,
                       kvd = std::int64_t{d.kv_heads} * d.head_dim;
    unit("block", l, '*', lp.dense, {{H, 1}, {q, H}, {kvd, H}, {kvd, H}, {H, q}});
  }
  const int hin = spGather(l, '*', h, L + "h.full");
  int ln = hin;
  if (!megatron()) {
    ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
    kernel(l, '*', Kernel::kNorm, "norm", {{hin}}, {ln}, {p_norm},
           [&](int r, int) { return localCells(r, 1); });
  }
  const int q = tensor(L + "q", Space::kQHeads, d.q_heads, hb, l, true);
  const int kk = tensor(L + "k", Space::kKvHeads, d.kv_heads, hb, l, true);
  const int vv = tensor(L + "v", Space::kKvHeads, d.kv_heads, hb, l, true);
  kernel(
      l, '*', Kernel::kLinear, megatron() ? "norm+qkv" : "qkv",
      {{ln, tps ? Partial::kTp : Partial::kNone}}, {q, kk, vv},
      megatron() ? std::vector<int>{p_norm, p_qkv} : std::vector<int>{p_qkv},
      [&](int r, int w) { return cpCells(r, (w == 0 ? d.q_heads : d.kv_heads) / tp); }, tps);
  int qa = q;
  std::vector<int> kva = {kk, vv};
  Partial kvp = Partial::kNone;
  if (cp > 1 && !megatron()) {
    // Ulysses (layers/ulysses_attn.py ulysses_flash_attn_varlen_func): q, k
    // and v each their own all-to-all, q first; K and V heads replicated
    // (repeat_interleave) when fewer than cp.
    const int qh = derived(L + "q.h", q);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp, "a2a seq->head q", q,
               qh, [&](int r) { return cells_[q][r]; });
    qa = qh;
    if (d.kv_heads < cp) {
      const int reps = cp / d.kv_heads;
      for (int& t : kva) {
        const int src = t;
        const int rep = derived(plan_.tensors[src].name + ".rep", src, d.kv_heads * reps);
        plan_.tensors[rep].reps = reps;
        transform(l, '*', Transform::kRepeat, "repeat kv heads", {src}, rep,
                  [&](int r, TrainingOp& op) {
                    op.reps = reps;
                    cells_[rep][r] = cells_[src][r] * reps;
                  });
        t = rep;
      }
      kvp = Partial::kReps;
    }
    for (int& t : kva) {
      const int src = t;
      const int th = derived(plan_.tensors[src].name + ".h", src);
      collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp,
                 "a2a seq->head " + plan_.tensors[root(src)].name.substr(L.size()), src, th,
                 [&](int r) { return cells_[src][r]; });
      t = th;
    }
  } else if (k().p2pRing()) {
    kvp = Partial::kCp;  // the ring's chunks: added to the kernel's reads below
  } else if (k().attentionA2a()) {
    const std::vector<int> heads = a2aToHeads(l, {q, kk, vv});
    qa = heads[0];
    kva = {heads[1], heads[2]};
  } else if (cp > 1) {
    // Megatron attention CP, all-gather flavour (TE AttnFuncWithCPAndKVAllGather):
    // K and V gathered over cp separately, dK/dV reduce-scattered back.
    for (int& t : kva) {
      const int src = t;
      const int all = derived(plan_.tensors[src].name + ".all", src);
      collective(l, '*', OpKind::kAllGather, A2aMode::kNone, TrainAxis::kCp,
                 "cp all-gather " + plan_.tensors[src].name.substr(L.size()), src, all,
                 [&](int r) { return cells_[src][r] * cp; });
      t = all;
    }
    kvp = Partial::kCp;
  }
  std::vector<int> ring;
  if (k().p2pRing()) ring = kvRingForward(l, kk, vv);
  const int ao = tensor(L + "attn", Space::kQHeads, d.q_heads, hb, l, true);
  kernel(
      l, '*', Kernel::kAttention, "flash attention varlen", {{qa}, {kva[0], kvp}, {kva[1], kvp}},
      {ao}, {}, [&](int r, int) { return cells_[qa][r]; }, false, true);
  if (!ring.empty()) addRingChunks(ring);
  int av = ao;
  if (k().attentionA2a()) av = a2aToSeq(l, ao);
  if (cp > 1 && !megatron()) {
    const int as = derived(L + "attn.seq", ao);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, "a2a head->seq attn",
               ao, as, [&](int r) { return cells_[ao][r]; });
    av = as;
  }
  return projectAndAdd(l, '*', "o_proj", av, p_o, h);
}

/// The final norm, lm_head and loss, where the backward starts.
void Builder::loss(int h) {
  const auto& d = lay_.dims();
  const bool tps = k().tp > 1;
  const int p_fn = param("final_norm", Space::kHidden, 1, d.hidden);
  const int p_head = param("lm_head", Space::kHidden, tps ? k().tp : 1,
                           static_cast<std::int64_t>(d.vocab) * d.hidden, tps);
  LayerParams& lp = layer_params_[nl_ + 1];
  lp.dense.push_back(p_fn);
  lp.dense.push_back(p_head);
  if (tps) lp.tp_sum.push_back(p_fn);
  // [lm_head, final norm] one unit, kept unsharded after forward (setup_fsdp).
  const int u = megatron() ? -1
                           : unit("lm_head+norm", nl_, ' ', {p_fn, p_head},
                                  {{d.vocab, d.hidden}, {d.hidden, 1}});
  if (u >= 0) {
    units_[u].reshard = false;
    openUnit(u);
  }
  const int hf = tensor("final.ln", Space::kHidden, 1, d.hidden * kBf16, nl_);
  kernel(nl_, ' ', Kernel::kNorm, "final norm", {{h}}, {hf}, {p_fn},
         [&](int r, int) { return localCells(r, 1); });
  const int hff = spGather(nl_, ' ', hf, "final.ln.full");
  kernel(
      nl_, ' ', Kernel::kLoss, "lm_head + loss", {{hff, tps ? Partial::kTp : Partial::kNone}}, {},
      {p_head}, [&](int, int) { return 0; }, tps);
  if (u >= 0) closeUnit(u);
  if (megatron() && tps) {
    // VocabParallelCrossEntropy.forward: the max logit, then the target
    // logit and the exp sum fused, all-reduced over tp (fp32 per token).
    statCollective(nl_, OpKind::kAllReduce, TrainAxis::kTp, "cross-entropy max all-reduce",
                   [&](int r) { return std::int64_t{4} * cpCells(r, 1); });
    statCollective(nl_, OpKind::kAllReduce, TrainAxis::kTp,
                   "cross-entropy logit+sum-exp all-reduce",
                   [&](int r) { return std::int64_t{8} * cpCells(r, 1); });
  }
  if (!megatron() && k().cp > 1) {
    // rl/train.py: the per-token log-probs all-gathered over cp with autograd
    // (utils/cp.py gather_for_cp; reduce-scattered back in backward), the
    // entropy without (gather_for_cp_wo_grad); fp32.
    const std::int64_t row = std::int64_t{4} * lay_.tokens();
    statCollective(nl_ + 1, OpKind::kAllGather, TrainAxis::kCp, kLogprobsGather,
                   [&](int) { return row; });
    statCollective(nl_ + 1, OpKind::kAllGather, TrainAxis::kCp, "cp all-gather entropy",
                   [&](int) { return row; });
  }
}

/// A collective of the loss or the step that moves statistics (counts,
/// log-probs, softmax terms), not the ledger's activations or gradients.
void Builder::statCollective(int layer, OpKind kind, TrainAxis axis, const std::string& step,
                             const std::function<std::int64_t(int rank)>& bytes) {
  TrainingOp proto;
  proto.layer = static_cast<std::int16_t>(layer);
  proto.kind = kind;
  proto.axis = axis;
  proto.step = step;
  emit(proto, [&](int r, TrainingOp& op) {
    op.ranks = lay_.group(axis, r);
    op.bytes = bytes(r);
  });
}

}  // namespace seam::training
