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
      return Status::internal(std::string("NCCL reports ") + ncclGetErrorString(state) +
                              " on rank " + std::to_string(rank_) + ": " + ncclGetLastError(comm));
    }
    if (s_.abort) return aborted();
    publishDeviceProgress();
    std::this_thread::sleep_for(kPollInterval);
  }
}

Status RankExecutor::issued(ncclComm_t comm, ncclResult_t res, const char* call, const char* file,
                            int line) {
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
  const auto idx = static_cast<size_t>(topo.communicatorAxis(axis));
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
  if (auto mode = lane().modeOfCount(count, rank)) return *mode;
  note("rank " + std::to_string(rank_) + ": " + std::string(opName(op.kind)) + " names " +
       std::to_string(count) + " full rows, neither padding mode's size; the plan's mode is used");
  return s_.plan.padding;
}

void RankExecutor::note(std::string text) {
  if (noted_.insert(text).second) notes_.push_back(std::move(text));
}

void RankExecutor::expectLayout(const DeviceRows& b, RowKind kind, int rows, const Op& op,
                                int index) {
  if (b.present && b.kind == kind && b.rows == rows) return;
  if (layout_notes_++ >= kMaxLayoutNotesPerRank) return;
  // The ledger refuses such a plan; the GPU runs it on whatever the rows
  // hold (every buffer has capacity for any op's rows, so nothing is out of bounds).
  note("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (" +
       std::string(opName(op.kind)) + ") expects " + std::string(tensorName(op.tensor)) + " on " +
       std::to_string(rows) + " " + std::string(rowKindName(kind)) + " rows but it holds " +
       (b.present ? std::to_string(b.rows) + " " + std::string(rowKindName(b.kind)) + " rows"
                  : "no value"));
}

Status RankExecutor::copyRows(float* dst, const float* src, int rows) {
  if (rows <= 0 || dst == src) return Status::ok();
  SEAM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytesOf(rows)),
                                  cudaMemcpyDeviceToDevice, stream_->get()));
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
  SEAM_NCCL_ISSUE(g.comm,
                  ncclReduceScatter(in, scratch_.data.get(), static_cast<std::size_t>(chunk) * h_,
                                    ncclFloat, ncclSum, g.comm, stream_->get()));
  return roundIfReal(scratch_.data.get(), chunk);
}

Status RankExecutor::allReduceInPlace(const Group& g, float* p, int rows) {
  if (g.size() <= 1) return Status::ok();  // a group of one: the sum is the value
  recordNccl("all_reduce", static_cast<std::size_t>(rows) * h_);
  SEAM_NCCL_ISSUE(g.comm, ncclAllReduce(p, p, static_cast<std::size_t>(rows) * h_, ncclFloat,
                                        ncclSum, g.comm, stream_->get()));
  return roundIfReal(p, rows);
}

// ---- the run -------------------------------------------------------------------------

Status RankExecutor::resetState() {
  // Every iteration starts on the batch's lane with no half, no branch.
  if (tbo_) activate(Half::kWhole);
  for (int lane = 0; lane < kHalfLanes; ++lane)
    parked_hidden_[lane].present = parked_residual_[lane].present = false;
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
    if (iteration_ == warmup)
      SEAM_CUDA_CHECK(kernels::busy(kWarmClockUs, kernels::kBusyBlocks, stream_->get()));
    const bool gated = iteration_ > 0;
    const std::vector<int>& windows = s_.window_begin;
    for (std::size_t w = 0; w < windows.size() && windows[w] < n; ++w) {
      const int begin = windows[w];
      const int end = w + 1 < windows.size() ? std::min(n, windows[w + 1]) : n;
      if (gated)
        SEAM_CUDA_CHECK(kernels::waitFlag(gate_->device(), ++gate_target_, stream_->get()));
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
    SEAM_CUDA_CHECK(cudaMemcpy(final_host_[k].data(), finals_[k].data.get(),
                               final_host_[k].size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  for (const Snapshot& snap : snapshots_) {
    HostSnapshot h{
        snap.stack, snap.stage, snap.buf->kind, snap.buf->present ? snap.buf->rows : 0, {}};
    h.values.resize(static_cast<size_t>(h.rows) * h_);
    if (!h.values.empty()) {
      SEAM_CUDA_CHECK(cudaMemcpy(h.values.data(), snap.buf->data.get(),
                                 h.values.size() * sizeof(float), cudaMemcpyDeviceToHost));
    }
    snapshots_host_.push_back(std::move(h));
  }
  if (s_.options.graph_replays > 0) {
    if (Status st = runGraphSteps(); !st) return st;
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
