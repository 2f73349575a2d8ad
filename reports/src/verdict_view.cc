#include "seam/reports/verdict_view.h"

#include <nlohmann/json.hpp>

namespace seam::reports {

namespace {

nlohmann::json violationJson(const Violation& v) {
  return {{"property", propertyName(v.property)},
          {"class", violationClassName(v.cls)},
          {"rank", v.rank},
          {"op_index", v.op_index},
          {"stack", v.stack},
          {"layer", v.layer},
          {"stage", v.stage},
          {"phase", phaseName(v.phase)},
          {"op", opName(v.op)},
          {"token", v.token},
          {"term", v.term},
          {"coefficient", v.coefficient},
          {"detail", v.detail},
          {"text", describeViolation(v)}};
}

}  // namespace

std::string renderVerdict(const Plan& plan, const properties::PlanVerdict& verdict, Format format,
                          const std::string& engine_site) {
  const Case& c = plan.source;
  if (format != Format::kText) {
    nlohmann::json props = nlohmann::json::array();
    for (const auto& p : verdict.properties) {
      props.push_back(
          {{"property", propertyName(p.property)},
           {"number", static_cast<int>(p.property)},
           {"holds", p.holds},
           {"judged", p.judged},
           {"first_violation", p.first ? violationJson(*p.first) : nlohmann::json(nullptr)}});
    }
    nlohmann::json doc = {{"model", c.model.name},
                          {"pattern", c.model.pattern.text()},
                          {"policy", plan.policy},
                          {"config", c.config.describe()},
                          {"flags", c.flags.describe()},
                          {"tokens", c.batch.describe()},
                          {"holds", verdict.holds()},
                          {"ops_executed", verdict.ops_executed},
                          {"properties", std::move(props)},
                          {"engine_finding", engine_site.empty() ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(engine_site)}};
    return format == Format::kJsonl ? doc.dump() + "\n" : doc.dump(2) + "\n";
  }
  std::string out = "case: " + c.model.name + " '" + c.model.pattern.text() + "'  " +
                    c.config.describe() + "  " + c.flags.describe() + "  tokens " +
                    c.batch.describe() + "  policy " + plan.policy + "\n";
  Table t({"#", "property", "verdict", "what it says"}, {true, false, false, false});
  for (const auto& p : verdict.properties) {
    t.addRow({std::to_string(static_cast<int>(p.property)), std::string(propertyName(p.property)),
              !p.judged ? "not judged" : (p.holds ? "holds" : "VIOLATED"),
              std::string(propertySentence(p.property))});
  }
  out += t.render();
  if (auto v = verdict.firstViolation()) {
    out += "first violation: " + describeViolation(*v) + "\n";
    if (!engine_site.empty()) {
      out +=
          "ENGINE FINDING: this case is SGLang's code as it runs (declared policy, nothing "
          "planted); SGLang calls " +
          engine_site + "\n";
    }
  } else {
    out += "all properties hold (" + std::to_string(verdict.ops_executed) + " ops replayed)\n";
  }
  return out;
}

}  // namespace seam::reports
