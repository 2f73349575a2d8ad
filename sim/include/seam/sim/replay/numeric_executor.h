// The numeric CPU executor (DESIGN §6): runs a plan's ops on real rows of
// numbers, rank by rank, with the same op semantics as the ledger (the same
// replay), and the single-rank reference that computes the model directly.
// In exact mode a correct plan's outputs equal the reference bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric.h"

namespace seam {

/// The final outputs of one stack: for every token of the batch, its row
/// (`hidden` floats), as the rank(s) that hold it produced it.
struct NumericOutput {
  int hidden = 0;
  int tokens = 0;
  /// [stack][token * hidden + k]; stack 1 present only with an MTP step.
  std::vector<std::vector<float>> rows;
  /// How many ranks produced each token's row (every rank of a DP shard's
  /// attention-TP group on the last pipeline stage must agree).
  std::vector<std::vector<int>> producers;
  /// Aux hidden-state snapshots of the main stack: (stage, rows as above).
  std::vector<std::pair<int, std::vector<float>>> snapshots;
  /// A 64-bit hash of the bytes of all rows (FNV-1a), what GPU runs compare.
  std::uint64_t hash() const;
};

/// The single-rank reference: the model computed token by token with every
/// stage's full weights (no parallelism, no plan).
NumericOutput runReference(const Case& c, numeric::Mode mode, const numeric::Shape& shape);

/// The outcome of running a plan numerically.
struct NumericRun {
  NumericOutput output;
  /// Structural failures the real run would hit (a collective mismatch, a
  /// deadlock, rows that do not fit): the run has no meaningful output.
  std::vector<Violation> failures;
  /// Ranks holding the same token disagree (e.g. a sum completed on one
  /// attention-TP rank only).
  bool ranks_disagree = false;
  bool ran() const { return failures.empty(); }
};

/// How the CPU executor orders what a GPU's libraries order for themselves.
enum class ExecutionOrder : std::uint8_t {
  /// Reductions add the members in group order; a GEMM's rounding does not
  /// depend on its row count (the default).
  kMemberOrder,
  /// As NCCL and cuBLAS may: each element of a reduction adds the members in
  /// the order of a model of NCCL's ring (its chunk, by the element's offset in
  /// the buffer, decides which member starts; an all-reduce and a
  /// reduce-scatter chunk the buffer differently), written apart from the
  /// predictor's rule; in real mode a GEMM's result rounds one way or another
  /// by its row count. Another executor, on the CPU: what predictBitIdentity
  /// (bit_identity.h) calls identical must stay identical.
  kCallDependent,
};

/// Runs `plan` on the CPU: every rank's ops, the same semantics as the ledger.
NumericRun runPlanNumeric(const Plan& plan, numeric::Mode mode, const numeric::Shape& shape,
                          ExecutionOrder order = ExecutionOrder::kMemberOrder);

/// Bitwise comparison of two outputs: the first differing element and the
/// maximum absolute difference (and in ulps) over all elements.
struct OutputDiff {
  bool identical = true;
  int stack = -1, token = -1, element = -1;
  float a = 0, b = 0;
  double max_abs = 0;
  /// In units of the last place of the values' format: bf16 when every
  /// compared value is a bf16 number, fp32 otherwise.
  std::int64_t max_ulps = 0;
  bool bf16_ulps = true;
  /// One compared element: records it when its bits differ.
  void add(int stack, int token, int element, float x, float y);
  /// After the last add: turns fp32 ulps into bf16 ulps when every value was bf16.
  void finish();
  std::string describe() const;
};
OutputDiff compareOutputs(const NumericOutput& a, const NumericOutput& b);

}  // namespace seam
