// seam sweep --engine's space and classes: which cases share an engine run,
// which the recorder leaves out, and how a case's plan compares with what
// the engine ran.
#include "seam/recordings/conformance.h"

#include <functional>
#include <tuple>

namespace seam::recordings {

std::string_view agreementName(Agreement a) {
  switch (a) {
    case Agreement::kAgrees:
      return "agrees";
    case Agreement::kDiffers:
      return "differs";
    case Agreement::kEngineRefused:
      return "engine-refused";
    case Agreement::kEngineFailed:
      return "engine-failed";
    case Agreement::kCpuGap:
      return "cpu-gap";
    case Agreement::kPlanRefused:
      return "plan-refused";
    case Agreement::kOtherPadding:
      return "other-padding";
  }
  return "?";
}

std::string recorderGap(const Case& c) {
  // The model classes the recorder builds (recorder/seam_recorder/architectures.py).
  if (c.model.architecture != "NemotronHForCausalLM" &&
      c.model.architecture != "Qwen3ForCausalLM" && c.model.architecture != "DeepseekV3ForCausalLM")
    return "the model class " + (c.model.architecture.empty() ? std::string("of ") + c.model.name
                                                              : c.model.architecture);
  if (!c.model.pattern.mtp.empty() && c.model.architecture == "Qwen3ForCausalLM")
    return "the MTP draft layers of a model without a draft class";
  if (c.config.attn_cp > 1 && c.model.architecture == "DeepseekV3ForCausalLM")
    return "attention CP of an MLA model (the engine turns the DeepEP all-to-all on)";
  if (c.flags.a2a != A2aBackend::kNone) return "the DeepEP all-to-all";
  // The recorder runs them (its send/recv between stages); the judge does
  // not yet align those transfers to the plan's stage sends.
  if (c.config.pp > 1) return "pipeline stages (pp > 1): their transfers are not aligned yet";
  if (!c.flags.capture.empty()) return "aux hidden-state captures";
  if (c.config.attn_dp > 1 && c.flags.reduction != engineDefaultReduction(c.model))
    return "a --reduction other than the model's default (the engine has no such flag)";
  return "";
}

EngineSpace engineSpace(const std::vector<Case>& cases,
                        const std::function<std::string(const Case&)>& caseJson) {
  EngineSpace space;
  // What the engine is given: the layers, the launch flags, the batch. The
  // DP padding and the boundary reduction it decides itself.
  using Key = std::tuple<std::string, std::vector<int>, std::vector<bool>, std::vector<int>, int>;
  std::map<Key, int> run_of_key;
  std::map<Key, int> server_of_key;  // the key with no batch
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (const std::string gap = recorderGap(c); !gap.empty()) {
      ++space.left_out[gap];
      continue;
    }
    const ParallelConfig& p = c.config;
    const Key key{c.model.pattern.text(),
                  {p.pp, p.tp, p.attn_dp, p.attn_cp, p.moe_ep, p.moe_dp},
                  {c.flags.layernorm_sp, c.flags.dense_tp1, c.flags.fusion, c.flags.tbo,
                   c.flags.input_scattered, c.flags.dp_gatherv},
                  c.batch.tokens,
                  static_cast<int>(c.flags.mode)};
    auto [it, fresh] = run_of_key.emplace(key, static_cast<int>(space.runs.size()));
    if (fresh) {
      space.runs.push_back(caseJson(c));
      const Key server{std::get<0>(key), std::get<1>(key), std::get<2>(key), {}, 0};
      const int next = static_cast<int>(server_of_key.size());
      space.server_of.push_back(server_of_key.emplace(server, next).first->second);
    }
    space.cases.push_back(c);
    space.run_of.push_back(it->second);
    space.index_of.push_back(static_cast<std::int64_t>(i));
  }
  return space;
}

CaseAgreement agreementOf(const Case& c, PolicyKind policy, const Recording& rec) {
  const std::string& v = rec.engine.verdict;
  if (v == "refused") return {Agreement::kEngineRefused, rec.engine.failure};
  if (v == "cpu-gap" || v == "recorder-error") {
    std::string why = rec.engine.failure;
    for (const RankEnd& r : rec.engine.ranks)
      if (why.empty() && !r.error.empty()) why = r.where + ": " + r.error;
    return {Agreement::kCpuGap, v + ": " + why};
  }
  if (v != "ran") {
    std::string why = v + (rec.engine.failure.empty() ? "" : ": " + rec.engine.failure);
    for (const RankEnd& r : rec.engine.ranks)
      if (r.outcome == "raised") {
        why = "raised at " + r.where + ": " + r.error;
        break;
      }
    return {Agreement::kEngineFailed, why};
  }
  if (c.config.attn_dp > 1) {
    const std::string asked = c.flags.dp_padding == DpPadding::kMaxLen ? "MAX_LEN" : "SUM_LEN";
    for (const RankEnd& r : rec.engine.ranks)
      if (!r.dp_padding.empty() && r.dp_padding != asked)
        return {Agreement::kOtherPadding, "the engine chose " + r.dp_padding};
  }
  auto plan = buildPlan(c, policy);
  if (!plan) return {Agreement::kPlanRefused, plan.status().message()};
  auto verdict = judgeRecording(rec, *plan, 1, {.custom_all_reduce = false});
  if (!verdict) return {Agreement::kPlanRefused, verdict.status().message()};
  if (verdict->holds()) return {Agreement::kAgrees, ""};
  std::string first;
  if (!verdict->findings.empty()) {
    const Finding& f = verdict->findings.front();
    const std::string frame = f.frame.substr(0, f.frame.find(" < "));
    first = std::string(findingName(f.kind)) + " " +
            (f.kind == FindingKind::kMissing ? f.expected.substr(0, f.expected.find(" (boundary"))
                                             : "at " + frame);
  } else if (!verdict->partial.empty()) {
    first = "partial: " + verdict->partial.front().what;
  }
  return {Agreement::kDiffers, first};
}

std::string configFamily(const ParallelConfig& config) {
  std::string out = "tp";
  if (config.attn_dp > 1) out += "+dp";
  if (config.attn_cp > 1) out += "+cp";
  if (config.moe_ep > 1) out += "+ep";
  if (config.moe_dp > 1) out += "+moe_dp";
  if (config.pp > 1) out += "+pp";
  return out;
}

}  // namespace seam::recordings
