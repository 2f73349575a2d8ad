// What a boundary graph draws, apart from how (Graphviz or Mermaid): the
// boundaries that differ from a second plan, the stages where an aux
// snapshot is taken, and each stack's items in order with long runs of
// identical stages folded into one item.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "seam/sim/plan/plan.h"

namespace seam::reports {

/// How a boundary compares with the other plan's.
struct BoundaryDiff {
  bool differs = false;
  const Boundary* other = nullptr;  ///< the other plan's boundary, when it has one
  bool ops_only =
      false;  ///< equal steps and handoffs, but some rank's ops differ (a snapshot, ...)
  std::string first_op_difference;  ///< "rank 0 step 2: snapshot (snapshot) vs all_reduce (hidden)"
};

/// One per boundary of `plan` (in its order). A boundary differs when its
/// steps or handoffs differ from `against`'s, or when any rank runs other ops
/// at it (the producer's exit and the consumer's entry: kind, buffer, group,
/// rows, bytes, half; snapshots included). All equal without `against`.
std::vector<BoundaryDiff> diffBoundaries(const Plan& plan, const Plan* against);

/// (stack, stage) of every stage whose entry takes an aux snapshot on rank 0.
std::set<std::pair<int, int>> snapshotStages(const Plan& plan);

/// A drawn item of one stack: the input, a stage, a fold of stages, the output.
struct GraphItem {
  enum Kind { kInput, kStage, kFold, kOutput } kind = kStage;
  int stage = 0;   ///< kStage: the stage; kFold: the first folded stage
  int last = 0;    ///< kFold: the last folded stage
  int period = 1;  ///< kFold: stages per repeated block
  int blocks = 0;  ///< kFold: the blocks folded
};

/// A run of at least kMinFoldBlocks blocks of 1 to 4 stages that repeat
/// exactly (kind, weights, pipeline rank, the boundary into each stage, its
/// diff and snapshot) keeps its first and last block; the blocks between
/// become one kFold item.
inline constexpr int kMinFoldBlocks = 4;
std::vector<GraphItem> stackItems(const Plan& plan, int stack,
                                  const std::vector<BoundaryDiff>& diffs,
                                  const std::set<std::pair<int, int>>& snapshots, bool fold);

/// The name of a layer kind: "M  Mamba-2", "*  attention", ...
std::string kindText(LayerKind k);

/// A boundary's label, one line each: exit and entry steps, the sum owed
/// and who completes it, rows; where it differs, the other side's steps (or
/// that only the ops differ, a snapshot's place for one).
std::vector<std::string> boundaryLines(const Boundary& b, const BoundaryDiff& d,
                                       const std::string& other_policy);

/// The colour of a sum (hex, Graphviz and Mermaid alike), and of "differs",
/// which no sum uses.
std::string sumColour(SumGroup s);
inline constexpr const char* kDiffersColour = "#FF00FF";
inline constexpr const char* kSnapshotColour = "#2E8B57";

}  // namespace seam::reports
