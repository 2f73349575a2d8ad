// `seam-gpu bench` (bench.h): bare NCCL calls matching a plan's collectives,
// and the fused all-reduce + add + RMSNorm kernel against its unfused twin.
// One host thread per GPU, as the executor runs; every timed sample is a
// batch of calls queued behind a gate that all ranks open together, so the
// events measure device time and the ranks start aligned.
#include "seam/backend/bench.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "activity_trace.h"
#include "handles.h"
#include "kernels.h"
#include "peer_kernels.h"
#include "rank_executor.h"
#include "seam/backend/check.h"
#include "seam/backend/raii.h"
#include "seam/sim/numeric_executor.h"
#include "seam/sim/rows.h"

namespace seam::backend {

namespace {

using detail::kAborted;
using detail::kGateOpen;
using detail::SpinBarrier;

/// Buffer sets to cycle through so that one pass over them is at least
/// kRotateL2Multiple times the L2 (no more sets than timed calls).
int rotatingSets(std::size_t set_bytes, int iters) {
  int device = 0;
  int l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    l2 = 64 << 20;
  }
  const std::size_t want = static_cast<std::size_t>(kRotateL2Multiple) * static_cast<std::size_t>(l2);
  const std::size_t sets = (want + set_bytes - 1) / std::max<std::size_t>(set_bytes, 1);
  return static_cast<int>(std::clamp<std::size_t>(sets, 1, static_cast<std::size_t>(std::max(iters, 1))));
}

/// `iters` calls of `launch(i)` on `stream`, queued behind a gate; the ranks
/// meet at `barrier`, then each opens its gate. CUDA events around each call.
/// The device is kept busy for kWarmClockUs first (kernels::busy).
Status timeGated(const Stream& stream, int iters, SpinBarrier& barrier, const std::atomic<bool>& abort,
                 const std::function<Status(int)>& launch, std::vector<double>* us) {
  auto gate = PinnedFlag::create();
  if (!gate) return gate.status();
  auto events = EventPairs::create(iters);
  if (!events) return events.status();
  const std::vector<Event>& start = events->start;
  const std::vector<Event>& stop = events->stop;
  SEAM_CUDA_CHECK(kernels::busy(kWarmClockUs, kernels::kBusyBlocks, stream.get()));
  SEAM_CUDA_CHECK(kernels::waitFlag(gate->device(), 1, stream.get()));
  Status queued;
  for (int i = 0; i < iters && queued; ++i) {
    queued = start[i].record(stream);
    if (queued) queued = launch(i);
    if (queued) queued = stop[i].record(stream);
  }
  // Open the gate whatever happened: the stream must drain before the flag is freed.
  const bool met = queued && barrier.arriveAndWait(abort);
  gate->store(kGateOpen);
  if (Status st = stream.synchronize(); !st) return st;
  if (!queued) return queued;
  if (!met) return Status::internal(kAborted);
  auto all = events->allMicroseconds();
  if (!all) return all.status();
  *us = std::move(*all);
  return Status::ok();
}

/// Runs `body(place)` on one thread per member; the first real failure wins
/// (a member that gives up because another failed reports kAborted).
Status onThreads(int n, std::atomic<bool>& abort, const std::function<Status(int)>& body) {
  std::vector<Status> status(n);
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      try {
        status[p] = body(p);
      } catch (const std::exception& e) {
        status[p] = Status::internal(std::string("bench thread: ") + e.what());
      }
      if (!status[p]) abort = true;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : status) {
    if (!st && st.message() != kAborted) return st;
  }
  for (const Status& st : status) {
    if (!st) return st;
  }
  return Status::ok();
}

/// Bytes with this pattern read as small nonzero floats (timing on zeros can flatter).
constexpr int kFillByte = 0x3c;

// ---- bare collectives --------------------------------------------------------------

/// The bare call of one member: its buffers (rotating sets), a blocking
/// communicator over the group, warm-up, then `iters` timed calls.
Status bareCollectiveRank(const ncclUniqueId& id, int place, int device, int n, const std::string& call,
                          std::size_t count, int iters, SpinBarrier& barrier, const std::atomic<bool>& abort,
                          int* sets_out, std::vector<double>* us) {
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
      SEAM_NCCL_CHECK(ncclReduceScatter(in, out, count, ncclFloat, ncclSum, comm.get(), stream->get()));
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

}  // namespace

Expected<std::vector<CollectiveBench>> benchPlanCollectives(const Plan& plan, const GpuRunResult& run, int iters,
                                                            std::vector<std::string>* skipped) {
  if (iters < 1) return Status::invalid("--iters " + std::to_string(iters) + " is not positive");
  const Topology topo(plan.source.config);
  // (op, members, call, count, bytes) -> per rank, the medians of its occurrences.
  using Key = std::tuple<std::string, std::vector<int>, std::string, std::int64_t, std::int64_t, std::string>;
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
    if (t.nccl_call != "all_reduce" && t.nccl_call != "reduce_scatter" && t.nccl_call != "all_gather") {
      ++skip_counts[std::string(opName(op.kind)) + " (runs as " + (t.nccl_call.empty() ? "several calls" : t.nccl_call) + ")"];
      continue;
    }
    const std::string group = std::string(axisName(op.groupAxis())) + "/" + std::to_string(t.group_size);
    Key key{std::string(opName(op.kind)), topo.groupOf(op.groupAxis(), t.rank), t.nccl_call, t.nccl_count, t.bytes, group};
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
    if (Status st = onThreads(n, abort, [&](int p) {
          return bareCollectiveRank(id, p, b.members[p], n, b.nccl_call, static_cast<std::size_t>(b.nccl_count), iters,
                                    barrier, abort, &sets[p], &us[p]);
        });
        !st) {
      return st;
    }
    for (int p = 0; p < n; ++p) {
      const TimingSummary s = summarizeTimes(us[p]);
      if (s.median > b.bare.median) b.bare = s;
    }
    b.rotating_sets = sets.front();
    const OpKind kind = b.nccl_call == "all_reduce" ? OpKind::kAllReduce
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

// ---- the fused kernel against NCCL + add+norm ---------------------------------------

namespace {

/// What the members of the fused benchmark share.
struct FusedShared {
  int n = 0;
  int blocks = 0;
  std::size_t slot_elems = 0;
  PeerProtocol protocol = PeerProtocol::kAuto;
  std::vector<kernels::PeerSignals*> signals;
  std::vector<float*> workspace;
  ncclUniqueId id{};
  SpinBarrier barrier;
  std::atomic<bool> abort{false};
  detail::SharedTrace trace;  ///< member 0 starts and stops it
  explicit FusedShared(int members) : n(members), signals(members), workspace(members), barrier(members) {}
};

/// One size's result on one member.
struct FusedSample {
  std::vector<double> fused, unfused, nccl;
  std::vector<double> fused_kernels, unfused_kernels, nccl_kernels;
  int sets = 1;
  OutputDiff exact, real;
};

/// Rows of one member's partial and residual: the numeric model's embedding
/// rows under per-member seeds (integer grid in exact mode, bf16 in real).
std::vector<float> benchRows(int seed, int tokens, int hidden, numeric::Mode mode) {
  std::vector<float> rows;
  rows.reserve(static_cast<std::size_t>(tokens) * hidden);
  for (int t = 0; t < tokens; ++t) {
    const std::vector<float> e = numeric::embedRow(seed, t, mode, numeric::Shape{.hidden = hidden, .inner = 1});
    rows.insert(rows.end(), e.begin(), e.end());
  }
  return rows;
}

Status upload(float* dst, const std::vector<float>& host) {
  SEAM_CUDA_CHECK(cudaMemcpy(dst, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return Status::ok();
}

Status download(std::vector<float>* host, const float* src, std::size_t n) {
  host->resize(n);
  SEAM_CUDA_CHECK(cudaMemcpy(host->data(), src, n * sizeof(float), cudaMemcpyDeviceToHost));
  return Status::ok();
}

/// kTracedCalls calls of `launch` while CUPTI records the kernels; per call
/// after the first (which absorbs CUPTI's setup), the sum of its `per_call`
/// kernels' durations. Not gated: a launch just after tracing starts may wait
/// for the device to go idle. Empty when CUPTI cannot trace
/// (FusedShared::trace says why).
Status traceCalls(FusedShared& s, int me, const Stream& stream, const std::function<Status(int)>& launch,
                  int per_call, std::vector<double>* us) {
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  if (me == 0) s.trace.start();
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  for (int i = 0; i < kTracedCalls; ++i) {
    if (Status st = launch(i); !st) return st;
  }
  if (Status st = stream.synchronize(); !st) return st;
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  if (me == 0) s.trace.stop();
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  const std::vector<detail::DeviceActivity> mine = s.trace.recordsOf(me);
  // Every member has read the records before member 0 may replace them.
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  us->clear();
  const auto per = static_cast<std::size_t>(per_call);
  if (mine.size() != static_cast<std::size_t>(kTracedCalls) * per) {
    if (mine.empty()) return Status::ok();
    // Not the kernels expected per call (a library launched more): the mean.
    double total = 0;
    for (const auto& a : mine) total += static_cast<double>(a.end_ns - a.start_ns);
    us->push_back(total * 1e-3 / kTracedCalls);
    return Status::ok();
  }
  for (int c = 1; c < kTracedCalls; ++c) {
    double sum = 0;
    for (std::size_t k = 0; k < per; ++k) {
      const detail::DeviceActivity& a = mine[static_cast<std::size_t>(c) * per + k];
      sum += static_cast<double>(a.end_ns - a.start_ns) * 1e-3;
    }
    us->push_back(sum);
  }
  return Status::ok();
}

Status fusedRank(FusedShared& s, int me, const std::vector<int>& hidden, const std::vector<int>& tokens, int iters,
                 std::vector<FusedSample>* samples) {
  SEAM_CUDA_CHECK(cudaSetDevice(me));
  auto stream = Stream::create();
  if (!stream) return stream.status();
  cudaStream_t st = stream->get();
  for (int p = 0; p < s.n; ++p) {
    if (p == me) continue;
    const cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      SEAM_CUDA_CHECK(e);
    }
  }
  auto signals = DeviceArray<kernels::PeerSignals>::create(1);
  if (!signals) return signals.status();
  SEAM_CUDA_CHECK(cudaMemset(signals->get(), 0, sizeof(kernels::PeerSignals)));
  const std::size_t floats = kernels::peerWorkspaceFloats(s.n, s.slot_elems);
  auto workspace = DeviceArray<float>::create(floats);
  if (!workspace) return workspace.status();
  SEAM_CUDA_CHECK(
      cudaMemset(workspace->get(), 0, floats * sizeof(float)));  // LL lines: no call number yet
  auto abort_flag = PinnedFlag::create();
  if (!abort_flag) return abort_flag.status();
  SEAM_CUDA_CHECK(cudaDeviceSynchronize());
  s.signals[me] = signals->get();
  s.workspace[me] = workspace->get();
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  kernels::FusedArAddNormArgs base;
  base.ranks = s.n;
  base.me = me;
  base.blocks = s.blocks;
  for (int p = 0; p < s.n; ++p) {
    base.signals[p] = s.signals[p];
    base.workspace[p] = s.workspace[p];
  }
  base.slot_elems = s.slot_elems;
  base.abort = abort_flag->device();
  ncclComm_t raw = nullptr;
  SEAM_NCCL_CHECK(ncclCommInitRank(&raw, s.n, s.id, me));
  NcclComm comm(raw);

  for (int h : hidden) {
    const numeric::StageWeights w = numeric::stageWeights(0, 0, numeric::Mode::kReal, numeric::Shape{.hidden = h, .inner = 1});
    auto weight = DeviceArray<float>::create(h);
    if (!weight) return weight.status();
    if (Status e = upload(weight->get(), w.norm); !e) return e;
    for (int t : tokens) {
      FusedSample sample;
      const std::size_t elems = static_cast<std::size_t>(t) * h;
      auto fused = [&](float* x, float* res, numeric::Mode mode) -> Status {
        kernels::FusedArAddNormArgs a = base;
        a.x = x;
        a.residual = res;
        a.out = x;
        a.rows = t;
        a.h = h;
        a.has_residual = true;
        a.real = mode == numeric::Mode::kReal;
        a.weight = a.real ? weight->get() : nullptr;
        a.ll = fusedSendsLl(s.protocol, t, h);
        SEAM_CUDA_CHECK(kernels::fusedArAddNorm(a, st));
        return Status::ok();
      };
      auto unfused = [&](float* x, float* res, numeric::Mode mode, bool norm) -> Status {
        SEAM_NCCL_CHECK(ncclAllReduce(x, x, elems, ncclFloat, ncclSum, comm.get(), st));
        if (!norm) return Status::ok();
        const bool real = mode == numeric::Mode::kReal;
        SEAM_CUDA_CHECK(kernels::addNormRows(x, res, x, t, h, true, real, real ? weight->get() : nullptr, st));
        return Status::ok();
      };

      // The two paths on the same inputs, one call each, in both modes.
      {
        std::vector<DeviceArray<float>> buf;
        for (int i = 0; i < 4; ++i) {
          auto a = DeviceArray<float>::create(elems);
          if (!a) return a.status();
          buf.push_back(std::move(*a));
        }
        for (numeric::Mode mode : {numeric::Mode::kExact, numeric::Mode::kReal}) {
          const std::vector<float> x = benchRows(2 * me + 1, t, h, mode);
          const std::vector<float> res = benchRows(2 * me + 2, t, h, mode);
          for (int i = 0; i < 2; ++i) {
            if (Status e = upload(buf[2 * i].get(), x); !e) return e;
            if (Status e = upload(buf[2 * i + 1].get(), res); !e) return e;
          }
          if (Status e = fused(buf[0].get(), buf[1].get(), mode); !e) return e;
          if (Status e = unfused(buf[2].get(), buf[3].get(), mode, true); !e) return e;
          if (Status e = stream->synchronize(); !e) return e;
          OutputDiff& d = mode == numeric::Mode::kExact ? sample.exact : sample.real;
          for (int i = 0; i < 2; ++i) {  // the normed rows, then the residual
            std::vector<float> a, b;
            if (Status e = download(&a, buf[i].get(), elems); !e) return e;
            if (Status e = download(&b, buf[2 + i].get(), elems); !e) return e;
            for (std::size_t k = 0; k < elems; ++k) {
              d.add(i, static_cast<int>(k / h), static_cast<int>(k % h), a[k], b[k]);
            }
          }
          d.finish();
        }
      }

      // Timing, real mode, on rotating sets of (partial, residual).
      const int sets = rotatingSets(2 * elems * sizeof(float), iters);
      sample.sets = sets;
      std::vector<DeviceArray<float>> xs, rs;
      const std::vector<float> x = benchRows(2 * me + 1, t, h, numeric::Mode::kReal);
      for (int i = 0; i < sets; ++i) {
        auto a = DeviceArray<float>::create(elems);
        auto b = DeviceArray<float>::create(elems);
        if (!a) return a.status();
        if (!b) return b.status();
        if (Status e = upload(a->get(), x); !e) return e;
        if (Status e = upload(b->get(), x); !e) return e;
        xs.push_back(std::move(*a));
        rs.push_back(std::move(*b));
      }
      const numeric::Mode real = numeric::Mode::kReal;
      const std::function<Status(int)> variants[3] = {
          [&](int i) { return fused(xs[i % sets].get(), rs[i % sets].get(), real); },
          [&](int i) { return unfused(xs[i % sets].get(), rs[i % sets].get(), real, true); },
          [&](int i) { return unfused(xs[i % sets].get(), rs[i % sets].get(), real, false); },
      };
      std::vector<double>* out[3] = {&sample.fused, &sample.unfused, &sample.nccl};
      std::vector<double>* kernel_out[3] = {&sample.fused_kernels, &sample.unfused_kernels, &sample.nccl_kernels};
      const int kernels_per_call[3] = {1, 2, 1};
      for (int v = 0; v < 3; ++v) {
        for (int i = 0; i < kBenchWarmup; ++i) {
          if (Status e = variants[v](i); !e) return e;
        }
        if (Status e = stream->synchronize(); !e) return e;
        if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
        if (Status e = timeGated(*stream, iters, s.barrier, s.abort, variants[v], out[v]); !e) return e;
        if (Status e = traceCalls(s, me, *stream, variants[v], kernels_per_call[v], kernel_out[v]); !e) return e;
      }
      samples->push_back(std::move(sample));
    }
  }
  SEAM_NCCL_CHECK(ncclCommFinalize(comm.get()));
  return comm.destroy();
}

}  // namespace

Expected<std::vector<FusedBench>> benchFusedArAddNorm(const std::vector<int>& hidden, const std::vector<int>& tokens,
                                                      int iters, PeerProtocol protocol) {
  if (iters < 1) return Status::invalid("--iters " + std::to_string(iters) + " is not positive");
  if (hidden.empty() || tokens.empty()) return Status::invalid("the fused benchmark needs hidden sizes and token counts");
  int max_h = 0, max_t = 0;
  for (int h : hidden) {
    if (h < 1) return Status::invalid("hidden size " + std::to_string(h) + " is not positive");
    max_h = std::max(max_h, h);
  }
  for (int t : tokens) {
    if (t < 1) return Status::invalid("token count " + std::to_string(t) + " is not positive");
    max_t = std::max(max_t, t);
  }
  auto devices = listDevices();
  if (!devices) return devices.status();
  const int n = std::min(static_cast<int>(devices->size()), kernels::kPeerMaxRanks);
  if (n < 2) return Status::invalid("the fused benchmark needs two GPUs, " + std::to_string(devices->size()) + " visible");
  FusedShared s(n);
  s.slot_elems = static_cast<std::size_t>(max_t) * max_h;
  if (s.slot_elems * sizeof(float) > kPeerMaxSlotBytes) {
    return Status::invalid("tokens x hidden of " + std::to_string(max_t) + " x " + std::to_string(max_h) +
                           " exceed the fused kernel's workspace slot");
  }
  int min_sms = INT32_MAX;
  for (int a = 0; a < n; ++a) {
    min_sms = std::min(min_sms, (*devices)[a].multiprocessors);
    for (int b = 0; b < n; ++b) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) {
        return Status::invalid("GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) + "'s memory");
      }
    }
  }
  s.blocks = std::clamp(kernels::kPeerBlocksPerSm * min_sms, 1,
                        kernels::kPeerMaxBlocks);  // as planPeerGroups sizes it
  s.protocol = protocol;
  SEAM_NCCL_CHECK(ncclGetUniqueId(&s.id));
  std::vector<std::vector<FusedSample>> samples(n);
  if (Status st = onThreads(n, s.abort, [&](int p) { return fusedRank(s, p, hidden, tokens, iters, &samples[p]); }); !st) {
    return st;
  }
  std::vector<FusedBench> out;
  std::size_t i = 0;
  for (int h : hidden) {
    for (int t : tokens) {
      FusedBench b;
      b.hidden = h;
      b.tokens = t;
      b.ranks = n;
      b.bytes = static_cast<std::int64_t>(t) * h * static_cast<std::int64_t>(sizeof(float));
      b.protocol = fusedSendsLl(protocol, t, h) ? PeerProtocol::kLl : PeerProtocol::kFlag;
      b.exact_identical = b.real_identical = true;
      for (int p = 0; p < n; ++p) {
        const FusedSample& x = samples[p][i];
        auto slowest = [](TimingSummary& into, const std::vector<double>& us) {
          const TimingSummary s = summarizeTimes(us);
          if (s.median > into.median) into = s;
        };
        slowest(b.fused, x.fused);
        slowest(b.unfused, x.unfused);
        slowest(b.nccl, x.nccl);
        if (!x.fused_kernels.empty()) slowest(b.fused_kernels, x.fused_kernels);
        if (!x.unfused_kernels.empty()) slowest(b.unfused_kernels, x.unfused_kernels);
        if (!x.nccl_kernels.empty()) slowest(b.nccl_kernels, x.nccl_kernels);
        b.rotating_sets = x.sets;
        b.trace_error = s.trace.error();
        b.exact_identical = b.exact_identical && x.exact.identical;
        b.real_identical = b.real_identical && x.real.identical;
        b.real_max_abs = std::max(b.real_max_abs, x.real.max_abs);
        b.real_max_ulps = std::max(b.real_max_ulps, x.real.max_ulps);
      }
      out.push_back(b);
      ++i;
    }
  }
  return out;
}

}  // namespace seam::backend
