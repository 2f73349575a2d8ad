// `seam db merge OUT IN...`: joins the runs of several stores (shards of one
// sweep run on several machines by any scheduler, campaigns, GPU imports)
// into one, run ids renumbered, in one transaction: all or nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

/// What one input gave.
struct MergedInput {
  std::string path;
  std::int64_t runs_added = 0;    ///< runs copied into OUT
  std::int64_t runs_skipped = 0;  ///< runs OUT already held (the same run merged before)
  std::int64_t cases = 0;         ///< case rows copied
};

/// Copies every run of every input, with its cases, verdicts, mutants,
/// kills, equivalence and timing rows, into `out` (created when missing).
/// A run is identified by (command, args, version, host, started_ms): one
/// that OUT (or an earlier input) already holds in the same state (same
/// finished time, same number of cases) is skipped, so merging twice changes
/// nothing; one held in another state is refused. Every input is read and
/// checked before OUT is touched; any failure (a missing, foreign, truncated
/// or damaged input, OUT given as an input, a non-seam OUT) writes nothing
/// and leaves no new file.
Expected<std::vector<MergedInput>> mergeStores(const std::string& out,
                                               const std::vector<std::string>& inputs);

}  // namespace seam::reports
