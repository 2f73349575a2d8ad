// The setup of one rank of a GPU run (rank_executor.h): its device, stream
// and cuBLAS handle, events, buffers, its slices of the weights and the
// embedding rows, the peer memory of its fused groups, its communicators.
#include <algorithm>
#include <cstring>
#include <set>

#include "kernels.h"
#include "rank_executor.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

Expected<DeviceArray<float>> RankExecutor::upload(const std::vector<float>& host) {
  auto a = DeviceArray<float>::create(host.size());
  if (!a) return a.status();
  if (!host.empty())
    SEAM_CUDA_CHECK(
        cudaMemcpy(a->get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return a;
}

Status RankExecutor::setUp() {
  // Rank r on device r (the world never exceeds the count), or on the
  // device the process group gives this process's only rank.
  device_ = s_.local_device >= 0 ? s_.local_device : rank_;
  SEAM_CUDA_CHECK(cudaSetDevice(device_));
  auto gate = PinnedFlag::create();
  if (!gate) return gate.status();
  gate_.emplace(std::move(*gate));
  gate_host_ = gate_->host();
  auto stream = Stream::create();
  if (!stream) return stream.status();
  stream_.emplace(std::move(*stream));
  auto blas = BlasHandle::create();
  if (!blas) return blas.status();
  blas_ = std::move(*blas);
  auto ws = DeviceArray<char>::create(kBlasWorkspaceBytes);
  if (!ws) return ws.status();
  blas_workspace_ = std::move(*ws);
  SEAM_CUBLAS_CHECK(cublasSetStream(blas_.get(), stream_->get()));
  SEAM_CUBLAS_CHECK(cublasSetWorkspace(blas_.get(), blas_workspace_.get(), kBlasWorkspaceBytes));
  // Plain fp32 GEMMs: TF32 would round the inputs and break the CPU agreement in real mode.
  SEAM_CUBLAS_CHECK(cublasSetMathMode(blas_.get(), CUBLAS_DEFAULT_MATH));
  progress_.counter++;

  auto events = EventPairs::create(static_cast<int>(ops_.size()));
  if (!events) return events.status();
  start_ = std::move(events->start);
  stop_ = std::move(events->stop);
  auto end = Event::create();
  if (!end) return end.status();
  end_.emplace(std::move(*end));
  samples_.assign(ops_.size(), {});
  op_bytes_.assign(ops_.size(), 0);
  // The size of the group an op names (its weights' group for compute):
  // what the timing table shows and the bus bandwidth factor needs.
  op_group_size_.clear();
  for (const Op& op : ops_)
    op_group_size_.push_back(op.hasGroup() ? s_.topo.groupSize(op.groupAxis()) : 1);
  op_path_.assign(ops_.size(), ArAddNormPath::kNotArAddNorm);
  op_nccl_.assign(ops_.size(), {});
  if (Status st = allocate(); !st) return st;
  if (Status st = uploadWeights(); !st) return st;
  if (Status st = uploadEmbeddings(); !st) return st;
  if (Status st = setUpPeers(); !st) return st;
  progress_.counter++;
  if (Status st = createComms(); !st) return st;
  progress_.setting_up = false;
  progress_.counter++;
  return Status::ok();
}

Status RankExecutor::createComms() {
  const int world = s_.plan.world();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t res = ncclCommInitRankConfig(&comm, world, s_.id, rank_, &config);
  world_comm_ = NcclComm(comm);
  if (Status st = issued(comm, res, "ncclCommInitRankConfig", __FILE__, __LINE__); !st) return st;
  progress_.counter++;

  // One communicator per group, split from the world in the same axis order
  // on every rank (a split is collective over the world). An axis whose
  // group is the whole TP group shares the TP communicator, as SGLang's
  // group objects do (Topology::communicatorAxis): collectives on aliased
  // axes then keep one call order.
  axis_comms_.resize(kAxisCount);
  const Topology& topo = s_.topo;
  for (Axis axis : kAllAxes) {
    if (topo.groupSize(axis) <= 1 || commOf(axis) != nullptr) continue;
    if (topo.communicatorAxis(axis) != axis) continue;  // aliased
    ncclConfig_t child_config = NCCL_CONFIG_INITIALIZER;
    child_config.blocking = 0;
    // A non-blocking split runs as a job of the parent and writes the
    // child's handle only once it completes: into a slot that outlives an abort.
    const int a = static_cast<int>(axis);
    const ncclResult_t r = ncclCommSplit(world_comm_.get(), topo.groupIndex(axis, rank_), rank_,
                                         &split_slots_[a], &child_config);
    if (r != ncclSuccess && r != ncclInProgress)
      return ncclStatus(r, "ncclCommSplit", __FILE__, __LINE__);
    if (Status st = waitComm(world_comm_.get()); !st) return st;
    if (!split_slots_[a])
      return Status::internal("ncclCommSplit returned no communicator for " +
                              std::string(axisName(axis)));
    axis_comms_[a] = NcclComm(std::exchange(split_slots_[a], nullptr));
    if (Status st = waitComm(axis_comms_[a].get()); !st) return st;
    progress_.counter++;
  }
  return Status::ok();
}

Status RankExecutor::allocate() {
  const std::size_t n = static_cast<std::size_t>(s_.capacity_rows) * h_;
  auto make = [&](DeviceRows& b) -> Status {
    auto a = DeviceArray<float>::create(n);
    if (!a) return a.status();
    b.data = std::move(*a);
    return Status::ok();
  };
  for (DeviceRows* b : {&hidden_, &residual_, &scratch_, &staging_}) {
    if (Status st = make(*b); !st) return st;
  }
  // A TBO plan's halves hold their hidden state and residual beside the
  // batch's (lane 0's parked slots receive the batch's when a half runs).
  for (int lane = 1; tbo_ && lane < kHalfLanes; ++lane) {
    for (DeviceRows* b : {&parked_hidden_[lane], &parked_residual_[lane]}) {
      if (Status st = make(*b); !st) return st;
    }
  }
  if (std::any_of(ops_.begin(), ops_.end(),
                  [](const Op& op) { return op.tensor == Tensor::kBranch; })) {
    if (Status st = make(branch_); !st) return st;
  }
  // Snapshots: one per snapshot op, plus the one a collective on an empty
  // snapshot list creates (Replay::bufferOf).
  const auto snaps = std::count_if(ops_.begin(), ops_.end(),
                                   [](const Op& op) { return op.kind == OpKind::kSnapshot; });
  snapshot_pool_.resize(static_cast<size_t>(snaps) + 1);
  for (DeviceRows& b : snapshot_pool_) {
    if (Status st = make(b); !st) return st;
  }
  finals_.resize(s_.stacks);
  final_done_.assign(s_.stacks, false);
  final_host_.assign(s_.stacks, {});
  for (DeviceRows& b : finals_) {
    if (Status st = make(b); !st) return st;
  }
  return Status::ok();
}

Expected<RankExecutor::StageShard> RankExecutor::uploadSlice(const numeric::StageWeights& w,
                                                             numeric::ColumnRange cols) {
  const int c = cols.end - cols.begin;
  std::vector<float> w_in(static_cast<size_t>(h_) * c), w_out(static_cast<size_t>(c) * h_);
  // No columns (a MoE with no shared expert, LongCat-Flash's): nothing to
  // copy, and the stage's weight vectors may be empty.
  for (int k = 0; k < h_ && c > 0; ++k) {
    std::memcpy(&w_in[static_cast<size_t>(k) * c],
                &w.w_in[static_cast<size_t>(k) * w.inner + cols.begin], c * sizeof(float));
  }
  if (c > 0)
    std::memcpy(w_out.data(), &w.w_out[static_cast<size_t>(cols.begin) * h_],
                w_out.size() * sizeof(float));
  StageShard shard;
  shard.cols = c;
  auto a = upload(w_in);
  if (!a) return a.status();
  auto b = upload(w_out);
  if (!b) return b.status();
  shard.w_in = std::move(*a);
  shard.w_out = std::move(*b);
  return shard;
}

Status RankExecutor::uploadWeights() {
  const Plan& plan = s_.plan;
  int widest = 1;
  for (const Op& op : ops_) {
    if (op.kind == OpKind::kCompute && op.stage >= 0) {
      const int si = plan.stageIndex(op.stack, op.stage);
      if (si < 0)
        return Status::invalid("rank " + std::to_string(rank_) + " computes stage " +
                               std::to_string(op.stage) + " of stack " + std::to_string(op.stack) +
                               ", which the plan does not have");
      if (shards_.count(si)) continue;
      // The shard comes from the stage's real weight split, not from the op
      // (Replay::compute): a plan cannot change where the weights live.
      const StageInfo& info = plan.stages[si];
      const int j = info.weight_axis == kNoAxis
                        ? 0
                        : s_.topo.rankIn(static_cast<Axis>(info.weight_axis), rank_);
      const numeric::StageWeights& w = s_.weights.at({op.stack, op.stage});
      const bool moe = s_.isMoe(op.stack, op.stage);
      const numeric::MoeSlice slice =
          numeric::moeSlice(s_.moe, j, info.shards, plan.source.config.moe_ep);
      // A MoE stage's dense part is its shared expert's slice.
      auto shard =
          uploadSlice(w, moe ? slice.shared_cols : numeric::shardColumns(w.inner, info.shards, j));
      if (!shard) return shard.status();
      widest = std::max(widest, shard->cols);
      shards_.emplace(si, std::move(*shard));
      if (!moe) continue;
      const numeric::MoeWeights& mw = s_.moe_weights.at({op.stack, op.stage});
      MoeShard m;
      auto router = upload(mw.router);
      if (!router) return router.status();
      m.router = std::move(*router);
      m.first_expert = slice.experts.begin;
      for (int e = slice.experts.begin; e < slice.experts.end; ++e) {
        auto ex = uploadSlice(mw.experts[e], slice.expert_cols);
        if (!ex) return ex.status();
        widest = std::max(widest, ex->cols);
        m.experts.push_back(std::move(*ex));
      }
      moe_shards_.emplace(si, std::move(m));
    }
    const bool norm =
        op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
    if (norm && !norm_weights_.count({op.stack, op.stage})) {
      auto a = upload(s_.weights.at({op.stack, op.stage}).norm);
      if (!a) return a.status();
      norm_weights_.emplace(std::make_pair(op.stack, op.stage), std::move(*a));
    }
  }
  if (!moe_shards_.empty()) {
    const std::size_t n = static_cast<std::size_t>(s_.capacity_rows) * s_.moe.experts;
    for (DeviceArray<float>* b : {&moe_scores_, &moe_gates_}) {
      auto a = DeviceArray<float>::create(n);
      if (!a) return a.status();
      *b = std::move(*a);
    }
    auto y = DeviceArray<float>::create(static_cast<std::size_t>(s_.capacity_rows) * h_);
    if (!y) return y.status();
    expert_out_ = std::move(*y);
  }
  auto mid = DeviceArray<float>::create(static_cast<std::size_t>(s_.capacity_rows) * widest);
  if (!mid) return mid.status();
  mid_ = std::move(*mid);
  return Status::ok();
}

Status RankExecutor::uploadEmbeddings() {
  const numeric::Shape& shape = s_.options.shape;
  const numeric::Mode mode = s_.options.mode;
  auto rowsOf = [&](int stack, const std::vector<int>& toks) {
    std::vector<float> host;
    host.reserve(toks.size() * h_);
    for (int t : toks) {
      // numeric_domain.h's project embeds a padding row as token 0.
      const std::vector<float> e = numeric::embedRow(stack, t < 0 ? 0 : t, mode, shape);
      host.insert(host.end(), e.begin(), e.end());
    }
    return host;
  };
  std::vector<float> first = rowsOf(0, s_.rows.tokens(RowKind::kAttention, rank_));
  // Input-scattered attention: VocabParallelEmbedding skips its TP
  // all-reduce, so this rank starts from its vocab shard's part (the ledger's
  // embed(), numeric::embedShardOwner): zeros where another shard holds the token.
  const ParallelConfig& cfg = s_.plan.source.config;
  if (s_.plan.source.flags.input_scattered && cfg.tp > 1) {
    const std::vector<int>& toks = s_.rows.tokens(RowKind::kAttention, rank_);
    for (size_t i = 0; i < toks.size(); ++i) {
      if (toks[i] < 0 || numeric::embedShardOwner(toks[i], cfg.tp) == rank_ % cfg.tp) continue;
      std::fill(first.begin() + i * h_, first.begin() + (i + 1) * h_, 0.0f);
    }
  }
  auto e0 = upload(first);
  if (!e0) return e0.status();
  embed0_ = std::move(*e0);
  // The MTP projection adds stack s's embedding to whatever rows the hidden
  // state is on at that op; prepare every layout it could be on.
  std::set<int> projected;
  for (const Op& op : ops_) {
    if (op.kind == OpKind::kCompute && op.stage < 0) projected.insert(op.stack);
  }
  for (int stack : projected) {
    for (RowKind kind :
         {RowKind::kAttention, RowKind::kLocal, RowKind::kDispatched, RowKind::kFull}) {
      for (DpPadding pad : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
        if (kind != RowKind::kFull && pad != s_.plan.padding) continue;
        auto a = upload(rowsOf(stack, s_.fullMap(pad).tokens(kind, rank_)));
        if (!a) return a.status();
        project_embed_.emplace(std::make_tuple(stack, kind, pad), std::move(*a));
      }
    }
  }
  return Status::ok();
}

Status RankExecutor::setUpPeers() {
  auto abort = PinnedFlag::create();
  if (!abort) return abort.status();
  peer_abort_.emplace(std::move(*abort));
  peer_abort_host_ = peer_abort_->host();
  for (PeerGroup& g : s_.peer_groups) {
    const auto it = std::find(g.members.begin(), g.members.end(), rank_);
    if (!g.fused || it == g.members.end()) continue;
    const auto me = static_cast<std::size_t>(it - g.members.begin());
    for (int m : g.members) {
      if (m == rank_) continue;
      // Peer access is per process: a second run finds it enabled.
      const cudaError_t e = cudaDeviceEnablePeerAccess(m, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // not sticky, but a later launch check would read it
      } else {
        SEAM_CUDA_CHECK(e);
      }
    }
    auto signals = DeviceArray<kernels::PeerSignals>::create(1);
    if (!signals) return signals.status();
    SEAM_CUDA_CHECK(cudaMemset(signals->get(), 0, sizeof(kernels::PeerSignals)));
    const std::size_t floats =
        kernels::peerWorkspaceFloats(static_cast<int>(g.members.size()), g.slot_elems);
    auto workspace = DeviceArray<float>::create(floats);
    if (!workspace) return workspace.status();
    SEAM_CUDA_CHECK(
        cudaMemset(workspace->get(), 0, floats * sizeof(float)));  // LL lines: no call number yet
    g.signals[me] = signals->get();
    g.workspace[me] = workspace->get();
    peer_signals_.push_back(std::move(*signals));
    peer_workspace_.push_back(std::move(*workspace));
  }
  // The zeroed flags must be in place before any peer can signal into them.
  SEAM_CUDA_CHECK(cudaDeviceSynchronize());
  if (!s_.setup_barrier.arriveAndWait(s_.abort)) return aborted();
  for (std::size_t gi = 0; gi < s_.peer_groups.size(); ++gi) {
    const PeerGroup& g = s_.peer_groups[gi];
    const auto it = std::find(g.members.begin(), g.members.end(), rank_);
    if (!g.fused || it == g.members.end()) continue;
    kernels::FusedArAddNormArgs a;
    a.ranks = static_cast<int>(g.members.size());
    a.me = static_cast<int>(it - g.members.begin());
    a.blocks = g.blocks;
    for (int p = 0; p < a.ranks; ++p) {
      a.signals[p] = g.signals[p];
      a.workspace[p] = g.workspace[p];
    }
    a.slot_elems = g.slot_elems;
    a.abort = peer_abort_->device();
    fused_args_.emplace(static_cast<int>(gi), a);
  }
  return Status::ok();
}

}  // namespace seam::backend::detail
