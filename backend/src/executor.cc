// The public entry points of the CUDA/NCCL executor (executor.h): a run of a
// plan (one thread and one GPU per rank, rank_executor.h; the watchdog on
// the calling thread), the assembly of its output exactly as runPlanNumeric
// assembles the CPU's, the output hash folded on the devices, and the
// bare-NCCL all-reduce benchmark.
#include "seam/backend/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "handles.h"
#include "kernels.h"
#include "peer_kernels.h"
#include "rank_executor.h"
#include "rank_outcome.h"
#include "seam/backend/check.h"
#include "seam/backend/raii.h"
#include "seam/sim/bytes.h"
#include "seam/sim/rows.h"

namespace seam::backend {

const char* arAddNormPathName(ArAddNormPath path) {
  switch (path) {
    case ArAddNormPath::kFused: return "fused";
    case ArAddNormPath::kNccl: return "nccl+add_norm";
    case ArAddNormPath::kLocal: return "add_norm";
    case ArAddNormPath::kFusedLl: return "fused-ll";
    case ArAddNormPath::kNotArAddNorm: break;
  }
  return "-";
}

namespace {
constexpr const char* kPeerProtocolNames[] = {"auto", "flag", "ll"};
}  // namespace

const char* peerProtocolName(PeerProtocol protocol) { return kPeerProtocolNames[static_cast<int>(protocol)]; }

bool parsePeerProtocol(std::string_view name, PeerProtocol* protocol) {
  for (int i = 0; i < 3; ++i) {
    if (name == kPeerProtocolNames[i]) {
      *protocol = static_cast<PeerProtocol>(i);
      return true;
    }
  }
  return false;
}

bool fusedSendsLl(PeerProtocol protocol, int rows, int h) {
  static_assert(kFusedLlMaxBytes == kernels::kPeerLlMaxElems * sizeof(float));
  if (protocol == PeerProtocol::kFlag || !kernels::llFits(rows, h)) return false;
  return protocol == PeerProtocol::kLl ||
         static_cast<std::size_t>(rows) * static_cast<std::size_t>(h) * sizeof(float) <= kFusedLlAutoBytes;
}

Status validateRunOptions(const GpuRunOptions& o) {
  if (o.shape.hidden < 1) return Status::invalid("hidden size " + std::to_string(o.shape.hidden) + " is not positive");
  if (o.shape.inner < 1) return Status::invalid("inner size " + std::to_string(o.shape.inner) + " is not positive");
  if (o.warmup < 0) return Status::invalid("warmup " + std::to_string(o.warmup) + " is negative");
  if (o.iters < 1) return Status::invalid("iters " + std::to_string(o.iters) + " is not positive");
  if (!(o.watchdog_seconds > 0)) return Status::invalid("the watchdog timeout must be positive");
  if (o.graph_replays < 0) return Status::invalid("graph replays " + std::to_string(o.graph_replays) + " is negative");
  return Status::ok();
}

std::uint64_t fnv1aFloats(std::uint64_t state, const float* values, std::size_t count) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < count * sizeof(float); ++i) {
    state ^= bytes[i];
    state *= kFnvPrime;
  }
  return state;
}

OutputDiff compareRankFinals(const RankFinals& finals, const NumericOutput& expected) {
  OutputDiff d;
  const int h = expected.hidden;
  for (size_t s = 0; s < finals.rows.size(); ++s) {
    if (finals.tokens[s].empty()) continue;
    if (s >= expected.rows.size()) {
      d.identical = false;
      d.max_abs = INFINITY;
      return d;
    }
    for (size_t i = 0; i < finals.tokens[s].size(); ++i) {
      const int t = finals.tokens[s][i];
      if (t < 0 || t >= expected.tokens) continue;
      for (int k = 0; k < h; ++k) {
        d.add(static_cast<int>(s), t, k, finals.rows[s][i * h + k], expected.rows[s][static_cast<size_t>(t) * h + k]);
      }
    }
  }
  d.finish();
  return d;
}

namespace {

using Clock = std::chrono::steady_clock;
using detail::DeviceRows;
using detail::kAborted;
using detail::kGateOpen;
using detail::RankExecutor;
using detail::RankProgress;
using detail::SharedRun;
using detail::SpinBarrier;
using detail::RankOutcome;
using detail::ProcessReport;
using detail::RankEnd;
using detail::outcomeOf;
using detail::encodeReport;
using detail::decodeReport;
using detail::statusOf;

/// How often the watchdog looks at the progress counters.
constexpr auto kWatchdogTick = std::chrono::milliseconds(20);

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The rank executors, destroyed each with its own device current (cuBLAS
/// handles, streams and buffers belong to that device).
struct RankSet {
  std::vector<std::unique_ptr<RankExecutor>> ranks;
  ~RankSet() {
    for (auto& r : ranks) {
      if (!r) continue;
      (void)cudaSetDevice(r->device());
      r.reset();
    }
  }
};

/// "2x NVIDIA H200", or the names joined when they differ.
std::string describeDevices(const std::vector<DeviceInfo>& devices, int used) {
  std::string first = devices.front().name;
  bool same = true;
  for (int i = 0; i < used; ++i) same = same && devices[i].name == first;
  if (same) return std::to_string(used) + "x " + first;
  std::string out;
  for (int i = 0; i < used; ++i) out += (i ? ", " : "") + devices[i].name;
  return out;
}

/// Assembles the output exactly as runPlanNumeric does: each token's row from
/// the first rank (in rank order) that produced it, producers counted.
/// `outcomes` holds every rank of the plan, in rank order.
void assembleOutput(const SharedRun& s, const std::vector<RankOutcome>& outcomes, GpuRunResult* out) {
  const int h = s.options.shape.hidden;
  NumericOutput& o = out->output;
  o.hidden = h;
  o.tokens = s.plan.source.batch.total();
  o.rows.assign(s.stacks, std::vector<float>(static_cast<size_t>(o.tokens) * h, 0.0f));
  o.producers.assign(s.stacks, std::vector<int>(o.tokens, 0));
  for (int stage : s.plan.source.flags.capture) {
    if (std::any_of(o.snapshots.begin(), o.snapshots.end(), [&](const auto& p) { return p.first == stage; })) continue;
    o.snapshots.emplace_back(stage, std::vector<float>(static_cast<size_t>(o.tokens) * h, 0.0f));
  }
  for (int r = 0; r < s.plan.world(); ++r) {
    for (const auto& snap : outcomes[r].snapshots) {
      if (snap.stack != 0 || snap.stage < 0) continue;
      auto it = std::find_if(o.snapshots.begin(), o.snapshots.end(), [&](const auto& p) { return p.first == snap.stage; });
      if (it == o.snapshots.end()) continue;
      const auto& toks = s.rows.tokens(snap.kind, r);
      for (size_t i = 0; i < toks.size() && static_cast<int>(i) < snap.rows; ++i) {
        if (toks[i] < 0) continue;
        std::memcpy(it->second.data() + static_cast<size_t>(toks[i]) * h, snap.values.data() + i * h, h * sizeof(float));
      }
    }
  }
  for (int r = 0; r < s.plan.world(); ++r) {
    const RankOutcome& rank = outcomes[r];
    RankFinals finals;
    finals.rank = r;
    finals.tokens.assign(s.stacks, {});
    finals.rows.assign(s.stacks, {});
    bool any = false;
    for (int k = 0; k < s.stacks; ++k) {
      if (!rank.final_done[k]) continue;
      any = true;
      const auto& toks = s.rows.tokens(static_cast<RowKind>(rank.final_kind[k]), r);
      const std::vector<float>& host = rank.final_host[k];
      const int n = std::min(static_cast<int>(toks.size()), static_cast<int>(rank.final_rows[k]));
      finals.tokens[k].assign(toks.begin(), toks.begin() + n);
      finals.rows[k].assign(host.begin(), host.begin() + static_cast<std::ptrdiff_t>(n) * h);
      for (int i = 0; i < n; ++i) {
        const int t = toks[i];
        if (t < 0) continue;
        float* dst = o.rows[k].data() + static_cast<size_t>(t) * h;
        const float* src = host.data() + static_cast<size_t>(i) * h;
        if (o.producers[k][t]++ == 0) {
          std::memcpy(dst, src, h * sizeof(float));
        } else if (std::memcmp(dst, src, h * sizeof(float)) != 0) {
          out->ranks_disagree = true;
        }
      }
    }
    if (any) out->finals.push_back(std::move(finals));
  }
}

/// Every rank's timings (rank-major), graph steps and new notes into `out`.
void collectOutcomes(const SharedRun& s, const std::vector<RankOutcome>& outcomes, GpuRunResult* out) {
  std::set<std::string> seen(out->notes.begin(), out->notes.end());
  for (const RankOutcome& o : outcomes) {
    for (const std::string& n : o.notes) {
      if (seen.insert(n).second) out->notes.push_back(n);
    }
    out->timings.insert(out->timings.end(), o.timings.begin(), o.timings.end());
    if (s.options.graph_replays > 0) out->graph.push_back(o.graph);
  }
}


/// The output's FNV-1a hash folded on the devices: for each stack, each DP
/// shard's rows are hashed on the first rank that produced them, carrying the
/// state from device to device in token order. A shard no rank holds in order
/// (or one with no producer) is folded on the host from the assembled rows.
Expected<std::uint64_t> deviceHash(const SharedRun& s, const std::vector<std::unique_ptr<RankExecutor>>& ranks,
                                   const NumericOutput& output, std::vector<std::string>* notes) {
  const int h = s.options.shape.hidden;
  const Batch& batch = s.plan.source.batch;
  std::uint64_t state = kFnvOffsetBasis;
  for (int k = 0; k < s.stacks; ++k) {
    int first_token = 0;
    for (int d = 0; d < static_cast<int>(batch.tokens.size()); ++d) {
      const int n = batch.tokens[d];
      int holder = -1;
      for (int r = 0; r < s.plan.world() && holder < 0 && n > 0; ++r) {
        if (!ranks[r]->finalDone(k)) continue;
        const DeviceRows& f = ranks[r]->finalRows(k);
        const auto& toks = s.rows.tokens(f.kind, r);
        if (f.rows != n || static_cast<int>(toks.size()) != n) continue;
        bool in_order = true;
        for (int i = 0; i < n && in_order; ++i) in_order = toks[i] == first_token + i;
        // The first producer of these tokens is the lowest rank holding them.
        if (in_order && output.producers[k][first_token] > 0) holder = r;
      }
      if (holder >= 0) {
        SEAM_CUDA_CHECK(cudaSetDevice(ranks[holder]->device()));
        auto dstate = DeviceArray<std::uint64_t>::create(1);
        if (!dstate) return dstate.status();
        SEAM_CUDA_CHECK(cudaMemcpy(dstate->get(), &state, sizeof state, cudaMemcpyHostToDevice));
        SEAM_CUDA_CHECK(kernels::fnv1a(ranks[holder]->finalRows(k).data.get(), static_cast<std::size_t>(n) * h,
                                       dstate->get(), nullptr));
        SEAM_CUDA_CHECK(cudaMemcpy(&state, dstate->get(), sizeof state, cudaMemcpyDeviceToHost));
      } else if (n > 0) {
        notes->push_back("stack " + std::to_string(k) + " shard " + std::to_string(d) +
                         ": no rank holds its rows in token order; hashed on the host");
        state = fnv1aFloats(state, output.rows[k].data() + static_cast<size_t>(first_token) * h,
                            static_cast<std::size_t>(n) * h);
      }
      first_token += n;
    }
  }
  return state;
}

}  // namespace

namespace {

/// Under one process per rank: rank 0 turns every process's report into the
/// run's result and tells the other processes the verdict (failed, hung or
/// done), so that each returns alike. `mine` is this process's report.
Expected<GpuRunResult> joinProcesses(const SharedRun& shared, ProcessGroup& processes, const ProcessReport& mine,
                                     GpuRunResult result) {
  const std::vector<std::string> parts = processes.gather(encodeReport(mine));
  // The verdict rank 0 broadcasts: how the run ended, the status code, the
  // message (the failure or the hang report).
  ByteWriter verdict;
  if (processes.rank() == 0) {
    std::vector<ProcessReport> reports;
    Status failure;
    for (const std::string& part : parts) {
      auto report = decodeReport(part);
      if (!report) {
        failure = report.status();
        break;
      }
      reports.push_back(std::move(*report));
    }
    for (const ProcessReport& r : reports) {
      if (failure && r.end == RankEnd::kFailed) failure = statusOf(r.code, r.message);
    }
    std::vector<RankPosition> positions;
    double idle = 0;
    bool hung = false;
    for (const ProcessReport& r : reports) {
      hung = hung || r.end == RankEnd::kHung;
      positions.push_back(r.position);
      idle = std::max(idle, r.idle_seconds);
    }
    if (!failure) {
      verdict.put(static_cast<std::int64_t>(RankEnd::kFailed));
      verdict.put(static_cast<std::int64_t>(failure.code()));
      verdict.put(failure.message());
    } else if (hung) {
      result.hung = true;
      result.hang_report = formatHangReport(shared.plan, positions, idle, shared.options.warmup + shared.options.iters);
      verdict.put(static_cast<std::int64_t>(RankEnd::kHung));
      verdict.put(static_cast<std::int64_t>(StatusCode::kOk));
      verdict.put(result.hang_report);
    } else {
      std::vector<RankOutcome> outcomes;
      for (ProcessReport& r : reports) outcomes.push_back(std::move(r.outcome));
      assembleOutput(shared, outcomes, &result);
      collectOutcomes(shared, outcomes, &result);
      // Every rank's rows are on this host now; the devices are in other processes.
      result.device_hash = result.output.hash();
      result.notes.push_back("one process per rank: the output hash is folded on rank 0's host from the gathered rows");
      verdict.put(static_cast<std::int64_t>(RankEnd::kDone));
      verdict.put(static_cast<std::int64_t>(StatusCode::kOk));
      verdict.put(std::string());
    }
  }
  const std::string said = processes.broadcast(verdict.take());
  ByteReader r(said);
  const auto end = static_cast<RankEnd>(r.int64());
  const auto code = static_cast<StatusCode>(r.int64());
  std::string message = r.text();
  if (!r.ok()) return Status::internal("rank 0's verdict on the run is malformed");
  if (end == RankEnd::kFailed) return statusOf(code, std::move(message));
  if (end == RankEnd::kHung) {
    result.hung = true;
    result.hang_report = std::move(message);
  }
  return result;
}

}  // namespace

Expected<GpuRunResult> runPlanOnGpus(const Plan& plan, const GpuRunOptions& options, ProcessGroup* processes) {
  if (Status st = validateRunOptions(options); !st) return st;
  const int world = plan.world();
  if (world < 1) return Status::invalid("the plan has no ranks");
  if (Status st = validate(plan.source.config); !st) return st;
  if (plan.cp_layout != CpLayout::kReplicated && plan.source.config.attn_dp > 1) {
    // The model boundary's CP gather lands on cp_gathered rows, which the
    // device reorder (reorderCp) does not read yet; the simulator checks these plans.
    return Status::invalid("GQA prefill CP under attention DP (CP-sharded DP shards) does not run on GPUs yet");
  }
  if (plan.source.config.world() != world) {
    return Status::invalid("the plan has " + std::to_string(world) + " ranks but its config a world of " +
                           std::to_string(plan.source.config.world()));
  }
  if (processes != nullptr && processes->size() != world) {
    return Status::invalid("the plan has " + std::to_string(world) + " ranks but " + std::to_string(processes->size()) +
                           " processes were started: one process per rank (mpirun -np " + std::to_string(world) + ")");
  }
  auto devices = listDevices();
  if (!devices) return devices.status();
  const int visible = static_cast<int>(devices->size());
  // The ranks this process runs: every rank, or its own.
  std::vector<int> local;
  if (processes == nullptr) {
    if (world > visible) {
      return Status::invalid("world " + std::to_string(world) + " needs " + std::to_string(world) + " GPUs, " +
                             std::to_string(visible) + " visible");
    }
    for (int r = 0; r < world; ++r) local.push_back(r);
  } else {
    if (processes->device() >= visible) {
      return Status::invalid("rank " + std::to_string(processes->rank()) + " takes GPU " +
                             std::to_string(processes->device()) + " of its host (its place among the host's processes), " +
                             std::to_string(visible) + " visible: one process per GPU");
    }
    local.push_back(processes->rank());
  }
  auto versions = runtimeVersions();
  if (!versions) return versions.status();

  GpuRunResult result;
  result.device = processes == nullptr ? describeDevices(*devices, world)
                                       : std::to_string(world) + "x " + (*devices)[processes->device()].name +
                                             " (one process per GPU)";
  result.versions = *versions;
  if (options.mode == numeric::Mode::kReal) {
    result.notes.push_back("real mode: values are stored in fp32 and rounded to bf16 after every op; NCCL sums the "
                           "bf16 values in fp32 and the sum is rounded once");
  }

  SharedRun shared(plan, options, static_cast<int>(local.size()));
  if (processes != nullptr) {
    shared.one_rank_per_process = true;
    shared.first_local_rank = processes->rank();
    shared.local_device = processes->device();
  }
  shared.capacity_rows = capacityRows(shared);
  planPeerGroups(shared, *devices);
  for (const detail::PeerGroup& g : shared.peer_groups) result.notes.push_back(g.path);
  buildWeights(shared);
  shared.window_begin = gateWindows(shared);
  if (processes == nullptr) {
    SEAM_NCCL_CHECK(ncclGetUniqueId(&shared.id));
  } else {
    // NCCL's own bootstrap: rank 0's unique id, handed to every process.
    std::string id(sizeof shared.id, '\0');
    if (processes->rank() == 0) {
      SEAM_NCCL_CHECK(ncclGetUniqueId(&shared.id));
      std::memcpy(id.data(), &shared.id, sizeof shared.id);
    }
    id = processes->broadcast(id);
    if (id.size() != sizeof shared.id) return Status::internal("the NCCL unique id broadcast has the wrong size");
    std::memcpy(&shared.id, id.data(), sizeof shared.id);
  }

  RankSet rank_set;
  std::vector<std::unique_ptr<RankExecutor>>& ranks = rank_set.ranks;
  ranks.resize(world);
  for (int r : local) ranks[r] = std::make_unique<RankExecutor>(shared, r);
  std::vector<std::thread> threads;
  for (int r : local) {
    threads.emplace_back([&shared, &ranks, r] {
      RankExecutor& rank = *ranks[r];
      Status st;
      try {
        st = rank.setUp();
        if (st) st = rank.run();
        if (st) st = rank.finalizeComms();
      } catch (const std::exception& e) {
        st = Status::internal(std::string("rank ") + std::to_string(r) + ": " + e.what());
      }
      if (!st) {
        if (st.message() != kAborted) shared.fail(std::move(st));
        rank.abortComms();  // the NCCL kernels of this rank exit; its peers stop waiting on it
      }
      shared.progress[r].done = true;
    });
  }

  // The watchdog: this thread watches the ranks' progress counters.
  StallDetector detector(options.watchdog_seconds);
  const auto t0 = Clock::now();
  std::vector<std::int64_t> counters(local.size());
  std::vector<RankPosition> positions;
  for (;;) {
    std::this_thread::sleep_for(kWatchdogTick);
    bool all_done = true;
    for (size_t i = 0; i < local.size(); ++i) {
      counters[i] = shared.progress[local[i]].counter.load();
      all_done = all_done && shared.progress[local[i]].done.load();
    }
    if (all_done) break;
    if (!shared.abort && detector.update(counters, secondsSince(t0))) {
      for (int r : local) {
        const RankProgress& p = shared.progress[r];
        positions.push_back({.rank = r,
                             .op_index = p.op_index.load(),
                             .iteration = p.iteration.load(),
                             .setting_up = p.setting_up.load(),
                             .finished = p.finished.load()});
      }
      result.hung = true;
      shared.abort = true;  // each rank thread aborts its own communicators
      for (int r : local) ranks[r]->releaseGate();  // a gated stream drains
    }
  }
  for (std::thread& t : threads) t.join();

  if (processes != nullptr) {
    const int r = local.front();
    ProcessReport mine;
    const Status failed = shared.firstError();
    const RankProgress& p = shared.progress[r];
    mine.position = {.rank = r,
                     .op_index = p.op_index.load(),
                     .iteration = p.iteration.load(),
                     .setting_up = p.setting_up.load(),
                     .finished = p.finished.load()};
    if (result.hung) {
      mine.end = RankEnd::kHung;
      mine.position = positions.front();
      mine.idle_seconds = detector.idleSeconds();
    } else if (!failed) {
      mine.end = RankEnd::kFailed;
      mine.code = failed.code();
      mine.message = failed.message();
    } else {
      mine.outcome = outcomeOf(shared, *ranks[r], r);
    }
    return joinProcesses(shared, *processes, mine, std::move(result));
  }

  if (result.hung) {
    std::set<std::string> seen(result.notes.begin(), result.notes.end());
    for (const auto& r : ranks) {
      for (const std::string& n : r->notes()) {
        if (seen.insert(n).second) result.notes.push_back(n);
      }
    }
    result.hang_report = formatHangReport(plan, positions, detector.idleSeconds(), options.warmup + options.iters);
    return result;
  }
  if (Status st = shared.firstError(); !st) return st;

  std::vector<RankOutcome> outcomes;
  for (int r = 0; r < world; ++r) outcomes.push_back(outcomeOf(shared, *ranks[r], r));
  assembleOutput(shared, outcomes, &result);
  collectOutcomes(shared, outcomes, &result);
  auto hash = deviceHash(shared, ranks, result.output, &result.notes);
  if (!hash) return hash.status();
  result.device_hash = *hash;
  if (result.device_hash != result.output.hash()) {
    result.notes.push_back("the device hash differs from the hash of the rows copied to the host");
  }
  return result;
}

// ---- bare NCCL against a one-op plan -------------------------------------------------

namespace {

/// Untimed all-reduces before the timed ones (nccl-tests' default warmup is 5).
constexpr int kBenchWarmup = 5;

/// A bare all-reduce per rank thread, nccl-tests style: a blocking
/// communicator, warmup, then every timed iteration queued back to back
/// (behind a gate, like the executor's windows, so that both measure device
/// time only) with CUDA events around each. Returns the microseconds of each.
Status bareAllReduceRank(const ncclUniqueId& id, int rank, int world, std::size_t count, int iters,
                         SpinBarrier& barrier, const std::atomic<bool>& abort, std::vector<double>* us) {
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
    SEAM_NCCL_CHECK(ncclAllReduce(buf->get(), buf->get(), count, ncclFloat, ncclSum, comm.get(), stream->get()));
  }
  if (Status st = stream->synchronize(); !st) return st;
  auto events = EventPairs::create(iters);
  if (!events) return events.status();
  const std::vector<Event>& start = events->start;
  const std::vector<Event>& stop = events->stop;
  SEAM_CUDA_CHECK(kernels::waitFlag(gate->device(), 1, stream->get()));
  for (int i = 0; i < iters; ++i) {
    if (Status st = start[i].record(*stream); !st) return st;
    SEAM_NCCL_CHECK(ncclAllReduce(buf->get(), buf->get(), count, ncclFloat, ncclSum, comm.get(), stream->get()));
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

Expected<AllReduceBench> benchAllReduce(std::int64_t bytes, int iters) {
  if (bytes < 4 || bytes % 4 != 0) {
    return Status::invalid("--bytes " + std::to_string(bytes) + " is not a positive multiple of 4 (fp32 elements)");
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
  for (int r = 0; r < n; ++r) bench.bare_median_us = std::max(bench.bare_median_us, summarizeTimes(us[r]).median);

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
  if (count > static_cast<std::size_t>(INT32_MAX)) return Status::invalid("--bytes is too large for one row");
  auto run = runPlanOnGpus(plan, options);
  if (!run) return run.status();
  if (run->hung) return Status::internal("the one-op plan hung: " + run->hang_report);
  for (const OpTiming& t : run->timings) bench.plan_median_us = std::max(bench.plan_median_us, t.median_us);

  const double factor = busBandwidthFactor(OpKind::kAllReduce, n);
  bench.bare_busbw = algBandwidthGBs(bytes, bench.bare_median_us) * factor;
  bench.plan_busbw = algBandwidthGBs(bytes, bench.plan_median_us) * factor;
  return bench;
}

}  // namespace seam::backend
