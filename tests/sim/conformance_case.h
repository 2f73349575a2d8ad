// The SGLang conformance suite's entries (tests/sim/conformance/*.json) and
// how one is compared with seam's plan. An entry states, per rank, the ordered
// collectives (and the local steps that decide who completes a sum) that
// SGLang's code runs for one case, derived by hand from the code it cites;
// nothing here is computed from seam's planner. Groups are compared by their
// members, computed here from SGLang's initialize_model_parallel rule, so a
// step naming the wrong group fails even where seam's axis names agree.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/plan/plan.h"

namespace seam::conformance {

/// One expected step: "s3 entry all_reduce tp", "mtp0 compute all_gather
/// attn_tp", "s1 exit reduce_scatterv tp rows=full:8->attention:4
/// sizes=4,4", "s2 entry slice.residual", "s7 entry dp_gather_partial tp
/// half=A buffer=none".
struct Step {
  int stack = 0;  ///< 0: the main stack ("s<N>"), 1: the MTP step ("mtp<N>")
  int stage = 0;
  Phase phase = Phase::kEntry;
  OpKind kind = OpKind::kAllReduce;
  Tensor tensor = Tensor::kHidden;
  std::string group;  ///< SGLang's group name; empty: no group
  std::optional<Rows> rows_in, rows_out;
  /// The split sizes the engine passes (reduce_scatterv, all_gatherv): one
  /// per member of the group the call runs on, in group order.
  std::vector<int> sizes;
  /// Two-batch overlap: the half the step runs on ("half=A", "half=B"); absent: not compared.
  std::optional<Half> half;
  /// DP gathers: the global buffer the engine passes ("buffer=none": a TBO
  /// child's unset length, "buffer=child": its own token range); absent: not compared.
  std::optional<DpBuffer> buffer;
  std::string text;  ///< as written in the entry
};

/// One entry of a topic file.
struct Entry {
  std::string topic;                        ///< the file's stem
  int index = 0;                            ///< position in the file
  std::string name;                         ///< a sentence
  std::string options;                      ///< case options as `seam plan` takes them
  std::map<int, std::vector<Step>> expect;  ///< per stated rank
  std::vector<std::string> cite;
  bool agrees = true;
  std::string section;  ///< disagrees: the heading in sglang_disagreements.md
  /// The heading in docs/engine-findings.md when SGLang's plan of the case
  /// violates a property (seam must then report an engine finding); empty:
  /// every property holds on it.
  std::string engine_finding;
  /// disagrees: the index of the first expected step seam does not match
  /// (the step count when seam has extra steps after them all).
  int first_difference = -1;
  /// Only ops of main-stack stages in [lo, hi] are compared (MTP ops only
  /// when `mtp` is set); absent: every op.
  std::optional<std::pair<int, int>> stages;
  bool mtp = false;
  /// Only MTP-stack ops of stages in [lo, hi] (-1: its input projection).
  std::optional<std::pair<int, int>> mtp_stages;
};

/// Reads every *.json under `dir`; a malformed entry throws with its file,
/// index and the bad field.
std::vector<Entry> loadEntries(const std::string& dir);

/// Parses "--pattern 'M-' --tp 2" into the spec `seam plan` would build.
/// Unknown options and missing values throw, naming them.
CaseSpec parseOptions(const std::string& options);

/// Members (global ranks) of SGLang's group `name` that `rank` belongs to:
/// tp, attn_tp, attn_cp, attn_dp (the DP-attention peers), moe_ep, moe_tp,
/// moe_dp, pp; throws on another name.
std::vector<int> sglangGroup(const std::string& name, const ParallelConfig& config, int rank);

/// The ops of `rank` the suite compares: collectives, the abstract DP ops,
/// the fused all-reduce + add + norm, slices, snapshots, sends and receives,
/// restricted to the entry's stage window.
std::vector<const Op*> comparedOps(const Entry& entry, const Plan& plan, int rank);

/// The first difference between what the entry states for `rank` and the
/// plan's ops: nullopt when they agree; else the index of the first
/// mismatching expected step and a line saying what each side has.
struct Difference {
  int index = 0;
  std::string what;
};
std::optional<Difference> firstDifference(const Entry& entry, const Plan& plan, int rank);

}  // namespace seam::conformance
