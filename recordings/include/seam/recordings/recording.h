// What an engine recorded about its collectives, read from PyTorch Flight
// Recorder JSON dumps or NCCL's COLL log (docs/recordings.md), reduced to
// what seam can compare with a plan: per global rank, the calls in issue
// order, each with its group's members, its kind, its element counts and
// dtype, and where it was recorded. Plain data; the readers fill it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::recordings {

/// The collectives a recording names, in seam's words. kOther is a call
/// outside seam's vocabulary that the format knows (broadcast, barrier,
/// reduce, gather, scatter, ...): it is read and reported as unexplained.
enum class CallKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllGatherv,
  kReduceScatterv,
  kAllToAll,
  kSend,
  kRecv,
  kOther,
};
std::string_view callKindName(CallKind kind);

/// Unknown count (a format that does not say it).
inline constexpr std::int64_t kUnknownCount = -1;

/// A process group (Flight Recorder) or an NCCL communicator: its members,
/// global ranks in the order of their rank inside the group.
struct RecordedGroup {
  std::string name;  ///< "pg 3 (tp)" / "comm 0x1a2b (commId ...)": what the user sees
  std::vector<int> members;
  /// Flight Recorder: the default process group (pg_config desc
  /// "default_pg", what torch.distributed calls take without a group).
  bool default_pg = false;
};

/// One recorded call of one rank.
struct RecordedCall {
  CallKind kind = CallKind::kOther;
  std::string op;  ///< the name as recorded ("nccl:all_reduce", "AllReduce")
  int group = -1;  ///< index into Recording::groups
  /// Elements this rank reads and writes (NCCL: the call's count, the
  /// output derived by the op's definition; FR: numel of input and output).
  std::int64_t in_elems = kUnknownCount;
  std::int64_t out_elems = kUnknownCount;
  std::string dtype;  ///< as recorded ("BFloat16", "9" for ncclBfloat16)
  /// collective_seq_id / p2p_seq_id (FR); NCCL: the call's position on its
  /// communicator in this process (0, 1, ...)
  std::int64_t seq = -1;
  int peer = -1;      ///< send/recv: the peer's rank inside the group
  std::string state;  ///< FR: scheduled, started, completed; empty elsewhere
  std::string frame;  ///< the innermost recorded stack frame, "file:line (name)"
  std::string where;  ///< "dump \"f\", entry 12" / "log \"f\", line 40"
  /// seam-recorder: the rows the call reads and writes where its tensor is
  /// as wide as the recorder's model (Recording::row_width), else -1;
  /// scaleRows turns them into elements of the case's width.
  std::int64_t in_rows = -1;
  std::int64_t out_rows = -1;
  int layer = -1;     ///< seam-recorder: the decoder layer that issued it (-1: outside the layers)
  std::string stack;  ///< seam-recorder: the engine's frames, innermost first, " < " between
};

/// Evidence that a recording is incomplete: labelled, never passed.
struct PartialEvidence {
  int rank = -1;  ///< -1: the whole recording
  std::string what;
};

/// How a rank of a recorder's run ended (format "seam-recorder").
struct RankEnd {
  std::string outcome;  ///< ok, raised, aborted (its collective could never complete), hung, died
  std::string error;    ///< raised: "AssertionError: ..."
  std::string where;    ///< raised: the engine's file:line:function
  std::string dp_padding;  ///< ok: the DP padding mode the engine chose (MAX_LEN, SUM_LEN), or ""
  std::int64_t output_rows = -1;
  std::string output_digest;  ///< ok: sha256 prefix of the layers' output
};

/// What a recorder's run of the engine itself says (format "seam-recorder",
/// recorder/): which engine, how it was launched, and how the run ended.
/// Empty (verdict "") for recordings an engine wrote.
struct EngineRun {
  std::string engine;      ///< "sglang"
  std::string version;     ///< the release ("0.5.20")
  std::string source;      ///< "pypi" or the checkout's path
  std::string commit;      ///< the checkout's git commit, when it has one
  std::string generation;  ///< single-file | package | layer-boundary
  std::vector<std::string> launch_flags;
  std::vector<std::string> standins;  ///< the GPU kernels stood in for on the CPU
  /// ran | raised | mismatch (a group's members issued different
  /// collectives) | deadlock | timeout | refused (the engine's own argument
  /// checks)
  std::string verdict;
  std::string failure;  ///< mismatch, deadlock, timeout: in words; refused: the engine's message
  std::string where;    ///< refused: where the engine raised
  std::vector<RankEnd> ranks;
  double seconds = 0;
};

/// A recording of one run.
struct Recording {
  std::string format;   ///< "flight-recorder" or "nccl-log"
  std::string source;   ///< the path given
  std::string version;  ///< FR schema version; NCCL: empty
  std::vector<RecordedGroup> groups;
  /// Calls per global rank (size: the world the recording spans).
  std::vector<std::vector<RecordedCall>> ranks;
  /// Whether each rank's dump or log is present.
  std::vector<bool> present;
  /// Whether each rank's recording lost its first calls (a Flight Recorder
  /// ring buffer that wrapped): what the plan owes before its first recorded
  /// call is then unknown, not missing.
  std::vector<bool> lost_front;
  std::vector<PartialEvidence> partial;
  EngineRun engine;   ///< seam-recorder only
  int row_width = 0;  ///< seam-recorder: the recorder's model width (0: sizes are as recorded)
};

/// A recorder's sizes as elements of a model `hidden` wide: each call's rows
/// times `hidden` (calls whose tensors are not model-wide keep their sizes).
void scaleRows(Recording* rec, std::int64_t hidden);

/// The caps: a dump is one JSON document parsed whole; a log is read line
/// by line; a folder holds at most kMaxRecordingFiles files.
inline constexpr std::int64_t kMaxDumpBytes = std::int64_t{64} << 20;
inline constexpr std::int64_t kMaxLogBytes = std::int64_t{256} << 20;
inline constexpr std::size_t kMaxLogLineBytes = std::size_t{64} << 10;
inline constexpr int kMaxRecordingFiles = 4096;

/// Reads a recording: one file, or a folder of them (one per rank, or one
/// log with every rank's lines interleaved). The format is told from the
/// content; anything else is refused with one line naming the file and the
/// entry or line.
Expected<Recording> readRecording(const std::string& path);

}  // namespace seam::recordings
