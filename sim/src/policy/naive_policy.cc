// The naive policy (PolicyKind::kNaive), the always-correct baseline: every
// stage completes its own sum at its exit, never deferred, never fused. It
// has no boundaries of its own: it is the declared policy with the two
// options below turned off, which the shared boundary code asks for.
#include "plan_builder.h"

namespace seam::policy_detail {

// Off under naive: the attention hands the FFN its partial, a mixer or an
// FFN leaves its sum for the next entry; naive completes it at the exit.
bool PlanBuilder::handsOnPartials() const { return !naive_; }

// Off under naive: the fused AR + add + norm kernel, and MLA CP's
// reduce-scatter that completes a sum and hands back the own shard at once.
bool PlanBuilder::mayFuse() const { return !naive_; }

}  // namespace seam::policy_detail
