// Private to backend/: one rank of a GPU run (executor.h) and the state its
// thread shares with the others (SharedRun). A RankExecutor owns its device's
// stream, communicators, cuBLAS handle and buffers, runs the rank's ops in plan
// order as the replay does (sim/src/replay/replay.h) and publishes its progress.
//
// The host tracks every buffer's layout (row kind, row count, padding mode)
// exactly as the replay does, so each op knows which rows to read and where
// to write them without looking at the data.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "activity_trace.h"
#include "handles.h"
#include "peer_kernels.h"
#include "seam/backend/executor.h"
#include "seam/backend/raii.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/lane_rows.h"
#include "seam/sim/plan/rows.h"
#include "seam/sim/plan/tbo.h"

namespace seam::backend::detail {

/// How often a waiting rank thread looks at its events and communicators.
constexpr auto kPollInterval = std::chrono::microseconds(20);
/// cuBLAS workspace per rank, allocated up front so that no GEMM allocates
/// (an allocation could wait on a hung NCCL kernel).
constexpr std::size_t kBlasWorkspaceBytes = 32u << 20;
/// Layout notes kept per rank (a malformed plan would otherwise flood them).
constexpr int kMaxLayoutNotesPerRank = 4;
/// Ops enqueued behind one gate (see RankExecutor::run): few enough that the
/// stream's queue of pending work never fills while the gate holds it (a
/// full queue blocks the launching host thread, which then never opens the
/// gate: a deadlock). Bounded by ops and by an estimate of the kernels,
/// copies and NCCL calls they launch (gateWindows).
constexpr int kGateWindowOps = 64;
constexpr int kGateWindowLaunches = 384;
/// Launches estimated for any op but a routed MoE compute (the DP lowering's
/// copies, fills and collectives are the most, about 6).
constexpr int kOpLaunchesBound = 8;
/// A gate value that every wait passes: stores it to release a stream for good.
constexpr int kGateOpen = INT32_MAX;

/// The message of the Status a rank thread returns when the run was aborted
/// (by the watchdog or because another rank failed): not an error of its own.
constexpr const char* kAborted = "aborted";

/// What the watchdog reads of each rank thread.
struct RankProgress {
  std::atomic<std::int64_t> counter{0};  ///< bumps on every setup step and completed op
  std::atomic<int> op_index{0};  ///< first op of the current iteration not completed on the device
  std::atomic<int> iteration{0};
  std::atomic<bool> setting_up{true};
  std::atomic<bool> done{false};      ///< the thread has returned (finished, failed or aborted)
  std::atomic<bool> finished{false};  ///< every iteration completed
};

/// A barrier of the rank threads that gives up when the run is aborted (a
/// rank that failed never arrives).
class SpinBarrier {
 public:
  explicit SpinBarrier(int count) : count_(count) {}
  /// False when `abort` was set while waiting.
  bool arriveAndWait(const std::atomic<bool>& abort) {
    const int generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_acq_rel);
      return true;
    }
    while (generation_.load(std::memory_order_acquire) == generation) {
      if (abort) return false;
      std::this_thread::yield();
    }
    return true;
  }

 private:
  const int count_;
  std::atomic<int> arrived_{0};
  std::atomic<int> generation_{0};
};

/// Eager steps and graph replays run untimed before the timed ones.
constexpr int kGraphWarmup = 2;
/// Graph replays traced with CUPTI; the last one's kernels are summed.
constexpr int kTracedReplays = 3;

/// A group that some rank's `ar_add_norm` ops reduce over, as the run decided
/// before the rank threads started: fused or not (one answer for every
/// member, so that no member runs the kernel while another calls NCCL), and,
/// once every member has set up, every member's signals and workspace.
struct PeerGroup {
  std::vector<int> members;
  bool fused = false;
  std::string path;  ///< the note saying which path its ops take and why
  int blocks = 0;    ///< the fused kernel's grid on every member
  std::size_t slot_elems = 0;
  std::vector<kernels::PeerSignals*> signals;  ///< by place; each member fills its own during setup
  std::vector<float*> workspace;
};

/// State every rank thread reads: the plan, its groups and rows, the weights.
struct SharedRun {
  /// `local_ranks`: the rank threads of this process (the plan's world, or 1
  /// under one process per rank), which its barriers wait for.
  SharedRun(const Plan& p, const GpuRunOptions& o, int local_ranks)
      : plan(p),
        options(o),
        topo(p.source.config),
        lanes(laneRowsOf(p, topo)),
        rows(lanes.front().rows),
        other_rows(lanes.front().other_rows),
        dp(lanes.front().dp),
        stacks(p.source.model.pattern.mtp.empty() ? 1 : 2),
        progress(new RankProgress[p.world()]),
        window_barrier(local_ranks),
        setup_barrier(local_ranks),
        step_barrier(local_ranks) {
    // The ranks meet before releasing each window only when they have the
    // same number of windows (a plan with pipeline stages need not).
    barrier_windows = std::all_of(p.ranks.begin(), p.ranks.end(), [&](const std::vector<Op>& ops) {
      return ops.size() == p.ranks.front().size();
    });
  }

  const Plan& plan;
  GpuRunOptions options;
  Topology topo;
  /// Lane 0 (the batch), then a TBO plan's halves (lanes 1, 2 = Half::kA, kB).
  std::vector<LaneRows> lanes;
  const RowMap& rows;        ///< lane 0's: full rows in the plan's padding mode
  const RowMap& other_rows;  ///< lane 0's: full rows in the other mode (a plan may read either)
  const DpLayouts& dp;  ///< lane 0's DP buffers of both padding modes (the lowering's geometry)
  int stacks;
  int capacity_rows = 1;  ///< rows every row buffer holds: the most any op reads or writes
  /// First op index of each gate window, the same on every rank (their
  /// window barriers pair up): gateWindows().
  std::vector<int> window_begin;
  std::map<std::pair<int, int>, numeric::StageWeights> weights;  ///< (stack, stage) -> weights
  /// MoE stages' router and routed experts (their shared expert, and with it
  /// the norm weight, is in `weights`; numeric::moeWeights).
  std::map<std::pair<int, int>, numeric::MoeWeights> moe_weights;
  numeric::MoeShape moe;  ///< the model's numeric MoE at options.shape
  /// True when stage `stage` of stack `stack` is a MoE stage (it routes).
  bool isMoe(int stack, int stage) const {
    const int si = plan.stageIndex(stack, stage);
    return stage >= 0 && si >= 0 && plan.stages[si].kind == LayerKind::kMoe;
  }
  ncclUniqueId id{};
  std::unique_ptr<RankProgress[]> progress;
  std::atomic<bool> abort{false};
  SpinBarrier window_barrier;
  SpinBarrier setup_barrier;  ///< every member's peer pointers are published
  SpinBarrier step_barrier;   ///< eager steps and graph replays start together
  bool barrier_windows = false;
  std::vector<PeerGroup> peer_groups;
  SharedTrace trace;  ///< of the traced graph replays (first_local_rank starts and stops it)
  /// One process per rank (executor.h's ProcessGroup): the only rank of this
  /// process is `first_local_rank`, on `local_device`; no group is fused.
  bool one_rank_per_process = false;
  int first_local_rank = 0;
  int local_device = -1;

  const RowMap& fullMap(DpPadding mode) const { return lanes.front().fullMap(mode); }
  bool real() const { return options.mode == numeric::Mode::kReal; }

  /// Records the first failure and stops every rank.
  void fail(Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_.isOk()) first_error_ = std::move(status);
    abort = true;
  }
  Status firstError() {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_error_;
  }

 private:
  std::mutex mutex_;
  Status first_error_;
};

// ---- the run's plan, before the rank threads start (shared_run.cc) -----------

/// The largest row count any op of any rank may touch, so that every row
/// buffer can be allocated once, before the first op, and no op (even of a
/// malformed plan) reads or writes outside it.
int capacityRows(const SharedRun& s);

/// Decides, for every group an `ar_add_norm` op of some rank reduces over,
/// whether it runs fused (GpuRunOptions::fuse_ar_add_norm, the members' peer
/// access, the group size, the workspace a slot needs), and sizes it.
void planPeerGroups(SharedRun& s, const std::vector<DeviceInfo>& devices);

/// Generates the weights of every (stack, stage) some rank computes or
/// normalizes at, once, on a few host threads (they are large at real shapes).
void buildWeights(SharedRun& s);

/// Splits the op indices into gate windows of at most kGateWindowOps ops and
/// kGateWindowLaunches estimated launches, op index i weighing the most it
/// launches on any rank (a routed MoE compute: a router GEMM, the top-k, and
/// two GEMMs, a relu, a rounding and a gated add per expert). Call after
/// buildWeights (the MoE shape).
std::vector<int> gateWindows(const SharedRun& s);

/// One tensor of one rank: device rows plus the layout the host tracks.
struct DeviceRows {
  DeviceArray<float> data;
  bool present = false;
  RowKind kind = RowKind::kNone;
  int rows = 0;
  DpPadding full_mode = DpPadding::kMaxLen;

  float* row(int i, int h) const { return data.get() + static_cast<std::size_t>(i) * h; }
  void setLayout(const DeviceRows& o) {
    present = o.present;
    kind = o.kind;
    rows = o.rows;
    full_mode = o.full_mode;
  }
};

/// An aux snapshot (Replay::Snap).
struct Snapshot {
  int stack = 0, stage = -1;
  DeviceRows* buf = nullptr;
};

/// The members of an op's group and this rank's place among them.
struct Group {
  std::vector<int> members;
  int me = 0;
  ncclComm_t comm = nullptr;  ///< null for a group of one
  int size() const { return static_cast<int>(members.size()); }
};

/// One rank: its device, stream, communicators, buffers, and its ops.
class RankExecutor {
 public:
  RankExecutor(SharedRun& shared, int rank)
      : s_(shared),
        rank_(rank),
        h_(shared.options.shape.hidden),
        ops_(shared.plan.ranks[rank]),
        progress_(shared.progress[rank]),
        tbo_(shared.lanes.size() > 1) {}

  ~RankExecutor() { releaseGate(); }

  Status setUp();
  Status run();
  Status finalizeComms();
  /// Lets this rank's stream run past every gate (any thread may call it:
  /// the watchdog does, so that a stalled stream can drain).
  void releaseGate() {
    if (int* flag = gate_host_.load()) __atomic_store_n(flag, kGateOpen, __ATOMIC_RELEASE);
    if (int* flag = peer_abort_host_.load()) __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
  }
  void abortComms() {
    releaseGate();
    for (auto& c : axis_comms_) c.abort();
    world_comm_.abort();  // joins a split still running under it
    for (ncclComm_t& c : split_slots_) {
      if (c) ncclCommAbort(std::exchange(c, nullptr));
    }
  }

  int device() const { return device_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<std::vector<double>>& samples() const { return samples_; }
  const std::vector<std::int64_t>& opBytes() const { return op_bytes_; }
  const std::vector<int>& opGroupSize() const { return op_group_size_; }
  const std::vector<ArAddNormPath>& opPath() const { return op_path_; }
  /// The NCCL primitive op i ran as, or "" (none, or several kinds).
  struct NcclCall {
    std::string call;
    std::int64_t count = 0;
    int calls = 0;  ///< calls per iteration
  };
  const std::vector<NcclCall>& opNccl() const { return op_nccl_; }
  const GraphStep& graphStep() const { return graph_step_; }
  /// Host copies of the last iteration's finals and snapshots (after run()).
  bool finalDone(int stack) const { return final_done_[stack]; }
  const DeviceRows& finalRows(int stack) const { return finals_[stack]; }
  const std::vector<float>& finalHost(int stack) const { return final_host_[stack]; }
  struct HostSnapshot {
    int stack, stage;
    RowKind kind;
    int rows;
    std::vector<float> values;
  };
  const std::vector<HostSnapshot>& snapshotsHost() const { return snapshots_host_; }

 private:
  // ---- waiting (rank_executor.cc) ----------------------------------------------
  void publishDeviceProgress();
  Status waitComm(ncclComm_t comm);
  Status issued(ncclComm_t comm, ncclResult_t res, const char* call, const char* file, int line);
  Status waitIteration();
  /// An asynchronous error of `c` (the remaining ops would never complete).
  Status asyncError(const NcclComm& c) const;
  Status aborted() const { return Status::internal(kAborted); }

  struct StageShard {
    DeviceArray<float> w_in, w_out;  ///< hidden x cols and cols x hidden, row-major
    int cols = 0;
  };
  /// Columns `cols` of a stage's or an expert's weights, uploaded.
  Expected<StageShard> uploadSlice(const numeric::StageWeights& w, numeric::ColumnRange cols);
  /// This rank's part of a MoE stage beside its shared-expert slice
  /// (numeric::moeSlice): the router and its EP slice's experts on its
  /// moe_tp columns.
  struct MoeShard {
    DeviceArray<float> router;  ///< hidden x experts, row-major
    int first_expert = 0;       ///< experts[i] is expert first_expert + i
    std::vector<StageShard> experts;
  };

  // ---- setup (rank_setup.cc) ---------------------------------------------------
  Status createComms();
  Status allocate();
  Status uploadWeights();
  Status uploadEmbeddings();
  Status setUpPeers();
  Expected<DeviceArray<float>> upload(const std::vector<float>& host);

  // ---- the run (rank_executor.cc) ----------------------------------------------
  Status resetState();
  /// Enqueues op i (and the copy of a final norm's rows); `timed`: between
  /// its start and stop events, counted for the watchdog.
  Status enqueueOp(int i, bool timed);

  // ---- graph steps (rank_graph.cc) ---------------------------------------------
  /// Eager steps, graph capture and replays, CUPTI's trace of a replay, the
  /// replayed finals against the eager ones: GraphStep.
  Status runGraphSteps();
  /// Waits for what is queued and lets the watchdog see the step complete.
  Status drain();
  /// Eager steps, each op launched as the host gets to it; the timed ones'
  /// microseconds into `eager` (events' pairs reused).
  Status runEagerSteps(const EventPairs& events, std::vector<double>* eager);
  /// One whole step captured into `graph`, NCCL calls included, instantiated.
  Expected<GraphExec> captureStep(CudaGraph* graph);
  /// Warm-up replays, then the timed ones back to back from a common start.
  Status replayGraph(const GraphExec& exec, const EventPairs& events);
  /// kTracedReplays more replays while CUPTI records every kernel, copy and memset.
  Status traceReplays(const GraphExec& exec);
  /// GraphStep::identical: the replayed step's final rows against the eager timed iterations'.
  Status compareReplayedFinals();

  // ---- ops (rank_ops.cc, rank_dp.cc) -------------------------------------------
  Status exec(const Op& op, int index);
  Status allReduce(const Op& op, int index);
  Status reduceScatter(const Op& op, int index);
  Status allGather(const Op& op, int index);
  Status dispatch(const Op& op, int index);
  Status combine(const Op& op, int index);
  /// A DP op (dp_gather_*, dp_scatter, dp_reduce_scatter) as SGLang runs
  /// it: the steps of its lowering (sim/plan/dp_gather.h), one NCCL call per
  /// collective step (rank_dp.cc).
  Status dpOp(const Op& op, int index);
  struct DpFlight;
  /// "rank 3 op 12 (dp_gather_partial, lowered all_reduce)".
  std::string dpWhere(const Op& op, int index, const DpStep& s) const;
  /// A local step of the lowering (pad, zero, slot copies, trim) on the rows in flight.
  Status dpLocalStep(const Op& op, int index, const DpStep& s, DpFlight* f);
  /// A collective step: one NCCL call on the step's group (all_gatherv: a
  /// broadcast per member into its slot of `geometry`).
  Status dpCollectiveStep(const Op& op, int index, const DpGeometry& geometry, const DpStep& s,
                          DpFlight* f);
  Status slice(const Op& op, int index);
  Status zeroFill(const Op& op, int index);
  Status add(const Op& op, int index);
  Status addNorm(const Op& op, int index);
  Status arAddNorm(const Op& op, int index);
  Status normInto(DeviceRows& target, const DeviceRows& source, const Op& op);
  /// The layout a norm's output takes and the final-rows bookkeeping.
  void finishNorm(DeviceRows& target, const DeviceRows& source, const Op& op);
  Status compute(const Op& op, int index);
  /// out = relu(x W_in[:, J]) W_out[J, :] for a weight slice (a stage's or
  /// an expert's), rounded in real mode.
  Status mlpSlice(const StageShard& w, const DeviceRows& x, float* out);
  /// Adds the routed experts this rank owns onto scratch_ (its shared slice).
  Status routedExperts(const MoeShard& m, const DeviceRows& x);
  Status snapshot(const Op& op, int index);
  /// A TBO plan: the hidden state and residual of the lane of `half` become
  /// the current ones, the others parked (Replay::activate).
  void activate(Half half);
  /// The TBO split (slice) or merge (add) of the current half's rows (Replay::tboMove).
  Status tboMove(const Op& op, int index);
  /// The LongCat-Flash branch's fork or merge (an add on the branch tensor).
  Status forkOrMerge(const Op& op, int index);
  Status send(const Op& op, int index);
  Status recv(const Op& op, int index);

  // ---- helpers (rank_executor.cc) -----------------------------------------------
  /// The current lane's rows (the batch's, or under TBO the current op's half's).
  const LaneRows& lane() const { return s_.lanes[lane_]; }
  const RowMap& rowMap() const { return lane().rows; }
  const RowMap& fullMap(DpPadding mode) const { return lane().fullMap(mode); }
  Group groupOf(const Op& op) const;
  Group groupOnAxis(Axis axis) const;
  ncclComm_t commOf(Axis axis) const;
  DeviceRows& bufferOf(Tensor t);
  DpPadding fullModeOf(const Op& op, int count, int rank);
  /// The reorders of prefill CP onto sequence rows and back onto the shard (a slice op).
  Status reorderCp(const Op& op, int index);
  Status copyRows(float* dst, const float* src, int rows);
  Status zeroRows(float* dst, int rows);
  Status roundIfReal(float* p, int rows);
  Status allReduceInPlace(const Group& g, float* p, int rows);
  /// ncclReduceScatter of `chunk` rows per member from `in` into scratch_ (rounded in real mode).
  Status reduceScatterChunks(const Group& g, const float* in, int chunk);
  /// pynccl's all_gatherv: one ncclBroadcast per member, rooted at it, in a
  /// group; member i's `slice(i)` = (first row, rows) in `out`, its rows
  /// coming from `mine` on the root. Members of no rows are skipped.
  Status broadcastEach(const Group& g, const float* mine, float* out,
                       const std::function<std::pair<int, int>(int)>& slice);
  /// Member i's rows to send it, and where its rows to this member land (first row, rows).
  using RowsToSend = std::function<std::pair<const float*, int>(int)>;
  using RowsToReceive = std::function<std::pair<float*, int>(int)>;
  /// One NCCL group of a send to and a receive from every other member (the
  /// all-to-all's dispatch and combine), empty messages skipped.
  Status exchangeEach(const Group& g, const RowsToSend& send, const RowsToReceive& recv);
  /// Notes the NCCL primitive the current op calls (first iteration only).
  void recordNccl(const char* call, std::size_t count);
  /// The index of the peer group with exactly these members, or -1.
  int peerGroupOf(const std::vector<int>& members) const;
  /// Swaps the scratch buffer in as `target`'s data (the op wrote its output there).
  void takeScratch(DeviceRows& target) { std::swap(target.data, scratch_.data); }
  void expectLayout(const DeviceRows& b, RowKind kind, int rows, const Op& op, int index);
  void note(std::string text);
  /// The bytes an op's timing is reported against (OpTiming::bytes).
  void record(int index, std::int64_t bytes) { op_bytes_[index] = bytes; }
  std::int64_t bytesOf(int rows) const {
    return static_cast<std::int64_t>(rows) * h_ * sizeof(float);
  }

  SharedRun& s_;
  const int rank_;
  const int h_;
  const std::vector<Op>& ops_;
  RankProgress& progress_;
  int device_ = 0;

  std::optional<PinnedFlag> gate_;  ///< declared before the stream: outlives the work queued on it
  std::atomic<int*> gate_host_{nullptr};
  std::optional<PinnedFlag> peer_abort_;  ///< nonzero: the fused kernel stops waiting for peers
  std::atomic<int*> peer_abort_host_{nullptr};
  int gate_target_ = 0;
  std::optional<Stream> stream_;
  BlasHandle blas_;
  DeviceArray<char> blas_workspace_;
  NcclComm world_comm_;
  std::vector<NcclComm> axis_comms_;         ///< by Axis; empty where not created
  ncclComm_t split_slots_[kAxisCount] = {};  ///< where a pending ncclCommSplit writes its child
  std::vector<Event> start_, stop_;          ///< per op
  std::optional<Event> end_;                 ///< after the last op and the copies that follow it

  /// This rank's signals and workspace of each fused peer group (peers write
  /// into them), and the kernel arguments of each, by peer group index.
  std::vector<DeviceArray<kernels::PeerSignals>> peer_signals_;
  std::vector<DeviceArray<float>> peer_workspace_;
  std::map<int, kernels::FusedArAddNormArgs> fused_args_;

  DeviceRows hidden_, residual_, scratch_, staging_;
  /// A TBO plan's lanes not in use (index: lane; Replay::Parked): each lane's
  /// hidden state and residual is either here or in hidden_ / residual_.
  DeviceRows parked_hidden_[kHalfLanes], parked_residual_[kHalfLanes];
  int lane_ = 0;
  const bool tbo_;     ///< the plan runs TBO halves (it has their lanes)
  DeviceRows branch_;  ///< a branch's copy of its input, then its contribution until merged
                       ///< (allocated if used)
  std::vector<DeviceRows> snapshot_pool_;
  std::vector<Snapshot> snapshots_;
  size_t snapshots_taken_ = 0;  ///< snapshot ops run in this iteration
  std::vector<DeviceRows> finals_;
  std::vector<bool> final_done_;
  int pending_final_ = -1;  ///< stack whose final norm the op just ran
  DeviceArray<float> mid_;  ///< relu(x W_in) of the widest stage shard or routed expert slice
  /// MoE stages: router scores and dense gates (rows x experts; -1 where an
  /// expert is not chosen) and one routed expert's output (rows x hidden).
  DeviceArray<float> moe_scores_, moe_gates_, expert_out_;
  DeviceArray<float> embed0_;
  /// Stack s's embedding rows for the MTP projection, per (stack, kind, full mode).
  std::map<std::tuple<int, RowKind, DpPadding>, DeviceArray<float>> project_embed_;
  std::map<int, StageShard> shards_;    ///< by stage index (a MoE stage: its shared expert)
  std::map<int, MoeShard> moe_shards_;  ///< by stage index, MoE stages only
  std::map<std::pair<int, int>, DeviceArray<float>> norm_weights_;  ///< real mode

  int iteration_ = 0;
  int current_op_ = 0;                        ///< the op exec() runs
  bool capturing_ = false;                    ///< the stream is being captured: no event queries
  int enqueued_ = 0, completed_ = 0;          ///< ops of the current iteration
  std::vector<std::vector<double>> samples_;  ///< per op, us per timed iteration
  std::vector<std::int64_t> op_bytes_;
  std::vector<int> op_group_size_;
  std::vector<ArAddNormPath> op_path_;
  std::vector<NcclCall> op_nccl_;
  GraphStep graph_step_;
  std::vector<std::vector<float>> graph_final_host_;
  std::vector<std::string> notes_;
  std::set<std::string> noted_;
  int layout_notes_ = 0;
  std::vector<std::vector<float>> final_host_;
  std::vector<HostSnapshot> snapshots_host_;
};

/// Issues an NCCL call on `comm` and waits until the communicator is ready.
#define SEAM_NCCL_ISSUE(comm, call)                                                       \
  do {                                                                                    \
    if (Status seam_st_ = issued((comm), (call), #call, __FILE__, __LINE__); !seam_st_) { \
      return seam_st_;                                                                    \
    }                                                                                     \
  } while (0)

}  // namespace seam::backend::detail
