// `seam-gpu bench`'s bare collectives (bench.h): each distinct NCCL call a
// plan's collectives ran as, made bare on the same GPUs, and the one-op
// plan's all-reduce beside a bare one (executor.h's benchAllReduce).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>

#include "bench_timing.h"
#include "kernels.h"
#include "rank_executor.h"
#include "seam/backend/bench.h"
#include "seam/backend/check.h"
#include "seam/backend/raii.h"

namespace seam::backend {

namespace {

using detail::kAborted;
using detail::kGateOpen;
using detail::onThreads;
using detail::rotatingSets;
using detail::SpinBarrier;
using detail::timeGated;

/// Bytes with this pattern read as small nonzero floats (timing on zeros can flatter).
constexpr int kFillByte = 0x3c;

// ---- bare collectives --------------------------------------------------------------

/// The bare call of one member: its buffers (rotating sets), a blocking
/// communicator over the group, warm-up, then `iters` timed calls.
Status bareCollectiveRank(const ncclUniqueId& id, int place, int device, int n,
                          const std::string& call, std::size_t count, int iters,
                          SpinBarrier& barrier, const std::atomic<bool>& abort, int* sets_out,
                          std::vector<double>* us) {
  SEAM_CUDA_CHECK(cudaSetDevice(device));
  auto stream = Stream::create();
  if (!stream) return stream.status();
  // Elements each set's send and receive buffers hold (an all-reduce runs in place).
  const std::size_t send = call == "reduce_scatter" ? count * n : count;
  const std::size_t recv = call == "all_gather" ? count * n : count;
  const bool in_place = call == "all_reduce";
  const std::size_t set_bytes = (send + (in_place ? 0 : recv)) * sizeof(float);
  const int sets = rotatingSets(set_bytes, iters);
  *sets_out = sets;
  std::vector<DeviceArray<float>> sendbuf, recvbuf;
  for (int i = 0; i < sets; ++i) {
    auto a = DeviceArray<float>::create(send);
    if (!a) return a.status();
    SEAM_CUDA_CHECK(cudaMemsetAsync(a->get(), kFillByte, send * sizeof(float), stream->get()));
    sendbuf.push_back(std::move(*a));
    if (in_place) continue;
    auto b = DeviceArray<float>::create(recv);
    if (!b) return b.status();
    recvbuf.push_back(std::move(*b));
  }
  ncclComm_t raw = nullptr;
  SEAM_NCCL_CHECK(ncclCommInitRank(&raw, n, id, place));
  NcclComm comm(raw);
  auto issue = [&](int i) -> Status {
    const int s = i % sets;
    float* in = sendbuf[s].get();
    float* out = in_place ? in : recvbuf[s].get();
    if (call == "all_reduce") {
      SEAM_NCCL_CHECK(ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm.get(), stream->get()));
    } else if (call == "reduce_scatter") {
      SEAM_NCCL_CHECK(
          ncclReduceScatter(in, out, count, ncclFloat, ncclSum, comm.get(), stream->get()));
    } else {
      SEAM_NCCL_CHECK(ncclAllGather(in, out, count, ncclFloat, comm.get(), stream->get()));
    }
    return Status::ok();
  };
  for (int i = 0; i < kBenchWarmup; ++i) {
    if (Status st = issue(i); !st) return st;
  }
  if (Status st = stream->synchronize(); !st) return st;
  if (Status st = timeGated(*stream, iters, barrier, abort, issue, us); !st) return st;
  SEAM_NCCL_CHECK(ncclCommFinalize(comm.get()));
  return comm.destroy();
}

/// A bare all-reduce per rank thread, nccl-tests style: a blocking
/// communicator, warmup, then every timed iteration queued back to back
/// (behind a gate, like the executor's windows, so that both measure device
/// time only) with CUDA events around each. Returns the microseconds of each.
Status bareAllReduceRank(const ncclUniqueId& id, int rank, int world, std::size_t count, int iters,
                         SpinBarrier& barrier, const std::atomic<bool>& abort,
                         std::vector<double>* us) {
  SEAM_CUDA_CHECK(cudaSetDevice(rank));
  auto gate = PinnedFlag::create();
  if (!gate) return gate.status();
  auto stream = Stream::create();
  if (!stream) return stream.status();
  auto buf = DeviceArray<float>::create(count);
  if (!buf) return buf.status();
  SEAM_CUDA_CHECK(cudaMemsetAsync(buf->get(), 0, count * sizeof(float), stream->get()));
  ncclComm_t raw = nullptr;
  SEAM_NCCL_CHECK(ncclCommInitRank(&raw, world, id, rank));
  NcclComm comm(raw);
  for (int i = 0; i < kBenchWarmup; ++i) {
    SEAM_NCCL_CHECK(ncclAllReduce(buf->get(), buf->get(), count, ncclFloat, ncclSum, comm.get(),
                                  stream->get()));
  }
  if (Status st = stream->synchronize(); !st) return st;
  auto events = EventPairs::create(iters);
  if (!events) return events.status();
  const std::vector<Event>& start = events->start;
  const std::vector<Event>& stop = events->stop;
  SEAM_CUDA_CHECK(kernels::waitFlag(gate->device(), 1, stream->get()));
  for (int i = 0; i < iters; ++i) {
    if (Status st = start[i].record(*stream); !st) return st;
    SEAM_NCCL_CHECK(ncclAllReduce(buf->get(), buf->get(), count, ncclFloat, ncclSum, comm.get(),
                                  stream->get()));
    if (Status st = stop[i].record(*stream); !st) return st;
  }
  const bool met = barrier.arriveAndWait(abort);
  gate->store(kGateOpen);
  if (!met) return Status::internal(kAborted);
  if (Status st = stream->synchronize(); !st) return st;
  auto all = events->allMicroseconds();
  if (!all) return all.status();
  *us = std::move(*all);
  SEAM_NCCL_CHECK(ncclCommFinalize(comm.get()));
  return comm.destroy();
}

}  // namespace

Expected<std::vector<CollectiveBench>> benchPlanCollectives(const Plan& plan,
                                                            const GpuRunResult& run, int iters,
                                                            std::vector<std::string>* skipped) {
  if (iters < 1) return Status::invalid("--iters " + std::to_string(iters) + " is not positive");
  const Topology topo(plan.source.config);
  // (op, members, call, count, bytes) -> per rank, the medians of its occurrences.
  using Key = std::tuple<std::string, std::vector<int>, std::string, std::int64_t, std::int64_t,
                         std::string>;
  std::map<Key, std::map<int, std::vector<double>>> seen;
  std::map<std::string, int> skip_counts;
  for (const OpTiming& t : run.timings) {
    const Op& op = plan.ranks[t.rank][t.op_index];
    if (!communicates(op.kind) || t.group_size < 2 ||
        (t.path == ArAddNormPath::kFused || t.path == ArAddNormPath::kFusedLl))
      continue;
    if (op.kind == OpKind::kArAddNorm) {  // its time includes the add+norm kernel
      ++skip_counts["ar_add_norm (NCCL all-reduce + add+norm; see the fused table)"];
      continue;
    }
    if (t.nccl_call != "all_reduce" && t.nccl_call != "reduce_scatter" &&
        t.nccl_call != "all_gather") {
      ++skip_counts[std::string(opName(op.kind)) + " (runs as " +
                    (t.nccl_call.empty() ? "several calls" : t.nccl_call) + ")"];
      continue;
    }
    const std::string group =
        std::string(axisName(op.groupAxis())) + "/" + std::to_string(t.group_size);
    Key key{std::string(opName(op.kind)),
            topo.groupOf(op.groupAxis(), t.rank),
            t.nccl_call,
            t.nccl_count,
            t.bytes,
            group};
    seen[key][t.rank].push_back(t.median_us);
  }
  for (const auto& [what, n] : skip_counts) skipped->push_back(std::to_string(n) + "x " + what);

  std::vector<CollectiveBench> out;
  for (const auto& [key, per_rank] : seen) {
    CollectiveBench b;
    std::tie(b.op, b.members, b.nccl_call, b.nccl_count, b.bytes, b.group) = key;
    for (const auto& [rank, medians] : per_rank) {
      b.occurrences = std::max(b.occurrences, static_cast<int>(medians.size()));
      const TimingSummary s = summarizeTimes(medians);
      if (s.median > b.plan.median) b.plan = s;
    }
    const int n = static_cast<int>(b.members.size());
    ncclUniqueId id;
    SEAM_NCCL_CHECK(ncclGetUniqueId(&id));
    SpinBarrier barrier(n);
    std::atomic<bool> abort{false};
    std::vector<std::vector<double>> us(n);
    std::vector<int> sets(n, 1);
    if (Status st = onThreads(n, abort,
                              [&](int p) {
                                return bareCollectiveRank(id, p, b.members[p], n, b.nccl_call,
                                                          static_cast<std::size_t>(b.nccl_count),
                                                          iters, barrier, abort, &sets[p], &us[p]);
                              });
        !st) {
      return st;
    }
    for (int p = 0; p < n; ++p) {
      const TimingSummary s = summarizeTimes(us[p]);
      if (s.median > b.bare.median) b.bare = s;
    }
    b.rotating_sets = sets.front();
    const OpKind kind = b.nccl_call == "all_reduce"       ? OpKind::kAllReduce
                        : b.nccl_call == "reduce_scatter" ? OpKind::kReduceScatter
                                                          : OpKind::kAllGather;
    const double factor = busBandwidthFactor(kind, n);
    b.plan_algbw = algBandwidthGBs(b.bytes, b.plan.median);
    b.bare_algbw = algBandwidthGBs(b.bytes, b.bare.median);
    b.plan_busbw = b.plan_algbw * factor;
    b.bare_busbw = b.bare_algbw * factor;
    out.push_back(std::move(b));
  }
  return out;
}

Expected<AllReduceBench> benchAllReduce(std::int64_t bytes, int iters) {
  if (bytes < 4 || bytes % 4 != 0) {
    return Status::invalid("--bytes " + std::to_string(bytes) +
                           " is not a positive multiple of 4 (fp32 elements)");
  }
  if (iters < 1) return Status::invalid("--iters " + std::to_string(iters) + " is not positive");
  auto devices = listDevices();
  if (!devices) return devices.status();
  const int n = static_cast<int>(devices->size());
  if (n == 0) return Status::invalid("bench-allreduce needs a GPU, none visible");
  const std::size_t count = static_cast<std::size_t>(bytes / 4);

  AllReduceBench bench;
  bench.devices = n;
  bench.bytes = bytes;
  bench.iters = iters;

  // Bare NCCL: per rank, the median of its iterations; the slowest rank counts.
  ncclUniqueId id;
  SEAM_NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<std::vector<double>> us(n);
  std::vector<Status> status(n);
  SpinBarrier barrier(n);
  std::atomic<bool> abort{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      status[r] = bareAllReduceRank(id, r, n, count, iters, barrier, abort, &us[r]);
      if (!status[r]) abort = true;  // the others stop waiting for this rank at the barrier
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : status) {
    if (!st && st.message() != kAborted) return st;
  }
  for (int r = 0; r < n; ++r)
    bench.bare_median_us = std::max(bench.bare_median_us, summarizeTimes(us[r]).median);

  // The same all-reduce as the only op of a plan: one token whose row is the
  // whole message, on the attention rows of a tp = n group.
  Plan plan;
  plan.policy = "bench";
  plan.source.model.name = "bench-allreduce";
  plan.source.config = ParallelConfig{.tp = n};
  plan.source.batch.tokens = {1};
  Op op;
  op.kind = OpKind::kAllReduce;
  op.tensor = Tensor::kHidden;
  op.axis = static_cast<std::int8_t>(Axis::kTp);
  op.rows_in = op.rows_out = Rows{RowKind::kAttention, 1};
  op.bytes = bytes;
  plan.ranks.assign(n, {op});
  GpuRunOptions options;
  options.shape = numeric::Shape{.hidden = static_cast<int>(count), .inner = 1};
  options.warmup = kBenchWarmup;
  options.iters = iters;
  if (count > static_cast<std::size_t>(INT32_MAX))
    return Status::invalid("--bytes is too large for one row");
  auto run = runPlanOnGpus(plan, options);
  if (!run) return run.status();
  if (run->hung) return Status::internal("the one-op plan hung: " + run->hang_report);
  for (const OpTiming& t : run->timings)
    bench.plan_median_us = std::max(bench.plan_median_us, t.median_us);

  const double factor = busBandwidthFactor(OpKind::kAllReduce, n);
  bench.bare_busbw = algBandwidthGBs(bytes, bench.bare_median_us) * factor;
  bench.plan_busbw = algBandwidthGBs(bytes, bench.plan_median_us) * factor;
  return bench;
}

}  // namespace seam::backend
