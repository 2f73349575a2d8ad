// One rank's graph steps (GpuRunOptions::graph_replays, rank_executor.h):
// after the timed iterations, eager steps launched as the host goes, one
// whole step captured in a CUDA graph (its NCCL calls included), replays of
// it, the kernels of a replay traced with CUPTI, and the replayed step's
// final rows against the eager ones.
#include <algorithm>
#include <cstring>

#include "rank_executor.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

Status RankExecutor::drain() {
  enqueued_ = completed_ = 0;
  if (Status st = end_->record(*stream_); !st) return st;
  if (Status st = waitIteration(); !st) return st;
  progress_.counter++;
  return Status::ok();
}

Status RankExecutor::runGraphSteps() {
  const int replays = s_.options.graph_replays;
  GraphStep& g = graph_step_;
  g.rank = rank_;
  g.ops = static_cast<int>(ops_.size());
  g.replays = replays;
  for (const auto& v : samples_) g.op_sum_us += v.empty() ? 0.0 : summarizeTimes(v).median;
  auto events = EventPairs::create(replays);
  if (!events) return events.status();
  std::vector<double> eager;
  if (Status st = runEagerSteps(*events, &eager); !st) return st;
  CudaGraph graph(nullptr);
  auto exec = captureStep(&graph);
  if (!exec) return exec.status();
  if (Status st = replayGraph(*exec, *events); !st) return st;
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
  if (Status st = traceReplays(*exec); !st) return st;
  return compareReplayedFinals();
}

Status RankExecutor::runEagerSteps(const EventPairs& events, std::vector<double>* eager) {
  // What a step costs without a graph (host latency included, as an engine sees it).
  const int n = static_cast<int>(ops_.size());
  for (int i = 0; i < kGraphWarmup + s_.options.graph_replays; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    const int slot = std::max(0, i - kGraphWarmup);
    if (Status st = events.start[slot].record(*stream_); !st) return st;
    if (Status st = resetState(); !st) return st;
    for (int k = 0; k < n; ++k) {
      if (Status st = enqueueOp(k, false); !st) return st;
    }
    if (Status st = events.stop[slot].record(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
    if (i < kGraphWarmup) continue;
    auto us = events.microseconds(slot);
    if (!us) return us.status();
    eager->push_back(*us);
  }
  return Status::ok();
}

Expected<GraphExec> RankExecutor::captureStep(CudaGraph* graph) {
  // Thread-local mode: the other ranks' threads go on calling CUDA while this one captures.
  cudaStream_t stream = stream_->get();
  const int n = static_cast<int>(ops_.size());
  SEAM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  Status captured = resetState();
  for (int k = 0; k < n && captured; ++k) captured = enqueueOp(k, false);
  cudaGraph_t raw = nullptr;
  const cudaError_t ended =
      cudaStreamEndCapture(stream, &raw);  // ends the capture whatever happened
  capturing_ = false;
  *graph = CudaGraph(raw);
  if (!captured) return captured;
  SEAM_CUDA_CHECK(ended);
  return GraphExec::instantiate(*graph);
}

Status RankExecutor::replayGraph(const GraphExec& exec, const EventPairs& events) {
  // Not behind a gate: the replays' hundreds of kernels each would fill the
  // stream's queue while the gate holds it, and the host would block in the
  // launch before it could open the gate. A replay's launch costs the host
  // far less than the replay costs the device, so after the first the device
  // never waits for the host; the median is over replays.
  for (int i = 0; i < kGraphWarmup; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    if (Status st = exec.launch(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
  }
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  for (int i = 0; i < s_.options.graph_replays; ++i) {
    if (Status st = events.start[i].record(*stream_); !st) return st;
    if (Status st = exec.launch(*stream_); !st) return st;
    if (Status st = events.stop[i].record(*stream_); !st) return st;
  }
  return drain();
}

Status RankExecutor::traceReplays(const GraphExec& exec) {
  // The sum of the step's kernels on this device, from the last replay (the
  // first ones absorb CUPTI's setup). Not gated: a graph launched just after
  // tracing starts may wait for the device to go idle, and a gate kernel
  // would keep it busy for good.
  GraphStep& g = graph_step_;
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  if (rank_ == s_.first_local_rank) s_.trace.start();
  for (int i = 0; i < kTracedReplays; ++i) {
    if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
    if (Status st = exec.launch(*stream_); !st) return st;
    if (Status st = drain(); !st) return st;
  }
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  if (rank_ == s_.first_local_rank) s_.trace.stop();
  if (!s_.step_barrier.arriveAndWait(s_.abort)) return aborted();
  std::vector<DeviceActivity> mine = s_.trace.recordsOf(device_);
  if (!mine.empty() && mine.size() % kTracedReplays == 0) {
    mine.erase(mine.begin(),
               mine.end() - static_cast<std::ptrdiff_t>(mine.size() / kTracedReplays));
    const DeviceBusy busy = deviceBusy(mine, device_);
    g.kernel_sum_us = busy.sum_us;
    g.kernel_busy_us = busy.busy_us;
    g.kernels = busy.records;
  } else if (s_.trace.error().empty()) {
    note("CUPTI recorded " + std::to_string(mine.size()) + " kernels on device " +
         std::to_string(device_) + " over " + std::to_string(kTracedReplays) +
         " replays: no whole replay to sum");
  }
  if (!s_.trace.error().empty()) note("CUPTI could not trace the replay: " + s_.trace.error());
  return Status::ok();
}

Status RankExecutor::compareReplayedFinals() {
  GraphStep& g = graph_step_;
  g.identical = true;
  for (int k = 0; k < s_.stacks; ++k) {
    if (!final_done_[k]) continue;
    std::vector<float> host(final_host_[k].size());
    if (!host.empty()) {
      SEAM_CUDA_CHECK(cudaMemcpy(host.data(), finals_[k].data.get(), host.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));
    }
    g.identical = g.identical && (host.empty() || std::memcmp(host.data(), final_host_[k].data(),
                                                              host.size() * sizeof(float)) == 0);
  }
  return Status::ok();
}

}  // namespace seam::backend::detail
