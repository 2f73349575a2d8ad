// Mutation operators (DESIGN §5, STYLE 13): one small class per operator with
// a stable string id and a one-line description, listed in one registry
// (registry.cc). Plan-level operators edit a built plan at one of its sites
// (the site operators at any, the first-site ones at the first); decision operators flip a planner
// decision through the Schema that sim/ defines. Ids are never renumbered: stored rows refer to
// them.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/training/training_plan.h"

namespace seam::mutants {

enum class MutantKind { kPlan, kDecision };
enum class MutantFamily { kServing, kTraining };
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
  virtual bool apply(Plan& plan) const { return applyAt(plan, 0); }
  /// Plan mutants: how many sites `plan` offers, numbered 0..n-1 in a fixed
  /// order (a campaign samples one per case; `seam check --mutant ID --site N`
  /// replays one). The first-site operators offer at most one: they say 1
  /// and applyAt says whether it exists.
  virtual int sites(const Plan& plan) const { return 1; }
  /// Plan mutants: edits `plan` at site `site`; false (plan untouched) when
  /// the plan has no such site. Every operator overrides apply or applyAt.
  virtual bool applyAt(Plan& plan, int site) const { return site == 0 && apply(plan); }

  /// Which family's plans it mutates: serving (Plan) or training (TrainingPlan).
  virtual MutantFamily family() const { return MutantFamily::kServing; }
  /// Training decision mutants: the planner decision they flip.
  virtual TrainingDecision trainingDecision() const { return TrainingDecision::kNone; }
  /// Training plan mutants: edits `plan` at its first applicable site; false
  /// (plan untouched) when it has none. Training decision mutants: true.
  virtual bool applyTraining(TrainingPlan& plan) const { return true; }
};

/// Every serving operator, in registry order.
std::span<const Mutant* const> registry();
/// Every training operator (ids `training.*`), in registry order.
std::span<const Mutant* const> trainingRegistry();
/// The operator with this id (or an id it had before, registry.cc), or nullptr.
const Mutant* findMutant(std::string_view id);
/// The operators of `family` with these ids (--mutant), in order; an id of
/// none is an error naming it and where the ids are listed.
Expected<std::vector<const Mutant*>> findMutants(const std::vector<std::string>& ids,
                                                 MutantFamily family);

}  // namespace seam::mutants
