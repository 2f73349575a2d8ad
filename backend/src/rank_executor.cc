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

int capacityRows(const SharedRun& s) {
  const Plan& plan = s.plan;
  int cap = 1;
  for (int r = 0; r < plan.world(); ++r) {
    for (int k = 0; k < kRowKindCount; ++k) cap = std::max(cap, s.rows.count(static_cast<RowKind>(k), r));
    cap = std::max(cap, s.other_rows.count(RowKind::kFull, r));
    for (const Op& op : plan.ranks[r]) {
      cap = std::max({cap, op.rows_in.count, op.rows_out.count});
      if (op.kind != OpKind::kAllToAll || !op.hasGroup()) continue;
      const auto& members = s.topo.groupOf(op.groupAxis(), r);
      if (op.rows_out.kind == RowKind::kDispatched) {
        int total = 0;
        for (int m : members) total += s.rows.count(op.rows_in.kind, m);
        cap = std::max(cap, total);
      } else {  // the combine receives one segment from every member
        cap = std::max(cap, static_cast<int>(members.size()) * s.rows.count(op.rows_out.kind, r));
      }
    }
  }
  return cap;
}

void buildWeights(SharedRun& s) {
  std::set<std::pair<int, int>> keys;
  for (const auto& ops : s.plan.ranks) {
    for (const Op& op : ops) {
      const bool norm = op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
      if ((op.kind == OpKind::kCompute && op.stage >= 0) || (norm && s.real())) keys.insert({op.stack, op.stage});
    }
  }
  std::vector<std::pair<int, int>> list(keys.begin(), keys.end());
  std::vector<numeric::StageWeights> built(list.size());
  std::atomic<size_t> next{0};
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 8));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < list.size(); i = next++) {
        built[i] = numeric::stageWeights(list[i].first, list[i].second, s.options.mode, s.options.shape);
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < list.size(); ++i) s.weights.emplace(list[i], std::move(built[i]));
}

// ---- waiting -------------------------------------------------------------------

void RankExecutor::publishDeviceProgress() {
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
  device_ = rank_;  // rank r on device r % count, and the world never exceeds the count
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

  for (size_t i = 0; i < ops_.size(); ++i) {
    auto a = Event::create();
    auto b = Event::create();
    if (!a) return a.status();
    if (!b) return b.status();
    start_.push_back(std::move(*a));
    stop_.push_back(std::move(*b));
  }
  auto end = Event::create();
  if (!end) return end.status();
  end_.emplace(std::move(*end));
  samples_.assign(ops_.size(), {});
  op_bytes_.assign(ops_.size(), 0);
  // The size of the group an op names (its weights' group for compute):
  // what the timing table shows and the bus bandwidth factor needs.
  op_group_size_.clear();
  for (const Op& op : ops_) op_group_size_.push_back(op.hasGroup() ? s_.topo.groupSize(op.groupAxis()) : 1);
  if (Status st = allocate(); !st) return st;
  if (Status st = uploadWeights(); !st) return st;
  if (Status st = uploadEmbeddings(); !st) return st;
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
  // Padding rows of the full layout in each mode (the same on every rank of a TP group).
  for (DpPadding mode : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
    const auto& toks = s_.fullMap(mode).tokens(RowKind::kFull, rank_);
    std::vector<int> pad;
    for (int i = 0; i < static_cast<int>(toks.size()); ++i) {
      if (toks[i] == kPaddingRow) pad.push_back(i);
    }
    const int m = static_cast<int>(mode);
    auto a = DeviceArray<int>::create(pad.size());
    if (!a) return a.status();
    padding_rows_[m] = std::move(*a);
    padding_count_[m] = static_cast<int>(pad.size());
    if (!pad.empty()) {
      SEAM_CUDA_CHECK(cudaMemcpy(padding_rows_[m].get(), pad.data(), pad.size() * sizeof(int), cudaMemcpyHostToDevice));
    }
  }
  return Status::ok();
}

Status RankExecutor::uploadWeights() {
  const Plan& plan = s_.plan;
  const int inner = s_.options.shape.inner;
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
      const numeric::ColumnRange cols = numeric::shardColumns(inner, info.shards, j);
      const int c = cols.end - cols.begin;
      const numeric::StageWeights& w = s_.weights.at({op.stack, op.stage});
      std::vector<float> w_in(static_cast<size_t>(h_) * c), w_out(static_cast<size_t>(c) * h_);
      for (int k = 0; k < h_; ++k) {
        std::memcpy(&w_in[static_cast<size_t>(k) * c], &w.w_in[static_cast<size_t>(k) * inner + cols.begin], c * sizeof(float));
      }
      std::memcpy(w_out.data(), &w.w_out[static_cast<size_t>(cols.begin) * h_], w_out.size() * sizeof(float));
      StageShard shard;
      shard.cols = c;
      auto a = upload(w_in);
      if (!a) return a.status();
      auto b = upload(w_out);
      if (!b) return b.status();
      shard.w_in = std::move(*a);
      shard.w_out = std::move(*b);
      shards_.emplace(si, std::move(shard));
      widest = std::max(widest, c);
    }
    const bool norm = op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
    if (norm && s_.real() && !norm_weights_.count({op.stack, op.stage})) {
      auto a = upload(s_.weights.at({op.stack, op.stage}).norm);
      if (!a) return a.status();
      norm_weights_.emplace(std::make_pair(op.stack, op.stage), std::move(*a));
    }
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

// ---- helpers ---------------------------------------------------------------------------

ncclComm_t RankExecutor::commOf(Axis axis) const {
  const Topology& topo = s_.topo;
  if (topo.groupSize(axis) <= 1) return nullptr;
  if (axis != Axis::kPp && axis != Axis::kAttnDp && topo.groupSize(axis) == topo.config().tp) axis = Axis::kTp;
  const auto idx = static_cast<size_t>(axis);
  return idx < axis_comms_.size() ? axis_comms_[idx].get() : nullptr;
}

Group RankExecutor::groupOf(const Op& op) const {
  Group g;
  if (!op.hasGroup()) {
    g.members = {rank_};
    return g;
  }
  g.members = s_.topo.groupOf(op.groupAxis(), rank_);
  g.me = s_.topo.rankIn(op.groupAxis(), rank_);
  g.comm = commOf(op.groupAxis());
  return g;
}

DeviceRows& RankExecutor::bufferOf(Tensor t) {
  if (t == Tensor::kHidden) return hidden_;
  if (t == Tensor::kResidual) return residual_;
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
  if (auto mode = modeOfCount(s_.rows, s_.other_rows, s_.plan.padding, count, rank)) return *mode;
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

Status RankExecutor::allReduceInPlace(const Group& g, float* p, int rows) {
  if (g.size() <= 1) return Status::ok();  // a group of one: the sum is the value
  SEAM_NCCL_ISSUE(g.comm, ncclAllReduce(p, p, static_cast<std::size_t>(rows) * h_, ncclFloat, ncclSum, g.comm,
                                        stream_->get()));
  return roundIfReal(p, rows);
}

// ---- the run -------------------------------------------------------------------------

Status RankExecutor::resetState() {
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
    const bool gated = iteration_ > 0;
    for (int begin = 0; begin < n; begin += kGateWindowOps) {
      if (gated) SEAM_CUDA_CHECK(kernels::waitFlag(gate_->device(), ++gate_target_, stream_->get()));
      for (int i = begin; i < std::min(n, begin + kGateWindowOps); ++i) {
        if (s_.abort) return aborted();
        SEAM_CUDA_CHECK(cudaEventRecord(start_[i].get(), stream_->get()));
        pending_final_ = -1;
        if (Status st = exec(ops_[i], i); !st) return st;
        SEAM_CUDA_CHECK(cudaEventRecord(stop_[i].get(), stream_->get()));
        ++enqueued_;
        if (pending_final_ >= 0) {
          DeviceRows& f = finals_[pending_final_];
          f.setLayout(hidden_);
          if (Status st = copyRows(f.data.get(), hidden_.data.get(), hidden_.rows); !st) return st;
          final_done_[pending_final_] = true;
        }
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
  progress_.finished = true;
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
