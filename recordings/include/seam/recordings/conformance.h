// A space of cases run on the engine itself (seam sweep --engine): the
// engine-distinct runs the cases need, and each case's agreement with the
// plans of the policies seam keeps, in classes (docs/recordings.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "seam/recordings/alignment.h"
#include "seam/sim/model/case.h"
#include "seam/sim/policy/policy.h"

namespace seam::recordings {

/// The engine runs a space needs. Cases that differ only in what the engine
/// decides itself (DP padding, the boundary reduction) share one run; cases
/// the recorder cannot run are counted by reason.
struct EngineSpace {
  std::vector<Case> cases;        ///< the cases that run, in the space's order
  std::vector<int> run_of;        ///< per case: its index in `runs`
  std::vector<std::string> runs;  ///< per engine run: the case JSON the recorder takes
  /// Per engine run: its server, numbered from 0 in the space's order. Runs
  /// of one server differ only in their batch (tokens, mode): the recorder
  /// runs them as one server's forwards, its model built once.
  std::vector<int> server_of;
  std::vector<std::int64_t> index_of;   ///< per case: its position in the cases given
  std::map<std::string, int> left_out;  ///< reason -> cases
};

/// Why the recorder cannot run `c` (one line), or "" when it can.
std::string recorderGap(const Case& c);

/// Groups `cases` into engine runs; `caseJson` renders a case for the recorder.
EngineSpace engineSpace(const std::vector<Case>& cases,
                        const std::function<std::string(const Case&)>& caseJson);

/// How a case's plan and the engine's run of it compare.
enum class Agreement : std::uint8_t {
  kAgrees,         ///< the engine ran; every call in the layers is one the plan owes
  kDiffers,        ///< the engine ran; a call differs (extra, missing, wrong group or size)
  kEngineRefused,  ///< the engine's argument checks refused the case
  kEngineFailed,   ///< the engine raised, or its collectives did not pair (a finding)
  kCpuGap,         ///< the CPU lacks what the case needs: not run
  kPlanRefused,    ///< seam refuses the case (or does not model it) while the engine ran it
  /// The engine chose the other DP padding for this batch (it decides
  /// MAX_LEN or SUM_LEN itself): the case is not one the engine runs.
  kOtherPadding,
};
inline constexpr int kAgreementCount = 7;
std::string_view agreementName(Agreement a);

/// One case against one policy: its class and, when the calls differ, the
/// first divergence in words ("extra-call at sglang/srt/...:1263:fn").
struct CaseAgreement {
  Agreement agreement = Agreement::kAgrees;
  std::string divergence;
};

/// Judges the engine's recording of `c` against `policy`'s plan of it.
CaseAgreement agreementOf(const Case& c, PolicyKind policy, const Recording& rec);

/// "tp", "tp+dp", "tp+ep", "tp+dp+ep+moe_dp": the leaves of a configuration above 1.
std::string configFamily(const ParallelConfig& config);

}  // namespace seam::recordings
