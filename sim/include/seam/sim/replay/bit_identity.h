// The simulator's bit-identity prediction (DESIGN §6): whether two plans of
// one case must give the same output bits on an executor whose reductions
// are NCCL's and whose GEMMs are cuBLAS's, in real (rounding) arithmetic.
// It replays both plans over expression fingerprints (arithmetic_domain.h):
// equal fingerprints of every output row mean the same roundings in the
// same order. A GPU run of both plans confirms or refutes it (seam-gpu compare).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/plan/plan.h"

namespace seam {

/// The expressions of a plan's outputs: per stack and token, the fingerprint
/// of the row as the first rank that holds it computed it (the row the numeric
/// executor and the GPU report), and per captured stage the snapshot's rows.
struct ArithmeticOutput {
  std::vector<std::vector<std::uint64_t>> rows;                       ///< [stack][token]
  std::vector<std::pair<int, std::vector<std::uint64_t>>> snapshots;  ///< (stage, [token])
  /// Ranks holding the same token computed it another way (their bits may differ).
  bool ranks_disagree = false;
  /// Every holder's row of every output token, in the order the replay
  /// visits them (rank by rank): what predictBitIdentity compares beyond the
  /// first holders, so that a plan whose other holders compute a token
  /// another way is not called identical.
  std::vector<std::uint64_t> held;
  /// The plan does not run (a collective mismatch, a deadlock): no outputs.
  std::string failure;
};

/// Replays `plan` over expression fingerprints.
ArithmeticOutput arithmeticOf(const Plan& plan);

/// The prediction for two plans of one case.
struct BitIdentityPrediction {
  bool identical = false;
  /// Why not, in words: the first output row computed another way, or the
  /// plan that does not run. Empty when identical.
  std::string reason;
};

/// Bit-identical exactly when every output row and snapshot row of `a` has
/// the fingerprint of `b`'s: the rows the executors report (a token's first
/// holder's), and every other holder's row too, so that a change that leaves
/// one replica of a token computed another way is not identical. Sound under
/// these assumptions about the executor: each op kind's kernels are
/// deterministic functions of their operands and problem size; x + 0 = x
/// (the sign of a zero aside) and a + b = b + a; an NCCL reduction's order is
/// a function of the call, its communicator's axis, its size and the element.
BitIdentityPrediction predictBitIdentity(const Plan& a, const Plan& b);

/// What a run of both plans says of a prediction. Other roundings may still
/// give the same bits on given values, so only a predicted identity can be
/// refuted; a predicted difference is confirmed by differing bits and
/// untested by equal ones.
enum class PredictionVerdict : std::uint8_t { kHolds, kRefuted, kUntested };
PredictionVerdict judgePrediction(bool predicted_identical, bool observed_identical);
/// "holds", "refuted", "untested (other roundings, the same bits on this run)".
std::string_view predictionVerdictName(PredictionVerdict v);

}  // namespace seam
