// What a boundary graph draws, apart from how (Graphviz or Mermaid): the
// boundaries that differ from a second plan and the keys of their distinct
// differences, the stages where an aux snapshot is taken or a property is
// violated, each stack's items in order with long runs of identical stages
// folded into one item, and how the items break into columns.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "seam/properties/check.h"
#include "seam/reports/graph.h"
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

/// The distinct differences of a diff graph, keyed 1, 2, ... in boundary
/// order, so that an edge carries a short mark ("≠1") and the legend spells
/// each difference out once.
struct DifferenceKeys {
  std::vector<int> key_of;        ///< per boundary: its key, 0 where it does not differ
  std::vector<std::string> text;  ///< per key - 1: what the other plan does there
  std::vector<int> boundaries;    ///< per key - 1: how many boundaries differ so
};
DifferenceKeys differenceKeys(const Plan& plan, const std::vector<BoundaryDiff>& diffs,
                              const std::string& other_policy);
/// An edge's mark of difference key `key`.
std::string differenceMark(int key);

/// (stack, stage) of every stage whose entry takes an aux snapshot on rank 0.
std::set<std::pair<int, int>> snapshotStages(const Plan& plan);

/// The lines that mark a stage where the checker finds a property violated,
/// by (stack, stage): one pair per violated property whose first violation
/// is seen there ("VIOLATED: owed-once (counted-k-times)", "at its entry:
/// add_norm, rank 0"); the stack's output (the final norm) is stage
/// stackSize(stack). A violation at no stage of the plan marks none (the
/// title names it). Empty without a verdict.
using ViolationMarks = std::map<std::pair<int, int>, std::vector<std::string>>;
ViolationMarks violationMarks(const Plan& plan, const properties::PlanVerdict* verdict);

/// The title's lines on the verdict: that every property holds, or the first
/// violation and, for an engine finding, the SGLang call behind it (wrapped
/// at about kTitleWidth characters). Empty without a verdict.
inline constexpr std::size_t kTitleWidth = 90;
std::vector<std::string> verdictLines(const properties::PlanVerdict* verdict,
                                      const std::string& engine_site);

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
/// diff and snapshot, and no violation marked) keeps its first and last
/// block; the blocks between become one kFold item.
inline constexpr int kMinFoldBlocks = 4;
std::vector<GraphItem> stackItems(const Plan& plan, int stack,
                                  const std::vector<BoundaryDiff>& diffs,
                                  const std::set<std::pair<int, int>>& snapshots,
                                  const ViolationMarks& violations, bool fold);

/// A long stack is drawn in balanced columns of at most kMaxItemsPerColumn
/// items, so that a 52- or 124-stage model stays readable on a screen; the
/// items per column for a stack of `items` (all of them when one column holds them).
inline constexpr int kMaxItemsPerColumn = 14;
int itemsPerColumn(int items);

/// Everything one graph draws, decided once for both renderers.
struct GraphContent {
  std::vector<BoundaryDiff> diffs;  ///< per boundary (diffBoundaries)
  bool diff = false;                ///< a diff graph (against another plan)
  std::string other;                ///< the other plan's policy
  DifferenceKeys keys;
  std::set<std::pair<int, int>> snapshots;
  ViolationMarks violations;
  bool violated = false;             ///< the checker finds a property violated
  std::vector<std::string> verdict;  ///< the title's lines on it (verdictLines)
  std::vector<GraphItem> items[2];   ///< per stack (main, MTP); empty: no such stack
  bool mixer = false, ffn = false;   ///< a mixer, an FFN stage is drawn
  bool folds = false;                ///< a fold is drawn
};
GraphContent graphContent(const Plan& plan, const Plan* against, const GraphOptions& options);

/// The name of a layer kind: "M  Mamba-2", "*  attention", ...
std::string kindText(LayerKind k);

/// A boundary's label, one line each: exit and entry steps, the sum owed
/// and who completes it, rows; where it differs, the mark of its difference
/// key (`key` 0: none).
std::vector<std::string> boundaryLines(const Boundary& b, int key);

/// The colour of a sum (hex, Graphviz and Mermaid alike), and of "differs",
/// which no sum uses.
std::string sumColour(SumGroup s);
inline constexpr const char* kDiffersColour = "#FF00FF";
inline constexpr const char* kSnapshotColour = "#2E8B57";
/// Node fills: a mixer, an FFN, the input and output, a violated stage (with
/// a thick border in kViolatedBorder, a colour no sum uses).
inline constexpr const char* kMixerFill = "#E0FFFF";
inline constexpr const char* kFfnFill = "#FFFFE0";
inline constexpr const char* kEndFill = "#EBEBEB";
inline constexpr const char* kViolatedFill = "#FFC8C8";
inline constexpr const char* kViolatedBorder = "#8B0000";

}  // namespace seam::reports
