// The training planner: per rank, the forward ops of PrimeRL's or Megatron's
// layout (training-layouts §1, §2), then the backward as the conjugate of
// each forward op in reverse (§4.1), with each layer's gradient reductions
// where the engine issues them (FSDP reduce-scatter hooks; Megatron's
// finalize_model_grads TP all-reduce and DDP over dp x cp).
#include <algorithm>
#include <cassert>
#include <functional>
#include <numeric>

#include "seam/sim/training.h"
#include "training_layout.h"

namespace seam {

std::string_view kernelName(Kernel k) {
  switch (k) {
    case Kernel::kNone: return "-";
    case Kernel::kNorm: return "norm";
    case Kernel::kLinear: return "linear";
    case Kernel::kAdd: return "add";
    case Kernel::kConv: return "conv1d";
    case Kernel::kSsd: return "ssd";
    case Kernel::kGatedNorm: return "gated_norm";
    case Kernel::kAttention: return "attention";
    case Kernel::kRouter: return "router";
    case Kernel::kExperts: return "experts";
    case Kernel::kLoss: return "loss";
  }
  return "?";
}

std::string_view transformName(Transform t) {
  switch (t) {
    case Transform::kNone: return "-";
    case Transform::kRepeat: return "repeat";
    case Transform::kSumRepeats: return "sum_repeats";
    case Transform::kReorder: return "reorder";
    case Transform::kSliceParam: return "slice_param";
    case Transform::kScatterSeq: return "scatter_seq";
    case Transform::kSumOverK: return "sum_over_k";
    case Transform::kPermute: return "permute";
    case Transform::kRouteWeight: return "route_weight";
  }
  return "?";
}

std::string_view a2aModeName(A2aMode m) {
  switch (m) {
    case A2aMode::kNone: return "-";
    case A2aMode::kSeqToHead: return "seq->head";
    case A2aMode::kHeadToSeq: return "head->seq";
    case A2aMode::kToExpert: return "dispatch";
    case A2aMode::kToSource: return "combine";
  }
  return "?";
}

int TrainingPlan::tensorId(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

using training::Layout;
constexpr std::int64_t kBf16 = 2;

/// How a kernel's gradient for one read is partial.
enum class Partial { kNone, kTp, kCp, kReps, kRouted };

struct Read {
  int buffer;
  Partial partial = Partial::kNone;
};

class Builder {
 public:
  Builder(const TrainingCase& c, TrainingDecision d) : lay_(c), d_(d) {
    plan_.source = c;
    fwd_.resize(lay_.world());
    cells_.clear();
  }

  TrainingPlan build();

 private:
  const TrainingConfig& k() const { return lay_.config(); }
  bool megatron() const { return k().layout == TrainingLayout::kMegatron; }
  int W() const { return lay_.world(); }

  // ---- tensors ----
  int tensor(const std::string& name, Space space, int units, std::int64_t unit_bytes, int layer, bool tp_split = false) {
    TensorInfo t;
    t.name = name;
    t.space = space;
    t.units = units;
    t.unit_bytes = unit_bytes;
    t.layer = layer;
    t.tp_split = tp_split;
    t.shards = 1;
    plan_.tensors.push_back(t);
    cells_.emplace_back(W(), 0);
    return static_cast<int>(plan_.tensors.size()) - 1;
  }
  int root(int id) const {
    while (plan_.tensors[id].value_of >= 0) id = plan_.tensors[id].value_of;
    return id;
  }
  /// A buffer holding the terms of `from`'s root (made by a collective or a rearrangement).
  int derived(const std::string& name, int from, int units = -1) {
    const TensorInfo f = plan_.tensors[from];
    const int id = tensor(name, f.space, units < 0 ? f.units : units, f.unit_bytes, f.layer, f.tp_split);
    plan_.tensors[id].value_of = root(from);
    plan_.tensors[id].reps = f.reps;
    return id;
  }
  int param(const std::string& name, Space space, int units, std::int64_t elements, bool tp_sharded = false,
            bool ep_sharded = false, int shards = 1) {
    const int id = tensor("param:" + name, space, units, 0, -1);
    TensorInfo& t = plan_.tensors[id];
    t.tp_sharded = tp_sharded;
    t.ep_sharded = ep_sharded;
    t.shards = shards;
    t.routed_param = ep_sharded;
    param_elems_.resize(plan_.tensors.size(), 0);
    param_elems_[id] = elements;
    t.layer = cur_layer_;
    return id;
  }
  /// Registers a consumer of `root`'s value with `count` gradient contributions; returns its first j.
  int consume(int r, int count) {
    if (static_cast<int>(consumers_.size()) <= r) consumers_.resize(r + 1, 0);
    const int off = consumers_[r];
    consumers_[r] += count;
    return off;
  }

  // ---- emission ----
  using Fill = std::function<void(int rank, TrainingOp& op)>;
  void emit(const TrainingOp& proto, const Fill& fill = {}) {
    for (int r = 0; r < W(); ++r) {
      TrainingOp op = proto;
      if (fill) fill(r, op);
      fwd_[r].push_back(std::move(op));
    }
  }

  std::int64_t bytesOf(int buffer, int rank) const { return cells_[buffer][rank] * plan_.tensors[buffer].unit_bytes; }

  /// A compute op: checks its reads, writes fresh roots.
  void kernel(int layer, char block, Kernel kern, const std::string& step, const std::vector<Read>& reads,
              const std::vector<int>& writes, const std::vector<int>& params,
              const std::function<int(int rank, int write_index)>& cells_of, bool tp_shard = false,
              bool segments = false) {
    TrainingOp proto;
    proto.pass = Pass::kForward;
    proto.layer = static_cast<std::int16_t>(layer);
    proto.block = block;
    proto.kind = OpKind::kCompute;
    proto.kernel = kern;
    proto.step = step;
    for (const Read& rd : reads) proto.reads.push_back(static_cast<std::int16_t>(rd.buffer));
    for (int w : writes) proto.writes.push_back(static_cast<std::int16_t>(w));
    for (int p : params) proto.params.push_back(static_cast<std::int16_t>(p));
    std::vector<int> offsets;
    for (const Read& rd : reads) {
      const int rt = root(rd.buffer);
      int count = 1;
      if (rd.partial == Partial::kTp) count = k().tp;
      if (rd.partial == Partial::kCp) count = k().cp;
      if (rd.partial == Partial::kReps) count = plan_.tensors[rd.buffer].reps;
      if (rd.partial == Partial::kRouted) {
        plan_.tensors[rt].routed_grad = true;
        count = 0;
      }
      offsets.push_back(consume(rt, count));
    }
    emit(proto, [&](int r, TrainingOp& op) {
      const training::Coord& x = lay_.coord(r);
      for (size_t i = 0; i < reads.size(); ++i) {
        int j = offsets[i];
        if (reads[i].partial == Partial::kTp) j += x.tp;
        if (reads[i].partial == Partial::kCp) j += x.cp;
        op.grad_j.push_back(j);
      }
      op.shard = static_cast<std::int16_t>(tp_shard ? x.tp : 0);
      if (segments) op.segments = segmentsFor(r);
      std::int64_t bytes = 0;
      for (size_t w = 0; w < writes.size(); ++w) {
        cells_[writes[w]][r] = cells_of(r, static_cast<int>(w));
        bytes += bytesOf(writes[w], r);
      }
      op.bytes = bytes;
    });
  }

  std::vector<int> segmentsFor(int r) const {
    if (d_ == TrainingDecision::kLocalDocBoundaries) return lay_.localSegments(r);
    if (d_ == TrainingDecision::kNoDocBoundaries) return {0, lay_.tokens()};
    return lay_.globalSegments();
  }

  /// A collective over `axis` moving `from` into `to`.
  void collective(int layer, char block, OpKind kind, A2aMode mode, TrainAxis axis, const std::string& step, int from,
                  int to, const std::function<int(int rank)>& out_cells,
                  const std::function<void(int rank, TrainingOp&)>& extra = {}) {
    TrainingOp proto;
    proto.layer = static_cast<std::int16_t>(layer);
    proto.block = block;
    proto.kind = kind;
    proto.a2a = mode;
    proto.axis = axis;
    proto.step = step;
    proto.reads = {static_cast<std::int16_t>(from)};
    proto.writes = {static_cast<std::int16_t>(to)};
    std::vector<std::int64_t> in_bytes(W());
    for (int r = 0; r < W(); ++r) in_bytes[r] = bytesOf(from, r);
    emit(proto, [&](int r, TrainingOp& op) {
      op.ranks = lay_.group(axis, r);
      cells_[to][r] = out_cells(r);
      op.bytes = kind == OpKind::kAllGather ? in_bytes[r] * static_cast<std::int64_t>(op.ranks.size()) : in_bytes[r];
      if (extra) extra(r, op);
    });
  }

  void transform(int layer, char block, Transform t, const std::string& step, const std::vector<int>& reads, int to,
                 const std::function<void(int rank, TrainingOp&)>& fill) {
    TrainingOp proto;
    proto.layer = static_cast<std::int16_t>(layer);
    proto.block = block;
    proto.kind = t == Transform::kSumOverK || t == Transform::kSumRepeats ? OpKind::kAdd : OpKind::kSlice;
    proto.transform = t;
    proto.step = step;
    for (int rd : reads) proto.reads.push_back(static_cast<std::int16_t>(rd));
    if (to >= 0) proto.writes = {static_cast<std::int16_t>(to)};
    emit(proto, [&](int r, TrainingOp& op) {
      fill(r, op);
      if (to >= 0) op.bytes = bytesOf(to, r);
    });
  }

  int localCells(int r, int units) const { return static_cast<int>(lay_.localTokens(r).size()) * units; }
  int cpCells(int r, int units) const { return static_cast<int>(lay_.cpTokens(r).size()) * units; }

  /// Megatron SP: the all-gather over tp before a column-parallel block.
  int spGather(int layer, char block, int h, const std::string& name) {
    if (!(k().sp && k().tp > 1)) return h;
    const int full = derived(name, h);
    collective(layer, block, OpKind::kAllGather, A2aMode::kNone, TrainAxis::kTp, "sp all-gather", h, full,
               [&](int r) { return cpCells(r, 1); });
    return full;
  }
  /// Megatron SP: the reduce-scatter over tp after a row-parallel block (or
  /// the partial left as is when tp = 1).
  int spScatter(int layer, char block, int o, const std::string& name) {
    if (k().tp == 1) return o;
    const int s = derived(name, o);
    collective(layer, block, OpKind::kReduceScatter, A2aMode::kNone, TrainAxis::kTp, "sp reduce-scatter", o, s,
               [&](int r) { return localCells(r, 1); });
    return s;
  }

  /// The per-layer FSDP parameter all-gather (PrimeRL), for the collectives' sake.
  void paramGather(int layer, char block, const std::vector<int>& params, TrainAxis axis) {
    if (params.empty()) return;
    TrainingOp proto;
    proto.layer = static_cast<std::int16_t>(layer);
    proto.block = block;
    proto.kind = OpKind::kAllGather;
    proto.axis = axis;
    proto.step = axis == TrainAxis::kExpertDp ? "expert fsdp all-gather" : "fsdp all-gather";
    for (int p : params) proto.params.push_back(static_cast<std::int16_t>(p));
    emit(proto, [&](int r, TrainingOp& op) {
      op.ranks = lay_.group(axis, r);
      op.bytes = paramBytes(params, r);
    });
  }
  std::int64_t paramBytes(const std::vector<int>& params, int r) const {
    std::int64_t e = 0;
    for (int p : params) {
      std::int64_t n = param_elems_[p];
      if (plan_.tensors[p].tp_sharded) n /= k().tp;
      if (plan_.tensors[p].ep_sharded) n /= k().ep;
      e += n;
    }
    (void)r;
    return e * kBf16;
  }

  void embed();
  int mamba(int l, int h);
  int attention(int l, int h);
  int moe(int l, int h);
  void loss(int h);
  void backward();
  void gradReductions(int layer, char block, std::vector<TrainingOp>& out, int r);
  TrainingOp conjugate(const TrainingOp& f, int index, int r, bool* keep);

  Layout lay_;
  TrainingDecision d_;
  TrainingPlan plan_;
  std::vector<std::vector<TrainingOp>> fwd_;
  std::vector<std::vector<int>> cells_;  // [buffer][rank]
  std::vector<std::int64_t> param_elems_;
  std::vector<int> consumers_;
  struct LayerParams {
    std::vector<int> dense;    ///< replicated (FSDP / DDP) parameters
    std::vector<int> tp_sum;   ///< Megatron: replicated over tp on SP data: all-reduced over tp first
    std::vector<int> experts;  ///< expert parameters
  };
  std::vector<LayerParams> layer_params_;  // index layer + 1 (0: embedding, layers + 1: the loss)
  int h0_ = -1;
  int cur_layer_ = -1;
  int nl_ = 0;  ///< decoder layers; the loss ops carry layer nl_
  std::vector<std::pair<int, int>> moe_sums_;  ///< (experts' output, its routed sum)

  std::vector<int> cpOrder(int r) const {
    // The token order after a seq->head all-to-all over cp: members' cp-local tokens, rank-major.
    std::vector<int> order;
    for (int m : lay_.group(TrainAxis::kCp, r)) {
      const auto& t = lay_.cpTokens(m);
      order.insert(order.end(), t.begin(), t.end());
    }
    return order;
  }
  std::vector<int> undoPerm(int r, int units) const {
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
  std::vector<int> redoPerm(int r, int units) const {
    const std::vector<int> undo = undoPerm(r, units);
    std::vector<int> inv(undo.size());
    for (size_t i = 0; i < undo.size(); ++i) inv[undo[i]] = static_cast<int>(i);
    return inv;
  }
  /// The gradient tensor of a root: `d:<root>`.
  int gradRoot(int rt) {
    if (plan_.tensors[rt].grad >= 0) return plan_.tensors[rt].grad;
    const TensorInfo f = plan_.tensors[rt];
    const int id = tensor("d:" + f.name, f.space, f.units, f.unit_bytes, f.layer, f.tp_split);
    plan_.tensors[rt].grad = id;
    return id;
  }
  /// The gradient buffer of a buffer.
  int gradOf(int b) {
    if (plan_.tensors[b].grad >= 0) return plan_.tensors[b].grad;
    const int rt = root(b);
    if (rt == b) {
      const int id = gradRoot(b);
      cells_[id] = cells_[b];
      return id;
    }
    const int g = gradRoot(rt);
    const TensorInfo f = plan_.tensors[b];
    const int id = tensor("d:" + f.name, f.space, f.units, f.unit_bytes, f.layer, f.tp_split);
    plan_.tensors[id].value_of = g;
    plan_.tensors[id].reps = f.reps;
    plan_.tensors[b].grad = id;
    cells_[id] = cells_[b];
    return id;
  }
};

void Builder::embed() {
  const auto& d = lay_.dims();
  const bool tpv = k().tp > 1;
  const int pe = param("embed", Space::kHidden, tpv ? k().tp : 1, 0, tpv);
  layer_params_[0].dense.push_back(pe);
  if (!megatron()) paramGather(-1, ' ', {pe}, TrainAxis::kFsdp);
  const int e = tensor("h0.embed", Space::kHidden, 1, d.hidden * kBf16, -1);
  // Megatron's vocab-parallel embedding leaves a partial over tp (reduce-scattered under SP).
  plan_.tensors[e].shards = tpv ? k().tp : 1;
  kernel(-1, ' ', Kernel::kLinear, "embedding", {}, {e}, {pe},
         [&](int r, int) { return tpv ? cpCells(r, 1) : localCells(r, 1); }, tpv);
  h0_ = spScatter(-1, ' ', e, "h0.sp");
}

int Builder::mamba(int l, int h) {
  const auto& d = lay_.dims();
  const std::string L = "L" + std::to_string(l) + ".";
  const int tp = k().tp, cp = k().cp;
  const int nb = lay_.headBlocks();
  const int G = lay_.groupUnits();
  const std::int64_t head_bytes = static_cast<std::int64_t>(d.mamba_heads / nb) * d.mamba_head_dim * kBf16;
  const std::int64_t group_bytes = static_cast<std::int64_t>(d.state) * kBf16;
  const std::int64_t dt_bytes = static_cast<std::int64_t>(d.mamba_heads / nb) * kBf16;
  const int d_in = d.mamba_heads * d.mamba_head_dim;
  LayerParams& lp = layer_params_[l + 1];
  const bool tps = tp > 1;
  const int p_norm = param(L + "norm", Space::kHidden, 1, d.hidden, false, false, tps ? tp : 1);
  const int p_in = param(L + "in_proj", Space::kHidden, tps ? tp : 1,
                         static_cast<std::int64_t>(d.hidden) * (2 * d_in + 2 * G * d.state + d.mamba_heads), tps);
  const int p_convx = param(L + "conv1d.x", Space::kHeads, nb, static_cast<std::int64_t>(d_in) * 4, tps);
  const int p_convbc = param(L + "conv1d.BC", Space::kGroups, G, static_cast<std::int64_t>(2 * G * d.state) * 4, tps);
  const int p_alog = param(L + "A_log", Space::kHeads, nb, d.mamba_heads, tps);
  const int p_d = param(L + "D", Space::kHeads, nb, d.mamba_heads, tps);
  const int p_dtb = param(L + "dt_bias", Space::kHeads, nb, d.mamba_heads, tps);
  const int p_gn = param(L + "norm.gated", Space::kHeads, nb, d_in, tps);
  const int p_out = param(L + "out_proj", Space::kHidden, tps ? tp : 1, static_cast<std::int64_t>(d_in) * d.hidden, tps);
  for (int p : {p_norm, p_in, p_convx, p_convbc, p_alog, p_d, p_dtb, p_gn, p_out}) lp.dense.push_back(p);
  if (tps) lp.tp_sum.push_back(p_norm);
  if (!megatron()) paramGather(l, 'M', lp.dense, TrainAxis::kFsdp);

  const int hin = spGather(l, 'M', h, L + "h.full");
  const int units_local = nb / tp;        // head blocks per tp rank
  const int groups_local = G / tp;
  const int z = tensor(L + "z", Space::kHeads, nb, head_bytes, l, true);
  const int x = tensor(L + "x", Space::kHeads, nb, head_bytes, l, true);
  const int dt = tensor(L + "dt", Space::kHeads, nb, dt_bytes, l, true);
  const int B = tensor(L + "B", Space::kGroups, G, group_bytes, l, true);
  const int C = tensor(L + "C", Space::kGroups, G, group_bytes, l, true);
  // PrimeRL: RMSNorm then in_proj; Megatron: the LayerNorm fused into the
  // column-parallel in_proj (TELayerNormColumnParallelLinear), on SP-gathered rows.
  int ln = hin;
  if (!megatron()) {
    ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
    kernel(l, 'M', Kernel::kNorm, "norm", {{hin}}, {ln}, {p_norm}, [&](int r, int) { return localCells(r, 1); });
  }
  const std::vector<int> outs = {z, x, dt, B, C};
  kernel(l, 'M', Kernel::kLinear, megatron() ? "norm+in_proj" : "in_proj", {{ln, tps ? Partial::kTp : Partial::kNone}},
         outs, megatron() ? std::vector<int>{p_norm, p_in} : std::vector<int>{p_in},
         [&](int r, int w) { return cpCells(r, w >= 3 ? groups_local : units_local); }, tps);
  // B/C groups repeated when fewer than cp per tp rank (Megatron group_repeat_count).
  std::vector<int> cur = outs;
  if (cp > 1 && groups_local < cp) {
    const int reps = cp / groups_local;
    for (int i : {3, 4}) {
      const int rep = derived(plan_.tensors[cur[i]].name + ".rep", cur[i], G * reps);
      plan_.tensors[rep].reps = reps;
      const int src = cur[i];
      transform(l, 'M', Transform::kRepeat, "repeat groups", {src}, rep, [&](int r, TrainingOp& op) {
        op.reps = reps;
        cells_[rep][r] = cells_[src][r] * reps;
      });
      cur[i] = rep;
    }
  }
  // Sequence -> head all-to-alls, five separate tensors (cp_mamba.py L129-143).
  if (cp > 1) {
    for (int i = 0; i < 5; ++i) {
      const int hh = derived(plan_.tensors[cur[i]].name + ".h", cur[i]);
      const int src = cur[i];
      collective(l, 'M', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp,
                 "a2a seq->head " + plan_.tensors[outs[i]].name.substr(L.size()), src, hh,
                 [&](int r) { return cells_[src][r]; });
      cur[i] = hh;
    }
    // Megatron: undo the load-balancing order before conv/SSD (CP L359-395).
    if (megatron() && d_ != TrainingDecision::kZigzagNotUndone) {
      for (int i = 0; i < 5; ++i) {
        const int u = derived(plan_.tensors[cur[i]].name + ".seq", cur[i]);
        const int src = cur[i];
        transform(l, 'M', Transform::kReorder, "undo load balancing", {src}, u, [&](int r, TrainingOp& op) {
          op.perm = undoPerm(r, static_cast<int>(cells_[src][r] / lay_.tokens()));
          cells_[u][r] = cells_[src][r];
        });
        cur[i] = u;
      }
    }
  }
  // Per-head parameters sliced to the rank's heads (cp_mamba.py L148-179;
  // Megatron: CP-local slices of the TP-local tensors).
  transform(l, 'M', Transform::kSliceParam, "slice head params", {}, -1, [&](int r, TrainingOp& op) {
    const training::Coord& c = lay_.coord(r);
    op.params = {static_cast<std::int16_t>(p_convx), static_cast<std::int16_t>(p_alog), static_cast<std::int16_t>(p_d),
                 static_cast<std::int16_t>(p_dtb)};
    // PrimeRL's gated norm runs head-parallel on the slice; Megatron's grouped
    // norm runs after the head->seq all-to-all on every TP-local head.
    if (!megatron()) op.params.push_back(static_cast<std::int16_t>(p_gn));
    op.unit_list = {c.tp * cp + c.cp};
  });
  transform(l, 'M', Transform::kSliceParam, "slice group params", {}, -1, [&](int r, TrainingOp& op) {
    const training::Coord& c = lay_.coord(r);
    op.params = {static_cast<std::int16_t>(p_convbc)};
    op.unit_list = lay_.groupsOfBlock(c.tp * cp + c.cp);
  });
  // A replicated group's conv rows get one contribution per replica (each
  // replica's heads), summed by the data-parallel reduction.
  if (cp > 1 && groups_local < cp) plan_.tensors[p_convbc].shards = cp / groups_local;
  const int xc = tensor(L + "x.conv", Space::kHeads, nb, head_bytes, l);
  const int bc = tensor(L + "B.conv", Space::kGroups, G, group_bytes, l);
  const int cc = tensor(L + "C.conv", Space::kGroups, G, group_bytes, l);
  const Partial rp = cp > 1 && groups_local < cp ? Partial::kReps : Partial::kNone;
  const int xin = cur[1], bin = cur[3], cin = cur[4], dtin = cur[2], zin = cur[0];
  kernel(l, 'M', Kernel::kConv, "causal conv1d", {{xin}, {bin, rp}, {cin, rp}}, {xc, bc, cc}, {p_convx, p_convbc},
         [&](int r, int w) { return cells_[w == 0 ? xin : w == 1 ? bin : cin][r]; }, false, true);
  const int y = tensor(L + "y", Space::kHeads, nb, head_bytes, l);
  std::vector<Read> ssd_reads = {{xc}, {bc}, {cc}, {dtin}};
  if (megatron()) ssd_reads.push_back({zin});  // z-gating inside mamba_split_conv1d_scan_combined
  kernel(l, 'M', Kernel::kSsd, "ssd scan", ssd_reads, {y}, {p_alog, p_d, p_dtb},
         [&](int r, int) { return cells_[xin][r]; }, false, true);
  int yv = y;
  if (!megatron()) {
    const int yn = tensor(L + "y.norm", Space::kHeads, nb, head_bytes, l);
    kernel(l, 'M', Kernel::kGatedNorm, "gated rmsnorm", {{y}, {zin}}, {yn}, {p_gn},
           [&](int r, int) { return cells_[xin][r]; });
    yv = yn;
  }
  if (cp > 1) {
    if (megatron() && d_ != TrainingDecision::kZigzagNotRestored && d_ != TrainingDecision::kZigzagNotUndone) {
      const int rd = derived(L + "y.lb", yv);
      const int src = yv;
      transform(l, 'M', Transform::kReorder, "redo load balancing", {src}, rd, [&](int r, TrainingOp& op) {
        op.perm = redoPerm(r, static_cast<int>(cells_[src][r] / lay_.tokens()));
        cells_[rd][r] = cells_[src][r];
      });
      yv = rd;
    }
    const int ys = derived(L + "y.seq", yv);
    const int src = yv;
    collective(l, 'M', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, "a2a head->seq y", src, ys,
               [&](int r) { return cells_[src][r]; });
    yv = ys;
  }
  if (megatron()) {
    const int yn = tensor(L + "y.norm", Space::kHeads, nb, head_bytes, l, true);
    kernel(l, 'M', Kernel::kGatedNorm, "grouped rmsnorm", {{yv}}, {yn}, {p_gn},
           [&](int r, int) { return cells_[yv][r]; });
    yv = yn;
  }
  const int o = tensor(L + "out", Space::kHidden, 1, d.hidden * kBf16, l);
  plan_.tensors[o].shards = tps ? tp : 1;  // row-parallel: a partial over tp
  kernel(l, 'M', Kernel::kLinear, "out_proj", {{yv}}, {o}, {p_out}, [&](int r, int) { return cpCells(r, 1); }, tps);
  const int os = spScatter(l, 'M', o, L + "out.sp");
  const int hn = tensor("h" + std::to_string(l + 1), Space::kHidden, 1, d.hidden * kBf16, l);
  (void)0;
  kernel(l, 'M', Kernel::kAdd, "residual add", {{h}, {os}}, {hn}, {}, [&](int r, int) { return localCells(r, 1); });
  return hn;
}

int Builder::attention(int l, int h) {
  const auto& d = lay_.dims();
  const std::string L = "L" + std::to_string(l) + ".";
  const int tp = k().tp, cp = k().cp;
  const bool tps = tp > 1;
  const std::int64_t hb = static_cast<std::int64_t>(d.head_dim) * kBf16;
  LayerParams& lp = layer_params_[l + 1];
  const int p_norm = param(L + "norm", Space::kHidden, 1, d.hidden, false, false, tps ? tp : 1);
  const int p_qkv = param(L + "qkv", Space::kHidden, tps ? tp : 1,
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
    kernel(l, '*', Kernel::kNorm, "norm", {{hin}}, {ln}, {p_norm}, [&](int r, int) { return localCells(r, 1); });
  }
  const int q = tensor(L + "q", Space::kQHeads, d.q_heads, hb, l, true);
  const int kv = tensor(L + "kv", Space::kKvHeads, d.kv_heads, 2 * hb, l, true);
  kernel(l, '*', Kernel::kLinear, megatron() ? "norm+qkv" : "qkv", {{ln, tps ? Partial::kTp : Partial::kNone}}, {q, kv},
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
      transform(l, '*', Transform::kRepeat, "repeat kv heads", {kv}, rep, [&](int r, TrainingOp& op) {
        op.reps = reps;
        cells_[rep][r] = cells_[kv][r] * reps;
      });
      kva = rep;
      kvp = Partial::kReps;
    }
    const int qh = derived(L + "q.h", q);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp, "a2a seq->head q", q, qh,
               [&](int r) { return cells_[q][r]; });
    const int kvh = derived(L + "kv.h", kva);
    const int src = kva;
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp, "a2a seq->head kv", src, kvh,
               [&](int r) { return cells_[src][r]; });
    qa = qh;
    kva = kvh;
  } else if (cp > 1) {
    // Megatron attention CP, all-gather flavour (the logical content of p2p too):
    // K/V gathered over cp, dK/dV reduce-scattered back.
    const int kvall = derived(L + "kv.all", kv);
    collective(l, '*', OpKind::kAllGather, A2aMode::kNone, TrainAxis::kCp, "cp all-gather kv", kv, kvall,
               [&](int r) { return cells_[kv][r] * cp; });
    kva = kvall;
    kvp = Partial::kCp;
  }
  const int ao = tensor(L + "attn", Space::kQHeads, d.q_heads, hb, l, true);
  kernel(l, '*', Kernel::kAttention, "flash attention varlen", {{qa}, {kva, kvp}}, {ao}, {},
         [&](int r, int) { return cells_[qa][r]; }, false, true);
  int av = ao;
  if (cp > 1 && !megatron()) {
    const int as = derived(L + "attn.seq", ao);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, "a2a head->seq attn", ao, as,
               [&](int r) { return cells_[ao][r]; });
    av = as;
  }
  const int o = tensor(L + "out", Space::kHidden, 1, d.hidden * kBf16, l);
  plan_.tensors[o].shards = tps ? tp : 1;
  kernel(l, '*', Kernel::kLinear, "o_proj", {{av}}, {o}, {p_o}, [&](int r, int) { return cpCells(r, 1); }, tps);
  const int os = spScatter(l, '*', o, L + "out.sp");
  const int hn = tensor("h" + std::to_string(l + 1), Space::kHidden, 1, d.hidden * kBf16, l);
  (void)0;
  kernel(l, '*', Kernel::kAdd, "residual add", {{h}, {os}}, {hn}, {}, [&](int r, int) { return localCells(r, 1); });
  return hn;
}

int Builder::moe(int l, int h) {
  const auto& d = lay_.dims();
  const std::string L = "L" + std::to_string(l) + ".";
  const int tp = k().tp, ep = k().ep;
  const bool tps = tp > 1;
  const int lat = d.latent > 0 ? d.latent : d.hidden;
  LayerParams& lp = layer_params_[l + 1];
  const int p_norm = param(L + "norm", Space::kHidden, 1, d.hidden);
  const int p_router = param(L + "router", Space::kHidden, 1, static_cast<std::int64_t>(d.hidden) * d.experts);
  const int p_fc1 = d.latent > 0 ? param(L + "fc1_latent", Space::kHidden, 1, static_cast<std::int64_t>(d.hidden) * lat) : -1;
  const int p_fc2 = d.latent > 0 ? param(L + "fc2_latent", Space::kHidden, 1, static_cast<std::int64_t>(d.hidden) * lat) : -1;
  const int p_sh = param(L + "shared_expert", Space::kHidden, tps ? tp : 1,
                         static_cast<std::int64_t>(2) * d.hidden * d.shared_inter, tps);
  const int p_ex = param(L + "experts", Space::kExperts, d.experts,
                         static_cast<std::int64_t>(2) * d.experts * lat * d.expert_inter, false, true);
  for (int p : {p_norm, p_router, p_fc1, p_fc2, p_sh}) {
    if (p >= 0) lp.dense.push_back(p);
  }
  lp.experts.push_back(p_ex);
  if (tps) {
    // Norm, router and the duplicated latent projections run on SP rows: summed over tp.
    for (int p : {p_norm, p_router, p_fc1, p_fc2}) {
      if (p >= 0) lp.tp_sum.push_back(p);
    }
  }
  if (!megatron()) {
    paramGather(l, 'E', lp.dense, TrainAxis::kFsdp);
    if (lay_.group(TrainAxis::kExpertDp, 0).size() > 1) paramGather(l, 'E', lp.experts, TrainAxis::kExpertDp);
  }
  const int ln = tensor(L + "ln", Space::kHidden, 1, d.hidden * kBf16, l);
  kernel(l, 'E', Kernel::kNorm, "pre-mlp norm", {{h}}, {ln}, {p_norm}, [&](int r, int) { return localCells(r, 1); });
  // Router (fp32 sigmoid, top-k): consumes ln, gives the (token, expert) choices.
  kernel(l, 'E', Kernel::kRouter, "router top-k", {{ln}}, {}, {p_router}, [&](int, int) { return 0; });
  // fc1 latent before the dispatch (DeepEP path; identity for Nano).
  int xl = ln;
  if (p_fc1 >= 0) {
    xl = tensor(L + "latent", Space::kHidden, 1, lat * kBf16, l);
    kernel(l, 'E', Kernel::kLinear, "fc1_latent_proj", {{ln}}, {xl}, {p_fc1}, [&](int r, int) { return localCells(r, 1); });
  }
  const int disp = derived(L + "routed", xl, d.experts);
  plan_.tensors[disp].space = Space::kExperts;
  auto routedCells = [&](int r) { return static_cast<int>(lay_.localTokens(r).size()) * d.top_k; };
  transform(l, 'E', Transform::kPermute, "permute by expert", {xl}, disp, [&](int r, TrainingOp& op) {
    cells_[disp][r] = routedCells(r);
    (void)op;
  });
  int at_experts = disp;
  // Splits: cells this rank sends to each EP member, and receives.
  auto sendSplits = [&](int r) {
    const std::vector<int> g = lay_.group(TrainAxis::kEp, r);
    std::vector<int> out(g.size(), 0);
    for (int t : lay_.localTokens(r)) {
      for (int e : lay_.route(l, t)) ++out[lay_.expertOwner(e)];
    }
    return out;
  };
  std::vector<std::vector<int>> sends(W());
  for (int r = 0; r < W(); ++r) sends[r] = ep > 1 ? sendSplits(r) : std::vector<int>{};
  auto recvSplits = [&](int r) {
    const std::vector<int> g = lay_.group(TrainAxis::kEp, r);
    std::vector<int> out;
    for (int m : g) out.push_back(sends[m][lay_.coord(r).ep]);
    return out;
  };
  if (ep > 1) {
    const int de = derived(L + "routed.ep", disp);
    collective(l, 'E', OpKind::kAllToAll, A2aMode::kToExpert, TrainAxis::kEp, "ep dispatch", disp, de,
               [&](int r) {
                 const auto rs = recvSplits(r);
                 return std::accumulate(rs.begin(), rs.end(), 0);
               },
               [&](int r, TrainingOp& op) {
                 op.in_splits = sends[r];
                 op.out_splits = recvSplits(r);
                 std::int64_t n = std::accumulate(op.in_splits.begin(), op.in_splits.end(), 0);
                 op.bytes = n * lat * kBf16;
               });
    at_experts = de;
  }
  const int ye = tensor(L + "experts.out", Space::kExperts, d.experts, lat * kBf16, l);
  kernel(l, 'E', Kernel::kExperts, "grouped experts", {{at_experts, Partial::kRouted}}, {ye}, {p_ex},
         [&](int r, int) { return cells_[at_experts][r]; });
  // DeepEP path: the routing weights (x routed_scaling_factor) applied once,
  // after the experts, before the combine (PR distributed/deepep.py).
  const int yw = derived(L + "experts.weighted", ye);
  transform(l, 'E', Transform::kRouteWeight, "routing weights", {ye}, yw,
            [&](int r, TrainingOp&) { cells_[yw][r] = cells_[ye][r]; });
  int back = yw;
  if (ep > 1) {
    const int yb = derived(L + "experts.back", yw);
    collective(l, 'E', OpKind::kAllToAll, A2aMode::kToSource, TrainAxis::kEp, "ep combine", yw, yb,
               [&](int r) { return routedCells(r); },
               [&](int r, TrainingOp& op) {
                 op.reads.push_back(static_cast<std::int16_t>(disp));  // the order the handle restores
                 op.in_splits = recvSplits(r);
                 op.out_splits = sends[r];
                 std::int64_t n = std::accumulate(op.in_splits.begin(), op.in_splits.end(), 0);
                 op.bytes = n * lat * kBf16;
               });
    back = yb;
  }
  const int ms = tensor(L + "moe.sum", Space::kHidden, 1, lat * kBf16, l);
  plan_.tensors[ms].routed_from = ye;
  plan_.tensors[ye].grad_value = -2;  // resolved to d:moe.sum below
  transform(l, 'E', Transform::kSumOverK, "unpermute (sum over k)", {back, xl}, ms, [&](int r, TrainingOp& op) {
    cells_[ms][r] = localCells(r, 1);
    (void)op;
  });
  moe_sums_.push_back({ye, ms});
  int mo = ms;
  if (p_fc2 >= 0) {
    mo = tensor(L + "moe.out", Space::kHidden, 1, d.hidden * kBf16, l);
    kernel(l, 'E', Kernel::kLinear, "fc2_latent_proj", {{ms}}, {mo}, {p_fc2}, [&](int r, int) { return localCells(r, 1); });
  }
  // Shared expert on the full-H input (Megatron: TP column/row with SP).
  const int lnf = spGather(l, 'E', ln, L + "ln.full");
  const int so = tensor(L + "shared.out", Space::kHidden, 1, d.hidden * kBf16, l);
  plan_.tensors[so].shards = tps ? tp : 1;
  kernel(l, 'E', Kernel::kLinear, "shared expert", {{lnf, tps ? Partial::kTp : Partial::kNone}}, {so}, {p_sh},
         [&](int r, int) { return cpCells(r, 1); }, tps);
  const int ss = spScatter(l, 'E', so, L + "shared.sp");
  const int hn = tensor("h" + std::to_string(l + 1), Space::kHidden, 1, d.hidden * kBf16, l);
  (void)0;
  kernel(l, 'E', Kernel::kAdd, "residual add", {{h}, {mo}, {ss}}, {hn}, {}, [&](int r, int) { return localCells(r, 1); });
  return hn;
}

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
  kernel(nl_, ' ', Kernel::kNorm, "final norm", {{h}}, {hf}, {p_fn}, [&](int r, int) { return localCells(r, 1); });
  const int hff = spGather(nl_, ' ', hf, "final.ln.full");
  kernel(nl_, ' ', Kernel::kLoss, "lm_head + loss", {{hff, tps ? Partial::kTp : Partial::kNone}}, {}, {p_head},
         [&](int, int) { return 0; }, tps);
}


TrainingOp Builder::conjugate(const TrainingOp& f, int index, int r, bool* keep) {
  *keep = true;
  TrainingOp b = f;
  b.pass = Pass::kBackward;
  b.conj_of = index;
  b.reads.clear();
  b.writes.clear();
  auto g = [&](int buf) { return static_cast<std::int16_t>(gradOf(buf)); };
  switch (f.kind) {
    case OpKind::kCompute:
      for (auto w : f.writes) b.reads.push_back(g(w));
      for (auto rd : f.reads) b.writes.push_back(g(rd));
      b.bytes = 0;
      for (auto w : b.writes) b.bytes += cells_[w][r] * plan_.tensors[w].unit_bytes;
      return b;
    case OpKind::kAllToAll:
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      if (f.a2a == A2aMode::kSeqToHead) b.a2a = A2aMode::kHeadToSeq;
      if (f.a2a == A2aMode::kHeadToSeq) b.a2a = A2aMode::kSeqToHead;
      if (f.a2a == A2aMode::kToExpert || f.a2a == A2aMode::kToSource) {
        // DeepEP: dispatch.backward = combine and combine.backward = dispatch, same handle:
        // every cell goes back where it came from, in the order it left.
        b.a2a = A2aMode::kToSource;
        b.reads.push_back(f.reads[0]);
      }
      std::swap(b.in_splits, b.out_splits);
      return b;
    case OpKind::kAllGather:
      if (f.reads.empty()) {  // FSDP parameter all-gather: its gradient reduction is the layer's
        *keep = false;
        return b;
      }
      b.kind = OpKind::kReduceScatter;
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      b.step = f.step == "sp all-gather" ? "sp reduce-scatter (dgrad)" : "cp reduce-scatter dkv";
      return b;
    case OpKind::kReduceScatter:
      b.kind = OpKind::kAllGather;
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      b.step = "sp all-gather (grad)";
      b.bytes = f.bytes;
      return b;
    case OpKind::kSlice:
    case OpKind::kAdd:
      switch (f.transform) {
        case Transform::kSliceParam:
          *keep = false;  // the gradient lands in the slice (the kernels write it there)
          return b;
        case Transform::kRepeat:
          b.kind = OpKind::kAdd;
          b.transform = Transform::kSumRepeats;
          b.step = "sum repeated grads";
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kReorder: {
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          std::vector<int> inv(f.perm.size());
          for (size_t i = 0; i < f.perm.size(); ++i) inv[f.perm[i]] = static_cast<int>(i);
          b.perm = std::move(inv);
          return b;
        }
        case Transform::kSumOverK:
          b.kind = OpKind::kSlice;
          b.transform = Transform::kPermute;
          b.step = "permute grads by expert";
          b.reads = {g(f.writes[0]), f.reads[0]};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kRouteWeight:
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kPermute:
          b.kind = OpKind::kAdd;
          b.transform = Transform::kSumOverK;
          b.step = "sum expert grads over k";
          b.reads = {g(f.writes[0]), f.reads[0]};
          b.writes = {g(f.reads[0])};
          return b;
        default:
          *keep = false;
          return b;
      }
    default:
      *keep = false;
      return b;
  }
}

void Builder::gradReductions(int layer, char block, std::vector<TrainingOp>& out, int r) {
  const LayerParams& lp = layer_params_[layer + 1];
  auto reduce = [&](OpKind kind, TrainAxis axis, const std::vector<int>& params, const std::string& step) {
    if (params.empty()) return;
    std::vector<int> g = lay_.group(axis, r);
    if (g.size() < 2) return;
    TrainingOp op;
    op.pass = Pass::kBackward;
    op.layer = static_cast<std::int16_t>(layer);
    op.block = block;
    op.kind = kind;
    op.axis = axis;
    op.ranks = std::move(g);
    op.step = step;
    for (int p : params) op.params.push_back(static_cast<std::int16_t>(p));
    op.bytes = paramBytes(params, r);
    out.push_back(std::move(op));
  };
  if (!megatron()) {
    // FSDP's post-backward hook: reduce-scatter over dp_shard x cp, then HSDP's all-reduce.
    reduce(OpKind::kReduceScatter, TrainAxis::kFsdp, lp.dense, "fsdp reduce-scatter grads");
    reduce(OpKind::kAllReduce, TrainAxis::kDpReplicate, lp.dense, "hsdp all-reduce grads");
    reduce(OpKind::kReduceScatter, TrainAxis::kExpertDp, lp.experts, "expert fsdp reduce-scatter grads");
    reduce(OpKind::kAllReduce, TrainAxis::kDpReplicate, lp.experts, "hsdp all-reduce expert grads");
  } else {
    // finalize_model_grads: SP-replicated parameters summed over tp; DDP over dp x cp; experts over expert-DP.
    reduce(OpKind::kAllReduce, TrainAxis::kTp, lp.tp_sum, "tp all-reduce sequence-parallel grads");
    reduce(OpKind::kAllReduce, TrainAxis::kDpCp, lp.dense, "ddp all-reduce grads");
    reduce(OpKind::kAllReduce, TrainAxis::kExpertDp, lp.experts, "expert-dp all-reduce grads");
  }
}

void Builder::backward() {
  for (int r = 0; r < W(); ++r) {
    std::vector<TrainingOp> bwd;
    const std::vector<TrainingOp>& f = fwd_[r];
    for (int i = static_cast<int>(f.size()) - 1; i >= 0; --i) {
      // FSDP reshards after forward: a block's parameters are all-gathered
      // again before its backward (PrimeRL; the forward's gathers in reverse).
      const bool layer_starts = i == static_cast<int>(f.size()) - 1 || f[i + 1].layer != f[i].layer;
      if (layer_starts && !megatron()) {
        for (const TrainingOp& g : f) {
          if (g.layer != f[i].layer || g.pass != Pass::kForward || g.kind != OpKind::kAllGather || !g.reads.empty()) continue;
          TrainingOp again = g;
          again.pass = Pass::kBackward;
          again.step = g.step + " (backward)";
          bwd.push_back(std::move(again));
        }
      }
      bool keep = false;
      TrainingOp b = conjugate(f[i], i, r, &keep);
      if (keep) bwd.push_back(std::move(b));
      const bool layer_done = i == 0 || f[i - 1].layer != f[i].layer;
      if (layer_done) gradReductions(f[i].layer, f[i].block, bwd, r);
    }
    fwd_[r].insert(fwd_[r].end(), std::make_move_iterator(bwd.begin()), std::make_move_iterator(bwd.end()));
  }
}

TrainingPlan Builder::build() {
  const auto& d = lay_.dims();
  nl_ = static_cast<int>(d.layers.size());
  layer_params_.assign(nl_ + 2, {});
  embed();
  int h = h0_;
  for (int l = 0; l < nl_; ++l) {
    cur_layer_ = l;
    switch (d.layers[l]) {
      case LayerKind::kMamba: h = mamba(l, h); break;
      case LayerKind::kAttention: h = attention(l, h); break;
      case LayerKind::kMoe: h = moe(l, h); break;
      default: assert(false && "validated: only M * E"); break;
    }
  }
  cur_layer_ = nl_;
  loss(h);
  backward();
  // Gradient roots: complete = every consumer's contributions.
  for (size_t i = 0; i < plan_.tensors.size(); ++i) {
    TensorInfo& t = plan_.tensors[i];
    if (t.grad < 0 || t.value_of >= 0) continue;
    TensorInfo& g = plan_.tensors[t.grad];
    const int n = i < consumers_.size() ? consumers_[i] : 0;
    g.shards = t.routed_grad ? n : std::max(1, n);  // a routed gradient may have no plain consumer
    g.routed_grad = t.routed_grad;
    g.layer = t.layer;
    t.routed_grad = false;  // the forward value is an ordinary one; its gradient is routed
  }
  for (auto [ye, ms] : moe_sums_) plan_.tensors[ye].grad_value = plan_.tensors[ms].grad;
  plan_.ranks = std::move(fwd_);
  return std::move(plan_);
}

}  // namespace

Expected<TrainingPlan> buildTrainingPlan(const TrainingCase& c, TrainingDecision decision) {
  if (Status st = validateTrainingCase(c); !st) return st;
  const auto dims = training::dimsOf(*c.model);
  for (LayerKind k : dims.layers) {
    if (k != LayerKind::kMamba && k != LayerKind::kAttention && k != LayerKind::kMoe) {
      return Status::notModelled("training layouts of a '" + std::string(1, layerChar(k)) + "' layer");
    }
  }
  Builder b(c, decision);
  return b.build();
}

}  // namespace seam
