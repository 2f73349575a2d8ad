// The files seam reads for the user (engine traces, seam-gpu JSON, SVG
// graphs): opened without following a directory, read with a cap per file
// and, for line formats, per line, so that an endless or huge input
// (/dev/zero, a 1 GB line) is refused with one line before it costs more
// memory than the cap. Every failure names the file, never a library error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "seam/sim/base/status.h"

namespace seam::reports {

/// The caps (docs/cli.md, "Every command"). A trace line is a few hundred
/// bytes (its longest part is the "ranks" list of a group, at most
/// kMaxWorld numbers); a trace file holds every rank's calls.
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::int64_t kMaxTraceFileBytes = std::int64_t{256} << 20;
/// seam-gpu JSON is one document, parsed whole (its parse takes several
/// times its size in memory).
inline constexpr std::int64_t kMaxGpuJsonBytes = std::int64_t{64} << 20;
/// A boundary graph embedded in a report.
inline constexpr std::int64_t kMaxGraphFileBytes = std::int64_t{64} << 20;

/// A file read line by line, in chunks, never holding more than one line
/// (at most `max_line` bytes) and refusing one past `max_bytes` in all.
class LineReader {
 public:
  /// `label` starts every message ("trace \"t.jsonl\"").
  static Expected<LineReader> open(std::string label, const std::string& path,
                                   std::int64_t max_bytes, std::size_t max_line);
  LineReader(LineReader&& other) noexcept;
  LineReader& operator=(LineReader&&) = delete;
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  ~LineReader();

  /// The next line, without its '\n', in `*line`; false at the end of the
  /// file. A line past the cap, a file past its cap or a read error is a
  /// Status naming the file and the line.
  Expected<bool> next(std::string* line);
  /// The number of the line `next` returned last (1-based).
  int lineNumber() const { return line_number_; }

 private:
  LineReader(std::string label, int fd, std::int64_t max_bytes, std::size_t max_line);
  Status fill();

  std::string label_;
  int fd_ = -1;
  std::int64_t max_bytes_ = 0;
  std::size_t max_line_ = 0;
  std::int64_t read_ = 0;
  std::string buffer_;
  std::size_t start_ = 0;
  bool eof_ = false;
  int line_number_ = 0;
};

/// The whole of `path` (at most `max_bytes`; a larger file is refused before
/// it is read when its size is known, else as soon as the cap is passed).
Expected<std::string> readInputFile(const std::string& label, const std::string& path,
                                    std::int64_t max_bytes);

}  // namespace seam::reports
