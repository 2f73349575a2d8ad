#include "seam/reports/run_json.h"

#include <nlohmann/json.hpp>

#include "seam/properties/engine_finding.h"

namespace seam::reports {

namespace {

using Json = nlohmann::ordered_json;

Json violationJson(const std::optional<Violation>& v) {
  if (!v) return nullptr;
  return {{"property", std::string(propertyName(v->property))},
          {"class", std::string(violationClassName(v->cls))}};
}

/// Text that may hold bytes a user typed (a pattern): never an exception.
std::string dumped(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

/// A class name as a key for scripts: "same ops, another order" ->
/// "same_ops_another_order".
std::string key(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (word) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

}  // namespace

std::string sweepJson(const properties::SweepSpec& spec, const properties::SweepResult& r) {
  Json j;
  j["command"] = "sweep";
  j["world"] = spec.world;
  j["policy"] = std::string(policyName(spec.policy));
  j["shard"] = std::to_string(spec.shard.index) + "/" + std::to_string(spec.shard.count);
  std::int64_t engine = 0;
  for (const auto& [call, n] : r.engine_findings) engine += n;
  j["counts"] = {{"cases", r.cases},       {"checked", r.checked},
                 {"refused", r.refused},   {"not_modelled", r.not_modelled},
                 {"violated", r.violated}, {"engine_findings", engine},
                 {"run_here", r.run_here}};
  Json models = Json::array();
  for (const properties::ModelTally& m : r.per_model) {
    models.push_back({{"model", m.model},
                      {"checked", m.checked},
                      {"refused", m.refused},
                      {"not_modelled", m.not_modelled},
                      {"violated", m.violated},
                      {"seconds", m.seconds}});
  }
  j["models"] = std::move(models);
  Json failures = Json::array();
  for (const properties::SweepFailure& f : r.failures) {
    const auto [violation, call] = properties::splitFailureText(f.text);
    failures.push_back({{"index", f.index},
                        {"violation", std::string(violation)},
                        {"engine_call", std::string(call)},
                        {"reproduce", f.reproduce}});
  }
  j["failures"] = std::move(failures);
  j["failures_listed_of"] = r.violated;
  Json calls = Json::object();
  for (const auto& [call, n] : r.engine_findings) calls[call] = n;
  j["engine_findings"] = std::move(calls);
  Json refusals = Json::array();
  for (const auto& [why, n] : r.refusals) refusals.push_back({{"reason", why}, {"count", n}});
  j["refusals"] = std::move(refusals);
  j["seconds"] = r.seconds;
  return dumped(j);
}

std::string propJson(const properties::PropSpec& spec, const properties::PropResult& r) {
  Json j;
  j["command"] = "prop";
  j["seed"] = spec.seed;
  j["world"] = spec.world;
  j["max_layers"] = spec.max_layers;
  j["decision"] = properties::decisionList(spec.schema);
  j["rc_params"] = r.rc_params;
  j["passed"] = r.passed;
  j["counts"] = {{"cases", r.cases_run}, {"refused", r.refused}, {"failed", r.passed ? 0 : 1}};
  if (r.passed) {
    j["failure"] = nullptr;
  } else {
    Json f = {{"violation", r.failure}, {"shrinks", r.shrinks}, {"reproduce", r.reproduce}};
    if (r.violation) f.update(violationJson(r.violation));
    j["failure"] = std::move(f);
  }
  j["seconds"] = r.seconds;
  return dumped(j);
}

std::string campaignJson(const mutants::CampaignSpec& spec, const mutants::CampaignResult& r) {
  Json j;
  j["command"] = "mutate";
  j["policy"] = std::string(policyName(spec.policy));
  j["seed"] = r.seed;
  const int killed = r.killed(), survived = r.survived();
  j["counts"] = {{"cases", r.cases},
                 {"baseline_refused", r.baseline_refused},
                 {"baseline_engine_findings", r.baseline_engine_findings},
                 {"mutants", r.outcomes.size()},
                 {"killed", killed},
                 {"survived", survived},
                 {"equivalent", r.equivalent()},
                 {"not_covered", r.notCovered()},
                 {"planner_errors", r.plannerErrors()}};
  j["score"] = killed + survived == 0 ? Json(nullptr)
                                      : Json(static_cast<double>(killed) / (killed + survived));
  Json baseline = {{"holds", r.baseline_holds}, {"reused", r.baseline_reused}};
  if (!r.baseline_not_reused.empty()) baseline["not_reused"] = r.baseline_not_reused;
  if (!r.baseline_holds) {
    baseline["reproduce"] = r.baseline_reproduce;
    if (r.baseline_violation) baseline.update(violationJson(r.baseline_violation));
  }
  j["baseline"] = std::move(baseline);
  Json mutants = Json::array();
  for (const mutants::MutantOutcome& o : r.outcomes) {
    Json m = {{"id", std::string(o.mutant->id())},
              {"kind", std::string(mutants::kindName(o.mutant->kind()))},
              {"status", std::string(mutants::statusName(o.status))},
              {"cases_tried", o.cases_run},
              {"reached", o.applied},
              {"differed", o.differed},
              {"seconds", o.seconds}};
    if (o.status == mutants::MutantStatus::kKilled) {
      Json kill = {{"index", o.kill_index}, {"site", o.kill_site}, {"reproduce", o.kill_reproduce}};
      if (o.kill_violation) kill.update(violationJson(o.kill_violation));
      m["kill"] = std::move(kill);
    } else {
      m["argument"] = o.argument;
    }
    mutants.push_back(std::move(m));
  }
  j["mutants"] = std::move(mutants);
  j["seconds"] = r.seconds;
  return dumped(j);
}

std::string diffJson(const properties::DiffSpec& spec, const properties::DiffResult& r,
                     const std::string& worlds) {
  Json j;
  j["command"] = "diff";
  j["policy"] = std::string(policyName(spec.a));
  j["against"] = std::string(policyName(spec.b));
  j["worlds"] = worlds;
  Json counts = {{"cases", r.cases}};
  Json classes = Json::array();
  for (int k = 0; k < properties::kDiffClassCount; ++k) {
    const auto cls = static_cast<properties::DiffClass>(k);
    const std::string name(properties::diffClassName(cls));
    counts[key(name)] = r.counts[k];
    Json c = {{"class", name},
              {"key", key(name)},
              {"cases", r.counts[k]},
              {"bit_identical", r.bit_identical[k]}};
    const properties::DiffExample& e = r.examples[k];
    c["smallest"] =
        e.index < 0 ? Json(nullptr)
                    : Json({{"index", e.index}, {"detail", e.detail}, {"reproduce", e.reproduce}});
    classes.push_back(std::move(c));
  }
  j["counts"] = std::move(counts);
  j["classes"] = std::move(classes);
  const properties::DiffExample& o = r.other_roundings;
  j["bits_may_differ_smallest"] =
      o.index < 0 ? Json(nullptr)
                  : Json({{"index", o.index}, {"detail", o.detail}, {"reproduce", o.reproduce}});
  j["seconds"] = r.seconds;
  return dumped(j);
}

}  // namespace seam::reports
