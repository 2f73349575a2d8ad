// Where and from what a result was made: this machine's name and the git
// commit seam was built from, written into the store's runs and into the
// JSON of `seam-gpu` (GpuOrigin), so that an imported GPU run says when,
// where and at which commit it ran rather than when it was imported.
#pragma once

#include <cstdint>
#include <string>

namespace seam::properties {

struct GpuOrigin;

/// This machine's name (gethostname), "" when it has none.
std::string thisHost();

/// The git commit of the source tree when the build was configured (12 hex
/// digits, "-dirty" when it had uncommitted changes), "" when not built from
/// a git checkout.
std::string seamCommit();

/// Unix epoch milliseconds now.
std::int64_t epochMs();

/// Fills `origin`'s host, written_ms and commit with this machine, now and
/// this build (what `seam-gpu` writes with its result).
void stampOrigin(GpuOrigin* origin);

}  // namespace seam::properties
