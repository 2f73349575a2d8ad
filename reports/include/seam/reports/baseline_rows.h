// A campaign's baseline as the store keeps it (the `baselines` table): a
// bitmap of its kept cases and a checksum, written when a baseline holds and
// taken back by the campaign, resumed, only when the same seam made it over
// the same space and the row is intact.
#pragma once

#include <cstdint>
#include <string>

#include "seam/mutants/campaign.h"
#include "seam/reports/store.h"

namespace seam::reports {

/// The seam that checks a baseline: its version and the commit it was built
/// from (properties::seamCommit()).
struct SeamBuild {
  std::string version;
  std::string commit;
};

/// The row of a baseline that held, checked by `build` over `space`
/// (baselineSpace).
BaselineRecord baselineRow(const std::string& space, const SeamBuild& build,
                           const mutants::BaselineSummary& baseline);

/// FNV-1a (64 bits) over every field of `row` but the checksum, each
/// preceded by its length.
std::uint64_t baselineChecksum(const BaselineRecord& row);

/// The baseline `row` holds, when it is intact (its checksum, bitmap and
/// counts agree) and `build` made it over `space`; else an error whose
/// message says why it is not taken (damaged, another space, another seam).
Expected<mutants::BaselineSummary> baselineFromRow(const BaselineRecord& row,
                                                   const std::string& space,
                                                   const SeamBuild& build);

}  // namespace seam::reports
