#include "seam/reports/training_view.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "seam/reports/mutate_view.h"
#include "seam/reports/sweep_view.h"

namespace seam::reports {

namespace {

std::string rate(std::int64_t n, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds > 0 ? static_cast<double>(n) / seconds : 0.0);
  return buf;
}

std::string names(const TrainingPlan& plan, const std::vector<std::int16_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : ",") + plan.tensors[id].name;
  return s;
}

/// The widest list of tensor names a text table shows (JSON keeps all).
constexpr std::size_t kMaxListChars = 48;

/// The names that fit in kMaxListChars, then ",+N more".
std::string shortNames(const TrainingPlan& plan, const std::vector<std::int16_t>& ids) {
  std::string s;
  std::size_t shown = 0;
  for (; shown < ids.size(); ++shown) {
    const std::string& name = plan.tensors[ids[shown]].name;
    if (shown > 0 && s.size() + 1 + name.size() > kMaxListChars) break;
    s += (shown > 0 ? "," : "") + name;
  }
  if (shown < ids.size()) s += ",+" + std::to_string(ids.size() - shown) + " more";
  return s;
}

std::string ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

nlohmann::ordered_json opJson(const TrainingPlan& plan, const TrainingOp& op) {
  nlohmann::ordered_json j;
  j["layer"] = op.layer;
  j["stage"] = op.layer;
  j["phase"] = op.recompute ? "recompute" : op.pass == Pass::kForward ? "forward" : "backward";
  j["op"] = std::string(opName(op.kind));
  j["tensor"] = op.writes.empty()
                    ? (op.reads.empty() ? names(plan, op.params) : names(plan, op.reads))
                    : names(plan, op.writes);
  if (op.hasGroup()) {
    j["group"] = std::string(trainAxisName(op.axis));
    j["group_size"] = op.ranks.size();
    j["ranks"] = op.ranks;
  } else {
    j["group"] = nullptr;
    j["group_size"] = 1;
    j["ranks"] = nlohmann::ordered_json::array();
  }
  j["rows_in"] = nullptr;
  j["rows_out"] = nullptr;
  j["bytes"] = op.bytes;
  j["step"] = op.step;
  j["block"] = std::string(1, op.block);
  if (op.kernel != Kernel::kNone) j["kernel"] = std::string(kernelName(op.kernel));
  if (op.transform != Transform::kNone) j["transform"] = std::string(transformName(op.transform));
  if (op.a2a != A2aMode::kNone) j["a2a"] = std::string(a2aModeName(op.a2a));
  j["reads"] = names(plan, op.reads);
  j["writes"] = names(plan, op.writes);
  if (!op.params.empty()) j["params"] = names(plan, op.params);
  if (!op.in_splits.empty()) j["in_splits"] = op.in_splits;
  if (!op.out_splits.empty()) j["out_splits"] = op.out_splits;
  if (!op.segments.empty()) j["segments"] = op.segments;
  if (!op.unit_list.empty()) j["units"] = op.unit_list;
  if (op.conj_of >= 0) j["conjugate_of"] = op.conj_of;
  return j;
}

}  // namespace

std::string renderTrainingPlan(const TrainingPlan& plan, int rank, Format format) {
  const TrainingCase& c = plan.source;
  const auto& ops = plan.ranks[rank];
  std::map<std::string, int> summary;
  for (const TrainingOp& op : ops) ++summary[std::string(opName(op.kind))];
  if (format == Format::kJsonl) {
    std::string out;
    for (const TrainingOp& op : ops) {
      auto j = opJson(plan, op);
      j["rank"] = rank;
      out += j.dump() + "\n";
    }
    return out;
  }
  if (format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = std::string(c.model->name);
    j["pattern"] = std::string(c.model->pattern);
    j["policy"] = "training-" + std::string(layoutName(c.config.layout));
    nlohmann::ordered_json cfg;
    cfg["world"] = c.config.world();
    cfg["layout"] = std::string(layoutName(c.config.layout));
    cfg["dp_replicate"] = c.config.dp_replicate;
    cfg["dp"] = c.config.dp;
    cfg["cp"] = c.config.cp;
    cfg["tp"] = c.config.tp;
    cfg["ep"] = c.config.ep;
    cfg["sp"] = c.config.sp;
    cfg["docs"] = c.docs;
    j["config"] = cfg;
    j["rank"] = rank;
    j["ops"] = nlohmann::ordered_json::array();
    for (const TrainingOp& op : ops) j["ops"].push_back(opJson(plan, op));
    j["summary"] = summary;
    return j.dump(2) + "\n";
  }
  std::string out = "model " + std::string(c.model->name) + ", policy training-" +
                    std::string(layoutName(c.config.layout)) + ", rank " + std::to_string(rank) +
                    ", " + describeConfig(c.config) + ", docs " + ints(c.docs) + "\n";
  Table t({"#", "pass", "layer", "op", "step", "group", "reads", "writes", "bytes"},
          {true, false, true, false, false, false, false, false, true});
  for (size_t i = 0; i < ops.size(); ++i) {
    const TrainingOp& op = ops[i];
    std::string group =
        op.hasGroup() ? std::string(trainAxisName(op.axis)) + "[" + ints(op.ranks) + "]" : "-";
    t.addRow({std::to_string(i),
              op.recompute                ? "re"
              : op.pass == Pass::kForward ? "fwd"
                                          : "bwd",
              std::to_string(op.layer), std::string(opName(op.kind)), op.step, group,
              shortNames(plan, op.reads),
              op.writes.empty() ? shortNames(plan, op.params) : shortNames(plan, op.writes),
              std::to_string(op.bytes)});
  }
  out += t.render();
  out += std::to_string(ops.size()) + " ops:";
  for (auto& [k, n] : summary) out += " " + k + " " + std::to_string(n);
  return out + "\n";
}

std::string renderTrainingVerdict(const TrainingPlan& plan, const LedgerResult& result,
                                  Format format) {
  if (format == Format::kJson) {
    nlohmann::ordered_json j;
    j["case"] = reproduceTrainingCommand(plan.source);
    j["holds"] = result.holds();
    j["ops_executed"] = result.ops_executed;
    if (!result.holds()) {
      const Violation& v = result.violations.front();
      j["property"] = std::string(propertyName(v.property));
      j["class"] = std::string(violationClassName(v.cls));
      j["rank"] = v.rank;
      j["layer"] = v.layer;
      j["token"] = v.token;
      j["term"] = v.term;
      j["detail"] = describeViolation(v);
    }
    return j.dump(2) + "\n";
  }
  std::string out = "case: " + reproduceTrainingCommand(plan.source) + "\n";
  if (result.holds()) {
    out +=
        "collectives-match holds (every group's members issue the same collectives; backward = "
        "conjugates)\n";
    out +=
        "owed-once holds (forward and backward values complete, in order, documents reset; every "
        "gradient once)\n";
  } else {
    out += describeViolation(result.violations.front()) + "\n";
  }
  return out;
}

std::string renderTrainingSweep(const properties::TrainingSweepSpec& spec,
                                const properties::SweepResult& r) {
  std::string out = "sweep: family training, world " + std::to_string(spec.world) + ", " +
                    std::to_string(spec.jobs) + " jobs\n";
  Table t({"model", "layout", "checked", "refused", "not modelled", "violated", "cases/s"},
          {false, false, true, true, true, true, true});
  for (const auto& m : r.per_model) {
    t.addRow({m.model, std::string(layoutName(*m.layout)), std::to_string(m.checked),
              std::to_string(m.refused - m.not_modelled), std::to_string(m.not_modelled),
              std::to_string(m.violated), rate(m.checked + m.refused, m.seconds)});
  }
  out += t.render();
  out += renderRefusals(r.refusals);
  for (const auto& f : r.failures)
    out += "FAIL: " + f.text + "\n  reproduce: " + f.reproduce + "\n";
  out += std::to_string(r.cases) + " cases, " + std::to_string(r.violated) + " violations, " +
         rate(r.cases, r.seconds) + " cases/s\n";
  return out;
}

std::string renderTrainingCampaign(const mutants::TrainingCampaignSpec& spec,
                                   const mutants::CampaignResult& r) {
  std::string worlds;
  for (int w : spec.worlds) worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", r.seconds);
  std::string out = "mutate: family training, worlds " + worlds + ", " + std::to_string(r.cases) +
                    " cases, " + secs + " s\n";
  if (!r.baseline_holds) {
    out += "BASELINE FAILS: " +
           (r.baseline_violation ? describeViolation(*r.baseline_violation) : std::string()) +
           "\n  reproduce: " + r.baseline_reproduce + "\n";
    return out;
  }
  Table t({"mutant", "kind", "status", "cases", "property", "class"},
          {false, false, false, true, false, false});
  for (const auto& o : r.outcomes) {
    const bool k = o.status == mutants::MutantStatus::kKilled && o.kill_violation;
    t.addRow({std::string(o.mutant->id()), std::string(mutants::kindName(o.mutant->kind())),
              std::string(mutants::statusName(o.status)), std::to_string(o.cases_run),
              k ? std::string(propertyName(o.kill_violation->property)) : "-",
              k ? std::string(violationClassName(o.kill_violation->cls)) : "-"});
  }
  out += t.render();
  for (const auto& o : r.outcomes) {
    if (o.status == mutants::MutantStatus::kKilled) {
      out += std::string(o.mutant->id()) + " killed by: " + o.kill_reproduce + "\n";
      if (o.kill_violation) out += "  " + describeViolation(*o.kill_violation) + "\n";
    } else {
      out += std::string(o.mutant->id()) + " " + std::string(mutants::statusName(o.status)) + ": " +
             o.argument + "\n";
    }
  }
  out += mutationScoreLine(r) + "\n";
  return out;
}

}  // namespace seam::reports
