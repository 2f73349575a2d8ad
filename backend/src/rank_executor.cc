// One rank of a GPU run (rank_executor.h): setup, the run loop, waiting.
//
// Communicators are non-blocking: every NCCL call returns at once and the
// rank thread polls the communicator and its own CUDA events. That is what
// lets the watchdog end a hung run: each rank thread notices the abort flag
// in its poll loop and aborts its own communicators (ncclCommAbort makes the
// NCCL kernels exit), instead of sitting in a blocking call forever. NCCL
// documents non-blocking communicators as the way to recover from a hang;
// no communicator is ever driven from two threads.
#include "rank_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "kernels.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

std::optional<DpPadding> modeOfCount(const RowMap& rows, const RowMap& other, DpPadding plan_mode, int count,
                                     int rank) {
  if (count == rows.count(RowKind::kFull, rank)) return plan_mode;
  if (count == other.count(RowKind::kFull, rank)) {
    return plan_mode == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
  }
  return std::nullopt;
}

std::vector<LaneRows> laneRowsOf(const Plan& plan, const Topology& topo) {
  std::vector<LaneRows> lanes;
  lanes.reserve(kHalfLanes);
  lanes.emplace_back(topo, plan, plan.source.batch, nullptr);
  for (int lane = 1; !plan.tbo_split.empty() && lane < kHalfLanes; ++lane) {
    const Half half = static_cast<Half>(lane);
    const std::vector<int> first = tboFirstTokens(plan.source.batch, plan.tbo_split, half);
    lanes.emplace_back(topo, plan, tboHalfBatch(plan.source.batch, plan.tbo_split, half), &first);
  }
  return lanes;
}

HalfRows halfRows(const SharedRun& s, int rank, Half half) {
  HalfRows h;
  h.total = s.rows.count(RowKind::kAttention, rank);
  const int lane = static_cast<int>(half);
  if (lane == 0 || lane >= static_cast<int>(s.lanes.size())) {
    h.count = h.total;
    return h;
  }
  h.offset = half == Half::kB ? s.lanes[1].rows.count(RowKind::kAttention, rank) : 0;
  h.count = s.lanes[lane].rows.count(RowKind::kAttention, rank);
  return h;
}

int capacityRows(const SharedRun& s) {
  const Plan& plan = s.plan;
  int cap = 1;
  for (int r = 0; r < plan.world(); ++r) {
    // A half's padded rows may outnumber the batch's (each half is aligned on its own).
    for (const LaneRows& lane : s.lanes) {
      for (int k = 0; k < kRowKindCount; ++k) cap = std::max(cap, lane.rows.count(static_cast<RowKind>(k), r));
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
      const RowMap& rows = s.lanes[std::min<int>(static_cast<int>(op.half), static_cast<int>(s.lanes.size()) - 1)].rows;
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
    if (begin.empty() || ops == kGateWindowOps || (ops > 0 && launches + weight > kGateWindowLaunches)) {
      begin.push_back(static_cast<int>(i));
      ops = launches = 0;
    }
    ++ops;
    launches += weight;
  }
  return begin;
}

void buildWeights(SharedRun& s) {
  s.moe = numeric::moeShape(s.plan.source.model.shape, s.plan.source.config.moe_ep, s.options.shape);
  std::set<std::pair<int, int>> keys;
  for (const auto& ops : s.plan.ranks) {
    for (const Op& op : ops) {
      const bool norm = op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
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
    if (s.isMoe(list[i].first, list[i].second)) s.moe_weights.emplace(list[i], std::move(built_moe[i]));
    s.weights.emplace(list[i], std::move(built[i]));
  }
}

void planPeerGroups(SharedRun& s, const std::vector<DeviceInfo>& devices) {
  std::set<std::vector<int>> groups;
  for (int r = 0; r < s.plan.world(); ++r) {
    for (const Op& op : s.plan.ranks[r]) {
      if (op.kind != OpKind::kArAddNorm || !op.hasGroup() || s.topo.groupSize(op.groupAxis()) < 2) continue;
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
    if (!s.options.fuse_ar_add_norm) why = "fusion off by option";
    else if (s.one_rank_per_process) why = "its members are different processes; the kernel needs them in one";
    else if (static_cast<int>(members.size()) > kernels::kPeerMaxRanks) why = "more members than the kernel's " + std::to_string(kernels::kPeerMaxRanks);
    else if (slot_elems * sizeof(float) > kPeerMaxSlotBytes) why = std::string(mib) + " MiB of rows exceed the workspace slot";
    int min_sms = INT32_MAX;
    for (int a : why.empty() ? members : std::vector<int>{}) {
      min_sms = std::min(min_sms, devices[a].multiprocessors);
      for (int b : members) {
        int can = 0;
        if (a != b && why.empty() && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) {
          why = "GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) + "'s memory";
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
      g.path = "ar_add_norm over [" + ranks + "]: fused one-shot all-reduce + add + RMSNorm over peer memory (grid " +
               std::to_string(g.blocks) + ", slots of " + mib + " MiB)";
    } else {
      g.path = "ar_add_norm over [" + ranks + "]: NCCL all-reduce + add+norm kernel (" + why + ")";
    }
    s.peer_groups.push_back(std::move(g));
  }
}

// ---- waiting -------------------------------------------------------------------

void RankExecutor::publishDeviceProgress() {
  if (capturing_) return;  // no event queries while the stream is captured
  while (completed_ < enqueued_ && cudaEventQuery(stop_[completed_].get()) == cudaSuccess) {
    ++completed_;
    progress_.counter.fetch_add(1, std::memory_order_relaxed);
  }
  progress_.op_index.store(completed_, std::memory_order_relaxed);
}

Status RankExecutor::waitComm(ncclComm_t comm) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    SEAM_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclSuccess) return Status::ok();
    if (state != ncclInProgress) {
      return Status::internal(std::string("NCCL reports ") + ncclGetErrorString(state) + " on rank " +
                              std::to_string(rank_) + ": " + ncclGetLastError(comm));
    }
    if (s_.abort) return aborted();
    publishDeviceProgress();
    std::this_thread::sleep_for(kPollInterval);
  }
}

Status RankExecutor::issued(ncclComm_t comm, ncclResult_t res, const char* call, const char* file, int line) {
  if (res != ncclSuccess && res != ncclInProgress) return ncclStatus(res, call, file, line);
  // A non-blocking communicator must be ready again before the next NCCL
  // call or kernel on its stream.
  return waitComm(comm);
}

Status RankExecutor::asyncError(const NcclComm& c) const {
  ncclResult_t state = ncclSuccess;
  if (!c || ncclCommGetAsyncError(c.get(), &state) != ncclSuccess) return Status::ok();
  if (state == ncclSuccess || state == ncclInProgress) return Status::ok();
  return Status::internal(std::string("NCCL reports ") + ncclGetErrorString(state) + " on rank " +
                          std::to_string(rank_) + ": " + ncclGetLastError(c.get()));
}

Status RankExecutor::waitIteration() {
  int polls = 0;
  for (;;) {
    publishDeviceProgress();
    if (completed_ == enqueued_ && cudaEventQuery(end_->get()) == cudaSuccess) return Status::ok();
    if (s_.abort) return aborted();
    // An asynchronous NCCL error means the remaining ops never complete.
    if (++polls % 1024 == 0) {
      if (Status st = asyncError(world_comm_); !st) return st;
      for (const NcclComm& c : axis_comms_) {
        if (Status st = asyncError(c); !st) return st;
      }
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

// ---- setup -------------------------------------------------------------------------

Expected<DeviceArray<float>> RankExecutor::upload(const std::vector<float>& host) {
  auto a = DeviceArray<float>::create(host.size());
  if (!a) return a.status();
  if (!host.empty()) SEAM_CUDA_CHECK(cudaMemcpy(a->get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
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
  for (const Op& op : ops_) op_group_size_.push_back(op.hasGroup() ? s_.topo.groupSize(op.groupAxis()) : 1);
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
  // group objects do (replay.h's communicatorOf): collectives on aliased
  // axes then keep one call order.
  axis_comms_.resize(kAxisCount);
  const Topology& topo = s_.topo;
  for (Axis axis : kAllAxes) {
    if (topo.groupSize(axis) <= 1 || commOf(axis) != nullptr) continue;
    const bool aliased = axis != Axis::kTp && axis != Axis::kPp && axis != Axis::kAttnDp &&
                         topo.groupSize(axis) == topo.config().tp;
    if (aliased) continue;
    ncclConfig_t child_config = NCCL_CONFIG_INITIALIZER;
    child_config.blocking = 0;
    // A non-blocking split runs as a job of the parent and writes the
    // child's handle only once it completes: into a slot that outlives an abort.
    const int a = static_cast<int>(axis);
    const ncclResult_t r =
        ncclCommSplit(world_comm_.get(), topo.groupIndex(axis, rank_), rank_, &split_slots_[a], &child_config);
    if (r != ncclSuccess && r != ncclInProgress) return ncclStatus(r, "ncclCommSplit", __FILE__, __LINE__);
    if (Status st = waitComm(world_comm_.get()); !st) return st;
    if (!split_slots_[a]) return Status::internal("ncclCommSplit returned no communicator for " + std::string(axisName(axis)));
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
  if (std::any_of(ops_.begin(), ops_.end(), [](const Op& op) { return op.tensor == Tensor::kBranch; })) {
    if (Status st = make(branch_); !st) return st;
  }
  // Snapshots: one per snapshot op, plus the one a collective on an empty
  // snapshot list creates (Replay::bufferOf).
  const auto snaps = std::count_if(ops_.begin(), ops_.end(), [](const Op& op) { return op.kind == OpKind::kSnapshot; });
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
    std::memcpy(&w_in[static_cast<size_t>(k) * c], &w.w_in[static_cast<size_t>(k) * w.inner + cols.begin],
                c * sizeof(float));
  }
  if (c > 0) std::memcpy(w_out.data(), &w.w_out[static_cast<size_t>(cols.begin) * h_], w_out.size() * sizeof(float));
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
      if (si < 0) return Status::invalid("rank " + std::to_string(rank_) + " computes stage " + std::to_string(op.stage) +
                                         " of stack " + std::to_string(op.stack) + ", which the plan does not have");
      if (shards_.count(si)) continue;
      // The shard comes from the stage's real weight split, not from the op
      // (Replay::compute): a plan cannot change where the weights live.
      const StageInfo& info = plan.stages[si];
      const int j = info.weight_axis == kNoAxis ? 0 : s_.topo.rankIn(static_cast<Axis>(info.weight_axis), rank_);
      const numeric::StageWeights& w = s_.weights.at({op.stack, op.stage});
      const bool moe = s_.isMoe(op.stack, op.stage);
      const numeric::MoeSlice slice = numeric::moeSlice(s_.moe, j, info.shards, plan.source.config.moe_ep);
      // A MoE stage's dense part is its shared expert's slice.
      auto shard = uploadSlice(w, moe ? slice.shared_cols : numeric::shardColumns(w.inner, info.shards, j));
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
    const bool norm = op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
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
  auto e0 = upload(rowsOf(0, s_.rows.tokens(RowKind::kAttention, rank_)));
  if (!e0) return e0.status();
  embed0_ = std::move(*e0);
  // The MTP projection adds stack s's embedding to whatever rows the hidden
  // state is on at that op; prepare every layout it could be on.
  std::set<int> projected;
  for (const Op& op : ops_) {
    if (op.kind == OpKind::kCompute && op.stage < 0) projected.insert(op.stack);
  }
  for (int stack : projected) {
    for (RowKind kind : {RowKind::kAttention, RowKind::kLocal, RowKind::kDispatched, RowKind::kFull}) {
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

int RankExecutor::peerGroupOf(const std::vector<int>& members) const {
  for (std::size_t i = 0; i < s_.peer_groups.size(); ++i) {
    if (s_.peer_groups[i].members == members) return static_cast<int>(i);
  }
  return -1;
}

void RankExecutor::recordNccl(const char* call, std::size_t count) {
  if (iteration_ != 0 || capturing_) return;
  NcclCall& c = op_nccl_[current_op_];
  if (c.calls++ == 0) {
    c.call = call;
    c.count = static_cast<std::int64_t>(count);
  } else if (c.call != call || c.count != static_cast<std::int64_t>(count)) {
    c.call.clear();  // several different calls: no one bare call matches the op
    c.count = 0;
  }
}

// ---- helpers ---------------------------------------------------------------------------

ncclComm_t RankExecutor::commOf(Axis axis) const {
  const Topology& topo = s_.topo;
  if (topo.groupSize(axis) <= 1) return nullptr;
  if (axis != Axis::kPp && axis != Axis::kAttnDp && topo.groupSize(axis) == topo.config().tp) axis = Axis::kTp;
  const auto idx = static_cast<size_t>(axis);
  return idx < axis_comms_.size() ? axis_comms_[idx].get() : nullptr;
}

Group RankExecutor::groupOf(const Op& op) const {
  if (!op.hasGroup()) {
    Group g;
    g.members = {rank_};
    return g;
  }
  return groupOnAxis(op.groupAxis());
}

Group RankExecutor::groupOnAxis(Axis axis) const {
  Group g;
  g.members = s_.topo.groupOf(axis, rank_);
  g.me = s_.topo.rankIn(axis, rank_);
  g.comm = commOf(axis);
  return g;
}

DeviceRows& RankExecutor::bufferOf(Tensor t) {
  if (t == Tensor::kHidden) return hidden_;
  if (t == Tensor::kResidual) return residual_;
  if (t == Tensor::kBranch) return branch_;
  if (snapshots_.empty()) {  // a collective on a snapshot before any was taken (Replay::bufferOf)
    DeviceRows& b = snapshot_pool_[0];
    b.present = false;
    b.kind = RowKind::kNone;
    b.rows = 0;
    snapshots_.push_back({0, -1, &b});
  }
  return *snapshots_.back().buf;
}

DpPadding RankExecutor::fullModeOf(const Op& op, int count, int rank) {
  if (auto mode = modeOfCount(rowMap(), lane().other_rows, s_.plan.padding, count, rank)) return *mode;
  note("rank " + std::to_string(rank_) + ": " + std::string(opName(op.kind)) + " names " + std::to_string(count) +
       " full rows, neither padding mode's size; the plan's mode is used");
  return s_.plan.padding;
}

void RankExecutor::note(std::string text) {
  if (noted_.insert(text).second) notes_.push_back(std::move(text));
}

void RankExecutor::expectLayout(const DeviceRows& b, RowKind kind, int rows, const Op& op, int index) {
  if (b.present && b.kind == kind && b.rows == rows) return;
  if (layout_notes_++ >= kMaxLayoutNotesPerRank) return;
  // The ledger refuses such a plan; the GPU runs it on whatever the rows
  // hold (every buffer has capacity for any op's rows, so nothing is out of bounds).
  note("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (" + std::string(opName(op.kind)) +
       ") expects " + std::string(tensorName(op.tensor)) + " on " + std::to_string(rows) + " " +
       std::string(rowKindName(kind)) + " rows but it holds " +
       (b.present ? std::to_string(b.rows) + " " + std::string(rowKindName(b.kind)) + " rows" : "no value"));
}

Status RankExecutor::copyRows(float* dst, const float* src, int rows) {
  if (rows <= 0 || dst == src) return Status::ok();
  SEAM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytesOf(rows)), cudaMemcpyDeviceToDevice,
                                  stream_->get()));
  return Status::ok();
}

Status RankExecutor::zeroRows(float* dst, int rows) {
  if (rows <= 0) return Status::ok();
  SEAM_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(bytesOf(rows)), stream_->get()));
  return Status::ok();
}

Status RankExecutor::roundIfReal(float* p, int rows) {
  if (!s_.real()) return Status::ok();
  SEAM_CUDA_CHECK(kernels::roundBf16(p, static_cast<std::size_t>(rows) * h_, stream_->get()));
  return Status::ok();
}

Status RankExecutor::reduceScatterChunks(const Group& g, const float* in, int chunk) {
  recordNccl("reduce_scatter", static_cast<std::size_t>(chunk) * h_);
  SEAM_NCCL_ISSUE(g.comm, ncclReduceScatter(in, scratch_.data.get(), static_cast<std::size_t>(chunk) * h_, ncclFloat,
                                            ncclSum, g.comm, stream_->get()));
  return roundIfReal(scratch_.data.get(), chunk);
}

Status RankExecutor::allReduceInPlace(const Group& g, float* p, int rows) {
  if (g.size() <= 1) return Status::ok();  // a group of one: the sum is the value
  recordNccl("all_reduce", static_cast<std::size_t>(rows) * h_);
  SEAM_NCCL_ISSUE(g.comm, ncclAllReduce(p, p, static_cast<std::size_t>(rows) * h_, ncclFloat, ncclSum, g.comm,
                                        stream_->get()));
  return roundIfReal(p, rows);
}

// ---- the run -------------------------------------------------------------------------

Status RankExecutor::resetState() {
  // Every iteration starts on the batch's lane with no half, no branch.
  if (tbo_) activate(Half::kWhole);
  for (int lane = 0; lane < kHalfLanes; ++lane) parked_hidden_[lane].present = parked_residual_[lane].present = false;
  branch_.present = false;
  // The embedding: complete on attention rows (VocabParallelEmbedding reduces itself).
  hidden_.present = true;
  hidden_.kind = RowKind::kAttention;
  hidden_.rows = s_.rows.count(RowKind::kAttention, rank_);
  residual_.present = false;
  residual_.kind = RowKind::kNone;
  residual_.rows = 0;
  snapshots_.clear();
  snapshots_taken_ = 0;
  final_done_.assign(s_.stacks, false);
  return copyRows(hidden_.data.get(), embed0_.get(), hidden_.rows);
}

Status RankExecutor::enqueueOp(int i, bool timed) {
  if (s_.abort) return aborted();
  if (timed) SEAM_CUDA_CHECK(cudaEventRecord(start_[i].get(), stream_->get()));
  pending_final_ = -1;
  current_op_ = i;
  if (Status st = exec(ops_[i], i); !st) return st;
  if (timed) {
    SEAM_CUDA_CHECK(cudaEventRecord(stop_[i].get(), stream_->get()));
    ++enqueued_;
  }
  if (pending_final_ >= 0) {
    DeviceRows& f = finals_[pending_final_];
    f.setLayout(hidden_);
    if (Status st = copyRows(f.data.get(), hidden_.data.get(), hidden_.rows); !st) return st;
    final_done_[pending_final_] = true;
  }
  return Status::ok();
}

Status RankExecutor::run() {
  // Host latency must not count as device time: an op's events measure what
  // the device spent on it only if the op was already queued when the device
  // got to it. So, after the first iteration (which also establishes NCCL's
  // connections), each window of ops is queued behind a gate, the ranks meet,
  // and the gates open together: the device then runs the window back to back.
  const int warmup = s_.options.warmup;
  const int total = warmup + s_.options.iters;
  const int n = static_cast<int>(ops_.size());
  for (iteration_ = 0; iteration_ < total; ++iteration_) {
    progress_.iteration = iteration_;
    enqueued_ = completed_ = 0;
    progress_.op_index = 0;
    if (Status st = resetState(); !st) return st;
    if (iteration_ == warmup) SEAM_CUDA_CHECK(kernels::busy(kWarmClockUs, kernels::kBusyBlocks, stream_->get()));
    const bool gated = iteration_ > 0;
    const std::vector<int>& windows = s_.window_begin;
    for (std::size_t w = 0; w < windows.size() && windows[w] < n; ++w) {
      const int begin = windows[w];
      const int end = w + 1 < windows.size() ? std::min(n, windows[w + 1]) : n;
      if (gated) SEAM_CUDA_CHECK(kernels::waitFlag(gate_->device(), ++gate_target_, stream_->get()));
      for (int i = begin; i < end; ++i) {
        if (Status st = enqueueOp(i, true); !st) return st;
      }
      if (gated) {
        if (s_.barrier_windows && !s_.window_barrier.arriveAndWait(s_.abort)) return aborted();
        gate_->store(gate_target_);
      }
    }
    if (Status st = end_->record(*stream_); !st) return st;
    if (Status st = waitIteration(); !st) return st;
    if (iteration_ >= warmup) {
      for (size_t i = 0; i < ops_.size(); ++i) {
        auto ms = stop_[i].elapsedSince(start_[i]);
        if (!ms) return ms.status();
        samples_[i].push_back(static_cast<double>(*ms) * 1e3);
      }
    }
  }
  // Every op has completed: the copies below cannot wait on a hung kernel.
  for (int k = 0; k < s_.stacks; ++k) {
    if (!final_done_[k]) continue;
    final_host_[k].resize(static_cast<size_t>(finals_[k].rows) * h_);
    SEAM_CUDA_CHECK(cudaMemcpy(final_host_[k].data(), finals_[k].data.get(), final_host_[k].size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
  }
  for (const Snapshot& snap : snapshots_) {
    HostSnapshot h{snap.stack, snap.stage, snap.buf->kind, snap.buf->present ? snap.buf->rows : 0, {}};
    h.values.resize(static_cast<size_t>(h.rows) * h_);
    if (!h.values.empty()) {
      SEAM_CUDA_CHECK(cudaMemcpy(h.values.data(), snap.buf->data.get(), h.values.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));
    }
    snapshots_host_.push_back(std::move(h));
  }
  if (s_.options.graph_replays > 0) {
    if (Status st = runGraphSteps(); !st) return st;
  }
  progress_.finished = true;
  return Status::ok();
}

Status RankExecutor::runGraphSteps() {
  const int replays = s_.options.graph_replays;
  const int n = static_cast<int>(ops_.size());
  cudaStream_t stream = stream_->get();
  GraphStep& g = graph_step_;
  g.rank = rank_;
  g.ops = n;
  g.replays = replays;
  for (const auto& v : samples_) g.op_sum_us += v.empty() ? 0.0 : summarizeTimes(v).median;
  auto events = EventPairs::create(replays);
  if (!events) return events.status();
  const std::vector<Event>& start = events->start;
  const std::vector<Event>& stop = events->stop;
  // Waits for what is queued and lets the watchdog see the step complete.
  auto drain = [&]() -> Status {
    enqueued_ = completed_ = 0;
    if (Status st = end_->record(*stream_); !st) return st;
    if (Status st = waitIteration(); !st) return st;
    progress_.counter++;
    return Status::ok();
  };

  // 1. Eager steps, each op launched as the host gets to it: what a step
  // costs without a graph (host latency included, as an engine sees it).
  std::vector<double> eager;
  for (int i = 0; i < kGraphWarmup + replays; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    const int slot = std::max(0, i - kGraphWarmup);
    if (Status st = start[slot].record(*stream_); !st) return st;
    if (Status st = resetState(); !st) return st;
    for (int k = 0; k < n; ++k) {
      if (Status st = enqueueOp(k, false); !st) return st;
    }
    if (Status st = stop[slot].record(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
    if (i < kGraphWarmup) continue;
    auto us = events->microseconds(slot);
    if (!us) return us.status();
    eager.push_back(*us);
  }

  // 2. Capture one whole step, NCCL calls included. Thread-local mode: the
  // other ranks' threads go on calling CUDA while this one captures.
  SEAM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  Status captured = resetState();
  for (int k = 0; k < n && captured; ++k) captured = enqueueOp(k, false);
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);  // ends the capture whatever happened
  capturing_ = false;
  CudaGraph graph(raw);
  if (!captured) return captured;
  SEAM_CUDA_CHECK(ended);
  auto exec = GraphExec::instantiate(graph);
  if (!exec) return exec.status();

  // 3. Replays: warm-up, then back to back from a common start. Not behind
  // a gate: the replays' hundreds of kernels each would fill the stream's
  // queue while the gate holds it, and the host would block in the launch
  // before it could open the gate. A replay's launch costs the host far less
  // than the replay costs the device, so after the first the device never
  // waits for the host; the median is over replays.
  for (int i = 0; i < kGraphWarmup; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    if (Status st = exec->launch(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
  }
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  for (int i = 0; i < replays; ++i) {
    if (Status st = start[i].record(*stream_); !st) return st;
    if (Status st = exec->launch(*stream_); !st) return st;
    if (Status st = stop[i].record(*stream_); !st) return st;
  }
  if (Status st = drain(); !st) return st;
  auto replayed = events->allMicroseconds();
  if (!replayed) return replayed.status();
  const TimingSummary e = summarizeTimes(eager);
  const TimingSummary r = summarizeTimes(*replayed);
  g.eager_median_us = e.median;
  g.eager_p10_us = e.p10;
  g.eager_p90_us = e.p90;
  g.graph_median_us = r.median;
  g.graph_p10_us = r.p10;
  g.graph_p90_us = r.p90;

  // 4. kTracedReplays more replays while CUPTI records every kernel, copy
  // and memset: the sum of the step's kernels on this device, from the last
  // replay (the first ones absorb CUPTI's setup). Not gated: a graph launched
  // just after tracing starts may wait for the device to go idle, and a gate
  // kernel would keep it busy for good.
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  if (rank_ == s_.first_local_rank) s_.trace.start();
  for (int i = 0; i < kTracedReplays; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    if (Status st = exec->launch(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
  }
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  if (rank_ == s_.first_local_rank) s_.trace.stop();
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  std::vector<DeviceActivity> mine = s_.trace.recordsOf(device_);
  if (!mine.empty() && mine.size() % kTracedReplays == 0) {
    mine.erase(mine.begin(), mine.end() - static_cast<std::ptrdiff_t>(mine.size() / kTracedReplays));
    const DeviceBusy busy = deviceBusy(mine, device_);
    g.kernel_sum_us = busy.sum_us;
    g.kernel_busy_us = busy.busy_us;
    g.kernels = busy.records;
  } else if (s_.trace.error().empty()) {
    note("CUPTI recorded " + std::to_string(mine.size()) + " kernels on device " + std::to_string(device_) +
         " over " + std::to_string(kTracedReplays) + " replays: no whole replay to sum");
  }
  if (!s_.trace.error().empty()) note("CUPTI could not trace the replay: " + s_.trace.error());

  // 5. The replayed step's final rows against the eager timed iterations'.
  g.identical = true;
  for (int k = 0; k < s_.stacks; ++k) {
    if (!final_done_[k]) continue;
    std::vector<float> host(final_host_[k].size());
    if (!host.empty()) {
      SEAM_CUDA_CHECK(cudaMemcpy(host.data(), finals_[k].data.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    }
    g.identical = g.identical && (host.empty() || std::memcmp(host.data(), final_host_[k].data(),
                                                             host.size() * sizeof(float)) == 0);
  }
  return Status::ok();
}

Status RankExecutor::finalizeComms() {
  // Children first, then the world they were split from; the same order on
  // every rank. Finalize is collective, so it is polled like any NCCL call.
  std::vector<NcclComm*> comms;
  for (auto& c : axis_comms_) {
    if (c) comms.push_back(&c);
  }
  if (world_comm_) comms.push_back(&world_comm_);
  for (NcclComm* c : comms) {
    SEAM_NCCL_ISSUE(c->get(), ncclCommFinalize(c->get()));
    if (Status st = c->destroy(); !st) return st;
  }
  return Status::ok();
}

}  // namespace seam::backend::detail
