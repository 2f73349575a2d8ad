#include "seam/properties/engine_finding.h"

namespace seam::properties {

bool modelsEngineAsRun(PolicyKind policy, const Schema& schema) {
  return policy == PolicyKind::kDeclared && schema.flipped == 0;
}

std::string engineFindingSite(const Plan& plan, const Violation& v) {
  if (v.rank < 0 || v.rank >= plan.world()) return "";
  const std::vector<Op>& ops = plan.ranks[v.rank];
  if (v.op_index < 0 || v.op_index >= static_cast<int>(ops.size())) return "";
  // A sum counted twice shows where it is read; the call that made it is the
  // nearest op before, in the same entry, compute or exit, that names one.
  const Op& at = ops[v.op_index];
  for (int i = v.op_index; i >= 0; --i) {
    const Op& op = ops[i];
    if (op.stack != at.stack || op.stage != at.stage || op.phase != at.phase) break;
    const EngineSiteInfo& site = engineSiteInfo(op.site);
    if (!site.name.empty()) return std::string(site.call) + " at " + std::string(site.where);
  }
  return "";
}

std::string failureText(const Violation& v, const std::string& engine_site) {
  std::string text = describeViolation(v);
  if (!engine_site.empty()) text += std::string(kEngineFindingMark) + engine_site;
  return text;
}

bool isEngineFinding(std::string_view failure_text) {
  return failure_text.find(kEngineFindingMark) != std::string_view::npos;
}

std::pair<std::string_view, std::string_view> splitFailureText(std::string_view failure_text) {
  const size_t at = failure_text.find(kEngineFindingMark);
  if (at == std::string_view::npos) return {failure_text, {}};
  return {failure_text.substr(0, at), failure_text.substr(at + kEngineFindingMark.size())};
}

}  // namespace seam::properties
