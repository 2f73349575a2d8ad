// The policies' names and buildPlan (policy.h): a case is validated, then one
// PlanBuilder decides and emits it; ranks with identical programs share one
// emission.
#include "seam/sim/policy/policy.h"

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan_builder.h"

namespace seam {

std::string_view policyName(PolicyKind policy) {
  switch (policy) {
    case PolicyKind::kDeclared:
      return "declared";
    case PolicyKind::kLegacy:
      return "legacy";
    case PolicyKind::kNaive:
      return "naive";
  }
  return "?";
}

Expected<PolicyKind> parsePolicy(std::string_view name) {
  if (name == "declared") return PolicyKind::kDeclared;
  if (name == "legacy") return PolicyKind::kLegacy;
  if (name == "naive") return PolicyKind::kNaive;
  return Status::invalid("--policy \"" + std::string(name.substr(0, 64)) +
                         "\" is not one of declared, legacy, naive");
}

Expected<Plan> buildPlan(const Case& c, PolicyKind policy, const Schema& schema) {
  if (Status st = validateCase(c); !st) return st;
  switch (policy) {
    case PolicyKind::kDeclared:
    case PolicyKind::kLegacy:
    case PolicyKind::kNaive:
      return policy_detail::PlanBuilder(c, schema, policy).build();
  }
  return Status::internal("unknown policy");
}

Status flagSetRefusal(const Case& c, PolicyKind policy, const Schema& schema) {
  if (!validateCase(c)) return Status::ok();  // buildPlan's word on c is its own
  return policy_detail::PlanBuilder(c, schema, policy).flagSetRefusal();
}

namespace policy_detail {

// Ranks whose programs are identical (same pipeline stage and the same row
// counts in every layout, of the batch and of each half) share one
// emission; the others copy it.
Expected<Plan> PlanBuilder::build() {
  if (Status st = decide(); !st) return st;
  if (tbo_first_layer_ >= 0) makeHalves();

  constexpr int kSignature = 1 + kHalfLanes * kRowKindCount;
  std::vector<int> representative(world(), -1);
  std::vector<std::pair<std::array<int, kSignature>, int>> classes;  // few: linear search
  for (int r = 0; r < world(); ++r) {
    std::array<int, kSignature> signature{};
    // Ranks that skip a rank-0-only step have another program.
    const bool rank0 = rank0_steps_ || (halves_ && (half(0).rank0_steps_ || half(1).rank0_steps_));
    signature[0] = ppRank(r) * 2 + (rank0 && r % a_ != 0 ? 1 : 0);
    for (int k = 0; k < kRowKindCount; ++k) {
      signature[k + 1] = rows_.count(static_cast<RowKind>(k), r);
      for (int h = 0; h < 2 && halves_; ++h) {
        signature[(h + 1) * kRowKindCount + k + 1] =
            half(h).rows_.count(static_cast<RowKind>(k), r);
      }
    }
    for (const auto& [sig, rep] : classes) {
      if (sig == signature) {
        representative[r] = rep;
        break;
      }
    }
    if (representative[r] < 0) {
      representative[r] = r;
      classes.emplace_back(signature, r);
    }
  }

  for (int r = 0; r < world(); ++r) {
    if (representative[r] != r) {
      plan_.ranks[r] = plan_.ranks[representative[r]];
      continue;
    }
    emitRank(r);
  }
  plan_.tbo_split = tbo_split_;
  return std::move(plan_);
}

}  // namespace policy_detail
}  // namespace seam
