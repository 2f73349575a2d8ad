// Parent tree vs changed tree of an engine: the same cases recorded from
// both (recorder/), compared case by case. A case's class says what the
// change did to what the engine calls and computes; its first divergence
// names both trees' calls with their file:line:function.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "seam/recordings/engine_sweep.h"
#include "seam/recordings/recording.h"

namespace seam::recordings {

/// In the order they are tested; the first that fits is the case's.
enum class TreeDiffClass : std::uint8_t {
  kIdentical,     ///< both ran: the same calls on every rank, the same outputs
  kReordered,     ///< the same calls per rank and layer in another order, the same outputs
  kMoved,         ///< the same calls per rank, some issued by another layer, the same outputs
  kEqualValues,   ///< other calls (e.g. other reductions), the same outputs on every rank
  kValuesDiffer,  ///< both ran and some rank's output differs
  kChangeFails,   ///< the parent ran; the change raised, hung, or its checks refused the case
  kChangeRuns,    ///< the parent failed or refused; the change ran
  kBothFail,      ///< neither ran (not a difference when both failed alike)
};
inline constexpr int kTreeDiffClassCount = 8;
std::string_view treeDiffClassName(TreeDiffClass c);

/// Whether a class keeps every value the parent computed (what a gate passes).
inline bool keepsValues(TreeDiffClass c) {
  return c != TreeDiffClass::kValuesDiffer && c != TreeDiffClass::kChangeFails;
}

struct TreeDiff {
  TreeDiffClass cls = TreeDiffClass::kIdentical;
  /// The first divergence: rank, call number, each tree's call and frame;
  /// or how each side ended. Empty when identical.
  std::string divergence;
};

/// Compares two recordings of one case (format "seam-recorder").
TreeDiff compareRecordings(const Recording& parent, const Recording& change);

/// One case of an engine diff.
struct EngineDiffRow {
  std::int64_t case_index = -1;
  std::string model, config, flags, batch, family;
  TreeDiff diff;
  /// Each tree's run against the plan of EngineDiffSpec::policy (conformance.h's class).
  std::string parent_agreement, change_agreement;
  std::string reproduce;  ///< the `seam diff` line of this one case
};

struct EngineDiffSpec {
  std::vector<EngineSweepCases> models;
  Shard shard;
  int jobs = 1;
  RecorderRun parent, change;
  PolicyKind policy = PolicyKind::kLegacy;  ///< the plan each tree's run is held against
  std::string dir;  ///< both trees' recordings (named by each tree's fingerprint)
  /// Appended to a case's `seam diff` line: the two trees' options.
  std::string tree_options;
};

struct EngineDiffResult {
  std::array<std::int64_t, kTreeDiffClassCount> counts{};
  std::int64_t cases = 0;
  std::map<std::string, std::int64_t> left_out;  ///< reason -> cases the recorder cannot run
};

/// Records both trees over the space (a tree whose recordings are in `dir`
/// already is not recorded again) and hands every case to `sink`.
Expected<EngineDiffResult> runEngineDiff(const EngineDiffSpec& spec,
                                         const std::function<Status(const EngineDiffRow&)>& sink);

}  // namespace seam::recordings
