// Mutation operators (DESIGN §5, STYLE 13): one small class per operator with
// a stable string id and a one-line description, listed in one registry
// (registry.cc). Plan-level operators edit a built plan at its first
// applicable site; decision operators flip a planner decision through the
// Schema that sim/ defines. Ids are never renumbered: stored rows refer to them.
#pragma once

#include <span>
#include <string_view>

#include "seam/sim/plan.h"
#include "seam/sim/policy.h"

namespace seam::mutants {

enum class MutantKind { kPlan, kDecision };
std::string_view kindName(MutantKind kind);

class Mutant {
 public:
  virtual ~Mutant() = default;
  /// Stable id, e.g. "plan.drop-completing-collective".
  virtual std::string_view id() const = 0;
  /// One line, what the planner bug is.
  virtual std::string_view description() const = 0;
  virtual MutantKind kind() const = 0;
  /// The schema a decision mutant plans with (Schema{} for plan mutants).
  virtual Schema schema() const { return {}; }
  /// Plan mutants: edits `plan` at its first applicable site; false (plan
  /// untouched) when the plan has no such site. Decision mutants: true.
  virtual bool apply(Plan& plan) const { return true; }
};

/// Every operator, in registry order.
std::span<const Mutant* const> registry();
/// The operator with this id, or nullptr.
const Mutant* findMutant(std::string_view id);

}  // namespace seam::mutants
