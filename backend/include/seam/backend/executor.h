// The CUDA/NCCL executor of plans (DESIGN §7): runs the same Plan objects as
// the ledger and the numeric CPU executor, one host thread and one GPU per
// rank, one NCCL communicator per group, with the op semantics of
// sim/src/replay/replay.h and the numeric model of sim/numeric.h, so that an exact
// mode run is bit-identical to runPlanNumeric and runReference. Every op is
// timed with CUDA events; a watchdog aborts a run that hangs and reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/backend/device.h"
#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/numeric.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::backend {

/// Before timed work the device is kept busy this long (a spinning kernel),
/// so that its clocks have risen from idle: a batch of short calls on an idle
/// H200 would otherwise end before they do.
inline constexpr double kWarmClockUs = 50'000;

/// How the members of the fused all-reduce + add + RMSNorm hand each other
/// their rows over peer memory.
enum class PeerProtocol : std::uint8_t {
  kAuto,  ///< kLl for calls of at most kFusedLlAutoBytes per member, else kFlag
  /// Rows pushed as plain data, then one release/acquire flag per block and
  /// peer: the flag waits for the data's stores to land, a second crossing.
  kFlag,
  /// Every 4-byte value travels with its call number in one 8-byte store (the
  /// "low latency" protocol of NCCL's LL), so a reader spins on the data itself:
  /// one crossing, twice the bytes. Rows of at most 4096 values.
  kLl,
};
/// "auto", "flag", "ll".
const char* peerProtocolName(PeerProtocol protocol);
/// Parses a peerProtocolName; false for anything else.
bool parsePeerProtocol(std::string_view name, PeerProtocol* protocol);
/// The LL region's size per sender: the values of one call it can carry
/// (fp32; rows are rounded up to whole line sets of 512 values).
inline constexpr std::size_t kFusedLlMaxBytes = 1u << 20;
/// Largest call (one member's fp32 rows) kAuto sends with kLl. Measured on 2x
/// H200 (docs/results/gpu/ll_2026-11-30): kLl was the faster up to 8 rows of
/// 4096 (128 KiB) and 16 rows of 2688 (168 KiB), kFlag from 16 rows of 4096
/// (256 KiB) on; kLl doubles the bytes and its readers spin on the data.
inline constexpr std::size_t kFusedLlAutoBytes = 192u << 10;
/// Whether the fused kernel sends a call of rows x h with kLl under `protocol`
/// (kAuto: up to kFusedLlAutoBytes; kLl: every call the LL region fits; a
/// call that does not fit, or rows wider than 4096, go with kFlag).
bool fusedSendsLl(PeerProtocol protocol, int rows, int h);

/// How to run a plan on the GPUs.
struct GpuRunOptions {
  numeric::Mode mode = numeric::Mode::kExact;
  numeric::Shape shape;          ///< row width and inner width of the numeric model
  int warmup = 2;                ///< untimed runs of the whole plan first
  int iters = 10;                ///< timed runs; the output comes from the last one
  double watchdog_seconds = 60;  ///< no progress for this long: abort and report a hang
  /// Run `ar_add_norm` ops as the fused one-shot all-reduce + add + RMSNorm
  /// kernel over peer memory where the group allows it (all members GPUs of
  /// this process with peer access, the rows within kPeerMaxSlotBytes);
  /// otherwise, and when false, as NCCL all-reduce + one add+norm kernel.
  bool fuse_ar_add_norm = true;
  /// How the fused kernel's members hand each other their rows (kAuto: the
  /// flagged-data protocol for small calls, kFusedLlAutoBytes; see PeerProtocol).
  PeerProtocol fused_protocol = PeerProtocol::kAuto;
  /// More than 0: after the timed iterations each rank also runs this many
  /// eager steps launched as the host goes (no gate, no per-op events), then
  /// captures one whole step (its NCCL calls included) in a CUDA graph and
  /// replays it this many times; see GraphStep.
  int graph_replays = 0;
};

/// How an `ar_add_norm` op ran (recorded per op; other ops: kNotArAddNorm).
enum class ArAddNormPath : std::uint8_t {
  kNotArAddNorm,
  kFused,    ///< the one-shot kernel over peer memory
  kNccl,     ///< ncclAllReduce, then the add+norm kernel
  kLocal,    ///< a group of one: the add+norm kernel alone
  kFusedLl,  ///< the one-shot kernel, its rows sent with the kLl protocol
};
/// "fused", "nccl+add_norm", "add_norm", "fused-ll", "-".
const char* arAddNormPathName(ArAddNormPath path);

/// Largest slot of the fused kernel's workspace (the rows of one member's
/// partial): a group whose ar_add_norm rows need more falls back to NCCL.
inline constexpr std::size_t kPeerMaxSlotBytes = 64u << 20;

/// Checks the options (positive sizes, at least one timed iteration, a
/// positive watchdog); the message names the bad value.
Status validateRunOptions(const GpuRunOptions& options);

/// Timing of one op of one rank over the timed iterations (CUDA events
/// around the op on the rank's stream, so a collective includes the wait for
/// its slowest member, as nccl-tests measures).
struct OpTiming {
  int rank = 0;
  int op_index = 0;
  OpKind kind = OpKind::kNorm;
  std::int8_t axis = kNoAxis;
  int group_size = 1;  ///< ranks in the op's group (1 for local ops)
  /// The size nccl-tests reports for this kind (fp32 bytes): the buffer of an
  /// all-reduce, the gathered output of an all-gather, the input of a
  /// reduce-scatter; the rows written for local ops.
  std::int64_t bytes = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  ArAddNormPath path = ArAddNormPath::kNotArAddNorm;
  /// The NCCL primitive the op ran as ("all_reduce", "reduce_scatter",
  /// "all_gather"; "" when none or several) and its count argument (fp32
  /// elements), so that bare NCCL can be timed on the same call.
  std::string nccl_call;
  std::int64_t nccl_count = 0;
};

/// One rank's decode step (GpuRunOptions::graph_replays): launched eagerly
/// by the host, replayed from a CUDA graph, and the sum of its kernels.
struct GraphStep {
  int rank = 0;
  double eager_median_us = 0, eager_p10_us = 0, eager_p90_us = 0;
  double graph_median_us = 0, graph_p10_us = 0, graph_p90_us = 0;
  /// Sum of the durations of the kernels, copies and memsets one replay ran on
  /// this rank's device, as CUPTI recorded them (0 when CUPTI could not trace;
  /// a note says why).
  double kernel_sum_us = 0;
  double kernel_busy_us = 0;  ///< their union: the device busy (kernels that overlap counted once)
  int kernels = 0;            ///< kernels, copies and memsets in that replay
  double op_sum_us =
      0;        ///< sum of the ops' medians (CUDA events around each op, launch gaps included)
  int ops = 0;  ///< ops in the step
  int replays = 0;
  /// The replayed step's final rows equal the eager step's, bit for bit.
  bool identical = false;
};

/// One rank's final rows, as it produced them (for per-rank verdicts).
struct RankFinals {
  int rank = 0;
  /// Per stack: the tokens of the rows (in row order) and the rows
  /// (tokens.size() * hidden floats). Empty when the rank never ran that
  /// stack's final norm (an earlier pipeline stage).
  std::vector<std::vector<int>> tokens;
  std::vector<std::vector<float>> rows;
};

/// The outcome of a GPU run. A hang is an outcome, not an error: `hung` is
/// set, `hang_report` says where every rank was, and there is no output.
struct GpuRunResult {
  /// Assembled exactly as runPlanNumeric assembles its output.
  NumericOutput output;
  /// FNV-1a 64 of the output rows computed on the devices (equals
  /// output.hash() when the device-to-host copies are faithful).
  std::uint64_t device_hash = 0;
  std::vector<RankFinals> finals;  ///< per rank on the last pipeline stage
  bool ranks_disagree = false;     ///< two ranks produced different rows for a token
  std::vector<OpTiming> timings;   ///< every op of every rank, rank-major
  std::string device;              ///< e.g. "2x NVIDIA H200"
  RuntimeVersions versions;
  bool hung = false;
  std::string hang_report;
  /// Per rank, when GpuRunOptions::graph_replays > 0.
  std::vector<GraphStep> graph;
  /// Facts about this run worth a line (fallback collectives used, rows an
  /// op found in an unexpected layout, the real-mode rounding rule).
  std::vector<std::string> notes;
};

/// The processes of a run that has one process per rank (`mpirun -np N
/// seam-gpu run`, across hosts): what the executor needs of them, as bytes.
/// tools/ implements it over MPI; backend/ never links MPI.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// This process's rank: the plan rank it runs.
  virtual int rank() const = 0;
  /// The number of processes: the plan's world.
  virtual int size() const = 0;
  /// The CUDA device this process's rank runs on (its rank among the
  /// processes of its host).
  virtual int device() const = 0;
  /// Every process gets rank 0's `bytes` (the NCCL unique id).
  virtual std::string broadcast(const std::string& bytes) = 0;
  /// Rank 0 gets every process's bytes in rank order; the others nothing.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
};

/// Runs `plan` on the visible GPUs: rank r on device r. Refuses (invalid
/// input) a world larger than the visible devices; device, CUDA, cuBLAS and
/// NCCL failures come back as internal errors.
///
/// With `processes`, every process of the group calls it with the same plan
/// and options and runs its own rank alone (NCCL's bootstrap with rank 0's
/// unique id, the axis communicators split from the world one as in one
/// process). `ar_add_norm` then runs as NCCL all-reduce + add+norm (the fused
/// kernel needs every member's memory in one process); the ranks' windows are
/// released by each process on its own. Rank 0 gathers every rank's final
/// rows, timings, graph steps and notes and returns the whole result (the
/// output hash then folded on the host from the gathered rows); the other
/// processes return the same verdict (error, hang or not) with no output.
Expected<GpuRunResult> runPlanOnGpus(const Plan& plan, const GpuRunOptions& options,
                                     ProcessGroup* processes = nullptr);

/// Compares one rank's final rows with an expected output (the CPU executor's
/// or the reference): the first differing element over that rank's tokens.
OutputDiff compareRankFinals(const RankFinals& finals, const NumericOutput& expected);

// ---- bandwidth (nccl-tests' definitions, doc/PERFORMANCE.md) --------------

/// Algorithm bandwidth in GB/s (1e9 bytes per second) of `bytes` in `us`.
double algBandwidthGBs(std::int64_t bytes, double us);
/// busbw / algbw for a collective of `kind` over `group_size` ranks:
/// 2(n-1)/n for the all-reduce family, (n-1)/n for all-gather, reduce-scatter
/// and all-to-all, 1 for send/recv; 0 for local ops and groups of one.
double busBandwidthFactor(OpKind kind, int group_size);

/// Median and the 10th / 90th percentiles (linear interpolation between
/// closest ranks) of a non-empty sample.
struct TimingSummary {
  double median = 0, p10 = 0, p90 = 0;
};
TimingSummary summarizeTimes(std::vector<double> samples);

// ---- hangs ------------------------------------------------------------------

/// Decides when a run has stalled: no rank's progress counter has changed
/// for `timeout_seconds`. Pure, so that it is testable without a GPU.
class StallDetector {
 public:
  explicit StallDetector(double timeout_seconds) : timeout_(timeout_seconds) {}
  /// Feeds the counters seen at time `now` (seconds, monotonic); true once
  /// they have not changed for the timeout.
  bool update(const std::vector<std::int64_t>& progress, double now);
  /// Seconds since the counters last changed, as of the last update.
  double idleSeconds() const { return last_seen_ - last_change_; }

 private:
  double timeout_;
  std::vector<std::int64_t> last_;
  double last_change_ = 0, last_seen_ = 0;
};

/// Where one rank stood when a run was aborted.
struct RankPosition {
  int rank = 0;
  int op_index = -1;  ///< the first op of its current iteration not yet completed on the device
  int iteration = 0;  ///< 0-based, warmup iterations first
  bool setting_up = false;  ///< still creating communicators
  bool finished = false;    ///< completed every op of every iteration
};
/// "no progress for 10.0 s: rank 0 waits in op 2 (reduce_scatterv on attn_tp
/// [0,1], stack 0 layer 1 stage 1 entry) in iteration 1 of 12; rank 1 ..."
std::string formatHangReport(const Plan& plan, const std::vector<RankPosition>& positions,
                             double idle_seconds, int total_iterations);

// ---- hashing ------------------------------------------------------------------

inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
/// Continues an FNV-1a 64 hash over `count` floats' bytes (the device kernel
/// computes the same fold; NumericOutput::hash() starts at kFnvOffsetBasis).
std::uint64_t fnv1aFloats(std::uint64_t state, const float* values, std::size_t count);

// ---- bare NCCL against a one-op plan ---------------------------------------------

/// `seam-gpu bench-allreduce`: an all-reduce of `bytes` over every visible
/// GPU, bare (nccl-tests style: warmup, CUDA events per iteration, median)
/// and as the only op of a plan run by runPlanOnGpus, in the same process.
struct AllReduceBench {
  int devices = 0;
  std::int64_t bytes = 0;
  int iters = 0;
  double bare_median_us = 0, plan_median_us = 0;
  double bare_busbw = 0, plan_busbw = 0;  ///< GB/s
};
Expected<AllReduceBench> benchAllReduce(std::int64_t bytes, int iters);

}  // namespace seam::backend
