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
};

/// Evidence that a recording is incomplete: labelled, never passed.
struct PartialEvidence {
  int rank = -1;  ///< -1: the whole recording
  std::string what;
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
};

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
