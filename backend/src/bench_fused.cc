// `seam-gpu bench`'s fused table (bench.h): the fused all-reduce + add +
// RMSNorm kernel against NCCL all-reduce plus the add+norm kernel, and
// against NCCL alone, on every visible GPU as one group: the two paths
// compared on the same inputs, then timed with events and traced with CUPTI.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <optional>
#include <thread>

#include "activity_trace.h"
#include "bench_timing.h"
#include "handles.h"
#include "kernels.h"
#include "peer_kernels.h"
#include "rank_executor.h"
#include "seam/backend/bench.h"
#include "seam/backend/check.h"
#include "seam/backend/raii.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::backend {

namespace {

using detail::kAborted;
using detail::onThreads;
using detail::rotatingSets;
using detail::SpinBarrier;
using detail::timeGated;

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
  explicit FusedShared(int members)
      : n(members), signals(members), workspace(members), barrier(members) {}
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
    const std::vector<float> e =
        numeric::embedRow(seed, t, mode, numeric::Shape{.hidden = hidden, .inner = 1});
    rows.insert(rows.end(), e.begin(), e.end());
  }
  return rows;
}

Status upload(float* dst, const std::vector<float>& host) {
  SEAM_CUDA_CHECK(
      cudaMemcpy(dst, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
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
Status traceCalls(FusedShared& s, int me, const Stream& stream,
                  const std::function<Status(int)>& launch, int per_call, std::vector<double>* us) {
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

/// One member's place in the fused group: its signals and workspace (peers
/// write into them), its abort flag, and the kernel arguments every call starts from.
struct FusedMember {
  DeviceArray<kernels::PeerSignals> signals;
  DeviceArray<float> workspace;
  std::optional<PinnedFlag> abort_flag;
  kernels::FusedArAddNormArgs base;
};

/// Peer access to every other member, this member's signals and workspace
/// zeroed and published, then (once every member has) the kernel's arguments.
Status joinFusedGroup(FusedShared& s, int me, FusedMember* m) {
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
  m->signals = std::move(*signals);
  SEAM_CUDA_CHECK(cudaMemset(m->signals.get(), 0, sizeof(kernels::PeerSignals)));
  const std::size_t floats = kernels::peerWorkspaceFloats(s.n, s.slot_elems);
  auto workspace = DeviceArray<float>::create(floats);
  if (!workspace) return workspace.status();
  m->workspace = std::move(*workspace);
  SEAM_CUDA_CHECK(
      cudaMemset(m->workspace.get(), 0, floats * sizeof(float)));  // LL lines: no call number yet
  auto abort_flag = PinnedFlag::create();
  if (!abort_flag) return abort_flag.status();
  m->abort_flag.emplace(std::move(*abort_flag));
  SEAM_CUDA_CHECK(cudaDeviceSynchronize());
  s.signals[me] = m->signals.get();
  s.workspace[me] = m->workspace.get();
  if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
  kernels::FusedArAddNormArgs& base = m->base;
  base.ranks = s.n;
  base.me = me;
  base.blocks = s.blocks;
  for (int p = 0; p < s.n; ++p) {
    base.signals[p] = s.signals[p];
    base.workspace[p] = s.workspace[p];
  }
  base.slot_elems = s.slot_elems;
  base.abort = m->abort_flag->device();
  return Status::ok();
}

/// The two paths at one size (t rows of h): the fused kernel, and NCCL
/// all-reduce plus (`norm`) the add+norm kernel, in place on (x, residual).
struct FusedPaths {
  const kernels::FusedArAddNormArgs& base;
  PeerProtocol protocol;
  ncclComm_t comm;
  cudaStream_t stream;
  const float* weight;
  int t, h;

  std::size_t elems() const { return static_cast<std::size_t>(t) * h; }
  Status fused(float* x, float* res, numeric::Mode mode) const {
    kernels::FusedArAddNormArgs a = base;
    a.x = x;
    a.residual = res;
    a.out = x;
    a.rows = t;
    a.h = h;
    a.has_residual = true;
    a.real = mode == numeric::Mode::kReal;
    a.weight = a.real ? weight : nullptr;
    a.ll = fusedSendsLl(protocol, t, h);
    SEAM_CUDA_CHECK(kernels::fusedArAddNorm(a, stream));
    return Status::ok();
  }
  Status unfused(float* x, float* res, numeric::Mode mode, bool norm) const {
    SEAM_NCCL_CHECK(ncclAllReduce(x, x, elems(), ncclFloat, ncclSum, comm, stream));
    if (!norm) return Status::ok();
    const bool real = mode == numeric::Mode::kReal;
    SEAM_CUDA_CHECK(
        kernels::addNormRows(x, res, x, t, h, true, real, real ? weight : nullptr, stream));
    return Status::ok();
  }
};

/// The two paths on the same inputs, one call each, in both modes: the
/// normed rows and the residual compared (FusedSample::exact, real).
Status compareFusedPaths(const FusedPaths& paths, int me, const Stream& stream,
                         FusedSample* sample) {
  const std::size_t elems = paths.elems();
  std::vector<DeviceArray<float>> buf;
  for (int i = 0; i < 4; ++i) {
    auto a = DeviceArray<float>::create(elems);
    if (!a) return a.status();
    buf.push_back(std::move(*a));
  }
  for (numeric::Mode mode : {numeric::Mode::kExact, numeric::Mode::kReal}) {
    const std::vector<float> x = benchRows(2 * me + 1, paths.t, paths.h, mode);
    const std::vector<float> res = benchRows(2 * me + 2, paths.t, paths.h, mode);
    for (int i = 0; i < 2; ++i) {
      if (Status e = upload(buf[2 * i].get(), x); !e) return e;
      if (Status e = upload(buf[2 * i + 1].get(), res); !e) return e;
    }
    if (Status e = paths.fused(buf[0].get(), buf[1].get(), mode); !e) return e;
    if (Status e = paths.unfused(buf[2].get(), buf[3].get(), mode, true); !e) return e;
    if (Status e = stream.synchronize(); !e) return e;
    OutputDiff& d = mode == numeric::Mode::kExact ? sample->exact : sample->real;
    for (int i = 0; i < 2; ++i) {  // the normed rows, then the residual
      std::vector<float> a, b;
      if (Status e = download(&a, buf[i].get(), elems); !e) return e;
      if (Status e = download(&b, buf[2 + i].get(), elems); !e) return e;
      for (std::size_t k = 0; k < elems; ++k) {
        d.add(i, static_cast<int>(k / paths.h), static_cast<int>(k % paths.h), a[k], b[k]);
      }
    }
    d.finish();
  }
  return Status::ok();
}

/// Timing, real mode, on rotating sets of (partial, residual): the fused
/// kernel, NCCL + add+norm and NCCL alone, each timed with events, then traced.
Status timeFusedPaths(FusedShared& s, int me, const Stream& stream, const FusedPaths& paths,
                      int iters, FusedSample* sample) {
  const std::size_t elems = paths.elems();
  const int sets = rotatingSets(2 * elems * sizeof(float), iters);
  sample->sets = sets;
  std::vector<DeviceArray<float>> xs, rs;
  const std::vector<float> x = benchRows(2 * me + 1, paths.t, paths.h, numeric::Mode::kReal);
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
      [&](int i) { return paths.fused(xs[i % sets].get(), rs[i % sets].get(), real); },
      [&](int i) { return paths.unfused(xs[i % sets].get(), rs[i % sets].get(), real, true); },
      [&](int i) { return paths.unfused(xs[i % sets].get(), rs[i % sets].get(), real, false); },
  };
  std::vector<double>* out[3] = {&sample->fused, &sample->unfused, &sample->nccl};
  std::vector<double>* kernel_out[3] = {&sample->fused_kernels, &sample->unfused_kernels,
                                        &sample->nccl_kernels};
  const int kernels_per_call[3] = {1, 2, 1};
  for (int v = 0; v < 3; ++v) {
    for (int i = 0; i < kBenchWarmup; ++i) {
      if (Status e = variants[v](i); !e) return e;
    }
    if (Status e = stream.synchronize(); !e) return e;
    if (!s.barrier.arriveAndWait(s.abort)) return Status::internal(kAborted);
    if (Status e = timeGated(stream, iters, s.barrier, s.abort, variants[v], out[v]); !e) return e;
    if (Status e = traceCalls(s, me, stream, variants[v], kernels_per_call[v], kernel_out[v]); !e)
      return e;
  }
  return Status::ok();
}

/// One member of the fused benchmark: every size's comparison and timings.
Status fusedRank(FusedShared& s, int me, const std::vector<int>& hidden,
                 const std::vector<int>& tokens, int iters, std::vector<FusedSample>* samples) {
  SEAM_CUDA_CHECK(cudaSetDevice(me));
  auto stream = Stream::create();
  if (!stream) return stream.status();
  FusedMember member;
  if (Status st = joinFusedGroup(s, me, &member); !st) return st;
  ncclComm_t raw = nullptr;
  SEAM_NCCL_CHECK(ncclCommInitRank(&raw, s.n, s.id, me));
  NcclComm comm(raw);
  for (int h : hidden) {
    const numeric::StageWeights w =
        numeric::stageWeights(0, 0, numeric::Mode::kReal, numeric::Shape{.hidden = h, .inner = 1});
    auto weight = DeviceArray<float>::create(h);
    if (!weight) return weight.status();
    if (Status e = upload(weight->get(), w.norm); !e) return e;
    for (int t : tokens) {
      const FusedPaths paths{member.base,   s.protocol, comm.get(), stream->get(),
                             weight->get(), t,          h};
      FusedSample sample;
      if (Status e = compareFusedPaths(paths, me, *stream, &sample); !e) return e;
      if (Status e = timeFusedPaths(s, me, *stream, paths, iters, &sample); !e) return e;
      samples->push_back(std::move(sample));
    }
  }
  SEAM_NCCL_CHECK(ncclCommFinalize(comm.get()));
  return comm.destroy();
}

}  // namespace

Expected<std::vector<FusedBench>> benchFusedArAddNorm(const std::vector<int>& hidden,
                                                      const std::vector<int>& tokens, int iters,
                                                      PeerProtocol protocol) {
  if (iters < 1) return Status::invalid("--iters " + std::to_string(iters) + " is not positive");
  if (hidden.empty() || tokens.empty())
    return Status::invalid("the fused benchmark needs hidden sizes and token counts");
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
  if (n < 2)
    return Status::invalid("the fused benchmark needs two GPUs, " +
                           std::to_string(devices->size()) + " visible");
  FusedShared s(n);
  s.slot_elems = static_cast<std::size_t>(max_t) * max_h;
  if (s.slot_elems * sizeof(float) > kPeerMaxSlotBytes) {
    return Status::invalid("tokens x hidden of " + std::to_string(max_t) + " x " +
                           std::to_string(max_h) + " exceed the fused kernel's workspace slot");
  }
  int min_sms = INT32_MAX;
  for (int a = 0; a < n; ++a) {
    min_sms = std::min(min_sms, (*devices)[a].multiprocessors);
    for (int b = 0; b < n; ++b) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) {
        return Status::invalid("GPU " + std::to_string(a) + " cannot access GPU " +
                               std::to_string(b) + "'s memory");
      }
    }
  }
  s.blocks = std::clamp(kernels::kPeerBlocksPerSm * min_sms, 1,
                        kernels::kPeerMaxBlocks);  // as planPeerGroups sizes it
  s.protocol = protocol;
  SEAM_NCCL_CHECK(ncclGetUniqueId(&s.id));
  std::vector<std::vector<FusedSample>> samples(n);
  if (Status st = onThreads(
          n, s.abort, [&](int p) { return fusedRank(s, p, hidden, tokens, iters, &samples[p]); });
      !st) {
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
