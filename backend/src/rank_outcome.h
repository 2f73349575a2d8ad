// Private to backend/: what one rank of a GPU run leaves behind, as plain
// data (RankOutcome), and, when each rank is its own process (executor.h's
// ProcessGroup), the report a process sends rank 0 as bytes (sim/bytes.h).
// run_output.h assembles a run's output from the outcomes of every rank,
// whether they were read from the executors of this process or decoded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rank_executor.h"
#include "seam/backend/executor.h"
#include "seam/sim/base/status.h"

namespace seam::backend::detail {

/// What one rank of a run left behind, as plain data: read from its executor
/// in this process, or decoded from the bytes its own process sent (one
/// process per rank).
struct RankOutcome {
  int rank = 0;
  std::vector<std::int64_t> final_done;  ///< per stack: 1 when the rank ran its final norm
  std::vector<std::int64_t> final_kind;  ///< per stack: the RowKind of its final rows
  std::vector<std::int64_t> final_rows;  ///< per stack: their count
  std::vector<std::vector<float>> final_host;
  std::vector<RankExecutor::HostSnapshot> snapshots;
  std::vector<OpTiming> timings;
  GraphStep graph;
  std::vector<std::string> notes;
};

/// Rank `r`'s outcome, read from its executor after a successful run.
RankOutcome outcomeOf(const SharedRun& s, const RankExecutor& rank, int r);

/// How a process's rank ended.
enum class RankEnd : std::int64_t { kDone, kFailed, kHung };

struct ProcessReport {
  RankEnd end = RankEnd::kDone;
  StatusCode code = StatusCode::kOk;
  std::string message;  ///< the failure
  RankPosition position;
  double idle_seconds = 0;
  RankOutcome outcome;  ///< kDone
};

/// The Status of `code` with `message` (a failure sent by another process).
Status statusOf(StatusCode code, std::string message);

std::string encodeReport(const ProcessReport& report);
/// The report, or an internal error when the bytes are not a whole report.
Expected<ProcessReport> decodeReport(const std::string& bytes);

}  // namespace seam::backend::detail
