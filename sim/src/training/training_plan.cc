// The training planner (training_plan.h): the op vocabulary's names, and the
// planner's primitives (tensors, and the kernels, rearrangements and
// collectives it emits on every rank), then the build of a whole plan: the
// forward layer by layer (training_plan_forward.cc), then its backward
// (training_plan_backward.cc).
#include <algorithm>
#include <cassert>

#include "training/training_plan_builder.h"

namespace seam {

std::string_view trainAxisName(TrainAxis axis) {
  switch (axis) {
    case TrainAxis::kNone:
      return "-";
    case TrainAxis::kCp:
      return "cp";
    case TrainAxis::kTp:
      return "tp";
    case TrainAxis::kEp:
      return "ep";
    case TrainAxis::kFsdp:
      return "fsdp";
    case TrainAxis::kDpReplicate:
      return "dp_replicate";
    case TrainAxis::kExpertDp:
      return "expert_dp";
    case TrainAxis::kDpCp:
      return "dp_cp";
    case TrainAxis::kExpertTp:
      return "expert_tp";
    case TrainAxis::kTpEp:
      return "tp_ep";
    case TrainAxis::kTpDpCp:
      return "tp_dp_cp";
  }
  return "?";
}

std::string_view kernelName(Kernel k) {
  switch (k) {
    case Kernel::kNone:
      return "-";
    case Kernel::kNorm:
      return "norm";
    case Kernel::kLinear:
      return "linear";
    case Kernel::kAdd:
      return "add";
    case Kernel::kConv:
      return "conv1d";
    case Kernel::kSsd:
      return "ssd";
    case Kernel::kGatedNorm:
      return "gated_norm";
    case Kernel::kAttention:
      return "attention";
    case Kernel::kRouter:
      return "router";
    case Kernel::kExperts:
      return "experts";
    case Kernel::kLoss:
      return "loss";
  }
  return "?";
}

std::string_view transformName(Transform t) {
  switch (t) {
    case Transform::kNone:
      return "-";
    case Transform::kRepeat:
      return "repeat";
    case Transform::kSumRepeats:
      return "sum_repeats";
    case Transform::kReorder:
      return "reorder";
    case Transform::kSliceParam:
      return "slice_param";
    case Transform::kScatterSeq:
      return "scatter_seq";
    case Transform::kSumOverK:
      return "sum_over_k";
    case Transform::kPermute:
      return "permute";
    case Transform::kRouteWeight:
      return "route_weight";
  }
  return "?";
}

std::string_view a2aModeName(A2aMode m) {
  switch (m) {
    case A2aMode::kNone:
      return "-";
    case A2aMode::kSeqToHead:
      return "seq->head";
    case A2aMode::kHeadToSeq:
      return "head->seq";
    case A2aMode::kToExpert:
      return "dispatch";
    case A2aMode::kToSource:
      return "combine";
  }
  return "?";
}

int TrainingPlan::tensorId(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace training {

int Builder::tensor(const std::string& name, Space space, int units, std::int64_t unit_bytes,
                    int layer, bool tp_split) {
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

/// A buffer holding the terms of `from`'s root (made by a collective or a rearrangement).
int Builder::derived(const std::string& name, int from, int units) {
  const TensorInfo f = plan_.tensors[from];
  const int id =
      tensor(name, f.space, units < 0 ? f.units : units, f.unit_bytes, f.layer, f.tp_split);
  plan_.tensors[id].value_of = root(from);
  plan_.tensors[id].reps = f.reps;
  return id;
}

int Builder::param(const std::string& name, Space space, int units, std::int64_t elements,
                   bool tp_sharded, bool ep_sharded, int shards) {
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

/// Registers a consumer of root `r`'s value with `count` gradient
/// contributions; returns its first j.
int Builder::consume(int r, int count) {
  if (static_cast<int>(consumers_.size()) <= r) consumers_.resize(r + 1, 0);
  const int off = consumers_[r];
  consumers_[r] += count;
  return off;
}

/// The bf16 bytes of the shards of `params` a rank stores.
std::int64_t Builder::paramBytes(const std::vector<int>& params) const {
  std::int64_t e = 0;
  for (int p : params) {
    std::int64_t n = param_elems_[p];
    if (plan_.tensors[p].tp_sharded) n /= k().tp;
    if (plan_.tensors[p].ep_sharded) n /= k().ep * k().expertTp();
    e += n;
  }
  return e * kBf16;
}

void Builder::emit(const TrainingOp& proto, const Fill& fill) {
  for (int r = 0; r < W(); ++r) {
    TrainingOp op = proto;
    if (fill) fill(r, op);
    fwd_[r].push_back(std::move(op));
  }
}

/// A compute op: checks its reads, writes fresh roots.
void Builder::kernel(int layer, char block, Kernel kern, const std::string& step,
                     const std::vector<Read>& reads, const std::vector<int>& writes,
                     const std::vector<int>& params,
                     const std::function<int(int rank, int write_index)>& cells_of, bool tp_shard,
                     bool segments) {
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

/// The cu_seqlens a rank's conv/SSD/attention kernel is given.
std::vector<int> Builder::segmentsFor(int r) const {
  if (d_ == TrainingDecision::kLocalDocBoundaries) return lay_.localSegments(r);
  if (d_ == TrainingDecision::kNoDocBoundaries) return {0, lay_.tokens()};
  return lay_.globalSegments();
}

/// A collective over `axis` moving `from` into `to`.
void Builder::collective(int layer, char block, OpKind kind, A2aMode mode, TrainAxis axis,
                         const std::string& step, int from, int to,
                         const std::function<int(int rank)>& out_cells, const Fill& extra) {
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
    op.bytes = kind == OpKind::kAllGather ? in_bytes[r] * static_cast<std::int64_t>(op.ranks.size())
                                          : in_bytes[r];
    if (extra) extra(r, op);
  });
}

/// A local rearrangement (slice or add) of `reads` into `to` (-1: none).
void Builder::transform(int layer, char block, Transform t, const std::string& step,
                        const std::vector<int>& reads, int to, const Fill& fill) {
  TrainingOp proto;
  proto.layer = static_cast<std::int16_t>(layer);
  proto.block = block;
  proto.kind =
      t == Transform::kSumOverK || t == Transform::kSumRepeats ? OpKind::kAdd : OpKind::kSlice;
  proto.transform = t;
  proto.step = step;
  for (int rd : reads) proto.reads.push_back(static_cast<std::int16_t>(rd));
  if (to >= 0) proto.writes = {static_cast<std::int16_t>(to)};
  emit(proto, [&](int r, TrainingOp& op) {
    fill(r, op);
    if (to >= 0) op.bytes = bytesOf(to, r);
  });
}

/// Megatron SP: the all-gather over tp before a column-parallel block.
int Builder::spGather(int layer, char block, int h, const std::string& name) {
  if (!(k().sp && k().tp > 1)) return h;
  const int full = derived(name, h);
  collective(layer, block, OpKind::kAllGather, A2aMode::kNone, TrainAxis::kTp, "sp all-gather", h,
             full, [&](int r) { return cpCells(r, 1); });
  return full;
}

/// Megatron SP: the reduce-scatter over tp after a row-parallel block (or
/// the partial left as is when tp = 1).
int Builder::spScatter(int layer, char block, int o, const std::string& name) {
  if (k().tp == 1) return o;
  const int s = derived(name, o);
  collective(layer, block, OpKind::kReduceScatter, A2aMode::kNone, TrainAxis::kTp,
             "sp reduce-scatter", o, s, [&](int r) { return localCells(r, 1); });
  return s;
}

/// Registers a PrimeRL FSDP2 unit (in the order units finish their
/// forward: nested router and experts units before their block).
int Builder::unit(const std::string& name, int layer, char block, std::vector<int> params,
                  std::vector<std::pair<std::int64_t, std::int64_t>> shapes) {
  FsdpUnit u;
  u.name = name;
  u.layer = layer;
  u.block = block;
  u.params = std::move(params);
  u.shapes = std::move(shapes);
  u.reduce_bytes = k().reduce_fp32 ? 4 : 2;
  units_.push_back(std::move(u));
  return static_cast<int>(units_.size()) - 1;
}

TrainingPlan Builder::build() {
  const auto& d = lay_.dims();
  nl_ = static_cast<int>(d.layers.size());
  layer_params_.assign(nl_ + 2, {});
  embed();
  int h = h0_;
  for (int l = 0; l < nl_; ++l) {
    cur_layer_ = l;
    const int first = static_cast<int>(fwd_[0].size());
    switch (d.layers[l]) {
      case LayerKind::kMamba:
        h = mamba(l, h);
        break;
      case LayerKind::kAttention:
        h = attention(l, h);
        break;
      case LayerKind::kMoe:
        h = moe(l, h);
        break;
      default:
        assert(false && "validated: only M * E");
        break;
    }
    if (const int u = megatron() ? -1 : blockUnit(l); u >= 0) {
      units_[u].first = first;
      closeUnit(u);
    }
  }
  cur_layer_ = nl_;
  loss(h);
  if (megatron()) {
    backward();
  } else {
    insertForwardGathers();
    backwardFsdp();
  }
  completeGradients();
  plan_.ranks = std::move(fwd_);
  return std::move(plan_);
}

}  // namespace training

Expected<TrainingPlan> buildTrainingPlan(const TrainingCase& c, TrainingDecision decision) {
  if (Status st = validateTrainingCase(c); !st) return st;
  const auto dims = training::dimsOf(*c.model);
  for (LayerKind k : dims.layers) {
    if (k != LayerKind::kMamba && k != LayerKind::kAttention && k != LayerKind::kMoe) {
      return Status::notModelled("training layouts of a '" + std::string(1, layerChar(k)) +
                                 "' layer");
    }
  }
  training::Builder b(c, decision);
  return b.build();
}

}  // namespace seam
