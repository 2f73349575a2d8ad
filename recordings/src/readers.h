// The two readers behind readRecording, and what they share: a file's label
// in messages and the dtype names both formats are turned into.
#pragma once

#include <string>
#include <vector>

#include "seam/recordings/recording.h"

namespace seam::recordings {

/// One Flight Recorder dump, as read: the rank its file name gives, its
/// groups (name, desc, members) and its entries as calls whose `group`
/// indexes `groups`.
struct DumpFile {
  int rank = -1;
  std::string version;
  std::vector<RecordedGroup> groups;
  std::vector<RecordedCall> calls;
  std::int64_t first_record_id = 0;
  bool gaps = false;  ///< record ids not consecutive: entries were dropped between them
};

/// Reads one dump (`text` is the whole file); the rank comes from the
/// trailing digits of the file name, as fr_trace's loader takes it.
Expected<DumpFile> readDump(const std::string& path, const std::string& text);

/// True when `text` looks like a Flight Recorder JSON dump (a JSON object).
bool looksLikeDump(const std::string& head);

/// Reads NCCL COLL/INIT logs, every file of `paths` in order, into a
/// recording (every rank's lines may be interleaved in one file).
Expected<Recording> readNcclLogs(const std::vector<std::string>& paths);

/// True when the first line is a seam-recorder header (recorder_lines.cc).
bool looksLikeRecorderLines(const std::string& head);

/// Reads a seam-recorder recording: one file of JSON lines.
Expected<Recording> readRecorderLines(const std::string& path);

/// Flight Recorder dumps into a recording (one per rank).
Expected<Recording> mergeDumps(const std::string& source, std::vector<DumpFile> dumps);

/// "dump \"path\"" / "log \"path\"": how messages name a file.
std::string fileLabel(const char* kind, const std::string& path);

/// The canonical dtype name for NCCL's enum value or PyTorch's ScalarType
/// name ("bf16", "fp32", ...); the recorded text when it is neither.
std::string canonicalDtype(const std::string& recorded);

/// The width in bytes of a canonical dtype ("bf16" 2, "fp32" 4, ...); 0
/// when the name is none of canonicalDtype's.
int dtypeBytes(const std::string& canonical);

}  // namespace seam::recordings
