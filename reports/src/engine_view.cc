// The conformance table of an engine sweep, folded from its stored rows.
#include "seam/reports/engine_view.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "seam/reports/report.h"

namespace seam::reports {

bool countsAgainstPlan(const std::string& agreement) {
  return agreement == "differs" || agreement == "engine-failed";
}

bool unjudged(const std::string& agreement) {
  return agreement == "cpu-gap" || agreement == "plan-refused";
}

EngineConformance foldEngineCases(const std::vector<EngineCaseRecord>& rows) {
  EngineConformance out;
  std::int64_t last_case = -1;
  for (const EngineCaseRecord& r : rows) {
    if (out.engine.empty()) out.engine = r.engine;
    ConformanceRow& row = out.rows[{r.model, r.family}];
    if (r.case_index != last_case) {  // rows come by case, then policy
      ++row.cases;
      ++out.cases;
      last_case = r.case_index;
    }
    ++row.by_policy[r.policy][r.agreement];
    if (r.policy == "declared" && unjudged(r.agreement)) ++out.declared_unjudged;
    if (!countsAgainstPlan(r.agreement) && !unjudged(r.agreement)) continue;
    if (r.policy == "declared" && countsAgainstPlan(r.agreement)) ++out.declared_disagreements;
    if (r.divergence.empty()) continue;
    ConformanceClass& k = out.classes[r.policy][r.agreement + ": " + r.divergence];
    if (k.cases++ == 0) k.reproduce = r.reproduce;
  }
  return out;
}

namespace {

std::string countsOf(const std::map<std::string, std::int64_t>& by_class) {
  std::string out;
  for (const char* name : kAgreementClasses) {
    const auto it = by_class.find(name);
    if (it == by_class.end() || it->second == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + grouped(it->second);
  }
  return out.empty() ? "-" : out;
}

}  // namespace

std::string renderConformance(const EngineConformance& c, std::size_t examples) {
  std::ostringstream out;
  out << "engine: " << (c.engine.empty() ? "(no case ran)" : c.engine) << "\n";
  out << "per model and configuration family, cases: declared | legacy\n";
  for (const auto& entry : c.rows) {
    const ConformanceRow& row = entry.second;
    out << "  " << entry.first.first << " " << entry.first.second << ": " << grouped(row.cases)
        << " | ";
    const auto policy = [&row](const char* p) {
      const auto it = row.by_policy.find(p);
      return it == row.by_policy.end() ? std::string("-") : countsOf(it->second);
    };
    out << policy("declared") << " | " << policy("legacy") << "\n";
  }
  for (const auto& [policy, classes] : c.classes) {
    std::size_t shown = 0;
    for (const auto& [what, k] : classes) {
      if (shown++ == examples) {
        out << "  " << policy << ": " << classes.size() - examples
            << " more classes (the store has them)\n";
        break;
      }
      out << "  " << policy << " " << ellipsis(what, 200) << " (" << grouped(k.cases)
          << (k.cases == 1 ? " case" : " cases") << "), e.g. " << k.reproduce << "\n";
    }
  }
  std::int64_t refused = 0;
  for (const auto& [key, row] : c.rows)
    if (const auto p = row.by_policy.find("declared"); p != row.by_policy.end())
      if (const auto n = p->second.find("engine-refused"); n != p->second.end())
        refused += n->second;
  out << grouped(c.cases) << " cases given to the engine (" << grouped(refused)
      << " refused by its argument checks); " << grouped(c.declared_disagreements)
      << " where its run does not bear out the declared plan; " << grouped(c.declared_unjudged)
      << " not judged (seam refuses what the engine ran, or the CPU lacks what it needs)\n";
  return out.str();
}

std::string conformanceJson(const EngineConformance& c, const std::string& args) {
  using Json = nlohmann::ordered_json;
  Json families = Json::array();
  for (const auto& [key, row] : c.rows) {
    Json j = {{"model", key.first}, {"family", key.second}, {"cases", row.cases}};
    for (const auto& [policy, by_class] : row.by_policy) j[policy] = by_class;
    families.push_back(std::move(j));
  }
  Json classes = Json::object();
  for (const auto& [policy, list] : c.classes) {
    Json items = Json::array();
    for (const auto& [what, k] : list)
      items.push_back({{"class", what}, {"cases", k.cases}, {"reproduce", k.reproduce}});
    classes[policy] = std::move(items);
  }
  const Json doc = {{"command", "sweep --engine"},
                    {"args", args},
                    {"engine", c.engine},
                    {"counts",
                     {{"cases", c.cases},
                      {"declared_disagreements", c.declared_disagreements},
                      {"declared_unjudged", c.declared_unjudged}}},
                    {"families", std::move(families)},
                    {"divergences", std::move(classes)}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace seam::reports
