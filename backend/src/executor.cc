// The public entry points of the CUDA/NCCL executor (executor.h): the names
// of its options, and a run of a plan: one thread and one GPU per rank
// (rank_executor.h), the watchdog on the calling thread, the output assembled
// from the ranks' outcomes (run_output.h). The bare-NCCL all-reduce
// benchmark is in bench_collectives.cc.
#include "seam/backend/executor.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "peer_kernels.h"
#include "rank_executor.h"
#include "rank_outcome.h"
#include "run_output.h"
#include "seam/backend/check.h"
#include "seam/sim/plan/rows.h"

namespace seam::backend {

const char* arAddNormPathName(ArAddNormPath path) {
  switch (path) {
    case ArAddNormPath::kFused:
      return "fused";
    case ArAddNormPath::kNccl:
      return "nccl+add_norm";
    case ArAddNormPath::kLocal:
      return "add_norm";
    case ArAddNormPath::kFusedLl:
      return "fused-ll";
    case ArAddNormPath::kNotArAddNorm:
      break;
  }
  return "-";
}

namespace {
constexpr const char* kPeerProtocolNames[] = {"auto", "flag", "ll"};
}  // namespace

const char* peerProtocolName(PeerProtocol protocol) {
  return kPeerProtocolNames[static_cast<int>(protocol)];
}

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
         static_cast<std::size_t>(rows) * static_cast<std::size_t>(h) * sizeof(float) <=
             kFusedLlAutoBytes;
}

Status validateRunOptions(const GpuRunOptions& o) {
  if (o.shape.hidden < 1)
    return Status::invalid("hidden size " + std::to_string(o.shape.hidden) + " is not positive");
  if (o.shape.inner < 1)
    return Status::invalid("inner size " + std::to_string(o.shape.inner) + " is not positive");
  if (o.warmup < 0) return Status::invalid("warmup " + std::to_string(o.warmup) + " is negative");
  if (o.iters < 1) return Status::invalid("iters " + std::to_string(o.iters) + " is not positive");
  if (!(o.watchdog_seconds > 0)) return Status::invalid("the watchdog timeout must be positive");
  if (o.graph_replays < 0)
    return Status::invalid("graph replays " + std::to_string(o.graph_replays) + " is negative");
  return Status::ok();
}

namespace {

using Clock = std::chrono::steady_clock;
using detail::kAborted;
using detail::outcomeOf;
using detail::ProcessReport;
using detail::RankEnd;
using detail::RankExecutor;
using detail::RankOutcome;
using detail::RankProgress;
using detail::SharedRun;

/// How often the watchdog looks at the progress counters.
constexpr auto kWatchdogTick = std::chrono::milliseconds(20);

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

/// Refuses a plan or options the GPUs cannot run, before any device is touched.
Status checkRunnable(const Plan& plan, const GpuRunOptions& options, ProcessGroup* processes) {
  if (Status st = validateRunOptions(options); !st) return st;
  const int world = plan.world();
  if (world < 1) return Status::invalid("the plan has no ranks");
  if (Status st = validate(plan.source.config); !st) return st;
  if (plan.cp_layout != CpLayout::kReplicated && plan.source.config.attn_dp > 1) {
    // The model boundary's CP gather lands on cp_gathered rows, which the
    // device reorder (reorderCp) does not read yet; the simulator checks these plans.
    return Status::invalid(
        "GQA prefill CP under attention DP (CP-sharded DP shards) does not run on GPUs yet");
  }
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (op.divide_by != 1 || op.chunk_shift != 0)
        return Status::invalid("a planted rank order, chunk or reduction scale (divide_by " +
                               std::to_string(op.divide_by) + ", chunk_shift " +
                               std::to_string(op.chunk_shift) +
                               ") does not run on GPUs; the simulator checks these plans");
    }
  }
  if (plan.source.config.world() != world) {
    return Status::invalid("the plan has " + std::to_string(world) +
                           " ranks but its config a world of " +
                           std::to_string(plan.source.config.world()));
  }
  if (processes != nullptr && processes->size() != world) {
    return Status::invalid("the plan has " + std::to_string(world) + " ranks but " +
                           std::to_string(processes->size()) +
                           " processes were started: one process per rank (mpirun -np " +
                           std::to_string(world) + ")");
  }
  return Status::ok();
}

/// The ranks this process runs: every rank, or (one process per rank) its own.
Expected<std::vector<int>> localRanks(int world, int visible, ProcessGroup* processes) {
  std::vector<int> local;
  if (processes == nullptr) {
    if (world > visible) {
      return Status::invalid("world " + std::to_string(world) + " needs " + std::to_string(world) +
                             " GPUs, " + std::to_string(visible) + " visible");
    }
    for (int r = 0; r < world; ++r) local.push_back(r);
  } else {
    if (processes->device() >= visible) {
      return Status::invalid("rank " + std::to_string(processes->rank()) + " takes GPU " +
                             std::to_string(processes->device()) +
                             " of its host (its place among the host's processes), " +
                             std::to_string(visible) + " visible: one process per GPU");
    }
    local.push_back(processes->rank());
  }
  return local;
}

/// What every rank thread shares, planned before they start: buffer
/// capacity, fused groups (their paths into `notes`), weights, gate windows,
/// and the NCCL unique id (rank 0's, under one process per rank).
Status planSharedRun(SharedRun& shared, const std::vector<DeviceInfo>& devices,
                     ProcessGroup* processes, std::vector<std::string>* notes) {
  if (processes != nullptr) {
    shared.one_rank_per_process = true;
    shared.first_local_rank = processes->rank();
    shared.local_device = processes->device();
  }
  shared.capacity_rows = capacityRows(shared);
  planPeerGroups(shared, devices);
  for (const detail::PeerGroup& g : shared.peer_groups) notes->push_back(g.path);
  buildWeights(shared);
  shared.window_begin = gateWindows(shared);
  if (processes == nullptr) {
    SEAM_NCCL_CHECK(ncclGetUniqueId(&shared.id));
    return Status::ok();
  }
  // NCCL's own bootstrap: rank 0's unique id, handed to every process.
  std::string id(sizeof shared.id, '\0');
  if (processes->rank() == 0) {
    SEAM_NCCL_CHECK(ncclGetUniqueId(&shared.id));
    std::memcpy(id.data(), &shared.id, sizeof shared.id);
  }
  id = processes->broadcast(id);
  if (id.size() != sizeof shared.id)
    return Status::internal("the NCCL unique id broadcast has the wrong size");
  std::memcpy(&shared.id, id.data(), sizeof shared.id);
  return Status::ok();
}

/// Rank r's thread: set up, run, finalize; a failure stops every rank.
void runRank(SharedRun& shared, RankExecutor& rank, int r) {
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
}

RankPosition positionOf(const RankProgress& p, int r) {
  return {.rank = r,
          .op_index = p.op_index.load(),
          .iteration = p.iteration.load(),
          .setting_up = p.setting_up.load(),
          .finished = p.finished.load()};
}

/// How the watchdog saw the run end.
struct Watch {
  bool hung = false;
  std::vector<RankPosition> positions;  ///< of every local rank, when it hung
  double idle_seconds = 0;
};

/// The watchdog, on this thread, until every local rank's thread is done:
/// counters that stop for the timeout abort the run as hung (each rank
/// thread aborts its own communicators; a gated stream drains).
Watch watchRanks(SharedRun& shared, const std::vector<std::unique_ptr<RankExecutor>>& ranks,
                 const std::vector<int>& local, double timeout_seconds) {
  Watch watch;
  StallDetector detector(timeout_seconds);
  const auto t0 = Clock::now();
  std::vector<std::int64_t> counters(local.size());
  for (;;) {
    std::this_thread::sleep_for(kWatchdogTick);
    bool all_done = true;
    for (size_t i = 0; i < local.size(); ++i) {
      counters[i] = shared.progress[local[i]].counter.load();
      all_done = all_done && shared.progress[local[i]].done.load();
    }
    if (all_done) break;
    if (!shared.abort && detector.update(counters, secondsSince(t0))) {
      for (int r : local) watch.positions.push_back(positionOf(shared.progress[r], r));
      watch.hung = true;
      shared.abort = true;
      for (int r : local) ranks[r]->releaseGate();
    }
  }
  watch.idle_seconds = detector.idleSeconds();
  return watch;
}

/// This process's report of its only rank (one process per rank).
ProcessReport reportOf(SharedRun& shared, const RankExecutor& rank, int r, const Watch& watch) {
  ProcessReport mine;
  const Status failed = shared.firstError();
  mine.position = positionOf(shared.progress[r], r);
  if (watch.hung) {
    mine.end = RankEnd::kHung;
    mine.position = watch.positions.front();
    mine.idle_seconds = watch.idle_seconds;
  } else if (!failed) {
    mine.end = RankEnd::kFailed;
    mine.code = failed.code();
    mine.message = failed.message();
  } else {
    mine.outcome = outcomeOf(shared, rank, r);
  }
  return mine;
}

/// The result of a run of this process's every rank that ended: the hang
/// report, the first failure, or the assembled output and its device hash.
Expected<GpuRunResult> finishRun(SharedRun& shared,
                                 const std::vector<std::unique_ptr<RankExecutor>>& ranks,
                                 const Watch& watch, GpuRunResult result) {
  const Plan& plan = shared.plan;
  if (watch.hung) {
    result.hung = true;
    std::set<std::string> seen(result.notes.begin(), result.notes.end());
    for (const auto& r : ranks) {
      for (const std::string& n : r->notes()) {
        if (seen.insert(n).second) result.notes.push_back(n);
      }
    }
    result.hang_report = formatHangReport(plan, watch.positions, watch.idle_seconds,
                                          shared.options.warmup + shared.options.iters);
    return result;
  }
  if (Status st = shared.firstError(); !st) return st;
  std::vector<RankOutcome> outcomes;
  for (int r = 0; r < plan.world(); ++r) outcomes.push_back(outcomeOf(shared, *ranks[r], r));
  detail::assembleOutput(shared, outcomes, &result);
  detail::collectOutcomes(shared, outcomes, &result);
  auto hash = detail::deviceHash(shared, ranks, result.output, &result.notes);
  if (!hash) return hash.status();
  result.device_hash = *hash;
  if (result.device_hash != result.output.hash()) {
    result.notes.push_back("the device hash differs from the hash of the rows copied to the host");
  }
  return result;
}

}  // namespace

Expected<GpuRunResult> runPlanOnGpus(const Plan& plan, const GpuRunOptions& options,
                                     ProcessGroup* processes) {
  if (Status st = checkRunnable(plan, options, processes); !st) return st;
  const int world = plan.world();
  auto devices = listDevices();
  if (!devices) return devices.status();
  auto local = localRanks(world, static_cast<int>(devices->size()), processes);
  if (!local) return local.status();
  auto versions = runtimeVersions();
  if (!versions) return versions.status();

  GpuRunResult result;
  result.device = processes == nullptr
                      ? describeDevices(*devices, world)
                      : std::to_string(world) + "x " + (*devices)[processes->device()].name +
                            " (one process per GPU)";
  result.versions = *versions;
  if (options.mode == numeric::Mode::kReal) {
    result.notes.push_back(
        "real mode: values are stored in fp32 and rounded to bf16 after every op; NCCL sums the "
        "bf16 values in fp32 and the sum is rounded once");
  }
  SharedRun shared(plan, options, static_cast<int>(local->size()));
  if (Status st = planSharedRun(shared, *devices, processes, &result.notes); !st) return st;

  RankSet rank_set;
  std::vector<std::unique_ptr<RankExecutor>>& ranks = rank_set.ranks;
  ranks.resize(world);
  for (int r : *local) ranks[r] = std::make_unique<RankExecutor>(shared, r);
  std::vector<std::thread> threads;
  for (int r : *local)
    threads.emplace_back([&shared, &ranks, r] { runRank(shared, *ranks[r], r); });
  const Watch watch = watchRanks(shared, ranks, *local, options.watchdog_seconds);
  for (std::thread& t : threads) t.join();

  if (processes != nullptr) {
    const int r = local->front();
    if (watch.hung) result.hung = true;
    return detail::joinProcesses(shared, *processes, reportOf(shared, *ranks[r], r, watch),
                                 std::move(result));
  }
  return finishRun(shared, ranks, watch, std::move(result));
}

}  // namespace seam::backend
