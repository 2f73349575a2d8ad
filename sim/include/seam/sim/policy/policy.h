// Boundary planning policies (DESIGN §2.4) and the schema switch through
// which planner-decision mutants reach the decision sites (DESIGN §5): a
// small value passed in, never global state; sim/ never depends on mutants/.
#pragma once

#include <cstdint>
#include <string_view>

#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"

namespace seam {

/// kDeclared: the newest (layer_boundary) Nemotron-H semantics. kLegacy: the
/// rules before stage declarations (serving-boundaries §9.2 (3)): deferral
/// only where the fused kernel takes the sum, no deferral under DP, and an
/// FFN whose input is already complete folds it into the residual and
/// all-reduces a zero update. kNaive: every stage completes its own sum at
/// its exit, never deferred, never fused: always correct, the baseline.
enum class PolicyKind : std::uint8_t { kDeclared, kLegacy, kNaive };
std::string_view policyName(PolicyKind policy);
Expected<PolicyKind> parsePolicy(std::string_view name);

/// Planner decision sites a mutant can flip. Ids are stable: stored rows
/// refer to them.
enum class Decision : std::uint8_t {
  kMixerKeepsFusedSum = 0,  ///< a mixer->mixer exit reduces *and* the next entry still fuses
  kResidualNotSliced = 1,   ///< the residual does not follow the hidden state to local rows
  kFfnKeepsSumFromMixer =
      2,  ///< an FFN exit completes its sum but the next mixer still completes it
  kSnapshotNotCompleted = 3,  ///< a snapshot copies a value whose carried sum is not completed
  kStackStartFfnWithResidual =
      4,                      ///< an FFN at the stack start reads a residual that does not exist
  kStackNeverEntered = 5,     ///< layer 0 does not set residual := embedding
  kFfnReducesOverAttnTp = 6,  ///< a dense FFN's down projection reduces over attention TP only
  kTerminalDefers = 7,        ///< the terminal stage defers its sum
  kMtpNotMarkedLast = 8,      ///< the MTP step's last layer is not terminal
  kDpGatherSumResidualEveryRank =
      9,  ///< partial-order DP gather with the residual added on every attn-TP rank
  kFusionTokenBoundMoved = 10,     ///< the fusion gate admits one token past its bound (2048)
  kFusionIgnoresDpAttention = 11,  ///< the fusion gate does not require attn_dp == 1
  kMixerWeightsOverTp = 12,        ///< a mixer's row-parallel weights owe their sum over tp
  kPostExpertsNotMerged = 13,      ///< the post-expert reduction keeps the EP group when it merges
};
inline constexpr int kDecisionCount = 14;

/// FUSE_ALLREDUCE_MAX_BATCH_SIZE of the FlashInfer fusion gate: the most
/// tokens the planner fuses (a bound generators and campaigns reach).
inline constexpr int kFuseMaxTokens = 2048;

/// Which decision sites take their mutated branch. Default: none. `reached`
/// (when set) collects the decisions the planner asked about: a campaign
/// tells a decision whose site no case reaches (not covered) from one whose
/// flip changes nothing where it is reached (equivalent).
struct Schema {
  std::uint32_t flipped = 0;
  std::uint32_t* reached = nullptr;
  bool on(Decision d) const {
    if (reached != nullptr) *reached |= 1u << static_cast<int>(d);
    return (flipped >> static_cast<int>(d)) & 1u;
  }
  static Schema with(Decision d) { return Schema{1u << static_cast<int>(d)}; }
};

/// Builds the plan of `c` under `policy`. Bad input (a batch that does not
/// match the config, shapes that do not fit) -> kInvalidInput; a combination
/// the real engine refuses -> kRefused with the engine's reason.
Expected<Plan> buildPlan(const Case& c, PolicyKind policy, const Schema& schema = {});

/// The refusal buildPlan gives every valid batch of `c`'s model,
/// configuration and flags, where the engine's rule does not depend on the
/// batch (the start-up arguments, the construction-time checks, a gate that
/// reads only the flags); ok where some batch could be planned or refused
/// otherwise, and where `c` itself is not valid. A sweep asks it once per
/// flag set (c is any valid case of the set).
Status flagSetRefusal(const Case& c, PolicyKind policy, const Schema& schema = {});

}  // namespace seam
